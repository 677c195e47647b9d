package tin

import "fmt"

// Sizes are the counts of a full-scale Clique, derived from its shape.
type Sizes struct {
	Pods, TiNsPerPod, TiNs   int
	GlobalPortsPerTiN        int
	HostsPerTiN              int
	Hosts, MgmtCPUs          int
	PodsPerRack, Racks       int
	LocalLinks               int // all pods, each using every local port (§3.2)
	PodPairs                 int // pod pairs, each one two-channel ribbon when cabled directly (App. A)
	GlobalLinksPerPodPair    int
	GlobalLinks              int
	UnusedGlobalPortsPerPod  int
	PodsPerShuffle           int // fibre shuffle group (App. A: 4 pods)
	LinksPerCable            int // MPO16 cable (App. A: 8 GNet links)
	FibreBundles             int // bundles between shuffle groups (App. A: 66)
	CablesPerBundle          int // (App. A: 4-cable bundles)
	PodPairGbps              float64
	IPFlows, IPFlowsIndexed  int
	GNetFlowsNaive           int
	RouteDestinationsPerTiN  int
	AddressFamilies          int
	RoutingVCsPerDestination int
}

// Figures of Aquila's full Clique.
const (
	FullPods        = 48 // §2, App. A
	FullTiNsPerPod  = 12 // §2, App. A
	FullHostsPerTiN = 2  // §2: pairs of hosts share a TiN (1152 hosts)
	PodsPerRack     = 2  // App. A: two pods of 24 servers per rack
	PodsPerShuffle  = 4  // App. A: fibre shuffles within groups of 4 pods
	LinksPerCable   = 8  // App. A: 8 GNet link MPO16 cables
	AddressFamilies = 2  // §4.2: IPv4 and IPv6
)

// FullClique returns the sizes of Aquila's full Clique: 48 pods of 12 TiNs,
// 8 global ports per TiN, two hosts per TiN, 25 Gb/s links.
func FullClique() Sizes {
	s, err := CliqueSizes(FullPods, FullTiNsPerPod, GlobalPortsPerTiN, FullHostsPerTiN, PaperTiming().LinkGbps)
	if err != nil {
		panic(err) // the paper's own figures; cannot fail
	}
	return s
}

// CliqueSizes derives the counts of a Clique of the given shape.
//
//   - hosts and management CPUs: a TiN serves hostsPerTiN hosts and has one
//     management CPU (§2, §3.5; §4.2 counts 1152 hosts and 576 CPUs);
//   - local links: every TiN uses its 24 local ports (§3.2), each link two
//     ports;
//   - global links: the consecutive arrangement of NewClique, floor(T·g/(P-1))
//     per pod pair ("two optical GNet global links between any pod pair",
//     App. A);
//   - cabling: the pod pairs, cabled directly with two-channel ribbons, are
//     the "47 × 48 / 2 = 1128 unique interpod cables" of App. A; with fibre
//     shuffles over groups of 4 pods, each pair of groups is one bundle of
//     16 pod pairs × 2 links / 8 links per cable = 4 cables ("66 4-cable
//     bundles", App. A);
//   - pod-pair bandwidth: the minimal paths between two pods are their
//     global links ("2x25Gbps", §6; "limited to 50 Gbps", §5.1);
//   - IP flows (§4.2): every TiN holds a flow per address family for every
//     host and management CPU: (1152 + 576) × 2 × 576 = 1,990,656, which
//     §4.2 calls "approximately 1.9 million"; the indexed group divides it
//     by the number of TiNs ("a factor of 576");
//   - GNet flows (§4.2), the model's decomposition: "per-input port,
//     per-virtual channel flows" for every input port of the 50-port switch,
//     every routing VC (3) and every destination of hierarchical routing
//     (the other pods and the other TiNs of the pod): 576 × 50 × 3 × 58 =
//     5,011,200, "almost 5 million". The port-class figure (~700k) is not
//     derived: the paper does not give its expansion and pruning rules.
func CliqueSizes(pods, tinsPerPod, globalPerTiN, hostsPerTiN int, linkGbps float64) (Sizes, error) {
	if err := checkSize(pods, tinsPerPod); err != nil {
		return Sizes{}, err
	}
	if pods < 2 {
		return Sizes{}, fmt.Errorf("tin: a Clique of %d pod has no global links to count; want at least 2 pods", pods)
	}
	if globalPerTiN < 1 || globalPerTiN > GlobalPortsPerTiN {
		return Sizes{}, fmt.Errorf("tin: %d global ports per TiN: want 1..%d", globalPerTiN, GlobalPortsPerTiN)
	}
	if hostsPerTiN < 1 || hostsPerTiN > 2 {
		return Sizes{}, fmt.Errorf("tin: %d hosts per TiN: want 1 or 2 (Aquila §3.3: up to two hosts)", hostsPerTiN)
	}
	s := Sizes{
		Pods: pods, TiNsPerPod: tinsPerPod, TiNs: pods * tinsPerPod,
		GlobalPortsPerTiN: globalPerTiN, HostsPerTiN: hostsPerTiN,
		PodsPerRack: PodsPerRack, PodsPerShuffle: PodsPerShuffle, LinksPerCable: LinksPerCable,
		AddressFamilies: AddressFamilies, RoutingVCsPerDestination: RoutingVCs,
	}
	s.Hosts = s.TiNs * hostsPerTiN
	s.MgmtCPUs = s.TiNs
	s.Racks = (pods + PodsPerRack - 1) / PodsPerRack
	s.LocalLinks = s.TiNs * LocalPortsPerTiN / 2
	s.PodPairs = pods * (pods - 1) / 2
	s.GlobalLinksPerPodPair = tinsPerPod * globalPerTiN / (pods - 1)
	if s.GlobalLinksPerPodPair == 0 {
		return Sizes{}, fmt.Errorf("tin: %d pods of %d TiNs with %d global ports each cannot join every pod pair", pods, tinsPerPod, globalPerTiN)
	}
	s.GlobalLinks = s.PodPairs * s.GlobalLinksPerPodPair
	s.UnusedGlobalPortsPerPod = tinsPerPod*globalPerTiN - (pods-1)*s.GlobalLinksPerPodPair
	if pods%PodsPerShuffle == 0 {
		groups := pods / PodsPerShuffle
		s.FibreBundles = groups * (groups - 1) / 2
		s.CablesPerBundle = PodsPerShuffle * PodsPerShuffle * s.GlobalLinksPerPodPair / LinksPerCable
	}
	s.PodPairGbps = float64(s.GlobalLinksPerPodPair) * linkGbps
	s.IPFlows = (s.Hosts + s.MgmtCPUs) * AddressFamilies * s.TiNs
	s.IPFlowsIndexed = s.IPFlows / s.TiNs
	s.RouteDestinationsPerTiN = (pods - 1) + (tinsPerPod - 1)
	s.GNetFlowsNaive = s.TiNs * SwitchPorts * RoutingVCs * s.RouteDestinationsPerTiN
	return s, nil
}
