package exanet

import (
	"math"
	"strings"
	"testing"
)

func pingPong(t *testing.T, hops, payload int) Latency {
	t.Helper()
	l, err := PingPong(hops, payload)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// The figures §4.2 and §4.4 state.
func TestLatencyPaperPoints(t *testing.T) {
	small := pingPong(t, 1, 16) // header + one payload word + footer
	if small.Words != 3 {
		t.Fatalf("16 B packet is %d words, want 3", small.Words)
	}
	// "reading (~0.4 µs, about 20 clock cycles per word)"
	if math.Abs(small.ReadUS-0.4) > 0.025 {
		t.Errorf("read of the smallest packet = %.3f µs, paper says ~0.4", small.ReadUS)
	}
	// "writing (< 0.1 µs, 4 clock cycles per word)"
	if small.WriteUS >= 0.1 {
		t.Errorf("write of the smallest packet = %.3f µs, paper says < 0.1", small.WriteUS)
	}
	// §4.4: sub-µs single-hop latency (per direction, see the package doc).
	if small.OneWayUS >= 1 {
		t.Errorf("single-hop latency of the smallest packet = %.3f µs, paper says sub-µs", small.OneWayUS)
	}
	// §4.2: two hops minus one hop = 0.46 µs, whatever the size, and the
	// read and write times do not depend on the hop count.
	for _, p := range []int{1, 16, 17, 64, 128, 300, 512} {
		one, two := pingPong(t, 1, p), pingPong(t, 2, p)
		if d := two.OneWayUS - one.OneWayUS; math.Abs(d-0.46) > 1e-9 {
			t.Errorf("%d B: two-hop minus one-hop = %v µs per direction, want 0.46", p, d)
		}
		if d := two.RoundTripUS - one.RoundTripUS; math.Abs(d-0.92) > 1e-9 {
			t.Errorf("%d B: round trip grows %v µs per hop, want 2×0.46", p, d)
		}
		if one.ReadUS != two.ReadUS || one.WriteUS != two.WriteUS {
			t.Errorf("%d B: ARM read/write depend on hops", p)
		}
		if one.RoundTripUS != 2*one.OneWayUS {
			t.Errorf("%d B: round trip %v is not two ways %v", p, one.RoundTripUS, one.OneWayUS)
		}
	}
}

func TestLatencyMonotonic(t *testing.T) {
	for h := 1; h <= 6; h++ {
		prev := pingPong(t, h, 1)
		for p := 2; p <= MaxPayload; p++ {
			l := pingPong(t, h, p)
			if l.RoundTripUS < prev.RoundTripUS {
				t.Fatalf("hops %d: round trip falls from %d to %d B", h, p-1, p)
			}
			if p%WordBytes == 1 && l.RoundTripUS <= prev.RoundTripUS {
				t.Fatalf("hops %d: a new word at %d B costs nothing", h, p)
			}
			if h > 1 && l.RoundTripUS <= pingPong(t, h-1, p).RoundTripUS {
				t.Fatalf("%d B: %d hops not slower than %d", p, h, h-1)
			}
			prev = l
		}
	}
}

func TestRTTExpectation(t *testing.T) {
	e, err := RTT(2, 64)
	if err != nil {
		t.Fatal(err)
	}
	l := pingPong(t, 2, 64)
	if e.Metric != "exanet.rtt" || e.Unit != "us" || e.Value != l.RoundTripUS {
		t.Fatalf("%+v", e)
	}
	if got := e.Key(); got != "exanet.rtt{hops=2,payload=64}" {
		t.Fatalf("key %q", got)
	}
	if !strings.Contains(e.Source, "§4.2") || e.RelTol <= 0 || e.AbsTol <= 0 {
		t.Fatalf("%+v", e)
	}
	// A measurement one hop off (0.92 µs) must fail.
	lo, hi := e.Bounds()
	if e.Value-0.92 >= lo || e.Value+0.92 <= hi {
		t.Fatalf("tolerance [%v,%v] around %v cannot tell 1 hop from 2", lo, hi, e.Value)
	}
	for _, c := range []struct {
		hops, payload int
		want          string
	}{
		{0, 64, "hops 0 is outside"},
		{MaxHops + 1, 64, "is outside 1.."},
		{1, 0, "payload 0 B"},
		{1, 513, "payload 513 B"},
	} {
		if _, err := RTT(c.hops, c.payload); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("RTT(%d,%d) error %v, want %q", c.hops, c.payload, err, c.want)
		}
	}
}
