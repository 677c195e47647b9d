package shoal

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	gs "github.com/labrunner/labrunner/golden/shoal"
	"github.com/labrunner/labrunner/results"
	"github.com/labrunner/labrunner/selftest"
	ts "github.com/labrunner/labrunner/traffic/shoal"
)

// workloadRun is one run of a random workload, shared by queue_bound and
// workload.
type workloadRun struct {
	kind  ts.Kind
	load  float64
	rate  float64
	seed  int
	flows []ts.Flow
	o     outcome
	// golden is golden/shoal's simulation of flows when the slot budget
	// was drawn from it (workloadSlots), else nil.
	golden *gs.SimResult
}

func (w workloadRun) params(kv ...string) results.Params {
	p := results.Params{"workload": w.kind.String(), "load": strconv.FormatFloat(w.load, 'g', -1, 64)}
	for i := 0; i+1 < len(kv); i += 2 {
		p[kv[i]] = kv[i+1]
	}
	return p
}

// runWorkloadTraffic draws the test's workload — §7.3 (uniform pairs) or
// §7.4 (the skewed disaggregated mix): Poisson arrivals, Pareto(1.05, mean
// 100 KB) sizes, seeded — and runs it on a fresh bootstrap.
func runWorkloadTraffic(ctx context.Context, env *selftest.Env, k *rack, c gs.Config) (workloadRun, error) {
	var w workloadRun
	par, err := selftest.ParamsOf[workloadParams](env)
	if err != nil {
		return w, err
	}
	if w.kind, err = ts.ParseKind(par.Workload); err != nil {
		return w, paramErr(env, err)
	}
	nflows, maxBytes := par.Flows, par.MaxBytes
	w.load, w.seed = par.Load, par.Seed
	// R of L = F/(R·N·τ): half the node link by default, as golden/shoal
	// reads §7.3 (Shoal's nodes get "2x bandwidth, to compensate for the
	// throughput overhead of detouring").
	w.rate = c.NodeLinkGbps() / 2
	if par.LoadGbps != nil {
		w.rate = *par.LoadGbps
	}
	wl := ts.NewWorkload(w.kind, k.fab.N(), nflows, w.load, w.rate, uint64(w.seed))
	wl.MaxBytes = float64(maxBytes)
	if w.flows, err = ts.Generate(wl); err != nil {
		return w, paramErr(env, err)
	}
	var maxSlots int64
	if par.MaxSlots != nil {
		maxSlots = int64(*par.MaxSlots)
	} else if maxSlots, w.golden, err = workloadSlots(c, w.flows); err != nil {
		return w, err
	}
	w.o, err = k.runFlows(ctx, w.flows, maxSlots)
	return w, err
}

// workloadSlots is the default slot budget of a random workload's run
// (max_slots unset), with the simulation it came from: ten times the slots golden/shoal's simulation of the same
// flows takes to complete them (at least minWorkloadSlots). The factor is
// wide because the two disagree on completion (the workload test is out of
// the nightly for it): the default lab's uniform and skewed workloads take
// the emulated rack 123k and 288k slots, golden 84k and 93k (1.5x and
// 3.1x). A rack that never completes them (cells lost to a short guard
// band, a fabric that stopped) is cut there, about a million slots, not
// after a fixed 3M, which took the emulator 11 s a run.
func workloadSlots(c gs.Config, flows []ts.Flow) (int64, *gs.SimResult, error) {
	sr, err := gs.Simulate(c, goldenFlows(c, flows), gs.SimOptions{})
	if err != nil {
		return 0, nil, fmt.Errorf("golden/shoal simulation of the workload (for its slot budget; max_slots sets one): %w", err)
	}
	return max(10*sr.Slots, minWorkloadSlots), sr, nil
}

// minWorkloadSlots is the least budget of a workload run: a few epochs'
// start-up of the smallest rack is not cut short.
const minWorkloadSlots = 10_000

