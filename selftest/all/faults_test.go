package all_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/boards/emu"
	"github.com/labrunner/labrunner/internal/raceshare"
	"github.com/labrunner/labrunner/labrun"
	"github.com/labrunner/labrunner/results"
)

// faultCase is one design fault of the ExaNet, PRR, Shoal or TiN emulator
// and what the default lab's plan must make of it.
type faultCase struct {
	fault string
	// targets are the boards (or board:port cables) the fault can take;
	// each run injects it on one, in rotation.
	targets []string
	plan    string
	// catch: at least one of these tests fails (a design failure).
	catch []string
	// benign faults pass, and leave the trace measurement named here.
	benign string
}

// wholeTiNPlan are the TiN faults whose case runs every test of the plan
// rather than tinTests: one cell in 10^4 lost (tin-cell-drop) shows only
// in the cells of every traffic test of the plan added up (conservation).
var wholeTiNPlan = map[string]bool{"tin-cell-drop": true}

var (
	exanetBoards = []string{"exa-00", "exa-10", "exa-01", "exa-11"}
	exanetCables = []string{"exa-00:sfp0", "exa-01:sfp0", "exa-00:sfp1", "exa-10:sfp1", "exa-10:sfp0", "exa-11:sfp0", "exa-01:sfp1", "exa-11:sfp1"}
	shoalNICs    = []string{"shoal-nic0", "shoal-nic1"}
	shoalSwitch  = []string{"shoal-sw0", "shoal-sw1", "shoal-sw2", "shoal-sw3", "shoal-sw4", "shoal-sw5"}
	shoalBoards  = append(append([]string{}, shoalNICs...), shoalSwitch...)
	shoalCables  = []string{"shoal-nic0:sfp0", "shoal-nic0:sfp3", "shoal-nic1:sfp1", "shoal-sw0:sfp2", "shoal-sw1:sfp3", "shoal-sw3:sfp2", "shoal-sw2:sfp3"}
	tinBoards    = []string{"tin-p0b0", "tin-p0b1", "tin-p0b2", "tin-p0b3", "tin-p1b0", "tin-p1b1", "tin-p1b2", "tin-p1b3"}
	tinCables    = []string{"tin-p0b0:sfp0", "tin-p0b1:sfp1", "tin-p0b2:sfp0", "tin-p0b3:sfp3", "tin-p1b0:sfp2", "tin-p1b1:sfp0", "tin-p1b2:sfp3", "tin-p1b3:sfp1"}
)

