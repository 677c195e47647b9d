package labrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/boards"
	"github.com/labrunner/labrunner/boards/lease"
	"github.com/labrunner/labrunner/drivers"
	"github.com/labrunner/labrunner/internal/syncbuf"
	"github.com/labrunner/labrunner/labconfig"
	"github.com/labrunner/labrunner/results"
	"github.com/labrunner/labrunner/selftest"
)

// Groups runs a lab's plans: it groups plans that share boards (linked
// racks run together), keeps this shard's groups, reserves each group's
// boards with leases, opens them and runs the groups in parallel up to a
// limit, recording everything in the run directory.
type Groups struct {
	Lab       *labconfig.Lab
	Catalogue *bitstreams.Catalogue
	Emulator  boards.Emulator // nil when no board is emulated
	Dir       *results.Dir
	Log       *slog.Logger
	// Plans restricts the run to these plan names (all when empty).
	Plans []string
	// Shard (Index of Count, 1-based) runs only this host's share of the
	// board groups; zero Count runs them all.
	Shard Shard
	// Parallel bounds the board groups run at once (0: no bound).
	Parallel int
	// Locks holds the boards' leases; nil takes none.
	Locks *lease.Dir
	// Held says what to do with a group whose boards someone else holds:
	// HeldSkip reports it skipped at once, HeldWait waits until HeldWait
	// runs out, then skips.
	Held     HeldPolicy
	HeldWait time.Duration
	Command  string // recorded in the leases taken
	// Progress, if set, is told about plan steps; PlanDone, when a plan
	// has finished (its last step is over).
	Progress func(plan, step string)
	PlanDone func(plan string)
	// Mgmt, if set, is each plan's management check (selftest.Runner.Mgmt).
	Mgmt func(ctx context.Context, env *selftest.Env) error
}

// HeldPolicy is what a nightly does about boards held by someone else.
type HeldPolicy string

const (
	HeldSkip HeldPolicy = "skip"
	HeldWait HeldPolicy = "wait"
)

// Outcome is how the groups' run ended.
type Outcome struct {
	ExitCode int
	Status   string
	Summary  results.Summary
	Plans    []selftest.PlanResult
	Groups   []GroupResult
}

// GroupResult is one board group's run.
type GroupResult struct {
	Plans    []string
	Boards   []string
	Duration time.Duration
	Skipped  string // why the group did not run, if it did not
}

