// Package simulate runs the papers' network experiments at their scale on
// the golden models (`labrunner golden simulate`): the SC'18 §IV figures
// on the 1,056-node Dragonfly (golden/ordering), load sweeps of synthetic
// traffic (golden/tin presets) and Aquila's IP fabric RTT against load;
// each figure goes to a JSON file (curves, and each reproduced value next
// to the paper's with its band) and an SVG plot.
package simulate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/labrunner/labrunner/golden/figure"
	"github.com/labrunner/labrunner/golden/ordering"
	"github.com/labrunner/labrunner/golden/tin"
	"github.com/labrunner/labrunner/results/progress"
)

// SC18Figures are the SC'18 §IV experiments, in the paper's order.
var SC18Figures = []string{"sc18-fig8a", "sc18-fig8b", "sc18-fig9", "sc18-fig10", "sc18-fig11", "sc18-fig12", "sc18-sizing"}

// Options are an experiment run's settings (the command's flags).
type Options struct {
	// Out is the directory the JSON files and plots go to.
	Out string
	// Scale is the SC'18 run lengths as a fraction of the paper-scale
	// runs (0 < Scale <= 4).
	Scale float64
	Seed  uint64
	// Preset, Alg ("": the preset's), Pattern, Packet (0: the preset's),
	// WarmupNs and MeasureNs (0: BookSim's anchors) shape `synthetic`.
	Preset, Alg, Pattern string
	Packet               int
	WarmupNs, MeasureNs  float64
	// Loads are the offered loads, fractions of the injection rate
	// ("0.1,0.3,0.5").
	Loads string
	// Clique ("48x12": pods x TiNs), Bytes and Packets shape `aquila-rtt`.
	Clique         string
	Bytes, Packets int
	// Progress gets the live progress (nil: none).
	Progress io.Writer
}

// UsageError is an experiment or setting that does not exist or is out of
// range: nothing ran.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

func usagef(format string, args ...any) error {
	return &UsageError{fmt.Errorf(format, args...)}
}

// Job is one experiment, ready to run.
type Job struct {
	name string
	run  func(step func(string)) ([]figure.Figure, any, error)
}

// Jobs are the experiments named (sc18, one of SC18Figures, synthetic,
// aquila-rtt), each once, in the order given. An unknown name or a bad
// setting is a *UsageError.
func Jobs(names []string, o Options) ([]Job, error) {
	if len(names) == 0 {
		return nil, usagef("golden simulate takes one or more EXPERIMENTs: sc18, %s, synthetic, aquila-rtt", strings.Join(SC18Figures, ", "))
	}
	if !(o.Scale > 0 && o.Scale <= 4) {
		return nil, usagef("--scale %g: want 0 < scale <= 4", o.Scale)
	}
	loads, err := parseLoadList(o.Loads)
	if err != nil {
		return nil, usagef("--loads: %v", err)
	}
	var jobs []Job
	seen := map[string]bool{}
	for _, a := range names {
		js, err := jobsNamed(strings.ToLower(a), o, loads)
		if err != nil {
			return nil, err
		}
		for _, j := range js {
			if !seen[j.name] {
				seen[j.name] = true
				jobs = append(jobs, j)
			}
		}
	}
	return jobs, nil
}

// jobsNamed is the experiments one name stands for.
func jobsNamed(a string, o Options, loads []float64) ([]Job, error) {
	x := ordering.PaperSC18(o.Seed)
	x.Scale = o.Scale
	switch {
	case a == "sc18":
		var out []Job
		for _, n := range SC18Figures {
			out = append(out, sc18Job(x, n))
		}
		return out, nil
	case strings.HasPrefix(a, "sc18-"):
		j := sc18Job(x, a)
		if j.run == nil {
			return nil, usagef("no experiment %q: the SC'18 ones are %s", a, strings.Join(SC18Figures, ", "))
		}
		return []Job{j}, nil
	case a == "synthetic":
		j, err := syntheticJob(o, loads)
		return []Job{j}, usage(err)
	case a == "aquila-rtt":
		j, err := rttJob(o, loads)
		return []Job{j}, usage(err)
	}
	return nil, usagef("no experiment %q: want sc18, %s, synthetic or aquila-rtt", a, strings.Join(SC18Figures, ", "))
}

func usage(err error) error {
	if err == nil {
		return nil
	}
	return &UsageError{err}
}

// Result is what a run of experiments produced.
type Result struct {
	Figures []figure.Figure
	// Rows are the TSV rows of `synthetic` (load, latency_ns, accepted,
	// packets, hops, nonminimal, events).
	Rows []string
}

// Failed is how many reproduced values fell outside their bands.
func (r *Result) Failed() int {
	n := 0
	for _, f := range r.Figures {
		n += len(f.Failed())
	}
	return n
}

