package labrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/labconfig"
	"github.com/labrunner/labrunner/results"
	"github.com/labrunner/labrunner/results/report"
	"github.com/labrunner/labrunner/selftest/bringup"
)

// BringupOptions is what a staged bring-up is asked to do.
type BringupOptions struct {
	// LabFile is the lab file; empty: the embedded default lab.
	LabFile   string
	Catalogue *bitstreams.Catalogue // nil: bitstreams.Default()
	// Out is the results root (empty: the lab's results.root, else ./runs).
	Out string
	// Boards are the boards to bring up; All brings up every board of the
	// lab instead (exactly one of the two).
	Boards []string
	All    bool
	// Design is programmed on Boards in place of their plan's.
	Design string
	// From resumes at this stage (a bringup.Stage name); empty: the first.
	From string
	// Deadlines are STAGE=DURATION overrides of the stages' deadlines.
	Deadlines []string
	// Faults are emulator faults to inject; Seed, if set, replaces the
	// lab's emulator seed.
	Faults []string
	Seed   *int64
	// JSON prints the report as JSON on Stdout (the live output then goes
	// to Stderr).
	JSON bool
	// LogLevel is the level of the run directory's labrunner.log.
	LogLevel slog.Level
	// Stdout gets the live output and the report; Stderr the live output
	// with JSON. Nil: discarded.
	Stdout, Stderr io.Writer
	// Version is labrunner's version, for run.json.
	Version string
}

// Bringup takes the boards through the staged bring-up and writes a run
// directory as the nightly does (run.json, the verdicts, labrunner.log,
// the consoles, report.html); the live output is one line per event. Bad
// options or a bad lab are an *Error with ExitConfig, before a directory
// is made; the result's ExitCode is the verdicts'.
func Bringup(ctx context.Context, o BringupOptions) (*bringup.Report, error) {
	if o.All == (len(o.Boards) > 0) {
		return nil, setupError(errors.New("say which boards: --board NAME (repeatable) or --all"))
	}
	if o.Design != "" && len(o.Boards) == 0 {
		return nil, setupError(errors.New("--design goes with --board"))
	}
	if o.Catalogue == nil {
		o.Catalogue = bitstreams.Default()
	}
	lab, err := LoadLab(o.LabFile, o.Catalogue)
	if err != nil {
		return nil, err
	}
	bo, err := bringupStages(o, lab)
	if err != nil {
		return nil, err
	}
	// The emulated rack starts before the run directory is made: a fault
	// it refuses leaves nothing behind. What it logs meanwhile is held for
	// the directory's labrunner.log.
	logs := &lateWriter{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: o.LogLevel}))
	var seed int64
	if o.Seed != nil {
		seed = *o.Seed
	}
	rack, err := StartRack(lab, o.Catalogue, log, o.Faults, seed)
	if err != nil {
		return nil, err
	}
	if rack != nil {
		defer rack.Close()
	}
	bo.Emulator, bo.Log = Emulator(rack), log
	dir, err := results.Create(ResultsRoot(o.Out, lab), bringupRun(o, lab))
	if err != nil {
		return nil, setupError(err)
	}
	defer dir.Close()
	logFile, err := os.OpenFile(filepath.Join(dir.Path, results.LogFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		dir.Finish("setup-error", ExitConfig)
		return nil, setupError(fmt.Errorf("run directory %s: %w", dir.Path, err))
	}
	logs.Attach(logFile)
	defer func() {
		logs.Detach()
		logFile.Close()
	}()
	return runBringup(ctx, o, dir, bo)
}

// bringupStages reads --from and --deadline into the bring-up's options.
func bringupStages(o BringupOptions, lab *labconfig.Lab) (bringup.Options, error) {
	bo := bringup.Options{Lab: lab, Catalogue: o.Catalogue, Boards: o.Boards, Design: o.Design,
		Deadlines: bringup.DefaultDeadlines(lab.Deadlines), Faults: labFaults(lab, o.Faults)}
	if o.From != "" {
		from, err := bringup.ParseStage(o.From)
		if err != nil {
			return bo, setupError(fmt.Errorf("--from: %w", err))
		}
		bo.From = from
	}
	for _, d := range o.Deadlines {
		if err := bo.Deadlines.Set(d); err != nil {
			return bo, setupError(err)
		}
	}
	return bo, nil
}

// bringupRun is the bring-up's run.json.
func bringupRun(o BringupOptions, lab *labconfig.Lab) results.Run {
	run := results.Run{Lab: lab.Name, LabFile: lab.Pos.File, Plans: []string{bringup.PlanName}, Host: hostname(), Seed: lab.Seed,
		Versions: versions(o.Version), Start: time.Now(), Faults: o.Faults}
	if o.Seed != nil {
		run.Seed = *o.Seed
	}
	return run
}

// runBringup runs the stages into dir, finishes it and prints the report.
func runBringup(ctx context.Context, o BringupOptions, dir *results.Dir, bo bringup.Options) (*bringup.Report, error) {
	// The live output is for a person: one line per event. Logs (the
	// emulator's, the verdicts', the management client's) go to the run
	// directory, as the evidence of the run.
	stdout, live := orDiscard(o.Stdout), orDiscard(o.Stdout)
	if o.JSON {
		live = orDiscard(o.Stderr)
	}
	fmt.Fprintf(live, "run directory: %s (log: %s)\n", dir.Path, results.LogFile)
	bo.Rec, bo.Out = dir, live
	bo.Transcripts = func(board string) (io.WriteCloser, error) { return dir.ConsoleTranscript(board) }
	rep, err := bringup.Run(ctx, bo)
	if err != nil {
		dir.Finish("setup-error", ExitConfig)
		return nil, classError(err)
	}
	reportFile := finishBringup(ctx, dir, rep, bo.Log)
	return rep, writeBringup(stdout, rep, reportFile, o.JSON)
}

// finishBringup decides the exit code from the verdicts (an interrupted
// bring-up is an infrastructure error), finishes the run directory and
// writes its report (its path is returned; empty when it failed).
func finishBringup(ctx context.Context, dir *results.Dir, rep *bringup.Report, log *slog.Logger) string {
	code, status := ExitCodeOf(dir.Verdicts())
	code, status = interrupted(ctx, code, status)
	if err := dir.Finish(status, code); err != nil {
		log.Error("writing the run directory's reports failed", "err", err)
	}
	reportFile, err := report.Write(dir.Path, ReportOptions())
	if err != nil {
		log.Error("writing report.html failed", "err", err)
		reportFile = ""
	}
	sum := results.Summarize(dir.Verdicts())
	rep.RunDir, rep.Status, rep.ExitCode, rep.Checks = dir.Path, status, code, &sum
	return reportFile
}

// writeBringup prints the bring-up's report: as JSON, or as text with the
// counts, the report file and the run directory.
func writeBringup(w io.Writer, rep *bringup.Report, reportFile string, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return &Error{Code: ExitInfra, Err: err}
		}
		return nil
	}
	sum := rep.Checks
	fmt.Fprintln(w)
	rep.WriteText(w)
	fmt.Fprintf(w, "\n%d checks: %d passed, %d failed, %d errors in %s\n", sum.Total, sum.Pass, sum.Fail, sum.Error, rep.End.Sub(rep.Start).Round(time.Millisecond))
	if reportFile != "" {
		fmt.Fprintf(w, "report: %s\n", reportFile)
	}
	fmt.Fprintf(w, "run directory: %s (%s)\n", rep.RunDir, rep.Status)
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
