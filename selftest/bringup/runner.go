package bringup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/boards"
	"github.com/labrunner/labrunner/drivers"
	"github.com/labrunner/labrunner/labconfig"
	"github.com/labrunner/labrunner/results"
	"github.com/labrunner/labrunner/selftest"
)

// PlanName names the bring-up in run directories (the plan of its records).
const PlanName = "bringup"

// Options configure a bring-up.
type Options struct {
	Lab       *labconfig.Lab
	Catalogue *bitstreams.Catalogue
	// Emulator serves the lab's emulated boards (nil: none).
	Emulator boards.Emulator
	// Rec receives measurements, expectations and verdicts (a run
	// directory); required.
	Rec selftest.Recorder
	// Transcripts opens a file for a board's console traffic (the run
	// directory's consoles/<board>.log); nil keeps none.
	Transcripts func(board string) (io.WriteCloser, error)
	Log         *slog.Logger
	// Out receives the live progress a person follows (nil: none).
	Out io.Writer
	// Boards restricts the bring-up to these boards (all when empty). An
	// in-band board still needs its rack's bootstrap, which runs whole;
	// only the named boards are judged.
	Boards []string
	// Design overrides the design programmed on the named boards.
	Design string
	// From skips the stages before it: they are not judged, and what later
	// stages need from them (power, a loaded design, the management
	// network) is re-established quietly.
	From      Stage
	Deadlines Deadlines
	// Faults lists the faults injected into the emulated rack, for the
	// report (the runner never looks at them: it finds their symptoms).
	Faults []string

	// Within restricts the lab to these boards and the cables between
	// them (the boards keep their places in the lab file, and so their
	// management addresses); all of them are judged. Empty: the whole lab.
	Within []string
	// Opened are boards the caller opened and keeps (a nightly's): the
	// bring-up uses their drivers and never closes them.
	Opened map[string]*boards.Board
	// Only runs these stages and no other (empty: every stage): a stage
	// left out is neither run nor judged, and what it would establish
	// (power, a loaded design) is taken as done.
	Only []Stage
	// Env, if set, records the verdicts in place of Rec: a plan's
	// environment, so that the records carry its plan name and step.
	Env *selftest.Env
}

// run is one bring-up in progress.
type run struct {
	opts   Options
	top    *Topology
	env    *selftest.Env
	log    *slog.Logger
	out    *printer
	gate   *gate
	mgmt   *bitstreams.Manifest
	nodes  []*node
	byName map[string]*node
	racks  []*rackRun
	judge  map[string]bool
	start  time.Time
}

// Run brings the lab's boards (or Options.Boards) up stage by stage and
// returns the report; verdicts go to Options.Rec. The error is for what
// prevented the bring-up from starting (bad options, a lab the bring-up
// cannot read); everything a board does wrong is in the report.
func Run(ctx context.Context, opts Options) (*Report, error) {
	r, err := newRun(opts)
	if err != nil {
		return nil, err
	}
	defer r.close()
	r.out.header(r)
	r.stages(ctx)
	return r.report(), nil
}

