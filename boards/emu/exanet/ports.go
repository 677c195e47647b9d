package exanet

// Intra-tile ports (§3.3 Switch Ports, §4 KARMA): the ARM (or the traffic
// generator, or the ping-pong engine) writes headers and payload into the TX
// FIFOs; the router delivers into the RX FIFOs, where the consumer or
// software reads them. The header FIFOs hold 128 headers (128 x 128 bit);
// the payload FIFOs 4096 x 128 bit, seen from the ARM as 16384 32-bit words.

type txPort struct {
	hdr   ring[[4]uint32] // queued headers, as software wrote them
	data  ring[uint32]    // payload words, 32 bits each
	stage [4]uint32       // PORT_TX_HDR words written so far
}

// ready: "the packet leaves when its header is queued and all its payload
// words are in the TX FIFO".
func (t *txPort) ready() bool {
	if t.hdr.len() == 0 {
		return false
	}
	return t.data.len() >= payloadWords(t.hdr.peek()[2]&0x3ff)
}

func (t *txPort) hdrFree() int  { return hdrFIFO - t.hdr.len() }
func (t *txPort) dataFree() int { return intraPayload32 - t.data.len() }

// queue adds a header whose payload is (or will be) in the data FIFO. A
// LENGTH outside 1..512 cannot be framed: the port refuses it.
func (t *txPort) queue(w [4]uint32) bool {
	l := w[2] & 0x3ff
	if l < 1 || l > maxPayload || t.hdrFree() == 0 {
		return false
	}
	t.hdr.push(w)
	return true
}

// packetAtHead builds the packet at the head of the FIFOs; src is this
// node's COORD and the port ("filled in by the router at injection,
// whatever software wrote").
func (t *txPort) packetAtHead(src uint32) *packet {
	h := parseSW(*t.hdr.peek())
	h.src = src & addrMask
	p := &packet{h: h, len0: h.length, n32: payloadWords(h.length), nw: datapathWords(h.length)}
	p.payload = make([]uint32, p.n32)
	for i := range p.payload {
		p.payload[i] = *t.data.at(i)
	}
	p.crc = payloadCRC(p.payload, h.length)
	return p
}

// popWord frees what word k of p held: the header entry, or up to four
// 32-bit payload words.
func (t *txPort) popWord(p *packet, k int) {
	switch {
	case k == 0:
		t.hdr.pop()
	case k <= p.nw:
		m := p.n32 - 4*(k-1)
		if m > 4 {
			m = 4
		}
		for ; m > 0; m-- {
			t.data.pop()
		}
	}
}

// rxEntry is a header in an RX header FIFO. It becomes visible to the
// consumer and to software when the footer has arrived and the port has
// checked the payload CRC, whose outcome it carries (CRC_ERR).
type rxEntry struct {
	h         header
	p         *packet
	visible   bool
	visibleAt int64
}

type rxPort struct {
	hdr            ring[rxEntry]
	data           ring[uint32]
	resHdr, resDat int // space reserved by granted packets not yet arrived
}

func (r *rxPort) fits(p *packet) bool {
	return r.hdr.len()+r.resHdr < hdrFIFO && r.data.len()+r.resDat+p.n32 <= intraPayload32
}

func (r *rxPort) reserve(p *packet) {
	r.resHdr++
	r.resDat += p.n32
}

func (r *rxPort) push(w wordRef, c int64) {
	p := w.p
	switch {
	case w.k == 0:
		r.resHdr--
		r.hdr.push(rxEntry{p: p})
	case w.k <= p.nw:
		i := 4 * (w.k - 1)
		for j := i; j < i+4 && j < p.n32; j++ {
			r.data.push(p.payload[j])
			r.resDat--
		}
	default:
		e := r.hdr.at(r.hdr.len() - 1)
		e.h = p.h
		if p.bad || (p.corrupt && payloadCRC(p.payload, p.len0) != p.crc) {
			e.h.crcErr = true
		}
		e.visible, e.visibleAt = true, c
	}
}

