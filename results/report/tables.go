package report

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/labrunner/labrunner/results"
)

// vrow is one verdict in a table: the measured and expected values as
// numbers with their unit side by side, the band and how far the reading
// is off it, the message in a column of its own, and the paper section.
type vrow struct {
	Status, Class, Board string
	Test                 string
	Params               []string
	MetricTitle          string
	// Measured and Expected are a number with its unit, a short text value
	// (Code: shown as code), or empty. Their *Full forms are tooltips.
	Measured, MeasuredFull string
	MeasuredCode           bool
	Expected, ExpectedFull string
	ExpectedCode           bool
	Band, Off              string
	Wide, Budget           string
	// Message is what the test said; past about four lines the rest is
	// folded into MessageMore.
	Message, MessageMore string
	Cite, Source         string
}

// messageFold is how much of a message a row shows before folding the rest.
const messageFold = 320

// fold splits a long message at a word boundary near messageFold.
func fold(msg string) (head, more string) {
	r := []rune(msg)
	if len(r) <= messageFold+80 {
		return msg, ""
	}
	cut := messageFold
	for i := messageFold; i > messageFold-60; i-- {
		if r[i] == ' ' {
			cut = i
			break
		}
	}
	return string(r[:cut]), strings.TrimSpace(string(r[cut:]))
}

// fmtSig writes v with prec significant digits, without an exponent
// between 0.001 and ten million ("11200", not "1.12e+04").
func fmtSig(v float64, prec int) string {
	a := math.Abs(v)
	if a != 0 && (a < 1e-3 || a >= 1e7) {
		return strconv.FormatFloat(v, 'g', prec, 64)
	}
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', prec, 64), 64)
	return strconv.FormatFloat(r, 'f', -1, 64)
}

func unitText(unit string) string {
	if unit == "x" {
		return "×"
	}
	return unit
}

// num renders a number with its unit for a table cell: four significant
// digits, enough to read; the tooltip has six.
func num(v float64, unit string) string { return numPrec(v, unit, 4) }

func numPrec(v float64, unit string, prec int) string {
	var s string
	switch {
	case math.IsNaN(v):
		s = "NaN"
	case math.IsInf(v, 1):
		s = "+∞"
	case math.IsInf(v, -1):
		s = "−∞"
	default:
		s = fmtSig(v, prec)
	}
	switch unit {
	case "":
		return s
	case "x":
		return s + "×"
	}
	return s + " " + unit
}

// shortValue tells a value from prose: a text reading is shown in the
// measured column only when it is short and has no words in it (a traced
// path, a set of nodes, per-VC counts); anything else goes to the message.
func shortValue(s string) bool {
	s = strings.TrimSpace(s)
	if s == "" || len(s) > 40 || strings.Contains(s, ": ") {
		return false
	}
	fs := strings.Fields(s)
	if len(fs) > 3 {
		return false
	}
	for _, f := range fs {
		if wordRE.MatchString(f) {
			return false
		}
	}
	return true
}

var wordRE = regexp.MustCompile(`^[A-Za-z]{3,}[.,;:!?]?$`)

// cite shortens a source to its paper and section for the table; the
// whole text is the cell's tooltip.
//
//	"ExaNet §4.3, Fig. 10: 90% of the 10 Gb/s cap at 512 B"  -> "ExaNet §4.3, Fig. 10"
//	"FPGA'20 §5.1 (golden/prr reference simulation), Fig. 7" -> "FPGA'20 §5.1, Fig. 7"
func cite(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.Index(s, ": "); i > 0 {
		s = s[:i]
	}
	for {
		i := strings.Index(s, " (")
		if i < 0 {
			break
		}
		j := strings.Index(s[i:], ")")
		if j < 0 {
			s = s[:i]
			break
		}
		s = s[:i] + s[i+j+1:]
	}
	if r := []rune(s); len(r) > 70 {
		cut := string(r[:70])
		if i := strings.LastIndexAny(cut, ";,"); i > 30 {
			cut = cut[:i]
		}
		s = strings.TrimSpace(cut) + " …"
	}
	return s
}

// meaningfulValue tells whether a bounded expectation's Value is its
// reference (it lies inside the bounds) or a leftover zero.
func meaningfulValue(e results.Expectation) bool {
	if e.Min == nil && e.Max == nil {
		return true
	}
	lo, hi := e.Bounds()
	if e.Value < lo || e.Value > hi {
		return false
	}
	// A Value on an edge of the band is the bound itself (a queue of at
	// most 8 cells has Value 8), and a Value 0 beside a one-sided bound a
	// leftover: neither is what the reading should be near.
	if lo < hi && (e.Value == lo || e.Value == hi) {
		return false
	}
	return !(e.Value == 0 && (math.IsInf(lo, 0) || math.IsInf(hi, 0)))
}

