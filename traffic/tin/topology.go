// Package tin drives the TiN-style cell fabric (Aquila, NSDI 2022, §2-3 and
// §6, with the SC'18 ordering engine in its 1RMA endpoint) through its
// registers only (bitstreams/catalogue/tin.yaml, docs/tin.md): it configures
// a Clique of boards (addresses, port roles, the routing tables of the
// recipe), loads the on-chip traffic generators with the traffic patterns of
// the TiN plan, runs the fabric with bounded register writes, and reads back
// counters, the trace collector, delivery logs and latency samples. The
// same code drives the emulated rack and ZCU102 boards: nothing here imports
// the emulator.
package tin

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Limits of the design's routing tables (tin.yaml: max_pods, max_tins_per_pod,
// route_entries; docs/tin.md "Tables").
const (
	MaxPods       = 8
	MaxTiNs       = 8
	Cages         = 4 // GNet ports: the four SFP+ cages of a ZCU102
	PortIP        = 4 // switch port of the IP endpoint
	PortRMA       = 5 // switch port of the 1RMA endpoint
	SwitchPorts   = 6 // cages + the two intra-chip ports
	Destinations  = MaxPods * MaxTiNs
	MinimalSlots  = 8  // §3.2: eight minimal candidates per (input port, destination)
	NonMinSlots   = 24 // §3.2: 24 non-minimal candidates
	EntrySlots    = MinimalSlots + NonMinSlots
	entryValid    = 0x80
	tableBase     = 0x10000
	tableStride   = 32 // bytes per (input port, destination) entry list
	tableWords    = tableStride / 4
	tablePortSize = Destinations * tableStride
)

// Role is a cage's PORT_ROLE value.
type Role uint8

// Port roles (docs/tin.md "Addresses and port roles").
const (
	RoleOff    Role = 0
	RoleLocal  Role = 1 // pod-internal link, no FEC (§3.2)
	RoleGlobal Role = 2 // inter-pod link, FEC (§3.2)
)

func (r Role) String() string {
	switch r {
	case RoleLocal:
		return "local"
	case RoleGlobal:
		return "global"
	}
	return "off"
}

// Node is a TiN of the Clique: its pod and its number in the pod.
type Node struct{ Pod, TiN int }

// String renders the node as golden/tin writes it in paths: "p0t1".
func (n Node) String() string { return "p" + strconv.Itoa(n.Pod) + "t" + strconv.Itoa(n.TiN) }

// Index is the TiN index of the routing tables and the generators'
// destination masks: pod*8 + tin.
func (n Node) Index() int { return n.Pod*MaxTiNs + n.TiN }

// Addr is the chip's GNet address, TIN_ADDR: pod<<10 | tin<<5, endpoint 0.
func (n Node) Addr() Addr { return Addr(n.Pod<<10 | n.TiN<<5) }

// NodeOfIndex is the node of a table index.
func NodeOfIndex(i int) Node { return Node{i / MaxTiNs, i % MaxTiNs} }

// Addr is a 16-bit GNet address: pod (15:10), TiN (9:5), endpoint (4:0)
// (§3.2; docs/tin.md).
type Addr uint16

// Pod, TiN and EP split the address.
func (a Addr) Pod() int { return int(a >> 10) }

// TiN is the TiN component.
func (a Addr) TiN() int { return int(a>>5) & 0x1F }

// EP is the endpoint component: 0 MAC, 1-2 host NIC, 3 CPU, 4 the 1RMA engine.
func (a Addr) EP() int { return int(a) & 0x1F }

// Node is the TiN the address belongs to.
func (a Addr) Node() Node { return Node{a.Pod(), a.TiN()} }

// String renders "p0t1e2", as golden/tin writes addresses.
func (a Addr) String() string { return a.Node().String() + "e" + strconv.Itoa(a.EP()) }

// Endpoint ids (docs/tin.md).
const (
	EPMac = 0
	EPNIC = 1
	EPRMA = 4
)

// WithEP returns the address of endpoint ep of the same TiN.
func (a Addr) WithEP(ep int) Addr { return a&^0x1F | Addr(ep&0x1F) }

// Cage is one SFP+ cage of a board.
type Cage struct {
	Board string
	Index int // 0..3: sfp0..sfp3
}

