package shoal

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/labrunner/labrunner/workload"
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

// Kind selects the traffic matrix of a Workload (package workload: the
// same §7.3/§7.4 draw golden/shoal simulates).
type Kind = workload.Kind

const (
	// Uniform: sources and destinations uniformly over the nodes (§7.3).
	Uniform = workload.Uniform
	// Skewed: the disaggregated mix of §7.4.
	Skewed = workload.Skewed
)

// ParseKind reads "uniform" or "skewed".
func ParseKind(s string) (Kind, error) { return workload.ParseKind(s) }

// Workload is the synthetic datacenter workload of §7.3 (package
// workload), drawn into descriptors: MaxBytes truncates the size
// distribution (0: only the descriptor's 32-bit byte count; a run on an
// emulated rack must fit its wall-time budget, and truncation is recorded
// with the run and lowers the mean), Exclude lists nodes that neither send
// nor receive (failed, absent).
type Workload = workload.Spec

// NewWorkload returns the §7.3 workload (§7.4 for Skewed) with the paper's
// distributions and the given size, load, rate and seed.
func NewWorkload(kind Kind, nodes, flows int, load, loadGbps float64, seed uint64) Workload {
	return workload.New(kind, nodes, flows, load, loadGbps, seed)
}

// Generate draws w's flows into descriptors: start times in whole
// nanoseconds (the descriptor's unit), sizes within the descriptor's byte
// count, flows in start order and tagged 1, 2, ...
func Generate(w Workload) ([]Flow, error) {
	switch {
	case w.Nodes < 2 || w.Nodes > 1024:
		return nil, fmt.Errorf("workload: %d nodes: want 2..1024", w.Nodes)
	case w.Flows < 1 || w.Flows > 1_000_000:
		return nil, fmt.Errorf("workload: %d flows: want 1..1000000", w.Flows)
	case w.Mean > MaxDescriptorBytes:
		return nil, fmt.Errorf("workload: mean flow size %g B: want 1..%d", w.Mean, int64(MaxDescriptorBytes))
	case w.MaxBytes < 0 || w.MaxBytes > MaxDescriptorBytes:
		return nil, fmt.Errorf("workload: max flow size %g B: want 0 (none) or up to %d", w.MaxBytes, int64(MaxDescriptorBytes))
	}
	if w.MaxBytes == 0 {
		w.MaxBytes = MaxDescriptorBytes
	}
	fs := make([]Flow, w.Flows)
	err := w.Draw(func(k int, a workload.Arrival) error {
		if a.StartNS > MaxStartNS {
			return fmt.Errorf("workload: flow %d starts at %.0f ns, past the descriptor's 32-bit ns start time; use fewer flows or a higher load", k, a.StartNS)
		}
		fs[k] = Flow{Src: a.Src, Dst: a.Dst, Bytes: a.Bytes, StartNS: int64(math.Round(a.StartNS))}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return tagFlows(fs), nil
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
