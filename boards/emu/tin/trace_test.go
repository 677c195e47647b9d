package tin

import (
	"fmt"
	"sort"
	"testing"
)

// traceRec is one collector record (docs/tin.md, "Cell tracing").
type traceRec struct {
	board        string
	hdr          Header
	p0           uint64
	tin          Addr
	in, out      int
	outVC        int
	kind         int
	arrNS, depNS uint32
	seq          uint32
	injected     bool
}

func parseTrace(board string, w []uint32) traceRec {
	var b [8]byte
	for i := 0; i < 4; i++ {
		b[i] = byte(w[0] >> (24 - 8*i))
		b[4+i] = byte(w[1] >> (24 - 8*i))
	}
	h, err := DecodeHeader(b[:])
	if err != nil {
		panic(fmt.Sprintf("%s: trace record header %08x%08x: %v", board, w[0], w[1], err))
	}
	return traceRec{board: board, hdr: h, p0: uint64(w[2])<<32 | uint64(w[3]), tin: Addr(w[4] >> 16),
		in: int(w[4] >> 12 & 0xF), out: int(w[4] >> 8 & 0xF), outVC: int(w[4] >> 3 & 0x1F), kind: int(w[4] & 7),
		arrNS: w[5], depNS: w[6], seq: w[7] >> 8, injected: w[7]&1 != 0}
}

// collect pops every board's collector.
func (tr *testRack) collect() []traceRec {
	var out []traceRec
	for _, n := range tr.Names {
		if o := tr.Read(n, "TRACE_OVERFLOW"); o != 0 {
			tr.T.Fatalf("%s: %d trace records lost", n, o)
		}
		for _, w := range tr.popRecords(n, "TRACE_COUNT", "TRACE_DATA", traceWords) {
			out = append(out, parseTrace(n, w))
		}
	}
	return out
}

// path is a traced cell's records from injection to ejection.
type path []traceRec

// stitch groups records by the cell's identity (type, addresses, payload
// word) and cuts each group into paths: a path starts with the record whose
// injected flag is set and follows decreasing hop counts to the ejection.
func stitch(t testing.TB, recs []traceRec) []path {
	type key struct {
		dst, src Addr
		typ      int
		p0       uint64
	}
	groups := map[key][]traceRec{}
	for _, r := range recs {
		k := key{r.hdr.Dst, r.hdr.Src, r.hdr.Type, r.p0}
		groups[k] = append(groups[k], r)
	}
	var out []path
	for k, g := range groups {
		sort.Slice(g, func(i, j int) bool {
			return g[i].depNS < g[j].depNS || g[i].depNS == g[j].depNS && g[i].hdr.Hop > g[j].hdr.Hop
		})
		var cur path
		for _, r := range g {
			if r.injected {
				if cur != nil {
					t.Fatalf("cell %+v: injected again before its path ended at an ejection: %v", k, cur)
				}
				cur = path{r}
			} else {
				if cur == nil {
					t.Fatalf("cell %+v: record at %s without an injection before it", k, r.board)
				}
				cur = append(cur, r)
			}
			if r.out >= nExt {
				out = append(out, cur)
				cur = nil
			}
		}
		if cur != nil {
			t.Fatalf("cell %+v: path %v never ejected", k, cur)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0].depNS < out[j][0].depNS })
	return out
}

