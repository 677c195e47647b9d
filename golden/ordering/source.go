package ordering

import "fmt"

// Stream is one transfer a source endpoint issues to the target.
type Stream struct {
	Src  int  // source endpoint
	Mode Mode // requested mode (Slow, Fast, Sync or Unordered)
	N    int  // REQs; for Sync the last one is the synchronization operation
	// EOD asks exactly-once delivery for every REQ. The synchronization
	// operation of a Sync stream is always EOD (§III-E).
	EOD bool
}

// MaxStreamLen bounds a stream's length in the model.
const MaxStreamLen = 1 << 16

func (s Stream) check() error {
	if s.Mode > Sync {
		return fmt.Errorf("ordering: stream mode %d is not one of unordered, slow, fast, sync", s.Mode)
	}
	if s.N < 1 || s.N > MaxStreamLen {
		return fmt.Errorf("ordering: stream of %d REQs: want 1..%d", s.N, MaxStreamLen)
	}
	if s.Mode == Sync && s.N < 1 {
		return fmt.Errorf("ordering: a synchronized transfer needs its synchronization operation")
	}
	if s.Src < 0 {
		return fmt.Errorf("ordering: source endpoint %d is negative", s.Src)
	}
	if s.Mode == Unordered && s.EOD {
		return fmt.Errorf("ordering: exactly-once delivery needs a connection (§III-C); an unordered stream has none")
	}
	return nil
}

type reqState uint8

const (
	unsent reqState = iota
	outstanding
	resend
	acked
)

type finState uint8

const (
	noFin finState = iota
	finSent
	finDone
)

// source is the reference sender of one stream (SC'18 §III).
type source struct {
	st       Stream
	id       int
	started  bool
	cid      int // -1: no connection
	mode     Mode
	fellBack bool
	state    []reqState
	copies   []int // transmissions per REQ
	out      int   // REQs outstanding (sent, neither ACKed nor NACKed)
	avail    int   // REQs the source endpoint has made available so far (a timed run releases them over time)
	sentAll  bool  // every REQ sent at least once
	fin      finState
	finCopy  int
	done     bool
	released bool // the source connection was given back
	// counters
	retransmits, nacks int
}

func newSource(id int, st Stream) *source {
	return &source{st: st, id: id, cid: -1, state: make([]reqState, st.N), copies: make([]int, st.N), avail: st.N}
}

// needsConn: fast, synchronized and exactly-once streams use a source
// connection (§III-C footnote 4: "Connection resources are required at both
// the source and the target").
func (s *source) needsConn() bool {
	return s.st.Mode == Fast || s.st.Mode == Sync || (s.st.Mode == Slow && s.st.EOD)
}

// start claims a source connection if the stream needs one. A fast stream
// without EOD runs in slow mode when none is free (§III-C); the others wait.
func (s *source) start(cid func() int) bool {
	s.mode = s.st.Mode
	if s.needsConn() {
		if c := cid(); c >= 0 {
			s.cid = c
		} else if s.st.Mode == Fast && !s.st.EOD {
			s.mode, s.fellBack = Slow, true
		} else {
			return false
		}
	}
	s.started = true
	return true
}

func (s *source) req(seq int) Packet {
	p := Packet{Kind: REQ, Src: s.st.Src, CID: s.cid, Seq: seq, Mode: s.mode, EOD: s.st.EOD, Stream: s.id, Copy: s.copies[seq]}
	if s.st.Mode == Sync && seq == s.st.N-1 {
		p.SyncOp, p.EOD, p.CNT = true, true, s.st.N
		if s.fellBack {
			// Source-side synchronization: every data ACK is in, nothing is
			// left to account for (§III-A, Fig. 3a).
			p.CNT = 1
		}
		p.Mode = Sync
	}
	if s.mode == Fast && seq == 0 {
		p.SYN = true
	}
	return p
}

