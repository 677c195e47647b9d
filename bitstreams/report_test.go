package bitstreams

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// Every design that runs tests describes its report; every figure names a
// metric the block names, and the embedded catalogue parses.
func TestCatalogueReports(t *testing.T) {
	for _, name := range []string{"exanet", "shoal", "tin", "prr"} {
		m, err := Default().Design(name)
		if err != nil {
			t.Fatal(err)
		}
		r := m.Report
		if r == nil || r.Title == "" || len(r.Figures) == 0 {
			t.Fatalf("%s describes no report figures: %+v", name, r)
		}
		for _, f := range r.Figures {
			if r.MetricTitle(f.Metric) == "" || f.Line < 1 {
				t.Errorf("%s figure %q: metric %s unnamed or no line", name, f.Title, f.Metric)
			}
		}
		if r.Source != m.Source {
			t.Errorf("%s report source %q, want %q", name, r.Source, m.Source)
		}
	}
	ex, _ := Default().Design("exanet")
	if got := ex.Report.MetricTitle("exanet.bandwidth"); got != "Bandwidth" {
		t.Errorf("MetricTitle = %q", got)
	}
	if got := ex.Report.MetricUnit("exanet.rtt"); got != "us" {
		t.Errorf("MetricUnit = %q", got)
	}
	if got := ex.Report.MetricTitle("nope.nope"); got != "" {
		t.Errorf("MetricTitle of an unknown metric = %q", got)
	}
}

// A typo in a figure's metric is an error naming the manifest's file and
// the line of the metric key, with the nearest name as the fix; the other
// mistakes a block can hold are refused the same way.
func TestReportBlockErrors(t *testing.T) {
	base, err := os.ReadFile("catalogue/exanet.yaml")
	if err != nil {
		t.Fatal(err)
	}
	src := string(base)
	lineOf := func(s, sub string) int {
		i := strings.Index(s, sub)
		if i < 0 {
			t.Fatalf("no %q in the manifest", sub)
		}
		return strings.Count(s[:i], "\n") + 1
	}
	cases := []struct {
		from, to string // replace the first occurrence
		at       string // the line holding this text (after the change) is named
		want     string
	}{
		{"      metric: exanet.bandwidth\n", "      metric: exanet.bandwith\n", "metric: exanet.bandwith",
			`report.figures[0].metric: metric "exanet.bandwith" is not one of the metrics this block names`},
		{"      golden: exanet.rtt\n", "      golden: exanet.rt\n", "golden: exanet.rt\n", `golden metric "exanet.rt"`},
		{"    - {name: exanet.rtt, title: Round-trip latency, unit: us}", "    - {name: exanet.rtt, title: \"\", unit: us}", "name: exanet.rtt, title:", "metric exanet.rtt has no title"},
		{"    - {name: exanet.link.up, title: Link up}", "    - {name: Exanet.Link, title: Link up}", "name: Exanet.Link", "is not lower-case words joined by dots"},
		{"    - {name: exanet.link.up, title: Link up}", "    - {name: exanet.rtt, title: Link up}", "name: exanet.rtt, title: Link up", "metric exanet.rtt is named twice"},
		{"      x: payload\n      x_label: payload (bytes)\n      series: path\n", "      x_label: payload (bytes)\n      series: path\n", "- title: Bandwidth vs payload", "figure has no x parameter"},
		{"      series: hops\n", "      series: payload\n", "series: payload\n      golden: exanet.rtt\n", "parameter payload is both x and series"},
		{"      kind: cdf\n", "      kind: histogram\n", "kind: histogram", `figure kind "histogram" is not one of curve, categories, cdf`},
		{"      kind: cdf\n", "      kind: cdf\n      x: payload\n", "x: payload\n      metric: exanet.rtt\n      series", "a cdf has the metric's samples on its x axis"},
		{"  figures:\n    - title: Bandwidth vs payload\n", "  figures:\n    - title: Bandwidth vs payload\n      colour: red\n", "colour: red", `unknown key "colour"`},
		{"    - title: Round-trip latency added per hop\n", "    - title: Bandwidth vs payload\n", "- title: Bandwidth vs payload\n      metric: exanet.rtt.per_hop", `two figures are titled "Bandwidth vs payload"`},
		{"      series: path\n", "      series: path\n      x_scale: cubic\n", "x_scale: cubic", `x_scale "cubic" is not auto, linear or log`},
		{"      series: path\n", "      series: path\n      where: {path: link}\n", "where: {path: link}", "parameter path is fixed by where and is also the series"},
		{"      series: path\n", "      series: path\n      golden_stat: stat\n", "golden_stat: stat", "golden_stat is for cdf figures"},
	}
	for _, c := range cases {
		if !strings.Contains(src, c.from) {
			t.Fatalf("the manifest has no %q to change", c.from)
		}
		bad := strings.Replace(src, c.from, c.to, 1)
		_, err := ParseManifest("exanet.yaml", []byte(bad))
		var errs *Errors
		if !errors.As(err, &errs) {
			t.Errorf("%s: err = %v, want *Errors", c.want, err)
			continue
		}
		want := lineOf(bad, c.at)
		found := false
		for _, p := range errs.List {
			if strings.Contains(p.String(), c.want) {
				found = true
				if p.File != "exanet.yaml" || p.Line != want {
					t.Errorf("%q reported at %s:%d, want exanet.yaml:%d", c.want, p.File, p.Line, want)
				}
			}
		}
		if !found {
			t.Errorf("changing %q: errors\n%v\nlack %q", c.from, err, c.want)
		}
	}
	// The typo's fix names the metric meant.
	_, err = ParseManifest("exanet.yaml", []byte(strings.Replace(src, "      metric: exanet.bandwidth\n", "      metric: exanet.bandwith\n", 1)))
	if err == nil || !strings.Contains(err.Error(), "did you mean exanet.bandwidth?") {
		t.Errorf("typo error lacks the fix: %v", err)
	}
}