// checkPath verifies a path against the cabling, the routing tables, the
// VC rule and the hop count; it returns the TiNs it visits. A data cell's
// header SRC is its RPTR, not an address: its source is the TiN that
// injected it.
func checkPath(t testing.TB, tp topology, p path, mode int) []node {
	t.Helper()
	first, last := p[0], p[len(p)-1]
	var nodes []node
	if first.in < nExt || first.hdr.Type != TypeData && nodeAt(first.tin) != nodeAt(first.hdr.Src) {
		t.Fatalf("path %v does not start at its source's endpoint", p)
	}
	if nodeAt(last.tin) != nodeAt(last.hdr.Dst) {
		t.Fatalf("path %v ends at %v, not at its destination", p, nodeAt(last.tin))
	}
	for i, r := range p {
		x := nodeAt(r.tin)
		nodes = append(nodes, x)
		if i == len(p)-1 {
			if r.kind != rkEject || r.outVC != r.hdr.VC {
				t.Errorf("last record %+v is not an ejection on the arrival VC", r)
			}
			break
		}
		nx := p[i+1]
		if r.out >= nExt {
			t.Fatalf("path %v leaves %v on endpoint port %d mid-way", p, x, r.out)
		}
		peer := tp.peer[tp.id(x)][r.out]
		if nodeAt(nx.tin) != peer {
			t.Fatalf("%v cage %d leads to %v, the next record is at %v", x, r.out, peer, nodeAt(nx.tin))
		}
		// The cell arrives on the cable's other cage.
		back := -1
		for q := 0; q < nExt; q++ {
			if tp.peer[tp.id(peer)][q] == x && tp.role[tp.id(peer)][q] == tp.role[tp.id(x)][r.out] {
				back = q
			}
		}
		if nx.in != back {
			t.Errorf("%v: arrived on cage %d, the cable ends on cage %d", peer, nx.in, back)
		}
		if nx.hdr.Hop != r.hdr.Hop-1 {
			t.Errorf("hop count %d at %v, then %d at %v: want a decrement per link", r.hdr.Hop, x, nx.hdr.Hop, peer)
		}
		if nx.hdr.VC != r.outVC {
			t.Errorf("%v sent on VC %d, %v received on VC %d", x, r.outVC, peer, nx.hdr.VC)
		}
		wantVC := r.hdr.VC
		if r.in < nExt && tp.role[tp.id(x)][r.in] == roleGlobal && tp.role[tp.id(x)][r.out] == roleLocal {
			wantVC++
		}
		if r.outVC != wantVC {
			t.Errorf("%v: in port %d (VC %d) to out port %d: out VC %d, want %d (§3.2)", x, r.in, r.hdr.VC, r.out, r.outVC, wantVC)
		}
		cls := classTerminal
		if r.in < nExt {
			cls = int(classOf(tp.role[tp.id(x)][r.in]))
		}
		mins, nons := tp.tables(x, cls, nodeAt(r.hdr.Dst))
		isMin, isNon := contains(mins, r.out), contains(nons, r.out)
		switch {
		case !isMin && !isNon:
			t.Errorf("%v routed %v to cage %d, not a table entry (min %v, non-min %v)", x, nodeAt(r.hdr.Dst), r.out, mins, nons)
		case (mode == modeMinAdaptive || mode == modeMinDeterministic) && !isMin && len(mins) > 0:
			t.Errorf("mode %d: %v took non-minimal cage %d", mode, x, r.out)
		}
		switch mode {
		case modeAdaptive:
			if r.kind != rkMinimal && r.kind != rkNonMin {
				t.Errorf("adaptive mode: route kind %d", r.kind)
			}
		case modeMinAdaptive:
			if r.kind != rkMinimal {
				t.Errorf("minimal adaptive mode: route kind %d", r.kind)
			}
		default:
			if r.kind != rkDetMin && r.kind != rkDetNon {
				t.Errorf("deterministic mode: route kind %d", r.kind)
			}
			// The documented hash over the header's DST and SRC fields as
			// they are on the wire (SRC 0 for a data cell: it is its RPTR) picks
			// the entry of the valid list, the input cage pruned.
			var vm, vn []int
			for _, c := range mins {
				if c != r.in {
					vm = append(vm, c)
				}
			}
			for _, c := range nons {
				if c != r.in {
					vn = append(vn, c)
				}
			}
			h := int(routeHash(hashSrc(&r.hdr), r.hdr.Dst))
			want := -1
			if mode == modeMinDeterministic && len(vm) > 0 {
				want = vm[h%len(vm)]
			} else if all := append(vm, vn...); len(all) > 0 {
				want = all[h%len(all)]
			}
			if r.out != want {
				t.Errorf("%v: deterministic mode sent %s cell SRC %#04x DST %#04x to cage %d, the hash picks cage %d of min %v non-min %v",
					x, TypeName(r.hdr.Type), uint16(r.hdr.Src), uint16(r.hdr.Dst), r.out, want, vm, vn)
			}
		}
		if r.depNS < r.arrNS || nx.arrNS < r.depNS {
			t.Errorf("timestamps go backwards: %+v then %+v", r, nx)
		}
	}
	return nodes
}

