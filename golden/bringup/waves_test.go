package bringup

import (
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// chain returns boards b0-b1-...-b(n-1) cabled in a line.
func chain(n int) Topology {
	var t Topology
	for i := 0; i < n; i++ {
		t.Boards = append(t.Boards, "b"+strconv.Itoa(i))
		if i > 0 {
			t.Links = append(t.Links, Link{A: t.Boards[i-1], B: t.Boards[i], MOSLoss: -1})
		}
	}
	return t
}

// ring closes a chain.
func ring(n int) Topology {
	t := chain(n)
	t.Links = append(t.Links, Link{A: t.Boards[n-1], B: t.Boards[0], MOSLoss: -1})
	return t
}

func mustPlan(t *testing.T, top Topology, f Faults) *Plan {
	t.Helper()
	p, err := Bootstrap(top, f)
	if err != nil {
		t.Fatalf("Bootstrap: %v", err)
	}
	return p
}

// want is a board's expected wave, status and proxies.
type want struct {
	wave    int
	status  Status
	proxies string
}

func checkPlan(t *testing.T, p *Plan, waves int, boards map[string]want) {
	t.Helper()
	if p.WaveCount() != waves {
		t.Errorf("wave count %d, want %d (waves %v)", p.WaveCount(), waves, p.Waves)
	}
	for name, w := range boards {
		b, ok := p.Board(name)
		if !ok {
			t.Fatalf("no board %s in the plan", name)
		}
		if b.Wave != w.wave || b.Status != w.status || strings.Join(b.Proxies, ",") != w.proxies {
			t.Errorf("%s: wave %d %s proxies %q (%s), want wave %d %s proxies %q",
				name, b.Wave, b.Status, strings.Join(b.Proxies, ","), b.Why, w.wave, w.status, w.proxies)
		}
	}
}

func TestChainFromOneEnd(t *testing.T) {
	top := chain(4)
	top.DCN = []string{"b0"}
	p := mustPlan(t, top, Faults{})
	checkPlan(t, p, 4, map[string]want{
		"b0": {0, OK, ""}, "b1": {1, OK, "b0"}, "b2": {2, OK, "b1"}, "b3": {3, OK, "b2"},
	})
	if !reflect.DeepEqual(p.Waves, [][]string{{"b0"}, {"b1"}, {"b2"}, {"b3"}}) {
		t.Errorf("waves %v", p.Waves)
	}
}

func TestChainFromBothEnds(t *testing.T) {
	top := chain(5)
	top.DCN = []string{"b4", "b0"}
	p := mustPlan(t, top, Faults{})
	// b2 is two hops from both ends: either neighbour may proxy.
	checkPlan(t, p, 3, map[string]want{
		"b0": {0, OK, ""}, "b1": {1, OK, "b0"}, "b2": {2, OK, "b1,b3"}, "b3": {1, OK, "b4"}, "b4": {0, OK, ""},
	})
	if !reflect.DeepEqual(p.Waves, [][]string{{"b0", "b4"}, {"b1", "b3"}, {"b2"}}) {
		t.Errorf("waves %v", p.Waves)
	}
}

func TestRing(t *testing.T) {
	top := ring(6)
	top.DCN = []string{"b0"}
	p := mustPlan(t, top, Faults{})
	checkPlan(t, p, 4, map[string]want{
		"b0": {0, OK, ""}, "b1": {1, OK, "b0"}, "b5": {1, OK, "b0"},
		"b2": {2, OK, "b1"}, "b4": {2, OK, "b5"}, "b3": {3, OK, "b2,b4"},
	})
}

// A small Clique: 2 pods x 4 boards, each pod fully
// connected, TiN t of pod 0 cabled to TiN t of pod 1.
func TestSmallCliqueTwoDCNInOnePod(t *testing.T) {
	top, err := Clique(2, 4, 1)
	if err != nil {
		t.Fatal(err)
	}
	top.DCN = []string{"p0t0", "p0t2"}
	p := mustPlan(t, top, Faults{})
	// Wave 1: the rest of pod 0 (local links to both DCN boards) and the
	// DCN boards' global peers p1t0, p1t2. Wave 2: p1t1 and p1t3, each next
	// to its global peer in pod 0 and to p1t0, p1t2 in pod 1.
	checkPlan(t, p, 3, map[string]want{
		"p0t0": {0, OK, ""}, "p0t2": {0, OK, ""},
		"p0t1": {1, OK, "p0t0,p0t2"}, "p0t3": {1, OK, "p0t0,p0t2"},
		"p1t0": {1, OK, "p0t0"}, "p1t2": {1, OK, "p0t2"},
		"p1t1": {2, OK, "p0t1,p1t0,p1t2"}, "p1t3": {2, OK, "p0t3,p1t0,p1t2"},
	})
}

func TestSmallCliqueDCNInEachPod(t *testing.T) {
	top, _ := Clique(2, 4, 1)
	top.DCN = []string{"p0t0", "p1t1"}
	p := mustPlan(t, top, Faults{})
	// Every other board is a neighbour of one of them: two waves.
	checkPlan(t, p, 2, map[string]want{
		"p0t1": {1, OK, "p0t0,p1t1"}, "p1t0": {1, OK, "p0t0,p1t1"},
		"p0t2": {1, OK, "p0t0"}, "p1t3": {1, OK, "p1t1"},
	})
}

func TestSmallCliqueDeadDCNBoard(t *testing.T) {
	top, _ := Clique(2, 4, 1)
	top.DCN = []string{"p0t0", "p0t2"}
	p := mustPlan(t, top, Faults{Dead: []string{"p0t0"}})
	// Only p0t2 is left: its pod, then its global peer p1t2 in wave 1; the
	// rest of pod 1 in wave 2 through p1t2 or their own global peers.
	checkPlan(t, p, 3, map[string]want{
		"p0t0": {-1, Failed, ""}, "p0t2": {0, OK, ""},
		"p0t1": {1, OK, "p0t2"}, "p0t3": {1, OK, "p0t2"}, "p1t2": {1, OK, "p0t2"},
		"p1t0": {2, OK, "p1t2"}, "p1t1": {2, OK, "p0t1,p1t2"}, "p1t3": {2, OK, "p0t3,p1t2"},
	})
	if p.Count(Failed) != 1 || p.Count(OK) != 7 {
		t.Errorf("counts ok %d failed %d", p.Count(OK), p.Count(Failed))
	}
}

func TestDeadBoardCutsOffItsDependants(t *testing.T) {
	top := chain(4)
	top.DCN = []string{"b0"}
	p := mustPlan(t, top, Faults{Dead: []string{"b1"}})
	checkPlan(t, p, 1, map[string]want{
		"b0": {0, OK, ""}, "b1": {-1, Failed, ""}, "b2": {-1, Unreachable, ""}, "b3": {-1, Unreachable, ""},
	})
	b3, _ := p.Board("b3")
	if !strings.Contains(b3.Why, "b1") {
		t.Errorf("b3 unreachable because %q, want it to name b1", b3.Why)
	}
}

func TestDeadBoardOnARingIsRoutedAround(t *testing.T) {
	top := ring(6)
	top.DCN = []string{"b0"}
	p := mustPlan(t, top, Faults{Dead: []string{"b1"}})
	// b2 is now reached the long way round: b5, b4, b3, b2.
	checkPlan(t, p, 5, map[string]want{
		"b1": {-1, Failed, ""}, "b5": {1, OK, "b0"}, "b4": {2, OK, "b5"}, "b3": {3, OK, "b4"}, "b2": {4, OK, "b3"},
	})
}

func TestProxyDiesAnotherNeighbourOfItsWaveTakesOver(t *testing.T) {
	top, _ := Clique(2, 4, 1)
	top.DCN = []string{"p0t0", "p0t2"}
	p := mustPlan(t, top, Faults{ProxyDies: []string{"p1t0"}})
	// p1t0 keeps wave 1 but dies; p1t1 and p1t3 keep wave 2 through the
	// other neighbours of wave 1.
	checkPlan(t, p, 3, map[string]want{
		"p1t0": {1, Died, "p0t0"}, "p1t1": {2, OK, "p0t1,p1t2"}, "p1t3": {2, OK, "p0t3,p1t2"},
	})
	if p.Count(Died) != 1 {
		t.Errorf("died %d, want 1", p.Count(Died))
	}
	if got := p.Live(); contains(got, "p1t0") || len(got) != 7 {
		t.Errorf("live %v", got)
	}
}

func TestProxyDiesTargetMovesToALaterWave(t *testing.T) {
	// b0 DCN; b0-b1, b0-b2, b1-b3, b2-b4, b4-b3: b3 is two hops through
	// b1, three through b2 and b4.
	top := Topology{Boards: []string{"b0", "b1", "b2", "b3", "b4"}, DCN: []string{"b0"}}
	for _, e := range [][2]string{{"b0", "b1"}, {"b0", "b2"}, {"b1", "b3"}, {"b2", "b4"}, {"b4", "b3"}} {
		top.Links = append(top.Links, Link{A: e[0], B: e[1], MOSLoss: -1})
	}
	checkPlan(t, mustPlan(t, top, Faults{}), 3, map[string]want{"b3": {2, OK, "b1"}, "b4": {2, OK, "b2"}})
	p := mustPlan(t, top, Faults{ProxyDies: []string{"b1"}})
	checkPlan(t, p, 4, map[string]want{"b1": {1, Died, "b0"}, "b3": {3, OK, "b4"}, "b4": {2, OK, "b2"}})
}

func TestProxyDiesOnlyProxyLeavesTargetUnreachable(t *testing.T) {
	top := chain(3)
	top.DCN = []string{"b0"}
	p := mustPlan(t, top, Faults{ProxyDies: []string{"b1"}})
	checkPlan(t, p, 2, map[string]want{"b1": {1, Died, "b0"}, "b2": {-1, Unreachable, ""}})
	b2, _ := p.Board("b2")
	if !strings.Contains(b2.Why, "b1") {
		t.Errorf("why %q does not name b1", b2.Why)
	}
}

func TestProxyDiesWithoutTargetsStaysUp(t *testing.T) {
	top := chain(2)
	top.DCN = []string{"b0"}
	p := mustPlan(t, top, Faults{ProxyDies: []string{"b1"}})
	checkPlan(t, p, 2, map[string]want{"b1": {1, OK, "b0"}})
}

func TestNoPathAndNoDCN(t *testing.T) {
	top := Topology{Boards: []string{"a", "b", "c"}, Links: []Link{{A: "a", B: "b", MOSLoss: -1}}, DCN: []string{"a"}}
	p := mustPlan(t, top, Faults{})
	c, _ := p.Board("c")
	if c.Status != Unreachable || !strings.Contains(c.Why, "no cable path") {
		t.Errorf("c: %+v", c)
	}
	top.DCN = nil
	p = mustPlan(t, top, Faults{})
	if p.WaveCount() != 0 || p.Count(Unreachable) != 3 {
		t.Errorf("without DCN: %d waves, %d unreachable", p.WaveCount(), p.Count(Unreachable))
	}
	a, _ := p.Board("a")
	if !strings.Contains(a.Why, "dcn: true") {
		t.Errorf("why %q does not say how to fix it", a.Why)
	}
}

func TestCheckProxy(t *testing.T) {
	top, _ := Clique(2, 4, 1)
	top.DCN = []string{"p0t0", "p0t2"}
	p := mustPlan(t, top, Faults{Dead: []string{"p1t3"}})
	for _, c := range []struct {
		board string
		wave  int
		proxy string
		err   string
	}{
		{"p0t0", 0, "", ""},
		{"p1t1", 2, "p1t0", ""},
		{"p1t1", 2, "p0t1", ""},
		{"p1t1", 1, "p0t1", "golden wave 2"},
		{"p1t1", 2, "p0t0", `"p0t0", which is not an acceptable proxy`},
		{"p0t0", 0, "p0t2", "needs no proxy"},
		{"p1t3", 2, "p1t0", "never bootstraps it (failed"},
		{"zz", 1, "p0t0", `no board named "zz"`},
	} {
		err := p.CheckProxy(c.board, c.wave, c.proxy)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("CheckProxy(%s, %d, %s): %v", c.board, c.wave, c.proxy, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("CheckProxy(%s, %d, %s) = %v, want %q", c.board, c.wave, c.proxy, err, c.err)
		}
	}
}

func TestBootstrapRejectsBadInput(t *testing.T) {
	base := func() Topology { t := chain(3); t.DCN = []string{"b0"}; return t }
	for name, c := range map[string]struct {
		top Topology
		f   Faults
		err string
	}{
		"unknown dcn":      {Topology{Boards: []string{"a"}, DCN: []string{"x"}}, Faults{}, `DCN board: no board named "x"`},
		"no boards":        {Topology{}, Faults{}, "no boards"},
		"dup board":        {Topology{Boards: []string{"a", "a"}}, Faults{}, "listed twice"},
		"bad name":         {Topology{Boards: []string{"a,b"}}, Faults{}, "not usable"},
		"self link":        {Topology{Boards: []string{"a"}, Links: []Link{{A: "a", B: "a"}}}, Faults{}, "to itself"},
		"link unknown":     {Topology{Boards: []string{"a"}, Links: []Link{{A: "a", B: "z"}}}, Faults{}, `no board named "z"`},
		"port twice":       {Topology{Boards: []string{"a", "b", "c"}, Links: []Link{{A: "a", PortA: "p0", B: "b"}, {A: "a", PortA: "p0", B: "c"}}}, Faults{}, "already cabled"},
		"negative delay":   {Topology{Boards: []string{"a", "b"}, Links: []Link{{A: "a", B: "b", LatencyNS: 5, AsymmetryNS: -6}}}, Faults{}, "negative"},
		"dead and dying":   {base(), Faults{Dead: []string{"b1"}, ProxyDies: []string{"b1"}}, "both dead"},
		"dead unknown":     {base(), Faults{Dead: []string{"q"}}, `dead board: no board named "q"`},
		"dying twice":      {base(), Faults{ProxyDies: []string{"b1", "b1"}}, "listed twice"},
		"dcn listed twice": {Topology{Boards: []string{"a"}, DCN: []string{"a", "a"}}, Faults{}, "listed twice"},
	} {
		_, err := Bootstrap(c.top, c.f)
		if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s: err %v, want %q", name, err, c.err)
		}
	}
}

