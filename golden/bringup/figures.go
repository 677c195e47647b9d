package bringup

import (
	"fmt"

	"github.com/labrunner/labrunner/golden"
)

// The papers' figures that golden/bringup reproduces, for docs/figures.md:
// Aquila's management plane (section "Aquila management plane") and
// Shoal's guard band and slot (§3.4, §6.1, §7.1; section "Shoal (NSDI
// 2019)"). The tests recompute every one.

// predictOne runs Predict and returns the value of one metric.
func predictOne(set map[string]string, metric string) (float64, error) {
	es, err := Model{}.Predict(set)
	if err != nil {
		return 0, err
	}
	for _, e := range es {
		if e.Metric == metric && len(e.Params) == 0 {
			return e.Value, nil
		}
	}
	return 0, fmt.Errorf("bringup predicts no %s", metric)
}

func figure(set map[string]string, metric string) func() (float64, error) {
	return func() (float64, error) { return predictOne(set, metric) }
}

// AquilaFigures lists the management-plane figures of Aquila (NSDI 2022).
func AquilaFigures() []golden.Figure {
	return []golden.Figure{
		{Section: "§3.5: data bytes a 64-bit MOS word carries", Unit: "B", Paper: 6, Golden: MOSDataBytes,
			Compute: func() (float64, error) { return MOSDataBytes, nil }},
		{Section: "§4.4: bring-up of a Clique in waves (a full-sized Clique: about 2.5 hours)", Unit: "ms", Paper: 2.5 * 3600 * 1000, Golden: 6.832,
			Compute: figure(map[string]string{}, "bringup.time_ms"),
			Reason:  "a different rack: golden's figure is the lab's 2x4 Clique (8 boards, 3 waves) at the lab's 10^6 MOS words/s and 16 KB per board; the paper's Clique has hundreds of TiNs and states neither its MOS rate nor what it sends a TiN, only a spread of 3 to 48 minutes per TiN"},
	}
}

// ShoalFigures lists Shoal's guard band and slot figures (§3.4, §6.1,
// §7.1) as golden/bringup derives them.
func ShoalFigures() []golden.Figure {
	proto, rack := map[string]string{"shoal": "prototype"}, map[string]string{"shoal": "rack"}
	return []golden.Figure{
		{Section: "§6.1: guard band of the prototype (reconfiguration + sub-cycle precision), golden/bringup", Unit: "cycles", Paper: 1, Golden: 1, Compute: figure(proto, "bringup.shoal.guard_cycles")},
		{Section: "§6.1: slot for about 10% guard overhead, golden/bringup", Unit: "cycles", Paper: 12, Golden: 12, Compute: figure(proto, "bringup.shoal.slot_cycles")},
		{Section: "§7.1: guard band of the rack (2.5 ns reconfiguration + 0.25 ns), golden/bringup", Unit: "ns", Paper: 2.75, Golden: 2.75, Compute: figure(rack, "bringup.shoal.guard_ns")},
		{Section: "§7.1: slot for about 10% guard overhead, golden/bringup", Unit: "ns", Paper: 23.25, Golden: 23.25, Compute: figure(rack, "bringup.shoal.slot_ns")},
	}
}