// designFaults is every fault `labrunner faults` lists for the four designs
// (TestDesignFaultsCoverTheRegistry holds it to the registry).
var designFaults = []faultCase{
	{"arbiter-starve", exanetBoards, "exanet-mesh", []string{"bandwidth"}, ""},
	{"dor-misroute", exanetBoards, "exanet-mesh", []string{"dor_path"}, ""},
	{"credit-leak", exanetCables, "exanet-mesh", []string{"bandwidth.credits", "links.credits"}, ""},
	{"link-down", exanetCables, "exanet-mesh", []string{"links.up"}, ""},
	{"header-bit-flip", exanetCables, "exanet-mesh", nil, "exanet.link.ecc_corrected"},
	{"exa-xcvr-slow", exanetCables, "exanet-mesh", []string{"hop_latency"}, ""},
	{"exa-arb-slow", exanetBoards, "exanet-mesh", []string{"bandwidth"}, ""},
	{"exa-link-gap", exanetCables, "exanet-mesh", []string{"bandwidth"}, ""},
	{"exa-rx-fifo-short", exanetCables, "exanet-mesh", []string{"bandwidth.credits", "links.credits"}, ""},
	{"arbiter-out-of-step", []string{"prr-0"}, "prr", []string{"placement.state", "latency.order"}, ""},
	{"offset-skip", []string{"prr-0"}, "prr", []string{"placement"}, ""},
	{"sort-unstable", []string{"prr-0"}, "prr", []string{"placement"}, ""},
	{"prr-arbiter-bubble", []string{"prr-0"}, "prr", []string{"throughput.line"}, ""},
	{"prr-extra-stage", []string{"prr-0"}, "prr", []string{"pipeline_latency"}, ""},
	{"prr-fifo-short", []string{"prr-0"}, "prr", []string{"placement"}, ""},
	{"prr-silent-drop", []string{"prr-0"}, "prr", []string{"latency.conservation"}, ""},
	{"wrong-slot", shoalSwitch, "shoal", []string{"schedule.trace"}, ""},
	{"clock-drift", shoalBoards, "shoal", []string{"sync.guard_band", "sync.slots"}, ""},
	{"ignore-rate-limit", shoalNICs, "shoal", []string{"queue_bound.queue"}, ""},
	{"shoal-ready-leak", shoalNICs, "shoal", []string{"outcast.source"}, ""},
	{"shoal-link-down", shoalCables, "shoal", []string{"sync.slots"}, ""},
	{"shoal-node-down", shoalBoards, "shoal", []string{"sync.slots"}, ""},
	{"shoal-cell-drop", shoalCables, "shoal", []string{"queue_bound.complete", "permutation", "sync.slots"}, ""},
	{"shoal-feedback-late", shoalNICs, "shoal", []string{"corruption.delivered"}, ""},
	{"shoal-guard-short", shoalBoards, "shoal", []string{"corruption.delivered", "failure.detect", "sync.guard_band"}, ""},
	{"shoal-slot-long", shoalBoards, "shoal", []string{"corruption.delivered", "failure.detect", "sync.guard_band"}, ""},
	{"tin-adaptive-stuck", tinBoards, "tin", []string{"routes.adaptive"}, ""},
	{"tin-rob-early-release", tinBoards, "tin", []string{"fallback.log"}, ""},
	{"tin-rob-small", tinBoards, "tin", []string{"rob_skew.occupancy", "rob_skew.nacks", "rob_skew.fallbacks"}, ""},
	{"tin-rts-overtake", tinBoards, "tin", []string{"flow_order"}, ""},
	{"tin-credit-leak", tinCables, "tin", []string{"credits", "links.credits"}, ""},
	// The cable fails during each run (after_ns into it), so it is up at
	// rest: the tests whose traffic crosses it catch it.
	{"tin-link-down", tinCables, "tin", []string{"links.up", "credits", "flow_order.delivered"}, ""},
	{"tin-cell-drop", tinCables, "tin", []string{"conservation"}, ""}, // wholeTiNPlan
	{"tin-few-credits", tinCables, "tin", []string{"credits", "links.credits"}, ""},
	{"tin-slow-fallthrough", tinBoards, "tin", []string{"trace_path.head_latency"}, ""},
}

// tinTests are the TiN plan's tests this campaign runs (the whole plan
// takes long; these are the ones its faults are caught by, and every
// board is a target of each).
var tinTests = []string{"links", "flow_order", "routes", "fallback", "rob_skew", "trace_path", "credits"}

// defaultPlans are the default lab's plans.
var defaultPlans = []string{"exanet-mesh", "prr", "shoal", "tin"}

// racePlan is the one plan of the default lab that this package's
// end-to-end tests run under the race detector (raceshare.Enabled): the
// cheapest, ExaNet's (about 10 s of CPU under the detector; PRR's, Shoal's
// and TiN's took 60 to 75 s more a day, their plans running two or three
// times here). Without the race detector it is "" and they run every plan;
// make test runs the package both ways (see the Makefile's unit target).
// Every plan's own paths run under the detector each day all the same, in
// cmd/labrunner's per-design fault tables (TestPRRPlanCatchesEmulatorFaults
// and the others: one fault a day, every test of each plan on a smaller
// rack).
func racePlan(t *testing.T) string {
	if raceshare.Enabled {
		return "exanet-mesh"
	}
	return ""
}

// onlyPlan is racePlan as a labRun's plans: nil (every plan) without the
// race detector.
func onlyPlan(t *testing.T) []string {
	if p := racePlan(t); p != "" {
		return []string{p}
	}
	return nil
}

