package shoal

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/labrunner/labrunner/drivers"
	"github.com/labrunner/labrunner/results"
	"github.com/labrunner/labrunner/selftest"
	ts "github.com/labrunner/labrunner/traffic/shoal"
)

// outcome is a traffic run and what the rack counted.
type outcome struct {
	run     ts.RunStatus
	records map[uint32]ts.Record // by tag
	nics    []ts.NIC
}

// runFlows runs flows to completion on a fresh bootstrap (queues empty,
// counters cleared), for at most maxSlots slots, and reads the records and
// counters.
func (k *rack) runFlows(ctx context.Context, flows []ts.Flow, maxSlots int64) (outcome, error) {
	var o outcome
	if err := k.r.Restart(ctx); err != nil {
		return o, err
	}
	if err := k.r.LoadFlows(ctx, flows); err != nil {
		return o, err
	}
	var err error
	if o.run, err = k.r.Traffic(ctx, true, maxSlots); err != nil {
		return o, err
	}
	return o, k.collect(ctx, &o)
}

func (k *rack) collect(ctx context.Context, o *outcome) error {
	recs, err := k.r.AllRecords(ctx)
	if err != nil {
		return err
	}
	o.records = map[uint32]ts.Record{}
	for _, rec := range recs {
		o.records[rec.Tag] = rec
	}
	o.nics, err = k.r.ReadNICs(ctx)
	return err
}

// missing lists the flows without a completion record.
func (o outcome) missing(flows []ts.Flow) []ts.Flow {
	var out []ts.Flow
	for _, f := range flows {
		if _, ok := o.records[f.Tag]; !ok {
			out = append(out, f)
		}
	}
	return out
}

// checkComplete records whether every flow completed, with its record
// matching the descriptor.
func (k *rack) checkComplete(env *selftest.Env, name string, p results.Params, flows []ts.Flow, o outcome, why string) bool {
	miss := o.missing(flows)
	var wrong []string
	for _, f := range flows {
		rec, ok := o.records[f.Tag]
		if ok && (int(rec.Src) != f.Src || int(rec.Dst) != f.Dst || int64(rec.Bytes) != f.Bytes || int64(rec.StartNS) != f.StartNS) {
			wrong = append(wrong, fmt.Sprintf("flow %d: record %d>%d %d B from %d ns, loaded %d>%d %d B from %d ns",
				f.Tag, rec.Src, rec.Dst, rec.Bytes, rec.StartNS, f.Src, f.Dst, f.Bytes, f.StartNS))
		}
	}
	var desc []string
	for i, f := range miss {
		if i == 5 {
			desc = append(desc, fmt.Sprintf("and %d more", len(miss)-5))
			break
		}
		desc = append(desc, fmt.Sprintf("%d>%d (%d B)", f.Src, f.Dst, f.Bytes))
	}
	ok := len(miss) == 0 && len(wrong) == 0
	m := meas(k.r.Master, p, "shoal.flows.completed", float64(len(flows)-len(miss)), "")
	msg := fmt.Sprintf("%d of %d flows completed (%s)", len(flows)-len(miss), len(flows), o.run)
	if len(miss) > 0 {
		msg += "; missing: " + strings.Join(desc, ", ")
	}
	if len(wrong) > 0 {
		msg += "; " + strings.Join(wrong, "; ")
	}
	if why != "" {
		msg += ": " + why
	}
	env.Check(name, m, ok, fmt.Sprintf("all %d flows completed", len(flows)), "Shoal §3.5: reassembly by sequence number; every flow's last cell delivered", msg)
	return ok
}

func paramErr(env *selftest.Env, err error) error {
	return drivers.Setup("", env.Test.Pos.String(), "", err)
}

