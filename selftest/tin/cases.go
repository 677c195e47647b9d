package tin

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/labrunner/labrunner/results"
	"github.com/labrunner/labrunner/selftest"
	tt "github.com/labrunner/labrunner/traffic/tin"
)

// The cases each test records, from the plan, the lab, the design's
// manifest and the test's parameters alone (selftest.RegisterCases): the
// plan's Clique (planTopo), whichever boards a run finds up. A test
// chooses its targets, pairs, senders and sources in that Clique too and
// leaves out the cases that need a board that left the plan: the runner
// reports each of them under its name, naming the board.

// casePlan is what the declarations of one test read: the plan's Clique,
// the seed the test's traffic takes (the test's, else the plan's, else the
// lab's, as clique.seedOf) and the build the manifest declares.
type casePlan struct {
	selftest.CasePlan
	all    *tt.Topology
	seed   uint64
	timing tt.Timing
	decl   map[string]float64
	align  int
}

func casePlanOf(cp selftest.CasePlan) (*casePlan, error) {
	all, err := planTopo(cp.Lab, cp.Plan)
	if err != nil {
		return nil, err
	}
	d, err := selftest.DecodePlan(cp.Plan)
	if err != nil {
		return nil, err
	}
	pp := d.Plan.(planParams)
	seed := int(cp.Lab.Seed)
	if pp.Seed != nil {
		seed = *pp.Seed
	}
	if s, ok := cp.Params.(seeded); ok && s.seedValue() != nil {
		seed = *s.seedValue()
	}
	tm, decl, err := declaredTiming(cp.Design)
	if err != nil {
		return nil, err
	}
	return &casePlan{CasePlan: cp, all: all, seed: uint64(seed), timing: tm, decl: decl, align: pp.Align}, nil
}

// cases builds a test's declaration from its casePlan.
func cases(per func(p *casePlan, add func(c selftest.Case)) error) selftest.Cases {
	return func(cp selftest.CasePlan) ([]selftest.Case, error) {
		p, err := casePlanOf(cp)
		if err != nil {
			return nil, err
		}
		var out []selftest.Case
		err = per(p, func(c selftest.Case) { out = append(out, c) })
		return out, err
	}
}

// each adds one case per name, on board, needing needs.
func each(add func(selftest.Case), board string, p results.Params, needs []string, names ...string) {
	for _, n := range names {
		add(selftest.Case{Board: board, Name: n, Params: p, Needs: needs})
	}
}

// rackWide are cases recorded for the rack as a whole (no board).
func rackWide(add func(selftest.Case), p results.Params, needs []string, names ...string) {
	each(add, "", p, needs, names...)
}

// cabled calls f for every cabled cage of the plan's Clique.
func cabled(all *tt.Topology, f func(b string, k int, pt tt.Port)) {
	for _, b := range all.Boards {
		for k, pt := range all.Ports[b] {
			if pt.Peer != "" {
				f(b, k, pt)
			}
		}
	}
}

var linksCases = cases(func(p *casePlan, add func(selftest.Case)) error {
	for _, b := range p.all.Boards {
		add(selftest.Case{Board: b, Name: "links.config"})
	}
	cabled(p.all, func(b string, k int, pt tt.Port) {
		par := results.Params{"port": fmt.Sprintf("sfp%d", k), "peer": pt.Peer, "role": pt.Role.String()}
		each(add, b, par, []string{pt.Peer}, "links.up", "links.role", "links.peer", "links.credit_init", "links.credits")
	})
	return nil
})

var creditsCases = cases(func(p *casePlan, add func(selftest.Case)) error {
	prm := p.Params.(creditsParams)
	rackWide(add, results.Params{"load": fmt.Sprint(prm.Load), "bytes": fmt.Sprint(prm.Bytes)}, nil, "credits.run", "credits.traffic")
	cabled(p.all, func(b string, k int, pt tt.Port) {
		each(add, b, results.Params{"port": fmt.Sprintf("sfp%d", k), "peer": pt.Peer}, []string{pt.Peer}, "credits")
	})
	return nil
})

