package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/labrun"
	"github.com/labrunner/labrunner/results"
	"github.com/labrunner/labrunner/results/bands"
	"github.com/labrunner/labrunner/selftest"
	"github.com/labrunner/labrunner/selftest/bringup"
	"github.com/labrunner/labrunner/selftest/campaign"
)

// quietLogger is the logger of commands that run plans for their own
// output (a table): errors on the terminal unless --log-level says more.
func quietLogger(c *cli.Context) *slog.Logger {
	if c.IsSet("log-level") {
		return logger(c)
	}
	return slog.New(slog.NewTextHandler(c.App.ErrWriter, &slog.HandlerOptions{Level: slog.LevelError}))
}

func mgmtCheck(c *cli.Context, cat *bitstreams.Catalogue) func(ctx context.Context, env *selftest.Env) error {
	if c.Bool(noMgmt) {
		return nil
	}
	return bringup.NightlyCheck(cat)
}

func campaignCommand() *cli.Command {
	return &cli.Command{
		Name:  "campaign",
		Usage: "run the plans once per fault of the registry and target: which faults they catch, how, and at what cost",
		Description: "Runs the selected plans once without a fault (the baseline), then once per fault that `labrunner faults`\n" +
			"lists (and per severe setting of a benign one) on each target it can name in the plans' boards, or, with\n" +
			"--targets rotation (the default), on one target per fault and board group chosen by --night, so that over as\n" +
			"many nights as a fault has targets every target is covered. Faults of different board groups run in the same\n" +
			"round, the groups in parallel. The table (and campaign.json, campaign.txt and a section of report.html in\n" +
			"the baseline's run directory) gives each fault's exit code, outcome (caught, escaped; a benign fault:\n" +
			"absorbed or false-alarm), class, the tests that caught it, the harness counters it moved, and wall time.\n\n" +
			"Exit codes: 0 every fault caught and every benign one absorbed, 1 a fault escaped or a benign one failed a\n" +
			"run, 2 bad usage or config, 3 interrupted or infrastructure trouble running the campaign itself.",
		Flags: []cli.Flag{
			labFlag(),
			&cli.StringFlag{Name: "out", Usage: "results root: the baseline's run directory is created inside it (default: the lab's results.root, else ./runs)"},
			&cli.StringSliceFlag{Name: "plan", Usage: "only this plan (repeatable)"},
			&cli.StringSliceFlag{Name: "faults", Usage: "only faults whose name matches this pattern (repeatable; e.g. uart-*, mos-lossy)"},
			&cli.StringFlag{Name: "targets", Value: campaign.TargetsRotation, Usage: "all: every target each fault can name; rotation: one per fault and board group, by --night"},
			&cli.IntFlag{Name: "night", Usage: "the rotation's night, so that a nightly job rotates by itself", DefaultText: "days since 1970-01-01 UTC"},
			seedFlag(),
			&cli.IntFlag{Name: "parallel", Usage: "run at most this many board groups at once (0: all)"},
			noMgmtFlag(),
			&cli.BoolFlag{Name: "json", Usage: "print the campaign as JSON instead of the table"},
		},
		Action: runCampaign,
	}
}

func runCampaign(c *cli.Context) error {
	cat := bitstreams.Default()
	lab, err := loadLab(c, cat)
	if err != nil {
		return err
	}
	night := c.Int("night")
	if !c.IsSet("night") {
		night = int(time.Now().UTC().Unix() / 86400)
	}
	opts := campaign.Options{Lab: lab, Catalogue: cat, Plans: c.StringSlice("plan"), Faults: c.StringSlice("faults"),
		Targets: c.String("targets"), Night: night, Root: labrun.ResultsRoot(c.String("out"), lab), Seed: c.Int64("seed"),
		Log: quietLogger(c), Mgmt: mgmtCheck(c, cat), Parallel: c.Int("parallel"), Progress: campaignProgress(c)}
	if _, err := campaign.Jobs(opts); err != nil {
		return withCode(labrun.ExitConfig, err)
	}
	ctx, stop := interruptible(c)
	defer stop()
	camp, dir, err := campaign.Run(ctx, opts)
	if camp == nil {
		return withCode(labrun.ExitInfra, err)
	}
	if werr := campaign.Save(dir, camp); werr != nil {
		return withCode(labrun.ExitInfra, werr)
	}
	if werr := writeCampaign(c, camp); werr != nil {
		return werr
	}
	fmt.Fprintf(c.App.ErrWriter, "run directory: %s (the campaign's baseline, with %s, %s and report.html)\n", dir, results.CampaignFile, campaign.TextFile)
	if err != nil {
		return withCode(labrun.ExitInfra, err)
	}
	n := camp.Counts()
	if n[results.Escaped]+n[results.FalseAlarm] > 0 {
		return withCode(labrun.ExitFail, fmt.Errorf("%d faults escaped, %d benign faults failed a run", n[results.Escaped], n[results.FalseAlarm]))
	}
	return nil
}

