package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/labconfig"
	"github.com/labrunner/labrunner/results"
	"github.com/labrunner/labrunner/results/compare"
	"github.com/labrunner/labrunner/results/influx"
	"github.com/labrunner/labrunner/results/progress"
	"github.com/labrunner/labrunner/results/report"
	"github.com/labrunner/labrunner/selftest"
	"github.com/labrunner/labrunner/selftest/bringup"
)

// exportDeadline bounds the InfluxDB export at the end of a nightly: a slow
// server leaves its points in the spool rather than holding the run.
const exportDeadline = 2 * time.Minute

func influxFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "influx-url", Usage: "InfluxDB to export to, e.g. http://influx:8086 (default: the lab file's influx.url)"},
		&cli.StringFlag{Name: "influx-org", Usage: "InfluxDB org (1.8: any name)"},
		&cli.StringFlag{Name: "influx-bucket", Usage: "InfluxDB bucket (1.8: \"db/rp\")"},
		&cli.StringFlag{Name: "influx-token-file", Usage: "file holding the InfluxDB token (1.8: \"user:pass\"); default: the lab's influx.token_file, else $INFLUX_TOKEN"},
	}
}

// influxConfig merges the lab file's influx block with the flags (flags
// win, field by field). It returns nil when no server is named.
func influxConfig(c *cli.Context, lab *labconfig.Lab, log *slog.Logger) (*influx.Config, error) {
	var cfg influx.Config
	tokenFile := ""
	if lab != nil && lab.Influx != nil {
		cfg.URL, cfg.Org, cfg.Bucket = lab.Influx.URL, lab.Influx.Org, lab.Influx.Bucket
		tokenFile = lab.Influx.TokenFile
		if tokenFile != "" && !filepath.IsAbs(tokenFile) && lab.Pos.File != "" && !isEmbedded(lab) {
			tokenFile = filepath.Join(filepath.Dir(lab.Pos.File), tokenFile)
		}
	}
	for name, dst := range map[string]*string{"influx-url": &cfg.URL, "influx-org": &cfg.Org, "influx-bucket": &cfg.Bucket, "influx-token-file": &tokenFile} {
		if c.IsSet(name) {
			*dst = c.String(name)
		}
	}
	if cfg.URL == "" {
		if c.IsSet("influx-org") || c.IsSet("influx-bucket") || c.IsSet("influx-token-file") {
			return nil, exitf(selftest.ExitConfig, "--influx-org/--influx-bucket/--influx-token-file need --influx-url (or influx.url in the lab file)")
		}
		return nil, nil
	}
	if err := cfg.Validate(); err != nil {
		return nil, withCode(selftest.ExitConfig, err)
	}
	tok, err := influx.LoadToken(tokenFile)
	if err != nil {
		return nil, withCode(selftest.ExitConfig, err)
	}
	if tok == "" {
		log.Info("no InfluxDB token given (--influx-token-file or INFLUX_TOKEN): writing without authentication", "influx", cfg)
	}
	cfg.Token = tok
	cfg.Log = log
	return &cfg, nil
}