// Every design fault of the default lab's designs makes its plan fail
// with exit 1 (design) on the board or cable the rotation gives it, with
// only design failures, through the tests that should catch it; a benign
// fault passes and leaves its trace; and every case of the clean run keeps
// its name (no case appears or disappears with the fault).
func TestDefaultPlansCatchEveryDesignFault(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a plan per fault")
	}
	t.Parallel()
	cat := bitstreams.Default()
	rot := raceshare.Rotation(t)
	t.Logf("rotation %d (set LABRUNNER_FAULT_ROTATION=%d to repeat it)", rot, rot)
	run := func(t *testing.T, plan string, whole bool, faults ...string) labResult {
		o := labRun{plans: []string{plan}, faults: faults}
		if plan == "tin" && !whole {
			o.tests = map[string][]string{"tin": tinTests}
		}
		return runLab(t, cat, o)
	}
	// Every fault; under the race detector one fault of racePlan's plan,
	// in rotation (successive days take the plan's faults in turn).
	faults := designFaults
	if plan := racePlan(t); plan != "" {
		var ofPlan []faultCase
		for _, fc := range designFaults {
			if fc.plan == plan {
				ofPlan = append(ofPlan, fc)
			}
		}
		faults = []faultCase{ofPlan[rot%len(ofPlan)]}
		t.Logf("race detector on: fault %s of plan %s only (make test runs every fault without it)", faults[0].fault, plan)
	}
	// The plans' cases without a fault, which each fault's run is compared
	// with once it is done (the fault runs do not wait for the clean
	// ones): those of the default lab's clean run (shared with
	// TestGoldenInputsNeverComeFromTheBoard, which fails it unless it
	// passed), or for a TiN fault caught within tinTests, those of the TiN
	// plan run with only them.
	// Each clean run's names are read once, for every fault that compares
	// with them.
	tinRoot := t.TempDir()
	tinClean := sync.OnceValues(func() ([]string, error) {
		dir, out, err := runLabIn(tinRoot, cat, labRun{plans: []string{"tin"}, tests: map[string][]string{"tin": tinTests}})
		if err != nil {
			return nil, err
		}
		if out.ExitCode != labrun.ExitPass {
			return nil, fmt.Errorf("plan tin without a fault: exit %d", out.ExitCode)
		}
		return caseNamesIn(dir)
	})
	// The default lab's clean run (shared with
	// TestGoldenInputsNeverComeFromTheBoard) begins now too, outside the
	// parallel slots: the comparisons at the end wait for it.
	go cleanDefault(onlyPlan(t), cat)
	if slices.ContainsFunc(faults, func(fc faultCase) bool { return fc.plan == "tin" && !wholeTiNPlan[fc.fault] }) {
		// Begun now, beside the fault runs: the cases of every TiN fault
		// are compared with its at the end. The cleanup (before tinRoot's
		// removal) waits for it.
		go tinClean()
		t.Cleanup(func() { tinClean() })
	}
	cleanCases := func(plan string, whole bool) ([]string, error) {
		if plan == "tin" && !whole {
			return tinClean()
		}
		if _, err := cleanDefault(onlyPlan(t), cat); err != nil {
			return nil, err
		}
		var out []string
		for _, c := range cleanRun.names {
			if strings.HasPrefix(c, plan+".") {
				out = append(out, c)
			}
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("plan %s: no case in the default lab's clean run", plan)
		}
		return out, nil
	}
	// Each fault's cases are compared with the clean run's once every fault
	// run is done: a fault's case that waited for a clean run would hold
	// one of the parallel slots (-parallel) the other fault runs need, and
	// the clean runs take longer than most fault runs.
	type faultNames struct {
		plan  string
		whole bool
		names []string
	}
	var (
		namesMu sync.Mutex
		names   = map[string]faultNames{}
	)
	t.Cleanup(func() {
		for _, fault := range slices.Sorted(maps.Keys(names)) {
			f := names[fault]
			clean, err := cleanCases(f.plan, f.whole)
			if err != nil {
				t.Errorf("%s: the clean run to compare its cases with: %v", fault, err)
				continue
			}
			if missing, extra := diff(clean, f.names), diff(f.names, clean); len(missing)+len(extra) > 0 {
				t.Errorf("%s: the fault changed the plan's cases: %d missing (%s), %d new (%s)", fault, len(missing), firstOf(missing), len(extra), firstOf(extra))
			}
		}
	})
	for _, fc := range faults {
		// The target rotates with the fault's place in designFaults, so
		// that a race run and a run without it agree on the day's targets.
		i := slices.IndexFunc(designFaults, func(d faultCase) bool { return d.fault == fc.fault })
		target := fc.targets[(rot+i)%len(fc.targets)]
		fault := fc.fault + "@" + target
		t.Run(fault, func(t *testing.T) {
			// Each fault has its own rack and run directory.
			t.Parallel()
			r := run(t, fc.plan, wholeTiNPlan[fc.fault], fault)
			vs := verdictsOf(t, r.dir)
			var failed []string
			for _, v := range vs {
				switch v.Status {
				case results.Fail:
					if v.Class != "design" {
						t.Errorf("%s on %s failed with class %q: %s", v.Name(), v.Board, v.Class, v.Message)
					}
					failed = append(failed, v.Test)
				case results.Error:
					t.Errorf("%s on %s: error (%s): %s", v.Name(), v.Board, v.Class, v.Message)
				}
			}
			if fc.benign != "" {
				if r.out.ExitCode != labrun.ExitPass {
					t.Errorf("benign fault: exit %d, want 0 (failed: %s)", r.out.ExitCode, strings.Join(dedup(failed), ", "))
				}
				if !traced(t, r.dir, fc.benign, strings.Split(target, ":")[0]) {
					t.Errorf("benign fault left no trace: no %s above 0 on %s", fc.benign, target)
				}
			} else {
				if r.out.ExitCode != labrun.ExitFail {
					t.Errorf("exit %d, want %d (a design failure)", r.out.ExitCode, labrun.ExitFail)
				}
				caught := false
				for _, c := range fc.catch {
					caught = caught || slices.Contains(failed, c)
				}
				if !caught {
					t.Errorf("none of %s failed (failed: %s)", strings.Join(fc.catch, ", "), strings.Join(dedup(failed), ", "))
				}
			}
			namesMu.Lock()
			names[fault] = faultNames{fc.plan, wholeTiNPlan[fc.fault], caseNames(t, r.dir)}
			namesMu.Unlock()
		})
	}
}

