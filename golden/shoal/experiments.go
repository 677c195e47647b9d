package shoal

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// IncastResult is a synchronised N:1 incast (§6.2, Fig. 10; §7.2, Fig. 13).
type IncastResult struct {
	FastestNS, SlowestNS, MeanNS float64
	MaxQueue                     int
	BoundViolations              int64
}

// Incast simulates `senders` nodes each sending `cells` cells to node dst at
// time 0 (§6.2: "seven nodes each send 448 B of data (seven 64 B cells) to the
// same destination at the same time"). The senders are the nodes after dst in
// numbering order.
func Incast(c Config, senders int, cells int64, dst int, o SimOptions) (IncastResult, error) {
	if senders < 1 || senders > c.Nodes-1 {
		return IncastResult{}, fmt.Errorf("incast: %d senders: a %d-node rack has 1..%d", senders, c.Nodes, c.Nodes-1)
	}
	if dst < 0 || dst >= c.Nodes {
		return IncastResult{}, fmt.Errorf("incast: destination %d: nodes are 0..%d", dst, c.Nodes-1)
	}
	flows := make([]Flow, senders)
	for k := range flows {
		flows[k] = Flow{Src: (dst + 1 + k) % c.Nodes, Dst: dst, Cells: cells}
	}
	r, err := Simulate(c, flows, o)
	if err != nil {
		return IncastResult{}, fmt.Errorf("incast: %w", err)
	}
	out := IncastResult{FastestNS: math.Inf(1), MaxQueue: r.MaxQueue, BoundViolations: r.BoundViolations}
	for k, fr := range r.Flows {
		if !fr.Done {
			return IncastResult{}, fmt.Errorf("incast: flow %d→%d did not complete in %.0f ns", flows[k].Src, dst, r.EndNS)
		}
		fct := fr.FCTNS(flows[k])
		out.FastestNS = math.Min(out.FastestNS, fct)
		out.SlowestNS = math.Max(out.SlowestNS, fct)
		out.MeanNS += fct / float64(senders)
	}
	return out, nil
}

// Derangement returns a random permutation of n nodes with no fixed point
// (each node sends one flow and receives one, none to itself: §6.2's "full
// permutation matrix"), from the seed.
func Derangement(n int, seed uint64) []int {
	r := rand.New(rand.NewPCG(seed, 0x5a0a1))
	p := make([]int, n)
	for {
		for i := range p {
			p[i] = i
		}
		for i := n - 1; i > 0; i-- {
			j := r.IntN(i + 1)
			p[i], p[j] = p[j], p[i]
		}
		ok := true
		for i, v := range p {
			if i == v {
				ok = false
				break
			}
		}
		if ok {
			return p
		}
	}
}

// PermutationResult is the average destination throughput under permutation
// traffic (§6.2, Fig. 9; §7.2, Fig. 12).
type PermutationResult struct {
	// Throughput is the useful cells received per destination per slot,
	// averaged over the communicating destinations: 1 is a cell every slot
	// on every channel, the ideal (§6.2: "the amount of 'useful' cells (i.e.,
	// excluding the cells to forward and the empty ones) received by each
	// destination").
	Throughput float64
	// Gbps is the same in cell bytes per second.
	Gbps     float64
	MaxQueue int
}

// Permutation simulates `pairs` long-running flows that form part of a random
// permutation (every node sends at most one flow and receives at most one;
// pairs = N is the full permutation of §6.2) and measures the destinations'
// throughput over `epochs` epochs after `warmup` epochs.
func Permutation(c Config, pairs int, seed uint64, warmup, epochs int) (PermutationResult, error) {
	if err := c.Validate(); err != nil {
		return PermutationResult{}, fmt.Errorf("permutation: %w", err)
	}
	if pairs < 1 || pairs > c.Nodes {
		return PermutationResult{}, fmt.Errorf("permutation: %d pairs: want 1..%d", pairs, c.Nodes)
	}
	if warmup < 0 || epochs < 1 {
		return PermutationResult{}, fmt.Errorf("permutation: warm-up %d and %d epochs: want ≥ 0 and ≥ 1", warmup, epochs)
	}
	specs := permutationFlows(c.Nodes, pairs, seed)
	flows := make([]Flow, len(specs))
	for i, f := range specs {
		flows[i] = Flow{Src: f.Src, Dst: f.Dst, Cells: math.MaxInt64 / 4}
	}
	E := c.EpochNS()
	from := float64(warmup) * E
	r, err := Simulate(c, flows, SimOptions{MeasureFromNS: from, UntilNS: from + float64(epochs)*E})
	if err != nil {
		return PermutationResult{}, fmt.Errorf("permutation: %w", err)
	}
	window := r.EndNS - from
	cellsPerSlotIdeal := float64(c.Channels) * window / c.SlotNS
	var sum float64
	for _, fr := range r.Flows {
		sum += float64(fr.Window) / cellsPerSlotIdeal
	}
	thr := sum / float64(len(flows))
	return PermutationResult{Throughput: thr, Gbps: thr * c.NodeGbps(), MaxQueue: r.MaxQueue}, nil
}

// permutationFlows draws `pairs` flows of a random permutation: sources
// p[0..pairs-1] of a random ordering p, each sending to p[d[i]] for a
// derangement d, so no node sends or receives twice and none sends to itself;
// pairs = N is a full permutation.
func permutationFlows(n, pairs int, seed uint64) []FlowSpec {
	p := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)).Perm(n)
	d := Derangement(n, seed)
	out := make([]FlowSpec, pairs)
	for i := range out {
		out[i] = FlowSpec{Src: p[i], Dst: p[d[i]]}
	}
	return out
}
