package shoal

import (
	"math"
)

// engine is one run of the fabric, from the bootstrap to the stop: the NICs
// that joined, the events in flight and the traffic generator's progress.
// Time is rack time in picoseconds.
type engine struct {
	f         *fabric
	tbAbs     int64 // rack time of slot 0 (the bootstrap)
	nomSlotPS int64 // slot length of the first NIC: the SLOT counter's unit
	maxEpoch  int64
	nics      []*nicState
	q         evQueue
	now       int64

	// Traffic.
	tg            bool
	runID         uint32
	tZero         int64 // rack time of traffic time 0
	tgFlows       int
	tgDone        int
	pendingStarts int
	lastProgress  int64 // slot of the last flow start or cell delivered (stall)
}

// Event kinds, in the order they run at equal times: a cell that arrives
// at the moment a NIC decides is seen by the decision.
const (
	evArrival = 0 // a cell's header leaves the receive pipeline
	evCellIn  = 1 // the whole cell has, its CRC checked (reading S3)
	evTx      = 2
)

type event struct {
	t    int64
	ord  uint64 // the kind, then the push count (evQueue)
	n    *nicState
	w    wire
	r    int64 // cell in: the receive slot the cell belongs to
	kind uint8
}

// tMac is when an arriving cell left the receiving MAC: its header leaves
// the receive pipeline ccRxCycles later.
func (ev *event) tMac() int64 { return ev.t - ccRxCycles*cyclePS }

// wire is a cell on the fabric: its header as the bits on the wire, the
// payload's flow information (the generator's first 16 B) and whether the
// payload or the framing was damaged (the MAC FCS fails).
//
// intact says that hdr is still the sender's header and its CRC byte is
// not filled in yet: the CRC of an untouched header matches by
// construction, so it is computed only when a bit error or a
// reconfiguration is about to change the header (damage), and a receiver
// checks it only then (header). Most cells cross the fabric untouched, and
// the CRC's table walk was a tenth of their cost.
type wire struct {
	hdr    uint64
	meta   *flowMeta
	bad    bool
	intact bool
}

// newWire is the cell a NIC sends: header h, flow information meta.
func newWire(h Header, meta *flowMeta) wire {
	return wire{hdr: h.fields(), meta: meta, intact: true}
}

// damage fills in the header's CRC, as the sender computed it, before
// something flips the header's bits.
func (w *wire) damage() {
	if w.intact {
		w.hdr |= uint64(crc8(w.hdr))
		w.intact = false
	}
}

// header decodes the header as the receiver sees it; ok is false when its
// CRC fails or its kind is reserved.
func (w *wire) header() (Header, bool) {
	if w.intact {
		h := headerFields(w.hdr)
		return h, h.Kind != 3
	}
	return decodeHeader(w.hdr)
}

func newEngine(f *fabric, nds []*nicDev) *engine {
	e := &engine{f: f}
	// Leave 20 us for the bootstrap signal to reach every switch before
	// slot 0 starts anywhere.
	e.tbAbs = (f.now + 20_000_000 + cyclePS - 1) / cyclePS * cyclePS
	e.q.init(int64(nds[0].dev.slotCyclesReal()) * cyclePS)
	e.now = f.now
	for _, nd := range nds {
		n := newNICState(e, nd)
		nd.st = n
		e.nics = append(e.nics, n)
		e.maxEpoch = max(e.maxEpoch, int64(n.E))
	}
	e.nomSlotPS = e.nics[0].slotPS
	return e
}

// start schedules every NIC's first slot.
func (e *engine) start() {
	for _, n := range e.nics {
		e.push(&event{t: n.decisionTime(0), kind: evTx, n: n})
	}
}

func (e *engine) slotTime(s int64) int64 { return e.tbAbs + s*e.nomSlotPS }

func (e *engine) slotNow() int64 {
	if e.now < e.tbAbs {
		return 0
	}
	return (e.now - e.tbAbs) / e.nomSlotPS
}

