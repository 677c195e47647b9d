package report

import (
	"math"
	"strings"
	"testing"

	"gonum.org/v1/plot"

	"github.com/labrunner/labrunner/results"
)

func TestCite(t *testing.T) {
	for in, want := range map[string]string{
		"ExaNet §4.3, Fig. 10: 90% of the 10 Gb/s cap at 512 B; §3.4 Magic/Start framing":    "ExaNet §4.3, Fig. 10",
		"FPGA'20 §5.1 (golden/prr reference simulation; 0-cycle processing latency), Fig. 7": "FPGA'20 §5.1, Fig. 7",
		"Aquila §3.3, §5.1 (reference simulation)":                                           "Aquila §3.3, §5.1",
		"Shoal §3.3.3, Eq. 5: len(Q_jk) ≤ 1 + incast(k) ≤ N":                                 "Shoal §3.3.3, Eq. 5",
		"": "",
	} {
		if got := cite(in); got != want {
			t.Errorf("cite(%q) = %q, want %q", in, got, want)
		}
	}
	long := strings.Repeat("word ", 30)
	if got := cite(long); len([]rune(got)) > 72 || !strings.HasSuffix(got, "…") {
		t.Errorf("cite of a long source = %q", got)
	}
}

// The human form of an expectation reads back as the numbers it was made
// of.
func TestParseDescribed(t *testing.T) {
	for _, e := range []results.Expectation{
		{Value: 9.01408, Unit: "Gb/s", RelTol: 0.0341},
		{Value: 1024, Unit: "words"},
		{Value: 6.03, Unit: "µs", AbsTol: 0.5376},
		{Min: results.Float(0.114), Max: results.Float(0.149), Unit: "fraction"},
		{Max: results.Float(8), Unit: "cells"},
		{Value: -3.5e-7, Unit: "s", RelTol: 0.1},
	} {
		got, ok := parseDescribed(e.Describe())
		if !ok {
			t.Errorf("%q does not read back", e.Describe())
			continue
		}
		lo, hi := e.Bounds()
		glo, ghi := got.Bounds()
		close := func(a, b float64) bool { return a == b || math.Abs(a-b) <= 1e-5*math.Max(math.Abs(a), math.Abs(b)) }
		if !close(lo, glo) || !close(hi, ghi) || got.Unit != e.Unit {
			t.Errorf("%q read back as [%g, %g] %s, want [%g, %g] %s", e.Describe(), glo, ghi, got.Unit, lo, hi, e.Unit)
		}
	}
	e, ok := parseDescribed("1024 words (all credit back once the link drained)")
	if !ok || e.Value != 1024 || e.Unit != "words" || e.Note != "(all credit back once the link drained)" {
		t.Errorf("with a note: %+v %v", e, ok)
	}
	for _, bad := range []string{"", "about nine", "(0,0,0)-vc1->(1,0,0)", "[1, 2", "[-inf, +inf] x"} {
		if _, ok := parseDescribed(bad); ok {
			t.Errorf("parseDescribed(%q) accepted", bad)
		}
	}
}

func FuzzParseDescribed(f *testing.F) {
	f.Add("9.01408 Gb/s ±3.41%")
	f.Add("[0.114, 0.149] fraction")
	f.Add("[-inf, 8] cells")
	f.Add("6.03 µs ±0.5376 (one epoch)")
	f.Fuzz(func(t *testing.T, s string) {
		e, ok := parseDescribed(s)
		if !ok {
			return
		}
		lo, hi := e.Bounds()
		if math.IsNaN(lo) || math.IsNaN(hi) || lo > hi {
			t.Fatalf("%q read as the band [%g, %g]", s, lo, hi)
		}
		bandText(e, e.Unit)
		offText(lo-1, e, e.Unit)
	})
}

// Tick labels that would run into each other are dropped: 152 and 153 on
// a log axis from 1 to 4096 keep one label.
func TestTickLabelsDoNotCollide(t *testing.T) {
	p := plot.New()
	p.X.Min, p.X.Max = 1/1.15, 4096*1.15
	p.X.Scale = plot.LogScale{}
	setNumericTicks(&p.X, []float64{1, 64, 152, 153, 1500, 4096}, true)
	var labels []string
	for _, tk := range p.X.Tick.Marker.Ticks(p.X.Min, p.X.Max) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	if got := strings.Join(labels, " "); got != "1 64 152 1500 4096" {
		t.Errorf("labels %q, want 1 64 152 1500 4096", got)
	}
	if got := formatTick(20000); got != "20000" {
		t.Errorf("formatTick(20000) = %q", got)
	}
}

func TestBandAndOff(t *testing.T) {
	e := results.Expectation{Value: 1.6, RelTol: 0.1, Unit: "Gb/s"}
	if got := bandText(e, "Gb/s"); got != "±10%" {
		t.Errorf("band %q", got)
	}
	if got := offText(0.816, e, "Gb/s"); got != "-49.0%" {
		t.Errorf("off %q", got)
	}
	if got := offText(1.7, e, "Gb/s"); got != "" {
		t.Errorf("off inside the band = %q", got)
	}
	b := results.Expectation{Min: results.Float(0), Max: results.Float(8)}
	if meaningfulValue(b) || bandText(b, "cells") != "[0, 8] cells" {
		t.Errorf("bounded: meaningful %v, band %q", meaningfulValue(b), bandText(b, "cells"))
	}
	if got := offText(10, b, "cells"); got != "+25.0%" {
		t.Errorf("off a bound = %q, want +25.0%% of the bound 8", got)
	}
	z := results.Expectation{Value: 0, Unit: "errors"}
	if got := bandText(z, "errors"); got != "exact" {
		t.Errorf("exact band = %q", got)
	}
	if got := offText(3, z, "errors"); got != "+3 errors" {
		t.Errorf("off zero = %q", got)
	}
}
