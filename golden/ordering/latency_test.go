package ordering

import (
	"math"
	"testing"
)

// Hand-worked with §IV's network: D = 580 ns, Tp = 16 ns, Ta = 1 ns.
func TestClosedFormsHandWorked(t *testing.T) {
	n := PaperNet()
	if n.RTT() != 16+580+1+580 {
		t.Fatalf("RTT %g", n.RTT())
	}
	for _, c := range []struct {
		mode LatencyMode
		k    int
		want float64
	}{
		{LatFast, 10, 160 + 580},
		{LatUnordered, 40, 640 + 580},
		{LatSyncTarget, 10, 740},
		{LatSlow, 1, 16 + 580},
		{LatSlow, 10, 9*1177 + 596},
		{LatSyncSource, 10, 160 + 3*580 + 1},
		{LatSyncSource, 1, 596},
	} {
		got, err := n.StreamLatency(c.mode, c.k)
		if err != nil || got != c.want {
			t.Errorf("StreamLatency(%s, %d) = %g, %v; want %g", c.mode, c.k, got, err, c.want)
		}
	}
	// Slow mode grows linearly with the stream by one RTT per REQ (§IV-A).
	a, _ := n.StreamLatency(LatSlow, 20)
	b, _ := n.StreamLatency(LatSlow, 21)
	if b-a != n.RTT() {
		t.Errorf("one more slow REQ costs %g ns, want one RTT", b-a)
	}
	// Source-side synchronization: "at least a full RTT" more, less the
	// operation's own link time.
	s, _ := n.StreamLatency(LatSyncSource, 30)
	tt, _ := n.StreamLatency(LatSyncTarget, 30)
	if s-tt != n.RTT()-n.PacketNs {
		t.Errorf("flush costs %g ns more, want RTT - Tp = %g", s-tt, n.RTT()-n.PacketNs)
	}
	// Slow mode uses a small fraction of the link: 16/1177.
	if math.Abs(n.SlowShare()-16.0/1177) > 1e-12 || n.SlowShare() > 0.02 {
		t.Errorf("slow share %g", n.SlowShare())
	}
	if _, err := n.StreamLatency(LatFast, 0); err == nil {
		t.Error("a stream of 0 REQs was accepted")
	}
	if _, err := n.StreamLatency("eventual", 3); err == nil {
		t.Error("an unknown mode was accepted")
	}
}

// §IV-D: 500 ns of skew at 16 ns per packet is 31.25 packets, "30 packets"
// in the paper's rounding; the model rounds up. 480 ns is exactly the
// paper's 30, giving its 50.
func TestROBCapacity(t *testing.T) {
	for _, c := range []struct {
		skew, pkt float64
		buf, want int
	}{
		{500, 16, 20, 52}, {480, 16, 20, 50}, {0, 16, 20, 20}, {16, 16, 0, 1}, {17, 16, 0, 2},
	} {
		got, err := ROBCapacity(c.skew, c.pkt, c.buf)
		if err != nil || got != c.want {
			t.Errorf("ROBCapacity(%g, %g, %d) = %d, %v; want %d", c.skew, c.pkt, c.buf, got, err, c.want)
		}
	}
	for _, bad := range [][3]float64{{-1, 16, 0}, {500, 0, 0}, {math.NaN(), 16, 0}, {500, 16, -1}} {
		if _, err := ROBCapacity(bad[0], bad[1], int(bad[2])); err == nil {
			t.Errorf("ROBCapacity%v accepted", bad)
		}
	}
	if (Net{OneWayNs: 1, PacketNs: 0}).Check() == nil || (Net{OneWayNs: -1, PacketNs: 1}).Check() == nil {
		t.Error("implausible network accepted")
	}
}
