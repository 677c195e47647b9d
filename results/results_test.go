package results

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestScoreTolerance(t *testing.T) {
	e := Expectation{Metric: "bw", Value: 10, RelTol: 0.05, AbsTol: 0.2, Unit: "Gb/s", Source: "paper §1"}
	cases := []struct {
		v    float64
		want Status
	}{{10, Pass}, {10.5, Pass}, {9.5, Pass}, {10.51, Fail}, {9.49, Fail}, {math.NaN(), Fail}}
	for _, c := range cases {
		v := Score(Measurement{Metric: "bw", Value: c.v, Unit: "Gb/s"}, e)
		if v.Status != c.want {
			t.Errorf("Score(%v) = %s, want %s (%s)", c.v, v.Status, c.want, v.Message)
		}
		if v.Status == Fail && (!strings.Contains(v.Message, "paper §1") || v.Class != "design") {
			t.Errorf("failure message %q / class %q lacks the source or class", v.Message, v.Class)
		}
		if v.Tolerance == nil || math.Abs(*v.Tolerance-0.5) > 1e-12 {
			t.Errorf("tolerance %v, want the wider of 5%% of 10 and 0.2", v.Tolerance)
		}
	}
	// The absolute tolerance wins for small values.
	small := Expectation{Value: 1, RelTol: 0.05, AbsTol: 0.2}
	if Score(Measurement{Value: 1.15}, small).Status != Pass {
		t.Error("1.15 should pass 1 ±max(5%, 0.2)")
	}
}

func TestScoreBoundsAndText(t *testing.T) {
	e := Expectation{Min: Float(1), Max: nil}
	if Score(Measurement{Value: 0.5}, e).Status != Fail || Score(Measurement{Value: 1e9}, e).Status != Pass {
		t.Error("a lower bound alone must accept anything above it and refuse below")
	}
	txt := Expectation{Text: "(0,0,0)-vc1->(1,0,0)"}
	if Score(Measurement{Text: "(0,0,0)-vc1->(1,0,0)"}, txt).Status != Pass {
		t.Error("equal paths must pass")
	}
	v := Score(Measurement{Text: "(0,0,0)-vc0->(0,1,0)"}, txt)
	if v.Status != Fail || !strings.Contains(v.Message, "vc0") {
		t.Errorf("a different path must fail and show it: %+v", v)
	}
}

func TestKeyAndNames(t *testing.T) {
	p := Params{"payload": "64", "hops": "1"}
	if got := Key("rtt", p); got != "rtt{hops=1,payload=64}" {
		t.Errorf("Key = %q", got)
	}
	v := Verdict{Test: "latency", Params: p}
	if v.Name() != "latency[hops=1,payload=64]" {
		t.Errorf("Name = %q", v.Name())
	}
}

func TestXMLSafe(t *testing.T) {
	in := "ok\x00\x07\x1b[0m text \xff\xfe end\ttab\r\n"
	out := XMLSafe(in)
	var v struct {
		X string `xml:",chardata"`
	}
	if err := xml.Unmarshal([]byte("<a>"+xmlEscape(out)+"</a>"), &v); err != nil {
		t.Fatalf("XMLSafe output does not parse: %v", err)
	}
	if !strings.Contains(out, "ok") || !strings.Contains(out, "\ttab") || strings.ContainsRune(out, 0) {
		t.Errorf("XMLSafe(%q) = %q", in, out)
	}
}

func xmlEscape(s string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(s))
	return b.String()
}

