package shoal

import (
	"math"
	"reflect"
	"strings"
	"testing"
)

func ratesNear(t *testing.T, name string, got, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d rates, want %d", name, len(got), len(want))
	}
	for i := range got {
		if math.Abs(got[i]-want[i]) > 1e-9 {
			t.Errorf("%s: rate %d = %.6f, want %.6f (all %v)", name, i, got[i], want[i], got)
		}
	}
}

// Water-filling on cases worked by hand.
func TestWaterFillHandWorked(t *testing.T) {
	cases := []struct {
		name  string
		cap   []float64
		paths [][]int
		want  []float64
	}{
		{"one link, three flows", []float64{1}, [][]int{{0}, {0}, {0}}, []float64{1.0 / 3, 1.0 / 3, 1.0 / 3}},
		// Link A (1) carries f0 and f1, link B (2) carries f1 and f2: A fills
		// at 1/2 each; f2 takes the rest of B, 2 - 1/2.
		{"two links", []float64{1, 2}, [][]int{{0}, {0, 1}, {1}}, []float64{0.5, 0.5, 1.5}},
		// Parking lot: f0 crosses both links, f1 and f2 one each.
		{"parking lot", []float64{1, 1}, [][]int{{0, 1}, {0}, {1}}, []float64{0.5, 0.5, 0.5}},
		// Bottleneck elsewhere frees capacity: f0 alone on a 0.2 link also
		// shares link 1 (cap 1) with f1: f0 = 0.2, f1 = 0.8.
		{"freed capacity", []float64{0.2, 1}, [][]int{{0, 1}, {1}}, []float64{0.2, 0.8}},
		// A flow crossing a link twice uses it twice.
		{"twice", []float64{1}, [][]int{{0, 0}, {0}}, []float64{1.0 / 3, 1.0 / 3}},
		{"zero capacity", []float64{0, 1}, [][]int{{0, 1}, {1}}, []float64{0, 1}},
		{"no flows", []float64{1}, nil, []float64{}},
	}
	for _, c := range cases {
		got, err := WaterFill(c.cap, c.paths)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		ratesNear(t, c.name, got, c.want)
	}
	for name, c := range map[string]struct {
		cap   []float64
		paths [][]int
	}{
		"no link":      {[]float64{1}, [][]int{{}}},
		"bad link":     {[]float64{1}, [][]int{{1}}},
		"negative":     {[]float64{-1}, [][]int{{0}}},
		"infinite":     {[]float64{math.Inf(1)}, [][]int{{0}}},
		"not a number": {[]float64{math.NaN()}, [][]int{{0}}},
	} {
		if _, err := WaterFill(c.cap, c.paths); err == nil || !strings.Contains(err.Error(), "water-fill") {
			t.Errorf("%s: WaterFill = %v, want an error", name, err)
		}
	}
}

func TestIdealFairRates(t *testing.T) {
	// 3:1 incast into node 0 plus a lone flow 4→5: a third each, and 1.
	got, err := IdealFairRates(8, []FlowSpec{{1, 0}, {2, 0}, {3, 0}, {4, 5}})
	if err != nil {
		t.Fatal(err)
	}
	ratesNear(t, "incast", got, []float64{1.0 / 3, 1.0 / 3, 1.0 / 3, 1})
	// Node 0 sends to 1 and 2; node 3 also sends to 1: 0's uplink halves
	// both of its flows; 3→1 takes the rest of 1's downlink.
	got, _ = IdealFairRates(4, []FlowSpec{{0, 1}, {0, 2}, {3, 1}})
	ratesNear(t, "fan", got, []float64{0.5, 0.5, 0.5})
	if _, err := IdealFairRates(4, []FlowSpec{{0, 0}}); err == nil {
		t.Error("a flow to itself accepted")
	}
}

