package shoal

import ("testing"; "labrunner/labconfig")

func TestSmokeFailTmp(t *testing.T) {
	cases := []struct{ name string; f []labconfig.Fault }{
		{"nodedown", []labconfig.Fault{{Name: "shoal-node-down", Board: "shoal-nic1", Params: labconfig.Params{"nic": {Values: []string{"sfp2"}}}}}},
		{"linkdown", []labconfig.Fault{{Name: "shoal-link-down", Link: "shoal-sw0:sfp2"}}},
		{"linkdown-nic", []labconfig.Fault{{Name: "shoal-link-down", Link: "shoal-nic0:sfp3"}}},
		{"nodedown-late", []labconfig.Fault{{Name: "shoal-node-down", Board: "shoal-nic1", Params: labconfig.Params{"nic": {Values: []string{"sfp2"}}, "after_slots": {Values: []string{"3000"}}}}}},
	}
	for _, c := range cases {
		tr := newTestRack(t, rackOpts{faults: c.f})
		tr.configure(setup{})
		tr.wr("shoal-nic0", "RUN_SLOTS", 200)
		var peers [8]uint32
		for n := range peers { peers[n] = tr.nodeReg(n, "FAILED_PEERS_LO") }
		t.Logf("%s peers %08b", c.name, peers)
		tr.loadFlows(randFlows())
		st := tr.runTraffic(200000)
		t.Logf("%s: status %#x slots %d done %d/%d", c.name, st, tr.rd("shoal-nic0", "TG_RUN_SLOTS"), tr.rd("shoal-nic0", "TG_FLOWS_DONE"), tr.rd("shoal-nic0", "TG_FLOWS_TOTAL"))
		for n := range peers { peers[n] = tr.nodeReg(n, "FAILED_PEERS_LO") }
		t.Logf("%s peers %08b", c.name, peers)
		recs := tr.allRecords()
		got := map[uint32]bool{}
		for _, r := range recs { got[r.tag] = true }
		for _, f := range randFlows() { if !got[f.tag] { t.Logf("  missing %d->%d", f.src, f.dst) } }
	}
}
