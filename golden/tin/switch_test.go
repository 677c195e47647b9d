package tin

import (
	"math"
	"math/rand/v2"
	"testing"
)

// deliveries records when each packet, by Tag, was delivered.
type deliveries map[int64]Time

func (d deliveries) Delivered(f *Fabric, p *Packet) { d[p.Tag] = f.Now() }
func (d deliveries) Timer(*Fabric, int64)           {}

// Head of line (readings A22-A24, §3.1 "one arbitration request per VC per
// port"): four full cells for TiN 1 and then one for TiN 2 leave TiN 0's
// endpoint at 100 Gb/s on one VC. The 25 Gb/s link to TiN 1 takes a cell
// every 51.2 ns and its output buffer two, so the third cell for TiN 1
// waits at the head of the injection FIFO and the cell for TiN 2, behind
// it, with it: hand-worked below. An output-queued router sends that cell
// at once.
func TestSwitchHeadOfLine(t *testing.T) {
	c := mustClique(t, 1, 3, 0)
	tm := PaperTiming()
	for _, tc := range []struct {
		name   string
		sw     bool
		wantNs float64
	}{
		// A0 crosses at 20 ns and is on the link until 71.2; A1 crosses
		// at 32.8 and fills the buffer; A2 waits for A0's tail (71.2), A3
		// for A1's (122.4); A3 has arrived whole and crosses in 6.4 ns (at
		// twice the endpoint's 100 Gb/s, reading A24), then B crosses and
		// goes out: its tail reaches TiN 2 at 128.8 + 51.2 + 40 = 220.
		{"switch", true, 220},
		// B's head reaches the output stage at 71.2 (behind four cells at
		// 100 Gb/s, plus the fall-through) and goes out at once.
		{"output-queued", false, 162.4},
	} {
		cfg := AquilaFabric(c, tm, DefaultBufferBytes, AquilaNonMinWeight, AquilaNonMinBias, 1, tm.InjectGbps, 1)
		if !tc.sw {
			cfg.Switch = nil
		}
		d := deliveries{}
		f, err := NewFabric(cfg, d)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Send(Packet{Src: 0, Dst: 1, Bytes: 640, Alg: AlgMinimal, Tag: 1}, []int{160, 160, 160, 160}); err != nil {
			t.Fatal(err)
		}
		if err := f.Send(Packet{Src: 0, Dst: 2, Bytes: 160, Alg: AlgMinimal, Tag: 2}, nil); err != nil {
			t.Fatal(err)
		}
		f.Run()
		if got := float64(d[2]) / float64(Ns); math.Abs(got-tc.wantNs) > 1e-9 {
			t.Errorf("%s: the cell behind the blocked head delivered at %g ns, want %g", tc.name, got, tc.wantNs)
		}
		// The four cells for TiN 1 go back to back on its link: the last
		// tail leaves at 20 + 4 x 51.2 and reaches TiN 1 40 ns later.
		if got := float64(d[1]) / float64(Ns); math.Abs(got-(20+4*51.2+40)) > 1e-9 {
			t.Errorf("%s: the packet for TiN 1 delivered at %g ns, want %g", tc.name, got, 20+4*51.2+40)
		}
	}
}

// A control cell on its own VC is not held behind the blocked data head
// (§3.3: RTS cells "are carried on their own VCs"), but waits for the
// crossbar and, on the link, for the data cell going out (non-preemptive
// priority).
func TestSwitchControlVC(t *testing.T) {
	c := mustClique(t, 1, 3, 0)
	tm := PaperTiming()
	d := deliveries{}
	f, err := NewFabric(AquilaFabric(c, tm, DefaultBufferBytes, AquilaNonMinWeight, AquilaNonMinBias, 1, tm.InjectGbps, 1), d)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Send(Packet{Src: 0, Dst: 1, Bytes: 640, Alg: AlgMinimal, Tag: 1}, []int{160, 160, 160, 160}); err != nil {
		t.Fatal(err)
	}
	if err := f.Send(Packet{Src: 0, Dst: 1, Bytes: 16, Class: 1, Alg: AlgMinimal, Tag: 2}, nil); err != nil {
		t.Fatal(err)
	}
	f.Run()
	// Hand-worked: A0 goes on the injection link at 0; the control cell C
	// goes next (strict priority at the endpoint too), 12.8-14.08 ns, and
	// reaches the crossbar at 32.8, as A0's transfer ends; it crosses into
	// its own VC's output buffer by 34.08 but A0 is on the link until 71.2:
	// C goes next (priority, but not preemption), its tail out at 76.32,
	// at TiN 1 40 ns later. The data cells follow C: A1 76.32-127.52, A2
	// and A3 each 51.2 ns more, the last tail at TiN 1 at 269.92.
	rts, data := float64(d[2])/float64(Ns), float64(d[1])/float64(Ns)
	if math.Abs(rts-116.32) > 1e-9 || math.Abs(data-269.92) > 1e-9 {
		t.Errorf("control cell delivered at %g ns (want 116.32), the data packet at %g (want 269.92)", rts, data)
	}
}

