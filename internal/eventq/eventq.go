// Package eventq is the event queue of a discrete-event simulation: events
// leave in time order and, at equal times, by class and then in the order
// they were pushed, so that a run is a function of its inputs (its seed).
//
// It is a container and encodes no reading of a paper: the emulator
// (boards/emu) and the golden models may both use it without sharing a
// reading (docs/architecture.md, "The emulator and the golden models are
// independent").
//
// The heap holds small keys (time, order, slot: 24 bytes) and the events
// themselves stay put in a slab whose slots are reused, so that a large
// event costs one copy in and one out, not one per level of the heap, and a
// long run allocates only while the number of pending events grows.
package eventq

// Queue is a priority queue of events of type E keyed by an int64 time
// (the unit is the caller's: picoseconds, cycles). The zero value is an
// empty queue ready to use. A Queue is not safe for concurrent use.
type Queue[E any] struct {
	keys []key
	slab []E
	free []int32
	seq  uint64
}

// key orders one event: time, then ord (the class in the top byte, the
// push count below), and says where its payload is.
type key struct {
	t    int64
	ord  uint64
	slot int32
}

// seqBits is how many bits of ord count pushes; the class takes the
// eight above them.
const seqBits = 56

func (a *key) before(b *key) bool {
	return a.t < b.t || a.t == b.t && a.ord < b.ord
}

// Len returns the number of pending events.
func (q *Queue[E]) Len() int { return len(q.keys) }

// Next returns the time of the earliest pending event; ok is false when
// the queue is empty.
func (q *Queue[E]) Next() (t int64, ok bool) {
	if len(q.keys) == 0 {
		return 0, false
	}
	return q.keys[0].t, true
}

// Peek returns the time of the earliest pending event and the event itself,
// left in the queue: the pointer holds until the next Push or Pop. ok is
// false when the queue is empty. (A calendar queue that keeps its far
// future here compares this event with its own front.)
func (q *Queue[E]) Peek() (t int64, e *E, ok bool) {
	if len(q.keys) == 0 {
		return 0, nil, false
	}
	return q.keys[0].t, &q.slab[q.keys[0].slot], true
}

// Push schedules e at time t, after every event already pushed for t
// (class 0).
func (q *Queue[E]) Push(t int64, e E) { q.PushClass(t, 0, e) }

// PushClass schedules e at time t in a class: at equal times, events of a
// lower class leave first (an arrival before the decision that must see
// it), events of one class in the order they were pushed.
func (q *Queue[E]) PushClass(t int64, class uint8, e E) {
	q.seq++
	if q.seq >= 1<<seqBits {
		panic("eventq: more than 2^56 events pushed into one queue")
	}
	var slot int32
	if n := len(q.free); n > 0 {
		slot = q.free[n-1]
		q.free = q.free[:n-1]
		q.slab[slot] = e
	} else {
		slot = int32(len(q.slab))
		q.slab = append(q.slab, e)
	}
	k := key{t: t, ord: uint64(class)<<seqBits | q.seq, slot: slot}
	// Sift up: move parents down into the hole until k's place is found.
	q.keys = append(q.keys, k)
	i := len(q.keys) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !k.before(&q.keys[p]) {
			break
		}
		q.keys[i] = q.keys[p]
		i = p
	}
	q.keys[i] = k
}

// Pop removes the earliest event and returns its time and the event. It
// panics on an empty queue (check Len or Next first).
func (q *Queue[E]) Pop() (int64, E) {
	top := q.keys[0]
	n := len(q.keys) - 1
	last := q.keys[n]
	q.keys = q.keys[:n]
	if n > 0 {
		// Sift down: move the smaller child up into the hole until last's
		// place is found.
		i := 0
		for {
			l := 2*i + 1
			if l >= n {
				break
			}
			m := l
			if r := l + 1; r < n && q.keys[r].before(&q.keys[l]) {
				m = r
			}
			if !q.keys[m].before(&last) {
				break
			}
			q.keys[i] = q.keys[m]
			i = m
		}
		q.keys[i] = last
	}
	e := q.slab[top.slot]
	var zero E
	q.slab[top.slot] = zero // let the garbage collector have what the event held
	q.free = append(q.free, top.slot)
	return top.t, e
}

// Clear drops every pending event (the order of later pushes still
// follows the pushes made before: the count is not reset).
func (q *Queue[E]) Clear() {
	var zero E
	for _, k := range q.keys {
		q.slab[k.slot] = zero
		q.free = append(q.free, k.slot)
	}
	q.keys = q.keys[:0]
}
