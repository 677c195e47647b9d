package bringup

import (
	"strings"
	"testing"
)

// Shoal §6.1: "a guard band of one clock cycle (6.4 ns) ... we select a
// slot size of 12 clock cycles (76.8 ns). This includes 1 cycle of guard
// band overhead and 24 B (3 cycles) of Altera MAC overhead. Thus the
// usable slot size equals 8 cycles (51.2 ns), which translates to 64 B
// cells at 10 Gbps".
func TestShoalPrototypeFigures(t *testing.T) {
	p, err := ShoalPrototype().Plan()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"guard ns", p.GuardNS, 6.4}, {"guard cycles", float64(p.GuardCycles), 1},
		{"slot ns", p.SlotNS, 76.8}, {"slot cycles", float64(p.SlotCycles), 12},
		{"usable ns", p.UsableNS, 51.2}, {"cell ns", p.CellNS, 51.2}, {"cells", float64(p.Cells), 1},
		{"overhead", p.Overhead, 1.0 / 12}, {"min slot (10 cycles)", p.MinSlotNS, 64},
		{"max precision (under a cycle)", p.MaxPrecisionNS, 6.4},
	} {
		if !near(c.got, c.want, 1e-9) {
			t.Errorf("%s: %v, want %v", c.name, c.got, c.want)
		}
	}
}

// Shoal §7.1: "a guard band of 2.75 ns, based on a 2.5 ns switch
// reconfiguration delay (§4.1) and 0.25 ns to account for any variability
// in propagation and synchronization imprecision (§3.4) ... we select the
// slot size of 23.25 ns. This results in 20.5 ns of usable slot size ...
// 64 B cells at 25 Gbps".
func TestShoalRackFigures(t *testing.T) {
	r := ShoalRack()
	// §3.4: ±2 cm at 5 ns/m varies by at most 0.2 ns; WhiteRabbit sub-50 ps.
	if !near(r.PropVarNS, 0.2, 1e-12) || r.PrecisionNS != 0.05 || !near(r.PropVarNS+r.PrecisionNS, 0.25, 1e-12) {
		t.Errorf("prop var %v + precision %v, want 0.2 + 0.05 = 0.25", r.PropVarNS, r.PrecisionNS)
	}
	p, err := r.Plan()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"guard ns", p.GuardNS, 2.75}, {"slot ns", p.SlotNS, 23.25}, {"usable ns", p.UsableNS, 20.5},
		{"cells", float64(p.Cells), 1}, {"overhead", p.Overhead, 2.75 / 23.25}, {"min slot", p.MinSlotNS, 27.5},
		{"max precision", p.MaxPrecisionNS, 0.05}, {"duty cycle", p.DutyCycle, 20.5 / 23.25},
	} {
		if !near(c.got, c.want, 1e-9) {
			t.Errorf("%s: %v, want %v", c.name, c.got, c.want)
		}
	}
	// "resulting in max throughput of 90 Gbps": 100 Gb/s x duty cycle is
	// 88.2, the paper's "around".
	if g := 100 * p.DutyCycle; g < 85 || g > 92 {
		t.Errorf("throughput %v Gb/s", g)
	}
}

func TestGuardFromMeasuredPrecision(t *testing.T) {
	proto := ShoalPrototype()
	for _, c := range []struct {
		precision float64
		cycles    int
		slot      float64
	}{
		// Under a cycle costs nothing (§6.1); each whole cycle one more.
		// A 2-cycle guard leaves room for (128 - 12.8 - 19.2)/51.2 = 1.875
		// cells at 10%: two, 12.8 + 19.2 + 102.4 = 134.4 ns (9.5%); a
		// 3-cycle one (192 - 19.2 - 19.2)/51.2 = 3: 192 ns (10%).
		{0, 1, 76.8}, {3, 1, 76.8}, {6.3, 1, 76.8}, {6.4, 2, 134.4}, {12.7, 2, 134.4}, {12.8, 3, 192},
	} {
		s := proto
		s.PrecisionNS = c.precision
		p, err := s.Plan()
		if err != nil {
			t.Fatal(err)
		}
		if p.GuardCycles != c.cycles || !near(p.SlotNS, c.slot, 1e-9) {
			t.Errorf("precision %v: %d guard cycles, slot %v; want %d, %v", c.precision, p.GuardCycles, p.SlotNS, c.cycles, c.slot)
		}
	}
	// The rack: guard grows with precision in 0.25 ns steps; at 10%
	// overhead the slot gains a second cell once the guard passes
	// 1.5 cells' worth: (guard/0.1 - guard)/20.5 >= 1.5 -> guard >= 3.42.
	prev := 0.0
	for _, prec := range []float64{0, 0.05, 0.3, 0.7, 1, 2} {
		s := ShoalRack()
		s.PrecisionNS = prec
		p, err := s.Plan()
		if err != nil {
			t.Fatal(err)
		}
		if p.GuardNS < prev {
			t.Errorf("precision %v: guard %v below a smaller precision's %v", prec, p.GuardNS, prev)
		}
		prev = p.GuardNS
		wantCells := 1
		if p.GuardNS >= 3.42 {
			wantCells = 2
		}
		if p.Cells != wantCells || p.Overhead > 0.2 {
			t.Errorf("precision %v: guard %v, %d cells, overhead %v", prec, p.GuardNS, p.Cells, p.Overhead)
		}
	}
}

func TestMaxPrecisionFor(t *testing.T) {
	if m, err := ShoalPrototype().MaxPrecisionFor(6.4); err != nil || m != 6.4 {
		t.Errorf("prototype, 1 cycle: %v %v", m, err)
	}
	if m, err := ShoalPrototype().MaxPrecisionFor(12.8); err != nil || !near(m, 12.8, 1e-12) {
		t.Errorf("prototype, 2 cycles: %v %v", m, err)
	}
	if _, err := ShoalPrototype().MaxPrecisionFor(7); err == nil || !strings.Contains(err.Error(), "whole number") {
		t.Errorf("7 ns on a 6.4 ns clock: %v", err)
	}
	if m, err := ShoalRack().MaxPrecisionFor(2.75); err != nil || !near(m, 0.05, 1e-12) {
		t.Errorf("rack: %v %v", m, err)
	}
}

func TestPrecisionAndPropVariability(t *testing.T) {
	if v := PropVariabilityNS(0.02, 5); !near(v, 0.2, 1e-12) {
		t.Errorf("±2 cm at 5 ns/m: %v", v)
	}
	if p, err := PrecisionNS([]float64{0, 3.5, -1.25, 2}); err != nil || p != 4.75 {
		t.Errorf("precision %v %v", p, err)
	}
	if _, err := PrecisionNS(nil); err == nil {
		t.Error("no offsets accepted")
	}
}

func TestSlottingRejects(t *testing.T) {
	for name, s := range map[string]Slotting{
		"no guard": {CellBytes: 64, ChannelGbps: 10, Target: 0.1},
		"target":   {ReconfigNS: 1, CellBytes: 64, ChannelGbps: 10, Target: 1},
		"rate":     {ReconfigNS: 1, CellBytes: 64, Target: 0.1},
		"cell":     {ReconfigNS: 1, ChannelGbps: 10, Target: 0.1},
		"negative": {ReconfigNS: -1, CellBytes: 64, ChannelGbps: 10, Target: 0.1},
		"tiny":     {ReconfigNS: 1e9, CellBytes: 1, ChannelGbps: 1e5, Target: 0.001},
	} {
		if _, err := s.Plan(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
