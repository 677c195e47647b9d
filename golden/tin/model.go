package tin

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/labrunner/labrunner/golden"
	"github.com/labrunner/labrunner/golden/param"
	"github.com/labrunner/labrunner/results"
)

// Name is the model's name in the registry.
const Name = "tin"

// The fabric RTT bands: golden runs per load (enough for their spread to
// be a standard deviation worth the name), and the shortest measurement
// they stand for.
const (
	MinReplicas = 4
	MaxReplicas = 64
	MinMeasured = 20
)

// MaxPairNodes bounds the Clique for which Predict lists the routes of every
// ordered pair of TiNs (64 TiNs: 4096 pairs); a larger one needs src and dst.
const MaxPairNodes = 64

func init() { golden.Register(Model{}) }

// Model is the TiN-style cell fabric golden model as a golden.Model.
type Model struct{}

// Name implements golden.Model.
func (Model) Name() string { return Name }

// Doc implements golden.Model.
func (Model) Doc() string {
	return "TiN-style cell fabric (Aquila, NSDI 2022): GNet cellification and solicitation overheads " +
		"(§3.1, §3.3, §3.4, §6), per-hop latency (§3.1, §3.2), Dragonfly routes of the four routing modes " +
		"with their VCs (§3.2), the full Clique's sizes (§2, §4.2, App. A) and a reference simulation of " +
		"fabric RTT versus uniform random load and of 1RMA reads alone and beside bulk IP (§3.4, §5.1). Metrics: tin.cell.*, tin.ip.*, tin.rts.*, tin.rma.*, " +
		"tin.latency.*, tin.route.*, tin.clique.*, tin.fabric.* (see package golden/tin)."
}

// Params implements golden.Model.
func (Model) Params() []golden.Param {
	t := PaperTiming()
	g := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	return []golden.Param{
		{Name: "clique", Default: "2x4", Doc: "pods x TiNs per pod of the Clique to route (the small Clique of the TiN rack)"},
		{Name: "globals", Default: "1", Doc: "global ports per TiN, 1..8, wired in the consecutive arrangement (Aquila §3.2: 8)"},
		{Name: "wiring", Doc: "explicit global links instead, e.g. p0t0-p1t0,p0t1-p1t1 (the lab's cabling)"},
		{Name: "class", Default: "0", Doc: "traffic class 0..9 of the routed cells: VC = 3·class + routing VC (§3.2)"},
		{Name: "src", Doc: "source address of one route set (with dst), e.g. p0t1e0; default: every ordered pair of TiNs, endpoint 0"},
		{Name: "dst", Doc: "destination address of one route set (with src)"},
		{Name: "modes", Default: "fully-adaptive,minimal-adaptive,deterministic,minimal-deterministic", Doc: "routing modes whose route sets to predict (empty: none)"},
		{Name: "packets", Default: "64,152,153,1500,4096,9000", Doc: "IP packet sizes in bytes to cellify (empty: none)"},
		{Name: "align", Default: "8", Doc: "cell size granularity in bytes: 8 (64-bit PCS blocks, the model's reading) or 1, 2, 4, 16"},
		{Name: "reads", Default: "4096", Doc: "1RMA read sizes in bytes for Resp cell counts (§5.1: 4 KB CliqueMap values; empty: none)"},
		{Name: "completion", Default: "64", Doc: "PCIe read completion size in bytes, one per Resp cell (§3.4; not given by the paper)"},
		{Name: "resp_tag", Default: "0", Doc: "bytes a Resp cell carries besides its header and its completion (§3.4 gives no layout: 0; a design declares its own)"},
		{Name: "rma_count", Default: "20", Doc: "1RMA reads each TiN issues in one measurement of the read latency alone, per size of reads (§5.1 Fig. 9; the rma_isolation test's 20; 0: no read simulation)"},
		{Name: "rma_qps", Default: strconv.Itoa(PaperReadQPS), Doc: "reads a second each TiN issues, Poisson (§5.1 Fig. 9: 10,000 QPS)"},
		{Name: "rma_mem_ns", Default: g(PaperReadMemNs), Doc: "the target's PCIe read of a 1RMA read, ns (§3.4: 4 µs end to end, 2.5-3 µs of it in the fabric; reading A29)"},
		{Name: "rma_cpl_ns", Default: g(PaperReadCplNs), Doc: "the initiator's completion after a read's last Resp cell, ns (reading A29: the paper does not split the PCIe time)"},
		{Name: "rma_mode", Default: "fully-adaptive", Doc: "routing mode of Req and Resp cells (§3.4: routed adaptively)"},
		{Name: "rma_bulk_load", Default: "0", Doc: "load of the bulk IP traffic beside which the reads run again, high and low priority, a fraction of inject_gbps per TiN (§5.1 Fig. 9; the rma_isolation test's 0.2; 0: no such runs)"},
		{Name: "rma_bulk_bytes", Default: "4864", Doc: "packet size of the bulk IP traffic in bytes (§5.1: 64 KB messages, as packets of the design's largest, 32 cells of 152 B)"},
		{Name: "rma_bulk_packets", Default: "0", Doc: "bulk packets each TiN sends (0: enough for the reads' expected span at rma_qps, plus a quarter, as the rma_isolation test sizes its bulk)"},
		{Name: "rma_bulk_runs", Default: "4", Doc: fmt.Sprintf("golden runs of the reads beside bulk IP per priority, %d..%d (each costs the bulk's whole span of fabric time)", 2, MaxReplicas)},
		{Name: "rma_hipri_weight", Default: "8", Doc: "cells per turn of the high-priority reads' class against one of the bulk's, on every link (§5.1: \"The relative egress scheduling priority between H and L classes is 8:1\")"},
		{Name: "cable_spread_ns", Default: "0", Doc: "most a cable of the lab differs from its kind's mean flight time, ns: the read latency's band widens by it for every link a read's Req and Resp cross"},
		{Name: "link_gbps", Default: g(t.LinkGbps), Doc: "GNet link rate in Gb/s (§3.1: 25G links)"},
		{Name: "inject_gbps", Default: g(t.InjectGbps), Doc: "endpoint port rate in Gb/s (§5.1: 100 Gb/s IP injection per TiN)"},
		{Name: "fallthrough_ns", Default: g(t.FallThroughNs), Doc: "cell switch fall-through in ns (§3.1: 20)"},
		{Name: "switch_clock_mhz", Default: "0", Doc: "clock of the design's switches in MHz: each acts on its own clock's edges (reading A28; 0: the paper's unclocked figures)"},
		{Name: "hop_ns", Default: g(t.HopNs), Doc: "total per-hop latency without FEC in ns (§3.1: 40)"},
		{Name: "fec_ns", Default: g(t.FECNs), Doc: "FEC latency per global hop in ns (§3.2: 30)"},
		{Name: "fec_overhead", Default: g(t.FECOverhead), Doc: "FEC bandwidth overhead on global links (§3.2: 0.06)"},
		{Name: "local_prop_ns", Default: "0", Doc: "flight time of a local link in ns, beyond hop_ns"},
		{Name: "global_prop_ns", Default: "0", Doc: "flight time of a global link in ns (the lab's cable; 5 ns/m of fibre)"},
		{Name: "loads", Default: "0.05,0.1,0.2,0.3", Doc: "offered loads for the fabric simulation, fractions of inject_gbps per TiN (empty: no simulation)"},
		{Name: "bytes", Default: "1500", Doc: "request packet size of the simulation in bytes"},
		{Name: "reply", Default: "64", Doc: "reply packet size of the simulation in bytes (the RTT's return leg)"},
		{Name: "sim_mode", Default: "fully-adaptive", Doc: "routing mode of the simulated data cells"},
		{Name: "cts_window", Default: "0", Doc: "outstanding packet fetches per destination, the window §3.3's CTS scheduler \"may\" throttle with (0: none; the egress buffer bounds fetches)"},
		{Name: "egress_bytes", Default: "0", Doc: "egress reassembly buffer per destination in bytes (0: §3.3's sizing, the port's bandwidth-delay product over the fabric round trip plus one packet, reading A21)"},
		{Name: "buffer_bytes", Default: "1280", Doc: "input FIFO of a VC in bytes, credited (§3.1; the paper gives no depth, reading A4: 8 cells)"},
		{Name: "nonmin_weight", Default: "2", Doc: "weight of a non-minimal candidate's output occupancy in the adaptive modes (reading A40: 2)"},
		{Name: "nonmin_bias", Default: "160", Doc: "bytes added to a non-minimal candidate's cost in the adaptive modes (reading A40: one 160-byte cell)"},
		{Name: "measured", Default: "1600", Doc: "requests the measurement averages over per load (the rtt test's samples: 200 from each of 8 TiNs), at least 20: each golden run is one such measurement"},
		{Name: "replicas", Default: "16", Doc: fmt.Sprintf("golden runs per load, %d..%d, each its own traffic and RTS/CTS route hash: the golden value is their mean, the band their spread", MinReplicas, MaxReplicas)},
		{Name: "seed", Default: "1", Doc: "seed of the simulation (unsigned 64-bit)"},
	}
}

