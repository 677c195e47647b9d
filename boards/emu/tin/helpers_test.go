package tin

import (
	"fmt"
	"testing"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/boards/emu/emutest"
	"github.com/labrunner/labrunner/drivers"
	"github.com/labrunner/labrunner/labconfig"
)

// The test Clique is the default of docs/tin.md: pods x tins ZCU102
// boards tin-p<P>b<T>; in a pod, board T's cage sfpK goes to board
// (T+K+1) mod 4 on that board's cage sfp(2-K) (local links); cage sfp3 of
// tin-p0bT and tin-p1bT is the global link between the pods.

type rackOpts struct {
	seed     int64
	faults   []labconfig.Fault
	localNS  float64 // cable delay of local links (default 5 ns: 1 m)
	globalNS float64 // of global links (default 50 ns: 10 m of fibre)
	ber      float64
	noConfig bool // leave TIN_ADDR, PORT_ROLE and the tables at reset
}

func boardName(pod, tin int) string { return fmt.Sprintf("tin-p%db%d", pod, tin) }

// defaultCables is the cabling of docs/tin.md for 2 pods of 4.
func defaultCables(o rackOpts) []emutest.Cable {
	var out []emutest.Cable
	for p := 0; p < 2; p++ {
		for t := 0; t < 4; t++ {
			for k := 0; k < 3; k++ {
				u := (t + k + 1) % 4
				if u < t || u == t {
					continue // each local cable once, from its lower board
				}
				out = append(out, emutest.Cable{A: fmt.Sprintf("%s:sfp%d", boardName(p, t), k),
					B: fmt.Sprintf("%s:sfp%d", boardName(p, u), 2-k), LatencyNS: o.localNS, BER: o.ber})
			}
		}
	}
	for t := 0; t < 4; t++ {
		out = append(out, emutest.Cable{A: boardName(0, t) + ":sfp3", B: boardName(1, t) + ":sfp3", LatencyNS: o.globalNS, BER: o.ber})
	}
	return out
}

// testRack is the test Clique, every board programmed with the design and,
// unless noConfig, configured as a runner would.
type testRack struct{ *emutest.Rig }

func newTestRack(t testing.TB, o rackOpts) *testRack {
	t.Helper()
	if o.localNS == 0 {
		o.localNS = 5
	}
	if o.globalNS == 0 {
		o.globalNS = 50
	}
	rack := emutest.Rack{Name: "tin-test", Seed: o.seed, Faults: o.faults, Design: DesignName, Cables: defaultCables(o)}
	i := 0
	for p := 0; p < 2; p++ {
		for tn := 0; tn < 4; tn++ {
			rack.Boards = append(rack.Boards, emutest.Board{Name: boardName(p, tn), Kind: "zcu102", PPM: float64(i*7 - 20), OffsetNS: float64(100 * i)})
			i++
		}
	}
	tr := &testRack{emutest.Start(t, rack)}
	if !o.noConfig {
		tr.configure()
	}
	return tr
}

// node is a TiN of the test Clique.
type node struct{ pod, tin int }

func (n node) index() int     { return n.pod*maxTins + n.tin }
func (n node) addr() Addr     { return MakeAddr(n.pod, n.tin, 0) }
func (n node) board() string  { return boardName(n.pod, n.tin) }
func nodeOf(i int) node       { return node{i / 4, i % 4} }
func nodeAt(a Addr) node      { return node{a.Pod(), a.TiN()} }
func (n node) String() string { return fmt.Sprintf("p%dt%d", n.pod, n.tin) }
func allNodes() (out []node) {
	for i := 0; i < 8; i++ {
		out = append(out, nodeOf(i))
	}
	return out
}

// topology is what a runner knows of the cabling: per TiN and cage, the
// role and the TiN at the other end.
type topology struct {
	role [8][nExt]int
	peer [8][nExt]node
}

func defaultTopology() topology {
	var tp topology
	for _, n := range allNodes() {
		for k := 0; k < 3; k++ {
			tp.role[n.pod*4+n.tin][k] = roleLocal
			tp.peer[n.pod*4+n.tin][k] = node{n.pod, (n.tin + k + 1) % 4}
		}
		tp.role[n.pod*4+n.tin][3] = roleGlobal
		tp.peer[n.pod*4+n.tin][3] = node{1 - n.pod, n.tin}
	}
	return tp
}

func (tp topology) id(n node) int { return n.pod*4 + n.tin }

// gateways lists the cages of x whose global link leads to pod q.
func (tp topology) globalsTo(x node, q int) []int {
	var out []int
	for p := 0; p < nExt; p++ {
		if tp.role[tp.id(x)][p] == roleGlobal && tp.peer[tp.id(x)][p].pod == q {
			out = append(out, p)
		}
	}
	return out
}

