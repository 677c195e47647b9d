package tin

import (
	"slices"
	"strings"
	"testing"
)

func mustClique(t *testing.T, pods, tins, g int) *Clique {
	t.Helper()
	c, err := NewClique(pods, tins, g)
	if err != nil {
		t.Fatalf("NewClique(%d, %d, %d): %v", pods, tins, g, err)
	}
	return c
}

func texts(ps []Path) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.String()
	}
	return out
}

func TestSmallCliqueWiring(t *testing.T) {
	c := mustClique(t, 2, 4, 1)
	var got []string
	for _, l := range c.Globals {
		got = append(got, l.String())
	}
	want := []string{"p0t0-p1t0", "p0t1-p1t1", "p0t2-p1t2", "p0t3-p1t3"}
	if !slices.Equal(got, want) {
		t.Fatalf("2x4 Clique, one global port per TiN: links %v, want %v", got, want)
	}
}

// The full Clique's wiring: two global links per pod pair, 94 of 96 ports
// used per pod (App. A), no TiN above its 8 global ports (§3.2).
func TestFullCliqueWiring(t *testing.T) {
	c := mustClique(t, FullPods, FullTiNsPerPod, GlobalPortsPerTiN)
	if len(c.Globals) != 2256 {
		t.Errorf("%d global links, want 2256", len(c.Globals))
	}
	perTiN := map[Node]int{}
	for _, l := range c.Globals {
		perTiN[l.A]++
		perTiN[l.B]++
	}
	perPod := map[int]int{}
	for n, k := range perTiN {
		if k > GlobalPortsPerTiN {
			t.Errorf("TiN %s has %d global links", n, k)
		}
		perPod[n.Pod] += k
	}
	for p := 0; p < FullPods; p++ {
		if perPod[p] != 94 {
			t.Errorf("pod %d uses %d global ports, want 94", p, perPod[p])
		}
		for q := 0; q < FullPods; q++ {
			if p != q && len(c.Between(p, q)) != 2 {
				t.Fatalf("pods %d and %d have %d links, want 2", p, q, len(c.Between(p, q)))
			}
		}
	}
}

func TestCliqueErrors(t *testing.T) {
	for _, c := range [][3]int{{0, 4, 1}, {2, 0, 1}, {MaxPods + 1, 4, 1}, {2, 4, 9}, {5, 1, 1}, {2, 4, 0}} {
		if _, err := NewClique(c[0], c[1], c[2]); err == nil {
			t.Errorf("NewClique%v accepted an impossible Clique", c)
		}
	}
	if _, err := NewCliqueWired(2, 2, []GlobalLink{{Node{0, 0}, Node{0, 1}}}); err == nil {
		t.Error("a global link inside a pod was accepted")
	}
	if _, err := NewCliqueWired(3, 2, []GlobalLink{{Node{0, 0}, Node{1, 0}}, {Node{1, 1}, Node{2, 0}}}); err == nil || !strings.Contains(err.Error(), "no global link") {
		t.Errorf("pods 0 and 2 unconnected: %v", err)
	}
	if _, err := NewCliqueWired(2, 2, []GlobalLink{{Node{0, 0}, Node{1, 5}}}); err == nil {
		t.Error("a link to a TiN outside the Clique was accepted")
	}
	if _, err := ParseWiring("p0t0-p1t0,p1t0-p0t0"); err == nil {
		t.Error("a link listed twice was accepted")
	}
	ls, err := ParseWiring(" p1t3-p0t2 , p0t0-p1t1")
	if err != nil || len(ls) != 2 || ls[0].String() != "p0t2-p1t3" {
		t.Errorf("ParseWiring = %v, %v", ls, err)
	}
}

