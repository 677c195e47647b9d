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

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/boards"
	"github.com/labrunner/labrunner/drivers"
	"github.com/labrunner/labrunner/drivers/program"
	"github.com/labrunner/labrunner/drivers/regmap"
	"github.com/labrunner/labrunner/labconfig"
	"github.com/labrunner/labrunner/results"
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
	// OnHealth is told each board's health ("" when good) and design.
	OnHealth func(board, design, version, unhealthy string)
	// Progress, if set, is told when a plan step starts ("program",
	// "setup", a test name) on a plan.
	Progress func(plan, step string)
	// PlanDone, if set, is told when a plan run by the nightly has
	// finished.
	PlanDone func(plan string)
	// OpenErrors says why a plan's board missing from Boards did not open
	// (the driver's own error), for its verdicts.
	OpenErrors map[string]error
}

// Recorder is where measurements, expectations and verdicts go, and where
// a resumable run keeps its progress (results.Dir in a run).
type Recorder interface {
	AddMeasurement(results.Measurement) error
	AddExpectation(test, board string, e results.Expectation) error
	AddVerdict(results.Verdict) error
	// MarkDone records that a step finished; Done reports whether a test
	// step finished before (a resumed run skips it).
	MarkDone(step, kind string) error
	Done(step string) bool
}

// PlanResult summarises one plan's execution.
type PlanResult struct {
	Plan     string
	Verdicts int
	Failed   int // verdicts that did not pass
	Setup    error
	Skipped  int // tests skipped because an earlier attempt finished them
	Duration time.Duration
}

// image is a checked bitstream ready for one board.
type image struct {
	board *boards.Board
	img   drivers.Image
	info  results.BitstreamInfo
}

// TestStep is the step id of a plan's i-th test, stable across attempts.
func TestStep(plan *labconfig.Plan, i int) string {
	return fmt.Sprintf("%s#%d:%s", plan.Name, i, plan.Tests[i].Name)
}

