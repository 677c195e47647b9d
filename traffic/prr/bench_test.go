package prr_test

import (
	"testing"

	tp "github.com/labrunner/labrunner/traffic/prr"
)

// One batch of eight packets as the placement test sends it: a tag and a
// BATCH_CTRL write per packet, the release with its status burst, and the
// PLACEMENT burst, over the UART bridge on a pseudo-terminal (the default
// lab's bus) and over the in-process bus.
func benchBatch(b *testing.B, uart bool) {
	sw, ctx := newRig(b, rigOpts{uart: uart})
	if err := sw.Command(ctx, tp.CmdClearQueues|tp.CmdClearBatch); err != nil {
		b.Fatal(err)
	}
	slots := make([]tp.Slot, sw.Build.Ports)
	for i := 0; i < len(slots); i += 2 {
		slots[i] = tp.Slot{Valid: true, Dest: i}
	}
	k := 0
	for b.Loop() {
		if k%32 == 31 { // keep the queues from filling
			if err := sw.Command(ctx, tp.CmdClearQueues); err != nil {
				b.Fatal(err)
			}
		}
		k++
		for i, s := range slots {
			if s.Valid {
				if err := sw.WriteTag(ctx, i, uint32(k<<8|i)); err != nil {
					b.Fatal(err)
				}
			}
		}
		if err := sw.Load(ctx, slots); err != nil {
			b.Fatal(err)
		}
		if _, err := sw.Release(ctx); err != nil {
			b.Fatal(err)
		}
		if _, err := sw.ReadPlacement(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBatchUART(b *testing.B)      { benchBatch(b, true) }
func BenchmarkBatchInProcess(b *testing.B) { benchBatch(b, false) }

// The whole queue state with tags: OFFSET, ARB_INDEX, QSTAT and 8192 QTAGS
// words for the catalogue build, over the UART bridge.
func BenchmarkReadStateUART(b *testing.B) {
	sw, ctx := newRig(b, rigOpts{uart: true})
	for b.Loop() {
		if _, err := sw.ReadState(ctx, true); err != nil {
			b.Fatal(err)
		}
	}
}

// A 30000-cycle uniform run at input rate 1 (the nightly's run length).
func BenchmarkTrafficGenerator30k(b *testing.B) {
	sw, ctx := newRig(b, rigOpts{})
	c := tp.DefaultTG()
	c.Cycles = 30000
	for b.Loop() {
		if _, err := sw.RunTG(ctx, c); err != nil {
			b.Fatal(err)
		}
	}
}
