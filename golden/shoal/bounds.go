package shoal

import "fmt"

// QueueBoundEq3 is the bound on a queue Q_ij without ready queues (§3.3.2,
// Eq. 3): len(Q_ij) ≤ outcast degree(i) + incast degree(j), at most one cell
// per subflow at its source and one at its intermediate node.
func QueueBoundEq3(outcast, incast int) int { return outcast + incast }

// ReadyQueueBound is the bound on a ready queue R_jk (§3.3.3, Eq. 4):
// len(R_jk) ≤ outcast degree(j) ≤ N-1.
func ReadyQueueBound(outcast int) int { return outcast }

// QueueBoundEq5 is the bound on a queue Q_jk with ready queues (§3.3.3,
// Eq. 5): at most one local cell, plus one cell per flow destined to k:
// len(Q_jk) ≤ 1 + incast degree(k) ≤ N.
func QueueBoundEq5(incast int) int { return 1 + incast }

// QueueBoundOf is the bound Eq. 5 puts on queue Q_jk at node j while the
// given flows run, its two terms taken apart (§3.3.3, reading S62): at most
// one local cell, and only at a node that sources a flow ("at any given
// time there is at most one local cell in Q_jk"), plus at most one cell of
// each flow to k from another node — the cell of its subflow through j
// (§3.3.2: "a subflow has at most one cell each in both the queue at its
// source and the queue at its intermediate node"). j's own flow to k adds
// no cell of the second kind: its cells at j are local. A flow is a node
// pair (reading S1): a pair listed twice counts once. When j sources a flow
// to a node other than k this is Eq. 5's 1 + incast degree(k); it is
// tighter where Eq. 5 is loose: an outcast's source holds one cell per
// queue, an intermediate of flows from one source one cell of each.
func QueueBoundOf(flows []FlowSpec, j, k int) int {
	local, remote := 0, map[int]bool{}
	for _, f := range flows {
		if f.Src == j {
			local = 1
		}
		if f.Dst == k && f.Src != j && f.Src != k {
			remote[f.Src] = true
		}
	}
	if j == k {
		return 0 // a node keeps no queue to itself
	}
	return local + len(remote)
}

// NodeQueueBound is the largest QueueBoundOf over node j's queues in an
// n-node rack.
func NodeQueueBound(flows []FlowSpec, n, j int) int {
	b := 0
	for k := 0; k < n; k++ {
		b = max(b, QueueBoundOf(flows, j, k))
	}
	return b
}

// FeedbackLoop returns, for the subflow of src through intermediate mid, how
// many epochs pass between two of its cells when nothing but the feedback
// loop holds it back (§6.2: "Shoal's congestion control mechanism prevents a
// node from sending its next cell to an intermediate node until it has
// received feedback from it"): src sends in its slot to mid; mid puts the
// whole cell into its queue DelaySlots later; mid's next slot to src carries
// the feedback in its header; src can use it FeedbackSlots after the start of
// that slot (reading S2: once the header has arrived, not the whole cell) and
// sends in its next slot to mid. The loop is a whole number of epochs since
// src's slot to mid recurs once an epoch.
func FeedbackLoop(c Config, s *Schedule, src, mid int) (int, error) {
	return feedbackLoop(c, s, src, mid, c.DelaySlots())
}

// FastestFeedbackLoop is FeedbackLoop when mid may also report on a cell
// as soon as its header has arrived (it names the queue the cell goes to,
// Fig. 5), rather than once the whole cell is queued. Reading S3 has the
// whole cell (App. D: a cell is queued only once its CRC is checked), which
// the simulation, the emulator and the fair rates follow; this, the
// tightest loop §3.3.2's words would allow, caps the upper end of
// throughput bands only, so that a ceiling never rejects a design that
// realises the mechanism at its best.
func FastestFeedbackLoop(c Config, s *Schedule, src, mid int) (int, error) {
	return feedbackLoop(c, s, src, mid, c.FeedbackSlots())
}

func feedbackLoop(c Config, s *Schedule, src, mid, forward int) (int, error) {
	a, _, ok1 := s.When(src, mid)
	b, _, ok2 := s.When(mid, src)
	if !ok1 || !ok2 {
		return 0, fmt.Errorf("feedback loop: nodes %d and %d are not a pair of the %d-node schedule", src, mid, s.Nodes())
	}
	E, f := s.EpochSlots(), c.FeedbackSlots()
	// mid's first slot to src at or after a+forward.
	back := b
	for back < a+forward {
		back += E
	}
	// src's first slot to mid at or after back+f, at least one epoch on.
	next := a + E
	for next < back+f {
		next += E
	}
	return (next - a) / E, nil
}

// MaxFeedbackLoop is the longest FeedbackLoop over all ordered pairs.
func MaxFeedbackLoop(c Config, s *Schedule) (int, error) {
	worst := 0
	for i := 0; i < s.Nodes(); i++ {
		for j := 0; j < s.Nodes(); j++ {
			if i == j {
				continue
			}
			m, err := FeedbackLoop(c, s, i, j)
			if err != nil {
				return 0, err
			}
			worst = max(worst, m)
		}
	}
	return worst, nil
}

// IncastSlowestNS is the paper's account of the slowest flow of a
// synchronised incast of `senders` flows of `cells` cells each (§6.2: "6.9 us:
// 3.76 us of queuing delay plus 2×1.57 us of propagation latency"): the
// destination's queue at the intermediate nodes holds one cell per sender and
// drains one cell per epoch, so the last cell waits `senders` epochs
// (max(senders, cells) when flows are longer than the rack is wide), plus one
// propagation latency per hop.
func IncastSlowestNS(c Config, senders, cells int) float64 {
	epochs := max(senders, ceilDiv(cells*senders, c.Nodes-1))
	return float64(epochs)*c.EpochNS() + 2*c.PropNS
}
