package ordering

import "testing"

// BenchmarkRun: the reference playing four 64-REQ streams against two
// receiver connections and a 16-packet reorder buffer, in order.
func BenchmarkRun(b *testing.B) {
	sts := []Stream{{Src: 0, Mode: Fast, N: 64}, {Src: 1, Mode: Sync, N: 64}, {Src: 2, Mode: Fast, N: 64, EOD: true}, {Src: 3, Mode: Slow, N: 64}}
	cfg := Config{Target: TargetConfig{Conns: 2, ROB: 16}, Window: 8}
	reqs := 0
	for i := 0; i < b.N; i++ {
		r, err := Run(cfg, sts, nil)
		if err != nil || r.Stalled != "" {
			b.Fatal(err, r.Stalled)
		}
		reqs += 256
	}
	b.ReportMetric(float64(reqs)/b.Elapsed().Seconds(), "REQs/s")
}
