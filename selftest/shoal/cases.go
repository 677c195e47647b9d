package shoal

import (
	"fmt"
	"strconv"
	"strings"

	gs "github.com/labrunner/labrunner/golden/shoal"
	"github.com/labrunner/labrunner/results"
	"github.com/labrunner/labrunner/selftest"
	ts "github.com/labrunner/labrunner/traffic/shoal"
)

// The cases each test records, from the plan, the lab and the test's
// parameters alone (selftest.RegisterCases): the rack the plan's boards
// and the lab's cables make, as the setup builds it. Every board of the
// rack is needed (a Shoal fabric has no spare path), so a board that
// leaves the plan stops the setup: the runner then reports every declared
// case with the setup's error, each under its own name.

// planRack is the rack the plan describes: its fabric, the board that
// receives the rack-wide strobes (the first NIC board, traffic/shoal's
// Master), the plan's parameters and the epoch of its cyclic schedule.
type planRack struct {
	fab      *ts.Fabric
	master   string
	nics     []string
	switches []string
	pp       planParams
	epoch    int
}

func planRackOf(cp selftest.CasePlan) (*planRack, error) {
	d, err := selftest.DecodePlan(cp.Plan)
	if err != nil {
		return nil, err
	}
	pr := &planRack{pp: d.Plan.(planParams)}
	in := map[string]bool{}
	for _, pb := range cp.Plan.Boards {
		in[pb.Board] = true
		if strings.EqualFold(d.Boards[pb.Board].(boardParams).Role, "nic") {
			pr.nics = append(pr.nics, pb.Board)
		} else {
			pr.switches = append(pr.switches, pb.Board)
		}
	}
	if len(pr.nics) == 0 {
		return nil, fmt.Errorf("plan %s has no NIC board", cp.Plan.Name)
	}
	pr.master = pr.nics[0]
	cables, err := cablesOf(cp.Lab, func(b string) bool { return in[b] })
	if err != nil {
		return nil, err
	}
	perBoard, radix, err := fabricSizes(cp.Design.Params)
	if err != nil {
		return nil, err
	}
	if pr.fab, err = ts.NewFabric(pr.nics, perBoard, pr.switches, radix, cables); err != nil {
		return nil, err
	}
	sched, err := ts.Cyclic(pr.fab.N())
	if err != nil {
		return nil, err
	}
	pr.epoch = sched.Epoch()
	return pr, nil
}

// board is the board of node n.
func (pr *planRack) board(n int) string { return pr.fab.Nodes[n].Board }

// rackCases adds the cases of one test of the plan's rack.
func rackCases(per func(pr *planRack, add func(board, name string, p results.Params)) error) selftest.Cases {
	return func(cp selftest.CasePlan) ([]selftest.Case, error) {
		pr, err := planRackOf(cp)
		if err != nil {
			return nil, err
		}
		var out []selftest.Case
		err = per(pr, func(board, name string, p results.Params) {
			out = append(out, selftest.Case{Board: board, Name: name, Params: p})
		})
		return out, err
	}
}

func scheduleCases(cp selftest.CasePlan) ([]selftest.Case, error) {
	return rackCases(func(pr *planRack, add func(string, string, results.Params)) error {
		for _, b := range append(append([]string{}, pr.nics...), pr.switches...) {
			for _, reg := range []string{"CELL_BYTES", "PAYLOAD_BYTES"} {
				add(b, "schedule.cell", results.Params{"reg": reg, "slot_cycles": strconv.Itoa(pr.pp.SlotCycles)})
			}
		}
		for _, b := range pr.fab.Switches() {
			p := results.Params{"switch": pr.fab.SwitchName(b)}
			for _, name := range []string{"schedule.switch_status", "schedule.trace", "schedule.switch"} {
				add(b, name, p)
			}
		}
		for t := 0; t < pr.epoch; t++ {
			add(pr.master, "schedule.fabric", results.Params{"slot": strconv.Itoa(t)})
		}
		for n := 0; n < pr.fab.N(); n++ {
			add(pr.board(n), "schedule.nic", results.Params{"node": strconv.Itoa(n)})
		}
		return nil
	})(cp)
}

