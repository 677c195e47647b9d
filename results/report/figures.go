package report

import (
	"fmt"
	"image/color"
	"math"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/results"
)

// Figure is one rendered plot.
type Figure struct {
	Title   string
	Caption string
	SVG     []byte
	// Series summarises what was drawn (the page's tests check that no
	// figure is flat).
	Series []SeriesSummary
	// NoReading counts the test cases of the figure's metric that ended
	// without a reading (an error, a stalled generator).
	NoReading int
}

// SeriesSummary is one series of a figure.
type SeriesSummary struct {
	Name     string
	Readings int
	Min, Max float64
	Golden   int // x values (or categories, statistics) with a golden band
}

// flatFigure is a described figure whose readings are all the same value:
// a line of the readings table says it better than a plot.
type flatFigure struct {
	Title, Metric, Unit string
	Value               float64
	Readings            int
}

// point is one reading placed on a figure.
type point struct {
	x      float64
	cat    string
	y      float64
	failed bool
}

// gold is the golden expectations at one x (or category, or statistic),
// pooled over the boards and parameters the figure does not draw.
type gold struct {
	x        float64
	cat      string
	vals     []float64
	lo, hi   float64
	n        int
	sources  map[string]bool
	budgets  map[string]bool
	statName string
}

func (g *gold) add(e results.Expectation) {
	lo, hi := e.Bounds()
	if g.n == 0 {
		g.lo, g.hi = lo, hi
	} else {
		g.lo, g.hi = math.Min(g.lo, lo), math.Max(g.hi, hi)
	}
	g.n++
	// A bounded expectation's Value is its reference only when it lies
	// inside the bounds (the golden models put the middle there, for
	// plots); a toleranced one is always centred on it.
	if meaningfulValue(e) {
		g.vals = append(g.vals, e.Value)
	}
	if g.sources == nil {
		g.sources, g.budgets = map[string]bool{}, map[string]bool{}
	}
	if e.Source != "" {
		g.sources[e.Source] = true
	}
	if e.Budget != "" {
		g.budgets[e.Budget] = true
	}
}

// figureInput is what one described figure is drawn from.
type figureInput struct {
	spec   bitstreams.ReportFigure
	metric string // the metric's human name
	ms     []results.Measurement
	exps   []Expected
	// failed tells whether the verdict on a reading failed.
	failed func(results.Measurement) bool
	// noReading counts the figure's test cases without a reading.
	noReading int
}

func matches(ps results.Params, where map[string]string, except string) bool {
	for k, v := range where {
		if k == except {
			continue
		}
		if ps[k] != v {
			return false
		}
	}
	return true
}

// naturalSort sorts values as numbers when they all are, else as text.
func naturalSort(vs []string) {
	nums := true
	for _, v := range vs {
		if _, err := strconv.ParseFloat(v, 64); err != nil {
			nums = false
			break
		}
	}
	sort.SliceStable(vs, func(i, j int) bool {
		if nums {
			a, _ := strconv.ParseFloat(vs[i], 64)
			b, _ := strconv.ParseFloat(vs[j], 64)
			return a < b
		}
		return vs[i] < vs[j]
	})
}

