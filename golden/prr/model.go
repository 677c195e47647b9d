package prr

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/labrunner/labrunner/golden"
	"github.com/labrunner/labrunner/golden/param"
	"github.com/labrunner/labrunner/results"
)

// Name is the model's name in the registry.
const Name = "prr"

func init() { golden.Register(Model{}) }

// Model is the FPGA'20 parallel round-robin switch model as a golden.Model.
type Model struct{}

// Name implements golden.Model.
func (Model) Name() string { return Name }

// Doc implements golden.Model.
func (Model) Doc() string {
	return "High-performance FPGA network switch (FPGA'20): pipeline length and latency with register " +
		"removal (§4.1-4.2, Table 1), line throughput (§5.2), and reference simulations of the proposal " +
		"against a FIFO input-queued switch and VOQ switches under PIM, RRM, iSLIP, DRRM and EDRRM " +
		"(§5.1: average and worst-case latency, throughput, drop rate versus FIFO depth, depth for zero " +
		"drops, FIFO saturation). Metrics: prr.pipeline_stages{p,s}, prr.pipeline_latency{p,s}, " +
		"prr.compulsory_index{p}, prr.port_to_port_latency{p,s,clock_mhz}, prr.throughput{p,width_bits,clock_mhz}, " +
		"prr.throughput.aggregate{p,width_bits,clock_mhz}, prr.latency.avg / prr.latency.max / " +
		"prr.sim_throughput{alg,traffic,p,load}, prr.drop_rate{alg,traffic,p,depth,load}, " +
		"prr.zero_drop_depth{alg,traffic,p}, prr.saturation{alg=fifo,p}. The bit-exact batch placement " +
		"(Switch.Insert) is a Go API of package golden/prr."
}

// Params implements golden.Model.
func (Model) Params() []golden.Param {
	return []golden.Param{
		{Name: "p", Default: "16", Doc: "ports P, a power of two 2..256 (VOQ schedulers up to 64); §5 evaluates 16×16"},
		{Name: "s", Default: "1", Doc: "register-removal factor S ≥ 1 (§4.2)"},
		{Name: "width_bits", Default: "512", Doc: "packet width in bits (§5.2: 256 or 512; the 903.2 Gb/s 16×16 switch is 512)"},
		{Name: "clock_mhz", Default: "auto", Doc: "clock in MHz; auto: the fmax §5.2 reports for p, width_bits and s on the ZU19EG, else Table 1's indicative 150 MHz (§4.2)"},
		{Name: "traffic", Default: "all", Doc: "traffic models: uniform, bursty, nonuniform, or all (§5.1a-c); empty: no simulation"},
		{Name: "algs", Default: "all", Doc: "switches: " + joinAlgs(Algs) + ", or all; empty: no simulation"},
		{Name: "load", Default: "1", Doc: "input rate r, packets per input per cycle, 0 < r ≤ 1 (§5.1 reports r = 1); prr.zero_drop_depth and prr.saturation are always at r = 1"},
		{Name: "cycles", Default: "25000", Doc: "simulated cycles per run; worst cases and zero-drop depths at r = 1 grow with it. §5.1 does not state its run length; at 25000 (golden's reproduction of §5.1, reading P40) its five quoted worst cases of the proposal and PIM come out within 3.5%"},
		{Name: "replicas", Default: "8", Doc: "independent seeded runs per figure, 2..64: their spread is the band (a 99% prediction interval for one more run)"},
		{Name: "seed", Default: "1", Doc: "seed of the simulations (unsigned 64-bit)"},
		{Name: "depths", Default: "1", Doc: "FIFO depths for prr.drop_rate, each ≥ 1 (§5.1 Fig. 9; §5.2 builds the hardware with depth 1); empty: none"},
		{Name: "burst_len", Default: "32", Doc: "bursty traffic: mean burst size s (§5.1b default 32)"},
		{Name: "nonuniform_p", Default: "0.5", Doc: "nonuniform traffic: probability p that a packet goes to the port with its input's number (§5.1c default 0.5)"},
	}
}

// Plan is a parsed, checked set of Predict parameters.
type Plan struct {
	P, S      int
	WidthBits int
	ClockMHz  float64
	ClockNote string // where the clock comes from
	Traffics  []Traffic
	Algs      []Alg
	Load      float64
	Cycles    int
	Replicas  int
	Seed      uint64
	Depths    []int
	BurstLen  float64
	HotProb   float64
}