// A heavy random run through switches with minimal buffers delivers
// everything and leaves every buffer empty and every credit home: no cell
// is lost or double-counted in the FIFOs, the crossbar or the output
// buffers, and head-of-line blocking does not deadlock the VCs (§3.2's VC
// rule, readings A7, A25).
func TestSwitchDrains(t *testing.T) {
	c := mustClique(t, 3, 4, 2)
	tm := PaperTiming()
	cfg := AquilaFabric(c, tm, MaxCell, AquilaNonMinWeight, AquilaNonMinBias, 2, tm.InjectGbps/2, 3)
	cfg.Switch.OutputBytes = MaxCell
	d := deliveries{}
	f, err := NewFabric(cfg, d)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(9, 9))
	n := int32(f.Endpoints())
	const packets = 3000
	for i := int64(0); i < packets; i++ {
		src := rng.Int32N(n)
		dst := (src + 1 + rng.Int32N(n-1)) % n
		cells := []int{160, 160, 160, 40}[:1+rng.IntN(4)]
		alg := []Algorithm{AlgFullyAdaptive, AlgMinimalAdaptive, AlgDeterministic, AlgMinimal}[rng.IntN(4)]
		if err := f.Send(Packet{Src: src, Dst: dst, Bytes: int32(160 * len(cells)), Class: uint8(rng.IntN(Classes)), Alg: alg, Tag: i}, cells); err != nil {
			t.Fatal(err)
		}
	}
	f.Run()
	if len(d) != packets {
		t.Fatalf("%d of %d packets delivered: the fabric stopped with cells in it", len(d), packets)
	}
	if f.Stats.NonMinimal == 0 {
		t.Error("no cell took a detour")
	}
	f.now += 10 * Ns * Time(tm.HopLatency(Global)) // the last credits are on their way back
	for l := range f.links {
		f.drain(int32(l))
		L, p := f.links[l], f.sw.ports[l]
		if L.queued != 0 || L.inUse != 0 || L.fifo != 0 || p.inBusy || len(p.waiting) != 0 || p.relBytes != 0 {
			t.Fatalf("link %d left with %d queued, %d credits out, %d in the FIFO, busy %v, %d requests, %d unreleased", l, L.queued, L.inUse, L.fifo, p.inBusy, len(p.waiting), p.relBytes)
		}
	}
	for k := range f.vcs {
		if f.vcs[k].credits != MaxCell || f.vcs[k].q.len() != 0 || f.sw.in[k].len() != 0 || f.sw.held[k] != 0 {
			t.Fatalf("VC %d: %d credits, %d queued, %d in the input FIFO, %d held in the output buffer", k, f.vcs[k].credits, f.vcs[k].q.len(), f.sw.in[k].len(), f.sw.held[k])
		}
	}
}

func TestSwitchSpecErrors(t *testing.T) {
	c := mustClique(t, 1, 2, 0)
	tm := PaperTiming()
	for _, f := range []func(*FabricConfig){
		func(cfg *FabricConfig) { cfg.Switch.OutputBytes = MaxCell - 1 },
		func(cfg *FabricConfig) { cfg.Switch.CrossbarBytesPerNs = 0 },
		func(cfg *FabricConfig) { cfg.Switch.CrossbarBytesPerNs = math.NaN() },
		func(cfg *FabricConfig) { cfg.Switch.FallThroughNs = -1 },
		func(cfg *FabricConfig) { cfg.Switch.FallThroughNs = 100 }, // more than a local hop's head latency
	} {
		cfg := AquilaFabric(c, tm, DefaultBufferBytes, AquilaNonMinWeight, AquilaNonMinBias, 1, tm.InjectGbps, 1)
		sw := *cfg.Switch
		cfg.Switch = &sw
		f(&cfg)
		if _, err := NewFabric(cfg, deliveries{}); err == nil {
			t.Errorf("switch %+v accepted", *cfg.Switch)
		}
	}
}

// A clocked switch (reading A28) starts a cell on an edge of its clock:
// four full cells on a 25 Gb/s local link leave 52 ns apart (51.2 ns of
// serialisation, rounded up to the 4 ns cycle), and the last one's tail
// reaches the far end 3 x 0.8 ns later than without a clock. Both clocks
// at phase 0: the first cell's request (20 ns) and start are on edges.
func TestSwitchClock(t *testing.T) {
	c := mustClique(t, 1, 2, 0)
	for _, tc := range []struct {
		clockNs, wantNs float64
	}{
		{0, 20 + 4*51.2 + 40},
		{4, 20 + 3*52 + 51.2 + 40},
	} {
		tm := PaperTiming()
		tm.SwitchClockNs = tc.clockNs
		d := deliveries{}
		f, err := NewFabric(AquilaFabric(c, tm, DefaultBufferBytes, AquilaNonMinWeight, AquilaNonMinBias, 1, tm.InjectGbps, 1), d)
		if err != nil {
			t.Fatal(err)
		}
		for r := range f.sw.phase {
			f.sw.phase[r] = 0
		}
		if err := f.Send(Packet{Src: 0, Dst: 1, Bytes: 640, Alg: AlgMinimal, Tag: 1}, []int{160, 160, 160, 160}); err != nil {
			t.Fatal(err)
		}
		f.Run()
		if got := float64(d[1]) / float64(Ns); math.Abs(got-tc.wantNs) > 1e-9 {
			t.Errorf("clock %g ns: four cells delivered at %g ns, want %g", tc.clockNs, got, tc.wantNs)
		}
	}
	// A request between two edges waits for the next one.
	f := &swState{clock: 4000, phase: []Time{1000}}
	for _, e := range []struct{ t, want Time }{{0, 1000}, {1000, 1000}, {1001, 5000}, {5000, 5000}, {7999, 9000}} {
		if got := f.edge(0, e.t); got != e.want {
			t.Errorf("edge(%d ps) = %d, want %d (period 4000 ps, phase 1000)", e.t, got, e.want)
		}
	}
}