func verdictsOf(t *testing.T, dir string) []results.Verdict {
	t.Helper()
	// Read without the writer's lock: several tests read one finished run
	// at once.
	vs, err := results.ReadVerdictLog(dir)
	if err != nil {
		t.Fatal(err)
	}
	return vs
}

// caseNames are a run's JUnit identities (board and case name), sorted.
func caseNames(t *testing.T, dir string) []string {
	t.Helper()
	names, err := caseNamesIn(dir)
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// caseNamesIn is caseNames for a caller without its own test.
func caseNamesIn(dir string) ([]string, error) {
	vs, err := results.ReadVerdictLog(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, v := range vs {
		out = append(out, v.Plan+"."+v.Board+" "+v.Name())
	}
	slices.Sort(out)
	return out, nil
}

// traced reports whether the run measured metric above 0 on board.
func traced(t *testing.T, dir, metric, board string) bool {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, results.MeasurementsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var m results.Measurement
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		if m.Metric == metric && m.Board == board && m.Value > 0 {
			return true
		}
	}
	return false
}

func dedup(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return slices.Compact(s)
}

func firstOf(s []string) string {
	if len(s) > 4 {
		return strings.Join(s[:4], "; ") + fmt.Sprintf("; ... %d in all", len(s))
	}
	return strings.Join(s, "; ")
}

// Every fault the emulator registers for one of the default lab's designs
// has a case in designFaults, so a new fault is caught (or shown benign)
// by the default plans in make test, not only in a campaign someone runs.
func TestDesignFaultsCoverTheRegistry(t *testing.T) {
	listed := map[string]bool{}
	for _, fc := range designFaults {
		if listed[fc.fault] {
			t.Errorf("%s: two cases in designFaults", fc.fault)
		}
		listed[fc.fault] = true
	}
	designs := map[string]bool{"exanet": true, "prr": true, "shoal": true, "tin": true}
	n := 0
	for _, fi := range emu.Faults() {
		if !designs[fi.Design] {
			continue
		}
		n++
		if !listed[fi.Name] {
			t.Errorf("fault %s of design %s has no case in designFaults: add the tests that catch it (labrunner faults campaign --faults %s --targets all shows them)", fi.Name, fi.Design, fi.Name)
		}
	}
	if n == 0 {
		t.Fatal("the emulator registers no fault for the default lab's designs")
	}
}

// A fault changes the statuses of a plan's cases, never their names: a
// case's JUnit identity comes from the plan and the lab alone. A board
// that leaves the plan (board-silent, mgmt-never-boots) keeps every case
// of every test that declares its cases (selftest.RegisterCases) and of
// the management check, its own and those of the boards whose peers,
// paths or cables need it, each an error naming it; the management check
// names its cases by board, whichever proxy, TimeSync parent or
// re-rooted tree the fault made the run choose (tsync-dead,
// mgmt-nsf-reboot), and every board has the TimeSync client cases, the
// primary's skipped, so a board that leaves the plan and moves the primary
// (reading M2) moves no case. A Shoal board that leaves the plan stops the design's
// setup: its one error is the case the fault adds (appear), and the
// management check runs all the same. Each plan runs a few of its tests,
// with the management check as the nightly runs it (the names of the
// other tests' cases come from the same declarations;
// TestDefaultPlansCatchEveryDesignFault compares every case of every plan
// for the design faults).
func TestFaultsKeepTheCaseNames(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a plan per fault")
	}
	t.Parallel()
	cat := bitstreams.Default()
	type faulted struct {
		fault string
		exit  int
		// appear are the cases the fault may add (plan.board name): the
		// trace of what happened, never a case of the plan.
		appear []string
	}
	for _, c := range []struct {
		name, plan string
		tests      []string
		faults     []faulted
	}{
		{"exanet-mesh", "exanet-mesh", []string{"registers", "links", "latency", "dor_path", "port_loopback"}, []faulted{{"board-silent@exa-10", labrun.ExitInfra, nil}}},
		{"prr", "prr", []string{"registers", "pipeline_latency"}, []faulted{{"mgmt-never-boots@prr-0", labrun.ExitInfra, nil}}},
		{"tin", "tin", []string{"registers"}, []faulted{{"tsync-dead@tin-p0b3", labrun.ExitFail, nil}, {"mgmt-nsf-reboot@tin-p0b0", labrun.ExitPass, nil}}},
		// A TiN board that leaves the plan: the Clique is set up without
		// it, and the tests whose targets, pairs, senders, sources or
		// cables need it leave those cases to the runner (the tests
		// that choose boards, cables and rotations).
		{"tin-silent", "tin", []string{"registers", "links", "cellification", "incast", "fallback", "trace_path", "credits", "conservation"},
			[]faulted{{"board-silent@tin-p0b1", labrun.ExitInfra, nil}}},
		// A Shoal board that leaves the plan stops the design's setup
		// (every board of the rack is needed): the management check
		// still runs, and every test's cases are reported with the
		// setup's error, which is the one case the fault adds.
		{"shoal-silent", "shoal", []string{"registers", "schedule", "sync", "incast", "fairness", "outcast", "failure", "corruption"},
			[]faulted{{"board-silent@shoal-sw1", labrun.ExitInfra, []string{"shoal. setup"}}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			o := labRun{plans: []string{c.plan}, tests: map[string][]string{c.plan: c.tests}, mgmt: true}
			clean := runLab(t, cat, o)
			if clean.out.ExitCode != labrun.ExitPass {
				t.Fatalf("plan %s without a fault: exit %d", c.plan, clean.out.ExitCode)
			}
			want := slices.DeleteFunc(caseNames(t, clean.dir), isEvent)
			for _, f := range c.faults {
				o.faults = []string{f.fault}
				r := runLab(t, cat, o)
				if r.out.ExitCode != f.exit {
					t.Errorf("%s: exit %d, want %d", f.fault, r.out.ExitCode, f.exit)
				}
				got := slices.DeleteFunc(caseNames(t, r.dir), isEvent)
				missing := diff(want, got)
				extra := slices.DeleteFunc(diff(got, want), func(c string) bool { return slices.Contains(f.appear, c) })
				if len(missing)+len(extra) > 0 {
					t.Errorf("%s changed the plan's cases: %d missing (%s), %d new (%s)", f.fault, len(missing), firstOf(missing), len(extra), firstOf(extra))
				}
			}
		})
	}
}

// isEvent says whether a case records an event the run saw rather than a
// case of the plan: bringup.reconcile, a firmware the runner found rebooted
// (or silent) and the registers it rewrote, exists only when that happened
// (the trace mgmt-nsf-reboot leaves, docs/verdicts.md).
func isEvent(c string) bool { return strings.Contains(c, " bringup.reconcile[") }
