package emu

import (
	"math"
	"testing"

	"github.com/labrunner/labrunner/labconfig"
)

// The one-way delay of an ordered set over a cable of latency L (ns): one
// 2.56 ns block, the transceivers (PHY_LATENCY_PS) and the cable.
func channelNS(l float64) float64 { return 2.56 + 30 + l }

func signedPS(v uint32) float64 { return float64(int32(v)) }

func measure(t *testing.T, m *mregs, port int) float64 {
	t.Helper()
	m.wr(portReg("LAT_CTRL", port), 1)
	m.wait(20)
	st := m.rd(portReg("LAT_STATUS", port))
	if st&2 == 0 || st>>8 != latSamples {
		t.Fatalf("%s port %d: LAT_STATUS 0x%x", m.name, port, st)
	}
	return float64(m.rd(portReg("LAT_DELAY_PS", port))) / 1000
}

func TestLatencyMeasurementShowsAsymmetry(t *testing.T) {
	r := startMgmtRack(t, mgmtLab{boards: []string{"a", "b", "c"},
		links:  []string{"a:sfp0-b:sfp0", "b:sfp1-c:sfp0"},
		ppm:    map[string]float64{"a": 20, "b": -20},
		asym:   map[string]float64{"b:sfp1-c:sfp0": 40}, // c -> b is 40 ns slower
		faults: []labconfig.Fault{linkFault(FaultLinkAsymmetric, "a:sfp0", "ns", "16")}})
	a, b, c := regsOf(t, r, "a"), regsOf(t, r, "b"), regsOf(t, r, "c")
	// a:sfp0 -> b:sfp0 is 16 ns slower than back: both ends read +8 ns.
	for _, x := range []struct {
		m    *mregs
		port int
		want float64
	}{{a, 0, channelNS(5) + 8}, {b, 0, channelNS(5) + 8}, {b, 1, channelNS(5) + 20}, {c, 0, channelNS(5) + 20}} {
		if got := measure(t, x.m, x.port); math.Abs(got-x.want) > 0.6 {
			t.Errorf("%s port %d: LAT_DELAY %.3f ns, want %.3f (half the asymmetry shows)", x.m.name, x.port, got, x.want)
		}
	}
	if rtt := float64(b.rd("LAT_RTT_PS[1]")) / 1000; math.Abs(rtt-(2*channelNS(5)+40)) > 1.2 {
		t.Errorf("LAT_RTT %.3f", rtt)
	}
	// The fault changed the cable itself.
	l := r.Links()[0]
	if l.DelayNS(l.A) != 21 || l.DelayNS(l.B) != 5 {
		t.Errorf("a->b %g ns, b->a %g ns", l.DelayNS(l.A), l.DelayNS(l.B))
	}
	// An uncabled port, and a powered-off peer, answer ERROR.
	for _, port := range []int{2} {
		b.wr(portReg("LAT_CTRL", port), 1)
		b.wait(20)
		if st := b.rd(portReg("LAT_STATUS", port)); st != 4 {
			t.Errorf("uncabled: LAT_STATUS 0x%x", st)
		}
	}
	cb, _ := r.Board("c")
	cb.setPower(false)
	b.wr("LAT_CTRL[1]", 1)
	b.wait(20)
	if st := b.rd("LAT_STATUS[1]"); st != 4 {
		t.Errorf("peer off: LAT_STATUS 0x%x", st)
	}
}

// tsTree configures a time-distribution tree: primary p sends on its
// ports; each client listens on rx (with the delay measured on it) and
// passes on to tx.
type tsNode struct {
	m      *mregs
	rx     int
	tx     uint32
	client bool
	comp   float64 // ns to add to the measured delay (a known asymmetry)
}

