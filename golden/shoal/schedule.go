package shoal

import (
	"fmt"
	"strconv"
	"strings"
)

// ScheduleKind selects the fabric schedule.
type ScheduleKind int

const (
	// Cyclic is the static round-robin schedule of §3.2 (Fig. 3): in column
	// t = 1..N-1 of an epoch every node i sends to (i+t) mod N.
	Cyclic ScheduleKind = iota
	// PropagationAware is the schedule of Appendix A (Fig. 19): the cyclic
	// columns re-ordered so that half an epoch separates "i sends to j" from
	// "j sends to i", leaving time for the rate-limit feedback to come back.
	PropagationAware
)

// String returns the parameter spelling: "cyclic" or "propagation".
func (k ScheduleKind) String() string {
	switch k {
	case Cyclic:
		return "cyclic"
	case PropagationAware:
		return "propagation"
	}
	return "schedule(" + strconv.Itoa(int(k)) + ")"
}

// ParseScheduleKind reads "cyclic" or "propagation" (also "appendix-a").
func ParseScheduleKind(s string) (ScheduleKind, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "cyclic", "round-robin", "":
		return Cyclic, nil
	case "propagation", "propagation-aware", "appendix-a":
		return PropagationAware, nil
	}
	return 0, fmt.Errorf("schedule %q unknown (want cyclic or propagation)", s)
}

// Column is one column of the single-channel schedule: every included node
// i sends to (i+Offset) mod N. Half restricts the column to the nodes below
// N/2 (Half 1) or from N/2 up (Half 2); 0 includes every node. Halves exist
// only in the propagation-aware schedule for an even N, where the column of
// offset N/2 is split in two so that i→i+N/2 and i+N/2→i fall half an epoch
// apart (Appendix A: "an additional empty slot per node").
type Column struct {
	Offset int
	Half   int
}

// Includes reports whether node i sends in this column of an n-node rack.
func (c Column) Includes(i, n int) bool {
	switch c.Half {
	case 1:
		return i < n/2
	case 2:
		return i >= n/2
	}
	return true
}

// Columns is the number of columns of one epoch of the single-channel
// schedule: N-1, or N for the propagation-aware schedule of an even N.
func Columns(n int, kind ScheduleKind) int {
	if kind == PropagationAware && n%2 == 0 && n > 2 {
		return n
	}
	return n - 1
}

// ScheduleColumns returns the columns of one epoch in slot order.
//
// Cyclic: offsets 1, 2, ..., N-1 (§3.2).
//
// Propagation aware (Appendix A), with h = (N-1)/2 for an odd N: offsets
// 1..h, then the last h columns inverted, N-1 down to h+1; the slot of i→j
// (offset t ≤ h, position t) and the slot of j→i (offset N-t, position h+t)
// are exactly h columns apart, and h again from j→i round to the next i→j.
// For an even N, h = N/2-1: offsets 1..h, offset N/2 for the lower half of
// the nodes, N-1 down to N/2+1, offset N/2 for the upper half; every pair's
// two directions are N/2 columns apart, and each node has one empty column
// per epoch (a throughput loss of 1/N, Appendix A).
func ScheduleColumns(n int, kind ScheduleKind) []Column {
	cols := make([]Column, 0, Columns(n, kind))
	if kind != PropagationAware || n <= 2 {
		for t := 1; t < n; t++ {
			cols = append(cols, Column{Offset: t})
		}
		return cols
	}
	if n%2 == 1 {
		h := (n - 1) / 2
		for t := 1; t <= h; t++ {
			cols = append(cols, Column{Offset: t})
		}
		for t := n - 1; t > h; t-- {
			cols = append(cols, Column{Offset: t})
		}
		return cols
	}
	h := n/2 - 1
	for t := 1; t <= h; t++ {
		cols = append(cols, Column{Offset: t})
	}
	cols = append(cols, Column{Offset: n / 2, Half: 1})
	for t := n - 1; t > n/2; t-- {
		cols = append(cols, Column{Offset: t})
	}
	return append(cols, Column{Offset: n / 2, Half: 2})
}

// Schedule is the fabric schedule of one epoch: which node each node sends to
// in every slot on every channel. Columns are dealt to channels in turn
// (column q goes to channel q mod C, slot q div C), so each channel serves a
// 1/C share of the destinations (§3.4) and the Appendix A spacing, measured
// in slots, shrinks with the epoch.
//
// Slots are numbered from 0: slot 0 is the paper's "time slot 1", the
// configuration the switches hold from bootstrap until the bootstrap signal
// (§3.4). Nodes are numbered 0..N-1 (the paper's Node-0..Node-511, §7.2).
type Schedule struct {
	nodes, channels, slots int
	kind                   ScheduleKind
	cols                   []Column // len slots*channels; Offset 0 = idle
	when                   []int32  // [src*N+dst] = slot*channels+channel, -1 for src == dst
}

