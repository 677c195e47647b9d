package report

import (
	"encoding/base64"
	"fmt"
	"html/template"
	"io"
	"math"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/labrunner/labrunner/results"
	"github.com/labrunner/labrunner/results/compare"
)

// Section is one part of the page: a heading, listed in the contents, and
// the HTML under it.
type Section struct {
	ID    string // the anchor: lower-case letters, digits and '-'
	Title string
	Body  template.HTML
}

// SectionFunc renders sections of the report from a run; none when it has
// nothing to show. Bodies are rendered with html/template (ExecuteSection)
// so that everything the run holds is escaped.
type SectionFunc func(*View) ([]Section, error)

// sections are the page's parts in order; Options.Sections go after the
// plans'.
func (v *View) sections() []SectionFunc {
	out := []SectionFunc{compareSection, failuresSection, planSections}
	out = append(out, v.Opts.Sections...)
	return append(out, passedSection, bitstreamsSection)
}

// ExecuteSection renders a section body from one of t's templates.
func ExecuteSection(t *template.Template, name string, data any) (template.HTML, error) {
	var b strings.Builder
	if err := t.ExecuteTemplate(&b, name, data); err != nil {
		return "", err
	}
	return template.HTML(b.String()), nil
}

var anchorRE = regexp.MustCompile(`[^a-z0-9]+`)

// Anchor makes a section ID out of a name ("exanet-mesh" -> "plan-exanet-mesh").
func Anchor(prefix, name string) string {
	return prefix + "-" + strings.Trim(anchorRE.ReplaceAllString(strings.ToLower(name), "-"), "-")
}

type page struct {
	Run       results.Run
	Title     string
	Duration  string
	Summary   results.Summary
	Notes     []string
	Sections  []Section
	Generated string
}

// Render writes the report of d to w.
func Render(w io.Writer, d *Data, opts Options) error {
	v := newView(d, opts)
	pg := page{Run: d.Run, Summary: results.Summarize(d.Verdicts), Notes: opts.Notes,
		Generated: time.Now().UTC().Format(time.RFC3339), Title: fmt.Sprintf("labrunner run %s", d.Run.ID)}
	if w, ok := d.Run.Worked(); ok {
		pg.Duration = w.Round(time.Millisecond).String()
		if n := len(d.Run.Sessions); n > 1 {
			pg.Duration += fmt.Sprintf(" of work in %d sessions (resumed after a crash or a finish)", n)
		}
	}
	for _, f := range v.sections() {
		ss, err := f(v)
		if err != nil {
			return err
		}
		pg.Sections = append(pg.Sections, ss...)
	}
	return tmpl.ExecuteTemplate(w, "page", pg)
}

// --- since the previous run -------------------------------------------------------------------------

type moved struct {
	Plan, Board, Name, Metric, A, B, Rel, Threshold, Better string
}

type compareBody struct {
	C         *compare.Result
	Baselines []string
	Moved     []moved
}

func compareSection(v *View) ([]Section, error) {
	c := v.Data.Compare
	if c == nil {
		return nil, nil
	}
	b := compareBody{C: c}
	for _, plan := range sortedKeys(c.Baselines) {
		b.Baselines = append(b.Baselines, fmt.Sprintf("%s: %s", plan, c.Baselines[plan].ID))
	}
	for _, m := range c.Moved {
		b.Moved = append(b.Moved, moved{Plan: m.Plan, Board: m.Board, Name: results.Verdict{Test: m.Test, Params: m.Params}.Name(),
			Metric: v.MetricTitle(m.Metric), A: num(m.A, m.Unit), B: num(m.B, m.Unit), Rel: compare.FormatRel(m.Rel),
			Threshold: fmt.Sprintf("±%g%%", m.Threshold*100), Better: m.Better})
	}
	body, err := ExecuteSection(tmpl, "compare", b)
	return []Section{{ID: "compare", Title: "Since the previous run", Body: body}}, err
}

// --- verdicts ---------------------------------------------------------------------------------------

type verdictGroup struct {
	Plan, Title, ID string
	Summary         results.Summary
	Rows            []vrow
}

func (v *View) planTitle(p *planView) string {
	if p.Desc != nil && p.Desc.Title != "" {
		return p.Name + ": " + p.Desc.Title
	}
	return p.Name
}