// Plan is a parsed, checked set of Predict parameters.
type Plan struct {
	Clique            *Clique
	Class             int
	Pairs             [][2]Addr
	Modes             []Mode
	Packets, Reads    []int
	Align, Completion int
	// The 1RMA read latency (reading A29): Resp tag bytes, reads per TiN
	// (0: none), their rate, the PCIe times, the routing mode and the
	// lab's cable spread.
	RespTag, RMACount  int
	RMAQPS             float64
	RMAMemNs, RMACplNs float64
	RMAMode            Mode
	// The reads beside bulk IP (reading A30): the bulk's load, packet
	// size and packets per TiN, the high-priority class's weight.
	RMABulkLoad                  float64
	RMABulkBytes, RMABulkPackets int
	RMAHiPriWeight, RMABulkRuns  int
	CableSpreadNs                float64
	Timing                       Timing
	Loads                        []float64
	Bytes, Reply                 int
	SimMode                      Mode
	CTSWindow                    int
	EgressBytes                  int
	BufferBytes                  int
	NonMinWeight                 float64
	NonMinBias                   float64
	Replicas                     int
	Measured                     int
	Seed                         uint64
}

// ParsePlan checks Predict's parameters.
func ParsePlan(set map[string]string) (*Plan, error) {
	s, err := golden.Settings(Name, Model{}.Params(), set)
	if err != nil {
		return nil, err
	}
	pl := &Plan{}
	pods, tins, err := parseShape(s["clique"])
	if err != nil {
		return nil, fmt.Errorf("%s: parameter clique: %w", Name, err)
	}
	if w, ok := s["wiring"]; ok {
		links, err := ParseWiring(w)
		if err != nil {
			return nil, fmt.Errorf("%s: parameter wiring: %w", Name, err)
		}
		if pl.Clique, err = NewCliqueWired(pods, tins, links); err != nil {
			return nil, fmt.Errorf("%s: parameter wiring: %w", Name, err)
		}
	} else {
		g, err := param.Int(s["globals"], 0, GlobalPortsPerTiN)
		if err != nil {
			return nil, fmt.Errorf("%s: parameter globals: %w", Name, err)
		}
		if pl.Clique, err = NewClique(pods, tins, g); err != nil {
			return nil, fmt.Errorf("%s: parameters clique and globals: %w", Name, err)
		}
	}
	if pl.Class, err = param.Int(s["class"], 0, TrafficClasses-1); err != nil {
		return nil, fmt.Errorf("%s: parameter class: %w", Name, err)
	}
	if pl.Pairs, err = pairs(s, pl.Clique); err != nil {
		return nil, err
	}
	if pl.Modes, err = parseModes(s["modes"]); err != nil {
		return nil, fmt.Errorf("%s: parameter modes: %w", Name, err)
	}
	if pl.Align, err = param.Int(s["align"], 1, MinCell); err == nil {
		err = checkAlign(pl.Align)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: parameter align: %w", Name, err)
	}
	if pl.Packets, err = param.Ints(s["packets"], 1, MaxPacket); err != nil {
		return nil, fmt.Errorf("%s: parameter packets: %w (want byte counts 1..%d)", Name, err, MaxPacket)
	}
	if pl.Reads, err = param.Ints(s["reads"], 1, 1<<20); err != nil {
		return nil, fmt.Errorf("%s: parameter reads: %w (want byte counts 1..%d)", Name, err, 1<<20)
	}
	if pl.Completion, err = param.Int(s["completion"], 1, MaxPayload); err != nil {
		return nil, fmt.Errorf("%s: parameter completion: %w", Name, err)
	}
	if pl.RespTag, err = param.Int(s["resp_tag"], 0, MaxPayload-pl.Completion); err != nil {
		return nil, fmt.Errorf("%s: parameter resp_tag: %w (a Resp cell carries at most %d bytes after its header)", Name, err, MaxPayload)
	}
	if pl.RMACount, err = param.Int(s["rma_count"], 0, MaxReadsPerTiN); err != nil {
		return nil, fmt.Errorf("%s: parameter rma_count: %w", Name, err)
	}
	for _, f := range []struct {
		key    string
		dst    *float64
		lo, hi float64
	}{{"rma_qps", &pl.RMAQPS, 1, 1e9}, {"rma_mem_ns", &pl.RMAMemNs, 0, 1e7}, {"rma_cpl_ns", &pl.RMACplNs, 0, 1e7}, {"cable_spread_ns", &pl.CableSpreadNs, 0, 1e6}} {
		v, err := strconv.ParseFloat(strings.TrimSpace(s[f.key]), 64)
		if err != nil || math.IsNaN(v) || v < f.lo || v > f.hi {
			return nil, fmt.Errorf("%s: parameter %s: %q: want a number %g..%g", Name, f.key, s[f.key], f.lo, f.hi)
		}
		*f.dst = v
	}
	if pl.RMAMode, err = ParseMode(s["rma_mode"]); err != nil {
		return nil, fmt.Errorf("%s: parameter rma_mode: %w", Name, err)
	}
	if v, err := strconv.ParseFloat(strings.TrimSpace(s["rma_bulk_load"]), 64); err != nil || math.IsNaN(v) || v < 0 || v > 1 {
		return nil, fmt.Errorf("%s: parameter rma_bulk_load: %q: want 0 (no bulk) or a load up to 1", Name, s["rma_bulk_load"])
	} else {
		pl.RMABulkLoad = v
	}
	if pl.RMABulkBytes, err = param.Int(s["rma_bulk_bytes"], 1, MaxPacket); err != nil {
		return nil, fmt.Errorf("%s: parameter rma_bulk_bytes: %w", Name, err)
	}
	if pl.RMABulkPackets, err = param.Int(s["rma_bulk_packets"], 0, MaxSimPackets/2); err != nil {
		return nil, fmt.Errorf("%s: parameter rma_bulk_packets: %w", Name, err)
	}
	if pl.RMAHiPriWeight, err = param.Int(s["rma_hipri_weight"], 1, MaxHiPriWeight); err != nil {
		return nil, fmt.Errorf("%s: parameter rma_hipri_weight: %w", Name, err)
	}
	if pl.RMABulkRuns, err = param.Int(s["rma_bulk_runs"], 2, MaxReplicas); err != nil {
		return nil, fmt.Errorf("%s: parameter rma_bulk_runs: %w", Name, err)
	}
	t := &pl.Timing
	for _, f := range []struct {
		key string
		dst *float64
	}{
		{"link_gbps", &t.LinkGbps}, {"inject_gbps", &t.InjectGbps}, {"fallthrough_ns", &t.FallThroughNs},
		{"hop_ns", &t.HopNs}, {"fec_ns", &t.FECNs}, {"fec_overhead", &t.FECOverhead},
		{"local_prop_ns", &t.LocalPropNs}, {"global_prop_ns", &t.GlobalPropNs},
	} {
		v, err := strconv.ParseFloat(strings.TrimSpace(s[f.key]), 64)
		if err != nil {
			return nil, fmt.Errorf("%s: parameter %s: %q is not a number", Name, f.key, s[f.key])
		}
		*f.dst = v
	}
	mhz, err := strconv.ParseFloat(strings.TrimSpace(s["switch_clock_mhz"]), 64)
	if err != nil || math.IsNaN(mhz) || mhz < 0 || mhz > 0 && mhz < 1 || mhz > 1e5 {
		return nil, fmt.Errorf("%s: parameter switch_clock_mhz: %q: want 0 (no clock) or 1..100000 MHz", Name, s["switch_clock_mhz"])
	}
	if mhz > 0 {
		t.SwitchClockNs = 1000 / mhz
	}
	if err := t.Check(); err != nil {
		return nil, fmt.Errorf("%s: timing parameters: %w", Name, err)
	}
	if pl.Loads, err = parseLoads(s["loads"]); err != nil {
		return nil, fmt.Errorf("%s: parameter loads: %w", Name, err)
	}
	if pl.Bytes, err = param.Int(s["bytes"], 1, MaxPacket); err != nil {
		return nil, fmt.Errorf("%s: parameter bytes: %w", Name, err)
	}
	if pl.Reply, err = param.Int(s["reply"], 1, MaxPacket); err != nil {
		return nil, fmt.Errorf("%s: parameter reply: %w", Name, err)
	}
	if pl.SimMode, err = ParseMode(s["sim_mode"]); err != nil {
		return nil, fmt.Errorf("%s: parameter sim_mode: %w", Name, err)
	}
	if pl.CTSWindow, err = param.Int(s["cts_window"], 0, 1<<16); err != nil {
		return nil, fmt.Errorf("%s: parameter cts_window: %w", Name, err)
	}
	if pl.EgressBytes, err = param.Int(s["egress_bytes"], 0, 1<<30); err != nil {
		return nil, fmt.Errorf("%s: parameter egress_bytes: %w", Name, err)
	}
	if pl.BufferBytes, err = param.Int(s["buffer_bytes"], MaxCell, 1<<24); err != nil {
		return nil, fmt.Errorf("%s: parameter buffer_bytes: %w (at least one %d-byte cell)", Name, err, MaxCell)
	}
	for _, f := range []struct {
		key string
		dst *float64
	}{{"nonmin_weight", &pl.NonMinWeight}, {"nonmin_bias", &pl.NonMinBias}} {
		v, err := strconv.ParseFloat(strings.TrimSpace(s[f.key]), 64)
		if err != nil || math.IsNaN(v) || v < 0 || v > 1e9 {
			return nil, fmt.Errorf("%s: parameter %s: %q: want a number 0..1e9", Name, f.key, s[f.key])
		}
		*f.dst = v
	}
	if pl.Replicas, err = param.Int(s["replicas"], MinReplicas, MaxReplicas); err != nil {
		return nil, fmt.Errorf("%s: parameter replicas: %w", Name, err)
	}
	if pl.Measured, err = param.Int(s["measured"], MinMeasured, MaxSimPackets/MaxReplicas); err != nil {
		return nil, fmt.Errorf("%s: parameter measured: %w", Name, err)
	}
	if pl.Seed, err = strconv.ParseUint(strings.TrimSpace(s["seed"]), 10, 64); err != nil {
		return nil, fmt.Errorf("%s: parameter seed: %q is not an unsigned 64-bit number", Name, s["seed"])
	}
	return pl, nil
}

