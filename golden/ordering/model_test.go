package ordering

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/labrunner/labrunner/golden"
	"github.com/labrunner/labrunner/results"
)

func predict(t *testing.T, set map[string]string) map[string]results.Expectation {
	t.Helper()
	m, err := golden.Lookup(Name)
	if err != nil {
		t.Fatal(err)
	}
	es, err := m.Predict(set)
	if err != nil {
		t.Fatalf("Predict(%v): %v", set, err)
	}
	out := map[string]results.Expectation{}
	for _, e := range es {
		if _, dup := out[e.Key()]; dup {
			t.Fatalf("two expectations for %s", e.Key())
		}
		if !strings.Contains(e.Source, "SC'18 §") {
			t.Errorf("%s cites no section: %q", e.Key(), e.Source)
		}
		out[e.Key()] = e
	}
	if _, err := json.Marshal(es); err != nil {
		t.Fatal(err)
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

func TestPredictDefaults(t *testing.T) {
	es := predict(t, nil)
	want := map[string]float64{
		"ordering.latency{mode=fast,n=10}":        740,
		"ordering.latency{mode=slow,n=10}":        9*1177 + 596,
		"ordering.latency{mode=sync-source,n=40}": 640 + 1741,
		"ordering.slow.rtt":                       1177,
		"ordering.slow.rate":                      1000.0 / 1177,
		"ordering.connections{conns=2}":           2,
		"ordering.throughput{mode=fast}":          0.95,
		"ordering.executions{case=fig4}":          3,
		"ordering.replays{case=fig6}":             1,
		"ordering.fallbacks{case=fallback}":       1,
		"ordering.rob.peak{case=fig5}":            2,
	}
	for k, v := range want {
		e, ok := es[k]
		if !ok {
			t.Errorf("no expectation %s", k)
			continue
		}
		if lo, hi := e.Bounds(); v < lo || v > hi {
			t.Errorf("%s = %s, want %g within", k, e.Describe(), v)
		}
	}
	// The buffer comes from the simulated §IV Dragonfly: at least the
	// 500 ns extra global channel (31.25 packets), at most the paper's 50,
	// and the window half of it.
	capE, win := es["ordering.rob.capacity"], es["ordering.window"]
	if capE.Value < 32 || capE.Value > ROBCapacityPaper || win.Value != float64(int(capE.Value)/2) {
		t.Errorf("simulated sizing: capacity %s, window %s", capE.Describe(), win.Describe())
	}
	if lo, hi := capE.Bounds(); lo != capE.Value || hi != ROBCapacityPaper || capE.Wide == "" {
		t.Errorf("capacity band [%g, %g], reason %q", lo, hi, capE.Wide)
	}
	if lo, hi := es["ordering.rob.occupancy"].Bounds(); lo != 0 || hi != capE.Value {
		t.Errorf("occupancy bound [%g, %g]", lo, hi)
	}
	// A given skew keeps the closed form: §IV-D's 500 ns is 32 packets, plus
	// 20 of switch buffering (the paper rounds 31.25 down to 30: 50).
	num := predict(t, map[string]string{"skew_ns": "500", "cases": "", "lengths": ""})
	if c, w := num["ordering.rob.capacity"], num["ordering.window"]; c.Value != 52 || w.Value != 26 || c.Wide != "" {
		t.Errorf("closed-form sizing: %s, %s", c.Describe(), w.Describe())
	}
	// Every band says what it is made of, and a wide one why.
	for k, e := range es {
		if e.Budget == "" && e.Text == "" {
			t.Errorf("%s has no budget", k)
		}
		if e.NeedsReason() && e.Wide == "" {
			t.Errorf("%s is wider than ±10%% (%s) without a reason", k, e.Describe())
		}
	}
	if got := es["ordering.delivery{case=fig7}"].Text; got != "1,3,2,4" {
		t.Errorf("fig7 delivery %q", got)
	}
	if lo, hi := es["ordering.throughput{mode=slow}"].Bounds(); hi > 16.0/1177*1.02+1e-12 || lo <= 0 {
		t.Errorf("slow throughput band [%g, %g]", lo, hi)
	}
}

func TestPredictCustomCase(t *testing.T) {
	es := predict(t, map[string]string{"lengths": "", "cases": "", "mode": "fast", "n": "4", "arrivals": "4,3,2,1", "lost": "3",
		"lost_acks": "1", "eod": "true", "rob": "2", "window": "0", "conns": "0"})
	if got := es["ordering.delivery{case=custom}"].Text; got != "1,2,3,4" {
		t.Errorf("custom delivery %q", got)
	}
	// 4 buffered, 3 lost, 2 buffered (ROB of 2 now full), 1 executes with 2;
	// 3 resent after its timeout executes with 4; ACK 1 lost: 1 replayed.
	if es["ordering.replays{case=custom}"].Value != 1 || es["ordering.rob.peak{case=custom}"].Value != 2 || es["ordering.duplicates{case=custom}"].Value != 0 {
		t.Errorf("custom: replays %g, peak %g, duplicates %g", es["ordering.replays{case=custom}"].Value, es["ordering.rob.peak{case=custom}"].Value,
			es["ordering.duplicates{case=custom}"].Value)
	}
	if _, ok := es["ordering.connections{conns=0}"]; ok {
		t.Error("an unlimited connection count has a bound")
	}
}

func TestPredictErrors(t *testing.T) {
	m, _ := golden.Lookup(Name)
	for _, set := range []map[string]string{
		{"lenghts": "10"},
		{"oneway_ns": "far"},
		{"packet_ns": "0"},
		{"lengths": "0"},
		{"lengths": "10,10"},
		{"latency_modes": "eventual"},
		{"skew_ns": "-5"},
		{"conns": "-1"},
		{"cases": "fig9"},
		{"cases": "fig4,fig4"},
		{"arrivals": "1,2"},
		{"mode": "strict"},
		{"mode": "fast", "n": "0"},
		{"mode": "fast", "n": "3", "arrivals": "1,5"},
		{"mode": "fast", "lost": "x"},
		{"mode": "unordered", "eod": "true"},
		{"mode": "fast", "eod": "maybe"},
		{"mode": "fast", "rob": "many"},
		{"mode": "fast", "window": "-2"},
	} {
		if _, err := m.Predict(set); err == nil {
			t.Errorf("Predict(%v) accepted bad parameters", set)
		} else if !strings.HasPrefix(err.Error(), Name+":") && !strings.HasPrefix(err.Error(), "ordering") {
			t.Errorf("Predict(%v): error %q does not name the model", set, err)
		}
	}
}
