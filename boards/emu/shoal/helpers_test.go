package shoal

import (
	"fmt"
	"testing"

	"github.com/labrunner/labrunner/boards/emu/emutest"
	"github.com/labrunner/labrunner/labconfig"
)

// The test rack is the prototype of §6.1 cabled as docs/shoal.md says:
// shoal-nic0 cages sfp0..3 are nodes 0..3, shoal-nic1's are nodes 4..7;
// leaves shoal-sw0..3 take nodes 2L and 2L+1 on sfp0 and sfp1 and go up on
// sfp2 to spine shoal-sw4 and on sfp3 to spine shoal-sw5, whose cage sfpL
// is leaf L.

const nodes8 = 8

var (
	nicBoards = []string{"shoal-nic0", "shoal-nic1"}
	swBoards  = []string{"shoal-sw0", "shoal-sw1", "shoal-sw2", "shoal-sw3", "shoal-sw4", "shoal-sw5"}
)

func nodeBoard(n int) (string, int) { return nicBoards[n/4], n % 4 }

type rackOpts struct {
	seed      int64
	faults    []labconfig.Fault
	latencyNS float64            // every cable; default 10 ns (§6.2: 40 ns over four cables)
	cableNS   map[string]float64 // per cable, keyed "board:port" of either end
	ber       float64
	offsetNS  map[string]float64
}

// defaultCables is the cabling of docs/shoal.md.
func defaultCables() [][2]string {
	var c [][2]string
	for n := 0; n < nodes8; n++ {
		b, p := nodeBoard(n)
		c = append(c, [2]string{fmt.Sprintf("%s:sfp%d", b, p), fmt.Sprintf("shoal-sw%d:sfp%d", n/2, n%2)})
	}
	for l := 0; l < 4; l++ {
		c = append(c, [2]string{fmt.Sprintf("shoal-sw%d:sfp2", l), fmt.Sprintf("shoal-sw4:sfp%d", l)})
		c = append(c, [2]string{fmt.Sprintf("shoal-sw%d:sfp3", l), fmt.Sprintf("shoal-sw5:sfp%d", l)})
	}
	return c
}

// testRack is the test rack, every board programmed with the design.
type testRack struct{ *emutest.Rig }

func newTestRack(t testing.TB, o rackOpts) *testRack {
	t.Helper()
	rack := emutest.Rack{Name: "shoal-test", Seed: o.seed, Faults: o.faults, Design: DesignName}
	for _, b := range append(append([]string{}, nicBoards...), swBoards...) {
		// Each board's own oscillator is off by some ppm: the design must
		// not care, its clock is locked to the rack's reference (§6.1).
		rack.Boards = append(rack.Boards, emutest.Board{Name: b, Kind: "de5net", PPM: 17, OffsetNS: o.offsetNS[b]})
	}
	lat := o.latencyNS
	if lat == 0 {
		lat = 10
	}
	for _, c := range defaultCables() {
		l := lat
		if v, ok := o.cableNS[c[0]]; ok {
			l = v
		}
		if v, ok := o.cableNS[c[1]]; ok {
			l = v
		}
		rack.Cables = append(rack.Cables, emutest.Cable{A: c[0], B: c[1], LatencyNS: l, BER: o.ber})
	}
	return &testRack{emutest.Start(t, rack)}
}

// nodeReg reads a NIC register of node n.
func (tr *testRack) nodeReg(n int, reg string) uint32 {
	tr.T.Helper()
	b, p := nodeBoard(n)
	return tr.Read(b, fmt.Sprintf("%s[%d]", reg, p))
}

func (tr *testRack) sumNodes(reg string) uint64 {
	var s uint64
	for n := 0; n < nodes8; n++ {
		s += uint64(tr.nodeReg(n, reg))
	}
	return s
}

// schedule is a fabric schedule: tx[t][i] is the node i sends to in slot
// t, -1 when it sends nothing.
type schedule struct {
	n  int
	tx [][]int
}

// cyclic is the schedule of Fig. 3: in slot t node i sends to i+t+1.
func cyclic(n int) schedule {
	s := schedule{n: n}
	for t := 0; t < n-1; t++ {
		row := make([]int, n)
		for i := range row {
			row[i] = (i + t + 1) % n
		}
		s.tx = append(s.tx, row)
	}
	return s
}