var conservationCases = cases(func(p *casePlan, add func(selftest.Case)) error {
	cabled(p.all, func(b string, k int, pt tt.Port) {
		par := results.Params{"port": fmt.Sprintf("sfp%d", pt.PeerCage), "from": fmt.Sprintf("%s:sfp%d", b, k)}
		each(add, pt.Peer, par, []string{b}, "conservation")
	})
	return nil
})

var cellificationCases = cases(func(p *casePlan, add func(selftest.Case)) error {
	prm := p.Params.(cellificationParams)
	var pairs [][2]string
	if prm.Src != nil || prm.Dst != nil {
		src, err := boardIn(p.all, p.Test, "src", prm.Src, p.all.Boards[0])
		if err != nil {
			return err
		}
		dst, err := boardIn(p.all, p.Test, "dst", prm.Dst, p.all.Boards[len(p.all.Boards)-1])
		if err != nil {
			return err
		}
		if src == dst {
			return nil // the test refuses the pair (runCellification)
		}
		pairs = append(pairs, [2]string{src, dst})
	} else {
		rot, err := selftest.TargetsOf(p.CasePlan, p.all.Boards)
		if err != nil {
			return err
		}
		for _, src := range rot.Boards {
			pairs = append(pairs, [2]string{src, nextBoard(p.all, src)})
		}
	}
	for _, pr := range pairs {
		for _, l := range prm.Packets {
			par := results.Params{"bytes": strconv.Itoa(l), "src": pr[0], "dst": pr[1]}
			each(add, pr[0], par, []string{pr[1]}, "cellification", "cellification.cells", "cellification.design", "cellification.count")
		}
	}
	return nil
})

var flowOrderCases = cases(func(p *casePlan, add func(selftest.Case)) error {
	prm := p.Params.(flowOrderParams)
	par := results.Params{"load": fmt.Sprint(prm.Load), "bytes": fmt.Sprint(prm.Bytes), "flows": fmt.Sprint(prm.Flows)}
	rackWide(add, par, nil, "flow_order.run", "flow_order.adaptive", "flow_order.delivered")
	for _, b := range p.all.Boards {
		each(add, b, par, nil, "flow_order")
	}
	return nil
})

// routesCases are the per-mode cases, the per-class ones of the classes
// the IP cells travel in (ipClasses) and, in the adaptive modes, each
// board's.
var routesCases = cases(func(p *casePlan, add func(selftest.Case)) error {
	modes, err := parseRouteModes(p.Params.(routesParams).Modes)
	if err != nil {
		return err
	}
	classes, err := ipClasses(p.Design)
	if err != nil {
		return err
	}
	for _, rm := range modes {
		rackWide(add, results.Params{"mode": rm.name}, nil, "routes.run", "routes.stitch", "routes.deadlock")
		for _, cls := range classes {
			pc := results.Params{"mode": rm.name, "class": strconv.Itoa(cls)}
			rackWide(add, pc, nil, "routes")
			if rm.mode.Hashed() {
				rackWide(add, pc, nil, "routes.distinct")
			}
		}
		if rm.mode.Hashed() {
			continue
		}
		for _, b := range p.all.Boards {
			each(add, b, results.Params{"mode": rm.name, "src": b}, nil, "routes.adaptive")
		}
	}
	return nil
})

var rttCases = cases(func(p *casePlan, add func(selftest.Case)) error {
	prm := p.Params.(rttParams)
	for _, l := range prm.Loads {
		par := results.Params{"load": strconv.FormatFloat(l, 'g', -1, 64), "bytes": strconv.Itoa(prm.Bytes)}
		rackWide(add, par, nil, "rtt.run", "rtt.samples")
		for _, st := range []string{"mean", "p99"} {
			pp := par.Clone()
			pp["stat"] = st
			rackWide(add, pp, nil, "rtt")
		}
	}
	return nil
})

