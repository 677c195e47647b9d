package bitstreams

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/labrunner/labrunner/internal/strictyaml"
)

// Report is a design's report: block: the metrics its tests record, named
// for people, and the figures a run's report draws for it. The report
// (results/report) draws whatever the run's designs describe here, so a new
// design gets its plots by describing them, not by code in results.
//
//	report:
//	  title: ExaNet 2x2 mesh
//	  metrics:
//	    - {name: exanet.bandwidth, title: Bandwidth, unit: Gb/s}
//	  figures:
//	    - {title: Bandwidth vs payload, metric: exanet.bandwidth, x: payload, series: path, golden: exanet.bandwidth}
type Report struct {
	// Title heads the design's section ("ExaNet 2x2 mesh"); the design's
	// name when empty.
	Title string `yaml:"title,omitempty" json:"title,omitempty"`
	// Metrics are the design's metrics a report names: figures and golden
	// overlays may only name these, so that a typo is caught when the
	// catalogue loads.
	Metrics []ReportMetric `yaml:"metrics" json:"metrics"`
	// Figures are drawn in this order.
	Figures []ReportFigure `yaml:"figures,omitempty" json:"figures,omitempty"`
	// Source and Line say where the block was read, for messages.
	Source string `yaml:"-" json:"-"`
	Line   int    `yaml:"-" json:"-"`
}

// ReportMetric names one metric for people.
type ReportMetric struct {
	Name  string `yaml:"name" json:"name"`   // as measurements carry it: exanet.bandwidth
	Title string `yaml:"title" json:"title"` // as a person reads it: Bandwidth
	// Unit the metric is recorded in, for axis labels when a run has no
	// reading to take it from.
	Unit string `yaml:"unit,omitempty" json:"unit,omitempty"`
	Line int    `yaml:"-" json:"-"`
}

// Figure kinds.
const (
	// FigureCurve: readings against a numeric parameter, one line per
	// series, the golden curve and its band underneath.
	FigureCurve = "curve"
	// FigureCategories: readings per value of a parameter that is not a
	// number (traffic pattern, board), the golden value and its band as a
	// bar per category.
	FigureCategories = "categories"
	// FigureCDF: the distribution of the samples readings carry, one line
	// per series, the golden statistics (mean, percentiles) over it.
	FigureCDF = "cdf"
)

// FigureKinds are the kinds a figure may have.
var FigureKinds = []string{FigureCurve, FigureCategories, FigureCDF}

// ReportFigure describes one figure.
type ReportFigure struct {
	Title string `yaml:"title" json:"title"`
	// Kind is curve (the default), categories or cdf.
	Kind   string `yaml:"kind,omitempty" json:"kind,omitempty"`
	Metric string `yaml:"metric" json:"metric"`
	// Where keeps the readings (and expectations) whose parameters have
	// these values, e.g. {stat: mean}.
	Where map[string]string `yaml:"where,omitempty" json:"where,omitempty"`
	// X is the parameter on the x axis (curve, categories); a cdf has the
	// metric itself there.
	X      string `yaml:"x,omitempty" json:"x,omitempty"`
	XLabel string `yaml:"x_label,omitempty" json:"x_label,omitempty"`
	// XScale is auto (log when the values span a factor of 8), linear or
	// log.
	XScale string `yaml:"x_scale,omitempty" json:"x_scale,omitempty"`
	// Series splits the readings into lines (one colour each); Facet into
	// one plot per value.
	Series string `yaml:"series,omitempty" json:"series,omitempty"`
	Facet  string `yaml:"facet,omitempty" json:"facet,omitempty"`
	// Golden names the metric whose golden expectations are drawn under
	// the readings, matched on the x, series and facet parameters (usually
	// the figure's own metric); empty for a figure without one.
	Golden string `yaml:"golden,omitempty" json:"golden,omitempty"`
	// GoldenStat (cdf) is the expectations' parameter saying which
	// statistic of the distribution they bound (mean, p50, p99); without
	// it the expectations bound the readings' values, which the
	// distribution's mean is.
	GoldenStat string `yaml:"golden_stat,omitempty" json:"golden_stat,omitempty"`
	// Caption is printed under the figure, e.g. "the paper's Fig. 9".
	Caption string `yaml:"caption,omitempty" json:"caption,omitempty"`
	Line    int    `yaml:"-" json:"-"`
}

