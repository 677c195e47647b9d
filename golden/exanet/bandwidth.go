package exanet

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"labrunner/results"
)

// Figures stated by the paper.
const (
	// ClockHz is the clock of the ExaNet Network IP and the APEphy (§4:
	// "156.25 MHz in order to achieve 10 Gbps on the serial side").
	ClockHz = 156.25e6
	// CycleNS is one clock cycle, 6.4 ns.
	CycleNS = 1e9 / ClockHz
	// WordBytes is the width of the router's data path and FIFOs: 128 bits
	// (§4.3 "the 128-bit bus"; §3.3 FIFOs of 128-bit words).
	WordBytes = 16
	// HeaderWords and FooterWords: a 128-bit header and a 128-bit footer
	// around the payload (§3.2).
	HeaderWords = 1
	FooterWords = 1
	// MaxPayload is the largest payload (§3.2 "256÷512 bytes"; §4.3
	// "512-byte packet — i.e. the maximum packet size").
	MaxPayload = 512
	// LinkBitsPerCycle is what the serial side moves per 156.25 MHz cycle:
	// 10 Gb/s / 156.25 MHz (§4).
	LinkBitsPerCycle = 64
	// MagicStartCycles frames each packet on the link (§3.4: "Two words —
	// Magic/Start ... their transmission takes 2 clock cycles only").
	MagicStartCycles = 2
	// LinkCapGbps is the theoretical APElink bandwidth (§4.3, Fig. 10:
	// "capped at 10 Gbps due to the SFP+ connectors").
	LinkCapGbps = 10.0
)

// Per-packet costs fitted to the efficiencies §4.3 states at 512 B, in whole
// cycles (see the package documentation for the derivation).
const (
	// ArbiterCycles is what a target port loses between two packets (the
	// arbiter's grant and the crossbar hand-over), which two senders cannot
	// hide: 34/(34+4) = 89.47% of the peak at 512 B, the 89.5% with "2×
	// Intra-Tile ports ... to the same target port" of §4.3, Fig. 9.
	ArbiterCycles = 4
	// SourcePortCycles is what a sending port loses on top between its own
	// packets (the "unoptimized pipeline" of §4.3): with a single sender
	// 34/(34+4+7) = 75.6% at 512 B, the 76% of §4.3, Fig. 9. A second sender
	// overlaps its transfer with them.
	SourcePortCycles = 7
	// LinkGapCycles is an idle link cycle between packets: (2+68+1) link
	// cycles per 512 B packet give 64/71 = 90.1% of 10 Gb/s, the 90% of §4.3,
	// Fig. 10, where framing alone would give 64/70 = 91.4% ("the estimate").
	LinkGapCycles = 1
)

// Data paths of the bandwidth self-test (§4.3).
const (
	PathRouter   = "router"   // one intra-tile port to another (Fig. 9)
	PathRouter2x = "router2x" // two intra-tile ports to the same target port (Fig. 9)
	PathLink     = "link"     // across the APElink to the neighbour (Fig. 10)
)

// Paths lists the data paths Bandwidth knows, in report order.
func Paths() []string { return []string{PathRouter, PathRouter2x, PathLink} }

// Stream is the steady state of a long stream of equal packets on a path.
type Stream struct {
	Path    string
	Payload int // bytes per packet
	// PacketWords is header + payload + footer in 128-bit words.
	PacketWords int
	// PeriodCycles is the clock cycles per packet at the destination.
	PeriodCycles float64
	// Limit names the stage that sets the period.
	Limit string
	// PeakGbps is the theoretical peak of §4.3 (Fig. 9/10 square markers);
	// Gbps the expected payload bandwidth; Efficiency their ratio.
	PeakGbps, Gbps, Efficiency float64
}

// StreamModel computes the steady state of path for packets of payload bytes.
func StreamModel(path string, payload int) (Stream, error) {
	if payload < 1 || payload > MaxPayload {
		return Stream{}, fmt.Errorf("payload %d B is outside 1..%d (the maximum packet of §4.3)", payload, MaxPayload)
	}
	w := (payload + WordBytes - 1) / WordBytes
	pkt := HeaderWords + w + FooterWords
	bits := float64(payload * 8)
	// The 128-bit bus peak: payload over the cycles all the packet's words
	// take (Gb/s = bits per ns).
	busPeak := bits / (float64(pkt) * CycleNS)

	// One sender streaming back to back: its packet, the target's hand-over
	// and its own per-packet pipeline restart, none of which overlap.
	oneSender := float64(pkt + ArbiterCycles + SourcePortCycles)
	// The target port cannot be faster than its packets plus the hand-over.
	target := float64(pkt + ArbiterCycles)

	s := Stream{Path: path, Payload: payload, PacketWords: pkt}
	switch path {
	case PathRouter:
		s.PeakGbps = busPeak
		s.PeriodCycles, s.Limit = oneSender, "sending port pipeline"
	case PathRouter2x:
		s.PeakGbps = busPeak
		// Round robin between two senders: each needs oneSender cycles per
		// packet of its own, so together they offer one every oneSender/2;
		// the target takes one every target cycles.
		s.PeriodCycles, s.Limit = target, "target port arbitration"
		if oneSender/2 > target {
			s.PeriodCycles, s.Limit = oneSender/2, "sending port pipeline"
		}
	case PathLink:
		s.PeakGbps = math.Min(busPeak, LinkCapGbps)
		// Magic/Start, then header, payload and footer in 64-bit link words,
		// then the gap. Each end's router moves the packet between its
		// intra-tile and inter-tile ports as a single sender.
		link := float64(MagicStartCycles + pkt*WordBytes*8/LinkBitsPerCycle + LinkGapCycles)
		s.PeriodCycles, s.Limit = link, "APElink framing"
		if oneSender > link {
			s.PeriodCycles, s.Limit = oneSender, "sending router port pipeline"
		}
	default:
		return Stream{}, fmt.Errorf("unknown path %q (known: %s)", path, strings.Join(Paths(), ", "))
	}
	s.Gbps = bits / (s.PeriodCycles * CycleNS)
	s.Efficiency = s.Gbps / s.PeakGbps
	return s, nil
}

