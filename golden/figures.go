package golden

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Figure is one number of a paper that a golden model reproduces:
// docs/figures.md lists every one, with the paper's value, golden's, whether
// they agree within 5% and, when they do not, why. A model's package
// exports its figures (Figures) and its tests recompute them, so that the
// table in the docs and the models cannot drift apart.
type Figure struct {
	// Section is the paper's section, figure or table and what the number
	// is ("§6.2, Fig. 10: 7:1 incast, slowest flow").
	Section string
	Unit    string
	// Paper is the paper's value; Golden golden's, as documented (the
	// tests recompute it and compare).
	Paper, Golden float64
	// Reason says why golden's value is not within 5% of the paper's (the
	// paper's rounding, an unstated parameter, a reading): empty when it is.
	Reason string
	// Slow marks a figure that takes seconds of CPU to recompute: its test
	// runs under -figures (make figures), a cheaper one always.
	Slow bool
	// Compute recomputes golden's value.
	Compute func() (float64, error)
}

// FigureTolerance is the agreement a reproduced figure must reach.
const FigureTolerance = 0.05

// Deviation is golden's value relative to the paper's, minus 1.
func (f Figure) Deviation() float64 { return f.Golden/f.Paper - 1 }

// Within reports whether golden's value is within FigureTolerance of the
// paper's.
func (f Figure) Within() bool { return math.Abs(f.Deviation()) <= FigureTolerance+1e-12 }

// Check compares a recomputed value with the documented one (equal to the
// digits the table shows) and the documented one with the paper's (within
// 5%, or a reason given, never both).
func (f Figure) Check(got float64) error {
	if fmtFigure(got) != fmtFigure(f.Golden) {
		return fmt.Errorf("%s: golden now gives %s %s, the table says %s", f.Section, fmtFigure(got), f.Unit, fmtFigure(f.Golden))
	}
	switch {
	case f.Within() && f.Reason != "":
		return fmt.Errorf("%s: golden %s is within 5%% of the paper's %s, yet a reason is given", f.Section, fmtFigure(f.Golden), fmtFigure(f.Paper))
	case !f.Within() && f.Reason == "":
		return fmt.Errorf("%s: golden %s is %+.1f%% from the paper's %s and no reason is given", f.Section, fmtFigure(f.Golden), 100*f.Deviation(), fmtFigure(f.Paper))
	}
	return nil
}

// Row renders the figure as a row of docs/figures.md: figure, paper, golden,
// within 5%?, reason.
func (f Figure) Row() string {
	ok := "yes"
	if !f.Within() {
		ok = fmt.Sprintf("no (%+.1f%%)", 100*f.Deviation())
	}
	unit := ""
	if f.Unit != "" {
		unit = " " + f.Unit
	}
	return fmt.Sprintf("| %s | %s%s | %s%s | %s | %s |", f.Section, fmtFigure(f.Paper), unit, fmtFigure(f.Golden), unit, ok, strings.ReplaceAll(f.Reason, "|", "/"))
}

// FigureHeader is the header of a figure table in docs/figures.md.
const FigureHeader = "| figure | paper | golden | within 5%? | reason if not |\n|---|---|---|---|---|"

// fmtFigure shows a figure to four significant digits.
func fmtFigure(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }
