package exanet

import "math/rand/v2"

// The self-test IPs of §4.3 (the Traffic Generator; the Consumer and the
// Performance Counter are in ports.go) and the ping-pong engine replaying
// the KARMA user-space ping-pong of §4.2.

// trafficGen "generates EXApackets and fills in the transmitting FIFOs"
// (§4.3): from each port of TG_SRC_PORTS, TG_COUNT packets of TG_PAYLOAD
// bytes to TG_DEST, writing one 128-bit word (the header, or four payload
// words) per port per cycle.
type trafficGen struct {
	busy, done, stalled bool
	trace               bool // TG_CTRL.TRACE of the last START

	srcPorts, dest, payload, count, typ uint32

	port [nIntra]struct {
		left    uint32
		writing bool
		written int
		tag     uint32
		seq     uint32
		last    int64 // last cycle a word moved
	}
	sent, lastTag uint32
}

func (g *trafficGen) clear() {
	g.busy, g.done, g.stalled = false, false, false
	g.sent, g.lastTag = 0, 0
	for i := range g.port {
		g.port[i].left, g.port[i].writing, g.port[i].seq = 0, false, 0
	}
}

// start begins a run. A payload outside 1..512 bytes cannot be framed: the
// generator gives up at once (STALLED).
func (g *trafficGen) start(c int64, trace bool) {
	if g.busy {
		return
	}
	g.done, g.stalled, g.trace = false, false, trace
	if g.payload < 1 || g.payload > maxPayload {
		g.stalled = true
		return
	}
	any := false
	for i := range g.port {
		s := &g.port[i]
		s.writing, s.last = false, c
		s.left = 0
		if g.srcPorts>>i&1 != 0 {
			s.left = g.count
			if g.count > 0 {
				any = true
			}
		}
	}
	if !any {
		g.done = true
		return
	}
	g.busy = true
}

// tgWord is the payload pattern: distinct for every packet and word, so
// that a CRC check means something.
func tgWord(tag uint32, i int) uint32 { return tag*0x9E3779B1 ^ uint32(i)*0x85EBCA77 ^ 0x45584E54 }

func (g *trafficGen) step(n *node, c int64) bool {
	if !g.busy {
		return false
	}
	prog, pending := false, false
	n32 := payloadWords(g.payload)
	for i := range g.port {
		s := &g.port[i]
		if s.left == 0 && !s.writing {
			continue
		}
		pending = true
		tx := &n.tx[i]
		moved := false
		switch {
		case !s.writing:
			if tx.hdrFree() > 0 {
				s.seq++
				s.tag = uint32(i)<<24 | s.seq&0xffffff
				w2 := g.payload | (g.typ&0xf)<<12
				if g.trace {
					w2 |= 1 << 16
				}
				tx.hdr.push([4]uint32{g.dest & addrMask, 0, w2, s.tag})
				s.writing, s.written = true, 0
				g.lastTag = s.tag
				moved = true
			}
		default:
			m := n32 - s.written
			if m > 4 {
				m = 4
			}
			if tx.dataFree() >= m {
				for j := 0; j < m; j++ {
					tx.data.push(tgWord(s.tag, s.written+j))
				}
				s.written += m
				if s.written == n32 {
					s.writing = false
					s.left--
					g.sent++
				}
				moved = true
			}
		}
		if moved {
			s.last, prog = c, true
			continue
		}
		if c-s.last >= tgStallCycles {
			// "no word moved for 65536 cycles: the generator gave up"
			g.busy, g.stalled = false, true
			return true
		}
		n.wake(s.last + tgStallCycles)
	}
	if !pending {
		g.busy, g.done = false, true
		return true
	}
	return prog
}

// armTime is how long k 32-bit accesses of nominal cost unit take: the
// paper's figure per access (§4.2), give or take armJitter units each — an
// uncached access crossing the PS-PL interconnect does not always take the
// same time, and this spread is what lets a series of round trips sample
// every phase between the ARM's polling and the arrivals.
func (a *pingPong) armTime(k int, unit int64) int64 {
	t := int64(k) * unit
	for i := 0; i < k; i++ {
		t += int64(a.rng.IntN(2*armJitter+1)) - armJitter
	}
	return t
}

// detectAt is when a status poll first sees a packet that became visible at
// v (units): the ARM polls back to back from pollU, each poll one read.
func (a *pingPong) detectAt(v int64) int64 {
	t := a.pollU
	if gap := v - t; gap > 8*armReadUnits {
		t += (gap/armReadUnits - 4) * armReadUnits // polls long past: the phase is what matters
	}
	for {
		t += a.armTime(1, armReadUnits)
		if t >= v {
			return t
		}
	}
}

// pingPong replays the KARMA user-space ping-pong (§4.2): the ARM writes
// every word of a packet into an intra-tile TX FIFO and reads every word of
// the reply back, timed as the paper measured it (writes 4, reads 20 ARM
// cycles per 32-bit word at 1.5 GHz), with hardware timestamps in this
// board's cycles. The same agent answers pings when PP_RESPONDER is set. It
// owns the RX FIFO of port PP_DEST.PORT while it is active.
type pingPong struct {
	dest, payload, iters uint32
	responder            bool

	busy, done, timeout bool
	pending             bool // START seen: begin at the next step

	op     uint8
	endU   int64 // the ARM's current operation ends (units, see timing.go)
	pollU  int64 // the ARM polls PORT_RX_STATUS from here on, one read at a time
	outHdr [4]uint32
	outDat []uint32

	waiting bool
	sentAt  int64
	startU  int64
	tag     uint32
	seq     uint32
	it      uint32

	rng *rand.Rand // the ARM's access-time jitter

	min, max  uint32
	sum       uint64
	sumHi     uint32 // PP_RTT_SUM_HI, latched by reading PP_RTT_SUM_LO
	doneIters uint32
	samples   ring[uint32]
}

