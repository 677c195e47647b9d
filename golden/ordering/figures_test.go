package ordering

import "testing"

// Every figure of docs/figures.md's SC'18 section is recomputed and equals
// the table's golden value; the table's golden value is within 5% of the
// paper's or says why not.
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
