package eventq

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
)

// ref is what the queue must give: events sorted by time, class, then
// push order.
type refEvent struct {
	t     int64
	class uint8
	n     int // push order
}

func refLess(a, b refEvent) int {
	switch {
	case a.t != b.t:
		return cmp.Compare(a.t, b.t)
	case a.class != b.class:
		return cmp.Compare(a.class, b.class)
	}
	return a.n - b.n
}

// Random pushes and pops, with many equal times and classes, against a
// sorted reference: every pop is the reference's minimum.
func TestOrderAgainstReference(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		var q Queue[refEvent]
		var pending []refEvent
		now := int64(0)
		for step := 0; step < 5000; step++ {
			if len(pending) == 0 || rng.IntN(3) > 0 {
				e := refEvent{t: now + int64(rng.IntN(20)), class: uint8(rng.IntN(3)), n: step}
				q.PushClass(e.t, e.class, e)
				pending = append(pending, e)
				continue
			}
			want := slices.MinFunc(pending, refLess)
			if nt, ok := q.Next(); !ok || nt != want.t {
				t.Fatalf("seed %d step %d: Next = %d, %v", seed, step, nt, ok)
			}
			if pt, pe, ok := q.Peek(); !ok || pt != want.t || *pe != want {
				t.Fatalf("seed %d step %d: Peek = %d, %+v, %v; want %+v", seed, step, pt, pe, ok, want)
			}
			tm, got := q.Pop()
			if got != want || tm != want.t {
				t.Fatalf("seed %d step %d: popped %+v at %d, want %+v", seed, step, got, tm, want)
			}
			pending = slices.DeleteFunc(pending, func(e refEvent) bool { return e == want })
			now = tm
			if q.Len() != len(pending) {
				t.Fatalf("Len %d, %d pending", q.Len(), len(pending))
			}
		}
	}
}

// At one time, Push keeps push order and a lower class goes first.
func TestTiesAndClasses(t *testing.T) {
	var q Queue[string]
	q.PushClass(5, 1, "decide")
	q.Push(5, "arrive-1")
	q.Push(3, "early")
	q.Push(5, "arrive-2")
	q.PushClass(5, 1, "decide-2")
	var got []string
	for q.Len() > 0 {
		_, e := q.Pop()
		got = append(got, e)
	}
	want := []string{"early", "arrive-1", "arrive-2", "decide", "decide-2"}
	if !slices.Equal(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
	if _, ok := q.Next(); ok {
		t.Error("Next on an empty queue says ok")
	}
	if _, e, ok := q.Peek(); ok || e != nil {
		t.Error("Peek on an empty queue says ok")
	}
}

// Slots are reused and released: the slab does not grow past the most
// events ever pending, and a popped event's slot holds nothing.
func TestSlabReuse(t *testing.T) {
	var q Queue[*int]
	for round := 0; round < 100; round++ {
		for i := 0; i < 10; i++ {
			v := i
			q.Push(int64(round*10+i), &v)
		}
		for i := 0; i < 10; i++ {
			q.Pop()
		}
	}
	if len(q.slab) != 10 {
		t.Errorf("slab of %d slots for at most 10 pending events", len(q.slab))
	}
	for i, p := range q.slab {
		if p != nil {
			t.Errorf("slot %d still holds a popped event", i)
		}
	}
}

func TestClear(t *testing.T) {
	var q Queue[int]
	for i := 0; i < 5; i++ {
		q.Push(int64(i), i)
	}
	q.Clear()
	if q.Len() != 0 {
		t.Fatalf("Len %d after Clear", q.Len())
	}
	q.Push(9, 9)
	q.Push(1, 1)
	if _, e := q.Pop(); e != 1 {
		t.Errorf("after Clear popped %d, want 1", e)
	}
	if len(q.slab) != 5 {
		t.Errorf("Clear did not release the slots: slab of %d", len(q.slab))
	}
}

// BenchmarkHold is the classic hold model: a queue of n pending events,
// each pop followed by a push a random time ahead (an event's payload the
// size of the emulator's).
func BenchmarkHold(b *testing.B) {
	type payload struct {
		a, b, c, d int64
		p          *int
	}
	for _, n := range []int{64, 4096} {
		b.Run(map[int]string{64: "64", 4096: "4096"}[n], func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 2))
			var q Queue[payload]
			for i := 0; i < n; i++ {
				q.Push(int64(rng.IntN(1000)), payload{a: int64(i)})
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				t, e := q.Pop()
				q.PushClass(t+int64(rng.IntN(1000)), uint8(i&1), e)
			}
		})
	}
}
