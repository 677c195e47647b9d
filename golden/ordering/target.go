package ordering

import (
	"fmt"
	"sort"
)

// TargetConfig sizes a receiver (SC'18 §IV-D).
type TargetConfig struct {
	// Conns is the number of receiver connections; 0: unlimited.
	Conns int
	// ROB is the reorder buffer capacity in packets, shared by all
	// connections (§III-C: it "neither depends on the number of network
	// nodes nor the number of connections"); 0: unlimited.
	ROB int
}

type connKey struct{ src, cid int }

type conn struct {
	key      connKey
	stream   int
	expKnown bool
	expected int              // ordered: next SEQ to execute
	rob      map[int]Packet   // ordered: buffered REQs by SEQ
	executed map[int]bool     // synchronized: data SEQs executed
	syncHeld *Packet          // synchronized: the held synchronization operation
	syncDone bool             //
	replay   map[int]struct{} // SEQs whose result sits in a replay buffer (EOD)
}

// Target is the reference receiver of SC'18 §III: it turns the REQs, in the
// order they arrive, into executions in target memory and responses.
type Target struct {
	cfg                         TargetConfig
	conns                       map[connKey]*conn
	robUsed                     int
	replayUsed                  int
	MaxROB, MaxConns, MaxReplay int
	Replays                     int // duplicates answered from a replay buffer
	FullNACKs                   int // REQs NACKed for a full reorder buffer (§IV-D)
	Execs                       []Exec
	Anomalies                   []string
}

// NewTarget returns an idle receiver.
func NewTarget(cfg TargetConfig) *Target {
	return &Target{cfg: cfg, conns: map[connKey]*conn{}}
}

// Open returns the number of open connections.
func (t *Target) Open() int { return len(t.conns) }

// Buffered returns the reorder buffer occupancy.
func (t *Target) Buffered() int { return t.robUsed }

func (t *Target) anomaly(format string, a ...any) {
	t.Anomalies = append(t.Anomalies, fmt.Sprintf(format, a...))
}

// Receive handles one packet arriving at the target and returns the
// packets it sends back. Executions are appended to t.Execs.
func (t *Target) Receive(p Packet) []Packet {
	switch p.Kind {
	case FIN:
		k := connKey{p.Src, p.CID}
		if c, ok := t.conns[k]; ok {
			t.close(c)
		}
		// A FIN for a connection already closed (its FIN-ACK was lost) is
		// answered again and opens nothing.
		return []Packet{t.resp(p, FINACK)}
	case REQ:
		return t.req(p)
	}
	t.anomaly("target received a %s", p)
	return nil
}

func (t *Target) resp(p Packet, k Kind) Packet {
	return Packet{Kind: k, Src: p.Src, CID: p.CID, Seq: p.Seq, Stream: p.Stream, Mode: p.Mode, SyncOp: p.SyncOp}
}

func (t *Target) nack(p Packet, r Reason) []Packet {
	n := t.resp(p, NACK)
	n.Reason = r
	if r == Full {
		t.FullNACKs++
	}
	return []Packet{n}
}

func (t *Target) exec(p Packet) Packet {
	t.Execs = append(t.Execs, Exec{p.Stream, p.Seq})
	return t.resp(p, ACK)
}

func (t *Target) req(p Packet) []Packet {
	if p.Mode == Unordered {
		// No state, no ordering: execute and acknowledge (§IV-A).
		return []Packet{t.exec(p)}
	}
	k := connKey{p.Src, p.CID}
	c, ok := t.conns[k]
	if !ok && p.CID >= 0 && (p.Mode != Slow || p.EOD) {
		// Speculative connection set-up: the first REQ received opens the
		// connection, "whether it has the SYN flag set or not" (§III-D2).
		// Exactly-once delivery needs the connection's state (§III-C), so
		// an EOD REQ needs one even in slow mode.
		if t.cfg.Conns > 0 && len(t.conns) >= t.cfg.Conns {
			return t.nack(p, NoConn)
		}
		c = &conn{key: k, stream: p.Stream, rob: map[int]Packet{}, executed: map[int]bool{}, replay: map[int]struct{}{}}
		t.conns[k] = c
		t.MaxConns = max(t.MaxConns, len(t.conns))
		ok = true
		defer func() {
			// A connection whose first REQ was not accepted holds nothing:
			// free it at once rather than leak it.
			if len(c.rob) == 0 && c.syncHeld == nil && !c.expKnown && len(c.executed) == 0 && !c.syncDone {
				delete(t.conns, k)
			}
		}()
	}
	if !ok {
		// Slow mode without a connection: the source's one-at-a-time rule
		// keeps the order, so the REQ goes straight to memory (§III-D1); a
		// duplicate is executed again (Fig. 4).
		return []Packet{t.exec(p)}
	}
	if p.Mode == Sync {
		return t.sync(c, p)
	}
	return t.ordered(c, p)
}

