package report

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/labrunner/labrunner/results"
)

// Hint tells the report how to draw a metric. Metrics without a hint get a
// plot chosen from their parameters (see planCurves), so a new design's
// metrics are drawn before anyone writes a hint for them.
type Hint struct {
	X      string   // parameter on the x axis
	Series []string // parameters that split the lines
	Title  string
	XLabel string
}

// Hints for the metrics known today. The golden curves' paper sections are
// printed under each plot from the expectations' sources.
var Hints = map[string]Hint{
	"exanet.bandwidth": {X: "payload", Series: []string{"path"}, Title: "ExaNet bandwidth vs payload", XLabel: "payload (bytes)"},
	"exanet.rtt":       {X: "payload", Series: []string{"hops"}, Title: "ExaNet round-trip latency vs payload, per hop count", XLabel: "payload (bytes)"},
}

// preferredX are parameter names taken as the x axis, in this order, when
// a metric has no hint.
var preferredX = []string{"payload", "size", "bytes", "load", "rate", "packets", "hops", "ports"}

// maxSeries bounds the lines of one plot; a parameter with more distinct
// values (a peer, a link) is folded into the points instead of splitting
// the lines.
const maxSeries = 6

// Figure is one rendered plot.
type Figure struct {
	Title   string
	Caption string // where the golden curve comes from
	SVG     []byte
}

type xy struct{ x, y float64 }

type curveSpec struct {
	metric, unit string
	hint         Hint
	series       []string
}

