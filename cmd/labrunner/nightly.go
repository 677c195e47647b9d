package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"labrunner/bitstreams"
	"labrunner/labconfig"
	"labrunner/results"
	"labrunner/results/progress"
	"labrunner/results/report"
	"labrunner/selftest"
)

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
			labFlag,
			&cli.StringFlag{Name: "out", Usage: "results root: run directories are created inside it (default: the lab's results.root, else ./runs)"},
			&cli.StringSliceFlag{Name: "plan", Usage: "run only this plan (repeatable)"},
			faultFlag,
			seedFlag,
		}, influxFlags()...),
		Action: func(c *cli.Context) error {
			if err := noTrailingFlags(c); err != nil {
				return err
			}
			return runNightly(c, c.StringSlice("plan"))
		},
	}
}

func selftestCommand() *cli.Command {
	return &cli.Command{
		Name:      "selftest",
		Usage:     "run one plan (or all) — the nightly's machinery for a quick check during bring-up",
		ArgsUsage: "[PLAN...]",
		Flags:     append([]cli.Flag{labFlag, &cli.StringFlag{Name: "out", Usage: "results root"}, faultFlag, seedFlag}, influxFlags()...),
		Action: func(c *cli.Context) error {
			if err := noTrailingFlags(c); err != nil {
				return err
			}
			return runNightly(c, c.Args().Slice())
		},
	}
}

func runNightly(c *cli.Context, plans []string) error {
	cat := bitstreams.Default()
	lab, err := loadLab(c, cat)
	if err != nil {
		return err
	}
	// The progress display comes first: on a terminal, log lines must go
	// above its bars (progress.Reporter.Writer).
	var current atomic.Pointer[results.Dir] // set once the run directory exists
	prog := progress.New(os.Stderr, progressPlans(lab, plans), verdictCounts(current.Load))
	defer prog.Close()
	log := loggerTo(c, prog.Writer())
	icfg, err := influxConfig(c, lab, log)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()

	rack, err := startRack(c, lab, cat, log)
	if err != nil {
		return err
	}
	if rack != nil {
		defer rack.Close()
	}
	root := c.String("out")
	if root == "" {
		root = lab.Results.Root
		if root != "" && !filepath.IsAbs(root) && lab.Pos.File != "" && !isEmbedded(lab) {
			root = filepath.Join(filepath.Dir(lab.Pos.File), root)
		}
	}
	if root == "" {
		root = "runs"
	}
	labFile := lab.Pos.File
	run := results.Run{
		Lab: lab.Name, LabFile: labFile, Plans: planNames(lab, plans), Host: hostname(), Seed: lab.Seed,
		Versions: versions(), Start: time.Now(),
	}
	if c.IsSet("seed") {
		run.Seed = c.Int64("seed")
	}
	run.Faults = append(run.Faults, c.StringSlice("fault")...)
	for _, f := range lab.Faults {
		run.Faults = append(run.Faults, f.Name+"@"+f.Board)
	}
	dir, err := results.Create(root, run)
	if err != nil {
		return withCode(selftest.ExitConfig, err)
	}
	defer dir.Close()
	current.Store(dir)
	fmt.Fprintf(prog.Writer(), "run directory: %s\n", dir.Path)

	n := &selftest.Nightly{
		Lab: lab, Catalogue: cat, Emulator: emulator(rack), Dir: dir, Log: log, Plans: plans,
		Progress: prog.Step,
	}
	start := time.Now()
	out := n.Run(ctx)
	if ctx.Err() != nil && out.ExitCode == selftest.ExitPass {
		out.ExitCode, out.Status = selftest.ExitInfra, "interrupted"
	}
	if err := dir.Finish(out.Status, out.ExitCode); err != nil {
		log.Error("writing the run directory's reports failed", "err", err)
	}
	after := finishNightly(ctx, c, lab, root, dir, icfg, log)
	prog.Close()
	selftest.WriteSummary(os.Stdout, dir.Run(), dir.Verdicts(), time.Since(start))
	if after.cmp != nil {
		fmt.Fprintln(os.Stdout)
		after.cmp.WriteText(os.Stdout, 20)
	}
	if after.exportMsg != "" {
		fmt.Fprintf(os.Stdout, "\n%s\n", after.exportMsg)
	}
	fmt.Fprintf(os.Stdout, "report: %s\n", filepath.Join(dir.Path, report.File))
	fmt.Fprintf(os.Stdout, "run directory: %s (%s)\n", dir.Path, out.Status)
	if out.ExitCode != 0 {
		return &exitError{code: out.ExitCode}
	}
	return nil
}

func isEmbedded(lab *labconfig.Lab) bool {
	_, err := os.Stat(lab.Pos.File)
	return err != nil
}

func planNames(lab *labconfig.Lab, only []string) []string {
	if len(only) > 0 {
		return only
	}
	var out []string
	for _, p := range lab.Plans {
		out = append(out, p.Name)
	}
	return out
}

func versions() map[string]string {
	v := map[string]string{"labrunner": version, "go": runtime.Version()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				v["revision"] = s.Value
			}
		}
	}
	return v
}

var _ = context.Background
