package tin

// IP over GNet (§3.3, Fig. 3): every packet issues an RTS and waits for a
// CTS before its data cells enter the fabric; the egress side's CTS
// scheduler allocates reassembly space under a window of outstanding
// fetches; packets are delivered in RTS order per flow; a CTD drops a
// packet from its ingress buffer when its RTS queue is too deep; the RTS
// queue's depth drives ECN marking.

// Packet kinds (what generated it).
const (
	pkUR    = 0
	pkBurst = 1
	pkReply = 2
)

// packet is an IP packet crossing the fabric. Its bytes are not simulated;
// the fields below are what they carry (the generator's flow label and
// sequence number, its send timestamp) plus each side's bookkeeping. At the
// egress, from its CTS on, it is the reassembly context of slot egSlot:
// what the RTS told the egress (source, length, CoS, flow label) and which
// cells have landed. Data cells find it by their RPTR alone (onData).
type packet struct {
	src, dst  Addr // dst.EP() is the egress IP port
	n         int
	cos       uint8
	kind      uint8
	flow      uint16
	seq       uint32
	wantReply bool
	traced    bool
	log       bool
	sent      int64 // hardware timestamp when the ingress buffer took it (ps)
	orig      int64 // a reply: the request's send timestamp
	replyN    int
	gen       *ipGenState // the generator to credit, at the source
	msg       *burstMsg

	// Ingress side.
	ingSlot int32
	ingLeft int32 // bytes still in the ingress buffer
	fetched bool  // a CTS or CTD came

	// Egress side: the reassembly context.
	egSlot   int32
	landed   uint32 // bit i: cell index i has landed
	got      int32  // cells landed
	cells    int32  // cells expected, ceil(n/152), from the RTS's length
	lastLen  int32  // LEN of the last cell (the others are 160)
	complete bool
	ecn      bool
}

type flowKey struct {
	src  Addr
	port uint8
	cos  uint8
	flow uint16
}

// flowState is the egress's per-flow reorder list (packets in CTS issue
// order) and the consumer's sequence check.
type flowState struct {
	pend    []*packet
	lastSeq uint32
	seen    bool
}

type pktQueue struct {
	buf  []*packet
	head int
	n    int
}

func (q *pktQueue) push(p *packet) {
	if q.n == len(q.buf) {
		nb := make([]*packet, max(8, 2*len(q.buf)))
		for i := 0; i < q.n; i++ {
			nb[i] = q.buf[(q.head+i)%len(q.buf)]
		}
		q.buf, q.head = nb, 0
	}
	q.buf[(q.head+q.n)%len(q.buf)] = p
	q.n++
}

func (q *pktQueue) peek() *packet { return q.buf[q.head] }

func (q *pktQueue) pop() *packet {
	p := q.buf[q.head]
	q.buf[q.head] = nil
	q.head = (q.head + 1) % len(q.buf)
	q.n--
	return p
}

// slotQueue hands out buffer slots first-freed first-reused, so that a
// late cell of a timed-out packet is unlikely to find its slot reused.
type slotQueue struct {
	s       []int32
	head, n int
}

// fill makes every one of size slots free.
func (s *slotQueue) fill(size int) {
	if len(s.s) != size {
		s.s = make([]int32, size)
	}
	for i := range s.s {
		s.s[i] = int32(i)
	}
	s.head, s.n = 0, size
}

func (s *slotQueue) get() (int32, bool) {
	if s.n == 0 {
		return 0, false
	}
	v := s.s[s.head]
	s.head = (s.head + 1) % len(s.s)
	s.n--
	return v, true
}

func (s *slotQueue) put(v int32) {
	s.s[(s.head+s.n)%len(s.s)] = v
	s.n++
}

