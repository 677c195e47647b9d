package ordering

import (
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/labrunner/labrunner/golden"
	"github.com/labrunner/labrunner/golden/param"
	"github.com/labrunner/labrunner/results"
)

// Name is the model's name in the registry.
const Name = "ordering"

func init() { golden.Register(Model{}) }

// Model is the SC'18 ordering protocols' golden model as a golden.Model.
type Model struct{}

// Name implements golden.Model.
func (Model) Name() string { return Name }

// Doc implements golden.Model.
func (Model) Doc() string {
	return "Light-weight protocols for wire-speed ordering (SC'18): delivery order and execution counts of " +
		"ordered (slow and fast), synchronized and exactly-once transfers under loss and reordering (§III), " +
		"slow-mode throughput (§III-A, §IV-A), stream latency by mode (§IV-A, §IV-C), reorder buffer sizing and " +
		"connection limits (§IV-D). Metrics: ordering.latency, ordering.slow.*, ordering.throughput, ordering.rob.*, " +
		"ordering.window, ordering.connections, ordering.delivery and its counts (see package golden/ordering)."
}

// Params implements golden.Model.
func (Model) Params() []golden.Param {
	n := PaperNet()
	g := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	lm := make([]string, len(LatencyModes))
	for i, m := range LatencyModes {
		lm[i] = string(m)
	}
	return []golden.Param{
		{Name: "oneway_ns", Default: g(n.OneWayNs), Doc: "path latency source to target in ns (§IV: 40 + 500 + 40 ns, local, global, local channel)"},
		{Name: "packet_ns", Default: g(n.PacketNs), Doc: "time a REQ takes on a link in ns (§IV: 16 flits at 1 flit/ns)"},
		{Name: "ack_ns", Default: g(n.AckNs), Doc: "time an ACK takes on a link in ns (not in the paper; 1 flit)"},
		{Name: "lengths", Default: "10,20,30,40", Doc: "stream lengths for ordering.latency (§IV-A Fig. 8b, §IV-C Fig. 10; empty: none)"},
		{Name: "latency_modes", Default: strings.Join(lm, ","), Doc: "transfer modes for ordering.latency"},
		{Name: "skew_ns", Default: "sim", Doc: "network skew in ns the reorder buffer absorbs; sim: measured on the simulated §IV Dragonfly (reading O6), a number: that skew plus buffer_packets"},
		{Name: "buffer_packets", Default: "20", Doc: "allowance for switch buffering in packets added to a numeric skew_ns (§IV-D: 20; the simulated skew includes the switches' queueing)"},
		{Name: "conns", Default: "2", Doc: "receiver connections (§IV-D's last experiment: 2); 0: unlimited"},
		{Name: "cases", Default: strings.Join(CaseNames(), ","), Doc: "hand-worked cases to play: " + strings.Join(CaseNames(), ", ") + " (empty: none)"},
		{Name: "mode", Doc: "a custom case's mode: unordered, slow, fast or sync (with n, arrivals, lost, lost_acks, eod, rob, window)"},
		{Name: "n", Default: "5", Doc: "custom case: REQs in the stream, 1..256 (sync: the last is the synchronization operation)"},
		{Name: "arrivals", Doc: "custom case: arrival order of first copies, REQs counted from 1, e.g. 3,1,2 (unlisted ones arrive after, in order)"},
		{Name: "lost", Doc: "custom case: REQs whose first copy is lost"},
		{Name: "lost_acks", Doc: "custom case: REQs whose first ACK is lost"},
		{Name: "eod", Default: "false", Doc: "custom case: exactly-once delivery"},
		{Name: "rob", Default: "auto", Doc: "custom case: reorder buffer capacity in packets (auto: sized from skew_ns; 0: unlimited)"},
		{Name: "window", Default: "0", Doc: "custom case: outstanding REQs per connection (0: unlimited; §IV-D Fig. 12c: half the buffer)"},
	}
}

// MaxCaseLen bounds a custom case's stream: a hand-worked case is short.
const MaxCaseLen = 256

