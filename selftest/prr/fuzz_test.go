package prr

import (
	"testing"

	tp "github.com/labrunner/labrunner/traffic/prr"
)

// The expected PLACEMENT words of any sequence of batches and drains keep
// the placement rule's invariants: every valid slot is placed or dropped in
// its destination's group, no two packets of a batch share a queue, a
// dropped packet's queue is full, and the diagnosis of any read-back
// disagreement (here: the words of another slot order) never panics.
func FuzzExpectPlacement(f *testing.F) {
	f.Add([]byte{0x13, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10})
	f.Add([]byte{0x02, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{0x31, 0, 0, 0, 0, 0x80, 0x80, 0x80, 0x80, 0x81})
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) < 2 {
			return
		}
		p := 2 << (b[0] & 3) // 2..16
		depth := 1 + int(b[0]>>4&3)
		sw := newGolden(t, p, depth)
		b = b[1:]
		for k := 0; len(b) > 0 && k < 64; k++ {
			slots := make([]tp.Slot, p)
			for i := 0; i < p && len(b) > 0; i++ {
				x := b[0]
				b = b[1:]
				if x&0x80 != 0 {
					slots[i] = tp.Slot{Valid: true, Dest: int(x & 0x7f)}
				}
			}
			if len(b) > 0 && b[0] == 0xee { // a drain
				goldenDrain(sw, 1+int(b[0]&7))
				b = b[1:]
			}
			gb := goldenBatch(slots, p, k)
			e := expectPlacement(sw, gb)
			used := map[[2]int]bool{}
			placed, dropped := 0, 0
			for i, w := range e.words {
				pl := tp.DecodePlacement(w)
				if !slots[i].Valid {
					if w != 0 {
						t.Fatalf("empty slot %d expects %s", i, pl)
					}
					continue
				}
				if pl.Placed == pl.Dropped || pl.Group != slots[i].Dest&(p-1) || pl.Queue >= p {
					t.Fatalf("batch %d slot %d (dest %d): %s", k, i, slots[i].Dest, pl)
				}
				q := [2]int{pl.Group, pl.Queue}
				if used[q] {
					t.Fatalf("batch %d: two packets for queue %d of group %d", k, pl.Queue, pl.Group)
				}
				used[q] = true
				if pl.Placed {
					placed++
					if pl.Pos >= depth || pl.Pos != sw.QueueLen(pl.Group, pl.Queue)-1 {
						t.Fatalf("batch %d slot %d at entry %d of a queue holding %d", k, i, pl.Pos, sw.QueueLen(pl.Group, pl.Queue))
					}
				} else {
					dropped++
					if sw.QueueLen(pl.Group, pl.Queue) != depth {
						t.Fatalf("batch %d slot %d dropped at queue %d of group %d, which holds %d of %d", k, i, pl.Queue, pl.Group, sw.QueueLen(pl.Group, pl.Queue), depth)
					}
				}
			}
			if placed != e.placed || dropped != e.dropped {
				t.Fatalf("counts %d/%d, words say %d/%d", e.placed, e.dropped, placed, dropped)
			}
			rev := make([]uint32, p)
			for i := range rev {
				rev[i] = e.words[p-1-i]
			}
			diagnose(slots, e.words, rev, p)
			diffPlacement(slots, e.words, rev)
		}
	})
}