func configureTS(t *testing.T, nodes []tsNode) {
	t.Helper()
	for _, n := range nodes {
		if !n.client {
			n.m.wr("TS_TX_PORTS", n.tx)
			n.m.wr("TS_CTRL", tsRolePrimary)
			continue
		}
		d := measure(t, n.m, n.rx) + n.comp
		n.m.wr("TS_DELAY_COMP_PS", uint32(math.Round(d*1000)))
		n.m.wr("TS_TX_PORTS", n.tx)
		n.m.wr("TS_CTRL", tsRoleClient|uint32(n.rx)<<8)
	}
}

func tsFlags(m *mregs) (locked, failed bool, depth uint32) {
	s := m.rd("TS_STATUS")
	return s&1 != 0, s&2 != 0, s >> 8 & 0xF
}

func TestTimeSyncConvergesAndAsymmetryShows(t *testing.T) {
	lab := mgmtLab{boards: []string{"a", "b", "c"}, links: []string{"a:sfp0-b:sfp0", "b:sfp1-c:sfp0"},
		ppm:    map[string]float64{"a": 12.5, "b": -8, "c": 3},
		offset: map[string]float64{"a": 1200, "b": -300, "c": 50}}
	for _, asym := range []float64{0, 40} {
		lab.asym = map[string]float64{"b:sfp1-c:sfp0": asym}
		r := startMgmtRack(t, lab)
		a, b, c := regsOf(t, r, "a"), regsOf(t, r, "b"), regsOf(t, r, "c")
		before, _ := r.TrueClockOffsetNS("c", "a")
		configureTS(t, []tsNode{{m: a, tx: 1}, {m: b, client: true, rx: 0, tx: 2}, {m: c, client: true, rx: 0}})
		start := r.MgmtTime()
		// converged within the first interval or two
		var lockedAt float64
		for range 20 {
			if l, _, _ := tsFlags(c); l {
				lockedAt = float64(r.MgmtTime()-start) / 1e3
				break
			}
			a.wait(20)
		}
		if lockedAt == 0 || lockedAt > 300 {
			t.Fatalf("asym %g: c locked after %.0f us", asym, lockedAt)
		}
		a.wr("TS_CLEAR", 1)
		b.wr("TS_CLEAR", 1)
		c.wr("TS_CLEAR", 1)
		var worstB, worstC float64
		for range 40 {
			a.wait(37) // sample at many phases of the interval
			ob, _ := r.TrueClockOffsetNS("b", "a")
			oc, _ := r.TrueClockOffsetNS("c", "a")
			worstB, worstC = max(worstB, math.Abs(ob)), max(worstC, math.Abs(oc-asym/2))
		}
		_, fb, db := tsFlags(b)
		lc, fc, dc := tsFlags(c)
		if !lc || fb || fc || db != 1 || dc != 2 {
			t.Fatalf("asym %g: b failed %v depth %d, c locked %v failed %v depth %d", asym, fb, db, lc, fc, dc)
		}
		// per hop: one 2.5 ns cycle of time-stamp quantisation, the drift
		// over an interval (20.5 ppm x 100 us = 2.05 ns), and the delay
		// measurement's error.
		if worstB > 5.5 || worstC > 9.5 {
			t.Errorf("asym %g: true offsets b %.2f ns, c %.2f ns (beyond the asymmetry's %.0f)", asym, worstB, worstC, asym/2)
		}
		// The hardware cannot see the asymmetry: its corrections stay small
		// while c's true offset is half the asymmetry.
		if mc := float64(c.rd("TS_MAX_CORR_PS")) / 1000; mc > 7.5 {
			t.Errorf("asym %g: TS_MAX_CORR %.2f ns", asym, mc)
		}
		oc, _ := r.TrueClockOffsetNS("c", "a")
		t.Logf("asym %g: offset c-a %.1f ns before, %.2f ns after; c locked after %.0f us; worst |b| %.2f, |c - asym/2| %.2f; c last corr %.2f ns",
			asym, before, oc, lockedAt, worstB, worstC, signedPS(c.rd("TS_LAST_CORR_PS"))/1000)
		// The time registers move with the clock.
		t1, _ := c.Read64(tctx(), "TS_TIME_LO")
		c.wait(1000)
		t2, _ := c.Read64(tctx(), "TS_TIME_LO")
		// DELAY_US 1000, plus three accesses of 50 us (the write, the two
		// reads of the first 64-bit read's end and the second's start)
		if d := int64(t2 - t1); d < 1_140_000 || d > 1_160_000 {
			t.Errorf("TS_TIME advanced %d ns over 1 ms and three accesses", d)
		}
	}
}

