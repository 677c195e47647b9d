// Package results holds what a run produces: measurements taken from the
// hardware, expectations from the golden models, the verdicts that pair them,
// and the run directory they are written to.
//
// Data moves one way: tests emit Measurements, golden models emit
// Expectations for the same keys, Score pairs them into Verdicts.
package results

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
)

// Params are the parameters that distinguish one measurement of a metric
// from another (payload size, hop count, ...). Keys and values are strings so
// that they serialise the same everywhere (JSON, JUnit names, Influx tags).
type Params map[string]string

// String renders params sorted by key: "hops=1,payload=64".
func (p Params) String() string {
	if len(p) == 0 {
		return ""
	}
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(p[k])
	}
	return b.String()
}

// Clone returns a copy that can be changed without touching p.
func (p Params) Clone() Params {
	q := make(Params, len(p))
	for k, v := range p {
		q[k] = v
	}
	return q
}

// Key identifies what a measurement and its expectation are about.
func Key(metric string, p Params) string {
	if len(p) == 0 {
		return metric
	}
	return metric + "{" + p.String() + "}"
}

// Measurement is one figure read off the hardware (its counters, timestamps
// or registers). Text carries non-numeric observations (a path a traced
// packet took); Samples carries a distribution when one was taken.
type Measurement struct {
	Time    time.Time `json:"time"`
	Plan    string    `json:"plan,omitempty"`
	Test    string    `json:"test"`
	Board   string    `json:"board"`
	Design  string    `json:"design,omitempty"`
	Metric  string    `json:"metric"`
	Params  Params    `json:"params,omitempty"`
	Value   float64   `json:"value"`
	Unit    string    `json:"unit,omitempty"`
	Text    string    `json:"text,omitempty"`
	Samples []float64 `json:"samples,omitempty"`
	// Step and Attempt tie the record to the plan step that took it and to
	// the run attempt (0, then 1, 2 ... after each --resume), so that a
	// resumed run keeps exactly one copy of every step's records.
	Step    string `json:"step,omitempty"`
	Attempt int    `json:"attempt,omitempty"`
}

// Key returns the key the measurement is scored under.
func (m Measurement) Key() string { return Key(m.Metric, m.Params) }

// Expectation is what a golden model predicts for one key. Exactly one way of
// judging applies, in this order: Text (exact match), Min/Max bounds (either
// may be NaN for unbounded), or Value with a relative tolerance RelTol and an
// absolute tolerance AbsTol (the wider of the two is used).
type Expectation struct {
	Metric string   `json:"metric"`
	Params Params   `json:"params,omitempty"`
	Value  float64  `json:"value"`
	Unit   string   `json:"unit,omitempty"`
	Text   string   `json:"text,omitempty"`
	RelTol float64  `json:"rel_tol,omitempty"`
	AbsTol float64  `json:"abs_tol,omitempty"`
	Min    *float64 `json:"min,omitempty"`
	Max    *float64 `json:"max,omitempty"`
	// Source says where the figure comes from: paper and section
	// ("ExaNet §4.3, Fig. 9"), or the model that computed it.
	Source string `json:"source"`
	// Note explains the figure in one line, for reports.
	Note string `json:"note,omitempty"`
	// Budget says what the band's width is made of and how much each part
	// contributes (golden replica spread at the run length the test uses,
	// counter quantisation, clock ppm, measurement window), so that a
	// reader can tell which disagreement the band still catches.
	Budget string `json:"budget,omitempty"`
	// Wide is the reason a band is allowed to be wider than WideBand on
	// either side of its reference (or bounded on one side only, or by 0
	// for a quantity that must be positive). Empty for a band within it.
	Wide string `json:"wide,omitempty"`
}

// WideBand is the relative half-width above which a band needs a stated
// reason (Expectation.Wide).
const WideBand = 0.10

// RelativeBand returns how far the band reaches below and above its
// reference value, relative to that value: the expectation's Value for a
// toleranced figure (and for bounds when Value is set), the middle of the
// bounds otherwise. An unbounded side is +Inf. ok is false for a text
// expectation, which has no band.
func (e Expectation) RelativeBand() (below, above float64, ok bool) {
	if e.Text != "" {
		return 0, 0, false
	}
	lo, hi := e.Bounds()
	ref := e.Value
	if (e.Min != nil || e.Max != nil) && ref == 0 {
		switch {
		case math.IsInf(lo, 0) && math.IsInf(hi, 0):
			return math.Inf(1), math.Inf(1), true
		case math.IsInf(lo, 0):
			ref = hi
		case math.IsInf(hi, 0):
			ref = lo
		default:
			ref = (lo + hi) / 2
		}
	}
	rel := func(d float64) float64 {
		switch {
		case math.IsInf(d, 0):
			return math.Inf(1)
		case ref == 0:
			if d == 0 {
				return 0
			}
			return math.Inf(1)
		}
		return d / math.Abs(ref)
	}
	below, above = rel(ref-lo), rel(hi-ref)
	if below < 0 {
		below = 0
	}
	if above < 0 {
		above = 0
	}
	return below, above, true
}

// NeedsReason reports whether the band is wider than WideBand on a side,
// one-sided, or reaches 0 from a positive reference: such a band is allowed
// only with Wide set.
func (e Expectation) NeedsReason() bool {
	below, above, ok := e.RelativeBand()
	if !ok {
		return false
	}
	// A band of exactly WideBand (a ±10% tolerance) is allowed: the slack
	// absorbs the rounding of value ± value·tol.
	const slack = 1e-9
	return below > WideBand+slack || above > WideBand+slack
}

