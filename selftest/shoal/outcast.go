package shoal

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	gs "github.com/labrunner/labrunner/golden/shoal"
	"github.com/labrunner/labrunner/results"
	"github.com/labrunner/labrunner/selftest"
	ts "github.com/labrunner/labrunner/traffic/shoal"
)

// outcastSource is the paper's statement the outcast test judges.
const outcastSource = "Shoal §3.3.3: ready queues R_jk keep at most one local cell in Q_jk (Eq. 4, Eq. 5); " +
	"§3.3.2: a subflow has at most one cell in the queue at its intermediate node"

// runOutcast runs an outcast from each sender in turn: the sender starts a
// long flow to each of `dests` other nodes (the next ones round the rack) at
// time 0, and nothing else runs, so nothing is forwarded through the sender.
// Its queues then hold only local cells, and §3.3.3 allows one local cell
// per queue however many of its flows wait in the ready queue; the other
// nodes, intermediates of its flows, hold at most one cell of each flow.
// Each node's largest queue (MAX_QUEUE) is scored against golden/shoal's
// band for the same flows (NodeQueueExpectation: Eq. 5 taken apart, reading
// S62, and golden's simulation within a slot of timing), and every flow
// must complete.
func runOutcast(ctx context.Context, env *selftest.Env) error {
	k, err := rackOf(env)
	if err != nil {
		return err
	}
	par, err := selftest.ParamsOf[outcastParams](env)
	if err != nil {
		return err
	}
	n := k.fab.N()
	senders := par.Senders
	if senders == nil {
		senders = make([]int, n)
		for i := range senders {
			senders[i] = i
		}
	}
	for _, s := range senders {
		if s < 0 || s >= n {
			return paramErr(env, fmt.Errorf("senders: node %d is not one of the rack's 0..%d", s, n-1))
		}
	}
	dests := n - 1
	if par.Dests != nil {
		dests = *par.Dests
	}
	if dests < 2 || dests > n-1 {
		// One destination puts one flow in the ready queues: the test
		// needs two or more waiting behind the local cell in Q_jk.
		return paramErr(env, fmt.Errorf("dests: %d; want 2..%d, so that several flows wait in the sender's ready queues", dests, n-1))
	}
	cells := par.Cells
	if cells < n {
		// Long flows: more cells than a flow has subflows, so that every
		// subflow comes back to its queue while the others still wait.
		return paramErr(env, fmt.Errorf("cells: %d; want ≥ %d, more than a flow's %d subflows", cells, n, n-1))
	}
	c, err := k.golden(k.base.SlotCycles)
	if err != nil {
		return err
	}
	for _, s := range senders {
		var pairs [][2]int
		for d := 1; d <= dests; d++ {
			pairs = append(pairs, [2]int{s, (s + d) % n})
		}
		flows, err := ts.Pairs(n, pairs, int64(cells*k.payload))
		if err != nil {
			return paramErr(env, err)
		}
		bands, err := gs.NewNodeQueueBands(c, goldenFlows(c, flows))
		if err != nil {
			return fmt.Errorf("golden/shoal, outcast from node %d: %w", s, err)
		}
		p := results.Params{"sender": strconv.Itoa(s), "dests": strconv.Itoa(dests), "cells": strconv.Itoa(cells)}
		var others []int
		for j := 0; j < n; j++ {
			if j != s {
				others = append(others, j)
			}
		}
		note := fmt.Sprintf("golden/shoal slot simulation of the same %d flows of %d cells from node %d", len(flows), cells, s)
		srcExp, err := gs.NodeQueueExpectation(bands, []int{s}, nil, outcastSource, note+": the sender's queues hold local cells only")
		if err != nil {
			return err
		}
		midExp, err := gs.NodeQueueExpectation(bands, others, nil, outcastSource, note+": the other nodes forward its cells and source none")
		if err != nil {
			return err
		}
		o, err := k.runFlows(ctx, flows, 2_000_000)
		if err != nil {
			return err
		}
		// The bound first: it holds whatever became of the flows.
		srcBoard := k.fab.Nodes[s].Board
		q, err := k.r.MaxQueues(ctx, s)
		if err != nil {
			env.Error("outcast.source", srcBoard, p, err)
		} else {
			var over []string
			for d, v := range q {
				if v > int(*srcExp.Max) {
					over = append(over, fmt.Sprintf("Q[%d] %d", d, v))
				}
			}
			text := fmt.Sprintf("largest queue: %d cell(s)", o.nics[s].MaxQueueAny)
			if len(over) > 0 {
				text = fmt.Sprintf("queues of the sender past %.0f cell(s): %s, with nothing forwarded through it: "+
					"more than one local cell entered a queue (§3.3.3: the ready queue releases one at a time)", *srcExp.Max, strings.Join(over, ", "))
			}
			m := meas(srcBoard, p, "shoal.max_queue", float64(o.nics[s].MaxQueueAny), text)
			m.Unit = "cells"
			env.Record("outcast.source", m, srcExp)
		}
		worst, at := 0, others[0]
		for _, j := range others {
			if v := int(o.nics[j].MaxQueueAny); v > worst {
				worst, at = v, j
			}
		}
		m := meas(k.r.Master, p, "shoal.max_queue", float64(worst), fmt.Sprintf("largest queue: %d cell(s), at node %d", worst, at))
		m.Unit = "cells"
		env.Record("outcast.intermediate", m, midExp)
		k.checkComplete(env, "outcast.complete", p, flows, o, "")
	}
	return nil
}
