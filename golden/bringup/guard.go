package bringup

import (
	"fmt"
	"math"
)

// Shoal figures (Shrivastav et al., NSDI 2019).
const (
	// ShoalCycleNS: the prototype's 156.25 MHz XGMII clock (§4.1, §6.1).
	ShoalCycleNS = 6.4
	// FibreNSPerM: "optical transmission with a propagation delay of 5 ns/m" (§3.4).
	FibreNSPerM = 5.0
	// CableToleranceM: "all links are the same length with a tolerance of ± 2 cm" (§3.4).
	CableToleranceM = 0.02
	// WhiteRabbitNS: "sub-50 picoseconds of synchronization precision" (§3.4).
	WhiteRabbitNS = 0.05
	// TargetOverhead: "To keep the guard band overhead to around 10%" (§6.1, §7.1).
	TargetOverhead = 0.10
)

// PropVariabilityNS is the largest difference in propagation delay between
// cables cut to one length within ±toleranceM, at nsPerM: two cables can
// differ by twice the tolerance. Shoal §3.4: ±2 cm at 5 ns/m "would vary by
// a maximum of 0.2 ns".
func PropVariabilityNS(toleranceM, nsPerM float64) float64 { return 2 * toleranceM * nsPerM }

// PrecisionNS is the synchronisation precision of a set of clock offsets
// from one reference (the primary's own offset, 0, included by the caller
// or not): the largest difference between any two, max - min. It is the
// figure the guard band has to absorb (§3.4).
func PrecisionNS(offsetsNS []float64) (float64, error) {
	if len(offsetsNS) == 0 {
		return 0, fmt.Errorf("precision of no offsets: give at least one board's offset")
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range offsetsNS {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return 0, fmt.Errorf("precision: offset %v is not a finite number", v)
		}
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	return hi - lo, nil
}

// Slotting is what sizes a Shoal slot (§3.4): the guard band is "the sum of
// the reconfiguration delay, variability in propagation and the precision
// of synchronization", and the slot carries the guard band, a per-slot MAC
// overhead and whole cells.
type Slotting struct {
	// CycleNS > 0: the design counts slots in cycles of this clock (the
	// prototype, §6.1); 0: slots are set in ns, rounded up to QuantumNS.
	CycleNS     float64
	QuantumNS   float64
	ReconfigNS  float64 // switch reconfiguration delay (§4.1)
	PropVarNS   float64 // variability in propagation (§3.4)
	PrecisionNS float64 // synchronisation precision, as calibrated
	MACNS       float64 // per-slot MAC overhead that carries no cell (§6.1: 24 B)
	CellBytes   int     // cell size (§6.1, §7.1: 64 B)
	ChannelGbps float64 // one channel's line rate (§6.1: 10; §7.1: 25)
	Target      float64 // guard band overhead aimed at (§6.1, §7.1: around 10%)
}

// ShoalPrototype is the 8-node FPGA prototype of Shoal §6.1: a 6.4 ns cycle,
// reconfiguration in one cycle (§4.1), wires of one length, a precision
// "less than a clock cycle" (0 here, the calibrated figure replaces it),
// 24 B = 3 cycles of Altera MAC overhead, 64 B cells at 10 Gb/s.
func ShoalPrototype() Slotting {
	return Slotting{CycleNS: ShoalCycleNS, ReconfigNS: ShoalCycleNS, MACNS: 3 * ShoalCycleNS,
		CellBytes: 64, ChannelGbps: 10, Target: TargetOverhead}
}

// ShoalRack is the simulated 512-node rack of Shoal §7.1: 2.5 ns
// reconfiguration (§4.1, a 390.625 MHz LGMII clock), propagation
// variability of ±2 cm at 5 ns/m = 0.2 ns and WhiteRabbit's 0.05 ns (§3.4)
// — together §7.1's "0.25 ns to account for any variability in propagation
// and synchronization imprecision" — 64 B cells on 25 Gb/s channels, slot
// sizes in steps of 0.25 ns (every §7.1 figure is a multiple of it).
func ShoalRack() Slotting {
	return Slotting{QuantumNS: 0.25, ReconfigNS: 2.5, PropVarNS: PropVariabilityNS(CableToleranceM, FibreNSPerM),
		PrecisionNS: WhiteRabbitNS, CellBytes: 64, ChannelGbps: 25, Target: TargetOverhead}
}

func (s Slotting) check() error {
	for _, f := range []struct {
		name string
		v    float64
	}{{"cycle_ns", s.CycleNS}, {"quantum_ns", s.QuantumNS}, {"reconfig_ns", s.ReconfigNS}, {"prop_var_ns", s.PropVarNS},
		{"precision_ns", s.PrecisionNS}, {"mac_ns", s.MACNS}} {
		if !(f.v >= 0 && f.v <= 1e9) {
			return fmt.Errorf("shoal %s %v: want 0..1e9", f.name, f.v)
		}
	}
	switch {
	case s.CycleNS > 0 && s.CycleNS < 1e-3:
		return fmt.Errorf("shoal cycle_ns %v: want 0 (slots in ns) or at least 0.001", s.CycleNS)
	case s.QuantumNS > 0 && s.QuantumNS < 1e-3:
		return fmt.Errorf("shoal quantum_ns %v: want 0 (exact) or at least 0.001", s.QuantumNS)
	case s.CellBytes < 1 || s.CellBytes > 1<<20:
		return fmt.Errorf("shoal cell_bytes %d: want 1..%d", s.CellBytes, 1<<20)
	case !(s.ChannelGbps > 0 && s.ChannelGbps <= 1e5):
		return fmt.Errorf("shoal channel_gbps %v: want a positive rate up to 1e5", s.ChannelGbps)
	case !(s.Target > 0 && s.Target < 1):
		return fmt.Errorf("shoal target overhead %v: want a fraction in (0, 1), e.g. 0.1", s.Target)
	case s.ReconfigNS+s.PropVarNS+s.PrecisionNS == 0:
		return fmt.Errorf("shoal guard band of 0 ns: give the reconfiguration delay, propagation variability or precision")
	}
	return nil
}

// SlotPlan is the golden slot arithmetic of one Shoal configuration.
type SlotPlan struct {
	GuardNS     float64
	GuardCycles int // clocked designs only
	// MinSlotNS is the shortest slot whose guard band overhead is at most
	// the target: guard/target (whole cycles, rounded up, when clocked).
	MinSlotNS float64
	// CellNS is one cell's time on the channel, rounded up to the design's
	// step (cycle or quantum).
	CellNS float64
	// Cells is the whole number of cells a slot carries: the number nearest
	// to what the target overhead leaves after guard and MAC overhead,
	// at least one.
	Cells      int
	SlotNS     float64 // recommended: guard + MAC + Cells · CellNS
	SlotCycles int     // clocked designs only
	UsableNS   float64 // Cells · CellNS
	Overhead   float64 // guard / slot
	DutyCycle  float64 // usable / slot
	// MaxPrecisionNS is the largest precision the guard band absorbs with
	// this reconfiguration delay and propagation variability (in a clocked
	// design, strictly less than it).
	MaxPrecisionNS float64
}

// Plan does the arithmetic of Shoal §3.4 for s.
//
// Guard band. Continuous: reconfiguration + propagation variability +
// precision, rounded up to QuantumNS (§7.1: 2.5 + 0.25 = 2.75 ns). Clocked:
// the reconfiguration in whole cycles plus one cycle for each whole cycle
// of propagation variability and precision together — clocks that are
// frequency-locked and within a cycle of each other agree on the cycle a
// slot starts in, and the sub-cycle phase is left to the receive path's
// synchronisation FIFOs (§4.1). That is how §6.1 gets "a guard band of one
// clock cycle" from a one-cycle reconfiguration, wires of one length and a
// precision "of less than a clock cycle".
//
// Slot. §6.1 and §7.1 each pick a slot of guard + MAC overhead + one 64 B
// cell, and call its guard overhead (1/12 = 8.3% and 2.75/23.25 = 11.8%)
// "around 10%". The model's rule reproduces both: carry the whole number
// of cells nearest to guard/target - guard - MAC (§6.1: 38.4/51.2 = 0.75;
// §7.1: 24.75/20.5 = 1.21; both give one cell).
func (s Slotting) Plan() (SlotPlan, error) {
	if err := s.check(); err != nil {
		return SlotPlan{}, err
	}
	var p SlotPlan
	cell := float64(s.CellBytes) * 8 / s.ChannelGbps
	if s.CycleNS > 0 {
		rc := ceilDiv(s.ReconfigNS, s.CycleNS)
		extra := math.Floor((s.PropVarNS+s.PrecisionNS)/s.CycleNS + 1e-9)
		p.GuardCycles = int(rc + extra)
		p.GuardNS = float64(p.GuardCycles) * s.CycleNS
		p.MinSlotNS = ceilDiv(p.GuardNS/s.Target, s.CycleNS) * s.CycleNS
		p.CellNS = ceilDiv(cell, s.CycleNS) * s.CycleNS
		// A guard of g cycles absorbs variability + precision under
		// g - reconfig + 1 cycles.
		p.MaxPrecisionNS = (float64(p.GuardCycles)-rc+1)*s.CycleNS - s.PropVarNS
	} else {
		p.GuardNS = roundUp(s.ReconfigNS+s.PropVarNS+s.PrecisionNS, s.QuantumNS)
		p.MinSlotNS = roundUp(p.GuardNS/s.Target, s.QuantumNS)
		p.CellNS = roundUp(cell, s.QuantumNS)
		p.MaxPrecisionNS = p.GuardNS - s.ReconfigNS - s.PropVarNS
	}
	mac := s.MACNS
	if s.CycleNS > 0 {
		mac = ceilDiv(mac, s.CycleNS) * s.CycleNS
	}
	room := p.GuardNS/s.Target - p.GuardNS - mac
	k := math.Round(room / p.CellNS)
	if k < 1 || math.IsNaN(k) {
		k = 1
	}
	if k > 1e6 {
		return SlotPlan{}, fmt.Errorf("shoal: a %.4g ns guard band at %.0f%% overhead leaves room for %.3g cells of %.4g ns; check the figures", p.GuardNS, s.Target*100, k, p.CellNS)
	}
	p.Cells = int(k)
	p.UsableNS = k * p.CellNS
	p.SlotNS = p.GuardNS + mac + p.UsableNS
	if s.CycleNS > 0 {
		p.SlotCycles = int(math.Round(p.SlotNS / s.CycleNS))
	}
	p.Overhead = p.GuardNS / p.SlotNS
	p.DutyCycle = p.UsableNS / p.SlotNS
	return p, nil
}

// MaxPrecisionFor is the largest synchronisation precision a design whose
// guard band is already set (guardNS, whole cycles when clocked) absorbs,
// with s's reconfiguration delay and propagation variability; in a clocked
// design the precision must stay strictly below it.
func (s Slotting) MaxPrecisionFor(guardNS float64) (float64, error) {
	if err := s.check(); err != nil {
		return 0, err
	}
	if !(guardNS > 0 && guardNS <= 1e9) {
		return 0, fmt.Errorf("shoal guard %v ns: want a positive band", guardNS)
	}
	if s.CycleNS > 0 {
		g := math.Round(guardNS / s.CycleNS)
		if math.Abs(g*s.CycleNS-guardNS) > 1e-6 {
			return 0, fmt.Errorf("shoal guard %v ns is not a whole number of %v ns cycles", guardNS, s.CycleNS)
		}
		return (g-ceilDiv(s.ReconfigNS, s.CycleNS)+1)*s.CycleNS - s.PropVarNS, nil
	}
	return guardNS - s.ReconfigNS - s.PropVarNS, nil
}

// ceilDiv returns ceil(a/b) for positive b, forgiving float noise (6.4/6.4
// computed as 1.0000000000000002 is 1).
func ceilDiv(a, b float64) float64 { return math.Ceil(a/b - 1e-9) }

// roundUp rounds v up to a multiple of q (q = 0: v).
func roundUp(v, q float64) float64 {
	if q <= 0 {
		return v
	}
	return ceilDiv(v, q) * q
}