// newRun checks the options and builds the run: the racks that take part,
// their boards, which boards are judged. Nothing is opened yet.
func newRun(opts Options) (*run, error) {
	if opts.Lab == nil || (opts.Rec == nil && opts.Env == nil) {
		return nil, errors.New("bring-up: a lab and a recorder are required")
	}
	if opts.Catalogue == nil {
		opts.Catalogue = bitstreams.Default()
	}
	if opts.Log == nil {
		opts.Log = discard()
	}
	for i := range opts.Deadlines {
		if opts.Deadlines[i] <= 0 {
			opts.Deadlines[i] = DefaultDeadlines(opts.Lab.Deadlines)[i]
		}
	}
	top, err := newTopology(opts.Lab, opts.Catalogue, opts.Within)
	if err != nil {
		return nil, drivers.Setup("", "bring-up topology", "fix the lab file", err)
	}
	mgmt, err := opts.Catalogue.Design("mgmt")
	if err != nil {
		return nil, drivers.Setup("", "bring-up", "the catalogue needs the builtin mgmt map (bitstreams/catalogue/mgmt.yaml)", err)
	}
	r := &run{opts: opts, top: top, log: opts.Log, out: newPrinter(opts.Out), gate: &gate{}, mgmt: mgmt,
		byName: map[string]*node{}, judge: map[string]bool{}, start: time.Now()}
	if opts.Env != nil {
		r.env = opts.Env.WithDesign(mgmt)
	} else {
		plan := &labconfig.Plan{Name: PlanName, Design: "mgmt"}
		r.env = selftest.NewEnv(opts.Lab, plan, opts.Rec, opts.Log)
		r.env.Design = mgmt
	}

	// Which racks take part, and which boards are judged.
	var racks []*Rack
	if len(opts.Boards) == 0 {
		racks = top.Racks
		for _, b := range top.Boards {
			r.judge[b.Name] = true
		}
	} else {
		seen := map[*Rack]bool{}
		for _, name := range opts.Boards {
			b, ok := top.Board(name)
			if !ok {
				var names []string
				for _, x := range top.Boards {
					names = append(names, x.Name)
				}
				return nil, drivers.Setup("", "bring-up", "", fmt.Errorf("no board %q in lab %s (boards: %s)", name, opts.Lab.Name, strings.Join(names, ", ")))
			}
			r.judge[name] = true
			if !seen[b.Rack] {
				seen[b.Rack] = true
				racks = append(racks, b.Rack)
			}
		}
		sort.Slice(racks, func(i, j int) bool { return racks[i].Boards[0].Index < racks[j].Boards[0].Index })
	}
	if opts.Design != "" {
		m, err := opts.Catalogue.Design(opts.Design)
		if err != nil {
			return nil, drivers.Setup("", "bring-up --design", "", err)
		}
		for _, name := range opts.Boards {
			b, _ := top.Board(name)
			b.Design, b.Plan = m, ""
		}
	}
	for _, rk := range racks {
		rr := &rackRun{Rack: rk, run: r, byAddr: map[uint16]*node{}, byName: map[string]*node{}, badCables: map[*Cable]string{}}
		for _, b := range rk.Boards {
			n := &node{Board: b}
			if ob, ok := opts.Opened[b.Name]; ok {
				// The caller's drivers: used, never closed here. An
				// in-band board is still reached in-band.
				n.open, n.borrowed = ob, true
				if n.DCN {
					n.raw = ob.Bus
					n.direct = &gatedBus{g: r.gate, b: ob.Bus}
				}
			}
			r.nodes = append(r.nodes, n)
			r.byName[b.Name] = n
			rr.nodes = append(rr.nodes, n)
			rr.byAddr[n.Addr] = n
			rr.byName[n.Name] = n
		}
		r.racks = append(r.racks, rr)
	}
	return r, nil
}

// judged says whether a board's verdicts are recorded (the boards of a
// --board run; every board otherwise).
func (r *run) judged(b *Board) bool { return r.judge[b.Name] }

func (r *run) close() {
	for _, rr := range r.racks {
		if rr.client != nil {
			rr.client.Close()
		}
	}
	for _, n := range r.nodes {
		if n.open != nil && !n.borrowed {
			n.open.Close()
		}
	}
}

// runs says whether stage s is part of this run (Options.Only).
func (r *run) runs(s Stage) bool {
	if len(r.opts.Only) == 0 {
		return true
	}
	for _, x := range r.opts.Only {
		if x == s {
			return true
		}
	}
	return false
}

