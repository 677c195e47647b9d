package bringup

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/boards"
	"github.com/labrunner/labrunner/drivers"
	gb "github.com/labrunner/labrunner/golden/bringup"
	"github.com/labrunner/labrunner/results"
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
		// Every board left the plan: the check's cases stay, each an
		// error naming its board.
		if len(env.Unhealthy) > 0 {
			return nil, leftPlan(env, cat, nil)
		}
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
	if len(env.Unhealthy) > 0 {
		if err := leftPlan(env, cat, r); err != nil {
			r.log.Warn("management check: the cases of the boards that left the plan could not be listed", "plan", env.Plan.Name, "err", err)
		}
	}
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

// leftPlan keeps the management check's cases of the plan's boards that
// left it (selftest.Env.Unhealthy) under the names a healthy run gives
// them, each an infrastructure error naming the board and its health
// error: its stages, its bootstrap and TimeSync figures, and the cables it
// ends (on the cable's A end, as a healthy run judges them). Each rack is
// named after its first board in the plan as written, not after its
// first healthy one, so that a rack's cases keep their names too.
func leftPlan(env *selftest.Env, cat *bitstreams.Catalogue, r *run) error {
	var all []string
	for _, pb := range env.Plan.Boards {
		all = append(all, pb.Board)
	}
	full, err := newTopology(env.Lab, cat, all)
	if err != nil {
		return err
	}
	if r != nil {
		for _, rr := range r.racks {
			if len(rr.Boards) == 0 {
				continue
			}
			if fb, ok := full.byName[rr.Boards[0].Name]; ok && fb.Rack != nil {
				rr.Name = fb.Rack.Name
			}
		}
	}
	left := func(b string) error {
		why, bad := env.Unhealthy[b]
		if !bad {
			return nil
		}
		return drivers.Infra(b, "health", "the rest of the rack goes on without it", fmt.Errorf("board %s left the plan: %s", b, why))
	}
	// A rack none of whose boards is left has its rack-wide cases too.
	for _, rk := range full.Racks {
		var err error
		for _, b := range rk.Boards {
			if err = left(b.Name); err == nil {
				break
			}
		}
		if err == nil || len(rk.Boards) == 0 {
			continue
		}
		p := results.Params{"rack": rk.Name}
		for _, c := range []string{"bringup.waves", "bringup.timesync.primary", "bringup.timesync.tree_depth"} {
			env.Error(c, "", p, err)
		}
		for _, st := range []bootStatus{bootOK, bootDied, bootFailed, bootUnreachable} {
			env.Error("bringup.boards", "", results.Params{"rack": rk.Name, "status": string(st)}, err)
		}
		if plan, perr := gb.Bootstrap(rk.Golden(), gb.Faults{}); perr == nil {
			for w := range plan.Waves {
				env.Error("bringup.wave.size", "", results.Params{"rack": rk.Name, "wave": fmt.Sprint(w)}, err)
			}
		}
		if len(rk.Cables) > 0 {
			env.Error("bringup.timesync.converge_us", "", p, err)
		}
	}
	done := map[string]bool{}
	for _, b := range full.Boards {
		err := left(b.Name)
		if err == nil || b.Rack == nil {
			continue
		}
		rack := b.Rack.Name
		for _, st := range CheckStages {
			env.Error("bringup."+st.String(), b.Name, nil, err)
		}
		p := results.Params{"board": b.Name, "rack": rack}
		cases := []string{"bringup.status", "bringup.wave", "bringup.timesync.depth", "bringup.timesync.status"}
		if !b.DCN {
			cases = append(cases, "bringup.proxy")
		}
		// Every board has the client cases, the primary's skipped
		// (score.go): a board that left keeps them all.
		cases = append(cases, "bringup.timesync.parent", "bringup.timesync.offset_ns")
		for _, c := range cases {
			env.Error(c, b.Name, p, err)
		}
		env.Error("bringup.timesync.offset_bound_ns", b.Name, results.Params{"rack": rack}, err)
		for _, e := range b.Ports {
			c := e.Cable
			if c == nil || done[c.Name()] {
				continue
			}
			done[c.Name()] = true
			a := c.A.Board.Name
			env.Error("bringup.loopback.echo", a, results.Params{"link": c.Name()}, err)
			if c.LatencyNS > 0 {
				env.Error("bringup.timesync.link_delay_ns", a, results.Params{"link": c.Name(), "rack": rack}, err)
			}
		}
	}
	return nil
}
