package selftest

import (
	"context"
	"testing"

	"github.com/labrunner/labrunner/labconfig"
)

// The progress bars' totals are the steps the runner reports: a design
// with a setup has one more (a TiN plan used to end at "step 17/16").
func TestStepsCountsTheSetup(t *testing.T) {
	plain := &labconfig.Plan{Design: "steps-test-plain", Tests: []labconfig.Test{{Name: "a"}, {Name: "b"}}}
	withSetup := &labconfig.Plan{Design: "steps-test-setup", Tests: plain.Tests}
	RegisterSetup(withSetup.Design, func(context.Context, *Env) error { return nil }, noParams)
	if got := Steps(plain, false); got != 5 {
		t.Errorf("plan without setup: %d steps, want health, bitstreams, program + 2 tests = 5", got)
	}
	if got := Steps(withSetup, false); got != 6 {
		t.Errorf("plan with setup: %d steps, want 6", got)
	}
	if got := Steps(withSetup, true); got != 7 {
		t.Errorf("plan with setup and the management check: %d steps, want 7", got)
	}
}