// Run runs the groups.
func (n *Groups) Run(ctx context.Context) Outcome {
	log := n.Log
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	plans, err := n.selectPlans()
	if err != nil {
		log.Error("plan selection", "err", err)
		return Outcome{ExitCode: ExitConfig, Status: "setup-error"}
	}
	groups := GroupPlans(plans)
	if n.Shard.Count > 0 {
		groups = n.Shard.Select(groups)
	}

	runner := &selftest.Runner{
		Lab: n.Lab, Catalogue: n.Catalogue, Rec: n.Dir, Log: log, Progress: n.Progress, PlanDone: n.PlanDone,
		Boards: map[string]*boards.Board{}, OpenErrors: map[string]error{}, Mgmt: n.Mgmt, MgmtLock: &sync.Mutex{},
		OnBitstream: func(bi results.BitstreamInfo) {
			n.Dir.UpdateRun(func(r *results.Run) { r.Bitstreams = append(r.Bitstreams, bi) })
			if n.leased(bi.Board) {
				n.Locks.UpdateState(bi.Board, func(s *lease.State) {
					s.Design, s.Version, s.Programmed = bi.Design, bi.Version, time.Now()
				})
			}
		},
		OnHealth: func(board, design, version, unhealthy string) {
			if !n.leased(board) {
				return
			}
			n.Locks.UpdateState(board, func(s *lease.State) {
				s.HealthChecked = time.Now()
				if unhealthy == "" {
					s.Health, s.HealthReason = "good", ""
				} else {
					s.Health, s.HealthReason = "unhealthy", unhealthy
				}
			})
		},
	}
	var bmu sync.Mutex // guards runner.Boards, filled group by group

	out := Outcome{}
	var omu sync.Mutex
	var wg sync.WaitGroup
	limit := n.Parallel
	if limit <= 0 {
		limit = len(groups)
	}
	sem := make(chan struct{}, max(limit, 1))
	for _, g := range groups {
		wg.Add(1)
		go func(g []*labconfig.Plan) {
			defer wg.Done()
			// A panic anywhere in the group (a driver, a design's setup)
			// ends this group only, as an infrastructure error on each of
			// its tests still without a verdict; the other groups go on and
			// the run directory is finished as usual.
			defer func() {
				if p := recover(); p != nil {
					n.groupPanicked(g, p, log)
				}
			}()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			defer func() { <-sem }()
			t0 := time.Now()
			gr := GroupResult{Boards: groupBoards(g)}
			for _, p := range g {
				gr.Plans = append(gr.Plans, p.Name)
			}
			defer func() {
				gr.Duration = time.Since(t0)
				omu.Lock()
				out.Groups = append(out.Groups, gr)
				omu.Unlock()
			}()

			leases, err := n.reserve(ctx, gr.Boards, log)
			if err != nil {
				gr.Skipped = err.Error()
				n.skipGroup(g, err)
				return
			}
			defer func() {
				for _, l := range leases {
					if err := l.Release(); err != nil {
						log.Warn("lease release", "board", l.Info().Board, "err", err)
					}
				}
			}()

			opened, openErr := n.openBoards(ctx, gr.Boards, log)
			defer func() {
				for _, b := range opened {
					b.Close()
				}
			}()
			bmu.Lock()
			for name, b := range opened {
				runner.Boards[name] = b
			}
			for name, err := range openErr {
				runner.OpenErrors[name] = err
			}
			bmu.Unlock()
			for name, err := range openErr {
				// `labrunner boards` shows why the board sat this run out.
				if n.leased(name) {
					n.Locks.UpdateState(name, func(s *lease.State) {
						s.Health, s.HealthReason, s.HealthChecked = "unhealthy", "did not open: "+err.Error(), time.Now()
					})
				}
			}
			for _, p := range g {
				if err := boardsOpenFor(p, openErr); err != nil && len(openErr) == len(p.Boards) {
					selftest.NotOpened(n.Dir, n.Lab, p, log, openErr)
					omu.Lock()
					out.Plans = append(out.Plans, selftest.PlanResult{Plan: p.Name, Setup: err})
					omu.Unlock()
					continue
				}
				res := runPlanLocked(ctx, runner, p, &bmu)
				omu.Lock()
				out.Plans = append(out.Plans, res)
				omu.Unlock()
			}
		}(g)
	}
	wg.Wait()
	sort.Slice(out.Plans, func(i, j int) bool { return out.Plans[i].Plan < out.Plans[j].Plan })
	sort.Slice(out.Groups, func(i, j int) bool { return out.Groups[i].Plans[0] < out.Groups[j].Plans[0] })
	vs := n.Dir.Verdicts()
	out.Summary = results.Summarize(vs)
	out.ExitCode, out.Status = ExitCodeOf(vs)
	return out
}

// runPlanLocked runs a plan with a snapshot of the open boards (other
// groups add theirs concurrently).
func runPlanLocked(ctx context.Context, r *selftest.Runner, p *labconfig.Plan, mu *sync.Mutex) selftest.PlanResult {
	mu.Lock()
	snap := *r
	snap.Boards = make(map[string]*boards.Board, len(r.Boards))
	for k, v := range r.Boards {
		snap.Boards[k] = v
	}
	snap.OpenErrors = make(map[string]error, len(r.OpenErrors))
	for k, v := range r.OpenErrors {
		snap.OpenErrors[k] = v
	}
	mu.Unlock()
	res := snap.RunPlan(ctx, p)
	if r.PlanDone != nil {
		r.PlanDone(p.Name)
	}
	return res
}