func (c Cage) String() string { return c.Board + ":sfp" + strconv.Itoa(c.Index) }

// ParseCage reads a lab port name "sfpK".
func ParseCage(port string) (int, error) {
	s, ok := strings.CutPrefix(strings.ToLower(strings.TrimSpace(port)), "sfp")
	if !ok {
		return 0, fmt.Errorf("port %q is not a GNet cage: the tin design uses sfp0..sfp%d", port, Cages-1)
	}
	k, err := strconv.Atoi(s)
	if err != nil || k < 0 || k >= Cages || strconv.Itoa(k) != s {
		return 0, fmt.Errorf("port %q is not a GNet cage: the tin design uses sfp0..sfp%d", port, Cages-1)
	}
	return k, nil
}

// Cable is a lab cable between two cages.
type Cable struct {
	A, B      Cage
	LatencyNS float64
}

// Port is what the runner knows of one cage of a board.
type Port struct {
	Role      Role
	Peer      string // board at the other end ("" when not cabled in the plan)
	PeerCage  int
	LatencyNS float64
}

// Topology is the Clique as the runner sees it: each plan board's node and
// each cage's role and peer, from the plan's board parameters and the lab's
// cables. Cables between TiNs of one pod are local links, between pods
// global links (§3.2); a cage cabled to nothing in the plan is off.
type Topology struct {
	Boards []string // plan order
	Node   map[string]Node
	ByNode map[Node]string
	Ports  map[string]*[Cages]Port
}

// NewTopology checks the nodes and the cabling. nodes holds every board of
// the plan; cables whose ends are not both plan boards are left out (a
// board outside the plan is not running the design).
func NewTopology(order []string, nodes map[string]Node, cables []Cable) (*Topology, error) {
	t := &Topology{Node: map[string]Node{}, ByNode: map[Node]string{}, Ports: map[string]*[Cages]Port{}}
	if len(order) == 0 {
		return nil, fmt.Errorf("tin topology: no board")
	}
	for _, b := range order {
		n, ok := nodes[b]
		if !ok {
			return nil, fmt.Errorf("tin topology: board %s has no pod and TiN (give it params: {pod: P, tin: T})", b)
		}
		if n.Pod < 0 || n.Pod >= MaxPods || n.TiN < 0 || n.TiN >= MaxTiNs {
			return nil, fmt.Errorf("tin topology: board %s at %s: the routing tables reach pods 0..%d and TiNs 0..%d", b, n, MaxPods-1, MaxTiNs-1)
		}
		if other, dup := t.ByNode[n]; dup {
			return nil, fmt.Errorf("tin topology: boards %s and %s are both %s: every TiN needs its own address", other, b, n)
		}
		if _, dup := t.Node[b]; dup {
			return nil, fmt.Errorf("tin topology: board %s listed twice", b)
		}
		t.Node[b], t.ByNode[n] = n, b
		t.Boards = append(t.Boards, b)
		t.Ports[b] = &[Cages]Port{}
	}
	for _, c := range cables {
		pa, okA := t.Ports[c.A.Board]
		pb, okB := t.Ports[c.B.Board]
		if !okA || !okB {
			continue
		}
		for _, e := range []Cage{c.A, c.B} {
			if e.Index < 0 || e.Index >= Cages {
				return nil, fmt.Errorf("tin topology: cable %s - %s: %s is not a GNet cage (sfp0..sfp%d)", c.A, c.B, e, Cages-1)
			}
		}
		if c.A.Board == c.B.Board {
			return nil, fmt.Errorf("tin topology: cable %s - %s loops back to its own board: the design has no use for it, unplug it", c.A, c.B)
		}
		if pa[c.A.Index].Peer != "" || pb[c.B.Index].Peer != "" {
			return nil, fmt.Errorf("tin topology: cable %s - %s: a cage has two cables", c.A, c.B)
		}
		role := RoleLocal
		if t.Node[c.A.Board].Pod != t.Node[c.B.Board].Pod {
			role = RoleGlobal
		}
		pa[c.A.Index] = Port{Role: role, Peer: c.B.Board, PeerCage: c.B.Index, LatencyNS: c.LatencyNS}
		pb[c.B.Index] = Port{Role: role, Peer: c.A.Board, PeerCage: c.A.Index, LatencyNS: c.LatencyNS}
	}
	return t, nil
}

