package shoal

import (
	"flag"
	"testing"

	"github.com/labrunner/labrunner/internal/raceshare"
)

// figures runs the reproductions of the paper's figures that take longer
// than a unit test should (the 512-node rack of §7): `make figures`, or
// go test ./golden/shoal -figures. Each figure also has a quicker test that
// always runs.
var figures = flag.Bool("figures", false, "also reproduce the paper's figures that take seconds of CPU (make figures)")

// Every figure of docs/figures.md's Shoal section is recomputed and equals
// the table's golden value; the table's golden value is within 5% of the
// paper's or says why not. The slow ones run under -figures; the tests of
// sim_test.go cover them on smaller racks.
func TestFigures(t *testing.T) {
	for _, f := range Figures() {
		if f.Slow && !*figures {
			if err := f.Check(f.Golden); err != nil {
				t.Error(err)
			}
			continue
		}
		got, err := f.Compute()
		if err != nil {
			t.Fatalf("%s: %v", f.Section, err)
		}
		if err := f.Check(got); err != nil {
			t.Error(err)
		}
	}
}

// Every expectation Predict gives, on the prototype and on a 32-node rack
// with the workload simulations, has a budget, and a reason when its band is
// wider than ±10%, one-sided or reaches 0. Under the race detector one
// parameter set, in rotation by day (internal/raceshare); make test runs the
// three without it.
func TestEveryBandHasABudget(t *testing.T) {
	for _, set := range raceshare.Cases(t, []map[string]string{
		{"list_schedule": "on", "perm_slot_cycles": "12,64"},
		{"incast_band": "timing", "perm_slot_cycles": ""},
		{"config": "rack", "nodes": "32", "senders": "4,16", "incast_bytes": "20000", "perm_pairs": "32", "sim": "uniform,skewed", "flows": "300", "load": "0.5", "list_schedule": "off"},
	}) {
		es, err := Model{}.Predict(set)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			if e.Budget == "" {
				t.Errorf("%v %s: no budget", set["config"], e.Key())
			}
			if e.NeedsReason() && e.Wide == "" {
				b, a, _ := e.RelativeBand()
				t.Errorf("%v %s: band -%.1f%%..+%.1f%% without a reason", set["config"], e.Key(), 100*b, 100*a)
			}
		}
	}
}
