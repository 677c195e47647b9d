package selftest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"labrunner/bitstreams"
	"labrunner/boards"
	"labrunner/drivers"
	"labrunner/drivers/regmap"
	"labrunner/labconfig"
	"labrunner/results"
)

// Runner executes plans on opened boards.
type Runner struct {
	Lab       *labconfig.Lab
	Catalogue *bitstreams.Catalogue
	Boards    map[string]*boards.Board
	Rec       Recorder
	Log       *slog.Logger
	// OnBitstream is told what was loaded on each board (for run.json).
	OnBitstream func(results.BitstreamInfo)
	// Progress, if set, is told when a plan step starts ("program",
	// "setup", a test name) on a plan.
	Progress func(plan, step string)
}

// PlanResult summarises one plan's execution.
type PlanResult struct {
	Plan     string
	Verdicts int
	Failed   int // verdicts that did not pass
	Setup    error
	Duration time.Duration
}

// image is a checked bitstream ready for one board.
type image struct {
	board *boards.Board
	img   drivers.Image
	info  results.BitstreamInfo
}

// RunPlan checks every board's bitstream first (a bad file stops the plan
// before any board is touched: no half-programmed rack), programs the boards
// in parallel, runs the design's setup, then the plan's tests in order.
func (r *Runner) RunPlan(ctx context.Context, plan *labconfig.Plan) PlanResult {
	start := time.Now()
	res := PlanResult{Plan: plan.Name}
	log := r.Log.With("plan", plan.Name)
	deadlines := r.Lab.Deadlines
	rec := &countingRecorder{Recorder: r.Rec}
	defer func() {
		res.Verdicts, res.Failed = rec.counts()
		res.Duration = time.Since(start)
	}()
	failAll := func(class drivers.Class, err error) {
		res.Setup = err
		env := &Env{Lab: r.Lab, Plan: plan, Log: log, rec: rec}
		for _, pb := range plan.Boards {
			for _, t := range plan.Tests {
				env.Error(t.Name, pb.Board, nil, &drivers.Error{Class: class, Board: pb.Board, Op: "plan " + plan.Name, Err: err})
			}
		}
	}

	m, err := r.Catalogue.Design(plan.Design)
	if err != nil {
		failAll(drivers.ClassSetup, fmt.Errorf("%s: plan %s: %w", plan.Pos, plan.Name, err))
		return res
	}
	r.progress(plan.Name, "check bitstreams")
	var imgs []image
	var errs []error
	for _, pb := range plan.Boards {
		b, ok := r.Boards[pb.Board]
		if !ok {
			errs = append(errs, fmt.Errorf("%s: board %s is not open", pb.Pos, pb.Board))
			continue
		}
		img, err := r.imageFor(plan, m, b)
		if err != nil {
			errs = append(errs, fmt.Errorf("board %s: %w", b.Name, err))
			continue
		}
		imgs = append(imgs, img)
	}
	if len(errs) > 0 {
		failAll(drivers.ClassSetup, fmt.Errorf("bitstream check failed, no board was programmed: %w", errors.Join(errs...)))
		return res
	}

	r.progress(plan.Name, "program")
	env := &Env{Lab: r.Lab, Plan: plan, Design: m, Deadlines: deadlines, Log: log, rec: rec, Shared: map[string]any{}}
	var wg sync.WaitGroup
	progErr := make([]error, len(imgs))
	for i := range imgs {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			it := imgs[i]
			pctx, cancel := drivers.Deadline(ctx, deadlines.Program)
			defer cancel()
			t0 := time.Now()
			err := it.board.Programmer.Program(pctx, it.img)
			m := results.Measurement{Board: it.board.Name, Metric: "program.seconds", Unit: "s",
				Value: time.Since(t0).Seconds(), Text: ""}
			if err != nil {
				progErr[i] = err
				env.Error("program", it.board.Name, nil, err)
				return
			}
			env.Check("program", m, true, "programmed with "+it.info.Design+" "+it.info.Version, "bitstream catalogue", "")
			if r.OnBitstream != nil {
				r.OnBitstream(it.info)
			}
		}(i)
	}
	wg.Wait()
	if err := errors.Join(progErr...); err != nil {
		res.Setup = err
		r.skipAll(env, plan, "not run: programming failed", err)
		return res
	}

	for _, pb := range plan.Boards {
		b := r.Boards[pb.Board]
		env.Boards = append(env.Boards, &Board{Board: b, Regs: regmap.New(b.Bus, m, b.Name), Params: pb.Params})
	}
	snapshotResets(ctx, env)
	if s := setupFor(plan.Design); s != nil {
		r.progress(plan.Name, "setup")
		sctx, cancel := drivers.Deadline(ctx, deadlines.Test)
		err := s(sctx, env)
		cancel()
		if err != nil {
			res.Setup = err
			env.Error("setup", "", nil, err)
			r.skipAll(env, plan, "not run: design setup failed", err)
			return res
		}
	}

	for _, t := range plan.Tests {
		test, ok := Lookup(plan.Design, t.Name)
		env.Test = t
		if !ok {
			env.Error(t.Name, "", nil, drivers.Setup("", t.Pos.String(), "", fmt.Errorf("no test %q for design %s", t.Name, plan.Design)))
			continue
		}
		r.progress(plan.Name, t.Name)
		dl := deadlines.Test
		if t.Deadline > 0 {
			dl = t.Deadline
		}
		tctx, cancel := drivers.Deadline(ctx, dl)
		before, _ := env.Verdicts()
		t0 := time.Now()
		err := runGuarded(tctx, test, env)
		cancel()
		after, _ := env.Verdicts()
		if err != nil {
			env.Error(t.Name, "", nil, err)
		} else if after == before {
			env.Error(t.Name, "", nil, fmt.Errorf("test %s recorded no verdict: it measured nothing", t.Name))
		}
		log.Debug("test done", "test", t.Name, "seconds", time.Since(t0).Seconds())
	}
	return res
}

