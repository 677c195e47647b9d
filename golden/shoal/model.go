package shoal

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/labrunner/labrunner/golden"
	"github.com/labrunner/labrunner/golden/param"
	"github.com/labrunner/labrunner/results"
)

// Name is the model's name in the registry.
const Name = "shoal"

// MaxListNodes bounds the racks for which Predict lists the schedule and the
// switch configurations of every slot (a 64-node rack: 63 slots, 12 switches).
const MaxListNodes = 64

// exact is the tolerance of arithmetic: exact up to floating-point rounding.
const exact = 1e-9

func init() { golden.Register(Model{}) }

// Model is the Shoal golden model as a golden.Model.
type Model struct{}

// Name implements golden.Model.
func (Model) Name() string { return Name }

// Doc implements golden.Model.
func (Model) Doc() string {
	return "Shoal (NSDI 2019): slot, guard band, cell and epoch arithmetic (§3.4, §6.1, §7.1), the static " +
		"schedule per fabric and per circuit switch (§3.2, Appendix A), queue bounds (Eq. 3-5), buffers " +
		"(§3.3.4), propagation latency (§6.2), 7:1 incast (Fig. 10), permutation throughput vs. slot size " +
		"(Fig. 9), max-min fair rates (§7.2), failed-slot fractions (Table 1), and a slot-level rack " +
		"simulation under the §7.3/§7.4 workloads. config=prototype (§6.1) or rack (§7.1); see the package " +
		"documentation for every metric."
}

// Params implements golden.Model. Knobs whose default depends on the
// configuration have an empty Default and say both defaults in Doc.
func (Model) Params() []golden.Param {
	return []golden.Param{
		{Name: "config", Default: "prototype", Doc: "prototype (8 nodes, §6.1) or rack (512 nodes, §7.1)"},
		{Name: "nodes", Doc: "rack nodes N (prototype 8, rack 512)"},
		{Name: "radix", Doc: "circuit-switch ports k, two stages connect k²/2 nodes (prototype 4, rack 32; grown to fit nodes)"},
		{Name: "channels", Doc: "channels per node link, each its own fabric (prototype 1, rack 4: 4x25 Gb/s, §3.4)"},
		{Name: "channel_gbps", Doc: "line rate of one channel, Gb/s (prototype 10, rack 25)"},
		{Name: "slot_cycles", Doc: "prototype only: slot length in 6.4 ns cycles (12, §6.1)"},
		{Name: "guard_cycles", Doc: "prototype only: guard band in cycles (1, §6.1)"},
		{Name: "mac_cycles", Doc: "prototype only: MAC overhead per slot in cycles (3 = 24 B, §6.1)"},
		{Name: "slot_ns", Doc: "rack only: slot length in ns (23.25, §7.1)"},
		{Name: "guard_ns", Doc: "rack only: guard band in ns (2.75, §7.1)"},
		{Name: "reconfig_ns", Doc: "rack only: switch reconfiguration within the guard band, ns (2.5, §7.1)"},
		{Name: "sync_ns", Doc: "rack only: tolerated clock offset, ns (guard - reconfig = 0.25, §7.1)"},
		{Name: "prop_ns", Doc: "node-to-node cell propagation latency, ns (prototype 1576 = 40 + 3x320 + 576, §6.2; rack 15, §3.4)"},
		{Name: "pipeline_ns", Doc: "NIC routing and congestion-control pipelines that rate-limit feedback crosses, receive + transmit, ns (prototype 57.6 = (5 + 4) x 6.4, §4.2; rack 0, reading S2)"},
		{Name: "schedule", Default: "cyclic", Doc: "cyclic (§3.2, Fig. 3) or propagation (Appendix A, Fig. 19)"},
		{Name: "list_schedule", Default: "auto", Doc: "list shoal.schedule and shoal.switch_config for every slot: auto (up to 64 nodes), on, off"},
		{Name: "senders", Doc: "incast sizes, senders per incast (prototype 7, Fig. 10; rack 8,64, Fig. 13); empty: none"},
		{Name: "incast_bytes", Doc: "bytes per incast flow (prototype 448 = seven 64 B cells, §6.2; rack 130000, §7.2)"},
		{Name: "incast_band", Default: "epoch", Doc: "band of shoal.incast.fct_us: epoch (± one epoch, what the runner scores with today) or timing (golden's simulation a slot faster to a slot slower, ±2.5% on the prototype: NewIncastBand)"},
		{Name: "perm_slot_cycles", Doc: "prototype only: slot sizes in cycles for the full-permutation throughput (Fig. 9; 12,16,24,32,48,64,96,128); empty: none"},
		{Name: "perm_pairs", Doc: "communicating pairs for the permutation throughput at the configured slot (Fig. 12; rack 1,128,256,512, prototype none)"},
		{Name: "fair_flows", Doc: "flows src>dst for max-min fair rates (§7.2; prototype 1>0,2>0,3>0,4>5, rack none)"},
		{Name: "failures", Default: "node,node_link,leaf,leaf_spine_link,spine,leaf_spine_down", Doc: "failed components for the failed-slot fractions (Table 1; leaf_spine_link is a cable cut both ways, leaf_spine_down its spine-to-leaf direction alone, reading S41); empty: none"},
		{Name: "sim", Default: "", Doc: "reference simulation workloads: uniform (§7.3), skewed (§7.4), both comma-separated; empty: none"},
		{Name: "load", Default: "0.5", Doc: "simulation loads L = F/(R·N·τ) (§7.3), comma-separated"},
		{Name: "load_gbps", Doc: "the R of the load formula, Gb/s (half the node link: prototype 5, rack 50; see doc)"},
		{Name: "flows", Default: "10000", Doc: "flows per simulation run"},
		{Name: "seed", Default: "1", Doc: "seed of the workloads and permutations"},
	}
}