// progress records that the traffic got somewhere: a flow started or a
// cell reached its destination. Cells sent or forwarded do not count: a
// rack whose cells are all lost on the way (a guard band too short for the
// reconfiguration) keeps releasing new cells at the rate feedback timeouts
// allow, and would otherwise run to its slot limit without one delivery.
func (e *engine) progress() { e.lastProgress = e.slotNow() }

// runUntil processes events before tEnd, or until stop says so.
func (e *engine) runUntil(tEnd int64, stop func() bool) {
	for {
		f := e.q.front()
		if f == nil || f.t >= tEnd {
			break
		}
		ev := *f
		e.q.popFront()
		e.now = max(e.now, ev.t)
		switch ev.kind {
		case evArrival:
			ev.n.arrive(e, &ev)
		case evCellIn:
			ev.n.cellIn(e, &ev)
		case evTx:
			// The NIC's next transmit decision.
			if n := ev.n; n.tx(e) {
				ev.t = n.decisionTime(n.slot)
				e.push(&ev)
			}
		}
		if stop != nil && stop() {
			return
		}
	}
	if tEnd != math.MaxInt64 {
		e.now = max(e.now, tEnd)
	}
}

// endSegment publishes a run segment's end: rack time, switch traces.
func (e *engine) endSegment() {
	e.f.now = e.now
	for _, d := range e.f.devs {
		s := &d.sw
		if d.role != roleSwitch || !s.running || s.epochLen == 0 {
			continue
		}
		slots := int64(d.switchSlots())
		if slots < s.epochLen {
			continue
		}
		// The multiplexers' configuration in each slot of the last full
		// epoch, as the hardware captures it.
		s.traceEpoch = uint32(slots/s.epochLen - 1)
		for t := int64(0); t < s.epochLen; t++ {
			s.trace[t] = s.sched[(t+d.faults.wrongSlot)%s.epochLen]
		}
		for t := s.epochLen; t < maxSlots; t++ {
			s.trace[t] = 0
		}
		s.traceValid = true
	}
}

// launch sends a cell from NIC src's port at rack time t (its first bit
// leaving the NIC's PHY) through cables and switches to a NIC.
func (e *engine) launch(src *nicState, w wire, t int64) {
	d, p := src.dev, src.nd.port
	for range 8 {
		h := &d.hops[p]
		if h.to == nil || t >= h.downAt {
			return // no cable, not a shoal board, or a cut cable: lost
		}
		if d.subtle.dropRate[p] > 0 && d.drops(p) {
			return // shoal-cell-drop
		}
		t += h.delayPS
		nd, np := h.to, h.port
		if h.ber != 0 || nd.berInject != 0 {
			nd.bitErrors(np, h.ber, &w, src.cellBits)
		}
		switch nd.role {
		case roleNIC:
			n := nd.nics[np].st
			if n == nil {
				return
			}
			tMac := t + nicRxCycles*cyclePS
			e.push(&event{t: tMac + ccRxCycles*cyclePS, kind: evArrival, n: n, w: w})
			return
		case roleSwitch:
			out, ok := nd.switchCell(e, np, t, &w, src.dataCyc)
			if !ok {
				return
			}
			t += swLatencyCycles * cyclePS
			d, p = nd, out
		default:
			return
		}
	}
}

