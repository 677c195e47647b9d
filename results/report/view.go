package report

import (
	"math"
	"sort"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/results"
)

// View is a run seen by the report's sections: the data, the options, and
// the lookups the sections share (the expectation and verdict of a test
// case, the plans with their designs' descriptions, metrics' human names).
type View struct {
	Data *Data
	Opts Options

	exp     map[string]*Expected
	verdict map[string]results.Verdict
	reading map[string]bool // test cases with a numeric reading
	plans   []*planView
	metrics map[string]string // metric -> title, from every description
}

// planView is one plan of the run with what its section draws.
type planView struct {
	Name    string
	Designs []string
	Desc    *bitstreams.Report // the descriptions of its designs, merged; nil when none
	ms      []results.Measurement
	vs      []results.Verdict
	tests   map[string]bool // test|board pairs the plan recorded
}

func caseKey(test, board, metric string, ps results.Params) string {
	return test + "\x00" + board + "\x00" + results.Key(metric, ps)
}

func newView(d *Data, opts Options) *View {
	if opts.Catalogue == nil {
		opts.Catalogue = bitstreams.Default()
	}
	v := &View{Data: d, Opts: opts, exp: map[string]*Expected{}, verdict: map[string]results.Verdict{}, reading: map[string]bool{}, metrics: map[string]string{}}
	for i := range d.Expectations {
		e := &d.Expectations[i]
		v.exp[caseKey(e.Test, e.Board, e.Metric, e.Params)] = e
	}
	for _, vd := range d.Verdicts {
		v.verdict[caseKey(vd.Test, vd.Board, vd.Metric, vd.Params)] = vd
	}
	for _, m := range d.Measurements {
		if !math.IsNaN(m.Value) && !math.IsInf(m.Value, 0) {
			v.reading[caseKey(m.Test, m.Board, m.Metric, m.Params)] = true
		}
	}
	describe := func(r *bitstreams.Report) {
		if r == nil {
			return
		}
		for _, m := range r.Metrics {
			if _, ok := v.metrics[m.Name]; !ok {
				v.metrics[m.Name] = m.Title
			}
		}
	}
	for _, m := range opts.Catalogue.Designs() {
		describe(m.Report)
	}
	for _, name := range sortedKeys(opts.Procedures) {
		describe(opts.Procedures[name])
	}

	byName := map[string]*planView{}
	plan := func(name string) *planView {
		p := byName[name]
		if p == nil {
			p = &planView{Name: name, tests: map[string]bool{}}
			byName[name] = p
		}
		return p
	}
	for _, name := range d.Run.Plans {
		plan(name)
	}
	designs := map[string]map[string]int{}
	count := func(planName, design string) {
		if design == "" {
			return
		}
		if designs[planName] == nil {
			designs[planName] = map[string]int{}
		}
		designs[planName][design]++
	}
	fromBitstreams := map[string]bool{}
	for _, b := range d.Run.Bitstreams {
		if b.Plan != "" {
			count(b.Plan, b.Design)
			fromBitstreams[b.Plan] = true
		}
	}
	for _, m := range d.Measurements {
		p := plan(m.Plan)
		p.ms = append(p.ms, m)
		p.tests[m.Test+"\x00"+m.Board] = true
		if !fromBitstreams[m.Plan] {
			count(m.Plan, m.Design)
		}
	}
	for _, vd := range d.Verdicts {
		p := plan(vd.Plan)
		p.vs = append(p.vs, vd)
		p.tests[vd.Test+"\x00"+vd.Board] = true
	}
	for _, name := range sortedKeys(byName) {
		p := byName[name]
		if len(p.ms) == 0 && len(p.vs) == 0 && !contains(d.Run.Plans, name) {
			continue
		}
		if r, ok := opts.Procedures[name]; ok {
			p.Desc = r
		} else {
			p.Designs = sortedKeys(designs[name])
			var descs []*bitstreams.Report
			for _, dn := range p.Designs {
				if m, err := opts.Catalogue.Design(dn); err == nil && m.Report != nil {
					descs = append(descs, m.Report)
				}
			}
			p.Desc = merge(descs)
		}
		v.plans = append(v.plans, p)
	}
	return v
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// merge joins the descriptions of a plan's designs (usually one).
func merge(rs []*bitstreams.Report) *bitstreams.Report {
	switch len(rs) {
	case 0:
		return nil
	case 1:
		return rs[0]
	}
	out := &bitstreams.Report{}
	var titles []string
	for _, r := range rs {
		titles = append(titles, r.Title)
		out.Metrics = append(out.Metrics, r.Metrics...)
		out.Figures = append(out.Figures, r.Figures...)
	}
	sort.Strings(titles)
	for i, t := range titles {
		if i > 0 {
			out.Title += " + "
		}
		out.Title += t
	}
	return out
}

// MetricTitle returns a metric's human name from the descriptions, else
// the metric's own name.
func (v *View) MetricTitle(metric string) string {
	if t, ok := v.metrics[metric]; ok {
		return t
	}
	return metric
}

// expectation returns the expectation a test case was scored against, or
// nil.
func (v *View) expectation(test, board, metric string, ps results.Params) *results.Expectation {
	if e, ok := v.exp[caseKey(test, board, metric, ps)]; ok {
		return &e.Expectation
	}
	return nil
}

// failed tells whether the verdict on a reading failed.
func (v *View) failed(m results.Measurement) bool {
	vd, ok := v.verdict[caseKey(m.Test, m.Board, m.Metric, m.Params)]
	return ok && vd.Status == results.Fail
}
