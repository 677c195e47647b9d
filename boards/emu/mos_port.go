package emu

import (
	"math"
	"math/rand/v2"
)

// One cabled port's ordered-set machinery: the MOS transmitter with its slot
// grid, the channel (delay, bit errors, loss, cuts), the receiver that sorts
// arriving ordered sets (MOS, TimeSync) and the raw MOS FIFOs the runner
// reads and writes (docs/mgmt.md, "Raw MOS words").

// Port modes (PORT_MODE.MODE).
const (
	modeFirmware = 0 // PMOS and management messages run by the firmware
	modePacket   = 1 // PMOS by the firmware, messages to and from the mailbox only
	modeRaw      = 2 // PMOS off: MOS words to and from the raw FIFOs
)

const (
	rawRxMax = 256 // words the raw receive FIFO holds
	rawTxMax = 64  // words the raw transmit FIFO holds
	// phyPS: the transceiver's latency on each side of a cable, transmit
	// plus receive, ordered sets included (a GTY/GTH 64b/66b path is tens
	// of ns); PHY_LATENCY_PS reports it.
	phyPS = 30_000
)

// txWord is a PMOS word waiting for a slot, with the frame it belongs to.
type txWord struct {
	w       mosWord
	session uint8
	seq     uint8
	last    bool
}

type mgmtPort struct {
	mb   *mgmtBoard
	idx  int
	p    *Port
	peer *mgmtPort // nil: no cable, or a cable to a board that is not emulated

	mode uint32

	// transmitter: one-word frames (ACK, RST) first, then raw words, then
	// the words of PMOS data frames.
	ackQ     []mosWord
	rawQ     []mosWord
	dataQ    []txWord
	armed    bool  // a slot event is pending
	phase    int64 // this port's slot grid: slots at phase + k*mosPeriodPS
	nextSlot int64 // the slot after the last one used
	rawHi    uint32
	rawHas   bool // the high half of a raw word was written

	// receiver
	reasm   pmosReassembler
	rawRx   []mosWord
	rawRxLo bool // the next read of the RX window returns the low half

	tx pmosTx
	rx pmosRx

	// channel faults and draws (the sender draws for its direction)
	rng      *rand.Rand
	lossRate float64 // mos-lossy: per MOS word
	cutAt    int64   // mos-link-cut: -1 none

	lat latState

	// counters (PORT block, docs/mgmt.md)
	mosTx, mosRx, mosRxErr, rawDropped                                     uint32
	pmosTxFrames, pmosRetx, pmosRxFrames, pmosRxBad, pmosGiveups, pmosRsts uint32
}

func (p *mgmtPort) f() *mgmtFabric { return p.mb.f }

func (p *mgmtPort) cabled() bool { return p.p.Link != nil }

// delayPS is the one-way time of an ordered set from this port to its peer:
// the block on the wire, the transceivers and the cable.
func (p *mgmtPort) delayPS() int64 {
	return blockPS + phyPS + psOfNS(p.p.Link.DelayNS(p.p))
}

// channelUp says whether ordered sets can cross the cable now.
func (p *mgmtPort) channelUp() bool {
	if p.peer == nil || p.p.Link.Failed {
		return false
	}
	if p.cutAt >= 0 && p.f().now >= p.cutAt {
		return false
	}
	return p.peer.cutAt < 0 || p.f().now < p.peer.cutAt
}

// wire sends one ordered set to the peer: it may be lost (cut cable,
// mos-lossy for MOS words) or hit by bit errors (the cable's BER, on the 66
// bits of the block: an error in the 2-bit sync header loses the block).
func (p *mgmtPort) wire(w uint64, isMOS bool, arrive func(w uint64)) {
	if !p.channelUp() {
		return
	}
	if isMOS && p.lossRate > 0 && p.rng.Float64() < p.lossRate {
		return
	}
	if ber := p.p.Link.BER; ber > 0 {
		if pErr := -math.Expm1(66 * math.Log1p(-ber)); p.rng.Float64() < pErr {
			bit := p.rng.IntN(66)
			if bit < 2 {
				return
			}
			w ^= 1 << uint(bit-2)
		}
	}
	f := p.f()
	f.at(f.now+p.delayPS(), func() { arrive(w) })
}

// kick makes sure a slot is coming if anything waits to be sent: the first
// slot of this port's grid that is not before now and not already used.
func (p *mgmtPort) kick() {
	if p.armed || (len(p.ackQ) == 0 && len(p.rawQ) == 0 && len(p.dataQ) == 0) {
		return
	}
	f := p.f()
	k := (f.now - p.phase + mosPeriodPS - 1) / mosPeriodPS
	t := max(p.phase+max(k, 0)*mosPeriodPS, p.nextSlot)
	p.armed = true
	epoch := p.mb.hwEpoch
	f.at(t, func() {
		if epoch != p.mb.hwEpoch {
			return
		}
		p.armed = false
		p.slot()
	})
}

