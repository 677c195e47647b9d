package shoal_test

import (
	"testing"

	ts "github.com/labrunner/labrunner/traffic/shoal"
)

// BenchmarkTrafficThroughTheDriver measures emulated slots per second of a
// full permutation driven through the driver's chunked START/CONTINUE writes
// on the in-process 8-board rack (register access, chunk sizing and the
// emulator together): what a traffic test's wall time is made of.
func BenchmarkTrafficThroughTheDriver(b *testing.B) {
	g := newRig(b, docCables())
	g.up(12)
	flows, err := ts.Permutation(8, ts.MaxDescriptorBytes, 1)
	if err != nil {
		b.Fatal(err)
	}
	if err := g.rack.LoadFlows(g.ctx, flows); err != nil {
		b.Fatal(err)
	}
	if _, err := g.rack.Traffic(g.ctx, true, 1000); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	st, err := g.rack.Traffic(g.ctx, false, int64(b.N))
	if err != nil || st.Slots != int64(b.N) {
		b.Fatalf("%v (%v)", st, err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "slots/s")
	b.ReportMetric(float64(st.Writes), "writes")
}

// BenchmarkWorkloadGenerate measures drawing the §7.3 workload.
func BenchmarkWorkloadGenerate(b *testing.B) {
	w := ts.NewWorkload(ts.Skewed, 8, 10000, 0.5, 5, 1)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := ts.Generate(w); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*w.Flows)/b.Elapsed().Seconds(), "flows/s")
}
