package prr

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/labrunner/labrunner/drivers"
	gp "github.com/labrunner/labrunner/golden/prr"
	"github.com/labrunner/labrunner/internal/memo"
	"github.com/labrunner/labrunner/results"
	"github.com/labrunner/labrunner/selftest"
	tp "github.com/labrunner/labrunner/traffic/prr"
)

// defaultReplicas is the number of golden replicas per figure: enough for
// the distribution-free range of the drop rate to hold one more run with
// 99% probability (withRange); the tests share the replicas of one
// configuration, so latency and throughput get them for free.
const defaultReplicas = 199

// minCycles bounds the run length from below. A run's latency figures
// depend on how it ends: the traffic generator stops offering after
// TG_CYCLES and drains, counting every measured packet (docs/prr.md). At
// input rate 1 the last packets wait longest, so a mean over the run's own
// deliveries (golden/prr's AvgLatency) reads lower than the hardware's by
// about 1/cycles: measured over 600 runs each (16×16, depth 32), 1.8
// run-to-run standard deviations for the average latency of bursty traffic
// at 2000 cycles, 0.75 at 5000, 0.12 for uniform traffic at 10000. golden
// now counts the drain as the generator does (DrainedAvgLatency, DrainMax;
// readings P41, P42), so no such offset reaches the bands; runs shorter
// than 10000 cycles, never compared since, stay refused. The default is
// 30000.
const minCycles = 10000

// trafficParams are the parameters the simulation-scored tests share.
type trafficParams struct {
	cycles   int
	replicas int
	traffics []string
}

// trafficOf takes the shared parameters in the form the runs use.
func trafficOf(p runParams) trafficParams {
	return trafficParams{cycles: p.Cycles, replicas: p.Replicas, traffics: p.Traffic}
}

// runTG runs the traffic generator with a deadline that grows with the run
// (the emulator runs it inside the START write, about 10^6 cycles of a
// 16-port switch per second; hardware takes cycles/f_clk).
func runTG(ctx context.Context, env *selftest.Env, sw *tp.Switch, c tp.TGConfig) (tp.TGResult, error) {
	work := time.Duration(c.Cycles) * time.Duration(sw.Build.Ports) * 250 * time.Nanosecond
	d := env.Deadlines.Register
	if d <= 0 {
		d = 2 * time.Second
	}
	tctx, cancel := drivers.Deadline(ctx, 8*d+work+time.Duration(c.DrainMax)*10*time.Nanosecond)
	defer cancel()
	return sw.RunTG(tctx, c)
}

// simKey identifies a set of golden replicas; tests of one plan share them.
type simKey struct {
	p, depth, cycles, replicas int
	traffic                    string
	load                       uint32
	seed                       uint64
}

// goldenCache holds golden replicas by configuration. The simulation is a
// pure function of its simKey (the build, the traffic, the run length and
// the seeds), so one cache serves the whole process: a process that runs
// the plan more than once (a fault campaign, the end-to-end tests: a
// clean run, then one per fault) simulates each configuration once. A
// configuration read differently from a board is another key, simulated
// anew.
var goldenCache memo.Map[simKey, []gp.SimResult]

// goldenRuns simulates the proposal (golden/prr, FPGA'20 §5.1) with the
// hardware run's configuration, replicas times with different seeds.
func goldenRuns(k simKey) ([]gp.SimResult, error) {
	return goldenCache.Get(k, func() ([]gp.SimResult, error) { return simulate(k) })
}

func simulate(k simKey) ([]gp.SimResult, error) {
	cfgs := make([]gp.SimConfig, k.replicas)
	for i := range cfgs {
		cfgs[i] = gp.SimConfig{P: k.p, Alg: gp.PRR, Traffic: gp.Traffic(k.traffic), Load: float64(k.load) / tp.One,
			Depth: k.depth, Cycles: k.cycles, Seed: k.seed + uint64(i)*0x9e3779b97f4a7c15,
			BurstLen: gp.DefaultBurstLen, HotProb: gp.DefaultHotProb, Drain: true}
	}
	rs, err := gp.SimulateAll(cfgs, 0)
	if err != nil {
		return nil, fmt.Errorf("golden/prr simulation (%d ports, depth %d, %s, load %g, %d cycles): %w", k.p, k.depth, k.traffic, float64(k.load)/tp.One, k.cycles, err)
	}
	return rs, nil
}

func collect(rs []gp.SimResult, f func(gp.SimResult) float64) []float64 {
	out := make([]float64, len(rs))
	for i, r := range rs {
		out[i] = f(r)
	}
	return out
}

