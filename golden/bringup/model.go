package bringup

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/labrunner/labrunner/golden"
	"github.com/labrunner/labrunner/golden/param"
	"github.com/labrunner/labrunner/results"
)

// Name is the model's name in the registry.
const Name = "bringup"

// DefaultDCN are the DCN-connected boards of the default topology, the
// small Clique: TiN 1 and TiN 3 of the first pod, as in Aquila Fig. 6
// (p0t0 and p0t2 in golden/tin's 0-based names).
var DefaultDCN = []string{"p0t0", "p0t2"}

func init() { golden.Register(Model{}) }

// Model is the bring-up golden model as a golden.Model.
type Model struct{}

// Name implements golden.Model.
func (Model) Name() string { return Name }

// Doc implements golden.Model.
func (Model) Doc() string {
	return "Rack bring-up (Aquila NSDI 2022 §3.1, §3.5, §4.4, App. B; Shoal NSDI 2019 §3.4): in-band bootstrap " +
		"waves breadth-first from the DCN boards with acceptable proxies, dead boards and dying proxies; PMOS " +
		"bootstrap time per board, wave and rack from the MOS rate and configuration size; TimeSync tree, per-board " +
		"offset bands by depth, link delays, convergence, failure detection and re-rooting; Shoal guard band and " +
		"slot size. Metrics under bringup.* (see the package doc of golden/bringup)."
}

