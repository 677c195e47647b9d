package prr

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	gp "github.com/labrunner/labrunner/golden/prr"
	"github.com/labrunner/labrunner/results"
	"github.com/labrunner/labrunner/selftest"
	tp "github.com/labrunner/labrunner/traffic/prr"
)

// formulas returns golden/prr's closed-form expectations (§4.1-§4.2,
// Table 1, §5.2) for the declared build, by metric.
func formulas(b tp.Build) (map[string]results.Expectation, error) {
	exps, err := gp.Model{}.Predict(map[string]string{
		"p": fmt.Sprint(b.Ports), "s": fmt.Sprint(b.S), "width_bits": fmt.Sprint(b.PacketBits),
		"clock_mhz": fmt.Sprint(b.ClockMHz()), "traffic": "", "algs": "",
	})
	if err != nil {
		return nil, fmt.Errorf("golden/prr for the build %s: %w", b, err)
	}
	out := map[string]results.Expectation{}
	for _, e := range exps {
		out[e.Metric] = e
	}
	return out, nil
}

const loadedBuildNote = "; golden fed the declared build (manifest config:, reading P60): other P and S need their own bitstream (docs/prr.md)"

// runPipelineLatency measures the pipeline latency three ways on the
// loaded build: LAST_ENQ_CYCLE - LAST_INS_CYCLE of released batches, the
// timestamps each queue entry keeps, and port-to-port latency under light
// traffic (minimum, and latency - wait - 1 for every packet).
func runPipelineLatency(ctx context.Context, env *selftest.Env) error {
	p, err := selftest.ParamsOf[pipelineParams](env)
	if err != nil {
		return err
	}
	n, cycles := p.Batches, p.Cycles
	for _, b := range env.Boards {
		sw, err := open(ctx, env, b)
		if err != nil {
			env.Error("pipeline_latency", b.Name, nil, err)
			continue
		}
		exps, err := formulas(sw.Build)
		if err != nil {
			env.Error("pipeline_latency", b.Name, buildParams(sw.Build), err)
			continue
		}
		if err := pipelineFromReleases(ctx, env, b, sw, exps, n); err != nil {
			env.Error("pipeline_latency", b.Name, buildParams(sw.Build), fmt.Errorf("board %s: %w", b.Name, err))
		}
		if err := pipelineFromTraffic(ctx, env, b, sw, exps, cycles); err != nil {
			env.Error("pipeline_latency.port_to_port", b.Name, buildParams(sw.Build), fmt.Errorf("board %s: %w", b.Name, err))
		}
	}
	return nil
}

// pipelineShape returns batch k of the timestamp run: one packet, a
// permutation, every input to one port, half the inputs, and an empty batch
// now and then (whose LAST_ENQ_CYCLE must equal LAST_INS_CYCLE).
func pipelineShape(k, p int) []tp.Slot {
	slots := make([]tp.Slot, p)
	switch k % 5 {
	case 0:
		slots[k%p] = tp.Slot{Valid: true, Dest: (k / 5) % p}
	case 1:
		for i := range slots {
			slots[i] = tp.Slot{Valid: true, Dest: (i + k) % p}
		}
	case 2:
		for i := range slots {
			slots[i] = tp.Slot{Valid: true, Dest: k % p}
		}
	case 3:
		for i := 0; i < p; i += 2 {
			slots[i] = tp.Slot{Valid: true, Dest: (3*i + k) % p}
		}
	case 4: // empty
	}
	return slots
}

