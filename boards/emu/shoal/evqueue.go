package shoal

import (
	"math/bits"

	"github.com/labrunner/labrunner/internal/eventq"
)

// evQueue is the engine's event queue: events leave in time order and, at
// equal times, by kind (evArrival, evCellIn, evTx) and then in the order
// they were pushed, so that a run is a function of its seed. It gives the
// order a binary heap keyed (time, kind, push count) gives; it is a
// calendar queue because the fabric's events are bunched close ahead of the
// present (the next slot's decisions, cells in flight for a few hundred
// cycles), where a heap's every push and pop walked its whole depth and
// took a fifth of a run's CPU.
//
// Time is cut into buckets of 2^shift ps. The ring holds the events whose
// bucket lies in [cur, cur+ringBuckets), each bucket a list kept sorted;
// cur never passes the earliest of them. Events outside that window (in
// the past of cur, or beyond the ring's horizon) wait in far, an
// eventq.Queue in the same order (time, kind as its class, push order), and
// the front is the earlier of the two fronts.
type evQueue struct {
	slab  []evNode
	free  int32 // first free slab node, -1 none
	head  [ringBuckets]int32
	tail  [ringBuckets]int32
	occ   [ringBuckets / 64]uint64 // bit b: bucket b holds events
	shift uint
	cur   int64 // bucket number: no ring event lies before it
	nRing int
	far   eventq.Queue[event]
	seq   uint64

	// Where the event front returned lies, for popFront.
	frontBucket int // ring bucket, or -1: far's front
}

const (
	ringBuckets = 1024
	// ordSeqBits is how many bits of ord count pushes; the kind takes the
	// eight above them.
	ordSeqBits = 56
)

type evNode struct {
	ev   event
	next int32
}

// newEvQueue sizes the buckets for a slot of slotPS: about sixteen buckets
// a slot, and never narrower than 8 ns, so that the ring reaches at least
// 8 us ahead.
func (q *evQueue) init(slotPS int64) {
	q.shift = uint(max(bits.Len64(uint64(max(slotPS, 1))/16), 13))
	q.free = -1
	for i := range q.head {
		q.head[i], q.tail[i] = -1, -1
	}
}

func (a *event) before(b *event) bool {
	return a.t < b.t || a.t == b.t && a.ord < b.ord
}

// push schedules ev at ev.t: at equal times a header (kind 0) runs before a
// whole cell (kind 1) and both before a transmit decision (kind 2), and
// events of one kind in the order they were pushed.
func (q *evQueue) push(ev *event) {
	q.seq++
	if q.seq >= 1<<ordSeqBits {
		panic("shoal: more than 2^56 events pushed in one run")
	}
	ord := uint64(ev.kind)<<ordSeqBits | q.seq
	b := ev.t >> q.shift
	if q.nRing == 0 {
		q.cur = b
	}
	if uint64(b-q.cur) >= ringBuckets {
		q.pushFar(ev, ord)
		return
	}
	i := int(b & (ringBuckets - 1))
	x := q.free
	if x >= 0 {
		q.free = q.slab[x].next
	} else {
		x = int32(len(q.slab))
		q.slab = append(q.slab, evNode{})
	}
	nd := &q.slab[x]
	nd.ev = *ev
	nd.ev.ord = ord
	q.nRing++
	t := q.tail[i]
	switch {
	case t < 0:
		nd.next = -1
		q.head[i], q.tail[i] = x, x
		q.occ[i>>6] |= 1 << (i & 63)
	case !nd.ev.before(&q.slab[t].ev):
		// The usual case: later than everything in the bucket.
		nd.next = -1
		q.slab[t].next = x
		q.tail[i] = x
	default:
		prev, y := int32(-1), q.head[i]
		for !nd.ev.before(&q.slab[y].ev) {
			prev, y = y, q.slab[y].next
		}
		nd.next = y
		if prev < 0 {
			q.head[i] = x
		} else {
			q.slab[prev].next = x
		}
	}
}

// front returns the earliest event, or nil when the queue is empty. The
// event stays queued until popFront.
func (q *evQueue) front() *event {
	var r *event
	q.frontBucket = -1
	if q.nRing > 0 {
		p := int(q.cur & (ringBuckets - 1))
		w := p >> 6
		m := q.occ[w] &^ (1<<(p&63) - 1)
		for m == 0 {
			w = (w + 1) & (len(q.occ) - 1)
			m = q.occ[w]
		}
		i := w<<6 | bits.TrailingZeros64(m)
		q.cur += int64((i - p) & (ringBuckets - 1))
		q.frontBucket = i
		r = &q.slab[q.head[i]].ev
	}
	if _, f, ok := q.far.Peek(); ok && (r == nil || f.before(r)) {
		q.frontBucket = -1
		r = f
	}
	return r
}

// popFront removes the event front returned.
func (q *evQueue) popFront() {
	i := q.frontBucket
	if i < 0 {
		q.popFar()
		return
	}
	x := q.head[i]
	nd := &q.slab[x]
	q.head[i] = nd.next
	if nd.next < 0 {
		q.tail[i] = -1
		q.occ[i>>6] &^= 1 << (i & 63)
	}
	nd.ev = event{} // let the garbage collector have the flow it held
	nd.next = q.free
	q.free = x
	q.nRing--
}

func (q *evQueue) pushFar(ev *event, ord uint64) {
	e := *ev
	e.ord = ord
	q.far.PushClass(e.t, e.kind, e)
}

func (q *evQueue) popFar() { q.far.Pop() }