// Params implements golden.Model.
func (Model) Params() []golden.Param {
	return []golden.Param{
		// Topology.
		{Name: "clique", Default: "2x4", Doc: "PODSxBOARDS Dragonfly to use when links is empty (boards p<pod>t<tin>, Aquila §3.2)"},
		{Name: "global_ports", Default: "1", Doc: "global ports per board of the clique (Aquila §3.1: up to 8)"},
		{Name: "boards", Doc: "boards in lab order, comma-separated (boards only in links or dcn are added after them)"},
		{Name: "links", Doc: "cables END=END[/latency_ns[/asymmetry_ns[/mos_loss]]], END = board or board:port; asymmetry adds to B->A (lab file convention)"},
		{Name: "dcn", Doc: "DCN-connected boards, the runner reaches them directly (default with clique: " + strings.Join(DefaultDCN, ",") + ", Aquila Fig. 6)"},
		{Name: "dead", Doc: "boards that never answer"},
		{Name: "proxy_dies", Doc: "boards that bootstrap, then die when they first relay for a target"},
		// PMOS timing.
		{Name: "mos_rate", Default: "1000000", Doc: "MOS words per second per link direction (the lab's; the paper gives none)"},
		{Name: "pmos_payload", Default: "48", Doc: "PMOS data bytes per frame, at most"},
		{Name: "pmos_overhead", Default: "8", Doc: "PMOS framing bytes per frame (header, length, sequence, CRC)"},
		{Name: "pmos_ack", Default: "8", Doc: "bytes of a PMOS acknowledgement frame"},
		{Name: "window", Default: "4", Doc: "PMOS frames in flight, at most"},
		{Name: "mos_loss", Default: "0", Doc: "probability a MOS word is lost or corrupted (a cable's own in links overrides)"},
		{Name: "rto_us", Default: "0", Doc: "PMOS retransmission timeout, µs (0: four round trips of a full frame)"},
		{Name: "retries", Default: "8", Doc: "PMOS retransmissions of one frame before the sender gives up"},
		{Name: "proc_us", Default: "0", Doc: "receiver time from a frame's last word to its ack, µs"},
		{Name: "config_bytes", Default: "16384", Doc: "bytes a target receives over PMOS (DHCP-like exchange, configuration, routing tables)"},
		{Name: "overhead_ms", Default: "0", Doc: "fixed time per in-band board outside PMOS, ms (adds to estimate and upper bound)"},
		{Name: "dcn_ms", Default: "0", Doc: "time a DCN board takes, ms (0: times count from the DCN boards being configured)"},
		{Name: "proxy_fail_ms", Default: "auto", Doc: "time the runner takes to give up on a dead proxy, ms (auto: retries+1 timeouts)"},
		{Name: "goodput_bytes", Default: "65536", Doc: "transfer size of the PMOS goodput figure, bytes (empty: none)"},
		// TimeSync.
		{Name: "primary", Doc: "primary clock candidates in order (default: the DCN boards, then every board in order)"},
		{Name: "interval_us", Default: "100", Doc: "TimeSync interval, µs (Aquila App. B.2: about 100 µs)"},
		{Name: "wait_ns", Default: "128", Doc: "longest wait for a gap between cells, ns (App. B.2: 128 ns)"},
		{Name: "tx_err_ns", Default: "2.5", Doc: "error of the carried transmission time, ns (App. B.2: ±2.5 ns)"},
		{Name: "meas_err_ns", Default: "2.5", Doc: "error of the link-delay measurement and on-chip compensation per hop, ns (assumed)"},
		{Name: "asym_max_ns", Default: "0", Doc: "largest undeclared cable asymmetry, ns (costs half per hop)"},
		{Name: "drift_ppm", Default: "100", Doc: "oscillator error bound of boards without clock_ppm, ppm (assumed: Ethernet's ±100)"},
		{Name: "clock_ppm", Doc: "declared oscillator errors board=ppm,... (the lab's emulated clocks)"},
		{Name: "chip_ns", Default: "0", Doc: "on-chip flight from the clock to the wire beyond the wait, ns"},
		{Name: "phy_ns", Default: "0", Doc: "PHY latency per direction the latency measurement includes, ns"},
		{Name: "read_err_ns", Default: "0", Doc: "error of the runner's reading of an offset, ns (widens every band)"},
		{Name: "invalid_count", Default: "3", Doc: "invalid or missing TimeSync messages in a row before a client signals failure"},
		{Name: "valid_threshold_ns", Default: "500", Doc: "validity threshold between a message's time and the client's, ns"},
		{Name: "ts_fail", Doc: "boards and cables (a=b, a:p=b:q) that fail after calibration: detection and re-rooting"},
		// Shoal.
		{Name: "shoal", Doc: "Shoal slot arithmetic: prototype (§6.1) or rack (§7.1); empty: none"},
		{Name: "shoal_precision_ns", Doc: "calibrated synchronisation precision, ns (default: the preset's, §3.4/§6.1)"},
		{Name: "shoal_reconfig_ns", Doc: "switch reconfiguration delay, ns (prototype 6.4, rack 2.5; §4.1)"},
		{Name: "shoal_prop_var_ns", Doc: "propagation variability, ns (prototype 0, rack 0.2; §3.4, §6.1)"},
		{Name: "shoal_cycle_ns", Doc: "clock of a design that counts slots in cycles, ns (prototype 6.4; rack 0)"},
		{Name: "shoal_quantum_ns", Doc: "step of slot sizes set in ns (rack 0.25)"},
		{Name: "shoal_mac_ns", Doc: "per-slot MAC overhead, ns (prototype 19.2 = 24 B, §6.1; rack 0)"},
		{Name: "shoal_cell_bytes", Doc: "cell size, bytes (64, §6.1, §7.1)"},
		{Name: "shoal_channel_gbps", Doc: "channel rate, Gb/s (prototype 10, rack 25)"},
		{Name: "shoal_target", Doc: "guard band overhead aimed at (0.1, §6.1, §7.1)"},
		{Name: "shoal_guard_ns", Doc: "the guard band the design is configured with, ns (default: the preset's, 6.4 or 2.75)"},
	}
}

// scenario is Predict's parsed settings.
type scenario struct {
	top       Topology
	faults    Faults
	timing    Timing
	goodput   int
	sync      Sync
	ppm       map[string]float64
	primaries []string
	tsFail    Failure
	shoal     *Slotting
	guardNS   float64
}

// Predict implements golden.Model.
func (m Model) Predict(set map[string]string) ([]results.Expectation, error) {
	s, err := golden.Settings(Name, m.Params(), set)
	if err != nil {
		return nil, err
	}
	sc, err := parseScenario(s, set)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	out, err := sc.predict()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	return out, nil
}

