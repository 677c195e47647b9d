// Package resultstest holds what tests of a run directory's verdicts share:
// the verdicts as a set of test cases to compare two runs by, and the ones
// that did not pass.
package resultstest

import (
	"fmt"
	"sort"

	"github.com/labrunner/labrunner/results"
)

// CaseSet renders the verdicts as a sorted list of "plan board name
// status": two runs with the same cases and outcomes give the same list,
// whatever order their verdicts were written in.
func CaseSet(vs []results.Verdict) []string {
	out := make([]string, 0, len(vs))
	for _, v := range vs {
		out = append(out, fmt.Sprintf("%s %s %s %s", v.Plan, v.Board, v.Name(), v.Status))
	}
	sort.Strings(out)
	return out
}

// NotPassed are the verdicts whose status is not pass, in their order.
func NotPassed(vs []results.Verdict) []results.Verdict {
	var out []results.Verdict
	for _, v := range vs {
		if v.Status != results.Pass {
			out = append(out, v)
		}
	}
	return out
}