// runQueueBound runs a random workload and checks the invariant Shoal's
// congestion control exists for: every per-destination queue stays within
// Eq. 5 (1 + incast degree of the destination, at most N) and every ready
// queue within Eq. 4 (the outcast degree, at most N-1), on every NIC, over
// the whole run (MAX_QUEUE, MAX_READY since the clear). Every flow must
// complete.
func runQueueBound(ctx context.Context, env *selftest.Env) error {
	k, err := rackOf(env)
	if err != nil {
		return err
	}
	c, err := k.golden(k.base.SlotCycles)
	if err != nil {
		return err
	}
	w, err := runWorkloadTraffic(ctx, env, k, c)
	if err != nil {
		return err
	}
	exps, err := k.predict(nil)
	if err != nil {
		return err
	}
	eq5, err := pick(exps, "shoal.queue_bound", results.Params{"eq": "5"})
	if err != nil {
		return err
	}
	eq4, err := pick(exps, "shoal.queue_bound", results.Params{"eq": "4"})
	if err != nil {
		return err
	}
	// The bound first: it holds whatever became of the flows.
	n := k.fab.N()
	for _, nic := range w.o.nics {
		cg := k.fab.Nodes[nic.Node]
		node := strconv.Itoa(nic.Node)
		q, err := k.r.MaxQueues(ctx, nic.Node)
		if err != nil {
			env.Error("queue_bound.queue", cg.Board, w.params("node", node), err)
			continue
		}
		var worst []string
		for d, v := range q {
			if v > n {
				worst = append(worst, fmt.Sprintf("Q[%d] %d", d, v))
			}
		}
		text := fmt.Sprintf("largest queue %d cells", nic.MaxQueueAny)
		if len(worst) > 0 {
			text = fmt.Sprintf("queues past Eq. 5's %d cells: %s: the NIC does not hold cells back on rate-limit feedback (Eq. 2)", n, strings.Join(worst, ", "))
		}
		m := meas(cg.Board, w.params("eq", "5", "node", node), "shoal.queue_bound", float64(nic.MaxQueueAny), text)
		m.Unit = "cells"
		env.Record("queue_bound.queue", m, eq5)
		m = meas(cg.Board, w.params("eq", "4", "node", node), "shoal.queue_bound", float64(nic.MaxReadyAny), "")
		m.Unit = "flows"
		env.Record("queue_bound.ready", m, eq4)
	}
	k.checkComplete(env, "queue_bound.complete", w.params("flows", strconv.Itoa(len(w.flows)), "seed", strconv.Itoa(w.seed)), w.flows, w.o, "")
	return nil
}

