package tin_test

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/drivers"
	gor "github.com/labrunner/labrunner/golden/ordering"
	"github.com/labrunner/labrunner/labconfig"
	tt "github.com/labrunner/labrunner/traffic/tin"
)

// Configure brings the documented Clique up through registers alone: every
// cabled cage trains with its role and learns its peer.
func TestConfigureBringsTheCliqueUp(t *testing.T) {
	g := newRig(t)
	for _, b := range g.topo.Boards {
		if cs, err := g.rack.Read(g.ctx, b, "CONFIG_STATUS"); err != nil || cs != 0 {
			t.Errorf("%s: CONFIG_STATUS %#x (%v)", b, cs, err)
		}
		for k, p := range g.topo.Ports[b] {
			ps, err := g.rack.Port(g.ctx, b, k)
			if err != nil {
				t.Fatal(err)
			}
			if !ps.Up || ps.Role != p.Role || ps.Peer != g.topo.Node[p.Peer].Addr() || ps.CreditInit != 1280 || len(ps.Short()) != 0 {
				t.Errorf("%s:sfp%d: %+v, want up as %s to %s with 1280 credits on every VC", b, k, ps, p.Role, p.Peer)
			}
		}
	}
	tm, err := g.rack.ReadTiming(g.ctx, "tin-p0b0")
	if err != nil || tm.LinkMbps != 25000 || tm.InjectMbps != 100000 || tm.DataPayload != 152 { // §6: 8 B header per 160 B cell, no tag
		t.Errorf("timing %+v (%v)", tm, err)
	}
}

// A run split into many CONTINUE writes ends exactly as one in a few
// (docs/tin.md: "splitting changes nothing").
func TestRunSplitByContinueIsTheSameRun(t *testing.T) {
	run := func(target time.Duration) (tt.RunResult, []float64) {
		g := newRig(t)
		g.rack.WriteTarget = target
		if target < time.Millisecond {
			g.rack.Budget = 1
		}
		g.load(tt.UniformRandom{Load: 0.2, Bytes: 1500, Count: 40, Reply: true, ReplyBytes: 64, Seed: 2}.Writes(g.topo, 100000))
		rr := g.run()
		s, err := g.rack.AllSamples(g.ctx, tt.LatIP)
		if err != nil {
			t.Fatal(err)
		}
		return rr, s
	}
	few, a := run(time.Second)
	many, b := run(time.Nanosecond)
	if many.Writes <= few.Writes || many.Writes < 3 {
		t.Errorf("%d and %d writes: the budget did not shrink", few.Writes, many.Writes)
	}
	if len(a) != 320 || !reflect.DeepEqual(a, b) || few.ElapsedUS != many.ElapsedUS {
		t.Errorf("%d samples in %d µs in %d writes, %d in %d µs in %d writes: splitting changed the run",
			len(a), few.ElapsedUS, few.Writes, len(b), many.ElapsedUS, many.Writes)
	}
}

// lateStatus is a bus on which TG_STATUS reads 0 (running) the first
// reads after each TG_CTRL write, as on hardware whose run write returns
// at once and whose run then takes a while.
type lateStatus struct {
	drivers.RegisterBus
	ctrl, status uint64
	zeros        int
	left         *int
}

func (l lateStatus) Write32(ctx context.Context, addr uint64, v uint32) error {
	if addr == l.ctrl {
		*l.left = l.zeros
	}
	return l.RegisterBus.Write32(ctx, addr, v)
}

func (l lateStatus) Read32(ctx context.Context, addr uint64) (uint32, error) {
	if addr == l.status && *l.left > 0 {
		*l.left--
		return 0, nil
	}
	return l.RegisterBus.Read32(ctx, addr)
}

// Run reads TG_STATUS with its run write; when the status still reads 0
// it polls until the slice ended, and the run comes out as it does where
// the write returns at the end.
func TestRunWaitsForAStatus(t *testing.T) {
	run := func(zeros int) tt.RunResult {
		left := 0
		g := newWrappedRig(t, func(b string, bus drivers.RegisterBus) drivers.RegisterBus {
			if b != boardName(0, 0) {
				return bus
			}
			return lateStatus{RegisterBus: bus, ctrl: 0x0C0, status: 0x0C4, zeros: zeros, left: &left}
		})
		g.load(tt.UniformRandom{Load: 0.2, Bytes: 1500, Count: 10, Seed: 3}.Writes(g.topo, 100000))
		rr := g.run()
		if left != 0 {
			t.Errorf("%d of %d zero statuses not read: the run did not poll TG_STATUS", left, zeros)
		}
		return rr
	}
	a, b := run(0), run(3)
	if a.Status != b.Status || a.ElapsedUS != b.ElapsedUS || a.Writes != b.Writes || a.KEvents != b.KEvents {
		t.Errorf("at once: %s in %d writes, %d kevents; after 3 polls: %s in %d writes, %d kevents",
			a.Describe(), a.Writes, a.KEvents, b.Describe(), b.Writes, b.KEvents)
	}
}

