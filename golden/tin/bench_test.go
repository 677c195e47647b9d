package tin

import (
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
