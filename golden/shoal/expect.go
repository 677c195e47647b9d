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
// deviation plus the window edges: the paper fixes when a cell and its
// feedback can be acted on only to within a slot (§3.3.2 and Fig. 5: the
// header or the whole cell, reading S2; §6.2's 1.57 µs is a rounded
// measurement; §4.2's 4 and 5 NIC cycles are not in it), and at a slot's
// granularity that moves a feedback loop by a whole epoch for some pairs.
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
	// The phase of the run against the schedule: a few start slots suffice
	// on a large rack (every epoch averages over N(N-1) subflows).
	phases := min(c.EpochSlots(), 7)
	if c.Nodes > 64 {
		phases = min(phases, 2)
	}
	for ph := 1; ph < phases; ph++ {
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
	s := fmt.Sprintf("timing within a slot (a cell and its feedback acted on one slot later: %.4f, %s; one slot earlier: %.4f, %s", b.Slower, rel(b.Slower), b.Faster, rel(b.Faster))
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
		e.Wide = "the paper fixes when a cell and its feedback can be acted on only to within a slot (§3.3.2, Fig. 5, reading S2; §6.2's 1.57 µs is rounded), " +
			"and a slot more or less moves some feedback loops by a whole epoch: the throughput is a step function of the loops (one cell per subflow per loop), " +
			"so the band spans golden's simulation one slot slower to one slot faster"
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
