package tin

import (
	"fmt"
	"runtime"
	"testing"
)

// BenchmarkSimulateSmallClique: the reference simulation of the 2x4 Clique
// at 0.2 load, reported as simulated cells and packets per second of wall
// time.
func BenchmarkSimulateSmallClique(b *testing.B) {
	c, err := NewClique(2, 4, 1)
	if err != nil {
		b.Fatal(err)
	}
	cfg := SimConfig{Clique: c, Timing: PaperTiming(), Mode: FullyAdaptive, Load: 0.2, Bytes: 1500, ReplyBytes: 64,
		Warmup: 1000, Packets: 10000, CTSWindow: 8, Align: 8, Seed: 1}
	var cells, packets int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cfg.Seed = uint64(i + 1)
		r, err := Simulate(cfg)
		if err != nil {
			b.Fatal(err)
		}
		cells += r.Cells
		packets += 2 * int64(cfg.Warmup+cfg.Packets) // requests and replies
	}
	b.ReportMetric(float64(cells)/b.Elapsed().Seconds(), "cells/s")
	b.ReportMetric(float64(packets)/b.Elapsed().Seconds(), "packets/s")
}

// BenchmarkRoutes: route sets of every pair of the small Clique.
func BenchmarkRoutes(b *testing.B) {
	c, _ := NewClique(2, 4, 1)
	nodes := c.Nodes()
	for i := 0; i < b.N; i++ {
		for _, s := range nodes {
			for _, d := range nodes {
				if _, err := c.Routes(Addr{s.Pod, s.TiN, 0}, Addr{d.Pod, d.TiN, 0}, FullyAdaptive, 0); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
}

// BenchmarkBookSimDragonfly runs the network BookSim2's anchor runs (the
// 1,056-node Dragonfly of SC'18 §IV with BookSim's channel and router
// latencies, single-flit packets, uniform random, minimal routing) for the
// anchor's length, and reports packets per second with the latency and
// accepted rate BookSim prints. scripts/booksim-compare.sh runs BookSim
// beside it and prints the ratios.
func BenchmarkBookSimDragonfly(b *testing.B) {
	for _, load := range []float64{0.1, 0.3, 0.5} {
		b.Run(fmt.Sprintf("load=%g", load), func(b *testing.B) {
			var pk int64
			var r SynthResult
			for i := 0; i < b.N; i++ {
				var err error
				r, err = RunSynthetic(SynthConfig{Fabric: BookSimDragonfly(1), Alg: AlgMinimal, Rate: load, PacketBytes: 1,
					WarmupNs: AnchorWarmupNs, MeasureNs: AnchorMeasureNs, Seed: uint64(i + 1)})
				if err != nil {
					b.Fatal(err)
				}
				pk += r.Packets
			}
			b.ReportMetric(float64(pk)/b.Elapsed().Seconds(), "packets/s")
			b.ReportMetric(r.LatencyNs, "latency-ns")
			b.ReportMetric(r.Accepted, "accepted")
		})
	}
}

// BenchmarkScale: time and memory per simulated packet as the fabric
// grows, synthetic uniform traffic at 0.3 of the injection rate, one
// full cell (160 B) or flit per packet: the lab's 2x4 Clique (8 TiNs), an
// 8x8 Clique (64), 32x8 (256), the SC'18 Dragonfly (1,056 endpoints) and
// Aquila's full Clique with its 1,152 hosts.
func BenchmarkScale(b *testing.B) {
	clique := func(p, t, g int) FabricConfig {
		c, err := NewClique(p, t, g)
		if err != nil {
			b.Fatal(err)
		}
		return AquilaFabric(c, PaperTiming(), DefaultBufferBytes, AquilaNonMinWeight, AquilaNonMinBias, 1, PaperTiming().InjectGbps, 1)
	}
	for _, tc := range []struct {
		name   string
		fab    FabricConfig
		alg    Algorithm
		packet int
	}{
		{"endpoints=8", clique(2, 4, 1), AlgFullyAdaptive, MaxCell},
		{"endpoints=64", clique(8, 8, 1), AlgFullyAdaptive, MaxCell},
		{"endpoints=256", clique(32, 8, 4), AlgFullyAdaptive, MaxCell},
		{"endpoints=1056", SC18Dragonfly(1), AlgPAR, 1},
		{"endpoints=1152", AquilaRack(1), AlgFullyAdaptive, MaxCell},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var pk int64
			var ms0, ms1 runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&ms0)
			for i := 0; i < b.N; i++ {
				r, err := RunSynthetic(SynthConfig{Fabric: tc.fab, Alg: tc.alg, Rate: 0.3, PacketBytes: tc.packet,
					WarmupNs: 10000, MeasureNs: 10000, Seed: uint64(i + 1)})
				if err != nil {
					b.Fatal(err)
				}
				pk += r.Packets
			}
			runtime.ReadMemStats(&ms1)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(pk), "ns/packet")
			b.ReportMetric(float64(ms1.TotalAlloc-ms0.TotalAlloc)/float64(pk), "B/packet")
			b.ReportMetric(float64(ms1.Sys)/(1<<20), "sys-MB")
			b.ReportMetric(float64(pk)/float64(b.N), "packets/run")
		})
	}
}

// BenchmarkReadBands: the rma_isolation test's golden read latency, 64 runs
// of 20 reads from each TiN of the lab's 2x4 Clique and every pair alone,
// reported as reads simulated per second of wall time.
func BenchmarkReadBands(b *testing.B) {
	set := map[string]string{"packets": "", "loads": "", "modes": "", "local_prop_ns": "5", "global_prop_ns": "50", "switch_clock_mhz": "250",
		"completion": "128", "resp_tag": "4", "align": "1", "rma_mem_ns": "800", "rma_cpl_ns": "200", "replicas": "64"}
	for i := 0; i < b.N; i++ {
		if _, err := (Model{}).Predict(set); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*(64*8*20+56))/b.Elapsed().Seconds(), "reads/s")
}

// BenchmarkBulkBands: the rma_isolation test's golden reads beside bulk
// IP, three runs per priority of 20 reads from each TiN of the lab's 2x4
// Clique beside 1285 packets of 4864 B from each (0.2 load): the time of
// one Predict (the runs go as many at a time as there are processors).
func BenchmarkBulkBands(b *testing.B) {
	set := map[string]string{"packets": "", "loads": "", "modes": "", "local_prop_ns": "5", "global_prop_ns": "50", "switch_clock_mhz": "250",
		"completion": "128", "resp_tag": "4", "align": "1", "rma_mem_ns": "800", "rma_cpl_ns": "200", "replicas": "4", "cts_window": "16",
		"rma_bulk_load": "0.2", "rma_bulk_bytes": "4864", "rma_bulk_packets": "1285", "rma_bulk_runs": "3"}
	for i := 0; i < b.N; i++ {
		if _, err := (Model{}).Predict(set); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFullCliqueRTT: Fig. 7's traffic on Aquila's full Clique (576
// TiNs with their switches, at 0.6 and 0.7 of the injection rate) for a
// tenth of the figure's requests, reported as simulated events per second
// of wall time: the switch model's hot paths (make figures runs the whole
// length).
func BenchmarkFullCliqueRTT(b *testing.B) {
	for _, load := range []float64{fig7Load, fig7PaperLoad} {
		b.Run(fmt.Sprintf("load=%g", load), func(b *testing.B) {
			var events int64
			for i := 0; i < b.N; i++ {
				r, err := fullCliqueRun(load, fig7Warmup/10, fig7Packets/10)
				if err != nil {
					b.Fatal(err)
				}
				events += r.Events
			}
			b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
		})
	}
}
