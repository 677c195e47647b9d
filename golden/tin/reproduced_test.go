package tin

import (
	"flag"
	"testing"
)

// figures runs the reproductions that take seconds of CPU (the full
// Clique at 70% load): make figures, or go test ./golden/tin -figures.
var figures = flag.Bool("figures", false, "also reproduce the paper's figures that take seconds of CPU (make figures)")

// Every figure of docs/figures.md's Aquila section is recomputed and equals
// the table's golden value; the table's golden value is within 5% of the
// paper's or says why not. The slow one runs under -figures; the RTT
// sweep's test covers the same code on a shorter run.
func TestFigures(t *testing.T) {
	for _, f := range Figures() {
		if f.Slow && !*figures {
			if err := f.Check(f.Golden); err != nil {
				t.Error(err)
			}
			continue
		}
		got, err := f.Compute()
		if err != nil {
			t.Fatalf("%s: %v", f.Section, err)
		}
		if err := f.Check(got); err != nil {
			t.Error(err)
		}
	}
}

// The full Clique carries 70% of its injection rate (§5.1, Fig. 7) with an
// RTT under the paper's 20 µs on a shorter run.
func TestFullCliqueRTTSweep(t *testing.T) {
	c, err := NewClique(FullPods, FullTiNsPerPod, GlobalPortsPerTiN)
	if err != nil {
		t.Fatal(err)
	}
	fig, rs, err := RTTSweep(SimConfig{Clique: c, Timing: PaperTiming(), Mode: FullyAdaptive, Bytes: 1500, ReplyBytes: 64,
		Warmup: 5000, Packets: 15000, Align: 8, Seed: 1}, []float64{0.7}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rs[0].Saturated || len(fig.Checks) != 1 || !fig.Checks[0].Pass {
		t.Errorf("full Clique at 0.7: saturated %v, checks %v", rs[0].Saturated, fig.Checks)
	}
}
