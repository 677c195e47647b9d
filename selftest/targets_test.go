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
