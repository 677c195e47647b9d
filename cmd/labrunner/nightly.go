package main

import (
	"time"

	"github.com/urfave/cli/v2"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/labrun"
)

// noMgmt is the flag that leaves out the management check of each plan's
// boards.
const noMgmt = "no-mgmt"

func noMgmtFlag() cli.Flag {
	return &cli.BoolFlag{Name: noMgmt, Usage: "leave out each plan's management check (firmware, MOS channels, " +
		"TimeSync offsets and link delays against golden/bringup, an ECHO over every cable): for boards without the management block"}
}

func nightlyCommand() *cli.Command {
	return &cli.Command{
		Name:  "nightly",
		Usage: "run the lab's plans on every board and write a run directory (the main job)",
		Description: "Runs every plan of the lab (or those named with --plan) on its boards, plans on disjoint boards in\n" +
			"parallel. Each board's bitstream is checked against its part before anything is programmed; every\n" +
			"hardware step runs under the lab file's deadlines. Results go to a new directory under --out:\n" +
			"run.json, measurements.jsonl, verdicts.json, junit.xml, report.html and the console transcripts. Each plan is\n" +
			"compared with its previous run in the same results root (compare.json). With --influx-url (or the lab's\n" +
			"influx: block) the results go to InfluxDB through a disk spool: a server that is down never fails the run,\n" +
			"and its points go out with the next run or `labrunner export`.\n\n" +
			"Exit codes: 0 all passed, 1 a verdict failed, 2 bad usage or config, 3 infrastructure error.",
		Flags: append([]cli.Flag{
			labFlag(),
			&cli.StringFlag{Name: "out", Usage: "results root: run directories are created inside it (default: the lab's results.root, else ./runs)"},
			&cli.StringSliceFlag{Name: "plan", Usage: "run only this plan (repeatable)"},
			faultFlag(),
			seedFlag(),
			&cli.StringFlag{Name: "resume", Usage: "go on with the run directory of a nightly that crashed or was killed: tests whose verdicts are on disk are skipped, the rest run (same lab, plans, faults and seed)"},
			&cli.StringFlag{Name: "shard", Usage: "run this lab host's share i/n of the board groups (every host computes the same split; see docs/ci.md)"},
			&cli.IntFlag{Name: "parallel", Usage: "run at most this many board groups at once (0: all)"},
			locksFlag(),
			&cli.StringFlag{Name: "held", Value: "skip", Usage: "boards someone else holds: skip (report them skipped) or wait (up to --held-wait, then skip)"},
			&cli.DurationFlag{Name: "held-wait", Value: 30 * time.Minute, Usage: "how long --held wait waits for held boards"},
			noMgmtFlag(),
		}, influxFlags()...),
		Action: func(c *cli.Context) error {
			o := nightlyOptions(c, c.StringSlice("plan"))
			o.Resume, o.Shard, o.Parallel = c.String("resume"), c.String("shard"), c.Int("parallel")
			o.Locks, o.Held, o.HeldWait = c.String("locks"), labrun.HeldPolicy(c.String("held")), c.Duration("held-wait")
			o.NoMgmt = c.Bool(noMgmt)
			return runNightly(c, o)
		},
	}
}

func selftestCommand() *cli.Command {
	return &cli.Command{
		Name:      "selftest",
		Usage:     "run one plan (or all) — the nightly's machinery for a quick check during bring-up",
		ArgsUsage: "[PLAN...]",
		Flags:     append([]cli.Flag{labFlag(), &cli.StringFlag{Name: "out", Usage: "results root"}, faultFlag(), seedFlag()}, influxFlags()...),
		Action: func(c *cli.Context) error {
			return runNightly(c, nightlyOptions(c, c.Args().Slice()))
		},
	}
}

// nightlyOptions maps the flags the nightly and selftest commands share.
func nightlyOptions(c *cli.Context, plans []string) labrun.Options {
	lvl, _ := logLevel(c.String("log-level"))
	return labrun.Options{
		LabFile: c.String("lab"), Catalogue: bitstreams.Default(), Out: c.String("out"), Plans: plans,
		Faults: c.StringSlice("fault"), Seed: seedOption(c), Influx: influxOptions(c),
		LogLevel: lvl, LogLevelSet: c.IsSet("log-level"), Stdout: c.App.Writer, Stderr: c.App.ErrWriter,
		Command: "labrunner " + c.Command.Name, Version: buildVersion(),
	}
}

// runNightly runs the nightly under a context that SIGINT and SIGTERM end
// (the run then ends "interrupted", its directory resumable) and maps how
// it ended to the exit code.
func runNightly(c *cli.Context, o labrun.Options) error {
	ctx, stop := interruptible(c)
	defer stop()
	res, err := labrun.Nightly(ctx, o)
	if err != nil {
		return err
	}
	if res.ExitCode != labrun.ExitPass {
		return &exitError{code: res.ExitCode}
	}
	return nil
}

// seedOption is --seed when given; nil leaves the lab's.
func seedOption(c *cli.Context) *int64 {
	if !c.IsSet("seed") {
		return nil
	}
	s := c.Int64("seed")
	return &s
}