// bandwidthSource cites the figures a path's expectation rests on.
func bandwidthSource(path string) string {
	switch path {
	case PathRouter:
		return "ExaNet §4.3, Fig. 9: 76% efficiency at 512 B (one sending port), 128-bit bus at 156.25 MHz; §3.2 header/footer"
	case PathRouter2x:
		return "ExaNet §4.3, Fig. 9: 89.5% efficiency at 512 B (2× intra-tile ports to one target), 128-bit bus at 156.25 MHz"
	default:
		return "ExaNet §4.3, Fig. 10: 90% of 10 Gb/s at 512 B; §3.4 Magic/Start framing; §4 10 Gb/s at 156.25 MHz"
	}
}

// Bandwidth is the expected payload bandwidth of a long stream of equal
// packets (metric exanet.bandwidth, Gb/s): payload bytes delivered × 8 over
// the time from the first to the last payload word consumed at the
// destination (the Performance Counter of §4.3).
//
// Tolerance: 5% for what the model does not capture (the measurement window
// of a finite stream, the paper's rounding of its percentages to two
// digits, the ambiguity of "efficiency" — against the raw bus, the one-port
// figure would be 7% higher) plus one cycle of per-packet cost, which the fit
// at 512 B cannot pin down and which weighs most on small packets.
func Bandwidth(path string, payload int) (results.Expectation, error) {
	s, err := StreamModel(path, payload)
	if err != nil {
		return results.Expectation{}, fmt.Errorf("exanet.bandwidth: %w", err)
	}
	tol := 0.05 + 1/s.PeriodCycles
	return results.Expectation{
		Metric: "exanet.bandwidth",
		Params: results.Params{"path": path, "payload": strconv.Itoa(payload)},
		Value:  s.Gbps,
		Unit:   "Gb/s",
		RelTol: tol,
		Source: bandwidthSource(path),
		Note: fmt.Sprintf("%.4g cycles/packet (%s; %d words incl. header/footer), %.1f%% of the %.4g Gb/s peak; ±%.1f%% = 5%% + 1 cycle of the fitted per-packet cost",
			s.PeriodCycles, s.Limit, s.PacketWords, 100*s.Efficiency, s.PeakGbps, 100*tol),
	}, nil
}

// PeakSlack lets a measurement exceed the theoretical peak by the frequency
// error of a real oscillator (±100 ppm covers common crystal parts) when the
// runner converts counter cycles to time with the nominal clock.
const PeakSlack = 1e-4

// BandwidthPeak is the theoretical peak bandwidth (metric
// exanet.bandwidth.peak, Gb/s), the square markers of Fig. 9/10. It is an
// upper bound, not a target: the expectation has Min 0 and Max the peak, so
// a measurement only fails it by beating the theoretical limit.
func BandwidthPeak(path string, payload int) (results.Expectation, error) {
	s, err := StreamModel(path, payload)
	if err != nil {
		return results.Expectation{}, fmt.Errorf("exanet.bandwidth.peak: %w", err)
	}
	src := "ExaNet §4.3, Fig. 9: theoretical peak of the 128-bit bus at 156.25 MHz with header and footer (6.25% protocol overhead at 512 B)"
	note := fmt.Sprintf("theoretical: %d payload+header+footer words at one 128-bit word per 6.4 ns cycle; an upper bound, not a target", s.PacketWords)
	if path == PathLink {
		src = "ExaNet §4.3, Fig. 10: theoretical bandwidth capped at 10 Gb/s by the SFP+; §3.2 header/footer on the 128-bit bus"
		note = fmt.Sprintf("theoretical: the 128-bit bus peak for %d words capped at 10 Gb/s; an upper bound, not a target", s.PacketWords)
	}
	return results.Expectation{
		Metric: "exanet.bandwidth.peak",
		Params: results.Params{"path": path, "payload": strconv.Itoa(payload)},
		Value:  s.PeakGbps,
		Unit:   "Gb/s",
		Min:    results.Float(0),
		Max:    results.Float(s.PeakGbps * (1 + PeakSlack)),
		Source: src,
		Note:   note,
	}, nil
}
