package shoal

import (
	"fmt"
	"math"
	"strconv"

	"github.com/labrunner/labrunner/results"
)

// PermutationWindow is the counting window of a permutation run: warm-up
// and measured epochs (§6.2 runs long-lived flows; selftest/shoal and Predict
// use 200 and 2000 on the prototype).
type PermutationWindow struct{ Warmup, Epochs int }

// permutationRun simulates long-running flows between the given pairs and
// returns the mean useful cells per destination per slot and channel over
// the window (§6.2: "the amount of 'useful' cells ... received by each
// destination").
func permutationRun(c Config, specs []FlowSpec, w PermutationWindow, startNS float64) (float64, error) {
	flows := make([]Flow, len(specs))
	for i, f := range specs {
		flows[i] = Flow{Src: f.Src, Dst: f.Dst, Cells: math.MaxInt64 / 4, StartNS: startNS}
	}
	E := c.EpochNS()
	from := startNS + float64(w.Warmup)*E
	r, err := Simulate(c, flows, SimOptions{MeasureFromNS: from, UntilNS: from + float64(w.Epochs)*E})
	if err != nil {
		return 0, err
	}
	ideal := float64(c.Channels) * (r.EndNS - from) / c.SlotNS
	sum := 0.0
	for _, fr := range r.Flows {
		sum += float64(fr.Window) / ideal
	}
	return sum / float64(len(flows)), nil
}

// PermutationBand is golden's band for the average destination throughput
// of long-running flows between the given pairs (§6.2 Fig. 9, §7.2 Fig. 12),
// with the error budget it is made of.
type PermutationBand struct {
	// Value is golden's simulation of these flows over the window.
	Value float64
	// Slower and Faster are the same simulation with a cell and its
	// feedback acted on one slot later and one slot earlier.
	Slower, Faster float64
	// Ceiling is the max-min fair share with the tightest feedback loops
	// the mechanism allows (reading S3), for racks small enough to
	// water-fill; 0 otherwise.
	Ceiling float64
	// Phase is the largest deviation from Value over the flows starting in
	// each slot of the first epoch (the run's phase against the schedule).
	Phase float64
	// Edge is the relative count a window's edges can add or remove: the
	// cells in flight, one per subflow of each flow.
	Edge   float64
	Lo, Hi float64
}

// NewPermutationBand simulates the flows and the budget's cases. The band
// is [Slower − spread, min(Faster, Ceiling) + spread], spread being the phase
// deviation plus the window edges. When a cell and its feedback can be
// acted on is fixed to the cycle (readings S2, S3), but the throughput is a
// step function of the feedback loops and of the order in which cells meet
// in the intermediate queues: subflows that share one settle into a steady
// pattern (alternating, or meeting there, whose feedback of 1 then costs
// them an epoch, reading S64) that the start of the flows and the rack's
// timing within a slot (the nodes' clock offsets, §3.4; when each node's
// flows begin) choose, and a simulation from one start shows one of them. A slot either way moves some loops by a whole
// epoch and spans those patterns: over traffic/shoal's seeds 1-16 at the
// eight Fig. 9 slot sizes the emulated rack read from 8% below to 6% above
// this simulation, inside the band in all 128 runs. Feedback two slots
// late can give the loops of one (at 128-cycle slots it does); three
// cannot.
func NewPermutationBand(c Config, specs []FlowSpec, w PermutationWindow) (PermutationBand, error) {
	var b PermutationBand
	if len(specs) == 0 {
		return b, fmt.Errorf("permutation band: no flows")
	}
	if w.Warmup < 0 || w.Epochs < 1 {
		return b, fmt.Errorf("permutation band: warm-up %d and %d epochs: want ≥ 0 and ≥ 1", w.Warmup, w.Epochs)
	}
	var err error
	if b.Value, err = permutationRun(c, specs, w, 0); err != nil {
		return b, fmt.Errorf("permutation band: %w", err)
	}
	slower, faster := c, c
	slower.PropNS += c.SlotNS
	faster.PropNS = math.Max(0, c.PropNS-c.SlotNS)
	if b.Slower, err = permutationRun(slower, specs, w, 0); err != nil {
		return b, fmt.Errorf("permutation band: %w", err)
	}
	if b.Faster, err = permutationRun(faster, specs, w, 0); err != nil {
		return b, fmt.Errorf("permutation band: %w", err)
	}
	// The phase of the run against the schedule: starting half an epoch
	// later (on the prototype no start slot moves the throughput by more
	// than 1%).
	if ph := c.EpochSlots() / 2; ph > 0 {
		v, err := permutationRun(c, specs, w, float64(ph)*c.SlotNS)
		if err != nil {
			return b, fmt.Errorf("permutation band: %w", err)
		}
		b.Phase = math.Max(b.Phase, math.Abs(v-b.Value))
	}
	cells := b.Value * float64(w.Epochs*c.EpochSlots()*c.Channels)
	b.Edge = float64(c.Nodes-1) / math.Max(cells, 1)
	b.Ceiling = math.Inf(1)
	if c.Nodes <= MaxShoalFairNodes {
		s, err := NewSchedule(c.Nodes, c.Channels, c.Schedule)
		if err != nil {
			return b, err
		}
		loops, err := FastestFeedbackLoops(c, s)
		if err != nil {
			return b, err
		}
		rates, err := ShoalFairRates(c.Nodes, specs, loops)
		if err != nil {
			return b, err
		}
		perEpoch := float64(c.Nodes-1) / float64(c.EpochSlots()*c.Channels)
		b.Ceiling = 0
		for _, r := range rates {
			b.Ceiling += r * perEpoch / float64(len(rates))
		}
	}
	spread := b.Phase + b.Edge*b.Value
	lo := math.Min(b.Slower, b.Value)
	hi := math.Max(math.Min(b.Faster, b.Ceiling), b.Value)
	b.Lo, b.Hi = math.Max(0, lo-spread), math.Min(1, hi+spread)
	if math.IsInf(b.Ceiling, 1) {
		b.Ceiling = 0
	}
	return b, nil
}

