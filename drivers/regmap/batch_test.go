package regmap

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/labrunner/labrunner/drivers"
)

// batchBus is fakeBus with a Batch method, recording what it was handed.
type batchBus struct {
	*fakeBus
	batches [][]drivers.Access
	failAt  int // the access index to fail (-1: none)
}

func (b *batchBus) Batch(ctx context.Context, acc []drivers.Access) error {
	b.batches = append(b.batches, acc)
	for i, a := range acc {
		if i == b.failAt {
			return &drivers.BatchError{Index: i, Err: drivers.Design("b0", "x", "", errors.New("refused"))}
		}
		var err error
		switch {
		case a.Write:
			err = b.WriteBurst(ctx, a.Addr, a.Words)
		default:
			err = b.ReadBurst(ctx, a.Addr, a.Words)
		}
		if err != nil {
			return &drivers.BatchError{Index: i, Err: err}
		}
	}
	return nil
}

// A batch does what the single calls would, in order, through the bus's
// Batch when it has one and one access at a time when it has not; the
// values read come back masked as Read gives them.
func TestBatchRunsInOrder(t *testing.T) {
	for _, batcher := range []bool{false, true} {
		fb := newFakeBus()
		var bus drivers.RegisterBus = fb
		bb := &batchBus{fakeBus: fb, failAt: -1}
		if batcher {
			bus = bb
		}
		r := New(bus, testManifest(), "b0")
		fb.mem[0] = 0x70
		fb.mem[8] = 0xFFFF_F5A5 // CTRL is 12 bits wide
		fb.fifo[0x400] = []uint32{1, 2, 3}
		var id, ctrl, mode uint32
		var t64 uint64
		fb.mem[0x18], fb.mem[0x1C] = 0x89ABCDEF, 0x1234567
		pops := make([]uint32, 3)
		b := r.Batch().Read("ID", &id).Write("SCRATCH", 9).Read("CTRL", &ctrl).Read("CTRL.MODE", &mode).Read64("T_LO", &t64).
			ReadAddr(0x400, pops[0:]).ReadAddr(0x400, pops[1:]).ReadAddr(0x400, pops[2:]).
			WriteBurst(0x28, []uint32{4, 5}).WriteAddr(0x80, 6)
		if b.Len() != 11 {
			t.Fatalf("%d accesses", b.Len())
		}
		if err := b.Run(ctx(t)); err != nil {
			t.Fatal(err)
		}
		if id != 0x70 || ctrl != 0x5A5 || mode != 2 || !slices.Equal(pops, []uint32{1, 2, 3}) || t64 != 0x1234567_89ABCDEF {
			t.Errorf("batcher %v: ID 0x%x CTRL 0x%x MODE %d pops %v T 0x%x", batcher, id, ctrl, mode, pops, t64)
		}
		if fb.mem[4] != 9 || fb.mem[0x28] != 4 || fb.mem[0x2C] != 5 || fb.mem[0x80] != 6 {
			t.Errorf("batcher %v: writes %v", batcher, fb.mem)
		}
		if batcher && len(bb.batches) != 1 {
			t.Errorf("%d batches handed to the bus, want 1", len(bb.batches))
		}
		if err := b.Run(ctx(t)); err == nil {
			t.Error("a batch ran twice")
		}
	}
}

// Bad accesses are refused when added, and nothing runs; a failure of the
// bus names the access as the single call would.
func TestBatchErrors(t *testing.T) {
	fb := newFakeBus()
	bb := &batchBus{fakeBus: fb, failAt: -1}
	r := New(bb, testManifest(), "b0")
	var v uint32
	for _, b := range []*Batch{
		r.Batch().Write("SCRATCH", 1).Write("ID", 2),
		r.Batch().Read("CMD", &v),
		r.Batch().Write("CTRL", 0x1000),
		r.Batch().Write("CTRL.MODE", 1),
		r.Batch().Read("NOPE", &v),
		r.Batch().Read64("ID", new(uint64)),
		r.Batch().ReadAddr(0x300, []uint32{0}),
		r.Batch().WriteBurst(0x100, []uint32{1}),
	} {
		if err := b.Run(ctx(t)); err == nil || drivers.ClassOf(err) != drivers.ClassSetup {
			t.Errorf("refused access: %v", err)
		}
	}
	if len(bb.batches) != 0 || len(fb.writes) != 0 {
		t.Fatalf("a refused batch ran: %d batches, writes %v", len(bb.batches), fb.writes)
	}
	bb.failAt = 1
	err := r.Batch().Write("SCRATCH", 1).Read("ID", &v).Run(ctx(t))
	var be *drivers.BatchError
	if err == nil || !strings.HasPrefix(err.Error(), "read ID at 0x0: ") || !strings.HasSuffix(err.Error(), "refused") || drivers.ClassOf(err) != drivers.ClassDesign ||
		!errors.As(err, &be) || be.Index != 1 {
		t.Fatalf("failure of the second access: %v", err)
	}
}