// leased reports whether a board is managed in the lock directory:
// emulated boards live in this process only, so they are leased (and their
// state recorded) only when the lab file names a lock directory itself, so
// that the machinery can be exercised on the emulated rack.
func (n *Groups) leased(board string) bool {
	if n.Locks == nil {
		return false
	}
	b, ok := n.Lab.Board(board)
	return ok && (b.Emulated == nil || n.Lab.Locks != nil)
}

// reserve takes the leases of a group's boards, all or none.
func (n *Groups) reserve(ctx context.Context, names []string, log *slog.Logger) ([]*lease.Lease, error) {
	if n.Locks == nil {
		return nil, nil
	}
	var want []string
	for _, name := range names {
		if n.leased(name) {
			want = append(want, name)
		}
	}
	ttl := lease.DefaultLease
	if n.Lab.Locks != nil && n.Lab.Locks.Lease > 0 {
		ttl = n.Lab.Locks.Lease
	}
	deadline := time.Now().Add(n.HeldWait)
	for {
		var got []*lease.Lease
		var held error
		for _, name := range want {
			l, err := n.Locks.Acquire(name, lease.Options{Command: n.Command, TTL: ttl})
			if err != nil {
				held = err
				break
			}
			got = append(got, l)
		}
		if held == nil {
			for _, l := range got {
				l.KeepAlive()
			}
			return got, nil
		}
		for _, l := range got {
			l.Release()
		}
		if n.Held != HeldWait || time.Now().After(deadline) {
			return nil, held
		}
		log.Info("waiting for a held board", "err", held, "until", deadline.Format("15:04:05"))
		select {
		case <-ctx.Done():
			return nil, held
		case <-time.After(min(5*time.Second, time.Until(deadline)+10*time.Millisecond)):
		}
	}
}

// groupPanicked records, for every test of the group's plans that has no
// verdict in this attempt, an infrastructure error saying the group
// stopped; the stack goes to the log. The tests are not marked done, so a
// --resume runs them again.
func (n *Groups) groupPanicked(g []*labconfig.Plan, p any, log *slog.Logger) {
	log.Error("a board group panicked; its remaining tests are infrastructure errors", "plans", planNamesOf(g), "panic", p, "stack", string(debug.Stack()))
	have := map[string]bool{}
	for _, v := range n.Dir.Verdicts() {
		have[v.Step+"\x00"+v.Board] = true
	}
	err := drivers.Infra("", "board group "+strings.Join(planNamesOf(g), "+"), "a driver or a design's setup failed unexpectedly: see labrunner.log for the stack; the other groups went on",
		fmt.Errorf("panic: %v", p))
	for _, pl := range g {
		for i, t := range pl.Tests {
			step := selftest.TestStep(pl, i)
			if n.Dir.Done(step) {
				continue
			}
			for _, pb := range pl.Boards {
				if have[step+"\x00"+pb.Board] {
					continue
				}
				v := results.Errored(results.Measurement{Time: time.Now(), Plan: pl.Name, Test: t.Name, Board: pb.Board, Design: pl.Design, Metric: t.Name, Step: step},
					drivers.ClassInfra.String(), err)
				n.Dir.AddVerdict(v)
			}
		}
	}
}

func planNamesOf(g []*labconfig.Plan) []string {
	out := make([]string, len(g))
	for i, p := range g {
		out[i] = p.Name
	}
	return out
}

// skipGroup records a skip verdict for every test of a group whose boards
// could not be reserved.
func (n *Groups) skipGroup(g []*labconfig.Plan, why error) {
	for _, p := range g {
		for i, t := range p.Tests {
			for _, pb := range p.Boards {
				n.Dir.AddVerdict(results.Verdict{Time: time.Now(), Plan: p.Name, Test: t.Name, Board: pb.Board, Design: p.Design,
					Status: results.Skip, Message: "not run: " + why.Error(), Step: selftest.TestStep(p, i)})
			}
		}
	}
}

