package shoal

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/labrunner/labrunner/internal/raceshare"
)

// permutation is a full permutation of long flows (§6.2: each node has
// exactly one incoming and one outgoing flow).
func permutation() []flow { return permutationTo(3, 5, 0, 7, 6, 2, 1, 4) }

// permutationTo is the permutation in which node i sends to dst[i].
func permutationTo(dst ...int) []flow {
	var flows []flow
	for i, d := range dst {
		flows = append(flows, flow{src: i, dst: d, bytes: 1 << 30, tag: uint32(100 + i)})
	}
	return flows
}

// destThroughput runs a permutation for slots slots and returns the useful
// cells each destination received per slot (§6.2 destination throughput).
func destThroughput(t *testing.T, slotCycles uint32, slots uint32) float64 {
	tr := newTestRack(t, rackOpts{})
	tr.configure(setup{slotCycles: slotCycles})
	tr.loadFlows(permutation())
	tr.clear()
	if st := tr.runTraffic(slots); st != tgLimit {
		t.Fatalf("slot %d: TG_STATUS = %#x, want LIMIT", slotCycles, st)
	}
	ran := tr.Read("shoal-nic0", "TG_RUN_SLOTS")
	if ran != slots {
		t.Fatalf("TG_RUN_SLOTS = %d, want %d", ran, slots)
	}
	return float64(tr.sumNodes("RX_DELIVERED_CELLS")) / nodes8 / float64(ran)
}

// Fig. 9 (§6.2): with the prototype's 1.57 us propagation longer than an
// epoch, the congestion control's wait for feedback holds permutation
// throughput well below 50% at small slots; it rises with the slot size and
// converges near 50% (slightly above on 8 nodes: the direct subflow needs
// no forwarding).
func TestPermutationThroughputVsSlotSize(t *testing.T) {
	sizes := []uint32{12, 24, 48, 96, 192}
	thr := make([]float64, len(sizes))
	for i, s := range sizes {
		thr[i] = destThroughput(t, s, 6000)
		t.Logf("slot %3d cycles (%.1f ns): %.3f useful cells per destination per slot", s, float64(s)*6.4, thr[i])
	}
	for i := 1; i < 4; i++ {
		if thr[i] <= thr[i-1] {
			t.Errorf("throughput at %d cycles (%.3f) not above %d cycles (%.3f)", sizes[i], thr[i], sizes[i-1], thr[i-1])
		}
	}
	if thr[0] > 0.25 {
		t.Errorf("throughput at 12-cycle slots %.3f, want well below the 50%% bound (epoch 0.54 us < propagation 1.57 us)", thr[0])
	}
	for i := 3; i < len(sizes); i++ {
		if thr[i] < 0.45 || thr[i] > 0.6 {
			t.Errorf("throughput at %d cycles %.3f, want about 50%%", sizes[i], thr[i])
		}
	}
}

// Fig. 10 (§6.2): seven nodes send seven cells each to node 0 at the same
// time. Every flow completes within the slowest's few microseconds, the
// spread between fastest and slowest is small (fair queuing), and the
// queues for node 0 stay within Eq. 5.
func TestIncastSevenToOne(t *testing.T) {
	tr := newTestRack(t, rackOpts{})
	tr.configure(setup{})
	payload := tr.Read("shoal-nic0", "PAYLOAD_BYTES")
	var flows []flow
	for i := 1; i < nodes8; i++ {
		flows = append(flows, flow{src: i, dst: 0, bytes: 7 * payload, tag: uint32(i)})
	}
	tr.loadFlows(flows)
	tr.clear()
	if st := tr.runTraffic(0); st != tgDone {
		t.Fatalf("TG_STATUS = %#x, want DONE", st)
	}
	recs := tr.records(0)
	if len(recs) != 7 {
		t.Fatalf("%d completion records at node 0, want 7", len(recs))
	}
	lo, hi := uint32(math.MaxUint32), uint32(0)
	for _, r := range recs {
		fct := r.end - r.start
		lo, hi = min(lo, fct), max(hi, fct)
		if r.bytes != 7*payload || r.dst != 0 || r.tag != r.src {
			t.Errorf("record %+v", r)
		}
	}
	t.Logf("FCT fastest %d ns, slowest %d ns (§6.2: 6.05 us and 6.9 us)", lo, hi)
	if lo < 2*1576 {
		t.Errorf("fastest FCT %d ns is below two propagation delays (2 x 1.576 us)", lo)
	}
	if hi < 5500 || hi > 7500 {
		t.Errorf("slowest FCT %d ns, want 5.5-7.5 us (§6.2: 6.9 us)", hi)
	}
	if hi-lo > 1200 {
		t.Errorf("fastest and slowest differ by %d ns, want a small spread (§6.2: 0.85 us)", hi-lo)
	}
	for n := 1; n < nodes8; n++ {
		b, p := nodeBoard(n)
		q := tr.Read(b, fmt.Sprintf("MAX_QUEUE[%d]", p*maxNodes))
		if q < 1 || q > 7 {
			t.Errorf("node %d: queue for node 0 peaked at %d, want 1..7 (Eq. 5, incast degree 7)", n, q)
		}
	}
	if d := tr.sumNodes("RX_DELIVERED_CELLS"); d != 49 {
		t.Errorf("%d useful cells delivered, want 49", d)
	}
}

