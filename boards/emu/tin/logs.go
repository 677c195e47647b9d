package tin

// recFIFO is a FIFO of fixed-size records read a word at a time through a
// pop register (the trace collector, the delivery logs). A record that
// does not fit is dropped whole and counted.
type recFIFO struct {
	words, depth int
	buf          []uint32 // records back to back; buf[pos:] not yet popped
	pos          int
	overflow     uint32
	total        uint32 // records written since the clear
}

func newRecFIFO(words, depth int) recFIFO { return recFIFO{words: words, depth: depth} }

func (r *recFIFO) push(rec []uint32) {
	r.total++
	if (len(r.buf)-r.pos)/r.words >= r.depth {
		r.overflow++
		return
	}
	if r.pos > 0 && r.pos == len(r.buf) {
		r.buf, r.pos = r.buf[:0], 0
	}
	r.buf = append(r.buf, rec...)
}

// count is the number of records not yet completely popped.
func (r *recFIFO) count() uint32 { return uint32((len(r.buf) - r.pos + r.words - 1) / r.words) }

// pop returns the next word, 0 when the FIFO is empty.
func (r *recFIFO) pop() uint32 {
	if r.pos >= len(r.buf) {
		return 0
	}
	v := r.buf[r.pos]
	r.pos++
	if r.pos == len(r.buf) {
		r.buf, r.pos = r.buf[:0], 0
	} else if r.pos >= 4096 && r.pos*2 > len(r.buf) {
		r.buf = append(r.buf[:0], r.buf[r.pos:]...)
		r.pos = 0
	}
	return v
}

func (r *recFIFO) clear() {
	r.buf, r.pos, r.overflow, r.total = r.buf[:0], 0, 0, 0
}

// latFIFO holds latency samples (ns) of one class with their summary.
type latFIFO struct {
	s        []uint32
	pos      int
	depth    int
	overflow uint32
	maxNS    uint32
	total    uint32
}

func newLatFIFO(depth int) latFIFO { return latFIFO{depth: depth} }

func (l *latFIFO) push(ns uint32) {
	l.total++
	l.maxNS = max(l.maxNS, ns)
	if len(l.s)-l.pos >= l.depth {
		l.overflow++
		return
	}
	l.s = append(l.s, ns)
}

func (l *latFIFO) count() uint32 { return uint32(len(l.s) - l.pos) }

func (l *latFIFO) pop() uint32 {
	if l.pos >= len(l.s) {
		return 0
	}
	v := l.s[l.pos]
	l.pos++
	if l.pos == len(l.s) {
		l.s, l.pos = l.s[:0], 0
	}
	return v
}

func (l *latFIFO) clear() {
	l.s, l.pos, l.overflow, l.maxNS, l.total = l.s[:0], 0, 0, 0, 0
}