// openBoards opens a group's boards in parallel: opening a bridge or a
// console may wait for a slow device.
func (n *Groups) openBoards(ctx context.Context, names []string, log *slog.Logger) (map[string]*boards.Board, map[string]error) {
	opened := map[string]*boards.Board{}
	openErr := map[string]error{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, name := range names {
		cfg, ok := n.Lab.Board(name)
		if !ok {
			openErr[name] = fmt.Errorf("no board %s in the lab", name)
			continue
		}
		wg.Add(1)
		go func(cfg labconfig.Board) {
			defer wg.Done()
			defer func() {
				if p := recover(); p != nil {
					log.Error("opening a board panicked", "board", cfg.Name, "panic", p, "stack", string(debug.Stack()))
					mu.Lock()
					openErr[cfg.Name] = drivers.Infra(cfg.Name, "open", "a driver failed unexpectedly: see labrunner.log for the stack", fmt.Errorf("panic: %v", p))
					mu.Unlock()
				}
			}()
			var tr io.Writer
			var f io.WriteCloser
			if tf, err := n.Dir.ConsoleTranscript(cfg.Name); err == nil {
				f = tf
				tr = &syncbuf.Writer{W: tf}
			}
			octx, cancel := drivers.Deadline(ctx, n.Lab.Deadlines.Console)
			defer cancel()
			b, err := boards.Open(octx, cfg, boards.Options{Emulator: n.Emulator, Transcript: tr, Log: log.With("board", cfg.Name)})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if f != nil {
					f.Close()
				}
				openErr[cfg.Name] = err
				return
			}
			if f != nil {
				b.OnClose(func() { f.Close() })
			}
			opened[cfg.Name] = b
		}(*cfg)
	}
	wg.Wait()
	return opened, openErr
}

func groupBoards(g []*labconfig.Plan) []string {
	seen := map[string]bool{}
	var out []string
	for _, p := range g {
		for _, pb := range p.Boards {
			if !seen[pb.Board] {
				seen[pb.Board] = true
				out = append(out, pb.Board)
			}
		}
	}
	return out
}

func boardsOpenFor(p *labconfig.Plan, openErr map[string]error) error {
	var errs []error
	for _, pb := range p.Boards {
		if err, ok := openErr[pb.Board]; ok {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (n *Groups) selectPlans() ([]*labconfig.Plan, error) {
	var out []*labconfig.Plan
	want := map[string]bool{}
	for _, p := range n.Plans {
		want[p] = true
	}
	found := map[string]bool{}
	for i := range n.Lab.Plans {
		p := &n.Lab.Plans[i]
		if len(want) == 0 || want[p.Name] {
			out = append(out, p)
			found[p.Name] = true
		}
	}
	var names []string
	for p := range want {
		if !found[p] {
			names = append(names, p)
		}
	}
	if len(names) > 0 {
		sort.Strings(names)
		return nil, fmt.Errorf("no plan named %s in the lab", strings.Join(names, ", "))
	}
	return out, nil
}

// GroupPlans puts plans that share a board (directly or through another
// plan) into one group, keeping lab-file order inside each group: the units
// a run takes in parallel.
func GroupPlans(plans []*labconfig.Plan) [][]*labconfig.Plan {
	parent := make([]int, len(plans))
	for i := range parent {
		parent[i] = i
	}
	var find func(int) int
	find = func(i int) int {
		for parent[i] != i {
			parent[i] = parent[parent[i]]
			i = parent[i]
		}
		return i
	}
	owner := map[string]int{}
	for i, p := range plans {
		for _, pb := range p.Boards {
			if j, ok := owner[pb.Board]; ok {
				parent[find(i)] = find(j)
			} else {
				owner[pb.Board] = i
			}
		}
	}
	idx := map[int]int{}
	var groups [][]*labconfig.Plan
	for i, p := range plans {
		r := find(i)
		g, ok := idx[r]
		if !ok {
			g = len(groups)
			idx[r] = g
			groups = append(groups, nil)
		}
		groups[g] = append(groups[g], p)
	}
	return groups
}
