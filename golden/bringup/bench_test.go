package bringup

import "testing"

// BenchmarkBootstrapFullClique: waves of Aquila's 576-TiN Clique.
func BenchmarkBootstrapFullClique(b *testing.B) {
	top, err := Clique(48, 12, 8)
	if err != nil {
		b.Fatal(err)
	}
	top.DCN = []string{"p0t0", "p0t2", "p47t0", "p47t2"}
	b.ReportAllocs()
	for b.Loop() {
		p, err := Bootstrap(top, Faults{Dead: []string{"p3t3"}})
		if err != nil || p.WaveCount() != 4 {
			b.Fatal(p.WaveCount(), err)
		}
	}
}

// BenchmarkScheduleFullClique: bootstrap time of the full Clique at a
// lossy MOS rate (the negative binomial quantile dominates).
func BenchmarkScheduleFullClique(b *testing.B) {
	top, _ := Clique(48, 12, 8)
	top.DCN = []string{"p0t0", "p0t2", "p47t0", "p47t2"}
	p, err := Bootstrap(top, Faults{})
	if err != nil {
		b.Fatal(err)
	}
	tm := Timing{PMOS: testPMOS(), ConfigBytes: 1 << 20, ProxyFailMS: -1}
	tm.PMOS.Loss = 1e-4
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Schedule(tm); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTimeTreeFullClique: the time-distribution tree and every offset
// band of the full Clique.
func BenchmarkTimeTreeFullClique(b *testing.B) {
	top, _ := Clique(48, 12, 8)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := TimeTree(top, top.Boards, []string{"p0t0"}, DefaultSync(), nil, Failure{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPredictDefault: the whole model on the small Clique.
func BenchmarkPredictDefault(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := (Model{}).Predict(map[string]string{"ts_fail": "p0t0", "shoal": "rack"}); err != nil {
			b.Fatal(err)
		}
	}
}
