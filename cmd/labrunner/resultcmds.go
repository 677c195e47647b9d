package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/labconfig"
	"github.com/labrunner/labrunner/labrun"
	"github.com/labrunner/labrunner/results"
	"github.com/labrunner/labrunner/results/compare"
	"github.com/labrunner/labrunner/results/report"
)

func influxFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "influx-url", Usage: "InfluxDB to export to, e.g. http://influx:8086 (default: the lab file's influx.url)"},
		&cli.StringFlag{Name: "influx-org", Usage: "InfluxDB org (1.8: any name)"},
		&cli.StringFlag{Name: "influx-bucket", Usage: "InfluxDB bucket (1.8: \"db/rp\")"},
		&cli.StringFlag{Name: "influx-token-file", Usage: "file holding the InfluxDB token (1.8: \"user:pass\"); default: the lab's influx.token_file, else $INFLUX_TOKEN"},
	}
}

func exportCommand() *cli.Command {
	return &cli.Command{
		Name:      "export",
		Usage:     "send a run directory's results to InfluxDB (and whatever earlier runs left in the spool)",
		ArgsUsage: "RUN_DIR",
		Description: "Builds the run's points (docs/influxdb.md), spools them under the results root (RUN_DIR's parent, or\n" +
			"--root) and sends everything waiting there. Points leave the spool only once the server acknowledged\n" +
			"them; re-sending a run never duplicates a point. The token comes from --influx-token-file (or the lab's\n" +
			"influx.token_file) or INFLUX_TOKEN and is never printed.\n\n" +
			"Exit codes: 0 everything sent, 2 bad usage, config or token, 3 the server did not take the points (they wait).",
		Flags: append([]cli.Flag{labFlag(),
			&cli.StringFlag{Name: "root", Usage: "results root holding the spool (default: RUN_DIR's parent)"},
		}, influxFlags()...),
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return exitf(labrun.ExitConfig, "export takes one RUN_DIR (labrunner export [flags] RUN_DIR)")
			}
			ctx, stop := interruptible(c)
			defer stop()
			return labrun.Export(ctx, c.Args().First(), c.String("root"), influxOptions(c), c.String("lab"), logger(c), c.App.Writer)
		},
	}
}

// influxOptions maps the --influx-* flags.
func influxOptions(c *cli.Context) labrun.InfluxFlags {
	return labrun.InfluxFlags{URL: c.String("influx-url"), Org: c.String("influx-org"), Bucket: c.String("influx-bucket"), TokenFile: c.String("influx-token-file")}
}

// optionalLab loads --lab when given; nil otherwise (export, compare and
// report need only the lab's influx block and thresholds).
func optionalLab(c *cli.Context) (*labconfig.Lab, error) {
	if c.String("lab") == "" {
		return nil, nil
	}
	return loadLab(c, bitstreams.Default())
}

func reportCommand() *cli.Command {
	return &cli.Command{
		Name:      "report",
		Usage:     "(re)write a run directory's report.html: verdicts failures first, plots against the golden curves",
		ArgsUsage: "RUN_DIR",
		Description: "One self-contained HTML file (plots embedded as SVG) in the run directory. It shows the comparison\n" +
			"with the previous run when the nightly wrote compare.json. scripts/check-report.sh opens it in headless\n" +
			"Chromium and takes a screenshot.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "merge", Usage: "merge the shards' run directories given as arguments into this new directory (verdicts, measurements, run.json, junit.xml) and report on it"},
		},
		Action: func(c *cli.Context) error {
			if into := c.String("merge"); into != "" {
				if c.NArg() < 1 {
					return exitf(labrun.ExitConfig, "report --merge DIR takes the shards' run directories (labrunner report --merge DIR RUN_DIR...)")
				}
				run, err := results.Merge(into, c.Args().Slice())
				if err != nil {
					return withCode(labrun.ExitConfig, err)
				}
				path, err := report.Write(into, labrun.ReportOptions("merged from "+run.Shard))
				if err != nil {
					return withCode(labrun.ExitConfig, err)
				}
				fmt.Fprintln(c.App.Writer, path)
				return nil
			}
			if c.NArg() != 1 {
				return exitf(labrun.ExitConfig, "report takes one RUN_DIR (labrunner report RUN_DIR)")
			}
			path, err := report.Write(c.Args().First(), labrun.ReportOptions())
			if err != nil {
				return withCode(labrun.ExitConfig, fmt.Errorf("writing the report of %s: %w", c.Args().First(), err))
			}
			fmt.Fprintln(c.App.Writer, path)
			return nil
		},
	}
}

func compareCommand() *cli.Command {
	return &cli.Command{
		Name:      "compare",
		Usage:     "what changed from RUN_A to RUN_B: metrics beyond their threshold, new failures, fixed tests",
		ArgsUsage: "RUN_A RUN_B",
		Description: "Thresholds (relative change) come from the lab file's results.thresholds (metric, glob like \"exanet.*\",\n" +
			"or \"*\"), then --threshold, else 5 %.\n\n" +
			"Exit codes: 0 no regression, 1 new failures or metrics that moved the wrong way, 2 bad usage.",
		Flags: []cli.Flag{labFlag(),
			&cli.StringSliceFlag{Name: "threshold", Usage: "METRIC=REL, e.g. exanet.rtt=0.1 or '*=0.05' (repeatable)"},
			&cli.StringSliceFlag{Name: "plan", Usage: "compare only this plan (repeatable)"},
			&cli.BoolFlag{Name: "json", Usage: "print the comparison as JSON"},
		},
		Action: compareRuns,
	}
}

// compareRuns compares two run directories; new failures and metrics that moved the wrong way exit 1.
func compareRuns(c *cli.Context) error {
	if c.NArg() != 2 {
		return exitf(labrun.ExitConfig, "compare takes two run directories (labrunner compare [flags] RUN_A RUN_B)")
	}
	lab, err := optionalLab(c)
	if err != nil {
		return err
	}
	th, err := thresholds(c, lab)
	if err != nil {
		return err
	}
	a, err := compare.Load(c.Args().Get(0))
	if err != nil {
		return withCode(labrun.ExitConfig, err)
	}
	b, err := compare.Load(c.Args().Get(1))
	if err != nil {
		return withCode(labrun.ExitConfig, err)
	}
	r := compare.Compare(a, b, compare.Options{Thresholds: th, Plans: c.StringSlice("plan")})
	if c.Bool("json") {
		enc := json.NewEncoder(c.App.Writer)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			return err
		}
	} else {
		r.WriteText(c.App.Writer, 0)
	}
	if len(r.NewFails) > 0 || r.Worse() > 0 {
		return &exitError{code: labrun.ExitFail}
	}
	return nil
}

func thresholds(c *cli.Context, lab *labconfig.Lab) (compare.Thresholds, error) {
	th := compare.Thresholds{}
	if lab != nil {
		for k, v := range lab.Results.Thresholds {
			th[k] = v
		}
	}
	for _, s := range c.StringSlice("threshold") {
		k, v, ok := strings.Cut(s, "=")
		f, err := strconv.ParseFloat(v, 64)
		if !ok || k == "" || err != nil || f < 0 {
			return nil, exitf(labrun.ExitConfig, "--threshold %q: write METRIC=REL with REL a relative change such as 0.05", s)
		}
		th[k] = f
	}
	return th, nil
}