// KindOrDefault returns the figure's kind, curve when none is given.
func (f *ReportFigure) KindOrDefault() string {
	if f.Kind == "" {
		return FigureCurve
	}
	return f.Kind
}

// MetricTitle returns the human name of a metric, "" when the block does
// not name it.
func (r *Report) MetricTitle(name string) string {
	if m := r.metric(name); m != nil {
		return m.Title
	}
	return ""
}

// MetricUnit returns the unit the block gives a metric, "" when none.
func (r *Report) MetricUnit(name string) string {
	if m := r.metric(name); m != nil {
		return m.Unit
	}
	return ""
}

func (r *Report) metric(name string) *ReportMetric {
	if r == nil {
		return nil
	}
	for i := range r.Metrics {
		if r.Metrics[i].Name == name {
			return &r.Metrics[i]
		}
	}
	return nil
}

var (
	metricNameRE = regexp.MustCompile(`^[a-z][a-z0-9_]*(\.[a-z0-9_]+)+$`)
	paramNameRE  = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	xScales      = []string{"", "auto", "linear", "log"}
)

// ParseReport reads a report description that stands alone (a procedure
// such as the bring-up describes its figures this way: it is not a
// catalogue design). The document is the block itself, without report:.
// Every problem is reported as *Errors naming name:line.
func ParseReport(name string, data []byte) (*Report, error) {
	root, prob := strictyaml.Root(data, "report description")
	if prob != nil {
		return nil, &Errors{List: []Problem{{File: name, Line: prob.Line, Field: prob.Field, Msg: prob.Msg, Fix: prob.Fix}}}
	}
	d := strictyaml.NewDecoder(name)
	r := &Report{}
	d.Decode(root, "", r)
	v := &mcheck{file: name, lines: d.Lines}
	for _, p := range d.Problems {
		v.add(p.Line, p.Field, p.Msg, p.Fix)
	}
	r.Source = name
	v.report("", r)
	if len(v.list) > 0 {
		sort.SliceStable(v.list, func(i, j int) bool { return v.list[i].Line < v.list[j].Line })
		return nil, &Errors{List: v.list}
	}
	return r, nil
}

