package selftest

import (
	"context"
	"time"

	"github.com/labrunner/labrunner/drivers/uartbridge"
	"github.com/labrunner/labrunner/labconfig"
	"github.com/labrunner/labrunner/results"
)

// BusCounters are a board's UART bridge counters at one moment.
type BusCounters = uartbridge.Stats

// HarnessTest is the test name of the records the runner makes about the
// harness itself (bus counters), not about the design.
const HarnessTest = "harness.bridge"

// busCounters reads the bridge counters of the plan's boards that have a
// bridge.
func (r *Runner) busCounters(plan *labconfig.Plan) map[string]BusCounters {
	out := map[string]BusCounters{}
	for _, pb := range plan.Boards {
		if b, ok := r.Boards[pb.Board]; ok && b.BridgeStats != nil {
			out[pb.Board] = b.BridgeStats()
		}
	}
	return out
}

// busMetric is one bridge counter as a measurement.
type busMetric struct {
	name, unit string
	value      func(before, after BusCounters) float64
}

func delta(f func(BusCounters) uint64) func(before, after BusCounters) float64 {
	return func(before, after BusCounters) float64 { return float64(f(after) - f(before)) }
}

// busMetrics are the counters recorded per board and plan: what the line
// cost (retries, resends, timeouts) and why (CRC errors, bad headers,
// stale answers, bytes dropped while resynchronising). A benign fault of
// the line (a noisy or lossy cable) passes every verdict and shows here.
var busMetrics = []busMetric{
	{"requests", "requests", delta(func(s BusCounters) uint64 { return s.Requests })},
	{"retries", "attempts", delta(func(s BusCounters) uint64 { return s.Retries })},
	{"resends", "attempts", delta(func(s BusCounters) uint64 { return s.Resends })},
	{"timeouts", "attempts", delta(func(s BusCounters) uint64 { return s.Timeouts })},
	{"failures", "requests", delta(func(s BusCounters) uint64 { return s.Failures })},
	{"crc_errors", "frames", delta(func(s BusCounters) uint64 { return s.CRCErrors })},
	{"bad_headers", "frames", delta(func(s BusCounters) uint64 { return s.BadHeaders })},
	{"stale", "frames", delta(func(s BusCounters) uint64 { return s.Stale })},
	{"late", "requests", delta(func(s BusCounters) uint64 { return s.Late })},
	{"busy", "answers", delta(func(s BusCounters) uint64 { return s.Busy })},
	{"dropped_bytes", "bytes", delta(func(s BusCounters) uint64 { return s.DroppedBytes })},
	{"split_bursts", "bursts", delta(func(s BusCounters) uint64 { return s.SplitBursts })},
	// What the plan moved over the line, both ways: on a rack of
	// USB-UARTs, its line time (docs/uart-bridge.md, "Sizes on the wire").
	{"tx_bytes", "bytes", delta(func(s BusCounters) uint64 { return s.TxBytes })},
	{"rx_bytes", "bytes", delta(func(s BusCounters) uint64 { return s.RxBytes })},
	// How many of the requests went through the window, in how many
	// batches: the round trips the plan waited for are requests -
	// pipelined + batches (docs/uart-bridge.md, "Window").
	{"pipelined", "requests", delta(func(s BusCounters) uint64 { return s.Pipelined })},
	{"batches", "batches", delta(func(s BusCounters) uint64 { return s.Batches })},
	{"turnaround_ms", "ms", func(_, after BusCounters) float64 { return float64(after.Turnaround) / float64(time.Millisecond) }},
}

// BusMetricNames lists the metric names of the bridge counters
// ("harness.bridge.retries", ...), for reports.
func BusMetricNames() []string {
	out := make([]string, len(busMetrics))
	for i, m := range busMetrics {
		out[i] = HarnessTest + "." + m.name
	}
	return out
}

// recordBusCounters records, for each board of the plan with a bridge, what
// its counters moved by during the plan, as measurements without verdicts
// (step plan#harness: a resumed run keeps its latest attempt's).
func (pr *planRun) recordBusCounters(ctx context.Context) {
	after := pr.r.busCounters(pr.plan)
	step := pr.plan.Name + "#harness"
	design := ""
	if pr.env.Design != nil {
		design = pr.env.Design.Name
	}
	now := time.Now()
	for _, pb := range pr.plan.Boards {
		a, ok := after[pb.Board]
		if !ok {
			continue
		}
		b := pr.busBefore[pb.Board]
		for _, bm := range busMetrics {
			m := results.Measurement{Time: now, Plan: pr.plan.Name, Test: HarnessTest, Board: pb.Board, Design: design,
				Metric: HarnessTest + "." + bm.name, Value: bm.value(b, a), Unit: bm.unit, Step: step}
			if err := pr.rec.AddMeasurement(m); err != nil {
				pr.log.Error("recording a bus counter failed", "board", pb.Board, "metric", m.Metric, "err", err)
			}
		}
	}
	if len(after) > 0 && ctx.Err() == nil {
		pr.rec.MarkDone(step, results.KindSetup)
	}
}