// rateRun is one traffic-generator run and the golden replicas of the same
// configuration.
type rateRun struct {
	cfg    tp.TGConfig
	res    tp.TGResult
	golden []gp.SimResult
	params results.Params
	note   string
}

// runAtRate runs one traffic model at one input rate on the board (no
// warmup: the golden runs start empty too) and simulates it.
func runAtRate(ctx context.Context, env *selftest.Env, b *selftest.Board, sw *tp.Switch, traffic string, load uint32, tps trafficParams) (rateRun, error) {
	m, err := tp.ModelNamed(traffic)
	if err != nil {
		return rateRun{}, err
	}
	c := tp.DefaultTG()
	c.Model, c.Load, c.Cycles = m, load, uint32(tps.cycles)
	c.Seed = uint32(boardSeed(env, b.Name, "tg/"+traffic))
	res, err := runTG(ctx, env, sw, c)
	if err != nil {
		return rateRun{}, err
	}
	key := simKey{p: sw.Build.Ports, depth: sw.Build.FIFODepth, cycles: tps.cycles, replicas: tps.replicas,
		traffic: traffic, load: load, seed: boardSeed(env, "golden", traffic)}
	g, err := goldenRuns(key)
	if err != nil {
		return rateRun{}, err
	}
	p := rateParams(sw.Build, traffic, load, tps.cycles)
	note := fmt.Sprintf("golden/prr Simulate of the proposal, %d×%d, FIFO depth %d (declared by the manifest), %s traffic at input rate %s, %d seeded replicas of %d cycles; band: %g%% prediction interval for one more run (Student t, %d dof)",
		sw.Build.Ports, sw.Build.Ports, sw.Build.FIFODepth, traffic, loadString(load), tps.replicas, tps.cycles, 100*bandCoverage, tps.replicas-1)
	return rateRun{cfg: c, res: res, golden: g, params: p, note: note}, nil
}

// rateParams name the cases of one traffic run by the plan and the declared
// build only, so that a run that fails keeps the name of one that passes.
func rateParams(b tp.Build, traffic string, load uint32, cycles int) results.Params {
	p := buildParams(b)
	p["traffic"], p["load"], p["cycles"] = traffic, loadString(load), fmt.Sprint(cycles)
	return p
}

// loadString is the shortest decimal the generator's fixed-point rate
// rounds back to load: the plan's "0.9", not 58982/65536 = 0.899993896484375.
func loadString(load uint32) string {
	x := float64(load) / tp.One
	for prec := 1; prec < 17; prec++ {
		s := strconv.FormatFloat(x, 'g', prec, 64)
		if v, err := strconv.ParseFloat(s, 64); err == nil {
			if f, err := tp.Fixed(v); err == nil && f == load {
				return s
			}
		}
	}
	return fmt.Sprint(x)
}

// pipelineOffset is the run's own pipeline latency n: latency − wait − 1 of
// its packets (docs/prr.md: TG_LAT counts from insertion, TG_WAIT from the
// queue write + 1).
func pipelineOffset(r tp.TGResult) int {
	if r.Delivered == 0 {
		return 0
	}
	return max(0, int(math.Round(float64(r.LatSum-r.WaitSum)/float64(r.Delivered)))-1)
}

const simSource = "FPGA'20 §5.1 (golden/prr reference simulation; 0-cycle processing latency as in the paper)"

// runLatency scores average and worst-case latency at input rate 1 for
// each traffic model, and the average latency at the loads below
// saturation for the load_traffic models (reading P62). The paper's
// simulations have no processing latency (§5.1): a packet served the cycle
// after its arrival has latency 1. The hardware's queue wait (TG_WAIT:
// departure − queue write − 1) is that latency minus 1, whatever the
// pipeline length.
func runLatency(ctx context.Context, env *selftest.Env) error {
	p, err := selftest.ParamsOf[latencyParams](env)
	if err != nil {
		return err
	}
	if err := p.CheckParams(); err != nil {
		return setupErr(env, err)
	}
	tps := trafficOf(p.runParams)
	type run struct {
		traffic string
		load    uint32
	}
	var runs []run
	for _, tr := range tps.traffics {
		runs = append(runs, run{tr, tp.One})
	}
	for _, load := range p.subLoads() {
		for _, tr := range p.LoadTraffic {
			runs = append(runs, run{tr, load})
		}
	}
	for _, b := range env.Boards {
		sw, err := open(ctx, env, b)
		if err != nil {
			env.Error("latency", b.Name, nil, err)
			continue
		}
		for _, r := range runs {
			latencyAt(ctx, env, b, sw, r.traffic, r.load, tps, len(p.Loads) > 0)
		}
	}
	return nil
}

