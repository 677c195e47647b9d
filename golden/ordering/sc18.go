package ordering

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/labrunner/labrunner/golden/figure"
	"github.com/labrunner/labrunner/golden/tin"
)

// SC18 holds what the experiments of SC'18 §IV share: the network (the
// 1,056-node Dragonfly of tin.SC18Dragonfly), its routing (PAR), packet
// sizes, and how long the runs are. Scale shortens the runs (1: the
// lengths the figures are reproduced with; tests use less).
type SC18 struct {
	Fabric   tin.FabricConfig
	Alg      tin.Algorithm
	ReqFlits int // §IV: 16 flits unless a figure varies it
	AckFlits int // reading O4: 1 flit
	Seed     uint64
	Scale    float64
}

// PaperSC18 returns §IV's setup.
func PaperSC18(seed uint64) SC18 {
	return SC18{Fabric: tin.SC18Dragonfly(seed), Alg: tin.AlgPAR, ReqFlits: 16, AckFlits: 1, Seed: seed, Scale: 1}
}

func (x SC18) cfg() NetConfig {
	return NetConfig{Fabric: x.Fabric, Alg: x.Alg, ReqFlits: x.ReqFlits, AckFlits: x.AckFlits}
}

func (x SC18) n(full int, least int) int {
	return max(least, int(math.Round(float64(full)*x.Scale)))
}

// endpoint numbers endpoint e of router r of group g of the Dragonfly.
func (x SC18) endpoint(g, r, e int) int {
	c := x.Fabric.Clique
	return (g*c.TiNs+r)*x.Fabric.Endpoints + e
}

// Series, Check and Figure are golden/figure's.
type (
	Series = figure.Series
	Check  = figure.Check
	Figure = figure.Figure
)

var check = figure.NewCheck

