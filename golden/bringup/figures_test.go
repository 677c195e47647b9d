package bringup

import "testing"

// Every figure of docs/figures.md that golden/bringup gives is recomputed and
// equals the table; the table's golden value is within 5% of the paper's or
// says why not.
func TestFigures(t *testing.T) {
	for _, f := range append(AquilaFigures(), ShoalFigures()...) {
		got, err := f.Compute()
		if err != nil {
			t.Fatalf("%s: %v", f.Section, err)
		}
		if err := f.Check(got); err != nil {
			t.Error(err)
		}
	}
}

// Every expectation Predict gives, in scenarios that produce every kind of
// figure, has a budget, and a reason when its band is wider than ±10%,
// one-sided or reaches 0.
func TestEveryBandHasABudget(t *testing.T) {
	for _, set := range []map[string]string{
		{"shoal": "prototype"},
		{"shoal": "rack", "mos_loss": "0.02", "ts_fail": "p0t0", "clock_ppm": "p1t3=300"},
	} {
		es, err := Model{}.Predict(set)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			if e.Budget == "" {
				t.Errorf("%v %s: no budget", set, e.Key())
			}
			if e.NeedsReason() && e.Wide == "" {
				b, a, _ := e.RelativeBand()
				t.Errorf("%v %s: band -%.1f%%..+%.1f%% without a reason", set, e.Key(), 100*b, 100*a)
			}
		}
	}
}
