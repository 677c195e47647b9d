package shoal

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/labrunner/labrunner/internal/edgecolour"
)

// Cage is one SFP+ cage of a board: a NIC on a NIC board (NIC p sits on cage
// sfpP), a port of a circuit switch on a switch board (docs/shoal.md).
type Cage struct {
	Board string
	Index int
}

func (c Cage) String() string { return c.Board + ":sfp" + strconv.Itoa(c.Index) }

// ParseCage reads a board port name "sfpN" as cage N.
func ParseCage(port string) (int, error) {
	rest, ok := strings.CutPrefix(strings.ToLower(strings.TrimSpace(port)), "sfp")
	n, err := strconv.Atoi(rest)
	if !ok || err != nil || n < 0 || rest != strconv.Itoa(n) {
		return 0, fmt.Errorf("port %q is not an SFP+ cage (want sfp0, sfp1, ...)", port)
	}
	return n, nil
}

// Cable is a lab cable between two cages, with its one-way latency.
type Cable struct {
	A, B      Cage
	LatencyNS float64
	// BER is the cable's own bit-error rate, applied at the receiving
	// end of each direction (docs/shoal.md, "Bit errors").
	BER float64
}

// Fabric is the rack as the schedules see it, derived from the cabling: the
// nodes (NIC cages) in id order and the two-stage leaf-spine of circuit
// switches between them (Shoal §3.2, Fig. 2; the prototype's Fig. 8).
//
// Logical port numbering. A switch's register words address its cages
// (nibble p of a schedule word is cage sfpP, docs/shoal.md). Schedules are
// reasoned about in the fabric's own numbering instead, which is also the
// one golden/shoal documents for its Topology:
//
//   - leaf l has k ports; logical port p < k/2 faces node l·k/2 + p, logical
//     port k/2 + s faces spine s;
//   - spine s: logical port l faces leaf l.
//
// NewFabric finds, from the cables, which cage is which logical port on
// every switch; a rack cabled as docs/shoal.md prescribes (leaf sfp0/sfp1 to
// its two nodes, sfp2 up to the first spine, sfp3 to the second; spine sfpL
// to leaf L) has cage = logical port everywhere, but a rack cabled
// differently (a swapped pair of cables) is handled the same way: the
// runner translates through the map rather than assuming it.
type Fabric struct {
	// Radix is the switches' port count k (4 on the prototype, §6.1).
	Radix int
	// Nodes[i] is the NIC cage of node i.
	Nodes  []Cage
	Leaves []string
	Spines []string
	// logical[board][cage] is the cage's logical port (-1: unused);
	// cageOf[board][port] the reverse.
	logical map[string][]int
	cageOf  map[string][]int
	leafOf  map[string]int
	spineOf map[string]int
	// cable latency of each node's path, for the wire part of the
	// node-to-node latency (§6.2).
	wire    []float64
	up      map[[2]int]float64 // [leaf, spine] -> cable latency
	node    map[int]float64    // node -> node-leaf cable latency
	upBER   map[[2]int]float64
	nodeBER map[int]float64
}

