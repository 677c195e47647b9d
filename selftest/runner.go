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
	// Mgmt, if set, checks the management plane of a plan's programmed
	// boards (firmware, MOS channels, TimeSync) after the design's setup
	// and records its verdicts through env (selftest/bringup.Check).
	Mgmt func(ctx context.Context, env *Env) error
	// MgmtLock, if set, runs one management check at a time.
	MgmtLock *sync.Mutex
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

// RunPlan runs a plan in phases (planRun): the plan's and its boards'
// parameters decoded (DecodePlan), health checks, bitstream checks
// (a bad file stops the plan before any board is touched: no half-programmed
// rack), programming in parallel, the design's setup and its board health
// check, the management check (Mgmt, when set; it runs after a setup
// that failed too), then the plan's tests in order; at the end each
// board's bus counters are recorded. A board that fails its health checks
// leaves the plan: its tests are infrastructure errors and the others go
// on. Tests an earlier attempt finished (a resumed run) are skipped.
func (r *Runner) RunPlan(ctx context.Context, plan *labconfig.Plan) PlanResult {
	pr := r.newPlanRun(plan)
	defer pr.finish()
	if len(pr.pending) == 0 {
		pr.log.Info("every test of the plan finished in an earlier attempt")
		return *pr.res
	}
	pr.busBefore = r.busCounters(plan)
	defer pr.recordBusCounters(ctx)
	for _, phase := range []func(context.Context) bool{
		pr.design, pr.params, pr.health, pr.check, pr.program, pr.setup, pr.boardHealth, pr.mgmt, pr.tests,
	} {
		if !phase(ctx) {
			break
		}
	}
	pr.reconcileRest(ctx.Err() != nil)
	pr.mgmtLeft(ctx)
	return *pr.res
}

// planRun is one plan's execution, phase by phase; each phase returns
// whether the plan goes on.
type planRun struct {
	r       *Runner
	plan    *labconfig.Plan
	log     *slog.Logger
	rec     *countingRecorder
	env     *Env
	res     *PlanResult
	start   time.Time
	pending []int // indexes of the tests still to run

	healthy   []*boards.Board
	imgs      []image
	busBefore map[string]BusCounters

	// declared holds each pending test's declared cases (RegisterCases),
	// reconciled the tests whose missing cases were reported.
	declared   map[int][]Case
	reconciled map[int]bool
}

func (r *Runner) newPlanRun(plan *labconfig.Plan) *planRun {
	pr := &planRun{r: r, plan: plan, log: r.Log.With("plan", plan.Name), rec: &countingRecorder{Recorder: r.Rec},
		res: &PlanResult{Plan: plan.Name}, start: time.Now(),
		declared: map[int][]Case{}, reconciled: map[int]bool{}}
	for i := range plan.Tests {
		if pr.rec.Done(TestStep(plan, i)) {
			pr.res.Skipped++
			continue
		}
		pr.pending = append(pr.pending, i)
	}
	pr.env = &Env{Lab: r.Lab, Plan: plan, Deadlines: r.Lab.Deadlines, Log: pr.log, rec: pr.rec, Shared: map[string]any{},
		Unhealthy: map[string]string{}, start: pr.start}
	return pr
}

func (pr *planRun) finish() {
	pr.res.Verdicts, pr.res.Failed = pr.rec.counts()
	pr.res.Duration = time.Since(pr.start)
}

// failTests records an error verdict for every pending test on the given
// boards (all the plan's boards when none are given): the plan stopped as
// a whole, before any board was touched. A test that declares its cases
// keeps those of the boards that left the plan before (reconcile), each
// naming its board.
func (pr *planRun) failTests(boardNames []string, err error) {
	if boardNames == nil {
		for _, pb := range pr.plan.Boards {
			boardNames = append(boardNames, pb.Board)
		}
	}
	for _, i := range pr.pending {
		pr.env.step = TestStep(pr.plan, i)
		for _, b := range boardNames {
			pr.env.Error(pr.plan.Tests[i].Name, b, nil, err)
		}
		pr.env.step = ""
		if pr.declares(i) {
			pr.reconcile(i, nil, nil, nil, true)
		}
	}
	pr.env.step = ""
}