func TestTimeSyncDetectsFailureAndReRoots(t *testing.T) {
	// A ring a-b-c-a; the tree a -> b -> c. The cable a-b is cut at 5 ms.
	r := startMgmtRack(t, mgmtLab{boards: []string{"a", "b", "c"},
		links:  []string{"a:sfp0-b:sfp0", "b:sfp1-c:sfp0", "c:sfp1-a:sfp1"},
		ppm:    map[string]float64{"a": 10, "b": -10, "c": 5},
		faults: []labconfig.Fault{linkFault(FaultMOSLinkCut, "a:sfp0", "at_us", "5000")}})
	a, b, c := regsOf(t, r, "a"), regsOf(t, r, "b"), regsOf(t, r, "c")
	configureTS(t, []tsNode{{m: a, tx: 1}, {m: b, client: true, rx: 0, tx: 2}, {m: c, client: true, rx: 0}})
	a.wait(1000)
	if l, f, _ := tsFlags(c); !l || f {
		t.Fatalf("before the cut: c locked %v failed %v", l, f)
	}
	for r.MgmtTime() < 5_000_000 {
		a.wait(500)
	}
	if b.field("PORT_STATUS[0]", "CHANNEL_UP") != 0 {
		t.Fatal("the cut cable still reads CHANNEL_UP")
	}
	// b misses its messages: after two intervals the first, then one per
	// interval; TS_FAIL_LIMIT (4) in a row raise FAILED within ~600 us.
	var failedAt float64
	for range 40 {
		b.wait(50)
		if _, f, _ := tsFlags(b); f {
			failedAt = float64(r.MgmtTime()-5_000_000*1e0) / 1e3
			break
		}
	}
	if failedAt == 0 || b.rd("TS_MISSED") < 4 {
		t.Fatalf("b never failed (missed %d)", b.rd("TS_MISSED"))
	}
	// c hears b, which is no longer locked: invalid messages, then failure.
	c.wait(600)
	if l, f, _ := tsFlags(c); l || !f || c.rd("TS_RX_INVALID") == 0 {
		t.Fatalf("c: locked %v failed %v invalid %d", l, f, c.rd("TS_RX_INVALID"))
	}
	t.Logf("b signalled the failure %.0f us after the cut (%d missed); c saw %d invalid messages", failedAt, b.rd("TS_MISSED"), c.rd("TS_RX_INVALID"))

	// The runner re-roots: a -> c (over c:sfp1) -> b (over b:sfp1).
	configureTS(t, []tsNode{{m: a, tx: 2}, {m: c, client: true, rx: 1, tx: 1}, {m: b, client: true, rx: 1}})
	b.wr("TS_STATUS", 2)
	c.wr("TS_STATUS", 2)
	a.wait(800)
	lb, fb, db := tsFlags(b)
	lc, fc, dc := tsFlags(c)
	if !lb || fb || !lc || fc || dc != 1 || db != 2 {
		t.Fatalf("after re-rooting: b locked %v failed %v depth %d, c locked %v failed %v depth %d", lb, fb, db, lc, fc, dc)
	}
	for _, n := range []string{"b", "c"} {
		if o, _ := r.TrueClockOffsetNS(n, "a"); math.Abs(o) > 10 {
			t.Errorf("%s is %.2f ns off after re-rooting", n, o)
		}
	}
	if c.rd("TS_FAILURES") != 1 {
		t.Errorf("TS_FAILURES %d", c.rd("TS_FAILURES"))
	}
}

