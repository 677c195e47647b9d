package labrun

import (
	"testing"

	"github.com/labrunner/labrunner/results"
)

func TestExitCodeOfARunThatJudgedNothing(t *testing.T) {
	skip := results.Verdict{Status: results.Skip, Message: "not run: held"}
	pass := results.Verdict{Status: results.Pass}
	for _, c := range []struct {
		vs   []results.Verdict
		code int
	}{
		{nil, ExitInfra},
		{[]results.Verdict{skip, skip}, ExitInfra},
		{[]results.Verdict{skip, pass}, ExitPass},
		{[]results.Verdict{pass}, ExitPass},
		{[]results.Verdict{pass, {Status: results.Fail, Class: "design"}}, ExitFail},
	} {
		if code, status := ExitCodeOf(c.vs); code != c.code {
			t.Errorf("%d verdicts: exit %d (%s), want %d", len(c.vs), code, status, c.code)
		}
	}
	if _, status := ExitCodeOf([]results.Verdict{skip}); status != StatusNothingRan {
		t.Errorf("all skipped: status %q", status)
	}
}
