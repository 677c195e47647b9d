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

// The TiN plan end to end on the emulated eight-board Clique
// (testdata/tin.yaml): it passes on a healthy rack, and each of the
// design's emulator faults fails its named test with a message that names
// the symptom a person at the bench would look for.

func tinNightly(t *testing.T, args ...string) (int, []results.Verdict) {
	t.Helper()
	out := t.TempDir()
	code := runCode(t, append([]string{"--log-level", "error", "nightly", "--locks", t.TempDir(), "--lab", "testdata/tin.yaml", "--out", out}, args...)...)
	entries, err := os.ReadDir(out)
	if err != nil || len(entries) != 1 {
		t.Fatalf("want one run directory under %s, got %v (%v)", out, entries, err)
	}
	return code, verdicts(t, filepath.Join(out, entries[0].Name()))
}

func TestTiNPlanPassesOnTheEmulatedClique(t *testing.T) {
	if raceshare.SecondPassOnly(t, "TestTiNPlanCatchesEmulatorFaults's share runs the same plan under the detector, with one fault") {
		return
	}
	t.Parallel()
	code, vs := tinNightly(t)
	if code != 0 {
		for _, v := range resultstest.NotPassed(vs) {
			t.Logf("%s %s %s: %s", v.Status, v.Board, v.Name(), v.Message)
		}
		t.Fatalf("exit %d, want 0", code)
	}
	seen := map[string]map[string]bool{}
	for _, v := range vs {
		if seen[v.Test] == nil {
			seen[v.Test] = map[string]bool{}
		}
		seen[v.Test][v.Board] = true
	}
	all := []string{"tin-p0b0", "tin-p0b1", "tin-p0b2", "tin-p0b3", "tin-p1b0", "tin-p1b1", "tin-p1b2", "tin-p1b3"}
	for _, want := range []struct {
		test   string
		boards []string
	}{
		{"links.up", all}, {"links.peer", all}, {"links.credits", all},
		{"cellification", []string{"tin-p0b0"}}, {"cellification.design", []string{"tin-p0b0"}},
		{"flow_order", all}, {"flow_order.delivered", []string{""}},
		{"routes", []string{""}}, {"routes.distinct", []string{""}},
		{"incast.queue", nil}, {"incast.ctd", nil}, {"incast.data", nil},
		{"ordering", []string{"tin-p1b3"}}, {"ordering.complete", []string{"tin-p1b3"}}, {"ordering.stress", []string{"tin-p1b3"}},
		{"fallback", []string{"tin-p1b3"}}, {"fallback.connections", []string{"tin-p1b3"}},
		{"trace_path", []string{"tin-p0b1"}}, {"trace_path.routes", []string{"tin-p0b1"}},
		{"credits", all},
	} {
		if len(seen[want.test]) == 0 {
			t.Errorf("no verdict for %s", want.test)
		}
		for _, b := range want.boards {
			if !seen[want.test][b] {
				t.Errorf("no verdict for %s on %q", want.test, b)
			}
		}
	}
}

func TestTiNPlanCatchesEmulatorFaults(t *testing.T) {
	t.Parallel()
	cases := []struct {
		fault    string
		test     string   // a test that must fail
		symptoms []string // each named by some failure message of that test
	}{
		// An IP ingress that lets a flow's RTS overtake its predecessor.
		{"tin-rts-overtake@tin-p0b0", "flow_order", []string{"out of their flow's order", "IP_OOO_PKTS", "sequence inversions", "flow p0t0e1/"}},
		// A receiver that never returns the credits of the first cells through a cage.
		{"tin-credit-leak@tin-p0b1:sfp0", "credits", []string{"tin-p0b2:sfp2 does not hold the peer's FIFO in credits", "tin-p0b1:sfp0 (credit leak)"}},
		// A target whose reorder buffer lets REQs out before their predecessors.
		{"tin-rob-early-release@tin-p1b3", "ordering", []string{"tin-p1b3's delivery log breaks SC'18 §III", "executed REQ", "released from the reorder buffer before their predecessors"}},
	}
	for _, c := range raceshare.Cases(t, cases) {
		t.Run(c.fault, func(t *testing.T) {
			code, vs := tinNightly(t, "--fault", c.fault)
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
					named = append(named, v.Message)
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
