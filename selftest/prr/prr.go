// Package prr holds the PRR plan's tests: the parallel round-robin FPGA
// switch of Papaphilippou, Meng and Luk (FPGA'20) on an Ultra96, scored
// against golden/prr through registers only (traffic/prr):
//
//   - placement: thousands of random batches released through the AXI debug
//     peripheral (§5) and read back bit for bit against the golden Switch
//     (§3.1-§3.2 placement, §4.4 output arbiters), with drains and full
//     queue-state read-backs in between;
//   - pipeline_latency: the pipeline latency from the hardware's timestamps
//     against §4.1-§4.2 / Table 1, and the port-to-port minimum (§5.2);
//   - throughput: line rate at input rate 1 against Width × f_clk (§5.2) and
//     the delivered fraction against the golden simulation (§5.1);
//   - latency: average and worst-case latency at input rate 1 for the three
//     traffic models of §5.1, and the average below saturation (Fig. 7)
//     for some, against golden simulation bands;
//   - drop_rate: drop rate at the declared FIFO depth against the golden
//     simulation at that depth (§5.1, Fig. 9).
//
// The runner judges the board as the build its manifest declares (config:
// P, S, FIFO depth, packet width, clock; reading P60): golden/prr is fed
// those, never the board's registers, and the registers test checks each
// board's build registers against them. Another build needs its own
// manifest version.
package prr

import (
	"context"
	"fmt"
	"hash/fnv"
	"time"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/drivers"
	"github.com/labrunner/labrunner/labconfig"
	"github.com/labrunner/labrunner/results"
	"github.com/labrunner/labrunner/selftest"
	tp "github.com/labrunner/labrunner/traffic/prr"
)

const design = tp.Design

// placementParams are the placement test's parameters.
type placementParams struct {
	Batches      int `param:"batches" min:"1" max:"1000000" doc:"random batches"`
	CheckEvery   int `param:"check_every" min:"1" doc:"batches between full read-backs: OFFSET, ARB_INDEX, QSTAT, QTAGS"`
	DrainEvery   int `param:"drain_every" min:"1" doc:"batches between drains, whose egress order is checked"`
	ResetEvery   int `param:"reset_every" min:"1" doc:"batches between CLEAR_QUEUES"`
	MaxDiffering int `param:"max_differing" min:"1" doc:"stop after this many differing batches or read-backs"`
}

// pipelineParams are the pipeline_latency test's parameters.
type pipelineParams struct {
	Batches int `param:"batches" min:"1" max:"4096" doc:"batches released for the timestamps"`
	Cycles  int `param:"cycles" min:"100" max:"67108864" doc:"light-load traffic-generator run for the port-to-port minimum"`
}

// runParams are the parameters the simulation-scored tests share (the
// latency test takes these alone). Runs shorter than minCycles are
// dominated by how a run ends (the traffic generator drains and counts
// every packet, golden/prr only those delivered within the run); each 10^6
// cycles cost about a second of emulator time and 0.2 s of CPU per golden
// replica.
type runParams struct {
	Cycles   int      `param:"cycles" min:"10000" max:"16777216" doc:"cycles of traffic per run (golden worst cases grow with it)"`
	Traffic  []string `param:"traffic" oneof:"uniform,bursty,nonuniform" doc:"the traffic models of FPGA'20 §5.1, one run each"`
	Replicas int      `param:"replicas" min:"2" max:"1000" doc:"golden simulation replicas for the band, shared by the tests (the band includes their range, which holds one more run with 99% probability for 199)"`
}

// defaultRun is every traffic model for 30000 cycles, scored against
// defaultReplicas golden replicas.
var defaultRun = runParams{Cycles: 30000, Traffic: []string{"uniform", "bursty", "nonuniform"}, Replicas: defaultReplicas}

// latencyParams are the latency test's parameters: every traffic model at
// input rate 1, and the mean latency below saturation for some of them
// (reading P62).
type latencyParams struct {
	runParams
	Loads       []float64 `param:"loads" above:"0" max:"1" doc:"input rates below saturation at which the mean latency is judged too (FPGA'20 §5.1, Fig. 7), one run each for the load_traffic models; empty for none"`
	LoadTraffic []string  `param:"load_traffic" oneof:"uniform,bursty,nonuniform" doc:"the traffic models run at the loads below saturation"`
}

// defaultLatency: input rate 0.9 is the highest rate (in steps of 0.05)
// whose mean-latency band stays within ±10% for uniform and nonuniform
// traffic at 30000 cycles; bursty traffic spreads ±15% there (reading P62).
var defaultLatency = latencyParams{runParams: defaultRun, Loads: []float64{0.9}, LoadTraffic: []string{"uniform", "nonuniform"}}

