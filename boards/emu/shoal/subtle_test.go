package shoal

import (
	"fmt"
	"math"
	"testing"

	"github.com/labrunner/labrunner/labconfig"
)

func sflt(name, board, link string, kv ...string) labconfig.Fault {
	f := labconfig.Fault{Name: name, Board: board, Link: link, Params: labconfig.Params{}}
	for i := 0; i+1 < len(kv); i += 2 {
		f.Params[kv[i]] = labconfig.Param{Values: []string{kv[i+1]}}
	}
	return f
}

// shoal-slot-long on a leaf switch: its slot grid slips a cycle a slot,
// the cells it passes soon cross reconfigurations; with report=declared
// SLOT_CYCLES reads what was written, with report=actual the real slot.
func TestFaultSlotLong(t *testing.T) {
	tr := newTestRack(t, rackOpts{faults: []labconfig.Fault{sflt(FaultSlotLong, "shoal-sw1", "")}})
	tr.configure(setup{})
	tr.Write("shoal-nic0", "RUN_SLOTS", 300)
	if v := tr.Read("shoal-sw1", "SLOT_CYCLES"); v != 12 {
		t.Errorf("report=declared: SLOT_CYCLES reads %d, want the 12 written", v)
	}
	if m := tr.Read("shoal-sw1", "SW_MISALIGNED"); m == 0 {
		t.Errorf("the slow switch passed no misaligned cell in 300 slots")
	}
	if f := tr.sumNodes("FAILED_SLOTS"); f == 0 {
		t.Errorf("no failed slot at the NICs")
	}
	healthy := newTestRack(t, rackOpts{})
	healthy.configure(setup{})
	healthy.Write("shoal-nic0", "RUN_SLOTS", 300)
	for _, b := range swBoards {
		if m := healthy.Read(b, "SW_MISALIGNED"); m != 0 {
			t.Errorf("healthy rack: %s misaligned %d cells", b, m)
		}
	}
	tr = newTestRack(t, rackOpts{faults: []labconfig.Fault{sflt(FaultSlotLong, "shoal-nic1", "", "report", "actual", "cycles", "2")}})
	tr.configure(setup{})
	if v := tr.Read("shoal-nic1", "SLOT_CYCLES"); v != 14 {
		t.Errorf("report=actual, cycles=2: SLOT_CYCLES reads %d, want 14", v)
	}
}

// shoal-guard-short: with the prototype's one-cycle guard the faulty NICs'
// cells meet the switches' reconfiguration.
func TestFaultGuardShort(t *testing.T) {
	tr := newTestRack(t, rackOpts{faults: []labconfig.Fault{sflt(FaultGuardShort, "shoal-nic1", "")}})
	tr.configure(setup{})
	tr.Write("shoal-nic0", "RUN_SLOTS", 200)
	if v := tr.Read("shoal-nic1", "GUARD_CYCLES"); v != 1 {
		t.Errorf("report=declared: GUARD_CYCLES reads %d, want 1", v)
	}
	mis := uint32(0)
	for _, b := range swBoards {
		mis += tr.Read(b, "SW_MISALIGNED")
	}
	if mis == 0 || tr.sumNodes("RX_CORRUPT_CELLS") == 0 {
		t.Errorf("guard one cycle short: %d misaligned cells, %d corrupt cells at the NICs; want both > 0", mis, tr.sumNodes("RX_CORRUPT_CELLS"))
	}
	// Its cells are lost on the way, yet the NICs keep releasing new ones as
	// their feedback times out: a traffic run stops as stalled once nothing
	// has been delivered for stallEpochs (here after about 27k slots), not
	// at its slot limit (counting cells sent as progress, this run went on
	// for 1.25M slots).
	tr = newTestRack(t, rackOpts{faults: []labconfig.Fault{sflt(FaultGuardShort, "shoal-nic0", "")}})
	tr.configure(setup{})
	flows := allPairs()
	for i := range flows {
		flows[i].bytes = 100_000
	}
	tr.loadFlows(flows)
	const limit = 500_000
	if st := tr.runTraffic(limit); st != tgStalled {
		t.Errorf("TG_STATUS = %#x after %d slots, want STALLED (every cell of nodes 0-3 is lost)", st, tr.Read("shoal-nic0", "TG_RUN_SLOTS"))
	}
	tr = newTestRack(t, rackOpts{faults: []labconfig.Fault{sflt(FaultGuardShort, "shoal-sw4", "", "report", "actual")}})
	tr.configure(setup{guard: 3, slotCycles: 14})
	if v := tr.Read("shoal-sw4", "GUARD_CYCLES"); v != 2 {
		t.Errorf("report=actual: GUARD_CYCLES reads %d, want 2", v)
	}
}