// stages runs the stages in order. Boards reached directly take identity,
// scratch and links before the bootstrap; in-band boards after it, once the
// bootstrap has reached them. With --board, the other boards of the racks
// are only powered (quietly) and bootstrapped as far as the named boards
// need them.
func (r *run) stages(ctx context.Context) {
	judged := func(n *node) bool { return r.judged(n.Board) }
	direct := func(n *node) bool { return n.DCN && r.judged(n.Board) }
	inBand := func(n *node) bool { return !n.DCN && r.judged(n.Board) }
	r.stage(ctx, StagePower, nil, r.power)
	r.stage(ctx, StageProgram, judged, r.program)
	for _, s := range []Stage{StageIdentity, StageScratch, StageLinks} {
		r.stage(ctx, s, direct, r.boardStage(s))
	}
	r.rackStage(ctx, StageBootstrap, (*rackRun).bootstrap)
	for _, s := range []Stage{StageIdentity, StageScratch, StageLinks} {
		r.stage(ctx, s, inBand, r.boardStage(s))
	}
	r.reconcileAll(ctx, "after identity, scratch and links")
	r.rackStage(ctx, StageTimeSync, (*rackRun).timesync)
	r.rackStage(ctx, StageLoopback, (*rackRun).loopback)
	r.reconcileAll(ctx, "at the end")
}

// stage runs a per-board stage on every board (of filter) in parallel,
// under the stage's deadline.
func (r *run) stage(ctx context.Context, s Stage, filter func(*node) bool, f func(context.Context, *node, bool) *StageResult) {
	if !r.runs(s) {
		return
	}
	sctx, cancel := context.WithTimeout(ctx, r.opts.Deadlines[s])
	defer cancel()
	var wg sync.WaitGroup
	for _, n := range r.nodes {
		if filter != nil && !filter(n) {
			continue
		}
		quiet := s < r.opts.From || !r.judged(n.Board)
		if s < r.opts.From && (s == StageIdentity || s == StageScratch || s == StageLinks) {
			// Checks, not prerequisites: nothing later needs them.
			r.conclude(n, &StageResult{Stage: s, Status: Skipped, Summary: "before --from"}, true, false)
			continue
		}
		if prev := n.failedBefore(s); prev != nil {
			r.conclude(n, &StageResult{Stage: s, Status: Blocked, Summary: "not run: " + prev.Stage.String() + " failed"}, quiet, true)
			continue
		}
		wg.Add(1)
		go func(n *node) {
			defer wg.Done()
			t0 := time.Now()
			res := r.guard(sctx, s, n, quiet, f)
			res.Duration = time.Since(t0)
			if sctx.Err() != nil && res.Status == Failed && res.Class == "" {
				res.Class = drivers.ClassInfra.String()
				res.Seen += fmt.Sprintf(" (the %s stage's deadline of %s ran out)", s, r.opts.Deadlines[s])
			}
			r.conclude(n, res, quiet, true)
		}(n)
	}
	wg.Wait()
}

// rackStage runs a rack-wide stage (bootstrap, timesync, loopback) on every
// rack in parallel; the rack sets its boards' results.
func (r *run) rackStage(ctx context.Context, s Stage, f func(*rackRun, context.Context, bool)) {
	if !r.runs(s) {
		return
	}
	sctx, cancel := context.WithTimeout(ctx, r.opts.Deadlines[s])
	defer cancel()
	quiet := s < r.opts.From
	var wg sync.WaitGroup
	for _, rr := range r.racks {
		wg.Add(1)
		go func(rr *rackRun) {
			defer wg.Done()
			defer func() {
				if p := recover(); p != nil {
					r.log.Error("bring-up stage panicked", "stage", s, "rack", rr.Name, "panic", p)
					for _, n := range rr.nodes {
						if n.result(s) == nil {
							r.done(n, &StageResult{Stage: s, Status: Failed, Class: drivers.ClassDesign.String(),
								Seen: fmt.Sprintf("the runner's %s stage panicked: %v", s, p), Check: "report this to the runner's authors"})
						}
					}
				}
			}()
			t0 := time.Now()
			f(rr, sctx, quiet)
			for _, n := range rr.nodes {
				if res := n.result(s); res != nil && res.Duration == 0 && res.Status != Skipped {
					n.mu.Lock()
					res.Duration = time.Since(t0) // the rack's stage: every board waits for it
					n.mu.Unlock()
				}
			}
		}(rr)
	}
	wg.Wait()
}