// latencyAt runs one traffic model at one input rate and records its
// latency cases: the worst case at input rate 1 only (§5.1 gives it
// there).
func latencyAt(ctx context.Context, env *selftest.Env, b *selftest.Board, sw *tp.Switch, tr string, load uint32, tps trafficParams, judgedBelow bool) {
	saturated := load == tp.One
	rr, err := runAtRate(ctx, env, b, sw, tr, load, tps)
	if err != nil {
		env.Error("latency.avg", b.Name, rateParams(sw.Build, tr, load, tps.cycles), fmt.Errorf("board %s, %s traffic at input rate %s: %w", b.Name, tr, loadString(load), err))
		return
	}
	r := rr.res
	if r.Delivered == 0 {
		env.Check("latency.avg", results.Measurement{Board: b.Name, Params: rr.params, Metric: "prr.latency.avg", Unit: "cycles",
			Text: "no packet delivered"}, false, "packets delivered", simSource,
			fmt.Sprintf("%s traffic at input rate %s for %d cycles delivered nothing (offered %d, dropped %d, stranded %d)", tr, loadString(load), tps.cycles, r.Offered, r.Dropped, r.Stranded))
		if saturated {
			env.Skip("latency.max", b.Name, rr.params, "not judged: no packet was delivered (latency.avg)")
		}
		orderChecks(env, b.Name, rr, tr)
		return
	}
	note := "mean latency of delivered packets (TG_WAIT_SUM / TG_DELIVERED + 1: queue wait + 1), the packets delivered while draining after the run included on both sides (golden/prr counts the drain as the traffic generator does, reading P42); "
	if !saturated {
		note += "below saturation a group is one output queue (§3.1, §4.4) and the mean settles within a few percent in one run (reading P62); "
	}
	avg := meanBand("prr.latency.avg", collect(rr.golden, gp.SimResult.DrainedAvgLatency), "cycles", 0.01, 0.05,
		simSource+", Fig. 7", note+rr.note)
	avg.Budget += "; counter quantisation: none (TG_WAIT_SUM and TG_DELIVERED are exact 64-bit counts of whole cycles and packets, golden/prr counts the same whole cycles)"
	if avg.Wide != "" && saturated && judgedBelow {
		avg.Wide = "at input rate 1 every output queue is critically loaded: one run's mean latency spreads about 6-7% (one sd) across runs of this length (golden/prr's replicas, reading P61), so a band for one run is this wide; the mean latency is judged within ±10% below saturation (latency.avg at the plan's loads, reading P62)"
	}
	env.Record("latency.avg", results.Measurement{Board: b.Name, Params: rr.params, Metric: "prr.latency.avg",
		Value: r.AvgWait() + 1, Unit: "cycles"}, avg)
	if saturated {
		worst := worstBand("prr.latency.max", rr.golden, sw.Build.Ports, sw.Build.FIFODepth,
			simSource+", worst-case latency", "worst delivered packet (queue wait + 1), the drain after the run included, as TG_WAIT_MAX counts it; grows with the run length until a group overflows (P·D, reading P41); "+rr.note+" of log(1+x) for the replicas that dropped nothing, joined with a fitted Gumbel interval (a maximum's upper tail), and the exact values of those that dropped")
		env.Record("latency.max", results.Measurement{Board: b.Name, Params: rr.params, Metric: "prr.latency.max",
			Value: float64(r.WaitMax) + 1, Unit: "cycles"}, worst)
	}
	orderChecks(env, b.Name, rr, tr)
}