func syncCases(cp selftest.CasePlan) ([]selftest.Case, error) {
	slots := strconv.Itoa(cp.Params.(syncParams).Slots)
	return rackCases(func(pr *planRack, add func(string, string, results.Params)) error {
		p := results.Params{"master": strconv.Itoa(pr.pp.SyncMaster)}
		for _, name := range []string{"sync.status", "sync.one_way", "sync.residual"} {
			add(pr.master, name, p)
		}
		for _, b := range pr.switches {
			add(b, "sync.guard_band", results.Params{"switch": pr.fab.SwitchName(b), "slots": slots})
		}
		for n := 0; n < pr.fab.N(); n++ {
			add(pr.board(n), "sync.slots", results.Params{"node": strconv.Itoa(n), "slots": slots})
		}
		return nil
	})(cp)
}

func incastCases(cp selftest.CasePlan) ([]selftest.Case, error) {
	par := cp.Params.(incastParams)
	return rackCases(func(pr *planRack, add func(string, string, results.Params)) error {
		n := pr.fab.N()
		count := n - 1
		if par.Senders != nil {
			count = *par.Senders
		}
		if _, err := ts.IncastSenders(n, par.Dst, count); err != nil {
			return err
		}
		senders := strconv.Itoa(count)
		add(pr.master, "incast.complete", results.Params{"senders": senders, "dst": strconv.Itoa(par.Dst), "cells": strconv.Itoa(par.Cells)})
		for _, f := range []string{"fastest", "slowest", "mean"} {
			add(pr.board(par.Dst), "incast.fct", results.Params{"senders": senders, "flow": f})
		}
		add(pr.board(par.Dst), "incast.queue", results.Params{"senders": senders})
		return nil
	})(cp)
}

func permutationCases(cp selftest.CasePlan) ([]selftest.Case, error) {
	par := cp.Params.(permutationParams)
	return rackCases(func(pr *planRack, add func(string, string, results.Params)) error {
		for _, sc := range par.SlotCycles {
			add(pr.master, "permutation", results.Params{"slot_cycles": strconv.Itoa(sc)})
		}
		if len(par.SlotCycles) >= 2 {
			add(pr.master, "permutation.trend", results.Params{"slots": strconv.Itoa(len(par.SlotCycles))})
		}
		return nil
	})(cp)
}

func fairnessCases(cp selftest.CasePlan) ([]selftest.Case, error) {
	par := cp.Params.(fairnessParams)
	return rackCases(func(pr *planRack, add func(string, string, results.Params)) error {
		pairs, err := ts.ParsePairs(strings.Join(par.Flows, ","), pr.fab.N())
		if err != nil {
			return err
		}
		add(pr.master, "fairness.complete", results.Params{"flows": strconv.Itoa(len(pairs))})
		for _, p := range pairs {
			add(pr.board(p[1]), "fairness", results.Params{"flow": fmt.Sprintf("%d>%d", p[0], p[1]), "model": "shoal"})
		}
		return nil
	})(cp)
}

func queueBoundCases(cp selftest.CasePlan) ([]selftest.Case, error) {
	par := cp.Params.(workloadParams)
	return rackCases(func(pr *planRack, add func(string, string, results.Params)) error {
		kind, err := ts.ParseKind(par.Workload)
		if err != nil {
			return err
		}
		w := workloadRun{kind: kind, load: par.Load}
		for n := 0; n < pr.fab.N(); n++ {
			node := strconv.Itoa(n)
			add(pr.board(n), "queue_bound.queue", w.params("eq", "5", "node", node))
			add(pr.board(n), "queue_bound.ready", w.params("eq", "4", "node", node))
		}
		// ts.Generate draws exactly the flows asked for.
		add(pr.master, "queue_bound.complete", w.params("flows", strconv.Itoa(par.Flows), "seed", strconv.Itoa(par.Seed)))
		return nil
	})(cp)
}

