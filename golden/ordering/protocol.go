package ordering

import (
	"fmt"
	"strconv"
	"strings"
)

// Mode is how a stream's requests are ordered (SC'18 §III, §IV-A).
type Mode uint8

// The transfer modes.
const (
	// Unordered: every request is delivered as it arrives (§IV-A "No
	// Ordering"; the fall-back transport of synchronized data).
	Unordered Mode = iota
	// Slow: ordered transfer, source-side ordering: one outstanding request,
	// the next sent only after the previous one's ACK (§III-D1).
	Slow
	// Fast: ordered transfer, target-side ordering: requests burst on a
	// speculative connection and a reorder buffer restores their order
	// (§III-D2).
	Fast
	// Sync: synchronized transfer: data requests delivered in any order, the
	// last request, the synchronization operation, only after all of them
	// (§III-E).
	Sync
)

var modeNames = [...]string{"unordered", "slow", "fast", "sync"}

func (m Mode) String() string {
	if int(m) < len(modeNames) {
		return modeNames[m]
	}
	return "mode(" + strconv.Itoa(int(m)) + ")"
}

// ParseMode reads a mode as String writes it.
func ParseMode(s string) (Mode, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	for i, n := range modeNames {
		if t == n {
			return Mode(i), nil
		}
	}
	return 0, fmt.Errorf("ordering: mode %q: want one of %s", s, strings.Join(modeNames[:], ", "))
}

// Kind is a packet type (SC'18 Table I).
type Kind uint8

// The packet types.
const (
	REQ    Kind = iota // request
	ACK                // acknowledges a REQ (carries its result)
	NACK               // REQ rejected: retransmit it
	FIN                // close the connection
	FINACK             // the target closed the connection
)

var kindNames = [...]string{"REQ", "ACK", "NACK", "FIN", "FIN-ACK"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Reason says why a REQ was NACKed.
type Reason uint8

// NACK reasons.
const (
	NoReason Reason = iota
	// NoConn: the target had no free connection (§III-C: the source falls
	// back to slow mode).
	NoConn
	// Full: the reorder buffer was full (§IV-D: "packets are dropped").
	Full
)

func (r Reason) String() string {
	switch r {
	case NoConn:
		return "no-connection"
	case Full:
		return "buffer-full"
	}
	return ""
}

// Packet is one packet of the protocols. The target sees only what a real
// header carries: source endpoint, CID, SEQ, flags, CNT and the transfer
// mode field (§III-E, footnote 11). Stream and Copy are the model's
// bookkeeping, for logs.
type Packet struct {
	Kind Kind
	Src  int // source endpoint of the stream
	CID  int // connection identifier at the source; -1: none (slow or unordered without a connection)
	Seq  int // position of the REQ in its stream, from 0
	Mode Mode
	SYN  bool // first REQ of a fast sequence: its SEQ starts the count
	EOD  bool // exactly-once delivery
	// SyncOp marks the synchronization operation of a synchronized transfer;
	// CNT is the number of REQs the target must account for, itself included.
	SyncOp bool
	CNT    int
	Reason Reason // of a NACK

	Stream int // index of the stream in the run
	Copy   int // transmission number of a REQ (0: first) or FIN
}

func (p Packet) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s s%d", p.Kind, p.Stream)
	if p.Kind == REQ || p.Kind == ACK || p.Kind == NACK {
		fmt.Fprintf(&b, " #%d", p.Seq+1)
	}
	if p.Kind == REQ {
		fmt.Fprintf(&b, " %s", p.Mode)
		if p.SYN {
			b.WriteString(" SYN")
		}
		if p.EOD {
			b.WriteString(" EOD")
		}
		if p.SyncOp {
			fmt.Fprintf(&b, " sync CNT=%d", p.CNT)
		}
	}
	if p.Kind == NACK {
		b.WriteString(" " + p.Reason.String())
	}
	if p.Copy > 0 {
		fmt.Fprintf(&b, " (copy %d)", p.Copy+1)
	}
	return b.String()
}

// Exec is one execution of a request's operation in target memory.
type Exec struct {
	Stream, Seq int
}