// guard runs a board stage, turning a panic into a failure.
func (r *run) guard(ctx context.Context, s Stage, n *node, quiet bool, f func(context.Context, *node, bool) *StageResult) (res *StageResult) {
	defer func() {
		if p := recover(); p != nil {
			res = &StageResult{Stage: s, Status: Failed, Class: drivers.ClassDesign.String(),
				Seen: fmt.Sprintf("the runner's %s stage panicked: %v", s, p), Check: "report this to the runner's authors"}
		}
	}()
	res = f(ctx, n, quiet)
	res.Stage = s
	return res
}

// conclude sets a board's stage result, prints it (if print) and records
// its verdict. A quiet result (a stage before --from, or a board that only
// helps a --board run) is not judged: a pass becomes skipped, a failure
// still blocks the later stages.
func (r *run) conclude(n *node, res *StageResult, quiet, print bool) {
	quiet = quiet || !r.judged(n.Board)
	// A board that only helps a --board run shows its failures (they
	// explain the named boards'), not its passes.
	print = print && (r.judged(n.Board) || res.Status == Failed)
	label := ""
	if quiet {
		label = "(pre)"
		if !r.judged(n.Board) {
			label = "(help)"
		}
	}
	if quiet {
		if res.Status == Passed {
			why := "before --from"
			if !r.judged(n.Board) {
				why = "helping"
			}
			res.Status, res.Summary = Skipped, why+": "+res.Summary
		}
		n.setResult(res)
		if print {
			r.out.stage(res, n.Name, label)
		}
		return
	}
	n.setResult(res)
	if print {
		r.out.stage(res, n.Name, "")
	}
	if !r.judged(n.Board) {
		return
	}
	name := "bringup." + res.Stage.String()
	m := results.Measurement{Board: n.Name, Metric: name, Design: r.designOf(n), Text: res.Summary}
	switch res.Status {
	case Passed:
		r.env.Check(name, m, true, "stage passes: "+res.Stage.Doc(), "bring-up stages (docs/architecture.md)", "")
	case Failed:
		msg := res.Diagnosis()
		if res.Class == drivers.ClassInfra.String() || res.Class == drivers.ClassSetup.String() {
			cls := drivers.ClassInfra
			if res.Class == drivers.ClassSetup.String() {
				cls = drivers.ClassSetup
			}
			r.env.Error(name, n.Name, nil, &drivers.Error{Class: cls, Board: n.Name, Op: res.Stage.String(), Err: errors.New(msg)})
			return
		}
		r.env.Check(name, m, false, res.Expected, "bring-up stages (docs/architecture.md)", msg)
	case Blocked:
		// An earlier stage failed (its verdict says why): the stage keeps
		// its case, skipped with the reason.
		r.env.Skip(name, n.Name, nil, "not run: "+res.Summary)
	}
}

// done concludes a judged stage result and prints it.
func (r *run) done(n *node, res *StageResult) { r.conclude(n, res, false, true) }

// record concludes a stage result printed already (live).
func (r *run) record(n *node, res *StageResult) { r.conclude(n, res, false, false) }

// quiet concludes a stage result that is not judged, and prints it.
func (r *run) quiet(n *node, res *StageResult) { r.conclude(n, res, true, true) }

func (r *run) designOf(n *node) string {
	if n.Design != nil {
		return n.Design.Name
	}
	return "mgmt"
}

// record scores a measurement against a golden expectation (found by key
// in the rack's predictions) for a judged board; a measurement without
// one is a failed check naming the metric.
func (rr *rackRun) record(test string, board *Board, m results.Measurement, missing string) {
	var judged bool
	if m.Params, judged = rr.judgedParams(board, m.Params); !judged {
		return
	}
	key := results.Key(m.Metric, m.Params)
	exp, ok := rr.expect[key]
	rr.stamp(&m, board)
	if !ok {
		if missing == "" {
			missing = fmt.Sprintf("the golden model has no expectation %s for this rack", key)
		}
		rr.run.env.Check(test, m, false, "a golden expectation for "+key, "golden/bringup", missing)
		return
	}
	rr.run.env.Record(test, m, exp)
}

