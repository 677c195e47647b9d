package labrun

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"time"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/boards/emu"
	"github.com/labrunner/labrunner/boards/lease"
	"github.com/labrunner/labrunner/labconfig"
	"github.com/labrunner/labrunner/results"
	"github.com/labrunner/labrunner/results/influx"
	"github.com/labrunner/labrunner/results/progress"
	"github.com/labrunner/labrunner/results/report"
	"github.com/labrunner/labrunner/selftest/bringup"
)

// Options is what a nightly is asked to do: the command line's flags, as
// the CLI maps them, and where its output goes.
type Options struct {
	// LabFile is the lab file; empty: the embedded default lab (the
	// emulated rack). A resumed run uses its own lab.
	LabFile string
	// Catalogue is the design catalogue; nil: bitstreams.Default().
	Catalogue *bitstreams.Catalogue
	// Out is the results root the run directory is made in; empty: the
	// lab's results.root (relative to the lab file), else ./runs.
	Out string
	// Plans restricts the run to these plans; empty: all of the lab's.
	Plans []string
	// Faults are emulator faults to inject on top of the lab file's, each
	// NAME[@BOARD[:PORT]][,KEY=VALUE...].
	Faults []string
	// Seed, if set, replaces the lab's emulator seed.
	Seed *int64
	// Resume is the run directory of a nightly that crashed or was killed:
	// its tests with verdicts on disk are skipped, the rest run, with the
	// run's own lab, plans, faults and seed.
	Resume string
	// Shard is this lab host's share "i/n" of the board groups; empty: all.
	Shard string
	// Parallel bounds the board groups run at once (0: no bound).
	Parallel int
	// Locks is the lock directory; empty: the lab's locks.dir, else
	// DefaultLocks.
	Locks string
	// Held is what to do with boards someone else holds (empty: HeldSkip);
	// HeldWait bounds HeldWait's wait.
	Held     HeldPolicy
	HeldWait time.Duration
	// NoMgmt leaves out each plan's management check.
	NoMgmt bool
	// Influx names the InfluxDB the results go to, over the lab file's
	// influx: block; nothing named: no export.
	Influx InfluxFlags
	// LogLevel is the level of the run's labrunner.log. The terminal shows
	// warnings and errors only, unless LogLevelSet (the user chose the
	// level: the terminal shows it too).
	LogLevel    slog.Level
	LogLevelSet bool
	// Stdout gets the summary a person reads at the end; Stderr the
	// progress and the warnings while the run goes. Nil: discarded.
	Stdout, Stderr io.Writer
	// Command is recorded in the leases taken ("labrunner nightly").
	Command string
	// Version is labrunner's version, for run.json.
	Version string
}

// Result is how a nightly ended: its run directory, status and exit code
// (ExitCodeOf its verdicts, or ExitInfra when it was interrupted).
type Result struct {
	Dir      string
	Status   string
	ExitCode int
	Outcome  Outcome
}

// nightly is one nightly's state from its options to its summary.
type nightly struct {
	opts    Options
	cat     *bitstreams.Catalogue
	lab     *labconfig.Lab
	plans   []string
	faults  []string // the command line's faults (a resumed run's own)
	seed    *int64
	resumed *results.Run
	dir     *results.Dir
	shard   Shard
	locks   *lease.Dir
	prog    progress.Reporter
	log     *slog.Logger
	logFile *lateWriter
	icfg    *influx.Config
	rack    *emu.Rack
	root    string
	current atomic.Pointer[results.Dir] // set once the run directory exists
	cleanup []func()
}

// Nightly runs the lab's plans on every board and writes a run directory:
// everything `lab check` checks comes first, before a board is touched or
// a directory made (a bad lab, plan, fault or flag is an *Error with
// ExitConfig and changes nothing); then the board groups run in parallel,
// the run directory is finished, compared with the previous run of each
// plan, its points written (and exported to InfluxDB when one is named)
// and its report written; the summary goes to Stdout. A panic outside the
// board groups (which recover their own) ends the run as an
// infrastructure error, its directory finished, never left "running".
func Nightly(ctx context.Context, opts Options) (res *Result, err error) {
	n := &nightly{opts: opts, cat: opts.Catalogue, faults: opts.Faults, seed: opts.Seed}
	if n.cat == nil {
		n.cat = bitstreams.Default()
	}
	defer n.close()
	if err := n.prepare(ctx); err != nil {
		return nil, err
	}
	if err := n.start(); err != nil {
		return nil, err
	}
	if err := n.openDir(); err != nil {
		return nil, err
	}
	finished := false
	defer func() {
		if p := recover(); p != nil {
			res, err = nil, n.panicked(p, finished)
		}
	}()
	n.attachLog()
	start := time.Now()
	out := n.runGroups(ctx)
	ran := time.Since(start) // the plans' wall time, before reports and export
	finished = true
	if err := n.dir.Finish(out.Status, out.ExitCode); err != nil {
		n.log.Error("writing the run directory's reports failed", "err", err)
	}
	after := n.finish(ctx)
	n.prog.Close()
	n.summary(out, after, time.Since(start), ran)
	return &Result{Dir: n.dir.Path, Status: out.Status, ExitCode: out.ExitCode, Outcome: out}, nil
}

