package shoal

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
)

// WorkloadKind selects the traffic matrix of a Workload.
type WorkloadKind int

const (
	// Uniform: sources and destinations uniformly over all nodes (§7.3).
	Uniform WorkloadKind = iota
	// Skewed: the disaggregated mix of §7.4, "more than 84% of the flows
	// being generated among a third of the nodes".
	Skewed
)

// String is the parameter spelling.
func (k WorkloadKind) String() string {
	switch k {
	case Uniform:
		return "uniform"
	case Skewed:
		return "skewed"
	}
	return fmt.Sprintf("workload(%d)", int(k))
}

// ParseWorkloadKind reads "uniform" or "skewed".
func ParseWorkloadKind(s string) (WorkloadKind, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "uniform":
		return Uniform, nil
	case "skewed", "disaggregated":
		return Skewed, nil
	}
	return 0, fmt.Errorf("workload %q unknown (want uniform or skewed)", s)
}

// Workload figures of §7.3 and §7.4.
const (
	ParetoShape     = 1.05    // §7.3: "Pareto distribution with shape parameter 1.05"
	MeanFlowBytes   = 100_000 // §7.3: "mean 100 KB"
	ShortFlowBytes  = 100_000 // §7.3: short flows ≤ 100 KB
	LongFlowBytes   = 1_000_000
	HotFraction     = 1.0 / 3 // §7.4: "among a third of the nodes"
	HotShare        = 0.84    // §7.4: "more than 84% of the flows"
	DefaultLoadGbps = 50      // the R of L = F/(R·N·τ); see Workload.LoadGbps
	// MaxFlowBytes caps a Pareto draw so that cell counts stay far from
	// overflow; P(X > 10 GB) ≈ 2·10⁻⁷ per flow, so a run of 100,000 flows is
	// untouched by it 98% of the time.
	MaxFlowBytes = 10_000_000_000
)

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

// MeanInterarrivalNS is τ = F·8 / (R·N·L), the rack-wide mean time between
// flow arrivals.
func (w Workload) MeanInterarrivalNS() float64 {
	return w.MeanBytes * 8 / (w.LoadGbps * float64(w.Nodes) * w.Load)
}

// Validate checks the workload's figures.
func (w Workload) Validate() error {
	switch {
	case w.Nodes < 2 || w.Nodes > MaxNodes:
		return fmt.Errorf("workload: %d nodes: want 2..%d", w.Nodes, MaxNodes)
	case w.Flows < 0 || w.Flows > 100_000_000:
		return fmt.Errorf("workload: %d flows: want 0..100000000", w.Flows)
	case !(w.Load > 0) || w.Load > 100:
		return fmt.Errorf("workload: load %g: want 0 < L ≤ 100", w.Load)
	case !(w.LoadGbps > 0) || math.IsInf(w.LoadGbps, 0):
		return fmt.Errorf("workload: load rate R = %g Gb/s: want > 0", w.LoadGbps)
	case !(w.Shape > 1) || math.IsInf(w.Shape, 0):
		return fmt.Errorf("workload: Pareto shape %g: want > 1 (a finite mean)", w.Shape)
	case !(w.MeanBytes >= 1) || w.MeanBytes > MaxFlowBytes:
		return fmt.Errorf("workload: mean flow size %g B: want 1..%d", w.MeanBytes, int64(MaxFlowBytes))
	case w.Kind != Uniform && w.Kind != Skewed:
		return fmt.Errorf("workload: kind %d unknown", int(w.Kind))
	case w.Kind == Skewed && (!(w.HotFraction > 0) || w.HotFraction > 1 || !(w.HotShare >= 0) || w.HotShare > 1):
		return fmt.Errorf("workload: skew %g of the flows among %g of the nodes: want fractions in [0, 1]", w.HotShare, w.HotFraction)
	}
	alive := w.Nodes
	seen := make(map[int]bool)
	for _, f := range w.Failed {
		if f < 0 || f >= w.Nodes {
			return fmt.Errorf("workload: failed node %d: nodes are 0..%d", f, w.Nodes-1)
		}
		if !seen[f] {
			seen[f] = true
			alive--
		}
	}
	if alive < 2 {
		return fmt.Errorf("workload: %d working nodes; flows need two", alive)
	}
	return nil
}

// Generate draws the flows, seeded and deterministic (PCG of math/rand/v2,
// whose output is fixed by its algorithm). Sizes are payload bytes; a flow
// carries ceil(bytes / payload) cells of `payload` bytes each.
func (w Workload) Generate(payload int) ([]Flow, error) {
	if err := w.Validate(); err != nil {
		return nil, err
	}
	if payload < 1 {
		return nil, fmt.Errorf("workload: cell payload %d B: want ≥ 1", payload)
	}
	r := rand.New(rand.NewPCG(w.Seed, 0x5ba1d1c0ffee))
	failed := make([]bool, w.Nodes)
	for _, f := range w.Failed {
		failed[f] = true
	}
	var alive []int
	for i := 0; i < w.Nodes; i++ {
		if !failed[i] {
			alive = append(alive, i)
		}
	}
	var hot []int
	if w.Kind == Skewed {
		p := r.Perm(len(alive))
		k := max(2, int(math.Round(w.HotFraction*float64(len(alive)))))
		k = min(k, len(alive))
		for _, q := range p[:k] {
			hot = append(hot, alive[q])
		}
	}
	pick := func(set []int) (int, int) {
		a := r.IntN(len(set))
		b := r.IntN(len(set) - 1)
		if b >= a {
			b++
		}
		return set[a], set[b]
	}
	tau := w.MeanInterarrivalNS()
	xm := w.MeanBytes * (w.Shape - 1) / w.Shape // Pareto scale for the mean
	flows := make([]Flow, w.Flows)
	t := 0.0
	for k := range flows {
		t += -math.Log(1-r.Float64()) * tau
		set := alive
		if w.Kind == Skewed && r.Float64() < w.HotShare {
			set = hot
		}
		src, dst := pick(set)
		bytes := xm / math.Pow(1-r.Float64(), 1/w.Shape)
		b := int64(math.Min(math.Ceil(bytes), MaxFlowBytes))
		flows[k] = Flow{Src: src, Dst: dst, Bytes: b, Cells: (b + int64(payload) - 1) / int64(payload), StartNS: t}
	}
	return flows, nil
}