// NewFabric derives the fabric from the NIC boards (in node order: board b's
// cage c is node b·nicsPerBoard + c, counting only cabled cages), the switch
// boards and the cables. Leaves are the switches the NICs are cabled to,
// numbered so that leaf l hosts nodes l·k/2 .. l·k/2 + k/2-1; spines are the
// other switches, numbered in the order of the first leaf's cages.
func NewFabric(nicBoards []string, nicsPerBoard int, switchBoards []string, radix int, cables []Cable) (*Fabric, error) {
	if radix < 2 || radix%2 != 0 {
		return nil, fmt.Errorf("fabric: switches of %d ports: want an even number ≥ 2 (k/2 down, k/2 up, §3.2)", radix)
	}
	down := radix / 2
	isNIC, isSwitch := map[string]bool{}, map[string]bool{}
	for _, b := range nicBoards {
		isNIC[b] = true
	}
	for _, b := range switchBoards {
		if isNIC[b] {
			return nil, fmt.Errorf("fabric: board %s is both a NIC board and a switch", b)
		}
		isSwitch[b] = true
	}
	peer := map[Cage]Cage{}
	lat := map[Cage]float64{}
	ber := map[Cage]float64{}
	for _, c := range cables {
		for _, e := range []Cage{c.A, c.B} {
			if !isNIC[e.Board] && !isSwitch[e.Board] {
				continue // a cable of another rack, or of a board outside the plan
			}
			if e.Index < 0 || (isNIC[e.Board] && e.Index >= nicsPerBoard) || (isSwitch[e.Board] && e.Index >= radix) {
				return nil, fmt.Errorf("fabric: cable %s - %s: %s has no such cage", c.A, c.B, e.Board)
			}
			if _, dup := peer[e]; dup {
				return nil, fmt.Errorf("fabric: cage %s has two cables", e)
			}
		}
		if (isNIC[c.A.Board] || isSwitch[c.A.Board]) != (isNIC[c.B.Board] || isSwitch[c.B.Board]) {
			return nil, fmt.Errorf("fabric: cable %s - %s leaves the Shoal rack", c.A, c.B)
		}
		if !isNIC[c.A.Board] && !isSwitch[c.A.Board] {
			continue
		}
		if isNIC[c.A.Board] && isNIC[c.B.Board] {
			return nil, fmt.Errorf("fabric: cable %s - %s joins two NICs; every NIC goes to a leaf switch (§3.2)", c.A, c.B)
		}
		peer[c.A], peer[c.B] = c.B, c.A
		lat[c.A], lat[c.B] = c.LatencyNS, c.LatencyNS
		ber[c.A], ber[c.B] = c.BER, c.BER
	}
	f := &Fabric{Radix: radix, logical: map[string][]int{}, cageOf: map[string][]int{}, leafOf: map[string]int{},
		spineOf: map[string]int{}, up: map[[2]int]float64{}, node: map[int]float64{},
		upBER: map[[2]int]float64{}, nodeBER: map[int]float64{}}
	for _, b := range nicBoards {
		for c := 0; c < nicsPerBoard; c++ {
			cg := Cage{b, c}
			p, ok := peer[cg]
			if !ok {
				continue // an unused cage: no node
			}
			if !isSwitch[p.Board] {
				return nil, fmt.Errorf("fabric: NIC %s is cabled to %s, not to a switch", cg, p)
			}
			f.node[len(f.Nodes)] = lat[cg]
			f.nodeBER[len(f.Nodes)] = ber[cg]
			f.Nodes = append(f.Nodes, cg)
		}
	}
	if len(f.Nodes) < 2 {
		return nil, fmt.Errorf("fabric: %d cabled NICs on %s: a rack needs at least 2 nodes", len(f.Nodes), strings.Join(nicBoards, ", "))
	}
	for _, b := range switchBoards {
		f.logical[b], f.cageOf[b] = make([]int, radix), make([]int, radix)
		for i := 0; i < radix; i++ {
			f.logical[b][i], f.cageOf[b][i] = -1, -1
		}
	}
	// Leaves: node 2l's switch is leaf l, and it must host exactly nodes
	// l·k/2 .. on its node-facing ports.
	for i, cg := range f.Nodes {
		sw := peer[cg]
		l, p := i/down, i%down
		if p == 0 {
			if _, dup := f.leafOf[sw.Board]; dup {
				return nil, fmt.Errorf("fabric: leaf %s hosts nodes %d and %d, which the numbering puts on different leaves (node i must hang off leaf i/%d; cable the NICs as docs/shoal.md shows)",
					sw.Board, f.leafNodes(sw.Board, peer)[0], i, down)
			}
			f.leafOf[sw.Board] = l
			f.Leaves = append(f.Leaves, sw.Board)
		} else if got, ok := f.leafOf[sw.Board]; !ok || got != l {
			return nil, fmt.Errorf("fabric: node %d (%s) is cabled to %s, but node %d went to %s: nodes %d..%d must share a leaf (§3.2, Fig. 8; cable the NICs as docs/shoal.md shows)",
				i, cg, sw, l*down, f.Leaves[l], l*down, l*down+down-1)
		}
		f.logical[sw.Board][sw.Index] = p
		f.cageOf[sw.Board][p] = sw.Index
	}
	if len(f.Leaves) > radix {
		return nil, fmt.Errorf("fabric: %d leaves, but a %d-port spine connects %d (§3.2: k²/2 nodes at most)", len(f.Leaves), radix, radix)
	}
	// Spines, in the order of the first leaf's cages.
	first := f.Leaves[0]
	for c := 0; c < radix; c++ {
		p, ok := peer[Cage{first, c}]
		if !ok || isNIC[p.Board] {
			continue
		}
		if _, isLeaf := f.leafOf[p.Board]; isLeaf {
			return nil, fmt.Errorf("fabric: leaf %s is cabled to leaf %s; leaves connect only to spines (§3.2)", first, p.Board)
		}
		if _, dup := f.spineOf[p.Board]; dup {
			return nil, fmt.Errorf("fabric: leaf %s has two cables to spine %s", first, p.Board)
		}
		f.spineOf[p.Board] = len(f.Spines)
		f.Spines = append(f.Spines, p.Board)
	}
	if len(f.Spines) != down {
		return nil, fmt.Errorf("fabric: leaf %s reaches %d spines, a two-stage fabric of %d-port switches needs %d (§3.2)", first, len(f.Spines), radix, down)
	}
	for _, b := range switchBoards {
		_, leaf := f.leafOf[b]
		_, spine := f.spineOf[b]
		if !leaf && !spine {
			return nil, fmt.Errorf("fabric: switch %s is neither a leaf (cabled to a NIC) nor a spine (cabled to the first leaf %s)", b, first)
		}
	}
	// Up-links: every leaf to every spine once; spine port l faces leaf l.
	for l, lb := range f.Leaves {
		seen := map[int]bool{}
		for c := 0; c < radix; c++ {
			p, ok := peer[Cage{lb, c}]
			if !ok || isNIC[p.Board] {
				continue
			}
			s, isSpine := f.spineOf[p.Board]
			if !isSpine {
				return nil, fmt.Errorf("fabric: leaf %s cage sfp%d goes to %s, which is not a spine", lb, c, p)
			}
			if seen[s] {
				return nil, fmt.Errorf("fabric: leaf %s has two cables to spine %s", lb, p.Board)
			}
			seen[s] = true
			f.logical[lb][c] = down + s
			f.cageOf[lb][down+s] = c
			if f.cageOf[p.Board][l] >= 0 {
				return nil, fmt.Errorf("fabric: spine %s port for leaf %d taken twice", p.Board, l)
			}
			f.logical[p.Board][p.Index] = l
			f.cageOf[p.Board][l] = p.Index
			f.up[[2]int{l, s}] = lat[Cage{lb, c}]
			f.upBER[[2]int{l, s}] = ber[Cage{lb, c}]
		}
		if len(seen) != down {
			return nil, fmt.Errorf("fabric: leaf %s reaches %d of the %d spines; every leaf connects to every spine (§3.2)", lb, len(seen), down)
		}
	}
	return f, nil
}