// slot sends the next waiting word.
func (p *mgmtPort) slot() {
	var w mosWord
	switch {
	case len(p.ackQ) > 0:
		w = p.ackQ[0]
		p.ackQ = p.ackQ[1:]
	case len(p.rawQ) > 0:
		w = p.rawQ[0]
		p.rawQ = p.rawQ[1:]
	case len(p.dataQ) > 0:
		tw := p.dataQ[0]
		p.dataQ = p.dataQ[1:]
		w = tw.w
		if tw.last {
			p.frameSent(tw.session, tw.seq)
		}
	default:
		return
	}
	p.mosTx++
	if peer := p.peer; peer != nil {
		p.wire(uint64(w), true, func(x uint64) { peer.receive(x) })
	}
	p.nextSlot = p.f().now + mosPeriodPS
	p.kick()
}

// receive takes an ordered set off the wire.
func (p *mgmtPort) receive(x uint64) {
	mb := p.mb
	if !mb.powered {
		return
	}
	if byte(x>>56) != osMOS {
		// not a MOS word any more (a bit error in its type byte)
		p.mosRxErr++
		return
	}
	w := mosWord(x)
	if p.mode == modeRaw {
		p.mosRx++
		p.pushRaw(w)
		return
	}
	f, err := decodeMOS(w)
	if err != nil {
		p.mosRxErr++
		return
	}
	p.mosRx++
	switch {
	case f.Ch == mosChRaw:
		p.pushRaw(w)
	case f.Ch != mosChPMOS:
		p.mosRxErr++
	case mb.fw != fwUp:
		// PMOS is the firmware's: a board whose firmware is not running
		// hears nothing, and acknowledges nothing.
	default:
		if frame, ok := p.reasm.push(f); ok {
			p.pmosFrameIn(frame)
		}
	}
}

func (p *mgmtPort) pushRaw(w mosWord) {
	if len(p.rawRx) >= rawRxMax {
		p.rawDropped++
		return
	}
	p.rawRx = append(p.rawRx, w)
}

// rawWrite takes one half of a raw word from the MOS_TX window: the high
// half (bytes 0-3) first, then the low half, which queues the word. Byte 0
// is always sent as the MOS type.
func (p *mgmtPort) rawWrite(v uint32) {
	if !p.rawHas {
		p.rawHi, p.rawHas = v, true
		return
	}
	p.rawHas = false
	w := mosWord(uint64(p.rawHi)<<32 | uint64(v))
	w = w&^(0xFF<<56) | osMOS<<56
	if p.mode != modeRaw {
		// Only application words may join a port whose PMOS the firmware
		// runs: anything else would corrupt its frames.
		if f, err := decodeMOS(w); err != nil || f.Ch != mosChRaw {
			p.mb.rawRejected++
			return
		}
	}
	if len(p.rawQ) >= rawTxMax {
		p.mb.rawRejected++
		return
	}
	p.rawQ = append(p.rawQ, w)
	p.kick()
}

// rawRead pops one half of the head of the raw receive FIFO: the high half,
// then the low half, which removes the word. An empty FIFO reads 0 (a word
// whose type byte is 0 is never a MOS word).
func (p *mgmtPort) rawRead() uint32 {
	if len(p.rawRx) == 0 {
		p.rawRxLo = false
		return 0
	}
	w := p.rawRx[0]
	if !p.rawRxLo {
		p.rawRxLo = true
		return uint32(w >> 32)
	}
	p.rawRxLo = false
	p.rawRx = p.rawRx[1:]
	return uint32(w)
}

// setMode changes PORT_MODE: PMOS state and partial words are dropped on
// every change, as the firmware re-initialises the port.
func (p *mgmtPort) setMode(m uint32) {
	if m > modeRaw || m == p.mode {
		return
	}
	p.mode = m
	p.reasm.reset()
	p.pmosReset(true)
	p.rawHas, p.rawRxLo = false, false
}

// hwReset returns the port to its power-on state.
func (p *mgmtPort) hwReset() {
	p.mode = modeFirmware
	p.ackQ, p.rawQ, p.dataQ = p.ackQ[:0], p.rawQ[:0], p.dataQ[:0]
	p.armed, p.nextSlot = false, 0
	p.rawHas, p.rawRxLo = false, false
	p.rawRx = p.rawRx[:0]
	p.reasm.reset()
	p.tx = pmosTx{session: p.tx.session}
	p.rx = pmosRx{}
	p.lat = latState{}
	p.mosTx, p.mosRx, p.mosRxErr, p.rawDropped = 0, 0, 0, 0
	p.pmosTxFrames, p.pmosRetx, p.pmosRxFrames, p.pmosRxBad, p.pmosGiveups, p.pmosRsts = 0, 0, 0, 0, 0, 0
}
