package prr

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/labrunner/labrunner/internal/raceshare"
)

func run(t testing.TB, c SimConfig) SimResult {
	t.Helper()
	r, err := Simulate(c)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestSimMatchesSwitch drives the simulator's proposal and the bit-exact
// Switch with the same arrivals: queue fills, offsets, arbiters, drops and
// deliveries must agree cycle by cycle (which packet of a batch takes which
// queue differs — the simulator skips the sorter — but not how many).
func TestSimMatchesSwitch(t *testing.T) {
	for _, depth := range []int{0, 1, 3} {
		s, err := newSim(SimConfig{P: 8, Alg: PRR, Traffic: Uniform, Load: 0, Depth: depth, Cycles: 1})
		if err != nil {
			t.Fatal(err)
		}
		sw := mustSwitch(t, 8, depth)
		r := rand.New(rand.NewPCG(uint64(depth), 9))
		var swDelivered, swDropped int64
		for c := range int32(3000) {
			s.prrServe(c)
			swDelivered += int64(len(sw.Dequeue()))
			batch := make([]Packet, 8)
			for i := range batch {
				s.arr[i] = -1
				if r.Float64() < 0.9 {
					d := r.IntN(3) // three hot ports, to fill queues
					batch[i] = pk(d, uint64(i))
					s.arr[i] = int16(d)
				}
			}
			s.prrArrive(c)
			_, drops := sw.Insert(batch)
			swDropped += int64(len(drops))
			st := sw.State()
			if !slices.Equal(st.Offsets, s.off) || !slices.Equal(st.Arbiters, s.arb) {
				t.Fatalf("depth %d cycle %d: offsets %v/%v arbiters %v/%v", depth, c, st.Offsets, s.off, st.Arbiters, s.arb)
			}
			for g := range 8 {
				for q := range 8 {
					if len(st.Queues[g][q]) != s.q[g*8+q].n {
						t.Fatalf("depth %d cycle %d: queue %d/%d holds %d in Switch, %d in sim", depth, c, g, q, len(st.Queues[g][q]), s.q[g*8+q].n)
					}
				}
			}
		}
		if swDelivered != s.res.Delivered || swDropped != s.res.Dropped {
			t.Fatalf("depth %d: delivered %d/%d dropped %d/%d", depth, swDelivered, s.res.Delivered, swDropped, s.res.Dropped)
		}
		if depth > 0 && swDropped == 0 {
			t.Fatalf("depth %d: the test never filled a queue", depth)
		}
	}
}

// TestOutputQueueLatency: without drops the proposal is an output-queued
// switch (each FIFO group is read in the order it is written), whose mean
// wait under uniform Bernoulli traffic is (P−1)/P · r/(2(1−r)) slots (Karol,
// Hluchyj and Morgan 1987); the simulator counts one more cycle (§4.2's
// minimum time in the queues). Under the race detector one load, in
// rotation by day (internal/raceshare); make test runs both without it.
func TestOutputQueueLatency(t *testing.T) {
	for _, load := range raceshare.Cases(t, []float64{0.5, 0.8}) {
		var sum float64
		const reps = 4
		for seed := range uint64(reps) {
			sum += run(t, SimConfig{P: 16, Alg: PRR, Traffic: Uniform, Load: load, Cycles: 100000, Seed: seed}).AvgLatency()
		}
		got := sum / reps
		want := 1 + 15.0/16*load/(2*(1-load))
		if math.Abs(got-want)/want > 0.02 {
			t.Errorf("load %g: mean latency %.4f, output queueing predicts %.4f", load, got, want)
		}
	}
}

func TestLightLoadAllAlgorithms(t *testing.T) {
	for _, tr := range Traffics {
		for _, a := range Algs {
			r := run(t, SimConfig{P: 8, Alg: a, Traffic: tr, Load: 0.3, Cycles: 20000, Seed: 3})
			// Bursty arrivals wander far from their mean over a short run:
			// compare with what was offered, not with the load.
			offered := float64(r.Offered) / float64(r.Config.P*r.Config.Cycles)
			if r.Dropped != 0 || math.Abs(r.Throughput()-offered) > 0.005 || math.Abs(offered-0.3) > 0.05 || r.AvgLatency() < 1 {
				t.Errorf("%s/%s at load 0.3: throughput %.3f, drops %d, latency %.2f", a, tr, r.Throughput(), r.Dropped, r.AvgLatency())
			}
			if r.Offered != r.Delivered+backlog(r) {
				t.Errorf("%s/%s: packets not conserved", a, tr)
			}
		}
	}
}

// backlog is what a run leaves queued; conservation only needs it ≥ 0 and
// small at light load.
func backlog(r SimResult) int64 {
	b := r.Offered - r.Delivered - r.Dropped
	if b < 0 || b > int64(r.Config.P*50) {
		return -1
	}
	return b
}

func TestDeterministicAndCommonArrivals(t *testing.T) {
	c := SimConfig{P: 16, Alg: PIM, Traffic: Bursty, Load: 0.9, Cycles: 5000, Seed: 11}
	a, b := run(t, c), run(t, c)
	if a != b {
		t.Fatalf("same seed, different results:\n%+v\n%+v", a, b)
	}
	c.Seed = 12
	if run(t, c) == a {
		t.Fatal("different seeds, same result")
	}
	c.Seed = 11
	for _, alg := range Algs {
		c.Alg = alg
		if r := run(t, c); r.Offered != a.Offered {
			t.Fatalf("%s sees %d arrivals, PIM %d: runs differing in the algorithm must share arrivals", alg, r.Offered, a.Offered)
		}
	}
}

// TestZeroDropDepthIsExact: a run with depth MaxOccupancy drops nothing and
// one with a depth below it drops something.
func TestZeroDropDepthIsExact(t *testing.T) {
	for _, a := range []Alg{PRR, FIFO, PIM, ISLIP1, EDRRM} {
		c := SimConfig{P: 8, Alg: a, Traffic: Uniform, Load: 0.95, Cycles: 20000, Seed: 5}
		z := run(t, c).ZeroDropDepth()
		c.Depth = z
		if r := run(t, c); r.Dropped != 0 {
			t.Errorf("%s: depth %d dropped %d", a, z, r.Dropped)
		}
		c.Depth = z - 1
		if z > 1 {
			if r := run(t, c); r.Dropped == 0 {
				t.Errorf("%s: depth %d dropped nothing, but %d was said to be the least", a, z-1, z)
			}
		}
	}
}

// voqScenario preloads VOQs and serves cycles with no arrivals, returning
// the matches made each cycle.
func voqScenario(t *testing.T, a Alg, p int, fill func(i, j int) int, cycles int) [][]int {
	t.Helper()
	s, err := newSim(SimConfig{P: p, Alg: a, Traffic: Uniform, Load: 0, Cycles: 1})
	if err != nil {
		t.Fatal(err)
	}
	for i := range p {
		for j := range p {
			for range fill(i, j) {
				s.q[i*p+j].push(0)
				s.inM[i] |= 1 << uint(j)
				s.outM[j] |= 1 << uint(i)
			}
		}
	}
	var out [][]int
	for c := range int32(cycles) {
		s.voqServe(c)
		out = append(out, slices.Clone(s.match))
	}
	return out
}

// TestPointerRules pins the schedulers against their papers on a saturated
// switch (every VOQ full): RRM's grant pointers move in lock-step and make
// one match per cycle; iSLIP's and DRRM's desynchronise within P cycles and
// then match every port (McKeown [21] §III-IV; Li et al. [18]); PIM-1
// averages 1−(1−1/P)^P.
func TestPointerRules(t *testing.T) {
	const p = 8
	full := func(i, j int) int { return 1000 }
	count := func(ms [][]int, from int) float64 {
		n := 0
		for _, m := range ms[from:] {
			n += len(m)
		}
		return float64(n) / float64(len(ms)-from)
	}
	if got := count(voqScenario(t, RRM1, p, full, 200), 0); got != 1 {
		t.Errorf("RRM-1 saturated: %.2f matches per cycle, want 1 (synchronised pointers)", got)
	}
	for _, a := range []Alg{ISLIP1, DRRM1, ISLIP, DRRM} {
		if got := count(voqScenario(t, a, p, full, 200), p); got != p {
			t.Errorf("%s saturated: %.2f matches per cycle after %d cycles, want %d", a, got, p, p)
		}
	}
	want := 1 - math.Pow(1-1.0/p, p)
	if got := count(voqScenario(t, PIM1, p, full, 5000), 0) / p; math.Abs(got-want) > 0.01 {
		t.Errorf("PIM-1 saturated: %.4f, want %.4f", got, want)
	}
}

// TestEDRRMExhaustive: inputs 0 and 1 each hold 3 packets for output 0.
// EDRRM serves one input's VOQ until it is empty; DRRM alternates.
func TestEDRRMExhaustive(t *testing.T) {
	fill := func(i, j int) int {
		if j == 0 && i < 2 {
			return 3
		}
		return 0
	}
	order := func(a Alg) string {
		var b strings.Builder
		for _, m := range voqScenario(t, a, 4, fill, 6) {
			for _, x := range m {
				b.WriteByte(byte('0' + x>>8))
			}
		}
		return b.String()
	}
	if got := order(EDRRM1); got != "000111" {
		t.Errorf("EDRRM served inputs %s, want 000111", got)
	}
	if got := order(DRRM1); got != "010101" {
		t.Errorf("DRRM served inputs %s, want 010101", got)
	}
}

func TestSimConfigErrors(t *testing.T) {
	base := SimConfig{P: 16, Alg: PRR, Traffic: Uniform, Load: 1, Cycles: 10}
	for name, mod := range map[string]func(*SimConfig){
		"ports":     func(c *SimConfig) { c.P = 12 },
		"voq ports": func(c *SimConfig) { c.P, c.Alg = 128, ISLIP },
		"alg":       func(c *SimConfig) { c.Alg = "wfq" },
		"traffic":   func(c *SimConfig) { c.Traffic = "zipf" },
		"load":      func(c *SimConfig) { c.Load = 1.5 },
		"load nan":  func(c *SimConfig) { c.Load = math.NaN() },
		"depth":     func(c *SimConfig) { c.Depth = -1 },
		"cycles":    func(c *SimConfig) { c.Cycles = 0 },
		"hot":       func(c *SimConfig) { c.Traffic, c.HotProb = Nonuniform, 2 },
		"hot neg":   func(c *SimConfig) { c.Traffic, c.HotProb = Nonuniform, -0.5 },
		"burst":     func(c *SimConfig) { c.Traffic, c.BurstLen = Bursty, 0.2 },
		"burst inf": func(c *SimConfig) { c.Traffic, c.BurstLen = Bursty, math.Inf(1) },
	} {
		c := base
		mod(&c)
		if _, err := Simulate(c); err == nil {
			t.Errorf("%s: accepted %+v", name, c)
		}
	}
	if _, err := SimulateAll([]SimConfig{base, {P: 3}}, 2); err == nil || !strings.Contains(err.Error(), "2 of 2") {
		t.Errorf("SimulateAll: %v", err)
	}
	if r := run(t, SimConfig{P: 128, Alg: FIFO, Traffic: Uniform, Load: 1, Cycles: 10}); r.Delivered == 0 {
		t.Error("FIFO at 128 ports delivered nothing")
	}
}

// TestFIFOSaturation: the saturation throughput of an input-queued FIFO
// switch under uniform traffic falls with P towards 2−√2 ≈ 58.6% (FPGA'20
// §2.1). Known finite-P values (Karol et al. 1987, Table I): 0.75 (P=2),
// 0.6553 (4), 0.6184 (8). A run of C cycles at P ports averages about
// P·C·0.59 departures; its spread between seeds, measured, is at most
// about 0.001 at the sizes used here (checked below), so ±0.004 is several
// deviations wide while still telling 0.586 from P=16's 0.600. Under the
// race detector one switch size, in rotation by day (internal/raceshare),
// without the check that the throughput falls with P; make test runs the
// four and the check without it.
func TestFIFOSaturation(t *testing.T) {
	cases := []struct {
		p      int
		cycles int
		want   float64
	}{{2, 200000, 0.75}, {4, 100000, 0.6553}, {8, 50000, 0.6184}, {256, 8000, SaturationLimit}}
	all := len(cases)
	cases = raceshare.Cases(t, cases)
	prev := 1.0
	for _, c := range cases {
		var got []float64
		for seed := range uint64(3) {
			got = append(got, run(t, SimConfig{P: c.p, Alg: FIFO, Traffic: Uniform, Load: 1, Cycles: c.cycles, Seed: seed}).Throughput())
		}
		m := mean(got)
		t.Logf("P=%d: %.4f ± %.4f", c.p, m, stddev(got))
		if sd := stddev(got); sd > 0.0015 {
			t.Errorf("P=%d: spread %.4f between seeds is larger than the tolerance assumes", c.p, sd)
		}
		if math.Abs(m-c.want) > 0.004 {
			t.Errorf("P=%d: saturation throughput %.4f, want %.4f", c.p, m, c.want)
		}
		if m >= prev && len(cases) == all {
			t.Errorf("P=%d: %.4f does not fall with P", c.p, m)
		}
		prev = m
	}
}

// TestPaperComparisons reproduces the qualitative results of FPGA'20 §5.1
// for a 16×16 switch at input rate 1: the proposal has the lowest average
// and worst-case latency under all three traffic models, the best
// alternative is PIM, PIM and EDRRM for traffic (a), (b) and (c), the
// proposal's average latency is about 2× and 1.4× below PIM's under (a) and
// (b) (the paper's figures; (c)'s ratio grows with the run length since
// EDRRM does not keep up with r = 1), and it needs a far smaller FIFO depth
// for zero drops. The runs share their arrivals, so the comparison is not
// blurred by traffic noise; two seeds of 3·10^4 cycles (about the run length
// at which the paper's quoted worst cases fall, see the model's notes).
func TestPaperComparisons(t *testing.T) {
	const cycles = 30000
	best := map[Traffic]Alg{Uniform: PIM, Bursty: PIM, Nonuniform: EDRRM}
	ratio := map[Traffic][2]float64{Uniform: {1.6, 2.6}, Bursty: {1.15, 1.8}, Nonuniform: {3, 1e9}}
	// Under the race detector one traffic model, in rotation by day
	// (internal/raceshare); make test runs all three without it.
	for _, tr := range raceshare.Cases(t, Traffics) {
		var cfgs []SimConfig
		for seed := range uint64(2) {
			for _, a := range Algs {
				cfgs = append(cfgs, SimConfig{P: 16, Alg: a, Traffic: tr, Load: 1, Cycles: cycles, Seed: seed})
			}
		}
		rs, err := SimulateAll(cfgs, 0)
		if err != nil {
			t.Fatal(err)
		}
		avg, worst, zero := map[Alg]float64{}, map[Alg]float64{}, map[Alg]float64{}
		for _, r := range rs {
			a := r.Config.Alg
			avg[a] += r.AvgLatency() / 2
			worst[a] += float64(r.LatencyMax) / 2
			zero[a] += float64(r.ZeroDropDepth()) / 2
		}
		bestAlg := PIM
		for _, a := range Algs[1:] {
			if avg[a] <= avg[PRR] {
				t.Errorf("%s: %s average latency %.1f ≤ proposal's %.1f", tr, a, avg[a], avg[PRR])
			}
			if worst[a] <= worst[PRR] {
				t.Errorf("%s: %s worst-case latency %.0f ≤ proposal's %.0f", tr, a, worst[a], worst[PRR])
			}
			if zero[a] <= zero[PRR] {
				t.Errorf("%s: %s zero-drop depth %.0f ≤ proposal's %.0f", tr, a, zero[a], zero[PRR])
			}
			if avg[a] < avg[bestAlg] {
				bestAlg = a
			}
		}
		t.Logf("%s: proposal avg %.0f worst %.0f zero-drop depth %.0f; best alternative %s: %.0f %.0f %.0f",
			tr, avg[PRR], worst[PRR], zero[PRR], bestAlg, avg[bestAlg], worst[bestAlg], zero[bestAlg])
		if bestAlg != best[tr] {
			t.Errorf("%s: best alternative is %s, the paper's is %s (§5.1)", tr, bestAlg, best[tr])
		}
		if r := avg[bestAlg] / avg[PRR]; r < ratio[tr][0] || r > ratio[tr][1] {
			t.Errorf("%s: average latency %.2f× below %s, want %.2f..%.2f", tr, r, bestAlg, ratio[tr][0], ratio[tr][1])
		}
		if tr == Uniform && zero[PRR]*3 > zero[bestAlg] {
			t.Errorf("uniform: proposal needs depth %.0f for zero drops, %s %.0f: want at least 3× less (paper: 33 vs 153, §5.1)", zero[PRR], bestAlg, zero[bestAlg])
		}
	}
}

// TestPaperDropRatesAtDepthOne: FPGA'20 §5.1 quotes, for uniform traffic at
// input rate 1 and FIFO depth 1, a drop rate of 5.2% for the proposal and
// 16.1% for PIM. Three seeds of 5·10^4 cycles put the mean within ±0.1
// percentage point of its limit; the ±0.5 point band allows for the
// paper's own sampling and rounding. Under the race detector one algorithm,
// in rotation by day (internal/raceshare); make test runs both without it.
func TestPaperDropRatesAtDepthOne(t *testing.T) {
	for _, c := range raceshare.Cases(t, []struct {
		alg  Alg
		want float64
	}{{PRR, 0.052}, {PIM, 0.161}}) {
		a, want := c.alg, c.want
		var got []float64
		for seed := range uint64(3) {
			got = append(got, run(t, SimConfig{P: 16, Alg: a, Traffic: Uniform, Load: 1, Depth: 1, Cycles: 50000, Seed: seed}).DropRate())
		}
		if m := mean(got); math.Abs(m-want) > 0.005 {
			t.Errorf("%s: drop rate %.4f at depth 1, paper %.3f", a, m, want)
		}
	}
}

// The drain (reading P41) leaves the run's own figures alone, accounts for
// every packet, and shows the worst case at a finite depth: a run that
// drops has a packet that waited P·D exactly (the one admitted just before
// its group first overflowed), a run that does not never exceeds P·D; only
// a stall after drops (§4.4), common at small depths, goes above it.
func TestDrainWorstCaseAtFiniteDepth(t *testing.T) {
	if raceshare.SecondPassOnly(t, "TestMeanLatencyBelowSaturation runs the drain under the detector") {
		return
	}
	if GroupDrain(16, 32) != 512 || GroupDrain(8, 0) != 0 {
		t.Fatalf("GroupDrain(16, 32) = %d, GroupDrain(8, 0) = %d", GroupDrain(16, 32), GroupDrain(8, 0))
	}
	const depth = 16
	bound := int64(GroupDrain(16, depth))
	drops, clean, exact, late := 0, 0, 0, 0
	for seed := range uint64(40) {
		c := SimConfig{P: 16, Alg: PRR, Traffic: Uniform, Load: 1, Depth: depth, Cycles: 10000, Seed: seed}
		plain := run(t, c)
		c.Drain = true
		r := run(t, c)
		if r.Offered != plain.Offered || r.Delivered != plain.Delivered || r.LatencySum != plain.LatencySum || r.LatencyMax != plain.LatencyMax || r.Dropped != plain.Dropped {
			t.Fatalf("seed %d: the drain changed the run's figures: %+v, without it %+v", seed, r, plain)
		}
		if r.Offered != r.Dropped+r.Delivered+r.Drained+r.Stranded || r.Drained == 0 || r.DrainMax < r.LatencyMax {
			t.Fatalf("seed %d: offered %d, dropped %d, delivered %d, drained %d, stranded %d; worst %d, drained worst %d", seed, r.Offered, r.Dropped, r.Delivered, r.Drained, r.Stranded, r.LatencyMax, r.DrainMax)
		}
		if r.Dropped == 0 {
			clean++
			if r.DrainMax > bound || r.Stranded != 0 {
				t.Errorf("seed %d dropped nothing, yet its worst latency is %d (P·D = %d) and %d packets stayed stranded", seed, r.DrainMax, bound, r.Stranded)
			}
			continue
		}
		drops++
		if r.DrainMax < bound {
			t.Errorf("seed %d dropped %d packets, yet its worst latency is %d, below P·D = %d", seed, r.Dropped, r.DrainMax, bound)
		}
		if r.DrainMax == bound {
			exact++
		}
		if plain.LatencyMax < bound {
			late++ // the packet that waited the group left after the run
		}
	}
	t.Logf("depth %d: %d of 40 runs dropped, %d of them below P·D without the drain", depth, drops, late)
	if drops < 5 || clean < 5 || exact != drops || late == 0 {
		t.Errorf("%d runs dropped (%d reading P·D = %d after the drain, %d below it without), %d did not: want both kinds, every drop run at P·D, and one the drain mattered for", drops, exact, bound, late, clean)
	}
	// Shallow queues and bursts: the arbiters stall on queues a drop left
	// short, and the worst case passes P·D (doc.go).
	above := 0
	for seed := range uint64(10) {
		r := run(t, SimConfig{P: 16, Alg: PRR, Traffic: Bursty, Load: 1, Depth: 4, Cycles: 5000, Seed: seed, Drain: true})
		if r.DrainMax > int64(GroupDrain(16, 4)) {
			above++
		}
	}
	if above == 0 {
		t.Errorf("no bursty run at depth 4 waited longer than P·D = %d: stalls after drops were expected", GroupDrain(16, 4))
	}
}

// Below saturation a group that never overflows is one output queue (§3.1,
// §4.4) fed by a batch of A packets a cycle and served one a cycle. Its mean
// wait is E[A(A−1)] / (2λ(1−λ)) cycles, λ = E[A] (the discrete-time output
// queue of Karol, Hluchyj and Morgan 1987, the paper's [21] lineage), and
// §5.1's latency is that plus 1 (reading P42). Uniform traffic at input
// rate r gives (P−1)/P · r/(2(1−r)) + 1; nonuniform with p gives
// E[A(A−1)] = r² (1 − p² − (1−p)²/(P−1)). The drained mean counts every
// packet, as the hardware does; the run's own mean drops the few the drain
// delivers.
func TestMeanLatencyBelowSaturation(t *testing.T) {
	const p, r, cycles, seeds = 16, 0.9, 30000, 6
	hp := DefaultHotProb
	for _, c := range []struct {
		traffic Traffic
		eaa     float64 // E[A(A−1)] per output per cycle
	}{
		{Uniform, r * r * (p - 1) / p},
		{Nonuniform, r * r * (1 - hp*hp - (1-hp)*(1-hp)/(p-1))},
	} {
		want := c.eaa/(2*r*(1-r)) + 1
		sum := 0.0
		for seed := range uint64(seeds) {
			res := run(t, SimConfig{P: p, Alg: PRR, Traffic: c.traffic, Load: r, Depth: 32, Cycles: cycles, Seed: seed, Drain: true})
			if res.Dropped != 0 || res.Stranded != 0 || res.Drained == 0 {
				t.Fatalf("%s seed %d: dropped %d, stranded %d, drained %d: want no drop at depth 32 below saturation, and a drain", c.traffic, seed, res.Dropped, res.Stranded, res.Drained)
			}
			if d, a := res.DrainedAvgLatency(), res.AvgLatency(); d < a || d-a > 0.01 {
				t.Errorf("%s seed %d: drained mean %.4f against the run's %.4f: the drain's few packets should move it up by less than 0.01", c.traffic, seed, d, a)
			}
			sum += res.DrainedAvgLatency()
		}
		got := sum / seeds
		// One run's mean spreads 1.2-1.4% (sd) at this length: six runs'
		// mean about 0.55%, so 2.5% is more than four of their sds.
		if math.Abs(got-want) > 0.025*want {
			t.Errorf("%s at input rate %g: mean latency %.4f cycles over %d runs, the output-queue formula gives %.4f", c.traffic, r, got, seeds, want)
		}
		t.Logf("%s at input rate %g: %.4f cycles, formula %.4f", c.traffic, r, got, want)
	}
}

// requestMask is a random mask of requests among p ports, dense or sparse.
func requestMask(r *rand.Rand, p int) uint64 {
	m := r.Uint64()
	if r.IntN(2) == 0 {
		m &= r.Uint64() & r.Uint64() // sparse
	}
	if p < 64 {
		m &= 1<<uint(p) - 1
	}
	return m
}

// randPick's halving finds the same bit as clearing the k lowest set bits
// one by one.
func TestRandPickIsTheKthSetBit(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, p := range []int{2, 4, 8, 16, 32, 64} {
		for range 20000 {
			m := requestMask(r, p)
			if m == 0 {
				continue
			}
			x := r.Uint64()
			want := m
			for k := below(x, bits.OnesCount64(m)); k > 0; k-- {
				want &= want - 1
			}
			if got := randPick(m, x, uint(p/2)); got != bits.TrailingZeros64(want) {
				t.Fatalf("P=%d m=%#x x=%#x: bit %d, want %d", p, m, x, got, bits.TrailingZeros64(want))
			}
		}
	}
}

// rrPick is a round-robin arbiter: the first set bit at or after the
// pointer, going round.
func TestRRPickGoesRound(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, p := range []int{2, 4, 8, 16, 32, 64} {
		for range 20000 {
			m := requestMask(r, p)
			if m == 0 {
				continue
			}
			ptr := r.IntN(p)
			want := ptr
			for m&(1<<uint(want)) == 0 {
				want = (want + 1) % p
			}
			if got := rrPick(m, ptr, p); got != want {
				t.Fatalf("P=%d m=%#x ptr %d: bit %d, want %d", p, m, ptr, got, want)
			}
		}
	}
}
