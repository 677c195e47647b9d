package shoal

import ("testing"; "time")

func TestSmokePermTmp(t *testing.T) {
	for _, sc := range []uint32{12, 24, 48, 96, 192, 384} {
		tr := newTestRack(t, rackOpts{})
		tr.configure(setup{slotCycles: sc})
		perm := []int{3, 5, 0, 7, 6, 2, 1, 4}
		var flows []flow
		for i, d := range perm {
			flows = append(flows, flow{src: i, dst: d, bytes: 1 << 30, tag: uint32(i)})
		}
		tr.loadFlows(flows)
		tr.clear()
		t0 := time.Now()
		st := tr.runTraffic(20000)
		el := time.Since(t0)
		var del uint64
		for n := 0; n < 8; n++ { del += uint64(tr.nodeReg(n, "RX_DELIVERED_CELLS")) }
		slots := tr.rd("shoal-nic0", "TG_RUN_SLOTS")
		t.Logf("slot %d: status %#x slots %d delivered/node/slot=%.3f maxq=%d fbrtt=%.1f wall=%v", sc, st, slots, float64(del)/8/float64(slots), tr.nodeReg(3, "MAX_QUEUE_ANY"), float64(tr.sumNodes("FB_SLOTS_SUM"))/float64(tr.sumNodes("FB_COUNT")), el)
	}
}
