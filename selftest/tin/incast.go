package tin

import (
	"context"
	"fmt"
	"strconv"

	"github.com/labrunner/labrunner/drivers"
	"github.com/labrunner/labrunner/results"
	"github.com/labrunner/labrunner/selftest"
	tt "github.com/labrunner/labrunner/traffic/tin"
)

// runIncast makes many sources burst messages to one destination port
// (§3.3: "In the presence of severe incast, packets can be discarded while
// conserving fabric bandwidth"): the victim's RTS queue must stop at the
// CTD threshold, every RTS beyond it must be answered by a CTD that the
// source acts on (the packet leaves its ingress buffer without its data
// crossing the fabric), every other packet must arrive, and the queue depth
// must drive ECN marking.
func runIncast(ctx context.Context, env *selftest.Env) error {
	c, err := cliqueOf(env)
	if err != nil {
		return err
	}
	prm, err := selftest.ParamsOf[incastParams](env)
	if err != nil {
		return err
	}
	victim, senders, bytes, messages, msgBytes, threshold := prm.Victim, prm.Senders, prm.Bytes, prm.Messages, prm.MessageBytes, prm.Threshold
	seed, err := c.seedOf(env)
	if err != nil {
		return err
	}
	if threshold < 2 {
		return fmt.Errorf("%s: threshold %d: the CTD threshold must let at least two RTSs queue", env.Test.Pos, threshold)
	}
	// Every board's IP egress is a victim in turn (targets), unless the
	// plan names one.
	var victims []string
	if victim != nil {
		victims = []string{*victim}
	} else {
		rot, err := env.Targets(c.all.Boards, env.PlanStart())
		if err != nil {
			return drivers.Setup("", env.Test.Pos.String(), "", err)
		}
		victims = rot.Boards
	}
	for _, v := range victims {
		// The senders are drawn from the plan's Clique: an incast one of
		// them cannot join is not run (the runner reports its cases,
		// naming the board).
		v, srcs, err := tt.Incast(c.all, v, senders, seed)
		if err != nil {
			return fmt.Errorf("%s: %w", env.Test.Pos, err)
		}
		if !c.up(append([]string{v}, srcs...)...) {
			continue
		}
		if err := incastOn(ctx, env, c, v, srcs, bytes, messages, msgBytes, threshold); err != nil {
			return err
		}
	}
	return nil
}