// shoal-feedback-late: one pair's throughput at 96-cycle slots falls from
// the mechanism's 4/7 (reading S20: one of the seven subflows closes its
// feedback loop within an epoch, the others in two; the intermediate node
// reports on a whole cell, reading S3) to 1/2 (none does once feedback is
// taken to cover cells a slot older), and the mean feedback delay grows.
func TestFaultFeedbackLate(t *testing.T) {
	run := func(fs []labconfig.Fault) (thr, fb float64) {
		tr := newTestRack(t, rackOpts{faults: fs})
		tr.configure(setup{slotCycles: 96})
		tr.loadFlows(permutation()[:1])
		tr.clear()
		const slots = 7000
		if st := tr.runTraffic(slots); st != tgLimit {
			t.Fatalf("TG_STATUS = %#x", st)
		}
		return float64(tr.sumNodes("RX_DELIVERED_CELLS")) / slots,
			float64(tr.nodeReg(0, "FB_SLOTS_SUM")) / float64(tr.nodeReg(0, "FB_COUNT"))
	}
	ht, hf := run(nil)
	ft, ff := run([]labconfig.Fault{sflt(FaultFeedbackLate, "shoal-nic0", "")})
	t.Logf("one pair at 96 cycles: healthy %.3f (feedback after %.1f slots), faulty %.3f (%.1f)", ht, hf, ft, ff)
	if math.Abs(ht-4.0/7) > 0.005 || math.Abs(ft-1.0/2) > 0.005 || ff <= hf {
		t.Errorf("throughput healthy %.3f (want 4/7), faulty %.3f (want 1/2); feedback delay %.1f -> %.1f slots (want longer)", ht, ft, hf, ff)
	}
}

// shoal-ready-leak: node 1 sends a long flow to every other node, so its
// ready queues hold several flows for each intermediate node, and nothing
// is forwarded through node 1: its queues hold local cells only, at most
// one each (§3.3.3); with the fault two.
func TestFaultReadyLeak(t *testing.T) {
	peak := func(fs []labconfig.Fault) int {
		tr := newTestRack(t, rackOpts{faults: fs})
		tr.configure(setup{})
		var flows []flow
		for k := 0; k < nodes8; k++ {
			if k != 1 {
				flows = append(flows, flow{src: 1, dst: k, bytes: 100 * 56, tag: uint32(k)})
			}
		}
		tr.loadFlows(flows)
		tr.clear()
		if st := tr.runTraffic(0); st != tgDone {
			t.Fatalf("TG_STATUS = %#x", st)
		}
		worst := 0
		for k := 0; k < nodes8; k++ {
			worst = max(worst, int(tr.Read("shoal-nic0", fmt.Sprintf("MAX_QUEUE[%d]", 1*maxNodes+k))))
		}
		return worst
	}
	h := peak(nil)
	f := peak([]labconfig.Fault{sflt(FaultReadyLeak, "shoal-nic0", "")})
	t.Logf("outcast of node 1: largest queue at node 1, healthy %d, faulty %d (§3.3.3: one local cell)", h, f)
	if h != 1 || f != 2 {
		t.Errorf("largest queue at the sender, local cells only: healthy %d, faulty %d; want 1 and 2", h, f)
	}
}

// shoal-cell-drop: a lost cell is a missing cell: the receiver fails the
// slot and infers its peer failed (§3.5).
func TestFaultCellDrop(t *testing.T) {
	tr := newTestRack(t, rackOpts{faults: []labconfig.Fault{sflt(FaultCellDrop, "", "shoal-sw4:sfp1", "rate", "1e-3")}})
	tr.configure(setup{})
	tr.loadFlows(permutation())
	tr.clear()
	tr.runTraffic(20000)
	failed := 0
	for n := 0; n < nodes8; n++ {
		if tr.nodeReg(n, "FAILED_PEERS_LO") != 0 {
			failed++
		}
	}
	if tr.sumNodes("FAILED_SLOTS") == 0 || failed == 0 {
		t.Errorf("cells lost at 1e-3: %d failed slots, %d nodes inferred a peer failed; want both > 0", tr.sumNodes("FAILED_SLOTS"), failed)
	}
	if m := tr.Read("shoal-sw4", "SW_MISALIGNED"); m != 0 {
		t.Errorf("the dropping switch misaligned %d cells: the fault leaves no trace on the wire", m)
	}
}