// Predict implements golden.Model.
func (m Model) Predict(set map[string]string) ([]results.Expectation, error) {
	pl, err := ParsePlan(set)
	if err != nil {
		return nil, err
	}
	var out []results.Expectation
	out = append(out, cellExpectations(pl)...)
	out = append(out, latencyExpectations(pl)...)
	re, err := routeExpectations(pl)
	if err != nil {
		return nil, err
	}
	out = append(out, re...)
	out = append(out, sizeExpectations(pl)...)
	se, err := simExpectations(pl)
	if err != nil {
		return nil, err
	}
	out = append(out, se...)
	rd, err := readExpectations(pl)
	if err != nil {
		return nil, err
	}
	out = append(out, rd...)
	budgets(out)
	return out, nil
}

func exact(metric string, p results.Params, v float64, unit, source, note string) results.Expectation {
	return results.Expectation{Metric: metric, Params: p, Value: v, Unit: unit, Source: source, Note: note}
}

func cellExpectations(pl *Plan) []results.Expectation {
	var out []results.Expectation
	gran := fmt.Sprintf("cells rounded up to %d B", pl.Align)
	for _, b := range pl.Packets {
		cells, _ := CellsAlign(b, pl.Align) // sizes checked by ParsePlan
		p := results.Params{"bytes": strconv.Itoa(b)}
		sizes := make([]string, len(cells))
		for i, c := range cells {
			sizes[i] = strconv.Itoa(c)
		}
		eff, _ := IPEfficiency(b, pl.Align)
		out = append(out,
			exact("tin.cell.count", p, float64(len(cells)), "cells", "Aquila §3.1, §3.3, §6",
				fmt.Sprintf("ceil(%d/152): 160-byte cells of an 8-byte header and 152 data bytes, the last holding the rest (min 16 B, %s)", b, gran)),
			results.Expectation{Metric: "tin.cell.sizes", Params: p, Text: strings.Join(sizes, ","), Unit: "bytes", Source: "Aquila §3.1, §3.3, §6",
				Note: "cell sizes in transmission order, header included; " + gran},
			exact("tin.cell.wire_bytes", p, float64(Sum(cells)), "bytes", "Aquila §3.1, §3.3", "bytes of the packet's data cells on a link, headers included"),
			results.Expectation{Metric: "tin.ip.efficiency", Params: p, Value: eff, AbsTol: 1e-9, Source: "Aquila §3.3, §6",
				Note: fmt.Sprintf("%d / (%d B of data cells + 16 B RTS + 16 B CTS)", b, Sum(cells))},
			exact("tin.rts.incast_reduction", p, IncastReduction(b), "x", "Aquila §3.3",
				fmt.Sprintf("%d-byte packet announced by a 16-byte RTS (§3.3: a factor of 64 for >1 KB packets)", b)),
		)
	}
	for _, r := range pl.Reads {
		cells, _ := RespCells(r, pl.Completion, pl.Align)
		out = append(out, exact("tin.rma.resp_cells", results.Params{"bytes": strconv.Itoa(r)}, float64(len(cells)), "cells", "Aquila §3.4",
			fmt.Sprintf("one Resp cell per %d-byte PCIe completion (completion size is the model's parameter; the paper gives none)", pl.Completion)))
	}
	return append(out,
		results.Expectation{Metric: "tin.cell.header_overhead", Value: HeaderOverhead(), AbsTol: 1e-9, Source: "Aquila §6",
			Note: "8-byte header of a 160-byte cell: \"approximately 5%\""},
		exact("tin.ip.solicitation_bytes", nil, Solicitation, "bytes", "Aquila §3.3", "one 16-byte RTS and one 16-byte CTS per IP packet"),
		exact("tin.rma.req_bytes", nil, ReqCell, "bytes", "Aquila §3.4", "1RMA read request cell, 3x the 16-byte CTS"),
		exact("tin.ip.half_round_trips", nil, 6, "", "Aquila §3.4", "RTS, CTS and data in each direction of an IP round trip"),
		exact("tin.rma.half_round_trips", nil, 2, "", "Aquila §3.4", "Req and Resp of a 1RMA read"),
	)
}