// runGuarded runs a test, turning a panic into an error so that one broken
// test does not take the rest of the rack's run down with it.
func runGuarded(ctx context.Context, t Test, env *Env) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("test %s panicked: %v", t.Name, p)
		}
	}()
	return t.Run(ctx, env)
}

func (r *Runner) skipAll(env *Env, plan *labconfig.Plan, why string, cause error) {
	for _, t := range plan.Tests {
		for _, pb := range plan.Boards {
			v := results.Verdict{Time: time.Now(), Plan: plan.Name, Test: t.Name, Board: pb.Board, Design: plan.Design,
				Status: results.Error, Class: drivers.ClassOf(cause).String(), Message: why + ": " + cause.Error()}
			env.rec.AddVerdict(v)
		}
	}
}

func (r *Runner) progress(plan, step string) {
	if r.Progress != nil {
		r.Progress(plan, step)
	}
}

// imageFor finds and checks the bitstream for one board: the plan's own file
// when it names one, else the catalogue's file for the board's part.
func (r *Runner) imageFor(plan *labconfig.Plan, m *bitstreams.Manifest, b *boards.Board) (image, error) {
	var path string
	var data []byte
	if plan.Bitstream != "" {
		path = plan.Bitstream
		if !filepath.IsAbs(path) && plan.Pos.File != "" {
			path = filepath.Join(filepath.Dir(plan.Pos.File), path)
		}
		var err error
		if data, err = os.ReadFile(path); err != nil {
			return image{}, drivers.Setup(b.Name, "read bitstream", fmt.Sprintf("fix `bitstream:` at %s", plan.Pos), err)
		}
	} else {
		_, f, d, err := r.Catalogue.FileFor(m.Name, b.Kind.Part)
		if err != nil {
			return image{}, drivers.Setup(b.Name, "find bitstream", "", err)
		}
		path, data = f.Path, d
	}
	img, err := r.Catalogue.Check(m, path, data, b.Kind.Part)
	if err != nil {
		return image{}, drivers.Setup(b.Name, "check bitstream", "", err)
	}
	return image{board: b, img: img, info: results.BitstreamInfo{
		Board: b.Name, Kind: b.Kind.Name, Plan: plan.Name, Design: m.Name, Version: m.Version,
		File: path, SHA256: img.SHA256, Part: img.Part,
	}}, nil
}

type countingRecorder struct {
	Recorder
	mu           sync.Mutex
	n, notPassed int
}

func (c *countingRecorder) AddVerdict(v results.Verdict) error {
	c.mu.Lock()
	c.n++
	if v.Status != results.Pass {
		c.notPassed++
	}
	c.mu.Unlock()
	return c.Recorder.AddVerdict(v)
}

func (c *countingRecorder) counts() (int, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n, c.notPassed
}
