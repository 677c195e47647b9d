package prr

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	gp "github.com/labrunner/labrunner/golden/prr"
	tp "github.com/labrunner/labrunner/traffic/prr"
)

// batchGen draws the placement test's random batches. The shapes are chosen
// to reach every corner of the placement rule: sparse and full batches,
// many packets for one port (equal keys in the sorting network, §3.2a),
// hot ports that fill their group until it drops (§3.1, §4.4), empty
// batches, and destinations with bits above log2(P) set (the switch decodes
// the low bits only).
type batchGen struct {
	rng  *rand.Rand
	p    int
	hot  [2]int
	left int // batches until the hot ports move
}

func newBatchGen(seed uint64, p int) *batchGen {
	g := &batchGen{rng: rand.New(rand.NewPCG(seed, 0x505252)), p: p} // "PRR"
	g.moveHot()
	return g
}

func (g *batchGen) moveHot() {
	g.hot = [2]int{g.rng.IntN(g.p), g.rng.IntN(g.p)}
	g.left = 100 + g.rng.IntN(200)
}

// dest draws a destination for port d as the batch register carries it:
// sometimes with bits above log2(P) set.
func (g *batchGen) dest(d int) int {
	if g.p < 256 && g.rng.IntN(10) == 0 {
		return d + g.p*(1+g.rng.IntN(256/g.p-1))
	}
	return d
}

// next returns the next batch, one slot per input port.
func (g *batchGen) next() []tp.Slot {
	if g.left--; g.left <= 0 {
		g.moveHot()
	}
	slots := make([]tp.Slot, g.p)
	fill := []float64{0.25, 0.5, 0.75, 1}[g.rng.IntN(4)]
	switch r := g.rng.IntN(100); {
	case r < 5: // empty batch: RELEASE with nothing valid
	case r < 15: // one or two packets
		for range 1 + g.rng.IntN(2) {
			slots[g.rng.IntN(g.p)] = tp.Slot{Valid: true, Dest: g.dest(g.rng.IntN(g.p))}
		}
	case r < 30: // every input to one port: P equal keys
		d := g.hot[g.rng.IntN(2)]
		for i := range slots {
			slots[i] = tp.Slot{Valid: true, Dest: g.dest(d)}
		}
	case r < 60: // hot ports
		for i := range slots {
			if g.rng.Float64() >= fill {
				continue
			}
			d := g.rng.IntN(g.p)
			switch x := g.rng.Float64(); {
			case x < 0.6:
				d = g.hot[0]
			case x < 0.9:
				d = g.hot[1]
			}
			slots[i] = tp.Slot{Valid: true, Dest: g.dest(d)}
		}
	default: // uniform destinations
		for i := range slots {
			if g.rng.Float64() < fill {
				slots[i] = tp.Slot{Valid: true, Dest: g.dest(g.rng.IntN(g.p))}
			}
		}
	}
	return slots
}

// drainCycles draws a drain length: mostly short, so that the hot ports'
// groups fill up until they drop (about 7 packets a batch for the hot port
// against at most 24 leaving per drain every 16 batches), sometimes long
// enough to empty the switch (never more than an egress FIFO holds).
func (g *batchGen) drainCycles() int {
	if g.rng.IntN(16) == 0 {
		return tp.EgressCapacity
	}
	return 1 + g.rng.IntN(24)
}

// tagOf is the tag (data word 0) of slot i in batch k: unique per packet up
// to 2^24-1 batches, never 0 (0 reads past a queue's fill level).
func tagOf(batch, slot int) uint32 { return uint32(batch+1)<<8 | uint32(slot&0xff) }

// describeTag names the packet a tag belongs to.
func describeTag(t uint32) string {
	if t == 0 {
		return "none"
	}
	return fmt.Sprintf("0x%x (batch %d slot %d)", t, int(t>>8)-1, t&0xff)
}

// goldenBatch is the batch as golden/prr takes it: destinations reduced to
// the log2(P) bits the switch decodes (docs/prr.md), the tag as data.
func goldenBatch(slots []tp.Slot, p, batch int) []gp.Packet {
	out := make([]gp.Packet, len(slots))
	for i, s := range slots {
		if s.Valid {
			out[i] = gp.Packet{Valid: true, Dest: s.Dest & (p - 1), Data: uint64(tagOf(batch, i))}
		}
	}
	return out
}

// expected is what the hardware must show for one batch.
type expected struct {
	words   []uint32 // PLACEMENT[0..P-1]
	placed  int
	dropped int
}