type ipEP struct {
	d *device
	f *fabric

	ctsWindow, ctdThresh, ecnThresh uint32
	ingCap, egCap, reasmUS          uint32
	fetchUS, portMbps               uint32

	// Ingress.
	ingUsed  int
	ingSlots [nIngSlots]*packet
	ingFree  slotQueue
	hostQ    pktQueue
	rtsN     map[flowKey]uint32  // RTSs issued per flow (tin-rts-overtake)
	held     map[flowKey]*packet // an RTS the fault holds back

	// Egress.
	rtsQ        [ipPorts][nCoS]pktQueue
	egSlots     [nEgSlots]*packet // reassembly contexts; nil: free or resting
	egFree      slotQueue
	egUsed      int
	outstanding [ipPorts]int
	ctsPtr      int
	flows       map[flowKey]*flowState
	portBusy    [ipPorts]int64

	ctr [nIPCounters]uint32
}

func newIPEP(d *device) *ipEP {
	e := &ipEP{d: d}
	e.flush()
	return e
}

func (e *ipEP) reset() {
	e.ctsWindow, e.ctdThresh, e.ecnThresh = resetCTSWindow, resetCTDThresh, resetECNThresh
	e.ingCap, e.egCap, e.reasmUS = resetIngress, resetEgress, resetReasmUS
	e.fetchUS, e.portMbps = resetFetchUS, resetPortMbps
}

// flush forgets every packet (a run abandoned).
func (e *ipEP) flush() {
	e.ingUsed, e.egUsed = 0, 0
	e.ingSlots, e.egSlots = [nIngSlots]*packet{}, [nEgSlots]*packet{}
	e.ingFree.fill(nIngSlots)
	e.egFree.fill(nEgSlots)
	e.hostQ = pktQueue{}
	e.rtsQ = [ipPorts][nCoS]pktQueue{}
	e.outstanding = [ipPorts]int{}
	e.portBusy = [ipPorts]int64{}
	e.flows = map[flowKey]*flowState{}
	e.rtsN = map[flowKey]uint32{}
	e.held = map[flowKey]*packet{}
}

func (e *ipEP) srcKey(p *packet) flowKey {
	return flowKey{src: p.dst, port: uint8(p.src.EP()), cos: p.cos, flow: p.flow}
}

// submit takes a packet from the host side (a generator, or the echo of a
// reply) at time now. It enters the ingress buffer when there is room, and
// its RTS goes out at once (§3.3). A packet longer than MaxPacket (32 cells
// of 152 B: the RPTR's 5-bit cell index) cannot be reassembled: the
// ingress refuses it (IP_PKTS_TOO_LONG) and it counts as dropped.
func (e *ipEP) submit(p *packet, now int64) {
	if p.n > MaxPacket {
		e.ctr[cIPTooLong]++
		packetLost(p)
		return
	}
	if e.hostQ.n > 0 || !e.fits(p) {
		e.ctr[cIPHostBlocked]++
		e.hostQ.push(p)
		return
	}
	e.admit(p, now)
}

func (e *ipEP) fits(p *packet) bool {
	return e.ingUsed+p.n <= int(max(e.ingCap, MaxCell)) && e.ingFree.n > 0
}

func (e *ipEP) admit(p *packet, now int64) {
	s, _ := e.ingFree.get()
	p.ingSlot, p.ingLeft = s, int32(p.n)
	p.sent = now
	e.ingSlots[s] = p
	e.ingUsed += p.n
	e.ctr[cIPIngressHWM] = max(e.ctr[cIPIngressHWM], uint32(e.ingUsed))
	e.ctr[cIPPktsSent]++
	d := e.d
	if e.fetchUS > 0 {
		// A lost RTS or CTS would hold the packet for ever: the ingress
		// gives up on it after IP_FETCH_TIMEOUT_US.
		e.f.timer(now+int64(e.fetchUS)*1_000_000, func() { e.fetchTimeout(p, s) })
	}
	if d.faults.rtsEvery > 0 {
		k := e.srcKey(p)
		e.rtsN[k]++
		if h := e.held[k]; h != nil {
			// tin-rts-overtake: this RTS overtakes the one held back.
			e.sendRTS(p, now)
			e.sendRTS(h, now)
			delete(e.held, k)
			return
		}
		if e.rtsN[k]%uint32(d.faults.rtsEvery) == 0 {
			e.held[k] = p
			return
		}
	}
	e.sendRTS(p, now)
}

