package prr

import (
	"reflect"
	"strings"
	"testing"

	"github.com/labrunner/labrunner/golden"
	"github.com/labrunner/labrunner/results"
)

func byKey(t *testing.T, ex []results.Expectation) map[string]results.Expectation {
	t.Helper()
	m := map[string]results.Expectation{}
	for _, e := range ex {
		if _, dup := m[e.Key()]; dup {
			t.Fatalf("duplicate key %s", e.Key())
		}
		if !strings.HasPrefix(e.Source, "FPGA'20 §") {
			t.Errorf("%s: source %q does not cite the paper's section", e.Key(), e.Source)
		}
		lo, hi := e.Bounds()
		if e.Value < lo || e.Value > hi {
			t.Errorf("%s: value %v outside its own bounds [%v, %v]", e.Key(), e.Value, lo, hi)
		}
		m[e.Key()] = e
	}
	return m
}

func TestRegistered(t *testing.T) {
	m, err := golden.Lookup(Name)
	if err != nil {
		t.Fatal(err)
	}
	if m.Name() != "prr" || m.Doc() == "" {
		t.Fatalf("model %q doc %q", m.Name(), m.Doc())
	}
	for _, p := range m.Params() {
		if p.Doc == "" {
			t.Errorf("parameter %s has no doc", p.Name)
		}
	}
	if _, err := ParsePlan(nil); err != nil {
		t.Fatalf("defaults do not parse: %v", err)
	}
}

func TestPredictFormulas(t *testing.T) {
	ex, err := Model{}.Predict(map[string]string{"p": "16", "s": "4", "algs": ""})
	if err != nil {
		t.Fatal(err)
	}
	m := byKey(t, ex)
	if len(m) != 6 {
		t.Fatalf("with algs empty want the 6 formula figures, got %d", len(m))
	}
	want := map[string]float64{
		"prr.pipeline_stages{p=16,s=4}":                               14,
		"prr.pipeline_latency{p=16,s=4}":                              4,
		"prr.compulsory_index{p=16}":                                  4,
		"prr.port_to_port_latency{clock_mhz=102,p=16,s=4}":            5 * 1e3 / 102,
		"prr.throughput{clock_mhz=102,p=16,width_bits=512}":           51.2 * 1.02,
		"prr.throughput.aggregate{clock_mhz=102,p=16,width_bits=512}": 16 * 51.2 * 1.02,
	}
	for k, v := range want {
		e, ok := m[k]
		if !ok {
			t.Errorf("missing %s (have %v)", k, keys(m))
			continue
		}
		if lo, hi := e.Bounds(); v < lo || v > hi || hi-lo > 1e-6*v {
			t.Errorf("%s: [%v, %v], want exactly %v", k, lo, hi, v)
		}
	}
	// A clock §5.2 does not report falls back to Table 1's 150 MHz.
	ex, _ = Model{}.Predict(map[string]string{"p": "64", "s": "4", "algs": ""})
	if e := byKey(t, ex)["prr.port_to_port_latency{clock_mhz=150,p=64,s=4}"]; e.Value < 53.3 || e.Value > 53.4 {
		t.Errorf("P=64 S=4 at 150 MHz: %v ns, Table 1 says 53.3", e.Value)
	}
}

