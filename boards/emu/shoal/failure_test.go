package shoal

import (
	"math"
	"testing"

	"github.com/labrunner/labrunner/labconfig"
)

func failedPeers(tr *testRack) [nodes8]uint64 {
	var f [nodes8]uint64
	for n := range f {
		f[n] = uint64(tr.nodeReg(n, "FAILED_PEERS_LO")) | uint64(tr.nodeReg(n, "FAILED_PEERS_HI"))<<32
	}
	return f
}

// checkSymmetric: when i infers j failed, j infers i failed (§3.5), among
// the nodes that are alive.
func checkSymmetric(t *testing.T, f [nodes8]uint64, dead int) {
	t.Helper()
	for i := 0; i < nodes8; i++ {
		for j := 0; j < nodes8; j++ {
			if i == dead || j == dead {
				continue
			}
			if f[i]>>j&1 != f[j]>>i&1 {
				t.Errorf("asymmetric detection: node %d failed-peers %08b, node %d %08b", i, f[i], j, f[j])
			}
		}
	}
}

// reachable: i can get a cell to k directly or through one node j (§3.3.1)
// over pairs neither end inferred failed.
func reachable(f [nodes8]uint64, i, k int) bool {
	ok := func(a, b int) bool { return f[a]>>b&1 == 0 && f[b]>>a&1 == 0 }
	if ok(i, k) {
		return true
	}
	for j := 0; j < nodes8; j++ {
		if j != i && j != k && ok(i, j) && ok(j, k) {
			return true
		}
	}
	return false
}

func allPairs() []flow {
	var flows []flow
	for i := 0; i < nodes8; i++ {
		for k := 0; k < nodes8; k++ {
			if i != k {
				flows = append(flows, flow{src: i, dst: k, bytes: 3000, startNS: uint32(100 * (i + k)), tag: uint32(1 + 8*i + k)})
			}
		}
	}
	return flows
}

// A dead node (§3.5): every other node misses its cells in its slots, infers
// it failed, stops sending to it and tells the others; traffic among the
// others goes on and completes.
func TestNodeFailure(t *testing.T) {
	tr := newTestRack(t, rackOpts{faults: []labconfig.Fault{{Name: FaultNodeDown, Board: "shoal-nic1",
		Params: labconfig.Params{"nic": {Values: []string{"sfp2"}}}}}})
	tr.configure(setup{})
	tr.Write("shoal-nic0", "RUN_SLOTS", 300)
	f := failedPeers(tr)
	for n := 0; n < nodes8; n++ {
		if n == 6 {
			continue
		}
		if f[n] != 1<<6 {
			t.Errorf("node %d failed-peers %08b, want only node 6", n, f[n])
		}
		if got := tr.nodeReg(n, "NOTICES_RECEIVED"); got != 6 {
			t.Errorf("node %d received %d failure notices, want one from each of the 6 other live nodes", n, got)
		}
		// One peer in seven is dead: about 1/7 of the receive slots fail.
		fr := float64(tr.nodeReg(n, "FAILED_SLOTS")) / float64(tr.nodeReg(n, "RX_SLOTS"))
		if math.Abs(fr-1.0/7) > 0.01 {
			t.Errorf("node %d: failed-slot fraction %.3f, want 1/7", n, fr)
		}
		if s := tr.nodeReg(n, "SKIPPED_SLOTS"); s == 0 {
			t.Errorf("node %d still sends to the dead node", n)
		}
	}
	tr.clear()
	tr.loadFlows(allPairs())
	if st := tr.runTraffic(0); st != tgStalled {
		t.Errorf("TG_STATUS = %#x, want STALLED (flows to and from node 6 cannot finish)", st)
	}
	done := map[uint32]bool{}
	for _, r := range tr.allRecords() {
		done[r.tag] = true
	}
	for _, fl := range allPairs() {
		if healthy := fl.src != 6 && fl.dst != 6; healthy != done[fl.tag] {
			t.Errorf("flow %d->%d completed=%v", fl.src, fl.dst, done[fl.tag])
		}
	}
}

// Cables failing (§3.5, Table 1): detection is symmetric, and every flow
// between nodes that can still reach each other (directly or through one
// intermediate) completes.
func TestLinkFailures(t *testing.T) {
	for _, c := range []struct {
		link     string
		isolated int // the node the cable's failure cuts off, -1 none
	}{
		{"shoal-nic0:sfp1", 1}, // node 1's cable to its leaf
		{"shoal-sw1:sfp3", -1}, // leaf 1 to spine shoal-sw5
		{"shoal-sw4:sfp3", -1}, // spine shoal-sw4 to leaf 3
	} {
		t.Run(c.link, func(t *testing.T) {
			tr := newTestRack(t, rackOpts{faults: []labconfig.Fault{{Name: FaultLinkDown, Link: c.link}}})
			tr.configure(setup{})
			tr.Write("shoal-nic0", "RUN_SLOTS", 300)
			f := failedPeers(tr)
			checkSymmetric(t, f, -1)
			any := false
			for n := range f {
				any = any || f[n] != 0
			}
			if !any {
				t.Fatalf("no failure detected with %s cut", c.link)
			}
			if c.isolated >= 0 {
				for n := 0; n < nodes8; n++ {
					if want := uint64(0xFF) &^ (1 << n); n == c.isolated && f[n] != want || n != c.isolated && f[n] != 1<<c.isolated {
						t.Errorf("node %d failed-peers %08b", n, f[n])
					}
				}
			}
			tr.clear()
			tr.loadFlows(allPairs())
			tr.runTraffic(0)
			done := map[uint32]bool{}
			for _, r := range tr.allRecords() {
				done[r.tag] = true
			}
			completed := 0
			for _, fl := range allPairs() {
				if reachable(f, fl.src, fl.dst) && !done[fl.tag] {
					t.Errorf("flow %d->%d can be routed but did not complete", fl.src, fl.dst)
				}
				if done[fl.tag] {
					completed++
				}
			}
			t.Logf("%s cut: failed-peers %08b; %d of %d flows completed", c.link, f, completed, len(allPairs()))
		})
	}
}

// A node that dies in the middle of a run is detected as soon as its slots
// come up empty (§3.5).
func TestNodeFailureDuringRun(t *testing.T) {
	tr := newTestRack(t, rackOpts{faults: []labconfig.Fault{{Name: FaultNodeDown, Board: "shoal-nic0",
		Params: labconfig.Params{"nic": {Values: []string{"3"}}, "after_slots": {Values: []string{"500"}}}}}})
	tr.configure(setup{})
	tr.Write("shoal-nic0", "RUN_SLOTS", 450)
	for n, p := range failedPeers(tr) {
		if p != 0 {
			t.Fatalf("node %d failed-peers %08b before the failure", n, p)
		}
	}
	tr.Write("shoal-nic0", "RUN_SLOTS", 100)
	f := failedPeers(tr)
	checkSymmetric(t, f, 3)
	for n := range f {
		if n != 3 && f[n] != 1<<3 {
			t.Errorf("node %d failed-peers %08b 50 slots after node 3 died, want node 3", n, f[n])
		}
	}
}