// releaseHeld sends the RTSs the overtake fault still holds (the generator
// has nothing more for their flows).
func (e *ipEP) releaseHeld(now int64) {
	for len(e.held) > 0 {
		var first *packet
		var fk flowKey
		for k, p := range e.held {
			if first == nil || p.ingSlot < first.ingSlot {
				first, fk = p, k
			}
		}
		delete(e.held, fk)
		e.sendRTS(first, now)
	}
}

// sendRTS: 8 B of routing header and 8 B of payload: the packet length,
// class of service, ingress-buffer location and usage (§3.3), and the flow
// label.
func (e *ipEP) sendRTS(p *packet, now int64) {
	d := e.d
	usage := uint64(min(e.ingUsed*16/int(max(e.ingCap, 1)), 15))
	c := d.newCell(TypeRTS, p.dst, p.src, CtlCell, vcOf(0), p.traced, now)
	c.p0 = uint64(p.n&0x3FFF)<<50 | uint64(p.cos&7)<<47 | uint64(p.ingSlot&0xFFF)<<35 | usage<<31 | uint64(p.flow)<<15
	c.pkt = p
	e.ctr[cIPRTSSent]++
	d.inject(0, c, now)
}

// ingressFreed: a data cell left for the fabric; its bytes leave the
// ingress buffer of slot c.ingSlot (the source's own record of where it
// read them, not a wire field), and packets waiting on the host side may
// enter.
func (e *ipEP) ingressFreed(c *cell) {
	p := e.ingSlots[c.ingSlot]
	if p == nil {
		return
	}
	e.ingUsed -= int(c.ingFree)
	p.ingLeft -= c.ingFree
	if p.ingLeft <= 0 && e.ingSlots[p.ingSlot] == p {
		e.ingSlots[p.ingSlot] = nil
		e.ingFree.put(p.ingSlot)
	}
	e.drainHost(e.f.now)
}

func (e *ipEP) drainHost(now int64) {
	for e.hostQ.n > 0 && e.fits(e.hostQ.peek()) {
		e.admit(e.hostQ.pop(), now)
	}
}

// receive takes a cell the switch ejected to the IP endpoint.
func (e *ipEP) receive(c *cell, now int64) {
	switch c.h.Type {
	case TypeRTS:
		e.onRTS(c, now)
	case TypeCTS:
		e.onCTS(c, now)
	case TypeCTD:
		e.onCTD(c, now)
	case TypeData:
		e.onData(c, now)
	}
}

// onCTS: the destination allocated reassembly space; the packet leaves the
// ingress buffer as data cells, adaptively routed (§3.3).
func (e *ipEP) onCTS(c *cell, now int64) {
	e.ctr[cIPCTSReceived]++
	// The CTS names the packet in the ingress buffer and the reassembly
	// slot the egress allocated (§3.3).
	slot := int32(c.p0 >> 52 & 0xFFF)
	egSlot := int(c.p0 >> 40 & 0xFFF)
	p := e.ingSlots[slot]
	if p == nil || p != c.pkt || p.fetched {
		return
	}
	p.fetched = true
	d := e.d
	tc := int(d.cosTC >> (4 * uint(p.cos)) & 0xF)
	sizes := Cellify(p.n)
	left := p.n
	for i, sz := range sizes {
		// A data cell is the routing header and the next DataPerCell bytes
		// of the packet, nothing else (§6). Its header's SRC field is the
		// RPTR: the egress slot from the CTS and the cell's index, all the
		// egress needs to land it (docs/tin.md, "Cell formats").
		dc := d.newCell(TypeData, p.dst, DataRPTR(egSlot, i), sz, vcOf(tc), p.traced, now)
		dc.p0 = p.word(i * DataPerCell)
		n := min(left, DataPerCell)
		left -= n
		dc.ingSlot, dc.ingFree = slot, int32(n)
		e.ctr[cIPDataSent]++
		d.inject(0, dc, now)
	}
}

