package shoal

import "testing"

func TestSmokeTmp(t *testing.T) {
	tr := newTestRack(t, rackOpts{})
	tr.configure(setup{})
	t.Logf("owd=%d ps resid=%d", tr.rd("shoal-nic0", "SYNC_OWD_PS"), tr.rd("shoal-nic0", "SYNC_MAX_RESIDUAL_PS"))
	tr.wr("shoal-nic0", "RUN_SLOTS", 2000)
	for n := 0; n < 8; n++ {
		t.Logf("node %d tx=%d empty=%d rx=%d failed=%d misr=%d corrupt=%d peers=%x", n, tr.nodeReg(n, "TX_CELLS"), tr.nodeReg(n, "TX_EMPTY_CELLS"), tr.nodeReg(n, "RX_CELLS"), tr.nodeReg(n, "FAILED_SLOTS"), tr.nodeReg(n, "RX_MISROUTED_CELLS"), tr.nodeReg(n, "RX_CORRUPT_CELLS"), tr.nodeReg(n, "FAILED_PEERS_LO"))
	}
	for _, b := range swBoards {
		t.Logf("%s slots=%d mis=%d dead=%d", b, tr.rd(b, "SW_SLOTS"), tr.rd(b, "SW_MISALIGNED"), tr.rd(b, "SW_DEAD_ENDS"))
	}
	var flows []flow
	for i := 1; i < 8; i++ {
		flows = append(flows, flow{src: i, dst: 0, bytes: 7 * 56, tag: uint32(i)})
	}
	tr.clear()
	tr.loadFlows(flows)
	st := tr.runTraffic(0)
	t.Logf("tg status %#x slots %d", st, tr.rd("shoal-nic0", "TG_RUN_SLOTS"))
	for _, r := range tr.records(0) {
		t.Logf("%+v fct=%d", r, r.end-r.start)
	}
	for n := 0; n < 8; n++ {
		t.Logf("node %d maxq=%d", n, tr.nodeReg(n, "MAX_QUEUE_ANY"))
	}
}
