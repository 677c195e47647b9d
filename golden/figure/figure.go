// Package figure holds a paper's figure as a golden model reproduces it:
// its curves, and checks that put each reproduced value next to the value
// the paper gives, with the band a test holds it in and what that band is
// made of. golden/tin and golden/ordering produce them; `labrunner golden
// simulate` writes them as JSON and plots.
package figure

import "fmt"

// Series is one curve of a figure.
type Series struct {
	Name string    `json:"name"`
	X    []float64 `json:"x"`
	Y    []float64 `json:"y"`
	// SD is the population standard deviation of each point, where the
	// paper's bar charts show one.
	SD []float64 `json:"sd,omitempty"`
}

// Check is one reproduced value next to the paper's: the paper's value as
// its text gives it (the figures themselves are plots), the simulation's,
// and the band [Lo, Hi] a test holds the simulation in, with its budget.
type Check struct {
	What   string  `json:"what"`
	Paper  string  `json:"paper"`
	Value  float64 `json:"value"`
	Lo     float64 `json:"lo"`
	Hi     float64 `json:"hi"`
	Unit   string  `json:"unit,omitempty"`
	Budget string  `json:"budget"`
	Pass   bool    `json:"pass"`
}

// NewCheck returns a check, passed when lo <= v <= hi.
func NewCheck(what, paper string, v, lo, hi float64, unit, budget string) Check {
	return Check{What: what, Paper: paper, Value: v, Lo: lo, Hi: hi, Unit: unit, Budget: budget, Pass: v >= lo && v <= hi}
}

func (c Check) String() string {
	verdict := "within"
	if !c.Pass {
		verdict = "OUTSIDE"
	}
	return fmt.Sprintf("%s: %.4g %s (paper: %s) %s [%.4g, %.4g]", c.What, c.Value, c.Unit, c.Paper, verdict, c.Lo, c.Hi)
}

// Figure is a reproduced figure.
type Figure struct {
	ID     string   `json:"id"`
	Title  string   `json:"title"`
	Source string   `json:"source"`
	XLabel string   `json:"x_label"`
	YLabel string   `json:"y_label"`
	Series []Series `json:"series"`
	Checks []Check  `json:"checks"`
	Notes  []string `json:"notes,omitempty"`
}

// Failed lists the checks outside their band.
func (f Figure) Failed() []Check {
	var out []Check
	for _, c := range f.Checks {
		if !c.Pass {
			out = append(out, c)
		}
	}
	return out
}
