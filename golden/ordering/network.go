package ordering

// Schedule is a Network that follows a fixed list of actions, then stops
// (and the run drains in order). Indexes wrap around the packets in flight
// or the timers, so any list is a valid adversary: the fuzz targets feed
// random ones.
type Schedule struct {
	Steps []Action
	next  int
}

// Next implements Network.
func (s *Schedule) Next([]Packet, []Timer) Action {
	if s.next >= len(s.Steps) {
		return Action{Op: Stop}
	}
	a := s.Steps[s.next]
	s.next++
	return a
}

// Script is a Network for hand-worked cases of one stream: the first copies
// of the REQs arrive in the order Arrivals gives (SEQs from 1, as the
// paper's figures number them), the first copies of the REQs in Lost are
// lost, and so are the first ACKs of the REQs in LostACKs. Everything else
// (responses, retransmissions, FIN) is delivered oldest first, and a timeout
// fires when nothing is in flight.
type Script struct {
	Arrivals, Lost, LostACKs []int
	pos                      int
	ackSeen                  map[int]bool
	at                       map[int]int // REQ number -> its place in Arrivals
	lost, lostACK            map[int]bool
}

// Next implements Network.
func (s *Script) Next(inFlight []Packet, timers []Timer) Action {
	if s.ackSeen == nil {
		s.ackSeen, s.at, s.lost, s.lostACK = map[int]bool{}, map[int]int{}, map[int]bool{}, map[int]bool{}
		for i, k := range s.Arrivals {
			s.at[k] = i
		}
		for _, k := range s.Lost {
			s.lost[k] = true
		}
		for _, k := range s.LostACKs {
			s.lostACK[k] = true
		}
	}
	for i, p := range inFlight {
		if p.Kind == ACK && !s.ackSeen[p.Seq] {
			s.ackSeen[p.Seq] = true
			if s.lostACK[p.Seq+1] {
				return Action{Drop, i}
			}
		}
	}
	pending := func(p Packet) bool {
		k, listed := s.at[p.Seq+1]
		return p.Kind == REQ && p.Copy == 0 && listed && k >= s.pos
	}
	if s.pos < len(s.Arrivals) {
		for i, p := range inFlight {
			if pending(p) && p.Seq+1 == s.Arrivals[s.pos] {
				s.pos++
				if s.lost[p.Seq+1] {
					return Action{Drop, i}
				}
				return Action{Deliver, i}
			}
		}
		// The REQ the order names next is not out yet: let anything else
		// move (responses, retransmissions, timeouts) so the source can
		// send it.
		for i, p := range inFlight {
			if !pending(p) {
				return Action{Deliver, i}
			}
		}
		for i, tm := range timers {
			if !tm.Held {
				return Action{Fire, i}
			}
		}
		if len(inFlight) > 0 {
			// Only first copies the order puts later are out: the order
			// cannot be honoured further.
			s.pos = len(s.Arrivals)
		}
	}
	if s.pos >= len(s.Arrivals) {
		waiting := false
		for _, k := range s.LostACKs {
			waiting = waiting || !s.ackSeen[k-1]
		}
		if !waiting {
			return Action{Op: Stop}
		}
	}
	a, _ := drain(inFlight, timers)
	return a
}

// DropEvery is the Network of a target that discards the first arrival of
// SEQ N-1, 2N-1, ... of every stream (SEQs from 0) over a network whose
// round trip is short beside the sources' timeout: packets arrive oldest
// first, and a timeout fires when nothing is left in flight — a lost REQ's
// first, a REQ held in the reorder buffer's only when no lost one is left.
// A lost REQ thus holds back the rest of its stream's window in the reorder
// buffer for a whole timeout, and the holds of streams that run side by
// side add up: a reorder-buffer skew a runner controls with a drop pattern.
// N = 0 drops nothing.
//
// Patience bounds a lost REQ's wait while packets keep moving (REQs NACKed
// for a full buffer and resent at once would otherwise keep the network
// busy for ever): its timer fires after that many further actions (0:
// 1000, more than two streams of a 25-REQ window exchange in a hold).
type DropEvery struct {
	N, Patience int
	// Dropped counts the REQs discarded so far.
	Dropped int
	step    int
	arrived map[[2]int]bool // {stream, SEQ} of REQs that reached the target
	due     map[[2]int]int  // {stream, SEQ} of a lost REQ's timer -> the step it became due
}

// Next implements Network.
func (d *DropEvery) Next(inFlight []Packet, timers []Timer) Action {
	if d.arrived == nil {
		d.arrived, d.due = map[[2]int]bool{}, map[[2]int]int{}
	}
	d.step++
	patience := d.Patience
	if patience <= 0 {
		patience = 1000
	}
	lost := -1
	due := map[[2]int]int{} // only the timers still listed keep their age
	for i, tm := range timers {
		if tm.Held {
			continue
		}
		k := [2]int{tm.Stream, tm.Seq}
		since, ok := d.due[k]
		if !ok {
			since = d.step
		}
		due[k] = since
		if lost < 0 && (len(inFlight) == 0 || d.step-since >= patience) {
			lost = i
		}
	}
	d.due = due
	if lost >= 0 {
		tm := timers[lost]
		delete(d.due, [2]int{tm.Stream, tm.Seq})
		return Action{Fire, lost}
	}
	if len(inFlight) > 0 {
		p := inFlight[0]
		if p.Kind == REQ {
			k := [2]int{p.Stream, p.Seq}
			first := !d.arrived[k]
			d.arrived[k] = true
			if first && d.N > 0 && (p.Seq+1)%d.N == 0 {
				d.Dropped++
				return Action{Drop, 0}
			}
		}
		return Action{Deliver, 0}
	}
	if len(timers) > 0 {
		return Action{Fire, 0}
	}
	return Action{Op: Stop}
}
