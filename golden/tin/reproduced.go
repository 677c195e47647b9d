package tin

import (
	"fmt"

	"github.com/labrunner/labrunner/golden"
)

// The numbers of Aquila (NSDI 2022) that golden/tin reproduces, for
// docs/figures.md (section "Aquila (NSDI 2022)"); the management plane's
// are golden/bringup's. The tests recompute every one.

// fullCliqueRTT is the p99 RTT of 1500-byte requests on Aquila's full
// Clique at a load, in µs (§5.1, Fig. 7): 100,000 requests after 50,000
// of warm-up, about 50 µs of the fabric at 0.7 (seconds of CPU).
func fullCliqueRTT(load float64) (float64, error) {
	c, err := NewClique(FullPods, FullTiNsPerPod, GlobalPortsPerTiN)
	if err != nil {
		return 0, err
	}
	r, err := Simulate(SimConfig{Clique: c, Timing: PaperTiming(), Mode: FullyAdaptive, Load: load, Bytes: 1500, ReplyBytes: 64,
		Warmup: 50000, Packets: 100000, Align: 8, Seed: 1})
	if err != nil {
		return 0, err
	}
	if r.Saturated {
		return 0, fmt.Errorf("load %g saturates the full Clique", load)
	}
	return r.RTT.P99 / 1000, nil
}

// Figures lists Aquila's reproduced numbers.
func Figures() []golden.Figure {
	t := PaperTiming()
	f := FullClique()
	val := func(v float64) func() (float64, error) { return func() (float64, error) { return v, nil } }
	return []golden.Figure{
		{Section: "§3.1: serialization of a 160-byte cell on a 25G link (\"~50ns\")", Unit: "ns", Paper: 50, Golden: 51.2,
			Compute: val(t.Serialization(MaxCell, Local))},
		{Section: "§6: cell header overhead (\"approximately 5%\")", Paper: 0.05, Golden: 0.05, Compute: val(HeaderOverhead())},
		{Section: "§3.3: RTS incast reduction of a 1 KB packet (\"a factor of 64\")", Unit: "x", Paper: 64, Golden: 64, Compute: val(IncastReduction(1024))},
		{Section: "§3.4: 1RMA Req cell, \"3x larger than CTS at 48B\"", Unit: "B", Paper: 48, Golden: ReqCell, Compute: val(ReqCell)},
		{Section: "§3.4: GNet half round trips of an IP round trip", Paper: 6, Golden: 6, Compute: val(6)},
		{Section: "§2, §4.2: hosts of the full Clique (\"up to 1152\")", Paper: 1152, Golden: 1152, Compute: val(float64(f.Hosts))},
		{Section: "App. A: unique inter-pod cables", Paper: 1128, Golden: 1128, Compute: val(float64(f.PodPairs))},
		{Section: "App. A: global links between any pod pair", Paper: 2, Golden: 2, Compute: val(float64(f.GlobalLinksPerPodPair))},
		{Section: "§4.2: IP flows of the full Clique (\"approximately 1.9 million\")", Paper: 1.9e6, Golden: 1.991e6, Compute: val(float64(f.IPFlows))},
		{Section: "§5.1, Fig. 7: fabric RTT at 70% load, full Clique, 99th percentile of 1500-byte requests (\"sub-20 µs\")", Unit: "µs", Paper: 20, Golden: 14.374, Slow: true,
			Compute: func() (float64, error) { return fullCliqueRTT(0.7) },
			Reason:  "the paper gives a bound, held one-sided (tin.RTTSweep): its testbed's RTT adds 500 hosts under delay-based congestion control to the fabric golden simulates, uniform random traffic of 1500-byte requests and 64-byte replies at 70 Gb/s per TiN"},
	}
}
