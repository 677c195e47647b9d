package tin

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/labrunner/labrunner/internal/raceshare"
)

// The calendar queue pops in time order and, at equal times, in push
// order, across the ring and the heap for far events.
func TestCalQueueOrder(t *testing.T) {
	q := newCalQueue()
	rng := rand.New(rand.NewPCG(1, 2))
	type rec struct {
		t   Time
		seq int32
	}
	var want []rec
	now := Time(0)
	seq := int32(0)
	push := func(t Time) {
		q.push(event{t: t, id: seq})
		want = append(want, rec{t, seq})
		seq++
	}
	var got []rec
	for step := 0; step < 20000; step++ {
		switch k := rng.IntN(10); {
		case k < 6:
			// Mostly near, some at the same picosecond, some past the ring.
			d := Time(rng.IntN(3000)) * Ns / 10
			if rng.IntN(20) == 0 {
				d = Time(calSpan+rng.IntN(3*calSpan)) * Ns
			}
			if rng.IntN(5) == 0 {
				d = 0
			}
			push(now + d)
		default:
			e, ok := q.pop()
			if !ok {
				continue
			}
			if e.t < now {
				t.Fatalf("popped %d after %d", e.t, now)
			}
			now = e.t
			got = append(got, rec{e.t, e.id})
		}
	}
	for {
		e, ok := q.pop()
		if !ok {
			break
		}
		got = append(got, rec{e.t, e.id})
	}
	if q.Len() != 0 || len(got) != len(want) {
		t.Fatalf("popped %d of %d, %d left", len(got), len(want), q.Len())
	}
	// Pushes number events in order, so popping by time and then push
	// order gives (time, number) in increasing order.
	for i := 1; i < len(got); i++ {
		if got[i].t < got[i-1].t || got[i].t == got[i-1].t && got[i].seq < got[i-1].seq {
			t.Fatalf("pop %d: %+v after %+v", i, got[i], got[i-1])
		}
	}
}

// The same order when a nanosecond holds hundreds of events, as on the
// full Clique (calQueue.sortBucket's counting sort), many at equal
// picoseconds, some pushed into the nanosecond being served.
func TestCalQueueBusyNanosecond(t *testing.T) {
	q := newCalQueue()
	rng := rand.New(rand.NewPCG(3, 4))
	type rec struct {
		t   Time
		seq int32
	}
	var got []rec
	seq, now, pushed := int32(0), Time(0), 0
	push := func(t Time) {
		q.push(event{t: t, id: seq})
		seq++
		pushed++
	}
	for round := 0; round < 200; round++ {
		n := 1 + rng.IntN(600)
		for i := 0; i < n; i++ {
			// Within the next few ns, on a coarse grid for ties.
			push(now + Time(rng.IntN(4000)/7*7))
		}
		for k := rng.IntN(n + 1); k > 0; k-- {
			e, ok := q.pop()
			if !ok {
				break
			}
			if e.t < now {
				t.Fatalf("popped %d after %d", e.t, now)
			}
			now = e.t
			got = append(got, rec{e.t, e.id})
			if rng.IntN(3) == 0 {
				push(now + Time(rng.IntN(int(Ns-now%Ns)))) // the served nanosecond
			}
		}
	}
	for e, ok := q.pop(); ok; e, ok = q.pop() {
		got = append(got, rec{e.t, e.id})
	}
	if len(got) != pushed {
		t.Fatalf("popped %d of %d", len(got), pushed)
	}
	for i := 1; i < len(got); i++ {
		if got[i].t < got[i-1].t || got[i].t == got[i-1].t && got[i].seq < got[i-1].seq {
			t.Fatalf("pop %d: %+v after %+v", i, got[i], got[i-1])
		}
	}
}

