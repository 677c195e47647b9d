package shoal

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
)

// Flow is one flow of a traffic pattern: Bytes of payload from node Src to
// node Dst, starting StartNS after traffic time 0. Tag is the runner's flow
// id, returned in the destination's completion record (docs/shoal.md).
type Flow struct {
	Src, Dst int
	Bytes    int64
	StartNS  int64
	Tag      uint32
}

// Cells is how many cells the flow takes with payload bytes per cell
// (docs/shoal.md: ceil(bytes / PAYLOAD_BYTES)).
func (f Flow) Cells(payload int) int64 {
	if payload < 1 {
		return 0
	}
	return (f.Bytes + int64(payload) - 1) / int64(payload)
}

// Limits of the flow descriptor (docs/shoal.md: 32-bit byte count and start
// time in ns).
const (
	MaxDescriptorBytes = math.MaxUint32
	MaxStartNS         = math.MaxUint32
)

// tagFlows numbers flows 1, 2, ... in order (0 is what an empty record FIFO
// reads, so no flow has it).
func tagFlows(fs []Flow) []Flow {
	for i := range fs {
		fs[i].Tag = uint32(i + 1)
	}
	return fs
}

// rng is the generator every pattern draws from: PCG of math/rand/v2, whose
// output is fixed by its algorithm, so a seed gives the same traffic on
// every machine and Go release. stream separates the patterns' sequences.
func rng(seed uint64, stream uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, stream)) }

// Derangement returns a random permutation p of 0..n-1 with no fixed point:
// node i sends to p[i], every node sends one flow and receives one, none to
// itself (§6.2: "each node has exactly one incoming and outgoing flow").
func Derangement(n int, seed uint64) ([]int, error) {
	if n < 2 {
		return nil, fmt.Errorf("permutation of %d nodes: need at least 2", n)
	}
	r := rng(seed, 0x7065726d) // "perm"
	p := make([]int, n)
	for {
		for i := range p {
			p[i] = i
		}
		r.Shuffle(n, func(i, j int) { p[i], p[j] = p[j], p[i] })
		ok := true
		for i, v := range p {
			if i == v {
				ok = false
				break
			}
		}
		if ok {
			return p, nil
		}
	}
}

// Permutation is the full permutation matrix of §6.2: node i starts one
// long-running flow of `bytes` to p[i] at time 0, p a seeded derangement.
func Permutation(n int, bytes int64, seed uint64) ([]Flow, error) {
	p, err := Derangement(n, seed)
	if err != nil {
		return nil, err
	}
	fs := make([]Flow, n)
	for i, d := range p {
		fs[i] = Flow{Src: i, Dst: d, Bytes: bytes}
	}
	return tagFlows(fs), checkFlows(fs, n)
}

// IncastSenders returns the `count` nodes after dst in numbering order (the
// synchronised incast of §6.2 uses every other node of the rack).
func IncastSenders(n, dst, count int) ([]int, error) {
	if dst < 0 || dst >= n {
		return nil, fmt.Errorf("incast destination %d: nodes are 0..%d", dst, n-1)
	}
	if count < 1 || count > n-1 {
		return nil, fmt.Errorf("incast of %d senders: a %d-node rack has 1..%d", count, n, n-1)
	}
	out := make([]int, count)
	for k := range out {
		out[k] = (dst + 1 + k) % n
	}
	return out, nil
}

// Incast is an N:1 synchronised incast (§6.2, Fig. 10; §7.2, Fig. 13): every
// sender starts a flow of `bytes` to dst at time 0.
func Incast(n, dst int, senders []int, bytes int64) ([]Flow, error) {
	fs := make([]Flow, len(senders))
	seen := map[int]bool{}
	for k, s := range senders {
		if seen[s] {
			return nil, fmt.Errorf("incast: sender %d listed twice", s)
		}
		seen[s] = true
		fs[k] = Flow{Src: s, Dst: dst, Bytes: bytes}
	}
	return tagFlows(fs), checkFlows(fs, n)
}

// Pairs builds one flow per given pair, all starting at time 0 (fairness and
// failure tests: a fixed traffic matrix).
func Pairs(n int, pairs [][2]int, bytes int64) ([]Flow, error) {
	fs := make([]Flow, len(pairs))
	for k, p := range pairs {
		fs[k] = Flow{Src: p[0], Dst: p[1], Bytes: bytes}
	}
	return tagFlows(fs), checkFlows(fs, n)
}

