package tin

import (
	"context"
	"fmt"
	"math"
	"strconv"

	"github.com/labrunner/labrunner/drivers"
	gor "github.com/labrunner/labrunner/golden/ordering"
	gt "github.com/labrunner/labrunner/golden/tin"
	"github.com/labrunner/labrunner/results"
	"github.com/labrunner/labrunner/selftest"
	tt "github.com/labrunner/labrunner/traffic/tin"
)

// orderingMode is one kind of transfer the ordering test runs.
type orderingMode struct {
	name            string
	sync, eod, slow bool
}

var orderingModes = map[string]orderingMode{
	"ordered":     {name: "ordered"},
	"ordered-eod": {name: "ordered-eod", eod: true},
	"slow":        {name: "slow", slow: true},
	"slow-eod":    {name: "slow-eod", slow: true, eod: true},
	"sync":        {name: "sync", sync: true},
}

// streamsRun is what one run of stream traffic left behind.
type streamsRun struct {
	target  string
	sources []string
	records []tt.StreamRecord
	execs   []tt.Execution
	rr      tt.RunResult
}

// runStreams loads the stream generators, runs the fabric and reads the
// sources' stream records and the target's delivery log.
func runStreams(ctx context.Context, c *clique, s tt.Streams, knobs map[string]tt.Writes) (*streamsRun, error) {
	ws, _, err := s.Writes(c.topo)
	if err != nil {
		return nil, err
	}
	if err := c.r.Load(ctx, knobs); err != nil {
		return nil, err
	}
	if err := c.r.Load(ctx, ws); err != nil {
		return nil, err
	}
	rr, err := c.run(ctx)
	if err != nil {
		return nil, err
	}
	out := &streamsRun{target: s.Target, sources: s.Sources, rr: rr}
	for _, src := range s.Sources {
		recs, err := c.r.Streams(ctx, src)
		if err != nil {
			return nil, err
		}
		out.records = append(out.records, recs...)
	}
	if out.execs, err = c.r.Executions(ctx, s.Target); err != nil {
		return nil, err
	}
	return out, nil
}

// golden turns the run into golden/ordering's terms: one Stream per stream
// record (source board, mode, length, EOD), the executions of the delivery
// log mapped onto them, and which streams finished. Executions of no known
// stream are returned as problems.
func (sr *streamsRun) golden(c *clique) ([]gor.Stream, []gor.Exec, []bool, []string) {
	srcIndex := map[string]int{}
	for i, s := range sr.sources {
		srcIndex[s] = i
	}
	type key struct {
		node tt.Node
		tag  uint16
	}
	index := map[key]int{}
	var streams []gor.Stream
	var complete []bool
	for _, r := range sr.records {
		mode := gor.Fast
		switch {
		case r.Flags&tt.ORecSync != 0:
			mode = gor.Sync
		case r.Flags&(tt.ORecSlow|tt.ORecNoCID) != 0:
			mode = gor.Slow
		}
		index[key{c.topo.Node[r.Board], r.Tag}] = len(streams)
		streams = append(streams, gor.Stream{Src: srcIndex[r.Board], Mode: mode, N: r.Len, EOD: r.Flags&tt.ORecEOD != 0})
		complete = append(complete, r.ClosedNS != 0)
	}
	var execs []gor.Exec
	var problems []string
	for _, e := range sr.execs {
		i, ok := index[key{e.Src.Node(), e.Tag}]
		if !ok {
			problems = append(problems, fmt.Sprintf("an execution of %s tag %d SEQ %d belongs to no stream a source recorded", e.Src, e.Tag, e.Seq))
			continue
		}
		execs = append(execs, gor.Exec{Stream: i, Seq: e.Seq})
	}
	return streams, execs, complete, problems
}

// targetsOf resolves the boards an ordering test targets: every board of
// the Clique by default, a nightly rotation (targets: k), or the boards
// named (targets: [...], or the older single target:). A fault of one
// board's ordering engine must not escape because only the plan's last
// board was ever a target.
func targetsOf(env *selftest.Env, c *clique) (selftest.Rotation, error) {
	prm, err := selftest.ParamsOf[targetedOrdering](env)
	if err != nil {
		return selftest.Rotation{}, err
	}
	if v := prm.ordering().Target; v != nil {
		t, err := boardParam(env, c, "target", v, "")
		if err != nil {
			return selftest.Rotation{}, err
		}
		return selftest.Rotation{Boards: []string{t}, Nights: 1}, nil
	}
	rot, err := env.Targets(c.all.Boards, env.PlanStart())
	if err != nil {
		return rot, drivers.Setup("", env.Test.Pos.String(), "", err)
	}
	return rot, nil
}

