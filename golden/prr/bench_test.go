package prr

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// BenchmarkSimulate: simulated cycles per second of a 16×16 switch per
// algorithm, uniform traffic at input rate 1 with unbounded queues (the
// costliest setting: every cycle is full, and the unstable switches' queues
// grow). One op is a run of 10^5 cycles.
func BenchmarkSimulate(b *testing.B) {
	const cycles = 100000
	for _, tr := range Traffics {
		for _, a := range Algs {
			b.Run(fmt.Sprintf("%s/%s", tr, a), func(b *testing.B) {
				c0 := cpuTime()
				for i := 0; b.Loop(); i++ {
					if _, err := Simulate(SimConfig{P: 16, Alg: a, Traffic: tr, Load: 1, Cycles: cycles, Seed: uint64(i)}); err != nil {
						b.Fatal(err)
					}
				}
				reportCycles(b, cycles*b.N, cpuTime()-c0)
			})
		}
	}
}

// BenchmarkPlanReplicas: the proposal as the PRR test plan's golden
// replicas run it (selftest/prr): 16×16, queues of depth 32, drained after
// the run, every traffic model at input rate 1 and the uniform and
// nonuniform ones at 0.9. One op is a run of 3·10^4 cycles.
func BenchmarkPlanReplicas(b *testing.B) {
	const cycles = 30000
	for _, c := range []struct {
		tr   Traffic
		load float64
	}{{Uniform, 1}, {Bursty, 1}, {Nonuniform, 1}, {Uniform, 0.9}, {Nonuniform, 0.9}} {
		b.Run(fmt.Sprintf("%s/%g", c.tr, c.load), func(b *testing.B) {
			c0 := cpuTime()
			for i := 0; b.Loop(); i++ {
				if _, err := Simulate(SimConfig{P: 16, Alg: PRR, Traffic: c.tr, Load: c.load, Depth: 32, Cycles: cycles, Seed: uint64(i), Drain: true}); err != nil {
					b.Fatal(err)
				}
			}
			reportCycles(b, cycles*b.N, cpuTime()-c0)
		})
	}
}

// BenchmarkFullComparison: the whole §5.1 comparison for a 16×16 switch —
// 12 switches × 3 traffic models × 10^6 cycles at input rate 1 — on one
// core (one worker).
func BenchmarkFullComparison(b *testing.B) {
	var cfgs []SimConfig
	for _, tr := range Traffics {
		for _, a := range Algs {
			cfgs = append(cfgs, SimConfig{P: 16, Alg: a, Traffic: tr, Load: 1, Cycles: 1000000, Seed: 1})
		}
	}
	c0 := cpuTime()
	for b.Loop() {
		if _, err := SimulateAll(cfgs, 1); err != nil {
			b.Fatal(err)
		}
	}
	reportCycles(b, len(cfgs)*1000000*b.N, cpuTime()-c0)
}

// BenchmarkPredictDefault: Predict with every default (12 switches, 3
// traffic models, 4 replicas, depth 1, 3·10^4 cycles) on all cores.
func BenchmarkPredictDefault(b *testing.B) {
	for b.Loop() {
		if _, err := (Model{}).Predict(nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkInsert: the bit-exact reference, one full random batch per op.
func BenchmarkInsert(b *testing.B) {
	for _, p := range []int{16, 64, 256} {
		b.Run(fmt.Sprintf("P=%d", p), func(b *testing.B) {
			s, err := NewSwitch(p, 4)
			if err != nil {
				b.Fatal(err)
			}
			r := rand.New(rand.NewPCG(1, 1))
			batches := make([][]Packet, 64)
			for k := range batches {
				batches[k] = make([]Packet, p)
				for i := range batches[k] {
					batches[k][i] = Packet{Valid: r.IntN(4) > 0, Dest: r.IntN(p), Data: uint64(i)}
				}
			}
			for i := 0; b.Loop(); i++ {
				s.Insert(batches[i%len(batches)])
				s.Dequeue()
			}
		})
	}
}

// reportCycles adds simulated cycles per second of wall time and CPU
// nanoseconds per cycle (the machine may be shared: CPU time is the steadier
// figure).
func reportCycles(b *testing.B, cycles int, cpu time.Duration) {
	b.ReportMetric(float64(cycles)/b.Elapsed().Seconds(), "cycles/s")
	if cpu > 0 {
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(cycles), "cpu-ns/cycle")
	}
}
