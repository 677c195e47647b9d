package bringup

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/drivers/pmos"
	"github.com/labrunner/labrunner/internal/syncbuf"
	"github.com/labrunner/labrunner/labconfig"
	"github.com/labrunner/labrunner/results"
)

// These tests check the bring-up's own logic on lab files, without
// hardware or emulator: racks and waves, the dependencies of an
// unreachable board, the boards a --board run needs, the TimeSync tree and
// offsets, the scoring against golden/bringup, reconciliation and the live
// output. cmd/labrunner/bringup_test.go runs the whole thing on the
// emulated rack.

// clique is the small Clique of docs/tin.md (2 pods x 4 boards), DCN boards
// p0b0 and p0b2, as cmd/labrunner/testdata/bringup-clique.yaml has it.
func clique(dcn ...string) string {
	isDCN := map[string]bool{}
	for _, d := range dcn {
		isDCN[d] = true
	}
	var b strings.Builder
	b.WriteString("lab: unit\nboards:\n")
	for p := 0; p < 2; p++ {
		for t := 0; t < 4; t++ {
			name := fmt.Sprintf("tin-p%db%d", p, t)
			fmt.Fprintf(&b, "  - name: %s\n    kind: zcu102\n    emulated: {clock_ppm: %d}\n    programmer: {type: emulated}\n", name, 3*t-4*p)
			if isDCN[name] {
				b.WriteString("    dcn: true\n    bus: {emulated: {}}\n")
			}
		}
	}
	b.WriteString("links:\n")
	for p := 0; p < 2; p++ {
		for t := 0; t < 4; t++ {
			for k := 0; k < 3; k++ {
				u := (t + k + 1) % 4
				if t < u {
					fmt.Fprintf(&b, "  - {a: \"tin-p%db%d:sfp%d\", b: \"tin-p%db%d:sfp%d\", latency_ns: 5}\n", p, t, k, p, u, 2-k)
				}
			}
		}
	}
	for t := 0; t < 4; t++ {
		fmt.Fprintf(&b, "  - {a: \"tin-p0b%d:sfp3\", b: \"tin-p1b%d:sfp3\", latency_ns: 50}\n", t, t)
	}
	return b.String()
}

type memRecorder struct {
	mu       sync.Mutex
	verdicts []results.Verdict
	meas     []results.Measurement
}

func (m *memRecorder) AddMeasurement(x results.Measurement) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.meas = append(m.meas, x)
	return nil
}
func (m *memRecorder) AddExpectation(string, string, results.Expectation) error { return nil }
func (m *memRecorder) AddVerdict(v results.Verdict) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.verdicts = append(m.verdicts, v)
	return nil
}
func (m *memRecorder) MarkDone(string, string) error { return nil }
func (m *memRecorder) Done(string) bool              { return false }

func (m *memRecorder) failed() []results.Verdict {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []results.Verdict
	for _, v := range m.verdicts {
		if v.Status != results.Pass {
			out = append(out, v)
		}
	}
	return out
}

func (m *memRecorder) verdict(name string) (results.Verdict, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, v := range m.verdicts {
		if v.Name() == name {
			return v, true
		}
	}
	return results.Verdict{}, false
}

// newTestRun builds a run of a lab written in YAML, nothing opened.
func newTestRun(t *testing.T, yaml string, boards ...string) (*run, *memRecorder) {
	t.Helper()
	lab, err := labconfig.Parse("unit.yaml", []byte(yaml), labconfig.Known{})
	if err != nil {
		t.Fatalf("lab: %v", err)
	}
	rec := &memRecorder{}
	r, err := newRun(Options{Lab: lab, Rec: rec, Boards: boards})
	if err != nil {
		t.Fatal(err)
	}
	return r, rec
}

func (r *run) rack(t *testing.T, name string) *rackRun {
	t.Helper()
	for _, rr := range r.racks {
		if rr.Name == name {
			return rr
		}
	}
	t.Fatalf("no rack %s", name)
	return nil
}

// setBoots sets bootstrap outcomes: name -> status and wave (and proxy for
// in-band boards: "ok:1:tin-p0b0").
func setBoots(t *testing.T, rr *rackRun, spec map[string]string) {
	t.Helper()
	for name, s := range spec {
		n := rr.byName[name]
		if n == nil {
			t.Fatalf("no board %s", name)
		}
		parts := strings.Split(s, ":")
		st := bootStatus(parts[0])
		wave := -1
		if len(parts) > 1 {
			fmt.Sscan(parts[1], &wave)
		}
		var proxy *node
		if len(parts) > 2 {
			proxy = rr.byName[parts[2]]
		}
		rr.setBoot(n, func(b *bootInfo) {
			b.Status, b.Wave, b.Proxy = st, wave, proxy
			if proxy != nil {
				if e := proxy.PortTo(n.Board); e != nil {
					b.ProxyPort = e.Index
				}
			}
		})
	}
}