func distinct(vs []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, v := range vs {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	naturalSort(out)
	return out
}

func label(param, value string) string {
	if param == "" {
		return ""
	}
	return param + " " + value
}

func axisLabel(title, unit string) string {
	if unit == "" || unit == "x" {
		return title
	}
	return title + " (" + unit + ")"
}

// drawFigures draws one described figure: one plot per facet value. A
// figure whose readings are all one value comes back as a flatFigure.
func drawFigures(in figureInput) ([]*Figure, []flatFigure, error) {
	spec := in.spec
	var ms []results.Measurement
	for _, m := range in.ms {
		if m.Metric == spec.Metric && matches(m.Params, spec.Where, "") && !math.IsNaN(m.Value) && !math.IsInf(m.Value, 0) {
			ms = append(ms, m)
		}
	}
	if len(ms) == 0 {
		return nil, nil, nil
	}
	unit := ms[0].Unit
	var exps []Expected
	if spec.Golden != "" {
		for _, e := range in.exps {
			if e.Metric == spec.Golden && e.Text == "" && matches(e.Params, spec.Where, spec.GoldenStat) {
				exps = append(exps, e)
			}
		}
	}
	// Every reading the same value: one line of a table, not a plot.
	if spec.KindOrDefault() != bitstreams.FigureCDF {
		flat := true
		for _, m := range ms {
			flat = flat && m.Value == ms[0].Value
		}
		if flat && len(ms) > 1 {
			return nil, []flatFigure{{Title: spec.Title, Metric: spec.Metric, Unit: unit, Value: ms[0].Value, Readings: len(ms)}}, nil
		}
	}
	var facets []string
	if spec.Facet != "" {
		for _, m := range ms {
			facets = append(facets, m.Params[spec.Facet])
		}
	}
	facets = distinct(facets)
	if len(facets) == 0 {
		facets = []string{""}
	}
	var out []*Figure
	for _, fv := range facets {
		var fms []results.Measurement
		for _, m := range ms {
			if spec.Facet == "" || m.Params[spec.Facet] == fv {
				fms = append(fms, m)
			}
		}
		var fexps []Expected
		for _, e := range exps {
			if v, ok := e.Params[spec.Facet]; spec.Facet == "" || !ok || v == fv {
				fexps = append(fexps, e)
			}
		}
		title := spec.Title
		if spec.Facet != "" {
			title += " (" + label(spec.Facet, fv) + ")"
		}
		var f *Figure
		var err error
		switch spec.KindOrDefault() {
		case bitstreams.FigureCDF:
			f, err = cdfFigure(in, fms, fexps, unit)
		case bitstreams.FigureCategories:
			f, err = categoryFigure(in, fms, fexps, unit)
		default:
			f, err = curveFigure(in, fms, fexps, unit)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("figure %q: %w", title, err)
		}
		if f == nil {
			continue
		}
		f.Title = title
		f.NoReading = in.noReading
		out = append(out, f)
	}
	return out, nil, nil
}

// seriesOf splits readings by the figure's series parameter.
func seriesOf(spec bitstreams.ReportFigure, ms []results.Measurement) []string {
	var vs []string
	for _, m := range ms {
		vs = append(vs, m.Params[spec.Series])
	}
	return distinct(vs)
}

// goldFor pools the golden expectations per series and x key. An
// expectation without the series parameter applies to every series.
func goldFor(spec bitstreams.ReportFigure, exps []Expected, series []string, key func(results.Params) (float64, string, bool)) map[string]map[string]*gold {
	out := map[string]map[string]*gold{}
	for _, s := range series {
		out[s] = map[string]*gold{}
	}
	for _, e := range exps {
		x, cat, ok := key(e.Params)
		if !ok {
			continue
		}
		targets := series
		if v, has := e.Params[spec.Series]; spec.Series != "" && has {
			targets = []string{v}
		}
		for _, s := range targets {
			byX, ok := out[s]
			if !ok {
				continue // a series nobody measured
			}
			g := byX[cat]
			if g == nil {
				g = &gold{x: x, cat: cat}
				byX[cat] = g
			}
			g.add(e.Expectation)
		}
	}
	return out
}

func sourcesOf(golds map[string]map[string]*gold) (sources, budgets []string) {
	s, b := map[string]bool{}, map[string]bool{}
	for _, byX := range golds {
		for _, g := range byX {
			for k := range g.sources {
				s[k] = true
			}
			for k := range g.budgets {
				b[k] = true
			}
		}
	}
	return sortedKeys(s), sortedKeys(b)
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// caption says what the figure shows and where its golden curve comes
// from.
func caption(spec bitstreams.ReportFigure, sources []string, noReading int) string {
	var parts []string
	if spec.Caption != "" {
		parts = append(parts, strings.TrimSuffix(spec.Caption, ".")+".")
	}
	if len(sources) > 0 {
		cites := map[string]bool{}
		for _, s := range sources {
			cites[cite(s)] = true
		}
		parts = append(parts, "Golden: "+strings.Join(sortedKeys(cites), "; ")+".")
	}
	if noReading > 0 {
		parts = append(parts, fmt.Sprintf("%d test case(s) of this metric gave no reading (see the table above).", noReading))
	}
	return strings.Join(parts, " ")
}

// curveFigure draws readings against a numeric parameter: every reading a
// dot (a cross when its verdict failed), the median per x a line, the
// golden curve dashed inside its shaded band, one colour per series.
func curveFigure(in figureInput, ms []results.Measurement, exps []Expected, unit string) (*Figure, error) {
	spec := in.spec
	series := seriesOf(spec, ms)
	pts := map[string][]point{}
	var xs, ys []float64
	for _, m := range ms {
		x, err := strconv.ParseFloat(m.Params[spec.X], 64)
		if err != nil {
			continue
		}
		s := m.Params[spec.Series]
		pts[s] = append(pts[s], point{x: x, y: m.Value, failed: in.failed(m)})
		xs, ys = append(xs, x), append(ys, m.Value)
	}
	if len(xs) == 0 {
		return nil, nil
	}
	golds := goldFor(spec, exps, series, func(ps results.Params) (float64, string, bool) {
		x, err := strconv.ParseFloat(ps[spec.X], 64)
		return x, ps[spec.X], err == nil
	})
	for _, byX := range golds {
		for _, g := range byX {
			ys = append(ys, g.vals...)
			ys = append(ys, g.lo, g.hi)
		}
	}
	yLo, yHi, _ := span(ys...)
	p := newPlot(orDefault(spec.XLabel, spec.X), axisLabel(in.metric, unit))
	leg := newLegend()
	logX := spec.XScale == "log"
	if x0, x1, ok := span(xs...); ok && spec.XScale != "linear" && spec.XScale != "log" {
		logX = x0 > 0 && x1/x0 >= 8
	}
	var out Figure
	drew := struct{ band, gold, fail bool }{}
	for i, s := range series {
		c := seriesColor(i)
		sp := pts[s]
		sort.Slice(sp, func(a, b int) bool { return sp[a].x < sp[b].x })
		sum := SeriesSummary{Name: label(spec.Series, s), Readings: len(sp)}
		if len(sp) > 0 {
			sum.Min, sum.Max, _ = span(yvals(sp)...)
		}
		// Golden band and line first, so the readings draw on top.
		var gs []*gold
		for _, g := range golds[s] {
			gs = append(gs, g)
		}
		sort.Slice(gs, func(a, b int) bool { return gs[a].x < gs[b].x })
		sum.Golden = len(gs)
		var gl, lo, hi plotter.XYs
		for _, g := range gs {
			l, h := clampBand(g.lo, g.hi, yLo, yHi)
			lo, hi = append(lo, plotter.XY{X: g.x, Y: l}), append(hi, plotter.XY{X: g.x, Y: h})
			if len(g.vals) > 0 {
				gl = append(gl, plotter.XY{X: g.x, Y: median(g.vals)})
			}
		}
		switch {
		case len(lo) >= 2:
			ring := append(plotter.XYs{}, lo...)
			for j := len(hi) - 1; j >= 0; j-- {
				ring = append(ring, hi[j])
			}
			poly, err := polygon(ring, withAlpha(c, 45))
			if err != nil {
				return nil, err
			}
			p.Add(poly)
			drew.band = true
		case len(lo) == 1:
			bar, err := line(plotter.XYs{lo[0], hi[0]}, withAlpha(c, 90), vg.Points(6), nil)
			if err != nil {
				return nil, err
			}
			p.Add(bar)
			drew.band = true
		}
		switch {
		case len(gl) >= 2:
			l, err := line(gl, c, vg.Points(1.2), goldDash)
			if err != nil {
				return nil, err
			}
			p.Add(l)
			drew.gold = true
		case len(gl) == 1:
			sc, err := scatter(gl, goldMarkStyle(c))
			if err != nil {
				return nil, err
			}
			p.Add(sc)
			drew.gold = true
		}
		if len(sp) == 0 {
			continue
		}
		var dots, fails plotter.XYs
		for _, q := range sp {
			if q.failed {
				fails = append(fails, plotter.XY{X: q.x, Y: q.y})
			} else {
				dots = append(dots, plotter.XY{X: q.x, Y: q.y})
			}
		}
		if len(dots) > 0 {
			sc, err := scatter(dots, dotStyle(c))
			if err != nil {
				return nil, err
			}
			p.Add(sc)
		}
		if len(fails) > 0 {
			sc, err := scatter(fails, failStyle())
			if err != nil {
				return nil, err
			}
			p.Add(sc)
			drew.fail = true
		}
		if med := medians(sp); len(med) >= 2 {
			l, err := line(med, c, vg.Points(1.6), seriesDashes(i))
			if err != nil {
				return nil, err
			}
			p.Add(l)
		}
		if spec.Series != "" {
			leg.add(sum.Name, lineThumb{c: c, width: vg.Points(2.5), dashes: seriesDashes(i)})
		}
		out.Series = append(out.Series, sum)
	}
	styleKey(leg, spec.Series == "", drew.band, drew.gold, drew.fail)
	if logX {
		p.X.Scale = plot.LogScale{}
	}
	if x0, x1, ok := span(xs...); ok {
		pad := 0.04 * (x1 - x0)
		if logX {
			p.X.Min, p.X.Max = x0/1.15, x1*1.15
		} else if pad > 0 {
			p.X.Min, p.X.Max = x0-pad, x1+pad
		}
	}
	setNumericTicks(&p.X, xs, logX)
	if yHi > yLo {
		pad := 0.05 * (yHi - yLo)
		p.Y.Min, p.Y.Max = yLo-pad, yHi+pad
	}
	svg, err := render(p, leg)
	if err != nil {
		return nil, err
	}
	sources, _ := sourcesOf(golds)
	out.SVG, out.Caption = svg, caption(spec, sources, in.noReading)
	return &out, nil
}

// styleKey adds the legend entries that explain the marks (in grey, or in
// the only series' colour).
func styleKey(leg *legend, single, band, gold, fail bool) {
	c := color0(single)
	leg.add("readings (median line)", glyphThumb{dotStyle(c)}, lineThumb{c: c, width: vg.Points(1.6)})
	if gold {
		leg.add("golden", lineThumb{c: c, width: vg.Points(1.2), dashes: goldDash})
	}
	if band {
		leg.add("golden band", swatch{withAlpha(c, 60)})
	}
	if fail {
		leg.add("failed verdict", glyphThumb{failStyle()})
	}
}

func color0(single bool) color.Color {
	if single {
		return seriesColor(0)
	}
	return grey
}

func yvals(ps []point) []float64 {
	out := make([]float64, len(ps))
	for i, p := range ps {
		out[i] = p.y
	}
	return out
}

func orDefault(s, def string) string {
	if s != "" {
		return s
	}
	return def
}

// categoryFigure draws readings per value of a parameter that is not a
// number: the golden band a shaded bar per category and series, the golden
// value a box on it, the readings dots (crosses when failed).
func categoryFigure(in figureInput, ms []results.Measurement, exps []Expected, unit string) (*Figure, error) {
	spec := in.spec
	series := seriesOf(spec, ms)
	var cats []string
	for _, m := range ms {
		cats = append(cats, m.Params[spec.X])
	}
	golds := goldFor(spec, exps, series, func(ps results.Params) (float64, string, bool) {
		v, ok := ps[spec.X]
		return 0, v, ok
	})
	for _, byCat := range golds {
		for c := range byCat {
			cats = append(cats, c)
		}
	}
	cats = distinct(cats)
	index := map[string]int{}
	for i, c := range cats {
		index[c] = i
	}
	var ys []float64
	for _, m := range ms {
		ys = append(ys, m.Value)
	}
	for _, byCat := range golds {
		for _, g := range byCat {
			ys = append(ys, g.vals...)
			ys = append(ys, g.lo, g.hi)
		}
	}
	yLo, yHi, _ := span(ys...)
	p := newPlot(orDefault(spec.XLabel, spec.X), axisLabel(in.metric, unit))
	leg := newLegend()
	// Each category spreads the series it has (readings or golden) side
	// by side; a category with one series keeps it in the middle.
	present := map[string][]string{}
	for _, cat := range cats {
		for _, s := range series {
			has := golds[s][cat] != nil
			for _, m := range ms {
				has = has || (m.Params[spec.X] == cat && m.Params[spec.Series] == s)
			}
			if has {
				present[cat] = append(present[cat], s)
			}
		}
	}
	slot := func(cat, s string) (x, width float64) {
		n := float64(max(len(present[cat]), 1))
		width = 0.7 / n
		for i, t := range present[cat] {
			if t == s {
				return float64(index[cat]) + (float64(i)-(n-1)/2)*width, width
			}
		}
		return float64(index[cat]), width
	}
	var out Figure
	drew := struct{ band, gold, fail, exact bool }{}
	for i, s := range series {
		c := seriesColor(i)
		sum := SeriesSummary{Name: label(spec.Series, s)}
		for _, cat := range cats {
			g := golds[s][cat]
			if g == nil {
				continue
			}
			sum.Golden++
			x, width := slot(cat, s)
			w := width * 0.4
			if g.hi == g.lo && len(g.vals) > 0 {
				// An exact expectation: a box at the value, no band.
				sc, err := scatter(plotter.XYs{{X: x, Y: g.lo}}, goldMarkStyle(c))
				if err != nil {
					return nil, err
				}
				p.Add(sc)
				drew.exact = true
				continue
			}
			l, h := clampBand(g.lo, g.hi, yLo, yHi)
			poly, err := polygon(plotter.XYs{{X: x - w, Y: l}, {X: x + w, Y: l}, {X: x + w, Y: h}, {X: x - w, Y: h}}, withAlpha(c, 55))
			if err != nil {
				return nil, err
			}
			p.Add(poly)
			drew.band = true
			if len(g.vals) > 0 {
				gv := median(g.vals)
				gl, err := line(plotter.XYs{{X: x - w, Y: gv}, {X: x + w, Y: gv}}, c, vg.Points(1.6), goldDash)
				if err != nil {
					return nil, err
				}
				p.Add(gl)
				drew.gold = true
			}
		}
		var dots, fails plotter.XYs
		var vals []float64
		for _, m := range ms {
			if m.Params[spec.Series] != s {
				continue
			}
			x, _ := slot(m.Params[spec.X], s)
			xy := plotter.XY{X: x, Y: m.Value}
			vals = append(vals, m.Value)
			if in.failed(m) {
				fails = append(fails, xy)
			} else {
				dots = append(dots, xy)
			}
		}
		sum.Readings = len(vals)
		sum.Min, sum.Max, _ = span(vals...)
		if len(dots) > 0 {
			sty := dotStyle(c)
			sty.Radius = vg.Points(3)
			sc, err := scatter(dots, sty)
			if err != nil {
				return nil, err
			}
			p.Add(sc)
		}
		if len(fails) > 0 {
			sc, err := scatter(fails, failStyle())
			if err != nil {
				return nil, err
			}
			p.Add(sc)
			drew.fail = true
		}
		if spec.Series != "" {
			leg.add(sum.Name, swatch{c})
		}
		out.Series = append(out.Series, sum)
	}
	c := color0(spec.Series == "")
	sty := dotStyle(c)
	sty.Radius = vg.Points(3)
	leg.add("readings", glyphThumb{sty})
	if drew.gold {
		leg.add("golden", lineThumb{c: c, width: vg.Points(1.6), dashes: goldDash})
	}
	if drew.band {
		leg.add("golden band", swatch{withAlpha(c, 60)})
	}
	if drew.exact {
		leg.add("golden (exact)", glyphThumb{goldMarkStyle(c)})
	}
	if drew.fail {
		leg.add("failed verdict", glyphThumb{failStyle()})
	}
	ticks := make([]plot.Tick, len(cats))
	longest := 0
	for i, c := range cats {
		ticks[i] = plot.Tick{Value: float64(i), Label: c}
		longest = max(longest, len(c))
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	p.X.Min, p.X.Max = -0.6, float64(len(cats))-0.4
	if len(cats)*max(longest, 4) > 70 {
		// Slanted labels where level ones would collide.
		p.X.Tick.Label.Rotation = math.Pi / 5
		p.X.Tick.Label.XAlign = draw.XRight
		p.X.Tick.Label.YAlign = draw.YCenter
	}
	if yHi > yLo {
		pad := 0.08 * (yHi - yLo)
		p.Y.Min, p.Y.Max = yLo-pad, yHi+pad
	} else {
		p.Y.Min, p.Y.Max = yLo-math.Max(math.Abs(yLo)*0.1, 1), yHi+math.Max(math.Abs(yHi)*0.1, 1)
	}
	svg, err := render(p, leg)
	if err != nil {
		return nil, err
	}
	sources, _ := sourcesOf(golds)
	out.SVG, out.Caption = svg, caption(spec, sources, in.noReading)
	return &out, nil
}

// cdfPoints bounds the points of one distribution line: a step per sample
// up to this many, quantiles beyond.
const cdfPoints = 400

// statQuantile reads the statistic a golden expectation bounds: "mean"
// (ok, mean true) or a percentile "p99" (0.99).
func statQuantile(stat string) (q float64, mean, ok bool) {
	switch strings.ToLower(stat) {
	case "", "mean", "avg":
		return 0, true, true
	case "median":
		return 0.5, false, true
	}
	if v, err := strconv.ParseFloat(strings.TrimPrefix(strings.ToLower(stat), "p"), 64); err == nil && strings.HasPrefix(strings.ToLower(stat), "p") && v > 0 && v < 100 {
		return v / 100, false, true
	}
	return 0, false, false
}

// cdfFigure draws the distributions of the samples readings carry, one
// line per series, with the golden statistics over them: the mean's band
// as a shaded column, a percentile's band as a bar at its height.
func cdfFigure(in figureInput, ms []results.Measurement, exps []Expected, unit string) (*Figure, error) {
	spec := in.spec
	samples := map[string][]float64{}
	for _, m := range ms {
		for _, v := range m.Samples {
			if !math.IsNaN(v) && !math.IsInf(v, 0) {
				samples[m.Params[spec.Series]] = append(samples[m.Params[spec.Series]], v)
			}
		}
	}
	if len(samples) == 0 {
		return nil, nil
	}
	series := sortedKeys(samples)
	naturalSort(series)
	var all []float64
	for _, s := range series {
		sort.Float64s(samples[s])
		all = append(all, samples[s][0], samples[s][len(samples[s])-1])
	}
	// Golden statistics per series, keyed by the statistic.
	golds := goldFor(spec, exps, series, func(ps results.Params) (float64, string, bool) {
		stat := ps[spec.GoldenStat]
		if spec.GoldenStat == "" {
			stat = "mean"
		}
		q, _, ok := statQuantile(stat)
		return q, stat, ok
	})
	for _, byStat := range golds {
		for _, g := range byStat {
			all = append(all, g.lo, g.hi)
			all = append(all, g.vals...)
		}
	}
	xLo, xHi, _ := span(all...)
	p := newPlot(axisLabel(in.metric, unit), "fraction of samples ≤ x")
	leg := newLegend()
	logX := xLo > 0 && xHi/xLo >= 4
	var out Figure
	drew := struct{ mean, pct bool }{}
	for i, s := range series {
		c := seriesColor(i)
		xs := samples[s]
		sum := SeriesSummary{Name: label(spec.Series, s), Readings: len(xs), Min: xs[0], Max: xs[len(xs)-1]}
		for _, stat := range sortedKeys(golds[s]) {
			g := golds[s][stat]
			q, isMean, _ := statQuantile(stat)
			l, h := clampBand(g.lo, g.hi, xLo, xHi)
			if logX && l <= 0 {
				l = xLo / 1.2
			}
			sum.Golden++
			if isMean {
				poly, err := polygon(plotter.XYs{{X: l, Y: 0}, {X: h, Y: 0}, {X: h, Y: 1}, {X: l, Y: 1}}, withAlpha(c, 35))
				if err != nil {
					return nil, err
				}
				p.Add(poly)
				if len(g.vals) > 0 {
					gv := median(g.vals)
					gl, err := line(plotter.XYs{{X: gv, Y: 0}, {X: gv, Y: 1}}, c, vg.Points(1.1), goldDash)
					if err != nil {
						return nil, err
					}
					p.Add(gl)
				}
				drew.mean = true
				continue
			}
			bar, err := line(plotter.XYs{{X: l, Y: q}, {X: h, Y: q}}, withAlpha(c, 110), vg.Points(5), nil)
			if err != nil {
				return nil, err
			}
			p.Add(bar)
			if len(g.vals) > 0 {
				sc, err := scatter(plotter.XYs{{X: median(g.vals), Y: q}}, goldMarkStyle(c))
				if err != nil {
					return nil, err
				}
				p.Add(sc)
			}
			drew.pct = true
		}
		pts := make(plotter.XYs, 0, 2*min(len(xs), cdfPoints))
		if len(xs) <= cdfPoints {
			for j, x := range xs {
				// A step: the fraction jumps at each sample.
				pts = append(pts, plotter.XY{X: x, Y: float64(j) / float64(len(xs))}, plotter.XY{X: x, Y: float64(j+1) / float64(len(xs))})
			}
		} else {
			for k := 0; k <= cdfPoints; k++ {
				j := min(len(xs)-1, k*len(xs)/cdfPoints)
				pts = append(pts, plotter.XY{X: xs[j], Y: float64(j+1) / float64(len(xs))})
			}
		}
		l, err := line(pts, c, vg.Points(1.5), seriesDashes(i))
		if err != nil {
			return nil, err
		}
		p.Add(l)
		name := fmt.Sprintf("%s (%d samples)", orDefault(sum.Name, "samples"), len(xs))
		leg.add(name, lineThumb{c: c, width: vg.Points(2.5), dashes: seriesDashes(i)})
		out.Series = append(out.Series, sum)
	}
	if drew.mean {
		leg.add("golden mean, band", lineThumb{c: grey, width: vg.Points(1.1), dashes: goldDash}, swatch{withAlpha(grey, 50)})
	}
	if drew.pct {
		leg.add("golden percentile, band", lineThumb{c: withAlpha(grey, 110), width: vg.Points(5)}, glyphThumb{goldMarkStyle(grey)})
	}
	p.Y.Min, p.Y.Max = 0, 1.02
	if logX {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = logTicks{}
		p.X.Min, p.X.Max = xLo/1.1, xHi*1.1
	} else if xHi > xLo {
		pad := 0.04 * (xHi - xLo)
		p.X.Min, p.X.Max = xLo-pad, xHi+pad
	}
	svg, err := render(p, leg)
	if err != nil {
		return nil, err
	}
	sources, _ := sourcesOf(golds)
	out.SVG, out.Caption = svg, caption(spec, sources, in.noReading)
	return &out, nil
}