// RoleWord is the board's PORT_ROLE value: 2 bits per cage, sfp0 in 1:0.
func (t *Topology) RoleWord(board string) uint32 {
	var w uint32
	for k, p := range t.Ports[board] {
		w |= uint32(p.Role) << (2 * k)
	}
	return w
}

// Mask is the destination mask (IPG_DST_MASK_LO/HI, RG_DST_MASK_LO/HI) of
// the given nodes.
func Mask(nodes ...Node) uint64 {
	var m uint64
	for _, n := range nodes {
		m |= 1 << uint(n.Index())
	}
	return m
}

// Nodes returns the nodes of the given boards (all boards when none given).
func (t *Topology) Nodes(boards ...string) []Node {
	if len(boards) == 0 {
		boards = t.Boards
	}
	out := make([]Node, 0, len(boards))
	for _, b := range boards {
		out = append(out, t.Node[b])
	}
	return out
}

// Shape is the smallest pods x TiNs rectangle holding every node (golden/tin's
// clique parameter).
func (t *Topology) Shape() (pods, tins int) {
	for _, n := range t.Node {
		pods, tins = max(pods, n.Pod+1), max(tins, n.TiN+1)
	}
	return pods, tins
}

// Wiring lists the global links as golden/tin's wiring parameter writes
// them ("p0t0-p1t0,p0t1-p1t1"), each once, sorted.
func (t *Topology) Wiring() string {
	seen := map[string]bool{}
	var out []string
	for _, b := range t.Boards {
		for _, p := range t.Ports[b] {
			if p.Role != RoleGlobal {
				continue
			}
			a, z := t.Node[b].String(), t.Node[p.Peer].String()
			if z < a {
				a, z = z, a
			}
			if k := a + "-" + z; !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

// MeanLatency is the mean cable latency of the links of one role (0 when
// there are none): golden/tin's local_prop_ns and global_prop_ns.
func (t *Topology) MeanLatency(role Role) float64 {
	s, n := 0.0, 0
	for _, b := range t.Boards {
		for _, p := range t.Ports[b] {
			if p.Role == role && p.Peer != "" {
				s += p.LatencyNS
				n++
			}
		}
	}
	if n == 0 {
		return 0
	}
	return s / float64(n)
}

// PeerOf returns the board and cage at the other end of a cage.
func (t *Topology) PeerOf(board string, cage int) (string, int, bool) {
	ps, ok := t.Ports[board]
	if !ok || cage < 0 || cage >= Cages || ps[cage].Peer == "" {
		return "", 0, false
	}
	return ps[cage].Peer, ps[cage].PeerCage, true
}

// CageTo returns the cages of board leading to board peer.
func (t *Topology) CageTo(board, peer string) []int {
	var out []int
	for k, p := range t.Ports[board] {
		if p.Peer == peer {
			out = append(out, k)
		}
	}
	return out
}

// inputClass is what the recipe distinguishes about an input port.
type inputClass uint8

const (
	inTerminal inputClass = iota // the IP or 1RMA endpoint
	inLocal
	inGlobal
)

// Table is the entry list of one input port and destination: Minimal holds
// up to 8 cages, NonMinimal up to 24 (§3.2).
type Table struct {
	Minimal, NonMinimal []int
}

// Words packs the list as the rt window holds it: entry k in byte lane k%4
// of word k/4, 0x80|cage, empty entries 0.
func (tb Table) Words() [tableWords]uint32 {
	var ent [EntrySlots]uint8
	for k, c := range tb.Minimal {
		ent[k] = entryValid | uint8(c)
	}
	for k, c := range tb.NonMinimal {
		ent[MinimalSlots+k] = entryValid | uint8(c)
	}
	var w [tableWords]uint32
	for i := range w {
		w[i] = uint32(ent[4*i]) | uint32(ent[4*i+1])<<8 | uint32(ent[4*i+2])<<16 | uint32(ent[4*i+3])<<24
	}
	return w
}

// DecodeTable unpacks the words of one entry list (the inverse of Words);
// invalid entries are skipped.
func DecodeTable(w [tableWords]uint32) Table {
	var tb Table
	for k := 0; k < EntrySlots; k++ {
		e := uint8(w[k/4] >> (8 * (k % 4)))
		if e&entryValid == 0 {
			continue
		}
		if k < MinimalSlots {
			tb.Minimal = append(tb.Minimal, int(e&7))
		} else {
			tb.NonMinimal = append(tb.NonMinimal, int(e&7))
		}
	}
	return tb
}

// Table returns the recipe's entry list (docs/tin.md, "The recipe") of
// board's input port in (0-3 the cages, 4 IP, 5 1RMA) for destination dst:
//
//   - dst in the board's pod: minimal, the local cage to dst; non-minimal,
//     from terminal inputs only, the local cages to TiNs i with x < i < d or
//     x > i > d (the index-monotone turn rule), then the global cages;
//   - dst in another pod: minimal, the global cages to dst's pod, plus, from
//     terminal and global inputs, the local cages to the pod's TiNs owning a
//     global cage to dst's pod (gateways, l-g-l); non-minimal, from
//     terminal inputs only, the global cages to other pods (Valiant).
//
// Locals and globals are listed in cage order. The list of a cage that is
// off, or of the board itself as destination, is empty.
func (t *Topology) Table(board string, in int, dst Node) Table {
	x, ok := t.Node[board]
	if !ok || dst == x || in < 0 || in >= SwitchPorts {
		return Table{}
	}
	ports := t.Ports[board]
	cls := inTerminal
	if in < Cages {
		switch ports[in].Role {
		case RoleLocal:
			cls = inLocal
		case RoleGlobal:
			cls = inGlobal
		default:
			return Table{}
		}
	}
	var tb Table
	locals := func(pred func(y Node) bool) []int {
		var out []int
		for k, p := range ports {
			if p.Role == RoleLocal && pred(t.Node[p.Peer]) {
				out = append(out, k)
			}
		}
		return out
	}
	globals := func(pred func(y Node) bool) []int {
		var out []int
		for k, p := range ports {
			if p.Role == RoleGlobal && pred(t.Node[p.Peer]) {
				out = append(out, k)
			}
		}
		return out
	}
	if dst.Pod == x.Pod {
		tb.Minimal = locals(func(y Node) bool { return y == dst })
		if cls == inTerminal {
			tb.NonMinimal = locals(func(y Node) bool {
				return y != dst && (x.TiN < y.TiN && y.TiN < dst.TiN || x.TiN > y.TiN && y.TiN > dst.TiN)
			})
			tb.NonMinimal = append(tb.NonMinimal, globals(func(Node) bool { return true })...)
		}
	} else {
		tb.Minimal = globals(func(y Node) bool { return y.Pod == dst.Pod })
		if cls != inLocal {
			tb.Minimal = append(tb.Minimal, locals(func(y Node) bool { return t.hasGlobalTo(t.ByNode[y], dst.Pod) })...)
		}
		if cls == inTerminal {
			tb.NonMinimal = globals(func(y Node) bool { return y.Pod != dst.Pod })
		}
	}
	if len(tb.Minimal) > MinimalSlots {
		tb.Minimal = tb.Minimal[:MinimalSlots]
	}
	if len(tb.NonMinimal) > NonMinSlots {
		tb.NonMinimal = tb.NonMinimal[:NonMinSlots]
	}
	return tb
}

func (t *Topology) hasGlobalTo(board string, pod int) bool {
	ps, ok := t.Ports[board]
	if !ok {
		return false
	}
	for _, p := range ps {
		if p.Role == RoleGlobal && t.Node[p.Peer].Pod == pod {
			return true
		}
	}
	return false
}

// TableImage is the whole rt window of a board, input port by input port:
// SwitchPorts x Destinations entry lists of 8 words. Destinations without a
// board are empty, so a rewrite also clears what a previous layout left.
func (t *Topology) TableImage(board string) []uint32 {
	out := make([]uint32, 0, SwitchPorts*Destinations*tableWords)
	for in := 0; in < SwitchPorts; in++ {
		for i := 0; i < Destinations; i++ {
			dst := NodeOfIndex(i)
			var w [tableWords]uint32
			if _, ok := t.ByNode[dst]; ok {
				w = t.Table(board, in, dst).Words()
			}
			out = append(out, w[:]...)
		}
	}
	return out
}

// TableAddr is the byte address of the entry list of input port in and
// destination index i.
func TableAddr(in, i int) uint64 {
	return tableBase + uint64((in*Destinations+i)*tableStride)
}
