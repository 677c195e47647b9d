package bringup

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/labrunner/labrunner/drivers"
	"github.com/labrunner/labrunner/drivers/pmos"
	"github.com/labrunner/labrunner/golden/bringup"
	"github.com/labrunner/labrunner/labconfig"
	"github.com/labrunner/labrunner/results"
	"github.com/labrunner/labrunner/selftest"
)

// predict asks the golden model for the rack's expectations (golden/bringup
// with the rack's topology and the lab's figures) and keeps them by key.
func (rr *rackRun) predict(top bringup.Topology, extra map[string]string) (map[string]results.Expectation, error) {
	set := top.Params()
	// The management channel's figures (docs/pmos.md §3.4, MOS_PERIOD_PS,
	// PMOS_PARAMS): the golden model has none of its own.
	for k, v := range map[string]string{
		"mos_rate": strconv.FormatFloat(1e12/pmos.PeriodPS, 'g', -1, 64), "pmos_payload": strconv.Itoa(pmos.MaxPayload),
		"pmos_overhead": strconv.Itoa(pmos.FrameOverhead), "pmos_ack": "6", "window": strconv.Itoa(pmos.Window),
		"rto_us": "250", "retries": strconv.Itoa(pmos.Retries), "goodput_bytes": "",
	} {
		set[k] = v
	}
	var ppm []string
	for _, b := range rr.Boards {
		if b.Cfg.Emulated != nil {
			ppm = append(ppm, fmt.Sprintf("%s=%g", b.Name, b.Cfg.Emulated.ClockPPM))
		}
	}
	if len(ppm) > 0 {
		set["clock_ppm"] = strings.Join(ppm, ",")
	}
	for k, v := range extra {
		set[k] = v
	}
	exps, err := bringup.Model{}.Predict(set)
	if err != nil {
		return nil, err
	}
	out := make(map[string]results.Expectation, len(exps))
	for _, e := range exps {
		out[e.Key()] = e
	}
	return out, nil
}

// observedFaults are the boards the bootstrap lost, as the golden model
// takes them: those that never answered (failed) and those that died after
// their own bootstrap. The golden waves are the breadth-first order over
// the boards left (golden/bringup: "a dead board gets no wave and relays
// for nobody"); which boards failed is judged by each board's own
// bootstrap stage.
func (rr *rackRun) observedFaults() bringup.Faults {
	var f bringup.Faults
	for _, n := range rr.nodes {
		switch n.bootStatus() {
		case bootFailed:
			f.Dead = append(f.Dead, n.Name)
		case bootDied:
			f.ProxyDies = append(f.ProxyDies, n.Name)
		}
	}
	return f
}

// faultParams renders faults as golden/bringup's parameters.
func faultParams(f bringup.Faults) map[string]string {
	m := map[string]string{}
	if len(f.Dead) > 0 {
		m["dead"] = strings.Join(f.Dead, ",")
	}
	if len(f.ProxyDies) > 0 {
		m["proxy_dies"] = strings.Join(f.ProxyDies, ",")
	}
	return m
}