// Plan is a parsed, checked set of Predict parameters.
type Plan struct {
	Net         Net
	Lengths     []int
	LatModes    []LatencyMode
	SkewNs      float64
	Buffer, ROB int
	// FromSim: ROB (and Window) come from the simulated §IV network's
	// skew, not a given skew_ns.
	FromSim bool
	Window  int
	Conns   int
	Cases   []Case
}

// ParsePlan checks Predict's parameters.
func ParsePlan(set map[string]string) (*Plan, error) {
	s, err := golden.Settings(Name, Model{}.Params(), set)
	if err != nil {
		return nil, err
	}
	pl := &Plan{}
	for _, f := range []struct {
		key string
		dst *float64
	}{{"oneway_ns", &pl.Net.OneWayNs}, {"packet_ns", &pl.Net.PacketNs}, {"ack_ns", &pl.Net.AckNs}} {
		v, err := strconv.ParseFloat(strings.TrimSpace(s[f.key]), 64)
		if err != nil {
			return nil, fmt.Errorf("%s: parameter %s: %q is not a number", Name, f.key, s[f.key])
		}
		*f.dst = v
	}
	if err := pl.Net.Check(); err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	if pl.Lengths, err = param.Ints(s["lengths"], 1, MaxStreamLen); err != nil {
		return nil, fmt.Errorf("%s: parameter lengths: %w", Name, err)
	}
	if pl.LatModes, err = latModes(s["latency_modes"]); err != nil {
		return nil, fmt.Errorf("%s: parameter latency_modes: %w", Name, err)
	}
	if pl.Buffer, err = param.Int(s["buffer_packets"], 0, 1<<20); err != nil {
		return nil, fmt.Errorf("%s: parameter buffer_packets: %w", Name, err)
	}
	if strings.TrimSpace(s["skew_ns"]) == "sim" {
		sz, err := simulatedSizing()
		if err != nil {
			return nil, fmt.Errorf("%s: sizing the reorder buffer on the simulated Dragonfly: %w", Name, err)
		}
		pl.FromSim, pl.ROB, pl.Window, pl.SkewNs = true, sz.rob, sz.window, sz.skewNs
	} else {
		if pl.SkewNs, err = strconv.ParseFloat(strings.TrimSpace(s["skew_ns"]), 64); err != nil {
			return nil, fmt.Errorf("%s: parameter skew_ns: %q is not a number (or sim)", Name, s["skew_ns"])
		}
		if pl.ROB, err = ROBCapacity(pl.SkewNs, pl.Net.PacketNs, pl.Buffer); err != nil {
			return nil, fmt.Errorf("%s: parameters skew_ns, packet_ns, buffer_packets: %w", Name, err)
		}
		pl.Window = pl.ROB / 2
	}
	if pl.Conns, err = param.Int(s["conns"], 0, 1<<16); err != nil {
		return nil, fmt.Errorf("%s: parameter conns: %w", Name, err)
	}
	if pl.Cases, err = cases(s["cases"]); err != nil {
		return nil, fmt.Errorf("%s: parameter cases: %w", Name, err)
	}
	for _, k := range []string{"arrivals", "lost", "lost_acks"} {
		if _, ok := s[k]; ok && s["mode"] == "" {
			return nil, fmt.Errorf("%s: parameter %s describes a custom case: set mode too", Name, k)
		}
	}
	if m, ok := s["mode"]; ok {
		c, err := customCase(s, m, pl)
		if err != nil {
			return nil, fmt.Errorf("%s: custom case: %w", Name, err)
		}
		pl.Cases = append(pl.Cases, c)
	}
	return pl, nil
}