// planCurves decides, per metric, the x parameter and the series.
func planCurves(ms []results.Measurement) []curveSpec {
	byMetric := map[string][]results.Measurement{}
	var metrics []string
	for _, m := range ms {
		if m.Text != "" || math.IsNaN(m.Value) || math.IsInf(m.Value, 0) {
			continue
		}
		if _, ok := byMetric[m.Metric]; !ok {
			metrics = append(metrics, m.Metric)
		}
		byMetric[m.Metric] = append(byMetric[m.Metric], m)
	}
	sort.Strings(metrics)
	var out []curveSpec
	for _, metric := range metrics {
		group := byMetric[metric]
		distinct := map[string]map[string]bool{}
		for _, m := range group {
			for k, v := range m.Params {
				if distinct[k] == nil {
					distinct[k] = map[string]bool{}
				}
				distinct[k][v] = true
			}
		}
		numeric := func(k string) bool {
			for v := range distinct[k] {
				if _, err := strconv.ParseFloat(v, 64); err != nil {
					return false
				}
			}
			return len(distinct[k]) >= 2
		}
		h, ok := Hints[metric]
		if !ok || !numeric(h.X) {
			h = Hint{Title: metric}
			for _, k := range preferredX {
				if numeric(k) {
					h.X = k
					break
				}
			}
			if h.X == "" {
				best := 0
				for _, k := range sortedKeys(distinct) {
					if numeric(k) && len(distinct[k]) >= 3 && len(distinct[k]) > best {
						h.X, best = k, len(distinct[k])
					}
				}
			}
			if h.X == "" {
				continue // nothing to put on an x axis: the table shows it
			}
			for _, k := range sortedKeys(distinct) {
				if k != h.X && len(distinct[k]) >= 2 && len(distinct[k]) <= maxSeries {
					h.Series = append(h.Series, k)
				}
			}
		}
		if h.XLabel == "" {
			h.XLabel = h.X
		}
		var series []string
		for _, k := range h.Series {
			if len(distinct[k]) >= 1 {
				series = append(series, k)
			}
		}
		out = append(out, curveSpec{metric: metric, unit: group[0].Unit, hint: h, series: series})
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func seriesName(ps results.Params, keys []string) string {
	var parts []string
	for _, k := range keys {
		if v, ok := ps[k]; ok {
			parts = append(parts, k+"="+v)
		}
	}
	if len(parts) == 0 {
		return "all"
	}
	return strings.Join(parts, ",")
}

// curveFigure draws one metric: every reading as a dot, the median per x
// as a line, and the golden expectation as a dashed line inside its
// tolerance band, one colour per series.
func curveFigure(spec curveSpec, ms []results.Measurement, exps []Expected) (*Figure, error) {
	type series struct {
		pts  []xy
		gold map[float64]results.Expectation
	}
	all := map[string]*series{}
	get := func(name string) *series {
		s := all[name]
		if s == nil {
			s = &series{gold: map[float64]results.Expectation{}}
			all[name] = s
		}
		return s
	}
	for _, m := range ms {
		if m.Metric != spec.metric || m.Text != "" || math.IsNaN(m.Value) || math.IsInf(m.Value, 0) {
			continue
		}
		x, err := strconv.ParseFloat(m.Params[spec.hint.X], 64)
		if err != nil {
			continue
		}
		get(seriesName(m.Params, spec.series)).pts = append(get(seriesName(m.Params, spec.series)).pts, xy{x, m.Value})
	}
	sources := map[string]bool{}
	for _, e := range exps {
		if e.Metric != spec.metric || e.Text != "" {
			continue
		}
		x, err := strconv.ParseFloat(e.Params[spec.hint.X], 64)
		if err != nil {
			continue
		}
		s := all[seriesName(e.Params, spec.series)]
		if s == nil {
			continue // an expectation for a series nobody measured
		}
		if _, ok := s.gold[x]; !ok {
			s.gold[x] = e.Expectation
			if e.Source != "" {
				sources[e.Source] = true
			}
		}
	}
	if len(all) == 0 {
		return nil, nil
	}
	p := newPlot(spec.hint.Title, spec.hint.XLabel, axisLabel(spec.metric, spec.unit))
	names := sortedKeys(all)
	entries := 0
	var xs []float64
	for i, name := range names {
		s := all[name]
		c := plotutil.Color(i)
		sort.Slice(s.pts, func(a, b int) bool { return s.pts[a].x < s.pts[b].x })
		// Golden band and line first, so the readings draw on top.
		if len(s.gold) > 0 {
			gx := make([]float64, 0, len(s.gold))
			for x := range s.gold {
				gx = append(gx, x)
			}
			sort.Float64s(gx)
			var line, lo, hi plotter.XYs
			for _, x := range gx {
				e := s.gold[x]
				l, h := e.Bounds()
				if e.Min == nil && e.Max == nil {
					line = append(line, plotter.XY{X: x, Y: e.Value})
				}
				if !math.IsInf(l, 0) && !math.IsInf(h, 0) {
					lo = append(lo, plotter.XY{X: x, Y: l})
					hi = append(hi, plotter.XY{X: x, Y: h})
				}
			}
			if len(lo) >= 2 {
				ring := append(plotter.XYs{}, lo...)
				for j := len(hi) - 1; j >= 0; j-- {
					ring = append(ring, hi[j])
				}
				if poly, err := plotter.NewPolygon(ring); err == nil {
					poly.Color = withAlpha(c, 40)
					poly.LineStyle.Width = 0
					p.Add(poly)
				}
			}
			if len(line) == 1 {
				// One x only: the golden value as a cross on a bar
				// spanning its tolerance.
				if len(lo) == 1 {
					if bar, err := plotter.NewLine(plotter.XYs{lo[0], hi[0]}); err == nil {
						bar.Color = withAlpha(c, 120)
						bar.Width = vg.Points(4)
						p.Add(bar)
					}
				}
				if gs, err := plotter.NewScatter(line); err == nil {
					gs.GlyphStyle.Color = c
					gs.GlyphStyle.Radius = vg.Points(4)
					gs.GlyphStyle.Shape = draw.CrossGlyph{}
					p.Add(gs)
					entries++
					p.Legend.Add(name+" golden ±tol", gs)
				}
			}
			if len(line) >= 2 {
				if gl, err := plotter.NewLine(line); err == nil {
					gl.Color = c
					gl.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
					gl.Width = vg.Points(1.2)
					p.Add(gl)
					entries++
					p.Legend.Add(name+" golden ±tol", gl)
				}
			}
		}
		if len(s.pts) == 0 {
			continue
		}
		dots := make(plotter.XYs, len(s.pts))
		for j, q := range s.pts {
			dots[j] = plotter.XY{X: q.x, Y: q.y}
			xs = append(xs, q.x)
		}
		sc, err := plotter.NewScatter(dots)
		if err != nil {
			return nil, err
		}
		sc.GlyphStyle.Color = withAlpha(c, 150)
		sc.GlyphStyle.Radius = vg.Points(2)
		sc.GlyphStyle.Shape = draw.CircleGlyph{}
		p.Add(sc)
		med := medians(s.pts)
		if len(med) >= 2 {
			ml, err := plotter.NewLine(med)
			if err != nil {
				return nil, err
			}
			ml.Color = c
			ml.Width = vg.Points(1.6)
			p.Add(ml)
			entries++
			p.Legend.Add(name+" measured", ml, sc)
		} else {
			entries++
			p.Legend.Add(name+" measured", sc)
		}
	}
	setXTicks(p, xs)
	roomForLegend(p, entries)
	svg, err := render(p, 7*vg.Inch, 4.2*vg.Inch)
	if err != nil {
		return nil, err
	}
	return &Figure{Title: spec.hint.Title, Caption: caption(sources), SVG: svg}, nil
}

// cdfFigures draws the distributions of metrics that carry samples: one
// plot per metric and series, one line per x value, the boards' samples
// pooled.
func cdfFigures(specs []curveSpec, ms []results.Measurement, limit int) ([]*Figure, error) {
	bySpec := map[string]curveSpec{}
	for _, s := range specs {
		bySpec[s.metric] = s
	}
	type key struct{ metric, facet string }
	groups := map[key]map[string][]float64{}
	units := map[string]string{}
	for _, m := range ms {
		if len(m.Samples) == 0 {
			continue
		}
		spec, ok := bySpec[m.Metric]
		var facet, line string
		if ok {
			facet = seriesName(m.Params, spec.series)
			line = spec.hint.X + "=" + m.Params[spec.hint.X]
		} else {
			facet, line = "", m.Params.String()
		}
		k := key{m.Metric, facet}
		if groups[k] == nil {
			groups[k] = map[string][]float64{}
		}
		for _, v := range m.Samples {
			if !math.IsNaN(v) && !math.IsInf(v, 0) {
				groups[k][line] = append(groups[k][line], v)
			}
		}
		units[m.Metric] = m.Unit
	}
	keys := make([]key, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].metric != keys[j].metric {
			return keys[i].metric < keys[j].metric
		}
		return keys[i].facet < keys[j].facet
	})
	var out []*Figure
	for _, k := range keys {
		if len(out) >= limit {
			break
		}
		title := k.metric + " distribution"
		if k.facet != "" && k.facet != "all" {
			title += " (" + k.facet + ")"
		}
		p := newPlot(title, axisLabel(k.metric, units[k.metric]), "fraction of samples ≤ x")
		lines := sortedKeys(groups[k])
		sort.SliceStable(lines, func(i, j int) bool { return numericSuffix(lines[i]) < numericSuffix(lines[j]) })
		drawn := 0
		for i, name := range lines {
			xs := groups[k][name]
			if len(xs) == 0 {
				continue
			}
			sort.Float64s(xs)
			pts := make(plotter.XYs, 0, 2*len(xs))
			for j, x := range xs {
				// A step: the fraction jumps at each sample.
				pts = append(pts, plotter.XY{X: x, Y: float64(j) / float64(len(xs))}, plotter.XY{X: x, Y: float64(j+1) / float64(len(xs))})
			}
			l, err := plotter.NewLine(pts)
			if err != nil {
				return nil, err
			}
			l.Color = plotutil.Color(i)
			l.Dashes = plotutil.Dashes(i / len(plotutil.DefaultColors))
			l.Width = vg.Points(1.4)
			p.Add(l)
			p.Legend.Add(fmt.Sprintf("%s (n=%d)", name, len(xs)), l)
			drawn++
		}
		if drawn == 0 {
			continue
		}
		p.Y.Min, p.Y.Max = 0, 1
		// Log x when the lines span a factor of 4 or more; the legend
		// goes in room kept free at the right.
		p.Legend.Top, p.Legend.Left = false, false
		if p.X.Min > 0 && p.X.Max/p.X.Min >= 4 {
			p.X.Scale = plot.LogScale{}
			p.X.Tick.Marker = logTicks{}
			p.X.Max *= math.Pow(p.X.Max/p.X.Min, 0.5)
		} else {
			p.X.Max += (p.X.Max - p.X.Min) * 0.6
		}
		svg, err := render(p, 7*vg.Inch, 4.2*vg.Inch)
		if err != nil {
			return nil, err
		}
		out = append(out, &Figure{Title: title, SVG: svg})
	}
	return out, nil
}

