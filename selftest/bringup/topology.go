package bringup

import (
	"fmt"
	"sort"
	"strings"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/boards"
	"github.com/labrunner/labrunner/golden/bringup"
	"github.com/labrunner/labrunner/labconfig"
)

// Board is one board of the bring-up, as the lab file describes it.
type Board struct {
	Name  string
	Cfg   labconfig.Board
	Kind  boards.Kind
	Index int // in the lab file, which orders every list
	// DCN: the runner reaches it directly and it starts the bootstrap in
	// wave 0 (Aquila §4.4: "DCN-connected").
	DCN bool
	// Addr is the management address the runner gives it: 1 + its index in
	// the lab file, so that a resumed run finds the same plan.
	Addr uint16
	// Ports are the kind's cages in order (port p is sfpP, mgmt.md §1).
	Ports []*End
	// Design is the design the board's first plan loads (nil: none).
	Design *bitstreams.Manifest
	Plan   string
	Rack   *Rack
}

// End is one port of a board and the cable on it.
type End struct {
	Board *Board
	Index int
	Name  string
	Cable *Cable // nil: nothing cabled in the lab file
}

// Peer is the other end of the port's cable, or nil.
func (e *End) Peer() *End {
	if e.Cable == nil {
		return nil
	}
	if e.Cable.A == e {
		return e.Cable.B
	}
	return e.Cable.A
}

func (e *End) String() string { return e.Board.Name + ":" + e.Name }

// Cable is a lab link between two boards of one rack.
type Cable struct {
	A, B        *End
	LatencyNS   float64 // one way A->B (lab file)
	AsymmetryNS float64 // added to B->A
	Lab         labconfig.Link
}

// Name is the cable as the golden model names links: "a:sfp0=b:sfp1".
func (c *Cable) Name() string { return c.A.String() + "=" + c.B.String() }

// Rack is a set of boards joined by cables (a connected component of the
// lab's cabling): each one is bootstrapped and time-synchronised on its own.
type Rack struct {
	Name   string // its first board's name
	Boards []*Board
	Cables []*Cable
	DCN    []*Board
	// Note says how the DCN boards were chosen, when not by `dcn: true`.
	Note string
	// Design is the design most of the rack's boards run ("" if none).
	Design string
}

// Topology is the lab seen by the bring-up.
type Topology struct {
	Lab    *labconfig.Lab
	Racks  []*Rack
	Boards []*Board
	byName map[string]*Board
}

// Board returns a board by name.
func (t *Topology) Board(name string) (*Board, bool) {
	b, ok := t.byName[name]
	return b, ok
}

// NewTopology builds the racks of a lab. Each board's design is that of the
// first plan naming it. Within a rack, the boards with `dcn: true` start the
// bootstrap; a rack that has none but whose boards have a register bus
// (a lab written before the bring-up, like the default lab's Shoal rack) is
// reached over those buses, every board in wave 0, and Rack.Note says so.
func NewTopology(lab *labconfig.Lab, cat *bitstreams.Catalogue) (*Topology, error) {
	return newTopology(lab, cat, nil)
}

// Direct says which of the boards within (all when empty) the bring-up and
// the nightly's management check reach directly rather than through the
// management plane: those with `dcn: true` and, in a rack where none has it,
// every board with a register bus (NewTopology). A fault that acts on remote
// register requests never fires on them.
func Direct(lab *labconfig.Lab, cat *bitstreams.Catalogue, within []string) (map[string]bool, error) {
	t, err := newTopology(lab, cat, within)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, b := range t.Boards {
		out[b.Name] = b.DCN
	}
	return out, nil
}