// orderChecks: packets are conserved, and without drops the output
// arbiters stay in step, so every flow leaves in order and nothing is
// stranded (§4.4; docs/prr.md).
func orderChecks(env *selftest.Env, board string, rr rateRun, tr string) {
	r := rr.res
	sum := r.Delivered + r.Dropped + uint64(r.Stranded)
	msg := ""
	if sum != r.Offered {
		msg = fmt.Sprintf("%s traffic: offered %d, but delivered %d + dropped %d + stranded %d = %d: packets lost or counted twice",
			tr, r.Offered, r.Delivered, r.Dropped, r.Stranded, sum)
	}
	env.Check("latency.conservation", results.Measurement{Board: board, Params: rr.params, Metric: "prr.tg.unaccounted",
		Value: math.Abs(float64(r.Offered) - float64(sum)), Unit: "packets", Text: msg}, sum == r.Offered,
		"TG_OFFERED = TG_DELIVERED + TG_DROPPED + TG_STRANDED", "docs/prr.md (traffic generator results)", msg)
	// With drops, order errors and stranded packets are the design's
	// (§4.4): a run that dropped is not judged for order, and the case
	// says so (a skip with its reason, never a missing case: whether a
	// run drops is its outcome).
	if r.Dropped > 0 {
		gd := 0
		for _, g := range rr.golden {
			if g.Dropped > 0 {
				gd++
			}
		}
		env.Skip("latency.order", board, rr.params, fmt.Sprintf("not judged: the %s run dropped %d packets (%d of golden/prr's %d replicas drop too at this depth), and after a drop the output arbiters may leave packets out of order or stranded by design (FPGA'20 §4.4)",
			tr, r.Dropped, gd, len(rr.golden)))
		return
	}
	msg = ""
	if r.OrderErrors > 0 || r.Stranded > 0 {
		msg = fmt.Sprintf("%s traffic dropped nothing, yet %d packets left after a later packet of their flow and %d stayed stranded: an output arbiter serves its group out of the round-robin fill order (out of step, §4.4)",
			tr, r.OrderErrors, r.Stranded)
	}
	env.Check("latency.order", results.Measurement{Board: board, Params: rr.params, Metric: "prr.tg.order_errors",
		Value: float64(r.OrderErrors), Unit: "packets", Text: msg}, r.OrderErrors == 0 && r.Stranded == 0,
		"no order errors and nothing stranded when nothing was dropped", "FPGA'20 §4.4 (output arbiters follow the round-robin fill)", msg)
}

// runThroughput measures line rate with a permutation at input rate 1
// (every input sends to its own port every cycle: no output contention), and
// the delivered fraction under each §5.1 traffic model.
func runThroughput(ctx context.Context, env *selftest.Env) error {
	p, err := selftest.ParamsOf[throughputParams](env)
	if err != nil {
		return err
	}
	tps, warmup := trafficOf(p.runParams), p.Warmup
	for _, b := range env.Boards {
		sw, err := open(ctx, env, b)
		if err != nil {
			env.Error("throughput", b.Name, nil, err)
			continue
		}
		if err := lineRate(ctx, env, b, sw, tps.cycles, warmup); err != nil {
			env.Error("throughput.line", b.Name, lineParams(sw.Build), fmt.Errorf("board %s: %w", b.Name, err))
		}
		for _, tr := range tps.traffics {
			rr, err := runAtRate(ctx, env, b, sw, tr, tp.One, tps)
			if err != nil {
				env.Error("throughput", b.Name, rateParams(sw.Build, tr, tp.One, tps.cycles), fmt.Errorf("board %s, %s traffic: %w", b.Name, tr, err))
				continue
			}
			// The run's window counts departures from cycle 0; the first
			// can leave at n+1 (the pipeline), where the golden switch,
			// with no processing latency, serves from cycle 1. Packets
			// leaving in run cycles 0..C-1 are those the golden switch
			// serves in its cycles 0..C-n-1: count C-n cycles.
			n := pipelineOffset(rr.res)
			measured := float64(rr.res.WindowOut) / float64((tps.cycles-n)*sw.Build.Ports)
			offered := float64(sw.Build.Ports * tps.cycles)
			exp := meanBand("prr.sim_throughput", collect(rr.golden, gp.SimResult.Throughput), "packets/cycle/port", 0, 3/offered,
				simSource, fmt.Sprintf("delivered packets per output per cycle (TG_WINDOW_OUT over the %d-cycle run less the %d-cycle pipeline); %s", tps.cycles, n, rr.note))
			env.Record("throughput", results.Measurement{Board: b.Name, Params: rr.params, Metric: "prr.sim_throughput",
				Value: measured, Unit: "packets/cycle/port"}, exp)
		}
	}
	return nil
}

// lineParams name the line-rate cases by the declared build.
func lineParams(b tp.Build) results.Params {
	p := selftest.IntParams("p", b.Ports, "width_bits", b.PacketBits)
	p["clock_mhz"] = fmt.Sprint(b.ClockMHz())
	p["traffic"] = "permutation"
	return p
}

