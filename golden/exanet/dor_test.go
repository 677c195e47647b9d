package exanet

import (
	"strings"
	"testing"
)

func mustCoord(t testing.TB, s string) Coord {
	t.Helper()
	c, err := ParseCoord(s)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Paths worked out by hand from §3.3: the offset along one dimension goes to
// zero before the next, VC 1 when destination−current > 0, else VC 0.
func TestDORPathHandWorked(t *testing.T) {
	cases := []struct {
		lattice, order, src, dst, want string
	}{
		// the 2x2 testbed (§3.1)
		{"2,2,1", "XYZ", "0,0,0", "1,1,0", "(0,0,0)-vc1->(1,0,0)-vc1->(1,1,0)"},
		{"2,2,1", "XYZ", "1,1,0", "0,0,0", "(1,1,0)-vc0->(0,1,0)-vc0->(0,0,0)"},
		{"2,2,1", "XYZ", "1,0,0", "0,1,0", "(1,0,0)-vc0->(0,0,0)-vc1->(0,1,0)"},
		{"2,2,1", "YXZ", "1,0,0", "0,1,0", "(1,0,0)-vc1->(1,1,0)-vc0->(0,1,0)"},
		{"2,2,1", "ZYX", "0,1,0", "1,0,0", "(0,1,0)-vc0->(0,0,0)-vc1->(1,0,0)"},
		{"2,2,1", "XYZ", "0,0,0", "1,0,0", "(0,0,0)-vc1->(1,0,0)"},
		{"2,2,1", "xyz", "1,0,0", "0,0,0", "(1,0,0)-vc0->(0,0,0)"},
		{"2,2,1", "XYZ", "1,1,0", "1,1,0", "(1,1,0)"},
		// 3D, Z first ("first Z is consumed, then Y and finally X", §3.3)
		{"4,3,2", "ZYX", "3,0,1", "1,2,0", "(3,0,1)-vc0->(3,0,0)-vc1->(3,1,0)-vc1->(3,2,0)-vc0->(2,2,0)-vc0->(1,2,0)"},
		{"4,3,2", "XYZ", "3,0,1", "1,2,0", "(3,0,1)-vc0->(2,0,1)-vc0->(1,0,1)-vc1->(1,1,1)-vc1->(1,2,1)-vc0->(1,2,0)"},
		{"4,3,2", "ZXY", "0,2,0", "3,0,1", "(0,2,0)-vc1->(0,2,1)-vc1->(1,2,1)-vc1->(2,2,1)-vc1->(3,2,1)-vc0->(3,1,1)-vc0->(3,0,1)"},
		{"3,3,3", "YZX", "1,1,1", "1,1,2", "(1,1,1)-vc1->(1,1,2)"},
		{"3,3,3", "YZX", "2,0,2", "0,2,0", "(2,0,2)-vc1->(2,1,2)-vc1->(2,2,2)-vc0->(2,2,1)-vc0->(2,2,0)-vc0->(1,2,0)-vc0->(0,2,0)"},
	}
	for _, c := range cases {
		l, err := ParseLattice(c.lattice)
		if err != nil {
			t.Fatal(err)
		}
		p, err := DORPath(mustCoord(t, c.src), mustCoord(t, c.dst), l, c.order)
		if err != nil {
			t.Fatalf("%s %s %s->%s: %v", c.lattice, c.order, c.src, c.dst, err)
		}
		if got := p.Text(); got != c.want {
			t.Errorf("%s %s %s->%s:\n got %s\nwant %s", c.lattice, c.order, c.src, c.dst, got, c.want)
		}
	}
}

// Every path of every pair in a 3x3x3 mesh, for all six orders, obeys DOR.
func TestDORPathProperties(t *testing.T) {
	l := Coord{3, 3, 3}
	for _, order := range []string{"XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX"} {
		o, err := ParseOrder(order)
		if err != nil {
			t.Fatal(err)
		}
		rank := map[Dim]int{o[0]: 0, o[1]: 1, o[2]: 2}
		for _, src := range Nodes(l) {
			for _, dst := range Nodes(l) {
				p, err := DORPath(src, dst, l, order)
				if err != nil {
					t.Fatal(err)
				}
				manhattan := abs(dst.X-src.X) + abs(dst.Y-src.Y) + abs(dst.Z-src.Z)
				if len(p.Hops) != manhattan {
					t.Fatalf("%s %v->%v: %d hops, want %d (DOR is minimal in a mesh)", order, src, dst, len(p.Hops), manhattan)
				}
				cur, lastRank := src, 0
				for i, h := range p.Hops {
					if h.From != cur {
						t.Fatalf("%s %v->%v hop %d starts at %v, not %v", order, src, dst, i, h.From, cur)
					}
					if rank[h.Dim] < lastRank {
						t.Fatalf("%s %v->%v hop %d goes back to dimension %v", order, src, dst, i, h.Dim)
					}
					lastRank = rank[h.Dim]
					if h.Offset != dst.At(h.Dim)-h.From.At(h.Dim) || h.Offset == 0 {
						t.Fatalf("%s %v->%v hop %d: offset %d", order, src, dst, i, h.Offset)
					}
					wantVC := VCLower
					if h.Offset > 0 {
						wantVC = VCUpper
					}
					if h.VC != wantVC {
						t.Fatalf("%s %v->%v hop %d: VC %d with offset %d", order, src, dst, i, h.VC, h.Offset)
					}
					d := Coord{h.To.X - h.From.X, h.To.Y - h.From.Y, h.To.Z - h.From.Z}
					if abs(d.X)+abs(d.Y)+abs(d.Z) != 1 || abs(d.At(h.Dim)) != 1 {
						t.Fatalf("%s %v->%v hop %d is not one step along %v: %v->%v", order, src, dst, i, h.Dim, h.From, h.To)
					}
					if !h.To.inside(l) {
						t.Fatalf("%s %v->%v leaves the mesh at %v", order, src, dst, h.To)
					}
					cur = h.To
				}
				if cur != dst {
					t.Fatalf("%s %v->%v ends at %v", order, src, dst, cur)
				}
				if nodes := p.Nodes(); len(nodes) != len(p.Hops)+1 || nodes[0] != src || nodes[len(nodes)-1] != dst {
					t.Fatalf("%s %v->%v: Nodes %v", order, src, dst, nodes)
				}
			}
		}
	}
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

// The runner builds text from router traces with PathText; it must match the
// model's rendering from To and VC alone.
func TestPathTextFromTrace(t *testing.T) {
	trace := []Hop{{To: Coord{1, 0, 0}, VC: 1}, {To: Coord{1, 1, 0}, VC: 1}}
	if got, want := PathText(Coord{0, 0, 0}, trace), "(0,0,0)-vc1->(1,0,0)-vc1->(1,1,0)"; got != want {
		t.Fatalf("PathText = %q, want %q", got, want)
	}
	if got := PathText(Coord{1, 1, 0}, nil); got != "(1,1,0)" {
		t.Fatalf("PathText of a packet to itself = %q", got)
	}
}

func TestDORPathErrors(t *testing.T) {
	l := Coord{2, 2, 1}
	cases := []struct {
		src, dst, lattice Coord
		order, want       string
	}{
		{Coord{0, 0, 0}, Coord{2, 0, 0}, l, "XYZ", "destination 2,0,0 is not a node of lattice 2,2,1"},
		{Coord{0, 0, 1}, Coord{0, 0, 0}, l, "XYZ", "source 0,0,1 is not a node"},
		{Coord{-1, 0, 0}, Coord{0, 0, 0}, l, "XYZ", "source -1,0,0"},
		{Coord{0, 0, 0}, Coord{0, 0, 0}, Coord{0, 2, 1}, "XYZ", "every side must be 1..256"},
		{Coord{0, 0, 0}, Coord{1, 1, 0}, l, "XY", "permutation of XYZ"},
		{Coord{0, 0, 0}, Coord{1, 1, 0}, l, "XXZ", "X appears twice"},
		{Coord{0, 0, 0}, Coord{1, 1, 0}, l, "XYW", "is not a dimension"},
	}
	for _, c := range cases {
		_, err := DORPath(c.src, c.dst, c.lattice, c.order)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("DORPath(%v,%v,%v,%q) error %v, want one containing %q", c.src, c.dst, c.lattice, c.order, err, c.want)
		}
	}
}

func TestParseCoord(t *testing.T) {
	good := map[string]Coord{
		"1,2,3":          {1, 2, 3},
		" (1, 0, 255) ":  {1, 0, 255},
		"(0,0,0)":        {0, 0, 0},
		"  7 ,\t8 , 9  ": {7, 8, 9},
	}
	for in, want := range good {
		got, err := ParseCoord(in)
		if err != nil || got != want {
			t.Errorf("ParseCoord(%q) = %v, %v; want %v", in, got, err, want)
		}
		if back, err := ParseCoord(got.Param()); err != nil || back != got {
			t.Errorf("Param round trip of %v: %v, %v", got, back, err)
		}
		if back, err := ParseCoord(got.String()); err != nil || back != got {
			t.Errorf("String round trip of %v: %v, %v", got, back, err)
		}
	}
	for _, in := range []string{"", "1,2", "1,2,3,4", "a,b,c", "(1,2,3", "1,2,3)", "-1,0,0", "256,0,0", "1,,3", "1.5,0,0", "((1,2,3))"} {
		if c, err := ParseCoord(in); err == nil {
			t.Errorf("ParseCoord(%q) = %v, want an error", in, c)
		}
	}
	for _, in := range []string{"0,1,1", "2,2,257", "2,2", "x"} {
		if c, err := ParseLattice(in); err == nil {
			t.Errorf("ParseLattice(%q) = %v, want an error", in, c)
		}
	}
}

func TestNodesAndDiameter(t *testing.T) {
	got := Nodes(Coord{2, 2, 1})
	want := []Coord{{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {1, 1, 0}}
	if len(got) != len(want) {
		t.Fatalf("Nodes(2,2,1) = %v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("Nodes(2,2,1) = %v, want %v", got, want)
		}
	}
	if d := Diameter(Coord{2, 2, 1}); d != 2 {
		t.Fatalf("Diameter(2,2,1) = %d", d)
	}
	if d := Diameter(Coord{4, 3, 2}); d != 6 {
		t.Fatalf("Diameter(4,3,2) = %d", d)
	}
}

func BenchmarkDORPath3D(b *testing.B) {
	l := Coord{16, 16, 16}
	src, dst := Coord{15, 0, 15}, Coord{0, 15, 0}
	for b.Loop() {
		if _, err := DORPath(src, dst, l, "ZYX"); err != nil {
			b.Fatal(err)
		}
	}
}
