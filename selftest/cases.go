package selftest

import (
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/drivers"
	"github.com/labrunner/labrunner/labconfig"
	"github.com/labrunner/labrunner/results"
)

// Case is a test case a test will record for a plan (RegisterCases): its JUnit identity
// (the board it is recorded on and its name with parameters) and the
// other boards of the plan it needs (a peer, the boards a path crosses).
type Case struct {
	Board  string
	Name   string
	Params results.Params
	Needs  []string
}

// ID is the case's identity in results: its board and verdict name.
func (c Case) ID() string {
	return caseID(c.Board, results.Verdict{Test: c.Name, Params: c.Params}.Name())
}

func caseID(board, name string) string { return board + " " + name }

// Cases lists the cases a test's Run records for a plan, from the plan,
// the lab and the test's parameters alone (never from a board): every case
// Run records on a healthy rack, under the same names.
type Cases func(CasePlan) ([]Case, error)

var declarations = newRegistry[Cases]("selftest.RegisterCases: the cases of test")

// RegisterCases declares the cases a registered test records (design ""
// for a generic test). A case a run then does not record (its board, or a
// board it needs, left the plan; the test stopped on an error) is still
// reported, as an error or a skip with the reason: a case's JUnit identity
// never disappears with a fault. A test that declares none and loses a
// board is reported as one error for the test on that board. Meant for
// init functions; a second declaration for one test panics.
func RegisterCases(design, test string, c Cases) {
	where := caller(1)
	if test == "" || c == nil {
		panic(fmt.Sprintf("selftest.RegisterCases at %s: want a test name and its cases (got %q, nil %v)", where, test, c == nil))
	}
	declarations.add(testKey(design, test), c, where)
}

// casesFor returns the cases declared for the test a plan of design runs
// under name (the design's own test first, as Lookup finds it).
func casesFor(design, name string) Cases {
	if c, ok := declarations.get(testKey(design, name)); ok {
		return c
	}
	if _, own := tests.get(testKey(design, name)); own {
		return nil
	}
	c, _ := declarations.get(testKey("", name))
	return c
}

// CasePlan is what a test's Cases reads: the lab and the plan as written,
// the design's manifest and the test's decoded parameters. Nothing in it
// comes from a board: the cases of a plan are the same whichever boards a
// run finds healthy.
type CasePlan struct {
	Lab    *labconfig.Lab
	Plan   *labconfig.Plan
	Test   labconfig.Test
	Design *bitstreams.Manifest
	// Params is the test's decoded parameter struct (Test.Params' type).
	Params any
	// Start is when the plan started (Env.PlanStart): the night a rotation
	// of targets is at (TargetsOf).
	Start time.Time
}

// casesOf returns the cases test i of the plan declares, or nil when it
// declares none (its Cases is unset, or the design is not known).
func (pr *planRun) casesOf(i int) []Case {
	if c, ok := pr.declared[i]; ok {
		return c
	}
	var cs []Case
	defer func() { pr.declared[i] = cs }()
	t := pr.plan.Tests[i]
	test, ok := Lookup(pr.plan.Design, t.Name)
	declare := casesFor(pr.plan.Design, t.Name)
	if !ok || declare == nil || pr.env.Design == nil {
		return nil
	}
	params, err := test.DecodeParams(t.Params)
	if err != nil {
		return nil
	}
	got, err := declare(CasePlan{Lab: pr.r.Lab, Plan: pr.plan, Test: t, Design: pr.env.Design, Params: params, Start: pr.start})
	if err != nil {
		// The run reports what the test records; the declaration's
		// trouble is logged for whoever maintains the test.
		pr.log.Error("a test's declared cases could not be listed", "test", t.Name, "err", err)
		return nil
	}
	cs = got
	return cs
}

// declares says whether test i lists its cases (RegisterCases): a board that leaves the
// plan is then reported under those cases (reconcile) rather than as one
// error for the test.
func (pr *planRun) declares(i int) bool { return pr.casesOf(i) != nil }

