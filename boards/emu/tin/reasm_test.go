package tin

import (
	"math/rand/v2"
	"testing"
)

// The egress lands data cells by the RPTR in their header alone (docs/tin.md,
// "Cell formats"): these tests drive one TiN's IP endpoint with cells built
// as a source builds them, in orders and with faults the fabric produces
// only by chance.

// egressRig is a configured Clique with the source and destination TiNs of
// the packets under test at hand.
type egressRig struct {
	t        testing.TB
	tr       *testRack
	f        *fabric
	src, dst *device
	seq      uint32
}

func newEgressRig(t testing.TB) *egressRig {
	tr := newTestRack(t, rackOpts{})
	g := &egressRig{t: t, tr: tr}
	for _, b := range tr.Rack.Boards() {
		f := fabricFor(b)
		switch b.Name() {
		case node{0, 1}.board():
			g.f, g.src = f, f.device(b)
		case node{1, 2}.board():
			g.dst = f.device(b)
		}
	}
	if g.f == nil || g.src == nil || g.dst == nil {
		t.Fatal("the rig's boards run no tin design")
	}
	return g
}

// open sends the RTS of an n-byte packet to the destination, as the source's
// ingress would, and returns the packet and the egress slot of the CTS the
// scheduler answered with, read off the CTS cell it queued for the fabric.
func (g *egressRig) open(n int) (*packet, int) {
	g.t.Helper()
	g.seq++
	p := &packet{src: g.src.addr | 1, dst: g.dst.addr | 1, n: n, kind: pkUR, flow: 7, seq: g.seq, gen: &g.src.gen.ipg, log: true}
	g.f.opStart()
	now := g.f.now
	rts := g.src.newCell(TypeRTS, p.dst, p.src, CtlCell, vcOf(0), false, now)
	rts.pkt = p
	g.dst.deliver(portIP, rts, now)
	q := &g.dst.inj[0].q[vcOf(1)]
	if q.n == 0 {
		g.t.Fatalf("%d B packet: the destination answered its RTS with no CTS", n)
	}
	cts := q.buf[(q.head+q.n-1)&(len(q.buf)-1)]
	if cts.h.Type != TypeCTS || cts.pkt != p {
		g.t.Fatalf("the last cell queued at the destination is %s, not the packet's CTS", TypeName(cts.h.Type))
	}
	return p, int(cts.p0 >> 40 & 0xFFF)
}

// cell builds data cell i of p as the source sends it on a CTS for slot.
func (g *egressRig) cell(p *packet, slot, i int) *cell {
	sizes := Cellify(p.n)
	c := g.src.newCell(TypeData, p.dst, DataRPTR(slot, i), sizes[i], vcOf(3), false, g.f.now)
	c.p0 = p.word(i * DataPerCell)
	return c
}

// land ejects a data cell to the destination's IP endpoint.
func (g *egressRig) land(c *cell) { g.dst.deliver(portIP, c, g.f.now) }

// drain runs the fabric's events to the end: the CTSs travel to the source
// (which has no such packet and ignores them), deliveries and timers fire.
func (g *egressRig) drain() {
	g.t.Helper()
	for i := 0; g.f.q.Len() > 0; i++ {
		if i > 1_000_000 {
			g.t.Fatal("the fabric's events do not run out")
		}
		t, e := g.f.pop()
		g.f.now = max(g.f.now, t)
		g.f.dispatch(t, e)
	}
}

func (g *egressRig) ctr(i int) uint32 { return g.dst.ip.ctr[i] }