// Every traced cell of uniform-random traffic stitches into a complete
// path, and every packet gathers its RTS, CTS and data cells.
func TestTracedTrafficStitches(t *testing.T) {
	g := newRig(t)
	if err := g.rack.WriteAll(g.ctx, "TRACE_CTRL", tt.TraceIP); err != nil {
		t.Fatal(err)
	}
	g.load(tt.UniformRandom{Load: 0.05, Bytes: 600, Count: 6, Seed: 4}.Writes(g.topo, 100000))
	g.run()
	recs, err := g.rack.AllTraces(g.ctx)
	if err != nil {
		t.Fatal(err)
	}
	paths := tt.Stitch(g.topo, recs)
	for _, p := range paths {
		if !p.Complete {
			t.Errorf("%s %s -> %s: %v", p.ID.Type, p.ID.Src, p.ID.Dst, p.Problems)
		}
	}
	pk := tt.Packets(paths)
	if len(pk) != 48 {
		t.Fatalf("%d packets stitched, 48 sent", len(pk))
	}
	for _, p := range pk {
		// 600 B in full cells of 152 B (§6: an 8 B header per 160 B cell): 4.
		if p.CTS == nil || len(p.Data) != 4 || p.Length != 600 {
			t.Errorf("packet %s -> %s: CTS %v, %d data cells, length %d", p.Src, p.Dst, p.CTS != nil, len(p.Data), p.Length)
		}
	}
}

// Ordered streams under loss: the logs decode, every execution belongs to
// a recorded stream, and golden/ordering's CheckLog finds nothing wrong.
func TestStreamLogsDecode(t *testing.T) {
	g := newRig(t)
	target, srcs := "tin-p1b3", []string{"tin-p0b0", "tin-p0b3"}
	if err := g.rack.Load(g.ctx, map[string]tt.Writes{target: {tt.Set("ORD_LOSS_REQ_PPM", 30000)}}); err != nil {
		t.Fatal(err)
	}
	ws, lens, err := tt.Streams{Target: target, Sources: srcs, PerSource: 3, Lengths: []int{12}, Bytes: 32, Concurrent: 1, EOD: true, Seed: 1}.Writes(g.topo)
	g.load(ws, err)
	g.run()
	idx := map[[2]int]int{}
	var streams []gor.Stream
	for i, s := range srcs {
		recs, err := g.rack.Streams(g.ctx, s)
		if err != nil || len(recs) != 3 {
			t.Fatalf("%s: %d stream records (%v)", s, len(recs), err)
		}
		for _, r := range recs {
			if r.Len != lens[s] || r.ClosedNS == 0 || r.Dst != g.topo.Node[target].Addr() {
				t.Errorf("%s: record %+v", s, r)
			}
			idx[[2]int{g.topo.Node[s].Index(), int(r.Tag)}] = len(streams)
			streams = append(streams, gor.Stream{Src: i, Mode: gor.Fast, N: r.Len, EOD: true})
		}
	}
	ex, err := g.rack.Executions(g.ctx, target)
	if err != nil {
		t.Fatal(err)
	}
	var execs []gor.Exec
	for _, e := range ex {
		i, ok := idx[[2]int{e.Src.Node().Index(), int(e.Tag)}]
		if !ok {
			t.Fatalf("execution of unknown stream %+v", e)
		}
		execs = append(execs, gor.Exec{Stream: i, Seq: e.Seq})
	}
	complete := make([]bool, len(streams))
	for i := range complete {
		complete[i] = true
	}
	if bad := gor.CheckLog(streams, execs, complete); len(bad) > 0 {
		t.Errorf("delivery log: %v", bad)
	}
	if lost := g.sum("ORD_DROPPED_REQ"); lost == 0 {
		t.Error("the loss knob dropped nothing")
	}
}