// reconcile records every case test i declared that the run did not
// record, so that no case of the plan disappears: a case on (or needing) a
// board that left the plan is an infrastructure error naming the board and
// its health error; one the test could not reach because it returned an
// error is skipped with that error (the test's own error verdict says what
// went wrong); one the plan never ran is an error with the reason it did
// not (stop); any other is a failure: the test declared a case it then
// did not judge. With onlyLeft, only the cases of boards that left the
// plan are recorded (the plan stopped, and failTests recorded the rest).
func (pr *planRun) reconcile(i int, seen map[string]bool, testErr, stop error, onlyLeft bool) {
	if pr.reconciled[i] {
		return
	}
	pr.reconciled[i] = true
	cs := pr.casesOf(i)
	if len(cs) == 0 {
		return
	}
	env := pr.env
	env.step = TestStep(pr.plan, i)
	defer func() { env.step = "" }()
	name := pr.plan.Tests[i].Name
	done := map[string]bool{}
	for _, c := range cs {
		id := c.ID()
		if seen[id] || done[id] {
			continue
		}
		done[id] = true
		if b, why, ok := pr.leftPlan(c); ok {
			env.Error(c.Name, c.Board, c.Params, drivers.Infra(b, "health", "the rest of the rack goes on without it",
				fmt.Errorf("board %s left the plan: %s", b, why)))
			continue
		}
		if onlyLeft {
			continue
		}
		switch {
		case stop != nil:
			env.Error(c.Name, c.Board, c.Params, stop)
		case testErr != nil:
			env.Skip(c.Name, c.Board, c.Params, fmt.Sprintf("not measured: test %s stopped with an error (see its verdict): %v", name, testErr))
		default:
			env.Error(c.Name, c.Board, c.Params, fmt.Errorf("test %s declares this case for the plan but recorded no verdict for it", name))
		}
	}
}

// leftPlan returns the first board of a case (its own, then those it
// needs) that left the plan, and why.
func (pr *planRun) leftPlan(c Case) (string, string, bool) {
	for _, b := range append([]string{c.Board}, c.Needs...) {
		if why, bad := pr.env.Unhealthy[b]; bad && b != "" {
			return b, why, true
		}
	}
	return "", "", false
}

// reconcileRest reports the declared cases of the pending tests that did
// not run (the plan stopped before them), unless the run was interrupted
// (a resumed run runs them).
func (pr *planRun) reconcileRest(interrupted bool) {
	if interrupted {
		return
	}
	stop := errors.New("not run: the plan stopped before the test")
	if pr.res.Setup != nil {
		stop = fmt.Errorf("not run: %w", pr.res.Setup)
	}
	for _, i := range pr.pending {
		pr.reconcile(i, nil, nil, stop, false)
	}
}

// seenCases tracks the cases the running test records (Env.write), for
// reconcile.
type seenCases struct {
	ids map[string]bool
}

func (s *seenCases) add(board, name string) {
	if s != nil && s.ids != nil {
		s.ids[caseID(board, name)] = true
	}
}

// DeclaredCases lists the cases the tests of a plan started at start
// declare, by test entry, for tools and tests that compare runs (every
// case is "board name"). Tests that declare none are left out.
func DeclaredCases(lab *labconfig.Lab, plan *labconfig.Plan, design *bitstreams.Manifest, start time.Time) (map[string][]string, error) {
	out := map[string][]string{}
	for i, t := range plan.Tests {
		test, ok := Lookup(plan.Design, t.Name)
		declare := casesFor(plan.Design, t.Name)
		if !ok || declare == nil {
			continue
		}
		params, err := test.DecodeParams(t.Params)
		if err != nil {
			return nil, paramsError(t, err)
		}
		cs, err := declare(CasePlan{Lab: lab, Plan: plan, Test: t, Design: design, Params: params, Start: start})
		if err != nil {
			return nil, fmt.Errorf("test %s: %w", t.Name, err)
		}
		var ids []string
		for _, c := range cs {
			ids = append(ids, c.ID())
		}
		sort.Strings(ids)
		out[TestStep(plan, i)] = ids
	}
	return out, nil
}
