// Package selftest holds the board and rack checks a plan runs (register
// sanity, links, the self-test bandwidth and latency measurements, paths)
// and the runner that executes a plan: check bitstreams, program boards,
// configure the design, run its tests, score what they measured against the
// golden models, and record everything in the run directory.
//
// Design-specific tests live in sub-packages (selftest/exanet, ...) and
// register themselves; selftest/all imports them all.
package selftest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/boards"
	"github.com/labrunner/labrunner/drivers"
	"github.com/labrunner/labrunner/drivers/regmap"
	"github.com/labrunner/labrunner/labconfig"
	"github.com/labrunner/labrunner/results"
)

// Board is a board under test, as tests see it.
type Board struct {
	*boards.Board
	Regs   *regmap.Regs     // symbolic access by the loaded design's map
	Params labconfig.Params // the plan's per-board parameters
}

// Env is what a test runs with.
type Env struct {
	Lab       *labconfig.Lab
	Plan      *labconfig.Plan
	Test      labconfig.Test
	Design    *bitstreams.Manifest
	Boards    []*Board
	Deadlines labconfig.Deadlines
	Log       *slog.Logger
	// Shared holds what the design's setup computed for its tests
	// (coordinates, topology), by key.
	Shared map[string]any
	// Unhealthy lists the plan's boards taken out of it, with the reason;
	// tests must not count on them (a path through one is not judged).
	Unhealthy map[string]string

	rec      Recorder
	step     string // the plan step records belong to (resume)
	reported map[string]bool
	mu       sync.Mutex
	count    int
	fails    int
	// parent, for an Env made by WithDesign, is told of every verdict too.
	parent *Env
	// params is the running test's decoded parameter struct (ParamsOf).
	params any
	// plan is the plan's and its boards' decoded parameters
	// (PlanParamsOf, BoardParamsOf).
	plan *DecodedPlan
	// testCtx is the running test's context and testFails how many
	// verdicts had not passed when it started (see Error).
	testCtx   context.Context
	testFails int
	// seen, while a test runs, collects the cases it recorded (the
	// runner reports the declared ones it did not: RegisterCases).
	seen *seenCases
	// start is when the plan started (PlanStart).
	start time.Time
}

// PlanStart is when the runner started the plan (the zero time for an Env
// it did not prepare): the night a test's rotation of targets is at
// (Targets), the same its declared cases read (CasePlan.Start) whenever
// the runner lists them.
func (e *Env) PlanStart() time.Time { return e.start }

// WithDesign returns an Env that records as e does (the same plan,
// recorder and plan step, its verdicts counted in e's too) for another
// design's registers: the management block checked within a plan.
func (e *Env) WithDesign(m *bitstreams.Manifest) *Env {
	return &Env{Lab: e.Lab, Plan: e.Plan, Test: e.Test, Design: m, Boards: e.Boards, Deadlines: e.Deadlines, Log: e.Log,
		Shared: map[string]any{}, Unhealthy: e.Unhealthy, rec: e.rec, step: e.step, parent: e, plan: e.plan, start: e.start}
}

// Note records a measurement that no verdict judges (a figure a person
// reads: a retransmission count, a bootstrap time), under the test name.
func (e *Env) Note(name string, m results.Measurement) {
	m = e.fill(name, m)
	if err := e.rec.AddMeasurement(m); err != nil {
		e.Log.Error("recording a measurement failed", "test", m.Test, "err", err)
	}
}

// Board returns the plan's board of that name, or nil.
func (e *Env) Board(name string) *Board {
	for _, b := range e.Boards {
		if b.Name == name {
			return b
		}
	}
	return nil
}

// RegisterDeadline bounds one register access or short sequence of them.
func (e *Env) RegisterDeadline(ctx context.Context) (context.Context, context.CancelFunc) {
	return drivers.Deadline(ctx, e.Deadlines.Register)
}

// Verdicts returns how many verdicts the test recorded, and how many of
// them did not pass.
func (e *Env) Verdicts() (n, notPassed int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.count, e.fails
}