// streamSources reads the sources of an ordering test towards target,
// drawn from the plan's Clique (a source that left the plan is not
// replaced: the target's cases are reported, naming it).
func streamSources(env *selftest.Env, c *clique, target string) ([]string, uint64, error) {
	prm, err := selftest.ParamsOf[targetedOrdering](env)
	if err != nil {
		return nil, 0, err
	}
	n := prm.ordering().Sources
	seed, err := c.seedOf(env)
	if err != nil {
		return nil, 0, err
	}
	_, srcs, err := tt.Incast(c.all, target, n, seed)
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", env.Test.Pos, err)
	}
	return srcs, seed, nil
}

// runOrdering runs each transfer mode under the ordering knobs (REQ loss at
// the target, ACK loss and injection jitter at the sources, a fixed drop
// pattern) and judges the target's delivery log with golden/ordering's
// CheckLog: ordered streams' first executions in issue order, no REQ of an
// exactly-once stream (or any synchronization operation) executed twice,
// every synchronization operation after all of its data, every finished
// stream executed entirely (SC'18 §III-D, §III-E).
func runOrdering(ctx context.Context, env *selftest.Env) error {
	c, err := cliqueOf(env)
	if err != nil {
		return err
	}
	prm, err := selftest.ParamsOf[orderingParams](env)
	if err != nil {
		return err
	}
	modes := prm.Modes
	rot, err := targetsOf(env, c)
	if err != nil {
		return err
	}
	perSource, lengths, conc := prm.Streams, prm.Lengths, prm.Concurrent
	knob := map[string]int{"loss_req_ppm": prm.LossReqPPM, "loss_ack_ppm": prm.LossAckPPM, "drop_every": prm.DropEvery, "jitter_ns": prm.JitterNS}
	for _, name := range modes {
		if _, ok := orderingModes[name]; !ok {
			return fmt.Errorf("%s: ordering mode %q: want one of ordered, ordered-eod, slow, slow-eod, sync", env.Test.Pos, name)
		}
	}
	stress := knob["loss_req_ppm"] > 0 || knob["loss_ack_ppm"] > 0 || knob["drop_every"] > 0
	for _, target := range rot.Boards {
		srcs, seed, err := streamSources(env, c, target)
		if err != nil {
			return err
		}
		if !c.up(append([]string{target}, srcs...)...) {
			continue // the runner reports the target's cases (orderingCases)
		}
		knobs := map[string]tt.Writes{target: {tt.Set("ORD_LOSS_REQ_PPM", uint32(knob["loss_req_ppm"])), tt.Set("ORD_DROP_EVERY", uint32(knob["drop_every"]))}}
		for _, s := range srcs {
			knobs[s] = tt.Writes{tt.Set("ORD_LOSS_ACK_PPM", uint32(knob["loss_ack_ppm"])), tt.Set("ORD_JITTER_NS", uint32(knob["jitter_ns"]))}
		}
		if err := orderingOn(ctx, env, c, target, srcs, seed, rot, modes, perSource, lengths, conc, knobs, stress); err != nil {
			env.Error("ordering", target, results.Params{"target": target}, err)
		}
	}
	return nil
}