// latTol is the tolerance of a measured unloaded latency: one cycle of a
// 200 MHz pipeline on top of the paper's round figures.
const latTol = 5.0

func latencyExpectations(pl *Plan) []results.Expectation {
	t := pl.Timing
	out := []results.Expectation{
		{Metric: "tin.latency.fallthrough", Value: t.FallThroughNs, Unit: "ns", AbsTol: latTol, Source: "Aquila §3.1", Note: "core cell switch fall-through"},
		{Metric: "tin.latency.hop", Params: results.Params{"link": "local"}, Value: t.HopLatency(Local), Unit: "ns", AbsTol: latTol, Source: "Aquila §3.1",
			Note: fmt.Sprintf("total per-hop latency without FEC (%g ns) + %g ns flight", t.HopNs, t.LocalPropNs)},
		{Metric: "tin.latency.hop", Params: results.Params{"link": "global"}, Value: t.HopLatency(Global), Unit: "ns", AbsTol: latTol, Source: "Aquila §3.1, §3.2",
			Note: fmt.Sprintf("%g ns per hop + %g ns FEC + %g ns flight", t.HopNs, t.FECNs, t.GlobalPropNs)},
	}
	for _, k := range []LinkKind{Local, Global} {
		for _, c := range []int{ControlCell, ReqCell, MaxCell} {
			out = append(out, results.Expectation{Metric: "tin.latency.serialization", Params: results.Params{"link": k.String(), "cell": strconv.Itoa(c)},
				Value: t.Serialization(c, k), Unit: "ns", AbsTol: 1e-9, Source: "Aquila §3.1, §3.2",
				Note: fmt.Sprintf("%d B at %g Gb/s%s (§3.1: ~50 ns for 160 B on 25G links)", c, t.LinkGbps, map[bool]string{true: fmt.Sprintf(" less %g%% FEC", 100*t.FECOverhead)}[k == Global])})
		}
	}
	// Unloaded cell latency for every route shape of the routed pairs (all
	// pairs of a small Clique).
	shapes := map[[2]int]Path{}
	for _, pr := range pl.Pairs {
		s, d := pr[0].Node(), pr[1].Node()
		for _, p := range append(pl.Clique.minimal(s, d, 0), pl.Clique.nonMinimal(s, d, 0)...) {
			l, g := p.Count()
			if _, ok := shapes[[2]int{l, g}]; !ok {
				shapes[[2]int{l, g}] = p
			}
		}
	}
	keys := make([][2]int, 0, len(shapes))
	for k := range shapes {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return keys[i][1] < keys[j][1] || keys[i][1] == keys[j][1] && keys[i][0] < keys[j][0]
	})
	for _, k := range keys {
		for _, c := range []int{ControlCell, MaxCell} {
			out = append(out, results.Expectation{Metric: "tin.latency.cell",
				Params: results.Params{"local": strconv.Itoa(k[0]), "global": strconv.Itoa(k[1]), "cell": strconv.Itoa(c)},
				Value:  t.CellLatency(shapes[k], c), Unit: "ns", AbsTol: latTol + 0.02*t.CellLatency(shapes[k], c), Source: "Aquila §3.1, §3.2",
				Note: "unloaded, endpoint to endpoint, cut-through: 20 ns fall-through + head latency per hop + the slowest link's serialization once; ±(5 ns + 2%)"})
		}
	}
	return out
}