// RunPlan runs a plan: health checks, bitstream checks (a bad file stops
// the plan before any board is touched: no half-programmed rack),
// programming in parallel, the design's setup, then the plan's tests in
// order. A board that fails its health checks leaves the plan: its tests are
// infrastructure errors and the others go on. Tests an earlier attempt
// finished (a resumed run) are skipped.
func (r *Runner) RunPlan(ctx context.Context, plan *labconfig.Plan) PlanResult {
	start := time.Now()
	res := PlanResult{Plan: plan.Name}
	log := r.Log.With("plan", plan.Name)
	rec := &countingRecorder{Recorder: r.Rec}
	defer func() {
		res.Verdicts, res.Failed = rec.counts()
		res.Duration = time.Since(start)
	}()
	pending := []int{}
	for i := range plan.Tests {
		if rec.Done(TestStep(plan, i)) {
			res.Skipped++
			continue
		}
		pending = append(pending, i)
	}
	if len(pending) == 0 {
		log.Info("every test of the plan finished in an earlier attempt")
		return res
	}
	env := &Env{Lab: r.Lab, Plan: plan, Deadlines: r.Lab.Deadlines, Log: log, rec: rec, Shared: map[string]any{},
		Unhealthy: map[string]string{}}
	// failTests records an error verdict for every pending test on the
	// given boards (all the plan's boards when none are given).
	failTests := func(boardNames []string, err error) {
		if boardNames == nil {
			for _, pb := range plan.Boards {
				boardNames = append(boardNames, pb.Board)
			}
		}
		for _, i := range pending {
			env.step = TestStep(plan, i)
			for _, b := range boardNames {
				env.Error(plan.Tests[i].Name, b, nil, err)
			}
		}
		env.step = ""
	}

	m, err := r.Catalogue.Design(plan.Design)
	if err != nil {
		res.Setup = err
		failTests(nil, drivers.Setup("", "plan "+plan.Name, "", fmt.Errorf("%s: %w", plan.Pos, err)))
		return res
	}
	env.Design = m

	// Health before anything is done: console and bus answer.
	r.progress(plan.Name, "health")
	var healthy []*boards.Board
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, pb := range plan.Boards {
		b, ok := r.Boards[pb.Board]
		if !ok {
			env.Unhealthy[pb.Board] = "not open"
			if err := r.OpenErrors[pb.Board]; err != nil {
				env.Unhealthy[pb.Board] = "not open: " + err.Error()
			}
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := retryInfra(log, b.Name, "health", func() error {
				return checkAlive(ctx, b,
					func(c context.Context) (context.Context, context.CancelFunc) {
						return drivers.Deadline(c, r.Lab.Deadlines.Console)
					},
					func(c context.Context) (context.Context, context.CancelFunc) {
						return drivers.Deadline(c, r.Lab.Deadlines.Register)
					})
			})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				env.Unhealthy[b.Name] = err.Error()
				return
			}
			healthy = append(healthy, b)
		}()
	}
	wg.Wait()
	r.reportUnhealthy(env, plan, pending, "")

	r.progress(plan.Name, "check bitstreams")
	var imgs []image
	var errs []error
	for _, pb := range plan.Boards {
		b := r.Boards[pb.Board]
		if b == nil || !contains(healthy, b) {
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
		err := fmt.Errorf("bitstream check failed, no board was programmed: %w", errors.Join(errs...))
		res.Setup = err
		failTests(boardNames(healthy), drivers.Setup("", "plan "+plan.Name, "", err))
		return res
	}
	if len(imgs) == 0 {
		res.Setup = errors.New("no healthy board")
		return res
	}

	r.progress(plan.Name, "program")
	env.step = plan.Name + "#program"
	programmed := map[string]*boards.Board{}
	for i := range imgs {
		wg.Add(1)
		go func(it image) {
			defer wg.Done()
			t0 := time.Now()
			err := retryInfra(log, it.board.Name, "program", func() error {
				pctx, cancel := drivers.Deadline(ctx, r.Lab.Deadlines.Program)
				defer cancel()
				return it.board.Programmer.Program(pctx, it.img)
			})
			if err == nil {
				rctx, cancel := drivers.Deadline(ctx, 4*r.Lab.Deadlines.Register)
				err = retryInfra(log, it.board.Name, "identity", func() error {
					return checkIdentity(rctx, regmap.New(it.board.Bus, m, it.board.Name), m, it.board.Name)
				})
				cancel()
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				env.Error("program", it.board.Name, nil, err)
				if drivers.ClassOf(err) == drivers.ClassInfra {
					env.Unhealthy[it.board.Name] = err.Error()
				} else {
					env.Unhealthy[it.board.Name] = "programming failed: " + err.Error()
				}
				return
			}
			meas := results.Measurement{Board: it.board.Name, Metric: "harness.program_seconds", Unit: "s", Value: time.Since(t0).Seconds()}
			env.Check("program", meas, true, "programmed with "+it.info.Design+" "+it.info.Version, "bitstream catalogue", "")
			programmed[it.board.Name] = it.board
			if r.OnBitstream != nil {
				r.OnBitstream(it.info)
			}
		}(imgs[i])
	}
	wg.Wait()
	rec.MarkDone(env.step, results.KindSetup)
	env.step = ""
	r.reportUnhealthy(env, plan, pending, "program")

	for _, pb := range plan.Boards {
		if b, ok := programmed[pb.Board]; ok {
			env.Boards = append(env.Boards, &Board{Board: b, Regs: regmap.New(b.Bus, m, b.Name), Params: pb.Params})
		}
	}
	if len(env.Boards) == 0 {
		res.Setup = errors.New("no board could be programmed")
		return res
	}
	snapshotResets(ctx, env)
	if s := setupFor(plan.Design); s != nil {
		r.progress(plan.Name, "setup")
		env.step = plan.Name + "#setup"
		sctx, cancel := drivers.Deadline(ctx, r.Lab.Deadlines.Test)
		err := s(sctx, env)
		cancel()
		if err != nil {
			res.Setup = err
			env.Error("setup", "", nil, err)
			rec.MarkDone(env.step, results.KindSetup)
			failTests(boardNames(boardsOf(env.Boards)), fmt.Errorf("not run: design setup failed: %w", err))
			return res
		}
		rec.MarkDone(env.step, results.KindSetup)
		env.step = ""
	}
	if h := healthFor(plan.Design); h != nil {
		var keep []*Board
		for _, b := range env.Boards {
			hctx, cancel := drivers.Deadline(ctx, 8*r.Lab.Deadlines.Register)
			err := h(hctx, env, b)
			cancel()
			if err != nil {
				env.Unhealthy[b.Name] = err.Error()
				continue
			}
			keep = append(keep, b)
		}
		if len(keep) < len(env.Boards) {
			env.Boards = keep
			r.reportUnhealthy(env, plan, pending, "links")
			// The design's view of the rack changed: set it up again
			// without the unhealthy boards.
			if s := setupFor(plan.Design); s != nil && len(keep) > 0 {
				sctx, cancel := drivers.Deadline(ctx, r.Lab.Deadlines.Test)
				if err := s(sctx, env); err != nil {
					log.Warn("setup without the unhealthy boards failed", "err", err)
				}
				cancel()
			}
		}
	}
	if r.OnHealth != nil {
		for _, pb := range plan.Boards {
			r.OnHealth(pb.Board, m.Name, m.Version, env.Unhealthy[pb.Board])
		}
	}

	for _, i := range pending {
		t := plan.Tests[i]
		test, ok := Lookup(plan.Design, t.Name)
		env.Test = t
		env.step = TestStep(plan, i)
		if !ok {
			env.Error(t.Name, "", nil, drivers.Setup("", t.Pos.String(), "", fmt.Errorf("no test %q for design %s", t.Name, plan.Design)))
			rec.MarkDone(env.step, results.KindTest)
			continue
		}
		if ctx.Err() != nil {
			// Interrupted: leave the rest for --resume.
			break
		}
		r.progress(plan.Name, t.Name)
		dl := r.Lab.Deadlines.Test
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
		} else if after == before && len(env.Boards) > 0 {
			env.Error(t.Name, "", nil, fmt.Errorf("test %s recorded no verdict: it measured nothing", t.Name))
		}
		if ctx.Err() == nil {
			rec.MarkDone(env.step, results.KindTest)
		}
		log.Debug("test done", "test", t.Name, "seconds", time.Since(t0).Seconds())
	}
	env.step = ""
	return res
}