// orderingOn runs every mode of the ordering test towards one target.
func orderingOn(ctx context.Context, env *selftest.Env, c *clique, target string, srcs []string, seed uint64, rot selftest.Rotation,
	modes []string, perSource int, lengths []int, conc int, knobs map[string]tt.Writes, stress bool) error {
	for _, name := range modes {
		om := orderingModes[name]
		p := results.Params{"mode": om.name, "target": target}
		if err := c.fresh(ctx); err != nil {
			return err
		}
		sr, err := runStreams(ctx, c, tt.Streams{Target: target, Sources: srcs, PerSource: perSource, Lengths: lengths, Bytes: 64,
			Concurrent: conc, Sync: om.sync, EOD: om.eod, Slow: om.slow, Seed: seed}, knobs)
		if err != nil {
			return err
		}
		runStatus(env, "ordering", sr.rr, p, "ordering streams, mode "+om.name)
		judgeLog(env, c, "ordering", sr, p, len(srcs)*perSource)
		if stress {
			lost, err := c.r.Sum(ctx, "ORD_DROPPED_REQ", target)
			if err != nil {
				return err
			}
			lostAck, err := c.r.Sum(ctx, "ORD_DROPPED_ACK", srcs...)
			if err != nil {
				return err
			}
			retx, err := c.r.Sum(ctx, "ORD_RETX", srcs...)
			if err != nil {
				return err
			}
			env.Check("ordering.stress", results.Measurement{Board: target, Params: p, Metric: "tin.ord.lost", Value: float64(lost + lostAck), Unit: "packets",
				Text: fmt.Sprintf("%d REQs and %d ACKs dropped by the knobs, %d retransmissions", lost, lostAck, retx)},
				lost+lostAck > 0 && retx > 0, "REQs or ACKs lost and retransmitted", "test setup (ORD_* knobs, docs/tin.md)",
				"the loss knobs dropped nothing, or nothing was retransmitted: the run did not test recovery from loss")
		}
	}
	return nil
}

// judgeLog records CheckLog's verdict on a run's delivery log, and that
// every stream the sources were given completed.
func judgeLog(env *selftest.Env, c *clique, name string, sr *streamsRun, p results.Params, want int) {
	streams, execs, complete, problems := sr.golden(c)
	bad := append(problems, gor.CheckLog(streams, execs, complete)...)
	released := 0
	for _, e := range sr.execs {
		if e.Flags&tt.DLogReleased != 0 {
			released++
		}
	}
	m := results.Measurement{Board: sr.target, Params: p, Metric: "tin.ord.log_violations", Value: float64(len(bad)), Unit: "violations",
		Text: fmt.Sprintf("%d executions of %d streams", len(execs), len(streams))}
	if len(bad) > 0 {
		m.Text += ": " + firstLines(bad, 3)
	}
	msg := fmt.Sprintf("%s's delivery log breaks SC'18 §III in %d places (golden/ordering.CheckLog): %s", sr.target, len(bad), firstLines(bad, 4))
	if released > 0 {
		msg += fmt.Sprintf("; %d executions were released from the reorder buffer before their predecessors arrived", released)
	}
	env.Check(name, m, len(bad) == 0, "every stream's executions as its mode guarantees (order, exactly once, synchronization after data)",
		"SC'18 §III-D, §III-E (golden/ordering.CheckLog)", msg)
	done := 0
	for _, ok := range complete {
		if ok {
			done++
		}
	}
	env.Check(name+".complete", results.Measurement{Board: sr.target, Params: p, Metric: "tin.ord.streams_done", Value: float64(done), Unit: "streams",
		Text: fmt.Sprintf("%d stream records, %d closed", len(complete), done)}, len(complete) == want && done == want,
		fmt.Sprintf("%d streams closed by FIN-ACK", want), "SC'18 §III-D2 (FIN/FIN-ACK closes every stream)",
		fmt.Sprintf("%d of %d streams recorded as closed: streams did not complete", done, want))
}

// runFallback runs more concurrent fast streams than the target has
// receiver connections (SC'18 §IV-D's last experiment: two): the streams
// that find none are NACKed and fall back to slow mode (§III-C) as many as
// golden/ordering.Run predicts for the same streams, the log stays
// correct, and the target never holds more than its connections.
func runFallback(ctx context.Context, env *selftest.Env) error {
	return eachTarget(ctx, env, fallbackOn)
}

