package tin

import (
	"flag"
	"testing"

	"github.com/labrunner/labrunner/internal/raceshare"
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
// RTT under the paper's 20 µs on a shorter run. Under the race detector the
// run is the first fifth of that, warm-up and measurement (internal/raceshare;
// its p99 is about 3.9 µs, the whole run's 4.2 µs); make test runs it whole
// without it.
func TestFullCliqueRTTSweep(t *testing.T) {
	c, err := NewClique(FullPods, FullTiNsPerPod, GlobalPortsPerTiN)
	if err != nil {
		t.Fatal(err)
	}
	fig, rs, err := RTTSweep(SimConfig{Clique: c, Timing: PaperTiming(), Mode: FullyAdaptive, Bytes: 1500, ReplyBytes: 64,
		Warmup: raceshare.Prefix(t, 5000, 5), Packets: raceshare.Prefix(t, 15000, 5), Align: 8, Seed: 1}, []float64{0.7}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rs[0].Saturated || len(fig.Checks) != 1 || !fig.Checks[0].Pass {
		t.Errorf("full Clique at 0.7: saturated %v, checks %v", rs[0].Saturated, fig.Checks)
	}
}