// appendixA is the propagation-aware schedule of App. A: for odd n the
// last (n-1)/2 offsets in reverse order; for even n the same for n+1 nodes,
// the slot to the missing node left empty.
func appendixA(n int) schedule {
	m := n
	if n%2 == 0 {
		m = n + 1
	}
	s := schedule{n: n}
	h := (m - 1) / 2
	for t := 0; t < m-1; t++ {
		off := t + 1
		if t >= h {
			off = m - 1 - (t - h)
		}
		row := make([]int, n)
		for i := range row {
			row[i] = (i + off) % m
			if row[i] >= n {
				row[i] = -1
			}
		}
		s.tx = append(s.tx, row)
	}
	return s
}

func (s schedule) rx(t, i int) int {
	for j, d := range s.tx[t] {
		if d == i {
			return j
		}
	}
	return -1
}

// switchWords decomposes a fabric schedule on the default cabling into
// each switch's schedule words, slot by slot: every cell goes node -> leaf
// -> spine -> leaf -> node, the two cells leaving a leaf on different
// spines and the two entering a leaf from different spines (a 2-colouring
// found by search, the canonical "leaf port q up to spine q" first).
func switchWords(t testing.TB, s schedule) map[string][]uint32 {
	out := map[string][]uint32{}
	for _, b := range swBoards {
		out[b] = make([]uint32, len(s.tx))
	}
	for slot, row := range s.tx {
		type edge struct{ src, dst int }
		var edges []edge
		for i, d := range row {
			if d >= 0 {
				edges = append(edges, edge{i, d})
			}
		}
		found := false
		for mask := 0; mask < 1<<len(edges) && !found; mask++ {
			color := make([]int, len(edges))
			var upUsed, downUsed [4][2]bool
			ok := true
			for k, e := range edges {
				c := (e.src % 2) ^ (mask >> k & 1)
				color[k] = c
				if upUsed[e.src/2][c] || downUsed[e.dst/2][c] {
					ok = false
					break
				}
				upUsed[e.src/2][c], downUsed[e.dst/2][c] = true, true
			}
			if !ok {
				continue
			}
			found = true
			for k, e := range edges {
				c := color[k]
				sl, dl := e.src/2, e.dst/2
				set := func(board string, in, outp int) {
					out[board][slot] |= uint32(swConnected|outp) << (4 * in)
				}
				set(swBoards[sl], e.src%2, 2+c)
				set(swBoards[4+c], sl, dl)
				set(swBoards[dl], 2+c, e.dst%2)
			}
		}
		if !found {
			t.Fatalf("slot %d of the schedule cannot be routed on the leaf-spine", slot)
		}
	}
	return out
}

type setup struct {
	sched      schedule
	slotCycles uint32
	guard      uint32
	cc         uint32 // CC_CTRL; 0 means the reset value
	queueCap   uint32
	syncSlot   uint32
	// nicSlotCycles overrides SLOT_CYCLES on the NIC boards only.
	nicSlotCycles uint32
	// syncSched, when set, is loaded for the time sync and replaced by
	// sched before the bootstrap (for schedules whose slots form no cycle
	// through every node, such as App. A's for even N).
	syncSched schedule
}

// configure does what a runner does to bring the rack up: roles, slot
// parameters, node ids, schedules; then the time sync and the bootstrap.
func (tr *testRack) configure(s setup) {
	tr.T.Helper()
	if s.sched.n == 0 {
		s.sched = cyclic(nodes8)
	}
	if s.slotCycles == 0 {
		s.slotCycles = 12
	}
	if s.guard == 0 {
		s.guard = 1
	}
	for _, b := range swBoards {
		tr.Write(b, "ROLE", roleSwitch)
		tr.Write(b, "SLOT_CYCLES", s.slotCycles)
		tr.Write(b, "GUARD_CYCLES", s.guard)
		tr.Write(b, "SYNC_SLOT", s.syncSlot)
		tr.Write(b, "SW_CTRL", 1)
	}
	for _, b := range nicBoards {
		tr.Write(b, "ROLE", roleNIC)
		sc := s.slotCycles
		if s.nicSlotCycles != 0 {
			sc = s.nicSlotCycles
		}
		tr.Write(b, "SLOT_CYCLES", sc)
		tr.Write(b, "GUARD_CYCLES", s.guard)
		tr.Write(b, "NODES", uint32(s.sched.n))
		tr.Write(b, "SYNC_SLOT", s.syncSlot)
	}
	for n := 0; n < s.sched.n; n++ {
		b, p := nodeBoard(n)
		tr.Write(b, fmt.Sprintf("NODE_ID[%d]", p), uint32(n))
		if s.cc != 0 {
			tr.Write(b, fmt.Sprintf("CC_CTRL[%d]", p), s.cc&7)
		}
		if s.queueCap != 0 {
			tr.Write(b, fmt.Sprintf("QUEUE_CAP[%d]", p), s.queueCap)
		}
		tr.Write(b, fmt.Sprintf("NIC_CTRL[%d]", p), 1)
	}
	if s.syncSched.n != 0 {
		tr.loadSchedule(s.syncSched)
		tr.sync()
		tr.loadSchedule(s.sched)
	} else {
		tr.loadSchedule(s.sched)
		tr.sync()
	}
	tr.Write("shoal-nic0", "BOOT_CTRL", 1)
	if st := tr.Read("shoal-nic0", "BOOT_STATUS"); st != bootRunning {
		tr.T.Fatalf("bootstrap: BOOT_STATUS = %#x", st)
	}
}

