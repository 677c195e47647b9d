package prr

import (
	"math"
	"slices"
	"strings"
	"testing"

	gp "github.com/labrunner/labrunner/golden/prr"
	"github.com/labrunner/labrunner/results"
	tp "github.com/labrunner/labrunner/traffic/prr"
)

func newGolden(t testing.TB, p, depth int) *gp.Switch {
	t.Helper()
	sw, err := gp.NewSwitch(p, depth)
	if err != nil {
		t.Fatal(err)
	}
	return sw
}

func slotsOf(p int, dests map[int]int) []tp.Slot {
	s := make([]tp.Slot, p)
	for i, d := range dests {
		s[i] = tp.Slot{Valid: true, Dest: d}
	}
	return s
}

// A 4-port switch with queues of depth 1: the first batch fills queues 0
// and 1 of group 0; a second batch of four packets for port 0 starts at the
// offset counter (2), so in input order its packets want queues 2, 3, 0, 1,
// and the last two find theirs full (docs/prr.md placement rule).
func TestExpectPlacementWithDrops(t *testing.T) {
	sw := newGolden(t, 4, 1)
	e := expectPlacement(sw, goldenBatch(slotsOf(4, map[int]int{1: 0, 3: 0}), 4, 0))
	want := []uint32{0, tp.Placement{Placed: true, Queue: 0}.Word(), 0, tp.Placement{Placed: true, Queue: 1}.Word()}
	if !slices.Equal(e.words, want) || e.placed != 2 || e.dropped != 0 {
		t.Fatalf("first batch: %x (%d placed, %d dropped), want %x", e.words, e.placed, e.dropped, want)
	}
	e = expectPlacement(sw, goldenBatch(slotsOf(4, map[int]int{0: 0, 1: 4, 2: 8, 3: 12}), 4, 1))
	want = []uint32{
		tp.Placement{Placed: true, Queue: 2}.Word(),
		tp.Placement{Placed: true, Queue: 3}.Word(),
		tp.Placement{Dropped: true, Queue: 0}.Word(),
		tp.Placement{Dropped: true, Queue: 1}.Word(),
	}
	if !slices.Equal(e.words, want) || e.placed != 2 || e.dropped != 2 {
		t.Fatalf("second batch: %x (%d placed, %d dropped), want %x", e.words, e.placed, e.dropped, want)
	}
	// The entry is the fill level before the write.
	sw = newGolden(t, 4, 8)
	for k := range 5 {
		e = expectPlacement(sw, goldenBatch(slotsOf(4, map[int]int{0: 2, 1: 2, 2: 2, 3: 2}), 4, k))
	}
	for i, w := range e.words {
		if p := tp.DecodePlacement(w); p.Pos != 4 || p.Group != 2 || p.Queue != i {
			t.Errorf("fifth batch slot %d: %s, want group 2 queue %d entry 4", i, p, i)
		}
	}
}

func TestDiagnose(t *testing.T) {
	const p = 8
	slots := slotsOf(p, map[int]int{0: 3, 2: 3, 5: 3, 6: 1})
	pw := func(g, q int) uint32 { return tp.Placement{Placed: true, Group: g, Queue: q}.Word() }
	want := []uint32{pw(3, 1), 0, pw(3, 2), 0, 0, pw(3, 3), pw(1, 0), 0}
	rotated := []uint32{pw(3, 2), 0, pw(3, 3), 0, 0, pw(3, 4), pw(1, 0), 0}
	permuted := []uint32{pw(3, 2), 0, pw(3, 1), 0, 0, pw(3, 3), pw(1, 0), 0}
	for _, c := range []struct {
		got  []uint32
		want string
	}{
		{rotated, "port 3: its packets start at queue 2 where the golden model starts at 1, all shifted by 1: the port's offset counter"},
		{permuted, "port 3: its 3 packets landed in the right queues but permuted among themselves: the sorting network did not keep equal keys in input order"},
	} {
		d := diagnose(slots, want, c.got, p)
		if len(d) != 1 || !strings.Contains(d[0], c.want) {
			t.Errorf("diagnosis %q, want %q", d, c.want)
		}
		ds := diffPlacement(slots, want, c.got)
		msg := describeBatchDiff(7, slots, ds, 4, d)
		if !strings.HasPrefix(msg, "batch 7: slot 0 (DEST 3) expected group 3 queue 1 entry 0, read back group 3 queue 2 entry 0") {
			t.Errorf("message %q", msg)
		}
	}
	if d := diagnose(slots, want, want, p); len(d) != 0 {
		t.Errorf("equal words diagnosed %q", d)
	}
}

