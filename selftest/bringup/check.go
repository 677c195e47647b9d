package bringup

import (
	"context"
	"errors"
	"log/slog"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/boards"
	"github.com/labrunner/labrunner/drivers"
	"github.com/labrunner/labrunner/selftest"
)

// CheckStages are the stages of the management check a nightly runs on
// each plan's boards: the management block's identity, the MOS channel of
// every cable, the bootstrap (firmware up, PMOS across every cable, the
// addresses and routes), the TimeSync tree scored against golden/bringup
// (link delays and their asymmetry, offsets and the oscillators behind
// them, a primary that sends nothing) and an ECHO over every cable. Power
// and programming are the plan's own, and the scratch patterns the
// registers test's.
var CheckStages = []Stage{StageIdentity, StageLinks, StageBootstrap, StageTimeSync, StageLoopback}

// Check is the management check of a plan: the bring-up's CheckStages on
// the plan's programmed boards and the cables between them, with the
// drivers the caller opened, recorded through env (the plan's name and
// step). What the management plane does wrong becomes the plan's verdicts,
// classed as the bring-up classes it (a crashed firmware or a cable PMOS
// gives up on: infrastructure; a clock or a cable delay outside the golden
// band: design). The error is for a check that could not start.
func Check(ctx context.Context, env *selftest.Env, cat *bitstreams.Catalogue, log *slog.Logger) (*Report, error) {
	if env == nil || env.Plan == nil || env.Lab == nil {
		return nil, errors.New("management check: a plan's environment is required")
	}
	if len(env.Boards) == 0 {
		return nil, nil
	}
	opened := map[string]*boards.Board{}
	var names []string
	for _, b := range env.Boards {
		opened[b.Name] = b.Board
		names = append(names, b.Name)
	}
	opts := Options{Lab: env.Lab, Catalogue: cat, Log: log, Env: env, Within: names, Opened: opened,
		Only: CheckStages, Design: env.Plan.Design, Boards: names}
	r, err := newRun(opts)
	if err != nil {
		return nil, err
	}
	defer r.close()
	r.stages(ctx)
	rep := r.report()
	for _, b := range rep.Boards {
		if f := b.FirstFailure; f != nil {
			r.log.Warn("management check: a stage failed", "plan", env.Plan.Name, "board", b.Name, "stage", f.Stage, "seen", f.Seen)
		}
	}
	return rep, nil
}

// NightlyCheck adapts Check to selftest.Runner.Mgmt.
func NightlyCheck(cat *bitstreams.Catalogue) func(ctx context.Context, env *selftest.Env) error {
	return func(ctx context.Context, env *selftest.Env) error {
		_, err := Check(ctx, env, cat, env.Log)
		if err != nil {
			return drivers.Setup("", "management check of plan "+env.Plan.Name, "", err)
		}
		return nil
	}
}
