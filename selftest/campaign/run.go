// Package campaign runs a lab's plans on the emulated rack: once, into a run
// directory (RunPlans), or once per fault of the emulator's registry and
// target (Run), to learn how sensitive the plans are: which faults they
// catch, with which class, by which tests, at what cost in wall time.
package campaign

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/boards/emu"
	"github.com/labrunner/labrunner/labconfig"
	"github.com/labrunner/labrunner/labrun"
	"github.com/labrunner/labrunner/results"
	"github.com/labrunner/labrunner/selftest"
)

// RunOptions configure one run of the plans on the emulated rack.
type RunOptions struct {
	Lab       *labconfig.Lab
	Catalogue *bitstreams.Catalogue
	// Plans to run (all the lab's when empty).
	Plans []string
	// Faults injected, as --fault takes them.
	Faults []string
	// Seed overrides the lab's (0: the lab's).
	Seed int64
	// Root is the results root the run directory is created in.
	Root string
	Log  *slog.Logger
	// Mgmt is each plan's management check (labrun.Groups.Mgmt).
	Mgmt func(ctx context.Context, env *selftest.Env) error
	// Parallel bounds the board groups run at once (0: all).
	Parallel int
	Command  string // recorded in run.json
}

// RunResult is a finished run.
type RunResult struct {
	Dir      string
	Outcome  labrun.Outcome
	Verdicts []results.Verdict
	Duration time.Duration
}

// RunPlans runs the lab's plans (or opts.Plans) once on the emulated rack,
// with opts.Faults injected, into a new run directory under opts.Root, and
// finishes it (run.json, verdicts.json, junit.xml).
func RunPlans(ctx context.Context, opts RunOptions) (*RunResult, error) {
	cat := opts.Catalogue
	if cat == nil {
		cat = bitstreams.Default()
	}
	var faults []labconfig.Fault
	for _, s := range opts.Faults {
		f, err := labconfig.ParseFault(s)
		if err != nil {
			return nil, err
		}
		faults = append(faults, f)
	}
	rack, err := emu.Start(opts.Lab, emu.Options{Seed: opts.Seed, Faults: faults, Catalogue: cat, Log: opts.Log.With("component", "emu")})
	if err != nil {
		return nil, fmt.Errorf("starting the emulated rack: %w", err)
	}
	defer rack.Close()
	plans := opts.Plans
	if len(plans) == 0 {
		for _, p := range opts.Lab.Plans {
			plans = append(plans, p.Name)
		}
	}
	run := results.Run{Lab: opts.Lab.Name, LabFile: opts.Lab.Pos.File, Plans: plans, Seed: rack.Seed(), Faults: opts.Faults, Start: time.Now()}
	dir, err := results.Create(opts.Root, run)
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	n := &labrun.Groups{Lab: opts.Lab, Catalogue: cat, Emulator: rack, Dir: dir, Log: opts.Log, Plans: plans,
		Parallel: opts.Parallel, Mgmt: opts.Mgmt, Command: opts.Command}
	t0 := time.Now()
	out := n.Run(ctx)
	if ctx.Err() != nil && out.ExitCode == labrun.ExitPass {
		out.ExitCode, out.Status = labrun.ExitInfra, "interrupted"
	}
	if err := dir.Finish(out.Status, out.ExitCode); err != nil {
		return nil, err
	}
	return &RunResult{Dir: dir.Path, Outcome: out, Verdicts: dir.Verdicts(), Duration: time.Since(t0)}, nil
}