// Limits of Predict's parameters.
const (
	MaxWidthBits = 1 << 16
	MaxReplicas  = 64
	MaxDepth     = 1 << 20
)

// ParsePlan checks Predict's parameters (defaults applied for missing keys)
// and returns the plan. Parameters are read by golden/param, the reader of
// every golden model: an unknown key is refused with the closest allowed
// one. Errors name the parameter, the value and what is accepted.
func ParsePlan(set map[string]string) (Plan, error) {
	s, err := golden.Settings(Name, Model{}.Params(), set)
	if err != nil {
		return Plan{}, err
	}
	var pl Plan
	bad := func(key string, err error) error {
		return fmt.Errorf("%s: parameter %s=%q: %w", Name, key, s[key], err)
	}
	if pl.P, err = param.Int(s["p"], 2, MaxPorts); err == nil {
		err = checkPorts(pl.P)
	}
	if err != nil {
		return Plan{}, bad("p", err)
	}
	if pl.S, err = param.Int(s["s"], 1, MaxS); err != nil {
		return Plan{}, bad("s", fmt.Errorf("%w (§4.2)", err))
	}
	if pl.WidthBits, err = param.Int(s["width_bits"], 1, MaxWidthBits); err != nil {
		return Plan{}, bad("width_bits", fmt.Errorf("%w bits", err))
	}
	if c := strings.TrimSpace(s["clock_mhz"]); c == "auto" {
		if f, ok := ReportedClockMHz(pl.P, pl.WidthBits, pl.S); ok {
			pl.ClockMHz = f
			pl.ClockNote = fmt.Sprintf("fmax FPGA'20 §5.2 reports on the ZU19EG for %d ports, %d-bit packets, S=%d", pl.P, pl.WidthBits, pl.S)
		} else {
			pl.ClockMHz = IndicativeClockMHz
			pl.ClockNote = fmt.Sprintf("§5.2 gives no fmax for %d ports, %d bits, S=%d in its text: Table 1's indicative %g MHz (§4.2)", pl.P, pl.WidthBits, pl.S, IndicativeClockMHz)
		}
	} else {
		if pl.ClockMHz, err = param.Float(c, 1e-9, 1e5); err != nil {
			return Plan{}, bad("clock_mhz", fmt.Errorf("%w: want a clock in MHz above 0 and up to 100000, or auto", err))
		}
		pl.ClockNote = "clock_mhz as set"
	}
	traffics, err := param.Names(s["traffic"], names(Traffics), "all")
	if err != nil {
		return Plan{}, bad("traffic", err)
	}
	for _, t := range traffics {
		pl.Traffics = append(pl.Traffics, Traffic(t))
	}
	algs, err := param.Names(s["algs"], names(Algs), "all")
	if err != nil {
		return Plan{}, bad("algs", err)
	}
	for _, a := range algs {
		pl.Algs = append(pl.Algs, Alg(a))
	}
	if pl.P > MaxVOQPorts && len(pl.Traffics) > 0 {
		for _, a := range pl.Algs {
			if k, _, _ := kindOf(a); k >= kPIM {
				return Plan{}, bad("algs", fmt.Errorf("%s is simulated up to %d ports and p is %d: set algs to prr,fifo (or lower p)", a, MaxVOQPorts, pl.P))
			}
		}
	}
	if pl.Load, err = param.Float(s["load"], 0, 1); err == nil && pl.Load == 0 {
		err = fmt.Errorf("0 offers nothing")
	}
	if err != nil {
		return Plan{}, bad("load", fmt.Errorf("%w: want an input rate above 0 and at most 1 packet per input per cycle", err))
	}
	if pl.Cycles, err = param.Count(s["cycles"], 1, MaxCycles); err != nil {
		return Plan{}, bad("cycles", err)
	}
	if pl.Replicas, err = param.Int(s["replicas"], 2, MaxReplicas); err != nil {
		return Plan{}, bad("replicas", fmt.Errorf("%w (two runs at least, to see their spread)", err))
	}
	if pl.Seed, err = param.Uint64(s["seed"]); err != nil {
		return Plan{}, bad("seed", err)
	}
	if pl.Depths, err = param.IntSet(s["depths"], 1, MaxDepth); err != nil {
		return Plan{}, bad("depths", fmt.Errorf("%w: want whole numbers of packets from 1 to %d", err, MaxDepth))
	}
	if pl.BurstLen, err = param.Float(s["burst_len"], 1, 1e6); err != nil {
		return Plan{}, bad("burst_len", fmt.Errorf("%w: want a mean burst size from 1 to 1e6 packets", err))
	}
	if pl.HotProb, err = param.Float(s["nonuniform_p"], 0, 1); err == nil && pl.HotProb == 0 {
		err = fmt.Errorf("0 never sends a packet to its own port")
	}
	if err != nil {
		return Plan{}, bad("nonuniform_p", fmt.Errorf("%w: want a probability above 0 and at most 1", err))
	}
	return pl, nil
}

