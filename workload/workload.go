// Package workload draws the synthetic datacenter workloads of Shoal
// (NSDI 2019) §7.3 and §7.4: Poisson flow arrivals over the rack, Pareto
// flow sizes, and sources and destinations uniform over the nodes (§7.3)
// or concentrated on a third of them (§7.4's disaggregated mix). The flows
// labrunner sends to a Shoal rack (traffic/shoal) and the flows golden/shoal
// simulates at the paper's scale are drawn here, one reading of the
// section for both; each side adds its own limits (a descriptor's 32-bit
// fields, the simulator's node count). The emulator never sees a workload,
// only the descriptors the driver writes.
package workload

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
)

// Kind selects the traffic matrix.
type Kind int

const (
	// Uniform: sources and destinations uniformly over the nodes (§7.3).
	Uniform Kind = iota
	// Skewed: the disaggregated mix of §7.4, "more than 84% of the flows
	// being generated among a third of the nodes".
	Skewed
)

// String is the parameter spelling.
func (k Kind) String() string {
	switch k {
	case Uniform:
		return "uniform"
	case Skewed:
		return "skewed"
	}
	return fmt.Sprintf("workload(%d)", int(k))
}

// ParseKind reads "uniform" or "skewed" ("disaggregated", §7.4's name for
// the mix, is Skewed).
func ParseKind(s string) (Kind, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "uniform":
		return Uniform, nil
	case "skewed", "disaggregated":
		return Skewed, nil
	}
	return 0, fmt.Errorf("workload %q unknown (want uniform or skewed)", s)
}

// The figures of §7.3 and §7.4.
const (
	ParetoShape = 1.05    // §7.3: "Pareto distribution with shape parameter 1.05"
	MeanBytes   = 100_000 // §7.3: "mean 100 KB"
	HotFraction = 1.0 / 3 // §7.4: "among a third of the nodes"
	HotShare    = 0.84    // §7.4: "more than 84% of the flows"
)

// DefaultStream is the PCG stream Draw uses when a Spec names none.
const DefaultStream = 0x776f726b // "work"

// Spec is a workload: what to draw and from which seed.
type Spec struct {
	Kind  Kind
	Nodes int
	Flows int
	// Load is L = F/(R·N·τ) (§7.3): F the mean flow size, R = LoadGbps, N
	// the nodes, τ the mean inter-arrival time of flows in the rack. "L = 1
	// means that, on average, there are N active flows."
	Load     float64
	LoadGbps float64
	// Shape and Mean of the Pareto size distribution.
	Shape, Mean float64
	// MaxBytes truncates the size distribution (0: no limit); the caller
	// sets what its flows can carry.
	MaxBytes float64
	// HotFraction and HotShare shape Skewed: HotShare of the flows have both
	// ends among a random HotFraction of the nodes, the rest are uniform.
	HotFraction, HotShare float64
	// Exclude lists nodes that neither send nor receive (failed, absent).
	Exclude []int
	Seed    uint64
	// Stream is the PCG stream of the draw (0: DefaultStream), so that a
	// user whose results are pinned to another stream keeps them.
	Stream uint64
}

// New is the §7.3 workload (§7.4 for Skewed) with the paper's
// distributions and the given size, load, rate and seed.
func New(kind Kind, nodes, flows int, load, loadGbps float64, seed uint64) Spec {
	return Spec{Kind: kind, Nodes: nodes, Flows: flows, Load: load, LoadGbps: loadGbps,
		Shape: ParetoShape, Mean: MeanBytes, HotFraction: HotFraction, HotShare: HotShare, Seed: seed}
}

// MeanInterarrivalNS is τ = F·8 / (R·N·L): the rack-wide mean time between
// flow arrivals.
func (s Spec) MeanInterarrivalNS() float64 {
	return s.Mean * 8 / (s.LoadGbps * float64(s.Nodes) * s.Load)
}