func TestTopologyRacksAndDCNFallback(t *testing.T) {
	yaml := `lab: two
boards:
  - {name: a0, kind: zcu102, dcn: true, bus: {emulated: {}}, emulated: {}, programmer: {type: emulated}}
  - {name: a1, kind: zcu102, emulated: {}, programmer: {type: emulated}}
  - {name: a2, kind: zcu102, emulated: {}, programmer: {type: emulated}}
  - {name: b0, kind: de5net, bus: {emulated: {}}, emulated: {}, programmer: {type: emulated}}
  - {name: b1, kind: de5net, bus: {emulated: {}}, emulated: {}, programmer: {type: emulated}}
  - {name: c0, kind: ultra96, dcn: true, bus: {emulated: {}}, emulated: {}, programmer: {type: emulated}}
links:
  - {a: "a0:sfp1", b: "a1:sfp0", latency_ns: 5}
  - {a: "a1:sfp1", b: "a2:sfp0", latency_ns: 5, asymmetry_ns: 2}
  - {a: "b0:sfp0", b: "b1:sfp0", latency_ns: 10}
`
	lab, err := labconfig.Parse("two.yaml", []byte(yaml), labconfig.Known{})
	if err != nil {
		t.Fatal(err)
	}
	top, err := NewTopology(lab, bitstreams.Default())
	if err != nil {
		t.Fatal(err)
	}
	if len(top.Racks) != 3 {
		t.Fatalf("%d racks, want 3 (a, b, c)", len(top.Racks))
	}
	a, b, c := top.Racks[0], top.Racks[1], top.Racks[2]
	if a.Name != "a0" || len(a.Boards) != 3 || len(a.Cables) != 2 || len(a.DCN) != 1 || a.Note != "" {
		t.Errorf("rack a: %+v", a)
	}
	a1, _ := top.Board("a1")
	if a1.DCN || a1.Addr != 2 || len(a1.Neighbours()) != 2 || a1.PortTo(a.Boards[0]).Name != "sfp0" {
		t.Errorf("a1: dcn %v addr %d neighbours %d", a1.DCN, a1.Addr, len(a1.Neighbours()))
	}
	// A rack without `dcn: true` is reached over its boards' own buses.
	if len(b.DCN) != 2 || !strings.Contains(b.Note, "b0, b1 reached over their own register bus") {
		t.Errorf("rack b: DCN %d, note %q", len(b.DCN), b.Note)
	}
	if len(c.Boards) != 1 || len(c.Cables) != 0 {
		t.Errorf("rack c: %+v", c)
	}
	g := a.Golden()
	if len(g.Links) != 2 || g.Links[1].Name() != "a1:sfp1=a2:sfp0" || g.Links[1].AsymmetryNS != 2 || len(g.DCN) != 1 {
		t.Errorf("golden topology of rack a: %+v", g)
	}
	// A port cabled twice is an error naming the line.
	bad := yaml + "  - {a: \"a0:sfp1\", b: \"a2:sfp1\", latency_ns: 5}\n"
	lab2, err := labconfig.Parse("bad.yaml", []byte(bad), labconfig.Known{})
	if err == nil {
		if _, err = NewTopology(lab2, bitstreams.Default()); err == nil || !strings.Contains(err.Error(), "cabled twice") {
			t.Errorf("a port cabled twice: %v", err)
		}
	}
}

// Boards the runner reaches directly are wave 0 and are never targets: the
// breadth-first distance starts at every DCN board, and an all-DCN rack has
// no in-band board at all (the ExaNet mesh and the Shoal rack of the
// default lab).
func TestDistanceStartsAtEveryDCNBoard(t *testing.T) {
	r, _ := newTestRun(t, clique("tin-p0b0", "tin-p0b2"))
	rr := r.racks[0]
	e := &engine{rr: rr}
	d := e.dist()
	want := map[string]int{"tin-p0b0": 0, "tin-p0b2": 0, "tin-p0b1": 1, "tin-p0b3": 1, "tin-p1b0": 1, "tin-p1b2": 1, "tin-p1b1": 2, "tin-p1b3": 2}
	for name, w := range want {
		if got, ok := d[rr.byName[name]]; !ok || got != w {
			t.Errorf("%s: distance %d (%v), want %d", name, got, ok, w)
		}
	}
	// tin-p0b0 never boots: p1b0 is a wave later, through p1b2.
	setBoots(t, rr, map[string]string{"tin-p0b0": "failed"})
	d = e.dist()
	if _, ok := d[rr.byName["tin-p0b0"]]; ok {
		t.Error("a failed DCN board is still a source")
	}
	if got := d[rr.byName["tin-p1b0"]]; got != 2 {
		t.Errorf("tin-p1b0 with tin-p0b0 dead: distance %d, want 2", got)
	}
	all, _ := newTestRun(t, clique("tin-p0b0", "tin-p0b1", "tin-p0b2", "tin-p0b3", "tin-p1b0", "tin-p1b1", "tin-p1b2", "tin-p1b3"))
	for n, dn := range (&engine{rr: all.racks[0]}).dist() {
		if dn != 0 {
			t.Errorf("all-DCN rack: %s at distance %d", n.Name, dn)
		}
	}
}