func routeExpectations(pl *Plan) ([]results.Expectation, error) {
	var out []results.Expectation
	for _, pr := range pl.Pairs {
		for _, mode := range pl.Modes {
			rs, err := pl.Clique.Routes(pr[0], pr[1], mode, pl.Class)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", Name, err)
			}
			all := rs.All()
			p := results.Params{"src": pr[0].String(), "dst": pr[1].String(), "mode": mode.String()}
			list := make([]string, 0, 6)
			for i, q := range all {
				if i == 6 {
					list = append(list, fmt.Sprintf("... %d routes in all", len(all)))
					break
				}
				list = append(list, q.String())
			}
			out = append(out, results.Expectation{Metric: "tin.route.in_set", Params: p, Value: 1, Unit: "fraction",
				Source: "Aquila §3.2",
				Note:   fmt.Sprintf("share of traced paths in the golden set (%d minimal, %d non-minimal): %s", len(rs.Minimal), len(rs.NonMinimal), strings.Join(list, " | "))})
			hi := float64(len(all))
			note := "distinct paths traced for the pair: at most the set's size"
			if rs.Hashed {
				hi, note = 1, "hashed mode: every cell of the pair takes the same path (§3.2)"
			}
			out = append(out, results.Expectation{Metric: "tin.route.distinct", Params: p, Value: hi, Unit: "paths",
				Min: results.Float(1), Max: results.Float(hi), Source: "Aquila §3.2", Note: note})
		}
	}
	if len(pl.Modes) > 0 && pl.Clique.Pods*pl.Clique.TiNs <= MaxPairNodes {
		// The golden's own routes must be deadlock-free before anything is
		// scored against them.
		if err := pl.Clique.CheckDeadlockFree(pl.Class); err != nil {
			return nil, fmt.Errorf("%s: %w", Name, err)
		}
		g, _ := pl.Clique.RouteGraph(pl.Class)
		out = append(out, exact("tin.route.vcs", results.Params{"clique": pl.Clique.Param()}, float64(g.MaxVC()-pl.Class*RoutingVCs+1), "VCs", "Aquila §3.2",
			"routing VCs the Clique's routes use: 3 with a non-minimal route through an intermediate pod, 2 in a 2-pod Clique"))
	}
	return out, nil
}