func parseScenario(s, raw map[string]string) (*scenario, error) {
	sc := &scenario{}
	var err error
	if sc.top, err = parseTopology(s, raw); err != nil {
		return nil, err
	}
	if sc.faults.Dead, err = ParseBoards(s["dead"]); err != nil {
		return nil, fmt.Errorf("parameter dead: %w", err)
	}
	if sc.faults.ProxyDies, err = ParseBoards(s["proxy_dies"]); err != nil {
		return nil, fmt.Errorf("parameter proxy_dies: %w", err)
	}
	p := &sc.timing.PMOS
	floats := []struct {
		name   string
		dst    *float64
		lo, hi float64
	}{
		{"mos_rate", &p.MOSRate, 1e-9, 1e12}, {"mos_loss", &p.Loss, 0, 0.999999}, {"rto_us", &p.RTOUS, 0, 1e9},
		{"proc_us", &p.ProcUS, 0, 1e9}, {"overhead_ms", &sc.timing.OverheadMS, 0, 1e9}, {"dcn_ms", &sc.timing.DCNMS, 0, 1e9},
		{"interval_us", &sc.sync.IntervalUS, 1e-6, 1e9}, {"wait_ns", &sc.sync.WaitNS, 0, 1e9}, {"tx_err_ns", &sc.sync.TxErrNS, 0, 1e9},
		{"meas_err_ns", &sc.sync.MeasErrNS, 0, 1e9}, {"asym_max_ns", &sc.sync.AsymMaxNS, 0, 2 * MaxLinkNS},
		{"drift_ppm", &sc.sync.DriftPPM, 0, MaxPPM}, {"chip_ns", &sc.sync.ChipNS, 0, 1e9}, {"phy_ns", &sc.sync.PhyNS, 0, 1e9},
		{"read_err_ns", &sc.sync.ReadErrNS, 0, 1e9}, {"valid_threshold_ns", &sc.sync.ValidThresholdNS, 0, 1e12},
	}
	for _, f := range floats {
		if *f.dst, err = param.Float(s[f.name], f.lo, f.hi); err != nil {
			return nil, fmt.Errorf("parameter %s: %w", f.name, err)
		}
	}
	ints := []struct {
		name   string
		dst    *int
		lo, hi int
	}{
		{"pmos_payload", &p.Payload, 1, 65535}, {"pmos_overhead", &p.Overhead, 0, 1024}, {"pmos_ack", &p.AckBytes, 1, 1024},
		{"window", &p.Window, 1, 1 << 16}, {"retries", &p.Retries, 0, 1000}, {"config_bytes", &sc.timing.ConfigBytes, 0, MaxTransferBytes},
		{"invalid_count", &sc.sync.InvalidCount, 1, 1000000},
	}
	for _, f := range ints {
		if *f.dst, err = param.Int(s[f.name], f.lo, f.hi); err != nil {
			return nil, fmt.Errorf("parameter %s: %w", f.name, err)
		}
	}
	sc.timing.ProxyFailMS = -1
	if v := strings.TrimSpace(s["proxy_fail_ms"]); v != "auto" {
		if sc.timing.ProxyFailMS, err = param.Float(v, 0, 1e9); err != nil {
			return nil, fmt.Errorf("parameter proxy_fail_ms: %w (or auto)", err)
		}
	}
	if strings.TrimSpace(s["goodput_bytes"]) != "" {
		if sc.goodput, err = param.Int(s["goodput_bytes"], 1, MaxTransferBytes); err != nil {
			return nil, fmt.Errorf("parameter goodput_bytes: %w", err)
		}
	}
	if sc.ppm, err = ParsePPM(s["clock_ppm"]); err != nil {
		return nil, fmt.Errorf("parameter clock_ppm: %w", err)
	}
	if sc.primaries, err = ParseBoards(s["primary"]); err != nil {
		return nil, fmt.Errorf("parameter primary: %w", err)
	}
	// The primary candidates in order (reading M2, Aquila Appendix B): the
	// caller's (the runner gives the primary it chose first), else the DCN
	// boards, then every board.
	if len(sc.primaries) == 0 {
		sc.primaries = append(sc.primaries, sc.top.DCN...)
		for _, b := range sc.top.Boards {
			if !contains(sc.primaries, b) {
				sc.primaries = append(sc.primaries, b)
			}
		}
	}
	if sc.tsFail, err = ParseFailure(s["ts_fail"]); err != nil {
		return nil, fmt.Errorf("parameter ts_fail: %w", err)
	}
	if err := parseShoal(sc, s); err != nil {
		return nil, err
	}
	return sc, nil
}