func TestDiffStateNamesTheArbiter(t *testing.T) {
	const p = 4
	sw := newGolden(t, p, 4)
	expectPlacement(sw, goldenBatch(slotsOf(p, map[int]int{0: 0, 1: 0}), p, 0))
	g := sw.State()
	h := tp.State{Offsets: []int{2, 0, 0, 0}, Arbiters: []int{1, 0, 0, 0}, Queues: make([]tp.QueueStat, p*p),
		Tags: make([][]uint32, p*p), TagTail: make([]int, p*p)}
	for gi := range p {
		h.Queues[gi*p+g.Offsets[gi]].Next = true
		h.Queues[gi*p].Arb = gi != 0
	}
	h.Queues[1].Arb = true
	h.Queues[0].Count, h.Queues[1].Count = 1, 1
	h.Tags[0], h.Tags[1] = []uint32{tagOf(0, 0)}, []uint32{tagOf(0, 1)}
	ds := diffState(g, h, p, 10)
	if len(ds) == 0 || !strings.Contains(ds[0], "ARB_INDEX[0] reads 1, golden 0: the output arbiter of port 0 is out of step") {
		t.Fatalf("differences %q", ds)
	}
	h.Arbiters[0] = 0
	h.Queues[1].Arb, h.Queues[0].Arb = false, true
	if ds := diffState(g, h, p, 10); len(ds) != 0 {
		t.Fatalf("equal states differ: %q", ds)
	}
	h.Tags[1] = []uint32{tagOf(3, 1)}
	if ds := diffState(g, h, p, 10); len(ds) != 1 || !strings.Contains(ds[0], "entry 0 holds 0x401 (batch 3 slot 1), golden 0x101 (batch 0 slot 1)") {
		t.Fatalf("tag difference %q", ds)
	}
	// Resuming from the read-back makes the golden switch agree with it.
	if err := sw.SetState(stateOf(h, p)); err != nil {
		t.Fatal(err)
	}
	if ds := diffState(sw.State(), h, p, 10); len(ds) != 0 {
		t.Fatalf("after resuming: %q", ds)
	}
}

func TestGoldenDrainAndDiffEgress(t *testing.T) {
	const p = 4
	sw := newGolden(t, p, 4)
	expectPlacement(sw, goldenBatch(slotsOf(p, map[int]int{0: 1, 1: 1, 2: 1, 3: 2}), p, 0))
	want := goldenDrain(sw, 8)
	if !slices.Equal(want[1], []uint32{tagOf(0, 0), tagOf(0, 1), tagOf(0, 2)}) || len(want[2]) != 1 || len(want[0]) != 0 {
		t.Fatalf("golden drain %x", want)
	}
	got := [][]uint32{nil, {tagOf(0, 1), tagOf(0, 2), tagOf(0, 0)}, {tagOf(0, 3)}, nil}
	ds := diffEgress(want, got, 3)
	if len(ds) != 1 || !strings.Contains(ds[0], "port 1 sent 3 packets, golden 3; departure 1 is 0x101 (batch 0 slot 1), golden 0x100 (batch 0 slot 0)") ||
		!strings.Contains(ds[0], "another order") {
		t.Fatalf("differences %q", ds)
	}
	got[1] = got[1][:2]
	if ds := diffEgress(want, got, 3); len(ds) != 1 || !strings.Contains(ds[0], "out of step") {
		t.Fatalf("differences %q", ds)
	}
}

func TestBatchGen(t *testing.T) {
	for _, p := range []int{2, 16, 256} {
		a, b := newBatchGen(42, p), newBatchGen(42, p)
		equalKeys, high, empty, drains := 0, 0, 0, 0
		for range 2000 {
			x, y := a.next(), b.next()
			if !slices.Equal(x, y) {
				t.Fatalf("P=%d: the same seed gave different batches", p)
			}
			if len(x) != p {
				t.Fatalf("P=%d: batch of %d slots", p, len(x))
			}
			n, per := 0, map[int]int{}
			for _, s := range x {
				if !s.Valid {
					continue
				}
				n++
				if s.Dest < 0 || s.Dest > 255 {
					t.Fatalf("P=%d: destination %d outside the 8-bit field", p, s.Dest)
				}
				if s.Dest >= p {
					high++
				}
				per[s.Dest&(p-1)]++
			}
			for _, c := range per {
				if c > 1 {
					equalKeys++
					break
				}
			}
			if n == 0 {
				empty++
			}
			if c := a.drainCycles(); c < 1 || c > tp.EgressCapacity {
				t.Fatalf("drain of %d cycles", c)
			} else if c == tp.EgressCapacity {
				drains++
			}
			b.drainCycles()
		}
		if equalKeys < 500 || empty < 20 || drains < 50 || (p < 256 && high < 100) {
			t.Errorf("P=%d: %d batches with equal keys, %d empty, %d full drains, %d high DEST bits in 2000", p, equalKeys, empty, drains, high)
		}
	}
}

