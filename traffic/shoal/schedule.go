package shoal

import (
	"fmt"
	"strconv"
	"strings"
)

// Schedule is a fabric schedule for one epoch: Tx[t][i] is the node that
// node i sends to in slot t, -1 when it sends nothing (Shoal §3.2).
type Schedule struct {
	Nodes int
	Tx    [][]int
}

// Cyclic is the static round-robin schedule of Fig. 3 (Shoal §3.2): an epoch
// of N-1 slots; in slot t node i sends to (i+t+1) mod N, so every pair is
// connected once per epoch. Slot 0 is the paper's "time slot 1", the
// configuration the switches hold before the bootstrap (§3.4).
func Cyclic(n int) (Schedule, error) {
	if n < 2 {
		return Schedule{}, fmt.Errorf("cyclic schedule of %d nodes: need at least 2", n)
	}
	s := Schedule{Nodes: n, Tx: make([][]int, n-1)}
	for t := range s.Tx {
		row := make([]int, n)
		for i := range row {
			row[i] = (i + t + 1) % n
		}
		s.Tx[t] = row
	}
	return s, nil
}

// Epoch is the number of slots of the schedule.
func (s Schedule) Epoch() int { return len(s.Tx) }

// Rx returns the node whose cell node i receives in slot t, -1 for none.
func (s Schedule) Rx(t, i int) int {
	for j, d := range s.Tx[t] {
		if d == i {
			return j
		}
	}
	return -1
}

// Validate checks that every slot is a partial permutation: each node sends
// to at most one other node and receives from at most one.
func (s Schedule) Validate() error {
	if s.Nodes < 2 || len(s.Tx) == 0 {
		return fmt.Errorf("schedule: %d nodes, %d slots: want ≥ 2 nodes and ≥ 1 slot", s.Nodes, len(s.Tx))
	}
	for t, row := range s.Tx {
		if len(row) != s.Nodes {
			return fmt.Errorf("schedule slot %d: %d entries for %d nodes", t, len(row), s.Nodes)
		}
		seen := make([]bool, s.Nodes)
		for i, d := range row {
			if d < 0 {
				continue
			}
			if d >= s.Nodes || d == i {
				return fmt.Errorf("schedule slot %d: node %d sends to %d", t, i, d)
			}
			if seen[d] {
				return fmt.Errorf("schedule slot %d: node %d receives from two nodes", t, d)
			}
			seen[d] = true
		}
	}
	return nil
}

// Mapping renders a slot as "0>1,1>2,...": the nodes that send, in order
// (the form golden/shoal lists the schedule in).
func (s Schedule) Mapping(t int) string { return MappingText(s.Tx[t]) }

// MappingText renders m[i] = j as "i>j" for every i with j ≥ 0 ("-" for
// none).
func MappingText(m []int) string {
	var b strings.Builder
	for i, j := range m {
		if j < 0 {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(i))
		b.WriteByte('>')
		b.WriteString(strconv.Itoa(j))
	}
	if b.Len() == 0 {
		return "-"
	}
	return b.String()
}

// Bits of a NIC schedule word (docs/shoal.md, "NIC schedule memory").
const (
	nicTxMask  = 0x3FF
	nicTxValid = 1 << 15
	nicRxShift = 16
	nicRxMask  = 0x3FF << nicRxShift
	nicRxValid = 1 << 31
)

// NICWord encodes node i's schedule word for slot t: TX_PEER and RX_PEER
// with their valid bits.
func (s Schedule) NICWord(t, i int) uint32 {
	var w uint32
	if d := s.Tx[t][i]; d >= 0 {
		w |= uint32(d)&nicTxMask | nicTxValid
	}
	if r := s.Rx(t, i); r >= 0 {
		w |= uint32(r)<<nicRxShift&nicRxMask | nicRxValid
	}
	return w
}

// NICEntry is a decoded NIC schedule word: the peer sent to and the peer
// received from, -1 when not valid.
type NICEntry struct{ Tx, Rx int }

// DecodeNICWord decodes a NIC schedule word.
func DecodeNICWord(w uint32) NICEntry {
	e := NICEntry{Tx: -1, Rx: -1}
	if w&nicTxValid != 0 {
		e.Tx = int(w & nicTxMask)
	}
	if w&nicRxValid != 0 {
		e.Rx = int(w & nicRxMask >> nicRxShift)
	}
	return e
}
