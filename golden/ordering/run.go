package ordering

import (
	"fmt"
	"slices"
)

// Config sizes both ends of a run.
type Config struct {
	Target TargetConfig
	// SourceConns is the number of connections of each source endpoint; 0:
	// unlimited.
	SourceConns int
	// Window bounds the outstanding REQs of a fast or synchronized stream;
	// 0: unbounded. §IV-D (Fig. 12c) limits it to half the reorder buffer.
	Window int
	// MaxSteps bounds the run; 0: a default proportional to the REQs.
	MaxSteps int
}

// Op is what the network does next.
type Op uint8

// Network operations.
const (
	Deliver Op = iota // deliver a packet in flight
	Drop              // lose a packet in flight
	Fire              // fire the timeout of a lost (or held) REQ or FIN
	Stop              // nothing more to say: the run drains in order, without loss
)

// Timer is a timeout that may fire: the REQ (Seq >= 0) or FIN (Seq = -1) of
// a stream has no copy and no response in the network any more, so it was
// lost or, if Held, sits in the target's reorder buffer (the fixed packet
// lifetime of §III-B lets a source know that no answer can still come).
type Timer struct {
	Stream, Seq int
	Held        bool
}

// Action is the network's choice: Index is into the packets in flight
// (Deliver, Drop) or the timers (Fire).
type Action struct {
	Op    Op
	Index int
}

// Network decides the arrival order and loss pattern of a run. Next sees
// the packets in flight, oldest first, and the timers that may fire.
type Network interface {
	Next(inFlight []Packet, timers []Timer) Action
}

// StreamResult is what happened to one stream.
type StreamResult struct {
	Execs      []int // executions of each REQ
	Complete   bool  // every REQ acknowledged and the connection closed
	FellBack   bool  // ran (part of) the stream in slow mode / source-side synchronization
	Retransmit int   // REQ copies beyond the first
	NACKs      int
}

// Result is the outcome of a run.
type Result struct {
	Execs   []Exec // target memory, in execution order
	Streams []StreamResult
	// Peaks at the target: reorder buffer occupancy, open connections,
	// replay buffer entries; Replays counts duplicates answered from them.
	MaxROB, MaxConns, MaxReplay, Replays int
	// FullNACKs counts the REQs the target NACKed for a full reorder
	// buffer (§IV-D: "the buffer fills up and packets are dropped").
	FullNACKs int
	// Anomalies: target states the protocol should never reach (a REQ still
	// buffered at FIN, a slow REQ overtaking a buffered one, a connection
	// left open). A correct reference run has none.
	Anomalies []string
	Steps     int
	// Stalled is set when the run could not complete within its step bound.
	Stalled string
}

// Run plays the streams against the reference target through net (nil:
// deliver everything in order, without loss). Streams of one source start
// one after the other, each when its predecessor has sent all its REQs
// once; streams of different sources run side by side.
func Run(cfg Config, streams []Stream, net Network) (Result, error) {
	if len(streams) == 0 {
		return Result{}, fmt.Errorf("ordering: a run needs at least one stream")
	}
	total := 0
	for i, s := range streams {
		if err := s.check(); err != nil {
			return Result{}, fmt.Errorf("stream %d: %w", i, err)
		}
		total += s.N
	}
	if cfg.Target.Conns < 0 || cfg.Target.ROB < 0 || cfg.SourceConns < 0 || cfg.Window < 0 || cfg.MaxSteps < 0 {
		return Result{}, fmt.Errorf("ordering: negative resource count in %+v", cfg)
	}
	r := &runner{cfg: cfg, tgt: NewTarget(cfg.Target), srcConns: map[int][]bool{}}
	for i, s := range streams {
		r.src = append(r.src, newSource(i, s))
	}
	limit := cfg.MaxSteps
	if limit == 0 {
		limit = 1000 + 200*total
	}
	r.pump()
	draining := net == nil
	for !r.allDone() {
		if r.steps >= limit {
			r.res.Stalled = fmt.Sprintf("not complete after %d steps (%d packets in flight, %d timers)", r.steps, len(r.flight), len(r.timers()))
			break
		}
		r.steps++
		var a Action
		timers := r.timers()
		if !draining {
			a = net.Next(slices.Clone(r.flight), timers)
			if a.Op == Stop {
				draining = true
			}
		}
		if draining {
			var ok bool
			if a, ok = drain(r.flight, timers); !ok {
				r.res.Stalled = "nothing in flight and no timeout to fire, yet not complete"
				break
			}
		}
		switch a.Op {
		case Deliver, Drop:
			if len(r.flight) == 0 {
				continue
			}
			i := mod(a.Index, len(r.flight))
			p := r.flight[i]
			r.flight = slices.Delete(r.flight, i, i+1)
			if a.Op == Deliver {
				r.deliver(p)
			}
		case Fire:
			if len(timers) == 0 {
				continue
			}
			tm := timers[mod(a.Index, len(timers))]
			r.src[tm.Stream].timeout(tm.Seq)
		}
		r.pump()
	}
	return r.result(), nil
}