// A proxy is acceptable when it is bootstrapped and one wave before the
// target (golden/bringup); a cable found too lossy is not used.
func TestAcceptableProxies(t *testing.T) {
	r, _ := newTestRun(t, clique("tin-p0b0", "tin-p0b2"))
	rr := r.racks[0]
	e := &engine{rr: rr}
	setBoots(t, rr, map[string]string{"tin-p0b0": "ok:0", "tin-p0b2": "ok:0", "tin-p0b1": "ok:1:tin-p0b0", "tin-p1b2": "ok:1:tin-p0b2",
		"tin-p1b0": "ok:1:tin-p0b0"})
	u := rr.byName["tin-p1b1"]
	var got []string
	for _, h := range e.acceptable(u, e.dist()[u]) {
		got = append(got, h.n.Ports[h.port].String())
	}
	if strings.Join(got, " ") != "tin-p0b1:sfp3 tin-p1b0:sfp0 tin-p1b2:sfp2" {
		t.Errorf("acceptable proxies of tin-p1b1: %v", got)
	}
	// tin-p0b3 is wave 1 too but not bootstrapped yet: not offered.
	if hs := e.acceptable(rr.byName["tin-p1b3"], 2); len(hs) != 2 {
		t.Errorf("tin-p1b3: %d proxies, want tin-p1b0 and tin-p1b2", len(hs))
	}
	rr.badCables[rr.byName["tin-p0b1"].Ports[3].Cable] = "too lossy"
	if hs := e.acceptable(u, 2); len(hs) != 2 || hs[0].n.Name != "tin-p1b0" {
		t.Errorf("with tin-p0b1:sfp3 too lossy: %v", hs)
	}
}

// An in-band board no working board can reach is reported at once, naming
// the boards it depends on and why they failed.
func TestUnreachableNamesTheBoardsItDependsOn(t *testing.T) {
	r, _ := newTestRun(t, clique("tin-p0b0", "tin-p0b2"))
	rr := r.racks[0]
	rr.setBoot(rr.byName["tin-p0b0"], func(b *bootInfo) { b.Status, b.Why = bootFailed, "its power stage failed: the bus does not answer" })
	rr.setBoot(rr.byName["tin-p0b2"], func(b *bootInfo) { b.Status, b.Why = bootFailed, "its management firmware never booted" })
	e := &engine{rr: rr}
	if len(e.dist()) != 0 {
		t.Fatalf("no DCN board is up, yet %d boards are reachable", len(e.dist()))
	}
	got := rr.cutOff(rr.byName["tin-p1b3"])
	for _, want := range []string{"tin-p0b0 (failed: its power stage failed", "tin-p0b2 (failed: its management firmware never booted)"} {
		if !strings.Contains(got, want) {
			t.Errorf("dependencies of tin-p1b3: %q lacks %q", got, want)
		}
	}
	// One DCN board left: only the boards behind a dead one are cut off.
	r2, _ := newTestRun(t, clique("tin-p0b0"))
	rr2 := r2.racks[0]
	setBoots(t, rr2, map[string]string{"tin-p0b0": "ok:0", "tin-p0b1": "failed", "tin-p0b2": "failed", "tin-p0b3": "failed", "tin-p1b0": "failed"})
	e2 := &engine{rr: rr2}
	if _, ok := e2.dist()[rr2.byName["tin-p1b1"]]; ok {
		t.Fatal("tin-p1b1 reachable although every path goes through failed boards")
	}
	got = rr2.cutOff(rr2.byName["tin-p1b1"])
	if !strings.Contains(got, "tin-p0b1 (failed") || !strings.Contains(got, "tin-p1b0 (failed") || strings.Contains(got, "tin-p0b0") {
		t.Errorf("dependencies of tin-p1b1: %q", got)
	}
}

// A --board run bootstraps only the boards on a shortest path from a DCN
// board to the boards named.
func TestBoardRunNeedsOnlyTheShortestPaths(t *testing.T) {
	r, _ := newTestRun(t, clique("tin-p0b0", "tin-p0b2"), "tin-p1b1")
	rr := r.racks[0]
	e := &engine{rr: rr}
	var need []string
	for _, n := range rr.nodes {
		if e.needed(n, nil) {
			need = append(need, n.Name)
		}
	}
	if got := strings.Join(need, " "); got != "tin-p0b0 tin-p0b1 tin-p0b2 tin-p1b0 tin-p1b1 tin-p1b2" {
		t.Errorf("boards needed for tin-p1b1: %s", got)
	}
	if !r.judged(rr.byName["tin-p1b1"].Board) || r.judged(rr.byName["tin-p0b1"].Board) {
		t.Error("only the named board is judged")
	}
	if _, err := newRun(Options{Lab: r.opts.Lab, Rec: &memRecorder{}, Boards: []string{"nope"}}); err == nil || !strings.Contains(err.Error(), "no board \"nope\"") {
		t.Errorf("unknown board: %v", err)
	}
}