// reportUnhealthy records, once per board, an infrastructure error for each
// pending test of the boards newly found unhealthy at this stage.
func (r *Runner) reportUnhealthy(env *Env, plan *labconfig.Plan, pending []int, stage string) {
	if env.reported == nil {
		env.reported = map[string]bool{}
	}
	for _, pb := range plan.Boards {
		why, bad := env.Unhealthy[pb.Board]
		if !bad || env.reported[pb.Board] {
			continue
		}
		env.reported[pb.Board] = true
		r.Log.Warn("board unhealthy: taken out of the plan", "plan", plan.Name, "board", pb.Board, "reason", why)
		for _, i := range pending {
			env.step = TestStep(plan, i)
			env.Error(plan.Tests[i].Name, pb.Board, nil,
				drivers.Infra(pb.Board, "health", "the rest of the rack goes on without it", fmt.Errorf("board unhealthy: %s", why)))
		}
		env.step = ""
	}
}

func contains(bs []*boards.Board, b *boards.Board) bool {
	for _, x := range bs {
		if x == b {
			return true
		}
	}
	return false
}

func boardNames(bs []*boards.Board) []string {
	out := make([]string, 0, len(bs))
	for _, b := range bs {
		out = append(out, b.Name)
	}
	return out
}

func boardsOf(bs []*Board) []*boards.Board {
	out := make([]*boards.Board, 0, len(bs))
	for _, b := range bs {
		out = append(out, b.Board)
	}
	return out
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

// Steps is how many progress steps a plan's run reports: health, check
// bitstreams, program, the design's setup when it has one, then each test.
func Steps(plan *labconfig.Plan) int {
	n := 3 + len(plan.Tests)
	if setupFor(plan.Design) != nil {
		n++
	}
	return n
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
		_, f, d, err := r.Catalogue.FileFor(m.Name, b.Kind.Part, program.Formats(b.Config.Programmer.Type, b.Kind.Vendor)...)
		if err != nil {
			return image{}, drivers.Setup(b.Name, "find bitstream", "", err)
		}
		path, data = r.Catalogue.FilePath(m, f), d
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
