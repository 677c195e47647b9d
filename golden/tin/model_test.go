package tin

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/labrunner/labrunner/golden"
	"github.com/labrunner/labrunner/internal/raceshare"
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
	return es
}

func byKey(es []results.Expectation) map[string]results.Expectation {
	out := map[string]results.Expectation{}
	for _, e := range es {
		out[e.Key()] = e
	}
	return out
}

func TestRegistered(t *testing.T) {
	if !slices.Contains(golden.Names(), Name) {
		t.Fatalf("golden.Names() = %v lacks %q", golden.Names(), Name)
	}
	m, _ := golden.Lookup(Name)
	for _, p := range m.Params() {
		if p.Doc == "" {
			t.Errorf("param %s has no doc", p.Name)
		}
	}
}

// Every expectation has a source and a unique key, and the figures a runner
// scores come out as the closed forms say.
func TestPredictWithoutSimulation(t *testing.T) {
	es := predict(t, map[string]string{"loads": "", "rma_count": "0"})
	keys := byKey(es)
	if len(keys) != len(es) {
		t.Fatalf("%d expectations but %d distinct keys", len(es), len(keys))
	}
	for _, e := range es {
		if e.Source == "" {
			t.Errorf("%s has no source", e.Key())
		}
		if strings.HasPrefix(e.Source, "Aquila") && !strings.Contains(e.Source, "§") && !strings.Contains(e.Source, "App. ") {
			t.Errorf("%s cites no section: %q", e.Key(), e.Source)
		}
	}
	want := map[string]float64{
		"tin.cell.count{bytes=1500}":                                  10,
		"tin.cell.wire_bytes{bytes=1500}":                             1584,
		"tin.rts.incast_reduction{bytes=4096}":                        256,
		"tin.rma.resp_cells{bytes=4096}":                              64,
		"tin.cell.header_overhead":                                    0.05,
		"tin.latency.hop{link=global}":                                70,
		"tin.latency.serialization{cell=160,link=local}":              51.2,
		"tin.latency.cell{cell=160,global=0,local=1}":                 111.2,
		"tin.clique.tins{clique=full}":                                576,
		"tin.clique.hosts{clique=full}":                               1152,
		"tin.clique.global_links{clique=2x4}":                         4,
		"tin.route.vcs{clique=2x4}":                                   3,
		"tin.route.in_set{dst=p1t2e0,mode=fully-adaptive,src=p0t1e0}": 1,
	}
	for k, v := range want {
		e, ok := keys[k]
		if !ok {
			t.Errorf("no expectation %s", k)
			continue
		}
		if lo, hi := e.Bounds(); v < lo || v > hi {
			t.Errorf("%s = %s, want %g", k, e.Describe(), v)
		}
	}
	if e := keys["tin.cell.sizes{bytes=153}"]; e.Text != "160,16" {
		t.Errorf("sizes of 153 B: %q", e.Text)
	}
	d := keys["tin.route.distinct{dst=p1t2e0,mode=minimal-deterministic,src=p0t1e0}"]
	if lo, hi := d.Bounds(); lo != 1 || hi != 1 {
		t.Errorf("hashed mode distinct paths [%g, %g], want [1, 1]", lo, hi)
	}
	d = keys["tin.route.distinct{dst=p1t2e0,mode=fully-adaptive,src=p0t1e0}"]
	if _, hi := d.Bounds(); hi != 4 {
		t.Errorf("fully adaptive p0t1 -> p1t2: at most %g paths, want 4", hi)
	}
	if n := strings.Count(keys["tin.route.in_set{dst=p1t2e0,mode=fully-adaptive,src=p0t1e0}"].Note, "->p1t2["); n != 4 {
		t.Errorf("the in_set note lists %d paths to p1t2, want 4", n)
	}
	if _, err := json.Marshal(es); err != nil {
		t.Fatal(err)
	}
}

func TestPredictOnePairAndWiring(t *testing.T) {
	es := predict(t, map[string]string{"loads": "", "packets": "", "reads": "", "clique": "3x2", "wiring": "p0t0-p1t1,p0t1-p2t0,p1t0-p2t1",
		"src": "p0t0e1", "dst": "p2t0e2", "modes": "fully-adaptive", "class": "1"})
	keys := byKey(es)
	e, ok := keys["tin.route.in_set{dst=p2t0e2,mode=fully-adaptive,src=p0t0e1}"]
	if !ok || !strings.Contains(e.Note, "p0t0->p1t1[vc3]->p1t0[vc4]->p2t1[vc4]->p2t0[vc5]") {
		t.Fatalf("3-pod route set: %+v", e)
	}
	if v := keys["tin.route.vcs{clique=3x2}"]; v.Value != 3 {
		t.Errorf("3-pod Clique uses %g routing VCs, want 3", v.Value)
	}
}

