package prr

import (
	"fmt"
	"math"
	"math/bits"
	"strings"
	"testing"
)

// genStats drives the generators directly: rate, destination spread, own-
// port share and mean run length of equal destinations per input.
func genStats(t *testing.T, tg tgState, p, cycles int) (rate, own float64, perDest []float64, meanRun float64) {
	t.Helper()
	g := newGenerators(&tg, p, bits.TrailingZeros(uint(p)))
	perDest = make([]float64, p)
	var n, ownN, runs, runLen float64
	last := make([]int, p)
	for i := range last {
		last[i] = -1
	}
	for c := 0; c < cycles; c++ {
		for s := 0; s < p; s++ {
			d, ok := g.next(s)
			if !ok {
				if last[s] >= 0 {
					runs++
					last[s] = -1
				}
				continue
			}
			n++
			perDest[d]++
			if int(d) == s {
				ownN++
			}
			if last[s] >= 0 && last[s] != int(d) {
				runs++
			}
			last[s] = int(d)
			runLen++
		}
	}
	for s := range last {
		if last[s] >= 0 {
			runs++
		}
	}
	for d := range perDest {
		perDest[d] /= n
	}
	return n / float64(p*cycles), ownN / n, perDest, runLen / runs
}

// TestTrafficModels checks the three models of §5.1 statistically.
func TestTrafficModels(t *testing.T) {
	const p, cycles = 16, 100000
	near := func(what string, got, want, tol float64) {
		t.Helper()
		if math.Abs(got-want) > tol {
			t.Errorf("%s = %.4f, want %.4f ± %.4f", what, got, want, tol)
		}
	}
	for _, r := range []float64{0.25, 0.8, 1} {
		load := uint32(math.Round(r * one16))
		rate, own, per, _ := genStats(t, tgState{model: ModelBernoulli, load: load, seed: 5}, p, cycles)
		near(fmt.Sprintf("Bernoulli r=%g rate", r), rate, r, 0.005)
		near(fmt.Sprintf("Bernoulli r=%g own-port share", r), own, 1.0/p, 0.005)
		for d, f := range per {
			near(fmt.Sprintf("Bernoulli r=%g share of port %d", r, d), f, 1.0/p, 0.003)
		}

		rate, own, _, _ = genStats(t, tgState{model: ModelNonuniform, load: load, nonunif: 0x8000, seed: 5}, p, cycles)
		near(fmt.Sprintf("nonuniform r=%g rate", r), rate, r, 0.005)
		near(fmt.Sprintf("nonuniform r=%g own-port share (p=0.5)", r), own, 0.5, 0.005)

		rate, _, per, run := genStats(t, tgState{model: ModelBursty, load: load, burst: 32, seed: 5}, p, cycles)
		near(fmt.Sprintf("bursty r=%g rate", r), rate, r, 0.02)
		for d, f := range per {
			near(fmt.Sprintf("bursty r=%g share of port %d", r, d), f, 1.0/p, 0.01)
		}
		// Runs of one destination: bursts of mean 32, two bursts merging
		// when a new one follows at once (probability r) to the same
		// port (1/P).
		near(fmt.Sprintf("bursty r=%g mean run of one destination", r), run, 32/(1-r/p), 32*0.05)
	}
	rate, _, _, _ := genStats(t, tgState{model: ModelBursty, load: one16, burst: 32, seed: 9}, p, 1000)
	if rate != 1 {
		t.Errorf("bursty at r=1 offers %.4f: the model must reach rate 1 (§5.1)", rate)
	}
	rate, _, _, _ = genStats(t, tgState{model: ModelBernoulli, load: 0, seed: 9}, p, 1000)
	if rate != 0 {
		t.Errorf("Bernoulli at r=0 offers %.4f", rate)
	}
}

// tgRun configures and runs the traffic generator and returns every
// result register, read as a runner would.
func (g *rig) tgRun(model, load, cycles, warmup, seed uint32) map[string]uint64 {
	g.T.Helper()
	g.w("TG_MODEL", model)
	g.w("TG_LOAD", load)
	g.w("TG_CYCLES", cycles)
	g.w("TG_WARMUP", warmup)
	g.w("TG_SEED", seed)
	g.w("TG_CTRL", tgStart)
	out := map[string]uint64{}
	for _, n := range []string{"TG_OFFERED", "TG_DELIVERED", "TG_DROPPED", "TG_LAT_SUM", "TG_WAIT_SUM", "TG_WINDOW_OUT", "TG_RUN_CYCLES"} {
		out[n] = g.r64(n)
	}
	for _, n := range []string{"TG_STATUS", "TG_LAT_MIN", "TG_LAT_MAX", "TG_WAIT_MAX", "TG_STRANDED", "TG_ORDER_ERRORS", "PKTS_IN", "PKTS_ENQ", "PKTS_DROPPED", "PKTS_OUT"} {
		out[n] = uint64(g.r(n))
	}
	for i := 0; i < histBins; i++ {
		out[fmt.Sprintf("TG_HIST[%d]", i)] = uint64(g.r(fmt.Sprintf("TG_HIST[%d]", i)))
	}
	return out
}