func customCase(s map[string]string, m string, pl *Plan) (Case, error) {
	mode, err := ParseMode(m)
	if err != nil {
		return Case{}, err
	}
	n, err := param.Int(s["n"], 1, MaxCaseLen)
	if err != nil {
		return Case{}, fmt.Errorf("parameter n: %w", err)
	}
	eod, err := strconv.ParseBool(strings.TrimSpace(s["eod"]))
	if err != nil {
		return Case{}, fmt.Errorf("parameter eod: %q is not true or false", s["eod"])
	}
	var lists [3][]int
	for i, k := range []string{"arrivals", "lost", "lost_acks"} {
		if lists[i], err = ParseSeqs(s[k]); err != nil {
			return Case{}, fmt.Errorf("parameter %s: %w", k, err)
		}
	}
	cfg := Config{Target: TargetConfig{Conns: pl.Conns, ROB: pl.ROB}}
	if r := strings.TrimSpace(s["rob"]); r != "auto" {
		if cfg.Target.ROB, err = param.Int(r, 0, 1<<20); err != nil {
			return Case{}, fmt.Errorf("parameter rob: %w (or auto)", err)
		}
	}
	if cfg.Window, err = param.Int(s["window"], 0, 1<<20); err != nil {
		return Case{}, fmt.Errorf("parameter window: %w", err)
	}
	return CustomCase(mode, n, eod, lists[0], lists[1], lists[2], cfg)
}

