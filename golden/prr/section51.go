package prr

import (
	"fmt"
)

// Reproduction is a run length and a seed set for golden's reproduction of
// the simulations of FPGA'20 §5.1: a P×P switch at input rate 1, every
// figure averaged over one run per seed. The paper states neither its run
// length nor its number of runs; Section51 is the one golden uses for all of
// §5.1 (reading P40).
type Reproduction struct {
	P      int
	Cycles int
	Seeds  []uint64
}

// Section51 is the reproduction of §5.1 (reading P40): 16×16, 25,000
// cycles, seeds 1 to 32. At this length the paper's five worst-case latencies
// of the proposal and PIM come out within 3.5% (docs/figures.md).
func Section51() Reproduction {
	seeds := make([]uint64, 32)
	for i := range seeds {
		seeds[i] = uint64(i + 1)
	}
	return Reproduction{P: 16, Cycles: 25000, Seeds: seeds}
}

// Case is one switch under one traffic model, with a queue depth (0:
// unbounded).
type Case struct {
	Alg     Alg
	Traffic Traffic
	Depth   int
}

// Stats are a case's figures over the reproduction's runs.
type Stats struct {
	Runs []SimResult
}

// Mean is the mean over the runs of f.
func (s Stats) Mean(f func(SimResult) float64) float64 {
	return mean(collect(s.Runs, f))
}

// SD is the sample standard deviation over the runs of f.
func (s Stats) SD(f func(SimResult) float64) float64 {
	if len(s.Runs) < 2 {
		return 0
	}
	return stddev(collect(s.Runs, f))
}

// WorstLatency is a run's largest latency: §5.1's "average worst-case
// latency" is its mean over the runs (reading P40).
func WorstLatency(r SimResult) float64 { return float64(r.LatencyMax) }

// ZeroDropDepthOf is a run's smallest queue depth that drops nothing
// (Fig. 9); its mean over the runs is compared with §5.1's figures.
func ZeroDropDepthOf(r SimResult) float64 { return float64(r.ZeroDropDepth()) }

// Run simulates every case once per seed at input rate 1, on all cores.
func (rp Reproduction) Run(cases []Case) (map[Case]Stats, error) {
	if len(rp.Seeds) == 0 {
		return nil, fmt.Errorf("prr: reproduction without seeds")
	}
	var cfgs []SimConfig
	for _, c := range cases {
		for _, s := range rp.Seeds {
			cfgs = append(cfgs, SimConfig{P: rp.P, Alg: c.Alg, Traffic: c.Traffic, Load: 1, Depth: c.Depth, Cycles: rp.Cycles, Seed: s})
		}
	}
	res, err := SimulateAll(cfgs, 0)
	if err != nil {
		return nil, err
	}
	out := map[Case]Stats{}
	n := len(rp.Seeds)
	for i, c := range cases {
		out[c] = Stats{Runs: res[i*n : (i+1)*n]}
	}
	return out, nil
}

// section51Cases are the cases the §5.1 figures need.
func section51Cases() []Case {
	return []Case{
		{PRR, Uniform, 0}, {PRR, Bursty, 0}, {PRR, Nonuniform, 0},
		{PIM, Uniform, 0}, {PIM, Bursty, 0}, {EDRRM, Nonuniform, 0},
		{PRR, Uniform, 1}, {PIM, Uniform, 1},
	}
}

// section51Figure computes one §5.1 figure from the reproduction's stats.
type section51Figure func(map[Case]Stats) float64

func worstOf(a Alg, tr Traffic) section51Figure {
	return func(st map[Case]Stats) float64 { return st[Case{a, tr, 0}].Mean(WorstLatency) }
}

func zeroDropOf(a Alg, tr Traffic) section51Figure {
	return func(st map[Case]Stats) float64 { return st[Case{a, tr, 0}].Mean(ZeroDropDepthOf) }
}

func dropRateOf(a Alg, tr Traffic, depth int) section51Figure {
	return func(st map[Case]Stats) float64 { return st[Case{a, tr, depth}].Mean(SimResult.DropRate) }
}

func avgRatio(a Alg, tr Traffic) section51Figure {
	return func(st map[Case]Stats) float64 {
		return st[Case{a, tr, 0}].Mean(SimResult.AvgLatency) / st[Case{PRR, tr, 0}].Mean(SimResult.AvgLatency)
	}
}