var rmaCases = cases(func(p *casePlan, add func(selftest.Case)) error {
	bytes := strconv.Itoa(p.Params.(rmaParams).Bytes)
	stats := []string{"p50", "p99"}
	for _, sc := range []string{"hi_alone", "hi_bulk", "lo_bulk"} {
		par := results.Params{"scenario": sc, "bytes": bytes}
		rackWide(add, par, nil, "rma_isolation.run", "rma_isolation.resp_cells")
		for _, st := range stats {
			pp := par.Clone()
			pp["stat"] = st
			rackWide(add, pp, nil, "rma_isolation.latency")
		}
	}
	for _, st := range stats {
		rackWide(add, results.Params{"stat": st}, nil, "rma_isolation.baseline", "rma_isolation.hipri", "rma_isolation.lopri")
	}
	return nil
})

var incastCases = cases(func(p *casePlan, add func(selftest.Case)) error {
	prm := p.Params.(incastParams)
	var victims []string
	if prm.Victim != nil {
		victims = []string{*prm.Victim}
	} else {
		rot, err := selftest.TargetsOf(p.CasePlan, p.all.Boards)
		if err != nil {
			return err
		}
		victims = rot.Boards
	}
	for _, v := range victims {
		v, srcs, err := tt.Incast(p.all, v, prm.Senders, p.seed)
		if err != nil {
			return err
		}
		par := results.Params{"victim": v, "senders": strconv.Itoa(len(srcs)), "threshold": strconv.Itoa(prm.Threshold)}
		rackWide(add, par, append([]string{v}, srcs...), "incast.run")
		each(add, v, par, srcs, "incast.queue", "incast.ctd", "incast.conserved", "incast.data", "incast.ecn")
	}
	return nil
})

// namedOrRotation is the board a test's parameter key names (checked, as
// the test checks it), or the plan's rotation of targets when it names none.
func (p *casePlan) namedOrRotation(key string, v *string) ([]string, error) {
	if v != nil {
		b, err := boardIn(p.all, p.Test, key, v, "")
		if err != nil {
			return nil, err
		}
		return []string{b}, nil
	}
	rot, err := selftest.TargetsOf(p.CasePlan, p.all.Boards)
	if err != nil {
		return nil, err
	}
	return rot.Boards, nil
}

// forTargets calls f with each target of an ordering test and its
// sources, in the plan's Clique (targetsOf, streamSources).
func forTargets(p *casePlan, f func(target string, srcs []string)) error {
	o := p.Params.(targetedOrdering).ordering()
	targets, err := p.namedOrRotation("target", o.Target)
	if err != nil {
		return err
	}
	for _, t := range targets {
		_, srcs, err := tt.Incast(p.all, t, o.Sources, p.seed)
		if err != nil {
			return err
		}
		f(t, srcs)
	}
	return nil
}

// targetCases adds a target's run (rack-wide) and its own cases.
func targetCases(add func(selftest.Case), target string, srcs []string, par results.Params, run string, names ...string) {
	rackWide(add, par, append([]string{target}, srcs...), run)
	each(add, target, par, srcs, names...)
}

var orderingCases = cases(func(p *casePlan, add func(selftest.Case)) error {
	prm := p.Params.(orderingParams)
	for _, mode := range prm.Modes {
		if _, ok := orderingModes[mode]; !ok {
			return fmt.Errorf("ordering mode %q: want one of ordered, ordered-eod, slow, slow-eod, sync", mode)
		}
	}
	names := []string{"ordering", "ordering.complete"}
	if prm.LossReqPPM > 0 || prm.LossAckPPM > 0 || prm.DropEvery > 0 {
		names = append(names, "ordering.stress")
	}
	return forTargets(p, func(target string, srcs []string) {
		for _, mode := range prm.Modes {
			targetCases(add, target, srcs, results.Params{"mode": mode, "target": target}, "ordering.run", names...)
		}
	})
})

