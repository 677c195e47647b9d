package tin

import (
	"context"
	"fmt"

	"github.com/labrunner/labrunner/results"
	"github.com/labrunner/labrunner/selftest"
	tt "github.com/labrunner/labrunner/traffic/tin"
)

// runFlowOrder runs uniform-random IP with several flow labels while data
// cells are fully adaptively routed (ROUTE_MODE.DATA = 0, the reset; RTS
// deterministic, §3.3) and checks every receiver's delivery log: each
// flow's sequence numbers rise, IP_OOO_PKTS stays 0, nothing is dropped.
func runFlowOrder(ctx context.Context, env *selftest.Env) error {
	c, err := cliqueOf(env)
	if err != nil {
		return err
	}
	prm, err := selftest.ParamsOf[flowOrderParams](env)
	if err != nil {
		return err
	}
	load, bytes, count, flows := prm.Load, prm.Bytes, prm.Count, prm.Flows
	seed, err := c.seedOf(env)
	if err != nil {
		return err
	}
	if err := c.fresh(ctx); err != nil {
		return err
	}
	if err := c.r.WriteAll(ctx, "ROUTE_MODE.DATA", 0); err != nil {
		return err
	}
	ws, err := tt.UniformRandom{Load: load, Bytes: bytes, Count: count, Flows: flows, Port: tt.EPNIC, Log: true, Seed: seed}.Writes(c.topo, c.timing.InjectMbps)
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
	p := results.Params{"load": fmt.Sprint(load), "bytes": fmt.Sprint(bytes), "flows": fmt.Sprint(flows)}
	runStatus(env, "flow_order", rr, p, "uniform-random traffic")
	adaptive, err := c.r.Sum(ctx, "AR_MINIMAL")
	if err != nil {
		return err
	}
	nonmin, err := c.r.Sum(ctx, "AR_NONMINIMAL")
	if err != nil {
		return err
	}
	env.Check("flow_order.adaptive", results.Measurement{Params: p, Metric: "tin.ar.decisions", Value: float64(adaptive + nonmin), Unit: "decisions",
		Text: fmt.Sprintf("%d minimal, %d non-minimal", adaptive, nonmin)}, adaptive+nonmin > 0,
		"adaptive routing decisions were taken", "Aquila §3.2 (fully adaptive mode)",
		"no adaptive routing decision was counted (AR_MINIMAL, AR_NONMINIMAL): data cells were not adaptively routed, so the order test proves nothing")
	// Judged against what the generators were asked for, not what they
	// say they sent (IPG_SENT, reported beside it).
	sent := tt.Total(ws, "IPG_COUNT")
	gsent, err := c.r.Sum(ctx, "IPG_SENT")
	if err != nil {
		return err
	}
	dropped, err := c.r.Sum(ctx, "IPG_DROPPED")
	if err != nil {
		return err
	}
	// Every board's log and counter, read side by side (each board has
	// its own bus), then judged board by board.
	n := len(c.topo.Boards)
	logs, ooos, logErrs, oooErrs := make([][]tt.Delivery, n), make([]uint32, n), make([]error, n), make([]error, n)
	tt.ForBoards(c.topo.Boards, func(i int, b string) error {
		if logs[i], logErrs[i] = c.r.Deliveries(ctx, b); logErrs[i] == nil {
			ooos[i], oooErrs[i] = c.r.Read(ctx, b, "IP_OOO_PKTS")
		}
		return nil
	})
	delivered := uint64(0)
	for i, b := range c.topo.Boards {
		if logErrs[i] != nil {
			env.Error("flow_order", b, p, logErrs[i])
			continue
		}
		log, ooo := logs[i], ooos[i]
		delivered += uint64(len(log))
		if oooErrs[i] != nil {
			env.Error("flow_order", b, p, oooErrs[i])
			continue
		}
		inv := tt.Inversions(log)
		var first []string
		for _, v := range inv {
			first = append(first, v.String())
		}
		m := results.Measurement{Board: b, Params: p, Metric: "tin.ip.order_inversions", Value: float64(len(inv)), Unit: "packets",
			Text: fmt.Sprintf("%d delivered, IP_OOO_PKTS %d", len(log), ooo)}
		env.Check("flow_order", m, len(inv) == 0 && ooo == 0, "every flow delivered in sequence, IP_OOO_PKTS 0",
			"Aquila §3.3 (RTS arrival defines inter-packet order; packets of a flow delivered in order)",
			fmt.Sprintf("%s delivered packets out of their flow's order: IP_OOO_PKTS %d, %d sequence inversions in the IP delivery log (%s)",
				b, ooo, len(inv), firstLines(first, 3)))
	}
	env.Check("flow_order.delivered", results.Measurement{Params: p, Metric: "tin.ip.delivered", Value: float64(delivered), Unit: "packets",
		Text: fmt.Sprintf("%d asked, %d sent (IPG_SENT), %d delivered, %d dropped", sent, gsent, delivered, dropped)}, delivered == sent && dropped == 0,
		fmt.Sprintf("all %d packets the generators were asked for delivered", sent), "Aquila §3.3 (solicited transfer, no loss without incast)",
		fmt.Sprintf("%d of %d packets delivered, %d dropped (IPG_DROPPED): order cannot be judged for the lost ones", delivered, sent, dropped))
	return nil
}