// Key returns the key the expectation is scored under.
func (e Expectation) Key() string { return Key(e.Metric, e.Params) }

// Bounds returns the interval a measured value must fall into.
func (e Expectation) Bounds() (lo, hi float64) {
	if e.Min != nil || e.Max != nil {
		lo, hi = math.Inf(-1), math.Inf(1)
		if e.Min != nil {
			lo = *e.Min
		}
		if e.Max != nil {
			hi = *e.Max
		}
		return lo, hi
	}
	tol := math.Max(math.Abs(e.Value)*e.RelTol, e.AbsTol)
	return e.Value - tol, e.Value + tol
}

// Describe renders the expectation for a person: "2.50 Gb/s ±5%".
func (e Expectation) Describe() string {
	if e.Text != "" {
		return e.Text
	}
	if e.Min != nil || e.Max != nil {
		lo, hi := e.Bounds()
		return fmt.Sprintf("[%s, %s] %s", fmtNum(lo), fmtNum(hi), e.Unit)
	}
	s := fmtNum(e.Value) + " " + e.Unit
	switch {
	case e.RelTol > 0 && e.AbsTol > 0:
		s += fmt.Sprintf(" ±max(%.3g%%, %s)", e.RelTol*100, fmtNum(e.AbsTol))
	case e.RelTol > 0:
		s += fmt.Sprintf(" ±%.3g%%", e.RelTol*100)
	case e.AbsTol > 0:
		s += " ±" + fmtNum(e.AbsTol)
	}
	return strings.TrimSpace(s)
}

func fmtNum(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+inf"
	case math.IsInf(v, -1):
		return "-inf"
	}
	return fmt.Sprintf("%.6g", v)
}

// Status of a verdict.
type Status string

const (
	Pass Status = "pass"
	Fail Status = "fail" // the design did not meet its expectation
	// Error: the test could not be judged (infrastructure or setup trouble).
	Error Status = "error"
	// Skip: not run, with a reason (board held by another user, resumed run).
	Skip Status = "skip"
)

// Verdict is the judgement of one test case.
type Verdict struct {
	Time          time.Time `json:"time"`
	Plan          string    `json:"plan,omitempty"`
	Test          string    `json:"test"`
	Board         string    `json:"board"`
	Design        string    `json:"design,omitempty"`
	Metric        string    `json:"metric,omitempty"`
	Params        Params    `json:"params,omitempty"`
	Status        Status    `json:"status"`
	Class         string    `json:"class,omitempty"` // design, setup, infrastructure
	Measured      *float64  `json:"measured,omitempty"`
	MeasuredText  string    `json:"measured_text,omitempty"`
	Unit          string    `json:"unit,omitempty"`
	Expected      string    `json:"expected,omitempty"` // human form, e.g. "2.5 Gb/s ±5%"
	ExpectedValue *float64  `json:"expected_value,omitempty"`
	Tolerance     *float64  `json:"tolerance,omitempty"` // absolute half-width, when numeric
	Source        string    `json:"source,omitempty"`
	// Budget and Wide: see Expectation.
	Budget  string  `json:"budget,omitempty"`
	Wide    string  `json:"wide,omitempty"`
	Message string  `json:"message,omitempty"`
	Seconds float64 `json:"seconds,omitempty"`
	// Step and Attempt: see Measurement.
	Step    string `json:"step,omitempty"`
	Attempt int    `json:"attempt,omitempty"`
}

// Name is the test-case name used in JUnit and reports:
// "exanet.bandwidth.router[payload=64]".
func (v Verdict) Name() string {
	name := v.Test
	if ps := v.Params.String(); ps != "" {
		name += "[" + ps + "]"
	}
	return name
}

// Score judges one measurement against its expectation.
func Score(m Measurement, e Expectation) Verdict {
	v := Verdict{
		Time: m.Time, Plan: m.Plan, Test: m.Test, Board: m.Board, Design: m.Design,
		Metric: m.Metric, Params: m.Params, Unit: m.Unit, Source: e.Source,
		Expected: e.Describe(), Step: m.Step, Budget: e.Budget, Wide: e.Wide,
	}
	if e.Text != "" {
		v.MeasuredText = m.Text
		if m.Text == e.Text {
			v.Status = Pass
		} else {
			v.Status, v.Class = Fail, "design"
			v.Message = fmt.Sprintf("measured %q, expected %q (%s)", m.Text, e.Text, e.Source)
		}
		return v
	}
	mv := m.Value
	v.Measured = &mv
	if m.Text != "" {
		v.MeasuredText = m.Text
	}
	lo, hi := e.Bounds()
	if e.Min == nil && e.Max == nil {
		ev := e.Value
		tol := (hi - lo) / 2
		v.ExpectedValue, v.Tolerance = &ev, &tol
	}
	if !math.IsNaN(mv) && mv >= lo && mv <= hi {
		v.Status = Pass
		return v
	}
	v.Status, v.Class = Fail, "design"
	v.Message = fmt.Sprintf("measured %s %s, expected %s (%s)", fmtNum(mv), m.Unit, e.Describe(), e.Source)
	return v
}

// Errored makes the verdict of a test that could not be judged.
func Errored(m Measurement, class string, err error) Verdict {
	return Verdict{
		Time: m.Time, Plan: m.Plan, Test: m.Test, Board: m.Board, Design: m.Design,
		Metric: m.Metric, Params: m.Params, Status: Error, Class: class, Message: err.Error(), Step: m.Step,
	}
}

// Float returns a pointer to v, for Expectation bounds.
func Float(v float64) *float64 { return &v }
