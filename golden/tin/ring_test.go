package tin

import (
	"math/rand/v2"
	"testing"
)

// A ring is a FIFO through its spills onto the heap and back: random
// pushes and pops, in bursts that cross nearCells and the heap buffer's
// size, against a slice.
func TestRingSpills(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var q ring[int32]
	var want []int32
	next := int32(0)
	for step := 0; step < 200000; step++ {
		// Bursts: mostly shallow, now and then deep.
		depth := 1 + rng.IntN(2*nearCells+1)
		if rng.IntN(50) == 0 {
			depth = rng.IntN(40)
		}
		if len(want) < depth && rng.IntN(3) > 0 {
			q.push(next)
			want = append(want, next)
			next++
		} else if len(want) > 0 {
			if got := q.peek(); got != want[0] {
				t.Fatalf("step %d: peek %d, want %d", step, got, want[0])
			}
			if got := q.pop(); got != want[0] {
				t.Fatalf("step %d: pop %d, want %d", step, got, want[0])
			}
			want = want[1:]
		}
		if q.len() != len(want) {
			t.Fatalf("step %d: len %d, want %d", step, q.len(), len(want))
		}
	}
}

// A ring of credits, deeper (a random walk).
func TestRingDeep(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	var q ring[credit]
	var want []credit
	for step := 0; step < 100000; step++ {
		if rng.IntN(2) == 0 || len(want) == 0 && rng.IntN(2) == 0 {
			c := credit{t: Time(step), bytes: int32(rng.IntN(160)), vc: uint8(rng.IntN(9))}
			q.push(c)
			want = append(want, c)
		} else if len(want) > 0 {
			if got := q.peek(); got != want[0] {
				t.Fatalf("step %d: peek %+v, want %+v", step, got, want[0])
			}
			if got := q.pop(); got != want[0] {
				t.Fatalf("step %d: pop %+v, want %+v", step, got, want[0])
			}
			want = want[1:]
		}
		if q.len() != len(want) {
			t.Fatalf("step %d: len %d, want %d", step, q.len(), len(want))
		}
	}
}
