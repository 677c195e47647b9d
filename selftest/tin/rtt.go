package tin

import (
	"context"
	"fmt"
	"sort"
	"strconv"

	gt "github.com/labrunner/labrunner/golden/tin"
	"github.com/labrunner/labrunner/results"
	"github.com/labrunner/labrunner/selftest"
	tt "github.com/labrunner/labrunner/traffic/tin"
)

// runRTT measures the fabric RTT of uniform-random IP with Poisson arrivals
// at several offered loads (§5.1: NIC timestamps, the reply sent at once by
// the destination), mean and 99th percentile over every board's samples,
// and scores them against golden/tin's simulation of the same Clique: same
// shape and global wiring, the build's declared link rate, injection rate,
// fall-through, PCS and FEC, the lab's cable delays, the declared CTS
// window, the same packet and reply sizes, and runs as long as the
// measurement: as many requests as it has samples.
func runRTT(ctx context.Context, env *selftest.Env) error {
	c, err := cliqueOf(env)
	if err != nil {
		return err
	}
	prm, err := selftest.ParamsOf[rttParams](env)
	if err != nil {
		return err
	}
	loads, bytes, reply, count, replicas := prm.Loads, prm.Bytes, prm.Reply, prm.Count, prm.Replicas
	seed, err := c.seedOf(env)
	if err != nil {
		return err
	}
	ls := make([]string, len(loads))
	for i, l := range loads {
		ls[i] = strconv.FormatFloat(l, 'g', -1, 64)
	}
	for i, load := range loads {
		p := results.Params{"load": ls[i], "bytes": strconv.Itoa(bytes)}
		if err := c.fresh(ctx); err != nil {
			return err
		}
		// The fabric as golden/tin simulates it: RTS, CTS and CTD hashed
		// over minimal routes (§3.3: deterministic, for their order; the
		// reset's plain "deterministic" mode also hashes onto non-minimal
		// candidates, §3.2), data cells fully adaptive (sim_mode above):
		// reading A6, Aquila §3.2, §3.3.
		for _, f := range []string{"ROUTE_MODE.RTS", "ROUTE_MODE.CTS"} {
			if err := c.r.WriteAll(ctx, f, 3); err != nil {
				return err
			}
		}
		if err := c.r.WriteAll(ctx, "ROUTE_MODE.DATA", 0); err != nil {
			return err
		}
		ws, err := tt.UniformRandom{Load: load, Bytes: bytes, Count: count, Reply: true, ReplyBytes: reply, Port: tt.EPNIC, Seed: seed + uint64(i)}.
			Writes(c.topo, c.timing.InjectMbps)
		if err != nil {
			return err
		}
		if err := c.r.Load(ctx, ws); err != nil {
			return err
		}
		rr, err := c.run(ctx)
		if err != nil {
			return err
		}
		stats := func(why string) {
			for _, st := range []string{"mean", "p99"} {
				pp := p.Clone()
				pp["stat"] = st
				notJudged(env, "", pp, why, "rtt")
			}
		}
		if !runStatus(env, "rtt", rr, p, fmt.Sprintf("uniform-random traffic at load %s", ls[i])) {
			notJudged(env, "", p, "the run at this load did not finish (rtt.run)", "rtt.samples")
			stats("the run at this load did not finish (rtt.run)")
			continue
		}
		s, err := c.r.AllSamples(ctx, tt.LatIP)
		if err != nil {
			env.Error("rtt.samples", "", p, err)
			stats("the RTT samples could not be read (rtt.samples)")
			continue
		}
		// One sample per request the generators were asked for.
		sent := tt.Total(ws, "IPG_COUNT")
		env.Check("rtt.samples", results.Measurement{Params: p, Metric: "tin.fabric.rtt_samples", Value: float64(len(s)), Unit: "samples"}, uint64(len(s)) == sent,
			fmt.Sprintf("%d samples, one per request", sent), "docs/tin.md (LAT class 0 with REPLY)",
			fmt.Sprintf("%d RTT samples for %d requests: requests not sent, replies lost or samples overflowed", len(s), sent))
		if len(s) == 0 {
			stats("no RTT sample (rtt.samples)")
			continue
		}
		// The band is the spread of golden runs as long as this
		// measurement: as many requests as it has samples.
		es, err := c.golden(map[string]string{"loads": ls[i], "bytes": strconv.Itoa(bytes), "reply": strconv.Itoa(reply),
			"measured": strconv.Itoa(max(len(s), gt.MinMeasured)), "replicas": strconv.Itoa(replicas),
			"seed": strconv.FormatUint(seed, 10), "sim_mode": "fully-adaptive"})
		if err != nil {
			return err
		}
		sort.Float64s(s)
		for _, st := range []struct {
			stat string
			v    float64
		}{{"mean", mean(s)}, {"p99", percentile(s, 0.99)}} {
			pp := p.Clone()
			pp["stat"] = st.stat
			e, ok := expectation(es, "tin.fabric.rtt", pp)
			if !ok {
				env.Error("rtt", "", pp, fmt.Errorf("golden/tin predicted no tin.fabric.rtt for %v", pp))
				continue
			}
			m := results.Measurement{Params: pp, Metric: "tin.fabric.rtt", Value: st.v, Unit: "ns",
				Text: fmt.Sprintf("%d samples, p50 %.0f ns, max %.0f ns", len(s), percentile(s, 0.5), s[len(s)-1])}
			if st.stat == "mean" {
				m.Samples = s
			}
			env.Record("rtt", m, e)
		}
	}
	return nil
}
