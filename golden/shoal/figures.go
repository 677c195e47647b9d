package shoal

import (
	"sync"

	"github.com/labrunner/labrunner/golden"
)

// The paper's figures that golden/shoal reproduces, for docs/figures.md
// (section "Shoal (NSDI 2019)"); the tests recompute every one.

// incast7 is the 7:1 incast of §6.2 on the prototype: the fastest and
// slowest flow (ns) and the longest queue.
func incast7() (IncastResult, error) { return Incast(Prototype(), 7, 7, 0, SimOptions{}) }

var (
	highLoadOnce sync.Once
	highLoadSum  WorkloadSummary
	highLoadErr  error
)

// highLoad is the §7.3 workload on the §7.1 rack at load 0.7, 10,000 flows,
// seed 1 (about 15 s of CPU), run once per process.
func highLoad() (WorkloadSummary, error) {
	highLoadOnce.Do(func() {
		c := Rack()
		highLoadSum, highLoadErr = RunWorkload(c, NewWorkload(Uniform, c.Nodes, 10000, 0.7, 1), SimOptions{})
	})
	return highLoadSum, highLoadErr
}

// Figures lists the figures of Shoal (NSDI 2019) golden/shoal reproduces.
func Figures() []golden.Figure {
	proto, rack := Prototype(), Rack()
	exact := func(v float64) func() (float64, error) { return func() (float64, error) { return v, nil } }
	tableOne := func(k FailureKind) func() (float64, error) {
		return func() (float64, error) {
			s, err := NewSchedule(rack.Nodes, 1, rack.Schedule)
			if err != nil {
				return 0, err
			}
			return FailedSlotFraction(Topology{Nodes: rack.Nodes, Radix: rack.Radix}, s, Failure{Kind: k, Index: 3, Spine: 2})
		}
	}
	perm128 := func() (float64, error) {
		c := Prototype()
		c.SlotNS = 128 * CycleNS
		return permutationRun(c, permutationFlows(8, 8, 1), PermutationWindow{Warmup: 200, Epochs: 2000}, 0)
	}
	return []golden.Figure{
		{Section: "§6.1: epoch of the 8-node prototype", Unit: "µs", Paper: 0.53, Golden: 0.5376, Compute: exact(proto.EpochNS() / 1000)},
		{Section: "§6.1: guard band overhead of the prototype (1 of 12 cycles)", Unit: "", Paper: 0.10, Golden: 0.08333, Compute: exact(proto.GuardOverhead()),
			Reason: "the paper's rounding: \"to keep the guard band overhead to around 10%\"; its own slot is 1 guard cycle of 12"},
		{Section: "§6.2: node-to-node cell propagation latency", Unit: "µs", Paper: 1.57, Golden: 1.576, Compute: exact(proto.PropNS / 1000)},
		{Section: "§6.2, Fig. 10: 7:1 incast of 448 B, fastest flow", Unit: "µs", Paper: 6.05, Golden: 6.107, Compute: func() (float64, error) {
			r, err := incast7()
			return r.FastestNS / 1000, err
		}},
		{Section: "§6.2, Fig. 10: 7:1 incast of 448 B, slowest flow", Unit: "µs", Paper: 6.9, Golden: 6.568, Compute: func() (float64, error) {
			r, err := incast7()
			return r.SlowestNS / 1000, err
		}},
		{Section: "§6.2: the 7:1 incast's queue for the destination grows up to", Unit: "cells", Paper: 7, Golden: 6, Compute: func() (float64, error) {
			r, err := incast7()
			return float64(r.MaxQueue), err
		}, Reason: "the intermediate's own cell for the destination leaves in the first epoch, 2.9 epochs before the other senders' cells arrive (1.576 µs away), so the queue peaks at 6; 7 is Eq. 5's one cell per sender, the bound golden's band keeps as its upper end"},
		{Section: "§6.2, Fig. 9: full permutation at 128-cycle slots, \"converges towards ∼50%\"", Unit: "", Paper: 0.5, Golden: 0.5134, Compute: perm128},
		{Section: "§7.1: epoch of the 512-node rack", Unit: "µs", Paper: 2.9, Golden: 2.976, Compute: exact(rack.EpochNS() / 1000)},
		{Section: "§7.1: max throughput per node (4 × 64 B per 23.25 ns slot)", Unit: "Gb/s", Paper: 90, Golden: 88.09, Compute: exact(rack.NodeGbps())},
		{Section: "§7.1: guard band overhead of the rack (2.75 of 23.25 ns)", Unit: "", Paper: 0.10, Golden: 0.1183, Compute: exact(rack.GuardOverhead()),
			Reason: "the paper's rounding: \"around 10%\"; 2.75/23.25 by its own figures"},
		{Section: "§3.3.4: buffering per node, 512 nodes and 64 B cells", Unit: "MB", Paper: 17, Golden: 16.74, Compute: exact(float64(rack.BufferBytes()) / 1e6)},
		{Section: "§3.3.4: on-chip cell buffer per node", Unit: "KB", Paper: 32, Golden: 32.7, Compute: exact(float64(rack.OnChipBufferBytes()) / 1e3)},
		{Section: "Table 1: one node-leaf link, 512 nodes (≈ 1/N)", Unit: "", Paper: 1.0 / 512, Golden: 0.001957, Compute: tableOne(FailNodeLink)},
		{Section: "Table 1: one leaf switch, 512 nodes (≈ 1/√(2N))", Unit: "", Paper: 1.0 / 32, Golden: 0.03131, Compute: tableOne(FailLeaf)},
		{Section: "Table 1: one leaf-spine link, one direction, 512 nodes (≈ 2/N; reading S41)", Unit: "", Paper: 2.0 / 512, Golden: 0.003906, Compute: tableOne(FailLeafSpineDown)},
		{Section: "Table 1: one leaf-spine link cut both ways, 512 nodes", Unit: "", Paper: 2.0 / 512, Golden: 0.007461, Compute: tableOne(FailLeafSpineLink),
			Reason: "Table 1's 2/N counts one direction (reproduced in the row above, reading S41); a cable cut both ways also cuts every circuit of the node on the spine's port, ≈ 4/N, and no decomposition gives 2/N for it together with Table 1's spine figure"},
		{Section: "Table 1: one spine switch, 512 nodes (≈ 2√2/√N)", Unit: "", Paper: 0.125, Golden: 0.1212, Compute: tableOne(FailSpine)},
		{Section: "§7.3, Fig. 16: maximum queue at high load (512 nodes; golden: load 0.7, 10,000 flows)", Unit: "cells", Paper: 11, Golden: 6, Slow: true, Compute: func() (float64, error) {
			s, err := highLoad()
			return float64(s.MaxQueue), err
		}, Reason: "the paper's runs end after 10^6 flows and do not say which load is high; golden's largest queue is 6 cells at loads 0.5, 0.7 and 0.9 over 10^4 flows (10^6 would take about 20 minutes of CPU): a maximum over a run grows with its length"},
		{Section: "§7.3, Fig. 16: maximum aggregate queue per node at high load (golden: load 0.7)", Unit: "cells", Paper: 336, Golden: 367, Slow: true, Compute: func() (float64, error) {
			s, err := highLoad()
			return float64(s.MaxNodeQueue), err
		}, Reason: "the paper does not say which load is high: golden gives 338 cells at load 0.5 (within 1%), 367 at 0.7 and 395 at 0.9, over 10^4 flows where the paper ran 10^6"},
		{Section: "§7.2, Fig. 12: full permutation of the 512-node rack, relative to one pair (\"halves\")", Unit: "", Paper: 0.5, Golden: 0.5041, Slow: true, Compute: func() (float64, error) {
			one, err := Permutation(Rack(), 1, 1, 15, 40)
			if err != nil {
				return 0, err
			}
			all, err := Permutation(Rack(), 512, 1, 15, 40)
			return all.Throughput / one.Throughput, err
		}},
	}
}