// CheckParams refuses a load at or above saturation (input rate 1 is
// always run) or one the generator's fixed-point rate rounds to 0.
func (p latencyParams) CheckParams() error {
	for _, l := range p.Loads {
		if f, err := tp.Fixed(l); err != nil || f == 0 || f >= tp.One {
			return &labconfig.ParamError{Key: "loads", Msg: fmt.Sprintf("load %g: the latency test runs input rate 1 for every traffic model; loads are the rates below it (the generator's rate is a multiple of 1/65536)", l),
				Fix: "write input rates above 0 and below 1, e.g. [0.9]"}
		}
	}
	if len(p.Loads) > 0 && len(p.LoadTraffic) == 0 {
		return &labconfig.ParamError{Key: "load_traffic", Msg: "loads below saturation with no traffic model to run them",
			Fix: "write load_traffic: [uniform, nonuniform], or no loads"}
	}
	return nil
}

// subLoads are the fixed-point loads below saturation (CheckParams has
// checked them).
func (p latencyParams) subLoads() []uint32 {
	var out []uint32
	for _, l := range p.Loads {
		f, _ := tp.Fixed(l)
		out = append(out, f)
	}
	return out
}

// throughputParams are the throughput test's parameters.
type throughputParams struct {
	runParams
	Warmup int `param:"warmup" min:"1" doc:"cycles before the line-rate window; more than the pipeline latency, fewer than cycles"`
}

// CheckParams refuses a warm-up that leaves no line-rate window.
func (p throughputParams) CheckParams() error {
	if p.Warmup >= p.Cycles {
		return &labconfig.ParamError{Key: "warmup", Msg: fmt.Sprintf("warmup %d leaves no line-rate window in a run of %d cycles", p.Warmup, p.Cycles),
			Fix: fmt.Sprintf("write a warmup of 1..%d, or more cycles", p.Cycles-1)}
	}
	return nil
}

// dropRateParams are the drop_rate test's parameters.
type dropRateParams struct {
	runParams
	Loads []float64 `param:"loads" above:"0" max:"1" doc:"input rates, one run each"`
}

// CheckParams refuses a load the traffic generator's fixed-point rate
// rounds to 0.
func (p dropRateParams) CheckParams() error {
	for _, l := range p.Loads {
		if f, err := tp.Fixed(l); err != nil || f == 0 {
			return &labconfig.ParamError{Key: "loads", Msg: fmt.Sprintf("load %g rounds to an input rate of 0 (the traffic generator's rate is a fraction of 2^32)", l),
				Fix: "write a larger load"}
		}
	}
	return nil
}

// planParams is what a PRR plan takes in its params: nothing. The build
// (P, S, FIFO depth) is the manifest's (reading P60): another FIFO depth is
// another bitstream, never a plan parameter.
type planParams struct{}

// boardParams is what each board of a PRR plan takes in its params:
// nothing, each board being a switch on its own.
type boardParams struct{}

