package tin

import "slices"

// Time is simulated time in picoseconds. Whole picoseconds keep the
// fabric's figures exact where they are exact in the papers (a 160-byte
// cell at 25 Gb/s is 51,200 ps; a flit at 1 flit/ns is 1,000 ps) and round
// the others (54.468 ns for a cell on a 23.5 Gb/s FEC link) by less than a
// picosecond.
type Time = int64

// Ns is one nanosecond in Time units.
const Ns Time = 1000

// toTime converts nanoseconds to Time, rounding to the nearest picosecond.
func toTime(ns float64) Time { return Time(ns*1000 + 0.5) }

type event struct {
	t    Time
	id   int32
	kind uint8
}

// calQueue is a calendar (bucket) queue of events keyed by time, one bucket
// per nanosecond over a ring of calSpan nanoseconds, and a binary heap for
// the rare event further ahead (a Poisson arrival at low load). Events pop
// in time order and, at equal times, in the order they were pushed, so a
// run is a function of its seed.
//
// Why not a heap: in a fabric simulation nearly every event lands within a
// global link's latency of now, so pushing and popping a bucket is O(1)
// where a heap of thousands of pending events costs a dozen cache-missing
// levels per operation (a binary heap was 60% of the previous simulator's
// time).
type calQueue struct {
	buckets [][]event
	cur     int64 // the nanosecond of the bucket being served
	pos     int   // next event of that bucket
	sorted  bool  // the served bucket's remainder is in time order
	ring    int   // events in the ring
	far     farHeap
	farSeq  uint64
	// spare holds the arrays of emptied buckets: a bucket borrows one when
	// it gets its first event, so memory follows the buckets in use (the
	// few hundred ns ahead that events reach), not the ring's span times
	// the busiest nanosecond.
	spare [][]event
}

const (
	calSpan = 1 << 12 // ns covered by the ring
	calMask = calSpan - 1
)

func newCalQueue() *calQueue {
	return &calQueue{buckets: make([][]event, calSpan)}
}

// Len returns the number of pending events.
func (q *calQueue) Len() int { return q.ring + len(q.far.e) }

func (q *calQueue) push(e event) {
	b := e.t / Ns
	if b < q.cur {
		panic("tin: event scheduled in the past")
	}
	if b-q.cur >= calSpan {
		q.farSeq++
		q.far.push(farEvent{e, q.farSeq})
		return
	}
	q.ring++
	s := &q.buckets[b&calMask]
	if *s == nil {
		*s = q.borrow()
	}
	if b != q.cur || !q.sorted {
		*s = append(*s, e)
		return
	}
	// The bucket being served is in order from pos: insert after every
	// event not later than e (pushed before it).
	k := len(*s)
	*s = append(*s, e)
	for k > q.pos && (*s)[k-1].t > e.t {
		(*s)[k] = (*s)[k-1]
		k--
	}
	(*s)[k] = e
}

// pop returns the next event; ok is false when none is pending.
func (q *calQueue) pop() (event, bool) {
	for {
		s := &q.buckets[q.cur&calMask]
		if q.pos < len(*s) {
			if !q.sorted {
				rest := (*s)[q.pos:]
				if !slices.IsSortedFunc(rest, cmpEventTime) {
					slices.SortStableFunc(rest, cmpEventTime)
				}
				q.sorted = true
			}
			e := (*s)[q.pos]
			q.pos++
			q.ring--
			return e, true
		}
		if *s != nil {
			q.spare = append(q.spare, (*s)[:0])
			*s = nil
		}
		q.pos, q.sorted = 0, false
		if q.ring == 0 {
			if len(q.far.e) == 0 {
				return event{}, false
			}
			q.cur = q.far.e[0].e.t / Ns // jump over the empty stretch
		} else {
			q.cur++
		}
		// Events that come within the ring's span join it before any
		// event pushed from now on for the same nanosecond (they were
		// pushed earlier), in their own order.
		for len(q.far.e) > 0 && q.far.e[0].e.t/Ns-q.cur < calSpan {
			fe := q.far.pop()
			b := fe.e.t / Ns
			if q.buckets[b&calMask] == nil {
				q.buckets[b&calMask] = q.borrow()
			}
			q.buckets[b&calMask] = append(q.buckets[b&calMask], fe.e)
			q.ring++
		}
	}
}

func (q *calQueue) borrow() []event {
	if k := len(q.spare); k > 0 {
		s := q.spare[k-1]
		q.spare = q.spare[:k-1]
		return s
	}
	return make([]event, 0, 16)
}

func cmpEventTime(a, b event) int {
	switch {
	case a.t < b.t:
		return -1
	case a.t > b.t:
		return 1
	}
	return 0
}

type farEvent struct {
	e   event
	seq uint64
}

type farHeap struct{ e []farEvent }

func (h *farHeap) less(i, j int) bool {
	a, b := &h.e[i], &h.e[j]
	return a.e.t < b.e.t || (a.e.t == b.e.t && a.seq < b.seq)
}

func (h *farHeap) push(x farEvent) {
	h.e = append(h.e, x)
	i := len(h.e) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(i, p) {
			break
		}
		h.e[i], h.e[p] = h.e[p], h.e[i]
		i = p
	}
}

func (h *farHeap) pop() farEvent {
	top := h.e[0]
	n := len(h.e) - 1
	h.e[0] = h.e[n]
	h.e = h.e[:n]
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && h.less(r, l) {
			m = r
		}
		if !h.less(m, i) {
			break
		}
		h.e[i], h.e[m] = h.e[m], h.e[i]
		i = m
	}
	return top
}