// Predict implements golden.Model.
func (m Model) Predict(set map[string]string) ([]results.Expectation, error) {
	s, err := golden.Settings(Name, m.Params(), set)
	if err != nil {
		return nil, err
	}
	c, err := ParseConfig(s)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	p := predictor{c: c, proto: c.Name == "prototype"}
	if err := p.parse(s); err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	for _, step := range []func() error{p.arithmetic, p.schedule, p.bounds, p.incast, p.permutation, p.fairness, p.failedSlots, p.simulate} {
		if err := step(); err != nil {
			return nil, fmt.Errorf("%s: %w", Name, err)
		}
	}
	return p.out, nil
}

type predictor struct {
	c     Config
	proto bool
	sched *Schedule
	topo  Topology
	out   []results.Expectation

	list        bool
	senders     []int
	incastBytes int64
	incastBand  string
	permSlots   []int
	permPairs   []int
	fair        []FlowSpec
	failures    []FailureKind
	workloads   []WorkloadKind
	loads       []float64
	loadGbps    float64
	flows       int
	seed        uint64
}

func (p *predictor) parse(s map[string]string) error {
	var err error
	if p.sched, err = NewSchedule(p.c.Nodes, p.c.Channels, p.c.Schedule); err != nil {
		return err
	}
	p.topo = Topology{Nodes: p.c.Nodes, Radix: p.c.Radix}
	switch strings.ToLower(strings.TrimSpace(s["list_schedule"])) {
	case "auto", "":
		p.list = p.c.Nodes <= MaxListNodes
	case "on":
		if p.c.Nodes > 4*MaxListNodes {
			return fmt.Errorf("parameter list_schedule: %d nodes is too many to list (at most %d)", p.c.Nodes, 4*MaxListNodes)
		}
		p.list = true
	case "off":
	default:
		return fmt.Errorf("parameter list_schedule: %q (want auto, on or off)", s["list_schedule"])
	}
	def := func(key, proto, rack string) string {
		if v, ok := s[key]; ok {
			return v
		}
		if p.proto {
			return proto
		}
		return rack
	}
	if p.senders, err = param.Ints(def("senders", "7", "8,64"), 1, p.c.Nodes-1); err != nil {
		return fmt.Errorf("parameter senders: %w (want sender counts 1..%d)", err, p.c.Nodes-1)
	}
	ib, err := param.Int(def("incast_bytes", "448", "130000"), 1, 1<<30)
	if err != nil {
		return fmt.Errorf("parameter incast_bytes: %w", err)
	}
	p.incastBytes = int64(ib)
	switch b := strings.TrimSpace(s["incast_band"]); b {
	case "epoch", "timing":
		p.incastBand = b
	default:
		return fmt.Errorf("parameter incast_band: %q (want epoch or timing)", b)
	}
	if p.proto {
		if p.permSlots, err = param.Ints(def("perm_slot_cycles", "12,16,24,32,48,64,96,128", ""), 1, 1<<16); err != nil {
			return fmt.Errorf("parameter perm_slot_cycles: %w", err)
		}
		for _, sc := range p.permSlots {
			c := p.c
			c.SlotNS = float64(sc) * c.CycleNS
			if err := c.Validate(); err != nil {
				return fmt.Errorf("parameter perm_slot_cycles: %d cycles: %w", sc, err)
			}
		}
	}
	if p.permPairs, err = param.Ints(def("perm_pairs", "", "1,128,256,512"), 1, p.c.Nodes); err != nil {
		return fmt.Errorf("parameter perm_pairs: %w (want 1..%d)", err, p.c.Nodes)
	}
	if p.fair, err = ParseFlows(def("fair_flows", "1>0,2>0,3>0,4>5", ""), p.c.Nodes); err != nil {
		return fmt.Errorf("parameter fair_flows: %w", err)
	}
	if p.failures, err = param.List(s["failures"], ParseFailureKind); err != nil {
		return fmt.Errorf("parameter failures: %w", err)
	}
	if p.workloads, err = param.List(s["sim"], ParseWorkloadKind); err != nil {
		return fmt.Errorf("parameter sim: %w", err)
	}
	if p.loads, err = param.Floats(s["load"], 1e-3, 10); err != nil {
		return fmt.Errorf("parameter load: %w (want loads in 0.001..10)", err)
	}
	if len(p.workloads) > 0 && len(p.loads) == 0 {
		return fmt.Errorf("parameter load: empty, but sim=%s needs at least one load", s["sim"])
	}
	p.loadGbps = p.c.NodeLinkGbps() / 2
	if v := strings.TrimSpace(s["load_gbps"]); v != "" {
		if p.loadGbps, err = param.Float(v, 1e-3, 1e5); err != nil {
			return fmt.Errorf("parameter load_gbps: %w", err)
		}
	}
	if p.flows, err = param.Int(s["flows"], 1, 10_000_000); err != nil {
		return fmt.Errorf("parameter flows: %w", err)
	}
	seed, err := param.Uint64(s["seed"])
	if err != nil {
		return fmt.Errorf("parameter seed: %w", err)
	}
	p.seed = seed
	return nil
}

