package tin

import (
	"fmt"
	"math"
	"testing"
)

// The timing figures of the paper the cut-through test holds the emulator
// to, in ns (docs/tin.md, "Timing model").
const (
	paperFallThroughNS = 20.0  // §3.1: "The fall through latency of the core cell switch is 20ns"
	paperPCSNS         = 20.0  // §3.1: "the total per hop latency without FEC is 40ns", less the fall-through
	paperFECNS         = 30.0  // §3.2: "a 30ns per-hop latency penalty"
	paperFECLoss       = 0.06  // §3.2: "a 6% bandwidth overhead"
	paperLinkGbps      = 25.0  // §3.1: "serialization latency on 25G links"
	paperHostGbps      = 100.0 // §3.3: "a conventional 100 Gbps NIC" (IP_PORT_MBPS reset)
	// Cable delays of this test's lab: multiples of the 4 ns switch cycle
	// once PCS (and FEC) are added, so that with every board's clock at
	// phase 0 each head arrives on a clock edge and the formula is exact.
	ctLocalNS  = 8.0
	ctGlobalNS = 50.0
)

// alignClocks puts every switch's cycle edges at phase 0 (the emulator
// draws a random phase per board): no clock-alignment wait anywhere.
func (tr *testRack) alignClocks() {
	tr.T.Helper()
	for _, b := range tr.Rack.Boards() {
		d, ok := b.LoadedDesign().(*device)
		if !ok {
			tr.T.Fatalf("%s does not run the tin design", b.Name())
		}
		d.f.mu.Lock()
		d.phase = 0
		d.f.mu.Unlock()
	}
}

// pin rewrites the routing tables so that every cell for path's last TiN
// injected at path[0] follows path link by link: one table entry per hop.
func (tr *testRack) pin(tp topology, path []node) {
	tr.T.Helper()
	dst := path[len(path)-1]
	in := portIP
	for h := 0; h+1 < len(path); h++ {
		x, y := path[h], path[h+1]
		out := -1
		for p := 0; p < nExt; p++ {
			if tp.peer[tp.id(x)][p] == y {
				out = p
			}
		}
		if out < 0 {
			tr.T.Fatalf("no cable from %v to %v", x, y)
		}
		base := uint64(rtBase + (in*nDst+dst.index())*rtStride)
		tr.WriteAddr(x.board(), base, uint32(rtValid|out))
		for w := 1; w < rtWords; w++ {
			tr.WriteAddr(x.board(), base+uint64(4*w), 0)
		}
		// The cell enters y on the cable's other cage.
		in = -1
		for p := 0; p < nExt; p++ {
			if tp.peer[tp.id(y)][p] == x {
				in = p
			}
		}
	}
}

