package emu

import (
	"errors"
	"fmt"
)

// The PMOS link state machine of one port (docs/pmos.md, "Sender",
// "Receiver"): sessions, sequence numbers, a window of pmosWindow frames,
// cumulative acknowledgements, go-back-N retransmission on a timer, a reset
// handshake for a peer that lost its state, and giving up after pmosRetries
// timeouts without progress. It is firmware (Aquila §3.5: "We layer a robust
// packet implementation, PMOS, above the MOS primitive"): it stops with the
// firmware and loses its state when the firmware restarts.

// pmosQueueMax: messages a port holds beyond its window before the firmware
// refuses more (the ECP's memory is small, §3.5).
const pmosQueueMax = 8

var errPMOSQueueFull = errors.New("PMOS transmit queue full")

type pmosOut struct {
	payload []byte
	sentAt  int64 // when its last word went out; -1 not yet (again)
}

type pmosTx struct {
	session  uint8
	base     uint8 // sequence number of out[0]
	out      []pmosOut
	queue    [][]byte
	retries  int
	timerGen uint64
	timerOn  bool
	gaveUp   bool // sticky until the next acknowledgement progress
	// fastArmed: the oldest frame has gone out completely since the
	// window was last sent again, so a duplicate acknowledgement now means
	// the peer got a later frame without it: it was lost.
	fastArmed bool
}

type pmosRx struct {
	valid    bool
	session  uint8
	expected uint8
}

// pmosSend queues one payload (a management message) for the peer.
func (p *mgmtPort) pmosSend(payload []byte) error {
	if len(payload) < 1 || len(payload) > pmosMaxPayload {
		return fmt.Errorf("PMOS payload of %d bytes (1..%d)", len(payload), pmosMaxPayload)
	}
	t := &p.tx
	if len(t.out)+len(t.queue) >= pmosWindow+pmosQueueMax {
		return errPMOSQueueFull
	}
	t.queue = append(t.queue, append([]byte(nil), payload...))
	p.pmosPump()
	return nil
}

// pmosBacklog is how many messages the port holds (sent unacknowledged and
// waiting).
func (p *mgmtPort) pmosBacklog() int { return len(p.tx.out) + len(p.tx.queue) }

// pmosPump moves waiting payloads into the window and onto the wire.
func (p *mgmtPort) pmosPump() {
	t := &p.tx
	for len(t.out) < pmosWindow && len(t.queue) > 0 {
		t.out = append(t.out, pmosOut{payload: t.queue[0], sentAt: -1})
		t.queue[0] = nil
		t.queue = t.queue[1:]
		p.enqueueFrame(len(t.out) - 1)
		p.pmosTxFrames++
		p.mb.countPMOS()
	}
	p.kick()
}

// enqueueFrame cuts out[i] into words behind those already waiting.
func (p *mgmtPort) enqueueFrame(i int) {
	t := &p.tx
	seq := t.base + uint8(i)
	frame := appendPMOS(make([]byte, 0, pmosMaxFrame), pmosFrame{Type: pmosData, Session: t.session, Seq: seq, Payload: t.out[i].payload})
	words := frameToWords(nil, frame)
	for j, w := range words {
		p.dataQ = append(p.dataQ, txWord{w: w, session: t.session, seq: seq, last: j == len(words)-1})
	}
}

// frameSent: the last word of a data frame went out.
func (p *mgmtPort) frameSent(session, seq uint8) {
	t := &p.tx
	if session != t.session {
		return
	}
	i := int(seq - t.base)
	if i >= len(t.out) {
		return
	}
	t.out[i].sentAt = p.f().now
	if i == 0 {
		t.fastArmed = true
		if !t.timerOn {
			p.armTimer()
		}
	}
}

func (p *mgmtPort) armTimer() {
	t := &p.tx
	t.timerGen++
	t.timerOn = true
	gen, epoch := t.timerGen, p.mb.fwEpoch
	f := p.f()
	f.at(f.now+pmosRTOPS, func() {
		if epoch != p.mb.fwEpoch || gen != p.tx.timerGen {
			return
		}
		p.tx.timerOn = false
		p.pmosTimeout()
	})
}

func (p *mgmtPort) stopTimer() {
	p.tx.timerGen++
	p.tx.timerOn = false
}

func (p *mgmtPort) pmosTimeout() {
	t := &p.tx
	if len(t.out) == 0 {
		return
	}
	t.retries++
	if t.retries > pmosRetries {
		p.pmosGiveUp()
		return
	}
	p.pmosRetx += uint32(len(t.out))
	p.resendAll()
}