// switchCell passes a cell arriving on input p at rack time t through the
// switch: the configuration in force is the one of the switch's slot the
// cell falls in (§4.1). The multiplexers reconfigure in the middle of the
// guard band, so that it absorbs errors either way (§3.4: reconfiguration,
// propagation variability and synchronisation imprecision); a cell whose
// first or last cycle meets a reconfiguration is garbled. dataCyc is how
// many cycles the cell occupies (slot minus guard).
func (d *device) switchCell(e *engine, p int, t int64, w *wire, dataCyc int64) (int, bool) {
	s := &d.sw
	if !s.enabled() || (d.faults.downMask != 0 && t >= e.tbAbs+d.faults.downAfter*e.nomSlotPS) {
		return 0, false
	}
	s.cellsIn[p]++
	var cfg uint32
	if anchor := s.anchor[p]; !s.running || t < anchor {
		cfg = s.sched[min(d.syncSlot, maxSlots-1)]
	} else {
		// Sub-cycle phase is absorbed by the synchronisation FIFO (§4.1):
		// what counts is the cycle the cell starts in.
		var a int64
		if dt := t - anchor; d.faults.driftPPM == 0 && dt < 1<<40 {
			// Without drift, the float form below in integers: dt and
			// dt/cyclePS are exact to well under 1/cyclePS of a cycle
			// below 2^40 ps (18 min), so both round the same way.
			a = (dt + cyclePS/2) / cyclePS
		} else {
			local := float64(dt) + d.faults.drift(e.f, t) - d.faults.drift(e.f, anchor)
			a = int64(math.Floor(local/cyclePS + 0.5))
		}
		sig := floorDiv(a+dataCyc/2, s.slotCyc)
		rel := a - sig*s.slotCyc
		if rel < s.reconfAt+reconfCycles || rel+dataCyc > s.slotCyc+s.reconfAt {
			s.misaligned++
			w.bad = true
			if rel < s.reconfAt+reconfCycles {
				// The head of the cell crossed the reconfiguration.
				w.damage()
				w.hdr ^= d.rng.Uint64() | 1
			}
		}
		if sig < 0 {
			sig = 0
		}
		cfg = s.sched[(sig+d.faults.wrongSlot)%s.epochLen]
	}
	nib := cfg >> (4 * p) & 0xF
	if nib&swConnected == 0 {
		s.deadEnds++
		return 0, false
	}
	out := int(nib & swOutMask)
	// Two inputs drive one output: another input's nibble, connected and
	// output bits alike, equals ours. The nibbles of y that are zero are
	// those of the inputs connected to out (ours among them); zeroNibbles
	// marks them without a loop over the inputs.
	const used = swConnected | swOutMask
	y := cfg&(used*0x1111) ^ (nib&used)*0x1111
	if zeroNibbles(y)&^(0x8<<(4*p)) != 0 {
		w.bad = true
	}
	s.cellsOut[out]++
	return out, true
}

// zeroNibbles sets bit 3 of each of the four low nibbles of y that is
// zero: per nibble, (y&7)+7 reaches bit 3 unless y&7 is 0, without a carry
// into the next nibble.
func zeroNibbles(y uint32) uint32 {
	return ^((y & 0x7777) + 0x7777 | y) & 0x8888
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a < 0) != (b < 0) && a%b != 0 {
		q--
	}
	return q
}

// berStream draws bit errors on one receiving port: the distance to the
// next error is exponential with mean 1/rate bits.
type berStream struct {
	rate float64
	skip float64
	rng  interface{ Float64() float64 }
}

func (b *berStream) draw() float64 {
	return -math.Log(1-b.rng.Float64()) / b.rate
}

// bitErrors applies the cable's and the board's bit-error rate to a cell
// received on port p. Errors in the first 64 bits hit the header; later
// ones the payload (the MAC's FCS catches them).
func (d *device) bitErrors(p int, linkBER float64, w *wire, bits int) {
	rate := linkBER + float64(d.berInject)*1e-12
	if rate <= 0 {
		return
	}
	b := &d.ber[p]
	if b.rate != rate {
		b.rate = rate
		b.skip = b.draw()
	}
	pos := b.skip
	for pos < float64(bits) {
		bit := int(pos)
		if bit < 64 {
			w.damage()
			w.hdr ^= 1 << (63 - bit)
		} else {
			w.bad = true
		}
		pos += b.draw()
	}
	b.skip = pos - float64(bits)
}

// push schedules an event: at equal times a header (kind 0) runs before a
// whole cell (kind 1) and both before a transmit decision (kind 2), and
// events of one kind in the order they were scheduled.
func (e *engine) push(ev *event) { e.q.push(ev) }
