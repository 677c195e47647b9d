package bringup

import (
	"math"
	"strings"
	"testing"
)

func TestPaperTimeSyncFigures(t *testing.T) {
	s := DefaultSync()
	// App. B.2: "about 100us", "up to 128ns", "+/- 2.5ns".
	if s.IntervalUS != 100 || s.WaitNS != 128 || s.TxErrNS != 2.5 {
		t.Fatalf("defaults %+v", s)
	}
}

func TestOffsetBoundByHand(t *testing.T) {
	s := DefaultSync()
	// Depth 1, ±100 ppm (rho = 2e-4), no cable delay:
	//   hop   = 2.5 + 2.5 + 0 + 2e-4 x 128          = 5.0256
	//   drift = 2e-4 x (100000 x 1.0001 + 128)      = 20.0276
	b, err := s.OffsetBoundNS(1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !near(b, 5.0256+20.0276, 1e-12) {
		t.Errorf("depth 1: %v ns, want 25.0532", b)
	}
	// Depth 3 with 5 ns cables, 10 ns undeclared asymmetry and 1 ns read error:
	//   hop = 2.5 + 2.5 + 5 + 2e-4 x (128 + 5) = 10.0266; x3 = 30.0798
	//   drift = 2e-4 x (100010 + 384) = 20.0788
	s.AsymMaxNS, s.ReadErrNS = 10, 1
	b, _ = s.OffsetBoundNS(3, 5)
	if !near(b, 30.0798+20.0788+1, 1e-12) {
		t.Errorf("depth 3: %v ns, want 51.1586", b)
	}
	if b0, _ := s.OffsetBoundNS(0, 5); b0 != 0 {
		t.Errorf("the primary's bound %v, want 0", b0)
	}
}

func TestOffsetBoundMonotone(t *testing.T) {
	base := DefaultSync()
	for d := 1; d < 20; d++ {
		a, _ := base.OffsetBoundNS(d, 5)
		b, _ := base.OffsetBoundNS(d+1, 5)
		if !(b > a) {
			t.Errorf("bound at depth %d (%v) not above depth %d (%v)", d+1, b, d, a)
		}
	}
	prev := -1.0
	for _, ppm := range []float64{0, 1, 12.5, 50, 100, 500, 5000} {
		s := base
		s.DriftPPM = ppm
		b, _ := s.OffsetBoundNS(2, 5)
		if !(b > prev) {
			t.Errorf("bound at %v ppm (%v) not above the smaller drift's (%v)", ppm, b, prev)
		}
		prev = b
	}
	// With perfect oscillators only the per-hop errors are left: 5 ns a hop.
	s := base
	s.DriftPPM = 0
	if b, _ := s.OffsetBoundNS(4, 5); !near(b, 20, 1e-12) {
		t.Errorf("no drift, depth 4: %v, want 20", b)
	}
	// A longer interval lets the clocks drift further.
	s = base
	s.IntervalUS = 200
	a, _ := base.OffsetBoundNS(2, 0)
	b, _ := s.OffsetBoundNS(2, 0)
	if !(b > a) {
		t.Errorf("interval 200 µs bound %v not above 100 µs %v", b, a)
	}
}

func TestAsymmetryIsHalved(t *testing.T) {
	// Lab file convention: asymmetry adds to B->A.
	l := Link{A: "p", B: "c", LatencyNS: 5, AsymmetryNS: 10}
	// Parent p = A: down 5, up 15; the receiver adds (5+15)/2 = 10 for a
	// 5 ns flight, so the client is 5 ns ahead.
	if got := AsymmetryOffsetNS(l, "p"); got != 5 {
		t.Errorf("parent A: %v, want +5", got)
	}
	// Parent c = B: down 15, up 5: 5 ns behind.
	if got := AsymmetryOffsetNS(l, "c"); got != -5 {
		t.Errorf("parent B: %v, want -5", got)
	}
	if got := DefaultSync().MeasuredDelayNS(l); got != 10 {
		t.Errorf("measured delay %v, want 10 (half the 20 ns round trip)", got)
	}
}

func mustTree(t *testing.T, top Topology, live, prim []string, s Sync, ppm map[string]float64, f Failure) *Tree {
	t.Helper()
	tr, err := TimeTree(top, live, prim, s, ppm, f)
	if err != nil {
		t.Fatalf("TimeTree: %v", err)
	}
	return tr
}

func TestTreeOnARingWithAnAsymmetricCable(t *testing.T) {
	top := ring(4) // b0-b1-b2-b3-b0
	top.DCN = []string{"b0"}
	for i := range top.Links {
		top.Links[i].LatencyNS = 5
	}
	// b1=b2 is slow from b2 to b1 by 8 ns (asymmetry on B->A).
	top.Links[1].AsymmetryNS = 8
	s := DefaultSync()
	s.DriftPPM = 0 // only hop errors: 5 ns per hop
	tr := mustTree(t, top, top.Boards, []string{"b0"}, s, nil, Failure{})
	if tr.Primary != "b0" || tr.Depth != 2 {
		t.Fatalf("primary %s depth %d", tr.Primary, tr.Depth)
	}
	for name, w := range map[string]struct {
		depth          int
		parents        string
		bound, lo, sys float64
	}{
		"b1": {1, "b0", 5, 0, 0},
		// b2 receives from b1 over the asymmetric cable (b1 is A: the slow
		// direction is up, so b2 is 4 ns ahead) or from b3 (no asymmetry).
		"b2": {2, "b1,b3", 10, 0, 4},
		"b3": {1, "b0", 5, 0, 0},
	} {
		n, _ := tr.Node(name)
		if n.Depth != w.depth || strings.Join(n.Parents, ",") != w.parents || n.State != Synced {
			t.Errorf("%s: depth %d parents %v state %s", name, n.Depth, n.Parents, n.State)
		}
		if !near(n.BoundNS, w.bound, 1e-12) || n.SysMinNS != w.lo || n.SysMaxNS != w.sys {
			t.Errorf("%s: bound %v sys [%v, %v], want %v [%v, %v]", name, n.BoundNS, n.SysMinNS, n.SysMaxNS, w.bound, w.lo, w.sys)
		}
	}
	n, _ := tr.Node("b2")
	if lo, hi := n.Band(); lo != -10 || hi != 14 {
		t.Errorf("b2 band [%v, %v], want [-10, 14]", lo, hi)
	}
	// Without b3, b2 has one path: the band moves by the half asymmetry.
	tr = mustTree(t, top, []string{"b0", "b1", "b2"}, []string{"b0"}, s, nil, Failure{})
	if n, _ := tr.Node("b2"); n.SysMinNS != 4 || n.SysMaxNS != 4 {
		t.Errorf("single path: sys [%v, %v], want [4, 4]", n.SysMinNS, n.SysMaxNS)
	}
}

func TestDeclaredClocksTightenTheBound(t *testing.T) {
	top := chain(3)
	s := DefaultSync()
	generic := mustTree(t, top, top.Boards, []string{"b0"}, s, nil, Failure{})
	declared := mustTree(t, top, top.Boards, []string{"b0"}, s, map[string]float64{"b0": 12.5, "b1": -8, "b2": 3}, Failure{})
	for _, b := range []string{"b1", "b2"} {
		g, _ := generic.Node(b)
		d, _ := declared.Node(b)
		if !(d.BoundNS < g.BoundNS) {
			t.Errorf("%s: declared clocks' bound %v not below the generic %v", b, d.BoundNS, g.BoundNS)
		}
	}
	// b1 drifts 20.5 ppm from the primary: 2.5+2.5 + 20.5e-6·128 per hop,
	// 20.5e-6 x (100000 x 1.0001 + 128) of drift.
	d, _ := declared.Node("b1")
	want := 5 + 20.5e-6*128 + 20.5e-6*(100000*1.0001+128)
	if !near(d.BoundNS, want, 1e-12) {
		t.Errorf("b1 bound %v, want %v", d.BoundNS, want)
	}
}

func TestLargeDriftIsInvalidAndItsSubtreeUnsynced(t *testing.T) {
	top := chain(4)
	s := DefaultSync()
	// b1 is 10000 ppm off: 1000 ns per 100 µs interval, past the 500 ns
	// threshold; b2 and b3 follow it.
	tr := mustTree(t, top, top.Boards, []string{"b0"}, s, map[string]float64{"b0": 0, "b1": 10000}, Failure{})
	for b, st := range map[string]SyncState{"b0": Primary, "b1": Invalid, "b2": Unsynced, "b3": Unsynced} {
		if n, _ := tr.Node(b); n.State != st {
			t.Errorf("%s: %s (%s), want %s", b, n.State, n.Why, st)
		}
	}
	// 4000 ppm: 400 ns per interval, within the threshold.
	tr = mustTree(t, top, top.Boards, []string{"b0"}, s, map[string]float64{"b0": 0, "b1": 4000}, Failure{})
	if n, _ := tr.Node("b1"); n.State != Synced {
		t.Errorf("4000 ppm: %s (%s)", n.State, n.Why)
	}
	// 4900 ppm: 490 ns per interval plus twice the hop error is past 500
	// at worst but not at best: the model does not decide.
	tr = mustTree(t, top, top.Boards, []string{"b0"}, s, map[string]float64{"b0": 0, "b1": 4900}, Failure{})
	if n, _ := tr.Node("b1"); n.State != Uncertain {
		t.Errorf("4900 ppm: %s", n.State)
	}
	d := s.DriftDetectUS(1, 0)
	if d.Min != 200 || d.Value != 300 || !(d.Max > 400 && d.Max < 401) {
		t.Errorf("drift detection %+v", d)
	}
}

func TestDetectionAndRerooting(t *testing.T) {
	top, _ := Clique(2, 4, 1)
	top.DCN = []string{"p0t0", "p0t2"}
	prim := []string{"p0t0", "p0t2"}
	s := DefaultSync()
	tr := mustTree(t, top, top.Boards, prim, s, nil, Failure{})
	// The primary fails: every client notices.
	det, err := tr.Detects(Failure{Boards: []string{"p0t0"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range top.Boards[1:] {
		if det[b] != DetectYes {
			t.Errorf("primary fails: %s detect %v", b, det[b])
		}
	}
	if _, ok := det["p0t0"]; ok {
		t.Error("the failed primary itself is listed")
	}
	re := mustTree(t, top, top.Boards, prim, s, nil, Failure{Boards: []string{"p0t0"}})
	if re.Primary != "p0t2" || re.Depth != 2 {
		t.Errorf("re-rooted at %s depth %d, want p0t2 depth 2", re.Primary, re.Depth)
	}
	for b, d := range map[string]int{"p0t1": 1, "p0t3": 1, "p1t2": 1, "p1t0": 2, "p1t1": 2, "p1t3": 2} {
		if n, _ := re.Node(b); n.Depth != d || n.State != Synced {
			t.Errorf("re-rooted %s: depth %d %s, want %d", b, n.Depth, n.State, d)
		}
	}
	if n, _ := re.Node("p0t0"); n.State != Down {
		t.Errorf("failed primary %s", n.State)
	}
	// The global cable p0t0=p1t0 fails: only p1t0 depends on it for sure;
	// p1t1 and p1t3 may have chosen p1t0 as parent; the rest do not care.
	det, err = tr.Detects(Failure{Links: []string{"p1t0=p0t0"}})
	if err != nil {
		t.Fatal(err)
	}
	for b, w := range map[string]Detect{"p1t0": DetectYes, "p1t1": DetectMaybe, "p1t3": DetectMaybe, "p1t2": DetectMaybe,
		"p0t1": DetectNo, "p0t2": DetectNo, "p0t3": DetectNo} {
		if det[b] != w {
			t.Errorf("cable fails: %s detect %v, want %v", b, det[b], w)
		}
	}
	re = mustTree(t, top, top.Boards, prim, s, nil, Failure{Links: []string{"p1t0=p0t0"}})
	if n, _ := re.Node("p1t0"); re.Primary != "p0t0" || n.Depth != 3 || strings.Join(n.Parents, ",") != "p1t1,p1t2,p1t3" {
		t.Errorf("after the cable: primary %s, p1t0 depth %d parents %v", re.Primary, n.Depth, n.Parents)
	}
	d := s.DetectUS(2, 0)
	if d.Min != 200 || d.Value != 250 || !near(d.Max, 300*1.0001+0.256, 1e-12) {
		t.Errorf("detection %+v", d)
	}
	if _, err := tr.Detects(Failure{Links: []string{"p0t0=p1t1"}}); err == nil {
		t.Error("a cable that does not exist was accepted")
	}
}

func TestTreeDownAndCutOff(t *testing.T) {
	top := chain(3)
	tr := mustTree(t, top, []string{"b0", "b2"}, []string{"b1", "b0"}, DefaultSync(), nil, Failure{})
	if tr.Primary != "b0" {
		t.Fatalf("primary %s: b1 is down", tr.Primary)
	}
	for b, st := range map[string]SyncState{"b1": Down, "b2": Unsynced} {
		if n, _ := tr.Node(b); n.State != st || n.Depth != -1 {
			t.Errorf("%s: %s depth %d", b, n.State, n.Depth)
		}
	}
	tr = mustTree(t, top, nil, []string{"b0"}, DefaultSync(), nil, Failure{})
	if tr.Primary != "" {
		t.Errorf("primary %q with no board up", tr.Primary)
	}
}

func TestConverge(t *testing.T) {
	s := DefaultSync()
	c := s.ConvergeUS(3, 5)
	if c.Min != 0 || !near(c.Max, 100*1.0001+3*0.133, 1e-12) {
		t.Errorf("converge %+v", c)
	}
}

func TestTimeTreeRejects(t *testing.T) {
	top := chain(2)
	s := DefaultSync()
	for name, c := range map[string]struct {
		live, prim []string
		s          Sync
		ppm        map[string]float64
		f          Failure
		err        string
	}{
		"live":     {[]string{"x"}, nil, s, nil, Failure{}, "live board"},
		"prim":     {nil, []string{"x"}, s, nil, Failure{}, "primary candidate"},
		"ppm":      {nil, nil, s, map[string]float64{"x": 1}, Failure{}, "clock_ppm"},
		"ppm size": {nil, nil, s, map[string]float64{"b0": 1e6}, Failure{}, "outside"},
		"interval": {nil, nil, Sync{InvalidCount: 1}, nil, Failure{}, "interval"},
		"count":    {nil, nil, Sync{IntervalUS: 1}, nil, Failure{}, "invalid_count"},
		"fail":     {nil, nil, s, nil, Failure{Boards: []string{"q"}}, "failed board"},
		"nan":      {nil, nil, Sync{IntervalUS: math.NaN(), InvalidCount: 1}, nil, Failure{}, "interval_us"},
	} {
		_, err := TimeTree(top, c.live, c.prim, c.s, c.ppm, c.f)
		if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s: %v, want %q", name, err, c.err)
		}
	}
}

func TestParseFailure(t *testing.T) {
	f, err := ParseFailure(" p0t0 , p0t1=p1t1, a:x=b:y")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(f.Boards, ",") != "p0t0" || strings.Join(f.Links, ",") != "p0t1=p1t1,a:x=b:y" {
		t.Errorf("%+v", f)
	}
	for _, s := range []string{"a,a", "a=b/5", "a b", "=b", "a=a"} {
		if _, err := ParseFailure(s); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
}