// fallbackOn runs the test towards one target.
func fallbackOn(ctx context.Context, env *selftest.Env, c *clique, target string) error {
	srcs, seed, err := streamSources(env, c, target)
	if err != nil {
		return err
	}
	prm, err := selftest.ParamsOf[fallbackParams](env)
	if err != nil {
		return err
	}
	length, conns := prm.Length, prm.Conns
	if err := c.fresh(ctx); err != nil {
		return err
	}
	// The reference plays the declared reorder buffer and window (the
	// registers test judges each board's ORD_ROB_ENTRIES and
	// ORD_MAX_OUTSTANDING against them, reading O60).
	rob, window := int(c.decl["rob_entries"]), int(c.decl["max_outstanding"])
	p := results.Params{"conns": strconv.Itoa(conns), "sources": strconv.Itoa(len(srcs)), "target": target}
	sr, err := runStreams(ctx, c, tt.Streams{Target: target, Sources: srcs, PerSource: 1, Lengths: []int{length}, Bytes: 64, Concurrent: 1, Seed: seed},
		map[string]tt.Writes{target: {tt.Set("ORD_TGT_CONNS", uint32(conns))}})
	if err != nil {
		return err
	}
	runStatus(env, "fallback", sr.rr, p, "fast streams beyond the receiver connections")
	judgeLog(env, c, "fallback.log", sr, p, len(srcs))
	// golden/ordering plays the same streams: one per source, started
	// together, in order, without loss.
	gs := make([]gor.Stream, len(srcs))
	for i := range gs {
		gs[i] = gor.Stream{Src: i, Mode: gor.Fast, N: length}
	}
	ref, err := gor.Run(gor.Config{Target: gor.TargetConfig{Conns: conns, ROB: rob}, Window: window}, gs, nil)
	if err != nil {
		return err
	}
	want := 0
	for _, s := range ref.Streams {
		if s.FellBack {
			want++
		}
	}
	fell, err := c.r.Sum(ctx, "ORD_FALLBACKS", srcs...)
	if err != nil {
		return err
	}
	nacks, err := c.r.Read(ctx, target, "ORD_NACK_NOCONN")
	if err != nil {
		return err
	}
	env.Record("fallback", results.Measurement{Board: target, Params: p, Metric: "ordering.fallbacks", Value: float64(fell), Unit: "streams",
		Text: fmt.Sprintf("%d NACKs for want of a connection (ORD_NACK_NOCONN)", nacks)},
		results.Expectation{Metric: "ordering.fallbacks", Value: float64(want), Unit: "streams", Source: "SC'18 §III-C, §IV-D (golden/ordering.Run)",
			Budget: "exact: a count of streams, the sources' ORD_FALLBACKS summed",
			Note:   fmt.Sprintf("%d fast streams of %d REQs started together against %d receiver connections: the reference falls back %d to slow mode", len(srcs), length, conns, want)})
	env.Check("fallback.nack", results.Measurement{Board: target, Params: p, Metric: "tin.ord.nack_noconn", Value: float64(nacks), Unit: "NACKs"},
		nacks > 0 || len(srcs) <= conns, "NACKs (no connection) for the streams beyond the connections", "SC'18 §III-C",
		fmt.Sprintf("%d streams against %d connections, but %s sent no NACK for want of a connection", len(srcs), conns, target))
	es, err := gor.Model{}.Predict(map[string]string{"conns": strconv.Itoa(conns), "cases": "", "lengths": "", "latency_modes": ""})
	if err != nil {
		return err
	}
	hwm, err := c.r.Read(ctx, target, "ORD_CONN_HWM")
	if err != nil {
		return err
	}
	if e, ok := expectation(es, "ordering.connections", results.Params{"conns": strconv.Itoa(conns)}); ok {
		env.Record("fallback.connections", results.Measurement{Board: target, Params: p, Metric: "ordering.connections", Value: float64(hwm), Unit: "connections"}, e)
	} else {
		env.Error("fallback.connections", target, p, fmt.Errorf("golden/ordering predicted no ordering.connections for %d connections", conns))
	}
	return nil
}

// runROB streams ordered transfers under reordering (adaptive routing and
// injection jitter) and scores the target's peak reorder-buffer occupancy
// against golden/ordering's skew-sized capacity (SC'18 §IV-D): the skew is
// the spread of golden/tin's unloaded latencies over every route an ordering
// REQ may take from a source to the target, plus the jitter; a packet's
// time is an OREQ cell's serialization on a link.
func runROB(ctx context.Context, env *selftest.Env) error {
	return eachTarget(ctx, env, robOn)
}

