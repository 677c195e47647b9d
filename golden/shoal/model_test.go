package shoal

import (
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strconv"
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

func find(t *testing.T, es []results.Expectation, metric string, params results.Params) results.Expectation {
	t.Helper()
	key := results.Key(metric, params)
	for _, e := range es {
		if e.Key() == key {
			return e
		}
	}
	t.Fatalf("no expectation %s", key)
	return results.Expectation{}
}

// within reports whether v passes the expectation, as results.Score judges.
func within(e results.Expectation, v float64) bool {
	lo, hi := e.Bounds()
	return v >= lo && v <= hi
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

// Every expectation has a unique key, a source in the paper and a way of
// being judged.
func checkWellFormed(t *testing.T, es []results.Expectation) {
	t.Helper()
	seen := map[string]bool{}
	for _, e := range es {
		if seen[e.Key()] {
			t.Errorf("duplicate key %s", e.Key())
		}
		seen[e.Key()] = true
		if !strings.HasPrefix(e.Metric, "shoal.") {
			t.Errorf("%s: metric outside shoal.", e.Key())
		}
		if !strings.HasPrefix(e.Source, "Shoal ") || !strings.ContainsAny(e.Source, "§") && !strings.Contains(e.Source, "Table") {
			t.Errorf("%s: source %q cites no section", e.Key(), e.Source)
		}
		if e.Text == "" && (math.IsNaN(e.Value) || math.IsInf(e.Value, 0)) {
			t.Errorf("%s: value %v", e.Key(), e.Value)
		}
		if e.Text == "" && e.Unit == "" {
			t.Errorf("%s: no unit", e.Key())
		}
		if e.Text == "" && e.Min == nil && e.Max == nil && e.RelTol == 0 && e.AbsTol == 0 {
			t.Errorf("%s: no tolerance", e.Key())
		}
	}
}

// The acceptance: `labrunner golden predict shoal` reproduces the paper's
// arithmetic for the prototype (§6.1, §6.2).
func TestPredictPrototype(t *testing.T) {
	if raceshare.SecondPassOnly(t, "cmd/labrunner's Shoal fault table predicts the prototype under the detector") {
		return
	}
	es := predict(t, nil)
	checkWellFormed(t, es)
	for _, c := range []struct {
		metric string
		params results.Params
		paper  float64
	}{
		{"shoal.cycle_ns", nil, 6.4},
		{"shoal.slot_cycles", nil, 12},
		{"shoal.slot_ns", nil, 76.8},
		{"shoal.guard_ns", nil, 6.4},
		{"shoal.usable_slot_ns", nil, 51.2},
		{"shoal.cell_bytes", nil, 64},
		{"shoal.epoch_slots", nil, 7},
		{"shoal.epoch_us", nil, 0.5376},
		{"shoal.prop_latency_us", nil, 1.576},
		{"shoal.switch_latency_ns", nil, 320},
		{"shoal.queue_bound", results.Params{"eq": "5"}, 8},
		// The slowest flow's 6.9 µs and a queue of 7 are the paper's
		// account, not reproduced (docs/figures.md, TestFigures): the band
		// holds golden's 6.49 and the emulator's 6.45.
		{"shoal.incast.fct_us", results.Params{"senders": "7", "flow": "slowest"}, 6.452},
		{"shoal.incast.fct_us", results.Params{"senders": "7", "flow": "fastest"}, 6.05},
		{"shoal.incast.max_queue", results.Params{"senders": "7"}, 7},
		{"shoal.failed_slots.fraction", results.Params{"failure": "node"}, 1.0 / 7},
	} {
		e := find(t, es, c.metric, c.params)
		if !within(e, c.paper) {
			t.Errorf("%s: the paper's %v fails the expectation %s", e.Key(), c.paper, e.Describe())
		}
	}
	// An 8-slot-bigger queue or a 9 ns guard fails.
	if within(find(t, es, "shoal.incast.max_queue", results.Params{"senders": "7"}), 8) {
		t.Error("an incast queue of 8 passes")
	}
	if within(find(t, es, "shoal.guard_ns", nil), 6.5) {
		t.Error("a 6.5 ns guard passes an exact expectation")
	}
	// The permutation band rises with the slot size (Fig. 9) and the
	// largest slot's band reaches 50%.
	var prevHi float64
	for _, sc := range []string{"12", "16", "24", "32", "48", "64", "96", "128"} {
		e := find(t, es, "shoal.permutation.throughput", results.Params{"slot_cycles": sc})
		_, hi := e.Bounds()
		if hi < prevHi {
			t.Errorf("slot %s: ceiling %v below the previous %v", sc, hi, prevHi)
		}
		prevHi = hi
	}
	// §6.2: "converges towards 50% only for larger slot sizes": golden's
	// value at 128 cycles is within 5% of it, and every band has a budget
	// and, when wider than ±10%, a reason.
	if e := find(t, es, "shoal.permutation.throughput", results.Params{"slot_cycles": "128"}); math.Abs(e.Value/0.5-1) > 0.05 {
		t.Errorf("128-cycle slots: %.4f, not within 5%% of §6.2's 50%%", e.Value)
	}
	for _, e := range es {
		if e.Metric == "shoal.permutation.throughput" && (e.Budget == "" || e.NeedsReason() != (e.Wide != "")) {
			t.Errorf("%s: budget %q, wide %q (needs a reason: %v)", e.Key(), e.Budget, e.Wide, e.NeedsReason())
		}
	}
	if within(find(t, es, "shoal.permutation.throughput", results.Params{"slot_cycles": "12"}), 0.5) {
		t.Error("50% throughput at 12-cycle slots passes: the feedback loop must hold it down (§6.2)")
	}
	// Schedule texts: 7 slots, 6 switches x 7 slots, composing back.
	var sched, sw int
	topo := Topology{Nodes: 8, Radix: 4}
	s, _ := NewSchedule(8, 1, Cyclic)
	cfg := make(map[int][]SwitchSlot)
	ids := topo.SwitchIDs(0)
	for _, e := range es {
		switch e.Metric {
		case "shoal.schedule":
			sched++
			slot, _ := strconv.Atoi(e.Params["slot"])
			if e.Text != MappingText(s.Pairs(slot, 0)) {
				t.Errorf("%s = %q", e.Key(), e.Text)
			}
		case "shoal.switch_config":
			sw++
			slot, _ := strconv.Atoi(e.Params["slot"])
			out, err := ParseMapping(e.Text, 4)
			if err != nil {
				t.Fatalf("%s: %v", e.Key(), err)
			}
			if cfg[slot] == nil {
				cfg[slot] = make([]SwitchSlot, len(ids))
			}
			w := slices.IndexFunc(ids, func(id SwitchID) bool { return id.String() == e.Params["switch"] })
			if w < 0 {
				t.Fatalf("%s: unknown switch", e.Key())
			}
			cfg[slot][w] = SwitchSlot{Out: out}
		}
	}
	if sched != 7 || sw != 42 {
		t.Errorf("%d schedule and %d switch expectations, want 7 and 42", sched, sw)
	}
	for slot, c := range cfg {
		if err := topo.CheckSlot(s, slot, 0, c); err != nil {
			t.Errorf("listed switch configurations: %v", err)
		}
	}
}

// The acceptance for the simulated rack (§7.1, §3.3.4).
func TestPredictRack(t *testing.T) {
	es := predict(t, map[string]string{"config": "rack", "senders": "", "perm_pairs": ""})
	checkWellFormed(t, es)
	for _, c := range []struct {
		metric string
		params results.Params
		want   float64
	}{
		{"shoal.slot_ns", nil, 23.25},
		{"shoal.guard_ns", nil, 2.75},
		{"shoal.guard.reconfig_ns", nil, 2.5},
		{"shoal.usable_slot_ns", nil, 20.5},
		{"shoal.cell_bytes", nil, 64},
		{"shoal.epoch_slots", nil, 128},
		{"shoal.epoch_us", nil, 2.976},
		{"shoal.prop_latency_us", nil, 0.015},
		{"shoal.queue_bound", results.Params{"eq": "5"}, 512},
		{"shoal.queue_bound", results.Params{"eq": "3"}, 1022},
		{"shoal.buffer_bytes", results.Params{"memory": "total"}, 16744448},
		{"shoal.buffer_bytes", results.Params{"memory": "onchip"}, 32704},
		{"shoal.sync.max_offset_ns", nil, 0.25},
	} {
		e := find(t, es, c.metric, c.params)
		if !within(e, c.want) {
			t.Errorf("%s: %v fails %s", e.Key(), c.want, e.Describe())
		}
	}
	if within(find(t, es, "shoal.sync.max_offset_ns", nil), 0.3) {
		t.Error("a 0.3 ns clock offset passes a 0.25 ns budget")
	}
	for _, e := range es {
		if e.Metric == "shoal.schedule" || e.Metric == "shoal.cycle_ns" || e.Metric == "shoal.incast.fct_us" {
			t.Errorf("rack predicts %s", e.Key())
		}
	}
}

func TestPredictSimulation(t *testing.T) {
	es := predict(t, map[string]string{"sim": "uniform,skewed", "load": "0.3", "flows": "300", "senders": "", "perm_slot_cycles": "", "list_schedule": "off"})
	checkWellFormed(t, es)
	for _, wk := range []string{"uniform", "skewed"} {
		p := results.Params{"workload": wk, "load": "0.3"}
		e := find(t, es, "shoal.sim.max_queue", p)
		if e.Value < 1 || !within(e, e.Value) || within(e, 9) {
			t.Errorf("%s: %s (value %v)", e.Key(), e.Describe(), e.Value)
		}
		q := p.Clone()
		q["percentile"], q["size"] = "99", "short"
		if e := find(t, es, "shoal.sim.fct_us", q); !(e.Value > 0) {
			t.Errorf("%s = %v", e.Key(), e.Value)
		}
	}
	again := predict(t, map[string]string{"sim": "uniform,skewed", "load": "0.3", "flows": "300", "senders": "", "perm_slot_cycles": "", "list_schedule": "off"})
	if !reflect.DeepEqual(es, again) {
		t.Error("the same parameters predicted differently")
	}
}

func TestPredictErrors(t *testing.T) {
	m, _ := golden.Lookup(Name)
	for set, want := range map[string]string{
		"payload=64":                   "unknown parameter",
		"config=rack slot_cycles=12":   "does not apply",
		"senders=8":                    "senders",
		"senders=3,3":                  "twice",
		"fair_flows=1>1":               "fair_flows",
		"failures=meteor":              "failures",
		"sim=zipf":                     "sim",
		"sim=uniform load=":            "load",
		"load=-1":                      "load",
		"seed=x":                       "seed",
		"flows=0":                      "flows",
		"list_schedule=maybe":          "list_schedule",
		"perm_slot_cycles=4":           "perm_slot_cycles",
		"perm_pairs=9":                 "perm_pairs",
		"config=rack list_schedule=on": "too many",
		"incast_bytes=0":               "incast_bytes",
		"load_gbps=0":                  "load_gbps",
	} {
		s := map[string]string{}
		for _, kv := range strings.Fields(set) {
			k, v, _ := strings.Cut(kv, "=")
			s[k] = v
		}
		_, err := m.Predict(s)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), "shoal") {
			t.Errorf("Predict(%s) = %v, want an error mentioning %q", set, err, want)
		}
	}
}

func TestPredictJSON(t *testing.T) {
	es := predict(t, map[string]string{"perm_slot_cycles": "12", "schedule": "propagation"})
	b, err := json.Marshal(es)
	if err != nil {
		t.Fatal(err)
	}
	var back []results.Expectation
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(es, back) {
		t.Error("expectations do not survive JSON")
	}
	if e := find(t, es, "shoal.epoch_slots", nil); e.Value != 8 {
		t.Errorf("propagation-aware 8-node epoch %v slots, want 8 (Appendix A)", e.Value)
	}
}