// Predict implements golden.Model.
func (m Model) Predict(set map[string]string) ([]results.Expectation, error) {
	pl, err := ParsePlan(set)
	if err != nil {
		return nil, err
	}
	n := pl.Net
	var out []results.Expectation
	for _, mode := range pl.LatModes {
		for _, k := range pl.Lengths {
			v, err := n.StreamLatency(mode, k)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", Name, err)
			}
			out = append(out, results.Expectation{Metric: "ordering.latency", Params: results.Params{"mode": string(mode), "n": strconv.Itoa(k)},
				Value: v, Unit: "ns", RelTol: 0.05, Source: latSource(mode),
				Note:   latNote(mode, n) + "; ±5% for timestamping and endpoint turnaround the paper's simulation leaves out (§IV-A)",
				Budget: "±5%: endpoint turnaround (the paper's simulation has none, a design has a few cycles per REQ and ACK) and timestamping; the closed form itself is exact on an idle network (SC18 Fig8b reproduces it within 2%)"})
		}
	}
	rtt := n.RTT()
	rate := 1000 / rtt
	share := n.SlowShare()
	turnaround := "the lower half allows an endpoint turnaround of up to one round trip, which the paper leaves out (§IV-A: no endpoint delay) and a design has"
	out = append(out,
		results.Expectation{Metric: "ordering.slow.rtt", Value: rtt, Unit: "ns", RelTol: 0.05, Source: "SC'18 §III-A, §IV-A",
			Note:   fmt.Sprintf("REQ (%g ns) + path (%g ns) + ACK (%g ns) + path back, no endpoint delay", n.PacketNs, n.OneWayNs, n.AckNs),
			Budget: "±5%: endpoint turnaround and timestamping, as for ordering.latency"},
		results.Expectation{Metric: "ordering.slow.rate", Value: rate, Unit: "REQ/µs", Min: results.Float(0.5 * rate), Max: results.Float(1.02 * rate),
			Source: "SC'18 §III-A, §IV-A", Note: "at most one REQ per round trip (\"less than 1/RTT\"); the lower half allows endpoint turnaround up to one RTT",
			Budget: "+2%: counter quantisation over the measurement window; -50%: endpoint turnaround up to one RTT", Wide: turnaround},
		results.Expectation{Metric: "ordering.throughput", Params: results.Params{"mode": "slow"}, Value: share, Unit: "fraction of link",
			Min: results.Float(0.5 * share), Max: results.Float(1.02 * share), Source: "SC'18 §IV-A, Fig. 8a",
			Note:   "one REQ time per round trip: \"a small fraction of the available link bandwidth\"",
			Budget: "+2%: counter quantisation; -50%: endpoint turnaround up to one RTT", Wide: turnaround},
	)
	for _, m := range []string{"fast", "unordered"} {
		out = append(out, results.Expectation{Metric: "ordering.throughput", Params: results.Params{"mode": m}, Value: 1, Unit: "fraction of link",
			Min: results.Float(0.9), Max: results.Float(1), Source: "SC'18 §IV-A, Fig. 8a",
			Note:   "\"close to the maximum link throughput\" for any packet length; the simulated Dragonfly carries 1.00 (SC18 Fig8a)",
			Budget: "-10%: the FIN/FIN-ACK of each stream (1/(10L+1) of the link) and a design's packet gaps; the simulation loses none at link rate"})
	}
	robNote := fmt.Sprintf("ceil(%g ns skew / %g ns per packet) + %d packets of switch buffering (§IV-D: 30 + 20 = 50, rounding 31.25 down)", pl.SkewNs, n.PacketNs, pl.Buffer)
	capExp := results.Expectation{Metric: "ordering.rob.capacity", Value: float64(pl.ROB), Unit: "packets", Source: "SC'18 §IV-D",
		Note: robNote, Budget: "exact: the closed form of §IV-D's sizing"}
	winExp := results.Expectation{Metric: "ordering.window", Value: float64(pl.Window), Unit: "REQs", Source: "SC'18 §IV-D, Fig. 12c",
		Note: "outstanding REQs per sender connection limited to half the reorder buffer (Fig. 12c: 25 of 50)", Budget: "exact: half the capacity"}
	if pl.FromSim {
		why := fmt.Sprintf("the simulated skew (%.0f ns: the extra global channel and two extra local channels of a detour, with the switches' queueing) is the least a buffer must hold; §IV-D's %d adds 20 packets of switch buffering it assumes (footnote 12); a design anywhere between absorbs the simulated network's skew (reading O6)", pl.SkewNs, ROBCapacityPaper)
		capExp.Min, capExp.Max = results.Float(float64(pl.ROB)), results.Float(ROBCapacityPaper)
		capExp.Note = fmt.Sprintf("the spread of REQ latencies on the simulated §IV Dragonfly (Fig. 11 setup, 4 streams of 128, PAR): %.0f ns = %d packets of %g ns; the paper: %d", pl.SkewNs, pl.ROB, n.PacketNs, ROBCapacityPaper)
		capExp.Budget, capExp.Wide = "floor: the simulated skew (max - min over 4,096 REQs, seed 1); ceiling: the paper's 50", why
		winExp.Min, winExp.Max = results.Float(float64(pl.Window)), results.Float(WindowPaper)
		winExp.Note = fmt.Sprintf("half the simulated capacity (%d); the paper: %d (Fig. 12c)", pl.ROB, WindowPaper)
		winExp.Budget, winExp.Wide = "half the capacity's band", why
	}
	out = append(out, capExp,
		results.Expectation{Metric: "ordering.rob.occupancy", Value: float64(pl.ROB), Unit: "packets", Min: results.Float(0), Max: results.Float(float64(pl.ROB)),
			Source: "SC'18 §III-C, §IV-D", Note: "peak reorder buffer occupancy: within the skew-sized capacity, whatever the number of streams",
			Budget: "the capacity: a buffer never holds more than the skew it is sized for",
			Wide:   "one-sided: occupancy is 0 whenever nothing arrives out of order, and how much arrives out of order depends on the run; the bound catches a buffer that overfills (a test checks separately that REQs were reordered)"},
		winExp,
	)
	if pl.Conns > 0 {
		out = append(out, results.Expectation{Metric: "ordering.connections", Params: results.Params{"conns": strconv.Itoa(pl.Conns)},
			Value: float64(pl.Conns), Unit: "connections", Min: results.Float(0), Max: results.Float(float64(pl.Conns)), Source: "SC'18 §III-C, §IV-D",
			Note:   "active receiver connections never exceed those provided; streams beyond them fall back to slow mode",
			Budget: "the connections provided",
			Wide:   "one-sided: a run opens as many connections as its streams overlap; the bound catches a target that opens more than it has"})
	}
	for _, c := range pl.Cases {
		es, err := caseExpectations(c)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", Name, err)
		}
		out = append(out, es...)
	}
	return out, nil
}