func pipelineFromReleases(ctx context.Context, env *selftest.Env, b *selftest.Board, sw *tp.Switch, exps map[string]results.Expectation, n int) error {
	p := sw.Build.Ports
	cctx, cancel := steps(ctx, env, 2)
	err := sw.Command(cctx, tp.CmdClearQueues|tp.CmdClearBatch)
	cancel()
	if err != nil {
		return err
	}
	seen := map[uint32]int{} // pipeline cycles -> batches
	var problems []string
	entries := 0
	for k := 0; k < n; k++ {
		slots := pipelineShape(k, p)
		bctx, cancel := steps(ctx, env, 2*p+12)
		st, placement, err := releaseTagged(bctx, sw, slots, k)
		if err != nil {
			cancel()
			return err
		}
		valid := 0
		for _, s := range slots {
			if s.Valid {
				valid++
			}
		}
		if valid == 0 {
			if st.LastEnq != st.LastIns && len(problems) < 4 {
				problems = append(problems, fmt.Sprintf("empty batch %d: LAST_ENQ_CYCLE %d differs from LAST_INS_CYCLE %d", k, st.LastEnq, st.LastIns))
			}
			cancel()
			continue
		}
		seen[st.PipelineCycles()]++
		// The queue entries keep their own timestamps: read the first
		// placed packet of the batch back in full.
		for i, w := range placement {
			pl := tp.DecodePlacement(w)
			if !pl.Placed || !slots[i].Valid {
				continue
			}
			e, err := sw.ReadEntry(bctx, pl.Group, pl.Queue, pl.Pos)
			if err != nil {
				cancel()
				return err
			}
			entries++
			var bad []string
			if !e.Valid {
				bad = append(bad, "QREAD_STATUS.VALID is 0")
			} else {
				if e.TsIns != st.LastIns || e.TsEnq != st.LastEnq {
					bad = append(bad, fmt.Sprintf("TS_INS %d, TS_ENQ %d where the release says %d, %d", e.TsIns, e.TsEnq, st.LastIns, st.LastEnq))
				}
				if e.Src != i || e.Dest != slots[i].Dest&(p-1) {
					bad = append(bad, fmt.Sprintf("SRC %d DEST %d, written as slot %d DEST %d", e.Src, e.Dest, i, slots[i].Dest))
				}
				if len(e.Data) == 0 || e.Data[0] != tagOf(k, i) {
					bad = append(bad, fmt.Sprintf("data word 0 is not the tag %s", describeTag(tagOf(k, i))))
				}
			}
			if len(bad) > 0 && len(problems) < 4 {
				problems = append(problems, fmt.Sprintf("batch %d slot %d, group %d queue %d entry %d: %s", k, i, pl.Group, pl.Queue, pl.Pos, strings.Join(bad, ", ")))
			}
			break
		}
		cancel()
	}

	pp := selftest.IntParams("p", sw.Build.Ports, "s", sw.Build.S)
	exp := exps["prr.pipeline_latency"]
	exp.Note += loadedBuildNote
	values := slices.Sorted(maps.Keys(seen))
	if len(values) == 1 {
		pr := pp.Clone()
		pr["from"] = "release"
		env.Record("pipeline_latency", results.Measurement{Board: b.Name, Params: pr, Metric: "prr.pipeline_latency",
			Value: float64(values[0]), Unit: "cycles"}, exp)
	} else {
		var parts []string
		for _, v := range values {
			parts = append(parts, fmt.Sprintf("%d cycles in %d batches", v, seen[v]))
		}
		msg := "LAST_ENQ_CYCLE - LAST_INS_CYCLE varies between batches: " + strings.Join(parts, ", ") + " (the pipeline has a fixed length, §4.1)"
		pr := pp.Clone()
		pr["from"] = "release"
		env.Check("pipeline_latency", results.Measurement{Board: b.Name, Params: pr, Metric: "prr.pipeline_latency",
			Value: float64(slices.Max(values)), Unit: "cycles", Text: msg}, false, exp.Describe(), exp.Source, msg)
	}
	msg := strings.Join(problems, "; ")
	env.Check("pipeline_latency.timestamps", results.Measurement{Board: b.Name, Params: pp, Metric: "prr.pipeline_latency.entries_checked",
		Value: float64(entries), Unit: "entries", Text: msg}, len(problems) == 0 && entries > 0,
		"every entry read back keeps its batch's insertion and enqueue cycles, its source, destination and tag; an empty batch has LAST_ENQ_CYCLE = LAST_INS_CYCLE",
		"FPGA'20 §5 (debug peripheral), docs/prr.md (timestamps)", msg)
	return nil
}

// releaseTagged writes slots with their tags, releases them and reads the
// placement back.
func releaseTagged(ctx context.Context, sw *tp.Switch, slots []tp.Slot, k int) (tp.Status, []uint32, error) {
	for i, s := range slots {
		if s.Valid {
			if err := sw.WriteTag(ctx, i, tagOf(k, i)); err != nil {
				return tp.Status{}, nil, err
			}
		}
	}
	if err := sw.Load(ctx, slots); err != nil {
		return tp.Status{}, nil, err
	}
	st, err := sw.Release(ctx)
	if err != nil {
		return st, nil, err
	}
	w, err := sw.ReadPlacement(ctx)
	return st, w, err
}

// pipelineFromTraffic runs uniform traffic at a light load (1/64), where
// packets meet empty queues: the least port-to-port latency is
// latency_opt + 1 (§5.2), and every packet's latency minus its queue wait
// is latency_opt + 1.
func pipelineFromTraffic(ctx context.Context, env *selftest.Env, b *selftest.Board, sw *tp.Switch, exps map[string]results.Expectation, cycles int) error {
	c := tp.DefaultTG()
	c.Model, c.Load, c.Cycles = tp.Uniform, tp.One/64, uint32(cycles)
	c.Seed = uint32(boardSeed(env, b.Name, "pipeline"))
	r, err := runTG(ctx, env, sw, c)
	if err != nil {
		return err
	}
	pp := selftest.IntParams("p", sw.Build.Ports, "s", sw.Build.S)
	if r.Delivered == 0 {
		env.Check("pipeline_latency.port_to_port", results.Measurement{Board: b.Name, Params: pp, Metric: "prr.port_to_port_latency", Unit: "ns",
			Text: "no packet delivered"}, false, "packets delivered", "FPGA'20 §5.2", fmt.Sprintf("a %d-cycle run at load 1/64 delivered nothing (offered %d)", cycles, r.Offered))
		return nil
	}
	exp := exps["prr.port_to_port_latency"]
	exp.Note += loadedBuildNote + fmt.Sprintf("; TG_LAT_MIN of a %d-cycle uniform run at input rate 1/64", cycles)
	pr := pp.Clone()
	pr["clock_mhz"] = fmt.Sprint(sw.Build.ClockMHz())
	// Cycles become time at the board's own clock (CLOCK_KHZ): golden's
	// figure is at the declared clock, so a build that misses it fails.
	env.Record("pipeline_latency.port_to_port", results.Measurement{Board: b.Name, Params: pr, Metric: "prr.port_to_port_latency",
		Value: float64(r.LatMin) * 1e3 / sw.HW.ClockMHz(), Unit: "ns"}, exp)

	// latency - wait = (queue write - insertion) + 1 for every packet: the
	// sums differ by (latency_opt + 1) × delivered exactly.
	per := float64(r.LatSum-r.WaitSum)/float64(r.Delivered) - 1
	lexp := exps["prr.pipeline_latency"]
	lexp.Note += loadedBuildNote + "; (TG_LAT_SUM - TG_WAIT_SUM)/TG_DELIVERED - 1 over every packet of the light-load run"
	pr = pp.Clone()
	pr["from"] = "traffic"
	env.Record("pipeline_latency.traffic", results.Measurement{Board: b.Name, Params: pr, Metric: "prr.pipeline_latency",
		Value: per, Unit: "cycles"}, lexp)
	return nil
}