func sizeExpectations(pl *Plan) []results.Expectation {
	f := FullClique()
	full := results.Params{"clique": "full"}
	e := func(metric string, v float64, unit, src, note string) results.Expectation {
		return exact(metric, full, v, unit, src, note)
	}
	out := []results.Expectation{
		e("tin.clique.pods", float64(f.Pods), "pods", "Aquila §2, App. A", "\"12 TiNs in a pod with 48 pods\""),
		e("tin.clique.tins", float64(f.TiNs), "TiNs", "Aquila §4.2, §5.1", "48 × 12"),
		e("tin.clique.hosts", float64(f.Hosts), "hosts", "Aquila §2, §4.2", "two hosts per TiN: \"up to 1152 host machines\""),
		e("tin.clique.mgmt_cpus", float64(f.MgmtCPUs), "CPUs", "Aquila §4.2", "one management CPU per TiN"),
		e("tin.clique.racks", float64(f.Racks), "racks", "Aquila App. A", "two pods per rack"),
		e("tin.clique.local_links", float64(f.LocalLinks), "links", "Aquila §3.2", "576 TiNs × 24 local ports / 2"),
		e("tin.clique.global_links_per_pod_pair", float64(f.GlobalLinksPerPodPair), "links", "Aquila App. A", "floor(12 × 8 / 47): \"two optical GNet global links between any pod pair\""),
		e("tin.clique.pod_pairs", float64(f.PodPairs), "pairs", "Aquila App. A", "\"47 × 48 / 2 = 1128 unique interpod cables\""),
		e("tin.clique.global_links", float64(f.GlobalLinks), "links", "Aquila §3.2, App. A", "1128 pod pairs × 2"),
		e("tin.clique.unused_global_ports_per_pod", float64(f.UnusedGlobalPortsPerPod), "ports", "Aquila App. A", "96 optical ports per pod, 94 used"),
		e("tin.clique.fibre_bundles", float64(f.FibreBundles), "bundles", "Aquila App. A", "12 shuffle groups of 4 pods: C(12,2) = \"66 4-cable bundles\""),
		e("tin.clique.cables_per_bundle", float64(f.CablesPerBundle), "cables", "Aquila App. A", "16 pod pairs × 2 links / 8 links per MPO16 cable"),
		e("tin.clique.pod_pair_gbps", f.PodPairGbps, "Gb/s", "Aquila §5.1, §6", "\"2x25Gbps\", the minimal-path bandwidth between two pods"),
		{Metric: "tin.clique.ip_flows", Params: full, Value: float64(f.IPFlows), Unit: "flows", RelTol: 0.05, Source: "Aquila §4.2",
			Note: "(1152 hosts + 576 CPUs) × 2 address families × 576 TiNs = 1.99 M; §4.2: \"approximately 1.9 million\""},
		e("tin.clique.ip_flows_indexed", float64(f.IPFlowsIndexed), "flows", "Aquila §4.2", "the indexed group divides the IP flows \"by a factor of 576\""),
		{Metric: "tin.clique.gnet_flows_naive", Params: full, Value: float64(f.GNetFlowsNaive), Unit: "flows", RelTol: 0.05, Source: "Aquila §4.2",
			Note: "model's decomposition: 576 TiNs × 50 input ports × 3 routing VCs × 58 destinations (47 pods + 11 TiNs); §4.2: \"almost 5 million\""},
	}
	c := pl.Clique
	here := results.Params{"clique": c.Param()}
	return append(out,
		exact("tin.clique.pods", here, float64(c.Pods), "pods", "configured", "the Clique the routes are for"),
		exact("tin.clique.tins", here, float64(c.Pods*c.TiNs), "TiNs", "configured", "pods × TiNs per pod"),
		exact("tin.clique.local_links", here, float64(c.Pods*c.TiNs*(c.TiNs-1)/2), "links", "Aquila §3.2", "TiNs of a pod fully connected, one link per pair"),
		exact("tin.clique.global_links", here, float64(len(c.Globals)), "links", "Aquila §3.2", "global links of the configured wiring"),
	)
}