// newTopology is NewTopology restricted to the boards within (all when
// empty) and the cables between them; a board keeps its index in the lab
// file, and so its management address.
func newTopology(lab *labconfig.Lab, cat *bitstreams.Catalogue, within []string) (*Topology, error) {
	t := &Topology{Lab: lab, byName: map[string]*Board{}}
	keep := map[string]bool{}
	for _, name := range within {
		if _, ok := lab.Board(name); !ok {
			return nil, fmt.Errorf("no board %q in lab %s", name, lab.Name)
		}
		keep[name] = true
	}
	for i, cfg := range lab.Boards {
		if len(keep) > 0 && !keep[cfg.Name] {
			continue
		}
		kind, err := boards.Lookup(cfg.Kind)
		if err != nil {
			return nil, fmt.Errorf("%s: board %s: %w", cfg.Pos, cfg.Name, err)
		}
		if i >= int(0xFFFD) {
			return nil, fmt.Errorf("%s: more boards than management addresses", cfg.Pos)
		}
		b := &Board{Name: cfg.Name, Cfg: cfg, Kind: kind, Index: i, DCN: cfg.DCN, Addr: uint16(i + 1)}
		for p, name := range kind.Ports {
			b.Ports = append(b.Ports, &End{Board: b, Index: p, Name: name})
		}
		t.Boards = append(t.Boards, b)
		t.byName[b.Name] = b
	}
	for _, p := range lab.Plans {
		for _, pb := range p.Boards {
			b, ok := t.byName[pb.Board]
			if !ok || b.Design != nil {
				continue
			}
			m, err := cat.Design(p.Design)
			if err != nil {
				return nil, fmt.Errorf("%s: plan %s: %w", p.Pos, p.Name, err)
			}
			b.Design, b.Plan = m, p.Name
		}
	}
	var cables []*Cable
	for _, l := range lab.Links {
		a, okA := t.byName[l.A.Board]
		bb, okB := t.byName[l.B.Board]
		if len(keep) > 0 && (!keep[l.A.Board] || !keep[l.B.Board]) {
			continue // a cable leaving the boards within
		}
		if !okA || !okB {
			return nil, fmt.Errorf("%s: link %s - %s names a board the lab does not have", l.Pos, l.A, l.B)
		}
		ea, eb := a.port(l.A.Port), bb.port(l.B.Port)
		if ea == nil || eb == nil {
			return nil, fmt.Errorf("%s: link %s - %s: no such port on a %s or %s", l.Pos, l.A, l.B, a.Kind.Name, bb.Kind.Name)
		}
		if ea.Cable != nil || eb.Cable != nil {
			return nil, fmt.Errorf("%s: link %s - %s: a port is cabled twice", l.Pos, l.A, l.B)
		}
		c := &Cable{A: ea, B: eb, LatencyNS: l.LatencyNS, AsymmetryNS: l.AsymmetryNS, Lab: l}
		ea.Cable, eb.Cable = c, c
		cables = append(cables, c)
	}
	// Connected components, in lab order.
	seen := map[*Board]bool{}
	for _, b := range t.Boards {
		if seen[b] {
			continue
		}
		r := &Rack{Name: b.Name}
		stack := []*Board{b}
		seen[b] = true
		for len(stack) > 0 {
			x := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			r.Boards = append(r.Boards, x)
			for _, n := range x.Neighbours() {
				if !seen[n] {
					seen[n] = true
					stack = append(stack, n)
				}
			}
		}
		sort.Slice(r.Boards, func(i, j int) bool { return r.Boards[i].Index < r.Boards[j].Index })
		for _, x := range r.Boards {
			x.Rack = r
			if x.DCN {
				r.DCN = append(r.DCN, x)
			}
		}
		for _, c := range cables {
			if c.A.Board.Rack == r {
				r.Cables = append(r.Cables, c)
			}
		}
		if len(r.DCN) == 0 {
			var direct []string
			for _, x := range r.Boards {
				if x.Cfg.Bus.Kind() != "" {
					x.DCN = true
					r.DCN = append(r.DCN, x)
					direct = append(direct, x.Name)
				}
			}
			if len(direct) > 0 {
				r.Note = fmt.Sprintf("no board of this rack is marked `dcn: true`; %s reached over their own register bus (wave 0)", strings.Join(direct, ", "))
			}
		}
		count := map[string]int{}
		for _, x := range r.Boards {
			if x.Design != nil {
				count[x.Design.Name]++
			}
		}
		for d, n := range count {
			if n > count[r.Design] || (n == count[r.Design] && d < r.Design) {
				r.Design = d
			}
		}
		t.Racks = append(t.Racks, r)
	}
	return t, nil
}

func (b *Board) port(name string) *End {
	for _, e := range b.Ports {
		if e.Name == name {
			return e
		}
	}
	return nil
}

// Neighbours are the boards cabled to b, in port order, each once.
func (b *Board) Neighbours() []*Board {
	var out []*Board
	seen := map[*Board]bool{}
	for _, e := range b.Ports {
		if p := e.Peer(); p != nil && !seen[p.Board] {
			seen[p.Board] = true
			out = append(out, p.Board)
		}
	}
	return out
}

// PortTo returns b's first port cabled to n.
func (b *Board) PortTo(n *Board) *End {
	for _, e := range b.Ports {
		if p := e.Peer(); p != nil && p.Board == n {
			return e
		}
	}
	return nil
}

// Cabled lists b's cabled ports.
func (b *Board) Cabled() []*End {
	var out []*End
	for _, e := range b.Ports {
		if e.Cable != nil {
			out = append(out, e)
		}
	}
	return out
}

// Golden renders the rack as the golden model's topology (golden/bringup):
// its boards in lab order, its cables with their latency and asymmetry, its
// DCN boards.
func (r *Rack) Golden() bringup.Topology {
	var top bringup.Topology
	for _, b := range r.Boards {
		top.Boards = append(top.Boards, b.Name)
	}
	for _, c := range r.Cables {
		top.Links = append(top.Links, bringup.Link{A: c.A.Board.Name, PortA: c.A.Name, B: c.B.Board.Name, PortB: c.B.Name,
			LatencyNS: c.LatencyNS, AsymmetryNS: c.AsymmetryNS, MOSLoss: -1})
	}
	for _, b := range r.DCN {
		top.DCN = append(top.DCN, b.Name)
	}
	return top
}