func mean(v []float64) float64 {
	s, n := 0.0, 0
	for _, x := range v {
		if !math.IsNaN(x) {
			s += x
			n++
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return s / float64(n)
}

func sd(v []float64) float64 {
	m := mean(v)
	s, n := 0.0, 0
	for _, x := range v {
		if !math.IsNaN(x) {
			s += (x - m) * (x - m)
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return math.Sqrt(s / float64(n))
}

func (x SC18) run(cfg NetConfig, streams []NetStream) (NetResult, error) {
	r, err := RunNet(cfg, streams)
	if err != nil {
		return r, err
	}
	if r.Stalled != "" || len(r.Anomalies) > 0 {
		return r, fmt.Errorf("ordering: a run over the Dragonfly did not complete cleanly: %s %v", r.Stalled, r.Anomalies)
	}
	return r, nil
}

// Fig8a is §IV-A's Fig. 8(a): the accepted load of one source sending
// streams of 10 REQs, each to a random one of the 32 endpoints of another
// group, as fast as the protocol lets it, by packet length and mode.
func (x SC18) Fig8a() (Figure, error) {
	fig := Figure{ID: "sc18-fig8a", Title: "Accepted load by ordering mode (SC'18 Fig. 8a)", Source: "SC'18 §IV-A, Fig. 8(a)",
		XLabel: "packet length (flits)", YLabel: "accepted load (fraction of link)"}
	lengths := []int{8, 16, 24, 32}
	modes := []Mode{Unordered, Slow, Fast}
	got := map[Mode][]float64{}
	slowBound := map[int]float64{}
	slack := map[Mode][]float64{}
	for _, m := range modes {
		s := Series{Name: modeLabel(m, false)}
		for _, L := range lengths {
			streams := x.n(200, 60)
			if m == Slow {
				streams = x.n(6, 2)
			}
			rng := rand.New(rand.NewPCG(x.Seed, uint64(L)))
			var ss []NetStream
			for k := 0; k < streams; k++ {
				ss = append(ss, NetStream{Stream: Stream{Src: x.endpoint(0, 0, 0), Mode: m, N: 10}, Dst: x.endpoint(1, rng.IntN(8), rng.IntN(4))})
			}
			cfg := x.cfg()
			cfg.ReqFlits = L
			r, err := x.run(cfg, ss)
			if err != nil {
				return fig, err
			}
			// Steady state: from the first REQ executed to the last, the
			// REQs after the first (the pipeline's fill is not a rate).
			first, last := math.Inf(1), 0.0
			for _, st := range r.Streams {
				first = min(first, st.FirstExecNs)
				last = max(last, st.LastExecNs)
			}
			acc := float64(r.ReqFlitsExecuted-int64(L)) / (last - first) / x.Fabric.Inject.BytesPerNs
			// The destinations' paths differ by up to two local channels:
			// the first and last executions can be that much closer than
			// the REQs' injections.
			slack[m] = append(slack[m], 2*x.Fabric.Local.LatencyNs/(last-first))
			if m == Slow {
				var rtts []float64
				for _, st := range ss {
					rtts = append(rtts, float64(L)+2*x.pathNs(st.Src, st.Dst)+float64(x.AckFlits))
				}
				// One REQ per round trip within a stream; the next stream
				// (its own ordering domain) starts as its predecessor's
				// last REQ leaves, so S streams of 10 execute their REQs
				// after the first in 9·S round trips.
				S := float64(len(ss))
				slowBound[L] = (10*S - 1) / (9 * S) * float64(L) / mean(rtts)
			}
			s.X = append(s.X, float64(L))
			s.Y = append(s.Y, acc)
			got[m] = append(got[m], acc)
		}
		fig.Series = append(fig.Series, s)
	}
	for i, L := range lengths {
		fig.Checks = append(fig.Checks,
			check(fmt.Sprintf("fast mode, %d flits", L), "close to the maximum link throughput (≈1)", got[Fast][i], 0.95, 1+slack[Fast][i], "of link",
				fmt.Sprintf("the FIN per 10-REQ stream takes 1/(10L+1) of the link, at most 1.2%%; -5%% for the network's spread over the run; +%.1f%%: the destinations' paths differ by up to two local channels over the run", 100*slack[Fast][i])),
			check(fmt.Sprintf("fast / no ordering, %d flits", L), "similar throughput (ratio ≈1)", got[Fast][i]/got[Unordered][i], 0.95, 1.05, "",
				"±5%: the FIN-ACK exchange and the network's own spread over a run of 60 streams"),
			check(fmt.Sprintf("slow mode, %d flits", L), fmt.Sprintf("a small fraction of the link: one REQ per round trip in a stream, %.4f", slowBound[L]),
				got[Slow][i], 0.95*slowBound[L], 1.05*slowBound[L], "of link",
				"one REQ time per unloaded round trip to the streams' destinations (Tp + 2·D + Ta); ±5% for the mean over destinations whose paths differ by a local channel"))
	}
	return fig, nil
}

// pathNs is the unloaded latency of the minimal route between two
// endpoints (the fabric's link latencies; D of the closed forms).
func (x SC18) pathNs(src, dst int) float64 {
	f, err := tin.NewFabric(x.Fabric, nil)
	if err != nil {
		panic(err) // the setup's own fabric, built by every run before
	}
	return f.MinimalLatencyNs(int32(src), int32(dst))
}

func modeLabel(m Mode, sourceSync bool) string {
	switch {
	case sourceSync:
		return "source-side synchronization"
	case m == Unordered:
		return "no ordering"
	case m == Slow:
		return "source-side ordering (slow)"
	case m == Fast:
		return "target-side ordering (fast)"
	}
	return "target-side synchronization"
}

// single runs one stream alone, to each router of group 1 in turn, and
// returns its mean latency (first REQ sent to last delivered) and the
// share of its REQs that arrived out of order.
func (x SC18) single(m Mode, n int, sourceSync bool) (lat, ooo, d float64, err error) {
	var lats, ds []float64
	var outOf, total int
	for r := 0; r < x.n(8, 2); r++ {
		s := NetStream{Stream: Stream{Src: x.endpoint(0, 0, 0), Mode: m, N: n}, Dst: x.endpoint(1, r, 0), SourceSync: sourceSync}
		res, err := x.run(x.cfg(), []NetStream{s})
		if err != nil {
			return 0, 0, 0, err
		}
		st := res.Streams[0]
		lats = append(lats, st.LastExecNs-st.FirstSendNs)
		ds = append(ds, x.pathNs(s.Src, s.Dst))
		outOf += st.OutOfOrder
		total += n
	}
	return mean(lats), float64(outOf) / float64(total), mean(ds), nil
}

// Fig8b is §IV-A's Fig. 8(b): the latency of one stream of 16-flit REQs,
// alone in the network, from its first REQ injected to its last delivered.
func (x SC18) Fig8b() (Figure, error) {
	fig := Figure{ID: "sc18-fig8b", Title: "Single-stream latency by ordering mode (SC'18 Fig. 8b)", Source: "SC'18 §IV-A, Fig. 8(b)",
		XLabel: "stream length (packets)", YLabel: "latency (ns)"}
	lengths := []int{10, 20, 30, 40}
	got := map[Mode][]float64{}
	oooFast, D := 0.0, 0.0
	for _, m := range []Mode{Unordered, Slow, Fast} {
		s := Series{Name: modeLabel(m, false)}
		for _, n := range lengths {
			lat, ooo, d, err := x.single(m, n, false)
			D = d
			if err != nil {
				return fig, err
			}
			if m == Fast {
				oooFast = max(oooFast, ooo)
			}
			s.X, s.Y = append(s.X, float64(n)), append(s.Y, lat)
			got[m] = append(got[m], lat)
		}
		fig.Series = append(fig.Series, s)
	}
	tp := float64(x.ReqFlits) / x.Fabric.Inject.BytesPerNs
	rtt := tp + 2*D + float64(x.AckFlits)
	for i, n := range lengths {
		k := float64(n)
		fig.Checks = append(fig.Checks,
			check(fmt.Sprintf("fast / no ordering, %d packets", n), "similar latencies (ratio ≈1)", got[Fast][i]/got[Unordered][i], 0.98, 1.05, "",
				"target-side ordering adds no latency on an idle network; +5% allows a packet held in the reorder buffer"),
			check(fmt.Sprintf("no ordering, %d packets", n), fmt.Sprintf("n·Tp + D = %.0f ns (the closed form)", k*tp+D), got[Unordered][i], 0.98*(k*tp+D), 1.02*(k*tp+D), "ns",
				"±2%: an idle network adds nothing to the closed form over the destinations' own paths; the 2% is the closed form's rounding of a path"),
			check(fmt.Sprintf("slow mode, %d packets", n), fmt.Sprintf("(n-1)·RTT + Tp + D = %.0f ns, linear in n", (k-1)*rtt+tp+D), got[Slow][i], 0.98*((k-1)*rtt+tp+D), 1.02*((k-1)*rtt+tp+D), "ns",
				"±2%: as for no ordering"))
	}
	fig.Notes = append(fig.Notes, fmt.Sprintf("Out-of-order REQs in fast mode, alone in the network: %.0f%% (the paper: \"about one third\", reading O5: "+
		"a single stream at link rate builds no queue on links of its own rate, so the simulation's PAR keeps it minimal)", 100*oooFast))
	return fig, nil
}

// Fig9 is §IV-B's Fig. 9: 16 sources of one group each send 128 16-flit
// REQs to their own destination in another group, as 1, 2, 4 or 8 fast
// streams; total latency per source, mean REQ latency, out-of-order share.
func (x SC18) Fig9() (Figure, error) {
	fig := Figure{ID: "sc18-fig9", Title: "Ordering granularity (SC'18 Fig. 9)", Source: "SC'18 §IV-B, Fig. 9",
		XLabel: "packets per stream", YLabel: "latency (ns)"}
	total := Series{Name: "total latency (all 128 packets)"}
	per := Series{Name: "mean request latency"}
	oo := Series{Name: "out-of-order share"}
	packets := x.n(128, 16)
	for _, streams := range []int{8, 4, 2, 1} {
		k := packets / streams
		var ss []NetStream
		for i := 0; i < 16; i++ {
			for j := 0; j < streams; j++ {
				ss = append(ss, NetStream{Stream: Stream{Src: x.endpoint(0, i%8, i/8), Mode: Fast, N: k}, Dst: x.endpoint(1, i%8, i/8)})
			}
		}
		r, err := x.run(x.cfg(), ss)
		if err != nil {
			return fig, err
		}
		var tot, lats []float64
		outOf := 0
		for i := 0; i < 16; i++ {
			first, last := math.Inf(1), 0.0
			for j := 0; j < streams; j++ {
				st := r.Streams[i*streams+j]
				first, last = min(first, st.FirstSendNs), max(last, st.LastExecNs)
				lats = append(lats, st.LatencyNs...)
				outOf += st.OutOfOrder
			}
			tot = append(tot, last-first)
		}
		total.X, total.Y, total.SD = append(total.X, float64(k)), append(total.Y, mean(tot)), append(total.SD, sd(tot))
		per.X, per.Y, per.SD = append(per.X, float64(k)), append(per.Y, mean(lats)), append(per.SD, sd(lats))
		oo.X, oo.Y = append(oo.X, float64(k)), append(oo.Y, float64(outOf)/float64(16*packets))
	}
	fig.Series = []Series{total, per, oo}
	lo, hi := slices.Min(total.Y), slices.Max(total.Y)
	fig.Checks = append(fig.Checks,
		check("total latency, longest / shortest of the four", "pretty much the same for all four scenarios (ratio ≈1)", hi/lo, 1, 1.10, "",
			"±10%: the bars the paper calls the same; the dependencies of coarse ordering are small against the network's latency"),
		check("out-of-order share, one stream of 128", "67%", oo.Y[len(oo.Y)-1], 0, 1, "",
			"reported, not held (reading O5): the share follows the adaptive threshold, which the paper does not give"),
		check("out-of-order share grows with stream length", "31% (16/stream) to 67% (128/stream)", oo.Y[len(oo.Y)-1]-oo.Y[0], 0, 1, "",
			"a longer stream has more packets a detoured one can hold up: the share must not fall as streams grow"))
	return fig, nil
}

// Fig10 is §IV-C's Fig. 10: one stream of 16-flit REQs alone in the
// network, latency from its first data REQ injected to its synchronization
// operation delivered, for source- and target-side synchronization and
// target-side ordering.
func (x SC18) Fig10() (Figure, error) {
	fig := Figure{ID: "sc18-fig10", Title: "Source- vs target-side synchronization (SC'18 Fig. 10)", Source: "SC'18 §IV-C, Fig. 10",
		XLabel: "stream length (packets)", YLabel: "latency (ns)"}
	lengths := []int{10, 20, 30, 40}
	var src, tgt, ord []float64
	D := 0.0
	for _, c := range []struct {
		m   Mode
		ss  bool
		dst *[]float64
	}{{Sync, true, &src}, {Sync, false, &tgt}, {Fast, false, &ord}} {
		s := Series{Name: modeLabel(c.m, c.ss)}
		for _, n := range lengths {
			lat, _, d, err := x.single(c.m, n, c.ss)
			if err != nil {
				return fig, err
			}
			D = d
			s.X, s.Y = append(s.X, float64(n)), append(s.Y, lat)
			*c.dst = append(*c.dst, lat)
		}
		fig.Series = append(fig.Series, s)
	}
	rtt := 2*D + float64(x.AckFlits)
	for i, n := range lengths {
		fig.Checks = append(fig.Checks,
			check(fmt.Sprintf("source − target synchronization, %d packets", n), fmt.Sprintf("at least a full RTT, 2·D + Ta = %.0f ns", rtt), src[i]-tgt[i], 0.98*rtt, 1.02*rtt+float64(x.ReqFlits), "ns",
				"the flush: the last data ACK back and the operation out; ±2% for a path's rounding, + one REQ time for the operation's own"),
			check(fmt.Sprintf("target synchronization / target ordering, %d packets", n), "the same performance (ratio ≈1)", tgt[i]/ord[i], 0.95, 1.05, "",
				"±5%: both deliver the operation when the stream's last REQ arrives"))
	}
	return fig, nil
}

// robRun is one run of §IV-D's reorder buffer experiments.
type robRun struct {
	Sources, Length int
	Conns, Window   int
	Bursty          bool
	Threshold       float64 // the adaptive threshold (bursty: raised, §IV-D)
}

// ROBResult is what a reorder buffer experiment measured at its first
// destination.
type ROBResult struct {
	ROB, Conns Occupancy
	// Shares of the REQs that arrived: inserted into the buffer, dropped
	// for a full buffer (NACKed, resent), NACKed for want of a connection.
	Inserted, Drops, NoConn float64
	// SkewNs: the spread of the REQs' network latencies, max - min ("the
	// difference in end-to-end packet latencies", §IV-D); SkewP99Ns the
	// 99th percentile minus the minimum.
	SkewNs, SkewP99Ns float64
	Res               NetResult
}

// ROBCapacityPaper and WindowPaper are §IV-D's figures: a 50-packet
// buffer, 25 outstanding REQs per connection in Fig. 12(c).
const (
	ROBCapacityPaper = 50
	WindowPaper      = 25
)

// robExperiment runs the §IV-D setup: the sources of group 0, half of
// them streaming to one endpoint of group 1 and half to another, both
// sets over the group pair's one global channel, at 0.7 of a link
// combined, packets uniformly random in time (Bernoulli per ns) or in
// back-to-back bursts of a stream (reading O7, SC'18 §IV-D).
func (x SC18) robExperiment(rr robRun) (ROBResult, error) {
	cfg := x.cfg()
	cfg.Target = TargetConfig{ROB: ROBCapacityPaper, Conns: rr.Conns}
	cfg.Window = rr.Window
	if rr.Threshold > 0 {
		cfg.Fabric.Threshold = rr.Threshold
	}
	rng := rand.New(rand.NewPCG(x.Seed, uint64(rr.Sources*1000+rr.Length)))
	dsts := []int{x.endpoint(1, 0, 0), x.endpoint(1, 1, 0)}
	tp := float64(x.ReqFlits) / x.Fabric.Inject.BytesPerNs
	perDest := x.n(2048, 256)
	var ss []NetStream
	for i := 0; i < rr.Sources; i++ {
		src := x.endpoint(0, i%8, i/8%4)
		dst := dsts[i%2]
		pkts := perDest / (rr.Sources / 2)
		nStreams := max(1, pkts/rr.Length)
		t := 0.0
		if rr.Bursty {
			// Bursts of a whole stream at link rate, spaced so that each
			// destination still gets 0.35 of a link on average.
			period := float64(rr.Length) * tp / 0.35 * float64(rr.Sources/2)
			t = rng.Float64() * period
			for k := 0; k < nStreams; k++ {
				av := make([]float64, rr.Length)
				for j := range av {
					av[j] = t
				}
				ss = append(ss, NetStream{Stream: Stream{Src: src, Mode: Fast, N: rr.Length}, Dst: dst, Avail: av})
				t += period * (0.5 + rng.Float64())
			}
			continue
		}
		p := 0.7 / float64(rr.Sources) / float64(x.ReqFlits) // packets per ns
		for k := 0; k < nStreams; k++ {
			av := make([]float64, rr.Length)
			for j := range av {
				t += 1 + math.Floor(math.Log(1-rng.Float64())/math.Log1p(-p))
				av[j] = t
			}
			ss = append(ss, NetStream{Stream: Stream{Src: src, Mode: Fast, N: rr.Length}, Dst: dst, Avail: av})
		}
	}
	r, err := x.run(cfg, ss)
	if err != nil {
		return ROBResult{}, err
	}
	out := ROBResult{ROB: *r.ROB[dsts[0]], Conns: *r.Conns[dsts[0]], Res: r}
	if a := r.Arrived[dsts[0]]; a > 0 {
		out.Inserted = float64(r.Inserted[dsts[0]]) / float64(a)
		out.Drops = float64(r.Full[dsts[0]]) / float64(a)
		out.NoConn = float64(r.NoConn[dsts[0]]) / float64(a)
	}
	lat := slices.Clone(r.NetLatencyNs)
	slices.Sort(lat)
	out.SkewNs = lat[len(lat)-1] - lat[0]
	out.SkewP99Ns = lat[int(0.99*float64(len(lat)-1))] - lat[0]
	return out, nil
}

func occSeries(name string, o Occupancy) Series {
	s := Series{Name: name}
	for i := range o.T {
		s.X = append(s.X, o.T[i]/1000)
		s.Y = append(s.Y, float64(o.V[i]))
	}
	return s
}

// Fig11 is §IV-D's Fig. 11: reorder buffer occupancy and active
// connections with unlimited connections, 4 and 16 sources, streams of 32
// and 128 REQs, and (c) two sources sending bursts with adaptive routing
// made less likely.
func (x SC18) Fig11() (Figure, []ROBResult, error) {
	fig := Figure{ID: "sc18-fig11", Title: "Reorder buffer with unlimited connections (SC'18 Fig. 11)", Source: "SC'18 §IV-D, Fig. 11",
		XLabel: "time (µs)", YLabel: "reorder buffer occupancy (packets)"}
	var all []ROBResult
	runs := []robRun{{Sources: 4, Length: 32}, {Sources: 4, Length: 128}, {Sources: 16, Length: 32}, {Sources: 16, Length: 128}}
	for _, rr := range runs {
		res, err := x.robExperiment(rr)
		if err != nil {
			return fig, nil, err
		}
		all = append(all, res)
		fig.Series = append(fig.Series, occSeries(fmt.Sprintf("(a) %d streams of %d", rr.Sources, rr.Length), res.ROB))
		fig.Checks = append(fig.Checks,
			check(fmt.Sprintf("(a) peak occupancy, %d streams of %d", rr.Sources, rr.Length), "relatively small, within the 50-packet buffer", float64(res.ROB.Max), 0, ROBCapacityPaper, "packets",
				"the buffer's capacity: the network skew of §IV-D bounds what a buffer of 50 must absorb (reading O6)"),
			check(fmt.Sprintf("(b) peak active connections, %d streams", rr.Sources), fmt.Sprintf("slightly higher than the %d streams per destination", rr.Sources/2),
				float64(res.Conns.Max), float64(rr.Sources/2), float64(rr.Sources), "connections",
				"at least one per stream sending to the destination; overlapping streams of one source add at most one each"))
	}
	fig.Checks = append(fig.Checks,
		check("(a) REQs inserted into the buffer, 4 streams", "about one third", mean([]float64{all[0].Inserted, all[1].Inserted}), 0, 1, "",
			"reported, not held (reading O5)"),
		check("(a) REQs inserted into the buffer, 16 streams", "about one quarter", mean([]float64{all[2].Inserted, all[3].Inserted}), 0, 1, "",
			"reported, not held (reading O5)"))
	// (c): bursts, adaptive routing made less likely (footnote 13; reading
	// O7: four times the threshold).
	for _, L := range []int{32, 128} {
		res, err := x.robExperiment(robRun{Sources: 2, Length: L, Bursty: true, Threshold: 4 * x.Fabric.Threshold})
		if err != nil {
			return fig, nil, err
		}
		all = append(all, res)
		fig.Series = append(fig.Series, occSeries(fmt.Sprintf("(c) bursts, streams of %d", L), res.ROB))
		fig.Checks = append(fig.Checks, check(fmt.Sprintf("(c) peak occupancy, bursts of %d", L), "about half of the buffer (25 of 50)", float64(res.ROB.Max), 0, ROBCapacityPaper, "packets",
			"held within the capacity; the half is reported (reading O5)"))
	}
	return fig, all, nil
}

// Fig12 is §IV-D's Fig. 12: as Fig. 11 with two connections per receiver;
// REQs that find the buffer full are dropped (NACKed and resent); (c)
// outstanding REQs limited to 25 per stream.
func (x SC18) Fig12() (Figure, []ROBResult, error) {
	fig := Figure{ID: "sc18-fig12", Title: "Reorder buffer with two connections (SC'18 Fig. 12)", Source: "SC'18 §IV-D, Fig. 12",
		XLabel: "time (µs)", YLabel: "reorder buffer occupancy (packets)"}
	var all []ROBResult
	for _, rr := range []robRun{{Sources: 4, Length: 128, Conns: 2}, {Sources: 4, Length: 128, Conns: 2, Window: WindowPaper}} {
		res, err := x.robExperiment(rr)
		if err != nil {
			return fig, nil, err
		}
		all = append(all, res)
		name := "(a) two connections, 4 streams of 128"
		if rr.Window > 0 {
			name = "(c) window of 25 per stream"
		}
		fig.Series = append(fig.Series, occSeries(name, res.ROB))
	}
	fig.Checks = append(fig.Checks,
		check("(a) peak occupancy, two connections", "large fluctuations; occasionally full", float64(all[0].ROB.Max), 0, ROBCapacityPaper, "packets", "the capacity"),
		check("(a) REQs dropped, 4 streams of 128", "about 5%", all[0].Drops, 0, 1, "", "reported, not held (reading O5)"),
		check("(c) peak occupancy with a window of 25", "limited by half the buffer", float64(all[1].ROB.Max), 0, ROBCapacityPaper, "packets",
			"a window of half the buffer per connection and two connections cannot overflow it"),
		check("(c) REQs dropped with a window of 25", "none (the window is the remedy)", all[1].Drops, 0, all[0].Drops, "",
			"the window must not drop more than the run without it"))
	return fig, all, nil
}

// Sizing derives §IV-D's reorder buffer capacity and window from the
// simulated network instead of the paper's round figures (reading O6): the
// skew, the spread (max - min) of the REQs' network latencies in the
// Fig. 11 setup (4 streams of 128, 0.7 of a link through one global
// channel), in packets, is the capacity ("large enough to absorb packets
// from the network for a duration that is equivalent to the network
// skew"); the window is half of it (Fig. 12c).
func (x SC18) Sizing() (rob, window int, skewNs float64, err error) {
	res, err := x.robExperiment(robRun{Sources: 4, Length: 128})
	if err != nil {
		return 0, 0, 0, err
	}
	tp := float64(x.ReqFlits) / x.Fabric.Inject.BytesPerNs
	rob = int(math.Ceil(res.SkewNs/tp - 1e-9))
	return rob, rob / 2, res.SkewNs, nil
}

// SizingFigure puts Sizing next to §IV-D's 50 packets and 25.
func (x SC18) SizingFigure() (Figure, error) {
	rob, win, skew, err := x.Sizing()
	if err != nil {
		return Figure{}, err
	}
	tp := float64(x.ReqFlits) / x.Fabric.Inject.BytesPerNs
	global := x.Fabric.Global.LatencyNs / tp
	fig := Figure{ID: "sc18-sizing", Title: "Reorder buffer and window from the simulated skew (SC'18 §IV-D)", Source: "SC'18 §IV-D, Fig. 12(c)",
		XLabel: "", YLabel: "packets",
		Series: []Series{{Name: "simulated", X: []float64{1, 2}, Y: []float64{float64(rob), float64(win)}},
			{Name: "paper", X: []float64{1, 2}, Y: []float64{ROBCapacityPaper, WindowPaper}}}}
	fig.Checks = []Check{
		check("reorder buffer capacity (skew in packets)", fmt.Sprintf("%d: %.0f ns of extra global channel (\"30 packets\") + 20 packets of switch buffering", ROBCapacityPaper, x.Fabric.Global.LatencyNs),
			float64(rob), math.Ceil(global), ROBCapacityPaper, "packets",
			"from the extra global channel every detour crosses (its 31.25 packets, the skew's floor) to the paper's 50, whose 20 packets of switch buffering are an allowance the paper assumes (reading O6)"),
		check("window (half the buffer)", fmt.Sprintf("%d outstanding REQs per connection (Fig. 12c)", WindowPaper),
			float64(win), math.Ceil(global)/2, WindowPaper, "REQs", "half the capacity's band"),
	}
	fig.Notes = append(fig.Notes, fmt.Sprintf("simulated skew %.0f ns = %.1f packets of %.0f ns: the extra global channel (%.0f ns) and the two extra local channels of a Valiant route, queueing a few packets at most; the paper adds 20 packets of switch buffering it assumes, not measures (footnote 12)",
		skew, skew/tp, tp, x.Fabric.Global.LatencyNs))
	return fig, nil
}
