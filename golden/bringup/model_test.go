package bringup

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/labrunner/labrunner/golden"
	"github.com/labrunner/labrunner/results"
)

func predict(t *testing.T, set map[string]string) []results.Expectation {
	t.Helper()
	m, err := golden.Lookup(Name)
	if err != nil {
		t.Fatal(err)
	}
	es, err := m.Predict(set)
	if err != nil {
		t.Fatalf("Predict(%v): %v", set, err)
	}
	checkExpectations(t, es)
	return es
}

// checkExpectations: unique keys, a source on every figure, values inside
// their bands, JSON-serialisable.
func checkExpectations(t testing.TB, es []results.Expectation) {
	t.Helper()
	keys := map[string]bool{}
	for _, e := range es {
		if keys[e.Key()] {
			t.Fatalf("duplicate key %s", e.Key())
		}
		keys[e.Key()] = true
		if !strings.HasPrefix(e.Metric, "bringup.") || e.Source == "" {
			t.Fatalf("%s: metric outside bringup.* or no source", e.Key())
		}
		if e.Text != "" || e.Metric == "bringup.timesync.primary" || strings.HasSuffix(e.Metric, ".status") {
			continue
		}
		lo, hi := e.Bounds()
		if math.IsNaN(lo) || math.IsNaN(hi) || lo > hi || math.IsNaN(e.Value) {
			t.Fatalf("%s: bounds [%v, %v] value %v", e.Key(), lo, hi, e.Value)
		}
		if !(e.Value >= lo && e.Value <= hi) {
			t.Fatalf("%s: value %v outside [%v, %v]", e.Key(), e.Value, lo, hi)
		}
	}
	if _, err := json.Marshal(es); err != nil {
		t.Fatalf("not JSON-serialisable: %v", err)
	}
}

func find(es []results.Expectation, key string) (results.Expectation, bool) {
	for _, e := range es {
		if e.Key() == key {
			return e, true
		}
	}
	return results.Expectation{}, false
}

func mustFind(t *testing.T, es []results.Expectation, key string) results.Expectation {
	t.Helper()
	e, ok := find(es, key)
	if !ok {
		t.Fatalf("no expectation %s", key)
	}
	return e
}

func count(es []results.Expectation) map[string]int {
	out := map[string]int{}
	for _, e := range es {
		out[e.Metric]++
	}
	return out
}

func TestRegistered(t *testing.T) {
	if !slices.Contains(golden.Names(), Name) {
		t.Fatalf("golden.Names() = %v lacks %q", golden.Names(), Name)
	}
	m, _ := golden.Lookup(Name)
	if m.Doc() == "" {
		t.Fatal("no doc")
	}
	for _, p := range m.Params() {
		if p.Doc == "" {
			t.Errorf("param %s has no doc", p.Name)
		}
	}
}

// Every metric Predict emits is listed in the package doc, the contract
// the runner's report is scored from.
func TestEveryMetricIsDocumented(t *testing.T) {
	sets := []map[string]string{
		nil,
		{"ts_fail": "p0t0", "clock_ppm": "p0t0=0,p0t1=20000", "shoal": "prototype"},
		{"links": "a=b/5/2", "dcn": "a", "shoal": "rack"},
	}
	doc := docText(t)
	seen := map[string]bool{}
	for _, set := range sets {
		for _, e := range predict(t, set) {
			seen[e.Metric] = true
		}
	}
	for m := range seen {
		short := m
		if i := strings.Index(m, ".reroot."); i >= 0 {
			short = m[i+1:]
		} else if strings.HasPrefix(m, "bringup.shoal.") {
			short = "." + strings.TrimPrefix(m, "bringup.shoal.")
		}
		if !strings.Contains(doc, m) && !strings.Contains(doc, short) {
			t.Errorf("metric %s is not in doc.go", m)
		}
	}
	if len(seen) < 40 {
		t.Errorf("only %d metrics exercised", len(seen))
	}
}

