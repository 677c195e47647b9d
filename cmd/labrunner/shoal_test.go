package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/labrunner/labrunner/internal/raceshare"
	"github.com/labrunner/labrunner/results"
	"github.com/labrunner/labrunner/results/resultstest"
)

// The Shoal plan end to end on the emulated eight-board rack
// (testdata/shoal.yaml): it passes on a healthy rack, and each of the
// design's emulator faults fails its named test with a message that names
// the symptom a person at the bench would look for.

func shoalNightly(t *testing.T, args ...string) (int, []results.Verdict) {
	t.Helper()
	out := t.TempDir()
	code := runCode(t, append([]string{"--log-level", "error", "nightly", "--locks", t.TempDir(), "--lab", "testdata/shoal.yaml", "--out", out}, args...)...)
	entries, err := os.ReadDir(out)
	if err != nil || len(entries) != 1 {
		t.Fatalf("want one run directory under %s, got %v (%v)", out, entries, err)
	}
	return code, verdicts(t, filepath.Join(out, entries[0].Name()))
}

func TestShoalPlanPassesOnTheEmulatedRack(t *testing.T) {
	if raceshare.SecondPassOnly(t, "TestShoalPlanCatchesEmulatorFaults's share runs the same plan under the detector, with one fault") {
		return
	}
	t.Parallel()
	code, vs := shoalNightly(t)
	if code != 0 {
		for _, v := range resultstest.NotPassed(vs) {
			t.Logf("%s %s %s: %s", v.Status, v.Board, v.Name(), v.Message)
		}
		t.Fatalf("exit %d, want 0", code)
	}
	// Every test of the plan judged something, on the boards it concerns.
	seen := map[string]map[string]bool{}
	for _, v := range vs {
		if seen[v.Test] == nil {
			seen[v.Test] = map[string]bool{}
		}
		seen[v.Test][v.Board] = true
	}
	for _, want := range []struct {
		test   string
		boards []string
	}{
		{"schedule.trace", []string{"shoal-sw0", "shoal-sw1", "shoal-sw2", "shoal-sw3", "shoal-sw4", "shoal-sw5"}},
		{"schedule.switch", []string{"shoal-sw0", "shoal-sw4"}},
		{"schedule.fabric", []string{"shoal-nic0"}},
		{"schedule.nic", []string{"shoal-nic0", "shoal-nic1"}},
		{"sync.one_way", []string{"shoal-nic0"}},
		{"sync.residual", []string{"shoal-nic0"}},
		{"sync.guard_band", []string{"shoal-sw0", "shoal-sw5"}},
		{"sync.slots", []string{"shoal-nic0", "shoal-nic1"}},
		{"incast.fct", []string{"shoal-nic0"}},
		{"incast.queue", []string{"shoal-nic0"}},
		{"permutation", []string{"shoal-nic0"}},
		{"permutation.trend", []string{"shoal-nic0"}},
		{"fairness", []string{"shoal-nic0", "shoal-nic1"}},
		{"queue_bound.queue", []string{"shoal-nic0", "shoal-nic1"}},
		{"queue_bound.ready", []string{"shoal-nic0", "shoal-nic1"}},
		{"queue_bound.complete", []string{"shoal-nic0"}},
		{"failure.detect", []string{"shoal-nic0", "shoal-nic1"}},
		{"failure.symmetric", []string{"shoal-nic0"}},
		{"failure.fraction", []string{"shoal-nic0"}},
		{"failure.traffic", []string{"shoal-nic0"}},
		{"corruption.counted", []string{"shoal-nic0"}},
		{"corruption.recovered", []string{"shoal-nic0"}},
		{"corruption.retransmitted", []string{"shoal-nic0"}},
	} {
		for _, b := range want.boards {
			if !seen[want.test][b] {
				t.Errorf("no verdict for %s on %s", want.test, b)
			}
		}
	}
	// Both failures were exercised: a leaf-spine cable and a node.
	kinds := map[string]bool{}
	for _, v := range vs {
		if v.Test == "failure.fraction" {
			kinds[v.Params["failure"]] = true
		}
	}
	if !kinds["leaf_spine_link"] || !kinds["node"] {
		t.Errorf("failure kinds judged: %v, want leaf_spine_link and node", kinds)
	}
}

func TestShoalPlanCatchesEmulatorFaults(t *testing.T) {
	t.Parallel()
	cases := []struct {
		fault    string
		test     string   // a test that must fail
		symptoms []string // each named by some failure message of that test
	}{
		// A spine that applies slot s+1's configuration in slot s.
		{"wrong-slot@shoal-sw4", "schedule.trace", []string{"shoal-sw4 (spine0)", "applies the wrong slot's configuration", "slot 1's configuration, +1"}},
		// NICs that send without waiting for rate-limit feedback.
		{"ignore-rate-limit@shoal-nic0", "queue_bound.queue", []string{"Eq. 5: len(Q_jk) ≤ 1 + incast(k)", "queues past Eq. 5's 8 cells", "rate-limit feedback"}},
		// A NIC board whose clock leaves the rack's lock after the sync.
		{"clock-drift@shoal-nic1", "sync.guard_band", []string{"outside the 6.4 ns guard band (SW_MISALIGNED)", "drifted"}},
	}
	for _, c := range raceshare.Cases(t, cases) {
		t.Run(c.fault, func(t *testing.T) {
			code, vs := shoalNightly(t, "--fault", c.fault)
			if code != 1 {
				t.Errorf("exit %d, want 1 (a verdict failed)", code)
			}
			var all, named []string
			for _, v := range resultstest.NotPassed(vs) {
				all = append(all, v.Name()+": "+v.Message)
				if v.Status == results.Error {
					t.Errorf("%s errored (%s): a fault must fail a verdict, not break the run: %s", v.Name(), v.Class, v.Message)
				}
				if v.Test == c.test && v.Status == results.Fail {
					// The message, and what was measured (JUnit and the
					// report show both).
					named = append(named, v.Message+" [measured: "+v.MeasuredText+"]")
				}
			}
			if len(named) == 0 {
				t.Fatalf("test %s did not fail; failures:\n%s", c.test, strings.Join(all, "\n"))
			}
			msgs := strings.Join(named, "\n")
			for _, s := range c.symptoms {
				if !strings.Contains(msgs, s) {
					t.Errorf("no %s failure names %q:\n%s", c.test, s, msgs)
				}
			}
		})
	}
}