// parseTopology builds the topology from links (with boards and dcn) or
// from the clique shorthand.
func parseTopology(s, raw map[string]string) (Topology, error) {
	var top Topology
	extra, err := ParseBoards(s["boards"])
	if err != nil {
		return top, fmt.Errorf("parameter boards: %w", err)
	}
	links, err := ParseLinks(s["links"])
	if err != nil {
		return top, fmt.Errorf("parameter links: %w", err)
	}
	dcn, err := ParseBoards(s["dcn"])
	if err != nil {
		return top, fmt.Errorf("parameter dcn: %w", err)
	}
	_, cliqueSet := raw["clique"]
	_, globalSet := raw["global_ports"]
	if len(links) > 0 || len(extra) > 0 {
		if cliqueSet || globalSet {
			return top, fmt.Errorf("parameters clique/global_ports and boards/links describe the topology two ways; give one")
		}
		if len(dcn) == 0 {
			return top, fmt.Errorf("parameter dcn: no DCN board given; name the boards the runner reaches directly")
		}
		seen := map[string]bool{}
		add := func(b string) {
			if !seen[b] {
				seen[b] = true
				top.Boards = append(top.Boards, b)
			}
		}
		for _, b := range extra {
			add(b)
		}
		for _, l := range links {
			add(l.A)
			add(l.B)
		}
		for _, b := range dcn {
			add(b)
		}
		if len(top.Boards) > MaxBoards {
			return top, fmt.Errorf("%d boards, more than %d", len(top.Boards), MaxBoards)
		}
		top.Links, top.DCN = links, dcn
		return top, nil
	}
	pods, tins, err := ParseClique(s["clique"])
	if err != nil {
		return top, fmt.Errorf("parameter clique: %w", err)
	}
	g, err := param.Int(s["global_ports"], 0, 8)
	if err != nil {
		return top, fmt.Errorf("parameter global_ports: %w", err)
	}
	if top, err = Clique(pods, tins, g); err != nil {
		return top, fmt.Errorf("parameter clique: %w", err)
	}
	top.DCN = dcn
	if len(dcn) == 0 {
		for _, b := range DefaultDCN {
			if contains(top.Boards, b) {
				top.DCN = append(top.DCN, b)
			}
		}
		if len(top.DCN) == 0 {
			top.DCN = top.Boards[:1]
		}
	}
	return top, nil
}

func parseShoal(sc *scenario, s map[string]string) error {
	var sl Slotting
	switch strings.TrimSpace(s["shoal"]) {
	case "":
		for _, p := range (Model{}).Params() {
			if strings.HasPrefix(p.Name, "shoal_") && s[p.Name] != "" {
				return fmt.Errorf("parameter %s needs shoal=prototype or shoal=rack", p.Name)
			}
		}
		return nil
	case "prototype":
		sl = ShoalPrototype()
	case "rack":
		sl = ShoalRack()
	default:
		return fmt.Errorf("parameter shoal: %q is not a configuration (prototype, rack)", s["shoal"])
	}
	paper, err := sl.Plan()
	if err != nil {
		return fmt.Errorf("shoal preset: %w", err)
	}
	sc.guardNS = paper.GuardNS
	for _, f := range []struct {
		name   string
		dst    *float64
		lo, hi float64
	}{
		{"shoal_precision_ns", &sl.PrecisionNS, 0, 1e9}, {"shoal_reconfig_ns", &sl.ReconfigNS, 0, 1e9},
		{"shoal_prop_var_ns", &sl.PropVarNS, 0, 1e9}, {"shoal_cycle_ns", &sl.CycleNS, 0, 1e9},
		{"shoal_quantum_ns", &sl.QuantumNS, 0, 1e9}, {"shoal_mac_ns", &sl.MACNS, 0, 1e9},
		{"shoal_channel_gbps", &sl.ChannelGbps, 1e-9, 1e5}, {"shoal_target", &sl.Target, 1e-9, 0.999999},
		{"shoal_guard_ns", &sc.guardNS, 1e-9, 1e9},
	} {
		if strings.TrimSpace(s[f.name]) == "" {
			continue
		}
		if *f.dst, err = param.Float(s[f.name], f.lo, f.hi); err != nil {
			return fmt.Errorf("parameter %s: %w", f.name, err)
		}
	}
	if strings.TrimSpace(s["shoal_cell_bytes"]) != "" {
		if sl.CellBytes, err = param.Int(s["shoal_cell_bytes"], 1, 1<<20); err != nil {
			return fmt.Errorf("parameter shoal_cell_bytes: %w", err)
		}
	}
	sc.shoal = &sl
	return nil
}