func (p *predictor) add(e results.Expectation) { p.out = append(p.out, e) }

func (p *predictor) exactly(metric string, params results.Params, v float64, unit, source, note string) {
	p.add(results.Expectation{Metric: metric, Params: params, Value: tidy(v), Unit: unit, RelTol: exact, Source: source, Note: note,
		Budget: "exact: arithmetic of the paper's figures and the configuration; float rounding only (1e-9)"})
}

// tidy rounds away binary floating-point noise (12 x 6.4 = 76.80000000000001)
// so that the arithmetic prints as the paper writes it; 12 significant
// digits are far inside the 1e-9 tolerance.
func tidy(v float64) float64 {
	r, err := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 12, 64), 64)
	if err != nil {
		return v
	}
	return r
}

func bounded(metric string, params results.Params, v float64, lo, hi *float64, unit, source, note string) results.Expectation {
	return results.Expectation{Metric: metric, Params: params, Value: v, Min: lo, Max: hi, Unit: unit, Source: source, Note: note}
}

func (p *predictor) src(proto, rack string) string {
	if p.proto {
		return proto
	}
	return rack
}

func (p *predictor) arithmetic() error {
	c := p.c
	if p.proto {
		p.exactly("shoal.cycle_ns", nil, c.CycleNS, "ns", "Shoal §4: 156.25 MHz clock, 6.4 ns cycle", "")
		p.exactly("shoal.slot_cycles", nil, c.SlotNS/c.CycleNS, "cycles", "Shoal §6.1: slot of 12 clock cycles", "guard + MAC overhead + usable cycles")
		p.exactly("shoal.guard_cycles", nil, c.GuardNS/c.CycleNS, "cycles", "Shoal §6.1: a guard band of one clock cycle is sufficient", "")
		p.exactly("shoal.mac_overhead_ns", nil, c.MACOverheadNS, "ns", "Shoal §6.1: 24 B (3 cycles) of Altera MAC overhead", "")
		p.exactly("shoal.switch_latency_ns", nil, SwitchCycles*CycleNS, "ns", "Shoal §4.1: port-to-port 50 cycles (320 ns): PHY 45 + switching 1 + sync FIFO 4", "")
	}
	p.exactly("shoal.slot_ns", nil, c.SlotNS, "ns", p.src("Shoal §6.1: 12 cycles = 76.8 ns", "Shoal §7.1: slot size of 23.25 ns"), "")
	p.exactly("shoal.guard_ns", nil, c.GuardNS, "ns", p.src("Shoal §6.1: guard band of one clock cycle (6.4 ns)", "Shoal §7.1: guard band of 2.75 ns"), "")
	p.exactly("shoal.guard.reconfig_ns", nil, c.ReconfigNS, "ns", p.src("Shoal §4.1: reconfiguration in one clock cycle, 6.4 ns", "Shoal §7.1: 2.5 ns switch reconfiguration delay"),
		"the part of the guard band the switches spend reconfiguring (§3.4)")
	zero := 0.0
	sync := bounded("shoal.sync.max_offset_ns", nil, c.SyncNS, &zero, results.Float(c.SyncNS), "ns",
		p.src("Shoal §6.1: synchronization precision of less than a clock cycle", "Shoal §7.1: 0.25 ns for variability in propagation and synchronization imprecision"),
		"largest clock offset between nodes the guard band absorbs (§3.4: guard = reconfiguration + propagation variability + sync precision)")
	sync.Budget = fmt.Sprintf("upper end: the guard band's share for synchronisation, %.4g ns (exact, §3.4: guard = reconfiguration + propagation variability + sync precision)", c.SyncNS)
	sync.Wide = "a magnitude whose ideal is 0: a perfectly synchronised rack reads 0, an unsynchronised one reads the boards' own offsets (hundreds of ns), far above the bound; the paper gives no lower limit of precision (WhiteRabbit reaches 50 ps, §3.4)"
	p.add(sync)
	p.exactly("shoal.usable_slot_ns", nil, c.UsableNS(), "ns", p.src("Shoal §6.1: usable slot 8 cycles (51.2 ns)", "Shoal §7.1: 20.5 ns of usable slot size"), "slot - guard - MAC overhead")
	p.exactly("shoal.cell_bytes", nil, float64(c.CellBytes()), "B", p.src("Shoal §6.1: 64 B cells at 10 Gbps", "Shoal §3.4, §7.1: 20.5 ns = 64 B cells over a 25 Gbps channel"),
		"floor(usable slot x channel rate / 8)")
	p.exactly("shoal.cell_payload_bytes", nil, float64(c.PayloadBytes()), "B", "Shoal Fig. 5: 8 B cell header; §7.3 goodput after the header overhead", "cell - 8 B header")
	p.exactly("shoal.guard_overhead", nil, c.GuardOverhead(), "fraction", p.src("Shoal §6.1: guard band overhead around 10% (1/12)", "Shoal §7.1: guard band overhead around 10% (2.75/23.25)"), "guard / slot")
	p.exactly("shoal.duty_cycle", nil, c.DutyCycle(), "fraction", "Shoal §3.4: smaller slots, more guard band overhead, smaller duty cycle", "usable / slot")
	p.exactly("shoal.node_gbps", nil, c.NodeGbps(), "Gb/s", p.src("Shoal §6.1: 64 B per 76.8 ns slot on a 10 Gbps port", "Shoal §7.1: max throughput of 90 Gbps (4 x 64 B per 23.25 ns)"),
		"cell bytes per slot on every channel; the paper rounds the rack's 88.1 to 90")
	p.exactly("shoal.epoch_slots", nil, float64(c.EpochSlots()), "slots", "Shoal §3.2, §3.4: epoch = (N-1)/channels slots; Appendix A: N columns for an even N",
		fmt.Sprintf("ceil(%d columns / %d channels), %s schedule", Columns(c.Nodes, c.Schedule), c.Channels, c.Schedule))
	p.exactly("shoal.epoch_us", nil, c.EpochNS()/1000, "µs", p.src("Shoal §6.1: the epoch size equals 0.53 us", "Shoal §7.1: epoch size of 2.9 us"),
		p.src("7 x 76.8 ns = 0.5376 µs", "128 x 23.25 ns = 2.976 µs; the paper prints 2.9"))
	p.exactly("shoal.prop_latency_us", nil, c.PropNS/1000, "µs", p.src("Shoal §6.2: 1.57 us = 40 ns wire + 3 x 320 ns switches + 576 ns MAC and PHY at the two end nodes", "Shoal §3.4: 10-15 ns across a rack; §3.5: a layer-0 switch adds no latency"), "")
	loops, err := FeedbackLoops(c, p.sched)
	if err != nil {
		return err
	}
	lo, hi := math.MaxInt, 0
	for i, m := range loops {
		if i/c.Nodes != i%c.Nodes {
			lo, hi = min(lo, m), max(hi, m)
		}
	}
	src := "Shoal §6.2: a node cannot send its next cell to an intermediate node until it has received feedback from it"
	note := fmt.Sprintf("whole epochs from a cell to the next cell of its subflow: the intermediate queues the whole cell %d slots after its send slot (1 + ceil((%.4g + %.4g) / %.4g ns), reading S3); "+
		"the source uses the feedback in the reply's header %d slots after the reply's send slot (ceil((guard %.4g + propagation %.4g + NIC pipelines %.4g ns) / %.4g ns), reading S2, §3.3.2, §4.2 and Fig. 5)",
		c.DelaySlots(), c.PropNS, c.PipelineNS, c.SlotNS, c.FeedbackSlots(), c.GuardNS, c.PropNS, c.PipelineNS, c.SlotNS)
	p.exactly("shoal.feedback_loop_epochs", results.Params{"stat": "min"}, float64(lo), "epochs", src, note)
	p.exactly("shoal.feedback_loop_epochs", results.Params{"stat": "max"}, float64(hi), "epochs", src, note)
	return nil
}

