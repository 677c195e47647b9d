package exanet

import (
	"testing"

	"github.com/labrunner/labrunner/labconfig"
)

func flt(name, link, board string, kv ...string) labconfig.Fault {
	f := labconfig.Fault{Name: name, Link: link, Board: board, Params: labconfig.Params{}}
	for i := 0; i+1 < len(kv); i += 2 {
		f.Params[kv[i]] = labconfig.Param{Values: []string{kv[i+1]}}
	}
	return f
}

// exa-arb-slow: two more grant cycles a packet take the one-sender router
// bandwidth from 76.2% (42 cycles a packet) to 72.7% (44), and two
// senders' from 88.9% (36) to 84.2% (38).
func TestFaultArbSlow(t *testing.T) {
	for _, c := range []struct {
		senders     uint32
		healthy, bw float64
	}{{1, 32.0 / 42, 32.0 / 44}, {3, 32.0 / 36, 32.0 / 38}} {
		for _, faulty := range []bool{false, true} {
			var fs []labconfig.Fault
			want := c.healthy
			if faulty {
				fs, want = []labconfig.Fault{flt(FaultArbSlow, "", "a")}, c.bw
			}
			rk := newRack(t, rackSpec{boards: []string{"a"}, faults: fs})
			if st := rk.tg("a", c.senders, coordWord(0, 0, 0), 2, 512, 2000, false); st != 1 {
				t.Fatalf("TG_STATUS = %#x", st)
			}
			eff, _, _ := rk.efficiency("a")
			if !within(eff, want, 0.005) {
				t.Errorf("senders %#b, fault %v: router efficiency %.2f%%, want %.2f%%", c.senders, faulty, 100*eff, 100*want)
			}
		}
	}
}

// exa-rx-fifo-short: the peer's credits at rest stay 102 words below
// CREDIT_MAX; with report=actual CREDIT_MAX of the faulty cage reads 922.
func TestFaultRxFIFOShort(t *testing.T) {
	rk := mesh2x2(t, 1, []labconfig.Fault{flt(FaultRxFIFOShort, "b10:sfp0", "")}, nil)
	if st := rk.tg("b00", 1, coordWord(1, 0, 0), 0, 512, 200, false); st != 1 {
		t.Fatalf("TG_STATUS = %#x", st)
	}
	if cr, max := rk.r("b00", "CREDITS[0]"), rk.r("b00", "CREDIT_MAX[0]"); cr != 922 || max != 1024 {
		t.Errorf("b00 toward the short FIFO at rest: CREDITS %d, CREDIT_MAX %d; want 922 and 1024", cr, max)
	}
	if cr := rk.r("b10", "CREDITS[0]"); cr != 1024 {
		t.Errorf("b10 toward the healthy FIFO: CREDITS %d, want 1024", cr)
	}
	if got := rk.r("b10", "CONS_PACKETS"); got != 200 {
		t.Errorf("%d packets delivered, want 200 (bandwidth and delivery unaffected)", got)
	}
	if v := rk.r("b10", "CREDIT_MAX[0]"); v != 1024 {
		t.Errorf("report=declared: b10 CREDIT_MAX[0] = %d, want the declared 1024", v)
	}
	rk = mesh2x2(t, 1, []labconfig.Fault{flt(FaultRxFIFOShort, "b10:sfp0", "", "report", "actual")}, nil)
	if v := rk.r("b10", "CREDIT_MAX[0]"); v != 922 {
		t.Errorf("report=actual: b10 CREDIT_MAX[0] = %d, want 922", v)
	}
}

// exa-xcvr-slow: each crossing of the faulty cable takes 2 cycles (12.8 ns)
// longer. The two-hop ping-pong from (0,0) to (1,1) crosses the (1,0)-(1,1)
// cable once (DOR: X then Y out, X then Y back through (0,1)); the one-hop
// ping-pong does not cross it.
func TestFaultXcvrSlow(t *testing.T) {
	rtt := func(fs []labconfig.Fault) (one, two float64) {
		rk := mesh2x2(t, 1, fs, nil)
		for _, b := range []string{"b10", "b11"} {
			rk.w(b, "PP_RESPONDER", 1)
			rk.w(b, "PP_DEST", 0)
		}
		one, _ = rk.pingPong("b00", coordWord(1, 0, 0), 0, 16, 100)
		two, _ = rk.pingPong("b00", coordWord(1, 1, 0), 0, 16, 100)
		return one, two
	}
	h1, h2 := rtt(nil)
	f1, f2 := rtt([]labconfig.Fault{flt(FaultXcvrSlow, "b10:sfp1", "")}) // the b10-b11 cable
	if d := (f1 - h1) * 1000; d < -3 || d > 3 {
		t.Errorf("one-hop round trip changed by %.1f ns; the faulty cable is not on its path", d)
	}
	if d := (f2 - h2) * 1000; d < 12.8-3 || d > 12.8+3 {
		t.Errorf("two-hop round trip grew by %.1f ns, want 12.8 (one crossing, 2 cycles)", d)
	}
	t.Logf("per-hop increment: healthy %.3f us, faulty %.3f us (§4.2: 0.46)", h2-h1, f2-f1)
}

// exa-link-gap: 512 B link bandwidth falls from 90.1% to 87.7% of 10 Gb/s.
func TestFaultLinkGap(t *testing.T) {
	for _, c := range []struct {
		fs   []labconfig.Fault
		want float64
	}{{nil, 64.0 / 71}, {[]labconfig.Fault{flt(FaultLinkGap, "b00:sfp0", "")}, 64.0 / 73}} {
		rk := mesh2x2(t, 1, c.fs, nil)
		if st := rk.tg("b00", 1, coordWord(1, 0, 0), 0, 512, 2000, false); st != 1 {
			t.Fatalf("TG_STATUS = %#x", st)
		}
		_, cy, by := rk.efficiency("b10")
		eff := float64(by) * 8 / (float64(cy) * 6.4) / 10
		if !within(eff, c.want, 0.004) {
			t.Errorf("faults %v: link efficiency %.2f%%, want %.2f%%", c.fs, 100*eff, 100*c.want)
		}
	}
}
