package shoal

import (
	"fmt"
	"math"
	"strconv"

	gs "github.com/labrunner/labrunner/golden/shoal"
	"github.com/labrunner/labrunner/results"
	ts "github.com/labrunner/labrunner/traffic/shoal"
)

// Expectations come from golden/shoal in two ways. Figures that do not
// depend on the traffic the runner drew (arithmetic, bounds, the schedule,
// fair rates of a fixed matrix) come from its Predict, as `labrunner golden
// predict shoal` prints them. Figures of one run — an incast, a permutation,
// a random workload — come from its reference simulation fed with the
// exact flows the traffic generator loaded, with the tolerance bands
// golden/shoal's package documentation gives for those metrics; the tests
// cross-check that for golden's own default flows the two ways agree.

// quiet turns off Predict's optional work; tests ask for what they need.
var quiet = map[string]string{
	"senders": "", "perm_slot_cycles": "", "perm_pairs": "", "fair_flows": "", "failures": "", "list_schedule": "off", "sim": "",
}

// predict runs golden/shoal's Predict on the rack's configuration with extra
// settings and indexes the expectations by key.
func (k *rack) predict(extra map[string]string) (map[string]results.Expectation, error) {
	set := k.settings(quiet)
	for key, v := range extra {
		set[key] = v
	}
	exps, err := gs.Model{}.Predict(set)
	if err != nil {
		return nil, fmt.Errorf("golden/shoal: %w", err)
	}
	out := map[string]results.Expectation{}
	for _, e := range exps {
		out[e.Key()] = e
	}
	return out, nil
}

// pick returns one expectation of a Predict result.
func pick(exps map[string]results.Expectation, metric string, params results.Params) (results.Expectation, error) {
	e, ok := exps[results.Key(metric, params)]
	if !ok {
		return e, fmt.Errorf("golden/shoal predicts no %s", results.Key(metric, params))
	}
	return e, nil
}

// goldenFlows turns the generator's flows into golden/shoal's: the same
// sources, destinations, start times and bytes; cells by golden's own cell
// payload.
func goldenFlows(c gs.Config, flows []ts.Flow) []gs.Flow {
	out := make([]gs.Flow, len(flows))
	p := int64(c.PayloadBytes())
	for i, f := range flows {
		out[i] = gs.Flow{Src: f.Src, Dst: f.Dst, Bytes: f.Bytes, Cells: (f.Bytes + p - 1) / p, StartNS: float64(f.StartNS)}
	}
	return out
}

// incastExpect is golden/shoal's prediction for one incast run: the
// simulation of these flows gives the fastest, slowest and mean FCT, each
// within one epoch (golden doc: "± one epoch (Fig. 10, Fig. 13)": the slot
// at which a cell reaches its intermediate decides whether it makes that
// epoch's slot), and the largest queue, bounded by the number of senders
// (§6.2: "grows up to a maximum of 7 (Eq. 5)").
func incastExpect(c gs.Config, flows []ts.Flow) (fct map[string]results.Expectation, maxQ results.Expectation, err error) {
	gf := goldenFlows(c, flows)
	r, err := gs.Simulate(c, gf, gs.SimOptions{})
	if err != nil {
		return nil, maxQ, fmt.Errorf("golden/shoal incast simulation: %w", err)
	}
	fastest, slowest, mean := math.Inf(1), 0.0, 0.0
	for i, fr := range r.Flows {
		if !fr.Done {
			return nil, maxQ, fmt.Errorf("golden/shoal: incast flow %d>%d did not complete in its simulation", gf[i].Src, gf[i].Dst)
		}
		t := fr.FCTNS(gf[i])
		fastest, slowest, mean = math.Min(fastest, t), math.Max(slowest, t), mean+t/float64(len(gf))
	}
	senders := strconv.Itoa(len(flows))
	src := "Shoal §6.2, Fig. 10: 7:1 incast of seven-cell flows, fastest 6.05 us, slowest 6.9 us"
	E := c.EpochNS() / 1000
	note := fmt.Sprintf("golden/shoal slot simulation of the same %d flows; ±1 epoch (%.4f µs)", len(flows), E)
	fct = map[string]results.Expectation{}
	for _, x := range []struct {
		name string
		v    float64
	}{{"fastest", fastest}, {"slowest", slowest}, {"mean", mean}} {
		e := results.Expectation{Metric: "shoal.incast.fct_us", Params: results.Params{"senders": senders, "flow": x.name},
			Value: x.v / 1000, Unit: "µs", AbsTol: E, Source: src, Note: note,
			Budget: fmt.Sprintf("±1 epoch (%.4f µs, %d slots of %.1f ns): the slot in which a cell reaches its intermediate decides the epoch it leaves in; the flows, their start and the schedule are the runner's, exactly as simulated", E, c.EpochSlots(), c.SlotNS)}
		if e.NeedsReason() {
			e.Wide = "one epoch is the resolution of a completion time on a slotted fabric (reading S61): a finer band would judge which slot a cell happened to catch"
		}
		fct[x.name] = e
	}
	// Every cell of an incast flow waits at an intermediate node (detour
	// routing, §3.3), so the largest queue is at least one cell: a fabric
	// that queues nothing (or moves nothing) fails.
	maxQ = results.Expectation{Metric: "shoal.incast.max_queue", Params: results.Params{"senders": senders},
		Value: float64(r.MaxQueue), Min: results.Float(1), Max: results.Float(float64(len(flows))), Unit: "cells",
		Source: "Shoal §6.2: the queue for the destination grows up to a maximum of 7 (Eq. 5)",
		Note:   fmt.Sprintf("at most one cell per sender; golden simulation peaks at %d", r.MaxQueue),
		Budget: fmt.Sprintf("the bound of Eq. 5 (1 + incast degree, here %d senders) above; one cell below (every cell detours through an intermediate)", len(flows)),
		Wide:   "Eq. 5 is a bound, not a prediction: any depth from one cell to the bound is the mechanism working (reading S61)"}
	return fct, maxQ, nil
}

// permutationExpect is golden/shoal's band for the destination throughput
// of one permutation run (§6.2, Fig. 9), for these flows and this window:
// golden's simulation of the same permutation, widened by its budget —
// when a cell and its feedback can be acted on, which the paper fixes only
// to within a slot (a feedback loop a slot longer or shorter, the upper end
// capped by the max-min ceiling of §3.3.2's mechanism, reading S3), the
// run's phase against the schedule and the window's edges. It returns the
// simulated value too.
func permutationExpect(c gs.Config, flows []ts.Flow, warmup, epochs int) (results.Expectation, float64, error) {
	specs := make([]gs.FlowSpec, len(flows))
	for i, f := range flows {
		specs[i] = gs.FlowSpec{Src: f.Src, Dst: f.Dst}
	}
	e, err := gs.PermutationExpectation(c, specs, gs.PermutationWindow{Warmup: warmup, Epochs: epochs})
	if err != nil {
		return e, 0, fmt.Errorf("golden/shoal permutation band: %w", err)
	}
	return e, e.Value, nil
}

// meas builds a measurement; text, when given, is what a person reads in
// the report next to the value.
func meas(board string, p results.Params, metric string, v float64, text string) results.Measurement {
	return results.Measurement{Board: board, Params: p, Metric: metric, Value: v, Text: text}
}