func (f *Fabric) leafNodes(board string, peer map[Cage]Cage) []int {
	var out []int
	for i, cg := range f.Nodes {
		if peer[cg].Board == board {
			out = append(out, i)
		}
	}
	return out
}

// Down is k/2: node-facing ports per leaf, and the number of spines.
func (f *Fabric) Down() int { return f.Radix / 2 }

// N is the number of nodes.
func (f *Fabric) N() int { return len(f.Nodes) }

// Switches lists the switch boards, leaves first, then spines.
func (f *Fabric) Switches() []string {
	return append(append([]string{}, f.Leaves...), f.Spines...)
}

// SwitchName is the fabric's name of a switch board: "leafL" or "spineS"
// (golden/shoal names switches the same way).
func (f *Fabric) SwitchName(board string) string {
	if l, ok := f.leafOf[board]; ok {
		return "leaf" + strconv.Itoa(l)
	}
	if s, ok := f.spineOf[board]; ok {
		return "spine" + strconv.Itoa(s)
	}
	return ""
}

// LeafIndex returns a board's leaf index, or false.
func (f *Fabric) LeafIndex(board string) (int, bool) { l, ok := f.leafOf[board]; return l, ok }

// SpineIndex returns a board's spine index, or false.
func (f *Fabric) SpineIndex(board string) (int, bool) { s, ok := f.spineOf[board]; return s, ok }