func contains(l []int, x int) bool {
	for _, v := range l {
		if v == x {
			return true
		}
	}
	return false
}

// Every traced cell's path, in every routing mode, goes from its source to
// its destination over cabled links, each hop an entry of the table for
// its input port and destination (minimal entries only in the minimal
// modes), with the hop count decrementing and the VC incremented exactly
// on global-to-local turns (§3.2). In the deterministic modes each hop is
// the entry the documented hash of the header's DST and SRC fields picks,
// so every cell with the same fields from the same source takes the same
// path: a source-destination pair for control cells; for data cells, whose
// SRC is their RPTR, a (source, slot, index, destination).
func TestRoutesPerMode(t *testing.T) {
	tp := defaultTopology()
	for _, mode := range []int{modeAdaptive, modeMinAdaptive, modeDeterministic, modeMinDeterministic} {
		t.Run(fmt.Sprint("mode", mode), func(t *testing.T) {
			tr := newTestRack(t, rackOpts{seed: int64(10 + mode)})
			// Every cell type in the mode under test (RTS too).
			var rm uint32
			for f := 0; f < 7; f++ {
				rm |= uint32(mode) << (2 * f)
			}
			tr.WriteAll("ROUTE_MODE", rm)
			tr.WriteAll("TRACE_CTRL", trIP)
			// Enough load for queues to build, so adaptive routing has a
			// reason to leave the minimal paths.
			tr.ur(60000, 1200, 40, ipgReply)
			if st := tr.run(); st != tgDone {
				t.Fatalf("TG_STATUS %#x", st)
			}
			t.Logf("largest input FIFO occupancy %d B", tr.fifosWithinCredits())
			paths := stitch(t, tr.collect())
			if len(paths) < 1000 {
				t.Fatalf("only %d traced paths", len(paths))
			}
			type detKey struct {
				from     node
				src, dst Addr // what the hash takes: SRC (0 for a data cell) and DST
			}
			byPair := map[detKey]string{}
			nonMin, hops := 0, map[int]int{}
			for _, p := range paths {
				nodes := checkPath(t, tp, p, mode)
				hops[len(nodes)-1]++
				for _, r := range p {
					if r.kind == rkNonMin || r.kind == rkDetNon {
						nonMin++
					}
				}
				if mode == modeDeterministic || mode == modeMinDeterministic {
					k := detKey{nodeAt(p[0].tin), hashSrc(&p[0].hdr), p[0].hdr.Dst}
					s := fmt.Sprint(nodes)
					if prev, ok := byPair[k]; ok && prev != s {
						t.Fatalf("deterministic mode: %+v took %s and %s", k, prev, s)
					}
					byPair[k] = s
				}
			}
			t.Logf("%d paths, link hops %v, %d non-minimal decisions", len(paths), hops, nonMin)
			switch mode {
			case modeAdaptive:
				if nonMin == 0 {
					t.Errorf("fully adaptive routing never took a non-minimal candidate under load")
				}
			case modeMinAdaptive, modeMinDeterministic:
				if nonMin != 0 {
					t.Errorf("%d non-minimal hops in a minimal mode", nonMin)
				}
			}
			if len(hops) < 2 {
				t.Errorf("all paths have the same length: %v", hops)
			}
		})
	}
}