// Record scores a measurement against its expectation and records all
// three. The test's tolerance override from the lab file, if any, replaces
// the golden model's. Name is the test-case name ("exanet.bandwidth").
func (e *Env) Record(name string, m results.Measurement, exp results.Expectation) results.Verdict {
	m = e.fill(name, m)
	if t := e.Test.Tolerance; t != nil && exp.Text == "" {
		if t.Rel != nil {
			exp.RelTol = *t.Rel
		}
		if t.Abs != nil {
			exp.AbsTol = *t.Abs
		}
		exp.Min, exp.Max = nil, nil
		exp.Source += " (tolerance from the lab file)"
		// The band is the lab file's, not the model's: say so, and why it
		// may be wide (whoever wrote the lab file chose it).
		exp.Budget = fmt.Sprintf("the lab file's tolerance for test %s at %s (rel %g, abs %g), in place of the model's band", e.Test.Name, e.Test.Pos, exp.RelTol, exp.AbsTol)
		exp.Wide = ""
		if exp.NeedsReason() {
			exp.Wide = "chosen in the lab file at " + e.Test.Pos.String()
		}
	}
	// The expectation is recorded under the measurement's own parameters
	// (which add the board's link, peer or hop pair to the model's key), so
	// that reports pair the two by key.
	exp.Params = m.Params.Clone()
	v := results.Score(m, exp)
	e.write(m, &exp, v)
	return v
}

// Check records a pass/fail judgement that has no golden figure (a register
// read back, a link up): ok decides, msg explains a failure.
func (e *Env) Check(name string, m results.Measurement, ok bool, expected, source, msg string) results.Verdict {
	m = e.fill(name, m)
	v := results.Verdict{
		Time: m.Time, Plan: m.Plan, Test: m.Test, Board: m.Board, Design: m.Design, Metric: m.Metric,
		Params: m.Params, Unit: m.Unit, Expected: expected, Source: source, MeasuredText: m.Text, Step: m.Step,
	}
	if m.Text == "" {
		mv := m.Value
		v.Measured = &mv
	}
	if ok {
		v.Status = results.Pass
	} else {
		v.Status, v.Class, v.Message = results.Fail, "design", msg
	}
	e.write(m, nil, v)
	return v
}

// Error records a test case that could not be judged: the class comes from
// the error (infrastructure for a board that did not answer, setup for bad
// input); an unclassified error counts as a design failure.
//
// A case that could not be attempted because the test's own deadline ran
// out after an earlier case of the test failed is skipped with that reason:
// the earlier case's verdict says what went wrong (a stalled design), and
// the cases its wait crowded out are not infrastructure errors.
func (e *Env) Error(name, board string, params results.Params, err error) results.Verdict {
	m := e.fill(name, results.Measurement{Board: board, Params: params})
	class := drivers.ClassOf(err)
	if e.crowdedOut(err) {
		v := results.Verdict{Time: m.Time, Plan: m.Plan, Test: m.Test, Board: m.Board, Design: m.Design, Metric: m.Metric,
			Params: m.Params, Status: results.Skip, Step: m.Step,
			Message: "not run: the test's deadline ran out after an earlier case of it failed (see that case): " + err.Error()}
		e.write(m, nil, v)
		return v
	}
	v := results.Errored(m, class.String(), err)
	if class == drivers.ClassDesign {
		v.Status = results.Fail
	}
	e.write(m, nil, v)
	return v
}

// Skip records a test case that was not judged, with the reason: a
// sub-case that cannot be measured because another case already failed
// keeps its place in the results (its JUnit identity never disappears).
// Use it only where the failure that explains it is recorded too.
func (e *Env) Skip(name, board string, params results.Params, reason string) results.Verdict {
	m := e.fill(name, results.Measurement{Board: board, Params: params})
	v := results.Verdict{Time: m.Time, Plan: m.Plan, Test: m.Test, Board: m.Board, Design: m.Design, Metric: m.Metric,
		Params: m.Params, Status: results.Skip, Message: reason, Step: m.Step}
	e.write(m, nil, v)
	return v
}