// robOn runs the test towards one target.
func robOn(ctx context.Context, env *selftest.Env, c *clique, target string) error {
	srcs, seed, err := streamSources(env, c, target)
	if err != nil {
		return err
	}
	prm, err := selftest.ParamsOf[robParams](env)
	if err != nil {
		return err
	}
	perSource, length, jitter, buffer, gapParam := prm.Streams, prm.Length, prm.JitterNS, prm.BufferPackets, prm.GapNS
	if err := c.fresh(ctx); err != nil {
		return err
	}
	rmaTC := int(c.decl["rma_tc_ord"]) // declared, reading A60
	oreq := oreqBytes(c.timing)
	pl := c.plan
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range srcs {
		rs, err := pl.Clique.Routes(goldenAddr(c.topo.Node[s].Addr()), goldenAddr(c.topo.Node[target].Addr()), gt.FullyAdaptive, rmaTC)
		if err != nil {
			return err
		}
		for _, path := range rs.All() {
			l := pl.Timing.CellLatency(path, oreq)
			lo, hi = math.Min(lo, l), math.Max(hi, l)
		}
	}
	skew := hi - lo + float64(jitter)
	packetNS := pl.Timing.Serialization(oreq, gt.Local)
	gap, err := robGap(pl, c.timing, gapParam)
	if err != nil {
		return fmt.Errorf("%s: %w", env.Test.Pos, err)
	}
	g := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	es, err := gor.Model{}.Predict(map[string]string{"skew_ns": g(skew), "packet_ns": g(packetNS), "buffer_packets": strconv.Itoa(buffer),
		"cases": "", "lengths": "", "latency_modes": ""})
	if err != nil {
		return err
	}
	knobs := map[string]tt.Writes{}
	for _, s := range srcs {
		knobs[s] = tt.Writes{tt.Set("ORD_JITTER_NS", uint32(jitter))}
	}
	p := results.Params{"target": target, "sources": strconv.Itoa(len(srcs)), "jitter_ns": strconv.Itoa(jitter), "gap_ns": strconv.Itoa(gap)}
	sr, err := runStreams(ctx, c, tt.Streams{Target: target, Sources: srcs, PerSource: perSource, Lengths: []int{length}, Bytes: robReqBytes,
		Concurrent: 1, GapNS: gap, Seed: seed}, knobs)
	if err != nil {
		return err
	}
	runStatus(env, "rob_occupancy", sr.rr, p, "ordered streams under reordering")
	judgeLog(env, c, "rob_occupancy.log", sr, p, len(srcs)*perSource)
	hwm, err := c.r.Read(ctx, target, "ORD_ROB_HWM")
	if err != nil {
		return err
	}
	inserts, err := c.r.Read(ctx, target, "ORD_ROB_INSERTS")
	if err != nil {
		return err
	}
	env.Check("rob_occupancy.reordered", results.Measurement{Board: target, Params: p, Metric: "tin.ord.rob_inserts", Value: float64(inserts), Unit: "REQs"},
		inserts > 0, "REQs arrived out of order and waited in the reorder buffer", "SC'18 §IV-D (adaptive routing reorders)",
		"no REQ waited in the reorder buffer: nothing was reordered, so the occupancy bound was not exercised (raise jitter_ns)")
	e, ok := expectation(es, "ordering.rob.occupancy", results.Params{})
	if !ok {
		return fmt.Errorf("golden/ordering predicted no ordering.rob.occupancy")
	}
	e.Note += fmt.Sprintf("; skew %.0f ns = %.0f ns route spread (golden/tin, %d-byte OREQ cells, class %d) + %d ns jitter, %.1f ns per packet, REQs %d ns apart",
		skew, hi-lo, oreq, rmaTC, jitter, packetNS, gap)
	env.Record("rob_occupancy", results.Measurement{Board: target, Params: p, Metric: "ordering.rob.occupancy", Value: float64(hwm), Unit: "packets",
		Text: fmt.Sprintf("%d REQs waited in the buffer", inserts)}, e)
	return nil
}

// robReqBytes is the data of each REQ of rob_occupancy's streams.
const robReqBytes = 64

// oreqBytes is an ordering REQ cell of rob_occupancy: 24 B of header and
// REQ fields and its data.
func oreqBytes(tm tt.Timing) int { return int(tm.CellMax-tm.OReqMax) + robReqBytes }