// runWorkload runs a random workload and scores what golden/shoal's
// reference simulation of the same flows predicts for the run (§7.3, Fig.
// 15/16; §7.4, Fig. 18): the median and tail completion times of the short
// flows (≤ 100 KB), the mean goodput of the long ones (≥ 1 MB), and the
// largest aggregate queue of a node, with the bands golden/shoal documents
// for those metrics.
func runWorkload(ctx context.Context, env *selftest.Env) error {
	k, err := rackOf(env)
	if err != nil {
		return err
	}
	c, err := k.golden(k.base.SlotCycles)
	if err != nil {
		return err
	}
	w, err := runWorkloadTraffic(ctx, env, k, c)
	if err != nil {
		return err
	}
	if !k.checkComplete(env, "workload.complete", w.params("flows", strconv.Itoa(len(w.flows)), "seed", strconv.Itoa(w.seed)), w.flows, w.o, "") {
		return nil
	}
	gf := goldenFlows(c, w.flows)
	sr := w.golden // the budget's simulation of the same flows, when it had one
	if sr == nil {
		if sr, err = gs.Simulate(c, gf, gs.SimOptions{}); err != nil {
			return fmt.Errorf("golden/shoal simulation of the workload: %w", err)
		}
	}
	sum := gs.Summarise(c, gf, sr)
	src := "Shoal §7.3, Fig. 15/16: Poisson arrivals, Pareto(1.05, mean 100 KB) sizes, uniform pairs"
	if w.kind == ts.Skewed {
		src = "Shoal §7.4, Fig. 18: skewed mix, 84% of flows among a third of the nodes"
	}
	note := fmt.Sprintf("golden/shoal slot simulation of the same %d flows (seed %d, R = %g Gb/s); %d of its %d short flows completed",
		len(w.flows), w.seed, w.rate, sum.ShortDone, sum.Short)
	var short []float64
	var goodput float64
	long := 0
	for _, f := range w.flows {
		rec := w.o.records[f.Tag]
		if f.Bytes <= gs.ShortFlowBytes {
			short = append(short, float64(rec.FCTNS()))
		}
		if f.Bytes >= gs.LongFlowBytes && rec.FCTNS() > 0 {
			goodput += float64(f.Bytes) * 8 / float64(rec.FCTNS())
			long++
		}
	}
	sort.Float64s(short)
	if len(short) > 0 && sum.ShortDone > 0 {
		for _, q := range []struct {
			name    string
			pct, at float64
		}{{"50", 50, sum.ShortP50}, {"99", 99, sum.ShortP99}} {
			e := results.Expectation{Metric: "shoal.sim.fct_us", Value: q.at / 1000, Unit: "µs", RelTol: 0.25, Source: src,
				Note:   note + "; ±25% (golden/shoal's band for shoal.sim.fct_us)",
				Budget: "golden/shoal's documented band for shoal.sim.fct_us (±25%)",
				Wide:   "golden/shoal documents ±25% for a percentile of a random workload's completion times; the workload test is out of the nightly until emulator and golden agree on it"}
			m := meas(k.r.Master, w.params("percentile", q.name, "size", "short"), "shoal.sim.fct_us", gs.Percentile(short, q.pct)/1000,
				fmt.Sprintf("%d short flows", len(short)))
			m.Unit = "µs"
			env.Record("workload.fct", m, e)
		}
	}
	if long > 0 && sum.Long > 0 {
		m := meas(k.r.Master, w.params("size", "long"), "shoal.sim.goodput_gbps", goodput/float64(long), fmt.Sprintf("%d long flows", long))
		m.Unit = "Gb/s"
		env.Record("workload.goodput", m, results.Expectation{Metric: "shoal.sim.goodput_gbps", Value: sum.LongGoodputGbps, Unit: "Gb/s", RelTol: 0.2,
			Source: src, Note: note + "; ±20% (golden/shoal's band for shoal.sim.goodput_gbps)",
			Budget: "golden/shoal's documented band for shoal.sim.goodput_gbps (±20%)",
			Wide:   "golden/shoal documents ±20% for the long flows' mean goodput of a random workload; the workload test is out of the nightly until emulator and golden agree on it"})
	}
	maxNode := 0
	for _, nic := range w.o.nics {
		maxNode = max(maxNode, int(nic.MaxQueueTotal))
	}
	m := meas(k.r.Master, w.params(), "shoal.sim.max_node_queue", float64(maxNode), "")
	m.Unit = "cells"
	env.Record("workload.node_queue", m, results.Expectation{Metric: "shoal.sim.max_node_queue", Value: float64(sum.MaxNodeQueue),
		Unit: "cells", RelTol: 0.3, Source: "Shoal §7.3, Fig. 16: maximum aggregate queue per node",
		Note:   note + "; ±30% (golden/shoal's band for shoal.sim.max_node_queue)",
		Budget: "golden/shoal's documented band for shoal.sim.max_node_queue (±30%)",
		Wide:   "golden/shoal documents ±30% for a node's largest aggregate queue under a random workload; the workload test is out of the nightly until emulator and golden agree on it"})
	return nil
}