// resendAll puts every unacknowledged frame on the wire again, in order,
// after dropping the words of any still waiting (go-back-N).
func (p *mgmtPort) resendAll() {
	t := &p.tx
	p.dataQ = p.dataQ[:0]
	t.fastArmed = false
	for i := range t.out {
		t.out[i].sentAt = -1
		p.enqueueFrame(i)
	}
	p.kick()
}

// pmosGiveUp abandons everything the port holds and starts a new session:
// the peer has not acknowledged anything for pmosRetries timeouts.
func (p *mgmtPort) pmosGiveUp() {
	t := &p.tx
	var lost [][]byte
	for _, o := range t.out {
		lost = append(lost, o.payload)
	}
	lost = append(lost, t.queue...)
	p.pmosGiveups += uint32(len(lost))
	p.stopTimer()
	*t = pmosTx{session: t.session + 1, timerGen: t.timerGen, gaveUp: true}
	p.dataQ = p.dataQ[:0]
	p.mb.pmosLost(p, lost)
}

// pmosReset drops the port's PMOS state: the firmware restarted, stopped,
// or the port changed mode. What was queued is lost.
func (p *mgmtPort) pmosReset(newSession bool) {
	t := &p.tx
	s := t.session
	if newSession {
		s++
	}
	gen := t.timerGen + 1
	*t = pmosTx{session: s, timerGen: gen}
	p.rx = pmosRx{}
	p.dataQ = p.dataQ[:0]
	p.ackQ = p.ackQ[:0]
	p.reasm.reset()
}

// pmosFrameIn handles one reassembled frame.
func (p *mgmtPort) pmosFrameIn(frame []byte) {
	fr, err := decodePMOS(frame)
	if err != nil {
		p.pmosRxBad++
		return
	}
	switch fr.Type {
	case pmosAck:
		p.onAck(fr.Session, fr.Seq)
	case pmosRst:
		p.onRst(fr.Session)
	case pmosData:
		p.onData(fr)
	}
}

func (p *mgmtPort) onAck(session, next uint8) {
	t := &p.tx
	if session != t.session {
		return
	}
	n := int(next - t.base)
	if n == 0 {
		// A duplicate: the peer got a frame after one it is still
		// missing. Resend the window at once rather than wait for the
		// timer (fast retransmit, once per sending of the oldest frame).
		if len(t.out) > 0 && t.fastArmed {
			p.pmosRetx += uint32(len(t.out))
			p.stopTimer()
			p.resendAll()
		}
		return
	}
	if n > len(t.out) {
		return // nonsense
	}
	for i := range n {
		t.out[i].payload = nil
	}
	t.out = t.out[n:]
	t.base = next
	t.retries = 0
	t.gaveUp = false
	t.fastArmed = len(t.out) > 0 && t.out[0].sentAt >= 0
	if len(t.out) > 0 && t.out[0].sentAt >= 0 {
		p.armTimer()
	} else {
		p.stopTimer()
	}
	p.pmosPump()
}

func (p *mgmtPort) onRst(session uint8) {
	t := &p.tx
	if session != t.session {
		return
	}
	// The peer holds no receive session for ours (it restarted): start a
	// new one and number what is unacknowledged from 0.
	p.pmosRsts++
	p.stopTimer()
	t.session++
	t.base = 0
	p.resendAll()
}

func (p *mgmtPort) onData(fr pmosFrame) {
	rx := &p.rx
	if !rx.valid || fr.Session != rx.session {
		if fr.Seq != 0 {
			p.sendCtl(pmosRst, fr.Session, 0)
			return
		}
		if !p.mb.fwAccept() {
			return // no room: no acknowledgement, the sender will retry
		}
		*rx = pmosRx{valid: true, session: fr.Session, expected: 0}
	}
	if fr.Seq == rx.expected {
		if !p.mb.fwAccept() {
			return
		}
		rx.expected++
		p.pmosRxFrames++
		p.mb.countPMOS()
		p.mb.fwInput(p.idx, fr.Payload)
	}
	p.sendCtl(pmosAck, rx.session, rx.expected)
}

// sendCtl queues a one-word frame (ACK or RST) ahead of any data word. A
// newer ACK replaces one not yet sent.
func (p *mgmtPort) sendCtl(typ, session, seq uint8) {
	frame := appendPMOS(make([]byte, 0, 6), pmosFrame{Type: typ, Session: session, Seq: seq})
	w := frameToWords(nil, frame)[0]
	for i, q := range p.ackQ {
		if q == w || (typ == pmosAck && byte(q>>40) == pmosVersion<<4|pmosAck) {
			p.ackQ[i] = w
			p.kick()
			return
		}
	}
	p.ackQ = append(p.ackQ, w)
	p.kick()
}