// Run runs the jobs in order, writing each figure to o.Out as
// <id>.json and <id>.svg.
func Run(jobs []Job, o Options) (*Result, error) {
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return nil, usagef("--out %s: %v", o.Out, err)
	}
	out := o.Progress
	if out == nil {
		out = io.Discard
	}
	prog := progress.New(out, []progress.Plan{{Name: "simulate", Boards: []string{"golden"}, Steps: len(jobs)}}, nil)
	defer prog.Close()
	res := &Result{}
	for _, j := range jobs {
		prog.Step("simulate", j.name)
		start := time.Now()
		fs, detail, err := j.run(func(s string) { fmt.Fprintf(prog.Writer(), "  %s: %s\n", j.name, s) })
		if err != nil {
			return nil, fmt.Errorf("%s: %w", j.name, err)
		}
		if rs, ok := detail.([]tin.SynthResult); ok && len(fs) == 1 {
			for i, r := range rs {
				res.Rows = append(res.Rows, fmt.Sprintf("%g\t%.3f\t%.5f\t%d\t%.3f\t%.4f\t%d", fs[0].Series[0].X[i], r.LatencyNs, r.Accepted, r.Packets, r.Hops, r.NonMinimal, r.Events))
			}
		}
		for _, f := range fs {
			if err := writeFigure(o, f, detail, time.Since(start)); err != nil {
				return nil, err
			}
			res.Figures = append(res.Figures, f)
		}
	}
	return res, nil
}

// WriteTable prints each figure's checks (simulated, paper, band) and
// notes, then a line with the count of values outside their bands.
func (r *Result) WriteTable(w io.Writer, out string) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FIGURE\tCHECK\tSIMULATED\tPAPER\tBAND\tOK")
	for _, f := range r.Figures {
		for _, ck := range f.Checks {
			fmt.Fprintf(tw, "%s\t%s\t%.4g %s\t%s\t[%.4g, %.4g]\t%v\n", f.ID, ck.What, ck.Value, ck.Unit, ck.Paper, ck.Lo, ck.Hi, ck.Pass)
		}
		for _, n := range f.Notes {
			fmt.Fprintf(tw, "%s\tnote: %s\t\t\t\t\n", f.ID, n)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%d figures in %s; %d reproduced values outside their bands\n", len(r.Figures), out, r.Failed())
	return err
}

// WriteTSV prints the rows of `synthetic` under their header.
func (r *Result) WriteTSV(w io.Writer) error {
	fmt.Fprintln(w, "load\tlatency_ns\taccepted\tpackets\thops\tnonminimal\tevents")
	for _, row := range r.Rows {
		if _, err := fmt.Fprintln(w, row); err != nil {
			return err
		}
	}
	return nil
}

func parseLoadList(s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || !(v > 0 && v <= 1) {
			return nil, fmt.Errorf("%q: want fractions of the injection rate, 0 < load <= 1", f)
		}
		out = append(out, v)
	}
	return out, nil
}

func sc18Job(x ordering.SC18, name string) Job {
	one := func(f func() (figure.Figure, error)) func(func(string)) ([]figure.Figure, any, error) {
		return func(func(string)) ([]figure.Figure, any, error) {
			fig, err := f()
			return []figure.Figure{fig}, nil, err
		}
	}
	j := Job{name: name}
	switch name {
	case "sc18-fig8a":
		j.run = one(x.Fig8a)
	case "sc18-fig8b":
		j.run = one(x.Fig8b)
	case "sc18-fig9":
		j.run = one(x.Fig9)
	case "sc18-fig10":
		j.run = one(x.Fig10)
	case "sc18-fig11":
		j.run = func(func(string)) ([]figure.Figure, any, error) {
			f, rs, err := x.Fig11()
			return []figure.Figure{f}, robSummary(rs), err
		}
	case "sc18-fig12":
		j.run = func(func(string)) ([]figure.Figure, any, error) {
			f, rs, err := x.Fig12()
			return []figure.Figure{f}, robSummary(rs), err
		}
	case "sc18-sizing":
		j.run = one(x.SizingFigure)
	}
	return j
}

// robSummary drops the time series' source run from the JSON detail.
func robSummary(rs []ordering.ROBResult) any {
	type row struct {
		ROBMean, ConnsMean        float64
		ROBMax, ConnsMax          int
		Inserted, Drops, NoConn   float64
		SkewNs, NonMinimal, EndNs float64
	}
	var out []row
	for _, r := range rs {
		out = append(out, row{r.ROB.Mean, r.Conns.Mean, r.ROB.Max, r.Conns.Max, r.Inserted, r.Drops, r.NoConn, r.SkewNs, r.Res.NonMinimal, r.Res.EndNs})
	}
	return out
}

