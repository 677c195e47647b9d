package exanet

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/labrunner/labrunner/results"
)

// KARMA ping-pong figures (§4, §4.2, §4.4). The ARM's per-word costs are in
// cycles of the ARM's 1.5 GHz clock per 32-bit AXI word: reading E3,
// ExaNet §4 (the package documentation says why no other reading is
// consistent with §4.4).
const (
	// ARMClockHz is the Cortex-A53's clock (§4: "works at a frequency of
	// 1.5 Ghz").
	ARMClockHz = 1.5e9
	// ARMCycleNS is one ARM cycle, 0.667 ns.
	ARMCycleNS = 1e9 / ARMClockHz
	// AXIWordBytes is the word the ARM moves through the HPM AXI port: 32
	// bits. §4: the ARM "must issue a write for every single word".
	AXIWordBytes = 4
	// HeaderAXIWords is the 128-bit header (§3.2) as the ARM writes and
	// reads it: four 32-bit words.
	HeaderAXIWords = HeaderWords * WordBytes / AXIWordBytes
	// WriteCyclesPerWord: the ARM writes a word into the intra-tile FIFOs
	// in 4 cycles (§4.2, "< 0.1 µs, 4 clock cycles per word").
	WriteCyclesPerWord = 4
	// ReadCyclesPerWord: the ARM reads a word back in about 20 cycles (§4.2,
	// "~0.4 µs, about 20 clock cycles per word").
	ReadCyclesPerWord = 20
	// HopUS is what one more hop adds to the round trip: the two-hop minus
	// one-hop difference of Fig. 7 ("The Roundtrip latency for one and two
	// hops"), §4.2 "0.46µs".
	HopUS = 0.46
	// HopRelTol is the tolerance of the per-hop difference: the paper's
	// rounding (0.46 is 0.455..0.465, ±1.1%), one status poll per receiving
	// ARM that the difference of two means may not cancel (2 × 20 ARM cycles
	// = 26.7 ns, 5.8%), and one 6.4 ns fabric cycle per direction for the
	// extra router to sample the packet (12.8 ns, 2.8%): 9.7%, rounded to 10%.
	HopRelTol = 0.10
	// SubMicroUS anchors the round trip's upper bound: §4.4 "a sub-µS
	// single-hop, node-to-node roundtrip packet transfer latency", for the
	// smallest packet.
	SubMicroUS = 1.0
	// AnchorPayload is "the smallest packet" of §4.4 read as a packet of one
	// 128-bit payload word (§3.2 header, one data word, footer; the fabric
	// moves nothing smaller): payloads up to 16 B share the anchor.
	AnchorPayload = WordBytes
	// RTTSlopeMargin widens the size-dependent part of the upper bound: the
	// paper's "about 20" cycles per read read as up to 25 (the next round
	// figure), which also covers the ping-pong loop's own per-word work
	// (loading the word to send, storing the word read), which the paper does
	// not name.
	RTTSlopeMargin = 0.25
	// MaxHops bounds the hop count: the diameter of the largest lattice.
	MaxHops = 3 * (MaxSide - 1)
)

// Latency is the KARMA ping-pong round trip for one hop count and payload
// (§4.2), as a band: what the paper's named costs require, and what §4.4's
// sub-µs single-hop round trip allows.
type Latency struct {
	Hops, Payload int
	// Words is what the ARM moves per packet, in 32-bit AXI words: the
	// header (4) and the payload (ceil(Payload/4)). Not the footer: §4 names
	// only the header/data FIFOs, and the footer's integrity check (§3.4) is
	// the hardware's.
	Words int
	// WriteUS and ReadUS are one packet written by the sender's ARM and read
	// by the receiver's, at 4 and 20 cycles of 1.5 GHz per word.
	WriteUS, ReadUS float64
	// ARMUS is the ARM's share of the round trip: the ping and the pong,
	// each written and read, 2 × (WriteUS + ReadUS).
	ARMUS float64
	// NetworkUS is hops × 0.46 µs, the round trip's network share (§4.2).
	NetworkUS float64
	// MinUS = ARMUS + NetworkUS: the lower bound, the named costs alone.
	MinUS float64
	// HopExtUS is the upper bound's extension for hops beyond the first,
	// (hops-1) × 0.46 µs × (1 + HopRelTol).
	HopExtUS float64
	// SizeExtUS is the upper bound's extension for the payload beyond the
	// anchor packet, both ways: the ARM's extra words written and read and
	// the extra 128-bit words serialised at 10 Gb/s, × (1 + RTTSlopeMargin).
	SizeExtUS float64
	// AnchorUS = SubMicroUS + HopExtUS + SizeExtUS: the upper bound §4.4's
	// sub-µs single-hop round trip allows.
	AnchorUS float64
	// Unnamed are the costs a faithful ping-pong may add to the named ones
	// (Budget lists them); MinUS + their sum is the upper bound they allow.
	Unnamed []Cost
	// MaxUS is the upper bound: the smaller of AnchorUS and MinUS plus the
	// unnamed costs.
	MaxUS float64
	// MidUS is the middle of the band, a representative point for plots,
	// not a prediction: the paper gives no absolute round trip.
	MidUS float64
}