// design finds the plan's design in the catalogue.
func (pr *planRun) design(context.Context) bool {
	m, err := pr.r.Catalogue.Design(pr.plan.Design)
	if err != nil {
		pr.res.Setup = err
		pr.failTests(nil, drivers.Setup("", "plan "+pr.plan.Name, "", fmt.Errorf("%s: %w", pr.plan.Pos, err)))
		return false
	}
	pr.env.Design = m
	return true
}

// params decodes the plan's and its boards' parameters (DecodePlan): a
// plan that does not decode stops before any board is touched. lab check
// and the nightly's check refuse it before; a plan run another way still
// records it.
func (pr *planRun) params(context.Context) bool {
	d, err := DecodePlan(pr.plan)
	if err != nil {
		err = planParamsError(pr.plan, err)
		pr.res.Setup = err
		pr.failTests(nil, err)
		return false
	}
	pr.env.plan = d
	return true
}

// health checks, before anything is done, that each board's console and
// bus answer.
func (pr *planRun) health(ctx context.Context) bool {
	r, plan, env := pr.r, pr.plan, pr.env
	r.progress(plan.Name, "health")
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
			err := retryInfra(pr.log, b.Name, "health", func() error {
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
			pr.healthy = append(pr.healthy, b)
		}()
	}
	wg.Wait()
	pr.reportUnhealthy("")
	return true
}

// check finds and checks every healthy board's bitstream; one bad file
// stops the plan before any board is programmed.
func (pr *planRun) check(context.Context) bool {
	r, plan := pr.r, pr.plan
	r.progress(plan.Name, "check bitstreams")
	var errs []error
	for _, pb := range plan.Boards {
		b := r.Boards[pb.Board]
		if b == nil || !contains(pr.healthy, b) {
			continue
		}
		img, err := r.imageFor(plan, pr.env.Design, b)
		if err != nil {
			errs = append(errs, fmt.Errorf("board %s: %w", b.Name, err))
			continue
		}
		pr.imgs = append(pr.imgs, img)
	}
	if len(errs) > 0 {
		err := fmt.Errorf("bitstream check failed, no board was programmed: %w", errors.Join(errs...))
		pr.res.Setup = err
		pr.failTests(boardNames(pr.healthy), drivers.Setup("", "plan "+plan.Name, "", err))
		return false
	}
	if len(pr.imgs) == 0 {
		pr.res.Setup = errors.New("no healthy board")
		return false
	}
	return true
}