// Sources of the figures.
const (
	srcWaves  = "Aquila §4.4: bootstrap in waves, breadth-first from the DCN-connected boards; any bootstrapped neighbour in the previous wave can proxy"
	srcTime   = "Aquila §3.5 (MOS: 6 data bytes per 64-bit word), §4.4 (waves overlap); PMOS cost model of golden/bringup (lab's PMOS figures)"
	srcPMOS   = "Aquila §3.5: MOS carries 6 bytes per 64-bit word; PMOS framing and window are the lab's"
	srcTree   = "Aquila App. B.2: software sets up the time-distribution tree; each client receives on one port"
	srcOffset = "Aquila App. B.2: ±2.5 ns carried time, ≤128 ns wait counted in, link delay from the round trip, update forwarded at once, about 100 µs interval"
	srcDetect = "Aquila App. B.2: a client signals failure after enough invalid messages; software then re-roots"
	srcShoal  = "Shoal §3.4 (guard = reconfiguration + propagation variability + precision), §6.1, §7.1 (slot for about 10% overhead)"
)

func exact(metric string, p results.Params, v float64, unit, src, note string) results.Expectation {
	e := results.Expectation{Metric: metric, Params: p, Value: v, Unit: unit, Source: src, Note: note,
		Budget: "exact: a count, a choice or arithmetic from the lab's topology and the declared figures; float rounding only"}
	if v != math.Trunc(v) {
		e.RelTol = 1e-9
	}
	return e
}

// band is an expectation between an Estimate's bounds; budget says what
// the width is made of and wide, when the band is wider than ±10% or
// one-sided, why.
func band(metric string, p results.Params, e Estimate, unit, src, note, budget, wide string) results.Expectation {
	x := results.Expectation{Metric: metric, Params: p, Value: e.Value, Min: results.Float(e.Min), Max: results.Float(e.Max),
		Unit: unit, Source: src, Note: note, Budget: budget}
	if x.NeedsReason() {
		x.Wide = wide
	}
	return x
}

func text(metric string, p results.Params, t, src, note string) results.Expectation {
	return results.Expectation{Metric: metric, Params: p, Text: t, Source: src, Note: note, Budget: "exact"}
}

// Budgets of the bands, each with the figures it is made of.
const (
	budgetPMOS = "PMOS cost model: lower end, no MOS word lost and a window that never stalls (every word at the MOS rate, one ack); upper end, the no-loss time plus the retransmissions the declared loss rate exceeds only with the tail probability, each costing its frame and a whole timeout; 0 loss declared makes the band a point"
	widePMOS   = "a lossy MOS channel retransmits a random number of frames, each costing up to a whole timeout of idle link: the band spans no loss to the tail of that count"
)