func outcastCases(cp selftest.CasePlan) ([]selftest.Case, error) {
	par := cp.Params.(outcastParams)
	return rackCases(func(pr *planRack, add func(string, string, results.Params)) error {
		n := pr.fab.N()
		senders := par.Senders
		if senders == nil {
			for i := 0; i < n; i++ {
				senders = append(senders, i)
			}
		}
		dests := n - 1
		if par.Dests != nil {
			dests = *par.Dests
		}
		for _, s := range senders {
			if s < 0 || s >= n {
				return fmt.Errorf("senders: node %d is not one of the rack's 0..%d", s, n-1)
			}
			p := results.Params{"sender": strconv.Itoa(s), "dests": strconv.Itoa(dests), "cells": strconv.Itoa(par.Cells)}
			add(pr.board(s), "outcast.source", p)
			add(pr.master, "outcast.intermediate", p)
			add(pr.master, "outcast.complete", p)
		}
		return nil
	})(cp)
}

func failureCases(cp selftest.CasePlan) ([]selftest.Case, error) {
	par := cp.Params.(failureParams)
	return rackCases(func(pr *planRack, add func(string, string, results.Params)) error {
		f, n := pr.fab, pr.fab.N()
		var fail gs.Failure
		if par.Link != "" {
			a, b, err := cableAt(cp.Lab, par.Link)
			if err != nil {
				return err
			}
			if fail, err = cableFailure(f, a, b); err != nil {
				return err
			}
		} else {
			if par.Node == nil || *par.Node >= n {
				return fmt.Errorf("node: want one of the rack's nodes 0..%d", n-1)
			}
			fail = gs.Failure{Kind: gs.FailNode, Index: *par.Node}
		}
		dead := map[int]bool{}
		if fail.Kind == gs.FailNode {
			dead[fail.Index] = true
		}
		kind := fail.Kind.String()
		for i := 0; i < n; i++ {
			if !dead[i] {
				add(pr.board(i), "failure.detect", results.Params{"failure": kind, "node": strconv.Itoa(i)})
			}
		}
		fp := results.Params{"failure": kind}
		add(pr.master, "failure.symmetric", fp)
		add(pr.master, "failure.fraction", fp)
		// The flows between the pairs the failure leaves connected, as
		// golden/shoal counts them for the plan's rack.
		sched, err := gs.NewSchedule(n, 1, gs.Cyclic)
		if err != nil {
			return err
		}
		failed, err := gs.FailedPairs(gs.Topology{Nodes: n, Radix: f.Radix}, sched, fail)
		if err != nil {
			return err
		}
		if live := livePairs(n, dead, failed); len(live) > 0 {
			add(pr.master, "failure.traffic", results.Params{"failure": kind, "flows": strconv.Itoa(len(live))})
		}
		return nil
	})(cp)
}

func corruptionCases(cp selftest.CasePlan) ([]selftest.Case, error) {
	p := results.Params{"ber": strconv.FormatFloat(cp.Params.(corruptionParams).BER, 'g', -1, 64)}
	return rackCases(func(pr *planRack, add func(string, string, results.Params)) error {
		for _, name := range []string{"corruption.recovered", "corruption.delivered", "corruption.counted", "corruption.retransmitted"} {
			add(pr.master, name, p)
		}
		return nil
	})(cp)
}

func init() {
	selftest.RegisterCases(design, "schedule", scheduleCases)
	selftest.RegisterCases(design, "sync", syncCases)
	selftest.RegisterCases(design, "incast", incastCases)
	selftest.RegisterCases(design, "permutation", permutationCases)
	selftest.RegisterCases(design, "fairness", fairnessCases)
	selftest.RegisterCases(design, "queue_bound", queueBoundCases)
	selftest.RegisterCases(design, "outcast", outcastCases)
	selftest.RegisterCases(design, "failure", failureCases)
	selftest.RegisterCases(design, "corruption", corruptionCases)
}
