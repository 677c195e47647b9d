package resultstest

import (
	"slices"
	"testing"

	"github.com/labrunner/labrunner/results"
)

func TestCaseSetIgnoresOrderAndNamesTheParams(t *testing.T) {
	a := results.Verdict{Plan: "p", Board: "b1", Test: "bw", Params: results.Params{"payload": "64"}, Status: results.Pass}
	b := results.Verdict{Plan: "p", Board: "b0", Test: "lat", Status: results.Fail}
	x, y := CaseSet([]results.Verdict{a, b}), CaseSet([]results.Verdict{b, a})
	want := []string{"p b0 lat fail", "p b1 bw[payload=64] pass"}
	if !slices.Equal(x, want) || !slices.Equal(y, want) {
		t.Errorf("CaseSet: %q and %q, want %q", x, y, want)
	}
	b.Status = results.Pass
	if slices.Equal(CaseSet([]results.Verdict{a, b}), want) {
		t.Error("a changed status gives the same case set")
	}
}

func TestNotPassed(t *testing.T) {
	vs := []results.Verdict{{Test: "a", Status: results.Pass}, {Test: "b", Status: results.Fail}, {Test: "c", Status: results.Skip}}
	got := NotPassed(vs)
	if len(got) != 2 || got[0].Test != "b" || got[1].Test != "c" {
		t.Errorf("NotPassed: %+v", got)
	}
}
