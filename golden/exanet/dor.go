package exanet

import (
	"fmt"
	"strings"
)

// Virtual channels of a physical channel (§3.3: two per physical channel).
const (
	VCLower = 0 // used when the offset is not greater than zero
	VCUpper = 1 // used when the offset is greater than zero
)

// Hop is one router-to-router step of a packet.
type Hop struct {
	From, To Coord
	Dim      Dim // the dimension being routed
	// Offset is destination minus current coordinate along Dim, at From
	// (signed, never zero on a hop).
	Offset int
	VC     int
}

// Path is the route of one packet.
type Path struct {
	Src, Dst Coord
	Order    Order
	Hops     []Hop
}

// Text renders the path in the form the runner scores, e.g.
// "(0,0,0)-vc1->(1,0,0)-vc1->(1,1,0)"; a packet to itself is "(x,y,z)".
func (p Path) Text() string { return PathText(p.Src, p.Hops) }

// Nodes returns the nodes visited, source and destination included.
func (p Path) Nodes() []Coord {
	out := make([]Coord, 0, len(p.Hops)+1)
	out = append(out, p.Src)
	for _, h := range p.Hops {
		out = append(out, h.To)
	}
	return out
}

// PathText renders a route that starts at start and takes hops, each written
// "-vcN->" followed by the node it reaches. Only To and VC of each hop are
// used, so the runner can build hops from the hardware's router traces and
// get text formatted exactly as the model's.
func PathText(start Coord, hops []Hop) string {
	var b strings.Builder
	b.WriteString(start.String())
	for _, h := range hops {
		fmt.Fprintf(&b, "-vc%d->%s", h.VC, h.To)
	}
	return b.String()
}

// DORPath returns the dimension-ordered route of a packet from src to dst in
// a mesh of the given size (§3.3): along each dimension in order, one hop at a
// time towards dst until the offset is zero, each hop on VC 1 (upper) if the
// offset dst−current is greater than zero and on VC 0 (lower) otherwise.
// order is a permutation of "XYZ" ("ZYX": first Z, then Y, then X).
//
// The lattice is a mesh, like the 2x2 testbed of §3.1: no wrap-around. In a
// torus (APENet's 3D torus, §3) the offset along a dimension would be taken
// modulo the side, choosing the shorter way round (a tie needs a rule the
// paper does not give), hops would wrap from side−1 to 0, and the VC would
// follow the sign of that reduced offset; the second VC is what makes DOR
// deadlock-free on the rings (§3.3), which a mesh does not need.
func DORPath(src, dst, lattice Coord, order string) (Path, error) {
	o, err := ParseOrder(order)
	if err != nil {
		return Path{}, err
	}
	return route(src, dst, lattice, o)
}

func route(src, dst, lattice Coord, o Order) (Path, error) {
	if lattice.X < 1 || lattice.Y < 1 || lattice.Z < 1 || lattice.X > MaxSide || lattice.Y > MaxSide || lattice.Z > MaxSide {
		return Path{}, fmt.Errorf("lattice %s: every side must be 1..%d", lattice.Param(), MaxSide)
	}
	if !src.inside(lattice) {
		return Path{}, fmt.Errorf("source %s is not a node of lattice %s (coordinates run from 0 to side-1)", src.Param(), lattice.Param())
	}
	if !dst.inside(lattice) {
		return Path{}, fmt.Errorf("destination %s is not a node of lattice %s (coordinates run from 0 to side-1)", dst.Param(), lattice.Param())
	}
	p := Path{Src: src, Dst: dst, Order: o}
	cur := src
	for _, d := range o {
		for {
			off := dst.At(d) - cur.At(d)
			if off == 0 {
				break
			}
			step, vc := -1, VCLower
			if off > 0 {
				step, vc = 1, VCUpper
			}
			next := cur.with(d, cur.At(d)+step)
			p.Hops = append(p.Hops, Hop{From: cur, To: next, Dim: d, Offset: off, VC: vc})
			cur = next
		}
	}
	return p, nil
}
