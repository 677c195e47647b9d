package exanet

import "testing"

// The calibration targets of the emulator (ExaNet paper, ParCo 2017): they
// are computed from the design's own counters, the way the runner does.

// TestRouterBandwidthOneSender: §4.3, Fig. 9: the APErouter moving data
// between two intra-tile ports reaches 76% of the 128-bit x 156.25 MHz peak
// with 512-byte packets.
func TestRouterBandwidthOneSender(t *testing.T) {
	rk := newRack(t, rackSpec{boards: []string{"a"}})
	st := rk.tg("a", 1, coordWord(0, 0, 0), 1, 512, 2000, false)
	if st != 1 {
		t.Fatalf("TG_STATUS = %#x, want DONE", st)
	}
	eff, cy, by := rk.efficiency("a")
	t.Logf("one sender, 512 B: %d bytes in %d cycles: %.2f%% of peak", by, cy, 100*eff)
	if by != 2000*512 {
		t.Errorf("PC_BYTES = %d, want %d", by, 2000*512)
	}
	if !within(eff, 0.76, 0.02) {
		t.Errorf("router efficiency %.2f%%, paper §4.3: 76%% (±2%%)", 100*eff)
	}
}

// TestRouterBandwidthTwoSenders: §4.3: two intra-tile ports sending to the
// same target port reach 89.5%.
func TestRouterBandwidthTwoSenders(t *testing.T) {
	rk := newRack(t, rackSpec{boards: []string{"a"}})
	st := rk.tg("a", 3, coordWord(0, 0, 0), 2, 512, 2000, false)
	if st != 1 {
		t.Fatalf("TG_STATUS = %#x, want DONE", st)
	}
	eff, cy, by := rk.efficiency("a")
	t.Logf("two senders, 512 B: %d bytes in %d cycles: %.2f%% of peak", by, cy, 100*eff)
	if !within(eff, 0.895, 0.02) {
		t.Errorf("router efficiency %.2f%%, paper §4.3: 89.5%% (±2%%)", 100*eff)
	}
	s0, s1 := rk.r("a", "CONS_SRC_PACKETS[0]"), rk.r("a", "CONS_SRC_PACKETS[1]")
	if s0 != 2000 || s1 != 2000 {
		t.Errorf("CONS_SRC_PACKETS = %d, %d; want 2000 each", s0, s1)
	}
}

// TestLinkBandwidth: §4.3, Fig. 10: the APElink reaches 90% of 10 Gb/s with
// 512-byte packets.
func TestLinkBandwidth(t *testing.T) {
	rk := mesh2x2(t, 1, nil, nil)
	st := rk.tg("b00", 1, coordWord(1, 0, 0), 0, 512, 2000, false)
	if st != 1 {
		t.Fatalf("TG_STATUS = %#x, want DONE", st)
	}
	eff, cy, by := rk.efficiency("b10")
	gbps := float64(by) * 8 / (float64(cy) * 6.4)
	t.Logf("link, 512 B: %d bytes in %d cycles: %.3f Gb/s", by, cy, gbps)
	_ = eff
	if !within(gbps/10, 0.90, 0.02) {
		t.Errorf("link efficiency %.2f%% of 10 Gb/s, paper §4.3: 90%% (±2%%)", 10*gbps)
	}
}

// TestRoundTrip: §4.2: two hops cost 0.46 µs more than one; §4.4: the
// single-hop round trip is under a microsecond (reading E4). Checked with
// ideal oscillators and with those of the default lab
// (labconfig/default.yaml).
func TestRoundTrip(t *testing.T) {
	for _, osc := range []struct {
		name        string
		ppm, offset map[string]float64
	}{
		{"ideal clocks", nil, nil},
		{"default-lab clocks",
			map[string]float64{"b00": 12.5, "b10": -8, "b01": 3, "b11": -15},
			map[string]float64{"b00": 1200, "b10": -300, "b01": 50, "b11": 800}},
	} {
		rk := mesh2x2Osc(t, 1, nil, osc.ppm, osc.offset, 0)
		for _, b := range []string{"b10", "b11"} {
			rk.w(b, "PP_RESPONDER", 1)
			rk.w(b, "PP_DEST", 0)
		}
		one, st1 := rk.pingPong("b00", coordWord(1, 0, 0), 0, 16, 100)
		two, st2 := rk.pingPong("b00", coordWord(1, 1, 0), 0, 16, 100)
		t.Logf("%s: round trip, 16 B: one hop %.3f µs, two hops %.3f µs, difference %.3f µs", osc.name, one, two, two-one)
		if st1 != 1 || st2 != 1 {
			t.Fatalf("%s: PP_STATUS = %#x, %#x; want DONE", osc.name, st1, st2)
		}
		if one >= 1 {
			t.Errorf("%s: single-hop round trip %.3f µs; paper §4.4: sub-µs", osc.name, one)
		}
		if !within(two-one, 0.46, 0.02) {
			t.Errorf("%s: two-hop minus one-hop %.3f µs; paper §4.2: 0.46 µs (±2%%)", osc.name, two-one)
		}
	}
}