func (s *source) send(seq int, emit func(Packet)) {
	if s.copies[seq] > 0 {
		s.retransmits++
	}
	p := s.req(seq)
	s.copies[seq]++
	s.state[seq] = outstanding
	s.out++
	emit(p)
}

// pump sends what the stream may send now. window bounds the outstanding
// REQs of a fast or synchronized connection (0: unbounded); inFlight
// reports whether copies of the stream's REQs are still in the network.
func (s *source) pump(window int, inFlight bool, emit func(Packet)) {
	if !s.started || s.done {
		return
	}
	room := func() bool { return window <= 0 || s.out < window }
	switch {
	case s.mode == Slow:
		// One at a time: the lowest REQ not yet acknowledged, once every
		// earlier one is (§III-D1). Copies of later REQs a fallen-back stream
		// sent in fast mode may still be out; they do not hold it back.
		for seq, st := range s.state {
			if st == acked {
				continue
			}
			if (st == unsent && seq < s.avail) || st == resend {
				s.send(seq, emit)
			}
			break
		}
	case s.mode == Sync && s.fellBack:
		// Data go unordered; the synchronization operation waits for every
		// data ACK (source-side synchronization).
		last := s.st.N - 1
		allData := true
		for seq := 0; seq < last; seq++ {
			if s.state[seq] != acked {
				allData = false
			}
			if (s.state[seq] == unsent && seq < s.avail || s.state[seq] == resend) && room() {
				s.mode = Unordered
				s.send(seq, emit)
				s.mode = Sync
			}
		}
		if allData && (s.state[last] == unsent && last < s.avail || s.state[last] == resend) {
			s.send(last, emit)
		}
	default: // Fast, Sync, Unordered: burst in order, retransmit at once.
		for seq, st := range s.state {
			if (st == unsent && seq < s.avail || st == resend) && room() {
				s.send(seq, emit)
			}
		}
	}
	if !s.sentAll {
		s.sentAll = true
		for _, st := range s.state {
			if st == unsent {
				s.sentAll = false
			}
		}
	}
	for _, st := range s.state {
		if st != acked {
			return
		}
	}
	switch {
	case s.cid < 0:
		s.done = true
	case s.fin == noFin && !inFlight:
		// Close only when no REQ copy can still reach the target (§III-D2:
		// "only initiated after it is guaranteed that no data REQ ... is left
		// in the network"; the fixed packet lifetime of §III-B).
		s.fin = finSent
		emit(Packet{Kind: FIN, Src: s.st.Src, CID: s.cid, Stream: s.id, Mode: s.st.Mode, Copy: s.finCopy})
		s.finCopy++
	}
}

// receive handles a response from the target.
func (s *source) receive(p Packet) {
	switch p.Kind {
	case ACK:
		if s.state[p.Seq] == outstanding {
			s.out--
		}
		s.state[p.Seq] = acked
	case NACK:
		if s.state[p.Seq] != outstanding {
			return // a stale NACK of a copy whose twin was acknowledged
		}
		s.nacks++
		s.out--
		s.state[p.Seq] = resend
		if p.Reason == NoConn && (s.mode == Fast || (s.mode == Sync && !s.st.EOD)) && !s.fellBack {
			// No receiver connection: fall back so that progress can still
			// be made (§III-C). Exactly-once data cannot leave the
			// connection that detects their duplicates, so a synchronized
			// EOD transfer keeps asking for one instead.
			s.fellBack = true
			if s.mode == Fast {
				s.mode = Slow
			}
		}
	case FINACK:
		if s.fin == finSent {
			s.fin, s.done = finDone, true
		}
	}
}

// timeout marks a lost REQ (or FIN) for retransmission (§III-B: timeouts
// detect lost packets). seq < 0 is the FIN.
func (s *source) timeout(seq int) {
	if seq < 0 {
		if s.fin == finSent {
			s.fin = noFin
		}
		return
	}
	if s.state[seq] == outstanding {
		s.out--
		s.state[seq] = resend
	}
}
