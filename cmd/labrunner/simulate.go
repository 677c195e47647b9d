package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/labrunner/labrunner/golden/figure"
	"github.com/labrunner/labrunner/golden/ordering"
	"github.com/labrunner/labrunner/golden/tin"
	"github.com/labrunner/labrunner/results/progress"
	"github.com/labrunner/labrunner/selftest"
)

// sc18Figures are the SC'18 §IV experiments `golden simulate` runs, in
// the paper's order.
var sc18Figures = []string{"sc18-fig8a", "sc18-fig8b", "sc18-fig9", "sc18-fig10", "sc18-fig11", "sc18-fig12", "sc18-sizing"}

func simulateCommand() *cli.Command {
	return &cli.Command{
		Name:      "simulate",
		Usage:     "run the papers' network experiments at their scale; write a JSON file and a plot per figure",
		ArgsUsage: "EXPERIMENT...",
		Description: "EXPERIMENT is one of:\n" +
			"  sc18                 every SC'18 §IV figure below, on the 1,056-node Dragonfly\n" +
			"  " + strings.Join(sc18Figures, ", ") + "\n" +
			"  synthetic            a load sweep of synthetic traffic on --preset (" + strings.Join(tin.PresetNames(), ", ") + ")\n" +
			"  aquila-rtt           IP fabric RTT vs load (RTS/CTS, Aquila §3.3, §5.1) on --clique\n" +
			"Each figure goes to OUT/<id>.json (curves, and each reproduced value next to the paper's with its band)\n" +
			"and OUT/<id>.svg. Exit 1 when a reproduced value is outside its band, 2 on bad usage.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "out", Value: "simulate-out", Usage: "directory for the JSON files and plots"},
			&cli.Float64Flag{Name: "scale", Value: 1, Usage: "SC'18 run lengths as a fraction of the paper-scale runs (0 < scale <= 4)"},
			&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "seed of every run"},
			&cli.StringFlag{Name: "preset", Value: "booksim-dragonfly", Usage: "network of `synthetic`: " + strings.Join(tin.PresetNames(), ", ")},
			&cli.StringFlag{Name: "alg", Usage: "routing of `synthetic` (default: the preset's): minimal, valiant, ugal, par, fully-adaptive, minimal-adaptive, deterministic"},
			&cli.StringFlag{Name: "pattern", Value: "uniform", Usage: "traffic of `synthetic`: uniform or group-shift"},
			&cli.StringFlag{Name: "loads", Value: "0.1,0.3,0.5", Usage: "offered loads, fractions of the injection rate"},
			&cli.IntFlag{Name: "packet", Usage: "packet size of `synthetic` in bytes (flits); 0: the preset's"},
			&cli.Float64Flag{Name: "warmup-ns", Usage: "warm-up of `synthetic` (0: BookSim's anchor, 6000 ns with measure-ns 0)"},
			&cli.Float64Flag{Name: "measure-ns", Usage: "measurement window of `synthetic` (0: 6000 ns)"},
			&cli.StringFlag{Name: "clique", Value: "48x12", Usage: "pods x TiNs of `aquila-rtt` (8 global ports per TiN)"},
			&cli.IntFlag{Name: "bytes", Value: 1500, Usage: "request size of `aquila-rtt`"},
			&cli.IntFlag{Name: "packets", Value: 20000, Usage: "measured requests per load of `aquila-rtt`"},
			&cli.BoolFlag{Name: "json", Usage: "print the figures as JSON on stdout instead of the table"},
			&cli.BoolFlag{Name: "tsv", Usage: "print one TSV row per load of `synthetic` (load, latency_ns, accepted, packets, hops, nonminimal, events) instead of the table, for scripts"},
		},
		Action: runSimulate,
	}
}

type simJob struct {
	name string
	run  func(step func(string)) ([]figure.Figure, any, error)
}