// Node returns the node id of a NIC cage, or -1.
func (f *Fabric) Node(c Cage) int {
	for i, x := range f.Nodes {
		if x == c {
			return i
		}
	}
	return -1
}

// PathWireNS is the mean cable latency of a node-to-node path (four cables:
// node to leaf, leaf to spine, spine to leaf, leaf to node, §6.2), averaged
// over ordered pairs and the spines a path may take.
func (f *Fabric) PathWireNS() float64 {
	n, down := f.N(), f.Down()
	sum, cnt := 0.0, 0
	for a := 0; a < n; a++ {
		for b := 0; b < n; b++ {
			if a == b {
				continue
			}
			for s := 0; s < down; s++ {
				sum += f.node[a] + f.up[[2]int{a / down, s}] + f.up[[2]int{b / down, s}] + f.node[b]
				cnt++
			}
		}
	}
	return sum / float64(cnt)
}

// PathBER is the mean over node-to-node paths of the summed bit-error rate
// of their four cables: a cell's bits pick up errors at every receiving
// port (docs/shoal.md), so for small rates a cell of b bits is corrupted
// with probability ≈ b × PathBER from the cables alone.
func (f *Fabric) PathBER() float64 {
	n, down := f.N(), f.Down()
	sum, cnt := 0.0, 0
	for a := 0; a < n; a++ {
		for b := 0; b < n; b++ {
			if a == b {
				continue
			}
			for s := 0; s < down; s++ {
				sum += f.nodeBER[a] + f.upBER[[2]int{a / down, s}] + f.upBER[[2]int{b / down, s}] + f.nodeBER[b]
				cnt++
			}
		}
	}
	return sum / float64(cnt)
}

// Bits of a switch schedule word (docs/shoal.md): nibble c is input cage c,
// bit 3 CONNECTED, bits 1:0 the output cage.
const (
	swConnected = 0x8
	swOutMask   = 0x3
)

// Word encodes a switch configuration given in logical ports (out[in] =
// out, -1 for none) as the board's schedule word.
func (f *Fabric) Word(board string, out []int) (uint32, error) {
	cages, ok := f.cageOf[board]
	if !ok {
		return 0, fmt.Errorf("%s is not a switch of the fabric", board)
	}
	if len(out) != f.Radix {
		return 0, fmt.Errorf("%s: %d ports in a configuration, the switch has %d", board, len(out), f.Radix)
	}
	var w uint32
	for in, o := range out {
		if o < 0 {
			continue
		}
		if o >= f.Radix || cages[in] < 0 || cages[o] < 0 {
			return 0, fmt.Errorf("%s: logical port %d>%d has no cabled cage", board, in, o)
		}
		w |= uint32(swConnected|cages[o]) << (4 * uint(cages[in]))
	}
	return w, nil
}