func (sc *scenario) predict() ([]results.Expectation, error) {
	plan, err := Bootstrap(sc.top, sc.faults)
	if err != nil {
		return nil, err
	}
	var out []results.Expectation
	add := func(e ...results.Expectation) { out = append(out, e...) }

	// Waves and proxies.
	add(exact("bringup.waves", nil, float64(plan.WaveCount()), "waves", srcWaves,
		"wave 0 (DCN boards) included: highest wave + 1"))
	for w, members := range plan.Waves {
		add(exact("bringup.wave.size", results.Params{"wave": strconv.Itoa(w)}, float64(len(members)), "boards", srcWaves, strings.Join(members, ",")))
	}
	for _, st := range []Status{OK, Died, Failed, Unreachable} {
		add(exact("bringup.boards", results.Params{"status": string(st)}, float64(plan.Count(st)), "boards", srcWaves, ""))
	}
	for _, b := range plan.Boards {
		add(text("bringup.status", results.Params{"board": b.Board}, string(b.Status), srcWaves, b.Why))
		if b.Wave < 0 {
			continue
		}
		note := "DCN-connected"
		if b.Wave > 0 {
			note = "acceptable proxies: " + strings.Join(b.Proxies, ",")
		}
		add(exact("bringup.wave", results.Params{"board": b.Board}, float64(b.Wave), "wave", srcWaves, note))
		for _, q := range b.Proxies {
			add(exact("bringup.proxy", results.Params{"board": b.Board, "proxy": q}, 1, "", srcWaves,
				fmt.Sprintf("%s may bootstrap %s (wave %d); a proxy without an expectation here is not acceptable", q, b.Board, b.Wave)))
		}
	}

	// Timing.
	sched, err := plan.Schedule(sc.timing)
	if err != nil {
		return nil, err
	}
	for _, bt := range sched.Boards {
		if bt.Wave == 0 {
			continue
		}
		note := fmt.Sprintf("%d B in %d PMOS frames, %d MOS words; %.3g retransmissions expected, %.3g at most",
			bt.Transfer.Bytes, bt.Transfer.Frames, bt.Transfer.Words, bt.Transfer.ExpectedRetransmissions, bt.Transfer.MaxRetransmissions)
		if bt.Transfer.AbandonProbability > 1e-3 {
			note += fmt.Sprintf("; PMOS gives up on the cable with probability %.3g (a clear failure is then correct)", bt.Transfer.AbandonProbability)
		}
		add(band("bringup.board_ms", results.Params{"board": bt.Board}, bt.Duration, "ms", srcTime, note, budgetPMOS, widePMOS))
	}
	for w, e := range sched.Waves {
		if w == 0 {
			continue
		}
		add(band("bringup.wave_ms", results.Params{"wave": strconv.Itoa(w)}, e, "ms", srcTime,
			"from the start of the bootstrap until the wave's last board is done (waves overlap)", budgetPMOS+"; summed over the boards and waves before it", widePMOS))
	}
	add(band("bringup.time_ms", nil, sched.Total, "ms", srcTime, "from the start of the bootstrap until the last board is done", budgetPMOS+"; summed over every wave", widePMOS))

	// PMOS.
	pm := sc.timing.PMOS
	add(exact("bringup.pmos.frame_words", nil, float64(pm.words(pm.Payload)), "words", srcPMOS,
		fmt.Sprintf("%d payload + %d framing bytes in 6-byte MOS words", pm.Payload, pm.Overhead)))
	add(exact("bringup.pmos.efficiency", nil, pm.FramingEfficiency(), "", srcPMOS, "payload share of a full frame's MOS data bytes"))
	if sc.goodput > 0 {
		gp, err := pm.GoodputFraction(sc.goodput, 0, -1)
		if err != nil {
			return nil, err
		}
		add(band("bringup.pmos.goodput", results.Params{"bytes": strconv.Itoa(sc.goodput)}, gp, "", srcPMOS,
			fmt.Sprintf("payload rate over 6 B × %g words/s at MOS loss %g", pm.MOSRate, pm.Loss), budgetPMOS+" (as a rate: the bounds swap)", widePMOS))
		tr, err := pm.Transfer(sc.goodput, 0, -1)
		if err != nil {
			return nil, err
		}
		add(exact("bringup.pmos.abandon_probability", results.Params{"bytes": strconv.Itoa(sc.goodput)}, tr.AbandonProbability, "", srcPMOS,
			fmt.Sprintf("chance a frame fails %d times in a row (information, not measured)", pm.Retries+1)))
	}

	// TimeSync.
	tree, err := TimeTree(sc.top, plan.Live(), sc.primaries, sc.sync, sc.ppm, Failure{})
	if err != nil {
		return nil, err
	}
	g := tree.g
	linkMax := g.maxLinkNS()
	out = append(out, sc.treeExpectations("bringup.timesync", tree)...)
	// A client's offset is its own largest correction, held to its band
	// (offset_ns); the sum of the corrections along its path only to this
	// looser bound (reading M1, Aquila Appendix B).
	for d := 1; d <= tree.Depth; d++ {
		b, err := sc.sync.OffsetBoundNS(d, linkMax)
		if err != nil {
			return nil, err
		}
		add(exact("bringup.timesync.offset_bound_ns", results.Params{"depth": strconv.Itoa(d)}, b, "ns", srcOffset,
			fmt.Sprintf("oscillators within ±%g ppm, cables up to %g ns, no declared asymmetry", sc.sync.DriftPPM, linkMax)))
	}
	live := map[string]bool{}
	for _, b := range plan.Live() {
		live[b] = true
	}
	for _, l := range sc.top.Links {
		if l.LatencyNS <= 0 || !live[l.A] || !live[l.B] {
			continue
		}
		v := sc.sync.MeasuredDelayNS(l)
		le := results.Expectation{Metric: "bringup.timesync.link_delay_ns", Params: results.Params{"link": l.Name()}, Value: v,
			AbsTol: sc.sync.MeasErrNS, Unit: "ns", Source: "Aquila App. B.2: round-trip delay measurement in latency-measurement mode",
			Note:   "half the round trip: latency + asymmetry/2 + PHY",
			Budget: fmt.Sprintf("the round-trip measurement's error, ±%g ns (App. B.2: the carried time is exact to ±2.5 ns)", sc.sync.MeasErrNS)}
		if le.NeedsReason() {
			le.Wide = fmt.Sprintf("a short cable: the measurement's absolute error, ±%g ns, is more than 10%% of a %.3g ns delay", sc.sync.MeasErrNS, v)
		}
		add(le)
	}
	if tree.Primary != "" {
		add(band("bringup.timesync.converge_us", nil, sc.sync.ConvergeUS(tree.Depth, linkMax), "µs", srcOffset,
			"from the primary starting TimeSync to every client holding a valid time",
			fmt.Sprintf("the primary's first message goes out anywhere within its first interval (%g µs, +%g ppm), then crosses %d hops within a wait, the chip, the cable and the PHY each", sc.sync.IntervalUS, sc.sync.DriftPPM, tree.Depth),
			"the primary's first message can leave at any moment of its first interval (App. B.2: about 100 µs), so the convergence time is spread over a whole interval"))
	}
	for _, n := range tree.Nodes {
		if n.State == Invalid {
			add(band("bringup.timesync.drift_detect_us", results.Params{"board": n.Board}, sc.sync.DriftDetectUS(n.Depth, linkMax), "µs", srcDetect,
				"from its first update to its failure signal: "+n.Why,
				fmt.Sprintf("%d invalid messages, one an interval (%g µs, +%g ppm), the first up to an interval after the update; a wait, the chip, the cable and the PHY per hop of jitter", sc.sync.InvalidCount, sc.sync.IntervalUS, sc.sync.DriftPPM),
				"the first invalid message comes up to an interval after the update that set the clock: the band spans that interval"))
		}
	}

	// Failure after calibration: detection and re-rooting.
	if !sc.tsFail.empty() {
		det, err := tree.Detects(sc.tsFail)
		if err != nil {
			return nil, err
		}
		for _, n := range tree.Nodes {
			d, ok := det[n.Board]
			if !ok {
				continue
			}
			p := results.Params{"board": n.Board}
			switch d {
			case DetectYes:
				add(exact("bringup.timesync.detect", p, 1, "", srcDetect, "the failure is on its path from the primary"))
				add(band("bringup.timesync.detect_us", p, sc.sync.DetectUS(n.Depth, linkMax), "µs", srcDetect,
					fmt.Sprintf("%d intervals without a valid message", sc.sync.InvalidCount),
					fmt.Sprintf("%d missed intervals of %g µs, the failure anywhere within the first (+%g ppm and a wait, the chip, the cable and the PHY per hop)", sc.sync.InvalidCount, sc.sync.IntervalUS, sc.sync.DriftPPM),
					"the failure falls anywhere within an interval, so detection takes between N-1 and N intervals"))
			case DetectNo:
				add(exact("bringup.timesync.detect", p, 0, "", srcDetect, "the failure is not on its path from the primary"))
			case DetectMaybe:
				add(results.Expectation{Metric: "bringup.timesync.detect", Params: p, Value: 0.5, Min: results.Float(0), Max: results.Float(1),
					Source: srcDetect, Note: "depends on the parents the runner chose: " + strings.Join(n.Parents, ","),
					Budget: "either answer: the runner's choice of parent decides whether the failure is on the board's path",
					Wide:   "a yes-or-no figure whose answer depends on the tree the runner built: both are right"})
			}
		}
		re, err := TimeTree(sc.top, plan.Live(), sc.primaries, sc.sync, sc.ppm, sc.tsFail)
		if err != nil {
			return nil, err
		}
		out = append(out, sc.treeExpectations("bringup.timesync.reroot", re)...)
	}

	// Shoal.
	if sc.shoal != nil {
		es, err := sc.shoalExpectations()
		if err != nil {
			return nil, err
		}
		out = append(out, es...)
	}
	return out, nil
}