// waiting counts the visible headers.
func (r *rxPort) waiting() int {
	n := r.hdr.len()
	if n > 0 && !r.hdr.at(n-1).visible {
		n--
	}
	return n
}

// head returns the oldest header if it is visible.
func (r *rxPort) head() *rxEntry {
	if r.hdr.len() == 0 || !r.hdr.peek().visible {
		return nil
	}
	return r.hdr.peek()
}

// popPacket takes the head packet and its payload words out of the FIFOs
// (the ping-pong engine reads whole packets).
func (r *rxPort) popPacket() (rxEntry, []uint32) {
	e := r.hdr.pop()
	n := e.p.n32
	if n > r.data.len() {
		n = r.data.len()
	}
	words := make([]uint32, n)
	for i := range words {
		words[i] = r.data.pop()
	}
	return e, words
}

// consumer is the self-test Consumer (§4.3: it "flushes the receiving FIFOs
// avoiding the overflow") with the Performance Counter ("samples and stores
// the clock cycles needed to complete the data transfers"). One engine per
// intra-tile port, each reading one 128-bit word a cycle: the header, then
// the payload.
type consumer struct {
	enable bool
	port   [nIntra]struct {
		active bool
		e      rxEntry
		k      int // payload words consumed
	}
	packets, bytes            uint32
	crcErrors, hdrErrors, mis uint32
	srcPackets                [nIntra]uint32
	// Performance counter: first and last payload word consumed since
	// the last clear.
	pcValid   bool
	pcFirst   int64
	pcLast    int64
	pcBytes   uint32
	pcPackets uint32
	pcHi      uint32 // PC_CYCLES_HI, latched by reading PC_CYCLES_LO
}

func (c *consumer) clear() {
	c.packets, c.bytes, c.crcErrors, c.hdrErrors, c.mis = 0, 0, 0, 0, 0
	c.srcPackets = [nIntra]uint32{}
	c.pcValid, c.pcFirst, c.pcLast, c.pcBytes, c.pcPackets = false, 0, 0, 0, 0
}

func satInc(v *uint32) {
	if *v != ^uint32(0) {
		*v++
	}
}

func (n *node) consume(c int64) bool {
	cs := &n.cons
	if !cs.enable {
		return false
	}
	prog := false
	for i := range cs.port {
		if n.arm.owns(i) {
			continue
		}
		st := &cs.port[i]
		rx := &n.rx[i]
		if !st.active {
			if rx.head() == nil {
				continue
			}
			st.e, st.k, st.active = rx.hdr.pop(), 0, true
			prog = true
			continue
		}
		p := st.e.p
		m := p.n32 - 4*st.k
		if m > 4 {
			m = 4
		}
		for j := 0; j < m && rx.data.len() > 0; j++ {
			rx.data.pop()
		}
		st.k++
		bytes := int(p.len0) - 16*(st.k-1)
		if bytes > 16 {
			bytes = 16
		}
		if !cs.pcValid {
			cs.pcValid, cs.pcFirst = true, c
		}
		cs.pcLast = c
		cs.pcBytes += uint32(bytes)
		prog = true
		if st.k < p.nw {
			continue
		}
		st.active = false
		h := st.e.h
		cs.packets++
		cs.bytes += h.length
		cs.pcPackets++
		if h.crcErr {
			satInc(&cs.crcErrors)
		}
		if h.length < 1 || h.length > maxPayload || payloadWords(h.length) != p.n32 || int(h.dest>>24&3) != i {
			satInc(&cs.hdrErrors)
		}
		if h.dest&0xffffff != n.coord && !p.loop {
			satInc(&cs.mis)
		}
		if sp := int(h.src >> 24 & 3); sp < nIntra {
			cs.srcPackets[sp]++
		}
	}
	return prog
}
