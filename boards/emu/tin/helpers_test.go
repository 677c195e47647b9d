package tin

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/boards/emu"
	"github.com/labrunner/labrunner/drivers"
	"github.com/labrunner/labrunner/labconfig"
)

// The test Clique is the default of docs/tin.md: pods x tins ZCU102
// boards tin-p<P>b<T>; in a pod, board T's cage sfpK goes to board
// (T+K+1) mod 4 on that board's cage sfp(2-K) (local links); cage sfp3 of
// tin-p0bT and tin-p1bT is the global link between the pods.

type rackOpts struct {
	seed      int64
	faults    []labconfig.Fault
	localNS   float64 // cable delay of local links (default 5 ns: 1 m)
	globalNS  float64 // of global links (default 50 ns: 10 m of fibre)
	ber       float64
	noConfig  bool // leave TIN_ADDR, PORT_ROLE and the tables at reset
	pods      int  // default 2
	boardsFor []string
}

func boardName(pod, tin int) string { return fmt.Sprintf("tin-p%db%d", pod, tin) }

// defaultCables is the cabling of docs/tin.md for 2 pods of 4.
func defaultCables(o rackOpts) []labconfig.Link {
	var out []labconfig.Link
	for p := 0; p < 2; p++ {
		for t := 0; t < 4; t++ {
			for k := 0; k < 3; k++ {
				u := (t + k + 1) % 4
				if u < t || u == t {
					continue // each local cable once, from its lower board
				}
				out = append(out, labconfig.Link{
					A:         labconfig.Endpoint{Board: boardName(p, t), Port: fmt.Sprintf("sfp%d", k)},
					B:         labconfig.Endpoint{Board: boardName(p, u), Port: fmt.Sprintf("sfp%d", 2-k)},
					LatencyNS: o.localNS, BER: o.ber})
			}
		}
	}
	for t := 0; t < 4; t++ {
		out = append(out, labconfig.Link{
			A:         labconfig.Endpoint{Board: boardName(0, t), Port: "sfp3"},
			B:         labconfig.Endpoint{Board: boardName(1, t), Port: "sfp3"},
			LatencyNS: o.globalNS, BER: o.ber})
	}
	return out
}

type testRack struct {
	t     testing.TB
	r     *emu.Rack
	ctx   context.Context
	m     *bitstreams.Manifest
	buses map[string]drivers.RegisterBus
	names []string
}

