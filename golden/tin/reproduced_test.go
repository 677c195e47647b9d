package tin

import (
	"flag"
	"strings"
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

// A run of the full Clique at 70% load (§5.1, Fig. 7) as short as this
// one, 20,000 requests, about 6 µs of the fabric, is not a steady state:
// its backlog still grows by far more than SteadyGrowth of its last
// requests while the fabric fills, and its RTT (p99 5.7 µs) is the run's
// length. The run is flagged and RTTSweep shows no RTT for it. Under the
// race detector the run is the first fifth of that (internal/raceshare),
// as much a transient; make test runs it whole without it.
func TestFullCliqueShortRunIsNotSteady(t *testing.T) {
	c, err := NewClique(FullPods, FullTiNsPerPod, GlobalPortsPerTiN)
	if err != nil {
		t.Fatal(err)
	}
	fig, rs, err := RTTSweep(SimConfig{Clique: c, Timing: PaperTiming(), Mode: FullyAdaptive, Bytes: 1500, ReplyBytes: 64,
		Warmup: raceshare.Prefix(t, 5000, 5), Packets: raceshare.Prefix(t, 15000, 5), Align: 8, Seed: 1}, []float64{fig7PaperLoad}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !rs[0].Saturated || rs[0].Growth <= SteadyGrowth || len(fig.Checks) != 0 || len(fig.Series[0].X) != 0 {
		t.Errorf("full Clique at 0.7 over %d requests: saturated %v, backlog growth %.3f, checks %v, RTT points %v",
			rs[0].RTT.N, rs[0].Saturated, rs[0].Growth, fig.Checks, fig.Series[0].X)
	}
}

// Fig. 7 on golden's full Clique, both numbers (make figures: about 10 s
// of CPU). The paper: "sub-20 µs at 70% load" on 500 hosts. Golden: at
// 70% of every TiN's 100 Gb/s the backlog grows (the egress buffers
// throttle the CTSs, reading A21), so no RTT at 70% is golden's; at 60%
// its p99 is the figure TestFigures recomputes, from a run the steady-state
// test passes (a run of twice its measured requests gives 6.46 µs against
// its 6.40: docs/figures.md).
func TestFigure7SteadyState(t *testing.T) {
	if !*figures {
		t.Log("the full Clique's runs take seconds of CPU: they run with -figures (make figures); TestFullCliqueShortRunIsNotSteady and TestSimSteadyStateDetected cover the steady-state test")
		return
	}
	r7, err := fullCliqueRun(fig7PaperLoad, fig7Warmup*3/4, fig7Packets/2)
	if err != nil {
		t.Fatal(err)
	}
	if !r7.Saturated || r7.Growth <= SteadyGrowth {
		t.Errorf("full Clique at %g: saturated %v, backlog growth %.3f of the last requests: golden now carries it; read Fig. 7 at %g",
			fig7PaperLoad, r7.Saturated, r7.Growth, fig7PaperLoad)
	}
	var doc float64
	for _, f := range Figures() {
		if strings.Contains(f.Section, "Fig. 7") {
			doc = f.Golden
		}
	}
	if doc <= 0 || doc >= 20 {
		t.Errorf("the Fig. 7 figure's golden p99 %g µs is not under the paper's 20 µs", doc)
	}
	t.Logf("paper: p99 sub-20 µs at 70%% load (500 hosts); golden: at 70%% no steady state (backlog +%.1f%% of the last %d requests, "+
		"wait for a CTS %.0f ns and growing), at %g%% p99 %.3f µs", 100*r7.Growth, fig7Packets/2/3, r7.Request.Queue, 100*fig7Load, doc)
}
