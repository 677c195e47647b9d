package shoal

import (
	"fmt"
	"math"
	"strings"
)

// FailureKind is the kind of component that fails (Table 1, and the node
// failures of §3.5 and §7.3).
type FailureKind int

const (
	FailNode          FailureKind = iota // a rack node (§3.5, §7.3)
	FailNodeLink                         // the link between a node and its leaf (Table 1: ≈ 1/N)
	FailLeaf                             // a leaf switch (Table 1: ≈ 1/√(2N))
	FailLeafSpineLink                    // a link between a leaf and a spine (Table 1: ≈ 2/N)
	FailSpine                            // a spine switch (Table 1: ≈ 2√2/√N)
	// FailLeafSpineDown is one direction of a leaf-spine link, spine to
	// leaf: Table 1's ≈ 2/N counts this (reading S41).
	FailLeafSpineDown
)

var failureNames = []string{"node", "node_link", "leaf", "leaf_spine_link", "spine", "leaf_spine_down"}

// String is the parameter spelling.
func (k FailureKind) String() string {
	if k >= 0 && int(k) < len(failureNames) {
		return failureNames[k]
	}
	return fmt.Sprintf("failure(%d)", int(k))
}

// FailureKinds lists every kind in Table 1 order (node first), then the
// one-direction link failure.
func FailureKinds() []FailureKind {
	return []FailureKind{FailNode, FailNodeLink, FailLeaf, FailLeafSpineLink, FailSpine, FailLeafSpineDown}
}

// ParseFailureKind reads a FailureKind's String form.
func ParseFailureKind(s string) (FailureKind, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	for k, n := range failureNames {
		if s == n {
			return FailureKind(k), nil
		}
	}
	return 0, fmt.Errorf("failure %q unknown (want %s)", s, strings.Join(failureNames, ", "))
}

// Failure is one failed component of one channel's fabric. Index is the
// node, the leaf or the spine; Spine is the spine of a leaf-spine link whose
// leaf is Index.
type Failure struct {
	Kind    FailureKind
	Index   int
	Spine   int
	Channel int
}

// TableOneApprox is Table 1's approximation of the fraction of failed slots
// for an N-node two-stage fabric (node failures count as their link's).
func TableOneApprox(kind FailureKind, n int) float64 {
	N := float64(n)
	switch kind {
	case FailNode, FailNodeLink:
		return 1 / N
	case FailLeaf:
		return 1 / math.Sqrt(2*N)
	case FailLeafSpineLink, FailLeafSpineDown:
		return 2 / N
	case FailSpine:
		return 2 * math.Sqrt2 / math.Sqrt(N)
	}
	return math.NaN()
}