// armWords is the 32-bit words the ARM writes (and reads back) for a packet.
func armWords(payload int) int {
	return HeaderAXIWords + (payload+AXIWordBytes-1)/AXIWordBytes
}

// busWords is the payload in 128-bit words, as the link serialises it.
func busWords(payload int) int { return (payload + WordBytes - 1) / WordBytes }

// PingPong computes the KARMA ping-pong band to a node hops away, with
// packets of payload bytes both ways (§4.2), T = 1/1.5 GHz:
//
//	Min = 2 · words · (4 + 20) · T + hops · 0.46 µs
//	Max = 1 µs + (hops-1) · 0.46 µs · 1.1
//	      + 1.25 · 2 · [(words − words(16 B)) · 24 · T + (W − 1) · 2 · 6.4 ns]
//
// with words = 4 + ceil(payload/4) and W = ceil(payload/16); the bracket
// counts only what exceeds the 16 B anchor packet (never below zero).
func PingPong(hops, payload int) (Latency, error) {
	if hops < 1 || hops > MaxHops {
		return Latency{}, fmt.Errorf("hops %d is outside 1..%d (a ping-pong crosses at least one link)", hops, MaxHops)
	}
	if payload < 1 || payload > MaxPayload {
		return Latency{}, fmt.Errorf("payload %d B is outside 1..%d (the maximum packet of §4.3)", payload, MaxPayload)
	}
	words := armWords(payload)
	l := Latency{Hops: hops, Payload: payload, Words: words}
	l.WriteUS = float64(words*WriteCyclesPerWord) * ARMCycleNS / 1000
	l.ReadUS = float64(words*ReadCyclesPerWord) * ARMCycleNS / 1000
	l.ARMUS = 2 * (l.WriteUS + l.ReadUS)
	l.NetworkUS = float64(hops) * HopUS
	l.MinUS = l.ARMUS + l.NetworkUS

	l.HopExtUS = float64(hops-1) * HopUS * (1 + HopRelTol)
	extraWords := max(0, words-armWords(AnchorPayload))
	extraBus := max(0, busWords(payload)-busWords(AnchorPayload))
	armNS := float64(extraWords*(WriteCyclesPerWord+ReadCyclesPerWord)) * ARMCycleNS
	// A 128-bit word is two 64-bit link cycles at 156.25 MHz: 10 Gb/s (§4).
	serialNS := float64(extraBus*WordBytes*8/LinkBitsPerCycle) * CycleNS
	l.SizeExtUS = (1 + RTTSlopeMargin) * 2 * (armNS + serialNS) / 1000
	l.AnchorUS = SubMicroUS + l.HopExtUS + l.SizeExtUS
	// What the paper does not name (reading E40), each way (ping and pong): the packet
	// serialised at 10 Gb/s before the receiving ARM reads it (header,
	// payload and footer, two link cycles per 128-bit word, §3.4/§4), the
	// Magic/Start framing (2 cycles, §3.4), one 20-cycle status poll by the
	// receiving ARM, the receiving ARM reading the footer too (4 words), the
	// "about 20" read cycles being up to 22; and each hop up to 10% above
	// 0.46 µs (the per-hop tolerance, HopRelTol).
	w := busWords(payload) + HeaderWords + FooterWords
	l.Unnamed = []Cost{
		{"serialisation at 10 Gb/s, not overlapped with the ARM", 2 * float64(w*WordBytes*8/LinkBitsPerCycle) * CycleNS / 1000},
		{"Magic/Start framing", 2 * MagicStartCycles * CycleNS / 1000},
		{"one status poll per receiving ARM", 2 * ReadCyclesPerWord * ARMCycleNS / 1000},
		{"the footer read by the receiving ARM", 2 * float64(FooterWords*WordBytes/AXIWordBytes*ReadCyclesPerWord) * ARMCycleNS / 1000},
		{"\"about 20\" read cycles per word read as up to 22", 2 * float64(words*2) * ARMCycleNS / 1000},
		{"each hop up to 10% above 0.46 µs", float64(hops) * HopUS * HopRelTol},
	}
	sum := 0.0
	for _, c := range l.Unnamed {
		sum += c.US
	}
	l.MaxUS = min(l.AnchorUS, l.MinUS+sum)
	l.MidUS = (l.MinUS + l.MaxUS) / 2
	return l, nil
}