// recordChoice records a choice the run made (the proxy that bootstrapped
// a board, its TimeSync parent) under a case named by the board alone: the
// golden model lists every acceptable choice as its own key (param=choice),
// and the choice made is looked up there, then reported in the
// measurement's text, never in the case's name (a fault that makes the
// runner choose another neighbour must not rename the case).
func (rr *rackRun) recordChoice(test string, board *Board, m results.Measurement, param, choice, missing string) {
	var judged bool
	if m.Params, judged = rr.judgedParams(board, m.Params); !judged {
		return
	}
	keyed := m.Params.Clone()
	keyed[param] = choice
	key := results.Key(m.Metric, keyed)
	exp, ok := rr.expect[key]
	var accept []string
	for _, e := range rr.expect {
		if e.Metric != m.Metric || e.Params[param] == "" || len(e.Params) != len(keyed) {
			continue
		}
		same := true
		for k, v := range m.Params {
			same = same && e.Params[k] == v
		}
		if same {
			accept = append(accept, e.Params[param])
		}
	}
	sort.Strings(accept)
	rr.stamp(&m, board)
	if !ok {
		if missing == "" {
			missing = fmt.Sprintf("%s %s is not one the golden model accepts (%s)", param, choice, strings.Join(accept, ", "))
		}
		rr.run.env.Check(test, m, false, fmt.Sprintf("%s one of %s", param, strings.Join(accept, ", ")), "golden/bringup", missing)
		return
	}
	exp.Note = strings.TrimSpace(fmt.Sprintf("%s %s; acceptable: %s. %s", param, choice, strings.Join(accept, ", "), exp.Note))
	rr.run.env.Record(test, m, exp)
}

// skip records a case of the lab's that this run could not measure, with
// the reason (the failure that explains it is recorded too).
func (rr *rackRun) skip(test string, board *Board, p results.Params, why string) {
	p, judged := rr.judgedParams(board, p)
	if !judged {
		return
	}
	p["rack"] = rr.Name
	name := ""
	if board != nil {
		name = board.Name
	}
	rr.run.env.Skip(test, name, p, why)
}

// judgedParams says whether a case of board (nil: of the rack) is judged by
// this run and, when it is, gives its params cloned for the case to write.
func (rr *rackRun) judgedParams(board *Board, p results.Params) (results.Params, bool) {
	if board != nil && !rr.run.judged(board) || board == nil && !rr.judgedRack() {
		return nil, false
	}
	if p = p.Clone(); p == nil {
		p = results.Params{}
	}
	return p, true
}

// stamp names the measurement's rack, board and design (mgmt unless set).
func (rr *rackRun) stamp(m *results.Measurement, board *Board) {
	m.Params["rack"] = rr.Name
	if board != nil {
		m.Board = board.Name
	}
	if m.Design == "" {
		m.Design = "mgmt"
	}
}

// judgedRack says whether rack-wide figures are judged (a --board run
// judges its boards only).
func (rr *rackRun) judgedRack() bool {
	for _, b := range rr.Boards {
		if !rr.run.judged(b) {
			return false
		}
	}
	return true
}

// info records a measurement without a verdict (figures a person reads:
// bootstrap times, retransmission counts, the recommended Shoal slot).
func (r *run) info(m results.Measurement) {
	if m.Time.IsZero() {
		m.Time = time.Now()
	}
	test := m.Test
	if test == "" {
		test = m.Metric
	}
	r.env.Note(test, m)
}

// fail builds a failed result from an error, classed by drivers.ClassOf.
func fail(expected, check string, err error) *StageResult {
	return &StageResult{Status: Failed, Expected: expected, Seen: err.Error(), Check: check, Class: drivers.ClassOf(err).String()}
}

func ok(format string, a ...any) *StageResult {
	return &StageResult{Status: Passed, Summary: fmt.Sprintf(format, a...)}
}