// report validates a report block found under path ("report" in a
// manifest, "" for a document of its own).
func (v *mcheck) report(path string, r *Report) {
	if r == nil {
		return
	}
	r.Source = v.file
	at := func(p string, line int, msg, fix string) { v.at(strictyaml.Join(path, p), line, msg, fix) }
	names := map[string]int{}
	var declared []string
	for i := range r.Metrics {
		m := &r.Metrics[i]
		p := fmt.Sprintf("metrics[%d]", i)
		switch {
		case m.Name == "":
			at(p+".name", m.Line, "metric has no name", "write name: design.metric, as the tests record it")
		case !metricNameRE.MatchString(m.Name):
			at(p+".name", m.Line, fmt.Sprintf("metric name %q is not lower-case words joined by dots", m.Name), "write it as the tests record it, e.g. exanet.bandwidth")
		default:
			if prev, dup := names[m.Name]; dup {
				at(p+".name", m.Line, fmt.Sprintf("metric %s is named twice (first on line %d)", m.Name, prev), "keep one of them")
			} else {
				names[m.Name] = m.Line
				declared = append(declared, m.Name)
			}
		}
		if strings.TrimSpace(m.Title) == "" {
			at(p+".title", m.Line, fmt.Sprintf("metric %s has no title", m.Name), "add title: what a person calls it, e.g. Bandwidth")
		}
	}
	known := func(p string, line int, what, name string) {
		if _, ok := names[name]; ok {
			return
		}
		fix := "name it under report.metrics first (name, title, unit)"
		if near := strictyaml.Nearest(name, declared); near != "" {
			fix = "did you mean " + near + "?"
		}
		at(p, line, fmt.Sprintf("%s %q is not one of the metrics this block names (%s)", what, name, strings.Join(declared, ", ")), fix)
	}
	param := func(p string, line int, what, name string) {
		if name != "" && !paramNameRE.MatchString(name) {
			at(p, line, fmt.Sprintf("%s %q is not a parameter name (lower-case letters, digits, '_')", what, name), "write the parameter as the measurements carry it, e.g. payload")
		}
	}
	titles := map[string]int{}
	for i := range r.Figures {
		f := &r.Figures[i]
		p := fmt.Sprintf("figures[%d]", i)
		if strings.TrimSpace(f.Title) == "" {
			at(p+".title", f.Line, "figure has no title", "add title: what the figure shows, e.g. Bandwidth vs payload")
		} else if prev, dup := titles[f.Title]; dup {
			at(p+".title", f.Line, fmt.Sprintf("two figures are titled %q (first on line %d)", f.Title, prev), "give each figure its own title")
		} else {
			titles[f.Title] = f.Line
		}
		if f.Metric == "" {
			at(p+".metric", f.Line, "figure names no metric", "add metric: one of report.metrics")
		} else {
			known(p+".metric", f.Line, "metric", f.Metric)
		}
		if f.Golden != "" {
			known(p+".golden", f.Line, "golden metric", f.Golden)
		}
		kind := f.KindOrDefault()
		if !contains(FigureKinds, kind) {
			at(p+".kind", f.Line, fmt.Sprintf("figure kind %q is not one of %s", f.Kind, strings.Join(FigureKinds, ", ")), "")
		}
		switch {
		case kind == FigureCDF && f.X != "":
			at(p+".x", f.Line, "a cdf has the metric's samples on its x axis, not a parameter", "remove x; split lines with series, plots with facet")
		case kind != FigureCDF && f.X == "":
			at(p+".x", f.Line, "figure has no x parameter", "add x: the parameter on the x axis, e.g. payload")
		}
		if f.GoldenStat != "" && kind != FigureCDF {
			at(p+".golden_stat", f.Line, "golden_stat is for cdf figures", "remove it")
		}
		if f.GoldenStat != "" && f.Golden == "" {
			at(p+".golden_stat", f.Line, "golden_stat without golden", "add golden: the metric whose expectations overlay the distribution")
		}
		if !contains(xScales, f.XScale) {
			at(p+".x_scale", f.Line, fmt.Sprintf("x_scale %q is not auto, linear or log", f.XScale), "")
		}
		if f.XScale != "" && kind == FigureCategories {
			at(p+".x_scale", f.Line, "a categories figure has no x scale", "remove x_scale")
		}
		param(p+".x", f.Line, "x", f.X)
		param(p+".series", f.Line, "series", f.Series)
		param(p+".facet", f.Line, "facet", f.Facet)
		param(p+".golden_stat", f.Line, "golden_stat", f.GoldenStat)
		used := map[string]string{}
		for _, u := range [][2]string{{"x", f.X}, {"series", f.Series}, {"facet", f.Facet}} {
			if u[1] == "" {
				continue
			}
			if other, dup := used[u[1]]; dup {
				at(p+"."+u[0], f.Line, fmt.Sprintf("parameter %s is both %s and %s", u[1], other, u[0]), "give each role its own parameter")
			}
			used[u[1]] = u[0]
		}
		for k := range f.Where {
			param(p+".where."+k, f.Line, "where key", k)
			if role, ok := used[k]; ok {
				at(p+".where."+k, f.Line, fmt.Sprintf("parameter %s is fixed by where and is also the %s", k, role), "fix it in where or draw it, not both")
			}
		}
	}
}