// expectPlacement inserts batch into the golden switch and returns the
// PLACEMENT words the hardware must read back. A placed packet's entry is
// its queue's fill level before the write (each queue takes at most one
// packet per batch). A dropped packet names the full queue it was meant
// for: golden/prr lists, per port, the packets it wrote and the ones it
// dropped in the order of the queues offset_d, offset_d+1, ... (its
// Insert's documented order), so port d's drops take, in order, the queues
// of that sequence its writes did not use.
func expectPlacement(sw *gp.Switch, batch []gp.Packet) expected {
	p := sw.Ports()
	placements, drops := sw.Insert(batch)
	e := expected{words: make([]uint32, p), placed: len(placements), dropped: len(drops)}
	for _, pl := range placements {
		e.words[pl.Input] = tp.Placement{Placed: true, Group: pl.Dest, Queue: pl.Queue, Pos: sw.QueueLen(pl.Dest, pl.Queue) - 1}.Word()
	}
	if len(drops) == 0 {
		return e
	}
	count := make([]int, p)
	for _, pk := range batch {
		if pk.Valid {
			count[pk.Dest]++
		}
	}
	after := sw.State().Offsets
	used := make([]map[int]bool, p)
	for _, pl := range placements {
		if used[pl.Dest] == nil {
			used[pl.Dest] = map[int]bool{}
		}
		used[pl.Dest][pl.Queue] = true
	}
	next := make([]int, p) // per port: how far along its queue sequence the drops are
	for _, in := range drops {
		d := batch[in].Dest
		first := ((after[d]-count[d])%p + p) % p // offset_d before the batch
		for next[d] < count[d] {
			q := (first + next[d]) % p
			next[d]++
			if !used[d][q] {
				e.words[in] = tp.Placement{Dropped: true, Group: d, Queue: q}.Word()
				break
			}
		}
	}
	return e
}

// slotDiff is one slot whose PLACEMENT word differs.
type slotDiff struct {
	slot      int
	dest      int // as written (8 bits)
	want, got tp.Placement
}

func diffPlacement(slots []tp.Slot, want, got []uint32) []slotDiff {
	var out []slotDiff
	for i := range want {
		if i >= len(got) || got[i] != want[i] {
			d := slotDiff{slot: i, want: tp.DecodePlacement(want[i])}
			if i < len(got) {
				d.got = tp.DecodePlacement(got[i])
			}
			if i < len(slots) {
				d.dest = slots[i].Dest
			}
			out = append(out, d)
		}
	}
	return out
}

// diagnose reads a pattern into the differences of one batch, port by port:
// a constant rotation of a port's queues is its offset counter (§3.2b); the
// right queues in another order is the sorting network's order of equal
// keys (§3.2a; reading P1: input order); the right queues at other
// entries are fill levels that disagree.
func diagnose(slots []tp.Slot, want, got []uint32, p int) []string {
	type pair struct{ w, g tp.Placement }
	byPort := map[int][]pair{}
	var ports []int
	for i, s := range slots {
		if !s.Valid {
			continue
		}
		d := s.Dest & (p - 1)
		if _, ok := byPort[d]; !ok {
			ports = append(ports, d)
		}
		byPort[d] = append(byPort[d], pair{tp.DecodePlacement(want[i]), tp.DecodePlacement(got[i])})
	}
	slices.Sort(ports)
	var out []string
	for _, d := range ports {
		ps := byPort[d]
		same := true
		for _, x := range ps {
			same = same && x.w == x.g
		}
		if same {
			continue
		}
		wq, gq := make([]int, len(ps)), make([]int, len(ps))
		groupsOK, kindsOK := true, true
		for i, x := range ps {
			wq[i], gq[i] = x.w.Queue, x.g.Queue
			groupsOK = groupsOK && x.g.Group == d
			kindsOK = kindsOK && x.w.Placed == x.g.Placed && x.w.Dropped == x.g.Dropped
		}
		switch {
		case !groupsOK:
			out = append(out, fmt.Sprintf("port %d: packets written into another port's group (destination decoded wrongly)", d))
		case !kindsOK:
			out = append(out, fmt.Sprintf("port %d: placed/dropped disagree with the golden queue fill levels (queue state out of step)", d))
		case rotation(wq, gq, p) != 0:
			out = append(out, fmt.Sprintf("port %d: its packets start at queue %d where the golden model starts at %d, all shifted by %d: the port's offset counter (§3.2b) is out of step",
				d, gq[0], wq[0], rotation(wq, gq, p)))
		case slices.Equal(wq, gq):
			out = append(out, fmt.Sprintf("port %d: right queues, other entries: the queues' fill levels differ from the golden ones", d))
		case sameSet(wq, gq):
			out = append(out, fmt.Sprintf("port %d: its %d packets landed in the right queues but permuted among themselves: the sorting network did not keep equal keys in input order (§3.2a; reading P1: input order)", d, len(ps)))
		default:
			out = append(out, fmt.Sprintf("port %d: queues %v, golden %v", d, gq, wq))
		}
	}
	return out
}

// rotation returns δ ≠ 0 if got[i] = want[i] + δ (mod p) for every i, else 0.
func rotation(want, got []int, p int) int {
	if len(want) == 0 {
		return 0
	}
	delta := ((got[0]-want[0])%p + p) % p
	for i := range want {
		if ((got[i]-want[i])%p+p)%p != delta {
			return 0
		}
	}
	return delta
}

func sameSet(a, b []int) bool {
	x, y := slices.Clone(a), slices.Clone(b)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(x, y)
}

