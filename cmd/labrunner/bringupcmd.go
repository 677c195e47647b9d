package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/labconfig"
	"github.com/labrunner/labrunner/results"
	"github.com/labrunner/labrunner/results/report"
	"github.com/labrunner/labrunner/selftest"
	"github.com/labrunner/labrunner/selftest/bringup"
)

func bringupCommand() *cli.Command {
	var stages []string
	for _, s := range bringup.Stages() {
		stages = append(stages, fmt.Sprintf("  %-9s  %s", s, s.Doc()))
	}
	return &cli.Command{
		Name:  "bringup",
		Usage: "take one board (--board) or every board of the lab (--all) through the staged bring-up",
		Description: "Stages, in order:\n" + strings.Join(stages, "\n") + "\n\n" +
			"Boards marked `dcn: true` in the lab file are reached directly and start the bootstrap (wave 0); the\n" +
			"others are reached in-band through their neighbours (docs/mgmt.md). Each stage has its own deadline\n" +
			"(--deadline STAGE=DURATION); the first stage that fails on a board is diagnosed: what was expected,\n" +
			"what was seen, what to check on the bench. --from STAGE resumes at a stage: the earlier ones are not\n" +
			"judged, what later stages need from them is re-established quietly. Waves, proxies, the TimeSync tree\n" +
			"and offsets are scored against golden/bringup. Evidence goes to a run directory as for the nightly;\n" +
			"the live output is one line per event (stdout, stderr with --json), the logs go to the run directory's\n" +
			"labrunner.log (--log-level sets how much).\n\n" +
			"Exit codes: 0 all passed, 1 a verdict failed, 2 bad usage or config, 3 infrastructure error.",
		Flags: []cli.Flag{
			labFlag(),
			&cli.StringSliceFlag{Name: "board", Aliases: []string{"b"}, Usage: "bring up this board (repeatable); an in-band board's rack is bootstrapped as far as needed"},
			&cli.BoolFlag{Name: "all", Usage: "bring up every board of the lab"},
			&cli.StringFlag{Name: "from", Usage: "resume at this stage (" + strings.Join(stageNames(), ", ") + ")"},
			&cli.StringSliceFlag{Name: "deadline", Usage: "a stage's deadline, STAGE=DURATION (repeatable), e.g. bootstrap=5m"},
			&cli.StringFlag{Name: "design", Usage: "design to program on the --board boards (default: their plan's)"},
			&cli.BoolFlag{Name: "json", Usage: "print the report as JSON on stdout (progress goes to stderr)"},
			&cli.StringFlag{Name: "out", Usage: "results root: the run directory is created inside it (default: the lab's results.root, else ./runs)"},
			faultFlag(), seedFlag(),
		},
		Action: runBringup,
	}
}

func stageNames() []string {
	var out []string
	for _, s := range bringup.Stages() {
		out = append(out, s.String())
	}
	return out
}