// word is the 8-byte word of the packet's bytes at offset off (a multiple
// of 8): the generators fill their packets with a pattern (docs/tin.md,
// "Generated packets") from which a collector can tell which of a flow's
// packets a traced data cell carries, and where in it: flow label (63:48),
// byte offset (47:32), generator sequence number (31:0). Bytes past the
// packet's end (the padding of a short cell) continue the pattern.
func (p *packet) word(off int) uint64 {
	return uint64(p.flow)<<48 | uint64(off&0xFFFF)<<32 | uint64(p.seq)
}

// onCTD: the destination drops the packet without fetching it (§3.3).
func (e *ipEP) onCTD(c *cell, now int64) {
	e.ctr[cIPCTDReceived]++
	slot := int32(c.p0 >> 52 & 0xFFF)
	p := e.ingSlots[slot]
	if p == nil || p != c.pkt || p.fetched {
		return
	}
	p.fetched = true
	e.ingSlots[slot] = nil
	e.ingFree.put(slot)
	e.ingUsed -= int(p.ingLeft)
	p.ingLeft = 0
	e.drainHost(now)
	packetLost(p)
}

// onRTS queues the request in its RTS queue (per egress port and class of
// service), or answers a CTD when that queue is past the threshold.
func (e *ipEP) onRTS(c *cell, now int64) {
	e.ctr[cIPRTSReceived]++
	p := c.pkt
	port := c.h.Dst.EP()
	q := &e.rtsQ[port][p.cos]
	if q.n >= int(e.ctdThresh) {
		d := e.d
		ctd := d.newCell(TypeCTD, p.src, p.dst, CtlCell, vcOf(1), p.traced, now)
		ctd.p0 = uint64(p.ingSlot&0xFFF) << 52
		ctd.pkt = p
		e.ctr[cIPCTDSent]++
		d.inject(0, ctd, now)
		return
	}
	q.push(p)
	e.ctr[cIPRTSQHWM] = max(e.ctr[cIPRTSQHWM], uint32(q.n))
	e.kick(now)
}

// kick runs the CTS scheduler: per egress port, while fewer than
// CTS_WINDOW fetches are outstanding, the highest class of service with a
// queued RTS gets a CTS when the reassembly buffer has room for the packet
// (§3.3). Ports take turns.
func (e *ipEP) kick(now int64) {
	d := e.d
	for k := 0; k < ipPorts; k++ {
		port := (e.ctsPtr + k) % ipPorts
		for e.outstanding[port] < int(max(e.ctsWindow, 1)) {
			cos := -1
			for c := nCoS - 1; c >= 0; c-- {
				if e.rtsQ[port][c].n > 0 {
					cos = c
					break
				}
			}
			if cos < 0 {
				break
			}
			p := e.rtsQ[port][cos].peek()
			if e.egUsed+p.n > int(max(e.egCap, MaxCell)) || e.egFree.n == 0 {
				return // wait for reassembly space
			}
			e.rtsQ[port][cos].pop()
			s, _ := e.egFree.get()
			p.egSlot = s
			e.egSlots[s] = p
			e.egUsed += p.n
			e.ctr[cIPEgressHWM] = max(e.ctr[cIPEgressHWM], uint32(e.egUsed))
			e.outstanding[port]++
			e.ctr[cIPOutstandingHWM] = max(e.ctr[cIPOutstandingHWM], uint32(e.outstanding[port]))
			// The reassembly context: cells expected, from the RTS's length.
			sizes := Cellify(p.n)
			p.cells, p.lastLen = int32(len(sizes)), int32(sizes[len(sizes)-1])
			p.landed, p.got, p.complete = 0, 0, false
			fk := flowKey{src: p.src, port: uint8(port), cos: p.cos, flow: p.flow}
			fs := e.flows[fk]
			if fs == nil {
				fs = &flowState{}
				e.flows[fk] = fs
			}
			fs.pend = append(fs.pend, p)
			cts := d.newCell(TypeCTS, p.src, p.dst, CtlCell, vcOf(1), p.traced, now)
			cts.p0 = uint64(p.ingSlot&0xFFF)<<52 | uint64(s&0xFFF)<<40
			cts.pkt = p
			e.ctr[cIPCTSSent]++
			d.inject(0, cts, now)
			if e.reasmUS > 0 {
				pp, ss := p, s
				e.f.timer(now+int64(e.reasmUS)*1_000_000, func() { e.reasmTimeout(pp, ss, fk) })
			}
		}
	}
	e.ctsPtr = (e.ctsPtr + 1) % ipPorts
}