func TestJUnitParsesWithRawUARTBytes(t *testing.T) {
	vs := []Verdict{
		{Plan: "p", Test: "registers", Board: "b0", Status: Pass},
		{Plan: "p", Test: "bandwidth", Board: "b1", Status: Fail, Message: "bridge said \x00\x01\x02\xff garbage", Measured: Float(1)},
		{Plan: "p", Test: "links", Board: "b2", Status: Error, Class: "infrastructure", Message: "timeout"},
		{Plan: "q", Test: "x", Board: "b3", Status: Skip, Message: "held"},
	}
	b, err := JUnit(Run{Lab: "lab", ID: "r1", Start: time.Now()}, vs)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Errors   int `xml:"errors,attr"`
		Skipped  int `xml:"skipped,attr"`
		Suites   []struct {
			Name  string `xml:"name,attr"`
			Cases []struct {
				Name string `xml:"name,attr"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("junit.xml does not parse: %v\n%s", err, b)
	}
	if doc.Tests != 4 || doc.Failures != 1 || doc.Errors != 1 || doc.Skipped != 1 || len(doc.Suites) != 2 {
		t.Errorf("counts wrong: %+v", doc)
	}
}

func TestRunDirLifecycle(t *testing.T) {
	root := t.TempDir()
	d, err := Create(root, Run{Lab: "emulated rack", Plans: []string{"p"}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(filepath.Base(d.Path), " /") {
		t.Errorf("run directory name %q is not sanitised", d.Path)
	}
	r, err := ReadRun(d.Path)
	if err != nil || r.Status != "running" {
		t.Fatalf("run.json right after Create: %+v, %v", r, err)
	}
	now := time.Now()
	for i := 0; i < 3; i++ {
		if err := d.AddMeasurement(Measurement{Time: now, Test: "t", Board: "b", Metric: "m", Value: float64(i)}); err != nil {
			t.Fatal(err)
		}
	}
	d.AddVerdict(Verdict{Plan: "p", Test: "t", Board: "b", Status: Pass})
	d.AddVerdict(Verdict{Plan: "p", Test: "u", Board: "b", Status: Fail, Message: "bad"})
	// Simulate a crash in the middle of a line.
	f, _ := os.OpenFile(filepath.Join(d.Path, MeasurementsFile), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"test":"t","board":"b","metric":"m","va`)
	f.Close()
	ms, err := ReadMeasurements(d.Path)
	if err != nil || len(ms) != 3 {
		t.Fatalf("after a torn last line: %d measurements, %v", len(ms), err)
	}
	if err := d.Finish("failed", 1); err != nil {
		t.Fatal(err)
	}
	d.Close()
	r, _ = ReadRun(d.Path)
	if r.Status != "failed" || r.ExitCode != 1 || r.End == nil || r.Summary == nil || r.Summary.Fail != 1 {
		t.Errorf("run.json after Finish: %+v", r)
	}
	var vj struct {
		Verdicts []Verdict `json:"verdicts"`
	}
	b, _ := os.ReadFile(filepath.Join(d.Path, VerdictsFile))
	if err := json.Unmarshal(b, &vj); err != nil || len(vj.Verdicts) != 2 || vj.Verdicts[0].Status != Fail {
		t.Errorf("verdicts.json: failures first expected, got %+v (%v)", vj.Verdicts, err)
	}
	// Reopen: the verdicts come back.
	d2, err := Open(d.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer d2.Close()
	if len(d2.Verdicts()) != 2 {
		t.Errorf("reopened run has %d verdicts", len(d2.Verdicts()))
	}
	// A second Create in the same second gets its own directory.
	d3, err := Create(root, Run{Lab: "emulated rack", Start: d.Run().Start})
	if err != nil || d3.Path == d.Path {
		t.Fatalf("second run directory %q (%v)", d3.Path, err)
	}
	d3.Close()
}

func TestReadLinesReportsABadMiddleLine(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, MeasurementsFile), []byte("{\"value\":1}\nnot json\n{\"value\":2}\n"), 0o644)
	_, err := ReadMeasurements(dir)
	if err == nil || !strings.Contains(err.Error(), ":2:") {
		t.Fatalf("want an error naming line 2, got %v", err)
	}
}

