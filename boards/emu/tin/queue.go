package tin

import (
	"math/bits"

	"github.com/labrunner/labrunner/internal/eventq"
)

// evQueue is the fabric's event queue: events leave in time order and, at
// equal times, in the order they were pushed (so that a run is a function of
// its seed).
//
// Nearly every event is the switch's own (ticks, arrivals, credits,
// ejections) and falls due within a few hundred nanoseconds of the present,
// while a run also carries thousands of timeouts for operations that mostly
// completed long before they fire. A single heap made every pop sift
// through the timeouts' levels. So the near future is a calendar: a ring of
// 1 ns buckets, each a short list sorted by (time, push order), with a
// bitmap of the buckets in use; what falls beyond the ring waits in a heap.
// A pop takes the earlier of the ring's first event and the heap's, so the
// order is exactly that of a single queue.
//
// The lists' nodes come from one pool, most recently freed first: the few
// dozen events in flight keep reusing the same cache lines, where a slice
// per bucket touched a cold one at nearly every push.
type evQueue struct {
	seq uint64 // pushes so far: the order of events at equal times

	// The ring holds the events of buckets cur .. cur+wheelN-1 (bucket b
	// covers [b*wheelPS, (b+1)*wheelPS)); cur is the bucket of the latest
	// pop, so no event in the ring is earlier than the present's bucket.
	// minB is the earliest bucket in use (while inRng > 0).
	cur   uint64
	minB  uint64
	inRng int
	used  [wheelN / 64]uint64
	first [wheelN]int32 // per bucket, its first node (0: empty)

	nodes []qnode // nodes[0] is never used: 0 means none
	free  int32   // the free nodes, linked by next

	// far holds the events beyond the ring, or (never in practice) before
	// it. Its own order at equal times, push order, is the order of their
	// seq: a front is compared with the ring's by (t, seq).
	far eventq.Queue[qent]
}

const (
	wheelPS   = 1000 // 1 ns: a bucket seldom holds more than one or two events
	wheelN    = 1024 // 1 µs of buckets: a global hop's round trip and more
	wheelMask = wheelN - 1
)

// qent is one pending event with its place in the order.
type qent struct {
	t   int64
	seq uint64
	e   event
}

// qnode is a ring list's node.
type qnode struct {
	qent
	next int32
}

func (a *qent) before(b *qent) bool {
	return a.t < b.t || a.t == b.t && a.seq < b.seq
}

// Len returns the number of pending events.
func (q *evQueue) Len() int { return q.inRng + q.far.Len() }

// push schedules e at time t, after every event already pushed for t.
func (q *evQueue) push(t int64, e event) {
	q.seq++
	b := uint64(t) / wheelPS
	if t < 0 || b < q.cur || b-q.cur >= wheelN {
		q.far.Push(t, qent{t: t, seq: q.seq, e: e})
		return
	}
	n := q.free
	if n != 0 {
		q.free = q.nodes[n].next
	} else {
		if len(q.nodes) == 0 {
			q.nodes = append(q.nodes, qnode{})
		}
		n = int32(len(q.nodes))
		q.nodes = append(q.nodes, qnode{})
	}
	x := &q.nodes[n]
	x.t, x.seq, x.e = t, q.seq, e
	i := b & wheelMask
	// The node goes after every node of its bucket that is not later
	// (those were pushed before it).
	if f := q.first[i]; f == 0 || x.before(&q.nodes[f].qent) {
		x.next = f
		q.first[i] = n
	} else {
		p := f
		for {
			nx := q.nodes[p].next
			if nx == 0 || x.before(&q.nodes[nx].qent) {
				x.next = nx
				q.nodes[p].next = n
				break
			}
			p = nx
		}
	}
	q.used[i/64] |= 1 << (i % 64)
	if q.inRng == 0 || b < q.minB {
		q.minB = b
	}
	q.inRng++
}

// Next returns the time of the earliest pending event; ok is false when the
// queue is empty.
func (q *evQueue) Next() (t int64, ok bool) {
	if q.inRng > 0 {
		x := &q.nodes[q.first[q.minB&wheelMask]]
		if _, f, ok := q.far.Peek(); !ok || x.before(f) {
			return x.t, true
		}
	}
	return q.far.Next()
}

// Pop removes the earliest event and returns its time and the event. It
// panics on an empty queue.
func (q *evQueue) Pop() (int64, event) {
	if q.inRng > 0 {
		b := q.minB
		i := b & wheelMask
		n := q.first[i]
		x := &q.nodes[n]
		if _, f, ok := q.far.Peek(); !ok || x.before(f) {
			t, e := x.t, x.e
			q.first[i] = x.next
			x.next = q.free
			q.free = n
			q.inRng--
			if q.first[i] == 0 {
				q.used[i/64] &^= 1 << (i % 64)
				if q.inRng > 0 {
					q.minB = q.nextUsed(b)
				}
			}
			// Every pending event is at t or later: the ring moves on to
			// t's bucket.
			q.cur = b
			return t, e
		}
	}
	if q.far.Len() == 0 {
		panic("tin: pop from an empty event queue")
	}
	t, x := q.far.Pop()
	e := x.e
	if b := uint64(t) / wheelPS; t >= 0 && b > q.cur {
		q.cur = b // (never back: what is in the ring stays within its span)
	}
	return t, e
}

// rewind points the ring, which must be empty, at time now. The fabric
// calls it after it drained the queue without running what it popped (a run
// ended or abandoned): the ring followed those pops to the latest pending
// timeout, and events of the next run, from now on, would all have gone to
// the heap until the fabric's time caught up.
func (q *evQueue) rewind(now int64) {
	if q.Len() != 0 {
		panic("tin: rewind of a queue with pending events")
	}
	q.cur = 0
	if now > 0 {
		q.cur = uint64(now) / wheelPS
	}
}

// nextUsed returns the first bucket in use after bucket b: the ring's
// buckets in time order run from b's slot on, wrapping around.
func (q *evQueue) nextUsed(b uint64) uint64 {
	i0 := (b + 1) & wheelMask
	w := i0 / 64
	if m := q.used[w] >> (i0 % 64); m != 0 {
		return b + 1 + uint64(bits.TrailingZeros64(m))
	}
	for k := uint64(1); k <= uint64(len(q.used)); k++ {
		ww := (w + k) % uint64(len(q.used))
		if m := q.used[ww]; m != 0 {
			i := ww*64 + uint64(bits.TrailingZeros64(m))
			return b + 1 + (i-i0)&wheelMask
		}
	}
	panic("tin: event ring count and bitmap disagree")
}