// robGap is the gap between a source's REQs in rob_occupancy (its gap_ns):
// §IV-D's sources inject "bursts of back-to-back packets" at the full
// link rate; a TiN endpoint injects at 4x a link's rate (100 Gb/s into
// 25 Gb/s links) and would queue its own REQs at its outputs, a
// congestion delay §IV-D leaves out of the sizing (its footnote 12). By
// default ("link") REQs leave one link packet time apart (OG_GAP_NS),
// golden/tin's serialization of the REQ cell on a local link.
func robGap(pl *gt.Plan, tm tt.Timing, param string) (int, error) {
	if param == "link" {
		return int(math.Ceil(pl.Timing.Serialization(oreqBytes(tm), gt.Local))), nil
	}
	gap, err := strconv.Atoi(param)
	if err != nil || gap < 0 {
		return 0, fmt.Errorf("gap_ns %q: want \"link\" or a number of ns", param)
	}
	return gap, nil
}

// runROBSkew drives a reorder-buffer skew the runner controls to every
// target: each source runs one fast stream of 2w-1 REQs (w the declared
// window, ORD_MAX_OUTSTANDING) and the target discards the first arrival
// of SEQ w-1 of each (ORD_DROP_EVERY = w), so every stream holds the w-1
// REQs behind it in the reorder buffer until its timeout resends it — with
// two sources 48 REQs at once, a skew the declared 50-entry buffer absorbs
// (SC'18 §IV-D: "a reorder buffer of 50 packets", Fig. 12c's window of
// half of it). golden/ordering.Run plays the same streams against the
// declared buffer and window (DropEvery) and gives the peak occupancy, the
// NACKs for a full buffer and the streams that fall back to slow mode
// (reading O61).
func runROBSkew(ctx context.Context, env *selftest.Env) error {
	return eachTarget(ctx, env, robSkewOn)
}

