package shoal

import (
	"math/rand/v2"
	"testing"

	"github.com/labrunner/labrunner/results"
)

// Eq. 5 taken apart (reading S62): an outcast's source holds one local cell
// per queue, the intermediates one cell of each flow, a node outside the
// flows nothing; an incast's intermediate (itself a sender) one local cell
// and one of each other sender.
func TestQueueBoundOf(t *testing.T) {
	outcast := []FlowSpec{{0, 1}, {0, 2}, {0, 3}}
	incast := []FlowSpec{{1, 0}, {2, 0}, {3, 0}, {4, 0}, {5, 0}, {6, 0}, {7, 0}}
	for _, tc := range []struct {
		name  string
		flows []FlowSpec
		j, k  int
		want  int
	}{
		{"outcast source, a destination", outcast, 0, 2, 1},
		{"outcast source, not a destination", outcast, 0, 5, 1},
		{"outcast intermediate, a destination", outcast, 4, 1, 1},
		{"outcast intermediate, to the destination itself", outcast, 1, 2, 1},
		{"outcast intermediate, not a destination", outcast, 4, 6, 0},
		{"own queue", outcast, 3, 3, 0},
		{"incast sender towards the destination", incast, 3, 0, 7},
		{"incast sender, another queue", incast, 3, 5, 1},
		{"incast destination", incast, 0, 4, 0},
		{"a pair listed twice counts once", []FlowSpec{{1, 0}, {1, 0}, {2, 0}}, 3, 0, 2},
	} {
		if got := QueueBoundOf(tc.flows, tc.j, tc.k); got != tc.want {
			t.Errorf("%s: QueueBoundOf(%v, %d, %d) = %d, want %d", tc.name, tc.flows, tc.j, tc.k, got, tc.want)
		}
	}
	if got := NodeQueueBound(incast, 8, 3); got != 7 {
		t.Errorf("NodeQueueBound(incast, node 3) = %d, want 7", got)
	}
}

// The bound never exceeds Eq. 5's 1 + incast degree: it is that bound with
// the terms a set of flows leaves empty taken out.
func TestQueueBoundOfWithinEq5(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const n = 8
	for trial := 0; trial < 500; trial++ {
		var flows []FlowSpec
		for f := r.IntN(20); f > 0; f-- {
			s, d := r.IntN(n), r.IntN(n)
			if s != d {
				flows = append(flows, FlowSpec{s, d})
			}
		}
		for k := 0; k < n; k++ {
			in := map[int]bool{}
			for _, f := range flows {
				if f.Dst == k {
					in[f.Src] = true
				}
			}
			for j := 0; j < n; j++ {
				if b := QueueBoundOf(flows, j, k); b > QueueBoundEq5(len(in)) {
					t.Fatalf("flows %v: Q_%d%d bound %d above Eq. 5's %d", flows, j, k, b, QueueBoundEq5(len(in)))
				}
			}
		}
	}
}

// An outcast of long flows from each node of the prototype: golden's
// simulation queues exactly one cell at the source's queues (one local
// cell, §3.3.3) and one at each intermediate (one cell per subflow, §3.3.2),
// so every node's band is [1, 1]. Without ready queues the source's local
// cells pile up past the band: the band catches a NIC that lets more than
// one local cell into a queue.
func TestNodeQueueBandsOutcast(t *testing.T) {
	c := Prototype()
	for _, src := range []int{0, 5} {
		var flows []Flow
		for d := 1; d < c.Nodes; d++ {
			flows = append(flows, Flow{Src: src, Dst: (src + d) % c.Nodes, Cells: 100})
		}
		bands, err := NewNodeQueueBands(c, flows)
		if err != nil {
			t.Fatal(err)
		}
		for j, b := range bands {
			if b.Bound != 1 || b.Lo() != 1 || b.Sim[1] != 1 {
				t.Errorf("outcast from %d: node %d band %+v, want peaks and bound 1", src, j, b)
			}
		}
		e, err := NodeQueueExpectation(bands, []int{src}, results.Params{"sender": "x"}, "src", "note")
		if err != nil {
			t.Fatal(err)
		}
		if *e.Min != 1 || *e.Max != 1 || e.Value != 1 || e.Wide != "" || e.Budget == "" {
			t.Errorf("outcast from %d: expectation %+v, want exactly 1 cell with a budget", src, e)
		}
		r, err := Simulate(c, flows, SimOptions{NoReadyQueues: true})
		if err != nil {
			t.Fatal(err)
		}
		if r.NodeMaxQueue[src] <= bands[src].Bound {
			t.Errorf("outcast from %d without ready queues: source queue %d, want past the band's %d", src, r.NodeMaxQueue[src], bands[src].Bound)
		}
	}
}

// The incast of §6.2: the band's bound is one cell per sender at the
// senders (Fig. 10: 7), none at the destination; the simulation stays
// within it.
func TestNodeQueueBandsIncast(t *testing.T) {
	c := Prototype()
	var flows []Flow
	for s := 1; s < c.Nodes; s++ {
		flows = append(flows, Flow{Src: s, Dst: 0, Cells: 7})
	}
	bands, err := NewNodeQueueBands(c, flows)
	if err != nil {
		t.Fatal(err)
	}
	if bands[0].Bound != 0 || bands[0].Sim != [3]int{} {
		t.Errorf("destination: band %+v, want nothing queued", bands[0])
	}
	for j := 1; j < c.Nodes; j++ {
		if bands[j].Bound != 7 || bands[j].Lo() < 1 {
			t.Errorf("sender %d: band %+v, want bound 7 and a peak of at least 1", j, bands[j])
		}
	}
	if _, err := NodeQueueExpectation(bands, nil, nil, "", ""); err == nil {
		t.Error("an expectation over no nodes was accepted")
	}
	if _, err := NodeQueueExpectation(bands, []int{8}, nil, "", ""); err == nil {
		t.Error("an expectation over node 8 of 8 was accepted")
	}
}

// Golden's simulation keeps Eq. 5 taken apart (reading S62) for any fixed
// set of flows started together, in each timing case of the band.
func TestNodeQueueBandsRandomFlows(t *testing.T) {
	c := Prototype()
	r := rand.New(rand.NewPCG(3, 4))
	for trial := 0; trial < 200; trial++ {
		seen := map[[2]int]bool{}
		var flows []Flow
		for f := 1 + r.IntN(16); f > 0; f-- {
			s, d := r.IntN(c.Nodes), r.IntN(c.Nodes)
			if s == d || seen[[2]int{s, d}] {
				continue
			}
			seen[[2]int{s, d}] = true
			flows = append(flows, Flow{Src: s, Dst: d, Cells: int64(1 + r.IntN(60))})
		}
		if len(flows) == 0 {
			continue
		}
		if _, err := NewNodeQueueBands(c, flows); err != nil {
			t.Errorf("flows %v: %v", flows, err)
		}
	}
}
