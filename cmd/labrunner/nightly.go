package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/boards/emu"
	"github.com/labrunner/labrunner/labconfig"
	"github.com/labrunner/labrunner/results"
	"github.com/labrunner/labrunner/results/progress"
	"github.com/labrunner/labrunner/results/report"
	"github.com/labrunner/labrunner/selftest"
	"github.com/labrunner/labrunner/selftest/bringup"
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
			return runNightly(c, c.StringSlice("plan"))
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
			return runNightly(c, c.Args().Slice())
		},
	}
}

func runNightly(c *cli.Context, plans []string) (err error) {
	cat := bitstreams.Default()
	var resumed *results.Run
	var dir *results.Dir
	if r := c.String("resume"); r != "" {
		run, err := results.ReadRun(r)
		if err != nil {
			return withCode(selftest.ExitConfig, err)
		}
		resumed = run
		plans = run.Plans
		// The directory is locked first: a second resume of the same run
		// stops here, before it starts a rack or writes anything.
		if dir, err = results.Open(r); err != nil {
			return withCode(selftest.ExitConfig, err)
		}
		defer dir.Close()
	}
	lab, err := loadLabFor(c, cat, resumed)
	if err != nil {
		return err
	}
	if err := knownPlans(lab, plans); err != nil {
		return withCode(selftest.ExitConfig, err)
	}
	// Everything lab check checks, before a board is touched or a run
	// directory made: a typo in a parameter is refused here, not found by
	// the test after the rack was programmed.
	flagFaults := c.StringSlice("fault")
	if resumed != nil {
		flagFaults = resumed.Faults
	}
	if err := checkLab(c, lab, cat, flagFaults, plans); err != nil {
		return err
	}
	var shard selftest.Shard
	if s := c.String("shard"); s != "" {
		if shard, err = selftest.ParseShard(s); err != nil {
			return withCode(selftest.ExitConfig, err)
		}
	}
	held := selftest.HeldPolicy(c.String("held"))
	if held == "" {
		// selftest has no --held: boards someone holds are skipped.
		held = selftest.HeldSkip
	}
	if held != selftest.HeldSkip && held != selftest.HeldWait {
		return exitf(selftest.ExitConfig, "--held %q: use skip or wait", held)
	}
	locks, err := locksDir(c, lab)
	if err != nil {
		return err
	}
	// The progress display comes first: on a terminal, log lines must go
	// above its bars (progress.Reporter.Writer).
	var current atomic.Pointer[results.Dir] // set once the run directory exists
	mgmt := !c.Bool(noMgmt)
	prog := progress.New(os.Stderr, progressPlans(lab, plans, mgmt), verdictCounts(current.Load))
	defer prog.Close()
	log, logFile := runLogger(c, prog.Writer())
	icfg, err := influxConfig(c, lab, log)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()

	var rack *emu.Rack
	if resumed != nil {
		rack, err = startRackWith(c, lab, cat, log, resumed.Faults, resumed.Seed)
	} else {
		rack, err = startRack(c, lab, cat, log)
	}
	if err != nil {
		return err
	}
	if rack != nil {
		defer rack.Close()
	}
	root := resultsRoot(c, lab)
	labFile := lab.Pos.File
	run := results.Run{
		Lab: lab.Name, LabFile: labFile, Plans: planNames(lab, plans), Host: hostname(), Seed: lab.Seed,
		Versions: versions(), Start: time.Now(),
	}
	if c.IsSet("seed") {
		run.Seed = c.Int64("seed")
	}
	// Only the command line's faults: the lab file's are in the lab file.
	run.Faults = append(run.Faults, c.StringSlice("fault")...)
	if shard.Count > 0 {
		run.Shard = shard.String()
	}
	if resumed != nil {
		for _, rep := range dir.Repairs {
			log.Warn("repaired the run directory before resuming", "what", rep)
		}
		root = filepath.Dir(dir.Path)
		dir.UpdateRun(func(r *results.Run) {
			r.Status, r.End, r.Resumes = "running", nil, r.Resumes+1
		})
		fmt.Fprintf(prog.Writer(), "resuming %s (attempt %d)\n", dir.Path, dir.Attempt())
	} else {
		if dir, err = results.Create(root, run); err != nil {
			return withCode(selftest.ExitConfig, err)
		}
		defer dir.Close()
	}
	finished := false
	defer func() {
		// Whatever happened after the run directory was made, it ends
		// finished: a panic outside the board groups (which recover
		// their own) is an infrastructure error of the whole run, never a
		// run.json left at "running" and a stack trace for an answer.
		p := recover()
		if p == nil {
			return
		}
		log.Error("the nightly panicked", "panic", p, "stack", string(debug.Stack()))
		if !finished {
			if ferr := dir.Finish("infrastructure-error", selftest.ExitInfra); ferr != nil {
				log.Error("finishing the run directory failed", "err", ferr)
			}
		}
		err = exitf(selftest.ExitInfra, "the nightly stopped unexpectedly (%v); the run directory %s is finished as an infrastructure error and labrunner.log has the stack", p, dir.Path)
	}()
	current.Store(dir)
	if f, err := os.OpenFile(filepath.Join(dir.Path, results.LogFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
		log.Warn("the run's log file cannot be written; warnings still reach the terminal", "err", err)
	} else {
		logFile.Attach(f)
		defer func() {
			logFile.Detach()
			f.Close()
		}()
	}
	fmt.Fprintf(prog.Writer(), "run directory: %s (log: %s)\n", dir.Path, results.LogFile)

	n := &selftest.Nightly{
		Lab: lab, Catalogue: cat, Emulator: emulator(rack), Dir: dir, Log: log, Plans: plans,
		Progress: prog.Step, PlanDone: prog.Finish, Shard: shard, Parallel: c.Int("parallel"), Locks: locks,
		Held: held, HeldWait: c.Duration("held-wait"), Command: "labrunner " + c.Command.Name,
	}
	if mgmt {
		n.Mgmt = bringup.NightlyCheck(cat)
	}
	start := time.Now()
	out := n.Run(ctx)
	ran := time.Since(start) // the plans' wall time, before reports and export
	if ctx.Err() != nil && out.ExitCode == selftest.ExitPass {
		out.ExitCode, out.Status = selftest.ExitInfra, "interrupted"
	}
	finished = true
	if err := dir.Finish(out.Status, out.ExitCode); err != nil {
		log.Error("writing the run directory's reports failed", "err", err)
	}
	after := finishNightly(ctx, c, lab, root, dir, icfg, log)
	prog.Close()
	selftest.WriteSummary(os.Stdout, dir.Run(), dir.Verdicts(), time.Since(start))
	if len(out.Groups) > 1 {
		// How close the nightly came to its slowest board group: with
		// groups in parallel the wall time should be near the slowest one.
		var slow selftest.GroupResult
		for _, g := range out.Groups {
			if g.Duration > slow.Duration {
				slow = g
			}
		}
		wall := ran
		fmt.Fprintf(os.Stdout, "%d board groups in parallel: slowest %s (%s) %s, nightly %s, ratio %.2f\n",
			len(out.Groups), strings.Join(slow.Plans, "+"), strings.Join(slow.Boards, ","), slow.Duration.Round(time.Millisecond),
			wall.Round(time.Millisecond), wall.Seconds()/slow.Duration.Seconds())
	}
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

// resultsRoot is where run directories go: --out, else the lab file's
// results.root (relative to the lab file), else ./runs.
func resultsRoot(c *cli.Context, lab *labconfig.Lab) string {
	if root := c.String("out"); root != "" {
		return root
	}
	root := lab.Results.Root
	if root != "" && !filepath.IsAbs(root) && lab.Pos.File != "" && !isEmbedded(lab) {
		root = filepath.Join(filepath.Dir(lab.Pos.File), root)
	}
	if root == "" {
		return "runs"
	}
	return root
}

// knownPlans refuses plan names the lab does not define before anything
// runs: a typo would otherwise give an empty run that looks like a setup
// error.
func knownPlans(lab *labconfig.Lab, only []string) error {
	have := planNames(lab, nil)
	for _, p := range only {
		if !slices.Contains(have, p) {
			return fmt.Errorf("%s: no plan %q; the lab's plans are %s", lab.Pos.File, p, strings.Join(have, ", "))
		}
	}
	return nil
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
	v := map[string]string{"labrunner": buildVersion(), "go": runtime.Version()}
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