func FuzzReadMeasurements(f *testing.F) {
	f.Add([]byte("{\"metric\":\"m\",\"value\":1}\n"))
	f.Add([]byte("{\"metric\":\"m\",\"value\":1}\n{\"met"))
	f.Add([]byte("\n\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, MeasurementsFile), data, 0o644); err != nil {
			t.Fatal(err)
		}
		ms, err := ReadMeasurements(dir)
		if err != nil && !strings.Contains(err.Error(), MeasurementsFile+":") {
			t.Fatalf("error does not name file:line: %v", err)
		}
		// The streaming reader gives the same records, or the same refusal
		// before handing out any record.
		var each []Measurement
		eerr := EachMeasurement(dir, func(m *Measurement) error { each = append(each, *m); return nil })
		if (err == nil) != (eerr == nil) {
			t.Fatalf("ReadMeasurements: %v, EachMeasurement: %v", err, eerr)
		}
		if err == nil && (len(ms) != len(each) || len(ms) > 0 && !reflect.DeepEqual(jsonOf(t, ms), jsonOf(t, each))) {
			t.Fatalf("EachMeasurement gave %d records, ReadMeasurements %d, or different ones", len(each), len(ms))
		}
		// A file that is not JSON lines is refused before any record is
		// handed out; a JSON line that is not a measurement stops the
		// reading where it is.
		if err != nil && len(each) > 0 && !strings.Contains(eerr.Error(), "cannot unmarshal") && !strings.Contains(eerr.Error(), "json:") {
			t.Fatalf("EachMeasurement handed out %d records of a file it refused for its syntax (%v)", len(each), eerr)
		}
		for _, m := range ms {
			if _, err := json.Marshal(m); err != nil && !strings.Contains(err.Error(), "NaN") && !strings.Contains(err.Error(), "Inf") {
				t.Fatalf("a decoded measurement does not re-encode: %v", err)
			}
		}
	})
}

// jsonOf renders records for comparison (NaN-free by construction: JSON
// lines cannot carry NaN).
func jsonOf(t *testing.T, ms []Measurement) string {
	t.Helper()
	b, err := json.Marshal(ms)
	if err != nil {
		return fmt.Sprint(ms)
	}
	return string(b)
}

func TestRelativeBand(t *testing.T) {
	f := Float
	cases := []struct {
		name         string
		e            Expectation
		below, above float64
		needsReason  bool
	}{
		{"rel 5%", Expectation{Value: 100, RelTol: 0.05}, 0.05, 0.05, false},
		{"abs wider", Expectation{Value: 100, RelTol: 0.05, AbsTol: 20}, 0.2, 0.2, true},
		{"bounds around value", Expectation{Value: 100, Min: f(95), Max: f(130)}, 0.05, 0.3, true},
		{"bounds, no value", Expectation{Min: f(90), Max: f(110)}, 0.1, 0.1, false},
		{"floor of zero", Expectation{Min: f(0), Max: f(8)}, 1, 1, true},
		{"upper only", Expectation{Max: f(5000), Min: nil}, math.Inf(1), 0, true},
	}
	for _, c := range cases {
		b, a, ok := c.e.RelativeBand()
		if !ok || math.Abs(b-c.below) > 1e-9 && !(math.IsInf(b, 1) && math.IsInf(c.below, 1)) ||
			math.Abs(a-c.above) > 1e-9 && !(math.IsInf(a, 1) && math.IsInf(c.above, 1)) {
			t.Errorf("%s: band (%v, %v, %v), want (%v, %v)", c.name, b, a, ok, c.below, c.above)
		}
		if got := c.e.NeedsReason(); got != c.needsReason {
			t.Errorf("%s: NeedsReason %v, want %v", c.name, got, c.needsReason)
		}
	}
	if _, _, ok := (Expectation{Text: "XY"}).RelativeBand(); ok {
		t.Error("a text expectation has no band")
	}
	v := Score(Measurement{Value: 1}, Expectation{Value: 1, RelTol: 0.01, Budget: "counter quantisation 1%"})
	if v.Budget != "counter quantisation 1%" {
		t.Errorf("verdict budget %q", v.Budget)
	}
}