// names turns a list of named values (algorithms, traffic models) into
// their names, in order.
func names[T ~string](vs []T) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return out
}

// Predict implements golden.Model: the pipeline figures first, then the
// simulated ones, by traffic and algorithm.
func (m Model) Predict(set map[string]string) ([]results.Expectation, error) {
	pl, err := ParsePlan(set)
	if err != nil {
		return nil, err
	}
	out, err := pipelineExpectations(pl)
	if err != nil {
		return nil, err
	}
	sims, err := simExpectations(pl)
	if err != nil {
		return nil, err
	}
	return append(out, sims...), nil
}

// formulaEps absorbs only float rounding in the closed-form figures that are
// not integers (ns, Gb/s): they are exact.
const formulaEps = 1e-6

func exact(metric string, p results.Params, v float64, unit, source, note string) results.Expectation {
	return results.Expectation{Metric: metric, Params: p, Value: v, Unit: unit, Source: source, Note: note,
		Budget: "exact: a whole number from the paper's formula, read from the design's registers or traced cycles; no measurement error"}
}

func pipelineExpectations(pl Plan) ([]results.Expectation, error) {
	pipe, err := PipelineFor(pl.P, pl.S)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	ps := results.Params{"p": itoa(pl.P), "s": itoa(pl.S)}
	clock := fmtFloat(pl.ClockMHz)
	tp := results.Params{"p": itoa(pl.P), "width_bits": itoa(pl.WidthBits), "clock_mhz": clock}
	line := LineGbps(pl.WidthBits, pl.ClockMHz)
	out := []results.Expectation{
		exact("prr.pipeline_stages", ps, float64(pipe.Length), "stages",
			"FPGA'20 §4.1 (latency = log2P + max(log2P(log2P+1)/2, 2log2P+1)), Table 1 'Pipeline length'",
			fmt.Sprintf("%d shifter + max(%d sorter, %d offsets) stages; S removes registers, not stages (§4.2)", pipe.ShifterStages, pipe.SortStages, pipe.OffsetStages)),
		exact("prr.pipeline_latency", ps, float64(pipe.Latency), "cycles",
			"FPGA'20 §4.2 (latency_opt = ⌈(latency−index_comp)/S⌉ + ⌈(1+index_comp)/S⌉ − 1), Table 1",
			"cycles from a batch's insertion to its queue write, queue read not included"),
		exact("prr.compulsory_index", results.Params{"p": itoa(pl.P)}, float64(pipe.CompulsoryIndex), "stage",
			"FPGA'20 §4.2 (index_comp = log2P), Table 1 'Compulsory reg. index'",
			"the offset counters' stage, whose registers S never removes"),
		{
			Metric: "prr.port_to_port_latency", Params: results.Params{"p": itoa(pl.P), "s": itoa(pl.S), "clock_mhz": clock},
			Value: pipe.PortToPortNs(pl.ClockMHz), Unit: "ns", AbsTol: formulaEps,
			Budget: fmt.Sprintf("exact formula at the declared clock (%s); ±%g ns of float rounding", pl.ClockNote, formulaEps),
			Source: "FPGA'20 §4.2 Table 1, §5.2 (latency_p2p = (latency_opt + 1)/f_clk)",
			Note:   fmt.Sprintf("(%d+1) cycles at %g MHz (%s)", pipe.Latency, pl.ClockMHz, pl.ClockNote),
		},
		{
			Metric: "prr.throughput", Params: tp, Value: line, Unit: "Gb/s", AbsTol: formulaEps,
			Budget: fmt.Sprintf("exact formula at the declared clock (%s); ±%g Gb/s of float rounding", pl.ClockNote, formulaEps),
			Source: "FPGA'20 §5.2 (Throughput = Width × f_clk), §4.5 (one packet per port per cycle)",
			Note:   fmt.Sprintf("line throughput of one port, %d bits × %g MHz (%s)", pl.WidthBits, pl.ClockMHz, pl.ClockNote),
		},
		{
			Metric: "prr.throughput.aggregate", Params: tp, Value: line * float64(pl.P), Unit: "Gb/s", AbsTol: formulaEps,
			Budget: fmt.Sprintf("exact formula at the declared clock (%s); ±%g Gb/s of float rounding", pl.ClockNote, formulaEps),
			Source: "FPGA'20 §1, §5.2 (16×16, 512 bits: 903.2 Gb/s aggregate)",
			Note:   fmt.Sprintf("%d ports × %g Gb/s", pl.P, line),
		},
	}
	return out, nil
}