func (p *predictor) schedule() error {
	if !p.list {
		return nil
	}
	E := p.sched.EpochSlots()
	for slot := 0; slot < E; slot++ {
		for ch := 0; ch < p.c.Channels; ch++ {
			col := p.sched.Column(slot, ch)
			p.add(results.Expectation{Metric: "shoal.schedule",
				Params: results.Params{"slot": strconv.Itoa(slot), "channel": strconv.Itoa(ch)},
				Text:   MappingText(p.sched.Pairs(slot, ch)), Budget: "exact: the schedule, node by node",
				Source: p.src("Shoal §3.2, Fig. 3: static schedule, each pair once per epoch", "Shoal §3.2, §3.4: static schedule, channels serve 1/C of the nodes each"),
				Note:   fmt.Sprintf("node>node in slot %d (paper's slot %d), offset %d, %s schedule", slot, slot+1, col.Offset, p.c.Schedule)})
		}
	}
	for ch := 0; ch < p.c.Channels; ch++ {
		ids := p.topo.SwitchIDs(ch)
		for slot := 0; slot < E; slot++ {
			cfg, err := p.topo.Decompose(p.sched, slot, ch)
			if err != nil {
				return err
			}
			for w, sc := range cfg {
				p.add(results.Expectation{Metric: "shoal.switch_config",
					Params: results.Params{"switch": ids[w].String(), "slot": strconv.Itoa(slot)},
					Text:   sc.Text(), Budget: "exact: the switch's circuits, port by port",
					Source: "Shoal §3.2, Fig. 4: per-switch schedule decomposed from the fabric schedule; §4.1 one register per output port",
					Note:   "input port>output port; leaf ports 0..k/2-1 face nodes, k/2+s faces spine s; spine port l faces leaf l"})
			}
		}
	}
	return nil
}