// tables computes the routing-table entries of docs/tin.md ("Routing
// tables: the recipe") for TiN x, input class cls, destination dst:
// minimal then non-minimal ports.
func (tp topology) tables(x node, cls int, dst node) (mins, nons []int) {
	locals := func(pred func(y node) bool) []int {
		var out []int
		for p := 0; p < nExt; p++ {
			if tp.role[tp.id(x)][p] == roleLocal && pred(tp.peer[tp.id(x)][p]) {
				out = append(out, p)
			}
		}
		return out
	}
	if x.pod == dst.pod {
		mins = locals(func(y node) bool { return y == dst })
		if cls == classTerminal {
			nons = locals(func(y node) bool {
				return y != dst && (x.tin < y.tin && y.tin < dst.tin || x.tin > y.tin && y.tin > dst.tin)
			})
			for p := 0; p < nExt; p++ {
				if tp.role[tp.id(x)][p] == roleGlobal {
					nons = append(nons, p)
				}
			}
		}
		return mins, nons
	}
	mins = tp.globalsTo(x, dst.pod)
	if cls != classLocal {
		mins = append(mins, locals(func(y node) bool { return len(tp.globalsTo(y, dst.pod)) > 0 })...)
	}
	if cls == classTerminal {
		for p := 0; p < nExt; p++ {
			if tp.role[tp.id(x)][p] == roleGlobal && tp.peer[tp.id(x)][p].pod != dst.pod {
				nons = append(nons, p)
			}
		}
	}
	return mins, nons
}

// configure writes every board's address, port roles and routing tables.
func (tr *testRack) configure() {
	tr.T.Helper()
	tp := defaultTopology()
	for _, x := range allNodes() {
		b := x.board()
		tr.Write(b, "TIN_ADDR", uint32(x.addr()))
		var roles uint32
		for p := 0; p < nExt; p++ {
			roles |= uint32(tp.role[tp.id(x)][p]) << (2 * p)
		}
		tr.Write(b, "PORT_ROLE", roles)
		tr.writeTables(x, tp)
	}
}

func (tr *testRack) writeTables(x node, tp topology) {
	b := x.board()
	for in := 0; in < nPorts; in++ {
		cls := classTerminal
		if in < nExt {
			cls = int(classOf(tp.role[tp.id(x)][in]))
		}
		for _, dst := range allNodes() {
			var ent [nRoute]uint8
			if dst != x {
				mins, nons := tp.tables(x, cls, dst)
				for k, p := range mins {
					ent[k] = rtValid | uint8(p)
				}
				for k, p := range nons {
					ent[nMin+k] = rtValid | uint8(p)
				}
			}
			base := uint64(rtBase + (in*nDst+dst.index())*rtStride)
			for w := 0; w < rtWords; w++ {
				v := uint32(ent[4*w]) | uint32(ent[4*w+1])<<8 | uint32(ent[4*w+2])<<16 | uint32(ent[4*w+3])<<24
				tr.WriteAddr(b, base+uint64(4*w), v)
			}
		}
	}
}

// run writes TG_CTRL.START on the first board and CONTINUE while the run
// hits its budget; it returns the final TG_STATUS.
func (tr *testRack) run() uint32 {
	tr.T.Helper()
	b := tr.Names[0]
	tr.Write(b, "TG_CTRL", tgStart)
	for i := 0; i < 1000; i++ {
		st := tr.Read(b, "TG_STATUS")
		if st&tgLimit == 0 {
			return st
		}
		tr.Write(b, "TG_CTRL", tgContinue)
	}
	tr.T.Fatalf("run did not end after 1000 CONTINUEs")
	return 0
}

func (tr *testRack) clear() { tr.WriteAll("COUNTERS_CLEAR", 1) }

// popRecords pops n-word records from a pop register.
func (tr *testRack) popRecords(board, countReg, dataReg string, words int) [][]uint32 {
	tr.T.Helper()
	n := int(tr.Read(board, countReg))
	out := make([][]uint32, n)
	a := tr.Addr(dataReg)
	for i := range out {
		out[i] = make([]uint32, words)
		for w := range out[i] {
			out[i][w] = tr.ReadAddr(board, a)
		}
	}
	return out
}

// samples pops every latency sample of a class on a board.
func (tr *testRack) samples(board string, class int) []uint32 {
	tr.T.Helper()
	n := int(tr.Read(board, fmt.Sprintf("LAT_COUNT[%d]", class)))
	a := tr.Addr(fmt.Sprintf("LAT_DATA[%d]", class))
	out := make([]uint32, n)
	for i := range out {
		out[i] = tr.ReadAddr(board, a)
	}
	return out
}

// mask of every TiN index of the test Clique.
const allMask = 0x0F0F // indices 0-3 (pod 0) and 8-11 (pod 1)

// ur sets up the uniform-random IP generator on every board.
func (tr *testRack) ur(rateMbps, bytes, count uint32, ctrl uint32) {
	for _, n := range tr.Names {
		tr.Write(n, "IPG_RATE_MBPS", rateMbps)
		tr.Write(n, "IPG_BYTES", bytes)
		tr.Write(n, "IPG_COUNT", count)
		tr.Write(n, "IPG_DST_MASK_LO", allMask)
		tr.Write(n, "IPG_CTRL", ctrl|ipgEnable)
	}
}

func catalogueImage(t testing.TB, part string) (drivers.Image, error) {
	t.Helper()
	img, err := bitstreams.Default().Image(DesignName, part)
	if err != nil {
		t.Fatalf("catalogue image: %v", err)
	}
	return img, nil
}