// A packet's cells land wherever their RPTR says, in any order: in order,
// reversed, last first, shuffled; two packets' cells interleaved. The
// packet is complete only when every index has landed: a duplicate of a
// landed index, or a cell whose LEN is not its index's, is discarded
// (IP_DATA_MISMATCH) and does not stand in for a missing cell.
func TestDataCellsReassembleInAnyOrder(t *testing.T) {
	g := newEgressRig(t)
	g.f.mu.Lock()
	defer g.f.mu.Unlock()
	const n = 5*DataPerCell + 17 // 6 cells, the last 8 + 17 = 25 B
	cells := len(Cellify(n))
	rng := rand.New(rand.NewPCG(1, 2))
	orders := map[string][]int{"in order": {0, 1, 2, 3, 4, 5}, "reversed": {5, 4, 3, 2, 1, 0}, "last first": {5, 0, 1, 2, 3, 4}}
	for k := 0; k < 5; k++ {
		orders["shuffled "+string(rune('a'+k))] = rng.Perm(cells)
	}
	delivered := g.ctr(cIPPktsDelivered)
	slots := map[int]bool{}
	for name, order := range orders {
		p, slot := g.open(n)
		slots[slot] = true
		for j, i := range order {
			if p.complete {
				t.Fatalf("%s: complete after %d of %d cells", name, j, cells)
			}
			if j == 2 {
				// A copy of a cell already landed, a cell for the last
				// position to fill with a LEN its index does not have, one
				// for it addressed to another egress port, and a full cell
				// past the packet's last index: none fills a position.
				g.land(g.cell(p, slot, order[0]))
				last := order[cells-1]
				bad := g.cell(p, slot, last)
				bad.h.Len = MaxCell + MinCell - bad.h.Len // 160 <-> 16
				if bad.h.Len == Cellify(n)[last] {
					t.Fatalf("%s: the malformed cell has its index's length", name)
				}
				g.land(bad)
				other := g.cell(p, slot, last)
				other.h.Dst = p.dst&^0x1F | 2
				g.land(other)
				g.land(g.src.newCell(TypeData, p.dst, DataRPTR(slot, cells), MaxCell, vcOf(3), false, g.f.now))
			}
			g.land(g.cell(p, slot, i))
		}
		if !p.complete {
			t.Fatalf("%s: all %d cells landed in slot %d, the packet is not complete", name, cells, slot)
		}
		g.drain()
		if d := g.ctr(cIPPktsDelivered); d != delivered+1 {
			t.Fatalf("%s: IP_PKTS_DELIVERED went from %d to %d, want one packet", name, delivered, d)
		}
		delivered++
		if g.dst.ip.egSlots[slot] != nil {
			t.Errorf("%s: slot %d still holds a context after delivery", name, slot)
		}
	}
	if len(slots) < 2 {
		t.Errorf("every packet got slot %v: the test did not vary the RPTR's slot", slots)
	}
	if m, want := g.ctr(cIPDataMismatch), uint32(4*len(orders)); m != want {
		t.Errorf("IP_DATA_MISMATCH = %d, want %d (a duplicate, a malformed, a misaddressed and a stray cell per packet)", m, want)
	}
	if c := g.ctr(cIPDataNoContext); c != 0 {
		t.Errorf("IP_DATA_NO_CONTEXT = %d, want 0", c)
	}

	// Two packets of one flow, their cells interleaved at random: each
	// completes on its own cells, and they are delivered in CTS order.
	a, sa := g.open(3 * DataPerCell)
	b, sb := g.open(4 * DataPerCell)
	if sa == sb {
		t.Fatalf("two open packets share slot %d", sa)
	}
	type ref struct {
		p    *packet
		slot int
		i    int
	}
	var mix []ref
	for i := 0; i < 3; i++ {
		mix = append(mix, ref{a, sa, i})
	}
	for i := 0; i < 4; i++ {
		mix = append(mix, ref{b, sb, i})
	}
	rng.Shuffle(len(mix), func(i, j int) { mix[i], mix[j] = mix[j], mix[i] })
	left := map[*packet]int{a: 3, b: 4}
	for _, r := range mix {
		g.land(g.cell(r.p, r.slot, r.i))
		left[r.p]--
		for p, l := range left {
			if p.complete != (l == 0) {
				t.Fatalf("packet of %d B: complete = %v with %d cells missing", p.n, p.complete, l)
			}
		}
	}
	before := g.dst.iplog.count()
	g.drain()
	recs := g.dst.iplog.count() - before
	if recs != 2 || g.ctr(cIPOOOPkts) != 0 {
		t.Errorf("interleaved packets: %d delivery-log records, IP_OOO_PKTS %d; want 2 and 0", recs, g.ctr(cIPOOOPkts))
	}
}

