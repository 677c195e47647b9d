package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/labrunner/labrunner/internal/raceshare"
	"github.com/labrunner/labrunner/results"
	"github.com/labrunner/labrunner/results/resultstest"
)

// The PRR plan end to end on the emulated Ultra96 (testdata/prr.yaml): it
// passes on a healthy switch, and each of the design's emulator faults
// fails a named test with a message naming the symptom.

func prrNightly(t *testing.T, args ...string) (int, []results.Verdict) {
	t.Helper()
	out := t.TempDir()
	code := runCode(t, append([]string{"--log-level", "error", "nightly", "--locks", t.TempDir(), "--lab", "testdata/prr.yaml", "--out", out}, args...)...)
	entries, err := os.ReadDir(out)
	if err != nil || len(entries) != 1 {
		t.Fatalf("want one run directory under %s, got %v (%v)", out, entries, err)
	}
	return code, verdicts(t, filepath.Join(out, entries[0].Name()))
}

func TestPRRPlanPassesOnTheEmulatedUltra96(t *testing.T) {
	if raceshare.SecondPassOnly(t, "TestPRRPlanCatchesEmulatorFaults's share runs the same plan under the detector, with one fault") {
		return
	}
	t.Parallel()
	code, vs := prrNightly(t)
	if code != 0 {
		for _, v := range resultstest.NotPassed(vs) {
			t.Logf("%s %s %s: %s", v.Status, v.Board, v.Name(), v.Message)
		}
		t.Fatalf("exit %d, want 0", code)
	}
	// Every test of the plan judged something on the board.
	seen := map[string]bool{}
	for _, v := range vs {
		if v.Board == "prr-0" {
			seen[v.Test] = true
			if v.Test == "latency.avg" && v.Params["load"] != "1" {
				seen["latency.avg below saturation"] = true
			}
		}
	}
	for _, want := range []string{"placement", "placement.state", "placement.egress", "placement.counters",
		"pipeline_latency", "pipeline_latency.timestamps", "pipeline_latency.port_to_port", "pipeline_latency.traffic",
		"throughput", "throughput.line", "latency.avg", "latency.avg below saturation", "latency.max", "latency.conservation", "drop_rate"} {
		if !seen[want] {
			t.Errorf("no verdict for %s", want)
		}
	}
}

func TestPRRPlanCatchesEmulatorFaults(t *testing.T) {
	t.Parallel()
	cases := []struct {
		fault    string
		test     string   // a test that must fail
		symptoms []string // each named by some failure message
		params   string   // if set, the failing verdict's parameters hold this
	}{
		{"offset-skip@prr-0", "placement", []string{"offset counter", "port 0"}, ""},
		{"sort-unstable@prr-0", "placement", []string{"permuted", "equal keys in input order"}, ""},
		{"arbiter-out-of-step@prr-0", "placement.state", []string{"ARB_INDEX[0] reads 1, golden 0", "output arbiter of port 0 is out of step"}, ""},
		// The worst case at depth 32 (reading P41): every bursty run
		// overflows a group, and a healthy one then reads P·D = 512. An
		// arbiter idling a cycle in 65 drains a full group in 520 cycles
		// (above the band), queues one entry short fill at 16 × 31 = 496
		// (below it).
		{"prr-arbiter-bubble@prr-0", "latency.max", []string{"measured 520 cycles, expected [512, 512] cycles"}, ""},
		{"prr-fifo-short@prr-0", "latency.max", []string{"measured 496 cycles, expected [512, 512] cycles"}, ""},
		// Port 0's arbiter 15 queues ahead of the fill holds each of its
		// packets until 15 more have come: about a cycle more on the mean
		// latency, 20% of it below saturation (reading P62), 1% at input
		// rate 1, whose ±25% band cannot see it.
		{"arbiter-out-of-step@prr-0,step=15", "latency.avg", []string{"ARB_INDEX[0] reads 15, golden 0"}, "load=0.9"},
	}
	for _, c := range raceshare.Cases(t, cases) {
		t.Run(c.fault, func(t *testing.T) {
			code, vs := prrNightly(t, "--fault", c.fault)
			if code != 1 {
				t.Errorf("exit %d, want 1 (a verdict failed)", code)
			}
			bad := resultstest.NotPassed(vs)
			var msgs []string
			found := false
			for _, v := range bad {
				msgs = append(msgs, v.Name()+": "+v.Message)
				if v.Test == c.test && v.Status == results.Fail && strings.Contains(v.Params.String(), c.params) {
					found = true
				}
				if v.Status == results.Error {
					t.Errorf("%s errored (%s): a fault must fail a verdict, not break the run: %s", v.Name(), v.Class, v.Message)
				}
			}
			all := strings.Join(msgs, "\n")
			if !found {
				t.Errorf("test %s (%s) did not fail; failures:\n%s", c.test, c.params, all)
			}
			for _, s := range c.symptoms {
				if !strings.Contains(all, s) {
					t.Errorf("no failure names %q:\n%s", s, all)
				}
			}
		})
	}
}

// golden predict prr prints the pipeline figures and the §5.1 scheduler
// comparison as JSON, each figure with its source.
func TestGoldenPredictPRRPrintsTheComparison(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := runCaptured(t, "golden", "predict", "--set", "cycles=2000", "--set", "replicas=2", "--set", "s=2", "--json", "prr")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	b := []byte(stdout)
	var exps []results.Expectation
	if err := json.Unmarshal(b, &exps); err != nil {
		t.Fatalf("output is not a JSON list of expectations: %v\n%.400s", err, b)
	}
	count := map[string]int{}
	algs := map[string]bool{}
	for _, e := range exps {
		count[e.Metric]++
		if e.Source == "" {
			t.Errorf("%s%v has no source", e.Metric, e.Params)
		}
		if e.Metric == "prr.latency.max" {
			algs[e.Params["alg"]] = true
		}
		if e.Metric == "prr.pipeline_latency" && (e.Params["p"] != "16" || e.Params["s"] != "2" || e.Value != 7) {
			t.Errorf("pipeline latency %v = %g, want 7 cycles for P=16, S=2 (Table 1)", e.Params, e.Value)
		}
	}
	for _, m := range []string{"prr.pipeline_latency", "prr.port_to_port_latency", "prr.throughput"} {
		if count[m] != 1 {
			t.Errorf("%d %s figures, want 1", count[m], m)
		}
	}
	// Three traffic models × twelve switches (§5.1, Fig. 7).
	for _, m := range []string{"prr.latency.avg", "prr.latency.max", "prr.zero_drop_depth"} {
		if count[m] != 36 {
			t.Errorf("%d %s figures, want 36 (3 traffic models × 12 switches)", count[m], m)
		}
	}
	for _, a := range []string{"prr", "fifo", "pim", "pim-1", "rrm", "islip", "drrm", "edrrm-1"} {
		if !algs[a] {
			t.Errorf("no worst-case latency for %s", a)
		}
	}
}
