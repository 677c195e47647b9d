package shoal

import (
	"flag"
	"testing"
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

// Every expectation Predict gives, on the prototype and on a smaller rack
// with the workload simulations, has a budget, and a reason when its band is
// wider than ±10%, one-sided or reaches 0.
func TestEveryBandHasABudget(t *testing.T) {
	for _, set := range []map[string]string{
		{"list_schedule": "on"},
		{"config": "rack", "nodes": "64", "senders": "8,32", "perm_pairs": "1,64", "sim": "uniform,skewed", "flows": "1500", "load": "0.5", "list_schedule": "off"},
	} {
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
