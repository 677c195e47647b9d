package exanet

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/labrunner/labrunner/boards/emu"
)

// The APElink (§3.4): a Transmission Control Logic per inter-tile port over
// an Aurora 64B/66B transceiver. On the wire a packet is Magic and Start
// (one 64-bit block each), the ECC-protected 128-bit header, the payload,
// the 128-bit footer with the payload's CRC32, and Aurora's closing
// separator block. Credits flow back in 64-bit blocks. There is no
// acknowledgement and no retransmission (§3.4).

const (
	itemHeader uint8 = iota
	itemPayload
	itemFooter
	itemCredit
)

// wireItem is what reaches the receiver: a 128-bit word of a packet, or a
// credit block. at is the time it is there (fs).
type wireItem struct {
	at    int64
	kind  uint8
	ref   wordRef
	hit   bool      // the header was hit by bit errors: hw is what arrived
	hw    [4]uint32 // header bits as received
	pay   int32     // credit: payload words freed
	hdr   int32     // credit: header/footer entries freed
	fault bool      // LO|FA|MO status embedded in the credit (§3.4)
}

type link struct {
	n    *node
	idx  int
	port *emu.Port // the board's cage: sfp0 for link 0, sfp1 for link 1

	enable, loopback bool
	threshold        int // CREDIT_THRESHOLD (TRED)

	up   bool
	peer *link // the receiver of what this link sends (itself in loopback)
	lat  int64 // fs from the end of a word's last wire cycle to the peer's RX FIFO
	jit  int64 // this frame's extra latency in the receive path (fs, below one cycle)
	rxw  ring[wireItem]

	// TX FIFO between the router and the TCL (header/footer 128 entries,
	// payload 1024 x 128 bit, §3.3), with space reserved by granted packets.
	txq                ring[wordRef]
	txHdr, txPay       int
	txHdrRes, txPayRes int

	// The TCL's transmitter.
	credits, hdrCredits int // credit available in the peer's RX FIFO
	busyUntil           int64
	cur                 *packet // packet on the wire, nil between packets
	abort               *packet // packet cut by a channel loss: drop the rest
	stalled             bool
	stallStart          int64
	stallAcc            uint64
	owePay, oweHdr      int // credit to return to the peer for words our router took

	// The TCL's receiver and the RX FIFO toward the router.
	rxq         ring[wordRef]
	rxHdr       int
	rxPay       int
	rxOpen      *packet // packet whose footer has not arrived yet
	rxNext      int
	discard     *packet // uncorrectable header: its words are dropped
	rxErrSeen   bool
	lastRxErr   int64
	remoteFault bool

	// Imperfections and faults.
	leakEvery, leakCount int // credit-leak
	leakDebt             int
	ber                  float64
	berRng               *rand.Rand
	bitsSent, nextErr    uint64
	flipRate             float64 // header-bit-flip
	flipRng              *rand.Rand
	jitRng               *rand.Rand // per-frame receive-path latency

	rxShort       int   // exa-rx-fifo-short: payload words this receiver lacks
	rxShortReport bool  // CREDIT_MAX reads the smaller FIFO
	xcvrExtra     int64 // exa-xcvr-slow: cycles added to the transceiver path
	gapExtra      int64 // exa-link-gap: idle cycles after each packet

	txPackets, rxPackets    uint32
	txWords, rxWords        uint32
	crcErrors, eccCorrected uint32
	eccUncorrectable        uint32
}

