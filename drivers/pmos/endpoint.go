package pmos

import (
	"errors"
	"fmt"
)

// Endpoint is one end of a PMOS link (pmos.md §3): a sender with a window of
// unacknowledged DATA frames, a retransmission timer, fast retransmit on a
// duplicate ACK, go-back-N and sessions; a receiver that accepts frames
// strictly in order and answers every DATA frame with an ACK or an RST. It is
// what the runner runs when it speaks PMOS itself through a RAW-mode port
// (pmos.md §6), and what the goodput benchmark drives over a slot-timed link.
//
// An Endpoint is a pure state machine driven by time in picoseconds: feed it
// the words received (Receive), ask it for the word to send in each MOS slot
// (NextWord), and let its timer fire (Advance). It is not safe for
// concurrent use.
type Endpoint struct {
	cfg EndpointConfig

	// Sender (pmos.md §3.2).
	s        uint8 // sending session
	b        uint8 // SEQ of the oldest unacknowledged frame
	unacked  []*txFrame
	waiting  [][]byte
	timerOn  bool
	timerAt  int64
	timeouts int
	fast     bool
	gaveUp   bool

	// Receiver (pmos.md §3.1).
	rxValid bool
	sRx     uint8
	e       uint8
	reasm   Reassembler
	inbox   [][]byte
	raw     [][]byte

	// Transmit queue (pmos.md §3.3): one pending ACK, pending RSTs, RAW
	// words, then data-frame words.
	ack     *Word
	rsts    []uint8
	rawTx   []Word
	dataTx  []txWord
	stats   EndpointStats
	started bool
}

// EndpointConfig sets an Endpoint's figures; zero fields take pmos.md's.
type EndpointConfig struct {
	Window  int   // unacknowledged frames, at most (4)
	RTOPS   int64 // retransmission timeout from the last word of the oldest frame (250 µs)
	Retries int   // timeouts without progress before giving up (12)
	// QueueLimit bounds the messages waiting for the window (8 in the
	// firmware; the runner's own endpoint may hold more).
	QueueLimit int
	// InboxLimit is the receiver's input queue: a full inbox neither
	// delivers nor acknowledges (flow control, pmos.md §3.1).
	InboxLimit int
	// Session is the first sending session.
	Session uint8
}

func (c EndpointConfig) withDefaults() EndpointConfig {
	if c.Window <= 0 {
		c.Window = Window
	}
	if c.RTOPS <= 0 {
		c.RTOPS = RTOPS
	}
	if c.Retries <= 0 {
		c.Retries = Retries
	}
	if c.QueueLimit <= 0 {
		c.QueueLimit = 8
	}
	if c.InboxLimit <= 0 {
		c.InboxLimit = 16
	}
	return c
}

// EndpointStats are an endpoint's counters, named as the board's registers.
type EndpointStats struct {
	TxWords, RxWords   int // MOS words sent and received (PMOS and RAW)
	RxErrors           int // words refused (MOS_RX_ERRORS)
	TxFrames           int // DATA frames sent for the first time (PMOS_TX_FRAMES)
	Retx               int // DATA frames sent again (PMOS_RETX)
	RxFrames           int // DATA frames delivered in order (PMOS_RX_FRAMES)
	RxBad              int // frames refused: CRC, version, type, length (PMOS_RX_BAD)
	GiveUps            int // messages abandoned (PMOS_GIVEUPS)
	Resets             int // RST frames acted on (PMOS_RESETS)
	ReasmDrops         int // partial frames and stray words (PMOS_REASM_DROPS)
	Delivered          int // payload bytes delivered to the inbox
	AcksSent, RstsSent int
}

type txFrame struct {
	payload  []byte
	seq      uint8
	complete bool // its last word has left at least once since it was (re)queued
	sentOnce bool
}

type txWord struct {
	w     Word
	f     *txFrame
	first bool
	last  bool
}

// ErrQueueFull: the sender holds QueueLimit messages beyond its window.
var ErrQueueFull = errors.New("PMOS send queue full")

// NewEndpoint returns an endpoint with a fresh session.
func NewEndpoint(cfg EndpointConfig) *Endpoint {
	cfg = cfg.withDefaults()
	return &Endpoint{cfg: cfg, s: cfg.Session}
}

// Stats returns the counters.
func (e *Endpoint) Stats() EndpointStats {
	s := e.stats
	s.ReasmDrops = e.reasm.Drops
	return s
}