// robSkewOn runs the test towards one target.
func robSkewOn(ctx context.Context, env *selftest.Env, c *clique, target string) error {
	srcs, seed, err := streamSources(env, c, target)
	if err != nil {
		return err
	}
	// The reference plays the declared reorder buffer and window (the
	// registers test judges each board's ORD_ROB_ENTRIES and
	// ORD_MAX_OUTSTANDING against them, reading O60).
	rob, window := int(c.decl["rob_entries"]), int(c.decl["max_outstanding"])
	prm, err := selftest.ParamsOf[robSkewParams](env)
	if err != nil {
		return err
	}
	every, length := robSkewShape(prm, window)
	if every < 1 || length < every {
		return fmt.Errorf("%s: drop_every %d, length %d: want drop_every >= 1 and length >= drop_every (a stream must reach its dropped REQ)", env.Test.Pos, every, length)
	}
	gs := make([]gor.Stream, len(srcs))
	for i := range gs {
		gs[i] = gor.Stream{Src: i, Mode: gor.Fast, N: length}
	}
	net := &gor.DropEvery{N: every}
	ref, err := gor.Run(gor.Config{Target: gor.TargetConfig{ROB: rob}, Window: window}, gs, net)
	if err != nil {
		return err
	}
	if ref.Stalled != "" {
		return fmt.Errorf("golden/ordering.Run with a %d-REQ buffer, window %d, drop every %d: %s", rob, window, every, ref.Stalled)
	}
	sum := gor.Summarize(ref)
	if err := c.fresh(ctx); err != nil {
		return err
	}
	p := results.Params{"target": target, "sources": strconv.Itoa(len(srcs)), "drop_every": strconv.Itoa(every), "length": strconv.Itoa(length)}
	sr, err := runStreams(ctx, c, tt.Streams{Target: target, Sources: srcs, PerSource: 1, Lengths: []int{length}, Bytes: 64, Concurrent: 1, Seed: seed},
		map[string]tt.Writes{target: {tt.Set("ORD_DROP_EVERY", uint32(every))}})
	if err != nil {
		return err
	}
	runStatus(env, "rob_skew", sr.rr, p, "fast streams each holding a window behind a dropped REQ")
	judgeLog(env, c, "rob_skew.log", sr, p, len(srcs))
	src := fmt.Sprintf("SC'18 §III-D2, §IV-D (golden/ordering.Run: %d-REQ buffer, window %d, DropEvery %d)", rob, window, every)
	setup := fmt.Sprintf("%d sources, one fast stream of %d REQs each, the first arrival of SEQ %d, %d, ... discarded at the target", len(srcs), length, every-1, 2*every-1)
	dropped, err := c.r.Read(ctx, target, "ORD_DROPPED_REQ")
	if err != nil {
		return err
	}
	// The skew the runner asked for: without the drops nothing is held.
	env.Record("rob_skew.dropped", results.Measurement{Board: target, Params: p, Metric: "tin.ord.dropped_req", Value: float64(dropped), Unit: "REQs"},
		results.Expectation{Metric: "tin.ord.dropped_req", Value: float64(net.Dropped), Unit: "REQs", Source: src,
			Budget: "exact: a count of REQs, the target's ORD_DROPPED_REQ (ORD_DROP_EVERY, docs/tin.md)",
			Note:   setup})
	hwm, err := c.r.Read(ctx, target, "ORD_ROB_HWM")
	if err != nil {
		return err
	}
	env.Record("rob_skew.occupancy", results.Measurement{Board: target, Params: p, Metric: "tin.ord.rob_hwm", Value: float64(hwm), Unit: "REQs"},
		results.Expectation{Metric: "tin.ord.rob_hwm", Value: float64(ref.MaxROB), Unit: "REQs", Source: src,
			Budget: fmt.Sprintf("exact: a count of REQs, the target's ORD_ROB_HWM; each stream holds at most window-1 = %d (Fig. 12c) and holds that many for a whole ORD_TIMEOUT_NS (25 us at reset), "+
				"far longer than the window takes to arrive, so the holds of streams started together overlap", window-1),
			Note: fmt.Sprintf("%s: %d streams x %d REQs held behind their dropped one", setup, len(srcs), window-1)})
	full, err := c.r.Read(ctx, target, "ORD_NACK_ROBFULL")
	if err != nil {
		return err
	}
	env.Record("rob_skew.nacks", results.Measurement{Board: target, Params: p, Metric: "tin.ord.nack_robfull", Value: float64(full), Unit: "NACKs"},
		results.Expectation{Metric: "tin.ord.nack_robfull", Value: float64(ref.FullNACKs), Unit: "NACKs", Source: src,
			Budget: "exact: a count of NACKs, the target's ORD_NACK_ROBFULL",
			Note:   fmt.Sprintf("%s: a peak of %d REQs in a %d-REQ buffer", setup, ref.MaxROB, rob)})
	fell, err := c.r.Sum(ctx, "ORD_FALLBACKS", srcs...)
	if err != nil {
		return err
	}
	env.Record("rob_skew.fallbacks", results.Measurement{Board: target, Params: p, Metric: "ordering.fallbacks", Value: float64(fell), Unit: "streams"},
		results.Expectation{Metric: "ordering.fallbacks", Value: float64(sum.FellBack), Unit: "streams", Source: src,
			Budget: "exact: a count of streams, the sources' ORD_FALLBACKS summed",
			Note:   setup + ": a stream falls back to slow mode only on a NACK (§III-C)"})
	return nil
}

// robSkewShape is rob_skew's drop period and stream length: the plan's,
// else the declared window and twice it less one (one discarded REQ per
// stream).
func robSkewShape(prm robSkewParams, window int) (every, length int) {
	every = window
	if prm.DropEvery != nil {
		every = *prm.DropEvery
	}
	length = 2*every - 1
	if prm.Length != nil {
		length = *prm.Length
	}
	return every, length
}

// eachTarget runs a test towards each of tonight's targets (targetsOf):
// trouble with one target is recorded on it, and the others go on.
func eachTarget(ctx context.Context, env *selftest.Env, on func(context.Context, *selftest.Env, *clique, string) error) error {
	c, err := cliqueOf(env)
	if err != nil {
		return err
	}
	rot, err := targetsOf(env, c)
	if err != nil {
		return err
	}
	for _, target := range rot.Boards {
		srcs, _, err := streamSources(env, c, target)
		if err != nil {
			return err
		}
		if !c.up(append([]string{target}, srcs...)...) {
			continue // the runner reports the target's cases (targetCases)
		}
		if err := on(ctx, env, c, target); err != nil {
			env.Error(env.Test.Name, target, results.Params{"target": target}, err)
		}
	}
	return nil
}
