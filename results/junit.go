package results

import (
	"encoding/xml"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"
)

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name      string          `xml:"name,attr"`
	Tests     int             `xml:"tests,attr"`
	Failures  int             `xml:"failures,attr"`
	Errors    int             `xml:"errors,attr"`
	Skipped   int             `xml:"skipped,attr"`
	Timestamp string          `xml:"timestamp,attr,omitempty"`
	Props     *junitProps     `xml:"properties,omitempty"`
	Cases     []junitTestCase `xml:"testcase"`
}

type junitProps struct {
	Props []junitProp `xml:"property"`
}

type junitProp struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitTestCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Error     *junitMessage `xml:"error,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

// JUnit renders verdicts as JUnit XML: one suite per plan, one test case per
// verdict, classname "plan.board". Characters XML 1.0 forbids (raw UART
// bytes in a message) are replaced, so the file always parses.
func JUnit(run Run, vs []Verdict) ([]byte, error) {
	byPlan := map[string][]Verdict{}
	for _, v := range vs {
		byPlan[v.Plan] = append(byPlan[v.Plan], v)
	}
	plans := make([]string, 0, len(byPlan))
	for p := range byPlan {
		plans = append(plans, p)
	}
	sort.Strings(plans)
	top := junitSuites{Name: XMLSafe("labrunner " + run.Lab)}
	for _, p := range plans {
		s := junitSuite{Name: XMLSafe(p), Timestamp: run.Start.UTC().Format("2006-01-02T15:04:05")}
		s.Props = &junitProps{Props: []junitProp{{"lab", XMLSafe(run.Lab)}, {"run", XMLSafe(run.ID)}}}
		for _, v := range byPlan[p] {
			c := junitTestCase{
				Name:      XMLSafe(v.Name()),
				Classname: XMLSafe(p + "." + v.Board),
				Time:      fmt.Sprintf("%.3f", v.Seconds),
			}
			detail := verdictDetail(v)
			switch v.Status {
			case Fail:
				s.Failures++
				c.Failure = &junitMessage{Message: XMLSafe(v.Message), Type: "design", Text: XMLSafe(detail)}
			case Error:
				s.Errors++
				c.Error = &junitMessage{Message: XMLSafe(v.Message), Type: XMLSafe(v.Class), Text: XMLSafe(detail)}
			case Skip:
				s.Skipped++
				c.Skipped = &junitMessage{Message: XMLSafe(v.Message)}
			default:
				c.SystemOut = XMLSafe(detail)
			}
			s.Cases = append(s.Cases, c)
			s.Tests++
		}
		top.Tests += s.Tests
		top.Failures += s.Failures
		top.Errors += s.Errors
		top.Skipped += s.Skipped
		top.Suites = append(top.Suites, s)
	}
	b, err := xml.MarshalIndent(top, "", "  ")
	if err != nil {
		return nil, err
	}
	return append([]byte(xml.Header), append(b, '\n')...), nil
}

func verdictDetail(v Verdict) string {
	var parts []string
	if v.Measured != nil {
		parts = append(parts, fmt.Sprintf("measured: %.6g %s", *v.Measured, v.Unit))
	}
	if v.MeasuredText != "" {
		parts = append(parts, "measured: "+v.MeasuredText)
	}
	if v.Expected != "" {
		parts = append(parts, "expected: "+v.Expected)
	}
	if v.Source != "" {
		parts = append(parts, "source: "+v.Source)
	}
	if v.Message != "" {
		parts = append(parts, v.Message)
	}
	return strings.Join(parts, "\n")
}

// XMLSafe replaces characters that XML 1.0 does not allow (control bytes
// other than tab, CR and LF; invalid UTF-8; U+FFFE/U+FFFF) with U+FFFD.
func XMLSafe(s string) string {
	ok := true
	for _, r := range s {
		if !xmlChar(r) {
			ok = false
			break
		}
	}
	if ok && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for len(s) > 0 {
		r, n := utf8.DecodeRuneInString(s)
		if (r == utf8.RuneError && n <= 1) || !xmlChar(r) {
			b.WriteRune('\uFFFD')
		} else {
			b.WriteRune(r)
		}
		s = s[n:]
	}
	return b.String()
}

func xmlChar(r rune) bool {
	return r == 0x09 || r == 0x0A || r == 0x0D ||
		(r >= 0x20 && r <= 0xD7FF) || (r >= 0xE000 && r <= 0xFFFD) || (r >= 0x10000 && r <= 0x10FFFF)
}