func newLink(n *node, i int) (*link, error) {
	name := fmt.Sprintf("sfp%d", i)
	l := &link{n: n, idx: i, port: n.b.Port(name), credits: linkPayload, hdrCredits: hdrFIFO}
	if l.port != nil && l.port.Link != nil {
		l.ber = l.port.Link.BER
		for _, f := range linkFaults(n.b, l.port, "credit-leak") {
			every, err := paramInt(f, "every", 64)
			if err != nil {
				return nil, err
			}
			if every < 1 {
				return nil, fmt.Errorf("%s: fault credit-leak on %s: every = %d, want 1 or more words", f.Pos, f.Link, every)
			}
			l.leakEvery = every
		}
		for _, f := range linkFaults(n.b, l.port, "header-bit-flip") {
			rate, err := paramFloat(f, "rate", 0.01)
			if err != nil {
				return nil, err
			}
			if rate < 0 || rate > 1 {
				return nil, fmt.Errorf("%s: fault header-bit-flip on %s: rate = %g, want a probability in [0, 1]", f.Pos, f.Link, rate)
			}
			l.flipRate = rate
		}
		if err := l.parseSubtleLink(); err != nil {
			return nil, err
		}
	}
	l.berRng = n.b.Rand("exanet/ber/" + name)
	l.flipRng = n.b.Rand("exanet/header-bit-flip/" + name)
	l.jitRng = n.b.Rand("exanet/xcvr/" + name)
	l.nextErr = math.MaxUint64
	if l.ber > 0 {
		l.nextErr = l.gap()
	}
	return l, nil
}

// gap draws the number of good bits before the next wire error: geometric
// with the cable's BER per bit, deterministic for the rack's seed.
func (l *link) gap() uint64 {
	if l.ber >= 1 {
		return 0
	}
	g := math.Floor(math.Log1p(-l.berRng.Float64()) / math.Log1p(-l.ber))
	if !(g < 1e18) {
		return math.MaxUint64
	}
	return uint64(g)
}

// hits reports the bits hit by wire errors among the next nbits sent.
func (l *link) hits(nbits int, fn func(bit int)) {
	end := l.bitsSent + uint64(nbits)
	for l.nextErr < end {
		if fn != nil {
			fn(int(l.nextErr - l.bitsSent))
		}
		g := l.gap()
		if g == math.MaxUint64 {
			l.nextErr = g
			break
		}
		l.nextErr += 1 + g
	}
	l.bitsSent = end
}

// codeBit locates the 108 bits of the header's SECDED codeword in the wire
// words (header.go): a header-bit-flip fault flips one of them.
var codeBit = func() (loc [dataBits + checkBits + 1][2]uint8) {
	i := 0
	add := func(w, lo, n int) {
		for b := lo; b < lo+n; b++ {
			loc[i] = [2]uint8{uint8(w), uint8(b)}
			i++
		}
	}
	add(0, 0, 27) // DEST, VC
	add(1, 0, 26) // SRC
	add(2, 0, 10) // LENGTH
	add(2, 12, 5) // TYPE, TRACE
	add(3, 0, 32) // TAG
	add(2, 24, 8) // check bits, parity
	return loc
}()

// goUp brings the channel up toward peer. Credit starts as the free space
// of the peer's RX FIFO, less what it still owes us.
func (l *link) goUp(peer *link, lat int64) {
	l.up, l.peer, l.lat = true, peer, lat
	l.credits = peer.rxCap() - peer.rxPay - peer.owePay
	l.hdrCredits = hdrFIFO - peer.rxHdr - peer.oweHdr
	if l.credits < 0 {
		l.credits = 0
	}
	if l.hdrCredits < 0 {
		l.hdrCredits = 0
	}
	l.busyUntil = 0
}

// goDown drops the channel: what is on the wire toward us is lost, the
// packet we were sending is abandoned, and a packet we were receiving is
// closed with a bad CRC so that the router behind us does not wait forever.
func (l *link) goDown() {
	if !l.up {
		return
	}
	l.setStalled(false, l.n.now())
	l.up, l.peer = false, nil
	if p := l.cur; p != nil {
		l.cur = nil
		done := false
		for l.txq.len() > 0 && l.txq.peek().p == p {
			w := l.txq.pop()
			l.txFreed(w)
			done = w.k == p.nw+1
		}
		if !done {
			l.abort = p
		}
	}
	l.busyUntil = 0
	l.rxw.clear()
	l.discard = nil
	if p := l.rxOpen; p != nil {
		p.bad = true
		for k := l.rxNext; k <= p.nw+1; k++ {
			w := wordRef{p: p, k: k}
			l.rxq.push(w)
			if w.isPayload() {
				l.rxPay++
			} else {
				l.rxHdr++
			}
		}
		l.rxOpen = nil
		satInc(&l.crcErrors)
	}
	l.remoteFault = false
}

// --- TX side --------------------------------------------------------------