// A credit leak shows as credits short at rest on the cage facing the
// faulty receiver, and nowhere else.
func TestCreditLeakShowsAtRest(t *testing.T) {
	g := newRig(t, labconfig.Fault{Name: "tin-credit-leak", Link: "tin-p0b1:sfp0", Params: labconfig.Params{"count": {Values: []string{"3"}}}})
	g.load(tt.UniformRandom{Load: 0.1, Bytes: 1500, Count: 30, Seed: 3}.Writes(g.topo, 100000))
	g.run()
	short := map[string][]string{}
	for _, b := range g.topo.Boards {
		for k, p := range g.topo.Ports[b] {
			if p.Peer == "" {
				continue
			}
			ps, err := g.rack.Port(g.ctx, b, k)
			if err != nil {
				t.Fatal(err)
			}
			if s := ps.Short(); len(s) > 0 {
				short[tt.Cage{Board: b, Index: k}.String()] = s
			}
		}
	}
	if len(short) != 1 || short["tin-p0b2:sfp2"] == nil {
		t.Errorf("cages short of credit: %v, want only tin-p0b2:sfp2 (cabled to the leaking tin-p0b1:sfp0)", short)
	}
}

// countingBus counts a bus's single-word reads and read bursts (and is no
// Batcher, so a batch reaches it access by access).
type countingBus struct {
	drivers.RegisterBus
	reads, bursts *int
}

func (c countingBus) Read32(ctx context.Context, addr uint64) (uint32, error) {
	*c.reads++
	return c.RegisterBus.Read32(ctx, addr)
}

func (c countingBus) ReadBurst(ctx context.Context, addr uint64, dst []uint32) error {
	*c.bursts++
	return c.RegisterBus.ReadBurst(ctx, addr, dst)
}

// withoutLogsWindow is a manifest of version 1.1 of the design: the FIFOs
// only behind their _DATA registers.
func withoutLogsWindow(m *bitstreams.Manifest) *bitstreams.Manifest {
	old := *m
	old.Registers = nil
	for _, r := range m.Registers {
		if !strings.HasSuffix(r.Name, "_FIFO") {
			old.Registers = append(old.Registers, r)
		}
	}
	old.Windows = nil
	for _, w := range m.Windows {
		if w.Name != "logs" {
			old.Windows = append(old.Windows, w)
		}
	}
	return &old
}

// The latency samples pop in bursts through the logs window: a request per
// 256 words, not one per word; a build without the window (1.1) is read
// word by word, and both give the same samples.
func TestLogsPopInBursts(t *testing.T) {
	run := func(old bool) (samples []float64, reads, bursts int) {
		var build func(*bitstreams.Manifest) *bitstreams.Manifest
		if old {
			build = withoutLogsWindow
		}
		g := newBuildRig(t, func(b string, bus drivers.RegisterBus) drivers.RegisterBus {
			c := countingBus{RegisterBus: bus, reads: new(int), bursts: new(int)}
			if b == boardName(1, 2) {
				c.reads, c.bursts = &reads, &bursts
			}
			return c
		}, build)
		g.load(tt.UniformRandom{Load: 0.2, Bytes: 1500, Count: 40, Reply: true, ReplyBytes: 64, Seed: 2}.Writes(g.topo, 100000))
		g.run()
		reads, bursts = 0, 0
		s, err := g.rack.Samples(g.ctx, boardName(1, 2), tt.LatIP)
		if err != nil {
			t.Fatal(err)
		}
		return s, reads, bursts
	}
	s, reads, bursts := run(false)
	if len(s) < 20 {
		t.Fatalf("%d samples on the board: too few to tell bursts from words", len(s))
	}
	if bursts != (len(s)+255)/256 || reads != 1 {
		t.Errorf("%d samples popped in %d bursts and %d single reads (the count), want %d bursts and 1 read", len(s), bursts, reads, (len(s)+255)/256)
	}
	s11, reads11, bursts11 := run(true)
	if bursts11 != 0 || reads11 != len(s11)+1 {
		t.Errorf("1.1 build: %d samples popped in %d bursts and %d single reads, want none and %d", len(s11), bursts11, reads11, len(s11)+1)
	}
	if !reflect.DeepEqual(s, s11) {
		t.Errorf("the window and the _DATA register give different samples: %v and %v", s, s11)
	}
}