// The simulated bands: ordered by load, containing their own value.
func TestPredictSimulation(t *testing.T) {
	// Under the race detector the predictions run at an eighth of their
	// size (its CPU was a third of the package's there): every check but
	// the band's width, which needs the full 8 runs of 800 requests.
	measured, replicas := "800", "8"
	if raceshare.Enabled {
		measured, replicas = "200", "4"
		t.Logf("race detector on: %s golden runs of %s requests (make test's second pass runs 8 of 800)", replicas, measured)
	}
	es := predict(t, map[string]string{"packets": "", "reads": "", "modes": "", "loads": "0.05,0.25",
		"measured": measured, "replicas": replicas})
	keys := byKey(es)
	var prev float64
	for _, l := range []string{"0.05", "0.25"} {
		e, ok := keys["tin.fabric.rtt{bytes=1500,load="+l+",stat=mean}"]
		if !ok {
			t.Fatalf("no RTT expectation at load %s", l)
		}
		lo, hi := e.Bounds()
		if e.Value < lo || e.Value > hi || lo <= 0 || e.Value <= prev {
			t.Errorf("load %s: RTT %g in [%g, %g] after %g", l, e.Value, lo, hi, prev)
		}
		prev = e.Value
		if _, ok := keys["tin.fabric.latency{bytes=1500,load="+l+",stat=p99}"]; !ok {
			t.Errorf("no one-way p99 at load %s", l)
		}
		// The band is the spread of 800-request measurements: at a light
		// load a mean's is within ±10%; it always states what it is made of.
		if b, a, _ := e.RelativeBand(); l == "0.05" && !raceshare.Enabled && (b > 0.1 || a > 0.1) || !strings.Contains(e.Budget, replicas+" golden runs of "+measured+" requests") {
			t.Errorf("load %s: RTT band -%.0f%%/+%.0f%%, budget %q", l, 100*b, 100*a, e.Budget)
		}
	}
	// Every expectation states its budget; a band wider than ±10% (or
	// one-sided) says why.
	all := append(es, predict(t, map[string]string{"loads": ""})...)
	for _, e := range all {
		if e.Budget == "" && e.Text == "" {
			t.Errorf("%s has no budget", e.Key())
		}
		if e.NeedsReason() && e.Wide == "" {
			t.Errorf("%s: %s is wider than ±10%% without a reason", e.Key(), e.Describe())
		}
	}
}

func TestPredictErrors(t *testing.T) {
	m, _ := golden.Lookup(Name)
	for _, set := range []map[string]string{
		{"paket": "64"},
		{"src": "p0t0e0"},
		{"src": "p0t0e0", "dst": "p5t0e0", "loads": ""},
		{"clique": "2by4"},
		{"clique": "0x4"},
		{"globals": "9"},
		{"wiring": "p0t0-p0t1"},
		{"wiring": "p0t0-p1t0", "clique": "3x1", "loads": ""},
		{"class": "10"},
		{"modes": "adaptive"},
		{"modes": "deterministic,deterministic"},
		{"packets": "0"},
		{"packets": "64,64"},
		{"align": "3"},
		{"completion": "200"},
		{"link_gbps": "fast"},
		{"fec_overhead": "1"},
		{"switch_clock_mhz": "fast"},
		{"switch_clock_mhz": "0.5"},
		{"switch_clock_mhz": "-250"},
		{"loads": "0.001"},
		{"loads": "0.9", "measured": "1000", "replicas": "4", "packets": "", "modes": ""},
		{"replicas": "3"},
		{"replicas": "65"},
		{"seed": "-1"},
		{"sim_mode": "x"},
		{"clique": "9x8", "loads": ""},
		{"measured": "200000"},
		{"measured": "5"},
		{"sim_packets": "4000"},
		{"buffer_bytes": "100"},
		{"nonmin_weight": "-1"},
		{"nonmin_bias": "x"},
		{"cts_window": "-1"},
		{"egress_bytes": "-1"},
		{"resp_tag": "30", "completion": "128"},
		{"rma_count": "-1"},
		{"rma_qps": "0"},
		{"rma_mem_ns": "x"},
		{"rma_cpl_ns": "-5"},
		{"rma_mode": "adaptive"},
		{"cable_spread_ns": "NaN"},
	} {
		if _, err := m.Predict(set); err == nil {
			t.Errorf("Predict(%v) accepted bad parameters", set)
		} else if !strings.HasPrefix(err.Error(), Name+":") {
			t.Errorf("Predict(%v): error %q does not name the model", set, err)
		}
	}
}