// lineRate: nonuniform traffic with p = 1 is a permutation; after the
// pipeline has filled, every port sends a packet every cycle, one
// PKT_BITS-wide packet per cycle of the design clock (§4.5, §5.2).
func lineRate(ctx context.Context, env *selftest.Env, b *selftest.Board, sw *tp.Switch, cycles, warmup int) error {
	c := tp.DefaultTG()
	c.Model, c.Load, c.NonunifP, c.Cycles, c.Warmup = tp.Nonuniform, tp.One, tp.One, uint32(cycles), uint32(warmup)
	c.Seed = uint32(boardSeed(env, b.Name, "line"))
	r, err := runTG(ctx, env, sw, c)
	if err != nil {
		return err
	}
	if r.Delivered > 0 && uint32(warmup) < r.LatMin {
		return setupErr(env, fmt.Errorf("warmup %d is shorter than the port-to-port latency %d cycles: the window would include the pipeline filling; raise warmup", warmup, r.LatMin))
	}
	exps, err := formulas(sw.Build)
	if err != nil {
		return err
	}
	frac := r.Throughput(c, sw.Build.Ports)
	// Packets a cycle become Gb/s with the board's own packet width and
	// clock (PKT_BITS, CLOCK_KHZ); golden's line rate is the declared
	// build's, so a build below the declared clock fails (reading P60).
	gbps := frac * float64(sw.HW.PacketBits) * sw.HW.ClockMHz() / 1e3
	p := lineParams(sw.Build)
	exp := exps["prr.throughput"]
	exp.Note += fmt.Sprintf("; measured: TG_WINDOW_OUT over cycles %d..%d of a permutation at input rate 1 (nonuniform, p = 1), × PKT_BITS × CLOCK_KHZ", warmup, cycles-1)
	env.Record("throughput.line", results.Measurement{Board: b.Name, Params: p, Metric: "prr.throughput", Value: gbps, Unit: "Gb/s"}, exp)
	agg := exps["prr.throughput.aggregate"]
	env.Record("throughput.aggregate", results.Measurement{Board: b.Name, Params: p, Metric: "prr.throughput.aggregate",
		Value: gbps * float64(sw.Build.Ports), Unit: "Gb/s"}, agg)
	return nil
}

// runDropRate measures the drop rate at the declared FIFO depth for
// each traffic model and input rate, against the golden simulation at that
// depth with the same cycles (FIFO depth is a build parameter: other depths
// need their own bitstream).
func runDropRate(ctx context.Context, env *selftest.Env) error {
	p, err := selftest.ParamsOf[dropRateParams](env)
	if err != nil {
		return err
	}
	tps, loads := trafficOf(p.runParams), p.Loads
	var fixed []uint32
	for _, l := range loads {
		f, err := tp.Fixed(l)
		if err != nil || f == 0 {
			return setupErr(env, fmt.Errorf("load %g: want an input rate above 0 and at most 1", l))
		}
		fixed = append(fixed, f)
	}
	for _, b := range env.Boards {
		sw, err := open(ctx, env, b)
		if err != nil {
			env.Error("drop_rate", b.Name, nil, err)
			continue
		}
		for _, tr := range tps.traffics {
			for _, load := range fixed {
				rr, err := runAtRate(ctx, env, b, sw, tr, load, tps)
				if err != nil {
					env.Error("drop_rate", b.Name, rateParams(sw.Build, tr, load, tps.cycles), fmt.Errorf("board %s, %s traffic: %w", b.Name, tr, err))
					continue
				}
				offered := math.Max(1, float64(sw.Build.Ports*tps.cycles)*float64(load)/tp.One)
				v := collect(rr.golden, gp.SimResult.DropRate)
				exp := withRange(meanBand("prr.drop_rate", v, "fraction", 0, 3/offered,
					"FPGA'20 §5.1, Fig. 9 (impact of queue size; golden/prr reference simulation)",
					fmt.Sprintf("TG_DROPPED/TG_OFFERED at the declared FIFO depth %d (FIFO_DEPTH is a build parameter; other depths need their own bitstream); %s, widened to the replicas' range (drops come in rare whole-group overflows: heavy-tailed; the range of %d replicas holds one more run with probability %d/%d)",
						sw.Build.FIFODepth, rr.note, tps.replicas, tps.replicas-1, tps.replicas+1)), v)
				env.Record("drop_rate", results.Measurement{Board: b.Name, Params: rr.params, Metric: "prr.drop_rate",
					Value: rr.res.DropRate(), Unit: "fraction"}, exp)
			}
		}
	}
	return nil
}
