package shoal

import (
	"math"
	"strconv"
	"strings"
	"testing"

	gs "github.com/labrunner/labrunner/golden/shoal"
	"github.com/labrunner/labrunner/results"
	ts "github.com/labrunner/labrunner/traffic/shoal"
)

// testRack is the prototype's golden settings as setup derives them for the
// documented cabling (40 ns of wire on every path).
func testRack(t *testing.T) *rack {
	t.Helper()
	return &rack{set: map[string]string{
		"config": "prototype", "nodes": "8", "radix": "4", "slot_cycles": "12", "guard_cycles": "1", "schedule": "cyclic",
		"prop_ns": strconv.FormatFloat(gs.PrototypePropNS(40, gs.PrototypeSwitchHops, gs.SwitchCycles, gs.PrototypeNICNS), 'g', -1, 64),
	}}
}

// The runner's own incast expectation (golden's simulation of the flows the
// generator loaded, with golden's documented bands) must be exactly what
// `labrunner golden predict shoal` says for golden's own default incast,
// which is the same traffic: the runner does not invent bands.
func TestIncastExpectationIsGoldensForTheSameFlows(t *testing.T) {
	k := testRack(t)
	c, err := k.golden(12)
	if err != nil {
		t.Fatal(err)
	}
	senders, _ := ts.IncastSenders(8, 0, 7)
	flows, err := ts.Incast(8, 0, senders, int64(7*c.PayloadBytes()))
	if err != nil {
		t.Fatal(err)
	}
	fct, q, err := incastExpect(c, flows)
	if err != nil {
		t.Fatal(err)
	}
	exps, err := k.predict(map[string]string{"senders": "7", "incast_bytes": "448"})
	if err != nil {
		t.Fatal(err)
	}
	for _, flow := range []string{"fastest", "slowest", "mean"} {
		want, err := pick(exps, "shoal.incast.fct_us", results.Params{"senders": "7", "flow": flow})
		if err != nil {
			t.Fatal(err)
		}
		got := fct[flow]
		if math.Abs(got.Value-want.Value) > 1e-9 || math.Abs(got.AbsTol-want.AbsTol) > 1e-9 || got.Key() != want.Key() {
			t.Errorf("%s: runner %v ±%v, golden predict %v ±%v", flow, got.Value, got.AbsTol, want.Value, want.AbsTol)
		}
	}
	want, err := pick(exps, "shoal.incast.max_queue", results.Params{"senders": "7"})
	if err != nil {
		t.Fatal(err)
	}
	if _, hi := q.Bounds(); hi != 7 || q.Value != want.Value || *want.Max != 7 {
		t.Errorf("max queue: runner %v ≤ %v, golden %v ≤ %v", q.Value, hi, want.Value, *want.Max)
	}
}

// The permutation band is golden's budget for these flows: its simulation
// with a cell and its feedback acted on a slot later below, a slot earlier
// (capped by the max-min ceiling, reading S3) above, widened by the run's
// phase and the window's edges; no floor at a fraction of the simulation.
// On the 12-cycle slot the feedback loop of 7-8 epochs holds every subflow
// (§6.2), so the band is narrow; at 128 cycles it leaves out 0.485, the
// permutation with feedback three slots late on nodes 0-3
// (shoal-feedback-late, slots=3), and admits 0.500 (two slots late: the
// loops of one slot late, within the budget).
func TestPermutationExpectationBand(t *testing.T) {
	k := testRack(t)
	c, err := k.golden(12)
	if err != nil {
		t.Fatal(err)
	}
	flows, _ := ts.Permutation(8, 1<<30, 1)
	e, sim, err := permutationExpect(c, flows, 200, 2000)
	if err != nil {
		t.Fatal(err)
	}
	lo, hi := e.Bounds()
	if lo > sim || hi < sim || sim < 0.1 || sim > 0.2 || hi > 0.2 || lo < 0.9*sim {
		t.Errorf("sim %.4f, band [%.4f, %.4f]", sim, lo, hi)
	}
	if e.Params["slot_cycles"] != "12" || e.Metric != "shoal.permutation.throughput" {
		t.Errorf("key %s", e.Key())
	}
	if e.Budget == "" || strings.Contains(e.Wide, "reconciled") {
		t.Errorf("budget %q, wide %q", e.Budget, e.Wide)
	}
	// A faster slot cycle count gives a higher band (Fig. 9's trend).
	c96, _ := k.golden(96)
	e96, _, err := permutationExpect(c96, flows, 200, 2000)
	if err != nil {
		t.Fatal(err)
	}
	if lo96, _ := e96.Bounds(); lo96 <= lo {
		t.Errorf("band floor %.3f at 96 cycles, not above %.3f at 12", lo96, lo)
	}
	c128, _ := k.golden(128)
	e128, _, err := permutationExpect(c128, flows, 200, 2000)
	if err != nil {
		t.Fatal(err)
	}
	if lo, hi := e128.Bounds(); lo <= 0.485 || hi < 0.5089 || hi > 0.515 {
		t.Errorf("band [%.4f, %.4f] at 128 cycles: want it to leave out 0.485 (feedback three slots late) and hold the clean rack's 0.5089 within the ceiling", lo, hi)
	}
}

func TestGoldenFlowsKeepTheGeneratorsFlows(t *testing.T) {
	k := testRack(t)
	c, _ := k.golden(12)
	fs := []ts.Flow{{Src: 1, Dst: 2, Bytes: 57, StartNS: 1234, Tag: 1}, {Src: 3, Dst: 0, Bytes: 56, StartNS: 0, Tag: 2}}
	g := goldenFlows(c, fs)
	if g[0].Cells != 2 || g[1].Cells != 1 || g[0].StartNS != 1234 || g[0].Bytes != 57 || g[1].Src != 3 || g[1].Dst != 0 {
		t.Errorf("%+v", g)
	}
}

func TestPredictRefusesAnUnknownSetting(t *testing.T) {
	k := testRack(t)
	if _, err := k.predict(map[string]string{"nosuch": "1"}); err == nil {
		t.Error("an unknown golden parameter was accepted")
	}
	exps, err := k.predict(nil)
	if err != nil {
		t.Fatal(err)
	}
	// §6.2: 1.576 µs node to node on the documented cabling.
	e, err := pick(exps, "shoal.prop_latency_us", nil)
	if err != nil || math.Abs(e.Value-1.576) > 1e-9 {
		t.Errorf("prop latency %v (%v)", e.Value, err)
	}
	if _, err := pick(exps, "shoal.incast.fct_us", results.Params{"senders": "7", "flow": "mean"}); err == nil {
		t.Error("quiet settings still simulate the incast")
	}
}