// scoreBootstrap records the waves, proxies and statuses against the golden
// plan (Aquila §4.4: breadth-first from the DCN boards).
func (rr *rackRun) scoreBootstrap() {
	r := rr.run
	f := rr.observedFaults()
	exp, err := rr.predict(rr.Golden(), faultParams(f))
	if err != nil {
		r.env.Error("bringup.bootstrap.golden", "", results.Params{"rack": rr.Name}, drivers.Setup("", "golden/bringup", "", err))
		return
	}
	rr.expect = exp
	plan, _ := bringup.Bootstrap(rr.Golden(), f)
	// The lab's own plan, without the boards this run lost, says which
	// boards have a wave and a proxy case: a board that did not bootstrap
	// keeps them, skipped with the reason (their JUnit identity comes from
	// the lab, never from what happened in the run).
	labPlan, _ := bringup.Bootstrap(rr.Golden(), bringup.Faults{})
	waves := map[int]int{}
	counts := map[bootStatus]int{}
	maxWave := -1
	for _, n := range rr.nodes {
		n.mu.Lock()
		b := n.boot
		n.mu.Unlock()
		st := b.Status
		if st == bootNone {
			st = bootFailed
		}
		counts[st]++
		if st == bootOK || st == bootDied {
			waves[b.Wave]++
			maxWave = max(maxWave, b.Wave)
		}
		rr.record("bringup.status", n.Board, results.Measurement{Metric: "bringup.status", Params: results.Params{"board": n.Name}, Text: string(st)},
			"")
		inLab := labPlan != nil
		var lb bringup.BoardPlan
		if inLab {
			lb, inLab = labPlan.Board(n.Name)
		}
		if st != bootOK && st != bootDied {
			if inLab && lb.Wave >= 0 {
				why := fmt.Sprintf("not measured: %s did not bootstrap (status %s, see bringup.status and bringup.bootstrap)", n.Name, st)
				rr.skip("bringup.wave", n.Board, results.Params{"board": n.Name}, why)
				if lb.Wave > 0 {
					rr.skip("bringup.proxy", n.Board, results.Params{"board": n.Name}, why)
				}
			}
			continue
		}
		rr.record("bringup.wave", n.Board, results.Measurement{Metric: "bringup.wave", Params: results.Params{"board": n.Name}, Value: float64(b.Wave), Unit: "wave"},
			"")
		if b.Proxy != nil {
			msg := ""
			if plan != nil {
				if err := plan.CheckProxy(n.Name, b.Wave, b.Proxy.Name); err != nil {
					msg = err.Error()
				}
			}
			// The case is the board's; the proxy the run chose is what it
			// measured (a run-time outcome, never part of the name).
			rr.recordChoice("bringup.proxy", n.Board, results.Measurement{Metric: "bringup.proxy", Params: results.Params{"board": n.Name}, Value: 1,
				Text: fmt.Sprintf("bootstrapped through %s:%s", b.Proxy.Name, portName(b.Proxy.Board, b.ProxyPort))}, "proxy", b.Proxy.Name, msg)
		} else if inLab && lb.Wave > 0 && rr.run.judged(n.Board) {
			m := results.Measurement{Board: n.Name, Metric: "bringup.proxy", Design: "mgmt", Params: results.Params{"board": n.Name, "rack": rr.Name}, Text: "no proxy"}
			rr.run.env.Check("bringup.proxy", m, false, "one of "+strings.Join(lb.Proxies, ", "), "golden/bringup",
				fmt.Sprintf("%s bootstrapped (wave %d) without a proxy; the lab's cables put it in wave %d", n.Name, b.Wave, lb.Wave))
			r.info(results.Measurement{Metric: "bringup.board_ms", Board: n.Name, Params: results.Params{"board": n.Name, "rack": rr.Name},
				Value: float64(b.DoneNS-b.StartNS) / 1e6, Unit: "ms", Text: "management time from its first relay to its first routed answer"})
		}
	}
	rr.record("bringup.waves", nil, results.Measurement{Metric: "bringup.waves", Value: float64(maxWave + 1), Unit: "waves"}, "")
	for w := 0; w <= maxWave; w++ {
		rr.record("bringup.wave.size", nil, results.Measurement{Metric: "bringup.wave.size", Params: results.Params{"wave": strconv.Itoa(w)}, Value: float64(waves[w]), Unit: "boards"}, "")
	}
	for _, st := range []bootStatus{bootOK, bootDied, bootFailed, bootUnreachable} {
		rr.record("bringup.boards", nil, results.Measurement{Metric: "bringup.boards", Params: results.Params{"status": string(st)}, Value: float64(counts[st]), Unit: "boards"}, "")
	}
}

