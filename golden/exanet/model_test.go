package exanet

import (
	"encoding/json"
	"math"
	"reflect"
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
	return es
}

func byMetric(es []results.Expectation) map[string][]results.Expectation {
	out := map[string][]results.Expectation{}
	for _, e := range es {
		out[e.Metric] = append(out[e.Metric], e)
	}
	return out
}

func TestRegistered(t *testing.T) {
	if !slices.Contains(golden.Names(), Name) {
		t.Fatalf("golden.Names() = %v lacks %q", golden.Names(), Name)
	}
	m, _ := golden.Lookup(Name)
	if m.Doc() == "" || len(m.Params()) == 0 {
		t.Fatal("model has no doc or params")
	}
	for _, p := range m.Params() {
		if p.Doc == "" {
			t.Errorf("param %s has no doc", p.Name)
		}
	}
}

func TestPredictDefaults(t *testing.T) {
	es := predict(t, nil)
	got := byMetric(es)
	// 2x2 mesh: 16 ordered pairs; 3 paths × 5 payloads; 2 hops × 5
	// payloads; the 2-1 hop difference × 5 payloads; one hop's traced
	// round trip across the default cable.
	for metric, n := range map[string]int{"exanet.dor_path": 16, "exanet.bandwidth": 15, "exanet.bandwidth.peak": 15, "exanet.rtt": 10, "exanet.rtt.per_hop": 5, "exanet.hop_rtt": 1} {
		if len(got[metric]) != n {
			t.Errorf("%s: %d expectations, want %d", metric, len(got[metric]), n)
		}
	}
	if len(es) != 62 {
		t.Errorf("%d expectations, want 62", len(es))
	}
	keys := map[string]bool{}
	for _, e := range es {
		if keys[e.Key()] {
			t.Fatalf("duplicate key %s", e.Key())
		}
		keys[e.Key()] = true
		if e.Source == "" || !strings.Contains(e.Source, "ExaNet §") {
			t.Errorf("%s: source %q does not cite the paper", e.Key(), e.Source)
		}
		if e.Text == "" && e.Min == nil && e.Max == nil && e.RelTol == 0 && e.AbsTol == 0 {
			t.Errorf("%s: no tolerance", e.Key())
		}
	}
	for _, k := range []string{
		"exanet.dor_path{dst=1,1,0,src=0,0,0}",
		"exanet.bandwidth{path=router2x,payload=512}",
		"exanet.bandwidth.peak{path=link,payload=32}",
		"exanet.rtt{hops=2,payload=128}",
		"exanet.rtt.per_hop{payload=512}",
		"exanet.hop_rtt{asymmetry_ns=0,cable_ns=5}",
	} {
		if !keys[k] {
			t.Errorf("missing %s", k)
		}
	}
	// Predict's figures are the plain functions' figures.
	for _, e := range es {
		var want results.Expectation
		switch e.Key() {
		case "exanet.bandwidth{path=link,payload=256}":
			want, _ = Bandwidth(PathLink, 256)
		case "exanet.bandwidth.peak{path=router2x,payload=32}":
			want, _ = BandwidthPeak(PathRouter2x, 32)
		case "exanet.rtt{hops=1,payload=32}":
			want, _ = RTT(1, 32)
		case "exanet.rtt.per_hop{payload=64}":
			want, _ = RTTPerHop(64)
		case "exanet.hop_rtt{asymmetry_ns=0,cable_ns=5}":
			want, _ = HopRTT(5, 0)
		default:
			continue
		}
		if !reflect.DeepEqual(e, want) {
			t.Errorf("Predict %+v != %+v", e, want)
		}
	}
	// The peaks are the raw 20 and 10 Gb/s; the round trips are bands.
	for _, e := range got["exanet.bandwidth.peak"] {
		if want := map[string]float64{PathRouter: 20, PathRouter2x: 20, PathLink: 10}[e.Params["path"]]; e.Value != want {
			t.Errorf("%s: peak %v, want %v", e.Key(), e.Value, want)
		}
	}
	for _, e := range got["exanet.rtt"] {
		if e.Min == nil || e.Max == nil || !(*e.Min < e.Value && e.Value < *e.Max) {
			t.Errorf("%s: not a band around its value: %+v", e.Key(), e)
		}
	}
	if again := predict(t, nil); !reflect.DeepEqual(es, again) {
		t.Error("Predict is not deterministic")
	}
}

func TestPredictJSON(t *testing.T) {
	es := predict(t, map[string]string{"lattice": "3,2,2", "order": "ZYX", "payloads": "1,17,512", "hops": "1,2,3,4"})
	b, err := json.Marshal(es)
	if err != nil {
		t.Fatalf("Predict output is not JSON-serialisable: %v", err)
	}
	var back []results.Expectation
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(es, back) {
		t.Fatal("JSON round trip changed the expectations")
	}
	for _, e := range es {
		for _, v := range []float64{e.Value, e.RelTol, e.AbsTol} {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("%s: non-finite figure", e.Key())
			}
		}
	}
	// Hops 1..4 give the per-hop difference for each of the 3 payloads; the
	// bands' bounds survive the JSON round trip as numbers.
	got := byMetric(back)
	if len(got["exanet.rtt"]) != 12 || len(got["exanet.rtt.per_hop"]) != 3 {
		t.Fatalf("%d round trips, %d per-hop differences, want 12 and 3", len(got["exanet.rtt"]), len(got["exanet.rtt.per_hop"]))
	}
	for _, e := range got["exanet.rtt"] {
		if e.Min == nil || e.Max == nil || *e.Min >= *e.Max {
			t.Fatalf("%s: band lost in JSON: %+v", e.Key(), e)
		}
	}
	if !strings.Contains(string(b), `"metric":"exanet.rtt.per_hop","params":{"payload":"17"},"value":0.46,"unit":"us","rel_tol":0.1`) {
		t.Fatalf("per-hop expectation not in the JSON as expected: %s", b)
	}
}

