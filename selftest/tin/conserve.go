package tin

import (
	"context"
	"fmt"

	"github.com/labrunner/labrunner/results"
	"github.com/labrunner/labrunner/selftest"
	tt "github.com/labrunner/labrunner/traffic/tin"
)

// cellTally adds up, over every run of the plan's tests that finished with
// the fabric quiescent, the cells each cabled cage sent (its TX_CELLS) and
// the cells its peer's cage took into its input FIFOs (RX_CELLS). §3.1's
// links are lossless (credits, and no cell is dropped once sent): at rest
// the two are equal, run after run. A link that loses a cell now and then
// (a PCS losing cell delineation) loses too few to move any latency or
// throughput band; added up over the whole plan it shows.
type cellTally struct {
	sent, got map[tt.Cage]uint64 // by sending cage
	runs      int
	broken    string // why a finished run could not be counted
}

// countCells adds a finished run's counters (read before the next test's
// COUNTERS_CLEAR).
func (c *clique) countCells(ctx context.Context) {
	t := c.cells
	if t == nil {
		t = &cellTally{sent: map[tt.Cage]uint64{}, got: map[tt.Cage]uint64{}}
		c.cells = t
	}
	// Every board's counters at once: each has its own line.
	bs := c.topo.Boards
	got := make([]tt.CageCells, len(bs))
	if err := tt.ForBoards(bs, func(i int, b string) error {
		var err error
		got[i], err = c.r.Cells(ctx, b)
		return err
	}); err != nil {
		if t.broken == "" {
			t.broken = fmt.Sprintf("run %d: %v", t.runs+1, err)
		}
		return
	}
	ccs := map[string]tt.CageCells{}
	for i, b := range bs {
		ccs[b] = got[i]
	}
	for _, b := range c.topo.Boards {
		for k, pt := range c.topo.Ports[b] {
			if pt.Peer == "" {
				continue
			}
			from := tt.Cage{Board: b, Index: k}
			t.sent[from] += uint64(ccs[b].TX[k])
			t.got[from] += uint64(ccs[pt.Peer].RX[pt.PeerCage])
		}
	}
	t.runs++
}

// runConservation judges each directed link's cells over the plan: every
// cell one cage sent reached its peer's input FIFO. It runs after the
// plan's traffic tests (the default plan puts it last).
func runConservation(ctx context.Context, env *selftest.Env) error {
	c, err := cliqueOf(env)
	if err != nil {
		return err
	}
	t := c.cells
	for _, b := range c.topo.Boards {
		for k, pt := range c.topo.Ports[b] {
			if pt.Peer == "" {
				continue
			}
			p := results.Params{"port": fmt.Sprintf("sfp%d", pt.PeerCage), "from": fmt.Sprintf("%s:sfp%d", b, k)}
			if t != nil && t.broken != "" {
				env.Error("conservation", pt.Peer, p, fmt.Errorf("the cell counters could not be read after every run: %s", t.broken))
				continue
			}
			if t == nil || t.runs == 0 {
				env.Skip("conservation", pt.Peer, p, "no test of the plan ran traffic to completion before it")
				continue
			}
			from := tt.Cage{Board: b, Index: k}
			sent, got := t.sent[from], t.got[from]
			lost := float64(sent) - float64(got)
			env.Check("conservation", results.Measurement{Board: pt.Peer, Params: p, Metric: "tin.link.cells_lost", Value: lost, Unit: "cells",
				Text: fmt.Sprintf("%d cells sent by %s:sfp%d over %d finished runs, %d taken in", sent, b, k, t.runs, got)},
				sent == got && sent > 0, "every cell sent reaches the peer's input FIFO (and the link carried traffic)", "Aquila (NSDI 2022) §3.1 (lossless links: credits, per-hop)",
				fmt.Sprintf("%s:sfp%d sent %d cells over the plan's %d finished runs and %s:sfp%d took in %d: %s", b, k, sent, t.runs, pt.Peer, pt.PeerCage, got,
					map[bool]string{true: fmt.Sprintf("%.0f lost on the way", lost), false: "the link carried nothing, so its loss cannot be judged"}[sent > 0]))
		}
	}
	return nil
}