// Session is the sending session.
func (e *Endpoint) Session() uint8 { return e.s }

// GaveUp reports whether the sender gave up since the last acknowledgement.
func (e *Endpoint) GaveUp() bool { return e.gaveUp }

// Pending is the number of messages the sender holds (unacknowledged and
// waiting).
func (e *Endpoint) Pending() int { return len(e.unacked) + len(e.waiting) }

// Send queues a message (1..240 bytes) for the peer.
func (e *Endpoint) Send(payload []byte) error {
	if len(payload) < 1 || len(payload) > MaxPayload {
		return fmt.Errorf("%w: %d given", ErrPayloadSize, len(payload))
	}
	if len(e.unacked) >= e.cfg.Window && len(e.waiting) >= e.cfg.QueueLimit {
		return ErrQueueFull
	}
	e.waiting = append(e.waiting, append([]byte(nil), payload...))
	e.fill()
	return nil
}

// SendRaw queues a RAW word (CH=1) of 1..6 bytes.
func (e *Endpoint) SendRaw(data []byte) error {
	w, err := EncodeWord(ChRaw, false, false, data)
	if err != nil {
		return err
	}
	e.rawTx = append(e.rawTx, w)
	return nil
}

// Recv pops the oldest delivered payload.
func (e *Endpoint) Recv() ([]byte, bool) {
	if len(e.inbox) == 0 {
		return nil, false
	}
	p := e.inbox[0]
	e.inbox = e.inbox[1:]
	return p, true
}

// RecvRaw pops the oldest RAW word's bytes.
func (e *Endpoint) RecvRaw() ([]byte, bool) {
	if len(e.raw) == 0 {
		return nil, false
	}
	p := e.raw[0]
	e.raw = e.raw[1:]
	return p, true
}

// Restart is what a (re)booted sender does: everything held is lost, a new
// session starts and the receive side is closed (pmos.md §3.2).
func (e *Endpoint) Restart() {
	e.s++
	e.b = 0
	e.unacked, e.waiting = nil, nil
	e.timerOn, e.timeouts, e.fast, e.gaveUp = false, 0, false, false
	e.rxValid = false
	e.reasm.Reset()
	e.ack, e.rsts, e.rawTx, e.dataTx = nil, nil, nil, nil
}

// fill turns waiting messages into DATA frames while the window allows.
func (e *Endpoint) fill() {
	for len(e.unacked) < e.cfg.Window && len(e.waiting) > 0 {
		f := &txFrame{payload: e.waiting[0], seq: e.b + uint8(len(e.unacked))}
		e.waiting = e.waiting[1:]
		e.unacked = append(e.unacked, f)
		e.queueFrame(f)
	}
}

func (e *Endpoint) queueFrame(f *txFrame) {
	b, err := Frame{Type: FrameData, Session: e.s, Seq: f.seq, Payload: f.payload}.Marshal()
	if err != nil {
		panic(err) // payload sizes are checked in Send
	}
	ws, err := SplitWords(b)
	if err != nil {
		panic(err)
	}
	f.complete = false
	for i, w := range ws {
		e.dataTx = append(e.dataTx, txWord{w: w, f: f, first: i == 0, last: i == len(ws)-1})
	}
}

// resendAll is go-back-N: cut the data words not yet sent and queue every
// unacknowledged frame again, oldest first, with its session and SEQ.
func (e *Endpoint) resendAll() {
	e.dataTx = e.dataTx[:0]
	for _, f := range e.unacked {
		e.queueFrame(f)
	}
}

// NextWord returns the word to send in the slot at time now, if any:
// an ACK or RST first, then a RAW word, then the next data-frame word.
func (e *Endpoint) NextWord(now int64) (Word, bool) {
	e.Advance(now)
	var w Word
	switch {
	case e.ack != nil:
		w, e.ack = *e.ack, nil
		e.stats.AcksSent++
	case len(e.rsts) > 0:
		w = ctlWord(FrameRst, e.rsts[0], 0)
		e.rsts = e.rsts[1:]
		e.stats.RstsSent++
	case len(e.rawTx) > 0:
		w, e.rawTx = e.rawTx[0], e.rawTx[1:]
	case len(e.dataTx) > 0:
		tw := e.dataTx[0]
		e.dataTx = e.dataTx[1:]
		w = tw.w
		if tw.first {
			if tw.f.sentOnce {
				e.stats.Retx++
			} else {
				e.stats.TxFrames++
				tw.f.sentOnce = true
			}
		}
		if tw.last {
			tw.f.complete = true
			if len(e.unacked) > 0 && e.unacked[0] == tw.f && !e.timerOn {
				e.timerOn, e.timerAt, e.fast = true, now+e.cfg.RTOPS, true
			}
		}
	default:
		return 0, false
	}
	e.stats.TxWords++
	return w, true
}

