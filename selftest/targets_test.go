package selftest

import (
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/labrunner/labrunner/labconfig"
)

func TestTargetsCoverEveryBoardOverTheRotation(t *testing.T) {
	all := []string{"a", "b", "c", "d", "e"}
	env := func(v ...string) *Env {
		ps := labconfig.Params{}
		if len(v) > 0 {
			ps[TargetsParam] = labconfig.Param{Values: v, List: len(v) > 1}
		}
		var p Targets
		if err := ps.Decode(&p); err != nil {
			t.Fatal(err)
		}
		return &Env{Test: labconfig.Test{Name: "t", Params: ps}, Log: slog.New(slog.DiscardHandler), params: p}
	}
	day := time.Date(2026, 11, 26, 3, 0, 0, 0, time.UTC)
	r, err := env().Targets(all, day)
	if err != nil || !slices.Equal(r.Boards, all) || r.Nights != 1 {
		t.Fatalf("default: %+v %v", r, err)
	}
	seen := map[string]int{}
	var nights int
	for n := 0; n < 3; n++ {
		r, err := env("2").Targets(all, day.Add(time.Duration(n)*24*time.Hour))
		if err != nil || len(r.Boards) != 2 || r.Nights != 3 {
			t.Fatalf("night %d: %+v %v", n, r, err)
		}
		nights = r.Nights
		for _, b := range r.Boards {
			seen[b]++
		}
	}
	if len(seen) != len(all) {
		t.Errorf("%d nights of a %d-night rotation covered %v", 3, nights, seen)
	}
	if r, err := env("9").Targets(all, day); err != nil || len(r.Boards) != 5 {
		t.Errorf("k above the boards: %+v %v", r, err)
	}
	if r, err := env("c", "a").Targets(all, day); err != nil || !slices.Equal(r.Boards, []string{"c", "a"}) {
		t.Errorf("named: %+v %v", r, err)
	}
	for _, bad := range [][]string{{"0"}, {"zz"}} {
		if _, err := env(bad...).Targets(all, day); err == nil {
			t.Errorf("targets %v accepted", bad)
		}
	}
}

// A test's declared cases resolve its targets as the test does (TargetsOf
// and Env.Targets agree night after night), so that the two name the same
// boards; the night is the plan's start, not the time of the call.
func TestTargetsOfAgreesWithTheTest(t *testing.T) {
	all := []string{"a", "b", "c", "d", "e"}
	ps := labconfig.Params{TargetsParam: labconfig.Param{Values: []string{"2"}}}
	var p Targets
	if err := ps.Decode(&p); err != nil {
		t.Fatal(err)
	}
	test := labconfig.Test{Name: "t", Params: ps}
	for n := 0; n < 4; n++ {
		start := time.Date(2026, 11, 26, 23, 59, 0, 0, time.UTC).Add(time.Duration(n) * 24 * time.Hour)
		env := &Env{Test: test, Log: slog.New(slog.DiscardHandler), params: p, start: start}
		got, err := env.Targets(all, env.PlanStart())
		if err != nil {
			t.Fatal(err)
		}
		want, err := TargetsOf(CasePlan{Test: test, Params: p, Start: start}, all)
		if err != nil || !slices.Equal(got.Boards, want.Boards) {
			t.Errorf("night %d: the test targets %v, its declaration %v (%v)", n, got.Boards, want.Boards, err)
		}
	}
	if _, err := TargetsOf(CasePlan{Test: test, Params: struct{}{}}, all); err == nil {
		t.Error("parameters without Targets resolved")
	}
}