func syntheticJob(o Options, loads []float64) (Job, error) {
	p, err := tin.LookupPreset(o.Preset)
	if err != nil {
		return Job{}, err
	}
	alg := p.Alg
	if s := o.Alg; s != "" {
		if alg, err = tin.ParseAlgorithm(s); err != nil {
			return Job{}, err
		}
	}
	pat, err := tin.ParsePattern(o.Pattern)
	if err != nil {
		return Job{}, err
	}
	if n := o.Packet; n < 0 || n > tin.MaxPacket {
		return Job{}, fmt.Errorf("--packet %d: want 0 (the preset's) or 1..%d", n, tin.MaxPacket)
	}
	sc := tin.SweepConfig{Preset: p, Alg: alg, Pattern: pat, Packet: o.Packet, Loads: loads,
		WarmupNs: o.WarmupNs, MeasureNs: o.MeasureNs, Seed: o.Seed}
	return Job{name: "synthetic " + p.Name, run: func(step func(string)) ([]figure.Figure, any, error) {
		sc.Progress = func(l float64) { step(fmt.Sprintf("load %g", l)) }
		f, rs, err := tin.LoadSweep(sc)
		return []figure.Figure{f}, rs, err
	}}, nil
}

func rttJob(o Options, loads []float64) (Job, error) {
	pods, tins, ok := strings.Cut(strings.ToLower(o.Clique), "x")
	p, err1 := strconv.Atoi(pods)
	t, err2 := strconv.Atoi(tins)
	if !ok || err1 != nil || err2 != nil {
		return Job{}, fmt.Errorf("--clique %q: want pods x TiNs, e.g. 48x12", o.Clique)
	}
	cl, err := tin.NewClique(p, t, tin.GlobalPortsPerTiN)
	if err != nil {
		return Job{}, err
	}
	n := o.Packets
	cfg := tin.SimConfig{Clique: cl, Timing: tin.PaperTiming(), Mode: tin.FullyAdaptive, Bytes: o.Bytes, ReplyBytes: 64,
		Warmup: n / 10, Packets: n, Align: 8, Seed: o.Seed, Load: loads[0]}
	return Job{name: "aquila-rtt " + cl.Param(), run: func(step func(string)) ([]figure.Figure, any, error) {
		f, rs, err := tin.RTTSweep(cfg, loads, func(l float64) { step(fmt.Sprintf("load %g", l)) })
		return []figure.Figure{f}, rs, err
	}}, nil
}

// writeFigure writes OUT/<id>.json and OUT/<id>.svg.
func writeFigure(o Options, f figure.Figure, detail any, took time.Duration) error {
	dir := o.Out
	doc := struct {
		figure.Figure
		Seed    uint64  `json:"seed"`
		Scale   float64 `json:"scale"`
		Seconds float64 `json:"seconds"`
		Detail  any     `json:"detail,omitempty"`
	}{f, o.Seed, o.Scale, took.Seconds(), detail}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return fmt.Errorf("figure %s: %w", f.ID, err)
	}
	if err := os.WriteFile(filepath.Join(dir, f.ID+".json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	svg, err := plotFigure(f)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, f.ID+".svg"), svg, 0o644)
}

// plotFigure draws a figure's curves in the report's style (results/report:
// Liberation Sans, grid, legend top left, SVG).
func plotFigure(f figure.Figure) ([]byte, error) {
	sans := func(size vg.Length) font.Font {
		return font.From(font.Font{Typeface: "Liberation", Variant: "Sans"}, size)
	}
	p := plot.New()
	p.Title.Text = f.Title
	p.Title.TextStyle.Font = sans(13)
	p.X.Label.Text, p.Y.Label.Text = f.XLabel, f.YLabel
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = sans(11)
		a.Tick.Label.Font = sans(10)
	}
	p.Legend.TextStyle.Font = sans(10)
	p.Legend.Top, p.Legend.Left = true, true
	p.Add(plotter.NewGrid())
	for i, s := range f.Series {
		if len(s.X) == 0 {
			continue
		}
		pts := make(plotter.XYs, len(s.X))
		for k := range s.X {
			pts[k].X, pts[k].Y = s.X[k], s.Y[k]
		}
		l, sc, err := plotter.NewLinePoints(pts)
		if err != nil {
			return nil, fmt.Errorf("figure %s, %s: %w", f.ID, s.Name, err)
		}
		l.Color, sc.Color = plotutil.Color(i), plotutil.Color(i)
		sc.Shape = plotutil.Shape(i)
		if len(pts) > 50 {
			sc.Radius = 0 // a time series: the line alone
		}
		p.Add(l, sc)
		p.Legend.Add(s.Name, l, sc)
	}
	wt, err := p.WriterTo(8*vg.Inch, 4.5*vg.Inch, "svg")
	if err != nil {
		return nil, fmt.Errorf("figure %s: %w", f.ID, err)
	}
	var buf bytes.Buffer
	if _, err := wt.WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("figure %s: %w", f.ID, err)
	}
	return buf.Bytes(), nil
}