func caseExpectations(c Case) ([]results.Expectation, error) {
	r, err := c.Run()
	if err != nil {
		return nil, err
	}
	if r.Stalled != "" || len(r.Anomalies) > 0 {
		return nil, fmt.Errorf("case %s: the reference did not complete cleanly: %s %v", c.Name, r.Stalled, r.Anomalies)
	}
	complete := make([]bool, len(r.Streams))
	for i, s := range r.Streams {
		complete[i] = s.Complete
	}
	if bad := CheckLog(c.Streams, r.Execs, complete); len(bad) > 0 {
		return nil, fmt.Errorf("case %s: the reference log violates %v", c.Name, bad)
	}
	sum := Summarize(r)
	p := results.Params{"case": c.Name}
	e := func(metric string, v int, unit, what string) results.Expectation {
		return results.Expectation{Metric: metric, Params: p, Value: float64(v), Unit: unit, Source: c.Source, Note: what + "; " + c.Note,
			Budget: "exact: a count of the reference protocol playing the case's arrivals and losses"}
	}
	multi := len(c.Streams) > 1
	return []results.Expectation{
		{Metric: "ordering.delivery", Params: p, Text: LogText(r.Execs, multi), Source: c.Source, Budget: "exact: the reference protocol's execution order",
			Note: "executions in target memory, REQs counted from 1" + map[bool]string{true: " as stream.REQ"}[multi] + "; " + c.Note},
		e("ordering.executions", sum.Executions, "executions", "operations executed in target memory"),
		e("ordering.duplicates", sum.Duplicates, "executions", "executions beyond the first of a REQ"),
		e("ordering.replays", sum.Replays, "ACKs", "duplicates answered from a replay buffer"),
		e("ordering.nacks", sum.NACKs, "NACKs", "REQs NACKed (no connection, buffer full)"),
		e("ordering.rob.peak", r.MaxROB, "packets", "peak reorder buffer occupancy"),
		e("ordering.fallbacks", sum.FellBack, "streams", "streams that fell back to slow mode"),
	}, nil
}

func latSource(m LatencyMode) string {
	if m == LatSyncSource || m == LatSyncTarget {
		return "SC'18 §IV-C, Fig. 10"
	}
	return "SC'18 §IV-A, Fig. 8b"
}

func latNote(m LatencyMode, n Net) string {
	switch m {
	case LatSlow:
		return fmt.Sprintf("unloaded, first REQ in to last REQ delivered: (n-1)·RTT + Tp + D, RTT %g ns", n.RTT())
	case LatSyncSource:
		return "unloaded, first data REQ in to the synchronization operation delivered: n·Tp + 3·D + Ta (flush: the last data ACK, then the operation)"
	case LatSyncTarget:
		return "unloaded, first data REQ in to the synchronization operation delivered: n·Tp + D (held at the target, released as the last data REQ executes)"
	}
	return "unloaded, first REQ in to last REQ delivered: n·Tp + D (REQs back to back, in order on an idle network)"
}

func latModes(s string) ([]LatencyMode, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []LatencyMode
	seen := map[LatencyMode]bool{}
	for _, f := range strings.Split(s, ",") {
		m := LatencyMode(strings.ToLower(strings.TrimSpace(f)))
		ok := false
		for _, k := range LatencyModes {
			ok = ok || k == m
		}
		if !ok {
			return nil, fmt.Errorf("%q: want one of %v", f, LatencyModes)
		}
		if seen[m] {
			return nil, fmt.Errorf("%s is listed twice", m)
		}
		seen[m] = true
		out = append(out, m)
	}
	return out, nil
}

func cases(s string) ([]Case, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	all := map[string]Case{}
	for _, c := range PaperCases() {
		all[c.Name] = c
	}
	var out []Case
	seen := map[string]bool{}
	for _, f := range strings.Split(s, ",") {
		f = strings.ToLower(strings.TrimSpace(f))
		c, ok := all[f]
		if !ok {
			names := map[string]bool{}
			for k := range all {
				names[k] = true
			}
			return nil, fmt.Errorf("unknown case %q (known: %s)", f, strings.Join(sortedNames(names), ", "))
		}
		if seen[f] {
			return nil, fmt.Errorf("case %s is listed twice", f)
		}
		seen[f] = true
		out = append(out, c)
	}
	return out, nil
}

type sizing struct {
	rob, window int
	skewNs      float64
	err         error
}

var (
	sizingOnce sync.Once
	sizingMemo sizing
)

// simulatedSizing runs SC18.Sizing once per process: it is deterministic
// (seed 1) and takes a fraction of a second.
func simulatedSizing() (sizing, error) {
	sizingOnce.Do(func() {
		r, w, skew, err := PaperSC18(1).Sizing()
		sizingMemo = sizing{r, w, skew, err}
	})
	return sizingMemo, sizingMemo.err
}
