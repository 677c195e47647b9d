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
	for _, n := range tr.names {
		if o := tr.rd(n, "TRACE_OVERFLOW"); o != 0 {
			tr.t.Fatalf("%s: %d trace records lost", n, o)
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
// VC rule and the hop count; it returns the TiNs it visits.
func checkPath(t testing.TB, tp topology, p path, mode int) []node {
	t.Helper()
	first, last := p[0], p[len(p)-1]
	var nodes []node
	if nodeAt(first.tin) != nodeAt(first.hdr.Src) || first.in < nExt {
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
// on global-to-local turns (§3.2). In the deterministic modes every cell of
// a source-destination pair takes the same path.
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
			tr.all("ROUTE_MODE", rm)
			tr.all("TRACE_CTRL", trIP)
			// Enough load for queues to build, so adaptive routing has a
			// reason to leave the minimal paths.
			tr.ur(60000, 1200, 40, ipgReply)
			if st := tr.run(); st != tgDone {
				t.Fatalf("TG_STATUS %#x", st)
			}
			paths := stitch(t, tr.collect())
			if len(paths) < 1000 {
				t.Fatalf("only %d traced paths", len(paths))
			}
			byPair := map[[2]node]string{}
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
					k := [2]node{nodeAt(p[0].hdr.Src), nodeAt(p[0].hdr.Dst)}
					s := fmt.Sprint(nodes)
					if prev, ok := byPair[k]; ok && prev != s {
						t.Fatalf("deterministic mode: %v -> %v took %s and %s", k[0], k[1], prev, s)
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
// cellification of its length (§3.3, Fig. 3): count, sizes and indices.
func TestCellificationMatchesTrace(t *testing.T) {
	tr := newTestRack(t, rackOpts{})
	tr.all("TRACE_CTRL", trBurst)
	sizes := []uint32{1, 148, 149, 1500, 4096, 9000}
	src, dst := node{0, 1}, node{1, 2}
	b := src.board()
	tr.wr(b, "BG_DST", uint32(MakeAddr(dst.pod, dst.tin, 1)))
	tr.wr(b, "BG_RATE_MBPS", 10000)
	tr.wr(b, "BG_COUNT", 1)
	tr.wr(b, "BG_CTRL", bgEnable)
	for _, n := range sizes {
		tr.wr(b, "BG_MSG_BYTES", n)
		tr.wr(b, "BG_MTU", n)
		tr.clear()
		if st := tr.run(); st != tgDone {
			t.Fatalf("%d B: TG_STATUS %#x", n, st)
		}
		var got []int
		idx := map[int]bool{}
		for _, r := range tr.collect() {
			if r.hdr.Type != TypeData || !r.injected {
				continue
			}
			tag := r.p0 >> 32
			i := int(tag >> 13 & 0x7F)
			if idx[i] {
				t.Errorf("%d B: cell index %d twice", n, i)
			}
			idx[i] = true
			last := tag>>12&1 != 0
			want := Cellify(int(n))
			if (i == len(want)-1) != last {
				t.Errorf("%d B: cell %d has LAST=%v", n, i, last)
			}
			if i == 0 && uint32(r.p0) != uint32(src.addr()|1)<<16 {
				t.Errorf("%d B: first cell's data word %08x, want the source address and flow", n, uint32(r.p0))
			}
			got = append(got, r.hdr.Len)
			if i < len(want) && r.hdr.Len != want[i] {
				t.Errorf("%d B: cell %d is %d B, cellification says %d", n, i, r.hdr.Len, want[i])
			}
		}
		if len(got) != len(Cellify(int(n))) {
			t.Errorf("%d B: %d data cells traced, cellification gives %d", n, len(got), len(Cellify(int(n))))
		}
	}
}

// A traced packet's path is stitched from the collectors of every board it
// crossed: RTS (deterministic) from source to destination, CTS back, the
// data cells forward, each hop with its timestamps; the per-hop latency is
// the timing model of docs/tin.md on an idle fabric.
func TestTracedPacketPath(t *testing.T) {
	tr := newTestRack(t, rackOpts{})
	tr.all("TRACE_CTRL", trBurst)
	src, dst := node{0, 0}, node{1, 3}
	b := src.board()
	tr.wr(b, "BG_DST", uint32(MakeAddr(dst.pod, dst.tin, 1)))
	tr.wr(b, "BG_MSG_BYTES", 600)
	tr.wr(b, "BG_MTU", 600)
	tr.wr(b, "BG_COUNT", 1)
	tr.wr(b, "BG_CTRL", bgEnable)
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
			// Idle fabric: the route pipeline and arbitration take 3-4
			// cycles, the head crosses in one and the link serialises,
			// adds PCS, wire and (global) FEC.
			if d := r.depNS - r.arrNS; d < 12 || d > 16 {
				t.Errorf("%s: %d ns from arrival to grant, want 12-16 on an idle switch", r.board, d)
			}
			if i+1 < len(p) && r.out < nExt {
				ser := float64(r.hdr.Len) * 8 / 25
				wire := 5.0
				if tp.role[tp.id(nodeAt(r.tin))][r.out] == roleGlobal {
					ser /= 0.94
					wire = 50 + 30
				}
				want := 4 + ser + 20 + wire
				if d := float64(p[i+1].arrNS - r.depNS); d < want-1 || d > want+5 {
					t.Errorf("%s -> %s: %v ns from grant to the next arrival, the model says %.1f+", r.board, p[i+1].board, d, want)
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
