package tin

import (
	"math"
	"testing"
)

// The full Clique's figures as the paper gives them.
func TestFullCliqueSizes(t *testing.T) {
	s := FullClique()
	for _, c := range []struct {
		name      string
		got, want int
	}{
		{"pods (§2)", s.Pods, 48},
		{"TiNs (§4.2, §5.1)", s.TiNs, 576},
		{"hosts (§2)", s.Hosts, 1152},
		{"management CPUs (§4.2)", s.MgmtCPUs, 576},
		{"racks (App. A)", s.Racks, 24},
		{"global links per pod pair (App. A)", s.GlobalLinksPerPodPair, 2},
		{"interpod cables 47×48/2 (App. A)", s.PodPairs, 1128},
		{"fibre bundles (App. A)", s.FibreBundles, 66},
		{"cables per bundle (App. A)", s.CablesPerBundle, 4},
		{"unused global ports per pod (96 - 94)", s.UnusedGlobalPortsPerPod, 2},
		{"IP flows / indexed: the factor 576 (§4.2)", s.IPFlows / s.IPFlowsIndexed, 576},
	} {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
	if s.PodPairGbps != 50 { // §5.1 "limited to 50 Gbps", §6 "2x25Gbps"
		t.Errorf("pod-pair bandwidth %g Gb/s, want 50", s.PodPairGbps)
	}
	if r := float64(s.IPFlows)/1.9e6 - 1; math.Abs(r) > 0.05 { // §4.2 "approximately 1.9 million"
		t.Errorf("IP flows %d, %.1f%% from 1.9 M", s.IPFlows, 100*r)
	}
	if s.GNetFlowsNaive < 4.9e6 || s.GNetFlowsNaive > 5.05e6 { // §4.2 "almost 5 million"
		t.Errorf("naive GNet flows %d, not almost 5 million", s.GNetFlowsNaive)
	}
	for _, bad := range [][4]int{{1, 12, 8, 2}, {48, 12, 0, 2}, {48, 12, 8, 3}, {48, 1, 1, 2}} {
		if _, err := CliqueSizes(bad[0], bad[1], bad[2], bad[3], 25); err == nil {
			t.Errorf("CliqueSizes%v accepted", bad)
		}
	}
}