// simExpectations runs the reference simulation at every load and turns it
// into bands: see the package documentation, "Fabric RTT".
func simExpectations(pl *Plan) ([]results.Expectation, error) {
	if len(pl.Loads) == 0 {
		return nil, nil
	}
	base := SimConfig{Clique: pl.Clique, Timing: pl.Timing, Mode: pl.SimMode, Bytes: pl.Bytes, ReplyBytes: pl.Reply,
		Packets: pl.Measured, Shares: true, CTSWindow: pl.CTSWindow, EgressBytes: pl.EgressBytes,
		BufferBytes: pl.BufferBytes, NonMinWeight: pl.NonMinWeight, NonMinBias: pl.NonMinBias, Align: pl.Align, KeepSamples: true}
	var out []results.Expectation
	for _, load := range pl.Loads {
		var rtt, ow [][]float64
		for r := 0; r < pl.Replicas; r++ {
			cfg := base
			cfg.Load, cfg.Seed = load, pl.Seed+uint64(r)*0x632be59bd9b4e019
			// The paper gives no hash for the RTS and CTS routes: each run
			// draws its own (reading A26).
			cfg.HashSeed = mix(cfg.Seed ^ 0x2545f4914f6cdd1d)
			res, err := Simulate(cfg)
			if err != nil {
				return nil, fmt.Errorf("%s: simulation at load %g: %w", Name, load, err)
			}
			if res.Saturated {
				return nil, fmt.Errorf("%s: load %g saturates the %s Clique (%g Gb/s links, %g Gb/s injection): lower the loads", Name, load, pl.Clique.Param(), pl.Timing.LinkGbps, pl.Timing.InjectGbps)
			}
			rtt, ow = append(rtt, res.RTTSamples), append(ow, res.OneWaySamples)
		}
		ls := strconv.FormatFloat(load, 'g', -1, 64)
		for _, b := range []struct {
			metric string
			runs   [][]float64
		}{{"tin.fabric.rtt", rtt}, {"tin.fabric.latency", ow}} {
			for _, stat := range []string{"mean", "p99"} {
				out = append(out, band(b.metric, stat, results.Params{"load": ls, "bytes": strconv.Itoa(pl.Bytes), "stat": stat}, b.runs, pl))
			}
		}
	}
	return out, nil
}

// Error budget of a measured fabric latency besides the run's own
// sampling spread: the design's timestamps count 5 ns cycles, and its
// clock may be off by 100 ppm.
const (
	timestampQuantumNs = 5.0
	clockPPM           = 100e-6
)

// band turns the golden runs into the band a measurement of pl.Measured
// requests must fall in. Each run is one such measurement, made as the
// test makes it: every TiN sends its share from an idle fabric, with its
// own traffic and its own RTS/CTS route hash (reading A26). The golden
// value is the statistic's mean over the runs; the band is three standard
// deviations of the statistic between runs (widened by √(1+1/R) for the
// golden value's own error over R runs), plus the timestamp quantum and
// the clock's ppm. The band holds no allowance for a model that differs
// from the design: golden is the paper's fabric.
func band(metric, stat string, p results.Params, runs [][]float64, pl *Plan) results.Expectation {
	var vals []float64
	for _, v := range runs {
		vals = append(vals, statOf(stat, v))
	}
	m, sd := meanSD(vals)
	spread := 3 * sd * math.Sqrt(1+1/float64(len(vals)))
	half := spread + timestampQuantumNs + clockPPM*m
	what := map[string]string{"tin.fabric.rtt": "request RTS in to reply delivered", "tin.fabric.latency": "request RTS in to in-order delivery"}[metric]
	e := results.Expectation{Metric: metric, Params: p, Value: m, Unit: "ns", Min: results.Float(m - half), Max: results.Float(m + half),
		Source: "Aquila §3.1-§3.3, §5.1 (reference simulation)",
		Note: fmt.Sprintf("%s, UR Poisson over the %s Clique, %d-byte requests, %d-byte replies, %s data cells, egress buffer by §3.3, %d-byte VC FIFOs; the mean of %d runs of %d requests",
			what, pl.Clique.Param(), pl.Bytes, pl.Reply, pl.SimMode, pl.BufferBytes, len(runs), pl.Measured),
		Budget: fmt.Sprintf("±%.0f ns: 3 sd of the %s between %d golden runs of %d requests, the measurement's length, each TiN its share from an idle fabric, each run its own RTS/CTS route hash (%.0f ns with the golden mean's own error), timestamp quantum %g ns, clock %g ppm (%.1f ns)",
			half, stat, len(runs), pl.Measured, spread, timestampQuantumNs, clockPPM*1e6, clockPPM*m)}
	if half > results.WideBand*m {
		e.Wide = fmt.Sprintf("the %s of %d requests spreads by ±%.0f%% between runs of that length: the measurement's own sampling error (measure more requests to narrow it)", stat, pl.Measured, 100*spread/m)
	}
	return e
}

