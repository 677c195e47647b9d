package prr

import (
	"flag"
	"math"
	"testing"
)

var figures = flag.Bool("figures", false, "also reproduce the paper's figures that take seconds of CPU (make figures)")

// Every figure of docs/figures.md's PRR section: the table's golden value is
// within 5% of the paper's or says why not; the quick ones are recomputed
// always, the §5.1 reproduction (Section51, about 3 s of CPU) under
// -figures. TestSection51Quick covers it in the normal suite.
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

// The §5.1 reproduction in the normal suite: the first 4 of Section51's 32
// seeds, about an eighth of the CPU. Each figure of the 4 runs must agree
// with the documented 32-run value within the 99% interval of a 4-run mean
// (Student t, 3 dof, on the spread of the 4 runs).
func TestSection51Quick(t *testing.T) {
	rp := Section51()
	rp.Seeds = rp.Seeds[:4]
	st, err := rp.Run(section51Cases())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range section51Figures() {
		got := f.F(st)
		// The per-run values, for the spread: each run's figure alone.
		var runs []float64
		for k := range rp.Seeds {
			one := map[Case]Stats{}
			for c, s := range st {
				one[c] = Stats{Runs: s.Runs[k : k+1]}
			}
			runs = append(runs, f.F(one))
		}
		h := tQuantile995(len(runs)-1) * math.Max(stddev(runs), 0.01*math.Abs(f.Golden)) / math.Sqrt(float64(len(runs)))
		if math.Abs(got-f.Golden) > h {
			t.Errorf("%s: 4 runs give %.4g, the 32-run reproduction %.4g (paper %.4g): more than the 99%% interval %.3g apart", f.Section, got, f.Golden, f.Paper, h)
		}
	}
}

// Every expectation Predict gives has a budget, and a reason when its band
// is wider than ±10%, one-sided or reaches 0.
func TestEveryBandHasABudget(t *testing.T) {
	es, err := Model{}.Predict(map[string]string{"p": "8", "cycles": "3000", "replicas": "3", "depths": "1,64", "load": "0.7"})
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