func TestPredictDefaults(t *testing.T) {
	es := predict(t, nil)
	got := count(es)
	for metric, n := range map[string]int{
		"bringup.waves": 1, "bringup.wave.size": 3, "bringup.boards": 4, "bringup.status": 8, "bringup.wave": 8,
		"bringup.proxy": 12, "bringup.board_ms": 6, "bringup.wave_ms": 2, "bringup.time_ms": 1,
		"bringup.pmos.frame_words": 1, "bringup.pmos.efficiency": 1, "bringup.pmos.goodput": 1, "bringup.pmos.abandon_probability": 1,
		"bringup.timesync.primary": 1, "bringup.timesync.tree_depth": 1, "bringup.timesync.status": 8, "bringup.timesync.depth": 8,
		"bringup.timesync.parent": 10, "bringup.timesync.offset_ns": 7, "bringup.timesync.offset_bound_ns": 2,
		"bringup.timesync.converge_us": 1,
	} {
		if got[metric] != n {
			t.Errorf("%s: %d expectations, want %d", metric, got[metric], n)
		}
		delete(got, metric)
	}
	if len(got) != 0 {
		t.Errorf("unexpected metrics %v", got)
	}
	if e := mustFind(t, es, "bringup.waves"); e.Value != 3 {
		t.Errorf("waves %v, want 3", e.Value)
	}
	if e := mustFind(t, es, "bringup.wave{board=p1t3}"); e.Value != 2 {
		t.Errorf("p1t3 wave %v", e.Value)
	}
	if _, ok := find(es, "bringup.proxy{board=p1t3,proxy=p0t0}"); ok {
		t.Error("p0t0 is not next to p1t3 but is listed as its proxy")
	}
	// 16384 B: 341 full frames + one of 16 B (4 words): 3414 words, at
	// 1 µs each, + 2 ack words: 3.416 ms per in-band board, two in-band
	// waves one after the other.
	if e := mustFind(t, es, "bringup.board_ms{board=p0t1}"); !near(*e.Min, 3.416, 1e-12) || !near(*e.Max, 3.416, 1e-12) {
		t.Errorf("board time %s", e.Describe())
	}
	if e := mustFind(t, es, "bringup.time_ms"); !near(e.Value, 6.832, 1e-12) {
		t.Errorf("total %s", e.Describe())
	}
	if e := mustFind(t, es, "bringup.timesync.offset_bound_ns{depth=1}"); !near(e.Value, 25.0532, 1e-12) {
		t.Errorf("bound %v", e.Value)
	}
	if e := mustFind(t, es, "bringup.timesync.offset_ns{board=p1t1}"); !near(*e.Max, 30.1044, 1e-12) || !near(*e.Min, -30.1044, 1e-12) {
		t.Errorf("p1t1 band %s", e.Describe())
	}
}

// A runner passes its lab through Topology.Params; Predict then agrees with
// the functions it could call directly.
func TestTopologyParamsRoundTrip(t *testing.T) {
	top := Topology{
		Boards: []string{"x0", "x1", "x2", "x3", "lonely"},
		Links: []Link{
			{A: "x0", PortA: "sfp0", B: "x1", PortB: "sfp0", LatencyNS: 5, MOSLoss: -1},
			{A: "x1", PortA: "sfp1", B: "x2", PortB: "sfp1", LatencyNS: 5, AsymmetryNS: 12, MOSLoss: -1},
			{A: "x2", PortA: "sfp0", B: "x3", PortB: "sfp0", LatencyNS: 7.5, MOSLoss: 0.01},
		},
		DCN: []string{"x0"},
	}
	set := top.Params()
	set["dead"] = ""
	es := predict(t, set)
	p := mustPlan(t, top, Faults{})
	for _, b := range p.Boards {
		e := mustFind(t, es, "bringup.status{board="+b.Board+"}")
		if e.Text != string(b.Status) {
			t.Errorf("%s: %s vs %s", b.Board, e.Text, b.Status)
		}
	}
	if e := mustFind(t, es, "bringup.status{board=lonely}"); e.Text != "unreachable" {
		t.Errorf("lonely: %s", e.Text)
	}
	// x2 gets the half asymmetry of its cable: x1 is A, the slow
	// direction (B->A) is up, so x2 is 6 ns ahead.
	e := mustFind(t, es, "bringup.timesync.offset_ns{board=x2}")
	if !near((*e.Min+*e.Max)/2, 6, 1e-12) {
		t.Errorf("x2 band %s, want it centred on +6", e.Describe())
	}
	if e := mustFind(t, es, "bringup.timesync.link_delay_ns{link=x1:sfp1=x2:sfp1}"); e.Value != 11 || e.AbsTol != 2.5 {
		t.Errorf("link delay %s", e.Describe())
	}
	// The lossy cable slows x3 down.
	x3 := mustFind(t, es, "bringup.board_ms{board=x3}")
	x2 := mustFind(t, es, "bringup.board_ms{board=x2}")
	if !(x3.Value > x2.Value && *x3.Max > *x2.Max && near(*x3.Min, *x2.Min+0.000005, 1e-9)) { // 2 x 2.5 ns longer cable
		t.Errorf("x3 %s vs x2 %s", x3.Describe(), x2.Describe())
	}
	links, err := ParseLinks(set["links"])
	if err != nil || !slices.Equal(links, top.Links) {
		t.Errorf("links do not round-trip: %v %v", links, err)
	}
}

