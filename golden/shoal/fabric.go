package shoal

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/labrunner/labrunner/internal/edgecolour"
)

// Topology is one channel's two-stage leaf-spine fabric of k-port circuit
// switches (§3.2, Fig. 2; the prototype's Fig. 8: four leaves and two spines
// of 4-port switches for 8 nodes).
//
// Port numbering (the contract with the runner, which translates the
// emulator's register dump into it):
//
//   - Leaf l has k ports. Port p < k/2 faces node l·k/2 + p; port k/2 + s
//     faces spine s.
//   - Spine s has k ports; port l faces leaf l (the leaf's port k/2 + s).
//   - Every link is full duplex: "input port x" is the receive side of the
//     link on port x, "output port x" its transmit side.
//
// Nodes are dealt to leaves in order, k/2 per leaf; the last leaf may be
// partly used when N is not a multiple of k/2.
type Topology struct {
	Nodes, Radix int
}

// Down is the number of node-facing ports of a leaf (and of spines), k/2.
func (t Topology) Down() int { return t.Radix / 2 }

// Leaves is the number of leaf switches, ceil(N / (k/2)).
func (t Topology) Leaves() int { return ceilDiv(t.Nodes, t.Down()) }

// Spines is the number of spine switches, k/2.
func (t Topology) Spines() int { return t.Down() }

// Switches is the number of switches of one channel's fabric.
func (t Topology) Switches() int { return t.Leaves() + t.Spines() }

// Validate checks that the fabric can be built.
func (t Topology) Validate() error {
	if t.Radix < 2 || t.Radix%2 != 0 {
		return fmt.Errorf("topology: radix %d: want an even port count ≥ 2", t.Radix)
	}
	if t.Nodes < 2 || t.Nodes > t.Radix*t.Radix/2 {
		return fmt.Errorf("topology: %d nodes: %d-port switches in two stages connect 2..%d nodes (§3.2)", t.Nodes, t.Radix, t.Radix*t.Radix/2)
	}
	return nil
}

// NodePort returns the leaf a node hangs off and its port there.
func (t Topology) NodePort(node int) (leaf, port int) { return node / t.Down(), node % t.Down() }

// SwitchID names one circuit switch: its channel's fabric, its stage and its
// index within the stage.
type SwitchID struct {
	Channel int
	Spine   bool
	Index   int
}

// String is the switch's name in expectations: "leaf0".."leafL-1",
// "spine0".."spineS-1", prefixed "chC." on channels other than 0.
func (s SwitchID) String() string {
	name := "leaf"
	if s.Spine {
		name = "spine"
	}
	name += strconv.Itoa(s.Index)
	if s.Channel > 0 {
		name = "ch" + strconv.Itoa(s.Channel) + "." + name
	}
	return name
}

