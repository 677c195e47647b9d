package tin

// ring is a FIFO over a power-of-two circular buffer: a queue of cells at a
// link's output, or of credits on their way back. It never shifts and
// grows by doubling.
type ring[T any] struct {
	buf        []T
	head, size int
}

func (r *ring[T]) len() int { return r.size }

func (r *ring[T]) push(v T) {
	if r.size == len(r.buf) {
		n := max(4, 2*len(r.buf))
		b := make([]T, n)
		for i := 0; i < r.size; i++ {
			b[i] = r.buf[(r.head+i)&(len(r.buf)-1)]
		}
		r.buf, r.head = b, 0
	}
	r.buf[(r.head+r.size)&(len(r.buf)-1)] = v
	r.size++
}

func (r *ring[T]) peek() T { return r.buf[r.head] }

func (r *ring[T]) pop() T {
	v := r.buf[r.head]
	r.head = (r.head + 1) & (len(r.buf) - 1)
	r.size--
	return v
}
