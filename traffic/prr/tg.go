package prr

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/labrunner/labrunner/drivers"
)

// Model is a TG_MODEL value: one of the traffic models of FPGA'20 §5.1.
type Model uint32

// The traffic generator's models (docs/prr.md, "Models").
const (
	Uniform    Model = 0 // Bernoulli arrivals, uniform destinations (§5.1a)
	Bursty     Model = 1 // Off/New/On chain, mean burst TG_BURST (§5.1b)
	Nonuniform Model = 2 // own port with probability TG_NONUNIF_P (§5.1c)
)

// ModelNamed maps the golden model's traffic names to TG_MODEL values.
func ModelNamed(name string) (Model, error) {
	switch name {
	case "uniform":
		return Uniform, nil
	case "bursty":
		return Bursty, nil
	case "nonuniform":
		return Nonuniform, nil
	}
	return 0, fmt.Errorf("traffic model %q: want uniform, bursty or nonuniform (FPGA'20 §5.1)", name)
}

func (m Model) String() string {
	switch m {
	case Uniform:
		return "uniform"
	case Bursty:
		return "bursty"
	case Nonuniform:
		return "nonuniform"
	}
	return fmt.Sprintf("model-%d", uint32(m))
}

// One is probability 1 in the generator's 1/65536 fixed point.
const One = 1 << 16

// Fixed converts a probability 0..1 to the generator's 1/65536 fixed point,
// rounding to the nearest step.
func Fixed(p float64) (uint32, error) {
	if !(p >= 0 && p <= 1) {
		return 0, fmt.Errorf("probability %g: want 0..1", p)
	}
	return uint32(math.Round(p * One)), nil
}

// TG_STATUS bits.
const (
	TGDone      uint32 = 1 << 0
	TGBusy      uint32 = 1 << 1
	TGStranded  uint32 = 1 << 2
	TGBadConfig uint32 = 1 << 3
)

// TGConfig is one traffic-generator run (docs/prr.md, "Traffic generator").
type TGConfig struct {
	Model    Model
	Load     uint32 // input rate per port per cycle in 1/65536 (One = 1)
	Burst    uint32 // bursty: mean burst size in packets
	NonunifP uint32 // nonuniform: probability of the own port in 1/65536
	Seed     uint32
	Cycles   uint32 // cycles during which traffic is offered
	Warmup   uint32 // first cycles whose packets are not measured
	DrainMax uint32 // cycles the drain may take at most
}

// DefaultTG is the generator's reset configuration with the paper's
// defaults: input rate 1, mean burst 32 (§5.1b), p = 0.5 (§5.1c).
func DefaultTG() TGConfig {
	return TGConfig{Model: Uniform, Load: One, Burst: 32, NonunifP: One / 2, Seed: 1, Cycles: 100000, DrainMax: 1 << 20}
}

// words encodes the configuration registers TG_MODEL..TG_DRAIN_MAX,
// refusing values that do not fit their widths.
func (c TGConfig) words() ([]uint32, error) {
	switch {
	case c.Model > Nonuniform:
		return nil, fmt.Errorf("TG_MODEL %d: want 0 uniform, 1 bursty or 2 nonuniform", uint32(c.Model))
	case c.Load > One:
		return nil, fmt.Errorf("TG_LOAD 0x%x: the input rate is at most 1 (0x%x)", c.Load, One)
	case c.Burst > 0xffff:
		return nil, fmt.Errorf("TG_BURST %d: a 16-bit field", c.Burst)
	case c.NonunifP > One:
		return nil, fmt.Errorf("TG_NONUNIF_P 0x%x: a probability is at most 0x%x", c.NonunifP, One)
	case c.Cycles == 0:
		return nil, fmt.Errorf("TG_CYCLES 0: offer traffic for at least one cycle")
	case c.Warmup >= c.Cycles:
		return nil, fmt.Errorf("TG_WARMUP %d with TG_CYCLES %d: nothing would be measured", c.Warmup, c.Cycles)
	}
	return []uint32{uint32(c.Model), c.Load, c.Burst, c.NonunifP, c.Seed, c.Cycles, c.Warmup, c.DrainMax}, nil
}

// TGResult is what a run counted (docs/prr.md, "Results").
type TGResult struct {
	Status      uint32
	Offered     uint64
	Delivered   uint64
	Dropped     uint64
	LatSum      uint64 // departure - insertion, over measured delivered packets
	LatMin      uint32
	LatMax      uint32
	WaitSum     uint64 // departure - queue write - 1
	WaitMax     uint32
	WindowOut   uint64 // departures in run cycles Warmup..Cycles-1
	RunCycles   uint64
	Stranded    uint32
	OrderErrors uint32
	Hist        [HistBins]uint32
}