func TestPredictFaults(t *testing.T) {
	es := predict(t, map[string]string{"dead": "p0t0", "proxy_dies": "p1t2"})
	// p0t2 alone: wave 1 p0t1, p0t3, p1t2 (dies); wave 2 p1t1 and p1t3
	// through p0t1/p0t3; p1t0 only next to p1t1, p1t2, p1t3 and p0t0:
	// wave 3.
	for key, v := range map[string]float64{
		"bringup.waves": 4, "bringup.wave{board=p1t2}": 1, "bringup.wave{board=p1t1}": 2, "bringup.wave{board=p1t0}": 3,
		"bringup.boards{status=failed}": 1, "bringup.boards{status=died}": 1, "bringup.boards{status=ok}": 6,
		"bringup.proxy{board=p1t0,proxy=p1t1}": 1, "bringup.proxy{board=p1t0,proxy=p1t3}": 1,
	} {
		if e := mustFind(t, es, key); e.Value != v {
			t.Errorf("%s = %v, want %v", key, e.Value, v)
		}
	}
	for key, txt := range map[string]string{
		"bringup.status{board=p0t0}": "failed", "bringup.status{board=p1t2}": "died",
		"bringup.timesync.primary": "p0t2", "bringup.timesync.status{board=p1t2}": "down",
	} {
		if e := mustFind(t, es, key); e.Text != txt {
			t.Errorf("%s = %q, want %q", key, e.Text, txt)
		}
	}
	if _, ok := find(es, "bringup.wave{board=p0t0}"); ok {
		t.Error("a failed board has a wave")
	}
	// The died board's targets are not charged its timeout if they never
	// had it as a neighbour in the previous wave; p1t1 and p1t3 are next
	// to p1t2 (wave 1) and are.
	e1 := mustFind(t, es, "bringup.board_ms{board=p1t1}")
	e0 := mustFind(t, es, "bringup.board_ms{board=p1t0}")
	if !(*e1.Max > *e0.Max) {
		t.Errorf("p1t1 %s should carry the dead proxy's timeout over p1t0 %s", e1.Describe(), e0.Describe())
	}
}

func TestPredictTimeSyncFailure(t *testing.T) {
	es := predict(t, map[string]string{"ts_fail": "p0t0"})
	if e := mustFind(t, es, "bringup.timesync.reroot.primary"); e.Text != "p0t2" {
		t.Errorf("new primary %q", e.Text)
	}
	for _, b := range []string{"p0t1", "p1t3"} {
		if e := mustFind(t, es, "bringup.timesync.detect{board="+b+"}"); e.Value != 1 {
			t.Errorf("%s detect %v", b, e.Value)
		}
		e := mustFind(t, es, "bringup.timesync.detect_us{board="+b+"}")
		if *e.Min != 200 || *e.Max < 300 || *e.Max > 301 {
			t.Errorf("%s detect time %s", b, e.Describe())
		}
	}
	if e := mustFind(t, es, "bringup.timesync.reroot.status{board=p0t0}"); e.Text != "down" {
		t.Errorf("old primary %q", e.Text)
	}
	if e := mustFind(t, es, "bringup.timesync.reroot.depth{board=p1t0}"); e.Value != 2 {
		t.Errorf("p1t0 re-rooted depth %v", e.Value)
	}
	es = predict(t, map[string]string{"ts_fail": "p0t0=p1t0"})
	if e := mustFind(t, es, "bringup.timesync.detect{board=p1t1}"); e.Min == nil || *e.Min != 0 || *e.Max != 1 {
		t.Errorf("p1t1 may or may not notice: %s", e.Describe())
	}
	if e := mustFind(t, es, "bringup.timesync.detect{board=p0t3}"); e.Value != 0 || e.Min != nil {
		t.Errorf("p0t3 does not notice: %s", e.Describe())
	}
	// Large drift: declared clocks.
	es = predict(t, map[string]string{"clock_ppm": "p0t0=0,p1t0=20000"})
	if e := mustFind(t, es, "bringup.timesync.status{board=p1t0}"); e.Text != "invalid" {
		t.Errorf("p1t0 %q", e.Text)
	}
	mustFind(t, es, "bringup.timesync.drift_detect_us{board=p1t0}")
	if _, ok := find(es, "bringup.timesync.offset_ns{board=p1t0}"); ok {
		t.Error("an invalid board has an offset band")
	}
}

