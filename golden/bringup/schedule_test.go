package bringup

import (
	"math"
	"testing"

	"github.com/labrunner/labrunner/golden/tin"
)

func testTiming() Timing {
	return Timing{PMOS: testPMOS(), ConfigBytes: 480, ProxyFailMS: -1}
}

func TestScheduleChain(t *testing.T) {
	top := chain(4)
	top.DCN = []string{"b0"}
	p := mustPlan(t, top, Faults{})
	tm := testTiming()
	tm.DCNMS = 1
	s, err := p.Schedule(tm)
	if err != nil {
		t.Fatal(err)
	}
	// Each in-band board: 480 B in 102 µs (TestTransferNoLossByHand).
	const board = 0.102
	if len(s.Boards) != 4 || len(s.Waves) != 4 {
		t.Fatalf("%d boards, %d waves", len(s.Boards), len(s.Waves))
	}
	for w, e := range s.Waves {
		want := 1 + float64(w)*board
		if !near(e.Value, want, 1e-12) || !near(e.Max, want, 1e-12) || !near(e.Min, float64(w)*board, 1e-12) {
			t.Errorf("wave %d ends %+v, want value/max %v, min %v (DCN boards may take no time)", w, e, want, float64(w)*board)
		}
	}
	if s.Total != s.Waves[3] {
		t.Errorf("total %+v, last wave %+v", s.Total, s.Waves[3])
	}
}

func TestScheduleWavesOverlap(t *testing.T) {
	// b0 DCN; b1 and b2 its neighbours; b1 fast (0 loss), b2 over a lossy
	// cable; b3 hangs off b1 only: it need not wait for b2, the slow board
	// of wave 1.
	top := Topology{Boards: []string{"b0", "b1", "b2", "b3"}, DCN: []string{"b0"}, Links: []Link{
		{A: "b0", B: "b1", MOSLoss: -1}, {A: "b0", B: "b2", MOSLoss: 0.01}, {A: "b1", B: "b3", MOSLoss: -1},
	}}
	p := mustPlan(t, top, Faults{})
	s, err := p.Schedule(testTiming())
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]BoardTime{}
	for _, b := range s.Boards {
		byName[b.Board] = b
	}
	if b3, b2 := byName["b3"], byName["b2"]; !(b3.Finish.Value < b2.Finish.Value*2) || !near(b3.Finish.Value, 0.204, 1e-12) {
		t.Errorf("b3 finishes at %v ms, want 0.204 (b2 at %v)", b3.Finish.Value, b2.Finish.Value)
	}
	if b2 := byName["b2"]; !(b2.Duration.Value > 0.102 && b2.Duration.Max > b2.Duration.Value && near(b2.Duration.Min, 0.102, 1e-12)) {
		t.Errorf("lossy b2 duration %+v", b2.Duration)
	}
	if w := s.Waves[1]; w.Value != byName["b2"].Finish.Value {
		t.Errorf("wave 1 ends %+v, not with its slowest board b2 %+v", w, byName["b2"].Finish)
	}
}

func TestScheduleDyingProxyCostsItsTimeout(t *testing.T) {
	top, _ := Clique(2, 4, 1)
	top.DCN = []string{"p0t0", "p0t2"}
	p := mustPlan(t, top, Faults{ProxyDies: []string{"p1t0"}})
	tm := testTiming()
	s, err := p.Schedule(tm)
	if err != nil {
		t.Fatal(err)
	}
	clean, _ := mustPlan(t, top, Faults{}).Schedule(tm)
	find := func(s *Schedule, b string) BoardTime {
		for _, x := range s.Boards {
			if x.Board == b {
				return x
			}
		}
		t.Fatalf("no %s", b)
		return BoardTime{}
	}
	// p1t1's wave-1 neighbours: p0t1, p1t0 (dies), p1t2. Max adds 9
	// automatic timeouts of 48 µs.
	got, was := find(s, "p1t1"), find(clean, "p1t1")
	if !near(got.Duration.Max-was.Duration.Max, 9*0.048, 1e-9) || got.Duration.Value != was.Duration.Value {
		t.Errorf("p1t1 duration %+v, fault-free %+v", got.Duration, was.Duration)
	}
	tm.ProxyFailMS = 5
	s, _ = p.Schedule(tm)
	if got := find(s, "p1t1"); !near(got.Duration.Max-was.Duration.Max, 5, 1e-9) {
		t.Errorf("proxy_fail_ms 5: duration %+v", got.Duration)
	}
	// p0t1 has no dying neighbour in wave 0: no penalty.
	if a, b := find(s, "p0t1"), find(clean, "p0t1"); a.Duration != b.Duration {
		t.Errorf("p0t1 %+v vs %+v", a.Duration, b.Duration)
	}
}

// Every board's band is ordered, and a wave never ends before the one
// before it.
func TestScheduleBandsOrdered(t *testing.T) {
	top, _ := Clique(2, 4, 1)
	top.DCN = []string{"p0t0", "p0t2"}
	top.Links[0].MOSLoss = 0.02
	tm := testTiming()
	tm.PMOS.Loss = 1e-3
	tm.OverheadMS = 0.5
	tm.DCNMS = 2
	s, err := mustPlan(t, top, Faults{Dead: []string{"p1t2"}}).Schedule(tm)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range s.Boards {
		for _, e := range []Estimate{b.Duration, b.Finish} {
			if !(e.Min <= e.Value && e.Value <= e.Max) {
				t.Errorf("%s: %+v not ordered", b.Board, e)
			}
		}
	}
	for w := 1; w < len(s.Waves); w++ {
		if s.Waves[w].Min < s.Waves[w-1].Min || s.Waves[w].Max < s.Waves[w-1].Max {
			t.Errorf("wave %d %+v ends before wave %d %+v", w, s.Waves[w], w-1, s.Waves[w-1])
		}
	}
}