// Budget says what the band is made of, each part with its size.
func (b PermutationBand) Budget() string {
	rel := func(v float64) string { return fmt.Sprintf("%+.1f%%", 100*(v/b.Value-1)) }
	s := fmt.Sprintf("timing a slot either way, for the loops and the patterns in which subflows meet in a queue (readings S3, S64; a cell and its feedback acted on one slot later: %.4f, %s; one slot earlier: %.4f, %s", b.Slower, rel(b.Slower), b.Faster, rel(b.Faster))
	if b.Ceiling > 0 {
		s += fmt.Sprintf(", capped by the max-min ceiling with the tightest loops %.4f (reading S3)", b.Ceiling)
	}
	s += fmt.Sprintf("); run phase against the schedule ±%.2f%%; window edges (a cell per subflow in flight) ±%.2f%%; counters exact",
		100*b.Phase/math.Max(b.Value, 1e-12), 100*b.Edge)
	return s
}

// Expectation is the band as the expectation of shoal.permutation.throughput.
func (b PermutationBand) Expectation(params results.Params, source, note string) results.Expectation {
	e := results.Expectation{Metric: "shoal.permutation.throughput", Params: params, Value: b.Value,
		Min: results.Float(b.Lo), Max: results.Float(b.Hi), Unit: "fraction", Source: source, Note: note, Budget: b.Budget()}
	if e.NeedsReason() {
		e.Wide = "the throughput is a step function of the feedback loops (one cell per subflow per loop, reading S20) and of the steady pattern in which subflows sharing an intermediate queue meet there (reading S64), " +
			"which the flows' start and the rack's timing within a slot choose: a slot more or less moves some loops by a whole epoch, so the band spans golden's simulation one slot slower to one slot faster"
	}
	return e
}

// PermutationExpectation is golden's expectation for one permutation run of
// the prototype at its configured slot (§6.2, Fig. 9): the runner gives the
// flows its traffic generator loaded and its window, and gets the band with
// its budget (NewPermutationBand).
func PermutationExpectation(c Config, specs []FlowSpec, w PermutationWindow) (results.Expectation, error) {
	b, err := NewPermutationBand(c, specs, w)
	if err != nil {
		return results.Expectation{}, err
	}
	params := results.Params{"pairs": strconv.Itoa(len(specs))}
	if c.CycleNS > 0 {
		params = results.Params{"slot_cycles": strconv.Itoa(int(math.Round(c.SlotNS / c.CycleNS)))}
	}
	return b.Expectation(params, "Shoal §6.2, Fig. 9: full permutation, throughput low for small slots, converging towards 50% for larger slots",
		fmt.Sprintf("useful cells per destination per slot and channel; golden/shoal simulation of these %d flows (%d epochs after %d): %.4f", len(specs), w.Epochs, w.Warmup, b.Value)), nil
}