// The TimeSync tree starts at the DCN board nearest the middle of the rack
// and goes around cables whose latency measurement failed.
func TestTimeSyncTreeFromTheCentre(t *testing.T) {
	// A leaf-spine rack like the default lab's Shoal rack: every board on
	// its own bus, nics first in the lab file.
	yaml := `lab: ls
boards:
  - {name: nic0, kind: de5net, bus: {emulated: {}}, emulated: {}, programmer: {type: emulated}}
  - {name: nic1, kind: de5net, bus: {emulated: {}}, emulated: {}, programmer: {type: emulated}}
  - {name: leaf0, kind: de5net, bus: {emulated: {}}, emulated: {}, programmer: {type: emulated}}
  - {name: leaf1, kind: de5net, bus: {emulated: {}}, emulated: {}, programmer: {type: emulated}}
  - {name: spine, kind: de5net, bus: {emulated: {}}, emulated: {}, programmer: {type: emulated}}
links:
  - {a: "nic0:sfp0", b: "leaf0:sfp0", latency_ns: 10}
  - {a: "nic1:sfp0", b: "leaf1:sfp0", latency_ns: 10}
  - {a: "leaf0:sfp2", b: "spine:sfp0", latency_ns: 10}
  - {a: "leaf1:sfp2", b: "spine:sfp1", latency_ns: 10}
`
	r, _ := newTestRun(t, yaml)
	rr := r.racks[0]
	ts := &tsRack{failedCables: map[*Cable]bool{}, excluded: map[*node]bool{}, delays: map[*Cable]float64{}}
	p := rr.buildTree(rr.nodes, ts)
	if p == nil || p.Name != "spine" || ts.Depth != 2 {
		t.Fatalf("primary %v, depth %d: want spine, 2 (nic0 would make it 4)", p, ts.Depth)
	}
	if n := rr.byName["nic1"]; n.ts.Parent != "leaf1" || n.ts.Depth != 2 || n.ts.RxPort != "sfp0" {
		t.Errorf("nic1: %+v", n.ts)
	}
	// leaf1's uplink failed: nic1 and leaf1 are cut off, and the middle of
	// what is left is leaf0.
	ts.failedCables[rr.byName["leaf1"].Ports[2].Cable] = true
	p = rr.buildTree(rr.nodes, ts)
	if p.Name != "leaf0" || ts.Depth != 1 {
		t.Errorf("with leaf1-spine failed: primary %s depth %d, want leaf0, 1", p.Name, ts.Depth)
	}
	if n := rr.byName["nic1"]; n.ts.Role != "off" {
		t.Errorf("nic1 cut off, yet in the tree: %+v", n.ts)
	}
	ts.excluded[rr.byName["leaf0"]] = true
	rr.buildTree(rr.nodes, ts)
	if n := rr.byName["nic0"]; n.ts.Role != "off" {
		t.Errorf("nic0 behind an excluded board is in the tree: %+v", n.ts)
	}
}

// A slow TimeSync primary shows in every client it feeds, all drifting
// from it the same way: it is the one named, and its own stage fails,
// not its clients' clocks; a board below it that follows its time is not
// blamed either.
func TestSlowPrimaryIsNamedNotItsClients(t *testing.T) {
	r, _ := newTestRun(t, clique("tin-p0b0", "tin-p0b2"))
	rr := r.racks[0]
	p, a, c, d := rr.byName["tin-p0b0"], rr.byName["tin-p0b1"], rr.byName["tin-p0b2"], rr.byName["tin-p1b1"]
	ts := &tsRack{IntervalNS: 100000}
	p.ts = tsInfo{Role: "primary", Status: "primary"}
	// Each client's last correction: -50 ns per 100 us interval (it ran
	// ahead of the slow primary), +500 ppm against it; d and e, below a,
	// follow a's steps.
	a.ts = tsInfo{Role: "client", parent: p, Parent: p.Name, Status: "synced", MaxCorrNS: 50, LastCorrNS: -50, DriftPPM: 500}
	c.ts = tsInfo{Role: "client", parent: p, Parent: p.Name, Status: "synced", MaxCorrNS: 48, LastCorrNS: -48, DriftPPM: 480}
	d.ts = tsInfo{Role: "client", parent: a, Parent: a.Name, Status: "synced", MaxCorrNS: 50, LastCorrNS: -50, DriftPPM: 500}
	e := rr.byName["tin-p1b2"]
	e.ts = tsInfo{Role: "client", parent: a, Parent: a.Name, Status: "synced", MaxCorrNS: 49, LastCorrNS: -49, DriftPPM: 490}
	for _, n := range []*node{a, c, d} {
		got := rr.driftCheck(n, ts)
		if !strings.Contains(got, "the oscillator of tin-p0b0 (the TimeSync primary)") || !strings.Contains(got, "about 490 ppm slow") {
			t.Errorf("%s: diagnosis %q, want the primary named", n.Name, got)
		}
	}
	for _, n := range []*node{p, a} {
		n.boot.Status = bootOK
		n.direct = &memBus{regs: map[uint64]uint32{}}
	}
	if res := rr.tsResult(p, ts, nil); res.Status != Failed || !strings.Contains(res.Seen, "its clock runs about 490 ppm slow") {
		t.Errorf("primary's result: %+v", res)
	}
	// a follows the primary's time: its clients drift from it too, but it
	// is not the one off.
	if res := rr.tsResult(a, ts, nil); strings.Contains(res.Seen, "its clock runs") {
		t.Errorf("a client that follows a slow primary is blamed: %+v", res)
	}
	// One client alone cannot tell its own clock from its parent's: no
	// consensus, the client's own corrections are named.
	c.ts.DriftPPM = 20
	if got := rr.driftCheck(a, ts); strings.Contains(got, "tin-p0b0") {
		t.Errorf("a single drifting client blames its primary: %q", got)
	}
}