func runSimulate(c *cli.Context) error {
	if c.NArg() == 0 {
		return exitf(selftest.ExitConfig, "golden simulate takes one or more EXPERIMENTs: sc18, %s, synthetic, aquila-rtt", strings.Join(sc18Figures, ", "))
	}
	scale := c.Float64("scale")
	if !(scale > 0 && scale <= 4) {
		return exitf(selftest.ExitConfig, "--scale %g: want 0 < scale <= 4", scale)
	}
	loads, err := parseLoadList(c.String("loads"))
	if err != nil {
		return exitf(selftest.ExitConfig, "--loads: %v", err)
	}
	x := ordering.PaperSC18(c.Uint64("seed"))
	x.Scale = scale
	var jobs []simJob
	seen := map[string]bool{}
	add := func(j simJob) {
		if !seen[j.name] {
			seen[j.name] = true
			jobs = append(jobs, j)
		}
	}
	for _, a := range c.Args().Slice() {
		switch a = strings.ToLower(a); {
		case a == "sc18":
			for _, n := range sc18Figures {
				add(sc18Job(x, n))
			}
		case strings.HasPrefix(a, "sc18-"):
			j := sc18Job(x, a)
			if j.run == nil {
				return exitf(selftest.ExitConfig, "no experiment %q: the SC'18 ones are %s", a, strings.Join(sc18Figures, ", "))
			}
			add(j)
		case a == "synthetic":
			j, err := syntheticJob(c, loads)
			if err != nil {
				return withCode(selftest.ExitConfig, err)
			}
			add(j)
		case a == "aquila-rtt":
			j, err := rttJob(c, loads)
			if err != nil {
				return withCode(selftest.ExitConfig, err)
			}
			add(j)
		default:
			return exitf(selftest.ExitConfig, "no experiment %q: want sc18, %s, synthetic or aquila-rtt", a, strings.Join(sc18Figures, ", "))
		}
	}
	out := c.String("out")
	if err := os.MkdirAll(out, 0o755); err != nil {
		return exitf(selftest.ExitConfig, "--out %s: %v", out, err)
	}
	prog := progress.New(os.Stderr, []progress.Plan{{Name: "simulate", Boards: []string{"golden"}, Steps: len(jobs)}}, nil)
	var figs []figure.Figure
	var rows []string
	for _, j := range jobs {
		prog.Step("simulate", j.name)
		start := time.Now()
		fs, detail, err := j.run(func(s string) { fmt.Fprintf(prog.Writer(), "  %s: %s\n", j.name, s) })
		if err != nil {
			prog.Close()
			return withCode(selftest.ExitInfra, fmt.Errorf("%s: %w", j.name, err))
		}
		if rs, ok := detail.([]tin.SynthResult); ok && len(fs) == 1 {
			for i, r := range rs {
				rows = append(rows, fmt.Sprintf("%g\t%.3f\t%.5f\t%d\t%.3f\t%.4f\t%d", fs[0].Series[0].X[i], r.LatencyNs, r.Accepted, r.Packets, r.Hops, r.NonMinimal, r.Events))
			}
		}
		for _, f := range fs {
			if err := writeFigure(out, f, detail, c, time.Since(start)); err != nil {
				prog.Close()
				return withCode(selftest.ExitInfra, err)
			}
			figs = append(figs, f)
		}
	}
	prog.Close()
	failed := 0
	for _, f := range figs {
		failed += len(f.Failed())
	}
	switch {
	case c.Bool("tsv"):
		fmt.Println("load\tlatency_ns\taccepted\tpackets\thops\tnonminimal\tevents")
		for _, r := range rows {
			fmt.Println(r)
		}
	case c.Bool("json"):
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(figs); err != nil {
			return err
		}
	default:
		tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "FIGURE\tCHECK\tSIMULATED\tPAPER\tBAND\tOK")
		for _, f := range figs {
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
		fmt.Printf("%d figures in %s; %d reproduced values outside their bands\n", len(figs), out, failed)
	}
	if failed > 0 {
		return exitf(selftest.ExitFail, "%d reproduced values outside their bands (see %s)", failed, out)
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

func sc18Job(x ordering.SC18, name string) simJob {
	one := func(f func() (figure.Figure, error)) func(func(string)) ([]figure.Figure, any, error) {
		return func(func(string)) ([]figure.Figure, any, error) {
			fig, err := f()
			return []figure.Figure{fig}, nil, err
		}
	}
	j := simJob{name: name}
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

func syntheticJob(c *cli.Context, loads []float64) (simJob, error) {
	p, err := tin.LookupPreset(c.String("preset"))
	if err != nil {
		return simJob{}, err
	}
	alg := p.Alg
	if s := c.String("alg"); s != "" {
		if alg, err = tin.ParseAlgorithm(s); err != nil {
			return simJob{}, err
		}
	}
	pat, err := tin.ParsePattern(c.String("pattern"))
	if err != nil {
		return simJob{}, err
	}
	if n := c.Int("packet"); n < 0 || n > tin.MaxPacket {
		return simJob{}, fmt.Errorf("--packet %d: want 0 (the preset's) or 1..%d", n, tin.MaxPacket)
	}
	sc := tin.SweepConfig{Preset: p, Alg: alg, Pattern: pat, Packet: c.Int("packet"), Loads: loads,
		WarmupNs: c.Float64("warmup-ns"), MeasureNs: c.Float64("measure-ns"), Seed: c.Uint64("seed")}
	return simJob{name: "synthetic " + p.Name, run: func(step func(string)) ([]figure.Figure, any, error) {
		sc.Progress = func(l float64) { step(fmt.Sprintf("load %g", l)) }
		f, rs, err := tin.LoadSweep(sc)
		return []figure.Figure{f}, rs, err
	}}, nil
}

func rttJob(c *cli.Context, loads []float64) (simJob, error) {
	pods, tins, ok := strings.Cut(strings.ToLower(c.String("clique")), "x")
	p, err1 := strconv.Atoi(pods)
	t, err2 := strconv.Atoi(tins)
	if !ok || err1 != nil || err2 != nil {
		return simJob{}, fmt.Errorf("--clique %q: want pods x TiNs, e.g. 48x12", c.String("clique"))
	}
	cl, err := tin.NewClique(p, t, tin.GlobalPortsPerTiN)
	if err != nil {
		return simJob{}, err
	}
	n := c.Int("packets")
	cfg := tin.SimConfig{Clique: cl, Timing: tin.PaperTiming(), Mode: tin.FullyAdaptive, Bytes: c.Int("bytes"), ReplyBytes: 64,
		Warmup: n / 10, Packets: n, Align: 8, Seed: c.Uint64("seed"), Load: loads[0]}
	return simJob{name: "aquila-rtt " + cl.Param(), run: func(step func(string)) ([]figure.Figure, any, error) {
		f, rs, err := tin.RTTSweep(cfg, loads, func(l float64) { step(fmt.Sprintf("load %g", l)) })
		return []figure.Figure{f}, rs, err
	}}, nil
}

// writeFigure writes OUT/<id>.json and OUT/<id>.svg.
func writeFigure(dir string, f figure.Figure, detail any, c *cli.Context, took time.Duration) error {
	doc := struct {
		figure.Figure
		Seed    uint64  `json:"seed"`
		Scale   float64 `json:"scale"`
		Seconds float64 `json:"seconds"`
		Detail  any     `json:"detail,omitempty"`
	}{f, c.Uint64("seed"), c.Float64("scale"), took.Seconds(), detail}
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
