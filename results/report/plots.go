package report

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"sort"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// The drawing primitives the figures share: a plot with its legend in a
// column of its own at the right (never over the data), tick labels that
// do not run into each other, and the golden band's look.

// Size of every figure: two fit side by side on a 1400 px page.
const (
	figWidth  = 7 * vg.Inch
	figHeight = 3.5 * vg.Inch
)

var (
	grey      = color.Gray{Y: 90}
	failColor = color.NRGBA{R: 200, G: 0, B: 0, A: 255}
	goldDash  = []vg.Length{vg.Points(5), vg.Points(3)}
)

func sans(size vg.Length) font.Font {
	return font.From(font.Font{Typeface: "Liberation", Variant: "Sans"}, size)
}

// newPlot makes a plot without a title (the page prints the figure's title
// above it) and without its own legend (legendPlot draws one beside it).
func newPlot(xl, yl string) *plot.Plot {
	p := plot.New()
	p.X.Label.Text = xl
	p.Y.Label.Text = yl
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = sans(11)
		a.Tick.Label.Font = sans(10)
	}
	p.Add(plotter.NewGrid())
	return p
}

// legend is a plot legend that knows how many entries it holds.
type legend struct {
	plot.Legend
	n int
}

func newLegend() *legend {
	l := plot.NewLegend()
	l.TextStyle.Font = sans(10)
	l.Top, l.Left = true, true
	l.ThumbnailWidth = vg.Points(18)
	l.Padding = vg.Points(2)
	return &legend{Legend: l}
}

func (l *legend) add(name string, thumbs ...plot.Thumbnailer) {
	l.Legend.Add(name, thumbs...)
	l.n++
}

// palette: Tableau 10 without its red, which marks failed readings.
var palette = []color.Color{
	color.NRGBA{0x4e, 0x79, 0xa7, 255}, color.NRGBA{0xf2, 0x8e, 0x2b, 255}, color.NRGBA{0x59, 0xa1, 0x4f, 255},
	color.NRGBA{0xb0, 0x7a, 0xa1, 255}, color.NRGBA{0x9c, 0x75, 0x5f, 255}, color.NRGBA{0x76, 0xb7, 0xb2, 255},
	color.NRGBA{0xed, 0xc9, 0x48, 255}, color.NRGBA{0xff, 0x9d, 0xa7, 255}, color.NRGBA{0xba, 0xb0, 0xac, 255},
}

// seriesColor is the colour of the i-th series.
func seriesColor(i int) color.Color { return palette[i%len(palette)] }

// seriesDashes tells apart series that share a colour (more than the
// palette holds).
func seriesDashes(i int) []vg.Length {
	if i < len(palette) {
		return nil
	}
	return []vg.Length{vg.Points(2), vg.Points(2)}
}

// withAlpha makes an opaque palette colour translucent.
func withAlpha(c color.Color, a uint8) color.Color {
	r, g, b, _ := c.RGBA()
	return color.NRGBA{R: uint8(r >> 8), G: uint8(g >> 8), B: uint8(b >> 8), A: a}
}

// swatch is a legend thumbnail: a filled rectangle (a band).
type swatch struct{ c color.Color }

func (s swatch) Thumbnail(c *draw.Canvas) {
	r := c.Rectangle
	h := r.Max.Y - r.Min.Y
	pts := []vg.Point{{X: r.Min.X, Y: r.Min.Y + h*0.15}, {X: r.Max.X, Y: r.Min.Y + h*0.15}, {X: r.Max.X, Y: r.Max.Y - h*0.15}, {X: r.Min.X, Y: r.Max.Y - h*0.15}}
	c.FillPolygon(s.c, pts)
}

// lineThumb is a legend thumbnail: a line of a colour and dash pattern.
type lineThumb struct {
	c      color.Color
	dashes []vg.Length
	width  vg.Length
}

func (l lineThumb) Thumbnail(c *draw.Canvas) {
	y := (c.Min.Y + c.Max.Y) / 2
	c.StrokeLine2(draw.LineStyle{Color: l.c, Width: l.width, Dashes: l.dashes}, c.Min.X, y, c.Max.X, y)
}

// glyphThumb is a legend thumbnail: one glyph.
type glyphThumb struct{ sty draw.GlyphStyle }

func (g glyphThumb) Thumbnail(c *draw.Canvas) { c.DrawGlyph(g.sty, c.Center()) }

// render draws p with the legend in a column at its right and returns the
// SVG.
func render(p *plot.Plot, leg *legend) ([]byte, error) {
	img := vgsvg.New(figWidth, figHeight)
	dc := draw.New(img)
	// White background: the page's figures sit on white cards, and an SVG
	// opened on its own should look the same.
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	var legW vg.Length
	if leg.n > 0 {
		r := leg.Rectangle(dc)
		legW = r.Max.X - r.Min.X + vg.Points(10)
		if max := figWidth * 0.38; legW > max {
			legW = max
		}
	}
	plotArea := draw.Crop(dc, 0, -legW, 0, -vg.Points(6))
	p.Draw(plotArea)
	if legW > 0 {
		leg.Draw(draw.Crop(dc, figWidth-legW+vg.Points(6), 0, 0, -vg.Points(10)))
	}
	var buf bytes.Buffer
	if _, err := img.WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("rendering plot: %w", err)
	}
	return buf.Bytes(), nil
}