// AvgLatency is the mean port-to-port latency in cycles.
func (r TGResult) AvgLatency() float64 { return ratio(r.LatSum, r.Delivered) }

// AvgWait is the mean queue wait in cycles (latency beyond the minimum).
func (r TGResult) AvgWait() float64 { return ratio(r.WaitSum, r.Delivered) }

// DropRate is dropped / offered.
func (r TGResult) DropRate() float64 { return ratio(r.Dropped, r.Offered) }

// Throughput is the departures per port per cycle in the measurement window.
func (r TGResult) Throughput(c TGConfig, ports int) float64 {
	return ratio(r.WindowOut, uint64(c.Cycles-c.Warmup)*uint64(ports))
}

func ratio(a, b uint64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// RunTG configures the generator (one burst), starts it and waits for
// TG_STATUS.DONE, then reads the results (two bursts). The emulator runs
// the whole thing inside the START write; hardware is polled. A refused
// configuration (TG_STATUS.BAD_CONFIG) is an error.
func (s *Switch) RunTG(ctx context.Context, c TGConfig) (TGResult, error) {
	w, err := c.words()
	if err != nil {
		return TGResult{}, drivers.Setup("", "configure the traffic generator", "", err)
	}
	if err := s.Regs.WriteBurst(ctx, s.a.tgConfig, w); err != nil {
		return TGResult{}, fmt.Errorf("configuring the traffic generator: %w", err)
	}
	back := make([]uint32, len(w))
	if err := s.Regs.ReadBurst(ctx, s.a.tgConfig, back); err != nil {
		return TGResult{}, fmt.Errorf("reading the traffic generator's configuration back: %w", err)
	}
	for i := range w {
		if back[i] != w[i] {
			return TGResult{}, fmt.Errorf("%s: wrote 0x%x, read back 0x%x", tgConfigNames[i], w[i], back[i])
		}
	}
	if err := s.Regs.WriteAddr(ctx, s.a.tgCtrl, 1); err != nil {
		return TGResult{}, fmt.Errorf("TG_CTRL.START: %w", err)
	}
	pause := time.Millisecond
	for {
		res, err := s.ReadTG(ctx)
		if err != nil {
			return res, err
		}
		if res.Status&TGBadConfig != 0 {
			return res, fmt.Errorf("the traffic generator refused its configuration (TG_STATUS.BAD_CONFIG, TG_MODEL %d)", uint32(c.Model))
		}
		if res.Status&TGDone != 0 {
			return res, nil
		}
		select {
		case <-ctx.Done():
			return res, drivers.Stalled(ctx, fmt.Sprintf("waiting for TG_STATUS.DONE (%d cycles offered)", c.Cycles))
		case <-time.After(pause):
		}
		pause = min(2*pause, 100*time.Millisecond)
	}
}

// ReadTG reads the generator's status and results (two bursts).
func (s *Switch) ReadTG(ctx context.Context) (TGResult, error) {
	w := make([]uint32, len(tgResultNames))
	if err := s.Regs.ReadBurst(ctx, s.a.tgResults, w); err != nil {
		return TGResult{}, fmt.Errorf("reading the traffic generator's results: %w", err)
	}
	r := DecodeTGResults(w)
	if r.Status&TGDone == 0 {
		return r, nil
	}
	if err := s.Regs.ReadBurst(ctx, s.a.tgHist, r.Hist[:]); err != nil {
		return r, fmt.Errorf("reading TG_HIST: %w", err)
	}
	return r, nil
}

// DecodeTGResults decodes the burst TG_STATUS..TG_ORDER_ERRORS (20 words,
// each 64-bit counter low word first). It panics on a shorter slice.
func DecodeTGResults(w []uint32) TGResult {
	u64 := func(i int) uint64 { return uint64(w[i+1])<<32 | uint64(w[i]) }
	_ = w[len(tgResultNames)-1]
	return TGResult{
		Status: w[0], Offered: u64(1), Delivered: u64(3), Dropped: u64(5), LatSum: u64(7),
		LatMin: w[9], LatMax: w[10], WaitSum: u64(11), WaitMax: w[13], WindowOut: u64(14),
		RunCycles: u64(16), Stranded: w[18], OrderErrors: w[19],
	}
}

// TGResultWords is the length of the burst DecodeTGResults takes.
var TGResultWords = len(tgResultNames)
