package tin

import (
	"fmt"
	"sort"
	"strings"
)

// Preset is a paper-scale network: a fabric and the routing it is run with.
type Preset struct {
	Name   string
	Doc    string
	Source string
	Fabric FabricConfig
	// Alg is the routing the paper runs it with; Packet the packet size in
	// bytes (flits) of its synthetic runs.
	Alg    Algorithm
	Packet int
}

// The SC'18 Dragonfly (SC'18 §IV): "a 1,056-node Dragonfly network with
// full bisection bandwidth ... 33 groups of eight 15-port routers. A router
// is connected to four endpoints, to seven other routers via local channels
// and to four groups via global channels. The local channels have a latency
// of 40 ns and the global channels have a latency of 500 ns ... The
// bandwidth of the channels is 1 flit/ns." One flit is one byte of the
// fabric.
const (
	SC18Groups          = 33
	SC18Routers         = 8
	SC18Endpoints       = 4
	SC18GlobalPerRouter = 4
	SC18LocalNs         = 40
	SC18GlobalNs        = 500
	// SC18BufferFlits is a VC input FIFO's depth (reading O2): the paper
	// gives none; this one holds a global channel's credit round trip
	// (2 x 500 ns at 1 flit/ns) and a packet, so one VC can keep any
	// channel busy: the network of §IV has full bisection bandwidth.
	SC18BufferFlits = 1024
	// SC18Threshold is PAR's threshold in flits x hops (reading O3): the
	// paper names the algorithm (PAR6/2, García et al., ICPP 2013) but
	// not its threshold; this is the one of BookSim2's UGAL for the same
	// Dragonfly, the simulator family SC'18 §IV used.
	SC18Threshold = 30
)

// SC18Dragonfly returns the SC'18 §IV network: VCs numbered by hop (six
// for the six hops of PAR's longest route), no latency but the channels'
// ("No other latencies ... are explicitly modeled", reading O1).
func SC18Dragonfly(seed uint64) FabricConfig {
	c, err := NewClique(SC18Groups, SC18Routers, SC18GlobalPerRouter)
	if err != nil {
		panic(err) // the paper's own figures
	}
	flit := LinkSpec{LatencyNs: 0, BytesPerNs: 1}
	return FabricConfig{Clique: c, Endpoints: SC18Endpoints, Inject: flit, Eject: flit,
		Local:       LinkSpec{LatencyNs: SC18LocalNs, BytesPerNs: 1},
		Global:      LinkSpec{LatencyNs: SC18GlobalNs, BytesPerNs: 1},
		BufferBytes: SC18BufferFlits, Levels: 6, Rule: LevelHops, Threshold: SC18Threshold, Seed: seed}
}

// BookSim2's dragonflynew network for the same 1,056 nodes (k = 4: 33
// groups of 8 routers, 4 endpoints, 7 local and 4 global channels each):
// its channels take 10 and 100 cycles (fixed in its source), one flit per
// cycle (1 ns here); VC buffers of 256 flits as the anchor configurations
// set. Its input-queued router is reduced to a delay: 2 cycles per router
// and 3 more at the endpoints (injection channel and ejection), which
// reproduces BookSim's unloaded latencies (5 cycles through one router,
// 124.7 on average at load 0.002).
const (
	BookSimLocalNs    = 10
	BookSimGlobalNs   = 100
	BookSimRouterNs   = 2
	BookSimInjectNs   = 1
	BookSimEjectNs    = 1
	BookSimBufferFlit = 256
	BookSimThreshold  = 30
)

// BookSimDragonfly returns that network as a fabric.
func BookSimDragonfly(seed uint64) FabricConfig {
	f := SC18Dragonfly(seed)
	f.Inject = LinkSpec{LatencyNs: BookSimInjectNs + BookSimRouterNs, BytesPerNs: 1}
	f.Eject = LinkSpec{LatencyNs: BookSimEjectNs, BytesPerNs: 1}
	f.Local = LinkSpec{LatencyNs: BookSimLocalNs + BookSimRouterNs, BytesPerNs: 1}
	f.Global = LinkSpec{LatencyNs: BookSimGlobalNs + BookSimRouterNs, BytesPerNs: 1}
	f.BufferBytes, f.Threshold = BookSimBufferFlit, BookSimThreshold
	return f
}

// AquilaRack returns Aquila's full Clique (§2, §4.2, App. A: 48 pods of 12
// TiNs, 8 global ports per TiN, 576 TiNs) with its 1,152 hosts, two per
// TiN, each at half the TiN's 100 Gb/s NIC (§3.3: one NIC for "up to two
// independent hosts"; §5.1: "the per machine NIC line rate of 50Gbps").
func AquilaRack(seed uint64) FabricConfig {
	c, err := NewClique(FullPods, FullTiNsPerPod, GlobalPortsPerTiN)
	if err != nil {
		panic(err)
	}
	t := PaperTiming()
	return AquilaFabric(c, t, DefaultBufferBytes, AquilaNonMinWeight, AquilaNonMinBias, FullHostsPerTiN, t.InjectGbps/FullHostsPerTiN, seed)
}

// Presets returns the paper-scale networks by name.
func Presets() map[string]Preset {
	return map[string]Preset{
		"sc18-dragonfly": {Name: "sc18-dragonfly", Source: "SC'18 §IV", Alg: AlgPAR, Packet: 16,
			Doc:    "1,056-node Dragonfly: 33 groups of 8 routers, 4 endpoints each, 40 ns local and 500 ns global channels, 1 flit/ns, PAR routing, 16-flit packets",
			Fabric: SC18Dragonfly(1)},
		"booksim-dragonfly": {Name: "booksim-dragonfly", Source: "BookSim2 dragonflynew (k=4)", Alg: AlgMinimal, Packet: 1,
			Doc:    "the same 1,056-node Dragonfly with BookSim2's 10/100-cycle channels and router delay, single-flit packets, for the side-by-side comparison",
			Fabric: BookSimDragonfly(1)},
		"aquila-rack": {Name: "aquila-rack", Source: "Aquila §2, §3.2, §4.2, App. A", Alg: AlgFullyAdaptive, Packet: MaxCell,
			Doc:    "Aquila's full Clique: 48 pods of 12 TiNs (576), 8 global links each, 1,152 hosts at 50 Gb/s, 25 Gb/s links, full 160-byte cells, fully adaptive",
			Fabric: AquilaRack(1)},
	}
}

// PresetNames lists the presets.
func PresetNames() []string {
	var out []string
	for k := range Presets() {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// LookupPreset returns a preset by name.
func LookupPreset(name string) (Preset, error) {
	p, ok := Presets()[strings.ToLower(strings.TrimSpace(name))]
	if !ok {
		return Preset{}, fmt.Errorf("tin: no network preset %q (have %s)", name, strings.Join(PresetNames(), ", "))
	}
	return p, nil
}