func newTestRack(t testing.TB, o rackOpts) *testRack {
	t.Helper()
	if o.localNS == 0 {
		o.localNS = 5
	}
	if o.globalNS == 0 {
		o.globalNS = 50
	}
	lab := &labconfig.Lab{Name: "tin-test", Seed: o.seed}
	if lab.Seed == 0 {
		lab.Seed = 1
	}
	var names []string
	for p := 0; p < 2; p++ {
		for tn := 0; tn < 4; tn++ {
			names = append(names, boardName(p, tn))
		}
	}
	for i, n := range names {
		lab.Boards = append(lab.Boards, labconfig.Board{Name: n, Kind: "zcu102",
			Bus: labconfig.Bus{Emulated: &struct{}{}}, Programmer: labconfig.Programmer{Type: "emulated"},
			Emulated: &labconfig.Emulated{ClockPPM: float64(i*7 - 20), OffsetNS: float64(100 * i)}})
	}
	lab.Links = defaultCables(o)
	lab.Faults = o.faults
	r, err := emu.Start(lab, emu.Options{NoPTY: true})
	if err != nil {
		t.Fatalf("emu.Start: %v", err)
	}
	t.Cleanup(func() { r.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	m, err := bitstreams.Default().Design(DesignName)
	if err != nil {
		t.Fatalf("catalogue: %v", err)
	}
	tr := &testRack{t: t, r: r, ctx: ctx, m: m, buses: map[string]drivers.RegisterBus{}, names: names}
	for _, b := range r.Boards() {
		img, err := bitstreams.Default().Image(DesignName, b.Kind().Part)
		if err != nil {
			t.Fatalf("catalogue image for %s: %v", b.Name(), err)
		}
		if err := b.Programmer().Program(ctx, img); err != nil {
			t.Fatalf("program %s: %v", b.Name(), err)
		}
		tr.buses[b.Name()] = b.Bus()
	}
	if !o.noConfig {
		tr.configure()
	}
	return tr
}

func (tr *testRack) addr(reg string) uint64 {
	tr.t.Helper()
	_, a, err := tr.m.Lookup(reg)
	if err != nil {
		tr.t.Fatal(err)
	}
	return a
}

func (tr *testRack) rd(board, reg string) uint32 {
	tr.t.Helper()
	return tr.rdAddr(board, tr.addr(reg))
}

func (tr *testRack) rdAddr(board string, a uint64) uint32 {
	tr.t.Helper()
	v, err := tr.buses[board].Read32(tr.ctx, a)
	if err != nil {
		tr.t.Fatalf("%s: read 0x%x: %v", board, a, err)
	}
	return v
}

func (tr *testRack) wr(board, reg string, v uint32) {
	tr.t.Helper()
	tr.wrAddr(board, tr.addr(reg), v)
}

func (tr *testRack) wrAddr(board string, a uint64, v uint32) {
	tr.t.Helper()
	if err := tr.buses[board].Write32(tr.ctx, a, v); err != nil {
		tr.t.Fatalf("%s: write 0x%x=0x%x: %v", board, a, v, err)
	}
}

func (tr *testRack) all(reg string, v uint32) {
	tr.t.Helper()
	for _, n := range tr.names {
		tr.wr(n, reg, v)
	}
}

func (tr *testRack) sum(reg string) uint64 {
	tr.t.Helper()
	var s uint64
	for _, n := range tr.names {
		s += uint64(tr.rd(n, reg))
	}
	return s
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
	tr.t.Helper()
	tp := defaultTopology()
	for _, x := range allNodes() {
		b := x.board()
		tr.wr(b, "TIN_ADDR", uint32(x.addr()))
		var roles uint32
		for p := 0; p < nExt; p++ {
			roles |= uint32(tp.role[tp.id(x)][p]) << (2 * p)
		}
		tr.wr(b, "PORT_ROLE", roles)
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
				tr.wrAddr(b, base+uint64(4*w), v)
			}
		}
	}
}

// run writes TG_CTRL.START on the first board and CONTINUE while the run
// hits its budget; it returns the final TG_STATUS.
func (tr *testRack) run() uint32 {
	tr.t.Helper()
	b := tr.names[0]
	tr.wr(b, "TG_CTRL", tgStart)
	for i := 0; i < 1000; i++ {
		st := tr.rd(b, "TG_STATUS")
		if st&tgLimit == 0 {
			return st
		}
		tr.wr(b, "TG_CTRL", tgContinue)
	}
	tr.t.Fatalf("run did not end after 1000 CONTINUEs")
	return 0
}

func (tr *testRack) clear() {
	for _, n := range tr.names {
		tr.wr(n, "COUNTERS_CLEAR", 1)
	}
}

// popRecords pops n-word records from a pop register.
func (tr *testRack) popRecords(board, countReg, dataReg string, words int) [][]uint32 {
	tr.t.Helper()
	n := int(tr.rd(board, countReg))
	out := make([][]uint32, n)
	a := tr.addr(dataReg)
	for i := range out {
		out[i] = make([]uint32, words)
		for w := range out[i] {
			out[i][w] = tr.rdAddr(board, a)
		}
	}
	return out
}

// samples pops every latency sample of a class on a board.
func (tr *testRack) samples(board string, class int) []uint32 {
	tr.t.Helper()
	n := int(tr.rd(board, fmt.Sprintf("LAT_COUNT[%d]", class)))
	a := tr.addr(fmt.Sprintf("LAT_DATA[%d]", class))
	out := make([]uint32, n)
	for i := range out {
		out[i] = tr.rdAddr(board, a)
	}
	return out
}

// mask of every TiN index of the test Clique.
const allMask = 0x0F0F // indices 0-3 (pod 0) and 8-11 (pod 1)

// ur sets up the uniform-random IP generator on every board.
func (tr *testRack) ur(rateMbps, bytes, count uint32, ctrl uint32) {
	for _, n := range tr.names {
		tr.wr(n, "IPG_RATE_MBPS", rateMbps)
		tr.wr(n, "IPG_BYTES", bytes)
		tr.wr(n, "IPG_COUNT", count)
		tr.wr(n, "IPG_DST_MASK_LO", allMask)
		tr.wr(n, "IPG_CTRL", ctrl|ipgEnable)
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