// loggerTo is logger() writing to w (the progress display's writer).
func loggerTo(c *cli.Context, w io.Writer) *slog.Logger {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(c.String("log-level"))); err != nil {
		lvl = slog.LevelInfo
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: lvl}))
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
				return exitf(selftest.ExitConfig, "export takes one RUN_DIR (labrunner export [flags] RUN_DIR)")
			}
			dir := c.Args().First()
			if _, err := results.ReadRun(dir); err != nil {
				return withCode(selftest.ExitConfig, err)
			}
			log := logger(c)
			lab, err := optionalLab(c)
			if err != nil {
				return err
			}
			cfg, err := influxConfig(c, lab, log)
			if err != nil {
				return err
			}
			if cfg == nil {
				return exitf(selftest.ExitConfig, "no InfluxDB named: give --influx-url, --influx-org and --influx-bucket (or a lab file with an influx: block)")
			}
			root := c.String("root")
			if root == "" {
				root = filepath.Dir(filepath.Clean(dir))
			}
			ex, err := influx.New(*cfg, root)
			if err != nil {
				return withCode(selftest.ExitConfig, err)
			}
			defer ex.Close()
			ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
			defer stop()
			res, err := ex.Export(ctx, dir)
			refused := ""
			if res.Quarantined > 0 {
				refused = fmt.Sprintf(", %d refused by the server (kept in the spool's quarantine/)", res.Quarantined)
			}
			fmt.Fprintf(os.Stdout, "influx: %d points of %s spooled; %d sent%s, %d waiting in %s\n",
				res.Spooled, filepath.Base(dir), res.Sent, refused, res.Waiting, res.Spool)
			return exportExit(err)
		},
	}
}

// exportExit maps an export failure to an exit code: a token or bucket
// problem is configuration (2), a server that did not take the points is
// infrastructure (3).
func exportExit(err error) error {
	if err == nil {
		return nil
	}
	var xe *influx.Error
	if errors.As(err, &xe) && (xe.Kind == influx.Auth || xe.Kind == influx.NotFound) {
		return withCode(selftest.ExitConfig, err)
	}
	return withCode(selftest.ExitInfra, err)
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
					return exitf(selftest.ExitConfig, "report --merge DIR takes the shards' run directories (labrunner report --merge DIR RUN_DIR...)")
				}
				run, err := results.Merge(into, c.Args().Slice())
				if err != nil {
					return withCode(selftest.ExitConfig, err)
				}
				path, err := report.Write(into, reportOptions("merged from "+run.Shard))
				if err != nil {
					return withCode(selftest.ExitConfig, err)
				}
				fmt.Fprintln(os.Stdout, path)
				return nil
			}
			if c.NArg() != 1 {
				return exitf(selftest.ExitConfig, "report takes one RUN_DIR (labrunner report RUN_DIR)")
			}
			path, err := report.Write(c.Args().First(), reportOptions())
			if err != nil {
				return withCode(selftest.ExitConfig, fmt.Errorf("writing the report of %s: %w", c.Args().First(), err))
			}
			fmt.Fprintln(os.Stdout, path)
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
		Action: func(c *cli.Context) error {
			if c.NArg() != 2 {
				return exitf(selftest.ExitConfig, "compare takes two run directories (labrunner compare [flags] RUN_A RUN_B)")
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
				return withCode(selftest.ExitConfig, err)
			}
			b, err := compare.Load(c.Args().Get(1))
			if err != nil {
				return withCode(selftest.ExitConfig, err)
			}
			r := compare.Compare(a, b, compare.Options{Thresholds: th, Plans: c.StringSlice("plan")})
			if c.Bool("json") {
				enc := json.NewEncoder(os.Stdout)
				enc.SetIndent("", "  ")
				if err := enc.Encode(r); err != nil {
					return err
				}
			} else {
				r.WriteText(os.Stdout, 0)
			}
			if len(r.NewFails) > 0 || r.Worse() > 0 {
				return &exitError{code: selftest.ExitFail}
			}
			return nil
		},
	}
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
			return nil, exitf(selftest.ExitConfig, "--threshold %q: write METRIC=REL with REL a relative change such as 0.05", s)
		}
		th[k] = f
	}
	return th, nil
}

// progressPlans describes the selected plans for the progress display:
// their boards and their steps (check bitstreams, program, setup, tests).
func progressPlans(lab *labconfig.Lab, only []string, mgmt bool) []progress.Plan {
	want := map[string]bool{}
	for _, p := range only {
		want[p] = true
	}
	var out []progress.Plan
	for _, p := range lab.Plans {
		if len(want) > 0 && !want[p.Name] {
			continue
		}
		pp := progress.Plan{Name: p.Name, Steps: selftest.Steps(&p, mgmt)}
		for _, b := range p.Boards {
			pp.Boards = append(pp.Boards, b.Board)
		}
		out = append(out, pp)
	}
	return out
}