// campaignProgress says on the terminal which round runs.
func campaignProgress(c *cli.Context) func(round, rounds int, faults []string) {
	return func(round, rounds int, faults []string) {
		if round == 0 {
			fmt.Fprintf(c.App.ErrWriter, "baseline: the plans without a fault (%d rounds of faults follow)\n", rounds)
			return
		}
		fmt.Fprintf(c.App.ErrWriter, "round %d/%d: %s\n", round, rounds, strings.Join(faults, " "))
	}
}

// writeCampaign prints the campaign: as JSON with --json, else its table.
func writeCampaign(c *cli.Context, camp *results.Campaign) error {
	if c.Bool("json") {
		enc := json.NewEncoder(c.App.Writer)
		enc.SetIndent("", "  ")
		return enc.Encode(camp)
	}
	return campaign.WriteTable(c.App.Writer, camp)
}

func bandsCommand() *cli.Command {
	return &cli.Command{
		Name:  "bands",
		Usage: "list every band a plan's verdicts are judged with: relative width below and above, budget, reason",
		Description: "Reads the expectations of a run directory (--run), or runs the plans on the emulated rack first (into\n" +
			"--out, default a temporary directory), and lists each numeric band once: plan, test, metric and\n" +
			"parameters, the expectation, how far it reaches below and above its reference, how many boards share it,\n" +
			"what its width is made of (budget) and the reason it may be wider than ±10% (or open). Bands that need a\n" +
			"reason and have none are marked `!`; --check exits 1 when there is one.",
		Flags: []cli.Flag{
			labFlag(),
			&cli.StringFlag{Name: "run", Usage: "a run directory whose expectations.jsonl to read (default: run the plans now)"},
			&cli.StringSliceFlag{Name: "plan", Usage: "only this plan (repeatable)"},
			&cli.StringFlag{Name: "out", Usage: "results root for the run made when --run is not given (default: a temporary directory, removed after)"},
			&cli.BoolFlag{Name: "offenders", Usage: "list only the bands that need a reason and have none"},
			&cli.BoolFlag{Name: "check", Usage: "exit 1 when a band needs a reason and has none"},
			&cli.BoolFlag{Name: "json", Usage: "print JSON"},
			seedFlag(),
			noMgmtFlag(),
		},
		Action: runBands,
	}
}

func runBands(c *cli.Context) error {
	dir, plans := c.String("run"), c.StringSlice("plan")
	if dir == "" {
		var cleanup func()
		var err error
		if dir, cleanup, err = bandsRun(c, plans); err != nil {
			return err
		}
		defer cleanup()
	}
	bs, err := bands.FromRun(dir)
	if err != nil {
		return withCode(labrun.ExitConfig, err)
	}
	bs = keepPlans(bs, plans)
	shown := bs
	if c.Bool("offenders") {
		shown = bands.Offenders(bs)
	}
	if c.Bool("json") {
		enc := json.NewEncoder(c.App.Writer)
		enc.SetIndent("", "  ")
		if err := enc.Encode(shown); err != nil {
			return err
		}
	} else if err := bands.WriteTable(c.App.Writer, shown); err != nil {
		return err
	}
	if n := len(bands.Offenders(bs)); c.Bool("check") && n > 0 {
		return exitf(labrun.ExitFail, "%d bands wider than ±%.0f%% (or open) without a reason", n, results.WideBand*100)
	}
	return nil
}

// bandsRun runs the plans on the emulated rack for their expectations, into
// --out or a temporary directory (cleanup removes it), and returns the run
// directory.
func bandsRun(c *cli.Context, plans []string) (dir string, cleanup func(), err error) {
	cat := bitstreams.Default()
	lab, err := loadLab(c, cat)
	if err != nil {
		return "", nil, err
	}
	if err := labrun.KnownPlans(lab, plans); err != nil {
		return "", nil, err
	}
	root, cleanup := c.String("out"), func() {}
	if root == "" {
		tmp, err := os.MkdirTemp("", "labrunner-bands-")
		if err != nil {
			return "", nil, withCode(labrun.ExitInfra, err)
		}
		root, cleanup = tmp, func() { os.RemoveAll(tmp) }
	}
	ctx, stop := interruptible(c)
	defer stop()
	fmt.Fprintf(c.App.ErrWriter, "running %s on the emulated rack for its expectations...\n", strings.Join(labrun.PlanNames(lab, plans), ", "))
	res, err := campaign.RunPlans(ctx, campaign.RunOptions{Lab: lab, Catalogue: cat, Plans: plans, Seed: c.Int64("seed"),
		Root: root, Log: quietLogger(c), Mgmt: mgmtCheck(c, cat), Command: "labrunner golden bands"})
	if err != nil {
		cleanup()
		return "", nil, withCode(labrun.ExitInfra, err)
	}
	if c.IsSet("out") {
		fmt.Fprintf(c.App.ErrWriter, "run directory: %s\n", res.Dir)
	}
	return res.Dir, cleanup, nil
}

func keepPlans(bs []bands.Band, plans []string) []bands.Band {
	if len(plans) == 0 {
		return bs
	}
	want := map[string]bool{}
	for _, p := range plans {
		want[p] = true
	}
	var out []bands.Band
	for _, b := range bs {
		if want[b.Plan] {
			out = append(out, b)
		}
	}
	return out
}