// treeExpectations lists a tree's primary, depths, parents, states and
// offset bands under prefix.
func (sc *scenario) treeExpectations(prefix string, tr *Tree) []results.Expectation {
	var out []results.Expectation
	note := ""
	if tr.Primary == "" {
		note = "no primary candidate is up"
	}
	out = append(out, text(prefix+".primary", nil, tr.Primary, srcTree, note))
	if tr.Primary == "" {
		return out
	}
	out = append(out, exact(prefix+".tree_depth", nil, float64(tr.Depth), "hops", srcTree, "breadth-first from the primary"))
	for _, n := range tr.Nodes {
		p := results.Params{"board": n.Board}
		if n.State != Uncertain {
			out = append(out, text(prefix+".status", p, string(n.State), srcTree, n.Why))
		}
		if n.Depth < 0 {
			continue
		}
		out = append(out, exact(prefix+".depth", p, float64(n.Depth), "hops", srcTree, "parents: "+strings.Join(n.Parents, ",")))
		for _, q := range n.Parents {
			out = append(out, exact(prefix+".parent", results.Params{"board": n.Board, "parent": q}, 1, "", srcTree,
				fmt.Sprintf("%s may send TimeSync to %s (depth %d)", q, n.Board, n.Depth)))
		}
		if n.State == Synced {
			lo, hi := n.Band()
			e := Estimate{Min: lo, Value: (n.SysMinNS + n.SysMaxNS) / 2, Max: hi}
			nt := fmt.Sprintf("depth %d: ±%.4g ns", n.Depth, n.BoundNS)
			if n.SysMinNS != 0 || n.SysMaxNS != 0 {
				nt += fmt.Sprintf(" around the uncompensated asymmetry's %.4g..%.4g ns (half the asymmetry per cable)", n.SysMinNS, n.SysMaxNS)
			}
			out = append(out, band(prefix+".offset_ns", p, e, "ns", srcOffset, nt+"; offset = board time - primary time",
				fmt.Sprintf("per hop: carried time ±%g ns, link-delay measurement ±%g ns, half the undeclared asymmetry %g ns, drift %g ppm over the wait, chip, cable and PHY; the drift since the last update over one interval; the runner's reading ±%g ns: ±%.4g ns at depth %d",
					sc.sync.TxErrNS, sc.sync.MeasErrNS, sc.sync.AsymMaxNS/2, 2*sc.sync.DriftPPM, sc.sync.ReadErrNS, n.BoundNS, n.Depth),
				"an offset's ideal is 0, so a relative width means nothing: the band is the absolute error bound App. B.2's terms add up to"))
		}
	}
	return out
}