// Aquila §4.4: "a distribution of bootstrap times ranging from 3 minutes to
// 48 minutes. Several of the waves of bootstrap occur simultaneously,
// resulting in a bring-up time of approximately 2.5 hours for a full-sized
// Clique." The full Clique (48 pods of 12 TiNs, 8 global ports, App. A)
// with DCN-connected TiNs as in Fig. 6 (TiN 1 and TiN 3 of the first and
// last pod) bootstraps in four waves; 3 min for the DCN wave and 48 min per
// in-band board gives 3 + 3 x 48 = 147 min, 2% under 2.5 h.
func TestFullCliqueMatchesThePapersBringUpTime(t *testing.T) {
	top, err := Clique(48, 12, 8)
	if err != nil {
		t.Fatal(err)
	}
	if len(top.Boards) != 576 {
		t.Fatalf("%d TiNs, want 576 (§4.2)", len(top.Boards))
	}
	top.DCN = []string{"p0t0", "p0t2", "p47t0", "p47t2"}
	p := mustPlan(t, top, Faults{})
	if p.WaveCount() != 4 || p.Count(OK) != 576 {
		t.Fatalf("%d waves, %d boards up; want 4 and 576", p.WaveCount(), p.Count(OK))
	}
	tm := Timing{PMOS: testPMOS(), ConfigBytes: 0, OverheadMS: 48 * 60e3, DCNMS: 3 * 60e3, ProxyFailMS: -1}
	s, err := p.Schedule(tm)
	if err != nil {
		t.Fatal(err)
	}
	minutes := s.Total.Value / 60e3
	if minutes != 147 || math.Abs(minutes-150)/150 > 0.05 {
		t.Errorf("bring-up %v min, want 147 (about 2.5 h)", minutes)
	}
}

// The clique shorthand cables a Dragonfly as golden/tin's NewClique does,
// so the two models agree on the small and the full Clique.
func TestCliqueWiringMatchesTheTiNModel(t *testing.T) {
	for _, c := range [][3]int{{2, 4, 1}, {48, 12, 8}, {3, 4, 2}, {5, 3, 2}} {
		top, err := Clique(c[0], c[1], c[2])
		if err != nil {
			t.Fatal(err)
		}
		tc, err := tin.NewClique(c[0], c[1], c[2])
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]int{}
		for _, g := range tc.Globals {
			want[g.A.String()+"="+g.B.String()]++
		}
		got := map[string]int{}
		locals := 0
		for _, l := range top.Links {
			if l.A[:strIndex(l.A, 't')] == l.B[:strIndex(l.B, 't')] {
				locals++
				continue
			}
			got[l.A+"="+l.B]++
		}
		if len(got) != len(want) {
			t.Errorf("%v: %d global pairs, tin has %d", c, len(got), len(want))
		}
		for k, n := range want {
			if got[k] != n {
				t.Errorf("%v: global %s x%d, tin x%d", c, k, got[k], n)
			}
		}
		if locals != c[0]*c[1]*(c[1]-1)/2 {
			t.Errorf("%v: %d local links", c, locals)
		}
	}
}

func strIndex(s string, b byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == b {
			return i
		}
	}
	return len(s)
}

func TestScheduleRejects(t *testing.T) {
	top := chain(2)
	top.DCN = []string{"b0"}
	p := mustPlan(t, top, Faults{})
	for name, tm := range map[string]Timing{
		"bytes":    {PMOS: testPMOS(), ConfigBytes: -1},
		"overhead": {PMOS: testPMOS(), OverheadMS: math.NaN()},
		"dcn":      {PMOS: testPMOS(), DCNMS: -1},
		"pmos":     {PMOS: PMOS{}},
	} {
		if _, err := p.Schedule(tm); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// The runner may wait for a dying proxy that is slower than the live ones
// and only then find out it is dead: the target's latest start counts the
// dying proxy's own finish.
func TestScheduleWaitsForASlowDyingProxy(t *testing.T) {
	top := Topology{Boards: []string{"b0", "b1", "b2", "b3"}, DCN: []string{"b0"}, Links: []Link{
		{A: "b0", B: "b1", MOSLoss: 0.05}, {A: "b0", B: "b2", MOSLoss: -1}, {A: "b1", B: "b3", MOSLoss: -1}, {A: "b2", B: "b3", MOSLoss: -1},
	}}
	p := mustPlan(t, top, Faults{ProxyDies: []string{"b1"}})
	checkPlan(t, p, 3, map[string]want{"b1": {1, Died, "b0"}, "b3": {2, OK, "b2"}})
	tm := testTiming()
	tm.ProxyFailMS = 1
	s, err := p.Schedule(tm)
	if err != nil {
		t.Fatal(err)
	}
	at := map[string]BoardTime{}
	for _, b := range s.Boards {
		at[b.Board] = b
	}
	b1, b2, b3 := at["b1"], at["b2"], at["b3"]
	if !(b1.Finish.Max > b2.Finish.Max) {
		t.Fatalf("the lossy dying proxy b1 (%+v) should finish after b2 (%+v)", b1.Finish, b2.Finish)
	}
	if b3.Start.Max != b1.Finish.Max || !near(b3.Finish.Max, b1.Finish.Max+0.102+1, 1e-9) {
		t.Errorf("b3 start %+v finish %+v; b1 finishes %+v", b3.Start, b3.Finish, b1.Finish)
	}
	// The estimate itself takes the live proxy b2 as soon as it is ready.
	if !near(b3.Finish.Value, b2.Finish.Value+0.102, 1e-12) {
		t.Errorf("b3 value %v, b2 %v", b3.Finish.Value, b2.Finish.Value)
	}
}