func (l *link) txFits(p *packet) bool {
	return l.txHdr+l.txHdrRes+2 <= hdrFIFO && l.txPay+l.txPayRes+p.nw <= linkPayload
}

func (l *link) txReserve(p *packet) {
	l.txHdrRes += 2
	l.txPayRes += p.nw
}

func (l *link) txPush(w wordRef, c int64) {
	if w.isPayload() {
		l.txPayRes--
	} else {
		l.txHdrRes--
	}
	if w.p == l.abort {
		if w.k == w.p.nw+1 {
			l.abort = nil
		}
		return
	}
	if w.isPayload() {
		l.txPay++
	} else {
		l.txHdr++
	}
	w.t = c + tclTxCycles
	l.txq.push(w)
}

func (l *link) txFreed(w wordRef) {
	if w.isPayload() {
		l.txPay--
	} else {
		l.txHdr--
	}
}

func (l *link) setStalled(s bool, c int64) {
	switch {
	case s && !l.stalled:
		l.stalled, l.stallStart = true, c
	case !s && l.stalled:
		l.stalled = false
		if c > l.stallStart {
			l.stallAcc += uint64(c - l.stallStart)
		}
	}
}

func (l *link) stallCycles(now int64) uint64 {
	if l.stalled && now > l.stallStart {
		return l.stallAcc + uint64(now-l.stallStart)
	}
	return l.stallAcc
}

// dataReady says whether the TCL can put a data word on the wire now, and
// whether it is held back by credit (§3.4: "outbound words consume it,
// causing transmission suspension as soon as a programmable credit
// threshold (TRED) is reached").
func (l *link) dataReady(c int64) (ready, creditBound bool) {
	if l.txq.len() == 0 {
		return false, false
	}
	w := l.txq.peek()
	if w.t > c {
		l.n.wake(w.t)
		return false, false
	}
	if l.cur == nil {
		return l.hdrCredits >= 2, l.hdrCredits < 2
	}
	if w.isPayload() && l.credits <= l.threshold {
		return false, true
	}
	return true, false
}

func (l *link) transmit(c int64) bool {
	if !l.up {
		return false
	}
	if c < l.busyUntil {
		l.n.wake(l.busyUntil)
		return false
	}
	ready, creditBound := l.dataReady(c)
	if owe := l.owePay + l.oweHdr; owe > 0 && (owe >= creditBatch || !ready) {
		l.hits(64, nil)
		l.send(wireItem{kind: itemCredit, pay: int32(l.owePay), hdr: int32(l.oweHdr), fault: l.rxErrRecent(c)}, c+1)
		l.owePay, l.oweHdr = 0, 0
		l.busyUntil = c + 1
		return true
	}
	l.setStalled(creditBound, c)
	if !ready {
		return false
	}
	w := l.txq.pop()
	l.txFreed(w)
	l.txWords++
	p := w.p
	switch {
	case w.k == 0:
		// Magic and Start, then the header (§3.4).
		l.hdrCredits -= 2
		l.cur = p
		l.jit = int64(l.jitRng.Float64() * l.n.period)
		l.hits(64*framingCycles, nil)
		it := wireItem{kind: itemHeader, ref: w}
		l.corruptHeader(&it)
		dep := c + framingCycles + wireCyclesPerWord
		l.send(it, dep)
		l.busyUntil = dep
	case w.k <= p.nw:
		l.credits--
		l.hits(128, func(b int) {
			if i := 4*(w.k-1) + b/32; i < p.n32 {
				p.payload[i] ^= 1 << (b % 32)
				p.corrupt = true
			}
		})
		dep := c + wireCyclesPerWord
		l.send(wireItem{kind: itemPayload, ref: w}, dep)
		l.busyUntil = dep
	default:
		l.hits(128, func(b int) {
			if b < 32 {
				p.crc ^= 1 << b
				p.corrupt = true
			}
		})
		dep := c + wireCyclesPerWord
		l.send(wireItem{kind: itemFooter, ref: w}, dep)
		l.hits(64*sepCycles, nil)
		l.busyUntil = dep + sepCycles + l.gapExtra
		l.cur = nil
		l.txPackets++
	}
	return true
}

