package shoal

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// WaterFill returns the max-min fair rates of flows over capacitated links
// (the water-filling algorithm the paper compares Shoal's rates with, §7.2):
// all flows grow at the same pace; when a link fills, the flows crossing it
// stop growing; the others go on. paths[f] lists the links flow f crosses (a
// link listed twice counts twice). A flow that crosses no link is an error:
// its fair rate would be unbounded.
func WaterFill(capacity []float64, paths [][]int) ([]float64, error) {
	for l, c := range capacity {
		if !(c >= 0) || math.IsInf(c, 0) {
			return nil, fmt.Errorf("water-fill: link %d has capacity %g, want a finite value ≥ 0", l, c)
		}
	}
	users := make([][]int, len(capacity))
	for f, p := range paths {
		if len(p) == 0 {
			return nil, fmt.Errorf("water-fill: flow %d crosses no link", f)
		}
		for _, l := range p {
			if l < 0 || l >= len(capacity) {
				return nil, fmt.Errorf("water-fill: flow %d crosses link %d of %d", f, l, len(capacity))
			}
			users[l] = append(users[l], f)
		}
	}
	rate := make([]float64, len(paths))
	frozen := make([]bool, len(paths))
	left := append([]float64(nil), capacity...)
	active := make([]int, len(capacity)) // crossings by unfrozen flows
	for l, us := range users {
		active[l] = len(us)
	}
	remaining := len(paths)
	const eps = 1e-12
	for remaining > 0 {
		inc := math.Inf(1)
		for l := range left {
			if active[l] > 0 {
				inc = math.Min(inc, left[l]/float64(active[l]))
			}
		}
		inc = math.Max(inc, 0)
		for l := range left {
			left[l] -= inc * float64(active[l])
		}
		for f := range rate {
			if !frozen[f] {
				rate[f] += inc
			}
		}
		progressed := false
		for l := range left {
			if active[l] == 0 || left[l] > eps*math.Max(1, capacity[l]) {
				continue
			}
			for _, f := range users[l] {
				if frozen[f] {
					continue
				}
				frozen[f] = true
				progressed = true
				remaining--
				for _, l2 := range paths[f] {
					active[l2]--
				}
			}
		}
		if !progressed {
			return nil, fmt.Errorf("water-fill: no link filled (internal error)")
		}
	}
	return rate, nil
}

// FlowSpec is a flow of the fairness model: all traffic from Src to Dst.
type FlowSpec struct{ Src, Dst int }

// String is the "src>dst" form of the flow parameter.
func (f FlowSpec) String() string { return strconv.Itoa(f.Src) + ">" + strconv.Itoa(f.Dst) }

// ParseFlows reads "0>7,1>7,3>4": distinct flows between distinct nodes of
// an n-node rack (a flow is all traffic of a node pair, §3.3.2, so a pair is
// listed once).
func ParseFlows(s string, n int) ([]FlowSpec, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []FlowSpec
	seen := map[FlowSpec]bool{}
	for _, f := range strings.Split(s, ",") {
		a, b, ok := strings.Cut(strings.TrimSpace(f), ">")
		if !ok {
			return nil, fmt.Errorf("flow %q: write src>dst, e.g. 0>7", f)
		}
		src, err1 := strconv.Atoi(strings.TrimSpace(a))
		dst, err2 := strconv.Atoi(strings.TrimSpace(b))
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("flow %q: src and dst must be node numbers", f)
		}
		if src < 0 || src >= n || dst < 0 || dst >= n {
			return nil, fmt.Errorf("flow %q: nodes are 0..%d", f, n-1)
		}
		if src == dst {
			return nil, fmt.Errorf("flow %q: a node does not send to itself", f)
		}
		fs := FlowSpec{src, dst}
		if seen[fs] {
			return nil, fmt.Errorf("flow %q listed twice (a flow is all traffic of one node pair, §3.3.2)", f)
		}
		seen[fs] = true
		out = append(out, fs)
	}
	return out, nil
}

// IdealFairRates is the max-min fair share of the flows on an ideal rack-wide
// packet switch (§7.2's "ideal throughput"): every node can send one unit and
// receive one unit; a flow crosses its source's uplink and its destination's
// downlink. Rates are fractions of a node's link.
//
// Flows are Shoal flows (§3.3.2: all traffic of a node pair): flows listed
// for the same pair are shared out as one, the pair's whole rate going to
// the first listed and nothing to the later ones, which wait behind it in
// the pair's FIFO (reading S1) — the ideal that Shoal's own per-pair sharing
// is compared with (ShoalFairRates).
func IdealFairRates(n int, flows []FlowSpec) ([]float64, error) {
	for _, fl := range flows {
		if fl.Src < 0 || fl.Src >= n || fl.Dst < 0 || fl.Dst >= n || fl.Src == fl.Dst {
			return nil, fmt.Errorf("flow %v: not a pair of distinct nodes of %d", fl, n)
		}
	}
	pairs, lead := pairsOf(flows)
	capacity := make([]float64, 2*n)
	for i := range capacity {
		capacity[i] = 1
	}
	paths := make([][]int, len(pairs))
	for f, fl := range pairs {
		paths[f] = []int{fl.Src, n + fl.Dst}
	}
	rates, err := WaterFill(capacity, paths)
	if err != nil {
		return nil, err
	}
	return spread(rates, lead), nil
}