// logTicks labels a log axis at 1, 2 and 5 times each power of ten (the
// gonum LogTicks label powers of ten only, often one tick on a plot).
type logTicks struct{}

func (logTicks) Ticks(min, max float64) []plot.Tick {
	if !(min > 0) || !(max > min) {
		return nil
	}
	var out []plot.Tick
	for e := math.Floor(math.Log10(min)); e <= math.Ceil(math.Log10(max)); e++ {
		base := math.Pow(10, e)
		for _, m := range []float64{1, 2, 5} {
			v := m * base
			if v >= min && v <= max {
				out = append(out, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'g', 4, 64)})
			}
		}
	}
	return out
}

func numericSuffix(s string) float64 {
	if i := strings.LastIndexByte(s, '='); i >= 0 {
		if v, err := strconv.ParseFloat(s[i+1:], 64); err == nil {
			return v
		}
	}
	return math.Inf(1)
}

// roomForLegend raises the top of the y axis so that the legend, drawn in
// the top left corner, sits above the data instead of over it.
func roomForLegend(p *plot.Plot, n int) {
	if n == 0 || !(p.Y.Max > p.Y.Min) {
		return
	}
	const plotHeight, entry = 250.0, 12.0 // points, at the size rendered
	f := math.Min(float64(n)*entry/plotHeight, 0.6)
	p.Y.Max += (p.Y.Max - p.Y.Min) * f / (1 - f)
}