// bandText renders where a reading must fall: "±4.6%" around the value,
// "±0.538 µs", "[0.114, 0.149]", "≤ 8 cells".
func bandText(e results.Expectation, unit string) string {
	lo, hi := e.Bounds()
	if e.Min == nil && e.Max == nil {
		hw := (hi - lo) / 2
		if hw == 0 {
			return "exact"
		}
		if e.RelTol > 0 && e.Value != 0 && math.Abs(hw-math.Abs(e.Value)*e.RelTol) <= 1e-12*math.Abs(e.Value) {
			return fmt.Sprintf("±%.3g%%", e.RelTol*100)
		}
		return "±" + num(hw, unit)
	}
	switch {
	case math.IsInf(lo, -1) && math.IsInf(hi, 1):
		return "any"
	case math.IsInf(lo, -1):
		return "≤ " + num(hi, unit)
	case math.IsInf(hi, 1):
		return "≥ " + num(lo, unit)
	}
	return strings.TrimSpace("[" + num(lo, "") + ", " + num(hi, "") + "] " + unitText(unit))
}

// offText says how far a reading lies outside its band, relative to the
// reference (the golden value, else the bound it crossed); "" inside.
func offText(m float64, e results.Expectation, unit string) string {
	lo, hi := e.Bounds()
	if math.IsNaN(m) {
		return ""
	}
	if m >= lo && m <= hi {
		return ""
	}
	ref := e.Value
	if !meaningfulValue(e) {
		ref = lo
		if m > hi {
			ref = hi
		}
	}
	if ref == 0 {
		return fmt.Sprintf("%+.3g %s", m-ref, unit)
	}
	return fmt.Sprintf("%+.1f%%", (m-ref)/math.Abs(ref)*100)
}

// redundant tells whether a message only repeats measured, expected and
// source, as results.Score writes it ("measured 0.8 Gb/s, expected 1.6
// Gb/s ±10% (ExaNet §4.3)"), which the row shows in its own columns.
func redundant(vd results.Verdict) bool {
	m := vd.Message
	return strings.HasPrefix(m, "measured ") && vd.Expected != "" && strings.Contains(m, ", expected ") &&
		strings.Contains(m, vd.Expected) && strings.HasSuffix(m, "("+vd.Source+")")
}