// The waves are a breadth-first search: on any topology, a board's wave is
// one more than its best live proxy's, and every acceptable proxy is a
// neighbour one wave earlier.
func TestWavesAreBreadthFirstOnRandomGraphs(t *testing.T) {
	for seed := uint64(1); seed <= 200; seed++ {
		r := seed
		next := func(n int) int { r = r*6364136223846793005 + 1442695040888963407; return int((r >> 33) % uint64(n)) }
		n := 2 + next(14)
		top := Topology{}
		for i := 0; i < n; i++ {
			top.Boards = append(top.Boards, "n"+strconv.Itoa(i))
		}
		seen := map[[2]int]bool{}
		for k := next(3 * n); k > 0; k-- {
			a, b := next(n), next(n)
			if a == b || seen[[2]int{a, b}] || seen[[2]int{b, a}] {
				continue
			}
			seen[[2]int{a, b}] = true
			top.Links = append(top.Links, Link{A: top.Boards[a], B: top.Boards[b], MOSLoss: -1})
		}
		top.DCN = []string{top.Boards[next(n)]}
		f := Faults{}
		if d := top.Boards[next(n)]; d != top.DCN[0] && next(2) == 0 {
			f.Dead = []string{d}
		}
		p := mustPlan(t, top, f)
		g := p.g
		for i, b := range p.Boards {
			if b.Wave <= 0 {
				continue
			}
			if len(b.Proxies) == 0 {
				t.Fatalf("seed %d: %s in wave %d has no proxy", seed, b.Board, b.Wave)
			}
			for _, q := range b.Proxies {
				qb, _ := p.Board(q)
				if qb.Wave != b.Wave-1 || len(g.between(i, g.index[q])) == 0 {
					t.Fatalf("seed %d: proxy %s (wave %d) of %s (wave %d)", seed, q, qb.Wave, b.Board, b.Wave)
				}
			}
			for _, j := range g.nbr[i] {
				if w := p.Boards[j].Wave; w >= 0 && p.Boards[j].Status == OK && w < b.Wave-1 {
					t.Fatalf("seed %d: %s in wave %d next to %s in wave %d", seed, b.Board, b.Wave, p.Boards[j].Board, w)
				}
			}
		}
	}
}
