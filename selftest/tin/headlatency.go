package tin

import (
	"fmt"
	"strings"

	gt "github.com/labrunner/labrunner/golden/tin"
	"github.com/labrunner/labrunner/results"
	"github.com/labrunner/labrunner/selftest"
	tt "github.com/labrunner/labrunner/traffic/tin"
)

// judgeHeadLatency scores the head latency of a traced control cell (RTS
// or CTS: 16 bytes, alone in an idle fabric, so it never waits) from its
// arrival at the first switch to its arrival at the last, against the sum
// of the per-hop latencies of Aquila §3.1/§3.2 over the links it crossed:
// the declared fall-through and PCS ("the total per hop latency without
// FEC is 40ns"), FEC on global links (30 ns) and each cable's flight time
// from the lab file. A switch of a clocked design may add up to one cycle
// of its declared clock where a head arrives between two edges (reading
// A28); timestamps are whole ns. What it catches: a switch or a link
// slower than the build declares (a pipeline stage more, a slower PCS),
// which the loaded RTT bands, made for queueing, are too wide to see.
func judgeHeadLatency(env *selftest.Env, c *clique, src string, p results.Params, cell string, cp *tt.CellPath) {
	pp := p.Clone()
	pp["cell"] = cell
	if cp == nil || !cp.Complete || len(cp.Records) < 2 {
		// The case keeps its name (a fault must not make cases vanish);
		// trace_path fails with what is missing.
		env.Skip("trace_path.head_latency", src, pp, fmt.Sprintf("not judged: the traced %s's path is not complete (trace_path)", cell))
		return
	}
	pl := c.plan
	clockNs := pl.Timing.SwitchClockNs
	var want float64
	var hops []string
	worst, worstAt := -1e9, ""
	for i := 0; i+1 < len(cp.Records); i++ {
		r, next := cp.Records[i], cp.Records[i+1]
		b := c.topo.ByNode[r.At.Node()]
		ps := c.topo.Ports[b]
		if ps == nil || r.Out < 0 || r.Out >= tt.Cages || ps[r.Out].Peer == "" {
			env.Check("trace_path.head_latency", results.Measurement{Board: src, Params: pp, Metric: "tin.trace.head_latency", Unit: "ns"}, false,
				"every hop on a cabled cage", "Aquila §3.1", fmt.Sprintf("%s hop %d leaves %s on port %d, which is not a cabled cage", cell, i, b, r.Out))
			return
		}
		port := ps[r.Out]
		kind := gt.Local
		if port.Role == tt.RoleGlobal {
			kind = gt.Global
		}
		h := pl.Timing.HopLatencyOver(kind, port.LatencyNS)
		got := float64(next.ArriveNS - r.ArriveNS)
		want += h
		hops = append(hops, fmt.Sprintf("%s->%s %g ns (golden %g)", b, port.Peer, got, h))
		if got-h > worst {
			worst, worstAt = got-h, fmt.Sprintf("%s->%s: %g ns against %g", b, port.Peer, got, h)
		}
	}
	n := float64(len(cp.Records) - 1)
	got := float64(cp.Records[len(cp.Records)-1].ArriveNS - cp.Records[0].ArriveNS)
	lo, hi := want-1, want+n*clockNs+1
	e := results.Expectation{Metric: "tin.trace.head_latency", Params: pp, Value: want, Unit: "ns", Min: &lo, Max: &hi,
		Source: "Aquila (NSDI 2022) §3.1 (40 ns per hop), §3.2 (FEC 30 ns per global hop)",
		Note:   fmt.Sprintf("the %s's head, first switch to last, %d hops, over the lab's cables", cell, len(cp.Records)-1),
		Budget: fmt.Sprintf("-1 .. +%g ns: whole-ns timestamps (1 ns) and, per switch, up to one cycle of the declared %g ns switch clock (reading A28)", n*clockNs+1, clockNs)}
	if _, above, ok := e.RelativeBand(); ok && above > results.WideBand {
		e.Wide = "the design's clock alignment, one cycle per switch, on a path of few hops: a band of what the paper's per-hop figure cannot fix"
	}
	m := results.Measurement{Board: src, Params: pp, Metric: "tin.trace.head_latency", Value: got, Unit: "ns",
		Text: fmt.Sprintf("worst hop %s; %s", worstAt, strings.Join(hops, ", "))}
	env.Record("trace_path.head_latency", m, e)
}