// onData lands a data cell by its RPTR alone (header SRC, docs/tin.md
// "Cell formats"): the slot names the reassembly context its packet's CTS
// created (§3.3), the index the cell's position in the packet. Cells of a
// packet are sprayed over the fabric and land in any order (§3.3); the
// packet is complete when all its cells, ceil(L/152) with L from the RTS,
// have landed. A cell whose slot holds no context waiting for data (a late
// cell after a reassembly timeout, a cell of a packet already complete) is
// discarded (IP_DATA_NO_CONTEXT), as is one that does not fit the context:
// for another egress port, an index past the packet's cells, a length
// that is not the one cellification gives that index, or a position
// already filled (IP_DATA_MISMATCH).
func (e *ipEP) onData(c *cell, now int64) {
	e.ctr[cIPDataReceived]++
	slot, idx := SplitRPTR(c.h.Src)
	p := e.egSlots[slot]
	if p == nil || p.complete {
		e.ctr[cIPDataNoContext]++
		return
	}
	want := int32(MaxCell)
	if int32(idx) == p.cells-1 {
		want = p.lastLen
	}
	if c.h.Dst.EP() != p.dst.EP() || int32(idx) >= p.cells || int32(c.h.Len) != want || p.landed>>idx&1 != 0 {
		e.ctr[cIPDataMismatch]++
		return
	}
	p.landed |= 1 << idx
	p.got++
	if p.got < p.cells {
		return
	}
	p.complete = true
	port := p.dst.EP()
	e.outstanding[port]--
	e.kick(now)
	e.deliverFlow(flowKey{src: p.src, port: uint8(port), cos: p.cos, flow: p.flow}, now)
}

// deliverFlow forwards the flow's reassembled packets that have every
// earlier packet of the flow (in CTS issue order) forwarded (§3.3); a
// packet is delivered once it has crossed the host port (reading A5,
// Aquila §3.3).
func (e *ipEP) deliverFlow(k flowKey, now int64) {
	fs := e.flows[k]
	for len(fs.pend) > 0 && fs.pend[0].complete {
		p := fs.pend[0]
		fs.pend = fs.pend[1:]
		port := int(k.port)
		// §3.3: "if the RTS queue exceeds the marking threshold when the
		// packet has been reassembled and is ready to send, ECN is applied".
		if e.rtsQ[port][p.cos].n > int(e.ecnThresh) {
			p.ecn = true
			e.ctr[cIPECNMarked]++
		}
		start := max(now, e.portBusy[port])
		end := start + int64(p.n)*8*1e6/int64(max(e.portMbps, 1))
		e.portBusy[port] = end
		pp := p
		e.f.at(end, func() { e.delivered(pp, fs, end) })
	}
}