// ParsePairs reads "1>0,2>0,4>5": flows src>dst between distinct nodes of an
// n-node rack, each pair once (a flow is all traffic of one node pair,
// Shoal §3.3.2).
func ParsePairs(s string, n int) ([][2]int, error) {
	var out [][2]int
	seen := map[[2]int]bool{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		a, b, ok := strings.Cut(item, ">")
		if !ok {
			return nil, fmt.Errorf("flow %q: write src>dst, e.g. 1>0", item)
		}
		src, err1 := strconv.Atoi(strings.TrimSpace(a))
		dst, err2 := strconv.Atoi(strings.TrimSpace(b))
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("flow %q: src and dst must be node numbers", item)
		}
		if src < 0 || src >= n || dst < 0 || dst >= n {
			return nil, fmt.Errorf("flow %q: nodes are 0..%d", item, n-1)
		}
		if src == dst {
			return nil, fmt.Errorf("flow %q: a node does not send to itself", item)
		}
		p := [2]int{src, dst}
		if seen[p] {
			return nil, fmt.Errorf("flow %q listed twice (a flow is all traffic of one node pair, Shoal §3.3.2)", item)
		}
		seen[p] = true
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no flows in %q: write src>dst pairs separated by commas", s)
	}
	return out, nil
}

// Kind selects the traffic matrix of a Workload.
type Kind int

const (
	// Uniform: sources and destinations uniformly over the nodes (§7.3).
	Uniform Kind = iota
	// Skewed: the disaggregated mix of §7.4, "more than 84% of the flows
	// being generated among a third of the nodes".
	Skewed
)

