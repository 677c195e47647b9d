package prr

import (
	"math"
	"testing"
)

func genStats(t *testing.T, kind Traffic, p int, load float64, cycles int) (rate float64, own float64, perDest []float64, g *trafficGen) {
	t.Helper()
	g, err := newTrafficGen(kind, p, load, DefaultBurstLen, DefaultHotProb, 42)
	if err != nil {
		t.Fatal(err)
	}
	arr := make([]int16, p)
	perDest = make([]float64, p)
	var n, self int
	for range cycles {
		n += g.next(arr)
		for i, d := range arr {
			if d >= 0 {
				perDest[d]++
				if int(d) == i {
					self++
				}
			}
		}
	}
	for d := range perDest {
		perDest[d] /= float64(n)
	}
	return float64(n) / float64(p*cycles), float64(self) / float64(n), perDest, g
}

func TestUniformTraffic(t *testing.T) {
	for _, load := range []float64{0.3, 1} {
		rate, own, per, _ := genStats(t, Uniform, 16, load, 50000)
		if math.Abs(rate-load) > 0.005 {
			t.Errorf("load %g: rate %.4f", load, rate)
		}
		if math.Abs(own-1.0/16) > 0.005 {
			t.Errorf("load %g: %.4f of packets to their own port, want 1/16", load, own)
		}
		for d, f := range per {
			if math.Abs(f-1.0/16) > 0.004 {
				t.Errorf("load %g: port %d gets %.4f of the packets, want 1/16", load, d, f)
			}
		}
	}
	if r, _, _, _ := genStats(t, Uniform, 8, 1, 1000); r != 1 {
		t.Errorf("rate 1 must send every cycle: %v", r)
	}
}

func TestNonuniformTraffic(t *testing.T) {
	rate, own, per, _ := genStats(t, Nonuniform, 16, 0.8, 50000)
	if math.Abs(rate-0.8) > 0.005 || math.Abs(own-0.5) > 0.005 {
		t.Errorf("rate %.4f, own-port share %.4f; want 0.8 and p = 0.5 (§5.1c)", rate, own)
	}
	// Every output still receives 1/P of the traffic: the load is admissible.
	for d, f := range per {
		if math.Abs(f-1.0/16) > 0.004 {
			t.Errorf("port %d gets %.4f", d, f)
		}
	}
}

func TestBurstyTraffic(t *testing.T) {
	for _, load := range []float64{0.3, 0.8, 1} {
		g, err := newTrafficGen(Bursty, 16, load, 32, DefaultHotProb, 7)
		if err != nil {
			t.Fatal(err)
		}
		arr := make([]int16, 16)
		const cycles = 60000
		var n, bursts, runSame, runs int
		prev := make([]int16, 16)
		for i := range prev {
			prev[i] = -1
		}
		for range cycles {
			for _, s := range g.state {
				if s == stNew {
					bursts++
				}
			}
			n += g.next(arr)
			for i, d := range arr {
				if d >= 0 && prev[i] >= 0 {
					runs++
					if d == prev[i] {
						runSame++
					}
				}
				prev[i] = d
			}
		}
		rate := float64(n) / (16 * cycles)
		mean := float64(n) / float64(bursts)
		if math.Abs(rate-load)/load > 0.03 {
			t.Errorf("load %g: rate %.4f", load, rate)
		}
		if math.Abs(mean-32)/32 > 0.05 {
			t.Errorf("load %g: mean burst %.2f packets, want s = 32 (§5.1b)", load, mean)
		}
		// Back-to-back packets mostly share a destination.
		if f := float64(runSame) / float64(runs); f < 0.95 {
			t.Errorf("load %g: only %.3f of consecutive packets share a destination", load, f)
		}
		if load == 1 && n != 16*cycles {
			t.Errorf("rate 1: %d of %d cycles sent; the chain must never rest (§5.1b: no cap at 1-1/(s+1))", n, 16*cycles)
		}
	}
	if _, err := newTrafficGen(Bursty, 4, 1, 0.5, 0, 1); err == nil {
		t.Error("burst size 0.5 accepted")
	}
	if _, err := newTrafficGen("zipf", 4, 1, 32, 0, 1); err == nil {
		t.Error("unknown traffic accepted")
	}
}

func TestProbThreshold(t *testing.T) {
	if probThreshold(0) != 0 || probThreshold(-1) != 0 || probThreshold(1) != 1<<53 || probThreshold(2) != 1<<53 {
		t.Fatal("threshold extremes")
	}
	// x>>11 < 1<<53 for every 64-bit x: rate 1 is certain.
	if (uint64(math.MaxUint64) >> 11) >= probThreshold(1) {
		t.Fatal("rate 1 not certain")
	}
}