// IncastBand is golden's band for a synchronised incast (§6.2 Fig. 10, §7.2
// Fig. 13): the fastest, slowest and mean completion time of the flows and
// the longest queue, each from golden's simulation of the same flows with
// cells and feedback acted on at the reading's slot (Value), one slot later
// and one slot earlier (the paper fixes that timing only to within a slot,
// reading S2; the two end cases bound the band).
type IncastBand struct {
	FCT      map[string][3]float64 // "fastest", "slowest", "mean": ns at -1 slot, the reading, +1 slot
	MaxQueue [3]int
}

// NewIncastBand simulates the flows in the three timing cases.
func NewIncastBand(c Config, flows []Flow) (IncastBand, error) {
	b := IncastBand{FCT: map[string][3]float64{}}
	rs, err := simulateTimings(c, flows)
	if err != nil {
		return b, fmt.Errorf("incast band: %w", err)
	}
	for k, r := range rs {
		fastest, slowest, mean := math.Inf(1), 0.0, 0.0
		for i, fr := range r.Flows {
			t := fr.FCTNS(flows[i])
			fastest, slowest, mean = math.Min(fastest, t), math.Max(slowest, t), mean+t/float64(len(flows))
		}
		for name, v := range map[string]float64{"fastest": fastest, "slowest": slowest, "mean": mean} {
			a := b.FCT[name]
			a[k] = v
			b.FCT[name] = a
		}
		b.MaxQueue[k] = r.MaxQueue
	}
	return b, nil
}

// Expectations returns shoal.incast.fct_us for the fastest, slowest and mean
// flow and shoal.incast.max_queue, each with its budget. FCTs are measured
// to the cycle (6.4 ns on the prototype): half a cycle is added to either
// side for the counter.
func (b IncastBand) Expectations(c Config, senders int, source, note string) []results.Expectation {
	var out []results.Expectation
	q := c.CycleNS / 2
	for _, name := range []string{"fastest", "slowest", "mean"} {
		v := b.FCT[name]
		lo, hi := math.Min(v[0], math.Min(v[1], v[2]))-q, math.Max(v[0], math.Max(v[1], v[2]))+q
		e := results.Expectation{Metric: "shoal.incast.fct_us", Params: results.Params{"senders": strconv.Itoa(senders), "flow": name},
			Value: v[1] / 1000, Min: results.Float(lo / 1000), Max: results.Float(hi / 1000), Unit: "µs", Source: source, Note: note,
			Budget: fmt.Sprintf("timing within a slot (a cell and its feedback acted on one slot earlier: %.4f µs, %+.1f%%; one slot later: %.4f µs, %+.1f%%); counter quantisation ±%.1f ns (half a cycle); the simulation is deterministic (no replica spread)",
				v[0]/1000, 100*(v[0]/v[1]-1), v[2]/1000, 100*(v[2]/v[1]-1), q)}
		if e.NeedsReason() {
			e.Wide = "a slot earlier or later moves each hop of every cell by a slot and the queue's drain by up to an epoch: the band spans golden's simulation one slot faster to one slot slower"
		}
		out = append(out, e)
	}
	lo, hi := min(b.MaxQueue[0], b.MaxQueue[1], b.MaxQueue[2]), senders
	e := results.Expectation{Metric: "shoal.incast.max_queue", Params: results.Params{"senders": strconv.Itoa(senders)},
		Value: float64(b.MaxQueue[1]), Min: results.Float(float64(lo)), Max: results.Float(float64(hi)), Unit: "cells", Source: source,
		Note: fmt.Sprintf("at most one cell per sender: the senders' flows plus the intermediate's own (it is one of the senders); golden's simulation peaks at %d (%d one slot earlier, %d one slot later)",
			b.MaxQueue[1], b.MaxQueue[0], b.MaxQueue[2]),
		Budget: fmt.Sprintf("upper end: Eq. 5 with one cell per sender, %d (exact); lower end: the smallest peak of golden's simulation within a slot of timing, %d; counter exact", hi, lo)}
	if e.NeedsReason() {
		e.Wide = "the upper end is the paper's bound, not a prediction; the lower end is what a design that queues at the intermediates at all must reach: a design with no queueing fails it"
	}
	return append(out, e)
}

// NodeQueueBand is golden's band for the longest per-destination queue
// (MAX_QUEUE) at one node over a run of fixed flows (§3.3.3, Eq. 5, reading
// S62). Above: QueueBoundOf the flows at the node, exact. Below: the
// smallest peak golden's simulation of the same flows reaches at the node
// with cells and feedback acted on one slot earlier, at the reading's slot
// and one slot later (the paper fixes that timing only to within a slot,
// reading S2; the incast's queue is judged the same way, reading S61).
type NodeQueueBand struct {
	Sim   [3]int // the simulation's peak at the node: a slot earlier, the reading, a slot later
	Bound int
}

