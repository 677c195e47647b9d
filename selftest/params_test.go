package selftest

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/drivers"
	"github.com/labrunner/labrunner/labconfig"
)

type countParams struct {
	Count int    `param:"count" min:"1" doc:"how many"`
	Mode  string `param:"mode" oneof:"fast,slow" doc:"how"`
}

func TestRegisterRefusesParamsThatAreNotAParameterStruct(t *testing.T) {
	for _, c := range []struct {
		params any
		want   string
	}{
		{&countParams{}, "Params is a struct value holding the defaults, got *selftest.countParams"},
		{map[string]string{"count": "1"}, "Params is a struct value holding the defaults"},
		{struct{ N int }{}, `needs a param:"name" tag`},
		{struct {
			T []string `param:"targets" doc:"boards"`
		}{}, "declare targets by embedding selftest.Targets"},
	} {
		tc := Test{Name: "bad-params", Design: "params-test", Run: noop, Params: c.params}
		msg := mustPanic(t, func() { Register(tc) })
		tests.forget(testKey(tc.Design, tc.Name))
		if !strings.Contains(msg, "selftest.Register at ") || !strings.Contains(msg, "test bad-params") || !strings.Contains(msg, c.want) {
			t.Errorf("%T: panic %q does not say %q", c.params, msg, c.want)
		}
	}
}

func TestDecodeParamsGivesTheTestsStruct(t *testing.T) {
	tc := Test{Name: "p", Params: countParams{Count: 3, Mode: "fast"}}
	v, err := tc.DecodeParams(labconfig.Params{"mode": {Values: []string{"slow"}, Pos: labconfig.Pos{File: "lab.yaml", Line: 9}}})
	if err != nil || v != (countParams{Count: 3, Mode: "slow"}) {
		t.Fatalf("got %#v, %v", v, err)
	}
	for _, c := range []struct {
		key, value, want string
	}{
		{"count", "-1", "lab.yaml:9: count: -1 is outside at least 1"},
		{"count", "many", `lab.yaml:9: count: "many" is not an integer`},
		{"cuont", "1", `lab.yaml:9: cuont: unknown parameter "cuont" (allowed: count, mode) (did you mean count?)`},
		{"mode", "quick", `lab.yaml:9: mode: "quick" is not one of fast, slow`},
	} {
		err := tc.CheckParams(labconfig.Params{c.key: {Values: []string{c.value}, Pos: labconfig.Pos{File: "lab.yaml", Line: 9}}})
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: %s: got %v, want %q", c.key, c.value, err, c.want)
		}
	}
	// A test without Params takes none.
	err = Test{Name: "q"}.CheckParams(labconfig.Params{"count": {Values: []string{"1"}, Pos: labconfig.Pos{File: "lab.yaml", Line: 4}}})
	if err == nil || !strings.Contains(err.Error(), "this takes no parameters") {
		t.Errorf("a test without parameters took one: %v", err)
	}
}

func TestParamsOf(t *testing.T) {
	tc := Test{Name: "params-of", Design: "params-test", Run: noop, Params: countParams{Count: 3, Mode: "fast"}}
	Register(tc)
	defer tests.forget(testKey(tc.Design, tc.Name))
	// The runner's decoded value.
	env := &Env{Test: labconfig.Test{Name: tc.Name}, params: countParams{Count: 8, Mode: "slow"}}
	if p, err := ParamsOf[countParams](env); err != nil || p.Count != 8 {
		t.Errorf("got %+v, %v", p, err)
	}
	if _, err := ParamsOf[struct{ Other int }](env); err == nil || !strings.Contains(err.Error(), "reads parameters as struct { Other int } but declares selftest.countParams") {
		t.Errorf("a read of another type: %v", err)
	}
	// An Env the runner did not prepare decodes the entry with the
	// registered defaults, and refuses a bad entry as a setup error.
	env = &Env{Design: &bitstreams.Manifest{Name: tc.Design}, Test: labconfig.Test{Name: tc.Name,
		Params: labconfig.Params{"count": {Values: []string{"5"}}}}}
	if p, err := ParamsOf[countParams](env); err != nil || p != (countParams{Count: 5, Mode: "fast"}) {
		t.Errorf("got %+v, %v", p, err)
	}
	env.Test.Params = labconfig.Params{"count": {Values: []string{"0"}, Pos: labconfig.Pos{File: "lab.yaml", Line: 3}}}
	if _, err := ParamsOf[countParams](env); err == nil || drivers.ClassOf(err) != drivers.ClassSetup || !strings.Contains(err.Error(), "0 is outside at least 1") {
		t.Errorf("a bad entry: %v (class %v)", err, drivers.ClassOf(err))
	}
}

// A plan entry that does not decode is recorded as a setup error of the
// test, which does not run.
func TestRunnerRecordsParamsThatDoNotDecode(t *testing.T) {
	ran := false
	tc := Test{Name: "params-run", Design: "params-test", Params: countParams{Count: 1, Mode: "fast"},
		Run: func(context.Context, *Env) error { ran = true; return nil }}
	Register(tc)
	defer tests.forget(testKey(tc.Design, tc.Name))
	rec := &memRecorder{}
	plan := &labconfig.Plan{Name: "p", Design: tc.Design, Tests: []labconfig.Test{{Name: tc.Name,
		Params: labconfig.Params{"count": {Values: []string{"x"}, Pos: labconfig.Pos{File: "lab.yaml", Line: 7}}}}}}
	r := &Runner{Lab: &labconfig.Lab{Name: "t"}, Rec: rec, Log: slog.New(slog.DiscardHandler)}
	pr := r.newPlanRun(plan)
	pr.tests(context.Background())
	if ran {
		t.Error("the test ran with parameters that do not decode")
	}
	if len(rec.vs) != 1 || rec.vs[0].Class != drivers.ClassSetup.String() || !strings.Contains(rec.vs[0].Message, `lab.yaml:7: count: "x" is not an integer`) {
		t.Errorf("recorded %+v", rec.vs)
	}
}

func TestTargetsNeedsTheParameter(t *testing.T) {
	env := &Env{Test: labconfig.Test{Name: "t"}, params: countParams{}, Log: slog.New(slog.DiscardHandler)}
	if _, err := env.Targets([]string{"a"}, time.Now()); err == nil || !strings.Contains(err.Error(), "do not embed selftest.Targets") {
		t.Errorf("targets of a test that does not declare them: %v", err)
	}
}