// Shoal's per-subflow sharing (§3.3.2) on racks small enough to work by
// hand.
func TestShoalFairRatesHandWorked(t *testing.T) {
	// One flow 0→1 in 3 nodes: subflows direct (link 0→1) and via 2 (0→2,
	// 2→1), each link 1/2 of the node's link and alone: the whole link.
	got, err := ShoalFairRates(3, []FlowSpec{{0, 1}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ratesNear(t, "one flow", got, []float64{1})
	// 0→1 and 0→2: link 0→1 carries 0→1 direct and 0→1→2; link 0→2
	// carries 0→2 direct and 0→2→1: four subflows at 1/4; each flow 1/2,
	// the same as the ideal switch (0's uplink is the bottleneck).
	got, _ = ShoalFairRates(3, []FlowSpec{{0, 1}, {0, 2}}, nil)
	ratesNear(t, "fan-out", got, []float64{0.5, 0.5})
	// Full permutation of 3 nodes (0→1, 1→2, 2→0): each flow's direct
	// subflow is alone on its link (1/2); its detour 0→2→1 shares 0→2 with
	// 1→0→2... every non-direct link carries two subflows: 1/4. Flow =
	// 1/2 + 1/4 = 3/4 — more than the 1/2 of N/(2(N-1)) only because N is
	// tiny.
	got, _ = ShoalFairRates(3, []FlowSpec{{0, 1}, {1, 2}, {2, 0}}, nil)
	ratesNear(t, "permutation", got, []float64{0.75, 0.75, 0.75})
	// The same with every subflow capped at one cell per 4 epochs: each
	// subflow gets at most 1/4 of its 1/2 link, 1/8: a flow 1/4.
	loops := []int{0, 4, 4, 4, 0, 4, 4, 4, 0}
	got, _ = ShoalFairRates(3, []FlowSpec{{0, 1}, {1, 2}, {2, 0}}, loops)
	ratesNear(t, "capped", got, []float64{0.25, 0.25, 0.25})
	// The full permutation of N nodes tends to half the link: direct 1 +
	// (N-2)·1/2 over N-1.
	n := 16
	var perm []FlowSpec
	for i := 0; i < n; i++ {
		perm = append(perm, FlowSpec{i, (i + 5) % n})
	}
	got, _ = ShoalFairRates(n, perm, nil)
	want := (1 + float64(n-2)/2) / float64(n-1)
	for _, r := range got {
		if math.Abs(r-want) > 1e-9 {
			t.Fatalf("16-node permutation rate %v, want %v", r, want)
		}
	}
	if _, err := ShoalFairRates(MaxShoalFairNodes+1, nil, nil); err == nil {
		t.Error("too many nodes accepted")
	}
	if _, err := ShoalFairRates(3, []FlowSpec{{0, 1}}, []int{0, 0, 0, 0, 0, 0, 0, 0, 0}); err == nil {
		t.Error("a feedback loop of 0 epochs accepted")
	}
}

func TestParseFlows(t *testing.T) {
	f, err := ParseFlows(" 1>0, 2 > 0,7>3", 8)
	if err != nil || len(f) != 3 || f[1] != (FlowSpec{2, 0}) || f[2].String() != "7>3" {
		t.Fatalf("ParseFlows = %v, %v", f, err)
	}
	for _, bad := range []string{"1-0", "1>1", "8>0", "1>0,1>0", "a>b", ">", "-1>2"} {
		if _, err := ParseFlows(bad, 8); err == nil {
			t.Errorf("ParseFlows(%q) accepted", bad)
		}
	}
}

// The feedback loop of the prototype (§6.2): 1.576 µs each way is about 3
// epochs of 0.54 µs, so a subflow sends one cell every 7 epochs, 8 for the
// pairs whose two directions share a slot; the pair 0→1 (slot 0, back in
// slot 6) and 0→4 (both directions in slot 3) worked by hand in the package
// documentation.
func TestFeedbackLoopPrototype(t *testing.T) {
	c := Prototype()
	s, _ := NewSchedule(8, 1, Cyclic)
	for _, tc := range []struct{ i, j, want int }{{0, 1, 7}, {0, 4, 8}} {
		got, err := FeedbackLoop(c, s, tc.i, tc.j)
		if err != nil || got != tc.want {
			t.Errorf("FeedbackLoop(%d,%d) = %d, %v; want %d", tc.i, tc.j, got, err, tc.want)
		}
	}
	// With slots long enough, the loop closes within one epoch under the
	// propagation-aware schedule (Appendix A's purpose).
	c.SlotNS = 512 * CycleNS
	c.Schedule = PropagationAware
	s, _ = NewSchedule(8, 1, PropagationAware)
	if m, _ := MaxFeedbackLoop(c, s); m != 1 {
		t.Errorf("long-slot propagation-aware loop %d epochs, want 1", m)
	}
	if _, err := FeedbackLoop(c, s, 2, 2); err == nil {
		t.Error("a node's loop to itself accepted")
	}
}

// Reading S2: the feedback in a reply's header shapes the cells of the
// slots that start at or after send-slot start + guard (6.4 ns) +
// propagation (1576 ns, §6.2) + the NICs' receive and transmit pipelines
// (5 + 4 cycles = 57.6 ns, §4.2), i.e. 1640 ns; whole cells, whose CRC
// the receive pipeline checks before queueing them, 1 + ceil((1576 +
// 57.6)/slot) slots (reading S3). The feedback loop of every ordered pair of the
// 8-node cyclic schedule, at each prototype slot size, as the package
// documentation tabulates it (and as an independent count by hand of the
// slots of Fig. 3 gives).
func TestFeedbackLoopPerSlotSize(t *testing.T) {
	for _, tc := range []struct {
		cycles, delay, fb int
		loops             map[int]int // epochs -> ordered pairs (of 56)
	}{
		{12, 23, 22, map[int]int{7: 40, 8: 16}},
		{24, 12, 11, map[int]int{4: 48, 5: 8}},
		{48, 7, 6, map[int]int{2: 16, 3: 40}},
		{96, 4, 3, map[int]int{1: 8, 2: 48}},
		{128, 3, 3, map[int]int{1: 16, 2: 40}},
		{192, 3, 2, map[int]int{1: 24, 2: 32}},
	} {
		c := Prototype()
		c.SlotNS = float64(tc.cycles) * CycleNS
		if c.PipelineNS != 57.6 || c.GuardNS != 6.4 || c.PropNS != 1576 {
			t.Fatalf("pipelines %v ns, guard %v ns, propagation %v ns: want 57.6, 6.4, 1576", c.PipelineNS, c.GuardNS, c.PropNS)
		}
		if c.DelaySlots() != tc.delay || c.FeedbackSlots() != tc.fb {
			t.Errorf("%d-cycle slots: cells after %d slots, feedback after %d; want %d and %d",
				tc.cycles, c.DelaySlots(), c.FeedbackSlots(), tc.delay, tc.fb)
		}
		// The instant the feedback is usable lies within the slot before
		// the one FeedbackSlots names (no extra +1).
		at := c.GuardNS + c.PropNS + c.PipelineNS
		if f := float64(c.FeedbackSlots()); at > f*c.SlotNS || at <= (f-1)*c.SlotNS {
			t.Errorf("%d-cycle slots: feedback usable at %.1f ns, not in slot %d before its boundary", tc.cycles, at, c.FeedbackSlots()-1)
		}
		s, _ := NewSchedule(8, 1, Cyclic)
		loops, err := FeedbackLoops(c, s)
		if err != nil {
			t.Fatal(err)
		}
		got := map[int]int{}
		for k, m := range loops {
			if k/8 != k%8 {
				got[m]++
			}
		}
		if !reflect.DeepEqual(got, tc.loops) {
			t.Errorf("%d-cycle slots: loops (epochs: pairs) %v, want %v", tc.cycles, got, tc.loops)
		}
	}
	// The worked example of the package documentation: at 12 cycles, 0→4
	// leaves in slot 3, is wholly at node 4 in slot 26, node 4 replies in
	// slot 31 (3 + 4 epochs), node 0 can use the reply from slot 53 = 31 +
	// 22, one after its next slot to node 4 (52): the next cell leaves in
	// slot 59, 56 slots, 8 epochs. With the header alone (usable from slot
	// 52) it would have been 7.
	c := Prototype()
	s, _ := NewSchedule(8, 1, Cyclic)
	if a, _, _ := s.When(0, 4); a != 3 {
		t.Fatalf("0→4 in slot %d, want 3", a)
	}
	if m, _ := FeedbackLoop(c, s, 0, 4); m != 8 {
		t.Errorf("0→4 loop %d epochs, want 8", m)
	}
	h := c
	h.PipelineNS = h.HeaderNS()
	if m, _ := FeedbackLoop(h, s, 0, 4); m != 7 {
		t.Errorf("0→4 loop with the header alone %d epochs, want 7", m)
	}
	// At 96 cycles the pairs two apart (0→2: slot 1, back in slot 5) close
	// the loop in one epoch: cell at 2 in slot 5, reply in slot 5, usable in
	// slot 8 = 1 + 7.
	c.SlotNS = 96 * CycleNS
	if m, _ := FeedbackLoop(c, s, 0, 2); m != 1 {
		t.Errorf("96-cycle 0→2 loop %d epochs, want 1", m)
	}
	// The rack (§7.1): 2.75 + 15 ns fit in one 23.25 ns slot.
	if r := Rack(); r.FeedbackSlots() != 1 || r.DelaySlots() != 2 {
		t.Errorf("rack: feedback after %d slots, cells after %d; want 1 and 2", r.FeedbackSlots(), r.DelaySlots())
	}
}

// Reading S1 in the fair shares: flows listed for one pair are one Shoal flow;
// the pair gets what one flow would, all of it to the first listed, nothing
// to the ones queued behind it, and the other flows get what they would
// without the duplicate.
func TestFairRatesPairIsOneFlow(t *testing.T) {
	c := Prototype()
	s, _ := NewSchedule(8, 1, Cyclic)
	loops, _ := FeedbackLoops(c, s)
	one := []FlowSpec{{1, 0}, {2, 0}, {4, 5}}
	dup := []FlowSpec{{1, 0}, {2, 0}, {1, 0}, {4, 5}, {1, 0}}
	for _, tc := range []struct {
		name string
		rate func([]FlowSpec) ([]float64, error)
	}{
		{"shoal", func(f []FlowSpec) ([]float64, error) { return ShoalFairRates(8, f, loops) }},
		{"shoal uncapped", func(f []FlowSpec) ([]float64, error) { return ShoalFairRates(8, f, nil) }},
		{"ideal", func(f []FlowSpec) ([]float64, error) { return IdealFairRates(8, f) }},
	} {
		want, err := tc.rate(one)
		if err != nil {
			t.Fatal(err)
		}
		got, err := tc.rate(dup)
		if err != nil {
			t.Fatal(err)
		}
		ratesNear(t, tc.name, got, []float64{want[0], want[1], 0, want[2], 0})
	}
	// Counted per connection, 1→0 would take two shares of node 0's
	// downlink on the ideal switch: 2/3 against 2→0's 1/3.
	got, _ := IdealFairRates(8, dup)
	if math.Abs(got[0]-0.5) > 1e-9 || math.Abs(got[1]-0.5) > 1e-9 {
		t.Errorf("ideal shares %v: the pair 1→0 must count once (1/2 each)", got)
	}
	if _, err := ShoalFairRates(8, []FlowSpec{{1, 0}, {3, 3}}, nil); err == nil {
		t.Error("a flow to itself accepted")
	}
}
