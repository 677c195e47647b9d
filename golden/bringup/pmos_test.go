package bringup

import (
	"math"
	"strings"
	"testing"
)

func testPMOS() PMOS {
	return PMOS{MOSRate: 1e6, Payload: 48, Overhead: 8, AckBytes: 8, Window: 4, Retries: 8}
}

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol*math.Max(1, math.Abs(b)) }

func TestMOSFormat(t *testing.T) {
	// Aquila §3.5: "Each MOS 64 bit word allows 6 bytes of data".
	if MOSWordBits != 64 || MOSDataBytes != 6 {
		t.Fatalf("MOS word %d bits, %d data bytes", MOSWordBits, MOSDataBytes)
	}
	p := testPMOS()
	// 48 + 8 = 56 bytes = 9.33 words -> 10 words; 48/60 = 0.8.
	if w := p.words(p.Payload); w != 10 {
		t.Errorf("frame words %d, want 10", w)
	}
	if e := p.FramingEfficiency(); !near(e, 0.8, 1e-12) {
		t.Errorf("efficiency %v, want 0.8", e)
	}
	if a := p.ackWords(); a != 2 {
		t.Errorf("ack words %d, want 2", a)
	}
}

// Hand-worked transfers at 1 µs per MOS word.
func TestTransferNoLossByHand(t *testing.T) {
	p := testPMOS()
	for _, c := range []struct {
		name    string
		window  int
		bytes   int
		linkNS  float64
		words   int
		noLoss  float64
		min     float64
		frames  int
		comment string // "proc": 13 µs of receiver processing
	}{
		// 10 full frames of 10 words back to back (4 x 10 µs covers the
		// 12 µs round trip), then the last ack's 2 words: 102 µs.
		{"window covers", 4, 480, 0, 100, 102, 102, 10, ""},
		// Stop and wait: each frame waits for its ack, 10 x 12 µs.
		{"stop and wait", 1, 480, 0, 100, 120, 102, 10, ""},
		// 100 bytes: two full frames and a 4-byte one (12 B -> 2 words).
		{"short last frame", 4, 100, 0, 22, 24, 24, 3, ""},
		// A 500 ns cable adds 1 µs to every round trip: window 1 -> 10 x 13.
		{"cable, stop and wait", 1, 480, 500, 100, 130, 103, 10, ""},
		// Window 2 with a 13 µs processing time: round trip 25 µs > 2 x 10;
		// frames start at 0, 10, 25, 35, 50, 60, 75, 85, 100, 110; the last
		// ack is back at 110 + 25 = 135. Min ignores the window: 100 + 2 + 13.
		{"window stalls", 2, 480, 0, 100, 135, 115, 10, "proc"},
		{"nothing", 4, 0, 0, 0, 0, 0, 0, ""},
	} {
		q := p
		q.Window = c.window
		if c.comment == "proc" {
			q.ProcUS = 13
		}
		tr, err := q.Transfer(c.bytes, c.linkNS, -1)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if tr.Words != c.words || tr.Frames != c.frames || !near(tr.NoLossUS, c.noLoss, 1e-12) {
			t.Errorf("%s: %d frames %d words %v µs, want %d frames %d words %v µs", c.name, tr.Frames, tr.Words, tr.NoLossUS, c.frames, c.words, c.noLoss)
		}
		if !near(tr.US.Min, c.min, 1e-12) {
			t.Errorf("%s: lower bound %v µs, want %v", c.name, tr.US.Min, c.min)
		}
		if tr.US.Value != tr.NoLossUS || tr.US.Max != tr.NoLossUS {
			t.Errorf("%s: no loss but value %v max %v, want %v", c.name, tr.US.Value, tr.US.Max, tr.NoLossUS)
		}
	}
}

// bruteNoLoss simulates the window frame by frame.
func bruteNoLoss(p PMOS, bytes int, linkNS float64) float64 {
	tw := 1e6 / p.MOSRate
	var acks []float64
	send := 0.0
	end := 0.0
	for left := bytes; left > 0; {
		d := p.Payload
		if left < d {
			d = left
		}
		left -= d
		f := p.words(d)
		if j := len(acks) - p.Window; j >= 0 && acks[j] > send {
			send = acks[j]
		}
		ack := send + float64(f)*tw + 2*linkNS/1e3 + p.ProcUS + float64(p.ackWords())*tw
		acks = append(acks, ack)
		end = math.Max(end, ack)
		send += float64(f) * tw
	}
	return end
}