// crowdedOut says whether err is the running test's own deadline, passed
// after the test recorded a verdict that did not pass.
func (e *Env) crowdedOut(err error) bool {
	if e.testCtx == nil || !errors.Is(e.testCtx.Err(), context.DeadlineExceeded) || !errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.fails > e.testFails
}

// startTest tells the Env that a test runs under ctx.
func (e *Env) startTest(ctx context.Context) {
	e.mu.Lock()
	e.testCtx, e.testFails = ctx, e.fails
	e.seen = &seenCases{ids: map[string]bool{}}
	e.mu.Unlock()
}

// endTest returns the cases the test recorded ("board name").
func (e *Env) endTest() map[string]bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.testCtx = nil
	seen := e.seen.ids
	e.seen = nil
	return seen
}

func (e *Env) fill(name string, m results.Measurement) results.Measurement {
	if m.Time.IsZero() {
		m.Time = time.Now()
	}
	m.Plan = e.Plan.Name
	m.Test = name
	m.Step = e.step
	if m.Design == "" && e.Design != nil {
		m.Design = e.Design.Name
	}
	if m.Metric == "" {
		m.Metric = name
	}
	return m
}

func (e *Env) write(m results.Measurement, exp *results.Expectation, v results.Verdict) {
	if m.Metric != "" && (v.Measured != nil || m.Text != "") {
		if err := e.rec.AddMeasurement(m); err != nil {
			e.Log.Error("recording a measurement failed", "test", m.Test, "err", err)
		}
	}
	if exp != nil {
		if err := e.rec.AddExpectation(m.Test, m.Board, *exp); err != nil {
			e.Log.Error("recording an expectation failed", "test", m.Test, "err", err)
		}
	}
	if err := e.rec.AddVerdict(v); err != nil {
		e.Log.Error("recording a verdict failed", "test", m.Test, "err", err)
	}
	for x := e; x != nil; x = x.parent {
		x.mu.Lock()
		x.seen.add(v.Board, v.Name())
		x.count++
		if v.Status != results.Pass {
			x.fails++
		}
		x.mu.Unlock()
	}
	lvl := slog.LevelInfo
	if v.Status != results.Pass {
		lvl = slog.LevelWarn
	}
	e.Log.Log(context.Background(), lvl, "verdict", "status", v.Status, "test", v.Name(), "board", v.Board, "msg", v.Message)
}

// Test is a test a plan can name.
type Test struct {
	Name string
	// Design the test belongs to; "" means any design (generic checks).
	Design string
	Doc    string
	// Params is the test's parameter struct, holding the defaults: every
	// parameter the test reads from its plan entry is a field of it (tags:
	// labconfig.ParamFields), and nothing else. `lab check` and the nightly
	// decode every plan entry into it before touching a board
	// (DecodeParams), so a typo ("batchs"), a value of the wrong type or
	// outside its limits is a configuration error, never a silently ignored
	// setting or a failure on the rack. The test reads the decoded value
	// with ParamsOf. A test without Params takes none.
	Params any
	// Run measures and records verdicts through env. An error returned is
	// recorded as an error verdict for the test as a whole (nothing else
	// recorded it): use it for infrastructure and setup trouble.
	Run func(ctx context.Context, env *Env) error
}

// DecodeParams decodes a plan's test entry into a copy of the test's
// parameter struct (its defaults, overridden by the entry): every unknown
// key, and every value of the wrong type or outside its limits, is
// reported with file:line as *labconfig.Errors. A test without Params
// refuses every key.
func (t Test) DecodeParams(ps labconfig.Params) (any, error) {
	if t.Params == nil {
		return nil, ps.Check()
	}
	p := reflect.New(reflect.TypeOf(t.Params))
	p.Elem().Set(reflect.ValueOf(t.Params))
	if err := ps.Decode(p.Interface()); err != nil {
		return nil, err
	}
	return p.Elem().Interface(), nil
}

// CheckParams refuses a plan's test entry that does not decode into the
// test's parameters (DecodeParams).
func (t Test) CheckParams(ps labconfig.Params) error {
	_, err := t.DecodeParams(ps)
	return err
}

