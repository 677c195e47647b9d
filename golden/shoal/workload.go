package shoal

import (
	"fmt"

	"github.com/labrunner/labrunner/workload"
)

// WorkloadKind selects the traffic matrix of a Workload (package workload:
// the same §7.3/§7.4 draw as the flows a rack is sent).
type WorkloadKind = workload.Kind

const (
	// Uniform: sources and destinations uniformly over all nodes (§7.3).
	Uniform = workload.Uniform
	// Skewed: the disaggregated mix of §7.4.
	Skewed = workload.Skewed
)

// ParseWorkloadKind reads "uniform" or "skewed".
func ParseWorkloadKind(s string) (WorkloadKind, error) { return workload.ParseKind(s) }

// Workload figures of §7.3 and §7.4.
const (
	ParetoShape     = workload.ParetoShape
	MeanFlowBytes   = workload.MeanBytes
	ShortFlowBytes  = 100_000 // §7.3: short flows ≤ 100 KB
	LongFlowBytes   = 1_000_000
	HotFraction     = workload.HotFraction
	HotShare        = workload.HotShare
	DefaultLoadGbps = 50 // the R of L = F/(R·N·τ); see Workload.LoadGbps
	// MaxFlowBytes caps a Pareto draw so that cell counts stay far from
	// overflow; P(X > 10 GB) ≈ 2·10⁻⁷ per flow, so a run of 100,000 flows is
	// untouched by it 98% of the time.
	MaxFlowBytes = 10_000_000_000
)

// workloadStream is the PCG stream golden/shoal draws its workloads from:
// the pinned simulations (digest_test.go) were drawn from it.
const workloadStream = 0x5ba1d1c0ffee

// Workload is the synthetic datacenter workload of §7.3: Poisson flow
// arrivals, Pareto flow sizes, uniform (or §7.4 skewed) sources and
// destinations.
type Workload struct {
	Kind  WorkloadKind
	Nodes int
	// Flows is the number of flows to draw.
	Flows int
	// Load is L = F / (R·N·τ) (§7.3): F the mean flow size, R the per-node
	// bandwidth LoadGbps, N the nodes, τ the mean inter-arrival time of flows
	// in the rack. "L = 1 means that, on average, there are N active flows."
	Load float64
	// LoadGbps is the R of the load formula. §7.3 compares Shoal's 100 Gb/s
	// nodes with a packet-switched rack of 50 Gb/s nodes under the same
	// workload and calls Shoal "provisioned with 2× bandwidth, to compensate
	// for the throughput overhead of detouring"; with R = 100 Gb/s, any load
	// above ≈ 0.39 would exceed what a Shoal node can carry through detours
	// (77 Gb/s of cell payload, twice for two hops) and no run would reach the
	// bounded queues and finite FCTs §7.3 reports at high load. The default R
	// is therefore 50 Gb/s.
	LoadGbps float64
	// MeanBytes and Shape are the Pareto flow-size distribution.
	MeanBytes float64
	Shape     float64
	// HotFraction and HotShare shape the Skewed mix: HotShare of the flows
	// have both ends among a random HotFraction of the nodes, the rest are
	// uniform over all nodes.
	HotFraction, HotShare float64
	// Failed nodes neither send nor receive.
	Failed []int
	Seed   uint64
}

// NewWorkload returns the §7.3 workload (§7.4 for Skewed) with the paper's
// figures and the given size, load and seed.
func NewWorkload(kind WorkloadKind, nodes, flows int, load float64, seed uint64) Workload {
	return Workload{Kind: kind, Nodes: nodes, Flows: flows, Load: load, LoadGbps: DefaultLoadGbps,
		MeanBytes: MeanFlowBytes, Shape: ParetoShape, HotFraction: HotFraction, HotShare: HotShare, Seed: seed}
}

// spec is the workload as package workload draws it.
func (w Workload) spec() workload.Spec {
	return workload.Spec{Kind: w.Kind, Nodes: w.Nodes, Flows: w.Flows, Load: w.Load, LoadGbps: w.LoadGbps,
		Shape: w.Shape, Mean: w.MeanBytes, MaxBytes: MaxFlowBytes, HotFraction: w.HotFraction, HotShare: w.HotShare,
		Exclude: w.Failed, Seed: w.Seed, Stream: workloadStream}
}

// MeanInterarrivalNS is τ = F·8 / (R·N·L), the rack-wide mean time between
// flow arrivals.
func (w Workload) MeanInterarrivalNS() float64 { return w.spec().MeanInterarrivalNS() }

// Validate checks the workload's figures and the simulator's limits.
func (w Workload) Validate() error {
	switch {
	case w.Nodes < 2 || w.Nodes > MaxNodes:
		return fmt.Errorf("workload: %d nodes: want 2..%d", w.Nodes, MaxNodes)
	case w.Flows < 0 || w.Flows > 100_000_000:
		return fmt.Errorf("workload: %d flows: want 0..100000000", w.Flows)
	case w.MeanBytes > MaxFlowBytes:
		return fmt.Errorf("workload: mean flow size %g B: want 1..%d", w.MeanBytes, int64(MaxFlowBytes))
	}
	return w.spec().Check()
}

// Generate draws the flows, seeded and deterministic. Sizes are payload
// bytes; a flow carries ceil(bytes / payload) cells of `payload` bytes each.
func (w Workload) Generate(payload int) ([]Flow, error) {
	if err := w.Validate(); err != nil {
		return nil, err
	}
	if payload < 1 {
		return nil, fmt.Errorf("workload: cell payload %d B: want ≥ 1", payload)
	}
	flows := make([]Flow, w.Flows)
	err := w.spec().Draw(func(k int, a workload.Arrival) error {
		flows[k] = Flow{Src: a.Src, Dst: a.Dst, Bytes: a.Bytes, Cells: (a.Bytes + int64(payload) - 1) / int64(payload), StartNS: a.StartNS}
		return nil
	})
	return flows, err
}
