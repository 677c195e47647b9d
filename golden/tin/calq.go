package tin

import (
	"slices"
	"sort"

	"github.com/labrunner/labrunner/internal/eventq"
)

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
// the rare event further ahead (a Poisson arrival at low load; internal/eventq). Events pop
// in time order and, at equal times, in the order they were pushed, so a
// run is a function of its seed.
//
// Why not a heap: in a fabric simulation nearly every event lands within a
// global link's latency of now, so pushing and popping a bucket is O(1)
// where a heap of thousands of pending events costs a dozen cache-missing
// levels per operation (a binary heap was 60% of the previous simulator's
// time).
type calQueue struct {
	buckets [][]slot
	cur     int64               // the nanosecond of the bucket being served
	pos     int                 // next event of that bucket
	sorted  bool                // the served bucket's remainder is in time order
	ring    int                 // events in the ring
	far     eventq.Queue[event] // beyond the ring: time, then push order
	// spare holds the arrays of emptied buckets: a bucket borrows one when
	// it gets its first event, so memory follows the buckets in use (the
	// few hundred ns ahead that events reach), not the ring's span times
	// the busiest nanosecond.
	spare [][]slot
	tmp   []slot // sortBucket's scratch
}

// slot is an event in a bucket of the ring, in 8 bytes where an event
// takes 16: its picosecond within the bucket's nanosecond (10 bits, the
// top ones), its kind and its id. The full Clique passes hundreds of
// events a nanosecond through the ring; half the bytes is half the cache
// lines written, sorted and read.
type slot uint64

const offShift = 54 // the picosecond's bits in a slot

func packSlot(e event, b int64) slot {
	return slot(uint64(e.t-b*Ns)<<offShift | uint64(e.kind)<<32 | uint64(uint32(e.id)))
}

// off is the slot's picosecond within its nanosecond.
func (s slot) off() int64 { return int64(s >> offShift) }

// event unpacks the slot of a bucket of nanosecond b.
func (s slot) event(b int64) event {
	return event{t: b*Ns + s.off(), id: int32(uint32(s)), kind: uint8(s >> 32)}
}

const (
	calSpan = 1 << 12 // ns covered by the ring
	calMask = calSpan - 1
)

func newCalQueue() *calQueue {
	return &calQueue{buckets: make([][]slot, calSpan)}
}

// Len returns the number of pending events.
func (q *calQueue) Len() int { return q.ring + q.far.Len() }

func (q *calQueue) push(e event) {
	b := e.t / Ns
	if b < q.cur {
		panic("tin: event scheduled in the past")
	}
	if b-q.cur >= calSpan {
		q.far.Push(e.t, e)
		return
	}
	q.ring++
	s := &q.buckets[b&calMask]
	if *s == nil {
		*s = q.borrow()
	}
	if b != q.cur || !q.sorted {
		*s = append(*s, packSlot(e, b))
		return
	}
	// The bucket being served is in order from pos: insert after every
	// event not later than e (pushed before it). The bucket may hold
	// hundreds: a binary search and one move.
	rest, off := (*s)[q.pos:], e.t-b*Ns
	k := q.pos + sort.Search(len(rest), func(i int) bool { return rest[i].off() > off })
	*s = slices.Insert(*s, k, packSlot(e, b))
}

// pop returns the next event; ok is false when none is pending.
func (q *calQueue) pop() (event, bool) {
	for {
		s := &q.buckets[q.cur&calMask]
		if q.pos < len(*s) {
			if !q.sorted {
				q.sortBucket((*s)[q.pos:])
				q.sorted = true
			}
			e := (*s)[q.pos].event(q.cur)
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
			t, ok := q.far.Next()
			if !ok {
				return event{}, false
			}
			q.cur = t / Ns // jump over the empty stretch
		} else {
			q.cur++
		}
		// Events that come within the ring's span join it before any
		// event pushed from now on for the same nanosecond (they were
		// pushed earlier), in their own order.
		for t, ok := q.far.Next(); ok && t/Ns-q.cur < calSpan; t, ok = q.far.Next() {
			_, e := q.far.Pop()
			b := e.t / Ns
			if q.buckets[b&calMask] == nil {
				q.buckets[b&calMask] = q.borrow()
			}
			q.buckets[b&calMask] = append(q.buckets[b&calMask], packSlot(e, b))
			q.ring++
		}
	}
}

func (q *calQueue) borrow() []slot {
	if k := len(q.spare); k > 0 {
		s := q.spare[k-1]
		q.spare = q.spare[:k-1]
		return s
	}
	return make([]slot, 0, 16)
}

// sortBucket sorts the slots of a bucket, in push order, by time, those
// of equal times in push order: a stable sort. A bucket of the full
// Clique holds hundreds of events, nearly always out of order (pushed at
// many times for many latencies), so a comparison sort was a large part
// of a run. A slot's picosecond within its nanosecond has 10 bits: two
// passes of a stable counting sort, on its low then high 5 bits, do it in
// linear time. A short bucket is sorted by insertion, which is stable too;
// one in order is left as it is.
func (q *calQueue) sortBucket(s []slot) {
	if len(s) <= 16 {
		for i := 1; i < len(s); i++ {
			e := s[i]
			j := i
			for ; j > 0 && s[j-1].off() > e.off(); j-- {
				s[j] = s[j-1]
			}
			s[j] = e
		}
		return
	}
	if slices.IsSortedFunc(s, func(a, b slot) int { return int(a.off() - b.off()) }) {
		return
	}
	tmp := slices.Grow(q.tmp[:0], len(s))[:len(s)]
	radixPass(tmp, s, offShift)
	radixPass(s, tmp, offShift+5)
	q.tmp = tmp
}

// radixPass moves the slots of src to dst in the order of their 5 bits
// from bit shift, keeping the order of src among equal digits.
func radixPass(dst, src []slot, shift uint) {
	var at [33]int32
	for _, e := range src {
		at[e>>shift&31+1]++
	}
	for d := 1; d < len(at); d++ {
		at[d] += at[d-1]
	}
	for _, e := range src {
		d := e >> shift & 31
		dst[at[d]] = e
		at[d]++
	}
}