// Logical decodes a board's schedule (or trace) word into its logical
// configuration: out[in] = out, -1 for an input connected to nothing. An
// input cage the fabric does not use must be unconnected; a connection to
// an unused cage is reported as an error (a cell there would leave the
// fabric).
func (f *Fabric) Logical(board string, w uint32) ([]int, error) {
	log, ok := f.logical[board]
	if !ok {
		return nil, fmt.Errorf("%s is not a switch of the fabric", board)
	}
	out := make([]int, f.Radix)
	for i := range out {
		out[i] = -1
	}
	for c := 0; c < f.Radix && c < 8; c++ {
		nib := w >> (4 * uint(c)) & 0xF
		if nib&swConnected == 0 {
			continue
		}
		o := int(nib & swOutMask)
		if log[c] < 0 {
			return nil, fmt.Errorf("%s: unused cage sfp%d is connected to sfp%d", board, c, o)
		}
		if o >= f.Radix || log[o] < 0 {
			return nil, fmt.Errorf("%s: cage sfp%d is connected to unused cage sfp%d", board, c, o)
		}
		out[log[c]] = log[o]
	}
	return out, nil
}

// Decompose splits one slot of a fabric schedule (tx[i] = destination of
// node i, -1 none) into every switch's logical configuration, leaves then
// spines (§3.2: "we decompose the schedule of the overall fabric into the
// schedule for each constituent circuit switch"). Each circuit crosses leaf,
// spine, leaf, even between two nodes of one leaf (§3.2). The spine of a
// circuit is the sender's port on its leaf when that leaves no two circuits
// entering one leaf from the same spine (always the case for the cyclic
// schedule: the k/2 nodes sending into a leaf in a slot are consecutive);
// otherwise the spines come from an edge colouring of the leaf-to-leaf
// demand (König: a bipartite multigraph of degree ≤ k/2 has one with k/2
// colours).
func (f *Fabric) Decompose(tx []int) ([][]int, error) {
	n, down, L := f.N(), f.Down(), len(f.Leaves)
	if len(tx) != n {
		return nil, fmt.Errorf("decompose: %d entries for %d nodes", len(tx), n)
	}
	var srcs, dsts []int
	for i, d := range tx {
		if d >= 0 {
			if d >= n || d == i {
				return nil, fmt.Errorf("decompose: node %d sends to %d", i, d)
			}
			srcs, dsts = append(srcs, i), append(dsts, d)
		}
	}
	spine := make([]int, len(srcs))
	used := map[int]bool{}
	canonical := true
	for e := range srcs {
		spine[e] = srcs[e] % down
		k := dsts[e]/down*down + spine[e]
		if used[k] {
			canonical = false
			break
		}
		used[k] = true
	}
	if !canonical {
		us, vs := make([]int, len(srcs)), make([]int, len(srcs))
		for e := range srcs {
			us[e], vs[e] = srcs[e]/down, dsts[e]/down
		}
		var err error
		if spine, err = edgecolour.Bipartite(L, down, us, vs); err != nil {
			var over *edgecolour.OverloadError
			if errors.As(err, &over) {
				return nil, fmt.Errorf("decompose: leaf %d or %d carries more than %d circuits in one slot", over.U, over.V, over.Colours)
			}
			return nil, fmt.Errorf("decompose: %w", err)
		}
	}
	cfg := make([][]int, L+down)
	for w := range cfg {
		cfg[w] = make([]int, f.Radix)
		for p := range cfg[w] {
			cfg[w][p] = -1
		}
	}
	for e := range srcs {
		lu, pu := srcs[e]/down, srcs[e]%down
		lv, pv := dsts[e]/down, dsts[e]%down
		s := spine[e]
		if cfg[lu][pu] >= 0 || cfg[L+s][lu] >= 0 || cfg[lv][down+s] >= 0 {
			return nil, fmt.Errorf("decompose: circuit %d>%d collides on spine %d", srcs[e], dsts[e], s)
		}
		cfg[lu][pu] = down + s
		cfg[L+s][lu] = lv
		cfg[lv][down+s] = pv
	}
	return cfg, nil
}