// Hand-worked: the minimal routes of the small Clique between pods, one per
// global link, with the VC stepping after the global hop.
func TestRoutesSmallCliqueHandWorked(t *testing.T) {
	c := mustClique(t, 2, 4, 1)
	src, dst := Addr{0, 1, 0}, Addr{1, 2, 3}
	rs, err := c.Routes(src, dst, FullyAdaptive, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"p0t1->p0t0[vc0]->p1t0[vc0]->p1t2[vc1]",
		"p0t1->p0t2[vc0]->p1t2[vc0]",
		"p0t1->p0t3[vc0]->p1t3[vc0]->p1t2[vc1]",
		"p0t1->p1t1[vc0]->p1t2[vc1]",
	}
	if got := texts(rs.Minimal); !slices.Equal(got, want) {
		t.Errorf("minimal p0t1 -> p1t2 = %v, want %v", got, want)
	}
	if len(rs.NonMinimal) != 0 {
		t.Errorf("a 2-pod Clique has no intermediate pod, got non-minimal %v", texts(rs.NonMinimal))
	}
	if rs.Hashed || rs.MinimalSampled != 2 || rs.NonMinimalSampled != 3 {
		t.Errorf("fully adaptive set: hashed %v, samples %d/%d", rs.Hashed, rs.MinimalSampled, rs.NonMinimalSampled)
	}
	// Traffic class 2 uses VCs 6..8.
	rs2, _ := c.Routes(src, dst, MinimalAdaptive, 2)
	if got := rs2.Minimal[0].String(); got != "p0t1->p0t0[vc6]->p1t0[vc6]->p1t2[vc7]" {
		t.Errorf("class 2: %s", got)
	}
	// Intra-pod: direct link, the detours the parity-sign rule allows, and
	// the detours through the other pod that leave on the source's own
	// global link and come back on one that does not land on it (reading
	// A25): VCs 0, 1, 1 and, after the second global hop, 2.
	rs, _ = c.Routes(Addr{0, 0, 0}, Addr{0, 3, 0}, FullyAdaptive, 0)
	if got := texts(rs.All()); !slices.Equal(got, []string{"p0t0->p0t3[vc0]", "p0t0->p0t2[vc0]->p0t3[vc0]",
		"p0t0->p1t0[vc0]->p1t1[vc1]->p0t1[vc1]->p0t3[vc2]", "p0t0->p1t0[vc0]->p1t2[vc1]->p0t2[vc1]->p0t3[vc2]", "p0t0->p1t0[vc0]->p1t3[vc1]->p0t3[vc1]"}) {
		t.Errorf("p0t0 -> p0t3: %v", got)
	}
	rs, _ = c.Routes(Addr{0, 3, 0}, Addr{0, 0, 0}, FullyAdaptive, 0)
	if got := texts(rs.All()); !slices.Equal(got, []string{"p0t3->p0t0[vc0]", "p0t3->p0t2[vc0]->p0t0[vc0]",
		"p0t3->p1t3[vc0]->p1t0[vc1]->p0t0[vc1]", "p0t3->p1t3[vc0]->p1t1[vc1]->p0t1[vc1]->p0t0[vc2]", "p0t3->p1t3[vc0]->p1t2[vc1]->p0t2[vc1]->p0t0[vc2]"}) {
		t.Errorf("p0t3 -> p0t0: %v", got)
	}
	if rs, _ = c.Routes(Addr{0, 0, 0}, Addr{0, 3, 0}, MinimalAdaptive, 0); len(rs.NonMinimal) != 0 {
		t.Errorf("minimal adaptive p0t0 -> p0t3 has non-minimal routes %v", texts(rs.NonMinimal))
	}
	// Same TiN: no hop.
	rs, _ = c.Routes(Addr{1, 2, 0}, Addr{1, 2, 1}, Deterministic, 0)
	if got := texts(rs.All()); !slices.Equal(got, []string{"p1t2"}) || !rs.Hashed {
		t.Errorf("same TiN: %v hashed %v", got, rs.Hashed)
	}
	// Minimal modes carry no non-minimal candidates.
	for _, m := range []Mode{MinimalAdaptive, MinimalDeterministic} {
		rs, _ := c.Routes(Addr{0, 0, 0}, Addr{0, 3, 0}, m, 0)
		if len(rs.NonMinimal) != 0 || len(rs.Minimal) != 1 {
			t.Errorf("%s: %v", m, texts(rs.All()))
		}
	}
}