// ParamsOf returns the running test's parameters, decoded from its plan
// entry into its parameter struct P (the runner decodes them before the
// test runs). An Env the runner did not prepare (a unit test's) decodes
// env.Test.Params with the registered test's defaults.
func ParamsOf[P any](env *Env) (P, error) {
	var zero P
	v := env.params
	if v == nil {
		design := ""
		if env.Design != nil {
			design = env.Design.Name
		}
		t, ok := Lookup(design, env.Test.Name)
		if !ok {
			return zero, fmt.Errorf("test %s: no such test registered for design %q", env.Test.Name, design)
		}
		var err error
		if v, err = t.DecodeParams(env.Test.Params); err != nil {
			return zero, paramsError(env.Test, err)
		}
	}
	p, ok := v.(P)
	if !ok {
		return zero, fmt.Errorf("test %s reads parameters as %v but declares %T", env.Test.Name, reflect.TypeFor[P](), v)
	}
	return p, nil
}

// paramsError marks a plan entry's parameters that do not decode as a
// setup error at the entry.
func paramsError(t labconfig.Test, err error) error {
	var errs *labconfig.Errors
	if errors.As(err, &errs) {
		for i := range errs.List {
			if errs.List[i].Pos.Line == 0 {
				errs.List[i].Pos = t.Pos // a problem of the entry as a whole
			}
		}
	}
	return drivers.Setup("", t.Pos.String(), "fix the test's params", fmt.Errorf("test %s: %w", t.Name, err))
}

// Setup prepares boards after programming, before a design's tests run
// (coordinates, routing tables). It may fill env.Shared.
type Setup func(ctx context.Context, env *Env) error

var (
	tests  = newRegistry[Test]("selftest.Register: test")
	setups = newRegistry[designSetup]("selftest.RegisterSetup: the setup of design")
)

// designSetup is what a design registered for the step between programming
// and its tests: a Setup, or the reason it needs none, and the parameters
// its plans and their boards take.
type designSetup struct {
	run    Setup
	none   string
	params DesignParams
}

// Register makes a test available to plans. It is meant for init
// functions: a test without a name or a Run, or a second test of one name
// for one design, panics (the panic names both registrations).
func Register(t Test) {
	where := caller(1)
	if t.Name == "" || t.Run == nil {
		panic(fmt.Sprintf("selftest.Register at %s: a test needs a Name and a Run (got name %q)", where, t.Name))
	}
	if t.Params != nil {
		if reflect.TypeOf(t.Params).Kind() != reflect.Struct {
			panic(fmt.Sprintf("selftest.Register at %s: test %s: Params is a struct value holding the defaults, got %T", where, t.Name, t.Params))
		}
		fs, err := labconfig.ParamFields(t.Params)
		if err != nil {
			panic(fmt.Sprintf("selftest.Register at %s: test %s: %v", where, t.Name, err))
		}
		for _, f := range fs {
			if _, ok := t.Params.(targeted); f.Name == TargetsParam && !ok {
				panic(fmt.Sprintf("selftest.Register at %s: test %s: declare %s by embedding selftest.Targets (Env.Targets reads it there)", where, t.Name, TargetsParam))
			}
		}
	}
	tests.add(testKey(t.Design, t.Name), t, where)
}

// testKey is the registry key of a test: its design (empty for a generic
// test) and its name.
func testKey(design, name string) string {
	if design == "" {
		return "/" + name + " (generic)"
	}
	return design + "/" + name
}

// RegisterSetup sets a design's setup step and the parameters its plans
// and their boards take (DesignParams), which the setup reads decoded
// (PlanParamsOf, BoardParamsOf). A design has one setup, or says it needs
// none (RegisterNoSetup): a second registration for the same design panics
// naming both, and so does a nil setup or parameters that are not structs.
func RegisterSetup(design string, s Setup, ps DesignParams) {
	where := caller(1)
	if design == "" || s == nil {
		panic(fmt.Sprintf("selftest.RegisterSetup at %s: want a design name and a setup (got %q, nil setup %v); a design that needs none calls RegisterNoSetup",
			where, design, s == nil))
	}
	checkDesignParams("RegisterSetup", where, design, ps)
	setups.add(design, designSetup{run: s, params: ps}, where)
}