// A client's offset is its own largest correction; the bound the hardware
// vouches for adds the corrections along its path.
func TestOffsetsAndPathBound(t *testing.T) {
	r, _ := newTestRun(t, clique("tin-p0b0", "tin-p0b2"))
	rr := r.racks[0]
	p, a, b := rr.byName["tin-p0b0"], rr.byName["tin-p0b1"], rr.byName["tin-p1b1"]
	p.ts = tsInfo{Role: "primary"}
	a.ts = tsInfo{Role: "client", parent: p, MaxCorrNS: 5}
	b.ts = tsInfo{Role: "client", parent: a, MaxCorrNS: 7.5}
	rr.offsets([]*node{p, a, b}, &tsRack{})
	if a.ts.OffsetNS != 5 || a.ts.BoundNS != 5 || b.ts.OffsetNS != 7.5 || b.ts.BoundNS != 12.5 {
		t.Errorf("offsets: a %+v, b %+v", a.ts, b.ts)
	}
	// A large drift names the board whose own corrections are large, not
	// its child that inherits its steps.
	a.ts.MaxCorrNS, a.ts.Parent = 52.5, "tin-p0b0"
	b.ts.MaxCorrNS = 55
	if got := rr.driftCheck(b, &tsRack{IntervalNS: 100000}); !strings.Contains(got, "the oscillator of tin-p0b1") || !strings.Contains(got, "about 525 ppm") {
		t.Errorf("drift diagnosis: %q", got)
	}
	a.ts.MaxCorrNS, b.ts.MaxCorrNS = 2.5, 60
	if got := rr.driftCheck(b, &tsRack{IntervalNS: 100000}); !strings.Contains(got, "the oscillator of tin-p1b1") {
		t.Errorf("drift diagnosis of a slow leaf: %q", got)
	}
	b.ts.MaxCorrNS = 7.5
	if got := rr.driftCheck(b, &tsRack{IntervalNS: 100000}); !strings.Contains(got, "largest own corrections at tin-p1b1: 7.5 ns") {
		t.Errorf("no drift: %q", got)
	}
}

// The delay compensation corrects half a declared asymmetry: more when the
// messages come the slow way.
func TestDelayCompensationOfADeclaredAsymmetry(t *testing.T) {
	yaml := `lab: asym
boards:
  - {name: a, kind: zcu102, dcn: true, bus: {emulated: {}}, emulated: {}, programmer: {type: emulated}}
  - {name: b, kind: zcu102, emulated: {}, programmer: {type: emulated}}
links:
  - {a: "a:sfp0", b: "b:sfp0", latency_ns: 5, asymmetry_ns: 10}
`
	r, _ := newTestRun(t, yaml)
	rr := r.racks[0]
	a, b := rr.byName["a"], rr.byName["b"]
	// Asymmetry adds to B->A: a client at a under b gets the slow way.
	a.ts = tsInfo{Role: "client", Parent: "b", DelayNS: 42.56, rx: 0}
	b.ts = tsInfo{Role: "client", Parent: "a", DelayNS: 42.56, rx: 0}
	if got := compPS(a); got != 47560 {
		t.Errorf("client on the slow side: %d ps, want 47560", got)
	}
	if got := compPS(b); got != 37560 {
		t.Errorf("client on the fast side: %d ps, want 37560", got)
	}
}

