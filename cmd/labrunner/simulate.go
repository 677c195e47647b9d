package main

import (
	"encoding/json"
	"errors"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/labrunner/labrunner/golden/simulate"
	"github.com/labrunner/labrunner/golden/tin"
	"github.com/labrunner/labrunner/labrun"
)

func simulateCommand() *cli.Command {
	return &cli.Command{
		Name:      "simulate",
		Usage:     "run the papers' network experiments at their scale; write a JSON file and a plot per figure",
		ArgsUsage: "EXPERIMENT...",
		Description: "EXPERIMENT is one of:\n" +
			"  sc18                 every SC'18 §IV figure below, on the 1,056-node Dragonfly\n" +
			"  " + strings.Join(simulate.SC18Figures, ", ") + "\n" +
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

func runSimulate(c *cli.Context) error {
	o := simulate.Options{Out: c.String("out"), Scale: c.Float64("scale"), Seed: c.Uint64("seed"),
		Preset: c.String("preset"), Alg: c.String("alg"), Pattern: c.String("pattern"), Packet: c.Int("packet"),
		WarmupNs: c.Float64("warmup-ns"), MeasureNs: c.Float64("measure-ns"), Loads: c.String("loads"),
		Clique: c.String("clique"), Bytes: c.Int("bytes"), Packets: c.Int("packets"), Progress: c.App.ErrWriter}
	jobs, err := simulate.Jobs(c.Args().Slice(), o)
	if err != nil {
		return withCode(labrun.ExitConfig, err)
	}
	res, err := simulate.Run(jobs, o)
	if err != nil {
		var ue *simulate.UsageError
		if errors.As(err, &ue) {
			return withCode(labrun.ExitConfig, err)
		}
		return withCode(labrun.ExitInfra, err)
	}
	switch {
	case c.Bool("tsv"):
		err = res.WriteTSV(c.App.Writer)
	case c.Bool("json"):
		enc := json.NewEncoder(c.App.Writer)
		enc.SetIndent("", "  ")
		err = enc.Encode(res.Figures)
	default:
		err = res.WriteTable(c.App.Writer, o.Out)
	}
	if err != nil {
		return err
	}
	if n := res.Failed(); n > 0 {
		return exitf(labrun.ExitFail, "%d reproduced values outside their bands (see %s)", n, o.Out)
	}
	return nil
}