// incastOn runs the incast of srcs towards one victim.
func incastOn(ctx context.Context, env *selftest.Env, c *clique, victim string, srcs []string, bytes, messages, msgBytes, threshold int) error {
	if err := c.fresh(ctx); err != nil {
		return err
	}
	if err := c.r.Write(ctx, victim, "IP_CTD_THRESHOLD", uint32(threshold)); err != nil {
		return err
	}
	ecn := threshold / 2
	if err := c.r.Write(ctx, victim, "IP_ECN_THRESHOLD", uint32(ecn)); err != nil {
		return err
	}
	pairs := map[string]string{}
	for _, s := range srcs {
		pairs[s] = victim
	}
	// Messages injected at the full injection rate: the burst is the incast.
	ws, err := tt.Bursts{Pairs: pairs, MsgBytes: msgBytes, RateMbps: int(c.timing.InjectMbps), Count: messages, MTU: bytes, Port: tt.EPNIC}.Writes(c.topo)
	if err != nil {
		return err
	}
	if err := c.r.Load(ctx, ws); err != nil {
		return err
	}
	rr, err := c.run(ctx)
	if err != nil {
		return err
	}
	p := results.Params{"victim": victim, "senders": strconv.Itoa(len(srcs)), "threshold": strconv.Itoa(threshold)}
	if !runStatus(env, "incast", rr, p, fmt.Sprintf("incast of %d senders on %s", len(srcs), victim)) {
		notJudged(env, victim, p, "the incast run did not finish (incast.run)", "incast.queue", "incast.ctd", "incast.conserved", "incast.data", "incast.ecn")
		return nil
	}
	rd := func(b, n string) uint64 {
		if err != nil {
			return 0
		}
		var v uint32
		v, err = c.r.Read(ctx, b, n)
		return uint64(v)
	}
	sum := func(n string) uint64 {
		if err != nil {
			return 0
		}
		var v uint64
		v, err = c.r.Sum(ctx, n, srcs...)
		return v
	}
	hwm := rd(victim, "IP_RTSQ_HWM")
	ctdSent := rd(victim, "IP_CTD_SENT")
	delivered := rd(victim, "IP_PKTS_DELIVERED")
	ecnMarked := rd(victim, "IP_ECN_MARKED")
	cellsIn := rd(victim, "IP_DATA_CELLS_RECEIVED")
	reasm := rd(victim, "IP_REASM_TIMEOUTS")
	srcPkts := sum("IP_PKTS_SENT")
	ctdRecv := sum("IP_CTD_RECEIVED")
	cellsOut := sum("IP_DATA_CELLS_SENT")
	fetch := sum("IP_FETCH_TIMEOUTS")
	if err != nil {
		return err
	}
	// What the sources were asked for: each message cut into MTU-sized
	// packets (reading A61: accounting against the runner's request, the
	// sources' IP_PKTS_SENT is reported beside it).
	pkts := uint64(messages*len(srcs)) * uint64((msgBytes+bytes-1)/bytes)
	// A message is cut into MTU-sized packets and a shorter last one
	// (65536 B at 1500 B: 43 of 1500 B and one of 1036 B), so the cells of
	// the delivered packets are known up to how many of them were last
	// packets: between none and one per message.
	perPacket := len(c.timing.DataCells(bytes))
	tail, tails := perPacket, 0
	if r := msgBytes % bytes; r != 0 {
		tail, tails = len(c.timing.DataCells(r)), messages*len(srcs)
	}
	deliveredCells := func(cells uint64) bool {
		for t := 0; t <= tails && uint64(t) <= delivered; t++ {
			if cells == (delivered-uint64(t))*uint64(perPacket)+uint64(t)*uint64(tail) {
				return true
			}
		}
		return false
	}
	want := fmt.Sprintf("%d cells", delivered*uint64(perPacket))
	if tails > 0 {
		want = fmt.Sprintf("%d to %d cells", (delivered-min(delivered, uint64(tails)))*uint64(perPacket)+min(delivered, uint64(tails))*uint64(tail), delivered*uint64(perPacket))
	}
	// Under an incast that overflows (CTDs are sent: incast.ctd) the RTS
	// queue fills exactly to the threshold the runner wrote and no further.
	env.Record("incast.queue", results.Measurement{Board: victim, Params: p, Metric: "tin.ip.rtsq_hwm", Value: float64(hwm), Unit: "packets"},
		results.Expectation{Metric: "tin.ip.rtsq_hwm", Value: float64(threshold), Unit: "packets",
			Source: "Aquila §3.3 (a CTD is sent when an RTS finds its queue over the threshold)",
			Note:   fmt.Sprintf("IP_CTD_THRESHOLD = %d written by the runner; an RTS queue past it queued RTSs instead of answering CTD, one below it never reached the threshold", threshold),
			Budget: "exact: the queue's high-water mark, in packets, against the threshold the runner wrote"})
	env.Check("incast.ctd", results.Measurement{Board: victim, Params: p, Metric: "tin.ip.ctd", Value: float64(ctdSent), Unit: "packets",
		Text: fmt.Sprintf("%d CTD sent, %d received by the sources", ctdSent, ctdRecv)},
		ctdSent > 0 && ctdSent == ctdRecv, "CTDs sent under the incast, each acted on by its source", "Aquila §3.3 (Clear To Drop)",
		fmt.Sprintf("%s sent %d CTDs, the sources dropped %d packets on CTD (IP_CTD_RECEIVED): %s", victim, ctdSent, ctdRecv,
			map[bool]string{true: "the incast never crossed the threshold (raise messages or lower threshold)", false: "CTDs lost or ignored"}[ctdSent == 0]))
	env.Check("incast.conserved", results.Measurement{Board: victim, Params: p, Metric: "tin.ip.incast_accounted", Value: float64(delivered + ctdRecv), Unit: "packets",
		Text: fmt.Sprintf("%d asked, %d sent (IP_PKTS_SENT), %d delivered, %d dropped by CTD, %d fetch and %d reassembly timeouts", pkts, srcPkts, delivered, ctdRecv, fetch, reasm)},
		delivered+ctdRecv == pkts && srcPkts == pkts && fetch == 0 && reasm == 0, fmt.Sprintf("%d packets delivered or dropped by CTD, no timeout", pkts),
		"Aquila §3.3 (the egress drops a packet only by CTD)",
		fmt.Sprintf("of %d packets asked for (%d sent) %d were delivered and %d dropped by CTD; %d fetch and %d reassembly timeouts", pkts, srcPkts, delivered, ctdRecv, fetch, reasm))
	env.Check("incast.data", results.Measurement{Board: victim, Params: p, Metric: "tin.ip.incast_data_cells", Value: float64(cellsIn), Unit: "cells",
		Text: fmt.Sprintf("%d data cells sent, %d received, %d per delivered %d-byte packet, %d per last packet of a message", cellsOut, cellsIn, perPacket, bytes, tail)},
		cellsIn == cellsOut && deliveredCells(cellsIn), want+": only delivered packets' data crosses the fabric",
		"Aquila §3.3 (dropped packets are discarded without their data traversing the cell fabric)",
		fmt.Sprintf("%d data cells sent, %d received for %d delivered packets (%s): dropped packets' data crossed the fabric, or cells were lost", cellsOut, cellsIn, delivered, want))
	env.Check("incast.ecn", results.Measurement{Board: victim, Params: p, Metric: "tin.ip.ecn_marked", Value: float64(ecnMarked), Unit: "packets"},
		ecnMarked > 0, fmt.Sprintf("packets marked while the RTS queue held more than %d (IP_ECN_THRESHOLD)", ecn), "Aquila §3.3 (the RTS queue's depth is the ECN signal)",
		fmt.Sprintf("no packet ECN-marked at %s although its RTS queue reached %d, above the marking threshold %d", victim, hwm, ecn))
	return nil
}