// randomFlows is uniform random traffic (§7.3): Poisson arrivals, Pareto
// sizes (shape 1.05), sources and destinations uniform; sizes are capped so
// that the test stays short.
func randomFlows(seed uint64, n int, meanGapNS float64, capBytes float64) []flow {
	r := rand.New(rand.NewPCG(seed, 7))
	var flows []flow
	t := 0.0
	for i := 0; i < n; i++ {
		t += r.ExpFloat64() * meanGapNS
		src := r.IntN(nodes8)
		dst := (src + 1 + r.IntN(nodes8-1)) % nodes8
		size := math.Min(capBytes, 1000/math.Pow(1-r.Float64(), 1/1.05))
		flows = append(flows, flow{src: src, dst: dst, bytes: uint32(size), startNS: uint32(t), tag: uint32(i + 1)})
	}
	return flows
}

// Under random traffic every flow completes with its bytes, the
// destinations receive exactly the cells sent, and no queue exceeds the
// bound of Eq. 5: one local cell plus one cell per flow to its destination
// (§3.3.3, §3.3.4).
func TestRandomTrafficQueueBound(t *testing.T) {
	tr := newTestRack(t, rackOpts{})
	tr.configure(setup{})
	flows := randomFlows(3, 240, 400, 60000)
	tr.loadFlows(flows)
	tr.clear()
	if st := tr.runTraffic(0); st != tgDone {
		t.Fatalf("TG_STATUS = %#x, want DONE (%d of %d flows)", st, tr.Read("shoal-nic0", "TG_FLOWS_DONE"), tr.Read("shoal-nic0", "TG_FLOWS_TOTAL"))
	}
	payload := tr.Read("shoal-nic0", "PAYLOAD_BYTES")
	byTag := map[uint32]flow{}
	cellsTo := make([]uint64, nodes8)
	sources := make([]map[int]bool, nodes8)
	for _, f := range flows {
		byTag[f.tag] = f
		cellsTo[f.dst] += uint64((f.bytes + payload - 1) / payload)
		if sources[f.dst] == nil {
			sources[f.dst] = map[int]bool{}
		}
		sources[f.dst][f.src] = true
	}
	recs := tr.allRecords()
	if len(recs) != len(flows) {
		t.Fatalf("%d records for %d flows", len(recs), len(flows))
	}
	for _, r := range recs {
		f, ok := byTag[r.tag]
		if !ok || int(r.src) != f.src || int(r.dst) != f.dst || r.bytes != f.bytes || r.start != f.startNS || r.end <= r.start {
			t.Errorf("record %+v for flow %+v", r, f)
		}
		delete(byTag, r.tag)
	}
	for n := 0; n < nodes8; n++ {
		if got := uint64(tr.nodeReg(n, "RX_DELIVERED_CELLS")); got != cellsTo[n] {
			t.Errorf("node %d: %d useful cells, the flows to it have %d", n, got, cellsTo[n])
		}
		b, p := nodeBoard(n)
		for k := 0; k < nodes8; k++ {
			q := int(tr.Read(b, fmt.Sprintf("MAX_QUEUE[%d]", p*maxNodes+k)))
			if bound := 1 + len(sources[k]); q > bound {
				t.Errorf("Q(%d,%d) peaked at %d, above 1 + incast degree = %d (Eq. 5)", n, k, q, bound)
			}
		}
		if r := tr.nodeReg(n, "MAX_READY_ANY"); r > nodes8-1 {
			t.Errorf("node %d: a ready queue held %d flows, above N-1 (Eq. 4)", n, r)
		}
		for _, c := range []string{"DROPS", "FAILED_SLOTS", "RX_CORRUPT_CELLS", "RX_DUPLICATE_CELLS"} {
			if v := tr.nodeReg(n, c); v != 0 {
				t.Errorf("node %d: %s = %d", n, c, v)
			}
		}
	}
	t.Logf("%d flows in %d slots; largest queue anywhere %d cells", len(flows), tr.Read("shoal-nic0", "TG_RUN_SLOTS"), maxOver(tr, "MAX_QUEUE_ANY"))
}