func (n *nightly) close() {
	for i := len(n.cleanup) - 1; i >= 0; i-- {
		n.cleanup[i]()
	}
}

func (n *nightly) onClose(f func()) { n.cleanup = append(n.cleanup, f) }

// prepare reads what a resumed run used, loads and checks the lab, the
// plans, the faults and the flags, and opens the lock directory.
func (n *nightly) prepare(ctx context.Context) error {
	o := n.opts
	n.plans = o.Plans
	if o.Resume != "" {
		r, err := results.ReadRun(o.Resume)
		if err != nil {
			return setupError(err)
		}
		n.resumed, n.plans, n.faults, n.seed = r, r.Plans, r.Faults, &r.Seed
		// The directory is locked first: a second resume of the same run
		// stops here, before it starts a rack or writes anything.
		if n.dir, err = results.Open(o.Resume); err != nil {
			return setupError(err)
		}
		n.onClose(func() { n.dir.Close() })
	}
	lab, err := loadLabFor(o.LabFile, n.cat, n.resumed)
	if err != nil {
		return err
	}
	n.lab = lab
	if err := KnownPlans(lab, n.plans); err != nil {
		return setupError(err)
	}
	// Everything lab check checks, before a board is touched or a run
	// directory made: a typo in a parameter is refused here, not found by
	// the test after the rack was programmed.
	if err := CheckLab(ctx, lab, n.cat, n.faults, n.plans, n.stderr()); err != nil {
		return err
	}
	if o.Shard != "" {
		if n.shard, err = ParseShard(o.Shard); err != nil {
			return setupError(err)
		}
	}
	switch o.Held {
	case "", HeldSkip, HeldWait:
	default:
		return setupError(fmt.Errorf("--held %q: use skip or wait", o.Held))
	}
	n.locks, err = OpenLocks(o.Locks, lab, slog.New(slog.NewTextHandler(n.stderr(), &slog.HandlerOptions{Level: o.LogLevel})))
	return err
}

// start opens the progress display and the run's log, names the InfluxDB
// and starts the emulated rack.
func (n *nightly) start() error {
	// The progress display comes first: on a terminal, log lines must go
	// above its bars (progress.Reporter.Writer).
	n.prog = progress.New(n.stderr(), progressPlans(n.lab, n.plans, !n.opts.NoMgmt), verdictCounts(n.current.Load))
	n.onClose(n.prog.Close)
	n.log, n.logFile = newRunLogger(n.opts.LogLevel, n.opts.LogLevelSet, n.prog.Writer())
	var err error
	if n.icfg, err = InfluxConfig(n.opts.Influx, n.lab, n.log); err != nil {
		return err
	}
	var seed int64
	if n.seed != nil {
		seed = *n.seed
	}
	if n.rack, err = StartRack(n.lab, n.cat, n.log, n.faults, seed); err != nil {
		return err
	}
	if n.rack != nil {
		n.onClose(func() { n.rack.Close() })
	}
	return nil
}

// openDir makes the run directory (or goes on with the resumed one).
func (n *nightly) openDir() error {
	n.root = ResultsRoot(n.opts.Out, n.lab)
	if n.resumed != nil {
		for _, rep := range n.dir.Repairs {
			n.log.Warn("repaired the run directory before resuming", "what", rep)
		}
		n.root = filepath.Dir(n.dir.Path)
		lastSeen := n.dir.LastWritten()
		n.dir.UpdateRun(func(r *results.Run) { r.BeginSession(time.Now(), lastSeen) })
		fmt.Fprintf(n.prog.Writer(), "resuming %s (attempt %d)\n", n.dir.Path, n.dir.Attempt())
	} else {
		var err error
		if n.dir, err = results.Create(n.root, n.newRun()); err != nil {
			return setupError(err)
		}
		n.onClose(func() { n.dir.Close() })
	}
	n.current.Store(n.dir)
	return nil
}

