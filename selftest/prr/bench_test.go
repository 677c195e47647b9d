package prr

import (
	"testing"

	"github.com/labrunner/labrunner/labconfig"
	"github.com/labrunner/labrunner/selftest"
	tp "github.com/labrunner/labrunner/traffic/prr"
)

// BenchmarkGoldenReplicas: the golden simulations the default PRR plan
// runs for its simulated figures (three traffic models at input rate 1,
// 199 replicas of 30000 cycles, 16×16, depth 32), shared by the
// throughput, latency and drop_rate tests.
func BenchmarkGoldenReplicas(b *testing.B) {
	for b.Loop() {
		env := &selftest.Env{Lab: &labconfig.Lab{Seed: 1}, Shared: map[string]any{}}
		for _, tr := range []string{"uniform", "bursty", "nonuniform"} {
			k := simKey{p: 16, depth: 32, cycles: 30000, replicas: defaultReplicas, traffic: tr, load: tp.One, seed: boardSeed(env, "golden", tr)}
			// simulate, not the process's cache: every iteration simulates.
			if _, err := simulate(k); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkExpectPlacement: the golden side of one placement-test batch.
func BenchmarkExpectPlacement(b *testing.B) {
	sw := newGolden(b, 16, 32)
	g := newBatchGen(1, 16)
	k := 0
	for b.Loop() {
		if k%256 == 255 {
			goldenDrain(sw, 1024)
		}
		expectPlacement(sw, goldenBatch(g.next(), 16, k))
		k++
	}
}