func (p *predictor) bounds() error {
	n := p.c.Nodes
	zero := 0.0
	deg := strconv.Itoa(n - 1)
	qb := func(eq string, bound int, unit, source, note string) {
		e := bounded("shoal.queue_bound", results.Params{"eq": eq}, float64(bound), &zero, results.Float(float64(bound)), unit, source, note)
		e.Budget = fmt.Sprintf("upper end: Eq. %s's bound at its worst case, %d (exact)", eq, bound)
		e.Wide = "the paper's equations bound a queue from above under any traffic; how full a run fills it is a property of the run (its incast and outcast degrees): golden's simulation of the runner's own flows gives that (shoal.sim.max_queue, the incast's max_queue)"
		p.add(e)
	}
	qb("3", QueueBoundEq3(n-1, n-1), "cells", "Shoal §3.3.2, Eq. 3: len(Q_ij) ≤ outcast(i) + incast(j)", "without ready queues; worst case outcast = incast = N-1 = "+deg)
	qb("4", ReadyQueueBound(n-1), "flows", "Shoal §3.3.3, Eq. 4: len(R_jk) ≤ outcast(j) ≤ N-1", "ready queue of local flow ids")
	qb("5", QueueBoundEq5(n-1), "cells", "Shoal §3.3.3, Eq. 5: len(Q_jk) ≤ 1 + incast(k) ≤ N", "with ready queues; the bound every per-destination queue keeps under any traffic")
	p.exactly("shoal.buffer_bytes", results.Params{"memory": "total"}, float64(p.c.BufferBytes()), "B",
		"Shoal §3.3.4: 512 nodes and 64 B cells need 17 MB per node", "(N-1) queues x N cells (Eq. 5) x cell size")
	p.exactly("shoal.buffer_bytes", results.Params{"memory": "onchip"}, float64(p.c.OnChipBufferBytes()), "B",
		"Shoal §3.3.4, §4.2: one cell per queue on chip, 32 KB per node at 512 nodes", "(N-1) cells")
	return nil
}

func (p *predictor) incast() error {
	if len(p.senders) == 0 {
		return nil
	}
	cells := (p.incastBytes + int64(p.c.CellBytes()) - 1) / int64(p.c.CellBytes())
	for _, s := range p.senders {
		flows := make([]Flow, s)
		for k := range flows {
			flows[k] = Flow{Src: (1 + k) % p.c.Nodes, Dst: 0, Cells: cells}
		}
		b, err := NewIncastBand(p.c, flows)
		if err != nil {
			return err
		}
		closed := IncastSlowestNS(p.c, s, int(cells))
		src := p.src("Shoal §6.2, Fig. 10: 7:1 incast of 448 B flows, fastest 6.05 us, slowest 6.9 us; the queue for the destination grows up to a maximum of 7 (Eq. 5)",
			"Shoal §7.2, Fig. 13: synchronised incast of 130 KB flows; the queue grows linearly, bounded by the incast degree (Eq. 5)")
		note := fmt.Sprintf("golden slot simulation, %d cells per flow; paper's account of the slowest: %d epochs + 2 x propagation = %.3f µs",
			cells, max(s, int((int64(s)*cells+int64(p.c.Nodes)-2)/int64(p.c.Nodes-1))), closed/1000)
		for _, e := range b.Expectations(p.c, s, src, note) {
			if p.incastBand == "epoch" && e.Metric == "shoal.incast.fct_us" {
				// ± one epoch around golden's value: the slot at which a
				// cell reaches its intermediate decides whether it makes
				// that epoch's slot.
				E := p.c.EpochNS() / 1000
				e.Budget = fmt.Sprintf("± one epoch (%.4g µs): a cell that reaches its intermediate a slot later can miss that epoch's slot; the timing band (incast_band=timing) is %s", E, e.Budget)
				e.Min, e.Max, e.AbsTol, e.Wide = nil, nil, E, ""
				if e.NeedsReason() {
					e.Wide = "one epoch is more than 10% of a short incast's completion time; incast_band=timing gives the budget-derived band"
				}
			}
			p.add(e)
		}
	}
	return nil
}

