package prr

import (
	"fmt"
	"math"
	"slices"
	"strings"

	gp "github.com/labrunner/labrunner/golden/prr"
	"github.com/labrunner/labrunner/results"
)

// Bands for figures only a simulation predicts (FPGA'20 §5.1). The runner
// runs golden/prr's Simulate for several seeded replicas of the same
// configuration as the hardware run (ports, FIFO depth, traffic, input
// rate, cycles) and accepts the measurement when it falls in the 99.99%
// prediction interval of one more run: mean ± t(0.99995, n−1)·sd·√(1+1/n).
// The band measures the sampling noise at the run length, not a tolerance
// chosen to pass. It is golden/prr Predict's method (whose helpers are not
// exported, and whose Predict simulates latency with unbounded queues only,
// while the hardware has the build's FIFO depth) at a higher coverage,
// because a PRR plan scores about thirteen simulated figures per board: at
// 99% each, a healthy switch fails one of them for about one seed in eight;
// at 99.9%, 1 of 40 seeds failed in a sweep of the default plan (a bursty
// run 3.5 standard deviations out); at 99.99%, about one seed in 700 under
// normal noise.

// bandCoverage is the two-sided coverage of the prediction intervals.
const bandCoverage = 0.9999

// tQuantile is Student's t (1+bandCoverage)/2 = 0.99995 quantile for dof
// degrees of freedom, from a table, rounded up between entries (the
// conservative side).
func tQuantile(dof int) float64 {
	table := []struct {
		dof int
		t   float64
	}{
		{1, 6366.2}, {2, 99.992}, {3, 28.000}, {4, 15.544}, {5, 11.178}, {6, 9.082}, {7, 7.885},
		{8, 7.120}, {9, 6.594}, {10, 6.211}, {12, 5.694}, {15, 5.239}, {20, 4.837}, {25, 4.619},
		{30, 4.482}, {40, 4.321}, {60, 4.169}, {120, 4.025}, {1 << 30, 3.891},
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

func meanOf(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

func sdOf(v []float64) float64 {
	if len(v) < 2 {
		return 0
	}
	m := meanOf(v)
	s := 0.0
	for _, x := range v {
		s += (x - m) * (x - m)
	}
	return math.Sqrt(s / float64(len(v)-1))
}

func halfWidth(sd float64, n int) float64 {
	return tQuantile(n-1) * sd * math.Sqrt(1+1/float64(n))
}

// meanBand is the band of a figure averaged over a run (normal by the
// central limit theorem). The floor max(rel·|mean|, abs) keeps the band from
// collapsing when the replicas happen to agree (no drop in any replica:
// abs is three packets in one run's offered load, the rule of three).
// Fractions are capped at 1.
func meanBand(metric string, v []float64, unit string, rel, abs float64, source, note string) results.Expectation {
	m := meanOf(v)
	pi := halfWidth(sdOf(v), len(v))
	floor := math.Max(rel*math.Abs(m), abs)
	h := math.Max(pi, floor)
	lo, hi := math.Max(0, m-h), m+h
	if unit == "fraction" || unit == "packets/cycle/port" {
		hi = math.Min(hi, 1)
	}
	e := results.Expectation{Metric: metric, Value: m, Unit: unit, Min: results.Float(lo), Max: results.Float(hi), Source: source, Note: note}
	e.Budget = fmt.Sprintf("golden/prr replica spread at the test's run length: %g%% prediction interval for one more run over %d replicas, t(%d dof) %.4g x sd %.4g x sqrt(1+1/n) = ±%.4g %s; floor ±%.4g %s (%g of the mean, or %.4g: three packets of one run's offered load)",
		100*bandCoverage, len(v), len(v)-1, tQuantile(len(v)-1), sdOf(v), pi, unit, floor, unit, rel, abs)
	return bandReason(e, "the width is the sampling noise of one run of this length, measured by golden/prr's replicas (reading P61): a shorter band would fail healthy switches")
}

// bandReason states why a band is wider than results.WideBand (or reaches
// 0), when it is.
func bandReason(e results.Expectation, why string) results.Expectation {
	if e.NeedsReason() {
		e.Wide = why
	}
	return e
}

// maxBand is the band of an extreme over a run (a worst-case latency).
// Its spread is skewed and grows with its size: golden/prr takes the
// interval on log(1+x), with a 5% floor on the deviation. That interval is
// too short on the right for the maximum of a run, whose upper tail is an
// extreme-value (Gumbel) one: against 1000 emulator runs of 10^4 cycles,
// bands from 99 golden replicas at 99.9% missed 0.1-0.3% of runs above, at
// a nominal 0.05%. The band is therefore the hull of the log interval and
// the interval of a Gumbel distribution fitted to the replicas by moments
// (scale sd·√6/π, sd floored at 5% of the mean and inflated by √(1+1/n) for
// the estimated location), which at 99.9% missed 0.00-0.06% above and, with
// the log interval's lower end, none below. Both are widened by one unit for these
// integer figures.
func maxBand(metric string, v []float64, unit, source, note string) results.Expectation {
	n := float64(len(v))
	lv := make([]float64, len(v))
	for i, x := range v {
		lv[i] = math.Log1p(x)
	}
	m := meanOf(lv)
	h := halfWidth(math.Max(sdOf(lv), 0.05), len(v))
	lo, hi := math.Expm1(m-h), math.Expm1(m+h)

	sd := math.Max(sdOf(v), 0.05*meanOf(v)) * math.Sqrt(1+1/n)
	beta := sd * math.Sqrt(6) / math.Pi
	mu := meanOf(v) - eulerGamma*beta
	gq := func(p float64) float64 { return mu - beta*math.Log(-math.Log(p)) }
	loLog, hiLog := lo, hi
	lo = math.Min(lo, gq((1-bandCoverage)/2))
	hi = math.Max(hi, gq((1+bandCoverage)/2))
	e := results.Expectation{Metric: metric, Value: meanOf(v), Unit: unit,
		Min: results.Float(math.Max(0, math.Floor(lo)-1)), Max: results.Float(math.Ceil(hi) + 1), Source: source, Note: note}
	e.Budget = fmt.Sprintf("golden/prr replica spread of a run's maximum at the test's run length, %d replicas at %g%% coverage: the log(1+x) prediction interval [%.4g, %.4g] (sd of the logs floored at 0.05) joined with a Gumbel fit's [%.4g, %.4g] (scale sd·√6/π, sd %.4g floored at 5%% of the mean); ±1 %s for integer figures",
		len(v), 100*bandCoverage, loLog, hiLog, gq((1-bandCoverage)/2), gq((1+bandCoverage)/2), sd, unit)
	return bandReason(e, "the worst case of one run is an extreme value: its spread across runs of this length is that wide (golden/prr's replicas, Gumbel upper tail; reading P61)")
}

// eulerGamma is the Euler-Mascheroni constant, the mean of a standard
// Gumbel distribution.
const eulerGamma = 0.5772156649015329

// withRange widens a band to the replicas' range. For a figure with a heavy
// tail the normal interval is too narrow: the drop rate of a switch whose
// queues rarely overflow is 0 in most runs and tens of packets (a whole
// group's round, §4.4) in a few. The range of n exchangeable replicas holds
// one more run with probability (n−1)/(n+1), whatever the distribution
// (99% for n = 199): the band is the wider of the two.
func withRange(e results.Expectation, v []float64) results.Expectation {
	if len(v) == 0 {
		return e
	}
	lo, hi := v[0], v[0]
	for _, x := range v {
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	widened := false
	if e.Min == nil || lo < *e.Min {
		e.Min, widened = results.Float(lo), true
	}
	if e.Max == nil || hi > *e.Max {
		e.Max, widened = results.Float(hi), true
	}
	if !widened {
		// The prediction interval already holds the range (bursty traffic
		// at depth 32 drops in every run): its reason stands.
		e.Budget += fmt.Sprintf("; the range of the %d replicas [%.4g, %.4g] lies within it", len(v), lo, hi)
		return e
	}
	e.Budget += fmt.Sprintf("; widened to the range of the %d replicas [%.4g, %.4g] (heavy tail: the range holds one more run with probability (n-1)/(n+1))", len(v), lo, hi)
	e.Wide = "" // the range, not the interval, makes the width now
	return bandReason(e, "rare whole-group overflows make drops heavy-tailed: zero in most runs and tens of packets in a few, and 0 is a healthy outcome (reading P61)")
}

// worstBand is the band of a run's worst latency at the build's finite FIFO
// depth D (reading P41). There a run's worst case is a mixture, and the
// replicas are split by their outcome:
//
//   - replicas that dropped nothing spread as the extreme of a critically
//     loaded queue: maxBand's interval on them alone predicts one more such
//     run. No packet of a group that never overflowed waits longer than
//     P·D (golden/prr GroupDrain), so the interval stops there, and when it
//     reaches P·D a run that drops is within the predicted spread: P·D is
//     in the band even if no replica dropped;
//   - replicas that dropped read P·D exactly (the packet admitted just
//     before a group's first overflow waits the whole group), more only
//     after an output arbiter stalled on a queue a drop left short (§4.4).
//     When every one of them reads P·D the part is that value; when some
//     read more, the stalls' tail is there to predict, and the part is
//     maxBand's interval on their values, from P·D up.
//
// The band is the hull of the parts. Both of its sides can fail: a worst
// case above every part (an output arbiter that serves slower than a
// packet a cycle keeps more than P·D packets' wait in a full group), or
// below the no-drop interval (below P·D when every replica drops).
func worstBand(metric string, rs []gp.SimResult, ports, depth int, source, note string) results.Expectation {
	var clean, dropped, all []float64
	for _, r := range rs {
		x := float64(r.DrainMax)
		all = append(all, x)
		if r.Dropped > 0 {
			dropped = append(dropped, x)
		} else {
			clean = append(clean, x)
		}
	}
	e := results.Expectation{Metric: metric, Value: meanOf(all), Unit: "cycles", Source: source, Note: note}
	if len(all) == 0 {
		return e
	}
	bound := float64(gp.GroupDrain(ports, depth))
	lo, hi := math.Inf(1), math.Inf(-1)
	var parts []string
	if len(clean) > 0 {
		c := maxBand(metric, clean, "cycles", source, note)
		lo, hi = *c.Min, *c.Max
		part := fmt.Sprintf("%d of %d replicas dropped nothing: %s", len(clean), len(all), c.Budget)
		if depth > 0 && hi >= bound {
			hi = bound
			part += fmt.Sprintf("; it reaches P·D = %d×%d = %g cycles, the longest wait in a group that never overflowed: it stops there, and a run that drops (P·D) is within it", ports, depth, bound)
		}
		parts = append(parts, part)
	}
	if len(dropped) > 0 {
		dlo, dhi := slices.Min(dropped), slices.Max(dropped)
		at := 0
		for _, x := range dropped {
			if x == bound {
				at++
			}
		}
		part := fmt.Sprintf("%d of %d replicas dropped, %d of them reading P·D = %g exactly (the packet admitted just before a group's first overflow waits the whole group)", len(dropped), len(all), at, bound)
		if at == len(dropped) {
			part += ": that value"
		} else {
			d := maxBand(metric, dropped, "cycles", source, note)
			dlo, dhi = math.Min(dlo, bound), math.Max(dhi, *d.Max)
			part += fmt.Sprintf(", the others more (an output arbiter stalled on a queue a drop left short, FPGA'20 §4.4): from %g up to the top of their own %s", dlo, d.Budget)
		}
		lo, hi = math.Min(lo, dlo), math.Max(hi, dhi)
		parts = append(parts, part)
	}
	e.Min, e.Max = results.Float(math.Max(0, lo)), results.Float(hi)
	e.Budget = fmt.Sprintf("mixture of golden/prr's replicas at FIFO depth %d, drained as the traffic generator drains, split by whether they dropped: ", depth) + strings.Join(parts, "; ") + "; the band is the hull of the parts"
	return bandReason(e, "the worst case of one run at a finite depth is a mixture: without a drop it is the extreme value of a critically loaded queue, spread that wide across runs of this length (golden/prr's replicas, Gumbel upper tail), with a drop it is P·D (reading P41)")
}