// A cell that comes after its packet's reassembly timed out finds no
// context at its RPTR's slot: it is discarded and counted
// (IP_DATA_NO_CONTEXT), and it completes nothing. The slot rests for a
// reassembly timeout before it is allocated again.
func TestLateDataCellDiscarded(t *testing.T) {
	g := newEgressRig(t)
	g.f.mu.Lock()
	defer g.f.mu.Unlock()
	g.dst.ip.reasmUS = 1
	n := 4 * DataPerCell
	p, slot := g.open(n)
	g.land(g.cell(p, slot, 0))
	g.land(g.cell(p, slot, 2))
	t0 := g.f.now
	// The CTS travels, the reassembly timer fires: the packet is dropped.
	for g.f.q.Len() > 0 && g.ctr(cIPReasmTimeouts) == 0 {
		tm, e := g.f.pop()
		g.f.now = max(g.f.now, tm)
		g.f.dispatch(tm, e)
	}
	if g.ctr(cIPReasmTimeouts) != 1 || g.src.gen.ipg.dropped != 1 {
		t.Fatalf("after %d ns: IP_REASM_TIMEOUTS %d, IPG_DROPPED %d; want 1 and 1", (g.f.now-t0)/1000, g.ctr(cIPReasmTimeouts), g.src.gen.ipg.dropped)
	}
	if g.dst.ip.egSlots[slot] != nil {
		t.Fatalf("slot %d still holds the timed-out packet", slot)
	}
	if free := g.dst.ip.egFree.n; free != nEgSlots-1 {
		t.Errorf("%d slots free right after the timeout, want %d: the slot must rest before reuse", free, nEgSlots-1)
	}
	received := g.ctr(cIPDataReceived)
	for _, i := range []int{1, 3, 0} {
		g.land(g.cell(p, slot, i))
	}
	if got := g.ctr(cIPDataNoContext); got != 3 {
		t.Errorf("IP_DATA_NO_CONTEXT = %d after 3 late cells, want 3", got)
	}
	if got := g.ctr(cIPDataReceived); got != received+3 {
		t.Errorf("IP_DATA_CELLS_RECEIVED went from %d to %d, want +3", received, got)
	}
	if p.complete || g.ctr(cIPPktsDelivered) != 0 || g.ctr(cIPDataMismatch) != 0 {
		t.Errorf("late cells: complete %v, delivered %d, mismatched %d; want false, 0, 0", p.complete, g.ctr(cIPPktsDelivered), g.ctr(cIPDataMismatch))
	}
	// After its rest, the slot is free again.
	g.drain()
	if free := g.dst.ip.egFree.n; free != nEgSlots {
		t.Errorf("%d slots free after the rest, want all %d", free, nEgSlots)
	}
	// A late cell for a slot that was never allocated is discarded alike.
	q, qs := g.open(DataPerCell)
	g.land(g.cell(q, (qs+1000)%nEgSlots, 0))
	if got := g.ctr(cIPDataNoContext); got != 4 || q.complete {
		t.Errorf("a cell for an unallocated slot: IP_DATA_NO_CONTEXT %d (want 4), its namesake complete %v", got, q.complete)
	}
}