func (p *predictor) permutation() error {
	src := "Shoal §6.2, Fig. 9: full permutation, throughput low for small slots, converging towards 50% for larger slots"
	run := func(c Config, pairs int, params results.Params) error {
		// Long enough for the new-flow rule to have let go (log2 N epochs,
		// §3.3.3) and for the average to settle; on a large rack every
		// epoch already averages over N(N-1) subflows.
		// On a larger rack each epoch already averages over N(N-1)
		// subflows: the window shrinks as 1/N, to the prototype's at 8.
		w := PermutationWindow{Warmup: max(15, 1600/c.Nodes), Epochs: max(40, 16000/c.Nodes)}
		b, err := NewPermutationBand(c, permutationFlows(c.Nodes, pairs, p.seed), w)
		if err != nil {
			return err
		}
		p.add(b.Expectation(params, src, fmt.Sprintf("useful cells per destination per slot and channel; golden slot simulation of the seed-%d permutation (%d epochs after %d): %.4f",
			p.seed, w.Epochs, w.Warmup, b.Value)))
		return nil
	}
	for _, sc := range p.permSlots {
		c := p.c
		c.SlotNS = float64(sc) * c.CycleNS
		if err := run(c, c.Nodes, results.Params{"slot_cycles": strconv.Itoa(sc)}); err != nil {
			return err
		}
	}
	if len(p.permPairs) > 0 {
		src = "Shoal §7.2, Fig. 12: permutation throughput from the peak for one pair down to half for all pairs"
	}
	for _, pairs := range p.permPairs {
		if err := run(p.c, pairs, results.Params{"pairs": strconv.Itoa(pairs)}); err != nil {
			return err
		}
	}
	return nil
}

// permutationCeiling is the throughput the permutation would reach if every
// subflow got its max-min fair share, capped by its feedback loop with the
// feedback used as early as the mechanism allows (headers on both legs,
// readings S2 and S3; FastestFeedbackLoop); for racks too large for
// ShoalFairRates, the loop cap alone.
func permutationCeiling(c Config, pairs int, seed uint64) (float64, error) {
	return permutationCeilingWith(c, pairs, seed, FastestFeedbackLoops)
}

// permutationCeilingWith is permutationCeiling with the feedback loops of a
// given reading (the simulation's own, FeedbackLoops, for its tests).
func permutationCeilingWith(c Config, pairs int, seed uint64, loopsOf func(Config, *Schedule) ([]int, error)) (float64, error) {
	s, err := NewSchedule(c.Nodes, c.Channels, c.Schedule)
	if err != nil {
		return 0, err
	}
	loops, err := loopsOf(c, s)
	if err != nil {
		return 0, err
	}
	// A node sends each other node one cell per epoch: N-1 cells in
	// EpochSlots·Channels slot-channels.
	perEpoch := float64(c.Nodes-1) / float64(c.EpochSlots()*c.Channels)
	if c.Nodes > MaxShoalFairNodes {
		// Too large to water-fill: every subflow sends at most one cell per
		// feedback loop, so a flow gets at most 1/loop of its N-1 subflows'
		// slots.
		best := math.MaxInt
		for i, m := range loops {
			if i/c.Nodes != i%c.Nodes {
				best = min(best, m)
			}
		}
		return perEpoch / float64(best), nil
	}
	flows := permutationFlows(c.Nodes, pairs, seed)
	rates, err := ShoalFairRates(c.Nodes, flows, loops)
	if err != nil {
		return 0, err
	}
	sum := 0.0
	for _, r := range rates {
		sum += r
	}
	// Rates are fractions of the N-1 cells a node sends per epoch; the
	// measure is cells per slot and channel.
	return sum / float64(len(rates)) * perEpoch, nil
}

func (p *predictor) fairness() error {
	if len(p.fair) == 0 {
		return nil
	}
	ideal, err := IdealFairRates(p.c.Nodes, p.fair)
	if err != nil {
		return err
	}
	var shoal []float64
	if p.c.Nodes <= MaxShoalFairNodes {
		loops, err := FeedbackLoops(p.c, p.sched)
		if err != nil {
			return err
		}
		if shoal, err = ShoalFairRates(p.c.Nodes, p.fair, loops); err != nil {
			return err
		}
	}
	for f, fl := range p.fair {
		p.add(results.Expectation{Metric: "shoal.fair_rate", Params: results.Params{"flow": fl.String(), "model": "ideal"},
			Value: ideal[f], Unit: "fraction", RelTol: 0.1,
			Budget: "the paper's own tolerance: §7.2, 99% of flows within 10% of their max-min share; water-filling is exact",
			Source: "Shoal §7.2: ideal throughput by max-min water-filling; 99% of flows within 10% of it",
			Note:   "max-min share of a rack-wide ideal switch, fraction of a node's link"})
		if shoal != nil {
			p.add(results.Expectation{Metric: "shoal.fair_rate", Params: results.Params{"flow": fl.String(), "model": "shoal"},
				Value: shoal[f], Unit: "fraction", RelTol: 0.1,
				Budget: "the paper's own tolerance: §7.2, 99% of flows within 10% of their max-min share; water-filling with the feedback loops (reading S2) is exact",
				Source: "Shoal §3.3.2: a flow is all traffic of a node pair; per-subflow max-min fairness over virtual links of 1/(N-1) of the link; §6.2 feedback loop",
				Note:   "water-filling over the N(N-1) virtual links, each subflow capped at one cell per feedback loop (feedback usable once the reply's header is in); fraction of a node's cells per slot"})
		}
	}
	return nil
}

