package shoal

import (
	"fmt"
	"runtime"
	"testing"
	"time"
)

// BenchmarkRackFlows: golden rack simulation throughput at 512 nodes (§7.1
// rack, §7.3 workload at load 0.5), in flows simulated per second.
func BenchmarkRackFlows(b *testing.B) {
	c := Rack()
	w := NewWorkload(Uniform, c.Nodes, 10000, 0.5, 1)
	flows, err := w.Generate(c.PayloadBytes())
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		if _, err := Simulate(c, flows, SimOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(flows)*b.N)/time.Since(start).Seconds(), "flows/s")
}

// BenchmarkRack100kFlowsLoad05 is the nightly's reference run: 100,000
// flows on the 512-node rack at load 0.5 (run with -benchtime=1x; on one
// core, GOMAXPROCS=1 taskset -c 0). Its result must be the pinned one
// (rack100kDigest): the run measures the simulation, not a variant of it.
func BenchmarkRack100kFlowsLoad05(b *testing.B) {
	c, w := rack100k()
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		flows, err := w.Generate(c.PayloadBytes())
		if err != nil {
			b.Fatal(err)
		}
		r, err := Simulate(c, flows, SimOptions{})
		if err != nil {
			b.Fatal(err)
		}
		s := Summarise(c, flows, r)
		el := time.Since(start).Seconds()
		b.ReportMetric(el, "s/run")
		b.ReportMetric(float64(s.Flows)/el, "flows/s")
		b.ReportMetric(float64(s.MaxQueue), "max-queue")
		b.ReportMetric(float64(s.Joined), "joined-flows")
		if got := simDigest(r); got != rack100kDigest {
			b.Fatalf("result digest %s, pinned %s: the simulation's behaviour changed", got, rack100kDigest)
		}
	}
}

// BenchmarkPrototypeIncast: the 7:1 incast of Fig. 10.
func BenchmarkPrototypeIncast(b *testing.B) {
	c := Prototype()
	for range b.N {
		if _, err := Incast(c, 7, 7, 0, SimOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecomposeRack: one slot of the 512-node fabric into its 48
// switch configurations.
func BenchmarkDecomposeRack(b *testing.B) {
	s, _ := NewSchedule(512, 4, Cyclic)
	topo := Topology{Nodes: 512, Radix: 32}
	b.ResetTimer()
	for k := range b.N {
		if _, err := topo.Decompose(s, k%s.EpochSlots(), k%4); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkScale: time and memory per simulated cell of the rack
// simulation as the rack grows, uniform §7.3 workload at load 0.5: the
// 8-node prototype, a 64-node rack and the 512-node rack of §7.1.
func BenchmarkScale(b *testing.B) {
	rack64 := Rack()
	rack64.Name, rack64.Nodes = "rack64", 64
	for _, tc := range []struct {
		c     Config
		flows int
	}{{Prototype(), 2000}, {rack64, 10000}, {Rack(), 100000}} {
		b.Run(fmt.Sprintf("nodes=%d", tc.c.Nodes), func(b *testing.B) {
			w := NewWorkload(Uniform, tc.c.Nodes, tc.flows, 0.5, 1)
			flows, err := w.Generate(tc.c.PayloadBytes())
			if err != nil {
				b.Fatal(err)
			}
			var cells int64
			for _, f := range flows {
				cells += f.Cells
			}
			var ms0, ms1 runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&ms0)
			b.ResetTimer()
			for range b.N {
				if _, err := Simulate(tc.c, flows, SimOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			runtime.ReadMemStats(&ms1)
			n := float64(cells) * float64(b.N)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/cell")
			b.ReportMetric(float64(ms1.TotalAlloc-ms0.TotalAlloc)/n, "B/cell")
			b.ReportMetric(float64(ms1.Sys)/(1<<20), "sys-MB")
			b.ReportMetric(float64(cells), "cells/run")
		})
	}
}
