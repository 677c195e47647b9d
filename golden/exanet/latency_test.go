package exanet

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/labrunner/labrunner/results"
)

func pingPong(t *testing.T, hops, payload int) Latency {
	t.Helper()
	l, err := PingPong(hops, payload)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func rtt(t *testing.T, hops, payload int) results.Expectation {
	t.Helper()
	e, err := RTT(hops, payload)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// passes scores a measured value against e the way the runner does.
func passes(e results.Expectation, v float64) bool {
	return results.Score(results.Measurement{Metric: e.Metric, Params: e.Params, Value: v, Unit: e.Unit}, e).Status == results.Pass
}

// The figures §4, §4.2 and §4.4 state, under the round-trip reading.
func TestLatencyPaperPoints(t *testing.T) {
	small := pingPong(t, 1, 16)
	// The 128-bit header is four 32-bit AXI words, 16 B of payload four
	// more; the footer is not the ARM's.
	if small.Words != 8 || HeaderAXIWords != 4 {
		t.Fatalf("16 B packet is %d ARM words (header %d), want 4 + 4", small.Words, HeaderAXIWords)
	}
	// 4 and 20 cycles of 1.5 GHz per word (§4, §4.2).
	if math.Abs(small.WriteUS-8*4/1500.0) > 1e-12 || math.Abs(small.ReadUS-8*20/1500.0) > 1e-12 {
		t.Errorf("16 B: write %v µs, read %v µs, want 8 words × 4 and × 20 cycles of 1.5 GHz", small.WriteUS, small.ReadUS)
	}
	// "< 0.1 µs" writing; reading is five times as long per word.
	if small.WriteUS >= 0.1 || math.Abs(small.ReadUS/small.WriteUS-5) > 1e-9 {
		t.Errorf("16 B: write %v µs, read %v µs", small.WriteUS, small.ReadUS)
	}
	// §4.4: sub-µs single-hop round trip of the smallest packet: the band
	// lies under 1 µs and the named costs alone fit in it.
	if small.MaxUS != SubMicroUS || small.MinUS >= SubMicroUS || small.MinUS <= small.NetworkUS {
		t.Errorf("16 B, 1 hop: band [%v, %v] µs, want named costs under a 1 µs ceiling", small.MinUS, small.MaxUS)
	}
	if math.Abs(small.MinUS-(2*8*24/1500.0+0.46)) > 1e-12 {
		t.Errorf("16 B, 1 hop: min %v µs, want 2 × 8 words × 24 cycles at 1.5 GHz + 0.46", small.MinUS)
	}
	// The reading ruled out: the same words in 6.4 ns fabric cycles would
	// put the smallest single-hop round trip above 1 µs.
	if fabric := 2*3*24*CycleNS/1000 + HopUS; fabric < 1.38-1e-9 || fabric <= small.MaxUS {
		t.Errorf("fabric-clock reading gives %v µs, want ≥ 1.38 and above the band", fabric)
	}
	// §4.2: two hops minus one hop adds 0.46 µs to the round trip's lower
	// bound, at every size, and the ARM's costs do not depend on hops.
	for _, p := range []int{1, 16, 17, 64, 128, 300, 512} {
		one, two := pingPong(t, 1, p), pingPong(t, 2, p)
		if d := two.MinUS - one.MinUS; math.Abs(d-HopUS) > 1e-9 {
			t.Errorf("%d B: two-hop minus one-hop minimum = %v µs, want 0.46", p, d)
		}
		if d := two.AnchorUS - one.AnchorUS; math.Abs(d-HopUS*(1+HopRelTol)) > 1e-9 {
			t.Errorf("%d B: two-hop minus one-hop anchor = %v µs, want 0.46 × 1.1", p, d)
		}
		if d := two.MaxUS - one.MaxUS; d < HopUS-1e-9 || d > HopUS*(1+HopRelTol)+1e-9 {
			t.Errorf("%d B: two-hop minus one-hop maximum = %v µs, want 0.46 to 0.46 × 1.1", p, d)
		}
		if one.ARMUS != two.ARMUS || one.ARMUS != 2*(one.WriteUS+one.ReadUS) {
			t.Errorf("%d B: ARM share %v / %v depends on hops or is not both ways", p, one.ARMUS, two.ARMUS)
		}
		if !(one.MinUS < one.MidUS && one.MidUS < one.MaxUS) {
			t.Errorf("%d B: value %v is not inside [%v, %v]", p, one.MidUS, one.MinUS, one.MaxUS)
		}
	}
	// §4.4's anchor: ARM words both ways plus 10 Gb/s both ways, with the
	// 25% margin. 512 B is 124 ARM words and 31 bus words over the anchor.
	big := pingPong(t, 1, 512)
	want := 1 + 1.25*2*(124*24/1500.0+31*2*6.4/1000)
	if math.Abs(big.AnchorUS-want) > 1e-9 || big.Words != 132 {
		t.Errorf("512 B, 1 hop: anchor %v µs (%d words), want %v (132 words)", big.AnchorUS, big.Words, want)
	}
	// The budget of what the paper does not name, at 512 B and one hop:
	// 34 bus words at 10 Gb/s both ways 870.4 ns, framing 25.6 ns, polls
	// 26.7 ns, footers 106.7 ns, 2 more read cycles on 132 words both ways
	// 352 ns, the hop's 10% 46 ns: the band ends 1.427 µs over the named
	// costs, tighter than the anchor.
	sum := 2*34*2*6.4/1000 + 2*2*6.4/1000 + 2*20/1500.0 + 2*4*20/1500.0 + 2*132*2/1500.0 + 0.046
	if math.Abs(big.MaxUS-(big.MinUS+sum)) > 1e-9 || big.MaxUS >= big.AnchorUS {
		t.Errorf("512 B, 1 hop: max %v µs, want min %v + %v below the anchor %v", big.MaxUS, big.MinUS, sum, big.AnchorUS)
	}
	// At 16 B the anchor (§4.4's 1 µs) is the tighter end.
	if small.MaxUS != 1 {
		t.Errorf("16 B, 1 hop: max %v µs, want §4.4's 1 µs", small.MaxUS)
	}
}

// A round trip that is one hop off, or over 1 µs at one hop for 16 B,
// fails; so does the superseded per-direction reading.
func TestRTTRejects(t *testing.T) {
	e := rtt(t, 1, 16)
	lo, hi := e.Bounds()
	if !passes(e, 0.9) || !passes(e, lo) || !passes(e, hi) {
		t.Errorf("16 B, 1 hop: [%v, %v] rejects values inside", lo, hi)
	}
	if passes(e, 1.001) || passes(e, math.NaN()) {
		t.Error("16 B, 1 hop: a round trip over 1 µs passes")
	}
	// Old model: 2 × (3 fabric words × 24 × 6.4 ns + 0.46) = 1.84 µs.
	if passes(e, 2*(3*24*CycleNS/1000+HopUS)) {
		t.Error("16 B, 1 hop: the per-direction, fabric-clock reading passes")
	}
	// A measurement taken one hop further or nearer fails: any value of the
	// h-hop band is outside the (h±1)-hop band, wherever the bands are
	// narrower than a hop: small packets (Fig. 8) and the one and two hops
	// of the 2x2 testbed (§3.1) and Fig. 7.
	for h := 1; h <= 2; h++ {
		for p := 1; p <= 32; p++ {
			near, far := rtt(t, h, p), rtt(t, h+1, p)
			_, nearHi := near.Bounds()
			farLo, _ := far.Bounds()
			if nearHi >= farLo {
				t.Fatalf("%d B: the %d-hop band ends at %v, the %d-hop band starts at %v", p, h, nearHi, h+1, farLo)
			}
			if passes(far, near.Value) || passes(near, far.Value) {
				t.Fatalf("%d B: %d- and %d-hop values pass each other's band", p, h, h+1)
			}
		}
	}
	// For every size, the per-hop difference tells hop counts apart: 0.46
	// passes, a difference of 0 (same hops), 0.92 (two hops, or the old
	// per-direction reading) or 0.23 fails.
	for _, p := range []int{1, 16, 64, 128, 256, 512} {
		ph, err := RTTPerHop(p)
		if err != nil {
			t.Fatal(err)
		}
		if !passes(ph, 0.46) || !passes(ph, 0.42) || !passes(ph, 0.50) {
			t.Errorf("%d B: per-hop rejects 0.42..0.50 µs", p)
		}
		for _, bad := range []float64{0, 0.23, 0.40, 0.52, 0.92} {
			if passes(ph, bad) {
				t.Errorf("%d B: per-hop %v µs passes", p, bad)
			}
		}
		if ph.Metric != "exanet.rtt.per_hop" || ph.Unit != "us" || ph.Key() != "exanet.rtt.per_hop{payload="+strconv.Itoa(p)+"}" ||
			ph.RelTol != 0.10 || !strings.Contains(ph.Source, "§4.2") || ph.Note == "" {
			t.Errorf("%d B: %+v", p, ph)
		}
	}
	for _, p := range []int{0, -1, 513} {
		if _, err := RTTPerHop(p); err == nil || !strings.Contains(err.Error(), "exanet.rtt.per_hop: payload") {
			t.Errorf("RTTPerHop(%d) error %v", p, err)
		}
	}
}

func TestLatencyMonotonic(t *testing.T) {
	for h := 1; h <= 6; h++ {
		prev := pingPong(t, h, 1)
		for p := 2; p <= MaxPayload; p++ {
			l := pingPong(t, h, p)
			if l.MinUS < prev.MinUS || l.MaxUS < prev.MaxUS || l.MidUS < prev.MidUS {
				t.Fatalf("hops %d: band falls from %d to %d B", h, p-1, p)
			}
			// A new 32-bit word costs the ARM both ways; beyond the anchor
			// it widens the ceiling too.
			if p%AXIWordBytes == 1 && l.MinUS <= prev.MinUS {
				t.Fatalf("hops %d: a new word at %d B costs nothing", h, p)
			}
			if p > AnchorPayload && p%AXIWordBytes == 1 && l.MaxUS <= prev.MaxUS {
				t.Fatalf("hops %d: the ceiling does not grow at %d B", h, p)
			}
			if l.MaxUS-l.MinUS < prev.MaxUS-prev.MinUS-1e-12 && p > AnchorPayload {
				t.Fatalf("hops %d: the band narrows from %d to %d B", h, p-1, p)
			}
			if h > 1 {
				n := pingPong(t, h-1, p)
				if l.MinUS <= n.MinUS || l.MaxUS <= n.MaxUS {
					t.Fatalf("%d B: %d hops not slower than %d", p, h, h-1)
				}
			}
			prev = l
		}
	}
}

func TestRTTExpectation(t *testing.T) {
	e := rtt(t, 2, 64)
	l := pingPong(t, 2, 64)
	if e.Metric != "exanet.rtt" || e.Unit != "us" || e.Value != l.MidUS {
		t.Fatalf("%+v", e)
	}
	if got := e.Key(); got != "exanet.rtt{hops=2,payload=64}" {
		t.Fatalf("key %q", got)
	}
	lo, hi := e.Bounds()
	if e.Min == nil || e.Max == nil || lo != l.MinUS || hi != l.MaxUS || e.RelTol != 0 || e.AbsTol != 0 {
		t.Fatalf("band [%v, %v], want [%v, %v] and no tolerance", lo, hi, l.MinUS, l.MaxUS)
	}
	if !strings.Contains(e.Source, "§4.2") || !strings.Contains(e.Source, "§4.4") || !strings.Contains(e.Note, "middle") {
		t.Fatalf("source %q note %q", e.Source, e.Note)
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

// One hop's traced round trip (reading E41): §4.2's 0.46 µs for the
// paper's 1 m cable, moved by the lab cable's delay both ways, within the
// paper's rounding and one core cycle; a transceiver path two cycles
// slower each way, the one-way reading of the figure and a hop 10% slower
// all fail it.
func TestHopRTT(t *testing.T) {
	e, err := HopRTT(RefCableNS, 0)
	if err != nil {
		t.Fatal(err)
	}
	if e.Value != HopUS || math.Abs(e.AbsTol-(0.005+0.0064)) > 1e-12 || e.Budget == "" || e.NeedsReason() {
		t.Fatalf("1 m cable: %+v, want 0.46 µs ±11.4 ns with a budget", e)
	}
	cyc := CycleNS / 1000
	for _, c := range []struct {
		what string
		us   float64
		pass bool
	}{
		{"72 cycles, the paper's hop at 156.25 MHz", 72 * cyc, true},
		{"71 cycles", 71 * cyc, true},
		{"73 cycles", 73 * cyc, true},
		{"the paper's figure rounded down", 0.455, true},
		{"two cycles more each way (a slower transceiver path)", 72*cyc + 4*cyc, false},
		{"two cycles less each way", 72*cyc - 4*cyc, false},
		{"half the figure (one way only)", HopUS / 2, false},
		{"10% slower", HopUS * 1.1, false},
	} {
		if got := passes(e, c.us); got != c.pass {
			t.Errorf("%s: %.4f µs passes=%v, want %v (band %s)", c.what, c.us, got, c.pass, e.Describe())
		}
	}
	// A 10 m cable (50 ns) adds 90 ns to both ways over the paper's 1 m;
	// an asymmetry counts once.
	long, _ := HopRTT(50, 0)
	asym, _ := HopRTT(5, 40)
	if math.Abs(long.Value-(HopUS+0.090)) > 1e-12 || math.Abs(asym.Value-(HopUS+0.040)) > 1e-12 {
		t.Errorf("10 m cable %v µs, 40 ns asymmetry %v µs", long.Value, asym.Value)
	}
	if passes(e, asym.Value) {
		t.Error("a 40 ns asymmetry the lab file does not state passes")
	}
	for _, bad := range [][2]float64{{-1, 0}, {5, -6}, {2e6, 0}, {5, 2e6}} {
		if _, err := HopRTT(bad[0], bad[1]); err == nil {
			t.Errorf("HopRTT(%v, %v): no error", bad[0], bad[1])
		}
	}
}
