// Package bands lists the bands a run's verdicts were judged with: for each
// numeric expectation, how far it reaches below and above its reference
// (relative), what its width is made of (Expectation.Budget) and, for a band
// wider than results.WideBand on a side, one-sided, or reaching 0 for a
// quantity that must be positive, the reason it may be (Expectation.Wide).
// A band that needs a reason and has none is an offender: a verdict that a
// disagreement of that size cannot fail. `labrunner golden bands` prints
// them.
package bands

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/labrunner/labrunner/results"
	"github.com/labrunner/labrunner/results/report"
)

// Band is one band of a plan: an expectation as the verdicts used it, the
// boards that shared it counted once.
type Band struct {
	Plan     string         `json:"plan"`
	Test     string         `json:"test"`
	Metric   string         `json:"metric"`
	Params   results.Params `json:"params,omitempty"`
	Expected string         `json:"expected"`
	Source   string         `json:"source,omitempty"`
	// Below and Above are the band's reach relative to its reference
	// (results.Expectation.RelativeBand); +Inf for an open side (JSON:
	// null).
	Below  float64  `json:"-"`
	Above  float64  `json:"-"`
	Budget string   `json:"budget,omitempty"`
	Wide   string   `json:"wide,omitempty"`
	Boards []string `json:"boards,omitempty"`
	// NeedsReason: wider than results.WideBand on a side (or open); such a
	// band needs Wide. Offender: it needs one and has none.
	NeedsReason bool `json:"needs_reason"`
	Offender    bool `json:"offender"`
}

// Key identifies a band for grouping: its plan, test, metric, parameters
// and width.
func (b Band) key() string {
	return strings.Join([]string{b.Plan, b.Test, results.Key(b.Metric, b.Params), b.Expected, b.Budget, b.Wide}, "\x00")
}

// FromRun reads a run directory's expectations and the verdicts they
// judged (for each one's plan) and returns its bands.
func FromRun(dir string) ([]Band, error) {
	exps, err := report.ReadExpectations(dir)
	if err != nil {
		return nil, err
	}
	vs, err := results.ReadVerdictLog(dir)
	if err != nil {
		return nil, err
	}
	if len(exps) == 0 {
		return nil, fmt.Errorf("%s: no expectations.jsonl, or an empty one: give the run directory of a nightly that ran tests", dir)
	}
	return FromExpectations(exps, vs), nil
}

// FromExpectations turns expectations into bands, each given the plan of
// the verdict that used it (matched by test, board and key). Text
// expectations have no band and are left out.
func FromExpectations(exps []report.Expected, vs []results.Verdict) []Band {
	plans := map[string]string{}
	for _, v := range vs {
		plans[v.Test+"\x00"+v.Board+"\x00"+results.Key(v.Metric, v.Params)] = v.Plan
		// Another board's verdict of the same case names the plan too.
		plans[v.Test+"\x00\x00"+results.Key(v.Metric, v.Params)] = v.Plan
	}
	planOf := func(e report.Expected) string {
		if p, ok := plans[e.Test+"\x00"+e.Board+"\x00"+e.Key()]; ok {
			return p
		}
		return plans[e.Test+"\x00\x00"+e.Key()]
	}
	byKey := map[string]*Band{}
	var out []*Band
	for _, e := range exps {
		below, above, ok := e.RelativeBand()
		if !ok {
			continue
		}
		b := Band{Plan: planOf(e), Test: e.Test, Metric: e.Metric, Params: e.Params,
			Expected: e.Describe(), Source: e.Source, Below: below, Above: above, Budget: e.Budget, Wide: e.Wide,
			NeedsReason: e.NeedsReason()}
		b.Offender = b.NeedsReason && strings.TrimSpace(b.Wide) == ""
		if x, ok := byKey[b.key()]; ok {
			if e.Board != "" && !contains(x.Boards, e.Board) {
				x.Boards = append(x.Boards, e.Board)
			}
			continue
		}
		if e.Board != "" {
			b.Boards = []string{e.Board}
		}
		byKey[b.key()] = &b
		out = append(out, &b)
	}
	res := make([]Band, len(out))
	for i, b := range out {
		sort.Strings(b.Boards)
		res[i] = *b
	}
	sort.SliceStable(res, func(i, j int) bool {
		a, b := res[i], res[j]
		if a.Plan != b.Plan {
			return a.Plan < b.Plan
		}
		if a.Test != b.Test {
			return a.Test < b.Test
		}
		if a.Metric != b.Metric {
			return a.Metric < b.Metric
		}
		return a.Params.String() < b.Params.String()
	})
	return res
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// Offenders returns the bands that need a reason and have none.
func Offenders(bs []Band) []Band {
	var out []Band
	for _, b := range bs {
		if b.Offender {
			out = append(out, b)
		}
	}
	return out
}

// Percent renders a relative reach: "8.0%", "open" for +Inf.
func Percent(r float64) string {
	if math.IsInf(r, 1) {
		return "open"
	}
	return fmt.Sprintf("%.1f%%", r*100)
}

// WriteTable prints bands as a table, offenders marked with "!".
func WriteTable(w io.Writer, bs []Band) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\tPLAN\tTEST\tMETRIC\tPARAMS\tEXPECTED\tBELOW\tABOVE\tBOARDS\tBUDGET\tREASON")
	for _, b := range bs {
		mark := ""
		if b.Offender {
			mark = "!"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t-%s\t+%s\t%d\t%s\t%s\n", mark, orDash(b.Plan), b.Test, b.Metric, orDash(b.Params.String()),
			b.Expected, Percent(b.Below), Percent(b.Above), len(b.Boards), orDash(oneLine(b.Budget)), orDash(oneLine(b.Wide)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	n := len(Offenders(bs))
	_, err := fmt.Fprintf(w, "\n%d bands, %d wider than ±%.0f%% (or open) without a reason (marked !)\n", len(bs), n, results.WideBand*100)
	return err
}

// Describe renders one offender for a test failure: where it is, how wide,
// and what to add.
func (b Band) Describe() string {
	return fmt.Sprintf("%s %s %s: %s reaches -%s/+%s of its reference (boards %s; source %s): give its expectation a Wide reason or narrow it (budget: %s)",
		orDash(b.Plan), b.Test, results.Key(b.Metric, b.Params), b.Expected, Percent(b.Below), Percent(b.Above),
		strings.Join(b.Boards, ","), orDash(b.Source), orDash(b.Budget))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return s
}

// MarshalJSON writes the relative reaches as numbers, null for an open side.
func (b Band) MarshalJSON() ([]byte, error) {
	type plain Band
	num := func(v float64) *float64 {
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return nil
		}
		return &v
	}
	return json.Marshal(struct {
		plain
		Below *float64 `json:"below"`
		Above *float64 `json:"above"`
	}{plain(b), num(b.Below), num(b.Above)})
}
