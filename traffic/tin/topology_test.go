package tin

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func name(p, t int) string { return fmt.Sprintf("tin-p%db%d", p, t) }

// docTopology is the default Clique of docs/tin.md: in a pod, board T's
// sfpK to board (T+K+1) mod 4 on its sfp(2-K); sfp3 between the pods.
func docTopology(t testing.TB) *Topology {
	t.Helper()
	var order []string
	nodes := map[string]Node{}
	var cables []Cable
	for p := 0; p < 2; p++ {
		for n := 0; n < 4; n++ {
			order = append(order, name(p, n))
			nodes[name(p, n)] = Node{p, n}
			for k := 0; k < 3; k++ {
				if u := (n + k + 1) % 4; u > n {
					cables = append(cables, Cable{A: Cage{name(p, n), k}, B: Cage{name(p, u), 2 - k}, LatencyNS: 5})
				}
			}
		}
	}
	for n := 0; n < 4; n++ {
		cables = append(cables, Cable{A: Cage{name(0, n), 3}, B: Cage{name(1, n), 3}, LatencyNS: 50})
	}
	tp, err := NewTopology(order, nodes, cables)
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

func TestTopologyOfTheDocumentedClique(t *testing.T) {
	tp := docTopology(t)
	for _, b := range tp.Boards {
		if w := tp.RoleWord(b); w != 0x95 {
			t.Errorf("%s: PORT_ROLE 0x%x, docs/tin.md gives 0x95 (sfp0-2 local, sfp3 global)", b, w)
		}
	}
	if got := tp.Node["tin-p1b2"].Addr(); got != 0x0440 {
		t.Errorf("tin-p1b2 TIN_ADDR 0x%04x, want 0x0440", uint16(got))
	}
	if w := tp.Wiring(); w != "p0t0-p1t0,p0t1-p1t1,p0t2-p1t2,p0t3-p1t3" {
		t.Errorf("wiring %q", w)
	}
	if p, tn := tp.Shape(); p != 2 || tn != 4 {
		t.Errorf("shape %dx%d, want 2x4", p, tn)
	}
	if m := Mask(tp.Nodes()...); m != 0x0F0F {
		t.Errorf("mask 0x%x, docs/tin.md gives 0x0F0F", m)
	}
	if l, g := tp.MeanLatency(RoleLocal), tp.MeanLatency(RoleGlobal); l != 5 || g != 50 {
		t.Errorf("mean latencies %g, %g", l, g)
	}
	if peer, cage, ok := tp.PeerOf("tin-p0b1", 0); !ok || peer != "tin-p0b2" || cage != 2 {
		t.Errorf("peer of tin-p0b1:sfp0 = %s:sfp%d %v", peer, cage, ok)
	}
}

// The worked example of docs/tin.md "The recipe": TiN p0t0's tables.
func TestRecipeMatchesTheDocumentedExample(t *testing.T) {
	tp := docTopology(t)
	d2, d10, d13 := Node{0, 2}, Node{1, 0}, Node{1, 3}
	cases := []struct {
		in       int
		dst      Node
		min, non []int
	}{
		{PortIP, d2, []int{1}, []int{0, 3}},
		{PortRMA, d10, []int{3, 0, 1, 2}, nil},
		{PortIP, d13, []int{3, 0, 1, 2}, nil},
		{0, d2, []int{1}, nil},
		{2, d10, []int{3}, nil},
		{1, d13, []int{3}, nil},
		{3, d2, []int{1}, nil},
		{3, d13, []int{3, 0, 1, 2}, nil},
	}
	for _, c := range cases {
		tb := tp.Table("tin-p0b0", c.in, c.dst)
		if !reflect.DeepEqual(tb.Minimal, c.min) || !reflect.DeepEqual(tb.NonMinimal, c.non) {
			t.Errorf("input %d to %s: minimal %v non-minimal %v, docs/tin.md says %v and %v", c.in, c.dst, tb.Minimal, tb.NonMinimal, c.min, c.non)
		}
	}
	if tb := tp.Table("tin-p0b0", PortIP, Node{0, 0}); len(tb.Minimal)+len(tb.NonMinimal) != 0 {
		t.Errorf("a table to the TiN itself: %+v, want empty", tb)
	}
	// Index-monotone turn rule: from t3 to t0 through t1 or t2, not the reverse.
	if tb := tp.Table("tin-p0b3", PortIP, Node{0, 0}); !reflect.DeepEqual(tb.NonMinimal, []int{1, 2, 3}) {
		t.Errorf("p0t3 to p0t0 non-minimal %v, want the locals to t1 and t2 (sfp1, sfp2) and the global sfp3", tb.NonMinimal)
	}
}

func TestTableWordsRoundTrip(t *testing.T) {
	tb := Table{Minimal: []int{3, 0, 1, 2}, NonMinimal: []int{1, 3}}
	w := tb.Words()
	if w[0] != 0x82818083 || w[2] != 0x00008381 {
		t.Errorf("words %08x: entry k in byte lane k%%4 of word k/4, 0x80|cage", w)
	}
	if back := DecodeTable(w); !reflect.DeepEqual(back, tb) {
		t.Errorf("round trip %+v, want %+v", back, tb)
	}
	img := docTopology(t).TableImage("tin-p0b0")
	if len(img) != SwitchPorts*Destinations*tableWords {
		t.Fatalf("table image of %d words", len(img))
	}
	off := int(TableAddr(PortIP, Node{0, 2}.Index())-tableBase) / 4
	var got [tableWords]uint32
	copy(got[:], img[off:])
	if d := DecodeTable(got); !reflect.DeepEqual(d.Minimal, []int{1}) || !reflect.DeepEqual(d.NonMinimal, []int{0, 3}) {
		t.Errorf("image entry of IP -> p0t2: %+v", d)
	}
}

func TestTopologyRefusesBadLayouts(t *testing.T) {
	nodes := map[string]Node{"a": {0, 0}, "b": {0, 1}}
	for _, c := range []struct {
		order  []string
		nodes  map[string]Node
		cables []Cable
		want   string
	}{
		{nil, nodes, nil, "no board"},
		{[]string{"a", "c"}, nodes, nil, "no pod and TiN"},
		{[]string{"a", "b"}, map[string]Node{"a": {0, 0}, "b": {0, 0}}, nil, "both p0t0"},
		{[]string{"a"}, map[string]Node{"a": {8, 0}}, nil, "reach pods 0..7"},
		{[]string{"a", "b"}, nodes, []Cable{{A: Cage{"a", 0}, B: Cage{"b", 0}}, {A: Cage{"a", 0}, B: Cage{"b", 1}}}, "two cables"},
		{[]string{"a", "b"}, nodes, []Cable{{A: Cage{"a", 0}, B: Cage{"a", 1}}}, "loops back"},
		{[]string{"a", "b"}, nodes, []Cable{{A: Cage{"a", 4}, B: Cage{"b", 1}}}, "not a GNet cage"},
	} {
		_, err := NewTopology(c.order, c.nodes, c.cables)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v %v: error %v, want one saying %q", c.order, c.cables, err, c.want)
		}
	}
	// A cable to a board outside the plan is ignored: that cage is off.
	tp, err := NewTopology([]string{"a", "b"}, nodes, []Cable{{A: Cage{"a", 0}, B: Cage{"x", 0}}, {A: Cage{"a", 1}, B: Cage{"b", 1}}})
	if err != nil || tp.RoleWord("a") != 0x4 {
		t.Errorf("role word 0x%x (%v), want only sfp1 local", tp.RoleWord("a"), err)
	}
}

func TestParseCage(t *testing.T) {
	for _, ok := range []string{"sfp0", "SFP3", " sfp2 "} {
		if _, err := ParseCage(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"sfp4", "sfp", "qsfp0", "sfp01", "sfp-1", ""} {
		if _, err := ParseCage(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestAddr(t *testing.T) {
	a := Addr(0x0444)
	if a.Pod() != 1 || a.TiN() != 2 || a.EP() != 4 || a.String() != "p1t2e4" || a.WithEP(1) != 0x0441 {
		t.Errorf("address 0x0444 read %d %d %d %s", a.Pod(), a.TiN(), a.EP(), a)
	}
	if NodeOfIndex(Node{1, 3}.Index()) != (Node{1, 3}) {
		t.Error("node index round trip")
	}
}
