package selftest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"labrunner/bitstreams"
	"labrunner/boards"
	"labrunner/drivers"
	"labrunner/labconfig"
	"labrunner/results"
)

// Exit codes (DESIGN.md, conventions).
const (
	ExitPass   = 0
	ExitFail   = 1 // a verdict failed
	ExitConfig = 2 // bad usage or config
	ExitInfra  = 3 // a board did not answer, a tool is missing
)

// Nightly runs a lab's plans: it opens the boards, runs the plans whose
// boards do not overlap in parallel (plans that share a board wait for each
// other), and records everything in the run directory.
type Nightly struct {
	Lab       *labconfig.Lab
	Catalogue *bitstreams.Catalogue
	Emulator  boards.Emulator // nil when no board is emulated
	Dir       *results.Dir
	Log       *slog.Logger
	// Plans restricts the run to these plan names (all when empty).
	Plans []string
	// Progress, if set, is told about plan steps.
	Progress func(plan, step string)
}

// Outcome is how a nightly ended.
type Outcome struct {
	ExitCode int
	Status   string
	Summary  results.Summary
	Plans    []PlanResult
}

// Run executes the nightly.
func (n *Nightly) Run(ctx context.Context) Outcome {
	log := n.Log
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	plans, err := n.selectPlans()
	if err != nil {
		return Outcome{ExitCode: ExitConfig, Status: "setup-error"}
	}

	// Open every board the selected plans use, in parallel: opening a
	// bridge or console may wait for a slow device.
	need := map[string]bool{}
	for _, p := range plans {
		for _, pb := range p.Boards {
			need[pb.Board] = true
		}
	}
	opened := map[string]*boards.Board{}
	openErr := map[string]error{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range n.Lab.Boards {
		cfg := n.Lab.Boards[i]
		if !need[cfg.Name] {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			var tr io.Writer
			if f, err := n.Dir.ConsoleTranscript(cfg.Name); err == nil {
				tr = &lockedWriter{w: f}
				defer func() {
					mu.Lock()
					defer mu.Unlock()
					if opened[cfg.Name] == nil {
						f.Close()
					}
				}()
			}
			octx, cancel := drivers.Deadline(ctx, n.Lab.Deadlines.Console)
			defer cancel()
			b, err := boards.Open(octx, cfg, boards.Options{
				Emulator: n.Emulator, Transcript: tr, Log: log.With("board", cfg.Name),
				RegisterTimeout: 0,
			})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				openErr[cfg.Name] = err
				return
			}
			opened[cfg.Name] = b
		}()
	}
	wg.Wait()
	defer func() {
		for _, b := range opened {
			b.Close()
		}
	}()

	runner := &Runner{
		Lab: n.Lab, Catalogue: n.Catalogue, Boards: opened, Rec: n.Dir, Log: log, Progress: n.Progress,
		OnBitstream: func(bi results.BitstreamInfo) {
			n.Dir.UpdateRun(func(r *results.Run) { r.Bitstreams = append(r.Bitstreams, bi) })
		},
	}

	// Group plans that share boards; groups run in parallel, plans inside a
	// group one after the other in lab-file order.
	groups := groupPlans(plans)
	out := Outcome{}
	var omu sync.Mutex
	for _, g := range groups {
		wg.Add(1)
		go func(g []*labconfig.Plan) {
			defer wg.Done()
			for _, p := range g {
				if err := boardsOpenFor(p, openErr); err != nil {
					env := &Env{Lab: n.Lab, Plan: p, Log: log, rec: n.Dir}
					for _, pb := range p.Boards {
						for _, t := range p.Tests {
							env.Error(t.Name, pb.Board, nil, err)
						}
					}
					omu.Lock()
					out.Plans = append(out.Plans, PlanResult{Plan: p.Name, Setup: err})
					omu.Unlock()
					continue
				}
				res := runner.RunPlan(ctx, p)
				omu.Lock()
				out.Plans = append(out.Plans, res)
				omu.Unlock()
			}
		}(g)
	}
	wg.Wait()
	sort.Slice(out.Plans, func(i, j int) bool { return out.Plans[i].Plan < out.Plans[j].Plan })
	vs := n.Dir.Verdicts()
	out.Summary = results.Summarize(vs)
	out.ExitCode, out.Status = ExitCodeOf(vs)
	return out
}