// The cells of a traced packet, as its source switch records them, are the
// cellification of its length (§3.3, Fig. 3; §6: no tag, 152 B of the
// packet per full cell): count and sizes; the payload word each record
// samples is the generator's pattern at the cell's offset (docs/tin.md,
// "Generated packets"). Each data cell's wire header carries its RPTR in
// the SRC field: the egress slot the packet's CTS allocated (bits 15:5)
// and the cell's index (4:0), which is its offset / 152. A message of three
// packets per size (one below BG_MTU's 64 B floor) makes the slots differ
// from packet to packet.
func TestCellificationMatchesTrace(t *testing.T) {
	tr := newTestRack(t, rackOpts{})
	tr.WriteAll("TRACE_CTRL", trBurst)
	sizes := []uint32{1, 148, 152, 153, 1500, 4096, 4863, MaxPacket}
	src, dst := node{0, 1}, node{1, 2}
	dstAddr := MakeAddr(dst.pod, dst.tin, 1)
	b := src.board()
	tr.Write(b, "BG_DST", uint32(dstAddr))
	tr.Write(b, "BG_RATE_MBPS", 10000)
	tr.Write(b, "BG_COUNT", 1)
	tr.Write(b, "BG_CTRL", bgEnable)
	for _, n := range sizes {
		perMsg := 3
		if n < 64 {
			perMsg = 1
		}
		tr.Write(b, "BG_MSG_BYTES", uint32(perMsg)*n)
		tr.Write(b, "BG_MTU", n)
		tr.clear()
		if st := tr.run(); st != tgDone {
			t.Fatalf("%d B: TG_STATUS %#x", n, st)
		}
		want := Cellify(int(n))
		recs := tr.collect()
		// The CTSs, as the destination injected them, in issue order: the
		// k-th answers the k-th packet of the flow (one flow, RTS order).
		var ctsSlots []int
		for _, r := range recs {
			if r.hdr.Type == TypeCTS && r.injected {
				ctsSlots = append(ctsSlots, int(r.p0>>40&0xFFF))
			}
		}
		if len(ctsSlots) != perMsg {
			t.Fatalf("%d B: %d CTS records at the destination, want %d", n, len(ctsSlots), perMsg)
		}
		got := map[uint32][]int{} // sequence number -> LEN by index
		slotOf := map[uint32]int{}
		for _, r := range recs {
			if r.hdr.Type != TypeData || !r.injected {
				continue
			}
			if nodeAt(r.tin) != src || r.hdr.Dst != dstAddr {
				t.Errorf("%d B: data cell injected at %v for %v", n, nodeAt(r.tin), r.hdr.Dst)
			}
			// Burst packets: flow 0.
			off := int(r.p0 >> 32 & 0xFFFF)
			seq := uint32(r.p0)
			if r.p0>>48 != 0 || off%152 != 0 {
				t.Errorf("%d B: data word %016x is not the pattern flow 0, offset k*152", n, r.p0)
				continue
			}
			i := off / 152
			slot, idx := SplitRPTR(r.hdr.Src)
			if idx != i || uint16(r.hdr.Src) != uint16(slot<<5|i) {
				t.Errorf("%d B: the cell at offset %d carries RPTR %#04x (slot %d, index %d): want index %d", n, off, uint16(r.hdr.Src), slot, idx, i)
			}
			if s, ok := slotOf[seq]; ok && s != slot {
				t.Errorf("%d B: packet %d has cells in slots %d and %d", n, seq, s, slot)
			}
			slotOf[seq] = slot
			if i >= len(want) {
				t.Errorf("%d B: a cell at offset %d, the packet has %d cells", n, off, len(want))
				continue
			}
			if got[seq] == nil {
				got[seq] = make([]int, len(want))
			}
			if got[seq][i] != 0 {
				t.Errorf("%d B: packet %d: cell index %d twice", n, seq, i)
			}
			got[seq][i] = r.hdr.Len
		}
		var seqs []uint32
		for q := range got {
			seqs = append(seqs, q)
		}
		sort.Slice(seqs, func(i, j int) bool { return seqs[i] < seqs[j] })
		if len(seqs) != perMsg {
			t.Fatalf("%d B: data cells of %d packets traced, want %d", n, len(seqs), perMsg)
		}
		for k, q := range seqs {
			if slotOf[q] != ctsSlots[k] {
				t.Errorf("%d B: packet %d's cells carry slot %d, its CTS allocated slot %d (CTS slots %v)", n, q, slotOf[q], ctsSlots[k], ctsSlots)
			}
			for i := range want {
				if got[q][i] != want[i] {
					t.Errorf("%d B: packet %d: traced cells %v, cellification says %v", n, q, got[q], want)
					break
				}
			}
		}
		if perMsg > 1 && slotOf[seqs[0]] == slotOf[seqs[perMsg-1]] {
			t.Errorf("%d B: the message's packets share slot %d", n, slotOf[seqs[0]])
		}
	}
}