// Cost is one part of a round trip the paper does not name, with its size.
type Cost struct {
	What string
	US   float64
}

// RTT is the expected mean round trip of the KARMA ping-pong (metric
// exanet.rtt, µs) to a node hops away answering with a packet of the same
// size: the band [MinUS, MaxUS] of PingPong, Value its middle.
func RTT(hops, payload int) (results.Expectation, error) {
	l, err := PingPong(hops, payload)
	if err != nil {
		return results.Expectation{}, fmt.Errorf("exanet.rtt: %w", err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "lower end: the named costs, %.3f µs (ARM writes and reads both ways %.3f + %d × 0.46 µs); upper end: ", l.MinUS, l.ARMUS, hops)
	sum := 0.0
	for i, c := range l.Unnamed {
		if i > 0 {
			b.WriteString(" + ")
		}
		fmt.Fprintf(&b, "%s %.3f", c.What, c.US)
		sum += c.US
	}
	fmt.Fprintf(&b, " = %.3f µs over them, at most §4.4's anchor %.3f µs (1 µs for one hop at ≤ 16 B, extended by hops and size); counters: the ping-pong's mean over its iterations, 6.4 ns ticks", sum, l.AnchorUS)
	e := results.Expectation{
		Metric: "exanet.rtt",
		Params: results.Params{"hops": strconv.Itoa(hops), "payload": strconv.Itoa(payload)},
		Value:  l.MidUS,
		Unit:   "us",
		Min:    results.Float(l.MinUS),
		Max:    results.Float(l.MaxUS),
		Budget: b.String(),
		Source: "ExaNet §4.2, Fig. 7/8: round trip, ARM write 4 and read 20 cycles of 1.5 GHz (§4) per 32-bit word, +0.46 µs per hop; §4.4 sub-µs single-hop round trip",
		Note: fmt.Sprintf("min = ARM 2 × (write %.3f + read %.3f µs, %d words: header 4 + payload) + %d × 0.46 µs; max = min plus what the paper does not name, within §4.4's sub-µs anchor; value = middle, for plots",
			l.WriteUS, l.ReadUS, l.Words, hops),
	}
	if e.NeedsReason() {
		e.Wide = "the paper gives no absolute round trip (reading E4), only its named costs and §4.4's sub-µs bound: the band runs from the named costs to the named costs plus what a faithful ping-pong may add that the paper does not name (Budget); exanet.rtt.per_hop (±10%) is the tight check"
	}
	return e, nil
}

// RTTPerHop is what one more hop adds to the mean round trip (metric
// exanet.rtt.per_hop, µs): the round trip at n+1 hops minus the round trip
// at n hops, 0.46 µs ±10% (§4.2). Virtual cut-through (§3.3) forwards a
// packet once its header is routed, so an extra hop delays the header, not
// the payload's serialisation: the figure does not depend on the payload,
// which is a parameter only because the runner measures it per size.
func RTTPerHop(payload int) (results.Expectation, error) {
	if payload < 1 || payload > MaxPayload {
		return results.Expectation{}, fmt.Errorf("exanet.rtt.per_hop: payload %d B is outside 1..%d (the maximum packet of §4.3)", payload, MaxPayload)
	}
	return results.Expectation{
		Metric: "exanet.rtt.per_hop",
		Params: results.Params{"payload": strconv.Itoa(payload)},
		Value:  HopUS,
		Unit:   "us",
		RelTol: HopRelTol,
		Budget: "the paper's rounding of 0.46 ±1.1%; one 20-cycle status poll per receiving ARM that the difference of two means may not cancel, 26.7 ns (5.8%); one 6.4 ns fabric cycle per direction for the extra router to sample the packet, 12.8 ns (2.8%): 9.7%, rounded to 10%",
		Source: "ExaNet §4.2, Fig. 7: two-hop minus one-hop round trip, 0.46 µs, the single-hop traversal time contribution",
		Note:   "round trip at n+1 hops minus n hops; ±10% = paper rounding 1.1% + one status poll per receiving ARM 5.8% + one 6.4 ns fabric cycle per direction 2.8%",
	}, nil
}

// Hop traversal, router to router (reading E41, §4.2). A hop is one router
// and one cable: §4.2's 0.46 µs, "the single-hop traversal time
// contribution", is what one more of them adds to a round trip, once each
// way. The routers' trace FIFOs stamp a packet with the router's cycle
// counter when its Router makes the routing decision (catalogue
// TRACE_DATA): from that stamp on one router to the same stamp on the next
// lies exactly one hop (the rest of the first router's pipeline, its
// APElink and the cable, the next router's port and Router), so a packet
// each way across one cable, their two router-to-router times added, is
// the round trip's 0.46 µs for that cable alone. The two boards' counters
// are never compared at one instant: the sum of the two ways cancels
// their offset, as a two-way time transfer does.
const (
	// HopRoundingUS is the paper's rounding of 0.46 µs (0.455..0.465).
	HopRoundingUS = 0.005
	// RefCableNS is the one-way delay of the cable behind §4.2's figure:
	// the paper does not give it; the testbed of §3.1 joins the Trenz
	// boards' SFP+ cages directly, read as a 1 m direct-attach cable,
	// 5 ns. A lab cable's own latency_ns and asymmetry_ns move the
	// expectation by their difference to it.
	RefCableNS = 5.0
	// HopQuantCycles is the stamps' quantisation the budget allows: each
	// router stamps whole cycles of its own clock, and the header enters
	// the next router's clock domain on one of its edges; the sum of the
	// two ways is within one cycle of the mean hop the paper's averaged
	// round trips measured.
	HopQuantCycles = 1
)

// HopRTT is the round trip of one hop across one cable, from the routers'
// trace stamps (metric exanet.hop_rtt, µs): router-to-router time one way
// plus the other way, §4.2's 0.46 µs with the cable's delay in the lab
// file (cableNS one way, asymmetryNS more the other way) in place of the
// paper's 1 m cable. The band is tight because the quantity is: no ARM,
// no polling, no queue; it is the paper's rounding (±5 ns) and one core
// cycle of stamp quantisation (6.4 ns): ±11.4 ns, 2.5%. A cable whose
// transceiver path takes 2 cycles more each way (+25.6 ns) fails it, as
// do a hop 10% slower (+46 ns) and a one-way reading of the figure.
func HopRTT(cableNS, asymmetryNS float64) (results.Expectation, error) {
	if cableNS < 0 || cableNS > 1e6 || asymmetryNS < -cableNS || asymmetryNS > 1e6 {
		return results.Expectation{}, fmt.Errorf("exanet.hop_rtt: cable delay %g ns (asymmetry %g ns): want 0..1e6 ns one way, and no negative delay either way", cableNS, asymmetryNS)
	}
	cableUS := (2*cableNS + asymmetryNS - 2*RefCableNS) / 1000
	tol := HopRoundingUS + HopQuantCycles*CycleNS/1000
	return results.Expectation{
		Metric: "exanet.hop_rtt",
		Params: results.Params{"cable_ns": strconv.FormatFloat(cableNS, 'g', -1, 64), "asymmetry_ns": strconv.FormatFloat(asymmetryNS, 'g', -1, 64)},
		Value:  HopUS + cableUS,
		Unit:   "us",
		AbsTol: tol,
		Budget: fmt.Sprintf("the paper's rounding of 0.46 µs, ±%.1f ns; one %.1f ns core cycle of the stamps' quantisation and the next router's clock edge: ±%.1f ns (%.1f%%); the boards' oscillators (±20 ppm of 0.46 µs) below 0.02 ns",
			HopRoundingUS*1000, CycleNS, tol*1000, 100*tol/(HopUS+cableUS)),
		Source: "ExaNet §4.2: 0.46 µs, the single-hop traversal time contribution to the round trip (two-hop minus one-hop, Fig. 7); the routers' trace stamps (catalogue TRACE_DATA); cable delay from the lab file",
		Note: fmt.Sprintf("router-to-router time across the cable one way plus the other way: 0.46 µs %+.4f µs for the lab's cable (%g ns + %g ns) against the paper's 1 m (2 × %g ns)",
			cableUS, cableNS, cableNS+asymmetryNS, RefCableNS),
	}, nil
}
