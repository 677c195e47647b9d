package shoal

import (
	"fmt"
	"math"
	"testing"
)

// After the bootstrap every switch applies its schedule slot by slot: the
// trace window holds the written configuration for every slot of the
// epoch, and every NIC receives, in every slot, an intact cell from exactly
// the peer the schedule connects (§3.2, §3.4, §4.1).
func TestScheduleApplied(t *testing.T) {
	tr := newTestRack(t, rackOpts{})
	tr.configure(setup{})
	words := switchWords(t, cyclic(nodes8))
	tr.clear()
	const slots = 700 // 100 epochs
	tr.Write("shoal-nic0", "RUN_SLOTS", slots)
	if got := tr.Read("shoal-nic0", "SLOT_LO"); got < slots {
		t.Errorf("SLOT_LO = %d after running %d slots", got, slots)
	}
	for _, b := range swBoards {
		if st := tr.Read(b, "SW_STATUS"); st != 1|4 {
			t.Errorf("%s: SW_STATUS = %#x, want RUNNING|TRACE_VALID", b, st)
		}
		if n := tr.Read(b, "SW_SLOTS"); n < slots-30 || n > slots {
			t.Errorf("%s: SW_SLOTS = %d, want about %d (less the bootstrap's travel)", b, n, slots)
		}
		for s, w := range words[b] {
			if got := tr.ReadAddr(b, swTraceBase+uint64(4*s)); got != w {
				t.Errorf("%s slot %d: trace %#04x, schedule %#04x", b, s, got, w)
			}
		}
		if m, d := tr.Read(b, "SW_MISALIGNED"), tr.Read(b, "SW_DEAD_ENDS"); m != 0 || d != 0 {
			t.Errorf("%s: %d misaligned cells, %d dead ends", b, m, d)
		}
		var in, out uint32
		for p := 0; p < swPorts; p++ {
			in += tr.Read(b, fmt.Sprintf("SW_CELLS_IN[%d]", p))
			out += tr.Read(b, fmt.Sprintf("SW_CELLS_OUT[%d]", p))
		}
		if in != out || in < 4*(slots-30) {
			t.Errorf("%s: %d cells in, %d out over %d slots", b, in, out, slots)
		}
	}
	for n := 0; n < nodes8; n++ {
		rx, slotsRx := tr.nodeReg(n, "RX_CELLS"), tr.nodeReg(n, "RX_SLOTS")
		if rx != slotsRx || rx < slots-30 {
			t.Errorf("node %d: %d cells received in %d receive slots", n, rx, slotsRx)
		}
		if tx, empty := tr.nodeReg(n, "TX_CELLS"), tr.nodeReg(n, "TX_EMPTY_CELLS"); tx != empty || tx < slots {
			t.Errorf("node %d: %d cells sent, %d empty, without traffic (§3.3.1: empty cells)", n, tx, empty)
		}
		for _, c := range []string{"FAILED_SLOTS", "RX_MISROUTED_CELLS", "RX_CORRUPT_CELLS", "FAILED_PEERS_LO"} {
			if v := tr.nodeReg(n, c); v != 0 {
				t.Errorf("node %d: %s = %d", n, c, v)
			}
		}
	}
}

// Switch schedules that do not match the NICs' (here: every switch one
// slot ahead) deliver cells from peers the NIC does not expect: the HOP
// check counts them and the peers are inferred failed.
func TestScheduleMismatchDetected(t *testing.T) {
	tr := newTestRack(t, rackOpts{})
	tr.configure(setup{})
	words := switchWords(t, cyclic(nodes8))
	for _, b := range swBoards {
		for s := range words[b] {
			tr.WriteAddr(b, swSchedBase+uint64(4*s), words[b][(s+1)%len(words[b])])
		}
	}
	tr.Write("shoal-nic0", "RUN_SLOTS", 200)
	if m := tr.sumNodes("RX_MISROUTED_CELLS"); m == 0 {
		t.Errorf("no misrouted cells with the switches a slot ahead of the NICs")
	}
	if f := tr.sumNodes("FAILED_SLOTS"); f == 0 {
		t.Errorf("no failed slots with the switches a slot ahead of the NICs")
	}
}