func TestTags(t *testing.T) {
	if tagOf(0, 0) == 0 || tagOf(5, 255) != 6<<8|255 {
		t.Errorf("tags %x %x", tagOf(0, 0), tagOf(5, 255))
	}
	if s := describeTag(tagOf(12, 3)); s != "0xd03 (batch 12 slot 3)" {
		t.Errorf("describeTag: %q", s)
	}
	if describeTag(0) != "none" {
		t.Error("tag 0 is no packet")
	}
}

func TestBands(t *testing.T) {
	v := []float64{10, 11, 9, 10.5, 9.5, 10, 10.2, 9.8}
	e := meanBand("m", v, "cycles", 0, 0, "src", "note")
	if e.Value != meanOf(v) || *e.Min >= 9 || *e.Max <= 11 || math.Abs((*e.Max-e.Value)-(e.Value-*e.Min)) > 1e-9 {
		t.Errorf("mean band %g [%g, %g]", e.Value, *e.Min, *e.Max)
	}
	// Replicas that agree exactly: the floor keeps a band.
	e = meanBand("m", []float64{0, 0, 0}, "fraction", 0, 1e-5, "src", "note")
	if *e.Min != 0 || *e.Max != 1e-5 {
		t.Errorf("floor band [%g, %g]", *e.Min, *e.Max)
	}
	// Heavy tail: the range widens the band.
	w := withRange(e, []float64{0, 0, 3e-4})
	if *w.Max != 3e-4 || !strings.Contains(w.Wide, "heavy-tailed") {
		t.Errorf("range band [%g, %g], reason %q", *w.Min, *w.Max, w.Wide)
	}
	// A range inside the interval (every run drops) leaves the interval's
	// reason: the width is its noise, not a tail.
	v = []float64{0.040, 0.050, 0.045, 0.047, 0.043, 0.052, 0.044, 0.049}
	n := withRange(meanBand("m", v, "fraction", 0, 1e-5, "src", "note"), v)
	if n.Wide == "" || strings.Contains(n.Wide, "heavy-tailed") || *n.Max <= 0.052 {
		t.Errorf("range within the interval: [%g, %g], reason %q", *n.Min, *n.Max, n.Wide)
	}
	m := maxBand("x", []float64{300, 350, 400, 380}, "cycles", "src", "note")
	if *m.Min >= 300 || *m.Max <= 400 || *m.Min < 0 {
		t.Errorf("max band [%g, %g]", *m.Min, *m.Max)
	}
	for dof := 1; dof < 200; dof++ {
		if tQuantile(dof) < tQuantile(dof+1) || tQuantile(dof) < 3.891 {
			t.Fatalf("t quantile not decreasing to 3.891 at %d dof", dof)
		}
	}
	if math.Abs(tQuantile(7)-7.885) > 1e-9 {
		t.Errorf("t(0.99995, 7) = %g", tQuantile(7))
	}
}

func TestPipelineShapes(t *testing.T) {
	for _, p := range []int{2, 16, 256} {
		empty := 0
		for k := range 10 {
			s := pipelineShape(k, p)
			n := 0
			for _, x := range s {
				if x.Valid {
					n++
					if x.Dest < 0 || x.Dest >= p {
						t.Fatalf("destination %d", x.Dest)
					}
				}
			}
			if n == 0 {
				empty++
			}
		}
		if empty != 2 {
			t.Errorf("P=%d: %d empty batches in 10, want 2", p, empty)
		}
	}
}

func TestPipelineOffset(t *testing.T) {
	r := tp.TGResult{Delivered: 100, LatSum: 1800, WaitSum: 1000}
	if n := pipelineOffset(r); n != 7 {
		t.Errorf("offset %d, want 7", n)
	}
	if n := pipelineOffset(tp.TGResult{}); n != 0 {
		t.Errorf("offset of an empty run %d", n)
	}
}

