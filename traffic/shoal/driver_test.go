package shoal_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/labrunner/labrunner/drivers"
	ts "github.com/labrunner/labrunner/traffic/shoal"
)

func TestBringUpSyncAndIncast(t *testing.T) {
	g := newRig(t, docCables())
	s, _ := ts.Cyclic(8)
	if err := g.rack.Configure(g.ctx, ts.Setup{SlotCycles: 12, GuardCycles: 1, Schedule: s}); err != nil {
		t.Fatal(err)
	}
	rep, err := g.rack.Sync(g.ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	// §6.2: 40 ns of wire + 3 x 320 ns of switches + 576 ns of MAC and PHY.
	if rep.OneWayPS != 1_576_000 {
		t.Errorf("one-way delay %d ps, want 1576000 (§6.2)", rep.OneWayPS)
	}
	if err := g.rack.Boot(g.ctx); err != nil {
		t.Fatal(err)
	}
	_, payload, err := g.rack.Cell(g.ctx)
	if err != nil || payload != 56 {
		t.Fatalf("payload %d (%v), want 56", payload, err)
	}
	senders, _ := ts.IncastSenders(8, 0, 7)
	flows, err := ts.Incast(8, 0, senders, 7*int64(payload))
	if err != nil {
		t.Fatal(err)
	}
	if err := g.rack.ClearCounters(g.ctx); err != nil {
		t.Fatal(err)
	}
	if err := g.rack.LoadFlows(g.ctx, flows); err != nil {
		t.Fatal(err)
	}
	st, err := g.rack.Traffic(g.ctx, true, 100_000)
	if err != nil || !st.Done || st.FlowsDone != 7 || st.FlowsTotal != 7 {
		t.Fatalf("incast run: %v (%v)", st, err)
	}
	recs, err := g.rack.Records(g.ctx, 0)
	if err != nil || len(recs) != 7 {
		t.Fatalf("%d records (%v), want 7", len(recs), err)
	}
	for _, r := range recs {
		// Fig. 10: FCTs between 6.05 and 6.9 us; allow a wide margin here,
		// the plan scores the figure against golden/shoal.
		if fct := r.FCTNS(); fct < 4000 || fct > 9000 || r.Dst != 0 || r.Bytes != 392 {
			t.Errorf("record %+v: FCT %d ns", r, fct)
		}
	}
	if more, err := g.rack.Records(g.ctx, 0); err != nil || len(more) != 0 {
		t.Errorf("records popped twice: %d (%v)", len(more), err)
	}
}

// A run split into many writes is the same run as one write (docs/shoal.md:
// CONTINUE), so the driver's chunking must not change what is measured.
func TestChunkedRunIsTheSameRun(t *testing.T) {
	measure := func(maxChunk int64) (uint32, int64) {
		g := newRig(t, docCables())
		g.up(12)
		g.rack.MaxChunk = maxChunk
		flows, err := ts.Permutation(8, 1<<30, 3)
		if err != nil {
			t.Fatal(err)
		}
		if err := g.rack.LoadFlows(g.ctx, flows); err != nil {
			t.Fatal(err)
		}
		st, err := g.rack.Traffic(g.ctx, true, 5000)
		if err != nil || st.Slots != 5000 || !st.Limit {
			t.Fatalf("run: %v (%v)", st, err)
		}
		nic, err := g.rack.ReadNIC(g.ctx, 3)
		if err != nil {
			t.Fatal(err)
		}
		return nic.C["RX_DELIVERED_CELLS"], int64(st.Writes)
	}
	one, w1 := measure(1 << 18)
	many, wn := measure(333)
	if one != many || one == 0 {
		t.Errorf("delivered %d in %d writes, %d in %d writes of at most 333 slots", one, w1, many, wn)
	}
	if wn < 15 {
		t.Errorf("%d writes for 5000 slots in chunks of 333", wn)
	}
}

// On a rack cabled differently from docs/shoal.md the driver writes the
// words the cabling needs: the emulated switches then carry exactly the
// cyclic schedule, the sync measures the same one-way delay and traffic
// flows.
func TestCrossedCablingCarriesTheSchedule(t *testing.T) {
	g := newRig(t, crossedCables())
	g.up(12)
	f := g.rack.Fabric
	s, _ := ts.Cyclic(8)
	if err := g.rack.RunSlots(g.ctx, int64(3*s.Epoch())); err != nil {
		t.Fatal(err)
	}
	for slot := 0; slot < s.Epoch(); slot++ {
		var cfg [][]int
		for _, b := range f.Switches() {
			tr, err := g.rack.SwitchSchedule(g.ctx, b, "sw_trace", s.Epoch())
			if err != nil {
				t.Fatal(err)
			}
			l, err := f.Logical(b, tr[slot])
			if err != nil {
				t.Fatal(err)
			}
			cfg = append(cfg, l)
		}
		dst, problem := f.Compose(cfg)
		if got := ts.MappingText(dst); got != s.Mapping(slot) || problem != "" {
			t.Errorf("slot %d: the switches carry %s (%s), the schedule is %s", slot, got, problem, s.Mapping(slot))
		}
	}
	flows, _ := ts.Permutation(8, 56*300, 5)
	if err := g.rack.LoadFlows(g.ctx, flows); err != nil {
		t.Fatal(err)
	}
	st, err := g.rack.Traffic(g.ctx, true, 500_000)
	if err != nil || !st.Done {
		t.Fatalf("permutation on the crossed rack: %v (%v)", st, err)
	}
	nics, err := g.rack.ReadNICs(g.ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nics {
		if n.C["RX_MISROUTED_CELLS"] != 0 || n.C["FAILED_SLOTS"] != 0 || n.C["RX_CORRUPT_CELLS"] != 0 {
			t.Errorf("node %d: misrouted %d, failed slots %d, corrupt %d", n.Node, n.C["RX_MISROUTED_CELLS"], n.C["FAILED_SLOTS"], n.C["RX_CORRUPT_CELLS"])
		}
	}
}

func TestTrafficBeforeTheBootstrapIsRefused(t *testing.T) {
	g := newRig(t, docCables())
	g.up(12)
	if err := g.rack.Stop(g.ctx); err != nil {
		t.Fatal(err)
	}
	flows, _ := ts.Incast(8, 0, []int{1}, 56)
	if err := g.rack.LoadFlows(g.ctx, flows); err != nil {
		t.Fatal(err)
	}
	if st, err := g.rack.Traffic(g.ctx, true, 1000); err == nil || !st.NotRunning {
		t.Errorf("traffic on a stopped fabric: %v (%v)", st, err)
	}
	if err := g.rack.RunSlots(g.ctx, 10); err == nil {
		t.Error("RUN_SLOTS on a stopped fabric succeeded")
	}
}

// A disabled NIC is a failed node to the others (§3.5): they infer it failed
// and stop sending to it.
func TestDisabledNodeIsInferredFailed(t *testing.T) {
	g := newRig(t, docCables())
	g.up(12)
	if err := g.rack.Stop(g.ctx); err != nil {
		t.Fatal(err)
	}
	if err := g.rack.Enable(g.ctx, 6, false); err != nil {
		t.Fatal(err)
	}
	if err := g.rack.Boot(g.ctx); err != nil {
		t.Fatal(err)
	}
	if err := g.rack.RunSlots(g.ctx, 700); err != nil {
		t.Fatal(err)
	}
	for node := 0; node < 8; node++ {
		if node == 6 {
			continue
		}
		n, err := g.rack.ReadNIC(g.ctx, node)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(n.Failed()) != "[6]" || !n.AnyFailed() {
			t.Errorf("node %d inferred %v failed", node, n.Failed())
		}
	}
}

func TestSetSlotChangesTheCell(t *testing.T) {
	g := newRig(t, docCables())
	g.up(12)
	if err := g.rack.SetSlot(g.ctx, 24, 1); err != nil {
		t.Fatal(err)
	}
	// §6.1: (slot - guard - 3 MAC cycles) x 8 B.
	cell, payload, err := g.rack.Cell(g.ctx)
	if err != nil || cell != 160 || payload != 152 {
		t.Errorf("cell %d, payload %d (%v) at 24 cycles, want 160 and 152", cell, payload, err)
	}
}

// flippedBurst is a bus whose write bursts lose bit 0 of their last word on
// the way (a flaky register bus).
type flippedBurst struct{ drivers.RegisterBus }

func (f flippedBurst) WriteBurst(ctx context.Context, addr uint64, src []uint32) error {
	w := append([]uint32(nil), src...)
	w[len(w)-1] ^= 1
	return f.RegisterBus.WriteBurst(ctx, addr, w)
}

// A schedule memory that does not read back what was written stops the
// configuration with an infrastructure error naming the memory and slot.
func TestScheduleReadBackCatchesALostWrite(t *testing.T) {
	for _, c := range []struct{ board, op string }{{nicBoards[0], "load NIC schedule"}, {swBoards[0], "load switch schedule"}} {
		g := newWrappedRig(t, docCables(), func(b string, bus drivers.RegisterBus) drivers.RegisterBus {
			if b == c.board {
				return flippedBurst{bus}
			}
			return bus
		})
		s, err := ts.Cyclic(g.rack.Fabric.N())
		if err != nil {
			t.Fatal(err)
		}
		err = g.rack.Configure(g.ctx, ts.Setup{SlotCycles: 96, GuardCycles: 1, Schedule: s})
		if err == nil || drivers.ClassOf(err) != drivers.ClassInfra || !strings.Contains(err.Error(), c.op) ||
			!strings.Contains(err.Error(), "read back") || !strings.Contains(err.Error(), c.board) {
			t.Errorf("%s: a flipped schedule word gave %v (class %v), want an infrastructure error of %q", c.board, err, drivers.ClassOf(err), c.op)
		}
	}
}