// An unloaded packet takes exactly its route's head latency plus its
// serialization (cut-through), on the SC'18 network and BookSim's.
func TestFabricUnloadedLatency(t *testing.T) {
	for _, cfg := range []FabricConfig{SC18Dragonfly(1), BookSimDragonfly(1)} {
		h := &recorder{}
		f, err := NewFabric(cfg, h)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range []int32{0, 1, 4, 31, 32, 100, 1055} {
			h.at = nil
			if err := f.Send(Packet{Src: 0, Dst: d, Bytes: 16, Alg: AlgMinimal}, nil); err != nil {
				t.Fatal(err)
			}
			start := f.Now()
			f.Run()
			want := f.MinimalLatencyNs(0, d) + 16
			if got := float64(h.at[0]-start) / float64(Ns); math.Abs(got-want) > 1e-9 {
				t.Errorf("0 -> %d: %g ns, want %g", d, got, want)
			}
		}
	}
	// The SC'18 figures: 40 ns local, 500 ns global, nothing else.
	f, _ := NewFabric(SC18Dragonfly(1), &recorder{})
	if l := f.MinimalLatencyNs(0, 4*8*4+4); l != 540 && l != 580 && l != 500 {
		t.Errorf("group 0 to group 1: %g ns, want 500 + 0, 40 or 80", l)
	}
}

type recorder struct{ at []Time }

func (r *recorder) Delivered(f *Fabric, p *Packet) { r.at = append(r.at, f.Now()) }
func (r *recorder) Timer(*Fabric, int64)           {}