func (l *link) corruptHeader(it *wireItem) {
	flip := func(w, b int) {
		if !it.hit {
			it.hw, it.hit = it.ref.p.h.wireWords(), true
		}
		it.hw[w] ^= 1 << b
	}
	l.hits(128, func(b int) { flip(b/32, b%32) })
	if l.flipRate > 0 && l.flipRng.Float64() < l.flipRate {
		loc := codeBit[l.flipRng.IntN(len(codeBit))]
		flip(int(loc[0]), int(loc[1]))
	}
}

// send puts an item on the wire; it reaches the peer lat after the end of
// cycle dep-1.
func (l *link) send(it wireItem, dep int64) {
	it.at = l.n.edge(dep) + l.lat + l.jit
	l.peer.rxw.push(it)
	l.peer.n.wakeAt(it.at)
}

// --- RX side --------------------------------------------------------------

func (l *link) receive(c int64) bool {
	if l.rxw.len() == 0 {
		return false
	}
	t := l.n.edge(c)
	prog := false
	for l.rxw.len() > 0 {
		if at := l.rxw.peek().at; at > t {
			l.n.wake(l.n.cycleFrom(at))
			break
		}
		it := l.rxw.pop()
		l.accept(&it, c)
		prog = true
	}
	return prog
}

func (l *link) rxErr(c int64) {
	l.rxErrSeen, l.lastRxErr = true, c
}

// rxErrRecent is the LO|FA|MO bit this receiver reports to its neighbour:
// it saw a CRC or uncorrectable header error in the last 65536 cycles.
func (l *link) rxErrRecent(c int64) bool {
	return l.rxErrSeen && c-l.lastRxErr < 65536
}

func (l *link) accept(it *wireItem, c int64) {
	if it.kind == itemCredit {
		l.credits += int(it.pay)
		l.hdrCredits += int(it.hdr)
		l.remoteFault = it.fault
		return
	}
	p := it.ref.p
	l.rxWords++
	switch it.kind {
	case itemHeader:
		if it.hit {
			h, res := decodeWire(it.hw)
			switch res {
			case eccUncorrectable:
				// "Misrouted packets are disruptive for the network" (§3.4):
				// a header the ECC cannot repair is dropped with its packet.
				satInc(&l.eccUncorrectable)
				l.rxErr(c)
				l.discard = p
				l.freed(true)
				return
			case eccCorrected:
				satInc(&l.eccCorrected)
				h.crcErr, h.eccFix = p.h.crcErr, true
				p.h = h
			}
		}
		p.loop = l.loopback
		l.rxq.push(wordRef{p: p, k: 0, t: c})
		l.rxHdr++
		l.rxOpen, l.rxNext = p, 1
	case itemPayload:
		if p == l.discard {
			l.freed(false)
			return
		}
		l.rxq.push(wordRef{p: p, k: it.ref.k, t: c})
		l.rxPay++
		l.rxNext = it.ref.k + 1
	case itemFooter:
		if p == l.discard {
			l.freed(true)
			l.discard = nil
			return
		}
		if p.bad || (p.corrupt && payloadCRC(p.payload, p.len0) != p.crc) {
			satInc(&l.crcErrors)
			l.rxErr(c)
		}
		l.rxq.push(wordRef{p: p, k: it.ref.k, t: c})
		l.rxHdr++
		l.rxPackets++
		l.rxOpen = nil
	}
}

// popRx hands the router the next received word and owes the sender the
// credit for the space it frees.
func (l *link) popRx() wordRef {
	w := l.rxq.pop()
	if w.isPayload() {
		l.rxPay--
		l.freed(false)
	} else {
		l.rxHdr--
		l.freed(true)
	}
	return w
}

// freed owes credit for one freed entry. With the credit-leak fault the
// receiver fails to return one credit every `every` words.
func (l *link) freed(hdr bool) {
	if l.leakEvery > 0 {
		l.leakCount++
		if l.leakCount >= l.leakEvery {
			l.leakCount = 0
			l.leakDebt++
		}
	}
	switch {
	case hdr:
		l.oweHdr++
	case l.leakDebt > 0:
		l.leakDebt--
	default:
		l.owePay++
	}
}