// worstBand (reading P41): the no-drop replicas' interval stops at P·D, the
// drop replicas add P·D exactly, so the band's top is P·D and a switch whose
// worst case is higher fails; both sides can fail.
func TestWorstBand(t *testing.T) {
	res := func(clean []int64, dropped ...int64) []gp.SimResult {
		var rs []gp.SimResult
		for _, x := range clean {
			rs = append(rs, gp.SimResult{DrainMax: x})
		}
		for _, x := range dropped {
			rs = append(rs, gp.SimResult{DrainMax: x, Dropped: 7})
		}
		return rs
	}
	clean := []int64{300, 340, 360, 380, 390, 400, 410, 420, 450, 480, 500, 330, 370, 395, 440}
	within := func(e results.Expectation, x float64) bool { lo, hi := e.Bounds(); return x >= lo && x <= hi }
	// 16 ports, depth 32: a mixture, with P·D on top.
	e := worstBand("m", res(clean, 512, 512), 16, 32, "src", "note")
	if *e.Max != 512 || *e.Min >= 300 || *e.Min <= 0 || e.Wide == "" || !strings.Contains(e.Budget, "P·D = 16×32 = 512") {
		t.Errorf("mixture band [%g, %g], budget %q, wide %q", *e.Min, *e.Max, e.Budget, e.Wide)
	}
	for x, want := range map[float64]bool{512: true, 300: true, 520: false, 560: false, 820: false, *e.Min - 1: false} {
		if within(e, x) != want {
			t.Errorf("%g in [%g, %g]: %v, want %v", x, *e.Min, *e.Max, !want, want)
		}
	}
	// No replica dropped, but the no-drop interval reaches P·D: a drop run
	// (P·D) is within the spread and the top stays P·D.
	if e := worstBand("m", res(clean), 16, 32, "src", "note"); *e.Max != 512 {
		t.Errorf("no drop, interval reaching P·D: top %g, want 512", *e.Max)
	}
	// Deep queues: P·D is far out of reach and plays no part.
	if e := worstBand("m", res(clean), 16, 4096, "src", "note"); *e.Max >= 4096 || *e.Max <= 500 {
		t.Errorf("depth 4096: top %g, want the no-drop interval's", *e.Max)
	}
	// Every replica dropped at P·D: the band is that value, and a switch
	// with shorter queues (31: 496) fails it from below.
	all := res(nil, 512, 512, 512, 512, 512, 512, 512, 512)
	if e := worstBand("m", all, 16, 32, "src", "note"); *e.Min != 512 || *e.Max != 512 || e.Wide != "" || within(e, 496) || within(e, 520) {
		t.Errorf("all drop: [%g, %g] wide %q", *e.Min, *e.Max, e.Wide)
	}
	// Stalls after drops (small depths): the drop part is an interval
	// from P·D up, wider than its largest replica.
	st := worstBand("m", res(nil, 64, 64, 120, 200, 90, 150, 64, 300), 16, 4, "src", "note")
	if *st.Min != 64 || *st.Max <= 300 || !strings.Contains(st.Budget, "stalled") {
		t.Errorf("stalls: [%g, %g], budget %q", *st.Min, *st.Max, st.Budget)
	}
}

// A load names its cases by the plan's decimal, not by the generator's
// 1/65536 steps, and the name gives the same rate back.
func TestLoadString(t *testing.T) {
	for _, c := range []struct {
		in   float64
		want string
	}{{1, "1"}, {0.9, "0.9"}, {0.5, "0.5"}, {0.95, "0.95"}, {0.123, "0.123"}, {1.0 / 65536, "2e-05"}} {
		f, err := tp.Fixed(c.in)
		if err != nil {
			t.Fatal(err)
		}
		if got := loadString(f); got != c.want {
			t.Errorf("loadString(Fixed(%g) = %d) = %q, want %q", c.in, f, got, c.want)
		}
	}
}

// The latency test runs input rate 1 anyway: its loads are the rates
// below it, and they need a traffic model to run.
func TestLatencyParams(t *testing.T) {
	if err := defaultLatency.CheckParams(); err != nil {
		t.Fatalf("default: %v", err)
	}
	if got := defaultLatency.subLoads(); len(got) != 1 || loadString(got[0]) != "0.9" {
		t.Errorf("default loads %v", got)
	}
	for _, c := range []struct {
		p    latencyParams
		want string
	}{
		{latencyParams{runParams: defaultRun, Loads: []float64{1}, LoadTraffic: []string{"uniform"}}, "below it"},
		{latencyParams{runParams: defaultRun, Loads: []float64{0.999999}, LoadTraffic: []string{"uniform"}}, "below it"},
		{latencyParams{runParams: defaultRun, Loads: []float64{1e-6}, LoadTraffic: []string{"uniform"}}, "below it"},
		{latencyParams{runParams: defaultRun, Loads: []float64{0.9}}, "no traffic model"},
	} {
		err := c.p.CheckParams()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error saying %q", c.p, err, c.want)
		}
	}
	if err := (latencyParams{runParams: defaultRun}).CheckParams(); err != nil {
		t.Errorf("no loads below saturation: %v", err)
	}
}