// BookSim2 gives the 1,056-node Dragonfly an average latency of 124.7
// cycles at load 0.002 (5 through one router, 132 the longest): the preset
// reproduces it within 1%.
func TestBookSimPresetUnloaded(t *testing.T) {
	r, err := RunSynthetic(SynthConfig{Fabric: BookSimDragonfly(1), Alg: AlgMinimal, Rate: 0.002, PacketBytes: 1,
		WarmupNs: AnchorWarmupNs, MeasureNs: AnchorMeasureNs, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(r.LatencyNs-124.68)/124.68 > 0.01 || r.MaxLatencyNs > 133 || math.Abs(r.Hops-3.70) > 0.05 || r.Saturated {
		t.Errorf("latency %.2f ns (max %.0f), %.2f routers per packet, saturated %v; BookSim: 124.68, 132, 3.70", r.LatencyNs, r.MaxLatencyNs, r.Hops, r.Saturated)
	}
}

// Adaptive routing follows Aquila §3.2 and SC'18 §IV: minimal while the
// minimal route is not congested, non-minimal when an adversarial pattern
// congests it; minimal routing alone cannot carry that pattern.
//
// Each case is a simulation of its own: under the race detector the test
// takes one of them, in rotation by day (internal/raceshare); make test runs
// every case without it.
func TestAdaptiveRouting(t *testing.T) {
	small, err := NewClique(9, 4, 2) // 9 groups, one global link per group pair
	if err != nil {
		t.Fatal(err)
	}
	df := SC18Dragonfly(1)
	df.Clique, df.Endpoints = small, 2 // balanced as SC'18's: as many endpoints as global links per router
	type want struct {
		saturated   bool    // the pattern saturates the fabric
		minNonMin   float64 // at least this share of packets went non-minimal
		maxNonMin   float64 // at most this share (1: no bound)
		description string
	}
	cases := []struct {
		name string
		fab  FabricConfig
		alg  Algorithm
		pat  Pattern
		rate float64
		pkt  int
		want want
	}{
		{"PAR-uniform-0.05", df, AlgPAR, Uniform, 0.05, 16, want{false, 0, 0.02, "PAR at 0.05 uniform"}},
		// Minimal routing alone cannot carry group-shift traffic at 0.3 over
		// one global link per group pair.
		{"minimal-group-shift-0.3", df, AlgMinimal, GroupShift, 0.3, 16, want{true, 0, 1, "minimal routing at 0.3 group shift"}},
		{"PAR-group-shift-0.3", df, AlgPAR, GroupShift, 0.3, 16, want{false, 0.5, 1, "PAR at 0.3 group shift"}},
		{"UGAL-group-shift-0.3", df, AlgUGAL, GroupShift, 0.3, 16, want{false, 0.5, 1, "UGAL at 0.3 group shift"}},
		{"Valiant-group-shift-0.3", df, AlgValiant, GroupShift, 0.3, 16, want{false, 0.5, 1, "Valiant at 0.3 group shift"}},
		// Aquila's full Clique: one-cell packets at 0.1 find no queue and stay
		// minimal (the previous model sent 65% of them off the minimal route).
		{"Aquila-rack-uniform-0.1", AquilaRack(1), AlgFullyAdaptive, Uniform, 0.1, MaxCell, want{false, 0, 0.01, "Aquila rack at 0.1"}},
		{"Aquila-rack-group-shift-0.3", AquilaRack(1), AlgFullyAdaptive, GroupShift, 0.3, MaxCell, want{false, 0.5, 1, "Aquila rack, group shift at 0.3"}},
	}
	for _, c := range raceshare.Cases(t, cases) {
		t.Run(c.name, func(t *testing.T) {
			r, err := RunSynthetic(SynthConfig{Fabric: c.fab, Alg: c.alg, Pattern: c.pat, Rate: c.rate, PacketBytes: c.pkt, WarmupNs: 5000, MeasureNs: 10000, Seed: 3})
			if err != nil {
				t.Fatal(err)
			}
			if r.Saturated != c.want.saturated || r.NonMinimal < c.want.minNonMin || r.NonMinimal > c.want.maxNonMin {
				t.Errorf("%s: %.3f non-minimal (want %.2f..%.2f), saturated %v (want %v), accepted %.3f",
					c.want.description, r.NonMinimal, c.want.minNonMin, c.want.maxNonMin, r.Saturated, c.want.saturated, r.Accepted)
			}
		})
	}
}

// With VC FIFOs of two packets, adversarial traffic at a load PAR can
// carry completes: the VCs, one per hop, keep the credit loops from
// closing a cycle. Every credit comes back once the fabric drains.
func TestFabricShallowBuffersNoDeadlock(t *testing.T) {
	small, _ := NewClique(9, 4, 2)
	df := SC18Dragonfly(1)
	df.Clique, df.BufferBytes, df.Endpoints = small, 32, 2
	// Every endpoint bursts 50 packets to the next group at once: the
	// FIFOs fill, detours and minimal routes contend for them, and a
	// routing whose VCs could close a cycle would stop with cells
	// undelivered and nothing left to happen.
	h := &recorder{}
	f, _ := NewFabric(df, h)
	rng := rand.New(rand.NewPCG(5, 5))
	const n = 72 * 50
	for i := int32(0); i < n; i++ {
		src := i % 72
		dst := (src/8+1)%9*8 + rng.Int32N(8)
		if err := f.Send(Packet{Src: src, Dst: dst, Bytes: 16, Alg: AlgPAR}, nil); err != nil {
			t.Fatal(err)
		}
	}
	f.Run()
	if len(h.at) != n {
		t.Fatalf("%d of %d delivered: the fabric stopped with cells in it", len(h.at), n)
	}
	if f.Stats.NonMinimal == 0 {
		t.Error("the burst took no detour")
	}
	// A fabric that has delivered everything holds no credit.
	f.now += 10 * Ns * SC18GlobalNs // the last credits are still on their way back
	for i := range f.links {
		f.drain(int32(i))
		if l := f.links[i]; l.queued != 0 || l.inUse != 0 || l.fifo != 0 {
			t.Fatalf("link %d left with %d queued, %d credits in use, %d in the next FIFO", i, l.queued, l.inUse, l.fifo)
		}
	}
	for i, v := range f.vcs {
		if v.credits != 32 || v.q.len() != 0 {
			t.Fatalf("VC %d: %d credits, %d queued", i, v.credits, v.q.len())
		}
	}
	if _, err := NewFabric(FabricConfig{Clique: small, Endpoints: 1, Inject: df.Inject, Eject: df.Eject, Local: df.Local, Global: df.Global, Levels: 3, Rule: LevelGlobals}, h); err != nil {
		t.Fatal(err)
	}
	g, _ := NewFabric(FabricConfig{Clique: small, Endpoints: 1, Inject: df.Inject, Eject: df.Eject, Local: df.Local, Global: df.Global, Levels: 3, Rule: LevelGlobals}, h)
	if err := g.Send(Packet{Src: 0, Dst: 9, Bytes: 1, Alg: AlgPAR}, nil); err == nil {
		t.Error("PAR accepted on VCs numbered by global links: two local hops of the source group could share one")
	}
}

// The VCs the SC'18 preset's routes use: at most six (PAR's longest route
// is local, local, global, local, global, local), and the channel
// dependency graph of every route PAR and Valiant can take is acyclic.
func TestSC18RoutesDeadlockFree(t *testing.T) {
	small, _ := NewClique(5, 4, 1)
	g := NewDependencyGraph()
	T := small.TiNs
	node := func(r int) Node { return Node{r / T, r % T} }
	// Enumerate PAR's routes: from every source router, minimal to the
	// gateway, then (at the source or the gateway) a detour through any
	// intermediate group, hop k on VC k.
	for s := 0; s < small.Pods*T; s++ {
		for d := 0; d < small.Pods*T; d++ {
			ps, pd := s/T, d/T
			if ps == pd {
				continue
			}
			gw := small.Between(ps, pd)[0]
			for mid := 0; mid < small.Pods; mid++ {
				if mid == ps || mid == pd {
					continue
				}
				in, on := small.Between(ps, mid)[0], small.Between(mid, pd)[0]
				for _, start := range []Node{node(s), gw.A} { // decided at the source, or at the gateway
					var hops []Node
					if start != node(s) {
						hops = append(hops, start)
					}
					for _, n := range []Node{in.A, in.B, on.A, on.B, node(d)} {
						if len(hops) == 0 && n == node(s) || len(hops) > 0 && hops[len(hops)-1] == n {
							continue
						}
						hops = append(hops, n)
					}
					p := Path{From: node(s)}
					for k, n := range hops {
						p.Hops = append(p.Hops, Hop{To: n, VC: k})
					}
					if len(p.Hops) > 6 {
						t.Fatalf("a PAR route of %d hops: %s", len(p.Hops), p)
					}
					g.Add(p)
				}
			}
		}
	}
	if c := g.Cycle(); c != nil || g.MaxVC() != 5 {
		t.Errorf("cycle %v, highest VC %d (want 5: six VCs)", c, g.MaxVC())
	}
}

func TestSyntheticErrors(t *testing.T) {
	good := SynthConfig{Fabric: SC18Dragonfly(1), Alg: AlgPAR, Rate: 0.1, PacketBytes: 16, WarmupNs: 100, MeasureNs: 100}
	for name, f := range map[string]func(*SynthConfig){
		"rate 0":        func(c *SynthConfig) { c.Rate = 0 },
		"rate 2":        func(c *SynthConfig) { c.Rate = 2 },
		"packet 0":      func(c *SynthConfig) { c.PacketBytes = 0 },
		"packet > fifo": func(c *SynthConfig) { c.PacketBytes = 2000 },
		"window":        func(c *SynthConfig) { c.MeasureNs = 0 },
		"negative":      func(c *SynthConfig) { c.WarmupNs = -1 },
		"algorithm":     func(c *SynthConfig) { c.Alg = 99 },
		"pattern":       func(c *SynthConfig) { c.Pattern = 9 },
		"no clique":     func(c *SynthConfig) { c.Fabric.Clique = nil },
		"levels":        func(c *SynthConfig) { c.Fabric.Levels = 2 },
		"link rate":     func(c *SynthConfig) { c.Fabric.Local.BytesPerNs = 0 },
	} {
		c := good
		f(&c)
		if _, err := RunSynthetic(c); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := RunSynthetic(good); err != nil {
		t.Errorf("good config: %v", err)
	}
}

func TestParseNames(t *testing.T) {
	for _, a := range []Algorithm{AlgMinimal, AlgValiant, AlgUGAL, AlgPAR, AlgFullyAdaptive, AlgMinimalAdaptive, AlgDeterministic} {
		if b, err := ParseAlgorithm(a.String()); err != nil || b != a {
			t.Errorf("%s: %v %v", a, b, err)
		}
	}
	if a, err := ParseAlgorithm("minimal-deterministic"); err != nil || a != AlgMinimal {
		t.Errorf("Aquila's minimal deterministic mode: %v %v", a, err)
	}
	for _, p := range []Pattern{Uniform, GroupShift} {
		if q, err := ParsePattern(p.String()); err != nil || q != p {
			t.Errorf("%s: %v %v", p, q, err)
		}
	}
	if _, err := ParseAlgorithm("fast"); err == nil {
		t.Error("an unknown algorithm parsed")
	}
	if _, err := LookupPreset("nosuch"); err == nil {
		t.Error("an unknown preset found")
	}
	names := PresetNames()
	if !slices.Contains(names, "sc18-dragonfly") || !slices.Contains(names, "aquila-rack") {
		t.Errorf("presets %v", names)
	}
}