// Hand-worked: a 3-pod Clique (3 pods of 2 TiNs, one global port each) has
// the non-minimal route through the third pod, and its worst route uses the
// three routing VCs of §3.2.
func TestRoutesThreePodsHandWorked(t *testing.T) {
	c := mustClique(t, 3, 2, 1)
	var links []string
	for _, l := range c.Globals {
		links = append(links, l.String())
	}
	if want := []string{"p0t0-p1t1", "p0t1-p2t0", "p1t0-p2t1"}; !slices.Equal(links, want) {
		t.Fatalf("3x2 wiring %v, want %v", links, want)
	}
	rs, err := c.Routes(Addr{0, 0, 0}, Addr{2, 0, 0}, FullyAdaptive, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := texts(rs.Minimal); !slices.Equal(got, []string{"p0t0->p0t1[vc0]->p2t0[vc0]"}) {
		t.Errorf("minimal %v", got)
	}
	if got := texts(rs.NonMinimal); !slices.Equal(got, []string{"p0t0->p1t1[vc0]->p1t0[vc1]->p2t1[vc1]->p2t0[vc2]"}) {
		t.Errorf("non-minimal %v", got)
	}
	g, _ := c.RouteGraph(0)
	if g.MaxVC() != 2 {
		t.Errorf("3-pod Clique uses VCs up to %d, want 2 (three routing VCs, §3.2)", g.MaxVC())
	}
	// A 2-pod Clique's intra-pod detours through the other pod cross two
	// global links and use the three VCs too (reading A25).
	g2, _ := mustClique(t, 2, 4, 1).RouteGraph(0)
	if g2.MaxVC() != 2 {
		t.Errorf("2-pod Clique uses VCs up to %d, want 2", g2.MaxVC())
	}
}

// Every route: starts at the source, ends at the destination, hops between
// linked TiNs only, with the VC rule and at most one global link per pod
// boundary crossing.
func TestRoutesWellFormed(t *testing.T) {
	for _, shape := range [][3]int{{2, 4, 1}, {3, 4, 2}, {5, 4, 2}} {
		c := mustClique(t, shape[0], shape[1], shape[2])
		linked := map[[2]Node]bool{}
		for _, l := range c.Globals {
			linked[[2]Node{l.A, l.B}], linked[[2]Node{l.B, l.A}] = true, true
		}
		for _, s := range c.Nodes() {
			for _, d := range c.Nodes() {
				rs, err := c.Routes(Addr{s.Pod, s.TiN, 0}, Addr{d.Pod, d.TiN, 0}, FullyAdaptive, 1)
				if err != nil {
					t.Fatal(err)
				}
				if len(rs.Minimal) == 0 {
					t.Fatalf("%s -> %s: no minimal route", s, d)
				}
				for _, p := range rs.All() {
					if p.From != s || p.To() != d {
						t.Fatalf("%s -> %s: route %s", s, d, p)
					}
					prev, level := s, 0
					for i, h := range p.Hops {
						if h.Kind == Global && !linked[[2]Node{prev, h.To}] {
							t.Fatalf("route %s: no global link %s-%s", p, prev, h.To)
						}
						if h.Kind == Local && h.To.Pod != prev.Pod {
							t.Fatalf("route %s: local hop across pods", p)
						}
						if i > 0 && p.Hops[i-1].Kind == Global {
							level++
						}
						if h.VC != RoutingVCs+level {
							t.Fatalf("route %s: hop %d on vc%d, want vc%d", p, i, h.VC, RoutingVCs+level)
						}
						prev = h.To
					}
					back, err := ParsePath(p.String())
					if err != nil || !back.Equal(p) {
						t.Fatalf("ParsePath(%s) = %v, %v", p, back, err)
					}
					if ok, err := PathInSet(p.String(), rs); !ok || err != nil {
						t.Fatalf("PathInSet(%s) = %v, %v", p, ok, err)
					}
				}
			}
		}
	}
}

func TestPathInSetRejects(t *testing.T) {
	c := mustClique(t, 2, 4, 1)
	rs, _ := c.Routes(Addr{0, 1, 0}, Addr{1, 2, 0}, FullyAdaptive, 0)
	for _, bad := range []string{
		"p0t1->p0t0[vc0]->p1t0[vc0]->p1t2[vc0]",            // no VC step after the global hop
		"p0t1->p0t0[vc1]->p1t0[vc1]->p1t2[vc2]",            // wrong class
		"p0t1->p0t0[vc0]->p0t3[vc0]->p1t3[vc0]->p1t2[vc1]", // two local hops in the source pod
		"p0t1->p1t1[vc0]->p1t3[vc1]->p1t2[vc1]",            // a detour in the destination pod
		"p0t1",                                             // no hop
	} {
		ok, err := PathInSet(bad, rs)
		if err != nil || ok {
			t.Errorf("PathInSet(%q) = %v, %v; want false", bad, ok, err)
		}
	}
	// Minimal deterministic: the non-minimal intra-pod detour is out.
	rs, _ = c.Routes(Addr{0, 0, 0}, Addr{0, 3, 0}, MinimalDeterministic, 0)
	if ok, _ := PathInSet("p0t0->p0t2[vc0]->p0t3[vc0]", rs); ok {
		t.Error("a non-minimal path is in a minimal mode's set")
	}
	if _, err := PathInSet("p0t0->", rs); err == nil {
		t.Error("a malformed path was accepted")
	}
}

func TestParsePathAndAddr(t *testing.T) {
	for _, bad := range []string{"", "p0", "t0p0", "p00t1", "p0t1->p0t1[vc0]", "p0t1->p0t2", "p0t1->p0t2[vc32]", "p0t1->p0t2[vc01]",
		"p0t1->p0t2[vc]", "p0t1->p0t2[vc-1]", "p64t0", "p0t16", "p0t1e2"} {
		if _, err := ParsePath(bad); err == nil {
			t.Errorf("ParsePath(%q) accepted", bad)
		}
	}
	p, err := ParsePath(" P0T1->p1t1[VC0] -> p1t2[vc1] ")
	if err != nil || p.String() != "p0t1->p1t1[vc0]->p1t2[vc1]" || p.Hops[0].Kind != Global || p.Hops[1].Kind != Local {
		t.Errorf("ParsePath = %v %+v, %v", p, p.Hops, err)
	}
	a, err := ParseAddr("p3t11e17")
	if err != nil || a != (Addr{3, 11, 17}) || a.String() != "p3t11e17" {
		t.Errorf("ParseAddr = %v, %v", a, err)
	}
	if a, err := ParseAddr("p1t2"); err != nil || a != (Addr{1, 2, 0}) {
		t.Errorf("ParseAddr(p1t2) = %v, %v", a, err)
	}
	for _, bad := range []string{"p1t2e", "p1t2e64", "p1t2x", "p-1t2", "p1t2e1e2", "q1t2"} {
		if _, err := ParseAddr(bad); err == nil {
			t.Errorf("ParseAddr(%q) accepted", bad)
		}
	}
	if _, err := ParseNode("p1t2e0"); err == nil {
		t.Error("ParseNode accepted an endpoint")
	}
	for _, m := range Modes {
		if back, err := ParseMode(m.String()); err != nil || back != m {
			t.Errorf("ParseMode(%s) = %v, %v", m, back, err)
		}
	}
	if _, err := ParseMode("adaptive"); err == nil {
		t.Error("ParseMode accepted an unknown mode")
	}
}

func TestRoutesErrors(t *testing.T) {
	c := mustClique(t, 2, 4, 1)
	if _, err := c.Routes(Addr{0, 4, 0}, Addr{1, 0, 0}, FullyAdaptive, 0); err == nil {
		t.Error("an address outside the Clique was routed")
	}
	if _, err := c.Routes(Addr{0, 0, 0}, Addr{1, 0, 0}, Mode(9), 0); err == nil {
		t.Error("an unknown mode was routed")
	}
	if _, err := c.Routes(Addr{0, 0, 0}, Addr{1, 0, 0}, FullyAdaptive, TrafficClasses); err == nil {
		t.Error("traffic class 10 was routed")
	}
}