// groups returns the verdicts of each plan that pass keep, as table rows.
func (v *View) groups(keep func(results.Verdict) bool, prefix string) (out []verdictGroup, total int) {
	for _, p := range v.plans {
		g := verdictGroup{Plan: p.Name, Title: v.planTitle(p), ID: Anchor(prefix, p.Name)}
		var kept []results.Verdict
		for _, vd := range p.vs {
			if keep(vd) {
				kept = append(kept, vd)
			}
		}
		if len(kept) == 0 {
			continue
		}
		g.Summary = results.Summarize(kept)
		for _, vd := range results.SortVerdicts(kept) {
			g.Rows = append(g.Rows, v.row(vd))
		}
		total += len(kept)
		out = append(out, g)
	}
	return out, total
}

func failuresSection(v *View) ([]Section, error) {
	gs, n := v.groups(func(vd results.Verdict) bool { return vd.Status != results.Pass }, "failures")
	body, err := ExecuteSection(tmpl, "failures", gs)
	return []Section{{ID: "failures", Title: fmt.Sprintf("Not passed (%d)", n), Body: body}}, err
}

func passedSection(v *View) ([]Section, error) {
	gs, n := v.groups(func(vd results.Verdict) bool { return vd.Status == results.Pass }, "passed")
	if n == 0 {
		return nil, nil
	}
	body, err := ExecuteSection(tmpl, "passed", struct {
		N      int
		Groups []verdictGroup
	}{n, gs})
	return []Section{{ID: "passed", Title: fmt.Sprintf("Passed (%d)", n), Body: body}}, err
}

func bitstreamsSection(v *View) ([]Section, error) {
	if len(v.Data.Run.Bitstreams) == 0 {
		return nil, nil
	}
	bs := append([]results.BitstreamInfo(nil), v.Data.Run.Bitstreams...)
	sort.SliceStable(bs, func(i, j int) bool { return bs[i].Board < bs[j].Board })
	body, err := ExecuteSection(tmpl, "bitstreams", bs)
	return []Section{{ID: "bitstreams", Title: "Bitstreams", Body: body}}, err
}

// --- one section per plan ---------------------------------------------------------------------------

type figView struct {
	Title, Caption string
	Src            template.URL
}

// readingRow is one metric in a plan's table of readings: a counter that
// stayed at zero, a value that never moved, anything the design does not
// plot.
type readingRow struct {
	Title, Metric, Unit string
	Readings            int
	Values              string
	Verdicts            string
	Bad                 bool
	Zero                bool
}

type planBody struct {
	Name, Designs string
	Summary       results.Summary
	FailuresID    string
	Figures       []figView
	Missing       []string
	Flat          []string
	NoDesc        bool
	Readings      []readingRow
	Zero          int
}

func planSections(v *View) ([]Section, error) {
	var out []Section
	for _, p := range v.plans {
		b := planBody{Name: p.Name, Designs: strings.Join(p.Designs, ", "), Summary: results.Summarize(p.vs), NoDesc: p.Desc == nil}
		if b.Summary.Total > b.Summary.Pass {
			b.FailuresID = Anchor("failures", p.Name)
		}
		pf, err := v.figures(p)
		if err != nil {
			return nil, err
		}
		for _, f := range pf.figs {
			b.Figures = append(b.Figures, figView{Title: f.Title, Caption: f.Caption,
				Src: template.URL("data:image/svg+xml;base64," + base64.StdEncoding.EncodeToString(f.SVG))})
		}
		for _, fl := range pf.flat {
			b.Flat = append(b.Flat, fmt.Sprintf("%s: every one of %d readings is %s", fl.Title, fl.Readings, num(fl.Value, fl.Unit)))
		}
		b.Missing = pf.missing
		b.Readings = v.readings(p, pf.drawn)
		for _, r := range b.Readings {
			if r.Zero {
				b.Zero++
			}
		}
		body, err := ExecuteSection(tmpl, "plan", b)
		if err != nil {
			return nil, err
		}
		out = append(out, Section{ID: Anchor("plan", p.Name), Title: v.planTitle(p), Body: body})
	}
	return out, nil
}

// planFigures is what a plan's description draws in a run.
type planFigures struct {
	figs    []*Figure
	flat    []flatFigure    // described, but every reading the same
	missing []string        // described, no reading in this run
	drawn   map[string]bool // metrics drawn in a figure
}