// A traced packet's path is stitched from the collectors of every board it
// crossed: RTS (deterministic) from source to destination, CTS back, the
// data cells forward, each hop with its timestamps; the per-hop latency is
// the timing model of docs/tin.md on an idle fabric.
func TestTracedPacketPath(t *testing.T) {
	tr := newTestRack(t, rackOpts{})
	tr.WriteAll("TRACE_CTRL", trBurst)
	src, dst := node{0, 0}, node{1, 3}
	b := src.board()
	tr.Write(b, "BG_DST", uint32(MakeAddr(dst.pod, dst.tin, 1)))
	tr.Write(b, "BG_MSG_BYTES", 600)
	tr.Write(b, "BG_MTU", 600)
	tr.Write(b, "BG_COUNT", 1)
	tr.Write(b, "BG_CTRL", bgEnable)
	if st := tr.run(); st != tgDone {
		t.Fatalf("TG_STATUS %#x", st)
	}
	paths := stitch(t, tr.collect())
	types := map[int]int{}
	tp := defaultTopology()
	boards := map[string]bool{}
	for _, p := range paths {
		types[p[0].hdr.Type]++
		mode := modeAdaptive
		if p[0].hdr.Type == TypeRTS {
			mode = modeDeterministic
		}
		checkPath(t, tp, p, mode)
		for i, r := range p {
			boards[r.board] = true
			if r.hdr.Type == TypeData {
				continue // the data cells queue behind each other
			}
			// Idle fabric, cut-through: the route pipeline (3 cycles) and
			// the arbitration cycle take 16 ns, plus up to a cycle to the
			// switch's clock edge; the head crosses in one more cycle (the
			// 20 ns fall-through, §3.1) and goes out at once: its head
			// reaches the next switch PCS (20 ns, §3.1: 40 ns per hop less
			// the fall-through), wire and, on global links, FEC (30 ns,
			// §3.2) later. No serialisation: the head does not wait for
			// the tail.
			if d := r.depNS - r.arrNS; d < 16 || d > 20 {
				t.Errorf("%s: %d ns from arrival to grant, want 16-20 on an idle switch", r.board, d)
			}
			if i+1 < len(p) && r.out < nExt {
				want := uint32(4 + 20 + 5)
				if tp.role[tp.id(nodeAt(r.tin))][r.out] == roleGlobal {
					want = 4 + 20 + 50 + 30
				}
				// Both stamps are truncated to ns.
				if d := p[i+1].arrNS - r.depNS; d+1 < want || d > want+1 {
					t.Errorf("%s -> %s: %v ns from grant to the next arrival, the model says %d", r.board, p[i+1].board, d, want)
				}
			}
		}
	}
	t.Logf("stitched %v", types)
	if types[TypeRTS] != 1 || types[TypeCTS] != 1 || types[TypeData] != len(Cellify(600)) {
		t.Errorf("stitched %v paths by type, want 1 RTS, 1 CTS, %d data", types, len(Cellify(600)))
	}
	if len(boards) < 2 || !boards[src.board()] || !boards[dst.board()] {
		t.Errorf("records came from %v", boards)
	}
}