// RegisterNoSetup declares that a design has nothing to configure between
// programming and its tests, and why (every test configures what it
// uses; a single board with no cables). Saying so, rather than saying
// nothing, lets the design-consistency test (docs/adding-a-design.md) tell
// a design that needs no setup from one whose setup was forgotten.
//
// Its plans may still take parameters (ps), which its tests read with
// PlanParamsOf and BoardParamsOf; empty structs say they take none.
func RegisterNoSetup(design, why string, ps DesignParams) {
	where := caller(1)
	if design == "" || strings.TrimSpace(why) == "" {
		panic(fmt.Sprintf("selftest.RegisterNoSetup at %s: want a design name and the reason it needs no setup (got %q, %q)", where, design, why))
	}
	checkDesignParams("RegisterNoSetup", where, design, ps)
	setups.add(design, designSetup{none: why, params: ps}, where)
}

// SetupOf says what a design registered for its setup step: has is false
// when it registered nothing; none is the reason it gave for needing no
// setup (RegisterNoSetup), empty when it has one.
func SetupOf(design string) (has bool, none string) {
	s, ok := setups.get(design)
	return ok, s.none
}

// Lookup finds a test for a design (design-specific first, then generic).
func Lookup(design, name string) (Test, bool) {
	if t, ok := tests.get(testKey(design, name)); ok {
		return t, true
	}
	return tests.get(testKey("", name))
}

// TestNames maps each design to its test names (generic tests under every
// design), for labconfig.Known.
func TestNames(designs []string) map[string][]string {
	all := Tests()
	out := map[string][]string{}
	for _, d := range designs {
		for _, t := range all {
			if t.Design == "" || t.Design == d {
				out[d] = append(out[d], t.Name)
			}
		}
		sort.Strings(out[d])
	}
	return out
}

// Tests lists every registered test, by design then name.
func Tests() []Test {
	var out []Test
	for _, k := range tests.names() {
		t, _ := tests.get(k)
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Design != out[j].Design {
			return out[i].Design < out[j].Design
		}
		return out[i].Name < out[j].Name
	})
	return out
}

func setupFor(design string) Setup {
	s, _ := setups.get(design)
	return s.run
}

// Gbps converts bytes moved in cycles of a clock to Gb/s.
func Gbps(bytes float64, cycles uint64, clockMHz float64) float64 {
	if cycles == 0 {
		return 0
	}
	seconds := float64(cycles) / (clockMHz * 1e6)
	return bytes * 8 / seconds / 1e9
}

// Micros converts cycles of a clock to microseconds.
func Micros(cycles float64, clockMHz float64) float64 { return cycles / clockMHz }

// IntParams renders integer parameters for Params.
func IntParams(kv ...any) results.Params {
	p := results.Params{}
	for i := 0; i+1 < len(kv); i += 2 {
		p[fmt.Sprint(kv[i])] = fmt.Sprint(kv[i+1])
	}
	return p
}

// Percentile returns the q-quantile (0..1) of samples (sorted copy).
func Percentile(samples []float64, q float64) float64 {
	if len(samples) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), samples...)
	sort.Float64s(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	if i < 0 {
		i = 0
	}
	return s[i]
}

// joinNames renders names for messages.
func joinNames(names []string) string { return strings.Join(names, ", ") }

// State is a typed slot of Env.Shared: what a design's setup computed for
// its tests (its rack, topology, tallies), set once and fetched by every
// test without a type assertion of its own. Key must be unique across
// designs: the design's name, or name.what.
type State[T any] struct{ Key string }

// Get returns the value the setup stored, and whether there is one.
func (s State[T]) Get(env *Env) (T, bool) {
	v, ok := env.Shared[s.Key].(T)
	return v, ok
}

// Set stores v for the plan's later tests.
func (s State[T]) Set(env *Env, v T) {
	if env.Shared == nil {
		env.Shared = map[string]any{}
	}
	env.Shared[s.Key] = v
}