// The waves and proxies are scored against the golden order given the
// boards found dead; a board in the wrong wave or behind a proxy the
// golden plan does not accept fails its verdict.
func TestBootstrapScoring(t *testing.T) {
	good := map[string]string{"tin-p0b0": "ok:0", "tin-p0b2": "ok:0", "tin-p0b1": "ok:1:tin-p0b2", "tin-p0b3": "ok:1:tin-p0b0",
		"tin-p1b0": "failed", "tin-p1b2": "ok:1:tin-p0b2", "tin-p1b1": "ok:2:tin-p1b2", "tin-p1b3": "ok:2:tin-p1b2"}
	r, rec := newTestRun(t, clique("tin-p0b0", "tin-p0b2"))
	rr := r.racks[0]
	setBoots(t, rr, good)
	rr.scoreBootstrap()
	for _, v := range rec.failed() {
		if v.Status != results.Skip {
			t.Errorf("%s: %s", v.Name(), v.Message)
		}
	}
	for _, name := range []string{"bringup.boards[rack=tin-p0b0,status=failed]", "bringup.wave.size[rack=tin-p0b0,wave=1]", "bringup.status[board=tin-p1b0,rack=tin-p0b0]"} {
		if _, ok := rec.verdict(name); !ok {
			t.Errorf("no verdict %s", name)
		}
	}
	// The board that failed keeps the wave and proxy cases the lab gives
	// it, skipped with the reason: its JUnit identity never disappears.
	for _, name := range []string{"bringup.wave[board=tin-p1b0,rack=tin-p0b0]", "bringup.proxy[board=tin-p1b0,rack=tin-p0b0]"} {
		if v, ok := rec.verdict(name); !ok || v.Status != results.Skip || !strings.Contains(v.Message, "did not bootstrap") {
			t.Errorf("%s: %+v (found %v), want skipped: the board did not bootstrap", name, v, ok)
		}
	}
	// A proxy is measured, not named: the case is the board's.
	if v, ok := rec.verdict("bringup.proxy[board=tin-p0b1,rack=tin-p0b0]"); !ok || v.Status != results.Pass || !strings.Contains(v.MeasuredText, "tin-p0b2") {
		t.Errorf("bringup.proxy of tin-p0b1: %+v (found %v), want passed, through tin-p0b2", v, ok)
	}
	// tin-p1b1 reported a wave late, through a board of its own wave.
	bad := map[string]string{}
	for k, v := range good {
		bad[k] = v
	}
	bad["tin-p1b1"] = "ok:3:tin-p1b3"
	r2, rec2 := newTestRun(t, clique("tin-p0b0", "tin-p0b2"))
	setBoots(t, r2.racks[0], bad)
	r2.racks[0].scoreBootstrap()
	var names []string
	for _, v := range rec2.failed() {
		names = append(names, v.Name())
	}
	got := strings.Join(names, " ")
	for _, want := range []string{"bringup.wave[board=tin-p1b1", "bringup.proxy[board=tin-p1b1,rack=tin-p0b0]", "bringup.waves[rack=tin-p0b0]"} {
		if !strings.Contains(got, want) {
			t.Errorf("failing verdicts %q lack %s", got, want)
		}
	}
}

// A fake register bus: a register file, with writes to some addresses
// ignored (a board that does not take them).
type memBus struct {
	mu     sync.Mutex
	regs   map[uint64]uint32
	ignore map[uint64]bool
	ops    int
}

func (m *memBus) Read32(_ context.Context, a uint64) (uint32, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ops++
	return m.regs[a], nil
}
func (m *memBus) Write32(_ context.Context, a uint64, v uint32) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ops++
	if !m.ignore[a] {
		m.regs[a] = v
	}
	return nil
}
func (m *memBus) ReadBurst(ctx context.Context, a uint64, dst []uint32) error {
	for i := range dst {
		dst[i], _ = m.Read32(ctx, a+uint64(4*i))
	}
	return nil
}
func (m *memBus) WriteBurst(ctx context.Context, a uint64, src []uint32) error {
	for i, v := range src {
		m.Write32(ctx, a+uint64(4*i), v)
	}
	return nil
}
func (m *memBus) Close() error { return nil }

// Reconciliation reads the runner's intent back, rewrites what differs and
// reports each difference by name, fixed or not (Aquila §4.3; mgmt.md §8).
func TestReconcileFindsAndFixesTheDifferences(t *testing.T) {
	r, rec := newTestRun(t, clique("tin-p0b0", "tin-p0b2"))
	rr := r.racks[0]
	n := rr.byName["tin-p0b1"]
	bus := &memBus{regs: map[uint64]uint32{}, ignore: map[uint64]bool{}}
	n.direct = bus
	mg, _ := n.mg(r)
	addr := func(name string) uint64 {
		loc, err := mg.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		return loc.Addr
	}
	// The intent: address, default route, relaying, two routes, TimeSync.
	r1, _ := n.routeEntry(8)
	r2, _ := n.routeEntry(6)
	if r1 != "ROUTE[0]" || r2 != "ROUTE[1]" {
		t.Fatalf("route entries %s %s", r1, r2)
	}
	if again, _ := n.routeEntry(8); again != "ROUTE[0]" {
		t.Errorf("the route to 8 moved to %s", again)
	}
	want := map[string]uint32{"MY_ADDR": 2, "DEFAULT_ROUTE": 0x80020000, "PROXY_CTRL": 3, "ROUTE[0]": 0x80030008, "ROUTE[1]": 0x80030006, "TS_THRESHOLD_NS": 100}
	for _, k := range []string{"MY_ADDR", "DEFAULT_ROUTE", "PROXY_CTRL", "ROUTE[0]", "ROUTE[1]", "TS_THRESHOLD_NS"} {
		n.setIntent(k, want[k])
		bus.regs[addr(k)] = want[k]
	}
	n.mu.Lock()
	n.boot.Status, n.boot.Boots = bootOK, 1
	n.mu.Unlock()
	if diffs, err := r.reconcile(context.Background(), n); err != nil || len(diffs) != 0 {
		t.Fatalf("nothing changed, yet %v (%v)", diffs, err)
	}
	// An NSF reboot: the firmware's view of the routes reads empty,
	// PROXY_CTRL is back to 2, FW_STATE.BOOTS counts one more.
	bus.regs[addr("DEFAULT_ROUTE")], bus.regs[addr("ROUTE[1]")], bus.regs[addr("PROXY_CTRL")] = 0, 0, 2
	bus.regs[addr("FW_STATE")] = 2<<16 | 2
	r.reconcileBoard(context.Background(), n, "test")
	b := n.bootCopy()
	if len(b.Reconciled) != 1 {
		t.Fatalf("reconciliations: %+v", b.Reconciled)
	}
	rc := b.Reconciled[0]
	var got []string
	for _, d := range rc.Diffs {
		if !d.Fixed {
			t.Errorf("%s not fixed", d.Register)
		}
		got = append(got, d.Register)
	}
	if strings.Join(got, ",") != "DEFAULT_ROUTE,PROXY_CTRL,ROUTE[1]" || !strings.Contains(rc.Reason, "BOOTS 1 -> 2") {
		t.Errorf("differences %v, reason %q", got, rc.Reason)
	}
	if bus.regs[addr("DEFAULT_ROUTE")] != 0x80020000 || bus.regs[addr("ROUTE[1]")] != 0x80030006 {
		t.Error("the differences were not written back")
	}
	if v, ok := rec.verdict("bringup.reconcile[when=test]"); !ok || v.Status != results.Pass {
		t.Errorf("reconcile verdict %+v", v)
	}
	// A register that does not take the write: reported, not fixed, and the
	// verdict fails.
	bus.ignore[addr("ROUTE[0]")] = true
	bus.regs[addr("ROUTE[0]")] = 0
	bus.regs[addr("FW_STATE")] = 3<<16 | 2
	r.reconcileBoard(context.Background(), n, "again")
	b = n.bootCopy()
	if d := b.Reconciled[1].Diffs; len(d) != 1 || d[0].Fixed || !strings.Contains(d[0].String(), "NOT fixed") {
		t.Errorf("stuck register: %+v", d)
	}
	if v, _ := rec.verdict("bringup.reconcile[when=again]"); v.Status != results.Fail {
		t.Errorf("a difference left unfixed passed: %+v", v)
	}
	// No reboot and no unanswered request: nothing read.
	ops := bus.ops
	r.reconcileBoard(context.Background(), n, "quiet")
	if bus.ops-ops != 1 {
		t.Errorf("a board with no sign of a reboot cost %d accesses (FW_STATE only expected)", bus.ops-ops)
	}
}

