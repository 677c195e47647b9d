package exanet

import (
	"math"
	"strings"
	"testing"
)

func stream(t *testing.T, path string, payload int) Stream {
	t.Helper()
	s, err := StreamModel(path, payload)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The efficiencies §4.3 states at 512 B, to the precision the paper gives.
func TestBandwidthPaperPoints(t *testing.T) {
	r := stream(t, PathRouter, 512)
	if got := math.Round(100 * r.Efficiency); got != 76 {
		t.Errorf("router efficiency at 512 B = %.2f%%, paper says 76%%", 100*r.Efficiency)
	}
	r2 := stream(t, PathRouter2x, 512)
	if got := math.Round(1000 * r2.Efficiency); got != 895 {
		t.Errorf("router 2× efficiency at 512 B = %.2f%%, paper says 89.5%%", 100*r2.Efficiency)
	}
	l := stream(t, PathLink, 512)
	if got := math.Round(100 * l.Gbps / LinkCapGbps); got != 90 {
		t.Errorf("link efficiency at 512 B = %.2f%% of 10 Gb/s, paper says 90%%", 100*l.Gbps/LinkCapGbps)
	}
	// "aligned with the estimate": framing alone (Magic/Start + header +
	// footer) leaves 64/70 of 10 Gb/s; the model sits just below it.
	est := LinkCapGbps * 64 / 70
	if l.Gbps > est || l.Gbps < 0.97*est {
		t.Errorf("link at 512 B = %.3f Gb/s, want just below the framing estimate %.3f", l.Gbps, est)
	}
	// Protocol overhead 6.25% at 512 B: header and footer, 2 words per 32.
	if ov := float64(r.PacketWords-512/WordBytes) / (512 / WordBytes); ov != 0.0625 {
		t.Errorf("protocol overhead at 512 B = %v, paper says 6.25%%", ov)
	}
	// The peak: 128-bit bus at 156.25 MHz is 20 Gb/s raw, 32/34 of it at 512 B.
	if want := 20 * 32.0 / 34; math.Abs(r.PeakGbps-want) > 1e-9 {
		t.Errorf("router peak at 512 B = %v, want %v", r.PeakGbps, want)
	}
	if l.PeakGbps != LinkCapGbps {
		t.Errorf("link peak at 512 B = %v, want the 10 Gb/s cap", l.PeakGbps)
	}
}

func TestBandwidthCurves(t *testing.T) {
	for _, path := range Paths() {
		prev := stream(t, path, 1)
		for p := 2; p <= MaxPayload; p++ {
			s := stream(t, path, p)
			// A byte more in the same number of words is more bandwidth;
			// the first byte of a new word costs a whole word (the curve is a
			// sawtooth between multiples of 16 B), but whole words only gain.
			if s.PacketWords == prev.PacketWords && s.Gbps <= prev.Gbps {
				t.Fatalf("%s: bandwidth does not grow from %d to %d B in the same words", path, p-1, p)
			}
			if p%WordBytes == 0 && p > WordBytes && s.Gbps <= stream(t, path, p-WordBytes).Gbps {
				t.Fatalf("%s: bandwidth does not grow from %d to %d B", path, p-WordBytes, p)
			}
			if p%WordBytes == 0 && p > WordBytes && s.Efficiency <= stream(t, path, p-WordBytes).Efficiency {
				t.Fatalf("%s: efficiency does not grow from %d to %d B", path, p-WordBytes, p)
			}
			if s.Gbps > s.PeakGbps+1e-12 {
				t.Fatalf("%s %d B: %v Gb/s above the peak %v", path, p, s.Gbps, s.PeakGbps)
			}
			if s.PeakGbps > 20+1e-12 || (path == PathLink && s.PeakGbps > LinkCapGbps) {
				t.Fatalf("%s %d B: peak %v above the bus or link rate", path, p, s.PeakGbps)
			}
			if path == PathRouter2x && s.Gbps < stream(t, PathRouter, p).Gbps {
				t.Fatalf("%d B: two senders slower than one", p)
			}
			prev = s
		}
	}
	// Below 96 B the sending router, not the link, limits the link path.
	if s := stream(t, PathLink, 64); !strings.Contains(s.Limit, "router") {
		t.Errorf("link at 64 B limited by %q, want the router", s.Limit)
	}
	if s := stream(t, PathLink, 128); !strings.Contains(s.Limit, "APElink") {
		t.Errorf("link at 128 B limited by %q, want the APElink", s.Limit)
	}
}

func TestBandwidthExpectation(t *testing.T) {
	for _, path := range Paths() {
		for _, p := range []int{1, 32, 100, 512} {
			e, err := Bandwidth(path, p)
			if err != nil {
				t.Fatal(err)
			}
			s := stream(t, path, p)
			if e.Metric != "exanet.bandwidth" || e.Unit != "Gb/s" || e.Value != s.Gbps || e.Params["path"] != path {
				t.Fatalf("%s %d: %+v", path, p, e)
			}
			if e.RelTol < 0.05 || e.RelTol > 0.25 || e.Min != nil || e.Max != nil {
				t.Fatalf("%s %d: tolerance %v", path, p, e.RelTol)
			}
			if !strings.Contains(e.Source, "§4.3") || e.Note == "" {
				t.Fatalf("%s %d: source %q note %q", path, p, e.Source, e.Note)
			}
			pk, err := BandwidthPeak(path, p)
			if err != nil {
				t.Fatal(err)
			}
			lo, hi := pk.Bounds()
			if pk.Metric != "exanet.bandwidth.peak" || lo != 0 || hi < pk.Value || hi > pk.Value*1.001 {
				t.Fatalf("%s %d: peak %+v bounds [%v,%v]", path, p, pk, lo, hi)
			}
			// The expected figure is inside the peak's bounds; 2% above the
			// peak is not.
			if s.Gbps < lo || s.Gbps > hi || pk.Value*1.02 <= hi {
				t.Fatalf("%s %d: expected %v vs peak bounds [%v,%v]", path, p, s.Gbps, lo, hi)
			}
		}
	}
	e, _ := Bandwidth(PathRouter, 512)
	if got := e.Key(); got != "exanet.bandwidth{path=router,payload=512}" {
		t.Fatalf("key %q", got)
	}
}

func TestBandwidthErrors(t *testing.T) {
	for _, c := range []struct {
		path    string
		payload int
		want    string
	}{
		{"router", 0, "outside 1..512"},
		{"link", 513, "outside 1..512"},
		{"bus", 64, `unknown path "bus" (known: router, router2x, link)`},
	} {
		if _, err := Bandwidth(c.path, c.payload); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Bandwidth(%q,%d) error %v, want %q", c.path, c.payload, err, c.want)
		}
		if _, err := BandwidthPeak(c.path, c.payload); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("BandwidthPeak(%q,%d) error %v, want %q", c.path, c.payload, err, c.want)
		}
	}
}