// ParseSwitchID reads the String form.
func ParseSwitchID(s string) (SwitchID, error) {
	var id SwitchID
	rest := strings.TrimSpace(s)
	if strings.HasPrefix(rest, "ch") {
		c, r, ok := strings.Cut(rest[2:], ".")
		n, err := strconv.Atoi(c)
		if !ok || err != nil || n < 0 || n >= MaxChannels {
			return id, fmt.Errorf("switch %q: want leafN, spineN or chC.leafN / chC.spineN", s)
		}
		id.Channel, rest = n, r
	}
	switch {
	case strings.HasPrefix(rest, "leaf"):
		rest = rest[4:]
	case strings.HasPrefix(rest, "spine"):
		id.Spine, rest = true, rest[5:]
	default:
		return id, fmt.Errorf("switch %q: want leafN, spineN or chC.leafN / chC.spineN", s)
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 0 || n > MaxNodes || rest != strconv.Itoa(n) {
		return id, fmt.Errorf("switch %q: bad index %q", s, rest)
	}
	id.Index = n
	return id, nil
}

// SwitchIDs lists one channel's switches in the order Decompose returns
// their configurations: leaves, then spines.
func (t Topology) SwitchIDs(channel int) []SwitchID {
	ids := make([]SwitchID, 0, t.Switches())
	for l := 0; l < t.Leaves(); l++ {
		ids = append(ids, SwitchID{Channel: channel, Index: l})
	}
	for s := 0; s < t.Spines(); s++ {
		ids = append(ids, SwitchID{Channel: channel, Spine: true, Index: s})
	}
	return ids
}

// SwitchSlot is one switch's configuration in one slot: Out[in] is the output
// port the input port is connected to, -1 when the input goes nowhere. This
// is the form the runner compares a register dump against, slot by slot.
type SwitchSlot struct {
	Out []int
}

// Select returns the same configuration as the prototype's registers hold it
// (§4.1: one p:1 multiplexer per output port, driven by one register):
// Select()[out] is the input port feeding the output, -1 for none.
func (c SwitchSlot) Select() []int {
	sel := make([]int, len(c.Out))
	for i := range sel {
		sel[i] = -1
	}
	for in, out := range c.Out {
		if out >= 0 && out < len(sel) {
			sel[out] = in
		}
	}
	return sel
}

// FromSelect builds a SwitchSlot from per-output-port selections (the
// register form of §4.1); an input feeding two outputs is an error, since a
// circuit switch carries one cell per input per slot.
func FromSelect(sel []int) (SwitchSlot, error) {
	out := make([]int, len(sel))
	for i := range out {
		out[i] = -1
	}
	for o, in := range sel {
		if in < 0 {
			continue
		}
		if in >= len(sel) {
			return SwitchSlot{}, fmt.Errorf("output %d selects input %d, past the %d ports", o, in, len(sel))
		}
		if out[in] >= 0 {
			return SwitchSlot{}, fmt.Errorf("input %d feeds outputs %d and %d", in, out[in], o)
		}
		out[in] = o
	}
	return SwitchSlot{Out: out}, nil
}

// Text renders the configuration as "in>out,..." (MappingText).
func (c SwitchSlot) Text() string { return MappingText(c.Out) }

// Decompose splits one slot of a channel's fabric schedule into the
// configurations of that channel's switches, in SwitchIDs order (§3.2: "we
// decompose the schedule of the overall fabric into the schedule for each
// constituent circuit switch").
//
// Every circuit crosses a leaf, a spine and a leaf, even between two nodes of
// one leaf (§3.2). The spine of a circuit is the sending node's port on its
// leaf (spine = src mod k/2). Under the cyclic schedule that choice never
// collides at a destination leaf: the k/2 nodes that send into one leaf in a
// slot are k/2 consecutive node numbers, so their ports are all different.
// When it would collide (a partly used last leaf, or a split column of the
// propagation-aware schedule wrapping around), the spines are assigned by
// colouring the leaf-to-leaf demand, a bipartite multigraph of degree ≤ k/2,
// with k/2 colours (König's theorem; alternating-path recolouring), which is
// deterministic. Any other valid assignment is as good for the fabric: a
// runner that wants to accept one compares Compose of the dumped registers
// with the fabric schedule rather than the registers themselves.
func (t Topology) Decompose(s *Schedule, slot, channel int) ([]SwitchSlot, error) {
	if err := t.Validate(); err != nil {
		return nil, err
	}
	if s.Nodes() != t.Nodes {
		return nil, fmt.Errorf("decompose: schedule has %d nodes, topology %d", s.Nodes(), t.Nodes)
	}
	if channel < 0 || channel >= s.Channels() {
		return nil, fmt.Errorf("decompose: channel %d: schedule has %d", channel, s.Channels())
	}
	n := t.Down()
	var srcs, dsts []int
	for i := 0; i < t.Nodes; i++ {
		if d := s.Dst(slot, channel, i); d >= 0 {
			srcs, dsts = append(srcs, i), append(dsts, d)
		}
	}
	spine := make([]int, len(srcs))
	canonical := true
	seen := make([]bool, t.Leaves()*n)
	for e := range srcs {
		spine[e] = srcs[e] % n
		k := (dsts[e]/n)*n + spine[e]
		if seen[k] {
			canonical = false
			break
		}
		seen[k] = true
	}
	if !canonical {
		us, vs := make([]int, len(srcs)), make([]int, len(srcs))
		for e := range srcs {
			us[e], vs[e] = srcs[e]/n, dsts[e]/n
		}
		var err error
		if spine, err = edgecolour.Bipartite(t.Leaves(), n, us, vs); err != nil {
			var over *edgecolour.OverloadError
			if errors.As(err, &over) {
				return nil, fmt.Errorf("decompose slot %d channel %d: leaf %d or %d carries more than %d circuits in one slot", slot, channel, over.U, over.V, over.Colours)
			}
			return nil, fmt.Errorf("decompose slot %d channel %d: %w", slot, channel, err)
		}
	}
	cfg := make([]SwitchSlot, t.Switches())
	for i := range cfg {
		cfg[i].Out = make([]int, t.Radix)
		for p := range cfg[i].Out {
			cfg[i].Out[p] = -1
		}
	}
	L := t.Leaves()
	for e := range srcs {
		lu, pu := t.NodePort(srcs[e])
		lv, pv := t.NodePort(dsts[e])
		sp := spine[e]
		cfg[lu].Out[pu] = n + sp
		cfg[L+sp].Out[lu] = lv
		cfg[lv].Out[n+sp] = pv
	}
	return cfg, nil
}

// Compose follows every node's cell through one slot's switch configurations
// (SwitchIDs order) and returns dst[i], the node it reaches, -1 for a node
// whose leaf input goes nowhere. It fails on a configuration a circuit switch
// cannot hold (two inputs on one output) and on a path that is not
// leaf-spine-leaf (§3.2) or ends on a port with nothing behind it.
// Circuits no node drives (spine ports of idle paths) are not examined.
func (t Topology) Compose(cfg []SwitchSlot) ([]int, error) {
	if err := t.Validate(); err != nil {
		return nil, err
	}
	if len(cfg) != t.Switches() {
		return nil, fmt.Errorf("compose: %d switch configurations, the fabric has %d", len(cfg), t.Switches())
	}
	ids := t.SwitchIDs(0)
	for w, c := range cfg {
		if len(c.Out) != t.Radix {
			return nil, fmt.Errorf("compose: %s has %d ports, want %d", ids[w], len(c.Out), t.Radix)
		}
		used := make([]int, t.Radix)
		for i := range used {
			used[i] = -1
		}
		for in, out := range c.Out {
			if out < 0 {
				continue
			}
			if out >= t.Radix {
				return nil, fmt.Errorf("compose: %s input %d goes to port %d, past its %d ports", ids[w], in, out, t.Radix)
			}
			if used[out] >= 0 {
				return nil, fmt.Errorf("compose: %s output %d driven by inputs %d and %d (contention)", ids[w], out, used[out], in)
			}
			used[out] = in
		}
	}
	n, L := t.Down(), t.Leaves()
	dst := make([]int, t.Nodes)
	for i := range dst {
		lu, pu := t.NodePort(i)
		up := cfg[lu].Out[pu]
		if up < 0 {
			dst[i] = -1
			continue
		}
		if up < n {
			return nil, fmt.Errorf("compose: node %d: %s turns it back down to port %d; every path crosses a spine (§3.2)", i, ids[lu], up)
		}
		sp := up - n
		lv := cfg[L+sp].Out[lu]
		if lv < 0 {
			return nil, fmt.Errorf("compose: node %d: %s input %d goes nowhere", i, ids[L+sp], lu)
		}
		if lv >= L {
			return nil, fmt.Errorf("compose: node %d: %s sends to port %d, which faces no leaf", i, ids[L+sp], lv)
		}
		down := cfg[lv].Out[n+sp]
		if down < 0 {
			return nil, fmt.Errorf("compose: node %d: %s input %d goes nowhere", i, ids[lv], n+sp)
		}
		if down >= n {
			return nil, fmt.Errorf("compose: node %d: %s sends it back up to port %d", i, ids[lv], down)
		}
		d := lv*n + down
		if d >= t.Nodes {
			return nil, fmt.Errorf("compose: node %d: %s port %d has no node", i, ids[lv], down)
		}
		dst[i] = d
	}
	return dst, nil
}

// SwitchSchedule decomposes a whole epoch: out[slot][channel][switch].
func (t Topology) SwitchSchedule(s *Schedule) ([][][]SwitchSlot, error) {
	out := make([][][]SwitchSlot, s.EpochSlots())
	for slot := range out {
		out[slot] = make([][]SwitchSlot, s.Channels())
		for ch := range out[slot] {
			cfg, err := t.Decompose(s, slot, ch)
			if err != nil {
				return nil, err
			}
			out[slot][ch] = cfg
		}
	}
	return out, nil
}

// CheckSlot compares one slot's switch configurations (as dumped from the
// switches and translated to SwitchSlot) with the fabric schedule: nil when
// they carry exactly the schedule's circuits, otherwise an error naming the
// first node whose cell would go astray.
func (t Topology) CheckSlot(s *Schedule, slot, channel int, cfg []SwitchSlot) error {
	got, err := t.Compose(cfg)
	if err != nil {
		return fmt.Errorf("slot %d channel %d: %w", slot, channel, err)
	}
	for i, g := range got {
		if want := s.Dst(slot, channel, i); g != want {
			return fmt.Errorf("slot %d channel %d: node %d is connected to node %d, the schedule says %d (-1: idle)", slot, channel, i, g, want)
		}
	}
	return nil
}
