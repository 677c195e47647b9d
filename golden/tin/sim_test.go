package tin

import (
	"math"
	"reflect"
	"testing"

	"github.com/labrunner/labrunner/internal/raceshare"
)

func simCfg(t *testing.T, c *Clique, load float64) SimConfig {
	t.Helper()
	return SimConfig{Clique: c, Timing: PaperTiming(), Mode: FullyAdaptive, Load: load, Bytes: 1500, ReplyBytes: 64,
		Warmup: 200, Packets: 1500, CTSWindow: 8, Align: 8, Seed: 7}
}

func run(t *testing.T, cfg SimConfig) SimResult {
	t.Helper()
	r, err := Simulate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// At zero load a one-cell packet between two TiNs of a pod is exactly its
// RTS, its CTS and its data cell, each at the closed-form cell latency, then
// the packet across the host port (§3.3); the RTT adds the reply's three
// cells and its host-port crossing.
func TestSimZeroLoadMatchesClosedForm(t *testing.T) {
	c := mustClique(t, 1, 2, 0)
	cfg := simCfg(t, c, ZeroLoad)
	cfg.Bytes, cfg.ReplyBytes, cfg.Mode, cfg.Warmup, cfg.Packets = 100, 40, MinimalDeterministic, 0, 500
	r := run(t, cfg)
	tm := PaperTiming()
	p, _ := ParsePath("p0t0->p0t1[vc0]")
	data := Cells(100)[0]
	reply := Cells(40)[0]
	host := func(bytes int) float64 { return float64(bytes) / tm.InjectBytesPerNs() } // 100 Gb/s host port
	oneway := 2*tm.CellLatency(p, ControlCell) + tm.CellLatency(p, data) + host(100)
	rtt := oneway + 2*tm.CellLatency(p, ControlCell) + tm.CellLatency(p, reply) + host(40)
	if math.Abs(r.OneWay.P50-oneway) > 1e-6 || math.Abs(r.RTT.P50-rtt) > 1e-6 {
		t.Errorf("zero load: one-way median %g (want %g), RTT median %g (want %g)", r.OneWay.P50, oneway, r.RTT.P50, rtt)
	}
	if r.OneWay.N != 500 || r.RTT.N != 500 || r.Saturated {
		t.Errorf("measured %d/%d of 500, saturated %v", r.OneWay.N, r.RTT.N, r.Saturated)
	}
}

// RTT grows with load, the fabric saturates beyond what its global links
// carry, minimal modes never detour, and a run is a function of its seed.
func TestSimBehaviour(t *testing.T) {
	if raceshare.SecondPassOnly(t, "TestSimNonMinimalInterPod and TestSimSteadyStateDetected run the simulator under the detector") {
		return
	}
	c := mustClique(t, 2, 4, 1)
	var prev float64
	for _, load := range []float64{0.05, 0.2, 0.3} {
		r := run(t, simCfg(t, c, load))
		if r.Saturated || r.RTT.N != 1500 || r.OneWay.N != 1500 {
			t.Fatalf("load %g: saturated %v, measured %d/%d", load, r.Saturated, r.RTT.N, r.OneWay.N)
		}
		if r.RTT.Mean <= prev || r.RTT.P99 < r.RTT.P50 || r.RTT.Mean <= r.OneWay.Mean {
			t.Errorf("load %g: RTT mean %g after %g, p50 %g p99 %g, one-way %g", load, r.RTT.Mean, prev, r.RTT.P50, r.RTT.P99, r.OneWay.Mean)
		}
		prev = r.RTT.Mean
	}
	if r := run(t, simCfg(t, c, 0.6)); !r.Saturated {
		t.Errorf("load 0.6 on four 25 Gb/s global links is not flagged saturated (RTT %g)", r.RTT.Mean)
	}
	for _, m := range []Mode{MinimalAdaptive, MinimalDeterministic} {
		cfg := simCfg(t, c, 0.2)
		cfg.Mode = m
		if r := run(t, cfg); r.NonMinimal != 0 {
			t.Errorf("%s routed %g of the data cells non-minimally", m, r.NonMinimal)
		}
	}
	// Unloaded, a one-cell packet finds every queue empty and goes
	// minimally (§3.2, reading A20). A 1500-byte packet to another pod
	// comes out of the 100 Gb/s port four times faster than the pods'
	// 25 Gb/s link drains it: its minimal queue passes the threshold and
	// some cells detour through the third pod (§6, "self-congestion ...
	// even at low loads and especially for large MTU packets").
	c3 := mustClique(t, 3, 2, 1)
	small := simCfg(t, c3, ZeroLoad)
	small.Bytes = 152
	if r := run(t, small); r.NonMinimal != 0 {
		t.Errorf("fully adaptive, one-cell packets at zero load: non-minimal share %g, want 0", r.NonMinimal)
	}
	large := simCfg(t, c3, ZeroLoad)
	if r := run(t, large); r.NonMinimal <= 0 || r.NonMinimal > 0.5 {
		t.Errorf("fully adaptive, 1500-byte packets at zero load: non-minimal share %g, want some but under half", r.NonMinimal)
	}
	a, b := run(t, simCfg(t, c, 0.2)), run(t, simCfg(t, c, 0.2))
	if !reflect.DeepEqual(a, b) {
		t.Error("two runs with one seed differ")
	}
	cfg := simCfg(t, c, 0.2)
	cfg.Seed++
	if run(t, cfg).RTT == a.RTT {
		t.Error("two seeds gave the same run")
	}
}

// A Clique with intermediate pods detours inter-pod cells under load.
func TestSimNonMinimalInterPod(t *testing.T) {
	c := mustClique(t, 3, 2, 1)
	cfg := simCfg(t, c, 0.15)
	r := run(t, cfg)
	if r.Saturated || r.NonMinimal <= 0 {
		t.Errorf("3x2 Clique at 0.15: saturated %v, non-minimal %g", r.Saturated, r.NonMinimal)
	}
	// Hashing puts half the inter-pod pairs on a route through the third
	// pod for good: the global links carry half as much again as minimal
	// routing gives them, so the fixed mode runs at a lower load.
	cfg.Mode, cfg.Load = Deterministic, 0.1
	if r := run(t, cfg); r.RTT.N != cfg.Packets {
		t.Errorf("deterministic mode measured %d", r.RTT.N)
	}
}

func TestSimConfigErrors(t *testing.T) {
	c := mustClique(t, 2, 4, 1)
	for _, f := range []func(*SimConfig){
		func(s *SimConfig) { s.Clique = nil },
		func(s *SimConfig) { s.Load = 0 },
		func(s *SimConfig) { s.Load = 1.5 },
		func(s *SimConfig) { s.Bytes = 0 },
		func(s *SimConfig) { s.ReplyBytes = -1 },
		func(s *SimConfig) { s.Packets = 0 },
		func(s *SimConfig) { s.CTSWindow = -1 },
		func(s *SimConfig) { s.EgressBytes = 100 },
		func(s *SimConfig) { s.BufferBytes = 100 },
		func(s *SimConfig) { s.NonMinWeight = -1 },
		func(s *SimConfig) { s.Align = 3 },
		func(s *SimConfig) { s.Mode = Mode(7) },
		func(s *SimConfig) { s.Timing.LinkGbps = -1 },
		func(s *SimConfig) { s.Clique = mustClique(t, 1, 1, 0) },
	} {
		cfg := simCfg(t, c, 0.1)
		f(&cfg)
		if _, err := Simulate(cfg); err == nil {
			t.Errorf("bad config %+v accepted", cfg)
		}
	}
}

// A run is steady only if its backlog stops growing. The 2x4 Clique's four
// global links (23.5 Gb/s each after FEC) carry 4/7 of every TiN's
// uniform traffic: at load 0.4 that is 91 Gb/s of requests a direction,
// 96 with the cells' headers, more than the 94 the links carry, and the
// backlog grows by about a fifth of the requests offered, over runs of
// 1,700 to 20,000 requests: the RTT is the run's length (mean 21 µs over
// this one). The test over the second half (growth beyond twice what the
// egress buffers hold) passed it for carried; the one over the last third
// of the measured requests flags it. At 0.3 the backlog is flat.
func TestSimSteadyStateDetected(t *testing.T) {
	c := mustClique(t, 2, 4, 1)
	cfg := func(load float64) SimConfig {
		return SimConfig{Clique: c, Timing: PaperTiming(), Mode: FullyAdaptive, Load: load, Bytes: 1500, ReplyBytes: 64,
			Warmup: 200, Packets: 1500, Align: 8, Seed: 7}
	}
	if r := run(t, cfg(0.4)); !r.Saturated || r.Growth < 0.1 {
		t.Errorf("2x4 Clique at 0.4: saturated %v, backlog growth %.3f of the last requests (RTT mean %.0f ns)", r.Saturated, r.Growth, r.RTT.Mean)
	}
	if r := run(t, cfg(0.3)); r.Saturated || r.Growth > SteadyGrowth {
		t.Errorf("2x4 Clique at 0.3: saturated %v, backlog growth %.3f of the last requests", r.Saturated, r.Growth)
	}
	// Runs from an idle fabric (Shares, reading A27) are transients by
	// design: not held to a steady state.
	sh := cfg(0.3)
	sh.Warmup, sh.Shares = 0, true
	if r := run(t, sh); r.Saturated || r.Growth != 0 {
		t.Errorf("2x4 Clique at 0.3 from idle: saturated %v, growth %g", r.Saturated, r.Growth)
	}
}