func TestTransferClosedFormMatchesSimulation(t *testing.T) {
	r := uint64(7)
	next := func(n int) int { r = r*6364136223846793005 + 1442695040888963407; return int((r >> 33) % uint64(n)) }
	for i := 0; i < 3000; i++ {
		p := PMOS{MOSRate: float64(1e4 * (1 + next(1000))), Payload: 1 + next(200), Overhead: next(16), AckBytes: 1 + next(16),
			Window: 1 + next(8), ProcUS: float64(next(50)), Retries: 3}
		bytes := next(5000)
		link := float64(next(3000))
		tr, err := p.Transfer(bytes, link, 0)
		if err != nil {
			t.Fatal(err)
		}
		want := bruteNoLoss(p, bytes, link)
		if !near(tr.NoLossUS, want, 1e-9) {
			t.Fatalf("%+v, %d bytes, %v ns: closed form %v µs, simulation %v µs", p, bytes, link, tr.NoLossUS, want)
		}
		if tr.US.Min > tr.NoLossUS+1e-9 && float64(p.Window*p.words(p.Payload))*1e6/p.MOSRate >= p.roundTrip(p.words(p.Payload), link) {
			t.Fatalf("lower bound %v above the no-loss time %v with a window that covers the round trip", tr.US.Min, tr.NoLossUS)
		}
	}
}