// verdictCounts counts a run's verdicts per board, for the progress bars.
func verdictCounts(current func() *results.Dir) progress.CountsFunc {
	return func() map[string]progress.Counts {
		out := map[string]progress.Counts{}
		dir := current()
		if dir == nil {
			return out
		}
		for _, v := range dir.Verdicts() {
			c := out[v.Board]
			c.Verdicts++
			if v.Status == results.Fail || v.Status == results.Error {
				c.NotPass++
			}
			out[v.Board] = c
		}
		return out
	}
}

// afterRun is the end of a nightly: compare with the previous run of each
// plan, export to InfluxDB, write the report. None of it changes the run's
// verdicts or exit code; each step's trouble is logged and reported.
type afterRun struct {
	cmp       *compare.Result
	exportMsg string
	exportErr error
}

func finishNightly(ctx context.Context, c *cli.Context, lab *labconfig.Lab, root string, dir *results.Dir, icfg *influx.Config, log *slog.Logger) afterRun {
	var out afterRun
	th, err := thresholds(c, lab)
	if err != nil {
		th = compare.Thresholds(lab.Results.Thresholds)
	}
	if r, err := compare.WithPrevious(root, dir.Path, th); err != nil {
		log.Warn("comparing with the previous run failed", "err", err)
	} else {
		out.cmp = r
		if err := compare.Save(dir.Path, r); err != nil {
			log.Warn("writing compare.json failed", "err", err)
		}
	}
	// The points in line protocol, for this export and any later one.
	if n, err := influx.WritePointsFile(dir.Path); err != nil {
		log.Warn("writing the run's points file failed; an export rebuilds the points from the logs", "err", err)
	} else {
		log.Info("points written", "file", influx.PointsFile, "points", n)
	}
	if icfg != nil {
		out.exportMsg, out.exportErr = exportRun(ctx, *icfg, root, dir.Path)
		if out.exportErr != nil {
			log.Warn("InfluxDB export incomplete; the run's verdicts are unaffected", "err", out.exportErr)
		}
	}
	var notes []string
	if out.exportMsg != "" {
		notes = append(notes, out.exportMsg)
	}
	if _, err := report.Write(dir.Path, reportOptions(notes...)); err != nil {
		log.Error("writing report.html failed", "err", err)
	}
	return out
}

// reportOptions are the options of every report the CLI writes: the
// catalogue's designs and the bring-up (not a catalogue design) describe
// the figures drawn for their plans.
func reportOptions(notes ...string) report.Options {
	return report.Options{Notes: notes, Catalogue: bitstreams.Default(),
		Procedures: map[string]*bitstreams.Report{bringup.PlanName: bringup.Figures()},
		Sections:   []report.SectionFunc{report.CampaignSection, report.HarnessSection}}
}

func exportRun(ctx context.Context, cfg influx.Config, root, dir string) (string, error) {
	ex, err := influx.New(cfg, root)
	if err != nil {
		return "InfluxDB export not attempted: " + err.Error(), err
	}
	defer ex.Close()
	ctx, cancel := context.WithTimeout(ctx, exportDeadline)
	defer cancel()
	res, err := ex.Export(ctx, dir)
	msg := fmt.Sprintf("InfluxDB (%s): %d points sent, %d waiting in the spool %s", cfg, res.Sent, res.Waiting, res.Spool)
	if res.Quarantined > 0 {
		msg += fmt.Sprintf(", %d refused and kept in its quarantine/", res.Quarantined)
	}
	if err != nil {
		var xe *influx.Error
		if errors.As(err, &xe) {
			msg += fmt.Sprintf(" (%s: %s)", xe.Kind, xe.Message)
		} else {
			msg += " (" + err.Error() + ")"
		}
	}
	return msg, err
}
