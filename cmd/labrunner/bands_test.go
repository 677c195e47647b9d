package main

import (
	"testing"

	"github.com/labrunner/labrunner/results/bands"
)

// Every band the default lab's nightly judges with is within ±10% of its
// reference, or says why it may be wider (Expectation.Wide). The test reads
// the default lab's nightly on the emulated rack (defaultNightly) and lists
// every offender with what to fix; `labrunner golden bands --check` agrees
// with it.
func TestDefaultLabBandsHaveReasons(t *testing.T) {
	t.Parallel()
	code, dir, out := defaultNightly(t)
	if code != 0 && code != 1 {
		t.Fatalf("the default lab's nightly: exit %d\n%s", code, tail(out, 40))
	}
	bs, err := bands.FromRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	// The whole lab judges with about 380 bands, its smallest plan (prr)
	// with 26; under the race detector the run is the ExaNet plan's
	// (defaultNightlyPlan).
	least := 100
	if plan := defaultNightlyPlan(t); plan != "" {
		least = 20
		t.Logf("race detector on: the default lab's plan %s only (make test runs every plan without it)", plan)
	}
	if len(bs) < least {
		t.Fatalf("%d bands in the default lab's run: expectations missing", len(bs))
	}
	off := bands.Offenders(bs)
	for _, b := range off {
		t.Errorf("band without a reason: %s", b.Describe())
	}
	want := 0
	if len(off) > 0 {
		want = 1
	}
	if code := runCode(t, "golden", "bands", "--offenders", "--check", "--run", dir); code != want {
		t.Errorf("golden bands --check: exit %d, want %d (%d offenders)", code, want, len(off))
	}
}