// runIncast runs the synchronised N:1 incast of §6.2 (Fig. 10): every sender
// starts a flow of `cells` cells to dst at time 0.
func runIncast(ctx context.Context, env *selftest.Env) error {
	k, err := rackOf(env)
	if err != nil {
		return err
	}
	par, err := selftest.ParamsOf[incastParams](env)
	if err != nil {
		return err
	}
	n := k.fab.N()
	dst, cells := par.Dst, par.Cells // §6.2: "seven 64 B cells"
	count := n - 1                   // §6.2: 7:1 on 8 nodes
	if par.Senders != nil {
		count = *par.Senders
	}
	senders, err := ts.IncastSenders(n, dst, count)
	if err != nil {
		return paramErr(env, err)
	}
	flows, err := ts.Incast(n, dst, senders, int64(cells*k.payload))
	if err != nil {
		return paramErr(env, err)
	}
	c, err := k.golden(k.base.SlotCycles)
	if err != nil {
		return err
	}
	fctExp, qExp, err := incastExpect(c, flows)
	if err != nil {
		return err
	}
	o, err := k.runFlows(ctx, flows, 200_000)
	if err != nil {
		return err
	}
	p := results.Params{"senders": strconv.Itoa(count), "dst": strconv.Itoa(dst), "cells": strconv.Itoa(cells)}
	if !k.checkComplete(env, "incast.complete", p, flows, o, "") {
		why := "not judged: the incast's flows did not all complete (incast.complete)"
		for _, f := range []string{"fastest", "slowest", "mean"} {
			env.Skip("incast.fct", k.fab.Nodes[dst].Board, results.Params{"senders": strconv.Itoa(count), "flow": f}, why)
		}
		env.Skip("incast.queue", k.fab.Nodes[dst].Board, results.Params{"senders": strconv.Itoa(count)}, why)
		return nil
	}
	fastest, slowest, mean := math.Inf(1), 0.0, 0.0
	for _, f := range flows {
		t := float64(o.records[f.Tag].FCTNS()) / 1000
		fastest, slowest, mean = math.Min(fastest, t), math.Max(slowest, t), mean+t/float64(len(flows))
	}
	dstBoard := k.fab.Nodes[dst].Board
	for _, x := range []struct {
		name string
		v    float64
	}{{"fastest", fastest}, {"slowest", slowest}, {"mean", mean}} {
		m := meas(dstBoard, results.Params{"senders": strconv.Itoa(count), "flow": x.name}, "shoal.incast.fct_us", x.v, "")
		m.Unit = "µs"
		env.Record("incast.fct", m, fctExp[x.name])
	}
	maxQ, at := 0, -1
	for _, nic := range o.nics {
		if int(nic.MaxQueueAny) > maxQ {
			maxQ, at = int(nic.MaxQueueAny), nic.Node
		}
	}
	m := meas(dstBoard, results.Params{"senders": strconv.Itoa(count)}, "shoal.incast.max_queue", float64(maxQ), "")
	m.Unit = "cells"
	if at >= 0 {
		m.Text = fmt.Sprintf("%d cells at node %d", maxQ, at)
	}
	env.Record("incast.queue", m, qExp)
	return nil
}

// runPermutation measures the full-permutation destination throughput at
// each slot size (§6.2, Fig. 9): every node runs one long flow to a
// distinct node; after a warm-up the counters are cleared and the useful
// cells each destination receives (RX_DELIVERED_CELLS: no forwarded, no
// empty cells) over a whole number of epochs are divided by the slots.
func runPermutation(ctx context.Context, env *selftest.Env) (err error) {
	k, err := rackOf(env)
	if err != nil {
		return err
	}
	par, err := selftest.ParamsOf[permutationParams](env)
	if err != nil {
		return err
	}
	slots, warm, epochs, seed := par.SlotCycles, par.WarmupEpochs, par.Epochs, par.Seed
	n := k.fab.N()
	E := k.base.Schedule.Epoch()
	defer func() {
		if rerr := k.restore(ctx); rerr != nil && err == nil {
			err = fmt.Errorf("restoring the %d-cycle slot after the permutation runs: %w", k.base.SlotCycles, rerr)
		}
	}()
	type point struct {
		slot int
		thr  float64
	}
	var pts []point
	for _, sc := range slots {
		sp := results.Params{"slot_cycles": strconv.Itoa(sc)}
		c, err := k.golden(sc)
		if err != nil {
			env.Error("permutation", k.r.Master, sp, drivers.Setup("", env.Test.Pos.String(), "", err))
			continue
		}
		// Long enough to outlast the run at one cell a slot.
		bytes := min(int64(warm+epochs+10)*int64(E)*int64(c.PayloadBytes()), ts.MaxDescriptorBytes)
		flows, err := ts.Permutation(n, bytes, uint64(seed))
		if err != nil {
			return paramErr(env, err)
		}
		exp, _, err := permutationExpect(c, flows, warm, epochs)
		if err != nil {
			return err
		}
		if err := k.r.SetSlot(ctx, sc, k.base.GuardCycles); err != nil {
			env.Error("permutation", k.r.Master, sp, err)
			continue
		}
		if err := k.r.LoadFlows(ctx, flows); err != nil {
			return err
		}
		if st, err := k.r.Traffic(ctx, true, int64(warm*E)); err != nil || !st.Limit {
			env.Error("permutation", k.r.Master, sp, fmt.Errorf("warm-up: %v (%v)", st, err))
			continue
		}
		if err := k.r.ClearCounters(ctx); err != nil {
			return err
		}
		st, err := k.r.Traffic(ctx, false, int64(epochs*E))
		if err != nil || st.Slots != int64(epochs*E) {
			env.Error("permutation", k.r.Master, sp, fmt.Errorf("measurement: %v (%v)", st, err))
			continue
		}
		nics, err := k.r.ReadNICs(ctx)
		if err != nil {
			return err
		}
		thr := 0.0
		var per []string
		for _, f := range flows {
			d := float64(nics[f.Dst].C["RX_DELIVERED_CELLS"]) / float64(st.Slots)
			thr += d / float64(len(flows))
			per = append(per, fmt.Sprintf("%d:%.3f", f.Dst, d))
		}
		m := meas(k.r.Master, sp, "shoal.permutation.throughput", thr, "per destination "+strings.Join(per, " "))
		m.Unit = "fraction"
		env.Record("permutation", m, exp)
		pts = append(pts, point{sc, thr})
	}
	// Fig. 9's trend: throughput rises with the slot (the feedback loop
	// spans fewer epochs, §6.2). Runs are finite: a dip of up to 0.02
	// between neighbours is noise, not a trend.
	sort.Slice(pts, func(i, j int) bool { return pts[i].slot < pts[j].slot })
	// The trend case is named by the slot sizes the plan asked for, never
	// by how many were measured.
	tp := results.Params{"slots": strconv.Itoa(len(slots))}
	if len(slots) >= 2 && len(pts) < 2 {
		env.Skip("permutation.trend", k.r.Master, tp, fmt.Sprintf("not judged: %d of %d slot sizes measured (see permutation)", len(pts), len(slots)))
	}
	if len(pts) >= 2 {
		var dips []string
		var seq []string
		for i, pt := range pts {
			seq = append(seq, fmt.Sprintf("%d:%.3f", pt.slot, pt.thr))
			if i > 0 && pt.thr < pts[i-1].thr-0.02 {
				dips = append(dips, fmt.Sprintf("%.3f at %d cycles after %.3f at %d", pt.thr, pt.slot, pts[i-1].thr, pts[i-1].slot))
			}
		}
		rise := pts[len(pts)-1].thr - pts[0].thr
		ok := len(dips) == 0 && rise > 0
		msg := "throughput does not rise with the slot size: " + strings.Join(dips, "; ")
		if rise <= 0 {
			msg = fmt.Sprintf("throughput at %d cycles (%.3f) is not above that at %d cycles (%.3f)", pts[len(pts)-1].slot, pts[len(pts)-1].thr, pts[0].slot, pts[0].thr)
		}
		if len(pts) < len(slots) {
			msg = fmt.Sprintf("only %d of %d slot sizes measured (see permutation); ", len(pts), len(slots)) + msg
			ok = false
		}
		m := meas(k.r.Master, tp, "shoal.permutation.rise", rise, strings.Join(seq, " "))
		env.Check("permutation.trend", m, ok, "rising with the slot size (no dip over 0.02)",
			"Shoal §6.2, Fig. 9: significantly lower for smaller slot sizes, converging towards 50% for larger ones", msg)
	}
	return nil
}