func (k Kind) String() string {
	switch k {
	case Uniform:
		return "uniform"
	case Skewed:
		return "skewed"
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// ParseKind reads "uniform" or "skewed".
func ParseKind(s string) (Kind, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "uniform":
		return Uniform, nil
	case "skewed", "disaggregated":
		return Skewed, nil
	}
	return 0, fmt.Errorf("workload %q unknown (want uniform or skewed)", s)
}

// Figures of the §7.3/§7.4 workloads.
const (
	ParetoShape = 1.05    // §7.3: "Pareto distribution with shape parameter 1.05"
	MeanBytes   = 100_000 // §7.3: "mean 100 KB"
	HotFraction = 1.0 / 3 // §7.4: "among a third of the nodes"
	HotShare    = 0.84    // §7.4: "more than 84% of the flows"
)

// Workload is the synthetic datacenter workload of §7.3: Poisson flow
// arrivals over the rack, Pareto flow sizes, uniform pairs (§7.4: skewed).
type Workload struct {
	Kind  Kind
	Nodes int
	Flows int
	// Load is L = F/(R·N·τ) (§7.3): F the mean flow size, R = LoadGbps, N
	// the nodes, τ the mean inter-arrival time of flows in the rack.
	Load     float64
	LoadGbps float64
	// Shape and Mean of the Pareto size distribution.
	Shape, Mean float64
	// MaxBytes truncates the size distribution (0: only the descriptor's
	// 32-bit byte count). A run on an emulated rack must fit its wall-time
	// budget; truncation is recorded with the run and lowers the mean.
	MaxBytes int64
	// HotFraction and HotShare shape Skewed: HotShare of the flows have both
	// ends among a random HotFraction of the nodes, the rest are uniform.
	HotFraction, HotShare float64
	// Exclude lists nodes that neither send nor receive (failed, absent).
	Exclude []int
	Seed    uint64
}

// NewWorkload returns the §7.3 workload (§7.4 for Skewed) with the paper's
// distributions and the given size, load, rate and seed.
func NewWorkload(kind Kind, nodes, flows int, load, loadGbps float64, seed uint64) Workload {
	return Workload{Kind: kind, Nodes: nodes, Flows: flows, Load: load, LoadGbps: loadGbps,
		Shape: ParetoShape, Mean: MeanBytes, HotFraction: HotFraction, HotShare: HotShare, Seed: seed}
}

// MeanInterarrivalNS is τ = F·8 / (R·N·L): the rack-wide mean time between
// flow arrivals.
func (w Workload) MeanInterarrivalNS() float64 {
	return w.Mean * 8 / (w.LoadGbps * float64(w.Nodes) * w.Load)
}

// Validate checks the workload's figures.
func (w Workload) Validate() error {
	switch {
	case w.Nodes < 2 || w.Nodes > 1024:
		return fmt.Errorf("workload: %d nodes: want 2..1024", w.Nodes)
	case w.Flows < 1 || w.Flows > 1_000_000:
		return fmt.Errorf("workload: %d flows: want 1..1000000", w.Flows)
	case !(w.Load > 0) || w.Load > 100:
		return fmt.Errorf("workload: load %g: want 0 < L ≤ 100", w.Load)
	case !(w.LoadGbps > 0) || math.IsInf(w.LoadGbps, 0):
		return fmt.Errorf("workload: load rate R = %g Gb/s: want > 0", w.LoadGbps)
	case !(w.Shape > 1) || math.IsInf(w.Shape, 0):
		return fmt.Errorf("workload: Pareto shape %g: want > 1 (a finite mean)", w.Shape)
	case !(w.Mean >= 1) || w.Mean > MaxDescriptorBytes:
		return fmt.Errorf("workload: mean flow size %g B: want 1..%d", w.Mean, int64(MaxDescriptorBytes))
	case w.MaxBytes < 0 || w.MaxBytes > MaxDescriptorBytes:
		return fmt.Errorf("workload: max flow size %d B: want 0 (none) or up to %d", w.MaxBytes, int64(MaxDescriptorBytes))
	case w.Kind != Uniform && w.Kind != Skewed:
		return fmt.Errorf("workload: kind %d unknown", int(w.Kind))
	case w.Kind == Skewed && (!(w.HotFraction > 0) || w.HotFraction > 1 || !(w.HotShare >= 0) || w.HotShare > 1):
		return fmt.Errorf("workload: skew of %g of the flows among %g of the nodes: want fractions in [0, 1]", w.HotShare, w.HotFraction)
	}
	if len(w.alive()) < 2 {
		return fmt.Errorf("workload: %d of %d nodes excluded; flows need two", w.Nodes-len(w.alive()), w.Nodes)
	}
	for _, x := range w.Exclude {
		if x < 0 || x >= w.Nodes {
			return fmt.Errorf("workload: excluded node %d: nodes are 0..%d", x, w.Nodes-1)
		}
	}
	return nil
}

func (w Workload) alive() []int {
	out := make([]int, 0, w.Nodes)
	for i := 0; i < w.Nodes; i++ {
		excluded := false
		for _, x := range w.Exclude {
			excluded = excluded || x == i
		}
		if !excluded {
			out = append(out, i)
		}
	}
	return out
}

// Generate draws the flows: seeded and deterministic. Start times are whole
// nanoseconds (the descriptor's unit); flows are in start order and tagged
// 1, 2, ...
func (w Workload) Generate() ([]Flow, error) {
	if err := w.Validate(); err != nil {
		return nil, err
	}
	r := rng(w.Seed, 0x776f726b) // "work"
	alive := w.alive()
	hot := w.hotFrom(r, alive)
	pick := func(set []int) (int, int) {
		a := r.IntN(len(set))
		b := r.IntN(len(set) - 1)
		if b >= a {
			b++
		}
		return set[a], set[b]
	}
	tau := w.MeanInterarrivalNS()
	xm := w.Mean * (w.Shape - 1) / w.Shape // Pareto scale for the mean
	limit := float64(MaxDescriptorBytes)
	if w.MaxBytes > 0 {
		limit = float64(w.MaxBytes)
	}
	fs := make([]Flow, w.Flows)
	t := 0.0
	for k := range fs {
		// Poisson arrivals: exponential gaps of mean τ (§7.3).
		t += -math.Log(1-r.Float64()) * tau
		set := alive
		if w.Kind == Skewed && r.Float64() < w.HotShare {
			set = hot
		}
		src, dst := pick(set)
		// Pareto(shape, xm) by inversion: xm / U^(1/shape), U in (0, 1].
		b := math.Ceil(xm / math.Pow(1-r.Float64(), 1/w.Shape))
		b = math.Min(b, limit)
		if t > MaxStartNS {
			return nil, fmt.Errorf("workload: flow %d starts at %.0f ns, past the descriptor's 32-bit ns start time; use fewer flows or a higher load", k, t)
		}
		fs[k] = Flow{Src: src, Dst: dst, Bytes: int64(b), StartNS: int64(math.Round(t))}
	}
	return tagFlows(fs), nil
}

// Hot returns the hot node set a Skewed workload draws (nil for Uniform):
// the same nodes Generate uses.
func (w Workload) Hot() []int {
	if w.Validate() != nil {
		return nil
	}
	return w.hotFrom(rng(w.Seed, 0x776f726b), w.alive())
}

// hotFrom draws the hot third of the nodes (§7.4) as the first thing r
// does, so that Hot and Generate agree.
func (w Workload) hotFrom(r *rand.Rand, alive []int) []int {
	if w.Kind != Skewed {
		return nil
	}
	p := r.Perm(len(alive))
	k := min(max(2, int(math.Round(w.HotFraction*float64(len(alive))))), len(alive))
	hot := make([]int, 0, k)
	for _, q := range p[:k] {
		hot = append(hot, alive[q])
	}
	sort.Ints(hot)
	return hot
}

// checkFlows checks flows against an n-node rack and the descriptor format.
func checkFlows(fs []Flow, n int) error {
	for k, f := range fs {
		switch {
		case f.Src < 0 || f.Src >= n || f.Dst < 0 || f.Dst >= n:
			return fmt.Errorf("flow %d: %d>%d, nodes are 0..%d", k, f.Src, f.Dst, n-1)
		case f.Src == f.Dst:
			return fmt.Errorf("flow %d: node %d sends to itself", k, f.Src)
		case f.Bytes < 1 || f.Bytes > MaxDescriptorBytes:
			return fmt.Errorf("flow %d: %d bytes, a descriptor carries 1..%d", k, f.Bytes, int64(MaxDescriptorBytes))
		case f.StartNS < 0 || f.StartNS > MaxStartNS:
			return fmt.Errorf("flow %d: starts at %d ns, a descriptor carries 0..%d", k, f.StartNS, int64(MaxStartNS))
		}
	}
	return nil
}