func TestPredictShoal(t *testing.T) {
	es := predict(t, map[string]string{"shoal": "prototype"})
	for key, v := range map[string]float64{
		"bringup.shoal.guard_ns": 6.4, "bringup.shoal.guard_cycles": 1, "bringup.shoal.slot_ns": 76.8,
		"bringup.shoal.slot_cycles": 12, "bringup.shoal.usable_ns": 51.2, "bringup.shoal.min_slot_ns": 64,
	} {
		if e := mustFind(t, es, key); !near(e.Value, v, 1e-9) {
			t.Errorf("%s = %v, want %v", key, e.Value, v)
		}
	}
	if e := mustFind(t, es, "bringup.shoal.precision_ns"); *e.Max != 6.4 {
		t.Errorf("precision band %s", e.Describe())
	}
	es = predict(t, map[string]string{"shoal": "rack", "shoal_precision_ns": "0.3"})
	// 2.5 + 0.2 + 0.3 = 3.0 ns; (30 - 3)/20.5 = 1.32 -> one cell: 23.5 ns.
	if e := mustFind(t, es, "bringup.shoal.guard_ns"); !near(e.Value, 3, 1e-12) {
		t.Errorf("guard %v", e.Value)
	}
	if e := mustFind(t, es, "bringup.shoal.slot_ns"); !near(e.Value, 23.5, 1e-12) {
		t.Errorf("slot %v", e.Value)
	}
	// The configured 2.75 ns guard still absorbs only 0.05 ns.
	if e := mustFind(t, es, "bringup.shoal.precision_ns"); !near(*e.Max, 0.05, 1e-12) {
		t.Errorf("precision band %s", e.Describe())
	}
}

func TestPredictRejects(t *testing.T) {
	m := Model{}
	for _, c := range []struct {
		set map[string]string
		err string
	}{
		{map[string]string{"payload": "1"}, `unknown parameter "payload"`},
		{map[string]string{"links": "a=b", "clique": "2x4", "dcn": "a"}, "two ways"},
		{map[string]string{"links": "a=b"}, "no DCN board"},
		{map[string]string{"dcn": "q"}, `no board named "q"`},
		{map[string]string{"clique": "2y4"}, "PODSxBOARDS"},
		{map[string]string{"clique": "3x4", "global_ports": "0"}, "global_ports"},
		{map[string]string{"mos_rate": "0"}, "mos_rate"},
		{map[string]string{"mos_loss": "1"}, "mos_loss"},
		{map[string]string{"window": "x"}, "window"},
		{map[string]string{"dead": "p0t0", "proxy_dies": "p0t0"}, "pick one"},
		{map[string]string{"shoal_precision_ns": "1"}, "needs shoal="},
		{map[string]string{"shoal": "big"}, "not a configuration"},
		{map[string]string{"shoal": "prototype", "shoal_guard_ns": "7"}, "whole number"},
		{map[string]string{"ts_fail": "p0t0=p1t3"}, "no such cable"},
		{map[string]string{"clock_ppm": "p0t0"}, "board=ppm"},
		{map[string]string{"proxy_fail_ms": "soon"}, "proxy_fail_ms"},
		{map[string]string{"mos_loss": "0.9"}, "cannot get a frame through"},
	} {
		_, err := m.Predict(c.set)
		if err == nil || !strings.Contains(err.Error(), c.err) || !strings.HasPrefix(err.Error(), Name+":") {
			t.Errorf("Predict(%v) = %v, want %q", c.set, err, c.err)
		}
	}
}

func TestParseLinks(t *testing.T) {
	ls, err := ParseLinks(" a=b , c:p0=d:p1/5 ,e=f/2.5/-1/0.25")
	if err != nil {
		t.Fatal(err)
	}
	want := []Link{
		{A: "a", B: "b", MOSLoss: -1},
		{A: "c", PortA: "p0", B: "d", PortB: "p1", LatencyNS: 5, MOSLoss: -1},
		{A: "e", B: "f", LatencyNS: 2.5, AsymmetryNS: -1, MOSLoss: 0.25},
	}
	if !slices.Equal(ls, want) {
		t.Errorf("%+v", ls)
	}
	for _, s := range []string{"a", "a=b,b=a", "a=b/1/2/3/4", "a=b/x", "a=b/-1", "a=b/1/-2", "a=a", "a:=b", "a=b/1/0/1", "a=b/NaN", "a=b/Inf"} {
		if _, err := ParseLinks(s); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
	// Parallel cables need ports.
	if _, err := ParseLinks("a:p0=b:p0,a:p1=b:p1"); err != nil {
		t.Errorf("parallel cables with ports: %v", err)
	}
}