// drain is the orderly network: the timeout of a lost packet fires first
// (its timer would expire whatever else is in flight), then packets arrive
// oldest first without loss, and the timeout of a REQ held at the target
// fires only when nothing else moves.
func drain(flight []Packet, timers []Timer) (Action, bool) {
	for i, tm := range timers {
		if !tm.Held {
			return Action{Fire, i}, true
		}
	}
	switch {
	case len(flight) > 0:
		return Action{Deliver, 0}, true
	case len(timers) > 0:
		return Action{Fire, 0}, true
	}
	return Action{Op: Stop}, false
}

func mod(i, n int) int {
	i %= n
	if i < 0 {
		i += n
	}
	return i
}

type runner struct {
	cfg      Config
	tgt      *Target
	src      []*source
	flight   []Packet
	steps    int
	srcConns map[int][]bool // per source endpoint: connection slots in use
	res      Result
}

func (r *runner) allDone() bool {
	for _, s := range r.src {
		if !s.done {
			return false
		}
	}
	return true
}

// claim returns a free connection id of a source endpoint, or -1.
func (r *runner) claim(ep int) int {
	slots := r.srcConns[ep]
	for i, used := range slots {
		if !used {
			slots[i] = true
			return i
		}
	}
	if r.cfg.SourceConns > 0 && len(slots) >= r.cfg.SourceConns {
		return -1
	}
	r.srcConns[ep] = append(slots, true)
	return len(slots)
}

func (r *runner) reqsInFlight(stream int) bool {
	for _, p := range r.flight {
		if p.Stream == stream && p.Kind == REQ {
			return true
		}
	}
	return false
}

// pump lets every stream send what it may, starting streams in turn.
func (r *runner) pump() {
	emit := func(p Packet) { r.flight = append(r.flight, p) }
	prevSent := map[int]bool{} // per source endpoint: may the next stream start?
	for _, s := range r.src {
		ep := s.st.Src
		ready, seen := prevSent[ep]
		if seen && !ready {
			continue
		}
		if !s.started && !s.start(func() int { return r.claim(ep) }) {
			prevSent[ep] = false
			continue
		}
		s.pump(r.cfg.Window, r.reqsInFlight(s.id), emit)
		if s.done && s.cid >= 0 && !s.released {
			// FIN-ACK received (or never needed): the CID is free again.
			r.srcConns[ep][s.cid] = false
			s.released = true
		}
		prevSent[ep] = s.sentAll
	}
}

func (r *runner) deliver(p Packet) {
	switch p.Kind {
	case REQ, FIN:
		r.flight = append(r.flight, r.tgt.Receive(p)...)
	default:
		r.src[p.Stream].receive(p)
	}
}

// timers lists the timeouts that may fire: REQs outstanding with neither a
// copy nor a response in flight, and FINs without FIN or FIN-ACK in flight.
func (r *runner) timers() []Timer {
	type key struct{ stream, seq int }
	busy := map[key]bool{}
	for _, p := range r.flight {
		switch p.Kind {
		case REQ, ACK, NACK:
			busy[key{p.Stream, p.Seq}] = true
		case FIN, FINACK:
			busy[key{p.Stream, -1}] = true
		}
	}
	held := map[key]bool{}
	for _, c := range r.tgt.conns {
		for seq := range c.rob {
			held[key{c.stream, seq}] = true
		}
		if c.syncHeld != nil {
			held[key{c.stream, c.syncHeld.Seq}] = true
		}
	}
	var out []Timer
	for _, s := range r.src {
		if !s.started || s.done {
			continue
		}
		for seq, st := range s.state {
			if st == outstanding && !busy[key{s.id, seq}] {
				out = append(out, Timer{s.id, seq, held[key{s.id, seq}]})
			}
		}
		if s.fin == finSent && !busy[key{s.id, -1}] {
			out = append(out, Timer{Stream: s.id, Seq: -1})
		}
	}
	return out
}

func (r *runner) result() Result {
	res := r.res
	t := r.tgt
	res.Execs = t.Execs
	res.MaxROB, res.MaxConns, res.MaxReplay, res.Replays = t.MaxROB, t.MaxConns, t.MaxReplay, t.Replays
	res.FullNACKs = t.FullNACKs
	res.Anomalies = slices.Clone(t.Anomalies)
	res.Steps = r.steps
	for _, s := range r.src {
		sr := StreamResult{Execs: make([]int, s.st.N), Complete: s.done, FellBack: s.fellBack, Retransmit: s.retransmits, NACKs: s.nacks}
		res.Streams = append(res.Streams, sr)
	}
	for _, e := range t.Execs {
		res.Streams[e.Stream].Execs[e.Seq]++
	}
	if res.Stalled == "" {
		if t.Open() > 0 {
			res.Anomalies = append(res.Anomalies, fmt.Sprintf("%d connections left open after every stream completed", t.Open()))
		}
		if t.Buffered() > 0 {
			res.Anomalies = append(res.Anomalies, fmt.Sprintf("%d REQs left in the reorder buffer after every stream completed", t.Buffered()))
		}
	}
	return res
}