// scoreTimeSync records the tree, link delays, offsets and convergence
// against golden/bringup with the figures the hardware reports: the
// interval, the transceiver latency, the threshold and fail limit the runner
// wrote, the lab's clocks. Cables whose asymmetry the lab declares are
// compensated (compPS), so the offsets are predicted without it; the link
// delays, which see half of it, with it.
func (rr *rackRun) scoreTimeSync(ctx context.Context, live []*node, ts *tsRack, quiet bool) {
	if quiet {
		return
	}
	r := rr.run
	top := rr.Golden()
	primaries := []string{ts.Primary}
	var failures []string
	for c := range ts.failedCables {
		failures = append(failures, c.Name())
	}
	for n := range ts.excluded {
		failures = append(failures, n.Name)
	}
	sort.Strings(failures)
	for _, n := range rr.nodes {
		if n.Name != ts.Primary && n.bootStatus() == bootOK {
			primaries = append(primaries, n.Name)
		}
	}
	for n := range ts.excluded {
		primaries = append([]string{n.Name}, primaries...)
	}
	sync := map[string]string{
		"interval_us": strconv.FormatFloat(float64(ts.IntervalNS)/1000, 'g', -1, 64), "phy_ns": strconv.FormatFloat(ts.phyNS, 'g', -1, 64),
		"valid_threshold_ns": strconv.Itoa(tsThresholdNS), "invalid_count": strconv.Itoa(tsFailLimit),
		"primary": strings.Join(dedupe(primaries), ","),
	}
	for k, v := range faultParams(rr.observedFaults()) {
		sync[k] = v
	}
	raw, err := rr.predict(top, sync)
	if err != nil {
		r.env.Error("bringup.timesync.golden", "", results.Params{"rack": rr.Name}, drivers.Setup("", "golden/bringup", "", err))
		return
	}
	comp := top
	comp.Links = append([]bringup.Link(nil), top.Links...)
	for i := range comp.Links {
		comp.Links[i].AsymmetryNS = 0
	}
	if len(failures) > 0 {
		sync["ts_fail"] = strings.Join(failures, ",")
	}
	exp, err := rr.predict(comp, sync)
	if err != nil {
		r.env.Error("bringup.timesync.golden", "", results.Params{"rack": rr.Name}, drivers.Setup("", "golden/bringup", "", err))
		return
	}
	rr.expect = exp
	rr.mu.Lock()
	rr.rawExpect = raw
	rr.mu.Unlock()
	// A tree re-rooted around failures is judged against the golden
	// model's re-rooted tree (its metrics under .reroot); the cases keep
	// the names they have on a rack without failures: the re-root is in
	// the measurement (its metric and text), not in the name.
	prefix, rerooted := "bringup.timesync", ""
	if len(failures) > 0 {
		prefix = "bringup.timesync.reroot"
		rerooted = "; re-rooted around " + strings.Join(failures, ", ")
	}
	const name = "bringup.timesync"
	rr.record(name+".primary", nil, results.Measurement{Metric: prefix + ".primary", Text: ts.Primary}, "")
	depth := 0
	for _, n := range live {
		depth = max(depth, n.ts.Depth)
	}
	rr.record(name+".tree_depth", nil, results.Measurement{Metric: prefix + ".tree_depth", Value: float64(depth), Unit: "hops", Text: strings.TrimPrefix(rerooted, "; ")}, "")
	for _, n := range live {
		p := results.Params{"board": n.Name}
		if n.ts.Depth < 0 {
			// Outside the tree (its stage fails, saying why): its
			// cases stay, skipped.
			why := "not measured: " + n.Name + " is outside the TimeSync tree (see bringup.timesync)"
			for _, c := range []string{"depth", "parent", "offset_ns"} {
				rr.skip(name+"."+c, n.Board, p, why)
			}
			rr.skip(name+".offset_bound_ns", n.Board, nil, why)
			continue
		}
		rr.record(name+".depth", n.Board, results.Measurement{Metric: prefix + ".depth", Params: p, Value: float64(n.ts.Depth), Unit: "hops", Text: strings.TrimPrefix(rerooted, "; ")}, "")
		if _, ok := exp[results.Key(prefix+".status", p)]; ok {
			rr.record(name+".status", n.Board, results.Measurement{Metric: prefix + ".status", Params: p, Text: n.ts.Status}, "")
		}
		if n.ts.Role != "client" {
			// The primary has no parent and is the offsets' reference.
			// Which board it is depends on the boards up (reading M2), so
			// every board keeps the client cases and the primary's are
			// skipped, saying why: a fault that moves the primary changes
			// which cases are skipped, not which cases there are.
			why := "not measured: " + n.Name + " is the TimeSync primary (reading M2): it has no parent, and the offsets are measured against it"
			for _, c := range []string{"parent", "offset_ns"} {
				rr.skip(name+"."+c, n.Board, p, why)
			}
			rr.skip(name+".offset_bound_ns", n.Board, nil, why)
			continue
		}
		rr.recordChoice(name+".parent", n.Board, results.Measurement{Metric: prefix + ".parent", Params: p,
			Value: 1, Text: "TimeSync from " + n.ts.Parent + ":" + n.Ports[n.ts.rx].Peer().Name + rerooted}, "parent", n.ts.Parent,
			fmt.Sprintf("%s's parent %s is not one the golden tree accepts (breadth-first from %s)", n.Name, n.ts.Parent, ts.Primary))
		if n.ts.Status == "synced" {
			rr.record(name+".offset_ns", n.Board, results.Measurement{Metric: prefix + ".offset_ns", Params: p, Value: n.ts.OffsetNS, Unit: "ns",
				Text: fmt.Sprintf("largest correction since TS_CLEAR (TS_MAX_CORR_PS); last correction %.3g ns (%.0f ppm against its parent)%s", n.ts.LastCorrNS, n.ts.DriftPPM, rerooted)}, "")
			rr.checkBound(prefix, n)
		} else {
			why := fmt.Sprintf("not measured: %s is %s, not synced (see bringup.timesync.status and bringup.timesync)", n.Name, n.ts.Status)
			rr.skip(name+".offset_ns", n.Board, p, why)
			rr.skip(name+".offset_bound_ns", n.Board, nil, why)
		}
	}
	rr.expect = raw
	for _, l := range ts.Links {
		if l.Err != "" {
			continue
		}
		c := rr.cable(l.Cable)
		if c == nil || c.LatencyNS <= 0 {
			continue
		}
		var b *Board
		if rr.run.judged(c.A.Board) {
			b = c.A.Board
		} else if rr.run.judged(c.B.Board) {
			b = c.B.Board
		} else {
			continue
		}
		rr.record("bringup.timesync.link_delay_ns", b, results.Measurement{Metric: "bringup.timesync.link_delay_ns", Params: results.Params{"link": l.Cable},
			Value: l.MeasuredNS, Unit: "ns", Text: "half the round trip, from " + l.From}, "")
	}
	clients := 0
	for _, n := range live {
		if n.ts.Role == "client" {
			clients++
		}
	}
	timed := live != nil && rr.primaryNode(live) != nil && rr.primaryNode(live).raw != nil
	if clients == 0 || !timed {
		// Nothing to converge, or an in-band primary that is not timed:
		// the note says so, nothing is judged.
	} else if !math.IsNaN(ts.ConvergeUS) && ts.ConvergeUS > 0 && len(failures) == 0 {
		rr.record("bringup.timesync.converge_us", nil, results.Measurement{Metric: "bringup.timesync.converge_us", Value: ts.ConvergeUS, Unit: "µs", Text: ts.ConvergeNote}, "")
	} else if len(failures) > 0 {
		// The convergence is the tree's from the primary's first message:
		// a tree re-rooted around failures has no such moment. The case
		// stays, skipped with the reason (the failures fail their own cases).
		rr.skip("bringup.timesync.converge_us", nil, nil, "not measured: the tree was re-rooted around "+strings.Join(failures, ", ")+
			" (see bringup.timesync.status and bringup.timesync.detect); convergence is timed from the first primary's first message only")
	} else if rr.judgedRack() && ts.ConvergeNote != "" {
		m := results.Measurement{Metric: "bringup.timesync.converge_us", Params: results.Params{"rack": rr.Name}, Text: ts.ConvergeNote}
		r.env.Check("bringup.timesync.converge_us", m, false, "every client locked on the primary's first message", "Aquila App. B.2", ts.ConvergeNote)
	}
	if rr.Design == "shoal" {
		rr.shoal(live, ts, sync)
	}
	rr.expect = exp
}