// The per-hop difference needs two consecutive hop counts.
func TestPredictPerHop(t *testing.T) {
	for hops, want := range map[string]int{"1": 0, "1,3": 0, "3,1": 0, "2,1": 2, "1,2,3": 2, "": 0} {
		es := predict(t, map[string]string{"lattice": "4,1,1", "hops": hops, "payloads": "16,512", "path": ""})
		if n := len(byMetric(es)["exanet.rtt.per_hop"]); n != want {
			t.Errorf("hops %q: %d per-hop expectations, want %d", hops, n, want)
		}
	}
}

func TestPredictOnePath(t *testing.T) {
	es := predict(t, map[string]string{"lattice": "4,3,2", "order": "zyx", "src": "(3,0,1)", "dst": "1, 2, 0", "payloads": "", "path": "", "hops": ""})
	if len(es) != 1 {
		t.Fatalf("%d expectations, want the one path", len(es))
	}
	e := es[0]
	if e.Key() != "exanet.dor_path{dst=1,2,0,src=3,0,1}" {
		t.Fatalf("key %s", e.Key())
	}
	if want := "(3,0,1)-vc0->(3,0,0)-vc1->(3,1,0)-vc1->(3,2,0)-vc0->(2,2,0)-vc0->(1,2,0)"; e.Text != want {
		t.Fatalf("text %s, want %s", e.Text, want)
	}
	if !strings.Contains(e.Note, "ZYX") {
		t.Fatalf("note %q does not say the order", e.Note)
	}
	// Only bandwidth of one path.
	es = predict(t, map[string]string{"path": "link", "payloads": "512", "hops": "", "src": "0,0,0", "dst": "0,0,0"})
	got := byMetric(es)
	if len(got["exanet.bandwidth"]) != 1 || len(got["exanet.bandwidth.peak"]) != 1 || len(got["exanet.rtt"]) != 0 || len(got["exanet.rtt.per_hop"]) != 0 {
		t.Fatalf("%v", got)
	}
	if got["exanet.dor_path"][0].Text != "(0,0,0)" {
		t.Fatalf("self path %q", got["exanet.dor_path"][0].Text)
	}
}

func TestPredictErrors(t *testing.T) {
	m, _ := golden.Lookup(Name)
	for _, c := range []struct {
		set  map[string]string
		want string
	}{
		{map[string]string{"payload": "64"}, `unknown parameter "payload" (allowed: asymmetry_ns, cable_ns, dst, hops, lattice, order, path, payloads, src)`},
		{map[string]string{"lattice": "2,2"}, "parameter lattice"},
		{map[string]string{"lattice": "2,0,1"}, "size along Y is 0"},
		{map[string]string{"order": "XY"}, "parameter order"},
		{map[string]string{"payloads": "0"}, "0 is outside 1..512"},
		{map[string]string{"payloads": "64,x"}, `"x" is not a whole number`},
		{map[string]string{"payloads": "64,64"}, "64 is listed twice"},
		{map[string]string{"hops": "3"}, "3 is outside 1..2"},
		{map[string]string{"lattice": "1,1,1"}, "single node"},
		{map[string]string{"src": "0,0,0"}, "src and dst go together (got only src)"},
		{map[string]string{"dst": "0,0,0"}, "got only dst"},
		{map[string]string{"src": "0,0,0", "dst": "2,0,0"}, "destination 2,0,0 is not a node of lattice 2,2,1"},
		{map[string]string{"src": "a", "dst": "0,0,0"}, "parameter src"},
		{map[string]string{"lattice": "8,8,8"}, "512 nodes"},
		{map[string]string{"path": "router,bus"}, `unknown path "bus"`},
		{map[string]string{"path": "link,link"}, "listed twice"},
		{map[string]string{"cable_ns": "x"}, "parameter cable_ns"},
		{map[string]string{"cable_ns": "-1"}, "parameter cable_ns"},
		{map[string]string{"cable_ns": "5", "asymmetry_ns": "-6"}, "no negative delay either way"},
	} {
		_, err := m.Predict(c.set)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Predict(%v) error %v, want one containing %q", c.set, err, c.want)
		}
	}
	// A single-node lattice works once the round trip is not asked for.
	if es := predict(t, map[string]string{"lattice": "1,1,1", "hops": ""}); len(byMetric(es)["exanet.dor_path"]) != 1 {
		t.Fatal("1x1x1 lattice should give the one self path")
	}
}

func BenchmarkPredictDefault(b *testing.B) {
	m := Model{}
	for b.Loop() {
		if _, err := m.Predict(nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPredictAllPairs4x4x4(b *testing.B) {
	m := Model{}
	set := map[string]string{"lattice": "4,4,4", "path": "", "payloads": "", "hops": ""}
	for b.Loop() {
		if _, err := m.Predict(set); err != nil {
			b.Fatal(err)
		}
	}
}