// setNumericTicks labels a numeric axis at the values measured when they
// are few, dropping labels that would run into their neighbour ("152" and
// "153" on a log axis), else at round values.
func setNumericTicks(a *plot.Axis, vals []float64, logScale bool) {
	set := map[float64]bool{}
	for _, v := range vals {
		set[v] = true
	}
	xs := make([]float64, 0, len(set))
	for v := range set {
		xs = append(xs, v)
	}
	sort.Float64s(xs)
	if len(xs) == 0 {
		return
	}
	if len(xs) > 12 {
		if logScale {
			a.Tick.Marker = logTicks{}
		}
		return
	}
	pos := func(v float64) float64 {
		if logScale {
			return (math.Log(v) - math.Log(a.Min)) / (math.Log(a.Max) - math.Log(a.Min))
		}
		return (v - a.Min) / (a.Max - a.Min)
	}
	ticks := make([]plot.Tick, len(xs))
	last := math.Inf(-1)
	for i, v := range xs {
		ticks[i] = plot.Tick{Value: v}
		// A label takes about 5% of the axis; closer labels overlap.
		if p := pos(v); p-last >= 0.05 || math.IsNaN(p) {
			ticks[i].Label = formatTick(v)
			last = p
		}
	}
	a.Tick.Marker = plot.ConstantTicks(ticks)
}

// formatTick writes a tick value without exponents where it can ("20000",
// not "2e+04").
func formatTick(v float64) string {
	if a := math.Abs(v); a == 0 || (a >= 1e-4 && a < 1e7) {
		r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 6, 64), 64)
		return strconv.FormatFloat(r, 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
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
				out = append(out, plot.Tick{Value: v, Label: formatTick(v)})
			}
		}
	}
	return out
}

// span returns the smallest and largest finite value of xs.
func span(xs ...float64) (lo, hi float64, ok bool) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, x := range xs {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			continue
		}
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	return lo, hi, lo <= hi
}

// clampBand replaces an unbounded side of a band with the edge of the
// axis (lo..hi padded by 5%), so that a one-sided band is drawn to the
// edge of the plot.
func clampBand(l, h, axisLo, axisHi float64) (float64, float64) {
	pad := (axisHi - axisLo) * 0.05
	if pad == 0 {
		pad = math.Max(math.Abs(axisHi)*0.05, 1e-9)
	}
	if math.IsInf(l, -1) || l < axisLo-pad {
		l = axisLo - pad
	}
	if math.IsInf(h, 1) || h > axisHi+pad {
		h = axisHi + pad
	}
	return l, h
}

func polygon(pts plotter.XYs, c color.Color) (*plotter.Polygon, error) {
	poly, err := plotter.NewPolygon(pts)
	if err != nil {
		return nil, err
	}
	poly.Color = c
	poly.LineStyle.Width = 0
	return poly, nil
}

func line(pts plotter.XYs, c color.Color, width vg.Length, dashes []vg.Length) (*plotter.Line, error) {
	l, err := plotter.NewLine(pts)
	if err != nil {
		return nil, err
	}
	l.Color = c
	l.Width = width
	l.Dashes = dashes
	return l, nil
}

func scatter(pts plotter.XYs, sty draw.GlyphStyle) (*plotter.Scatter, error) {
	s, err := plotter.NewScatter(pts)
	if err != nil {
		return nil, err
	}
	s.GlyphStyle = sty
	return s, nil
}

func dotStyle(c color.Color) draw.GlyphStyle {
	return draw.GlyphStyle{Color: withAlpha(c, 170), Radius: vg.Points(2.2), Shape: draw.CircleGlyph{}}
}

func failStyle() draw.GlyphStyle {
	return draw.GlyphStyle{Color: failColor, Radius: vg.Points(3.5), Shape: boldCross{}}
}

// boldCross is an X drawn thick enough to see over the readings (gonum's
// CrossGlyph is a hairline).
type boldCross struct{}

func (boldCross) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	r := sty.Radius
	ls := draw.LineStyle{Color: sty.Color, Width: vg.Points(1.6)}
	c.StrokeLine2(ls, pt.X-r, pt.Y-r, pt.X+r, pt.Y+r)
	c.StrokeLine2(ls, pt.X-r, pt.Y+r, pt.X+r, pt.Y-r)
}

func goldMarkStyle(c color.Color) draw.GlyphStyle {
	return draw.GlyphStyle{Color: c, Radius: vg.Points(4.5), Shape: draw.SquareGlyph{}}
}

// medians returns, per distinct x of sorted points, the median y.
func medians(pts []point) plotter.XYs {
	var out plotter.XYs
	for i := 0; i < len(pts); {
		j := i
		var ys []float64
		for j < len(pts) && pts[j].x == pts[i].x {
			ys = append(ys, pts[j].y)
			j++
		}
		out = append(out, plotter.XY{X: pts[i].x, Y: median(ys)})
		i = j
	}
	return out
}

func median(ys []float64) float64 {
	if len(ys) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), ys...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