// checkBound checks the offset the hardware vouches for (the sum of the
// largest corrections along the path) against the golden bound at the
// board's depth for oscillators within the model's ±drift_ppm: a ceiling,
// not a band (golden/bringup's offset_bound_ns is the bound itself).
func (rr *rackRun) checkBound(prefix string, n *node) {
	if !rr.run.judged(n.Board) {
		return
	}
	e, ok := rr.expect[results.Key("bringup.timesync.offset_bound_ns", results.Params{"depth": strconv.Itoa(n.ts.Depth)})]
	if !ok {
		return
	}
	// The board's depth picks the bound, but the case is the board's: a
	// fault that moves it deeper in the tree changes its bound, not its
	// name (the depth is in the measurement's text and the expectation).
	m := results.Measurement{Board: n.Name, Metric: prefix + ".offset_bound_ns", Design: "mgmt", Value: n.ts.BoundNS, Unit: "ns",
		Params: results.Params{"rack": rr.Name}, Text: fmt.Sprintf("sum of TS_MAX_CORR_PS along the path from the primary, depth %d", n.ts.Depth)}
	rr.run.env.Check("bringup.timesync.offset_bound_ns", m, n.ts.BoundNS <= e.Value,
		fmt.Sprintf("at most %.4g ns (the golden bound at depth %d)", e.Value, n.ts.Depth), e.Source,
		fmt.Sprintf("the corrections along %s's path add up to %.4g ns, more than the %.4g ns the golden model allows at depth %d (%s)", n.Name, n.ts.BoundNS, e.Value, n.ts.Depth, e.Note))
}