// Check refuses figures no workload can have; the limits of what a user
// can carry (nodes, flows, bytes) are the user's to check.
func (s Spec) Check() error {
	switch {
	case s.Nodes < 2:
		return fmt.Errorf("workload: %d nodes: want at least 2", s.Nodes)
	case s.Flows < 0:
		return fmt.Errorf("workload: %d flows: want 0 or more", s.Flows)
	case !(s.Load > 0) || s.Load > 100:
		return fmt.Errorf("workload: load %g: want 0 < L ≤ 100", s.Load)
	case !(s.LoadGbps > 0) || math.IsInf(s.LoadGbps, 0):
		return fmt.Errorf("workload: load rate R = %g Gb/s: want > 0", s.LoadGbps)
	case !(s.Shape > 1) || math.IsInf(s.Shape, 0):
		return fmt.Errorf("workload: Pareto shape %g: want > 1 (a finite mean)", s.Shape)
	case !(s.Mean >= 1) || math.IsInf(s.Mean, 0):
		return fmt.Errorf("workload: mean flow size %g B: want at least 1", s.Mean)
	case s.MaxBytes < 0 || math.IsNaN(s.MaxBytes):
		return fmt.Errorf("workload: max flow size %g B: want 0 (none) or more", s.MaxBytes)
	case s.Kind != Uniform && s.Kind != Skewed:
		return fmt.Errorf("workload: kind %d unknown", int(s.Kind))
	case s.Kind == Skewed && (!(s.HotFraction > 0) || s.HotFraction > 1 || !(s.HotShare >= 0) || s.HotShare > 1):
		return fmt.Errorf("workload: skew of %g of the flows among %g of the nodes: want fractions in [0, 1]", s.HotShare, s.HotFraction)
	}
	for _, x := range s.Exclude {
		if x < 0 || x >= s.Nodes {
			return fmt.Errorf("workload: excluded node %d: nodes are 0..%d", x, s.Nodes-1)
		}
	}
	if n := len(s.Alive()); n < 2 {
		return fmt.Errorf("workload: %d of %d nodes excluded; flows need two", s.Nodes-n, s.Nodes)
	}
	return nil
}

// Alive are the nodes not excluded, in order.
func (s Spec) Alive() []int {
	out := make([]int, 0, max(s.Nodes, 0))
	for i := 0; i < s.Nodes; i++ {
		if !slices.Contains(s.Exclude, i) {
			out = append(out, i)
		}
	}
	return out
}

// Arrival is one drawn flow: its ends, its size in bytes (whole, at least
// 1, at most MaxBytes) and its start, ns from the workload's start.
type Arrival struct {
	Src, Dst int
	Bytes    int64
	StartNS  float64
}

func (s Spec) rng() *rand.Rand {
	stream := s.Stream
	if stream == 0 {
		stream = DefaultStream
	}
	return rand.New(rand.NewPCG(s.Seed, stream))
}

// Hot returns the nodes a Skewed workload concentrates on (nil for
// Uniform), sorted: the same nodes Draw uses.
func (s Spec) Hot() []int {
	if s.Check() != nil {
		return nil
	}
	hot := slices.Clone(s.hot(s.rng(), s.Alive()))
	slices.Sort(hot)
	return hot
}

// hot draws the hot third of the nodes (§7.4) as the first thing r does,
// so that Hot and Draw agree; the order is the draw's (it picks ends by
// index into it).
func (s Spec) hot(r *rand.Rand, alive []int) []int {
	if s.Kind != Skewed {
		return nil
	}
	p := r.Perm(len(alive))
	k := min(max(2, int(math.Round(s.HotFraction*float64(len(alive))))), len(alive))
	hot := make([]int, 0, k)
	for _, q := range p[:k] {
		hot = append(hot, alive[q])
	}
	return hot
}

// Draw draws the flows in start order, seeded and deterministic (PCG of
// math/rand/v2, whose output is fixed by its algorithm), and hands each to
// each with its index; an error from each ends the draw and is returned.
func (s Spec) Draw(each func(k int, a Arrival) error) error {
	if err := s.Check(); err != nil {
		return err
	}
	r := s.rng()
	alive := s.Alive()
	hot := s.hot(r, alive)
	pick := func(set []int) (int, int) {
		a := r.IntN(len(set))
		b := r.IntN(len(set) - 1)
		if b >= a {
			b++
		}
		return set[a], set[b]
	}
	tau := s.MeanInterarrivalNS()
	xm := s.Mean * (s.Shape - 1) / s.Shape // Pareto scale for the mean
	limit := math.Inf(1)
	if s.MaxBytes > 0 {
		limit = math.Max(1, math.Floor(s.MaxBytes))
	}
	t := 0.0
	for k := 0; k < s.Flows; k++ {
		// Poisson arrivals: exponential gaps of mean τ (§7.3).
		t += -math.Log(1-r.Float64()) * tau
		set := alive
		if s.Kind == Skewed && r.Float64() < s.HotShare {
			set = hot
		}
		src, dst := pick(set)
		// Pareto(shape, xm) by inversion: xm / U^(1/shape), U in (0, 1].
		b := math.Min(math.Ceil(xm/math.Pow(1-r.Float64(), 1/s.Shape)), limit)
		if err := each(k, Arrival{Src: src, Dst: dst, Bytes: int64(b), StartNS: t}); err != nil {
			return err
		}
	}
	return nil
}