func init() {
	selftest.RegisterNoSetup(design, "each PRR board is a switch on its own, with no cables to other boards: "+
		"every test opens its boards' switches (open) and configures what it uses",
		selftest.DesignParams{Plan: planParams{}, Board: boardParams{}})
	selftest.Register(selftest.Test{Name: "placement", Design: design, Run: runPlacement,
		Params: placementParams{Batches: 2000, CheckEvery: 64, DrainEvery: 16, ResetEvery: 1000, MaxDiffering: 20},
		Doc: "random batches (seeded from the lab seed and the board) written into the debug peripheral's batch " +
			"registers, released in one cycle and read back (PLACEMENT) bit for bit against golden/prr's Switch: " +
			"group, queue and entry of every packet, drops at full queues (FPGA'20 §3.1-§3.2, §5); between them " +
			"drains whose departure order per port is checked against the golden output arbiters (§4.4), and full " +
			"read-backs of offset counters, arbiter indices, queue fill levels and queue contents. A mismatch names " +
			"the first differing batch, slot, expected and read-back queue, and what the pattern suggests (offset " +
			"counter, sorting-network order of equal keys, output arbiter)"})
	selftest.Register(selftest.Test{Name: "pipeline_latency", Design: design, Run: runPipelineLatency,
		Params: pipelineParams{Batches: 16, Cycles: 20000},
		Doc: "pipeline latency in cycles of the declared build (P, S from the manifest's config:) from LAST_ENQ_CYCLE - " +
			"LAST_INS_CYCLE and the queue entries' own timestamps, against FPGA'20 §4.1-§4.2 / Table 1 " +
			"(golden PipelineFor); port-to-port minimum latency at light load (TG_LAT_MIN) against " +
			"(latency_opt + 1)/f_clk (§5.2). Other P and S need their own bitstream"})
	selftest.Register(selftest.Test{Name: "throughput", Design: design, Run: runThroughput,
		Params: throughputParams{runParams: defaultRun, Warmup: 64},
		Doc: "at input rate 1: line rate with a permutation (every input to its own port) against Width × f_clk " +
			"(FPGA'20 §5.2, golden LineGbps, from PKT_BITS and CLOCK_KHZ), and the delivered fraction per port " +
			"under each §5.1 traffic model against the golden simulation at the declared FIFO depth"})
	selftest.Register(selftest.Test{Name: "latency", Design: design, Run: runLatency,
		Params: defaultLatency,
		Doc: "average and worst-case latency at input rate 1 for the three traffic models of FPGA'20 §5.1 " +
			"(queue wait + 1: the paper's latency with 0-cycle processing) against golden simulation bands of the " +
			"same run length at the declared FIFO depth, and the average latency at the loads below saturation " +
			"(Fig. 7's curves, where one run's mean spreads a few percent, not the ±25% of input rate 1); " +
			"departures in order and nothing stranded when nothing was dropped (§4.4); packets conserved"})
	selftest.Register(selftest.Test{Name: "drop_rate", Design: design, Run: runDropRate,
		Params: dropRateParams{runParams: defaultRun, Loads: []float64{1}},
		Doc: "drop rate at the declared FIFO depth (FIFO_DEPTH is a build parameter, judged by registers.config) per traffic model and " +
			"input rate, against the golden simulation at that depth with the same cycles (FPGA'20 §5.1, Fig. 9)"})
}

// open resolves the driver's addresses and opens the board as the build
// the manifest declares (reading P60): golden/prr is fed the declared P,
// S, FIFO depth, packet width and clock, never the board's registers; the
// registers test judges those registers against the same declaration, and
// the board's own CLOCK_KHZ and PKT_BITS only convert its counts to time
// and bits (sw.HW).
func open(ctx context.Context, env *selftest.Env, b *selftest.Board) (*tp.Switch, error) {
	decl, err := declaredBuild(env.Design)
	if err != nil {
		return nil, drivers.Setup("", "design "+env.Design.Name, "declare the value in the manifest's config: block", err)
	}
	rctx, cancel := steps(ctx, env, 4)
	defer cancel()
	sw, err := tp.OpenAs(rctx, b.Regs, decl)
	if err != nil {
		return nil, fmt.Errorf("board %s: %w", b.Name, err)
	}
	return sw, nil
}

// declaredBuild is the build the manifest declares (config:).
func declaredBuild(m *bitstreams.Manifest) (tp.Build, error) {
	var b tp.Build
	v := map[string]float64{}
	for _, name := range []string{"ports", "s", "fifo_depth", "packet_bits", "clock_khz"} {
		c, err := m.Declared(name)
		if err != nil {
			return b, err
		}
		v[name] = c.Value
	}
	b = tp.Build{Ports: int(v["ports"]), S: int(v["s"]), FIFODepth: int(v["fifo_depth"]), PacketBits: int(v["packet_bits"]), ClockKHz: uint32(v["clock_khz"])}
	return b, b.Check()
}

// steps bounds a sequence of n register accesses (bursts count as one).
func steps(ctx context.Context, env *selftest.Env, n int) (context.Context, context.CancelFunc) {
	d := env.Deadlines.Register
	if d <= 0 {
		d = 2 * time.Second
	}
	return drivers.Deadline(ctx, d*time.Duration(n))
}

// boardSeed derives a board's seed from the lab seed, so that the same lab
// and board give the same batches and runs, and boards differ.
func boardSeed(env *selftest.Env, board, purpose string) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%s/%s", env.Lab.Seed, board, purpose)
	return h.Sum64()
}

// setupErr marks a bad plan parameter as a setup error at its line.
func setupErr(env *selftest.Env, err error) error {
	return drivers.Setup("", "test "+env.Test.Name, "fix the test's params at "+env.Test.Pos.String(), err)
}

// buildParams are the measurement parameters every PRR figure carries.
func buildParams(b tp.Build) results.Params {
	return selftest.IntParams("p", b.Ports, "s", b.S, "depth", b.FIFODepth)
}