// A packet longer than 32 cells of 152 B (4864 B) cannot be named by the
// RPTR's 5-bit index: the ingress refuses it (IP_PKTS_TOO_LONG) and the
// generator counts it dropped; 4864 B is taken. The generators' length
// registers clamp to 4864, and a 9000 B burst message goes as 4864 + 4136.
func TestPacketLengthLimit(t *testing.T) {
	g := newEgressRig(t)
	f := g.f
	f.mu.Lock()
	ip := g.src.ip
	for _, n := range []int{MaxPacket + 1, MaxPacket} {
		p := &packet{src: g.src.addr | 1, dst: g.dst.addr | 1, n: n, kind: pkUR, seq: 1, gen: &g.src.gen.ipg}
		f.opStart()
		ip.submit(p, f.now)
	}
	tooLong, sent, rts, dropped := ip.ctr[cIPTooLong], ip.ctr[cIPPktsSent], ip.ctr[cIPRTSSent], g.src.gen.ipg.dropped
	f.mu.Unlock()
	if tooLong != 1 || dropped != 1 || sent != 1 || rts != 1 {
		t.Errorf("4865 B then 4864 B: IP_PKTS_TOO_LONG %d, IPG_DROPPED %d, IP_PKTS_SENT %d, IP_RTS_SENT %d; want 1, 1, 1, 1",
			tooLong, dropped, sent, rts)
	}
	tr := g.tr
	b := g.src.name
	if v := tr.Read(b, "IP_PKTS_TOO_LONG"); v != 1 {
		t.Errorf("IP_PKTS_TOO_LONG reads %d, want 1", v)
	}
	for reg, v := range map[string]uint32{"IPG_BYTES": 9000, "IPG_REPLY_BYTES": MaxPacket + 1, "BG_MTU": 0x3FFF} {
		tr.Write(b, reg, v)
		if got := tr.Read(b, reg); got != MaxPacket {
			t.Errorf("%s: wrote %d, reads %d, want the clamp %d", reg, v, got, MaxPacket)
		}
	}
	tr.Write(b, "BG_DST", uint32(g.dst.addr|1))
	tr.Write(b, "BG_MSG_BYTES", 9000)
	tr.Write(b, "BG_MTU", 9000)
	tr.Write(b, "BG_COUNT", 1)
	tr.Write(b, "BG_CTRL", bgEnable)
	tr.clear()
	if st := tr.run(); st != tgDone {
		t.Fatalf("TG_STATUS %#x", st)
	}
	want := uint32(len(Cellify(MaxPacket)) + len(Cellify(9000-MaxPacket)))
	if c, d, cells := tr.Read(b, "BG_COMPLETED"), tr.Read(g.dst.name, "IP_PKTS_DELIVERED"), tr.Read(b, "IP_DATA_CELLS_SENT"); c != 1 || d != 2 || cells != want {
		t.Errorf("9000 B message, BG_MTU clamped: completed %d, packets delivered %d, data cells %d; want 1, 2, %d", c, d, cells, want)
	}
	if v := tr.Read(b, "IP_PKTS_TOO_LONG"); v != 0 {
		t.Errorf("IP_PKTS_TOO_LONG = %d after the clamped run", v)
	}
}

// Under load with a reassembly timeout shorter than a big packet takes,
// packets time out and their late cells arrive to slots without a context:
// each is discarded and counted, none lands in another packet's context
// (the slot rests), and the run still accounts for every packet.
func TestLateCellsUnderLoad(t *testing.T) {
	tr := newTestRack(t, rackOpts{seed: 5})
	tr.WriteAll("IP_REASM_TIMEOUT_US", 3)
	tr.ur(20000, MaxPacket, 40, 0)
	if st := tr.run(); st != tgDone {
		t.Fatalf("TG_STATUS %#x", st)
	}
	sent, done, dropped := tr.Sum("IPG_SENT"), tr.Sum("IPG_COMPLETED"), tr.Sum("IPG_DROPPED")
	timeouts, late, bad := tr.Sum("IP_REASM_TIMEOUTS"), tr.Sum("IP_DATA_NO_CONTEXT"), tr.Sum("IP_DATA_MISMATCH")
	t.Logf("sent %d, completed %d, dropped %d, reassembly timeouts %d, late cells %d", sent, done, dropped, timeouts, late)
	if timeouts == 0 || late == 0 {
		t.Fatalf("no reassembly timeout (%d) or no late cell (%d): the test did not exercise late cells", timeouts, late)
	}
	if bad != 0 {
		t.Errorf("IP_DATA_MISMATCH = %d: a late cell met another packet's context", bad)
	}
	if done+dropped != sent || dropped != timeouts+tr.Sum("IP_CTD_SENT")+tr.Sum("IP_FETCH_TIMEOUTS") {
		t.Errorf("sent %d = completed %d + dropped %d? dropped = timeouts %d + CTD %d + fetch timeouts %d?", sent, done, dropped,
			timeouts, tr.Sum("IP_CTD_SENT"), tr.Sum("IP_FETCH_TIMEOUTS"))
	}
	if rx, tx := tr.Sum("IP_DATA_CELLS_RECEIVED"), tr.Sum("IP_DATA_CELLS_SENT"); rx != tx {
		t.Errorf("%d data cells sent, %d received: every late cell must still arrive and be counted", tx, rx)
	}
	if bad := tr.creditsAtRest(); len(bad) > 0 {
		t.Errorf("credits missing at rest: %v", bad[:min(len(bad), 5)])
	}
}