// delivered: the packet has been forwarded to the NIC: its reassembly space
// is free, the consumer checks the flow's sequence, takes the timestamp.
func (e *ipEP) delivered(p *packet, fs *flowState, now int64) {
	if e.egSlots[p.egSlot] == p {
		e.egSlots[p.egSlot] = nil
		e.egFree.put(p.egSlot)
	}
	e.egUsed -= p.n
	e.kick(now)
	e.ctr[cIPPktsDelivered]++
	e.ctr[cIPBytesDelivered] += uint32(p.n)
	if fs.seen && p.seq < fs.lastSeq {
		e.ctr[cIPOOOPkts]++
	} else {
		fs.lastSeq, fs.seen = p.seq, true
	}
	d := e.d
	lat := now - p.sent
	if p.log {
		flags := uint32(p.kind)<<1 | uint32(p.cos)<<4 | uint32(p.dst.EP())<<8
		if p.ecn {
			flags |= 1
		}
		d.iplog.push([]uint32{uint32(p.src)<<16 | uint32(p.flow), p.seq, uint32(p.sent / 1000), uint32(now / 1000), flags})
	}
	switch p.kind {
	case pkUR:
		if p.wantReply {
			// The destination echoes a reply at once (§5.1 measures fabric
			// RTT without the remote host's processing).
			// The reply is its own flow (bit 15 of the label set), in the
			// request flow's order.
			r := &packet{src: p.dst, dst: p.src, n: max(p.replyN, 1), cos: p.cos, kind: pkReply, flow: p.flow | 0x8000,
				seq: p.seq, traced: p.traced, log: p.log, orig: p.sent, gen: p.gen}
			e.submit(r, now)
			return
		}
		d.latSample(latIP, lat)
		p.gen.completed++
		e.f.opDone()
	case pkReply:
		d.latSample(latIP, now-p.orig)
		p.gen.completed++
		e.f.opDone()
	case pkBurst:
		d.latSample(latBurst, lat)
		p.msg.packetDone(e.f, false)
	}
}

// reasmTimeout drops a packet whose cells did not all arrive in time. Its
// slot rests, holding no context, for another IP_REASM_TIMEOUT_US before
// it can be allocated again, so that the packet's late cells find no
// context and are discarded (IP_DATA_NO_CONTEXT) rather than land in a
// packet that reuses the slot: the RPTR has no bits to tell the two apart.
func (e *ipEP) reasmTimeout(p *packet, slot int32, k flowKey) {
	if p.complete || e.egSlots[slot] != p {
		return
	}
	e.ctr[cIPReasmTimeouts]++
	e.egSlots[slot] = nil
	e.f.timer(e.f.now+int64(e.reasmUS)*1_000_000, func() {
		e.egFree.put(slot)
		e.kick(e.f.now)
	})
	e.egUsed -= p.n
	e.outstanding[k.port]--
	fs := e.flows[k]
	for i, x := range fs.pend {
		if x == p {
			fs.pend = append(fs.pend[:i], fs.pend[i+1:]...)
			break
		}
	}
	now := e.f.now
	e.kick(now)
	e.deliverFlow(k, now)
	packetLost(p)
}

// fetchTimeout drops a packet whose CTS never came.
func (e *ipEP) fetchTimeout(p *packet, slot int32) {
	if p.fetched || e.ingSlots[slot] != p {
		return
	}
	e.ctr[cIPFetchTimeouts]++
	e.ingSlots[slot] = nil
	e.ingFree.put(slot)
	e.ingUsed -= int(p.ingLeft)
	p.ingLeft = 0
	p.fetched = true
	for k, h := range e.held {
		if h == p {
			delete(e.held, k)
		}
	}
	e.drainHost(e.f.now)
	packetLost(p)
}

// packetLost settles a packet that will not be delivered (CTD, timeout).
func packetLost(p *packet) {
	switch p.kind {
	case pkUR, pkReply:
		p.gen.dropped++
		p.gen.d.f.opDone()
	case pkBurst:
		p.msg.packetDone(p.msg.g.d.f, true)
	}
}
