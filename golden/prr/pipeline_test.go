package prr

import (
	"math"
	"testing"
)

// TestTable1 reproduces every number of FPGA'20 §4.2, Table 1.
func TestTable1(t *testing.T) {
	ports := []int{2, 4, 8, 16, 32, 64, 128, 256}
	length := []int{4, 7, 10, 14, 20, 27, 35, 44}
	comp := []int{1, 2, 3, 4, 5, 6, 7, 8}
	lat := map[int][]int{
		1: {4, 7, 10, 14, 20, 27, 35, 44},
		2: {2, 4, 5, 7, 10, 14, 17, 22},
		4: {1, 2, 2, 4, 5, 7, 8, 11},
	}
	p2pNs := []float64{13.3, 20, 20, 33.3, 40, 53.3, 60, 80} // S=4, 150 MHz, rounded to 0.1 ns
	for i, p := range ports {
		for _, s := range []int{1, 2, 4} {
			pl, err := PipelineFor(p, s)
			if err != nil {
				t.Fatal(err)
			}
			if pl.Length != length[i] || pl.CompulsoryIndex != comp[i] || pl.Latency != lat[s][i] {
				t.Errorf("P=%d S=%d: length %d index %d latency %d, Table 1 says %d %d %d",
					p, s, pl.Length, pl.CompulsoryIndex, pl.Latency, length[i], comp[i], lat[s][i])
			}
			if s == 4 {
				if got := pl.PortToPortNs(IndicativeClockMHz); math.Abs(got-p2pNs[i]) > 0.05 {
					t.Errorf("P=%d: port-to-port %.2f ns, Table 1 says %.1f", p, got, p2pNs[i])
				}
			}
		}
	}
}

func TestPipelineParts(t *testing.T) {
	pl, _ := PipelineFor(16, 1)
	// §4.3: the shift registers synchronising the two pipelines have
	// |log2P(log2P+1)/2 − (2log2P+1)| stages: 1 for P=16.
	if pl.SortStages != 10 || pl.OffsetStages != 9 || pl.ShifterStages != 4 {
		t.Fatalf("P=16 parts %+v", pl)
	}
	for _, bad := range [][2]int{{3, 1}, {16, 0}, {16, MaxS + 1}, {512, 1}} {
		if _, err := PipelineFor(bad[0], bad[1]); err == nil {
			t.Errorf("PipelineFor(%d, %d) accepted", bad[0], bad[1])
		}
	}
	// Larger S never lengthens the pipeline, and S beyond the length
	// leaves one cycle (the compulsory register).
	for n := 1; n <= 8; n++ {
		prev := math.MaxInt
		for s := 1; s <= MaxS; s++ {
			pl, _ := PipelineFor(1<<n, s)
			if pl.Latency > prev || pl.Latency < 1 {
				t.Fatalf("P=%d S=%d: latency %d after %d", 1<<n, s, pl.Latency, prev)
			}
			prev = pl.Latency
		}
		if prev != 1 {
			t.Fatalf("P=%d S=%d: latency %d, want 1", 1<<n, MaxS, prev)
		}
	}
}

// TestThroughput: §1/§5.2 report 903.2 Gb/s aggregate for the 16×16 512-bit
// switch whose fmax §5.2 rounds to 110 MHz: Width × f_clk × 16 agrees within
// that rounding (110.25 MHz).
func TestThroughput(t *testing.T) {
	f, ok := ReportedClockMHz(16, 512, 1)
	if !ok || f != 110 {
		t.Fatalf("fmax for 16 ports, 512 bits: %v %v", f, ok)
	}
	if agg := 16 * LineGbps(512, f); math.Abs(agg-903.2)/903.2 > 0.003 {
		t.Fatalf("aggregate %.1f Gb/s, paper 903.2", agg)
	}
	if LineGbps(256, 150) != 38.4 {
		t.Fatalf("256 bits at 150 MHz: %v Gb/s", LineGbps(256, 150))
	}
	// §5.2: "our design almost always exceeds the throughput of GTY (32.75
	// Gbps)": every S=1 point the text gives does.
	for _, w := range []int{256, 512} {
		for _, p := range []int{2, 4, 8, 16} {
			f, _ := ReportedClockMHz(p, w, 1)
			if LineGbps(w, f) <= 32.75 {
				t.Errorf("P=%d %d bits: %.1f Gb/s, below GTY", p, w, LineGbps(w, f))
			}
		}
	}
	if _, ok := ReportedClockMHz(32, 512, 1); ok {
		t.Error("the paper gives no fmax for 32 ports")
	}
}