// The live output: one line per event, whole, even from many goroutines
// and when a diagnosis carries newlines.
func TestPrinterWritesWholeLines(t *testing.T) {
	var buf bytes.Buffer
	p := newPrinter(&syncbuf.Writer{W: &buf})
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			p.stage(&StageResult{Stage: StageScratch, Status: Failed, Expected: "e", Seen: fmt.Sprintf("line one\nline two %d", i), Check: "c"}, fmt.Sprintf("b%d", i), "")
			p.line("bootstrap", fmt.Sprintf("b%d", i), "ok", "wave 1")
		}(i)
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 20*5 {
		t.Fatalf("%d lines, want 100", len(lines))
	}
	stamp := regexp.MustCompile(`^ *\d+\.\d\ds  `)
	for i, l := range lines {
		if !stamp.MatchString(l) {
			t.Fatalf("line %d is not an event line: %q", i, l)
		}
	}
	// A failure's diagnosis stays together under its line.
	for i, l := range lines {
		if strings.Contains(l, "scratch ") && strings.Contains(l, "FAILED") {
			if !strings.Contains(lines[i+1], "expected: e") || !strings.Contains(lines[i+2], "seen:     line one | line two") || !strings.Contains(lines[i+3], "check:    c") {
				t.Fatalf("diagnosis split: %q", lines[i:i+4])
			}
		}
	}
}

func TestStagesAndDeadlines(t *testing.T) {
	for i, s := range Stages() {
		if got, err := ParseStage(strings.ToUpper(s.String())); err != nil || got != s || int(got) != i {
			t.Errorf("ParseStage(%s): %v %v", s, got, err)
		}
	}
	if _, err := ParseStage("boot"); err == nil || !strings.Contains(err.Error(), "bootstrap") {
		t.Errorf("unknown stage: %v", err)
	}
	d := DefaultDeadlines(labconfig.Deadlines{Test: time.Minute})
	if d[StageBootstrap] != time.Minute || d[StageIdentity] != 30*time.Second {
		t.Errorf("deadlines %v", d)
	}
	if err := d.Set("bootstrap=5m"); err != nil || d[StageBootstrap] != 5*time.Minute {
		t.Errorf("Set: %v %v", err, d[StageBootstrap])
	}
	for _, bad := range []string{"bootstrap", "bootstrap=-1s", "nope=1s", "timesync=soon"} {
		if err := d.Set(bad); err == nil {
			t.Errorf("Set(%q) accepted", bad)
		}
	}
}

