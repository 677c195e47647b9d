package exanet

import (
	"fmt"
	"strconv"
	"strings"
)

// MaxSide bounds a lattice side and so every coordinate. The paper does not
// give the width of the header's coordinate fields; the bound only keeps
// parsing and enumeration finite (a 2x2 mesh is the testbed, §3.1).
const MaxSide = 256

// Coord is a node's coordinate in the lattice, or, for a lattice, its size
// along each dimension.
type Coord struct{ X, Y, Z int }

// String renders the coordinate as it appears in path text: "(1,0,0)".
func (c Coord) String() string { return fmt.Sprintf("(%d,%d,%d)", c.X, c.Y, c.Z) }

// Param renders the coordinate as it appears in metric params: "1,0,0".
func (c Coord) Param() string { return fmt.Sprintf("%d,%d,%d", c.X, c.Y, c.Z) }

// At returns the component along d.
func (c Coord) At(d Dim) int {
	switch d {
	case X:
		return c.X
	case Y:
		return c.Y
	default:
		return c.Z
	}
}

// with returns c with the component along d set to v.
func (c Coord) with(d Dim, v int) Coord {
	switch d {
	case X:
		c.X = v
	case Y:
		c.Y = v
	default:
		c.Z = v
	}
	return c
}

// ParseCoord reads "x,y,z", optionally in parentheses and with spaces
// ("(1, 0, 0)"), as a node coordinate: three whole numbers in [0, MaxSide).
func ParseCoord(s string) (Coord, error) {
	v, err := parseTriple(s)
	if err != nil {
		return Coord{}, fmt.Errorf("coordinate %q: %w (want x,y,z, e.g. 1,0,0)", s, err)
	}
	for i, n := range v {
		if n < 0 || n >= MaxSide {
			return Coord{}, fmt.Errorf("coordinate %q: %s=%d is outside [0, %d)", s, Dim(i), n, MaxSide)
		}
	}
	return Coord{v[0], v[1], v[2]}, nil
}

// ParseLattice reads a lattice size "nx,ny,nz" (e.g. "2,2,1", the 2x2 mesh of
// §3.1): three whole numbers in [1, MaxSide].
func ParseLattice(s string) (Coord, error) {
	v, err := parseTriple(s)
	if err != nil {
		return Coord{}, fmt.Errorf("lattice %q: %w (want nx,ny,nz, e.g. 2,2,1)", s, err)
	}
	for i, n := range v {
		if n < 1 || n > MaxSide {
			return Coord{}, fmt.Errorf("lattice %q: size along %s is %d, want 1..%d", s, Dim(i), n, MaxSide)
		}
	}
	return Coord{v[0], v[1], v[2]}, nil
}

func parseTriple(s string) ([3]int, error) {
	var v [3]int
	t := strings.TrimSpace(s)
	if strings.HasPrefix(t, "(") || strings.HasSuffix(t, ")") {
		if !strings.HasPrefix(t, "(") || !strings.HasSuffix(t, ")") {
			return v, fmt.Errorf("unbalanced parentheses")
		}
		t = t[1 : len(t)-1]
	}
	parts := strings.Split(t, ",")
	if len(parts) != 3 {
		return v, fmt.Errorf("%d components, want 3", len(parts))
	}
	for i, p := range parts {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil {
			return v, fmt.Errorf("component %d %q is not a whole number", i+1, strings.TrimSpace(p))
		}
		v[i] = n
	}
	return v, nil
}

// inside reports whether c is a node of lattice l.
func (c Coord) inside(l Coord) bool {
	return c.X >= 0 && c.X < l.X && c.Y >= 0 && c.Y < l.Y && c.Z >= 0 && c.Z < l.Z
}

// Nodes returns every node of lattice l, X varying fastest: for 2,2,1
// (0,0,0) (1,0,0) (0,1,0) (1,1,0).
func Nodes(l Coord) []Coord {
	if l.X < 1 || l.Y < 1 || l.Z < 1 {
		return nil
	}
	out := make([]Coord, 0, l.X*l.Y*l.Z)
	for z := 0; z < l.Z; z++ {
		for y := 0; y < l.Y; y++ {
			for x := 0; x < l.X; x++ {
				out = append(out, Coord{x, y, z})
			}
		}
	}
	return out
}

// Diameter is the largest hop count between two nodes of the mesh l.
func Diameter(l Coord) int { return (l.X - 1) + (l.Y - 1) + (l.Z - 1) }

// Dim is a lattice dimension.
type Dim int

// The three dimensions of the ExaNet lattice (§3.3: X, Y, Z).
const (
	X Dim = iota
	Y
	Z
)

func (d Dim) String() string {
	switch d {
	case X:
		return "X"
	case Y:
		return "Y"
	case Z:
		return "Z"
	}
	return fmt.Sprintf("Dim(%d)", int(d))
}

// Order is the order in which DOR consumes the dimensions, first to last.
type Order [3]Dim

// DefaultOrder consumes X, then Y, then Z.
var DefaultOrder = Order{X, Y, Z}

func (o Order) String() string { return o[0].String() + o[1].String() + o[2].String() }

// ParseOrder reads a dimension order such as "XYZ" or "zyx": a permutation of
// X, Y and Z, which is what the Router's priority registers select (§3.3).
func ParseOrder(s string) (Order, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	var o Order
	if len(t) != 3 {
		return o, fmt.Errorf("dimension order %q: want a permutation of XYZ (e.g. XYZ, ZYX)", s)
	}
	var seen [3]bool
	for i := 0; i < 3; i++ {
		var d Dim
		switch t[i] {
		case 'X':
			d = X
		case 'Y':
			d = Y
		case 'Z':
			d = Z
		default:
			return o, fmt.Errorf("dimension order %q: %q is not a dimension; want a permutation of XYZ (e.g. XYZ, ZYX)", s, t[i])
		}
		if seen[d] {
			return o, fmt.Errorf("dimension order %q: %s appears twice; want a permutation of XYZ (e.g. XYZ, ZYX)", s, d)
		}
		seen[d] = true
		o[i] = d
	}
	return o, nil
}