// runKey identifies a set of replicated runs.
type runKey struct {
	alg     Alg
	traffic Traffic
	load    float64
	depth   int
}

func simExpectations(pl Plan) ([]results.Expectation, error) {
	if len(pl.Algs) == 0 || len(pl.Traffics) == 0 {
		return nil, nil
	}
	var keys []runKey
	want := map[runKey]bool{}
	add := func(k runKey) {
		if !want[k] {
			want[k] = true
			keys = append(keys, k)
		}
	}
	for _, tr := range pl.Traffics {
		for _, a := range pl.Algs {
			add(runKey{a, tr, pl.Load, 0})
			add(runKey{a, tr, 1, 0}) // zero-drop depth: at input rate 1 (§5.1, Fig. 9)
			for _, d := range pl.Depths {
				add(runKey{a, tr, pl.Load, d})
			}
		}
	}
	hasFIFO := slices.Contains(pl.Algs, FIFO)
	if hasFIFO {
		add(runKey{FIFO, Uniform, 1, 0}) // saturation (§2.1)
	}
	var cfgs []SimConfig
	for _, k := range keys {
		for r := range pl.Replicas {
			cfgs = append(cfgs, SimConfig{
				P: pl.P, Alg: k.alg, Traffic: k.traffic, Load: k.load, Depth: k.depth, Cycles: pl.Cycles,
				Seed: mix(pl.Seed, uint64(r)), BurstLen: pl.BurstLen, HotProb: pl.HotProb,
			})
		}
	}
	res, err := SimulateAll(cfgs, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	byKey := map[runKey][]SimResult{}
	for i, k := range keys {
		byKey[k] = res[i*pl.Replicas : (i+1)*pl.Replicas]
	}

	base := fmt.Sprintf("%d seeded replicas of %d cycles (seed %d)", pl.Replicas, pl.Cycles, pl.Seed)
	band := fmt.Sprintf("band: 99%% prediction interval for one more run of the same length (Student t, %d dof) — the sampling noise at this cycle count", pl.Replicas-1)
	src := "FPGA'20 §5.1 (reference simulation, golden/prr; 0-cycle processing latency as in the paper)"
	var out []results.Expectation
	for _, tr := range pl.Traffics {
		for _, a := range pl.Algs {
			rs := byKey[runKey{a, tr, pl.Load, 0}]
			kp := results.Params{"alg": string(a), "traffic": string(tr), "p": itoa(pl.P), "load": fmtFloat(pl.Load)}
			offered := expectedOffered(pl, pl.Load)
			out = append(out,
				meanExpectation("prr.latency.avg", kp, collect(rs, SimResult.AvgLatency), "cycles",
					0.01, 0.05, src+", Fig. 7", "mean queueing time of delivered packets, unbounded FIFOs; "+base+"; "+band+paperNote(a, tr, "avg")),
				logExpectation("prr.latency.max", kp, collect(rs, func(r SimResult) float64 { return float64(r.LatencyMax) }), "cycles",
					src+", worst-case latency", "worst delivered packet, unbounded FIFOs; grows with the run length; "+base+"; "+band+" of log(1+x)"+paperNote(a, tr, "max")),
				meanExpectation("prr.sim_throughput", kp, collect(rs, SimResult.Throughput), "packets/cycle/port",
					0, 3/offered, src, "delivered packets per output per cycle, unbounded FIFOs; "+base+"; "+band),
			)
			for _, d := range pl.Depths {
				dr := byKey[runKey{a, tr, pl.Load, d}]
				dp := kp.Clone()
				dp["depth"] = itoa(d)
				out = append(out, meanExpectation("prr.drop_rate", dp, collect(dr, SimResult.DropRate), "fraction",
					0, 3/offered, "FPGA'20 §5.1, Fig. 9 (impact of queue size; golden/prr reference simulation)",
					fmt.Sprintf("dropped/offered with %s; %s; %s%s", depthMeaning(a, d, pl.P), base, band, paperNote(a, tr, fmt.Sprintf("drop%d", d)))))
			}
			zr := byKey[runKey{a, tr, 1, 0}]
			zp := results.Params{"alg": string(a), "traffic": string(tr), "p": itoa(pl.P)}
			note := "smallest per-queue depth with no drop at input rate 1 (the largest fill an unbounded queue reached); " +
				"at r = 1 the queues are critically loaded, so it grows with the run length (about as √cycles for a switch that keeps up, linearly for one that does not); "
			out = append(out, logExpectation("prr.zero_drop_depth", zp, collect(zr, func(r SimResult) float64 { return float64(r.ZeroDropDepth()) }), "packets",
				"FPGA'20 §5.1, Fig. 9 (FIFO depth for 100% throughput at input rate 1)",
				note+base+"; "+band+" of log(1+x)"+paperNote(a, tr, "zero")))
		}
	}
	if hasFIFO {
		rs := byKey[runKey{FIFO, Uniform, 1, 0}]
		out = append(out, meanExpectation("prr.saturation", results.Params{"alg": string(FIFO), "p": itoa(pl.P)},
			collect(rs, SimResult.Throughput), "packets/cycle/port", 0, 3/expectedOffered(pl, 1),
			"FPGA'20 §2.1 (HOL blocking limits a FIFO input-queued switch to 58.6% [21]; 2−√2 as P→∞)",
			fmt.Sprintf("saturated FIFO switch, uniform traffic at r = 1, random choice among head-of-line contenders; finite P is above 2−√2 = %.4f (P=2: 0.75); %s; %s", SaturationLimit, base, band)))
	}
	return out, nil
}

// SaturationLimit is the saturation throughput of a FIFO input-queued switch
// under uniform traffic as P grows, 2 − √2 (FPGA'20 §2.1: 58.6%).
var SaturationLimit = 2 - math.Sqrt2

func expectedOffered(pl Plan, load float64) float64 {
	return math.Max(1, float64(pl.P)*float64(pl.Cycles)*load)
}

func depthMeaning(a Alg, d, p int) string {
	if a == FIFO {
		return fmt.Sprintf("one FIFO of %d packets per input (the buffer of %d×%d queues of depth %d)", d*p, p, p, d)
	}
	return fmt.Sprintf("%d×%d queues of depth %d", p, p, d)
}

// paperNote adds, for the figures §5.1 quotes, what the paper measured: a
// comparison, not a target (its run length is not given; its worst cases
// match the mean of runs of 25,000 cycles, reading P40).
func paperNote(a Alg, tr Traffic, what string) string {
	type k struct {
		a    Alg
		tr   Traffic
		what string
	}
	v, ok := map[k]string{
		{PRR, Uniform, "max"}: "375", {PIM, Uniform, "max"}: "1535",
		{PRR, Bursty, "max"}: "2807", {PIM, Bursty, "max"}: "7992",
		{PRR, Nonuniform, "max"}: "310", {EDRRM, Nonuniform, "max"}: "7212",
		{PRR, Uniform, "zero"}: "33", {PIM, Uniform, "zero"}: "153",
		{PRR, Uniform, "drop1"}: "0.052", {PIM, Uniform, "drop1"}: "0.161",
	}[k{a, tr, what}]
	if !ok {
		return ""
	}
	return fmt.Sprintf("; the paper reports %s for a 16×16 switch at r = 1 (§5.1, run length not stated; docs/figures.md compares it with golden's reproduction at 25000 cycles, reading P40)", v)
}

func collect(rs []SimResult, f func(SimResult) float64) []float64 {
	v := make([]float64, len(rs))
	for i, r := range rs {
		v[i] = f(r)
	}
	return v
}

func mean(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

func stddev(v []float64) float64 {
	m := mean(v)
	s := 0.0
	for _, x := range v {
		s += (x - m) * (x - m)
	}
	return math.Sqrt(s / float64(len(v)-1))
}

// tQuantile995 is Student's t 0.995 quantile (two-sided 99%) for dof
// degrees of freedom, rounded up: a table, conservative between entries.
func tQuantile995(dof int) float64 {
	table := []struct {
		dof int
		t   float64
	}{
		{1, 63.657}, {2, 9.925}, {3, 5.841}, {4, 4.604}, {5, 4.032}, {6, 3.707}, {7, 3.499},
		{8, 3.355}, {9, 3.250}, {10, 3.169}, {12, 3.055}, {15, 2.947}, {20, 2.845}, {30, 2.750}, {60, 2.660},
	}
	t := table[0].t
	for _, e := range table {
		if e.dof > dof {
			break
		}
		t = e.t
	}
	return t
}

// predictionHalfWidth is the half-width of the 99% prediction interval of
// one more observation, from n replicas with sample deviation sd.
func predictionHalfWidth(sd float64, n int) float64 {
	return tQuantile995(n-1) * sd * math.Sqrt(1+1/float64(n))
}

// meanExpectation: value and bounds for a figure that is an average over a
// run (normal by the central limit theorem). The floor, max(rel·|mean|,
// abs), keeps the band from collapsing when the replicas happen to agree
// (no drop in any replica: abs is three packets in one run's offered load,
// the rule of three). Its Budget is that spread; a band wider than ±10% says
// why in Wide.
func meanExpectation(metric string, p results.Params, v []float64, unit string, rel, abs float64, source, note string) results.Expectation {
	m := mean(v)
	sd := stddev(v)
	pi := predictionHalfWidth(sd, len(v))
	floor := math.Max(rel*math.Abs(m), abs)
	h := math.Max(pi, floor)
	lo, hi := math.Max(0, m-h), m+h
	if unit == "fraction" || unit == "packets/cycle/port" {
		hi = math.Min(hi, 1)
	}
	e := results.Expectation{Metric: metric, Params: p, Value: m, Unit: unit, Min: results.Float(lo), Max: results.Float(hi), Source: source, Note: note}
	e.Budget = fmt.Sprintf("golden replica spread at the run length: %d seeded runs, sd %.4g (%s of the mean), 99%% prediction interval of one more run ±%.4g (t %.3g); floor ±%.4g (%s); counters exact",
		len(v), sd, pct(sd, m), pi, tQuantile995(len(v)-1), floor, floorWhy(rel, abs))
	if e.NeedsReason() {
		switch {
		case pi < floor:
			e.Wide = "no replica shows the event (a drop, a lost packet): the band is the rule of three, at most three packets in one run's offered load, and reaches 0 because 0 is a right answer"
		default:
			e.Wide = fmt.Sprintf("one run's figure varies by %s (sd) from seed to seed at this run length: at input rate 1 the queues are critically loaded (their fill is a random walk), so the band is that sampling noise, which only longer runs or more of them narrow", pct(sd, m))
		}
	}
	return e
}

// logExpectation: value and bounds for an extreme (a maximum over a run),
// whose spread is skewed and scales with its size: the interval is taken on
// log(1+x), with a 5% floor on the deviation, and widened by one unit for
// integer figures.
func logExpectation(metric string, p results.Params, v []float64, unit, source, note string) results.Expectation {
	lv := make([]float64, len(v))
	for i, x := range v {
		lv[i] = math.Log1p(x)
	}
	m := mean(lv)
	sdl := stddev(lv)
	h := predictionHalfWidth(math.Max(sdl, 0.05), len(v))
	lo := math.Max(0, math.Floor(math.Expm1(m-h))-1)
	hi := math.Ceil(math.Expm1(m+h)) + 1
	e := results.Expectation{Metric: metric, Params: p, Value: mean(v), Unit: unit, Min: results.Float(lo), Max: results.Float(hi), Source: source, Note: note}
	e.Budget = fmt.Sprintf("golden replica spread at the run length: %d seeded runs, sd of log(1+x) %.3g (floor 0.05), 99%% prediction interval of one more run ×/÷%.3g (t %.3g); ±1 for an integer count",
		len(v), sdl, math.Exp(h), tQuantile995(len(v)-1))
	if e.NeedsReason() {
		e.Wide = fmt.Sprintf("the largest value of a run is an extreme: it varies by a factor %.2f (sd on a log scale) from seed to seed at this run length and grows with it (queues at input rate 1 are critically loaded), so the band is that sampling noise", math.Exp(math.Max(sdl, 0.05)))
	}
	return e
}

func pct(x, of float64) string {
	if of == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.1f%%", 100*x/math.Abs(of))
}

func floorWhy(rel, abs float64) string {
	switch {
	case rel > 0 && abs > 0:
		return fmt.Sprintf("%.3g%% of the mean, or %.3g", 100*rel, abs)
	case rel > 0:
		return fmt.Sprintf("%.3g%% of the mean", 100*rel)
	}
	return "three packets in one run's offered load"
}

// --- formatting ---

func itoa(v int) string { return strconv.Itoa(v) }

// fmtFloat renders a float the way keys carry it: shortest form, "1" for 1.0.
func fmtFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

func joinAlgs(as []Alg) string { return strings.Join(names(as), ", ") }