func TestTimeSyncPrimaryDies(t *testing.T) {
	r := startMgmtRack(t, mgmtLab{boards: []string{"a", "b"}, links: []string{"a:sfp0-b:sfp0"},
		faults: []labconfig.Fault{fault(FaultTSyncDead, "a", "at_us", "3000")}})
	a, b := regsOf(t, r, "a"), regsOf(t, r, "b")
	configureTS(t, []tsNode{{m: a, tx: 1}, {m: b, client: true, rx: 0}})
	a.wait(1000)
	if l, f, _ := tsFlags(b); !l || f {
		t.Fatalf("b locked %v failed %v", l, f)
	}
	tx := a.rd("TS_TX_COUNT")
	a.wait(3000)
	if _, f, _ := tsFlags(b); !f || b.rd("TS_MISSED") == 0 {
		t.Fatalf("b did not notice the dead primary: failed %v missed %d", f, b.rd("TS_MISSED"))
	}
	// The fault's documentation: TS_TX_COUNT keeps counting attempts.
	if got := a.rd("TS_TX_COUNT"); got < tx+20 {
		t.Errorf("a dead primary's TS_TX_COUNT went from %d to %d in 3 ms of 100 us intervals", tx, got)
	}
}

func TestTimeSyncLargeDrift(t *testing.T) {
	// slow-clock: b's oscillator 500 ppm slow; over a 100 us interval it
	// falls 50 ns behind.
	for _, threshold := range []uint32{100, 30} {
		r := startMgmtRack(t, mgmtLab{boards: []string{"a", "b"}, links: []string{"a:sfp0-b:sfp0"},
			faults: []labconfig.Fault{fault("slow-clock", "b")}})
		a, b := regsOf(t, r, "a"), regsOf(t, r, "b")
		configureTS(t, []tsNode{{m: a, tx: 1}, {m: b, client: true, rx: 0}})
		b.wr("TS_THRESHOLD_NS", threshold)
		a.wait(2000)
		last := signedPS(b.rd("TS_LAST_CORR_PS")) / 1000
		_, failed, _ := tsFlags(b)
		if math.Abs(last-50) > 4 {
			t.Errorf("threshold %d: TS_LAST_CORR %.2f ns, want about 50", threshold, last)
		}
		switch {
		case threshold == 100 && (failed || float64(b.rd("TS_MAX_CORR_PS"))/1000 < 45):
			t.Errorf("threshold 100: failed %v, max corr %d ps", failed, b.rd("TS_MAX_CORR_PS"))
		case threshold == 30 && (!failed || b.rd("TS_RX_INVALID") == 0):
			t.Errorf("threshold 30: failed %v invalid %d", failed, b.rd("TS_RX_INVALID"))
		}
	}
}

func TestTimeSyncOnlyRxPortCounts(t *testing.T) {
	r := startMgmtRack(t, mgmtLab{boards: []string{"a", "b"}, links: []string{"a:sfp0-b:sfp0", "a:sfp1-b:sfp1"}})
	a, b := regsOf(t, r, "a"), regsOf(t, r, "b")
	configureTS(t, []tsNode{{m: a, tx: 3}, {m: b, client: true, rx: 1}})
	a.wait(1000)
	if b.rd("TS_RX_OTHER") == 0 || b.rd("TS_RX_VALID") == 0 || b.rd("TS_RX_VALID") > b.rd("TS_RX_OTHER")+2 {
		t.Fatalf("valid %d other %d", b.rd("TS_RX_VALID"), b.rd("TS_RX_OTHER"))
	}
	if w := a.rd("TS_WAIT_MAX_PS"); w == 0 || w > 128_000 {
		t.Fatalf("TS_WAIT_MAX_PS %d (a message waits at most 128 ns for a gap)", w)
	}
}