var fallbackCases = cases(func(p *casePlan, add func(selftest.Case)) error {
	conns := strconv.Itoa(p.Params.(fallbackParams).Conns)
	return forTargets(p, func(target string, srcs []string) {
		par := results.Params{"conns": conns, "sources": strconv.Itoa(len(srcs)), "target": target}
		targetCases(add, target, srcs, par, "fallback.run", "fallback.log", "fallback.log.complete", "fallback", "fallback.nack", "fallback.connections")
	})
})

var robCases = cases(func(p *casePlan, add func(selftest.Case)) error {
	prm := p.Params.(robParams)
	// The gap rob_occupancy runs with: golden/tin's REQ cell time on a
	// link of the build the manifest declares, or the plan's.
	pl, err := (&clique{set: goldenSettings(p.all, p.timing, p.decl, p.align)}).goldenPlan(nil)
	if err != nil {
		return err
	}
	gap, err := robGap(pl, p.timing, prm.GapNS)
	if err != nil {
		return err
	}
	return forTargets(p, func(target string, srcs []string) {
		par := results.Params{"target": target, "sources": strconv.Itoa(len(srcs)), "jitter_ns": strconv.Itoa(prm.JitterNS), "gap_ns": strconv.Itoa(gap)}
		targetCases(add, target, srcs, par, "rob_occupancy.run", "rob_occupancy.log", "rob_occupancy.log.complete", "rob_occupancy.reordered", "rob_occupancy")
	})
})

var robSkewCases = cases(func(p *casePlan, add func(selftest.Case)) error {
	every, length := robSkewShape(p.Params.(robSkewParams), int(p.decl["max_outstanding"]))
	return forTargets(p, func(target string, srcs []string) {
		par := results.Params{"target": target, "sources": strconv.Itoa(len(srcs)), "drop_every": strconv.Itoa(every), "length": strconv.Itoa(length)}
		targetCases(add, target, srcs, par, "rob_skew.run", "rob_skew.log", "rob_skew.log.complete", "rob_skew.dropped", "rob_skew.occupancy", "rob_skew.nacks", "rob_skew.fallbacks")
	})
})

var tracePathCases = cases(func(p *casePlan, add func(selftest.Case)) error {
	prm := p.Params.(traceParams)
	srcs, err := p.namedOrRotation("src", prm.Src)
	if err != nil {
		return err
	}
	dsts := traceDests(p.all, p.seed)
	for _, src := range p.all.Boards {
		if !slices.Contains(srcs, src) {
			continue
		}
		dst, err := boardIn(p.all, p.Test, "dst", prm.Dst, dsts[src])
		if err != nil {
			return err
		}
		if src == dst {
			continue
		}
		par := results.Params{"src": src, "dst": dst, "bytes": strconv.Itoa(prm.Bytes)}
		rackWide(add, par, []string{src, dst}, "trace_path.run")
		each(add, src, par, []string{dst}, "trace_path", "trace_path.routes")
		for _, cell := range []string{"RTS", "CTS"} {
			pp := par.Clone()
			pp["cell"] = cell
			each(add, src, pp, []string{dst}, "trace_path.head_latency")
		}
	}
	return nil
})

func init() {
	for test, c := range map[string]selftest.Cases{
		"links": linksCases, "credits": creditsCases, "conservation": conservationCases, "cellification": cellificationCases,
		"flow_order": flowOrderCases, "routes": routesCases, "rtt": rttCases, "rma_isolation": rmaCases, "incast": incastCases,
		"ordering": orderingCases, "fallback": fallbackCases, "rob_occupancy": robCases, "rob_skew": robSkewCases, "trace_path": tracePathCases,
	} {
		selftest.RegisterCases(design, test, c)
	}
}
