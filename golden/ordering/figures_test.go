package ordering

import (
	"testing"

	"github.com/labrunner/labrunner/internal/raceshare"
)

// Every figure of docs/figures.md's SC'18 section is recomputed and equals
// the table's golden value; the table's golden value is within 5% of the
// paper's or says why not.
//
// It runs in make test's pass without the race detector only: under it the
// experiments at full length took 11 s of CPU in a CPU-bound pass, and
// their code runs under the detector at a quarter of the length in
// sc18_test.go (TestSC18Fig8a and the others).
func TestFigures(t *testing.T) {
	if raceshare.SecondPassOnly(t, "TestSC18Fig8a and the other quarter-length experiments run its code under the detector") {
		return
	}
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
