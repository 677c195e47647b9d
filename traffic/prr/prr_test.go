package prr_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/drivers"
	"github.com/labrunner/labrunner/drivers/regmap"
	tp "github.com/labrunner/labrunner/traffic/prr"
)

func manifest(t testing.TB) *bitstreams.Manifest {
	t.Helper()
	m, err := bitstreams.Default().Design(tp.Design)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// The driver decodes fields with constants; they must be the register
// map's (bitstreams/catalogue/prr.yaml is the contract).
func TestFieldLayoutMatchesTheRegisterMap(t *testing.T) {
	r := regmap.New(nil, manifest(t), "")
	bit := func(name string, lo, hi uint) {
		t.Helper()
		loc, err := r.Lookup(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if loc.Lo != lo || loc.Hi != hi {
			t.Errorf("%s is bits %d:%d in the map, the driver uses %d:%d", name, loc.Hi, loc.Lo, hi, lo)
		}
	}
	bit("CTRL.RELEASE", 0, 0)
	bit("CTRL.DRAIN", 1, 1)
	bit("CTRL.CLEAR_QUEUES", 2, 2)
	bit("CTRL.CLEAR_COUNTERS", 3, 3)
	bit("CTRL.CLEAR_BATCH", 4, 4)
	bit("STATUS.BUSY", 0, 0)
	bit("STATUS.DROPPED", 1, 1)
	bit("STATUS.NONEMPTY", 2, 2)
	bit("STATUS.EGRESS_OVERFLOW", 3, 3)
	bit("PLACEMENT[0].GROUP", 0, 7)
	bit("PLACEMENT[0].QUEUE", 8, 15)
	bit("PLACEMENT[0].POS", 16, 27)
	bit("PLACEMENT[0].DROPPED", 30, 30)
	bit("PLACEMENT[0].PLACED", 31, 31)
	bit("QSTAT.COUNT", 0, 12)
	bit("QSTAT.NEXT", 30, 30)
	bit("QSTAT.ARB", 31, 31)
	bit("BATCH_CTRL[0].DEST", 0, 7)
	bit("BATCH_CTRL[0].VALID", 31, 31)
	bit("QREAD_SEL.ENTRY", 0, 15)
	bit("QREAD_SEL.QUEUE", 16, 23)
	bit("QREAD_SEL.GROUP", 24, 31)
	bit("QREAD_STATUS.VALID", 0, 0)
	bit("QREAD_STATUS.RANGE", 1, 1)
	bit("QREAD_HDR.SRC", 0, 7)
	bit("QREAD_HDR.DEST", 8, 15)
	bit("TG_CTRL.START", 0, 0)
	bit("TG_STATUS.DONE", 0, 0)
	bit("TG_STATUS.BUSY", 1, 1)
	bit("TG_STATUS.STRANDED", 2, 2)
	bit("TG_STATUS.BAD_CONFIG", 3, 3)
	bit("TG_MODEL.MODEL", 0, 1)
	if got := r.Manifest().Registers; len(got) == 0 {
		t.Fatal("empty register map")
	}
	loc, _ := r.Lookup("TG_HIST[31]")
	first, _ := r.Lookup("TG_HIST[0]")
	if n := int(loc.Addr-first.Addr)/4 + 1; n != tp.HistBins {
		t.Errorf("TG_HIST has %d bins in the map, the driver reads %d", n, tp.HistBins)
	}
}

func TestPlacementAndQStatWords(t *testing.T) {
	p := tp.Placement{Placed: true, Group: 5, Queue: 11, Pos: 31}
	if w := p.Word(); w != 1<<31|31<<16|11<<8|5 {
		t.Errorf("word 0x%x", w)
	}
	if got := tp.DecodePlacement(p.Word()); got != p {
		t.Errorf("round trip %+v", got)
	}
	d := tp.Placement{Dropped: true, Group: 255, Queue: 255}
	if got := tp.DecodePlacement(d.Word()); got != d || !strings.Contains(d.String(), "dropped at full queue 255 of group 255") {
		t.Errorf("%+v %q", got, d.String())
	}
	if s := tp.DecodePlacement(0).String(); s != "no packet" {
		t.Errorf("empty slot reads %q", s)
	}
	q := tp.QueueStat{Count: 4096, Next: true}
	if got := tp.DecodeQStat(q.Word()); got != q {
		t.Errorf("qstat round trip %+v", got)
	}
	if got := tp.DecodeQStat(0xC0000000); !got.Next || !got.Arb || got.Count != 0 {
		t.Errorf("QSTAT reset value 0xC0000000 decodes as %+v", got)
	}
	if w := tp.QReadSel(3, 7, 300); w != 3<<24|7<<16|300 {
		t.Errorf("QREAD_SEL 0x%x", w)
	}
	if w := (tp.Slot{Valid: true, Dest: 0x1f3}).CtrlWord(); w != 1<<31|0xf3 {
		t.Errorf("BATCH_CTRL 0x%x: the DEST field is 8 bits", w)
	}
}

func TestDecodeTGResults(t *testing.T) {
	w := make([]uint32, tp.TGResultWords)
	for i := range w {
		w[i] = uint32(i + 1)
	}
	r := tp.DecodeTGResults(w)
	hi := func(lo int) uint64 { return uint64(lo+2)<<32 | uint64(lo+1) }
	if r.Status != 1 || r.Offered != hi(1) || r.Delivered != hi(3) || r.Dropped != hi(5) || r.LatSum != hi(7) ||
		r.LatMin != 10 || r.LatMax != 11 || r.WaitSum != hi(11) || r.WaitMax != 14 || r.WindowOut != hi(14) ||
		r.RunCycles != hi(16) || r.Stranded != 19 || r.OrderErrors != 20 {
		t.Errorf("decoded %+v", r)
	}
}

func TestBuildCheck(t *testing.T) {
	good := tp.Build{Ports: 16, S: 2, FIFODepth: 32, PacketBits: 256, ClockKHz: 150000}
	if err := good.Check(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		b    tp.Build
		want string
	}{
		{tp.Build{Ports: 12, S: 1, FIFODepth: 1, PacketBits: 32, ClockKHz: 1}, "power of two"},
		{tp.Build{Ports: 512, S: 1, FIFODepth: 1, PacketBits: 32, ClockKHz: 1}, "power of two"},
		{tp.Build{Ports: 16, S: 0, FIFODepth: 1, PacketBits: 32, ClockKHz: 1}, "S ≥ 1"},
		{tp.Build{Ports: 256, S: 1, FIFODepth: 32, PacketBits: 32, ClockKHz: 1}, "P²·depth"},
		{tp.Build{Ports: 16, S: 1, FIFODepth: 1, PacketBits: 48, ClockKHz: 1}, "multiple of 32"},
		{tp.Build{Ports: 16, S: 1, FIFODepth: 1, PacketBits: 32}, "CLOCK_KHZ"},
	} {
		if err := c.b.Check(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.b, err, c.want)
		}
	}
	if good.LogPorts() != 4 || good.DataWords() != 8 || good.ClockMHz() != 150 {
		t.Errorf("derived %d %d %g", good.LogPorts(), good.DataWords(), good.ClockMHz())
	}
}

func TestTGConfigChecksAndFixedPoint(t *testing.T) {
	if f, err := tp.Fixed(0.5); err != nil || f != 0x8000 {
		t.Errorf("Fixed(0.5) = 0x%x, %v", f, err)
	}
	if _, err := tp.Fixed(1.5); err == nil {
		t.Error("Fixed(1.5) accepted")
	}
	for _, name := range []string{"uniform", "bursty", "nonuniform"} {
		m, err := tp.ModelNamed(name)
		if err != nil || m.String() != name {
			t.Errorf("%s: %v %v", name, m, err)
		}
	}
	if _, err := tp.ModelNamed("hotspot"); err == nil {
		t.Error("unknown model accepted")
	}
}

// A map whose burst layout moved is refused with the register named.
func TestOpenRefusesABrokenBurstLayout(t *testing.T) {
	m := *manifest(t)
	m.Registers = append([]bitstreams.Register(nil), m.Registers...)
	for i := range m.Registers {
		if m.Registers[i].Name == "TG_LOAD" {
			m.Registers[i].Offset += 0x40
		}
	}
	_, err := tp.Open(context.Background(), regmap.New(nil, &m, "u96"))
	if err == nil || !strings.Contains(err.Error(), "TG_LOAD") || drivers.ClassOf(err) != drivers.ClassSetup {
		t.Fatalf("err %v (class %v)", err, drivers.ClassOf(err))
	}
}

func TestBuildAndBatchOnTheEmulatedBoard(t *testing.T) {
	sw, ctx := newRig(t, rigOpts{})
	want := tp.Build{Ports: 16, S: 2, FIFODepth: 32, PacketBits: 256, ClockKHz: 150000}
	if sw.Build != want {
		t.Fatalf("build %+v, want the catalogue's %+v", sw.Build, want)
	}
	if err := sw.Command(ctx, tp.CmdClearCounters|tp.CmdClearQueues|tp.CmdClearBatch); err != nil {
		t.Fatal(err)
	}
	// Slots 2 and 9 to port 3 (9 with a high DEST bit the switch ignores):
	// queues 0 and 1 of group 3, in input order.
	if err := sw.WriteTag(ctx, 2, 0xA2); err != nil {
		t.Fatal(err)
	}
	if err := sw.WriteData(ctx, 9, []uint32{0xA9, 1, 2, 3, 4, 5, 6, 7}); err != nil {
		t.Fatal(err)
	}
	slots := make([]tp.Slot, 16)
	slots[2] = tp.Slot{Valid: true, Dest: 3}
	slots[9] = tp.Slot{Valid: true, Dest: 3 + 16}
	if err := sw.Load(ctx, slots); err != nil {
		t.Fatal(err)
	}
	st, err := sw.Release(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.LastPlaced != 2 || st.LastDropped != 0 || st.PipelineCycles() != 7 || st.BatchPending != 0 {
		t.Errorf("status %+v (pipeline %d cycles, Table 1: 7 for P=16, S=2)", st, st.PipelineCycles())
	}
	pl, err := sw.ReadPlacement(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := tp.DecodePlacement(pl[2]); got != (tp.Placement{Placed: true, Group: 3, Queue: 0}) {
		t.Errorf("slot 2: %s", got)
	}
	if got := tp.DecodePlacement(pl[9]); got != (tp.Placement{Placed: true, Group: 3, Queue: 1}) {
		t.Errorf("slot 9: %s", got)
	}
	s, err := sw.ReadState(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	if s.Offsets[3] != 2 || s.Arbiters[3] != 0 || s.Queues[3*16].Count != 1 || !s.Queues[3*16].Arb ||
		!s.Queues[3*16+2].Next || len(s.Tags[3*16+1]) != 1 || s.Tags[3*16+1][0] != 0xA9 || s.TagTail[3*16] != 0 {
		t.Errorf("state: offset %d arb %d qstat %+v %+v tags %v", s.Offsets[3], s.Arbiters[3], s.Queues[3*16], s.Queues[3*16+2], s.Tags[3*16+1])
	}
	e, err := sw.ReadEntry(ctx, 3, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !e.Valid || e.Src != 9 || e.Dest != 3 || e.PipelineCycles() != 7 || len(e.Data) != 8 || e.Data[0] != 0xA9 || e.Data[7] != 7 {
		t.Errorf("entry %+v", e)
	}
	if e, err := sw.ReadEntry(ctx, 3, 1, 40); err != nil || e.Valid || !e.OutOfRange {
		t.Errorf("entry past the depth: %+v %v", e, err)
	}
	if err := sw.Drain(ctx, 8); err != nil {
		t.Fatal(err)
	}
	eg, err := sw.ReadEgress(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(eg[3]) != 2 || eg[3][0] != 0xA2 || eg[3][1] != 0xA9 {
		t.Errorf("port 3 sent %x, want a2 a9 in arrival order", eg[3])
	}
	c, err := sw.ReadCounters(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c != (tp.Counters{In: 2, Enq: 2, Out: 2}) {
		t.Errorf("counters %+v", c)
	}
	if err := sw.Drain(ctx, 0); err == nil {
		t.Error("a drain of 0 cycles accepted")
	}
	if err := sw.Load(ctx, make([]tp.Slot, 17)); err == nil {
		t.Error("17 slots for 16 ports accepted")
	}
}

func TestTrafficGeneratorRun(t *testing.T) {
	sw, ctx := newRig(t, rigOpts{uart: true})
	c := tp.DefaultTG()
	c.Load, c.Cycles, c.Seed = tp.One/64, 4000, 3
	r, err := sw.RunTG(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status&tp.TGDone == 0 || r.Offered == 0 || r.Delivered != r.Offered || r.Dropped != 0 || r.Stranded != 0 {
		t.Fatalf("light load: %+v", r)
	}
	// Port to port at least latency_opt + 1 = 8 cycles (§5.2, P=16, S=2).
	if r.LatMin != 8 || r.LatSum-r.WaitSum != 8*r.Delivered {
		t.Errorf("latency min %d, latency - wait sum %d for %d packets", r.LatMin, r.LatSum-r.WaitSum, r.Delivered)
	}
	var hist uint64
	for _, h := range r.Hist {
		hist += uint64(h)
	}
	if hist != r.Delivered {
		t.Errorf("histogram holds %d packets, %d delivered", hist, r.Delivered)
	}
	if r.AvgLatency() < 8 || r.AvgWait() < 0 || r.DropRate() != 0 || r.Throughput(c, 16) <= 0 {
		t.Errorf("derived figures %g %g %g %g", r.AvgLatency(), r.AvgWait(), r.DropRate(), r.Throughput(c, 16))
	}
	bad := c
	bad.Model = 3
	if _, err := sw.RunTG(ctx, bad); err == nil || drivers.ClassOf(err) != drivers.ClassSetup {
		t.Errorf("model 3: %v", err)
	}
	bad = c
	bad.Warmup = bad.Cycles
	if _, err := sw.RunTG(ctx, bad); err == nil {
		t.Error("a warmup as long as the run accepted")
	}
}

// Every access runs under the caller's deadline: a run that waits for a
// busy switch gives up as an infrastructure error, not a verdict.
func TestDeadlinesAreHonoured(t *testing.T) {
	sw, ctx := newRig(t, rigOpts{uart: true})
	dctx, cancel := context.WithCancel(ctx)
	cancel()
	for name, f := range map[string]func() error{
		"placement": func() error { _, err := sw.ReadPlacement(dctx); return err },
		"release":   func() error { _, err := sw.Release(dctx); return err },
		"tg":        func() error { _, err := sw.RunTG(dctx, tp.DefaultTG()); return err },
	} {
		if err := f(); err == nil || !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a cancelled context: %v", name, err)
		}
	}
}

// Insert does in one batch what WriteTag, Load, Release and ReadPlacement
// do one by one: the same status, placements and state, over the UART
// bridge (with its window) and on the in-process bus.
func TestInsertDoesWhatTheCallsDo(t *testing.T) {
	one, ctx := newRig(t, rigOpts{uart: true})
	batched, _ := newRig(t, rigOpts{uart: true})
	plain, _ := newRig(t, rigOpts{})
	for _, sw := range []*tp.Switch{one, batched, plain} {
		if err := sw.Command(ctx, tp.CmdClearCounters|tp.CmdClearQueues|tp.CmdClearBatch); err != nil {
			t.Fatal(err)
		}
	}
	rng := rand.New(rand.NewPCG(3, 5))
	for k := range 40 {
		slots := make([]tp.Slot, 16)
		tags := make([]uint32, 16)
		for i := range slots {
			slots[i] = tp.Slot{Valid: rng.IntN(3) > 0, Dest: rng.IntN(16)}
			tags[i] = uint32(k<<8 | i)
		}
		for i, s := range slots {
			if s.Valid {
				if err := one.WriteTag(ctx, i, tags[i]); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := one.Load(ctx, slots); err != nil {
			t.Fatal(err)
		}
		st1, err := one.Release(ctx)
		if err != nil {
			t.Fatal(err)
		}
		pl1, err := one.ReadPlacement(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, sw := range []*tp.Switch{batched, plain} {
			st2, pl2, err := sw.Insert(ctx, slots, tags)
			if err != nil {
				t.Fatal(err)
			}
			if st2 != st1 || !slices.Equal(pl1, pl2) {
				t.Fatalf("batch %d: one by one %+v %x, in one batch %+v %x", k, st1, pl1, st2, pl2)
			}
		}
	}
	s1, err := one.ReadState(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := batched.ReadState(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s1.Offsets, s2.Offsets) || !slices.Equal(s1.Queues, s2.Queues) || fmt.Sprint(s1.Tags) != fmt.Sprint(s2.Tags) {
		t.Fatal("the states differ after the same batches")
	}
	// ReadStateFilled reads the same entries, and past the fill levels
	// only the queues it is asked for (and what a merged burst crosses).
	queues := 16 * 16
	for _, full := range []func(int) bool{nil, func(i int) bool { return i >= 64 && i < 96 }, func(int) bool { return true }} {
		s3, err := batched.ReadStateFilled(ctx, full)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(s1.Offsets, s3.Offsets) || !slices.Equal(s1.Arbiters, s3.Arbiters) || !slices.Equal(s1.Queues, s3.Queues) || fmt.Sprint(s1.Tags) != fmt.Sprint(s3.Tags) {
			t.Fatal("ReadStateFilled and ReadState differ")
		}
		tail := 0
		for i := range queues {
			if s3.TagTail[i] != 0 {
				t.Errorf("queue %d: %d words past the fill level read non-zero", i, s3.TagTail[i])
			}
			if all := 32 - s3.Queues[i].Count; full != nil && full(i) && s3.TailRead[i] != all {
				t.Errorf("queue %d asked for in full: %d words past its fill level read, want %d", i, s3.TailRead[i], all)
			}
			tail += s3.TailRead[i]
		}
		if full == nil && tail > 4*queues {
			t.Errorf("%d words past the fill levels read when none was asked for: more than the bursts' merging accounts for", tail)
		}
	}
	// DrainEgress pops what Drain and ReadEgress do.
	for _, cycles := range []int{5, 1024} {
		if err := one.Drain(ctx, cycles); err != nil {
			t.Fatal(err)
		}
		e1, err := one.ReadEgress(ctx)
		if err != nil {
			t.Fatal(err)
		}
		e2, err := batched.DrainEgress(ctx, cycles)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(e1) != fmt.Sprint(e2) {
			t.Fatalf("drain of %d cycles: Drain and ReadEgress popped %v, DrainEgress %v", cycles, e1, e2)
		}
	}
	if _, err := batched.DrainEgress(ctx, 0); err == nil {
		t.Error("a drain of 0 cycles accepted")
	}
	if _, _, err := batched.Insert(ctx, make([]tp.Slot, 17), make([]uint32, 17)); err == nil {
		t.Error("17 slots for 16 ports accepted")
	}
}

// staleTags is a bus whose QTAGS window shows a word past a queue's fill
// level that is not 0: what a read-back with broken masking, or a
// CLEAR_QUEUES that leaves the stored tags readable, would show.
type staleTags struct {
	drivers.RegisterBus
	addr uint64 // the word that reads stale
}

func (s staleTags) ReadBurst(ctx context.Context, addr uint64, dst []uint32) error {
	if err := s.RegisterBus.ReadBurst(ctx, addr, dst); err != nil {
		return err
	}
	if s.addr >= addr && s.addr < addr+4*uint64(len(dst)) {
		dst[(s.addr-addr)/4] = 0xDEAD
	}
	return nil
}

// A stale word past a fill level is seen by ReadState and by
// ReadStateFilled when its queue is one asked for in full.
func TestStaleTagsAreSeen(t *testing.T) {
	const queue = 5*16 + 3 // empty after the reset
	m := manifest(t)
	r := regmap.New(nil, m, "")
	qt, err := r.Lookup("QTAGS")
	if err != nil {
		t.Fatal(err)
	}
	stale := qt.Addr + 4*(queue*32+7)
	sw, ctx := newRig(t, rigOpts{wrap: func(b drivers.RegisterBus) drivers.RegisterBus { return staleTags{b, stale} }})
	if err := sw.Command(ctx, tp.CmdClearQueues); err != nil {
		t.Fatal(err)
	}
	s, err := sw.ReadState(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	if s.TagTail[queue] != 1 || s.TailRead[queue] != 32 {
		t.Errorf("ReadState: %d stale words of %d read past the fill level, want 1 of 32", s.TagTail[queue], s.TailRead[queue])
	}
	s, err = sw.ReadStateFilled(ctx, func(i int) bool { return i == queue })
	if err != nil {
		t.Fatal(err)
	}
	if s.TagTail[queue] != 1 || s.TailRead[queue] != 32 {
		t.Errorf("ReadStateFilled with the queue in full: %d stale words of %d read past the fill level, want 1 of 32", s.TagTail[queue], s.TailRead[queue])
	}
	s, err = sw.ReadStateFilled(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.TailRead[queue] != 0 {
		t.Errorf("ReadStateFilled of an empty switch read %d words of queue %d", s.TailRead[queue], queue)
	}
}

// InsertMany releases several batches in one batch of accesses and reads
// what Insert reads for each, one after another.
func TestInsertManyDoesWhatInsertDoes(t *testing.T) {
	one, ctx := newRig(t, rigOpts{uart: true})
	many, _ := newRig(t, rigOpts{uart: true})
	for _, sw := range []*tp.Switch{one, many} {
		if err := sw.Command(ctx, tp.CmdClearCounters|tp.CmdClearQueues|tp.CmdClearBatch); err != nil {
			t.Fatal(err)
		}
	}
	rng := rand.New(rand.NewPCG(4, 6))
	for g := range 8 {
		var slots [][]tp.Slot
		var tags [][]uint32
		for k := range 5 {
			sl, tg := make([]tp.Slot, 16), make([]uint32, 16)
			for i := range sl {
				sl[i] = tp.Slot{Valid: rng.IntN(2) > 0, Dest: rng.IntN(4)}
				tg[i] = uint32((5*g+k+1)<<8 | i)
			}
			slots, tags = append(slots, sl), append(tags, tg)
		}
		sts, pls, err := many.InsertMany(ctx, slots, tags)
		if err != nil {
			t.Fatal(err)
		}
		for k := range slots {
			st, pl, err := one.Insert(ctx, slots[k], tags[k])
			if err != nil {
				t.Fatal(err)
			}
			if st != sts[k] || !slices.Equal(pl, pls[k]) {
				t.Fatalf("group %d batch %d: Insert %+v %x, InsertMany %+v %x", g, k, st, pl, sts[k], pls[k])
			}
		}
	}
	if _, _, err := many.InsertMany(ctx, make([][]tp.Slot, 2), make([][]uint32, 1)); err == nil {
		t.Error("two batches with one list of tags accepted")
	}
}

// busyOnce is a bus whose STATUS reads BUSY once, at the first read after
// the n-th write of CTRL.RELEASE: hardware still running a release.
type busyOnce struct {
	drivers.RegisterBus
	ctrl, status uint64
	n            int
	releases     *int
	shown        *bool
}

func (b busyOnce) Write32(ctx context.Context, addr uint64, v uint32) error {
	if addr == b.ctrl && v == tp.CmdRelease {
		*b.releases++
	}
	return b.RegisterBus.Write32(ctx, addr, v)
}

func (b busyOnce) ReadBurst(ctx context.Context, addr uint64, dst []uint32) error {
	err := b.RegisterBus.ReadBurst(ctx, addr, dst)
	if err == nil && addr == b.status && *b.releases == b.n && !*b.shown {
		*b.shown = true
		dst[0] |= tp.StatusBusy
	}
	return err
}

// A BUSY status behind a release inside a group is a BusyError naming that
// batch; behind the last one it is waited out, as Insert does.
func TestInsertManyBusy(t *testing.T) {
	r := regmap.New(nil, manifest(t), "")
	ctrl, err := r.Lookup("CTRL")
	if err != nil {
		t.Fatal(err)
	}
	status, err := r.Lookup("STATUS")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{2, 3} {
		releases, shown := 0, false
		sw, ctx := newRig(t, rigOpts{wrap: func(b drivers.RegisterBus) drivers.RegisterBus {
			return busyOnce{RegisterBus: b, ctrl: ctrl.Addr, status: status.Addr, n: n, releases: &releases, shown: &shown}
		}})
		slots := make([][]tp.Slot, 3)
		tags := make([][]uint32, 3)
		for k := range slots {
			slots[k], tags[k] = make([]tp.Slot, 16), make([]uint32, 16)
			slots[k][k] = tp.Slot{Valid: true, Dest: 1}
			tags[k][k] = uint32(k + 1)
		}
		sts, pls, err := sw.InsertMany(ctx, slots, tags)
		var be *tp.BusyError
		switch {
		case !shown:
			t.Fatalf("release %d: the bus never showed BUSY", n)
		case n < 3 && (!errors.As(err, &be) || be.Batch != n-1):
			t.Errorf("BUSY behind release %d of 3: %v, want a BusyError for batch %d", n, err, n-1)
		case n < 3 && (len(pls) != 3 || tp.DecodePlacement(pls[0][0]) != (tp.Placement{Placed: true, Group: 1, Queue: 0})):
			t.Errorf("BUSY behind release %d of 3: the placements before it were not returned: %x", n, pls)
		case n == 3 && (err != nil || sts[2].Word&tp.StatusBusy != 0 || tp.DecodePlacement(pls[2][2]) != (tp.Placement{Placed: true, Group: 1, Queue: 2})):
			t.Errorf("BUSY behind the last release: %v, status %+v, placements %x", err, sts, pls)
		}
	}
}