// TestTrafficCounters checks the generator's counters against each other:
// packets are conserved, the histogram covers every delivered packet, and
// latency = queue wait + pipeline latency + 1.
func TestTrafficCounters(t *testing.T) {
	g := newRig(t, rigOpts{})
	for _, model := range []uint32{ModelBernoulli, ModelBursty, ModelNonuniform} {
		g.w("CTRL", ctrlClearCounters)
		res := g.tgRun(model, 0xE000, 10000, 0, 3)
		if res["TG_STATUS"]&tgDone == 0 {
			t.Fatalf("model %d: not done: %x", model, res["TG_STATUS"])
		}
		if res["TG_OFFERED"] != res["TG_DELIVERED"]+res["TG_DROPPED"]+res["TG_STRANDED"] {
			t.Errorf("model %d: offered %d != delivered %d + dropped %d + stranded %d", model, res["TG_OFFERED"], res["TG_DELIVERED"], res["TG_DROPPED"], res["TG_STRANDED"])
		}
		if res["PKTS_IN"] != res["TG_OFFERED"] || res["PKTS_ENQ"]+res["PKTS_DROPPED"] != res["PKTS_IN"] || res["PKTS_OUT"] != res["TG_DELIVERED"] {
			t.Errorf("model %d: switch counters in %d enq %d dropped %d out %d", model, res["PKTS_IN"], res["PKTS_ENQ"], res["PKTS_DROPPED"], res["PKTS_OUT"])
		}
		var h uint64
		for i := 0; i < histBins; i++ {
			h += res[fmt.Sprintf("TG_HIST[%d]", i)]
		}
		if h != res["TG_DELIVERED"] {
			t.Errorf("model %d: histogram holds %d, %d delivered", model, h, res["TG_DELIVERED"])
		}
		lat := uint64(g.cfg.registers() + 1)
		if res["TG_LAT_SUM"] != res["TG_WAIT_SUM"]+lat*res["TG_DELIVERED"] || res["TG_LAT_MAX"] != res["TG_WAIT_MAX"]+lat || res["TG_LAT_MIN"] < lat {
			t.Errorf("model %d: latency sum %d max %d min %d vs wait sum %d max %d and %d-cycle minimum", model,
				res["TG_LAT_SUM"], res["TG_LAT_MAX"], res["TG_LAT_MIN"], res["TG_WAIT_SUM"], res["TG_WAIT_MAX"], lat)
		}
		rate := float64(res["TG_OFFERED"]) / (10000 * float64(g.cfg.Ports))
		if math.Abs(rate-0xE000/65536.0) > 0.03 {
			t.Errorf("model %d: offered rate %.3f at TG_LOAD 0xE000 (0.875)", model, rate)
		}
	}
	res := g.tgRun(3, 0x10000, 100, 0, 1)
	if res["TG_STATUS"] != tgDone|tgBadConfig || res["TG_OFFERED"] != 0 {
		t.Errorf("TG_MODEL 3: status %x offered %d, want DONE|BAD_CONFIG and nothing run", res["TG_STATUS"], res["TG_OFFERED"])
	}
	g.w("TG_CTRL", tgClear)
	if g.r("TG_STATUS") != 0 {
		t.Errorf("TG_CTRL.CLEAR left TG_STATUS %x", g.r("TG_STATUS"))
	}
}

// TestThroughputAtRateOne: with queues deep enough for no drop, the switch
// carries input rate 1 of uniform traffic at line rate (§5.1, §4.5).
func TestThroughputAtRateOne(t *testing.T) {
	cfg := catalogueConfig(t)
	cfg.FIFODepth = 256
	g := newRig(t, rigOpts{cfg: &cfg})
	res := g.tgRun(ModelBernoulli, 0x10000, 20000, 1000, 4)
	thr := float64(res["TG_WINDOW_OUT"]) / (19000 * float64(g.cfg.Ports))
	if res["TG_DROPPED"] != 0 || thr < 0.99 || thr > 1 {
		t.Errorf("rate 1, depth 256: throughput %.4f of line rate, %d dropped", thr, res["TG_DROPPED"])
	}
}

// TestDropRateDepthOne: §5.1 reports a dropped packet rate of 5.2% for the
// proposal with a FIFO depth of 1 at input rate 1 under uniform traffic on
// a 16x16 switch.
func TestDropRateDepthOne(t *testing.T) {
	cfg := catalogueConfig(t)
	cfg.FIFODepth = 1
	g := newRig(t, rigOpts{cfg: &cfg})
	res := g.tgRun(ModelBernoulli, 0x10000, 30000, 1000, 1)
	rate := float64(res["TG_DROPPED"]) / float64(res["TG_OFFERED"])
	if math.Abs(rate-0.052) > 0.003 {
		t.Errorf("depth 1, rate 1: %.2f%% dropped, §5.1 gives 5.2%%", 100*rate)
	}
}

// TestTrafficDeterminism: the same TG_SEED and configuration give the same
// run on any board and rack seed; another seed gives another run.
func TestTrafficDeterminism(t *testing.T) {
	var first map[string]uint64
	for i, rackSeed := range []int64{1, 99} {
		g := newRig(t, rigOpts{seed: rackSeed})
		for _, model := range []uint32{ModelBernoulli, ModelBursty, ModelNonuniform} {
			a := g.tgRun(model, 0xF000, 5000, 100, 77)
			b := g.tgRun(model, 0xF000, 5000, 100, 77)
			c := g.tgRun(model, 0xF000, 5000, 100, 78)
			for k, v := range a {
				if strings.HasPrefix(k, "TG_") && b[k] != v {
					t.Errorf("model %d: %s differs between two runs with one seed: %d, %d", model, k, v, b[k])
				}
			}
			if a["TG_OFFERED"] == c["TG_OFFERED"] && a["TG_WAIT_SUM"] == c["TG_WAIT_SUM"] {
				t.Errorf("model %d: seeds 77 and 78 gave the same run", model)
			}
			if model == ModelBursty {
				if i == 0 {
					first = a
				} else {
					for k, v := range first {
						if strings.HasPrefix(k, "TG_") && a[k] != v {
							t.Errorf("rack seed %d: %s = %d, %d with rack seed 1", rackSeed, k, a[k], v)
						}
					}
				}
			}
		}
	}
}