// ExitCodeOf decides a run's exit code from its verdicts: bad setup first
// (nothing meaningful ran), then infrastructure (the run cannot be trusted),
// then design failures.
func ExitCodeOf(vs []results.Verdict) (int, string) {
	var setup, infra, fail bool
	for _, v := range vs {
		switch {
		case v.Status == results.Error && v.Class == drivers.ClassSetup.String():
			setup = true
		case v.Status == results.Error:
			infra = true
		case v.Status == results.Fail:
			fail = true
		}
	}
	switch {
	case setup:
		return ExitConfig, "setup-error"
	case infra:
		return ExitInfra, "infrastructure-error"
	case fail:
		return ExitFail, "failed"
	}
	return ExitPass, "passed"
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

func (n *Nightly) selectPlans() ([]*labconfig.Plan, error) {
	var out []*labconfig.Plan
	want := map[string]bool{}
	for _, p := range n.Plans {
		want[p] = true
	}
	for i := range n.Lab.Plans {
		p := &n.Lab.Plans[i]
		if len(want) == 0 || want[p.Name] {
			out = append(out, p)
			delete(want, p.Name)
		}
	}
	if len(want) > 0 {
		var names []string
		for p := range want {
			names = append(names, p)
		}
		return nil, fmt.Errorf("no plan named %s in the lab", strings.Join(names, ", "))
	}
	return out, nil
}

// groupPlans puts plans that share a board (directly or through another
// plan) into one group, keeping lab-file order inside each group.
func groupPlans(plans []*labconfig.Plan) [][]*labconfig.Plan {
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

// WriteSummary prints the summary table a person reads at the end of a run:
// one row per plan and board, then every test case that did not pass.
func WriteSummary(w io.Writer, run results.Run, vs []results.Verdict, elapsed time.Duration) {
	type key struct{ plan, board string }
	counts := map[key]*results.Summary{}
	var keys []key
	for _, v := range vs {
		k := key{v.Plan, v.Board}
		s, ok := counts[k]
		if !ok {
			s = &results.Summary{}
			counts[k] = s
			keys = append(keys, k)
		}
		s.Total++
		switch v.Status {
		case results.Pass:
			s.Pass++
		case results.Fail:
			s.Fail++
		case results.Error:
			s.Error++
		case results.Skip:
			s.Skip++
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].plan != keys[j].plan {
			return keys[i].plan < keys[j].plan
		}
		return keys[i].board < keys[j].board
	})
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "PLAN\tBOARD\tTESTS\tPASS\tFAIL\tERROR\tSKIP\n")
	for _, k := range keys {
		s := counts[k]
		board := k.board
		if board == "" {
			board = "(plan)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\n", k.plan, board, s.Total, s.Pass, s.Fail, s.Error, s.Skip)
	}
	tw.Flush()
	bad := 0
	for _, v := range results.SortVerdicts(vs) {
		if v.Status == results.Pass || v.Status == results.Skip {
			continue
		}
		if bad == 0 {
			fmt.Fprintln(w, "\nNot passed:")
		}
		bad++
		if bad > 40 {
			continue
		}
		board := v.Board
		if board == "" {
			board = "-"
		}
		fmt.Fprintf(w, "  %-5s %s %s %s: %s\n", strings.ToUpper(string(v.Status)), v.Plan, board, v.Name(), oneLine(v.Message, 300))
	}
	if bad > 40 {
		fmt.Fprintf(w, "  ... and %d more (see verdicts.json)\n", bad-40)
	}
	s := results.Summarize(vs)
	fmt.Fprintf(w, "\n%d test cases: %d passed, %d failed, %d errors, %d skipped in %s\n", s.Total, s.Pass, s.Fail, s.Error, s.Skip, elapsed.Round(time.Millisecond))
}

func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > max {
		s = s[:max] + "..."
	}
	return s
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
