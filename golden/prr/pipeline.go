package prr

import "fmt"

// Pipeline is the length and latency of the combined parallel round-robin
// arbiter's pipeline for P ports and register-removal factor S (FPGA'20
// §4.1-§4.2, Table 1).
type Pipeline struct {
	P, S int
	// SortStages: Batcher's odd-even merge sort, log2P·(log2P+1)/2 (§3.2a).
	SortStages int
	// OffsetStages: the offsets pipeline (adder trees, offset counters,
	// prefix sum, subtractors), 2·log2P+1 (§4.1).
	OffsetStages int
	// ShifterStages: the barrel shifters, log2P (§3.2d).
	ShifterStages int
	// Length: the pipeline length in stages, Table 1's "Pipeline length"
	// (§4.1): ShifterStages + max(SortStages, OffsetStages). The stages stay
	// when S > 1; only their registers go (§4.2).
	Length int
	// CompulsoryIndex: the stage of the offset counters, whose registers
	// cannot be removed, log2P (§4.2).
	CompulsoryIndex int
	// Latency: cycles from insertion to the queues' inputs with registers
	// kept only on every S-th stage and on the compulsory one (§4.2):
	// ceil((Length-CompulsoryIndex)/S) + ceil((1+CompulsoryIndex)/S) - 1.
	Latency int
}

// MaxS bounds the register-removal factor: beyond the pipeline length every
// S gives the same latency.
const MaxS = 64

// PipelineFor computes the pipeline of a p-port switch with register-removal
// factor s (FPGA'20 §4.1-§4.2).
func PipelineFor(p, s int) (Pipeline, error) {
	if err := checkPorts(p); err != nil {
		return Pipeline{}, fmt.Errorf("prr: pipeline: %w", err)
	}
	if s < 1 || s > MaxS {
		return Pipeline{}, fmt.Errorf("prr: pipeline: S = %d: want 1..%d (S ∈ ℕ*, FPGA'20 §4.2)", s, MaxS)
	}
	n := log2(p)
	pl := Pipeline{
		P: p, S: s,
		SortStages:      n * (n + 1) / 2,
		OffsetStages:    2*n + 1,
		ShifterStages:   n,
		CompulsoryIndex: n,
	}
	pl.Length = pl.ShifterStages + max(pl.SortStages, pl.OffsetStages)
	pl.Latency = ceilDiv(pl.Length-pl.CompulsoryIndex, s) + ceilDiv(1+pl.CompulsoryIndex, s) - 1
	return pl, nil
}

// PortToPortNs is the port-to-port latency in nanoseconds at clockMHz: the
// pipeline latency plus one cycle for reading the queues, over the clock
// (FPGA'20 §4.2 Table 1 and §5.2: latency_p2p = (latency_opt + 1)/f_clk).
func (pl Pipeline) PortToPortNs(clockMHz float64) float64 {
	return float64(pl.Latency+1) * 1e3 / clockMHz
}

// LineGbps is one port's throughput: the packet width times the clock, one
// packet per port per cycle (FPGA'20 §4.5 and §5.2: Throughput = Width ×
// f_clk).
func LineGbps(widthBits int, clockMHz float64) float64 {
	return float64(widthBits) * clockMHz / 1e3
}

// IndicativeClockMHz is the clock Table 1 uses to turn cycles into
// nanoseconds before place-and-route (FPGA'20 §4.2).
const IndicativeClockMHz = 150.0

// ReportedClockMHz returns the maximal operating frequency FPGA'20 §5.2
// reports on the ZU19EG for p ports, widthBits-wide packets and S, and
// whether the paper gives one. The text gives S=1 for 256- and 512-bit
// packets and 2..16 ports, and S=4 only for the 16-port 512-bit switch;
// the other points are only plotted (Fig. 11).
func ReportedClockMHz(p, widthBits, s int) (float64, bool) {
	type key struct{ p, w, s int }
	f, ok := map[key]float64{
		{2, 256, 1}: 301, {4, 256, 1}: 208, {8, 256, 1}: 196, {16, 256, 1}: 140,
		{2, 512, 1}: 276, {4, 512, 1}: 269, {8, 512, 1}: 143, {16, 512, 1}: 110,
		{16, 512, 4}: 102,
	}[key{p, widthBits, s}]
	return f, ok
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