// NewSchedule builds the schedule of an n-node rack with the given channels.
func NewSchedule(n, channels int, kind ScheduleKind) (*Schedule, error) {
	if n < 2 || n > MaxNodes {
		return nil, fmt.Errorf("schedule: %d nodes: want 2..%d", n, MaxNodes)
	}
	if channels < 1 || channels > MaxChannels {
		return nil, fmt.Errorf("schedule: %d channels: want 1..%d", channels, MaxChannels)
	}
	if kind != Cyclic && kind != PropagationAware {
		return nil, fmt.Errorf("schedule: kind %d unknown", int(kind))
	}
	base := ScheduleColumns(n, kind)
	slots := ceilDiv(len(base), channels)
	s := &Schedule{nodes: n, channels: channels, slots: slots, kind: kind,
		cols: make([]Column, slots*channels), when: make([]int32, n*n)}
	for q, c := range base {
		s.cols[(q/channels)*channels+q%channels] = c
	}
	for i := range s.when {
		s.when[i] = -1
	}
	for sc, c := range s.cols {
		if c.Offset == 0 {
			continue
		}
		for i := 0; i < n; i++ {
			if c.Includes(i, n) {
				s.when[i*n+(i+c.Offset)%n] = int32(sc)
			}
		}
	}
	return s, nil
}

// Nodes returns N.
func (s *Schedule) Nodes() int { return s.nodes }

// Channels returns the number of channels.
func (s *Schedule) Channels() int { return s.channels }

// Kind returns the schedule kind.
func (s *Schedule) Kind() ScheduleKind { return s.kind }

// EpochSlots returns the slots of one epoch.
func (s *Schedule) EpochSlots() int { return s.slots }

// Column returns the column a channel runs in a slot of the epoch (slot taken
// modulo the epoch); Offset 0 means the channel idles in that slot.
func (s *Schedule) Column(slot, channel int) Column {
	return s.cols[s.index(slot, channel)]
}

func (s *Schedule) index(slot, channel int) int {
	slot %= s.slots
	if slot < 0 {
		slot += s.slots
	}
	return slot*s.channels + channel
}

// Dst returns the node that node sends to in the slot (taken modulo the
// epoch) on the channel, or -1 when it sends nothing there.
func (s *Schedule) Dst(slot, channel, node int) int {
	c := s.cols[s.index(slot, channel)]
	if c.Offset == 0 || !c.Includes(node, s.nodes) {
		return -1
	}
	return (node + c.Offset) % s.nodes
}

// Src returns the node that node receives from in the slot on the channel,
// or -1.
func (s *Schedule) Src(slot, channel, node int) int {
	c := s.cols[s.index(slot, channel)]
	if c.Offset == 0 {
		return -1
	}
	src := (node - c.Offset + s.nodes) % s.nodes
	if !c.Includes(src, s.nodes) {
		return -1
	}
	return src
}

// When returns the slot and channel in which src sends to dst once per epoch;
// ok is false for src == dst or nodes out of range.
func (s *Schedule) When(src, dst int) (slot, channel int, ok bool) {
	if src < 0 || dst < 0 || src >= s.nodes || dst >= s.nodes {
		return 0, 0, false
	}
	w := s.when[src*s.nodes+dst]
	if w < 0 {
		return 0, 0, false
	}
	return int(w) / s.channels, int(w) % s.channels, true
}

// Pairs returns, for one slot and channel, dst[i] = the node i sends to, -1
// for none.
func (s *Schedule) Pairs(slot, channel int) []int {
	out := make([]int, s.nodes)
	for i := range out {
		out[i] = s.Dst(slot, channel, i)
	}
	return out
}

// Gap returns how many slots after src's slot to dst the slot of dst to src
// comes, within the cyclic epoch (Appendix A's spacing); -1 for src == dst.
func (s *Schedule) Gap(src, dst int) int {
	a, _, ok1 := s.When(src, dst)
	b, _, ok2 := s.When(dst, src)
	if !ok1 || !ok2 {
		return -1
	}
	return ((b-a)%s.slots + s.slots) % s.slots
}

// MappingText renders a node (or port) mapping as "0>1,1>2,...", skipping
// entries below 0: the form of the shoal.schedule and shoal.switch_config
// expectations.
func MappingText(m []int) string {
	var b strings.Builder
	for i, d := range m {
		if d < 0 {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(i))
		b.WriteByte('>')
		b.WriteString(strconv.Itoa(d))
	}
	if b.Len() == 0 {
		return "-"
	}
	return b.String()
}

// ParseMapping reads the MappingText form back into a mapping of size n
// (unlisted entries -1), refusing repeated sources, out-of-range numbers and
// two sources on one destination.
func ParseMapping(s string, n int) ([]int, error) {
	if n < 0 || n > 1<<20 {
		return nil, fmt.Errorf("mapping size %d out of range", n)
	}
	out := make([]int, n)
	for i := range out {
		out[i] = -1
	}
	s = strings.TrimSpace(s)
	if s == "-" || s == "" {
		return out, nil
	}
	used := make([]bool, n)
	for _, f := range strings.Split(s, ",") {
		a, b, ok := strings.Cut(strings.TrimSpace(f), ">")
		if !ok {
			return nil, fmt.Errorf("mapping entry %q: want in>out", f)
		}
		in, err1 := strconv.Atoi(strings.TrimSpace(a))
		out2, err2 := strconv.Atoi(strings.TrimSpace(b))
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("mapping entry %q: want whole numbers in>out", f)
		}
		if in < 0 || in >= n || out2 < 0 || out2 >= n {
			return nil, fmt.Errorf("mapping entry %q: numbers must be 0..%d", f, n-1)
		}
		if out[in] >= 0 {
			return nil, fmt.Errorf("mapping entry %q: input %d listed twice", f, in)
		}
		if used[out2] {
			return nil, fmt.Errorf("mapping entry %q: output %d driven twice", f, out2)
		}
		out[in], used[out2] = out2, true
	}
	return out, nil
}