// An unloaded cell, cut-through (§3.1): its head moves one hop every
// fall-through + PCS + wire (+ FEC), and its tail follows it by the
// serialisation of the slowest link on the path, paid once; a switch never
// waits for a whole cell. Measured with the emulator's own instruments: the
// trace collector's arrival stamps at each switch and the IP delivery log's
// receive stamp at the destination. Store-and-forward would add a
// serialisation (~51 ns for a 160 B cell) per extra hop.
func TestCutThroughUnloadedLatency(t *testing.T) {
	tp := defaultTopology()
	p := func(pod, tin int) node { return node{pod, tin} }
	routes := [][]node{
		{p(0, 0), p(0, 1)},                   // 1 local hop
		{p(0, 0), p(0, 1), p(0, 2)},          // 2 local hops
		{p(0, 0), p(0, 1), p(0, 2), p(0, 3)}, // 3 local hops
		{p(0, 0), p(1, 0)},                   // 1 global hop
		{p(0, 0), p(0, 1), p(1, 1), p(1, 2)}, // local, global, local: the global link is the slowest
	}
	for _, route := range routes {
		for _, bytes := range []int{152, 1} { // one full 160 B cell; one 16 B cell
			t.Run(fmt.Sprintf("%v/%dB", route, bytes), func(t *testing.T) {
				tr := newTestRack(t, rackOpts{localNS: ctLocalNS, globalNS: ctGlobalNS})
				tr.alignClocks()
				tr.pin(tp, route)
				src, dst := route[0], route[len(route)-1]
				b := src.board()
				tr.Write(b, "TRACE_CTRL", trBurst)
				tr.Write(b, "BG_DST", uint32(MakeAddr(dst.pod, dst.tin, 1)))
				tr.Write(b, "BG_MSG_BYTES", uint32(bytes))
				tr.Write(b, "BG_MTU", uint32(bytes))
				tr.Write(b, "BG_COUNT", 1)
				tr.Write(b, "BG_CTRL", bgEnable|bgLog)
				if st := tr.run(); st != tgDone {
					t.Fatalf("TG_STATUS %#x", st)
				}
				cellLen := Cellify(bytes)[0]

				// The data cell's path, from the collectors.
				var data path
				for _, pt := range stitch(t, tr.collect()) {
					if pt[0].hdr.Type == TypeData {
						if data != nil {
							t.Fatalf("two data cells traced for a %d B packet", bytes)
						}
						data = pt
					}
				}
				if len(data) != len(route) {
					t.Fatalf("the data cell crossed %d switches, the pinned path has %d: %v", len(data), len(route), data)
				}

				// The paper's figures for each link of the path.
				var headNS, serMaxNS float64
				for h := 0; h+1 < len(route); h++ {
					x := route[h]
					if nodeAt(data[h].tin) != x {
						t.Fatalf("hop %d at %v, pinned %v", h, nodeAt(data[h].tin), x)
					}
					hop, ser := paperFallThroughNS+paperPCSNS+ctLocalNS, float64(cellLen)*8/paperLinkGbps
					if x.pod != route[h+1].pod {
						hop += ctGlobalNS - ctLocalNS + paperFECNS
						ser /= 1 - paperFECLoss
					}
					// The head: one hop's latency after it reached this
					// switch, whatever the cell's length.
					if got := float64(data[h+1].arrNS - data[h].arrNS); got != hop {
						t.Errorf("head from %v to %v: %v ns, want fall-through + PCS + wire (+FEC) = %v ns", x, route[h+1], got, hop)
					}
					headNS += hop
					serMaxNS = math.Max(serMaxNS, ser)
				}

				// The tail: delivered to the destination endpoint the last
				// switch's fall-through and the slowest serialisation after
				// the head reached that switch; the host port then takes
				// the packet at 100 Gb/s.
				logs := tr.popRecords(dst.board(), "IPLOG_COUNT", "IPLOG_DATA", iplogWords)
				if len(logs) != 1 {
					t.Fatalf("%d packets in the delivery log of %s, want 1", len(logs), dst.board())
				}
				recvNS := float64(logs[0][3])
				injNS := float64(data[0].arrNS)
				want := injNS + headNS + paperFallThroughNS + serMaxNS + float64(bytes)*8/paperHostGbps
				// Stamps are whole ns (truncated).
				if recvNS < math.Floor(want)-1 || recvNS > math.Floor(want)+1 {
					t.Errorf("%d link hops, %d B cell: received %v ns after the head entered the source switch, want %.2f ns "+
						"= %d x fall-through + links (%.0f ns) + slowest serialisation once (%.2f ns) + host port",
						len(route)-1, cellLen, recvNS-injNS, want-injNS, len(route), headNS-float64(len(route)-1)*paperFallThroughNS, serMaxNS)
				}
				t.Logf("%d hops, %d B cell: %v ns end to end (head %.0f ns, serialisation %.2f ns)", len(route)-1, cellLen, recvNS-injNS, headNS+paperFallThroughNS, serMaxNS)
			})
		}
	}
}