// figures draws the figures a plan's designs describe.
func (v *View) figures(p *planView) (planFigures, error) {
	out := planFigures{drawn: map[string]bool{}}
	if p.Desc == nil {
		return out, nil
	}
	for _, spec := range p.Desc.Figures {
		var exps []Expected
		for _, e := range v.Data.Expectations {
			if e.Metric == spec.Golden && p.tests[e.Test+"\x00"+e.Board] {
				exps = append(exps, e)
			}
		}
		in := figureInput{spec: spec, metric: v.MetricTitle(spec.Metric), ms: p.ms, exps: exps, failed: v.failed}
		for _, vd := range p.vs {
			if vd.Metric == spec.Metric && !v.reading[caseKey(vd.Test, vd.Board, vd.Metric, vd.Params)] && matches(vd.Params, spec.Where, "") {
				in.noReading++
			}
		}
		figs, flats, err := drawFigures(in)
		if err != nil {
			return out, fmt.Errorf("plan %s: %w", p.Name, err)
		}
		out.figs = append(out.figs, figs...)
		out.flat = append(out.flat, flats...)
		if len(figs) > 0 {
			out.drawn[spec.Metric] = true
		}
		if len(figs) == 0 && len(flats) == 0 && !contains(out.missing, spec.Title) {
			out.missing = append(out.missing, spec.Title)
		}
	}
	return out, nil
}

// readings summarises, one line per metric and unit, every reading of the
// plan that no figure drew.
func (v *View) readings(p *planView, drawn map[string]bool) []readingRow {
	type agg struct {
		metric, unit string
		vals         []float64
		text         int
		pass, bad    int
	}
	groups := map[string]*agg{}
	for _, m := range p.ms {
		if drawn[m.Metric] {
			continue
		}
		k := m.Metric + "\x00" + m.Unit
		g := groups[k]
		if g == nil {
			g = &agg{metric: m.Metric, unit: m.Unit}
			groups[k] = g
		}
		e := v.expectation(m.Test, m.Board, m.Metric, m.Params)
		switch {
		case e != nil && e.Text != "":
			g.text++
		case !math.IsNaN(m.Value) && !math.IsInf(m.Value, 0):
			g.vals = append(g.vals, m.Value)
		}
		if vd, ok := v.verdict[caseKey(m.Test, m.Board, m.Metric, m.Params)]; ok {
			if vd.Status == results.Pass {
				g.pass++
			} else {
				g.bad++
			}
		}
	}
	var out []readingRow
	for _, k := range sortedKeys(groups) {
		g := groups[k]
		r := readingRow{Title: v.MetricTitle(g.metric), Metric: g.metric, Unit: g.unit, Readings: len(g.vals) + g.text, Bad: g.bad > 0}
		switch {
		case len(g.vals) == 0:
			r.Values = fmt.Sprintf("%d text readings", g.text)
		default:
			lo, hi, _ := span(g.vals...)
			switch {
			case lo == hi && lo == 0:
				r.Values, r.Zero = "all 0", true
			case lo == hi:
				r.Values = "all " + num(lo, g.unit)
			default:
				r.Values = fmt.Sprintf("%s to %s (median %s)", num(lo, ""), num(hi, g.unit), num(median(g.vals), g.unit))
			}
			if g.text > 0 {
				r.Values += fmt.Sprintf("; %d text readings", g.text)
			}
		}
		switch {
		case g.bad > 0 && g.pass > 0:
			r.Verdicts = fmt.Sprintf("%d not passed, %d passed", g.bad, g.pass)
		case g.bad > 0:
			r.Verdicts = fmt.Sprintf("%d not passed", g.bad)
		case g.pass > 0:
			r.Verdicts = fmt.Sprintf("%d passed", g.pass)
		default:
			r.Verdicts = "not judged"
		}
		out = append(out, r)
	}
	// Readings whose verdicts did not pass first, then by name.
	sort.SliceStable(out, func(i, j int) bool { return out[i].Bad && !out[j].Bad })
	return out
}

// --- the page ---------------------------------------------------------------------------------------

func statusClass(s string) string { return "st-" + s }

// rowsOf hands the verdict table its rows, with or without the message
// column (passed verdicts have no message).
func rowsOf(rows []vrow, msg bool) any {
	return struct {
		Rows []vrow
		Msg  bool
	}{rows, msg}
}

func join(xs []string) string {
	s := append([]string(nil), xs...)
	sort.Strings(s)
	return strings.Join(s, ", ")
}

var tmpl = template.Must(template.New("report").Funcs(template.FuncMap{
	"statusClass": statusClass, "join": join, "upper": strings.ToUpper, "rows": rowsOf,
	"time": func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") },
}).Parse(pageTemplate))