func TestParseReport(t *testing.T) {
	doc := "title: Bring-up\nmetrics:\n  - {name: bringup.timesync.offset_ns, title: Clock offset, unit: ns}\nfigures:\n" +
		"  - {title: Offsets, kind: categories, metric: bringup.timesync.offset_ns, x: board, series: rack, golden: bringup.timesync.offset_ns}\n"
	r, err := ParseReport("bringup.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if r.Title != "Bring-up" || len(r.Figures) != 1 || r.Figures[0].KindOrDefault() != FigureCategories || r.Source != "bringup.yaml" {
		t.Errorf("report = %+v", r)
	}
	_, err = ParseReport("bringup.yaml", []byte(strings.Replace(doc, "metric: bringup.timesync.offset_ns", "metric: bringup.timesync.ofset_ns", 1)))
	if err == nil || !strings.HasPrefix(err.Error(), "bringup.yaml:5: figures[0].metric:") {
		t.Errorf("typo: %v, want bringup.yaml:5: figures[0].metric", err)
	}
	if _, err := ParseReport("x.yaml", []byte("")); err == nil || !strings.Contains(err.Error(), "x.yaml:1") {
		t.Errorf("empty document: %v", err)
	}
}

// FuzzParseReport: a report description never panics the parser, and every
// problem has a position.
func FuzzParseReport(f *testing.F) {
	f.Add([]byte("title: t\nmetrics: [{name: a.b, title: B}]\nfigures: [{title: F, metric: a.b, x: p}]\n"))
	f.Add([]byte("figures: [{title: F, kind: cdf, metric: a.b, x: p, golden_stat: s}]\n"))
	f.Add([]byte("metrics: [{name: a.b}, {name: a.b}]\nfigures: [{where: {x: 1}}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := ParseReport("r.yaml", data)
		if err != nil {
			var errs *Errors
			if !errors.As(err, &errs) || len(errs.List) == 0 {
				t.Fatalf("error %T %v", err, err)
			}
			for _, p := range errs.List {
				if p.Line < 1 || p.File != "r.yaml" || p.Msg == "" {
					t.Fatalf("problem without position: %+v", p)
				}
			}
			return
		}
		for _, fig := range r.Figures {
			if r.MetricTitle(fig.Metric) == "" {
				t.Fatalf("accepted figure %q with unnamed metric %q", fig.Title, fig.Metric)
			}
		}
	})
}