// pairsOf groups flows into Shoal flows (§3.3.2: "a flow refers to all
// layer-2 packets being exchanged between a pair of nodes ... all transport
// connections between the nodes"): pairs lists each node pair once, in the
// order of its first flow; lead[f] is the index in pairs of flow f when f is
// the first flow of its pair, -1 when an earlier flow of the pair is listed.
func pairsOf(flows []FlowSpec) (pairs []FlowSpec, lead []int) {
	seen := make(map[FlowSpec]bool, len(flows))
	lead = make([]int, len(flows))
	for f, fl := range flows {
		if seen[fl] {
			lead[f] = -1
			continue
		}
		seen[fl] = true
		lead[f] = len(pairs)
		pairs = append(pairs, fl)
	}
	return pairs, lead
}

// spread gives each pair's rate to its first flow (the head of the pair's
// FIFO) and 0 to the flows queued behind it.
func spread(pairRates []float64, lead []int) []float64 {
	out := make([]float64, len(lead))
	for f, p := range lead {
		if p >= 0 {
			out[f] = pairRates[p]
		}
	}
	return out
}

// MaxShoalFairNodes bounds ShoalFairRates: it fills N(N-1) virtual links with
// up to N-1 subflows per flow.
const MaxShoalFairNodes = 512

// ShoalFairRates is the max-min fair share of the flows on Shoal's fabric as
// its congestion control shares it (§3.3.2): the fabric is a full mesh of
// virtual links i→j, each carrying one cell per epoch, 1/(N-1) of a node's
// link; flow s→d is N-1 subflows, one through each other node j (s→j→d, or
// s→d directly when j = d), and Shoal is fair per subflow ("we can achieve
// per-flow fairness by ensuring per-subflow fairness"). A flow's rate is the
// sum of its subflows'. When loop is not nil every subflow is also capped at
// one cell per loop epochs, the feedback loop of §6.2 (FeedbackLoop, with
// the feedback usable once the reply's header has arrived, reading S2) that
// throttles the prototype; loop[i*N+j] is src i's loop through j. Rates are
// fractions of a node's link (1 = a cell every slot).
//
// A flow is all traffic of a node pair (§3.3.2, reading S1): flows listed for
// the same pair share that pair's N-1 subflows, and the pair's rate goes to
// the first of them; the later ones wait behind it in the pair's FIFO and
// get 0 while it lasts.
func ShoalFairRates(n int, flows []FlowSpec, loop []int) ([]float64, error) {
	if n < 2 || n > MaxShoalFairNodes {
		return nil, fmt.Errorf("shoal fair rates: %d nodes: want 2..%d", n, MaxShoalFairNodes)
	}
	if loop != nil && len(loop) != n*n {
		return nil, fmt.Errorf("shoal fair rates: %d feedback loops for %d nodes, want %d", len(loop), n, n*n)
	}
	for _, fl := range flows {
		if fl.Src < 0 || fl.Src >= n || fl.Dst < 0 || fl.Dst >= n || fl.Src == fl.Dst {
			return nil, fmt.Errorf("flow %v: not a pair of distinct nodes of %d", fl, n)
		}
	}
	pairs, lead := pairsOf(flows)
	per := 1 / float64(n-1)
	capacity := make([]float64, n*n, n*n+len(pairs)*(n-1))
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			if i != j {
				capacity[i*n+j] = per
			}
		}
	}
	var paths [][]int
	var owner []int
	for f, fl := range pairs {
		for j := 0; j < n; j++ {
			if j == fl.Src {
				continue
			}
			p := []int{fl.Src*n + j}
			if j != fl.Dst {
				p = append(p, j*n+fl.Dst)
			}
			if loop != nil {
				m := loop[fl.Src*n+j]
				if m < 1 {
					return nil, fmt.Errorf("shoal fair rates: feedback loop %d→%d is %d epochs, want ≥ 1", fl.Src, j, m)
				}
				capacity = append(capacity, per/float64(m))
				p = append(p, len(capacity)-1)
			}
			paths = append(paths, p)
			owner = append(owner, f)
		}
	}
	sub, err := WaterFill(capacity, paths)
	if err != nil {
		return nil, err
	}
	rate := make([]float64, len(pairs))
	for k, r := range sub {
		rate[owner[k]] += r
	}
	return spread(rate, lead), nil
}

// FeedbackLoops returns FeedbackLoop for every ordered pair, [i*N+j] (0 on
// the diagonal), for ShoalFairRates.
func FeedbackLoops(c Config, s *Schedule) ([]int, error) {
	n := s.Nodes()
	out := make([]int, n*n)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			if i == j {
				continue
			}
			m, err := FeedbackLoop(c, s, i, j)
			if err != nil {
				return nil, err
			}
			out[i*n+j] = m
		}
	}
	return out, nil
}

// FastestFeedbackLoops returns FastestFeedbackLoop for every ordered pair, [i*N+j] (0 on
// the diagonal), for ShoalFairRates.
func FastestFeedbackLoops(c Config, s *Schedule) ([]int, error) {
	n := s.Nodes()
	out := make([]int, n*n)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			if i == j {
				continue
			}
			m, err := FastestFeedbackLoop(c, s, i, j)
			if err != nil {
				return nil, err
			}
			out[i*n+j] = m
		}
	}
	return out, nil
}