// runFairness runs competing flows of equal size from time 0 and scores
// each flow's rate — its cells over its completion time, in cells per slot,
// i.e. a fraction of a node's link — against golden/shoal's water-filling
// over Shoal's virtual links (§3.3.2: per-subflow max-min fairness, each
// subflow capped at one cell per feedback loop, §6.2).
func runFairness(ctx context.Context, env *selftest.Env) error {
	k, err := rackOf(env)
	if err != nil {
		return err
	}
	par, err := selftest.ParamsOf[fairnessParams](env)
	if err != nil {
		return err
	}
	spec, cells := par.Flows, par.Cells
	pairs, err := ts.ParsePairs(strings.Join(spec, ","), k.fab.N())
	if err != nil {
		return paramErr(env, err)
	}
	flows, err := ts.Pairs(k.fab.N(), pairs, int64(cells*k.payload))
	if err != nil {
		return paramErr(env, err)
	}
	var names []string
	for _, p := range pairs {
		names = append(names, fmt.Sprintf("%d>%d", p[0], p[1]))
	}
	exps, err := k.predict(map[string]string{"fair_flows": strings.Join(names, ",")})
	if err != nil {
		return err
	}
	o, err := k.runFlows(ctx, flows, 2_000_000)
	if err != nil {
		return err
	}
	if !k.checkComplete(env, "fairness.complete", results.Params{"flows": strconv.Itoa(len(flows))}, flows, o, "") {
		for i, f := range flows {
			env.Skip("fairness", k.fab.Nodes[f.Dst].Board, results.Params{"flow": names[i], "model": "shoal"},
				"not judged: the competing flows did not all complete (fairness.complete)")
		}
		return nil
	}
	c, err := k.golden(k.base.SlotCycles)
	if err != nil {
		return err
	}
	for i, f := range flows {
		rec := o.records[f.Tag]
		rate := float64(cells) / (float64(rec.FCTNS()) / c.SlotNS)
		p := results.Params{"flow": names[i], "model": "shoal"}
		e, err := pick(exps, "shoal.fair_rate", p)
		if err != nil {
			return err
		}
		ideal, _ := pick(exps, "shoal.fair_rate", results.Params{"flow": names[i], "model": "ideal"})
		e.Note += fmt.Sprintf("; the ideal rack-wide switch would give %.3f (§7.2)", ideal.Value)
		m := meas(k.fab.Nodes[f.Dst].Board, p, "shoal.fair_rate", rate, fmt.Sprintf("%d cells in %.2f µs", cells, float64(rec.FCTNS())/1000))
		m.Unit = "fraction"
		env.Record("fairness", m, e)
	}
	return nil
}