// The time sync measures the one-way node-to-node delay of §6.2 (1.57 us:
// 40 ns of cable, 3 x 320 ns of switches, 576 ns of MAC and PHY) and leaves
// the NICs less than a cycle apart (§6.1).
func TestTimeSync(t *testing.T) {
	tr := newTestRack(t, rackOpts{offsetNS: map[string]float64{"shoal-nic1": 3000}})
	tr.configure(setup{})
	if owd := tr.Read("shoal-nic1", "SYNC_OWD_PS"); owd != 1_576_000 {
		t.Errorf("SYNC_OWD_PS = %d, want 1576000 (§6.2)", owd)
	}
	if r := tr.Read("shoal-nic0", "SYNC_MAX_RESIDUAL_PS"); r == 0 || r >= cyclePS {
		t.Errorf("SYNC_MAX_RESIDUAL_PS = %d, want within (0, one cycle)", r)
	}
	off := make([]int32, nodes8)
	for n := 0; n < nodes8; n++ {
		if st := tr.nodeReg(n, "NIC_STATUS"); st&3 != 3 {
			t.Errorf("node %d: NIC_STATUS = %#x, want SYNCED|RUNNING", n, st)
		}
		if r := int32(tr.nodeReg(n, "SYNC_RESIDUAL_PS")); r <= -cyclePS || r >= cyclePS {
			t.Errorf("node %d: residual %d ps, not below a cycle", n, r)
		}
		off[n] = int32(tr.nodeReg(n, "SYNC_OFFSET_PS"))
	}
	// The four NICs of a board share its counter: same offset to well
	// under a nanosecond; the two boards differ by their power-on offsets.
	for n := 1; n < nodes8; n++ {
		same := n/4 == 0
		if d := math.Abs(float64(off[n] - off[n/4*4])); same && d > 1000 {
			t.Errorf("nodes %d and %d of one board: offsets %d and %d ps", n/4*4, n, off[n/4*4], off[n])
		}
	}
	if off[0] != 0 {
		t.Errorf("the master's offset is %d ps, want 0", off[0])
	}
	if d := math.Abs(float64(off[4] - off[0])); d < 1000 {
		t.Errorf("boards with different power-on offsets measured %d and %d ps apart", off[4], off[0])
	}
}

// Cables of unequal length break the equal-delay assumption of the sync
// (§3.2, §3.4): residual offsets of several nanoseconds push cells outside
// the one-cycle guard band and they arrive corrupted. With equal cables the
// same run is clean.
func TestUnequalCablesBreakTheGuardBand(t *testing.T) {
	tr := newTestRack(t, rackOpts{cableNS: map[string]float64{"shoal-nic0:sfp3": 30}})
	tr.configure(setup{})
	tr.Write("shoal-nic0", "RUN_SLOTS", 300)
	mis := uint32(0)
	for _, b := range swBoards {
		mis += tr.Read(b, "SW_MISALIGNED")
	}
	if mis == 0 || tr.sumNodes("RX_CORRUPT_CELLS") == 0 {
		t.Errorf("a 20 ns longer cable: %d misaligned, %d corrupt cells; want both > 0", mis, tr.sumNodes("RX_CORRUPT_CELLS"))
	}
}

func TestBootstrapChecks(t *testing.T) {
	tr := newTestRack(t, rackOpts{})
	tr.configure(setup{})
	// Changing a board's role stops the fabric and forgets the sync.
	tr.Write("shoal-sw5", "ROLE", roleNone)
	if st := tr.Read("shoal-nic0", "BOOT_STATUS"); st&bootRunning != 0 {
		t.Fatalf("fabric still running after a switch left: BOOT_STATUS = %#x", st)
	}
	if st := tr.nodeReg(3, "NIC_STATUS"); st != 0 {
		t.Errorf("NIC_STATUS = %#x after the topology changed, want 0", st)
	}
	tr.Write("shoal-sw5", "ROLE", roleSwitch)
	tr.Write("shoal-nic0", "BOOT_CTRL", 1)
	if st := tr.Read("shoal-nic0", "BOOT_STATUS"); st != bootNotSynced {
		t.Errorf("bootstrap without sync: BOOT_STATUS = %#x, want NOT_SYNCED", st)
	}
	if st := tr.runTraffic(0); st != tgNotRunning {
		t.Errorf("traffic without bootstrap: TG_STATUS = %#x, want NOT_RUNNING", st)
	}
	tr.sync()
	tr.Write("shoal-nic1", "NODE_ID[2]", 1) // node 6 claims node 1's id
	tr.Write("shoal-nic0", "BOOT_CTRL", 1)
	if st := tr.Read("shoal-nic0", "BOOT_STATUS"); st != bootConfigError {
		t.Errorf("duplicate NODE_ID: BOOT_STATUS = %#x, want CONFIG_ERROR", st)
	}
	tr.Write("shoal-nic1", "NODE_ID[2]", 6)
	tr.Write("shoal-sw2", "SLOT_CYCLES", 4)
	tr.Write("shoal-nic0", "BOOT_CTRL", 1)
	if st := tr.Read("shoal-nic0", "BOOT_STATUS"); st != bootBadParams {
		t.Errorf("4-cycle slot: BOOT_STATUS = %#x, want BAD_PARAMS", st)
	}
	tr.Write("shoal-sw2", "SLOT_CYCLES", 12)
	tr.Write("shoal-nic0", "BOOT_CTRL", 1)
	if st := tr.Read("shoal-nic0", "BOOT_STATUS"); st != bootRunning {
		t.Errorf("BOOT_STATUS = %#x, want RUNNING", st)
	}
	// A switch that was not told the same slot length garbles everything it passes.
	tr.Write("shoal-nic0", "BOOT_CTRL", 2)
	tr.Write("shoal-sw4", "SLOT_CYCLES", 13)
	tr.Write("shoal-nic0", "BOOT_CTRL", 1)
	tr.Write("shoal-nic0", "RUN_SLOTS", 100)
	if tr.Read("shoal-sw4", "SW_MISALIGNED") == 0 {
		t.Errorf("a spine with 13-cycle slots among 12-cycle NICs saw no misaligned cell")
	}
	// The sync needs its master on a cycle of the held circuits.
	tr.Write("shoal-nic0", "BOOT_CTRL", 2)
	tr.Write("shoal-nic0", "SYNC_MASTER", 40)
	tr.Write("shoal-nic0", "SYNC_CTRL", 1)
	if st := tr.Read("shoal-nic0", "SYNC_STATUS"); st&syncError == 0 {
		t.Errorf("sync with an unknown master: SYNC_STATUS = %#x, want ERROR", st)
	}
	// A schedule word that sends two inputs to one output is flagged.
	tr.WriteAddr("shoal-sw0", swSchedBase, 0x0088)
	if st := tr.Read("shoal-sw0", "SW_STATUS"); st&2 == 0 {
		t.Errorf("conflicting schedule word: SW_STATUS = %#x, want CONFLICT", st)
	}
}