// row builds the table row of a verdict, taking the expectation it was
// scored against from expectations.jsonl when the verdict carries only
// its human form.
func (v *View) row(vd results.Verdict) vrow {
	r := vrow{Status: string(vd.Status), Class: vd.Class, Board: vd.Board, Test: vd.Test,
		MetricTitle: v.MetricTitle(vd.Metric), Message: vd.Message, Source: vd.Source, Wide: vd.Wide, Budget: vd.Budget}
	for _, k := range sortedKeys(vd.Params) {
		r.Params = append(r.Params, k+"="+vd.Params[k])
	}
	e := v.expectation(vd.Test, vd.Board, vd.Metric, vd.Params)
	if e == nil && vd.ExpectedValue == nil && vd.Expected != "" {
		// A verdict a test made itself (not results.Score) may carry only
		// the human form of its expectation.
		if ex, ok := parseDescribed(vd.Expected); ok {
			ex.Source = vd.Source
			e = &ex
		}
	}
	if e == nil && vd.ExpectedValue != nil {
		ex := results.Expectation{Value: *vd.ExpectedValue, Unit: vd.Unit}
		if vd.Tolerance != nil {
			ex.AbsTol = *vd.Tolerance
		}
		e = &ex
	}
	if e != nil {
		if r.Source == "" {
			r.Source = e.Source
		}
		if r.Wide == "" {
			r.Wide = e.Wide
		}
		if r.Budget == "" {
			r.Budget = e.Budget
		}
	}
	unit := vd.Unit
	if unit == "" && e != nil {
		unit = e.Unit
	}
	if redundant(vd) {
		r.Message = ""
	}
	// What was measured.
	var moved []string // text that leaves the value columns for the message
	switch {
	case vd.Measured != nil:
		r.Measured, r.MeasuredFull = num(*vd.Measured, unit), numPrec(*vd.Measured, unit, 8)
		if vd.MeasuredText != "" && !strings.Contains(r.Message, vd.MeasuredText) {
			moved = append(moved, vd.MeasuredText)
		}
	case shortValue(vd.MeasuredText):
		r.Measured, r.MeasuredFull, r.MeasuredCode = vd.MeasuredText, vd.MeasuredText, true
	case vd.MeasuredText != "":
		r.MeasuredFull = "no value: see the message"
		if !strings.Contains(r.Message, vd.MeasuredText) {
			moved = append(moved, vd.MeasuredText)
		}
	}
	// What was expected.
	switch {
	case e != nil && e.Text != "":
		if shortValue(e.Text) {
			r.Expected, r.ExpectedFull, r.ExpectedCode = e.Text, e.Text, true
		} else {
			r.ExpectedFull = e.Text
			moved = append(moved, "expected: "+e.Text)
		}
	case e != nil:
		if meaningfulValue(*e) {
			r.Expected, r.ExpectedFull = num(e.Value, unit), numPrec(e.Value, unit, 8)
			r.Band = bandText(*e, unit)
			if e.Note != "" && len(e.Note) < 200 {
				r.ExpectedFull += " " + e.Note
			}
		} else {
			r.Expected, r.ExpectedFull = bandText(*e, unit), e.Describe()
		}
		if vd.Measured != nil {
			r.Off = offText(*vd.Measured, *e, unit)
		}
	case shortValue(vd.Expected):
		// Not the human form of a number (parseDescribed would have read
		// it): a text value, shown as code like the measured one.
		r.Expected, r.ExpectedFull, r.ExpectedCode = vd.Expected, vd.Expected, true
	case vd.Expected != "":
		r.ExpectedFull = vd.Expected
		moved = append(moved, "expected "+vd.Expected)
	}
	if vd.Status == results.Pass {
		r.Message = ""
		moved = nil
	}
	if len(moved) > 0 {
		r.Message = strings.TrimSpace(strings.Join(append(moved, r.Message), "; "))
		r.Message = strings.TrimSuffix(r.Message, ";")
	}
	r.Message, r.MessageMore = fold(r.Message)
	r.Cite = cite(r.Source)
	return r
}

var (
	describedTolRE = regexp.MustCompile(`^([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)(?: ([^\s±\[\]()]+))?(?: ±(?:([\d.]+(?:[eE][-+]?\d+)?)%|([\d.]+(?:[eE][-+]?\d+)?)))?(?:\s+(.*))?$`)
	describedBoxRE = regexp.MustCompile(`^\[([-+]?[\d.]+(?:[eE][-+]?\d+)?|-inf), ([-+]?[\d.]+(?:[eE][-+]?\d+)?|\+inf)\](?: ([^\s()]+))?(?:\s+(.*))?$`)
)

// parseDescribed reads back the human form of an expectation
// (results.Expectation.Describe: "8.20513 Gb/s ±4.56%", "1024 words",
// "[0.1, 0.2] fraction"), with any words after it ("(all credit back)")
// in Note. ok is false for anything else.
func parseDescribed(s string) (results.Expectation, bool) {
	s = strings.TrimSpace(s)
	if m := describedBoxRE.FindStringSubmatch(s); m != nil {
		e := results.Expectation{Unit: m[3], Note: m[4]}
		if m[1] != "-inf" {
			lo, err := strconv.ParseFloat(m[1], 64)
			if err != nil {
				return results.Expectation{}, false
			}
			e.Min = &lo
		}
		if m[2] != "+inf" {
			hi, err := strconv.ParseFloat(m[2], 64)
			if err != nil {
				return results.Expectation{}, false
			}
			e.Max = &hi
		}
		if (e.Min == nil && e.Max == nil) || (e.Min != nil && e.Max != nil && *e.Min > *e.Max) {
			return results.Expectation{}, false
		}
		return e, true
	}
	m := describedTolRE.FindStringSubmatch(s)
	if m == nil {
		return results.Expectation{}, false
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil || math.IsInf(v, 0) {
		return results.Expectation{}, false
	}
	e := results.Expectation{Value: v, Unit: m[2], Note: m[5]}
	if m[3] != "" {
		if e.RelTol, err = strconv.ParseFloat(m[3], 64); err != nil {
			return results.Expectation{}, false
		}
		e.RelTol /= 100
	}
	if m[4] != "" {
		if e.AbsTol, err = strconv.ParseFloat(m[4], 64); err != nil {
			return results.Expectation{}, false
		}
	}
	return e, true
}