func (p *predictor) failedSlots() error {
	one := p.c
	one.Channels = 1
	s, err := NewSchedule(one.Nodes, 1, one.Schedule)
	if err != nil {
		return err
	}
	for _, k := range p.failures {
		f := Failure{Kind: k}
		v, err := FailedSlotFraction(p.topo, s, f)
		if err != nil {
			return err
		}
		p.exactly("shoal.failed_slots.fraction", results.Params{"failure": k.String()}, v, "fraction",
			"Shoal Table 1: fraction of failed slots against failed components, two-stage Clos",
			fmt.Sprintf("counted for component 0 (node 0, leaf 0, spine 0, link leaf0-spine0) of this %d-node fabric of %d-port switches, one channel, symmetric detection (§3.5), mean over the nodes still connected; Table 1 approximates %.4g",
				p.c.Nodes, p.c.Radix, TableOneApprox(k, p.c.Nodes)))
	}
	return nil
}

func (p *predictor) simulate() error {
	for _, wk := range p.workloads {
		for _, load := range p.loads {
			w := NewWorkload(wk, p.c.Nodes, p.flows, load, p.seed)
			w.LoadGbps = p.loadGbps
			sum, err := RunWorkload(p.c, w, SimOptions{})
			if err != nil {
				return err
			}
			ps := func(kv ...string) results.Params {
				q := results.Params{"workload": wk.String(), "load": strconv.FormatFloat(load, 'g', -1, 64)}
				for i := 0; i+1 < len(kv); i += 2 {
					q[kv[i]] = kv[i+1]
				}
				return q
			}
			src := "Shoal §7.3, Fig. 15/16: Poisson arrivals, Pareto(1.05, mean 100 KB) sizes, uniform pairs"
			if wk == Skewed {
				src = "Shoal §7.4, Fig. 18: skewed mix, 84% of flows among a third of the nodes"
			}
			note := fmt.Sprintf("golden slot simulation, %d flows, seed %d, R = %g Gb/s; %d of %d short flows completed; %d flows arrived while their pair's Shoal flow was live and joined it, behind its earlier flows (§3.3.2: a flow is the pair; §3.3.1: FIFO per-destination queues)",
				p.flows, p.seed, p.loadGbps, sum.ShortDone, sum.Short, sum.Joined)
			for _, q := range []struct {
				name string
				pct  float64
			}{{"50", 50}, {"99", 99}, {"99.9", 99.9}} {
				if sum.ShortDone == 0 {
					break
				}
				p.add(percentileExpectation(sum.ShortFCTs, q.pct, ps("percentile", q.name, "size", "short"), src, note))
			}
			if sum.Long > 1 {
				m, sd := meanSD(sum.LongGoodputs)
				h := 2.576 * sd / math.Sqrt(float64(sum.Long))
				e := results.Expectation{Metric: "shoal.sim.goodput_gbps", Params: ps("size", "long"),
					Value: sum.LongGoodputGbps, Unit: "Gb/s", Min: results.Float(math.Max(0, m-h)), Max: results.Float(m + h), Source: src,
					Note:   fmt.Sprintf("mean payload goodput of the %d flows ≥ 1 MB, each over its time in the run", sum.Long),
					Budget: fmt.Sprintf("which flows are long: the mean of %d long flows, sd %.3g Gb/s across them, 99%% interval ±%.3g Gb/s (2.58 sd/√n); one run of golden's simulation, deterministic", sum.Long, sd, h)}
				if e.NeedsReason() {
					e.Wide = fmt.Sprintf("only %d flows of a heavy-tailed (Pareto 1.05) workload are long: their mean goodput is known to ±%.0f%% from one run", sum.Long, 100*h/math.Max(m, 1e-9))
				}
				p.add(e)
			}
			p.add(results.Expectation{Metric: "shoal.sim.max_queue", Params: ps(), Value: float64(sum.MaxQueue), Min: results.Float(1), Max: results.Float(float64(QueueBoundEq5(p.c.Nodes - 1))), Unit: "cells",
				Source: src + "; §3.3.3 Eq. 5", Note: fmt.Sprintf("golden simulation peaks at %d cells; any run must stay within Eq. 5 (1 + incast ≤ N)", sum.MaxQueue),
				Budget: fmt.Sprintf("upper end: Eq. 5, 1 + incast ≤ N = %d (exact); lower end: a run with traffic queues at least one cell", QueueBoundEq5(p.c.Nodes-1)),
				Wide:   "Eq. 5 bounds the queues of any traffic from above; how far a run fills them depends on its incast degrees, a maximum over the run, so the band is the bound, with golden's own peak in Value"})
			p.add(results.Expectation{Metric: "shoal.sim.max_node_queue", Params: ps(), Value: float64(sum.MaxNodeQueue), Unit: "cells", RelTol: 0.3,
				Source: "Shoal §7.3, Fig. 16: maximum aggregate queue per node (336 cells at high load, 512 nodes)",
				Note:   "most cells queued at one node over all its queues",
				Budget: "a maximum over one run of golden's simulation: ±30% for the run-to-run spread of an extreme (at 512 nodes and load 0.5-0.9 golden's own runs give 338-395 cells)",
				Wide:   "the largest aggregate queue of a run is an extreme that grows with the run's length and load; one run pins it only to about a third"})
		}
	}
	return nil
}