// The TimeSync stage result of a board names what failed: a primary that
// sent nothing its clients accepted, a cable longer than the lab file says.
func TestTimeSyncDiagnoses(t *testing.T) {
	r, _ := newTestRun(t, clique("tin-p0b0", "tin-p0b2"))
	rr := r.racks[0]
	for _, n := range rr.nodes {
		rr.setBoot(n, func(b *bootInfo) { b.Status = bootOK })
		n.direct = &memBus{regs: map[uint64]uint32{}}
	}
	p0, p2 := rr.byName["tin-p0b0"], rr.byName["tin-p0b2"]
	ts := &tsRack{Primary: "tin-p0b2", excluded: map[*node]bool{p0: true}, failedCables: map[*Cable]bool{}}
	p0.ts = tsInfo{Role: "off"}
	res := rr.tsResult(p0, ts, nil)
	if res.Status != Failed || !strings.Contains(res.Seen, "re-rooted at tin-p0b2") {
		t.Errorf("excluded primary: %+v", res)
	}
	c := p2.Ports[3].Cable
	rr.rawExpect = map[string]results.Expectation{
		results.Key("bringup.timesync.link_delay_ns", results.Params{"link": c.Name()}): {Value: 82.56, AbsTol: 2.5},
	}
	p2.ts = tsInfo{Role: "primary", Status: "primary"}
	ts.Links = []LinkDelay{{Cable: c.Name(), From: c.A.String(), MeasuredNS: 102.6, LabNS: 82.56}}
	res = rr.tsResult(p2, ts, nil)
	if res.Status != Failed || !strings.Contains(res.Seen, "cable "+c.Name()+" measures 102.6 ns") || !strings.Contains(res.Check, "asymmetric cable") {
		t.Errorf("long cable: %+v", res)
	}
	ts.Links[0].MeasuredNS = 83
	if res = rr.tsResult(p2, ts, nil); res.Status != Passed || !strings.Contains(res.Summary, "primary") {
		t.Errorf("a cable within its tolerance: %+v", res)
	}
}

// The relay filter reads a relay whole the first time a proxy's port is
// heard from (its hostname is checked against the cabling), and afterwards
// only while a target is expected there.
func TestRelayFilter(t *testing.T) {
	e := &engine{wanted: map[relayKey]bool{{7, 2}: true}, seen: map[relayKey]bool{}}
	if !e.keepRelay(5, 1) || e.keepRelay(5, 1) {
		t.Error("first relay of 5:1 read whole, the second not")
	}
	if !e.keepRelay(7, 2) || !e.keepRelay(7, 2) {
		t.Error("a wanted relay is always read")
	}
	b, _ := pmos.Msg{Type: pmos.MsgRelay, TTL: 16, Dst: pmos.AddrController, Src: 7, Tag: 1, Body: []byte{2, 0, 1}}.Marshal()
	if p, port, ok := pmos.RelayHead(b); !ok || p != 7 || port != 2 {
		t.Errorf("RelayHead: %d %d %v", p, port, ok)
	}
}

// A board the runner reaches directly is configured once, in wave 0: a
// neighbour relaying its DISCOVER (it discovers until its MY_ADDR is
// written) does not make it a target. An in-band board is taken from an
// acceptable proxy only.
func TestRelaysOfDCNBoardsAreIgnored(t *testing.T) {
	yaml := `lab: mesh
boards:
  - {name: exa-00, kind: tebf0808, dcn: true, bus: {emulated: {}}, emulated: {}, programmer: {type: emulated}}
  - {name: exa-10, kind: tebf0808, dcn: true, bus: {emulated: {}}, emulated: {}, programmer: {type: emulated}}
  - {name: exa-11, kind: tebf0808, emulated: {}, programmer: {type: emulated}}
links:
  - {a: "exa-00:sfp0", b: "exa-10:sfp0", latency_ns: 5}
  - {a: "exa-10:sfp1", b: "exa-11:sfp1", latency_ns: 5}
`
	r, _ := newTestRun(t, yaml)
	rr := r.racks[0]
	e := newEngine(rr, context.Background(), false)
	setBoots(t, rr, map[string]string{"exa-00": "ok:0"})
	relay := func(proxy, target string, pport, tport int) pmos.Relayed {
		return pmos.Relayed{Proxy: rr.byName[proxy].Addr, ProxyPort: uint8(pport),
			Discover: pmos.Discover{DNA: 0x1000 + uint32(rr.byName[target].Addr), Port: uint8(tport), Name: target}}
	}
	// exa-10's wave 0 is still running: exa-00 relays its DISCOVER.
	e.onRelay(relay("exa-00", "exa-10", 0, 0))
	if b := rr.byName["exa-10"].bootCopy(); len(b.heard) != 0 || b.everHeard {
		t.Fatalf("a DCN board was taken as a target: %+v", b)
	}
	// exa-11 relayed by exa-10 before exa-10 is up: not an acceptable proxy
	// yet.
	e.onRelay(relay("exa-10", "exa-11", 1, 1))
	if b := rr.byName["exa-11"].bootCopy(); len(b.heard) != 0 {
		t.Fatalf("relayed by a proxy not bootstrapped: %+v", b.heard)
	}
	setBoots(t, rr, map[string]string{"exa-10": "ok:0"})
	e.onRelay(relay("exa-10", "exa-11", 1, 1))
	b := rr.byName["exa-11"].bootCopy()
	if len(b.heard) != 1 || b.heard[0].proxy.Name != "exa-10" || b.heard[0].port != 1 || b.heard[0].dna != 0x1003 {
		t.Fatalf("exa-11 heard through exa-10: %+v", b.heard)
	}
	e.onRelay(relay("exa-10", "exa-11", 1, 1))
	if n := len(rr.byName["exa-11"].bootCopy().heard); n != 1 {
		t.Errorf("the same relay recorded %d times", n)
	}
}