// Advance fires the retransmission timer if it is due at now.
func (e *Endpoint) Advance(now int64) {
	if !e.timerOn || now < e.timerAt {
		return
	}
	e.timerOn = false
	e.timeouts++
	if e.timeouts > e.cfg.Retries {
		e.giveUp()
		return
	}
	e.resendAll()
}

// TimerAt returns when the timer fires next, if it runs.
func (e *Endpoint) TimerAt() (int64, bool) { return e.timerAt, e.timerOn }

func (e *Endpoint) giveUp() {
	e.stats.GiveUps += len(e.unacked) + len(e.waiting)
	e.unacked, e.waiting = nil, nil
	e.dataTx = e.dataTx[:0]
	e.gaveUp = true
	e.timeouts = 0
	e.s++
	e.b = 0
}

func ctlWord(t FrameType, session, seq uint8) Word {
	b, err := Frame{Type: t, Session: session, Seq: seq}.Marshal()
	if err != nil {
		panic(err)
	}
	w, err := EncodeWord(ChPMOS, true, true, b)
	if err != nil {
		panic(err)
	}
	return w
}

// Receive takes one word received from the peer at time now.
func (e *Endpoint) Receive(w Word, now int64) {
	e.Advance(now)
	e.stats.RxWords++
	d, err := DecodeWord(w)
	if err != nil {
		e.stats.RxErrors++
		return
	}
	if d.Ch == ChRaw {
		e.raw = append(e.raw, d.Data)
		return
	}
	b, ok := e.reasm.Push(d)
	if !ok {
		return
	}
	f, err := ParseFrame(b)
	if err != nil {
		e.stats.RxBad++
		return
	}
	switch f.Type {
	case FrameData:
		e.onData(f)
	case FrameAck:
		e.onAck(f, now)
	case FrameRst:
		e.onRst(f)
	}
}

func (e *Endpoint) onData(f Frame) {
	if !e.rxValid || f.Session != e.sRx {
		if f.Seq != 0 {
			// "I hold no receive session for your session s".
			for _, s := range e.rsts {
				if s == f.Session {
					return
				}
			}
			e.rsts = append(e.rsts, f.Session)
			return
		}
		if len(e.inbox) >= e.cfg.InboxLimit {
			return // flow control: neither open nor acknowledge
		}
		e.rxValid, e.sRx, e.e = true, f.Session, 0
	}
	if f.Seq == e.e {
		if len(e.inbox) >= e.cfg.InboxLimit {
			return
		}
		e.inbox = append(e.inbox, f.Payload)
		e.stats.RxFrames++
		e.stats.Delivered += len(f.Payload)
		e.e++
	}
	w := ctlWord(FrameAck, e.sRx, e.e)
	e.ack = &w // a newer ACK replaces an older one not yet sent
}

func (e *Endpoint) onAck(f Frame, now int64) {
	if f.Session != e.s {
		return
	}
	k := int(f.Seq - e.b)
	switch {
	case k >= 1 && k <= len(e.unacked):
		e.unacked = e.unacked[k:]
		e.b = f.Seq
		e.timeouts = 0
		e.gaveUp = false
		if len(e.unacked) > 0 && e.unacked[0].complete {
			e.timerOn, e.timerAt, e.fast = true, now+e.cfg.RTOPS, true
		} else {
			e.timerOn = false
		}
		e.fill()
	case f.Seq == e.b && e.fast && len(e.unacked) > 0:
		e.timerOn = false
		e.fast = false
		e.resendAll()
	}
}

func (e *Endpoint) onRst(f Frame) {
	if f.Session != e.s {
		return
	}
	e.stats.Resets++
	e.timerOn = false
	e.s++
	e.b = 0
	for i, fr := range e.unacked {
		fr.seq = uint8(i)
	}
	e.resendAll()
}