func statOf(stat string, v []float64) float64 {
	if stat == "p99" {
		return summarize(v).P99
	}
	m, _ := meanSD(v)
	return m
}

// budgets fills the budget of the expectations that are exact or whose
// width is the paper's rounding, and the reason of the wide ones.
func budgets(es []results.Expectation) {
	for i := range es {
		e := &es[i]
		if e.Budget != "" {
			continue
		}
		switch e.Metric {
		case "tin.latency.fallthrough", "tin.latency.hop":
			e.Budget = fmt.Sprintf("±%g ns: one cycle of the design's 200 MHz timestamp clock on the paper's round figure", latTol)
			if e.NeedsReason() {
				e.Wide = "one timestamp cycle is more than 10% of a 20 or 40 ns figure: the measurement cannot resolve less"
			}
		case "tin.latency.cell":
			e.Budget = fmt.Sprintf("±(%g ns + 2%%): the timestamp cycle, and the paper's round per-hop figures along the route", latTol)
			if e.NeedsReason() {
				e.Wide = "one timestamp cycle is more than 10% of a cell that stays in its TiN"
			}
		case "tin.clique.ip_flows":
			e.Budget = "±5%: §4.2 rounds the product's 1.99 M to \"approximately 1.9 million\""
		case "tin.clique.gnet_flows_naive":
			e.Budget = "±5%: §4.2's \"almost 5 million\" is rounded, the decomposition is the model's"
		case "tin.route.distinct":
			e.Budget = "1 to the route set's size (a hashed mode: exactly 1)"
			if e.NeedsReason() {
				e.Wide = "how many of the set's paths a run traces depends on its length and load; the bound catches more paths than the set holds"
			}
		default:
			e.Budget = "exact: the paper's sizes and counts, integer arithmetic"
		}
	}
}

func meanSD(v []float64) (float64, float64) {
	if len(v) == 0 {
		return 0, 0
	}
	s := 0.0
	for _, x := range v {
		s += x
	}
	m := s / float64(len(v))
	if len(v) == 1 {
		return m, 0
	}
	ss := 0.0
	for _, x := range v {
		ss += (x - m) * (x - m)
	}
	return m, math.Sqrt(ss / float64(len(v)-1))
}

func pairs(s map[string]string, c *Clique) ([][2]Addr, error) {
	srcS, hasSrc := s["src"]
	dstS, hasDst := s["dst"]
	if hasSrc != hasDst {
		return nil, fmt.Errorf("%s: parameters src and dst go together; omit both for every pair of TiNs", Name)
	}
	if hasSrc {
		src, err := ParseAddr(srcS)
		if err != nil {
			return nil, fmt.Errorf("%s: parameter src: %w", Name, err)
		}
		dst, err := ParseAddr(dstS)
		if err != nil {
			return nil, fmt.Errorf("%s: parameter dst: %w", Name, err)
		}
		for _, a := range []Addr{src, dst} {
			if !c.Contains(a.Node()) {
				return nil, fmt.Errorf("%s: address %s is outside the %s Clique", Name, a, c.Param())
			}
		}
		return [][2]Addr{{src, dst}}, nil
	}
	nodes := c.Nodes()
	if len(nodes) > MaxPairNodes {
		return nil, fmt.Errorf("%s: the %s Clique has %d TiNs, more than %d for listing every pair; set src and dst", Name, c.Param(), len(nodes), MaxPairNodes)
	}
	var out [][2]Addr
	for _, a := range nodes {
		for _, b := range nodes {
			out = append(out, [2]Addr{{a.Pod, a.TiN, 0}, {b.Pod, b.TiN, 0}})
		}
	}
	return out, nil
}

// parseShape reads "PxT" (pods x TiNs per pod).
func parseShape(s string) (int, int, error) {
	a, b, ok := strings.Cut(strings.ToLower(strings.TrimSpace(s)), "x")
	if !ok {
		return 0, 0, fmt.Errorf("%q: want pods x TiNs, e.g. 2x4", s)
	}
	p, err := param.Int(a, 1, MaxPods)
	if err != nil {
		return 0, 0, fmt.Errorf("%q, pods: %w", s, err)
	}
	t, err := param.Int(b, 1, MaxTiNs)
	if err != nil {
		return 0, 0, fmt.Errorf("%q, TiNs per pod: %w", s, err)
	}
	return p, t, nil
}

func parseLoads(s string) ([]float64, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []float64
	seen := map[string]bool{}
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		v, err := strconv.ParseFloat(f, 64)
		if err != nil || math.IsNaN(v) || v < 0.01 || v > 1 {
			return nil, fmt.Errorf("%q: want a fraction of the injection rate, 0.01..1", f)
		}
		k := strconv.FormatFloat(v, 'g', -1, 64)
		if seen[k] {
			return nil, fmt.Errorf("load %s is listed twice", k)
		}
		seen[k] = true
		out = append(out, v)
	}
	return out, nil
}

func parseModes(s string) ([]Mode, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []Mode
	seen := map[Mode]bool{}
	for _, f := range strings.Split(s, ",") {
		m, err := ParseMode(f)
		if err != nil {
			return nil, err
		}
		if seen[m] {
			return nil, fmt.Errorf("mode %s is listed twice", m)
		}
		seen[m] = true
		out = append(out, m)
	}
	return out, nil
}