func TestPredictSimulations(t *testing.T) {
	set := map[string]string{"p": "4", "traffic": "uniform,bursty", "algs": "fifo,prr", "cycles": "2e3", "replicas": "3", "depths": "2,1", "load": "0.9"}
	ex, err := Model{}.Predict(set)
	if err != nil {
		t.Fatal(err)
	}
	m := byKey(t, ex)
	for _, tr := range []string{"uniform", "bursty"} {
		for _, a := range []string{"prr", "fifo"} {
			for _, k := range []string{
				"prr.latency.avg{alg=" + a + ",load=0.9,p=4,traffic=" + tr + "}",
				"prr.latency.max{alg=" + a + ",load=0.9,p=4,traffic=" + tr + "}",
				"prr.sim_throughput{alg=" + a + ",load=0.9,p=4,traffic=" + tr + "}",
				"prr.drop_rate{alg=" + a + ",depth=1,load=0.9,p=4,traffic=" + tr + "}",
				"prr.drop_rate{alg=" + a + ",depth=2,load=0.9,p=4,traffic=" + tr + "}",
				"prr.zero_drop_depth{alg=" + a + ",p=4,traffic=" + tr + "}",
			} {
				e, ok := m[k]
				if !ok {
					t.Fatalf("missing %s (have %v)", k, keys(m))
				}
				if e.Min == nil || e.Max == nil || *e.Min > *e.Max {
					t.Errorf("%s: want a band, got %s", k, e.Describe())
				}
			}
		}
	}
	if _, ok := m["prr.saturation{alg=fifo,p=4}"]; !ok {
		t.Error("fifo in algs but no saturation figure")
	}
	again, err := Model{}.Predict(set)
	if err != nil || !reflect.DeepEqual(ex, again) {
		t.Fatal("Predict is not deterministic for a fixed seed")
	}
	// A measurement from one more run with another seed passes its band,
	// for the figures averaged over a run.
	r := run(t, SimConfig{P: 4, Alg: PRR, Traffic: Uniform, Load: 0.9, Cycles: 2000, Seed: 987654})
	e := m["prr.latency.avg{alg=prr,load=0.9,p=4,traffic=uniform}"]
	v := results.Score(results.Measurement{Metric: e.Metric, Params: e.Params, Value: r.AvgLatency()}, e)
	if v.Status != results.Pass {
		t.Errorf("an independent run fails the band: %s", v.Message)
	}
	// And a clearly different switch does not: FIFO's latency against the
	// proposal's band.
	f := run(t, SimConfig{P: 4, Alg: FIFO, Traffic: Uniform, Load: 0.9, Cycles: 2000, Seed: 987654})
	if v := results.Score(results.Measurement{Metric: e.Metric, Params: e.Params, Value: f.AvgLatency()}, e); v.Status == results.Pass {
		t.Errorf("FIFO's latency %.2f passes the proposal's band %s", f.AvgLatency(), e.Describe())
	}
}

func TestPredictErrors(t *testing.T) {
	for _, c := range []struct {
		set  map[string]string
		want string
	}{
		{map[string]string{"ports": "16"}, `unknown parameter "ports"`},
		{map[string]string{"cylces": "100"}, `did you mean "cycles"?`},
		{map[string]string{"p": "12"}, "p=\"12\""},
		{map[string]string{"p": "x"}, `"x" is not a whole number`},
		{map[string]string{"s": "0"}, "parameter s"},
		{map[string]string{"width_bits": "-1"}, "width_bits"},
		{map[string]string{"clock_mhz": "fast"}, "clock_mhz"},
		{map[string]string{"clock_mhz": "0"}, "clock_mhz"},
		{map[string]string{"traffic": "zipf"}, `"zipf" is not one of uniform, bursty, nonuniform or all`},
		{map[string]string{"traffic": "bursti"}, `did you mean "bursty"?`},
		{map[string]string{"algs": "pim,,islip"}, "an empty item"},
		{map[string]string{"algs": "wfq"}, `"wfq" is not one of prr, fifo`},
		{map[string]string{"p": "128"}, "set algs to prr,fifo"},
		{map[string]string{"load": "0"}, "load"},
		{map[string]string{"load": "NaN"}, "load"},
		{map[string]string{"cycles": "1.5"}, "cycles"},
		{map[string]string{"cycles": "1e12"}, "cycles"},
		{map[string]string{"replicas": "1"}, "replicas"},
		{map[string]string{"seed": "-3"}, "seed"},
		{map[string]string{"depths": "0"}, "depths"},
		{map[string]string{"burst_len": "0.5"}, "burst_len"},
		{map[string]string{"nonuniform_p": "1.2"}, "nonuniform_p"},
		{map[string]string{"nonuniform_p": "0"}, "nonuniform_p"},
	} {
		_, err := Model{}.Predict(c.set)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want it to mention %q", c.set, err, c.want)
		}
	}
	// Allowed combinations at the edges.
	for _, set := range []map[string]string{
		{"p": "128", "algs": "prr,fifo", "cycles": "200", "replicas": "2", "depths": ""},
		{"p": "2", "algs": "all", "traffic": "nonuniform", "cycles": "100", "replicas": "2"},
		{"p": "256", "traffic": "", "clock_mhz": "250.5"},
	} {
		if _, err := (Model{}).Predict(set); err != nil {
			t.Errorf("%v: %v", set, err)
		}
	}
}

func TestPlanLists(t *testing.T) {
	pl, err := ParsePlan(map[string]string{"algs": "islip, prr,all", "traffic": "nonuniform,uniform,uniform", "depths": "8, 1,8"})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(pl.Algs, Algs) {
		t.Errorf("algs %v", pl.Algs)
	}
	if !reflect.DeepEqual(pl.Traffics, []Traffic{Uniform, Nonuniform}) || !reflect.DeepEqual(pl.Depths, []int{1, 8}) {
		t.Errorf("traffics %v depths %v", pl.Traffics, pl.Depths)
	}
}

func keys(m map[string]results.Expectation) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