const (
	opNone uint8 = iota
	opWritePing
	opWritePong
	opRead
)

func (a *pingPong) port() int { return int(a.dest >> 24 & 3) }

// owns reports whether the engine reads intra-tile port i's RX FIFO.
func (a *pingPong) owns(i int) bool {
	return (a.responder || a.busy) && i == a.port()
}

func (a *pingPong) clearStats() {
	a.done, a.timeout = false, false
	a.min, a.max, a.sum, a.doneIters = 0, 0, 0, 0
	a.samples.clear()
}

func (a *pingPong) start() {
	if a.busy {
		return
	}
	a.done, a.timeout = false, false
	a.min, a.max, a.sum, a.doneIters, a.it = 0, 0, 0, 0, 0
	if a.payload < 1 || a.payload > maxPayload || a.iters < 1 || a.iters > ppMaxIter || a.port() >= nIntra {
		a.timeout = true // nothing sensible to send: give up at once
		return
	}
	a.busy, a.pending = true, true
}

func ceilCycle(u int64) int64 { return (u + armUnitsPerCycle - 1) / armUnitsPerCycle }

// beginPing starts an iteration: the ARM begins writing the ping at u.
func (a *pingPong) beginPing(n *node, u int64) {
	a.seq++
	a.tag = 0x50500000 | a.seq&0xffff
	a.startU = u
	n32 := payloadWords(a.payload)
	a.outHdr = [4]uint32{a.dest & addrMask, 0, a.payload | typePing<<12, a.tag}
	a.outDat = make([]uint32, n32)
	for i := range a.outDat {
		a.outDat[i] = tgWord(a.tag, i)
	}
	a.op = opWritePing
	a.endU = u + a.armTime(hdrWords32+n32, armWriteUnits)
	n.wake(ceilCycle(a.endU))
}

func (a *pingPong) record(rtt uint32) {
	if a.doneIters == 0 || rtt < a.min {
		a.min = rtt
	}
	if rtt > a.max {
		a.max = rtt
	}
	a.sum += uint64(rtt)
	a.doneIters++
	if a.samples.len() < ppSampleFIFO {
		a.samples.push(rtt)
	}
}

func (a *pingPong) step(n *node, c int64) bool {
	if a.op == opNone && !a.pending && !a.responder && !a.waiting {
		return false
	}
	u := c * armUnitsPerCycle
	port := a.port()
	if port >= nIntra {
		return false
	}
	switch a.op {
	case opWritePing, opWritePong:
		if u < a.endU {
			n.wake(ceilCycle(a.endU))
			return false
		}
		tx := &n.tx[port]
		if tx.hdrFree() < 1 || tx.dataFree() < len(a.outDat) {
			// The FIFO drains as the router moves packets. A ping that
			// never leaves gets no reply either: TIMEOUT counts from the
			// iteration's start, so a TX FIFO held full (a stalled link)
			// ends the run instead of leaving it BUSY for ever.
			if a.op == opWritePing {
				dl := ceilCycle(a.startU) + ppTimeout
				if c >= dl {
					a.op, a.busy, a.pending, a.timeout = opNone, false, false, true
					return true
				}
				n.wake(dl)
			}
			return false
		}
		for _, w := range a.outDat {
			tx.data.push(w)
		}
		tx.hdr.push(a.outHdr)
		if a.op == opWritePing {
			a.waiting, a.sentAt = true, c
		}
		a.op, a.pollU = opNone, a.endU
		return true
	case opRead:
		if u < a.endU {
			n.wake(ceilCycle(a.endU))
			return false
		}
		e, words := n.rx[port].popPacket()
		a.op, a.pollU = opNone, a.endU
		h := e.h
		switch {
		case h.typ == typePing && a.responder:
			// Answer with a packet of the same size to where the ping came from.
			a.outHdr = [4]uint32{h.src & addrMask, 0, h.length&0x3ff | typePong<<12, h.tag}
			a.outDat = words
			a.op = opWritePong
			a.endU = a.pollU + a.armTime(hdrWords32+len(words), armWriteUnits)
			n.wake(ceilCycle(a.endU))
		case h.typ == typePong && a.waiting && h.tag == a.tag:
			a.waiting = false
			end := ceilCycle(a.pollU)
			a.record(uint32(end - a.startU/armUnitsPerCycle))
			a.it++
			if a.it >= a.iters {
				a.busy, a.done = false, true
			} else {
				a.beginPing(n, a.pollU)
			}
		}
		return true
	}
	if a.pending {
		a.pending = false
		a.beginPing(n, u)
		return true
	}
	if e := n.rx[port].head(); e != nil {
		// The ARM sees the packet at the end of the first status poll
		// that samples it, then reads the header and the payload.
		a.op = opRead
		a.endU = a.detectAt(e.visibleAt*armUnitsPerCycle) + a.armTime(hdrWords32+e.p.n32, armReadUnits)
		n.wake(ceilCycle(a.endU))
		return true
	}
	if a.waiting {
		if c >= a.sentAt+ppTimeout {
			// "a reply did not come within 2^20 cycles"
			a.waiting, a.busy, a.timeout = false, false, true
			return true
		}
		n.wake(a.sentAt + ppTimeout)
	}
	return false
}
