package tin

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"

	"github.com/labrunner/labrunner/drivers"
	gt "github.com/labrunner/labrunner/golden/tin"
	"github.com/labrunner/labrunner/results"
	"github.com/labrunner/labrunner/selftest"
	tt "github.com/labrunner/labrunner/traffic/tin"
)

// rmaRun is one scenario of the §5.1 Fig. 9 experiment.
type rmaRun struct {
	name  string
	hipri bool
	bulk  bool
}

// runRMAIsolation repeats Aquila §5.1's Fig. 9 setup on the Clique:
// CliqueMap-like 4 KB reads at 10,000 QPS per client in the high-priority
// class alone, beside uniform-random bulk IP (64 KB-class messages on
// the bulk CoS), and in the low-priority class beside the same bulk. The
// paper's claims are judged: its baseline is "less than 5 µs median and
// tail latency", which golden/tin's simulation of the same reads on this
// Clique sharpens into a band (reading A64); high-priority 1RMA "uses
// different virtual channels than low-priority ... IP traffic and thus is
// nearly unaffected by adding the bulk traffic", and low-priority reads
// that share the bulk's VCs are slower: golden/tin's simulation of the
// same reads beside the same bulk gives both latencies and their bands
// (readings A30, A65). The Resp cells per read are scored against
// golden/tin (§3.4).
func runRMAIsolation(ctx context.Context, env *selftest.Env) error {
	c, err := cliqueOf(env)
	if err != nil {
		return err
	}
	prm, err := selftest.ParamsOf[rmaParams](env)
	if err != nil {
		return err
	}
	qps, bytes, reads, bulkLoad, bulkBytes := prm.QPS, prm.Bytes, prm.Reads, prm.BulkLoad, prm.BulkBytes
	// A packet is at most 32 cells (the data cell's RPTR index, docs/tin.md);
	// the generators would clamp a longer one silently.
	if lim := tt.MaxPacketCells * int(c.timing.DataPayload); bulkBytes < 1 || bulkBytes > lim {
		return fmt.Errorf("%s: bulk_bytes %d: an IP packet is 1..%d bytes on this build (%d cells of %d B)", env.Test.Pos, bulkBytes, lim, tt.MaxPacketCells, c.timing.DataPayload)
	}
	weight := prm.HipriWeight
	seed, err := c.seedOf(env)
	if err != nil {
		return err
	}
	if weight < 1 || weight > gt.MaxHiPriWeight {
		return fmt.Errorf("%s: hipri_weight %d: QOS_WEIGHT takes 1..%d cells per turn", env.Test.Pos, weight, gt.MaxHiPriWeight)
	}
	// Bulk long enough to cover the reads: reads/QPS seconds of traffic at
	// bulkLoad of the injection rate, plus a quarter.
	durS := float64(reads) / float64(qps)
	bulkCount := max(1, int(math.Ceil(1.25*durS*bulkLoad*float64(c.timing.InjectMbps)*1e6/8/float64(bulkBytes))))
	// golden/tin's read latency alone is a run of the reads this test
	// makes: every board issues `reads` reads at `qps`, with the declared
	// PCIe times and Resp tag (never the boards' registers, reading A60)
	// and the lab's cables (reading A29). A run of reads is short, and the
	// median of its reads, drawn from pairs inside a pod and between pods
	// whose latencies differ by 10%, moves much between runs: golden makes
	// its most runs, for a spread that does not depend on the seed's luck
	// (16 runs gave half-widths of 56 to 136 ns by seed).
	g := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	// The same reads beside the bulk this test sends, high and low
	// priority (reading A30): the plan's load, packet size, packets per
	// board and weight of the high class against the bulk's 1.
	set := map[string]string{"reads": strconv.Itoa(bytes), "rma_count": strconv.Itoa(reads), "rma_qps": strconv.Itoa(qps),
		"seed": strconv.FormatUint(seed, 10), "cable_spread_ns": g(cableSpread(c.topo)), "replicas": strconv.Itoa(gt.MaxReplicas),
		"rma_bulk_load": g(bulkLoad), "rma_bulk_bytes": strconv.Itoa(bulkBytes), "rma_bulk_packets": strconv.Itoa(bulkCount),
		"rma_hipri_weight": strconv.Itoa(weight), "rma_bulk_runs": strconv.Itoa(rmaBulkRuns)}
	for key, name := range map[string]string{"rma_mem_ns": "rma_mem_ns", "rma_cpl_ns": "rma_cpl_ns", "resp_tag": "resp_tag_bytes"} {
		d, err := env.Design.Declared(name)
		if err != nil {
			return drivers.Setup("", "design "+env.Design.Name, "declare the value in the manifest's config: block", err)
		}
		set[key] = g(d.Value)
	}
	es, err := c.golden(set)
	if err != nil {
		return err
	}
	lat := map[string][]float64{}
	for _, sc := range []rmaRun{{"hi_alone", true, false}, {"hi_bulk", true, true}, {"lo_bulk", false, true}} {
		p := results.Params{"scenario": sc.name, "bytes": strconv.Itoa(bytes)}
		if err := c.fresh(ctx); err != nil {
			return err
		}
		// §5.1's Fig. 9 setup gives the high-priority class 8:1 of the
		// egress scheduling against the bulk class; in the TiN's output
		// buffers that is the WRR weight of the class RMA_TC.HI names
		// (§3.1: weighted round robin between VCs).
		if err := setClassWeight(ctx, c, "RMA_TC.HI", weight); err != nil {
			return err
		}
		ws, err := tt.RMAReads{QPS: qps, Bytes: bytes, Count: reads, HiPri: sc.hipri, Seed: seed}.Writes(c.topo)
		if err != nil {
			return err
		}
		if err := c.r.Load(ctx, ws); err != nil {
			return err
		}
		if sc.bulk {
			bw, err := tt.UniformRandom{Load: bulkLoad, Bytes: bulkBytes, Count: bulkCount, Port: tt.EPNIC, CoS: 0, Seed: seed}.Writes(c.topo, c.timing.InjectMbps)
			if err != nil {
				return err
			}
			if err := c.r.Load(ctx, bw); err != nil {
				return err
			}
		}
		rr, err := c.run(ctx)
		if err != nil {
			return err
		}
		if !runStatus(env, "rma_isolation", rr, p, "1RMA reads, scenario "+sc.name) {
			why := "the reads of scenario " + sc.name + " did not finish (rma_isolation.run)"
			notJudged(env, "", p, why, "rma_isolation.resp_cells")
			for _, st := range []string{"p50", "p99"} {
				pp := p.Clone()
				pp["stat"] = st
				notJudged(env, "", pp, why, "rma_isolation.latency")
			}
			continue
		}
		class := tt.LatRMAHi
		if !sc.hipri {
			class = tt.LatRMALo
		}
		s, err := c.r.AllSamples(ctx, class)
		if err != nil {
			env.Error("rma_isolation", "", p, err)
			continue
		}
		sort.Float64s(s)
		lat[sc.name] = s
		done, err := c.r.Sum(ctx, "RMA_READS_DONE")
		if err != nil {
			return err
		}
		cells, err := c.r.Sum(ctx, "RMA_RESP_CELLS_RECEIVED")
		if err != nil {
			return err
		}
		if e, ok := expectation(es, "tin.rma.resp_cells", results.Params{"bytes": strconv.Itoa(bytes)}); !ok {
			env.Error("rma_isolation.resp_cells", "", p, fmt.Errorf("golden/tin predicted no tin.rma.resp_cells for %d bytes", bytes))
		} else if done == 0 {
			env.Check("rma_isolation.resp_cells", results.Measurement{Params: p, Metric: "tin.rma.reads_done", Value: 0, Unit: "reads"}, false,
				e.Describe()+" per read", e.Source, "no read completed (RMA_READS_DONE 0): Resp cells per read cannot be counted")
		} else {
			env.Record("rma_isolation.resp_cells", results.Measurement{Params: p, Metric: "tin.rma.resp_cells", Value: float64(cells) / float64(done), Unit: "cells"}, e)
		}
		for _, st := range []struct {
			name string
			q    float64
		}{{"p50", 0.5}, {"p99", 0.99}} {
			pp := p.Clone()
			pp["stat"] = st.name
			env.Check("rma_isolation.latency", results.Measurement{Params: pp, Metric: "tin.rma.latency", Value: percentile(s, st.q), Unit: "ns",
				Text: fmt.Sprintf("%d reads", len(s))}, len(s) > 0, "execution latency samples", "Aquila §5.1 (execution latency)",
				"no execution latency sample: no read completed")
		}
	}
	if err := c.r.Defaults(ctx, "QOS_WEIGHT[0]", "QOS_WEIGHT[1]", "QOS_WEIGHT[2]", "QOS_WEIGHT[3]", "QOS_WEIGHT[4]",
		"QOS_WEIGHT[5]", "QOS_WEIGHT[6]", "QOS_WEIGHT[7]", "QOS_WEIGHT[8]", "QOS_WEIGHT[9]"); err != nil {
		return err
	}
	alone, hb, lb := lat["hi_alone"], lat["hi_bulk"], lat["lo_bulk"]
	if len(alone) == 0 || len(hb) == 0 || len(lb) == 0 {
		why := fmt.Sprintf("a scenario has no latency samples (%d alone, %d high priority beside bulk, %d low priority beside bulk): see rma_isolation.run and rma_isolation.latency", len(alone), len(hb), len(lb))
		for _, st := range []string{"p50", "p99"} {
			notJudged(env, "", results.Params{"stat": st}, why, "rma_isolation.baseline", "rma_isolation.hipri", "rma_isolation.lopri")
		}
		return nil
	}
	// §5.1: "less than 5 µs median and tail latency" for high-priority 1RMA
	// alone; golden/tin's simulation of the same reads on this Clique gives
	// the figure and its band (reading A64). Beside bulk IP, high priority
	// "is nearly unaffected" and low priority, sharing the bulk's VCs, is
	// slower: golden/tin's simulation of the same reads beside the same
	// bulk gives both latencies and their bands (reading A65); the ratios
	// to the reads alone, and of low to high priority, are reported with
	// them. §5.1's "slightly higher than 10 µs" for low priority is the
	// testbed's, at its scale, and not held here (reading A62).
	for _, st := range []struct {
		name string
		q    float64
	}{{"p50", 0.5}, {"p99", 0.99}} {
		v := percentile(alone, st.q)
		m := results.Measurement{Params: results.Params{"stat": st.name}, Metric: "tin.rma.latency_alone", Value: v, Unit: "ns",
			Text: fmt.Sprintf("%d reads", len(alone))}
		if e, ok := expectation(es, "tin.rma.latency_alone", results.Params{"bytes": strconv.Itoa(bytes), "stat": st.name}); ok {
			env.Record("rma_isolation.baseline", m, e)
		} else {
			env.Error("rma_isolation.baseline", "", m.Params, fmt.Errorf("golden/tin predicted no tin.rma.latency_alone for %d-byte reads at the %s", bytes, st.name))
		}
		hi, lo := percentile(hb, st.q), percentile(lb, st.q)
		for _, sc := range []struct {
			name, prio string
			v          float64
			text       string
		}{
			{"rma_isolation.hipri", "hi", hi, fmt.Sprintf("%d reads; %.2fx the %s alone (%.0f ns)", len(hb), hi/v, st.name, v)},
			{"rma_isolation.lopri", "lo", lo, fmt.Sprintf("%d reads; %.2fx the %s of high priority beside the same bulk (%.0f ns)", len(lb), lo/hi, st.name, hi)},
		} {
			m := results.Measurement{Params: results.Params{"stat": st.name}, Metric: "tin.rma.latency_bulk", Value: sc.v, Unit: "ns", Text: sc.text}
			if e, ok := expectation(es, "tin.rma.latency_bulk", results.Params{"bytes": strconv.Itoa(bytes), "priority": sc.prio, "stat": st.name}); ok {
				env.Record(sc.name, m, e)
			} else {
				env.Error(sc.name, "", m.Params, fmt.Errorf("golden/tin predicted no tin.rma.latency_bulk for %d-byte reads, %s priority, at the %s", bytes, sc.prio, st.name))
			}
		}
	}
	return nil
}