// loadSchedule writes a fabric schedule into the NICs and, decomposed, into
// the switches.
func (tr *testRack) loadSchedule(s schedule) {
	tr.T.Helper()
	words := switchWords(tr.T, s)
	E := uint32(len(s.tx))
	for _, b := range swBoards {
		tr.Write(b, "EPOCH_SLOTS", E)
		for t, w := range words[b] {
			tr.WriteAddr(b, swSchedBase+uint64(4*t), w)
		}
	}
	for _, b := range nicBoards {
		tr.Write(b, "EPOCH_SLOTS", E)
	}
	for n := 0; n < s.n; n++ {
		b, p := nodeBoard(n)
		for t := range s.tx {
			var w uint32
			if d := s.tx[t][n]; d >= 0 {
				w |= uint32(d) | schedTxValid
			}
			if r := s.rx(t, n); r >= 0 {
				w |= uint32(r)<<schedRxShift | schedRxValid
			}
			tr.WriteAddr(b, nicSchedBase+uint64(p*nicSchedStride+4*t), w)
		}
	}
}

// sync runs the time sync with node 0 as the master.
func (tr *testRack) sync() {
	tr.T.Helper()
	tr.Write("shoal-nic0", "SYNC_MASTER", 0)
	tr.Write("shoal-nic0", "SYNC_CTRL", 1)
	if st := tr.Read("shoal-nic0", "SYNC_STATUS"); st&syncDone == 0 || st&syncError != 0 {
		tr.T.Fatalf("time sync: SYNC_STATUS = %#x", st)
	}
}

type flow struct {
	src, dst int
	bytes    uint32
	startNS  uint32
	tag      uint32
}

// loadFlows writes each source NIC's flow table.
func (tr *testRack) loadFlows(flows []flow) {
	tr.T.Helper()
	count := map[int]int{}
	for _, f := range flows {
		b, p := nodeBoard(f.src)
		i := count[f.src]
		count[f.src]++
		base := flowsBase + uint64(p*flowsStride+16*i)
		tr.WriteAddr(b, base, uint32(f.dst)|uint32(f.src)<<16)
		tr.WriteAddr(b, base+4, f.bytes)
		tr.WriteAddr(b, base+8, f.startNS)
		tr.WriteAddr(b, base+12, f.tag)
	}
	for n := 0; n < nodes8; n++ {
		b, p := nodeBoard(n)
		tr.Write(b, fmt.Sprintf("FLOW_COUNT[%d]", p), uint32(count[n]))
	}
}

func (tr *testRack) clear() { tr.WriteAll("COUNTERS_CLEAR", 1) }

// runTraffic starts the generators and returns TG_STATUS.
func (tr *testRack) runTraffic(limit uint32) uint32 {
	tr.T.Helper()
	if limit != 0 {
		tr.Write("shoal-nic0", "TG_LIMIT_SLOTS", limit)
	}
	tr.Write("shoal-nic0", "TG_CTRL", 1)
	return tr.Read("shoal-nic0", "TG_STATUS")
}

type record struct {
	tag, src, dst, bytes, start, end, firstTx uint32
}

func (tr *testRack) records(n int) []record {
	tr.T.Helper()
	var out []record
	cnt := int(tr.nodeReg(n, "REC_COUNT"))
	b, p := nodeBoard(n)
	reg := fmt.Sprintf("REC_DATA[%d]", p)
	for i := 0; i < cnt; i++ {
		var w [recWords]uint32
		for k := range w {
			w[k] = tr.Read(b, reg)
		}
		out = append(out, record{tag: w[0], src: w[1] & 0xFFFF, dst: w[1] >> 16, bytes: w[2], start: w[3], end: w[4], firstTx: w[5]})
	}
	return out
}

func (tr *testRack) allRecords() []record {
	var out []record
	for n := 0; n < nodes8; n++ {
		out = append(out, tr.records(n)...)
	}
	return out
}
