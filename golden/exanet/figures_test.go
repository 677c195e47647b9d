package exanet

import "testing"

// Every figure of docs/figures.md's ExaNet section is recomputed and equals
// the table; the table's golden value is within 5% of the paper's or says
// why not.
func TestFigures(t *testing.T) {
	for _, f := range Figures() {
		got, err := f.Compute()
		if err != nil {
			t.Fatalf("%s: %v", f.Section, err)
		}
		if err := f.Check(got); err != nil {
			t.Error(err)
		}
	}
}

// Every expectation of the default prediction has a budget, and a reason
// when its band is wider than ±10%, one-sided or reaches 0.
func TestEveryBandHasABudget(t *testing.T) {
	es, err := Model{}.Predict(map[string]string{"payloads": "1,16,32,64,128,256,512", "hops": "1,2"})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if e.Budget == "" {
			t.Errorf("%s: no budget", e.Key())
		}
		if e.NeedsReason() && e.Wide == "" {
			b, a, _ := e.RelativeBand()
			t.Errorf("%s: band -%.1f%%..+%.1f%% without a reason", e.Key(), 100*b, 100*a)
		}
	}
}