// rmaBulkRuns is how many golden runs of the reads beside bulk IP the test
// asks for, per priority: each simulates the bulk's whole span (about half
// a second of CPU on the lab's Clique), so few, with the bootstrap over
// their reads pooled as the floor of their spread (readings A30, A65).
const rmaBulkRuns = 3

// setClassWeight writes the WRR weight of the traffic class a TC register
// field names on every board.
func setClassWeight(ctx context.Context, c *clique, field string, weight int) error {
	if weight < 1 || weight > 255 {
		return fmt.Errorf("class weight %d: QOS_WEIGHT takes 1..255 cells per turn", weight)
	}
	for _, b := range c.topo.Boards {
		tc, err := c.r.Read(ctx, b, field)
		if err != nil {
			return err
		}
		if err := c.r.Write(ctx, b, "QOS_WEIGHT["+strconv.Itoa(int(tc))+"]", uint32(weight)); err != nil {
			return err
		}
	}
	return nil
}

// cableSpread is the most a cable of the Clique differs from the mean
// flight time of its kind (local or global), which golden/tin is given:
// the lab's own path variation between boards.
func cableSpread(t *tt.Topology) float64 {
	mean := map[tt.Role]float64{}
	spread := 0.0
	for _, b := range t.Boards {
		for _, p := range t.Ports[b] {
			if p.Peer == "" {
				continue
			}
			m, ok := mean[p.Role]
			if !ok {
				m = t.MeanLatency(p.Role)
				mean[p.Role] = m
			}
			spread = max(spread, math.Abs(p.LatencyNS-m))
		}
	}
	return spread
}