func runBringup(c *cli.Context) error {
	boards := c.StringSlice("board")
	if c.Bool("all") == (len(boards) > 0) {
		return exitf(selftest.ExitConfig, "say which boards: --board NAME (repeatable) or --all")
	}
	if c.IsSet("design") && len(boards) == 0 {
		return exitf(selftest.ExitConfig, "--design goes with --board")
	}
	cat := bitstreams.Default()
	lab, err := loadLab(c, cat)
	if err != nil {
		return err
	}
	var from bringup.Stage
	if f := c.String("from"); f != "" {
		if from, err = bringup.ParseStage(f); err != nil {
			return withCode(selftest.ExitConfig, fmt.Errorf("--from: %w", err))
		}
	}
	deadlines := bringup.DefaultDeadlines(lab.Deadlines)
	for _, d := range c.StringSlice("deadline") {
		if err := deadlines.Set(d); err != nil {
			return withCode(selftest.ExitConfig, err)
		}
	}
	root := resultsRoot(c, lab)
	run := results.Run{Lab: lab.Name, LabFile: lab.Pos.File, Plans: []string{bringup.PlanName}, Host: hostname(), Seed: lab.Seed,
		Versions: versions(), Start: time.Now(), Faults: c.StringSlice("fault")}
	if c.IsSet("seed") {
		run.Seed = c.Int64("seed")
	}
	dir, err := results.Create(root, run)
	if err != nil {
		return withCode(selftest.ExitConfig, err)
	}
	defer dir.Close()
	// The live output is for a person: one line per event. Logs (the
	// emulator's, the verdicts', the management client's) go to the run
	// directory, as the evidence of the run.
	stdout, stderr := c.App.Writer, c.App.ErrWriter
	if stdout == nil {
		stdout = os.Stdout
	}
	if stderr == nil {
		stderr = os.Stderr
	}
	logPath := filepath.Join(dir.Path, results.LogFile)
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return withCode(selftest.ExitConfig, fmt.Errorf("run directory %s: %w", dir.Path, err))
	}
	defer logFile.Close()
	log := loggerTo(c, &syncWriter{w: logFile})
	var progress io.Writer = stdout
	if c.Bool("json") {
		progress = stderr
	}
	fmt.Fprintf(progress, "run directory: %s (log: %s)\n", dir.Path, results.LogFile)
	rack, err := startRack(c, lab, cat, log)
	if err != nil {
		dir.Finish("setup-error", selftest.ExitConfig)
		return err
	}
	if rack != nil {
		defer rack.Close()
	}
	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := bringup.Run(ctx, bringup.Options{
		Lab: lab, Catalogue: cat, Emulator: emulator(rack), Rec: dir, Log: log, Out: progress,
		Transcripts: func(board string) (io.WriteCloser, error) { return dir.ConsoleTranscript(board) },
		Boards:      boards, Design: c.String("design"), From: from, Deadlines: deadlines, Faults: labFaults(lab, c.StringSlice("fault")),
	})
	if err != nil {
		dir.Finish("setup-error", selftest.ExitConfig)
		return withCode(exitCodeFor(err), err)
	}
	code, status := selftest.ExitCodeOf(dir.Verdicts())
	if ctx.Err() != nil && code == selftest.ExitPass {
		code, status = selftest.ExitInfra, "interrupted"
	}
	if err := dir.Finish(status, code); err != nil {
		log.Error("writing the run directory's reports failed", "err", err)
	}
	reportPath, err := report.Write(dir.Path, reportOptions())
	if err != nil {
		log.Error("writing report.html failed", "err", err)
		reportPath = ""
	}
	sum := results.Summarize(dir.Verdicts())
	rep.RunDir, rep.Status, rep.ExitCode, rep.Checks = dir.Path, status, code, &sum
	if c.Bool("json") {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return withCode(selftest.ExitInfra, err)
		}
	} else {
		fmt.Fprintln(stdout)
		rep.WriteText(stdout)
		fmt.Fprintf(stdout, "\n%d checks: %d passed, %d failed, %d errors in %s\n", sum.Total, sum.Pass, sum.Fail, sum.Error, rep.End.Sub(rep.Start).Round(time.Millisecond))
		if reportPath != "" {
			fmt.Fprintf(stdout, "report: %s\n", reportPath)
		}
		fmt.Fprintf(stdout, "run directory: %s (%s)\n", dir.Path, status)
	}
	if code != 0 {
		return &exitError{code: code}
	}
	return nil
}

// labFaults lists the faults injected into the run: the lab file's and
// the command line's.
func labFaults(lab *labconfig.Lab, flags []string) []string {
	var out []string
	for _, f := range lab.Faults {
		s := f.Name
		if f.Board != "" {
			s += "@" + f.Board
		}
		if f.Link != "" {
			s += "@" + f.Link
		}
		out = append(out, s+" (lab file)")
	}
	return append(out, flags...)
}

// syncWriter serialises writes to the log file: every goroutine of the
// bring-up logs through it.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