// attachLog sends the run's log to its labrunner.log (what was logged
// before goes there first) and says where the run directory is.
func (n *nightly) attachLog() {
	if f, err := os.OpenFile(filepath.Join(n.dir.Path, results.LogFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
		n.log.Warn("the run's log file cannot be written; warnings still reach the terminal", "err", err)
	} else {
		n.logFile.Attach(f)
		n.onClose(func() {
			n.logFile.Detach()
			f.Close()
		})
	}
	fmt.Fprintf(n.prog.Writer(), "run directory: %s (log: %s)\n", n.dir.Path, results.LogFile)
}

// newRun is the run.json of a new run.
func (n *nightly) newRun() results.Run {
	run := results.Run{
		Lab: n.lab.Name, LabFile: n.lab.Pos.File, Plans: PlanNames(n.lab, n.plans), Host: hostname(), Seed: n.lab.Seed,
		Versions: versions(n.opts.Version), Start: time.Now(),
	}
	if n.seed != nil {
		run.Seed = *n.seed
	}
	// Only the command line's faults: the lab file's are in the lab file.
	run.Faults = append(run.Faults, n.faults...)
	if n.shard.Count > 0 {
		run.Shard = n.shard.String()
	}
	return run
}

// runGroups runs the plans' board groups.
func (n *nightly) runGroups(ctx context.Context) Outcome {
	held := n.opts.Held
	if held == "" {
		held = HeldSkip
	}
	g := &Groups{
		Lab: n.lab, Catalogue: n.cat, Emulator: Emulator(n.rack), Dir: n.dir, Log: n.log, Plans: n.plans,
		Progress: n.prog.Step, PlanDone: n.prog.Finish, Shard: n.shard, Parallel: n.opts.Parallel, Locks: n.locks,
		Held: held, HeldWait: n.opts.HeldWait, Command: n.opts.Command,
	}
	if !n.opts.NoMgmt {
		g.Mgmt = bringup.NightlyCheck(n.cat)
	}
	out := g.Run(ctx)
	out.ExitCode, out.Status = interrupted(ctx, out.ExitCode, out.Status)
	return out
}

// interrupted is the exit code and status of a run whose context ended
// (SIGINT, SIGTERM): "interrupted", an infrastructure error, unless a
// verdict failed or a setup error was found before (those still decide). The
// tests cut short record infrastructure errors of their own; they are the
// interruption's, not the boards', and a resume runs them again.
func interrupted(ctx context.Context, code int, status string) (int, string) {
	if ctx.Err() != nil && (code == ExitPass || code == ExitInfra) {
		return ExitInfra, "interrupted"
	}
	return code, status
}

// panicked ends a run that panicked outside its board groups: whatever
// happened after the run directory was made, it ends finished, as an
// infrastructure error of the whole run, never a run.json left at
// "running" and a stack trace for an answer.
func (n *nightly) panicked(p any, finished bool) error {
	n.log.Error("the nightly panicked", "panic", p, "stack", string(debug.Stack()))
	if !finished {
		if ferr := n.dir.Finish("infrastructure-error", ExitInfra); ferr != nil {
			n.log.Error("finishing the run directory failed", "err", ferr)
		}
	}
	return &Error{Code: ExitInfra, Err: fmt.Errorf("the nightly stopped unexpectedly (%v); the run directory %s is finished as an infrastructure error and labrunner.log has the stack", p, n.dir.Path)}
}

// summary prints what a person reads at the end of the run.
func (n *nightly) summary(out Outcome, after afterRun, elapsed, ran time.Duration) {
	w := n.stdout()
	WriteSummary(w, n.dir.Run(), n.dir.Verdicts(), elapsed)
	if len(out.Groups) > 1 {
		// How close the nightly came to its slowest board group: with
		// groups in parallel the wall time should be near the slowest one.
		var slow GroupResult
		for _, g := range out.Groups {
			if g.Duration > slow.Duration {
				slow = g
			}
		}
		fmt.Fprintf(w, "%d board groups in parallel: slowest %s (%s) %s, nightly %s, ratio %.2f\n",
			len(out.Groups), strings.Join(slow.Plans, "+"), strings.Join(slow.Boards, ","), slow.Duration.Round(time.Millisecond),
			ran.Round(time.Millisecond), ran.Seconds()/slow.Duration.Seconds())
	}
	if after.cmp != nil {
		fmt.Fprintln(w)
		after.cmp.WriteText(w, 20)
	}
	if after.exportMsg != "" {
		fmt.Fprintf(w, "\n%s\n", after.exportMsg)
	}
	fmt.Fprintf(w, "report: %s\n", filepath.Join(n.dir.Path, report.File))
	fmt.Fprintf(w, "run directory: %s (%s)\n", n.dir.Path, out.Status)
}

func (n *nightly) stdout() io.Writer { return orDiscard(n.opts.Stdout) }
func (n *nightly) stderr() io.Writer { return orDiscard(n.opts.Stderr) }

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}