func maxOver(tr *testRack, reg string) uint32 {
	m := uint32(0)
	for n := 0; n < nodes8; n++ {
		m = max(m, tr.nodeReg(n, reg))
	}
	return m
}

// Bad descriptors are skipped and counted; the rest run.
func TestBadDescriptors(t *testing.T) {
	tr := newTestRack(t, rackOpts{})
	tr.configure(setup{})
	tr.loadFlows([]flow{{src: 2, dst: 2, bytes: 100, tag: 1}, {src: 2, dst: 9, bytes: 100, tag: 2},
		{src: 2, dst: 3, bytes: 0, tag: 3}, {src: 2, dst: 3, bytes: 100, tag: 4}})
	// A descriptor whose source is not the NIC's node id.
	tr.WriteAddr("shoal-nic0", flowsBase+uint64(2*flowsStride+16*4), 1|5<<16)
	tr.WriteAddr("shoal-nic0", flowsBase+uint64(2*flowsStride+16*4+4), 100)
	tr.Write("shoal-nic0", "FLOW_COUNT[2]", 5)
	if st := tr.runTraffic(0); st != tgDone {
		t.Fatalf("TG_STATUS = %#x", st)
	}
	if b := tr.nodeReg(2, "BAD_DESCRIPTORS"); b != 4 {
		t.Errorf("BAD_DESCRIPTORS = %d, want 4", b)
	}
	if tot := tr.Read("shoal-nic0", "TG_FLOWS_TOTAL"); tot != 1 {
		t.Errorf("TG_FLOWS_TOTAL = %d, want 1", tot)
	}
	if recs := tr.records(3); len(recs) != 1 || recs[0].tag != 4 {
		t.Errorf("node 3 records %+v", recs)
	}
}

// A run split into slot-limited writes with TG_CTRL.CONTINUE gives exactly
// what one uninterrupted START gives (the runner splits long runs to keep
// each write within its deadline).
func TestContinueSplitsARun(t *testing.T) {
	flows := randomFlows(8, 120, 300, 40000)
	run := func(chunk uint32) ([]record, uint32) {
		tr := newTestRack(t, rackOpts{seed: 9})
		tr.configure(setup{})
		tr.loadFlows(flows)
		tr.clear()
		tr.Write("shoal-nic0", "TG_LIMIT_SLOTS", chunk)
		st := tr.Read("shoal-nic0", "TG_STATUS")
		tr.Write("shoal-nic0", "TG_CTRL", 1)
		writes := 1
		for st = tr.Read("shoal-nic0", "TG_STATUS"); st == tgLimit; st = tr.Read("shoal-nic0", "TG_STATUS") {
			tr.Write("shoal-nic0", "TG_CTRL", 2)
			writes++
		}
		if st != tgDone {
			t.Fatalf("chunk %d: TG_STATUS = %#x", chunk, st)
		}
		if chunk < 100000 && writes < 3 {
			t.Fatalf("chunk %d: the run took only %d writes", chunk, writes)
		}
		if d, tot := tr.Read("shoal-nic0", "TG_FLOWS_DONE"), tr.Read("shoal-nic0", "TG_FLOWS_TOTAL"); d != tot || int(tot) != len(flows) {
			t.Fatalf("TG_FLOWS_DONE %d of %d", d, tot)
		}
		return tr.allRecords(), tr.Read("shoal-nic0", "SLOT_LO")
	}
	whole, s1 := run(1 << 20)
	split, s2 := run(1000)
	if len(whole) != len(flows) || !reflect.DeepEqual(whole, split) {
		t.Errorf("split run differs: %d and %d records", len(whole), len(split))
	}
	if s1 != s2 {
		t.Errorf("the runs ended at slots %d and %d", s1, s2)
	}
}