func dedupe(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

func (rr *rackRun) cable(name string) *Cable {
	for _, c := range rr.Cables {
		if c.Name() == name {
			return c
		}
	}
	return nil
}

// ShoalSlot is what the calibration means for a Shoal rack (Shoal §3.4:
// guard band = reconfiguration delay + propagation variability + precision).
type ShoalSlot struct {
	PrecisionNS    float64 `json:"precision_ns"`
	ConfiguredNS   float64 `json:"configured_guard_ns"`
	MaxPrecisionNS float64 `json:"max_precision_ns"`
	GuardNS        float64 `json:"guard_ns"`
	SlotNS         float64 `json:"recommended_slot_ns"`
	SlotCycles     int     `json:"recommended_slot_cycles,omitempty"`
	Overhead       float64 `json:"overhead"`
	Preset         string  `json:"preset"`
}

// shoal turns the calibrated offsets into the synchronisation precision
// that enters the guard band, checks it against the guard the plan
// configures, and asks the golden arithmetic for the slot size that keeps
// the guard band near 10% (Shoal §3.4, §6.1, §7.1).
func (rr *rackRun) shoal(live []*node, ts *tsRack, sync map[string]string) {
	r := rr.run
	var bounds []float64
	for _, n := range live {
		if n.ts.Status == "synced" || n.ts.Status == "primary" {
			bounds = append(bounds, n.ts.OffsetNS)
		}
	}
	if len(bounds) == 0 {
		return
	}
	sort.Sort(sort.Reverse(sort.Float64Slice(bounds)))
	// Two boards may be off in opposite directions: the worst spread is
	// the two largest bounds, one ahead and one behind.
	spread := []float64{bounds[0]}
	if len(bounds) > 1 {
		spread = append(spread, -bounds[1])
	}
	prec, err := bringup.PrecisionNS(spread)
	if err != nil {
		return
	}
	sl := bringup.ShoalPrototype()
	preset := "prototype"
	if m, err := r.opts.Catalogue.Design("shoal"); err == nil && m.ClockMHz > 0 && math.Abs(1000/m.ClockMHz-bringup.ShoalCycleNS) > 1e-6 {
		sl, preset = bringup.ShoalRack(), "rack"
	}
	guard := float64(shoalGuardCycles(r.opts.Lab)) * sl.CycleNS
	set := map[string]string{"shoal": preset, "shoal_precision_ns": strconv.FormatFloat(prec, 'g', -1, 64)}
	if guard > 0 {
		set["shoal_guard_ns"] = strconv.FormatFloat(guard, 'g', -1, 64)
	}
	for k, v := range sync {
		set[k] = v
	}
	exp, err := rr.predict(rr.Golden(), set)
	if err != nil {
		r.env.Error("bringup.shoal.golden", "", results.Params{"rack": rr.Name}, drivers.Setup("", "golden/bringup", "", err))
		return
	}
	sl.PrecisionNS = prec
	plan, err := sl.Plan()
	if err != nil {
		return
	}
	s := &ShoalSlot{PrecisionNS: prec, ConfiguredNS: guard, GuardNS: plan.GuardNS, SlotNS: plan.SlotNS, SlotCycles: plan.SlotCycles, Overhead: plan.Overhead, Preset: preset}
	if e, ok := exp[results.Key("bringup.shoal.precision_ns", nil)]; ok && e.Max != nil {
		s.MaxPrecisionNS = *e.Max
	}
	ts.Shoal = s
	// The precision is reported against what the configured guard band
	// absorbs, not judged: the lab's Shoal design synchronises its slots
	// with its own protocol (docs/shoal.md, "Time sync", §6.1: precision
	// below a cycle); the management TimeSync's precision says which guard
	// band and slot a Shoal rack timed by it would need (reading M4, Shoal
	// §3.4).
	fits := s.MaxPrecisionNS <= 0 || prec <= s.MaxPrecisionNS
	verdict := "fits"
	if !fits {
		verdict = "does not fit"
	}
	r.info(results.Measurement{Metric: "bringup.shoal.precision_ns", Params: results.Params{"rack": rr.Name}, Value: prec, Unit: "ns",
		Text: fmt.Sprintf("largest spread of the calibrated offsets (the two largest, of opposite signs): %s the %.4g ns precision the configured %.4g ns guard band absorbs (golden/bringup, Shoal §3.4)",
			verdict, s.MaxPrecisionNS, guard)})
	r.info(results.Measurement{Metric: "bringup.shoal.slot_ns", Params: results.Params{"rack": rr.Name}, Value: plan.SlotNS, Unit: "ns",
		Text: fmt.Sprintf("recommended slot for about %.0f%% guard overhead with the calibrated precision: guard %.4g ns, %d cells, overhead %.3g (golden/bringup, Shoal §3.4)",
			sl.Target*100, plan.GuardNS, plan.Cells, plan.Overhead)})
	r.out.line("timesync", rr.Name, "Shoal", fmt.Sprintf("TimeSync precision %.3g ns (%s the %.4g ns the configured %.4g ns guard band absorbs); recommended slot %.4g ns (%d cycles) with a %.4g ns guard band, overhead %.1f%% (Shoal §3.4)",
		prec, verdict, s.MaxPrecisionNS, guard, plan.SlotNS, plan.SlotCycles, plan.GuardNS, plan.Overhead*100))
}

// tsResult is a board's TimeSync stage result.
func (rr *rackRun) tsResult(n *node, ts *tsRack, err error) *StageResult {
	if err != nil {
		return fail("the board's TimeSync registers answer", "the path to the board", err)
	}
	if n.bootStatus() != bootOK || !n.reachable() {
		return &StageResult{Status: Blocked, Summary: "not bootstrapped: outside the time-distribution tree"}
	}
	t := n.ts
	var bad, checks []string
	if t.Role != "off" && !rr.ancestorOff(n, ts) {
		// A board below a parent that is off follows that parent's time
		// (it steps to it every interval): its own clients drift from it
		// too, and only the topmost such board is the one to blame.
		if ppm, kids, ok := rr.oscillatorOff(n, ts); ok {
			bad = append(bad, fmt.Sprintf("its clock runs about %s: all %d clients it feeds drift from it the same way, by more than the 100 ppm an oscillator may", slowFast(ppm), kids))
			checks = append(checks, rr.oscillatorNote(n, ppm, kids))
		}
	}
	switch {
	case t.Role == "off" && ts.excluded[n]:
		bad = append(bad, fmt.Sprintf("as the primary it sent no TimeSync message its clients accepted: every client under it counted missed messages (TS_MISSED) and failed; the tree was re-rooted at %s", ts.Primary))
		checks = append(checks, "its TimeSync transmitter (TS_TX_COUNT, TS_CTRL) and its clock")
	case t.Role == "off":
		bad = append(bad, "no working cable path from the primary "+ts.Primary)
		checks = append(checks, "its cables (latency measurement errors)")
	}
	if t.SenderErr != "" {
		bad = append(bad, t.SenderErr)
		checks = append(checks, "its TimeSync transmitter (TS_CTRL, TS_TX_PORTS, TS_TX_COUNT)")
	}
	if t.Role == "client" {
		if t.Status != "synced" {
			bad = append(bad, fmt.Sprintf("%s (LOCKED %v, FAILED %v, %d valid, %d invalid, %d missed messages)", t.Status, t.Locked, t.Failed, t.RxValid, t.RxInvalid, t.Missed))
			checks = append(checks, fmt.Sprintf("its receive cable %s and its clock", n.Ports[t.rx]))
		}
		if e, ok := rr.expect[results.Key(prefixOf(ts)+".offset_ns", results.Params{"board": n.Name})]; ok && t.Status == "synced" {
			lo, hi := e.Bounds()
			if t.OffsetNS < lo || t.OffsetNS > hi {
				bad = append(bad, fmt.Sprintf("offset from the primary up to %.3g ns (its largest correction, TS_MAX_CORR_PS), golden band [%.3g, %.3g] ns at depth %d",
					t.OffsetNS, lo, hi, t.Depth))
				checks = append(checks, rr.driftCheck(n, ts))
			}
		}
		if e, ok := rr.expect[results.Key("bringup.timesync.offset_bound_ns", results.Params{"depth": strconv.Itoa(t.Depth)})]; ok && t.Status == "synced" && t.BoundNS > e.Value {
			bad = append(bad, fmt.Sprintf("the corrections along its path add up to %.3g ns, above the golden bound of %.3g ns at depth %d", t.BoundNS, e.Value, t.Depth))
			checks = append(checks, rr.driftCheck(n, ts))
		}
	}
	for _, l := range ts.Links {
		c := rr.cable(l.Cable)
		if c == nil || (c.A.Board != n.Board && c.B.Board != n.Board) {
			continue
		}
		if l.Err != "" {
			bad = append(bad, fmt.Sprintf("cable %s: %s", l.Cable, l.Err))
			checks = append(checks, fmt.Sprintf("the cable %s (unplugged, cut, peer off)", l.Cable))
			continue
		}
		if e, ok := rr.linkExp(l.Cable); ok && c.LatencyNS > 0 {
			lo, hi := e.Bounds()
			if l.MeasuredNS < lo || l.MeasuredNS > hi {
				bad = append(bad, fmt.Sprintf("cable %s measures %.4g ns, the lab file's %.4g ns latency and %.4g ns asymmetry mean %.4g ns",
					l.Cable, l.MeasuredNS, c.LatencyNS, c.AsymmetryNS, l.LabNS))
				checks = append(checks, fmt.Sprintf("the cable %s: a longer or asymmetric cable (%.3g ns more one way, if asymmetric, puts a client behind it off by half of it, which no register shows); fix latency_ns/asymmetry_ns in the lab file or the cable",
					l.Cable, 2*(l.MeasuredNS-l.LabNS)))
			}
		}
	}
	if len(bad) > 0 {
		return &StageResult{Status: Failed, Class: drivers.ClassDesign.String(), Expected: "locked within the golden offset bound, cables as long as the lab file says",
			Seen: strings.Join(bad, "; "), Check: strings.Join(dedupe(checks), "; "), Summary: firstLine(bad[0])}
	}
	switch t.Role {
	case "primary":
		if math.IsNaN(ts.ConvergeUS) {
			return ok("primary, %d clients below it (convergence not measured: %s)", len(t.kids), ts.ConvergeNote)
		}
		return ok("primary, %d clients below it, convergence %.4g µs", len(t.kids), ts.ConvergeUS)
	}
	return ok("depth %d under %s via %s (delay %.4g ns), offset ≤ %.3g ns (path bound %.3g ns), drift %.0f ppm against %s", t.Depth, t.Parent, t.RxPort, t.DelayNS, t.OffsetNS, t.BoundNS, t.DriftPPM, t.Parent)
}

// driftCheck names what to check on the bench for a board whose offset is
// out of bounds: the board on its path (itself included) with the largest
// corrections, and its oscillator when the corrections mean a drift far
// beyond the lab's clocks.
func (rr *rackRun) driftCheck(n *node, ts *tsRack) string {
	// A board whose every client drifts from it the same way is the one
	// off (a client alone cannot tell its own fast clock from a slow
	// parent): the one nearest the primary on n's path is named first, so
	// that a slow primary is not blamed on the clients below it.
	var culprit *node
	var cppm float64
	var ckids int
	for x := n; x != nil; x = x.ts.parent {
		if ppm, kids, ok := rr.oscillatorOff(x, ts); ok {
			culprit, cppm, ckids = x, ppm, kids
		}
		if x.ts.Role != "client" {
			break
		}
	}
	if culprit != nil {
		return rr.oscillatorNote(culprit, cppm, ckids)
	}
	// A client steps to its parent's time, so a parent's large steps show
	// in its children's corrections too: what a board's own oscillator adds
	// is the excess of its largest correction over its parent's.
	excess := func(x *node) float64 {
		if p := x.ts.parent; p != nil && p.ts.Role == "client" {
			return x.ts.MaxCorrNS - p.ts.MaxCorrNS
		}
		return x.ts.MaxCorrNS
	}
	worst := n
	for x := n; x != nil && x.ts.Role == "client"; x = x.ts.parent {
		if excess(x) > excess(worst) {
			worst = x
		}
	}
	I := float64(ts.IntervalNS)
	if I <= 0 {
		I = 100_000
	}
	ppm := excess(worst) / I * 1e6
	if ppm > 100 {
		declared := "the lab file declares no oscillator error for it"
		if e := worst.Cfg.Emulated; e != nil {
			declared = fmt.Sprintf("the lab file declares %g ppm", e.ClockPPM)
		}
		return fmt.Sprintf("the oscillator of %s: its corrections reach %.3g ns every %.0f ns interval, %.3g ns more than its parent %s's: about %.0f ppm off it (%s)",
			worst.Name, worst.ts.MaxCorrNS, I, excess(worst), worst.ts.Parent, ppm, declared)
	}
	return fmt.Sprintf("the clocks on its path (largest own corrections at %s: %.3g ns) and its receive cable", worst.Name, worst.ts.MaxCorrNS)
}

// oscillatorOff says whether p's oscillator, rather than its clients',
// is off: at least two synced clients receive from it and every one of them
// drifts from it by more than 100 ppm (the model's oscillator bound) in the
// same direction. ppm is p's rate error against them (the mean of their
// drifts, sign turned: negative, p is slow).
func (rr *rackRun) oscillatorOff(p *node, ts *tsRack) (ppm float64, kids int, ok bool) {
	sum, sign := 0.0, 0.0
	for _, c := range rr.nodes {
		if c.ts.parent != p || c.ts.Role != "client" || c.ts.Status != "synced" {
			continue
		}
		d := c.ts.DriftPPM
		if math.Abs(d) <= 100 || (sign != 0 && math.Signbit(d) != math.Signbit(sign)) {
			return 0, 0, false
		}
		sign = d
		sum += d
		kids++
	}
	if kids < 2 {
		return 0, 0, false
	}
	return -sum / float64(kids), kids, true
}

// ancestorOff says whether a board above n in the tree has its oscillator
// off (oscillatorOff).
func (rr *rackRun) ancestorOff(n *node, ts *tsRack) bool {
	for x := n.ts.parent; x != nil; x = x.ts.parent {
		if _, _, ok := rr.oscillatorOff(x, ts); ok {
			return true
		}
		if x.ts.Role != "client" {
			break
		}
	}
	return false
}

func (rr *rackRun) oscillatorNote(p *node, ppm float64, kids int) string {
	declared := "the lab file declares no oscillator error for it"
	if e := p.Cfg.Emulated; e != nil {
		declared = fmt.Sprintf("the lab file declares %g ppm", e.ClockPPM)
	}
	name := p.Name
	if p.ts.Role == "primary" {
		name += " (the TimeSync primary)"
	}
	return fmt.Sprintf("the oscillator of %s: every one of the %d clients it feeds drifts from it the same way, so it runs about %s (%s)",
		name, kids, slowFast(ppm), declared)
}

// slowFast renders a rate error: "490 ppm slow", "120 ppm fast".
func slowFast(ppm float64) string {
	if ppm < 0 {
		return fmt.Sprintf("%.0f ppm slow", -ppm)
	}
	return fmt.Sprintf("%.0f ppm fast", ppm)
}

func prefixOf(ts *tsRack) string {
	if len(ts.failedCables) > 0 || len(ts.excluded) > 0 {
		return "bringup.timesync.reroot"
	}
	return "bringup.timesync"
}

// linkExp finds a cable's golden delay in the predictions made with the
// lab's raw cables (kept by scoreTimeSync).
func (rr *rackRun) linkExp(name string) (results.Expectation, bool) {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	e, ok := rr.rawExpect[results.Key("bringup.timesync.link_delay_ns", results.Params{"link": name})]
	return e, ok
}

// goldenWaves is the golden bootstrap order of a rack, given the boards
// it lost.
func goldenWaves(rr *rackRun) ([][]string, error) {
	plan, err := bringup.Bootstrap(rr.Golden(), rr.observedFaults())
	if err != nil {
		return nil, err
	}
	return plan.Waves, nil
}

// shoalGuardCycles is the guard band, in cycles, of the lab's Shoal plan, its
// default included: the plan's decoded parameters, as the plan's setup reads
// them (0 without a Shoal plan or with one that does not decode).
func shoalGuardCycles(lab *labconfig.Lab) int {
	for i := range lab.Plans {
		p := &lab.Plans[i]
		if p.Design != "shoal" {
			continue
		}
		if d, err := selftest.DecodePlan(p); err == nil {
			if gb, ok := d.Plan.(interface{ GuardBandCycles() int }); ok {
				return gb.GuardBandCycles()
			}
		}
	}
	return 0
}