// Lo is the band's lower end.
func (b NodeQueueBand) Lo() int { return min(b.Sim[0], b.Sim[1], b.Sim[2]) }

// NewNodeQueueBands simulates the flows in the three timing cases and
// returns every node's band. Every flow must complete in each case, and no
// peak may pass its bound: golden breaking its own bound is golden's error.
func NewNodeQueueBands(c Config, flows []Flow) ([]NodeQueueBand, error) {
	specs := make([]FlowSpec, len(flows))
	for i, f := range flows {
		specs[i] = FlowSpec{Src: f.Src, Dst: f.Dst}
	}
	bands := make([]NodeQueueBand, c.Nodes)
	for j := range bands {
		bands[j].Bound = NodeQueueBound(specs, c.Nodes, j)
	}
	rs, err := simulateTimings(c, flows)
	if err != nil {
		return nil, fmt.Errorf("node queue band: %w", err)
	}
	for k, r := range rs {
		for j := range bands {
			bands[j].Sim[k] = r.NodeMaxQueue[j]
			if r.NodeMaxQueue[j] > bands[j].Bound {
				return nil, fmt.Errorf("node queue band: golden's simulation queues %d cells at node %d, past the %d of Eq. 5 for these flows", r.NodeMaxQueue[j], j, bands[j].Bound)
			}
		}
	}
	return bands, nil
}

// NodeQueueExpectation is shoal.max_queue for the largest MAX_QUEUE over the
// given nodes: Value the largest simulated peak, Min the largest of the
// nodes' lower ends (the largest queue is at least each node's), Max the
// largest bound.
func NodeQueueExpectation(bands []NodeQueueBand, nodes []int, params results.Params, source, note string) (results.Expectation, error) {
	if len(nodes) == 0 {
		return results.Expectation{}, fmt.Errorf("node queue expectation: no nodes")
	}
	var sim [3]int
	lo, hi := 0, 0
	for _, j := range nodes {
		if j < 0 || j >= len(bands) {
			return results.Expectation{}, fmt.Errorf("node queue expectation: node %d of a %d-node rack", j, len(bands))
		}
		for k := range sim {
			sim[k] = max(sim[k], bands[j].Sim[k])
		}
		lo, hi = max(lo, bands[j].Lo()), max(hi, bands[j].Bound)
	}
	e := results.Expectation{Metric: "shoal.max_queue", Params: params, Value: float64(sim[1]),
		Min: results.Float(float64(lo)), Max: results.Float(float64(hi)), Unit: "cells", Source: source, Note: note,
		Budget: fmt.Sprintf("upper end: Eq. 5 taken apart for these flows (reading S62: one local cell at a node that sources a flow, "+
			"one cell of each other node's flow to the queue's destination), %d, exact; lower end: the smallest peak of golden's simulation "+
			"of the same flows within a slot of timing, %d (a slot earlier %d, the reading %d, a slot later %d); counter exact",
			hi, lo, sim[0], sim[1], sim[2])}
	if e.NeedsReason() {
		e.Wide = "the upper end is the paper's bound for these flows, not a prediction; the lower end is what a NIC that queues the flows' cells at all must reach (reading S62)"
	}
	return e, nil
}

// simulateTimings simulates the flows with cells and feedback acted on one
// slot earlier, at the reading's slot and one slot later (reading S2: the
// paper fixes that timing only to within a slot), each run long enough for
// the flows at one cell per subflow per feedback loop: three times their
// cells over a node's N-1 slots an epoch, plus the simulation's default
// margin. Every flow must complete in each case.
func simulateTimings(c Config, flows []Flow) ([3]*SimResult, error) {
	var rs [3]*SimResult
	var cells int64
	for _, f := range flows {
		cells += f.Cells
	}
	until := float64(1000+3*(cells/int64(c.Nodes-1)+int64(len(flows))+10)) * c.EpochNS()
	for k, dp := range []float64{-1, 0, 1} {
		cc := c
		cc.PropNS = math.Max(0, c.PropNS+dp*c.SlotNS)
		r, err := Simulate(cc, flows, SimOptions{UntilNS: until + 2*cc.PropNS})
		if err != nil {
			return rs, err
		}
		for i, fr := range r.Flows {
			if !fr.Done {
				return rs, fmt.Errorf("flow %d>%d did not complete in %.0f ns", flows[i].Src, flows[i].Dst, r.EndNS)
			}
		}
		rs[k] = r
	}
	return rs, nil
}
