package tin

import (
	"testing"

	"github.com/labrunner/labrunner/internal/raceshare"
)

// The parity-sign rule keeps two-hop local detours on one VC acyclic in a
// fully connected pod of any size the model allows.
func TestParitySignAcyclic(t *testing.T) {
	for n := 2; n <= MaxTiNs; n++ {
		g := NewDependencyGraph()
		allowed := 0
		for s := 0; s < n; s++ {
			for d := 0; d < n; d++ {
				if s == d {
					continue
				}
				g.Add(Path{From: Node{0, s}, Hops: []Hop{{To: Node{0, d}}}})
				for i := 0; i < n; i++ {
					if i != s && i != d && ParitySign(s, i, d) {
						allowed++
						g.Add(Path{From: Node{0, s}, Hops: []Hop{{To: Node{0, i}}, {To: Node{0, d}}}})
					}
				}
			}
		}
		if cyc := g.Cycle(); cyc != nil {
			t.Fatalf("pod of %d TiNs: parity-sign detours form a cycle %v", n, cyc)
		}
		if n >= 5 && allowed*3 < n*(n-1)*(n-2) {
			t.Errorf("pod of %d TiNs: only %d of %d detours allowed", n, allowed, n*(n-1)*(n-2))
		}
	}
}

// The checker can fail: every two-hop detour of a 4-TiN pod on one VC has a
// cycle (a->b->c, b->c->a, c->a->b).
func TestDependencyGraphFindsCycle(t *testing.T) {
	g := NewDependencyGraph()
	for s := 0; s < 4; s++ {
		for d := 0; d < 4; d++ {
			for i := 0; i < 4; i++ {
				if s != d && i != s && i != d {
					g.Add(Path{From: Node{0, s}, Hops: []Hop{{To: Node{0, i}}, {To: Node{0, d}}}})
				}
			}
		}
	}
	cyc := g.Cycle()
	if len(cyc) < 2 {
		t.Fatalf("no cycle found among unrestricted detours (%d channels, %d edges)", g.Channels(), g.Edges())
	}
	// The cycle is real: each channel leads to the next.
	for i, ch := range cyc {
		next := cyc[(i+1)%len(cyc)]
		if ch.To != next.From {
			t.Fatalf("reported cycle %v is not a chain", cyc)
		}
	}
}

// Deadlock freedom (§3.2): no cyclic VC dependency over all routes of every
// mode, for Cliques from the small 2x4 one to ones with many pods, parallel
// global links and global-to-global hops in the intermediate pod.
func TestRoutesDeadlockFree(t *testing.T) {
	shapes := [][3]int{{1, 8, 0}, {2, 4, 1}, {2, 8, 4}, {3, 2, 1}, {3, 4, 2}, {4, 4, 2}, {5, 4, 2}, {9, 4, 2}, {12, 4, 3}}
	if testing.Short() {
		shapes = shapes[:6]
	}
	// Under the race detector one shape, in rotation by day
	// (internal/raceshare); make test runs every shape without it.
	all := len(shapes)
	shapes = raceshare.Cases(t, shapes)
	globalGlobal := false
	for _, sh := range shapes {
		c := mustClique(t, sh[0], sh[1], sh[2])
		for _, class := range []int{0, TrafficClasses - 1} {
			if err := c.CheckDeadlockFree(class); err != nil {
				t.Errorf("%v: %v", sh, err)
			}
		}
		for _, s := range c.Nodes() {
			for _, d := range c.Nodes() {
				for _, p := range c.nonMinimal(s, d, 0) {
					for i := 1; i < len(p.Hops); i++ {
						if p.Hops[i-1].Kind == Global && p.Hops[i].Kind == Global {
							globalGlobal = true
						}
					}
				}
			}
		}
	}
	if !globalGlobal && len(shapes) == all {
		t.Error("no tested Clique has a global-to-global hop: the VC step the model adds for it is untested")
	}
}

// Read word for word, §3.2's rule (step the VC on a global-to-local turn
// only) leaves global-to-global hops on one VC, and the global links of
// three pods then close a cycle: why the model steps on every hop after a
// global one.
func TestLiteralVCRuleDeadlocks(t *testing.T) {
	c := mustClique(t, 9, 4, 2)
	g, err := c.routeGraph(0, true)
	if err != nil {
		t.Fatal(err)
	}
	if g.Cycle() == nil {
		t.Fatal("the literal rule is acyclic here; the model's extra VC step would be unnecessary")
	}
	g, _ = c.routeGraph(0, false)
	if cyc := g.Cycle(); cyc != nil {
		t.Fatalf("the model's rule has a cycle: %v", cyc)
	}
}