// percentileExpectation is the band of an FCT percentile of the short flows
// from one run: the order statistics whose ranks a 99% binomial interval
// allows around the percentile's rank (the sampling error of a percentile
// of n flows).
func percentileExpectation(sorted []float64, pct float64, params results.Params, source, note string) results.Expectation {
	n := float64(len(sorted))
	q := pct / 100
	h := 2.576 * math.Sqrt(n*q*(1-q))
	lo := sorted[min(max(int(math.Floor(n*q-h))-1, 0), len(sorted)-1)]
	hi := sorted[min(max(int(math.Ceil(n*q+h))-1, 0), len(sorted)-1)]
	v := Percentile(sorted, pct)
	e := results.Expectation{Metric: "shoal.sim.fct_us", Params: params, Value: v / 1000, Unit: "µs",
		Min: results.Float(lo / 1000), Max: results.Float(hi / 1000), Source: source, Note: note,
		Budget: fmt.Sprintf("which flows are short: the p%g of %d flows, its rank known to ±%.1f flows (99%% binomial interval), FCTs %.3f to %.3f µs at those ranks; one run of golden's simulation, deterministic; FCTs to the slot", pct, len(sorted), h, lo/1000, hi/1000)}
	if e.NeedsReason() {
		e.Wide = fmt.Sprintf("a tail percentile of %d flows rests on its last %.0f: the FCTs next to that rank spread this far in a heavy-tailed workload", len(sorted), math.Ceil(n*(1-q)))
	}
	return e
}

func meanSD(v []float64) (m, sd float64) {
	for _, x := range v {
		m += x / float64(len(v))
	}
	for _, x := range v {
		sd += (x - m) * (x - m)
	}
	if len(v) > 1 {
		sd = math.Sqrt(sd / float64(len(v)-1))
	}
	return m, sd
}

// WorkloadSummary condenses a simulation of a workload into the §7.3
// figures.
type WorkloadSummary struct {
	Flows, Done                   int
	Short, ShortDone              int
	ShortP50, ShortP99, ShortP999 float64 // ns
	Long                          int
	LongGoodputGbps               float64
	MaxQueue, MaxNodeQueue        int
	BoundViolations               int64
	EndNS                         float64
	// Joined counts the workload flows that arrived while their pair's
	// Shoal flow was live and joined it (SimResult.Joined, §3.3.2).
	Joined int
	// ShortFCTs are the completed short flows' FCTs (ns), sorted;
	// LongGoodputs the long flows' goodputs (Gb/s).
	ShortFCTs, LongGoodputs []float64
}

// RunWorkload draws the workload's flows for the configuration's cell
// payload, simulates them and summarises: FCT percentiles of short flows (≤
// 100 KB), mean goodput of long flows (≥ 1 MB), the largest queues (§7.3).
// FCTs and goodputs are per workload (transport) flow, though the flows of
// one node pair are served as one Shoal flow (§3.3.2).
func RunWorkload(c Config, w Workload, o SimOptions) (WorkloadSummary, error) {
	if len(o.Failed) == 0 {
		o.Failed = w.Failed
	}
	flows, err := w.Generate(c.PayloadBytes())
	if err != nil {
		return WorkloadSummary{}, err
	}
	r, err := Simulate(c, flows, o)
	if err != nil {
		return WorkloadSummary{}, err
	}
	return Summarise(c, flows, r), nil
}

// Summarise computes the §7.3 figures of a simulation.
func Summarise(c Config, flows []Flow, r *SimResult) WorkloadSummary {
	s := WorkloadSummary{Flows: len(flows), MaxQueue: r.MaxQueue, MaxNodeQueue: r.MaxNodeQueue, BoundViolations: r.BoundViolations, EndNS: r.EndNS, Joined: r.Joined}
	var fct []float64
	var gp float64
	payload := int64(c.PayloadBytes())
	for k, f := range flows {
		fr := r.Flows[k]
		if fr.Done {
			s.Done++
		}
		bytes := f.Bytes
		if bytes == 0 {
			bytes = f.Cells * payload
		}
		if bytes <= ShortFlowBytes {
			s.Short++
			if fr.Done {
				s.ShortDone++
				fct = append(fct, fr.FCTNS(f))
			}
		}
		if bytes >= LongFlowBytes {
			if t := fr.FCTNS(f); t > 0 {
				s.Long++
				got := min(fr.Delivered*payload, bytes)
				gp += float64(got) * 8 / t
				s.LongGoodputs = append(s.LongGoodputs, float64(got)*8/t)
			}
		}
	}
	if s.Long > 0 {
		s.LongGoodputGbps = gp / float64(s.Long)
	}
	sort.Float64s(fct)
	s.ShortFCTs = fct
	s.ShortP50, s.ShortP99, s.ShortP999 = Percentile(fct, 50), Percentile(fct, 99), Percentile(fct, 99.9)
	return s
}

// Percentile is the nearest-rank percentile of sorted values (NaN for none).
func Percentile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	k := int(math.Ceil(q/100*float64(len(sorted)))) - 1
	return sorted[min(max(k, 0), len(sorted)-1)]
}