// duplicate answers a REQ whose operation was already executed: from the
// replay buffer with exactly-once delivery (§III-D3), by executing it again
// without (duplicates are only detected when exactly-once delivery is asked
// for, §III-C).
func (t *Target) duplicate(c *conn, p Packet) []Packet {
	if p.EOD {
		if _, ok := c.replay[p.Seq]; !ok {
			t.anomaly("no replay buffer for duplicate %s", p)
		}
		t.Replays++
		return []Packet{t.resp(p, ACK)}
	}
	return []Packet{t.exec(p)}
}

func (t *Target) execute(c *conn, p Packet) Packet {
	if p.EOD {
		c.replay[p.Seq] = struct{}{}
		t.replayUsed++
		t.MaxReplay = max(t.MaxReplay, t.replayUsed)
	}
	return t.exec(p)
}

func (t *Target) ordered(c *conn, p Packet) []Packet {
	if c.expKnown && p.Seq < c.expected {
		return t.duplicate(c, p)
	}
	var out []Packet
	switch {
	case p.Mode == Slow:
		// The source sends a slow REQ only when every earlier one is
		// acknowledged, so all of them have executed: the REQ is next in
		// order whatever the connection expected.
		for s := range c.rob {
			if s < p.Seq {
				t.anomaly("slow %s overtakes buffered #%d", p, s+1)
				t.unbuffer(c, s)
			}
		}
		c.expKnown, c.expected = true, p.Seq
	case !c.expKnown && p.SYN:
		c.expKnown, c.expected = true, p.Seq
	}
	if c.expKnown && p.Seq == c.expected {
		if _, held := c.rob[p.Seq]; held {
			t.unbuffer(c, p.Seq) // this copy stands for the buffered one
		}
		out = append(out, t.execute(c, p))
		c.expected++
		for {
			q, ok := c.rob[c.expected]
			if !ok {
				break
			}
			t.unbuffer(c, c.expected)
			out = append(out, t.execute(c, q))
			c.expected++
		}
		return out
	}
	// Out of order: keep it until the gap closes.
	if _, held := c.rob[p.Seq]; held {
		return nil // a copy is already buffered; it is acknowledged when delivered
	}
	if t.cfg.ROB > 0 && t.robUsed >= t.cfg.ROB {
		return t.nack(p, Full)
	}
	c.rob[p.Seq] = p
	t.buffer()
	return nil
}

func (t *Target) buffer() {
	t.robUsed++
	t.MaxROB = max(t.MaxROB, t.robUsed)
}

func (t *Target) unbuffer(c *conn, seq int) {
	delete(c.rob, seq)
	t.robUsed--
}

func (t *Target) sync(c *conn, p Packet) []Packet {
	if !p.SyncOp {
		if c.executed[p.Seq] {
			return t.duplicate(c, p)
		}
		c.executed[p.Seq] = true
		out := []Packet{t.execute(c, p)}
		return append(out, t.release(c)...)
	}
	switch {
	case c.syncDone:
		// The synchronization operation is non-idempotent and always EOD
		// (§III-E): answer from the replay buffer.
		return t.duplicate(c, p)
	case c.syncHeld != nil:
		// Another copy; a smaller CNT (sent once the source has seen every
		// data ACK itself) lowers what is still awaited.
		c.syncHeld.CNT = min(c.syncHeld.CNT, p.CNT)
		return t.release(c)
	case len(c.executed) >= p.CNT-1:
		c.syncDone = true
		return []Packet{t.execute(c, p)}
	}
	if t.cfg.ROB > 0 && t.robUsed >= t.cfg.ROB {
		return t.nack(p, Full)
	}
	held := p
	c.syncHeld = &held
	t.buffer()
	return nil
}

// release executes the held synchronization operation once CNT-1 data
// REQs have executed: "the receiver counts the ACKs returned from the target
// memory" (§III-E). Counting distinct SEQs, not ACKs, keeps a duplicate
// data REQ from releasing it early.
func (t *Target) release(c *conn) []Packet {
	if c.syncHeld == nil || len(c.executed) < c.syncHeld.CNT-1 {
		return nil
	}
	p := *c.syncHeld
	c.syncHeld = nil
	t.robUsed--
	c.syncDone = true
	return []Packet{t.execute(c, p)}
}

func (t *Target) close(c *conn) {
	if len(c.rob) > 0 || c.syncHeld != nil {
		seqs := make([]int, 0, len(c.rob))
		for s := range c.rob {
			seqs = append(seqs, s+1)
		}
		sort.Ints(seqs)
		t.anomaly("stream %d closed with REQs %v still buffered (held sync: %v)", c.stream, seqs, c.syncHeld != nil)
		t.robUsed -= len(c.rob)
		if c.syncHeld != nil {
			t.robUsed--
		}
	}
	t.replayUsed -= len(c.replay)
	delete(t.conns, c.key)
}