// maxMinBound is the destination throughput Shoal's mechanism allows a set
// of long flows on the cyclic schedule (reading S20; §3.3.2, §6.2, App. A),
// in useful cells per destination per slot. Each flow has N-1 subflows,
// one per intermediate node; a subflow has at most one cell awaiting
// feedback, so it sends at most one cell per feedback loop: the loop is the
// smallest whole number of epochs m with s + mE - r >= kb, where s is the
// source's slot to the intermediate node, r the first slot of the
// intermediate node back to the source at or after s + kf; kf the slots the
// whole cell needs to be queued at the intermediate node (the slot + one-way
// delay + the NIC's congestion-control pipelines, reading S3) and kb the
// slots the feedback in the reply's header needs (guard + one-way delay +
// the pipelines, §4.2, §6.2; reading S2). A virtual link carries one cell
// per epoch: the direct subflow has its link to itself, an indirect subflow
// shares each of its two links with one other subflow of the permutation
// (at most half a cell per epoch). For N = 8 and short loops: (1 + 6 x
// 1/2)/7 = 4/7; as N grows, 1/2 (§3.3.1: "at most 2x worse").
func maxMinBound(n int, slotCycles int, flows []flow) float64 {
	const guardNS, owdNS, pipeCycles = 6.4, 1576.0, 9 // §6.1; §6.2: 40 + 3 x 320 + 576 ns; §4.2: 4 + 5 cycles
	E := n - 1
	slotNS := float64(slotCycles) * 6.4
	kf := int(math.Ceil((slotNS + owdNS + pipeCycles*6.4) / slotNS))
	kb := int(math.Ceil((guardNS + owdNS + pipeCycles*6.4) / slotNS))
	perEpoch := func(src, via int) float64 {
		d := (via - src + n) % n    // the cyclic schedule: src sends to src+d in slot d-1
		s := d - 1                  // the source's slot to via
		back := ((src-via+n)%n - 1) // via's slot back to src, within an epoch
		r := back + E*int(math.Ceil(float64(max(s+kf-back, 0))/float64(E)))
		m := int(math.Ceil(float64(r+kb-s) / float64(E)))
		return 1 / float64(m)
	}
	total := 0.0
	sharing := len(flows) > 1
	for _, f := range flows {
		cells := 0.0
		for via := 0; via < n; via++ {
			if via == f.src {
				continue
			}
			r := perEpoch(f.src, via)
			if via != f.dst && sharing {
				r = min(r, 0.5)
			}
			cells += r
		}
		total += cells / float64(E)
	}
	return total / float64(len(flows))
}