// program loads the checked images in parallel and reads each board's
// identity back.
func (pr *planRun) program(ctx context.Context) bool {
	r, plan, env, m := pr.r, pr.plan, pr.env, pr.env.Design
	r.progress(plan.Name, "program")
	env.step = plan.Name + "#program"
	programmed := map[string]*boards.Board{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range pr.imgs {
		wg.Add(1)
		go func(it image) {
			defer wg.Done()
			t0 := time.Now()
			err := retryInfra(pr.log, it.board.Name, "program", func() error {
				pctx, cancel := drivers.Deadline(ctx, r.Lab.Deadlines.Program)
				defer cancel()
				return it.board.Programmer.Program(pctx, it.img)
			})
			if err == nil {
				rctx, cancel := drivers.Deadline(ctx, 4*r.Lab.Deadlines.Register)
				err = retryInfra(pr.log, it.board.Name, "identity", func() error {
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
		}(pr.imgs[i])
	}
	wg.Wait()
	pr.rec.MarkDone(env.step, results.KindSetup)
	env.step = ""
	pr.reportUnhealthy("program")

	for _, pb := range plan.Boards {
		if b, ok := programmed[pb.Board]; ok {
			env.Boards = append(env.Boards, &Board{Board: b, Regs: regmap.New(b.Bus, m, b.Name), Params: pb.Params})
		}
	}
	if len(env.Boards) == 0 {
		pr.res.Setup = errors.New("no board could be programmed")
		return false
	}
	snapshotResets(ctx, env)
	return true
}

// setup runs the design's setup step, if it has one.
func (pr *planRun) setup(ctx context.Context) bool {
	r, plan, env := pr.r, pr.plan, pr.env
	s := setupFor(plan.Design)
	if s == nil {
		return true
	}
	r.progress(plan.Name, "setup")
	env.step = plan.Name + "#setup"
	sctx, cancel := drivers.Deadline(ctx, r.Lab.Deadlines.Test)
	err := s(sctx, env)
	cancel()
	pr.rec.MarkDone(env.step, results.KindSetup)
	if err != nil {
		pr.res.Setup = err
		env.Error("setup", "", nil, err)
		env.step = ""
		// The boards were programmed: a test that declares its cases has
		// them reported, each with the setup's error (reconcileRest).
		var undeclared []int
		for _, i := range pr.pending {
			if !pr.declares(i) {
				undeclared = append(undeclared, i)
			}
		}
		pending := pr.pending
		pr.pending = undeclared
		pr.failTests(boardNames(boardsOf(env.Boards)), fmt.Errorf("not run: design setup failed: %w", err))
		pr.pending = pending
		// The management plane (firmware, MOS, TimeSync) does not need the
		// design's setup: its check still runs on the programmed boards,
		// so that its cases keep their names and what it finds is known.
		pr.mgmt(ctx)
		return false
	}
	env.step = ""
	return true
}

// boardHealth runs the design's own board check (links up) and takes the
// boards that fail it out of the plan, setting the design up again without
// them.
func (pr *planRun) boardHealth(ctx context.Context) bool {
	r, plan, env := pr.r, pr.plan, pr.env
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
			pr.reportUnhealthy("links")
			// The design's view of the rack changed: set it up again
			// without the unhealthy boards.
			if s := setupFor(plan.Design); s != nil && len(keep) > 0 {
				sctx, cancel := drivers.Deadline(ctx, r.Lab.Deadlines.Test)
				if err := s(sctx, env); err != nil {
					pr.log.Warn("setup without the unhealthy boards failed", "err", err)
				}
				cancel()
			}
		}
	}
	if r.OnHealth != nil {
		for _, pb := range plan.Boards {
			r.OnHealth(pb.Board, env.Design.Name, env.Design.Version, env.Unhealthy[pb.Board])
		}
	}
	return true
}

// mgmt runs the management check on the plan's programmed boards (once per
// run directory, like a test): what it finds is recorded as the plan's
// verdicts; it never stops the plan.
func (pr *planRun) mgmt(ctx context.Context) bool {
	r, plan, env := pr.r, pr.plan, pr.env
	if r.Mgmt == nil || len(env.Boards) == 0 {
		return true
	}
	step := MgmtStep(plan)
	if pr.rec.Done(step) {
		return true
	}
	if r.MgmtLock != nil {
		// The management check times the management plane: one at a time
		// across the run's board groups (the emulated rack has one
		// management clock).
		r.MgmtLock.Lock()
		defer r.MgmtLock.Unlock()
	}
	r.progress(plan.Name, "mgmt")
	env.step = step
	before, _ := env.Verdicts()
	mctx, cancel := drivers.Deadline(ctx, r.Lab.Deadlines.Test)
	err := r.Mgmt(mctx, env)
	cancel()
	if err != nil {
		env.Error("mgmt", "", nil, err)
	} else if after, _ := env.Verdicts(); after == before {
		env.Error("mgmt", "", nil, errors.New("the management check recorded no verdict: it checked nothing"))
	}
	if ctx.Err() == nil {
		pr.rec.MarkDone(step, results.KindTest)
	}
	env.step = ""
	return true
}

// tests runs the plan's pending tests in order.
func (pr *planRun) tests(ctx context.Context) bool {
	r, plan, env := pr.r, pr.plan, pr.env
	for _, i := range pr.pending {
		t := plan.Tests[i]
		test, ok := Lookup(plan.Design, t.Name)
		env.Test = t
		env.step = TestStep(plan, i)
		if !ok {
			env.Error(t.Name, "", nil, drivers.Setup("", t.Pos.String(), "", fmt.Errorf("no test %q for design %s", t.Name, plan.Design)))
			pr.rec.MarkDone(env.step, results.KindTest)
			continue
		}
		if ctx.Err() != nil {
			// Interrupted: leave the rest for --resume.
			break
		}
		params, err := test.DecodeParams(t.Params)
		if err != nil {
			// lab check and the nightly's check refuse this before any
			// board is touched; a plan run another way still records it.
			env.Error(t.Name, "", nil, paramsError(t, err))
			pr.rec.MarkDone(env.step, results.KindTest)
			continue
		}
		env.params = params
		r.progress(plan.Name, t.Name)
		dl := r.Lab.Deadlines.Test
		if t.Deadline > 0 {
			dl = t.Deadline
		}
		tctx, cancel := drivers.Deadline(ctx, dl)
		before, _ := env.Verdicts()
		t0 := time.Now()
		env.startTest(tctx)
		err = runGuarded(tctx, test, env)
		if err != nil {
			env.Error(t.Name, "", nil, err)
		}
		seen := env.endTest()
		env.params = nil
		cancel()
		if ctx.Err() == nil {
			pr.reconcile(i, seen, err, nil, false)
		}
		after, _ := env.Verdicts()
		if err == nil && after == before && len(env.Boards) > 0 {
			env.Error(t.Name, "", nil, fmt.Errorf("test %s recorded no verdict: it measured nothing", t.Name))
		}
		if ctx.Err() == nil {
			pr.rec.MarkDone(env.step, results.KindTest)
		}
		pr.log.Debug("test done", "test", t.Name, "seconds", time.Since(t0).Seconds())
	}
	env.step = ""
	return true
}

// mgmtLeft runs the management check of a plan every board of which left
// it before the check (none programmed): the check records its cases
// there, each an error naming the board (selftest/bringup.Check), so that
// they keep their names.
func (pr *planRun) mgmtLeft(ctx context.Context) {
	r, env := pr.r, pr.env
	if r.Mgmt == nil || ctx.Err() != nil || len(env.Boards) > 0 || len(env.Unhealthy) == 0 || env.Design == nil || len(pr.pending) == 0 {
		return
	}
	step := MgmtStep(pr.plan)
	if pr.rec.Done(step) {
		return
	}
	env.step = step
	mctx, cancel := drivers.Deadline(ctx, r.Lab.Deadlines.Test)
	if err := r.Mgmt(mctx, env); err != nil {
		env.Error("mgmt", "", nil, err)
	}
	cancel()
	pr.rec.MarkDone(step, results.KindTest)
	env.step = ""
}

// MgmtStep is the step id of a plan's management check.
func MgmtStep(plan *labconfig.Plan) string { return plan.Name + "#mgmt" }

// reportUnhealthy records, once per board, an infrastructure error for each
// pending test of the boards newly found unhealthy at this stage. A test
// that declares its cases has them reported instead, each under its own
// name, once the test ran (reconcile). A board found unhealthy before
// programming keeps its program case too.
func (pr *planRun) reportUnhealthy(stage string) {
	r, env, plan, pending := pr.r, pr.env, pr.plan, pr.pending
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
		if stage == "" && len(pending) > 0 {
			env.step = plan.Name + "#program"
			env.Error("program", pb.Board, nil,
				drivers.Infra(pb.Board, "health", "the rest of the rack goes on without it", fmt.Errorf("not programmed: board %s left the plan: %s", pb.Board, why)))
		}
		for _, i := range pending {
			if pr.declares(i) {
				continue
			}
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
// bitstreams, program, the design's setup when it has one, the management
// check when there is one, then each test.
func Steps(plan *labconfig.Plan, mgmt bool) int {
	n := 3 + len(plan.Tests)
	if setupFor(plan.Design) != nil {
		n++
	}
	if mgmt {
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