func medians(pts []xy) plotter.XYs {
	var out plotter.XYs
	for i := 0; i < len(pts); {
		j := i
		var ys []float64
		for j < len(pts) && pts[j].x == pts[i].x {
			ys = append(ys, pts[j].y)
			j++
		}
		sort.Float64s(ys)
		m := ys[len(ys)/2]
		if len(ys)%2 == 0 {
			m = (ys[len(ys)/2-1] + ys[len(ys)/2]) / 2
		}
		out = append(out, plotter.XY{X: pts[i].x, Y: m})
		i = j
	}
	return out
}

func caption(sources map[string]bool) string {
	if len(sources) == 0 {
		return ""
	}
	return "Golden curve: " + strings.Join(sortedKeys(sources), "; ")
}

func axisLabel(metric, unit string) string {
	if unit == "" {
		return metric
	}
	return metric + " (" + unit + ")"
}

func sans(size vg.Length) font.Font {
	return font.From(font.Font{Typeface: "Liberation", Variant: "Sans"}, size)
}

func newPlot(title, xl, yl string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font = sans(13)
	p.X.Label.Text = xl
	p.Y.Label.Text = yl
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = sans(11)
		a.Tick.Label.Font = sans(10)
	}
	p.Legend.TextStyle.Font = sans(10)
	p.Legend.Top = true
	p.Legend.Left = true
	p.Add(plotter.NewGrid())
	return p
}

// setXTicks labels the x axis with the measured x values when they are
// few, on a log2 scale when they span a factor of 8 or more (payload
// sizes).
func setXTicks(p *plot.Plot, xs []float64) {
	set := map[float64]bool{}
	for _, x := range xs {
		set[x] = true
	}
	vals := make([]float64, 0, len(set))
	for x := range set {
		vals = append(vals, x)
	}
	sort.Float64s(vals)
	if len(vals) == 0 {
		return
	}
	if vals[0] > 0 && vals[len(vals)-1]/vals[0] >= 8 {
		p.X.Scale = plot.LogScale{}
		p.X.Min = vals[0] / 1.15
		p.X.Max = vals[len(vals)-1] * 1.15
	}
	if len(vals) <= 12 {
		ticks := make([]plot.Tick, len(vals))
		for i, v := range vals {
			ticks[i] = plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'g', -1, 64)}
		}
		p.X.Tick.Marker = plot.ConstantTicks(ticks)
	}
}

// withAlpha makes an opaque palette colour translucent.
func withAlpha(c color.Color, a uint8) color.Color {
	r, g, b, _ := c.RGBA()
	return color.NRGBA{R: uint8(r >> 8), G: uint8(g >> 8), B: uint8(b >> 8), A: a}
}

func render(p *plot.Plot, w, h vg.Length) ([]byte, error) {
	wt, err := p.WriterTo(w, h, "svg")
	if err != nil {
		return nil, fmt.Errorf("rendering plot %q: %w", p.Title.Text, err)
	}
	var buf bytes.Buffer
	if _, err := wt.WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("rendering plot %q: %w", p.Title.Text, err)
	}
	return buf.Bytes(), nil
}
