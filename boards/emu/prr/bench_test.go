package prr

import (
	"testing"
)

// BenchmarkSwitchCycles measures simulated switch cycles per second of the
// catalogue's 16x16 build under each traffic model of §5.1 at input rate 1,
// driven through the traffic generator as a runner drives it.
func BenchmarkSwitchCycles(b *testing.B) {
	for _, tc := range []struct {
		name  string
		model uint32
	}{{"bernoulli", ModelBernoulli}, {"bursty", ModelBursty}, {"nonuniform", ModelNonuniform}} {
		b.Run(tc.name, func(b *testing.B) {
			g := newRig(b, rigOpts{})
			if g.cfg.Ports != 16 {
				b.Fatalf("the catalogue build has %d ports, the benchmark wants 16", g.cfg.Ports)
			}
			const cycles = 100000
			g.w("TG_MODEL", tc.model)
			g.w("TG_CYCLES", cycles)
			b.ResetTimer()
			total := uint64(0)
			for i := 0; i < b.N; i++ {
				g.w("TG_SEED", uint32(i+1))
				g.w("TG_CTRL", tgStart)
				total += g.r64("TG_RUN_CYCLES")
			}
			b.ReportMetric(float64(total)/b.Elapsed().Seconds(), "cycles/s")
		})
	}
}
