package shoal

import ("testing"; "labrunner/labconfig")

func dump(t *testing.T, tr *testRack, label string) {
	for n := 0; n < 8; n++ {
		t.Logf("%s node %d rx=%d failed=%d skipped=%d misr=%d corrupt=%d retx=%d dup=%d peers=%08b notices=%d maxq=%d", label, n, tr.nodeReg(n, "RX_CELLS"), tr.nodeReg(n, "FAILED_SLOTS"), tr.nodeReg(n, "SKIPPED_SLOTS"), tr.nodeReg(n, "RX_MISROUTED_CELLS"), tr.nodeReg(n, "RX_CORRUPT_CELLS"), tr.nodeReg(n, "TX_RETX_CELLS"), tr.nodeReg(n, "RX_DUPLICATE_CELLS"), tr.nodeReg(n, "FAILED_PEERS_LO"), tr.nodeReg(n, "NOTICES_RECEIVED"), tr.nodeReg(n, "MAX_QUEUE_ANY"))
	}
}

func randFlows() []flow {
	var flows []flow
	for i := 0; i < 8; i++ {
		for k := 1; k < 4; k++ {
			flows = append(flows, flow{src: i, dst: (i + k*2 + 1) % 8, bytes: 30000, startNS: uint32(k * 1000), tag: uint32(i*10 + k)})
		}
	}
	return flows
}

func TestSmokeFaultsTmp(t *testing.T) {
	cases := []struct{ name string; f []labconfig.Fault; ber float64 }{
		{"none", nil, 0},
		{"wrong-slot", []labconfig.Fault{{Name: "wrong-slot", Board: "shoal-sw4"}}, 0},
		{"ignore", []labconfig.Fault{{Name: "ignore-rate-limit", Board: "shoal-nic0"}}, 0},
		{"drift", []labconfig.Fault{{Name: "clock-drift", Board: "shoal-nic1"}}, 0},
		{"nodedown", []labconfig.Fault{{Name: "shoal-node-down", Board: "shoal-nic1", Params: labconfig.Params{"nic": {Values: []string{"sfp2"}}}}}, 0},
		{"linkdown", []labconfig.Fault{{Name: "shoal-link-down", Link: "shoal-sw0:sfp2"}}, 0},
		{"ber", nil, 1e-5},
	}
	for _, c := range cases {
		tr := newTestRack(t, rackOpts{faults: c.f, ber: c.ber})
		tr.configure(setup{})
		tr.loadFlows(randFlows())
		st := tr.runTraffic(200000)
		t.Logf("%s: status %#x slots %d done %d/%d", c.name, st, tr.rd("shoal-nic0", "TG_RUN_SLOTS"), tr.rd("shoal-nic0", "TG_FLOWS_DONE"), tr.rd("shoal-nic0", "TG_FLOWS_TOTAL"))
		dump(t, tr, c.name)
		for _, b := range swBoards { t.Logf("%s %s mis=%d dead=%d tracevalid=%d", c.name, b, tr.rd(b, "SW_MISALIGNED"), tr.rd(b, "SW_DEAD_ENDS"), tr.rd(b,"SW_STATUS")) }
	}
}