// describeBatchDiff renders a differing batch for a verdict message: the
// first differing slot in full, how many differ, and the diagnosis.
func describeBatchDiff(batch int, slots []tp.Slot, ds []slotDiff, valid int, diag []string) string {
	d := ds[0]
	s := fmt.Sprintf("batch %d: slot %d (DEST %d) expected %s, read back %s", batch, d.slot, d.dest, d.want, d.got)
	if len(ds) > 1 {
		s += fmt.Sprintf("; %d of %d packets differ", len(ds), valid)
	}
	if len(diag) > 0 {
		s += " — " + strings.Join(diag, "; ")
	}
	return s
}

// diffState compares the golden switch's state with the read-back one and
// lists the differences (at most limit), arbiter and offset first.
func diffState(g gp.State, h tp.State, p, limit int) []string {
	var out []string
	add := func(format string, a ...any) {
		if len(out) < limit {
			out = append(out, fmt.Sprintf(format, a...))
		}
	}
	for d := range p {
		if h.Arbiters[d] != g.Arbiters[d] {
			add("ARB_INDEX[%d] reads %d, golden %d: the output arbiter of port %d is out of step (§4.4)", d, h.Arbiters[d], g.Arbiters[d], d)
		}
	}
	for d := range p {
		if h.Offsets[d] != g.Offsets[d] {
			add("OFFSET[%d] reads %d, golden %d: the offset counter of port %d is out of step (§3.2b)", d, h.Offsets[d], g.Offsets[d], d)
		}
	}
	for gi := range p {
		for q := range p {
			i := gi*p + q
			hs, want := h.Queues[i], g.Queues[gi][q]
			if hs.Count != len(want) {
				add("queue %d of group %d holds %d packets, golden %d", q, gi, hs.Count, len(want))
			}
			if hs.Next != (q == g.Offsets[gi]) {
				add("QSTAT[%d].NEXT of queue %d, group %d is %v, golden offset %d", i, q, gi, hs.Next, g.Offsets[gi])
			}
			if hs.Arb != (q == g.Arbiters[gi]) {
				add("QSTAT[%d].ARB of queue %d, group %d is %v, golden arbiter %d", i, q, gi, hs.Arb, g.Arbiters[gi])
			}
			if h.Tags == nil {
				continue
			}
			for k := 0; k < max(len(want), len(h.Tags[i])); k++ {
				var wt, ht uint32
				if k < len(want) {
					wt = uint32(want[k].Data)
				}
				if k < len(h.Tags[i]) {
					ht = h.Tags[i][k]
				}
				if wt != ht {
					add("queue %d of group %d entry %d holds %s, golden %s", q, gi, k, describeTag(ht), describeTag(wt))
					break
				}
			}
			if h.TagTail[i] > 0 {
				add("queue %d of group %d: %d QTAGS words past the fill level are not 0", q, gi, h.TagTail[i])
			}
		}
	}
	return out
}

// stateOf turns a read-back (with tags) into a golden state, to resume
// after a difference: the tag's low byte is the input.
func stateOf(h tp.State, p int) gp.State {
	st := gp.State{Offsets: slices.Clone(h.Offsets), Arbiters: slices.Clone(h.Arbiters), Queues: make([][][]gp.Entry, p)}
	for g := range p {
		st.Queues[g] = make([][]gp.Entry, p)
		for q := range p {
			for _, t := range h.Tags[g*p+q] {
				st.Queues[g][q] = append(st.Queues[g][q], gp.Entry{Input: int(t & 0xff), Data: uint64(t)})
			}
		}
	}
	return st
}

// goldenDrain runs the golden output arbiters for cycles cycles with no
// input and returns the tags that left each port, in order.
func goldenDrain(sw *gp.Switch, cycles int) [][]uint32 {
	out := make([][]uint32, sw.Ports())
	for range cycles {
		for _, d := range sw.Dequeue() {
			out[d.Output] = append(out[d.Output], uint32(d.Data))
		}
	}
	return out
}

// diffEgress compares departures port by port and names the first
// difference of each differing port (at most limit).
func diffEgress(want, got [][]uint32, limit int) []string {
	var out []string
	for d := range want {
		var g []uint32
		if d < len(got) {
			g = got[d]
		}
		if slices.Equal(want[d], g) {
			continue
		}
		if len(out) == limit {
			break
		}
		k := 0
		for k < len(want[d]) && k < len(g) && want[d][k] == g[k] {
			k++
		}
		var wt, gt uint32
		if k < len(want[d]) {
			wt = want[d][k]
		}
		if k < len(g) {
			gt = g[k]
		}
		msg := fmt.Sprintf("port %d sent %d packets, golden %d; departure %d is %s, golden %s", d, len(g), len(want[d]), k+1, describeTag(gt), describeTag(wt))
		if len(g) < len(want[d]) {
			msg += " (the output arbiter waits at a queue the golden arbiter has passed: out of step, §4.4)"
		} else if sameMultiset(want[d], g) {
			msg += " (the same packets in another order: the output arbiter serves the group's queues out of the round-robin fill order, §4.4)"
		}
		out = append(out, msg)
	}
	return out
}

func sameMultiset(a, b []uint32) bool {
	x, y := slices.Clone(a), slices.Clone(b)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(x, y)
}