// FuzzDataCellLanding feeds an egress with up to four open reassembly
// contexts arbitrary data cells (any RPTR, LEN and egress port, as a
// corrupted or stray cell could carry): nothing panics; every cell is
// counted once, landed or discarded; a context counts exactly the indices
// that landed and is complete exactly when all its cells have; only
// complete packets are delivered.
func FuzzDataCellLanding(f *testing.F) {
	f.Add([]byte{2, 10, 200, 0, 0, 160, 1, 0, 1, 160, 1, 0, 2, 25, 1})
	f.Add([]byte{1, 0, 0, 0, 0, 16, 1})
	f.Add([]byte{4, 255, 255, 255, 255, 0xFF, 0xFF, 160, 1, 0x20, 0x1F, 160, 3})
	// One rig for every input (the fuzz function runs inputs one at a
	// time); each input starts from an empty egress.
	g := newEgressRig(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		g.t = t
		if len(data) < 1 {
			return
		}
		g.f.mu.Lock()
		defer g.f.mu.Unlock()
		g.f.abort("fuzz")
		g.dst.flush()
		g.dst.ip.ctr = [nIPCounters]uint32{}
		k := int(data[0])%4 + 1
		data = data[1:]
		type open struct {
			p    *packet
			slot int
		}
		var ps []open
		for i := 0; i < k && len(data) > 0; i++ {
			n := int(data[0])*19 + 1 // 1 .. 4846 B
			data = data[1:]
			p, slot := g.open(n)
			ps = append(ps, open{p, slot})
		}
		landed := 0
		for len(data) >= 4 {
			rptr := Addr(data[0])<<8 | Addr(data[1])
			ln := max(int(data[2])%(MaxCell+1), MinCell)
			ep := int(data[3]) & 3
			data = data[4:]
			before := 0
			for _, o := range ps {
				before += int(o.p.got)
			}
			c := g.src.newCell(TypeData, g.dst.addr|Addr(ep), rptr, ln, vcOf(3), false, g.f.now)
			g.land(c)
			after := 0
			for _, o := range ps {
				after += int(o.p.got)
			}
			if after-before > 1 {
				t.Fatalf("one cell (RPTR %#04x, %d B, port %d) landed %d times", uint16(rptr), ln, ep, after-before)
			}
			landed += after - before
		}
		ip := g.dst.ip
		if got := ip.ctr[cIPDataReceived]; int(got) != landed+int(ip.ctr[cIPDataNoContext]+ip.ctr[cIPDataMismatch]) {
			t.Fatalf("%d cells received, %d landed + %d without context + %d mismatched", got, landed, ip.ctr[cIPDataNoContext], ip.ctr[cIPDataMismatch])
		}
		complete := 0
		for _, o := range ps {
			p := o.p
			if bits := popcount(p.landed); bits != int(p.got) || p.got > p.cells || p.complete != (p.got == p.cells) {
				t.Fatalf("slot %d: %d cells expected, %d counted, landed mask %#x, complete %v", o.slot, p.cells, p.got, p.landed, p.complete)
			}
			if p.landed>>p.cells != 0 {
				t.Fatalf("slot %d: landed mask %#x has indices past the packet's %d cells", o.slot, p.landed, p.cells)
			}
			if p.complete {
				complete++
			}
		}
		// Packets of one flow leave in CTS order: a complete packet behind
		// an incomplete one waits until that one is delivered or times out.
		head := 0
		for _, o := range ps {
			if !o.p.complete {
				break
			}
			head++
		}
		if d := int(ip.ctr[cIPPktsDelivered]); d != 0 {
			t.Fatalf("%d packets delivered before their host port took them", d)
		}
		g.drain()
		if d, to := int(ip.ctr[cIPPktsDelivered]), int(ip.ctr[cIPReasmTimeouts]); d != complete || to != len(ps)-complete {
			t.Fatalf("%d of %d packets complete (%d at the head of the flow): %d delivered, %d timed out", complete, len(ps), head, d, to)
		}
	})
}

func popcount(x uint32) int {
	n := 0
	for ; x != 0; x &= x - 1 {
		n++
	}
	return n
}