// FailedPairs returns which node pairs lose their slot when the component
// fails, failed[i*N+j] for the slot in which i sends to j, after Shoal's
// symmetric detection (§3.5: when i stops hearing from j it stops sending to
// j, so j stops hearing from i): a pair fails in both directions when a cell
// of either direction crosses the component. With several channels, a node or
// its link fails on every channel (one cable carries them all, §3.4); a
// switch or a leaf-spine link belongs to the fabric of channel f.Channel and
// fails the pairs whose slot that channel serves. The switches carry the
// circuits Decompose assigns.
func FailedPairs(t Topology, s *Schedule, f Failure) ([]bool, error) {
	channel := f.Channel
	if err := t.Validate(); err != nil {
		return nil, err
	}
	n := t.Nodes
	if s.Nodes() != n {
		return nil, fmt.Errorf("failed pairs: schedule has %d nodes, topology %d", s.Nodes(), n)
	}
	if channel < 0 || channel >= s.Channels() {
		return nil, fmt.Errorf("failed pairs: channel %d of %d", channel, s.Channels())
	}
	switch f.Kind {
	case FailNode, FailNodeLink:
		if f.Index < 0 || f.Index >= n {
			return nil, fmt.Errorf("failed %s %d: nodes are 0..%d", f.Kind, f.Index, n-1)
		}
	case FailLeaf, FailLeafSpineLink, FailLeafSpineDown:
		if f.Index < 0 || f.Index >= t.Leaves() {
			return nil, fmt.Errorf("failed %s: leaf %d: leaves are 0..%d", f.Kind, f.Index, t.Leaves()-1)
		}
		if f.Kind != FailLeaf && (f.Spine < 0 || f.Spine >= t.Spines()) {
			return nil, fmt.Errorf("failed leaf-spine link: spine %d: spines are 0..%d", f.Spine, t.Spines()-1)
		}
	case FailSpine:
		if f.Index < 0 || f.Index >= t.Spines() {
			return nil, fmt.Errorf("failed spine %d: spines are 0..%d", f.Index, t.Spines()-1)
		}
	default:
		return nil, fmt.Errorf("failure kind %d unknown", int(f.Kind))
	}
	failed := make([]bool, n*n)
	mark := func(i, j int) { failed[i*n+j], failed[j*n+i] = true, true }
	if f.Kind == FailNode || f.Kind == FailNodeLink {
		for j := 0; j < n; j++ {
			if j != f.Index {
				mark(f.Index, j)
			}
		}
		return failed, nil
	}
	down := t.Down()
	for slot := 0; slot < s.EpochSlots(); slot++ {
		cfg, err := t.Decompose(s, slot, channel)
		if err != nil {
			return nil, err
		}
		for i := 0; i < n; i++ {
			j := s.Dst(slot, channel, i)
			if j < 0 {
				continue
			}
			lu, pu := t.NodePort(i)
			lv, _ := t.NodePort(j)
			sp := cfg[lu].Out[pu] - down
			hit := false
			switch f.Kind {
			case FailLeaf:
				hit = lu == f.Index || lv == f.Index
			case FailLeafSpineLink:
				hit = sp == f.Spine && (lu == f.Index || lv == f.Index)
			case FailLeafSpineDown:
				hit = sp == f.Spine && lv == f.Index
			case FailSpine:
				hit = sp == f.Index
			}
			if hit {
				mark(i, j)
			}
		}
	}
	return failed, nil
}

// Attached lists the nodes a failure cuts off entirely (the failed node, the
// node behind a failed link, the nodes of a failed leaf); they are left out of
// FailedSlotFraction, which is about the nodes that keep working. A node
// whose circuits all cross a failed spine or leaf-spine link is not left out:
// Table 1's spine figure, 2√2/√N, counts those (reading S41).
func Attached(t Topology, f Failure) []int {
	switch f.Kind {
	case FailNode, FailNodeLink:
		return []int{f.Index}
	case FailLeaf:
		var out []int
		for p := 0; p < t.Down(); p++ {
			if i := f.Index*t.Down() + p; i < t.Nodes {
				out = append(out, i)
			}
		}
		return out
	}
	return nil
}

// FailedSlotFraction is the fraction of failed slots of Table 1: the mean,
// over the nodes that keep working (not Attached), of the fraction of their
// slots per epoch whose pair is marked failed. With one channel this is
// Table 1's quantity: for a failed node link each other node loses its one
// slot to that node, 1/(N-1) ≈ 1/N; for a leaf each loses the k/2 slots to
// its nodes, ≈ 1/k = 1/√(2N); for a spine a pair fails when either direction
// crosses it, ≈ 2/(k/2) = 2√2/√N. One direction of a leaf-spine link
// (FailLeafSpineDown) fails the pair of the circuit coming down into the leaf
// in every slot, a different one each time: ≈ 2/N, Table 1's figure. A cable
// cut both ways (FailLeafSpineLink) costs ≈ 4/N: the node on the spine's
// port loses everything as well (its circuits all go up that link), reading
// S41.
func FailedSlotFraction(t Topology, s *Schedule, f Failure) (float64, error) {
	n := t.Nodes
	cut := make([]bool, n)
	for _, i := range Attached(t, f) {
		cut[i] = true
	}
	failedAny, err := FailedPairs(t, s, f)
	if err != nil {
		return 0, err
	}
	total, lost := 0, 0
	for i := 0; i < n; i++ {
		if cut[i] {
			continue
		}
		for j := 0; j < n; j++ {
			if j == i {
				continue
			}
			total++
			if failedAny[i*n+j] {
				lost++
			}
		}
	}
	if total == 0 {
		return 0, fmt.Errorf("failed slot fraction: the failure cuts off every node")
	}
	return float64(lost) / float64(total), nil
}