func TestTransferWithLoss(t *testing.T) {
	p := testPMOS()
	p.Loss = 1e-3
	tr, err := p.Transfer(48000, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	// 1000 frames; a transmission fails when one of 10 + 2 words is lost:
	// q = 1 - 0.999^12 = 0.011934; expected failures n·q/(1-q) = 12.078.
	q := 1 - math.Pow(0.999, 12)
	if !near(tr.ExpectedRetransmissions, 1000*q/(1-q), 1e-9) {
		t.Errorf("expected retransmissions %v, want %v", tr.ExpectedRetransmissions, 1000*q/(1-q))
	}
	if !(tr.MaxRetransmissions > tr.ExpectedRetransmissions) || tr.MaxRetransmissions > 60 {
		t.Errorf("1e-6 quantile %v vs mean %v", tr.MaxRetransmissions, tr.ExpectedRetransmissions)
	}
	if !(tr.US.Min < tr.NoLossUS+1e-9 && tr.NoLossUS < tr.US.Value && tr.US.Value < tr.US.Max) {
		t.Errorf("not ordered: %+v, no loss %v", tr.US, tr.NoLossUS)
	}
	// Automatic timeout: four round trips of a full frame, 4 x 12 µs.
	if tr.RTOUS != 48 || p.RoundTripUS(0) != 12 || p.RoundTripUS(500) != 13 {
		t.Errorf("rto %v, want 48", tr.RTOUS)
	}
	// Value: each failure costs its 10 µs frame plus 48 - 3 x 10 = 18 µs of stall.
	if want := tr.NoLossUS + tr.ExpectedRetransmissions*(10+18); !near(tr.US.Value, want, 1e-12) {
		t.Errorf("value %v, want %v", tr.US.Value, want)
	}
	if want := tr.NoLossUS + tr.MaxRetransmissions*(10+48); !near(tr.US.Max, want, 1e-12) {
		t.Errorf("max %v, want %v", tr.US.Max, want)
	}
	// Giving up: a frame failing 9 times in a row, q^9 = 4.9e-18, times
	// 1000 frames.
	if want := 1000 * math.Pow(q, 9); !near(tr.AbandonProbability, want, 1e-6) {
		t.Errorf("abandon %v, want %v", tr.AbandonProbability, want)
	}
	// More loss, more time; a per-cable loss overrides the model's.
	worse, _ := p.Transfer(48000, 0, 1e-2)
	if !(worse.US.Value > tr.US.Value && worse.US.Max > tr.US.Max && worse.US.Min == tr.US.Min) {
		t.Errorf("1e-2 loss %+v not above 1e-3 loss %+v", worse.US, tr.US)
	}
	lossless, _ := p.Transfer(48000, 0, 0)
	if lossless.US.Max != lossless.NoLossUS {
		t.Errorf("a cable with loss 0 overrides mos_loss: %+v", lossless.US)
	}
}

func TestNegBinQuantile(t *testing.T) {
	for _, c := range []struct {
		n    int
		fail float64
	}{{1, 0.5}, {10, 0.1}, {1000, 0.0119}, {100, 0.9}, {5, 1e-9}} {
		k, err := negBinQuantile(c.n, c.fail, 1-TailProbability)
		if err != nil {
			t.Fatal(err)
		}
		// P(K <= k) >= level > P(K <= k-1), summed independently.
		cdf := func(k int) float64 {
			s, lp := 0.0, float64(c.n)*math.Log(1-c.fail)
			for j := 0; j <= k; j++ {
				s += math.Exp(lp)
				lp += math.Log(float64(c.n+j)) - math.Log(float64(j+1)) + math.Log(c.fail)
			}
			return s
		}
		ki := int(k)
		if cdf(ki) < 1-TailProbability || (ki > 0 && cdf(ki-1) >= 1-TailProbability) {
			t.Errorf("n %d fail %v: quantile %v, cdf %v / %v", c.n, c.fail, k, cdf(ki), cdf(ki-1))
		}
	}
	// Huge transfers fall back to the normal approximation.
	k, err := negBinQuantile(1<<28, 0.5, 1-TailProbability)
	if err != nil || !(k > float64(1<<28)) {
		t.Errorf("normal approximation %v, %v", k, err)
	}
}

func TestTransferRejects(t *testing.T) {
	p := testPMOS()
	for name, c := range map[string]struct {
		p     PMOS
		bytes int
		loss  float64
		err   string
	}{
		"rate":      {PMOS{Payload: 1, AckBytes: 1, Window: 1}, 10, 0, "MOS rate"},
		"payload":   {PMOS{MOSRate: 1, AckBytes: 1, Window: 1}, 10, 0, "payload"},
		"window":    {PMOS{MOSRate: 1, Payload: 1, AckBytes: 1}, 10, 0, "window"},
		"size":      {p, -1, 0, "transfer of -1 bytes"},
		"loss":      {p, 10, 1, "MOS loss"},
		"hopeless":  {p, 10, 0.99, "cannot get a frame through"},
		"loss NaN":  {p, 10, math.NaN(), "MOS loss"},
		"too large": {p, MaxTransferBytes + 1, 0, "transfer of"},
	} {
		_, err := c.p.Transfer(c.bytes, 0, c.loss)
		if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s: %v, want %q", name, err, c.err)
		}
	}
}

func TestGoodputFraction(t *testing.T) {
	p := testPMOS()
	g, err := p.GoodputFraction(480000, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	// 10000 frames of 10 words: 480000 B in 100002 µs over 6 B/µs.
	if want := 480000.0 / (6 * 100002); !near(g.Value, want, 1e-12) || g.Min != g.Value || g.Max != g.Value {
		t.Errorf("goodput %+v, want %v", g, want)
	}
	if g.Max > p.FramingEfficiency() {
		t.Errorf("goodput %v above the framing efficiency %v", g.Max, p.FramingEfficiency())
	}
	p.Loss = 1e-3
	l, _ := p.GoodputFraction(480000, 0, -1)
	if !(l.Min < l.Value && l.Value < l.Max && l.Max == g.Max) {
		t.Errorf("lossy goodput %+v vs %+v", l, g)
	}
	p.Window = 1
	w, _ := p.GoodputFraction(480000, 0, 0)
	// Stop and wait: 10 of every 12 µs carry the frame: 0.8 x 10/12.
	if !near(w.Value, 0.8*10/12, 1e-4) {
		t.Errorf("stop-and-wait goodput %v, want %v", w.Value, 0.8*10/12)
	}
	if _, err := p.GoodputFraction(0, 0, 0); err == nil {
		t.Error("goodput of 0 bytes accepted")
	}
}
