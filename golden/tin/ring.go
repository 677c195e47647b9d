package tin

// ring is a FIFO: of cells (their numbers) at a link's output or in a
// switch's input FIFO, of credits on their way back, of packets. A large
// Clique has hundreds of thousands of them, each touched at random, and
// nearly all hold one or two entries at a time (on the full Clique at 0.6
// load, 83% of the cells reaching a switch's input FIFO and 94% of those
// joining an output queue find it empty): the first nearCells entries live
// in the ring itself, beside its state, so that a push or a pop touches
// one cache line, not two. A ring that grows beyond spills into a
// power-of-two circular buffer on the heap, which grows by doubling, until
// it is empty again (it keeps the buffer for its next spill).
type ring[T any] struct {
	head, size int32
	near       [nearCells]T
	far        []T // while spilled (len > 0)
}

const nearCells = 2 // a power of two

func (r *ring[T]) len() int { return int(r.size) }

func (r *ring[T]) push(v T) {
	if len(r.far) == 0 {
		if r.size < nearCells {
			r.near[(r.head+r.size)&(nearCells-1)] = v
			r.size++
			return
		}
		if cap(r.far) > 0 {
			r.far = r.far[:cap(r.far)]
		} else {
			r.far = make([]T, 2*nearCells)
		}
		for i := int32(0); i < r.size; i++ {
			r.far[i] = r.near[(r.head+i)&(nearCells-1)]
		}
		r.head = 0
	} else if int(r.size) == len(r.far) {
		b := make([]T, 2*len(r.far))
		for i := 0; i < int(r.size); i++ {
			b[i] = r.far[(int(r.head)+i)&(len(r.far)-1)]
		}
		r.far, r.head = b, 0
	}
	r.far[(int(r.head)+int(r.size))&(len(r.far)-1)] = v
	r.size++
}

func (r *ring[T]) peek() T {
	if len(r.far) == 0 {
		return r.near[r.head]
	}
	return r.far[r.head]
}

func (r *ring[T]) pop() T {
	if len(r.far) == 0 {
		v := r.near[r.head]
		r.head = (r.head + 1) & (nearCells - 1)
		r.size--
		return v
	}
	v := r.far[r.head]
	r.head = (r.head + 1) & int32(len(r.far)-1)
	r.size--
	if r.size == 0 {
		r.far, r.head = r.far[:0], 0
	}
	return v
}