// Reprogramming a board takes it out of the fabric: the run stops.
func TestReprogramStopsFabric(t *testing.T) {
	tr := newTestRack(t, rackOpts{})
	tr.configure(setup{})
	b, _ := tr.Rack.Board("shoal-sw1")
	img, err := tr.Rack.Catalogue().Image(DesignName, b.Kind().Part)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Programmer().Program(tr.Ctx, img); err != nil {
		t.Fatal(err)
	}
	if st := tr.Read("shoal-nic0", "BOOT_STATUS"); st&bootRunning != 0 {
		t.Errorf("fabric still running after shoal-sw1 was reprogrammed")
	}
	if r := tr.Read("shoal-sw1", "ROLE"); r != roleNone {
		t.Errorf("reprogrammed board's ROLE = %d, want 0", r)
	}
}

// The propagation-aware schedule of App. A for an even node count: an
// empty slot per node per epoch (1/N fewer transmit slots), no failure
// inferred for the empty slots, and feedback about a cell sooner than with
// the cyclic schedule when the propagation is shorter than half an epoch.
func TestAppendixASchedule(t *testing.T) {
	meanFB := func(s setup) (float64, *testRack) {
		tr := newTestRack(t, rackOpts{})
		tr.configure(s)
		var flows []flow
		for i, d := range []int{3, 5, 0, 7, 6, 2, 1, 4} {
			flows = append(flows, flow{src: i, dst: d, bytes: 1 << 30, tag: uint32(i)})
		}
		tr.loadFlows(flows)
		tr.clear()
		tr.runTraffic(5000)
		return float64(tr.sumNodes("FB_SLOTS_SUM")) / float64(tr.sumNodes("FB_COUNT")), tr
	}
	// 96-cycle slots (614 ns): the 1.57 us propagation is 2.6 slots, less
	// than half the 8-slot epoch.
	cyc, _ := meanFB(setup{slotCycles: 96})
	appA, tr := meanFB(setup{slotCycles: 96, sched: appendixA(nodes8), syncSched: cyclic(nodes8)})
	if !(appA < cyc) {
		t.Errorf("mean slots to feedback: App. A %.2f, cyclic %.2f; want App. A lower", appA, cyc)
	}
	for n := 0; n < nodes8; n++ {
		txs, txc := tr.nodeReg(n, "TX_SLOTS"), tr.nodeReg(n, "TX_CELLS")
		slots := tr.Read("shoal-nic0", "TG_RUN_SLOTS")
		if f := float64(txs) / float64(slots); math.Abs(f-7.0/8) > 0.01 {
			t.Errorf("node %d: sends in %.3f of the slots, want 7/8 (App. A, even N)", n, f)
		}
		if txs != txc {
			t.Errorf("node %d: %d transmit slots, %d cells", n, txs, txc)
		}
		for _, c := range []string{"FAILED_SLOTS", "RX_MISROUTED_CELLS", "RX_CORRUPT_CELLS"} {
			if v := tr.nodeReg(n, c); v != 0 {
				t.Errorf("node %d: %s = %d with the App. A schedule", n, c, v)
			}
		}
	}
}

// The guard band absorbs propagation and synchronisation errors (§3.4):
// with a 4 ns longer cable, one cycle of guard is not enough, three are.
func TestGuardBandAbsorbsErrors(t *testing.T) {
	for _, c := range []struct {
		guard uint32
		clean bool
	}{{1, false}, {3, true}} {
		tr := newTestRack(t, rackOpts{cableNS: map[string]float64{"shoal-nic0:sfp3": 14}})
		tr.configure(setup{guard: c.guard, slotCycles: 14})
		tr.Write("shoal-nic0", "RUN_SLOTS", 300)
		mis := uint32(0)
		for _, b := range swBoards {
			mis += tr.Read(b, "SW_MISALIGNED")
		}
		corrupt := tr.sumNodes("RX_CORRUPT_CELLS")
		if c.clean && (mis != 0 || corrupt != 0) || !c.clean && (mis == 0 || corrupt == 0) {
			t.Errorf("guard %d cycles, one cable 4 ns longer: %d misaligned, %d corrupted cells", c.guard, mis, corrupt)
		}
	}
}