func (sc *scenario) shoalExpectations() ([]results.Expectation, error) {
	sl := *sc.shoal
	var out []results.Expectation
	pl, err := sl.Plan()
	if err != nil {
		return nil, err
	}
	add := func(metric string, v float64, unit, note string) {
		out = append(out, exact("bringup.shoal."+metric, nil, v, unit, srcShoal, note))
	}
	add("guard_ns", pl.GuardNS, "ns", fmt.Sprintf("%g reconfiguration + %g propagation variability + %g precision", sl.ReconfigNS, sl.PropVarNS, sl.PrecisionNS))
	if sl.CycleNS > 0 {
		add("guard_cycles", float64(pl.GuardCycles), "cycles", fmt.Sprintf("%g ns cycles; a sub-cycle precision costs no cycle (§6.1)", sl.CycleNS))
	}
	add("min_slot_ns", pl.MinSlotNS, "ns", fmt.Sprintf("guard / %g", sl.Target))
	add("cell_ns", pl.CellNS, "ns", fmt.Sprintf("%d B at %g Gb/s", sl.CellBytes, sl.ChannelGbps))
	add("cells", float64(pl.Cells), "cells", "whole cells per slot nearest the target overhead")
	add("slot_ns", pl.SlotNS, "ns", "recommended: guard + MAC overhead + cells")
	if sl.CycleNS > 0 {
		add("slot_cycles", float64(pl.SlotCycles), "cycles", "")
	}
	add("usable_ns", pl.UsableNS, "ns", "")
	add("overhead", pl.Overhead, "", "guard / slot (the papers' 'around 10%')")
	add("duty_cycle", pl.DutyCycle, "", "usable / slot")
	maxP, err := sl.MaxPrecisionFor(sc.guardNS)
	if err != nil {
		return nil, fmt.Errorf("parameter shoal_guard_ns: %w", err)
	}
	if maxP < 0 {
		return nil, fmt.Errorf("parameter shoal_guard_ns: a %g ns guard band is shorter than the %g ns reconfiguration and %g ns propagation variability alone (§3.4)",
			sc.guardNS, sl.ReconfigNS, sl.PropVarNS)
	}
	note := fmt.Sprintf("calibrated precision the configured %g ns guard band absorbs", sc.guardNS)
	if sl.CycleNS > 0 {
		note += " (strictly less than Max in a clocked design)"
	}
	out = append(out, results.Expectation{Metric: "bringup.shoal.precision_ns", Value: maxP / 2,
		Min: results.Float(0), Max: results.Float(maxP), Unit: "ns", Source: srcShoal, Note: note,
		Budget: fmt.Sprintf("upper end: the guard band less reconfiguration and propagation variability, %.4g ns (exact, §3.4)", maxP),
		Wide:   "a precision's ideal is 0: the guard band bounds it from above only (reading M4: Shoal's precision is reported, not judged)"})
	return out, nil
}