// SwitchWords decomposes every slot of the schedule and encodes the words
// of each switch board: words[board][t].
func (f *Fabric) SwitchWords(s Schedule) (map[string][]uint32, error) {
	if s.Nodes != f.N() {
		return nil, fmt.Errorf("schedule of %d nodes on a fabric of %d", s.Nodes, f.N())
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	sw := f.Switches()
	out := map[string][]uint32{}
	for _, b := range sw {
		out[b] = make([]uint32, s.Epoch())
	}
	for t := range s.Tx {
		cfg, err := f.Decompose(s.Tx[t])
		if err != nil {
			return nil, fmt.Errorf("slot %d: %w", t, err)
		}
		for k, b := range sw {
			if out[b][t], err = f.Word(b, cfg[k]); err != nil {
				return nil, fmt.Errorf("slot %d: %w", t, err)
			}
		}
	}
	return out, nil
}

// Compose follows every node's cell through one slot's logical switch
// configurations (leaves then spines) and returns where it arrives (-1: the
// path is broken or idle), and a description of the first broken path.
func (f *Fabric) Compose(cfg [][]int) ([]int, string) {
	n, down, L := f.N(), f.Down(), len(f.Leaves)
	dst := make([]int, n)
	problem := ""
	note := func(s string) {
		if problem == "" {
			problem = s
		}
	}
	for i := range dst {
		dst[i] = -1
		lu, pu := i/down, i%down
		up := cfg[lu][pu]
		if up < 0 {
			continue
		}
		if up < down {
			note(fmt.Sprintf("node %d: %s sends it back down to port %d", i, f.Leaves[lu], up))
			continue
		}
		s := up - down
		lv := cfg[L+s][lu]
		if lv < 0 || lv >= L {
			note(fmt.Sprintf("node %d: %s input %d goes to %d", i, f.Spines[s], lu, lv))
			continue
		}
		pv := cfg[lv][down+s]
		if pv < 0 || pv >= down || lv*down+pv >= n {
			note(fmt.Sprintf("node %d: %s input %d goes to %d", i, f.Leaves[lv], down+s, pv))
			continue
		}
		dst[i] = lv*down + pv
	}
	return dst, problem
}

// WithoutCable returns a copy of the switch schedules in which the cable
// between cages a and b carries nothing either way: on each switch end, the
// input on that cage and every input switched to that cage are left
// unconnected in every slot. This is how a test takes a cable out of service
// through registers alone (an operator cannot unplug a cable in a remote
// rack): to the nodes it is a failed link (§3.5, Table 1), and the switches
// count the cells that still arrive for it as dead ends.
func (f *Fabric) WithoutCable(words map[string][]uint32, a, b Cage) (map[string][]uint32, error) {
	cut := map[string]int{}
	for _, c := range []Cage{a, b} {
		if _, ok := f.logical[c.Board]; ok {
			if c.Index < 0 || c.Index >= f.Radix || f.logical[c.Board][c.Index] < 0 {
				return nil, fmt.Errorf("cable %s - %s: %s is not a cabled port of the fabric", a, b, c)
			}
			cut[c.Board] = c.Index
		}
	}
	if len(cut) == 0 {
		return nil, fmt.Errorf("cable %s - %s touches no switch of the fabric", a, b)
	}
	out := map[string][]uint32{}
	for board, ws := range words {
		out[board] = append([]uint32(nil), ws...)
		c, ok := cut[board]
		if !ok {
			continue
		}
		for t, w := range out[board] {
			for in := 0; in < f.Radix && in < 8; in++ {
				nib := w >> (4 * uint(in)) & 0xF
				if nib&swConnected != 0 && (in == c || int(nib&swOutMask) == c) {
					w &^= 0xF << (4 * uint(in))
				}
			}
			out[board][t] = w
		}
	}
	return out, nil
}