// The permutation's destination throughput stays within the bound of
// Shoal's mechanism (reading S20), never above it. A single flow, whose
// subflows share no virtual link, reaches it to within 1%: one pair, 6/7
// at 384-cycle slots (the subflows through the nodes at offsets 4 and 7
// wait for a whole cell a slot too long and take two epochs, reading S3)
// and 4/7 at 96. Flows whose subflows share intermediate queues settle
// into a steady pattern: alternating there, at the bound (the plan's
// permutation at 128 and 384 cycles, within 0.1%), or meeting there, where
// the feedback of 1 counted from its receipt (reading S64) costs an epoch
// now and then: the plan's permutation at 96 cycles 3% below, a shift by
// one at 384 cycles 8% below (golden/shoal reads 0.5238 there too), never
// more than 10%. With local cells released only at the transmit slot to
// the intermediate node the shared links settled into three-epoch turns
// and the permutations of seeds 2 and 6 fell 6% and 8% below the bound at
// 128 cycles, where they now reach it (reading S63). From one pair to all
// pairs it falls monotonically (§7.2, Fig. 12).
//
// Each bound and the Fig. 12 series is a run of its own: under the race
// detector the test takes one of them, in rotation by day
// (internal/raceshare); make test runs all of them without it.
func TestPermutationMaxMinBound(t *testing.T) {
	shift := make([]flow, nodes8)
	for i := range shift {
		shift[i] = flow{src: i, dst: (i + 1) % nodes8, bytes: 1 << 30, tag: uint32(i)}
	}
	run := func(t *testing.T, slotCycles uint32, flows []flow) float64 {
		t.Helper()
		tr := newTestRack(t, rackOpts{})
		tr.configure(setup{slotCycles: slotCycles})
		tr.loadFlows(flows)
		tr.clear()
		const slots = 14000
		if st := tr.runTraffic(slots); st != tgLimit {
			t.Fatalf("slot %d: TG_STATUS = %#x, want LIMIT", slotCycles, st)
		}
		return float64(tr.sumNodes("RX_DELIVERED_CELLS")) / float64(len(flows)) / slots
	}
	type check struct {
		name string
		fn   func(t *testing.T)
	}
	var checks []check
	for _, c := range []struct {
		name  string
		slot  uint32
		flows []flow
		want  float64 // the bound, worked by hand, to check maxMinBound itself
	}{
		{"plan permutation", 96, permutation(), 28.5 / 56},
		{"plan permutation", 128, permutation(), 29.0 / 56},
		// Two permutations the runner's generator draws (seeds 2 and 6).
		{"permutation 14573602", 96, permutationTo(1, 4, 5, 7, 3, 6, 0, 2), 28.5 / 56},
		{"permutation 14573602", 128, permutationTo(1, 4, 5, 7, 3, 6, 0, 2), 28.5 / 56},
		{"permutation 32415076", 128, permutationTo(3, 2, 4, 1, 5, 0, 7, 6), 29.0 / 56},
		{"plan permutation", 384, permutation(), 31.0 / 56},
		{"shift by one", 384, shift, 4.0 / 7},
		{"one pair", 384, permutation()[:1], 6.0 / 7},
		{"one pair", 96, permutation()[:1], 4.0 / 7},
	} {
		checks = append(checks, check{fmt.Sprintf("%s at %d", c.name, c.slot), func(t *testing.T) {
			bound := maxMinBound(nodes8, int(c.slot), c.flows)
			if math.Abs(bound-c.want) > 1e-9 {
				t.Errorf("%s at %d cycles: maxMinBound %.4f, worked by hand %.4f", c.name, c.slot, bound, c.want)
			}
			got := run(t, c.slot, c.flows)
			t.Logf("%s at %d-cycle slots: %.4f useful cells per destination per slot, bound %.4f", c.name, c.slot, got, bound)
			floor := 0.99 // a single flow: nothing meets in a queue
			if len(c.flows) > 1 {
				floor = 0.90 // subflows that meet in a queue (reading S64)
			}
			if got > bound*1.002 || got < bound*floor {
				t.Errorf("%s at %d cycles: %.4f, want the mechanism's bound %.4f (at most %.0f%% below it, never above)", c.name, c.slot, got, bound, 100*(1-floor))
			}
		}})
	}
	// Fig. 12: from one pair to all pairs the throughput falls monotonically.
	checks = append(checks, check{"Fig. 12 from one pair to all", func(t *testing.T) {
		perm := permutation()
		prev := 2.0
		for _, k := range []int{1, 2, 4, 8} {
			thr := run(t, 384, perm[:k])
			t.Logf("%d pairs at 384-cycle slots: %.3f", k, thr)
			if thr >= prev {
				t.Errorf("%d pairs: %.3f, not below %.3f with fewer pairs (Fig. 12: monotonically decreasing)", k, thr, prev)
			}
			prev = thr
		}
	}})
	for _, c := range raceshare.Cases(t, checks) {
		t.Run(c.name, c.fn)
	}
}
