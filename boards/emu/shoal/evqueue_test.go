package shoal

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
)

// The event queue against a sorted reference: random pushes and pops with
// many equal times and kinds, times bunched just ahead of the present (the
// ring), far beyond its horizon and in the past of its cursor (the far
// heap); every pop must be the reference's minimum by (time, kind, push
// order).
func TestEvQueueOrder(t *testing.T) {
	type ref struct {
		t    int64
		kind uint8
		n    int64 // push order, carried in event.r
	}
	less := func(a, b ref) int {
		switch {
		case a.t != b.t:
			return cmp.Compare(a.t, b.t)
		case a.kind != b.kind:
			return int(a.kind) - int(b.kind)
		}
		return cmp.Compare(a.n, b.n)
	}
	for seed := uint64(1); seed <= 30; seed++ {
		rng := rand.New(rand.NewPCG(seed, 11))
		var q evQueue
		slotPS := int64(64+rng.IntN(4000)) * cyclePS
		q.init(slotPS)
		horizon := int64(ringBuckets) << q.shift
		var pending []ref
		now := int64(rng.IntN(1 << 30))
		for step := int64(0); step < 20000; step++ {
			if len(pending) < 40 || rng.IntN(2) == 0 {
				var dt int64
				switch rng.IntN(10) {
				case 0:
					dt = horizon + rng.Int64N(4*horizon) // beyond the ring
				case 1:
					dt = -rng.Int64N(2 * slotPS) // in the past
				case 2:
					dt = 0
				default:
					dt = rng.Int64N(3 * slotPS)
				}
				if rng.IntN(4) == 0 {
					dt = dt / cyclePS * cyclePS // equal times
				}
				r := ref{t: now + dt, kind: uint8(rng.IntN(3)), n: step}
				q.push(&event{t: r.t, kind: r.kind, r: r.n})
				pending = append(pending, r)
				continue
			}
			want := slices.MinFunc(pending, less)
			f := q.front()
			if f == nil {
				t.Fatalf("seed %d step %d: empty queue, %d pending", seed, step, len(pending))
			}
			got := ref{t: f.t, kind: f.kind, n: f.r}
			q.popFront()
			if got != want {
				t.Fatalf("seed %d step %d: popped %+v, want %+v", seed, step, got, want)
			}
			pending = slices.DeleteFunc(pending, func(r ref) bool { return r == want })
			now = max(now, got.t)
		}
		for len(pending) > 0 {
			want := slices.MinFunc(pending, less)
			f := q.front()
			if f == nil || f.t != want.t || f.kind != want.kind || f.r != want.n {
				t.Fatalf("seed %d draining: front %+v, want %+v", seed, f, want)
			}
			q.popFront()
			pending = slices.DeleteFunc(pending, func(r ref) bool { return r == want })
		}
		if q.front() != nil || q.nRing != 0 || q.far.Len() != 0 {
			t.Fatalf("seed %d: queue not empty after draining", seed)
		}
	}
}

// switchCell's test for two inputs driving one output, against the loop
// over the inputs it replaces, for every configuration word and input.
func TestConflictMask(t *testing.T) {
	const used = swConnected | swOutMask
	for cfg := uint32(0); cfg < 1<<16; cfg++ {
		for p := 0; p < swPorts; p++ {
			nib := cfg >> (4 * p) & 0xF
			if nib&swConnected == 0 {
				continue
			}
			out := int(nib & swOutMask)
			want := false
			for q := 0; q < swPorts; q++ {
				if m := cfg >> (4 * q) & 0xF; q != p && m&swConnected != 0 && int(m&swOutMask) == out {
					want = true
				}
			}
			y := cfg&(used*0x1111) ^ (nib&used)*0x1111
			if got := zeroNibbles(y)&^(0x8<<(4*p)) != 0; got != want {
				t.Fatalf("cfg 0x%04x input %d: conflict %v, want %v", cfg, p, got, want)
			}
		}
	}
}
