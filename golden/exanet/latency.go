package exanet

import (
	"fmt"
	"strconv"

	"labrunner/results"
)

// KARMA ping-pong figures (§4.2), in the 156.25 MHz cycles of the IP and
// 128-bit FIFO words (see the package documentation for why).
const (
	// WriteCyclesPerWord: the ARM writes a word into the intra-tile FIFOs
	// in 4 cycles (§4.2, "< 0.1 µs, 4 clock cycles per word").
	WriteCyclesPerWord = 4
	// ReadCyclesPerWord: the ARM reads a word back in about 20 cycles (§4.2,
	// "~0.4 µs, about 20 clock cycles per word").
	ReadCyclesPerWord = 20
	// HopUS is the single-hop traversal time, per direction: the two-hop
	// minus one-hop difference of Fig. 7 (§4.2, 0.46 µs).
	HopUS = 0.46
	// MaxHops bounds the hop count: the diameter of the largest lattice.
	MaxHops = 3 * (MaxSide - 1)
)

// Latency breaks down the KARMA ping-pong for one hop count and payload.
type Latency struct {
	Hops, Payload int
	// Words is the packet as the ARM moves it: header, payload and footer
	// in 128-bit words.
	Words int
	// Per direction: the sender's writes, the network's hops, the
	// receiver's reads, and their sum.
	WriteUS, NetworkUS, ReadUS, OneWayUS float64
	// RoundTripUS is the ping and the same-size pong.
	RoundTripUS float64
}

// PingPong computes the KARMA ping-pong to a node hops away, with packets of
// payload bytes both ways (§4.2):
//
//	one way = words·4·T + hops·0.46 µs + words·20·T,  T = 6.4 ns
//	RTT     = 2 · one way
func PingPong(hops, payload int) (Latency, error) {
	if hops < 1 || hops > MaxHops {
		return Latency{}, fmt.Errorf("hops %d is outside 1..%d (a ping-pong crosses at least one link)", hops, MaxHops)
	}
	if payload < 1 || payload > MaxPayload {
		return Latency{}, fmt.Errorf("payload %d B is outside 1..%d (the maximum packet of §4.3)", payload, MaxPayload)
	}
	words := HeaderWords + (payload+WordBytes-1)/WordBytes + FooterWords
	l := Latency{Hops: hops, Payload: payload, Words: words}
	l.WriteUS = float64(words*WriteCyclesPerWord) * CycleNS / 1000
	l.ReadUS = float64(words*ReadCyclesPerWord) * CycleNS / 1000
	l.NetworkUS = float64(hops) * HopUS
	l.OneWayUS = l.WriteUS + l.NetworkUS + l.ReadUS
	l.RoundTripUS = 2 * l.OneWayUS
	return l, nil
}

// RTT tolerances. AbsUS: the model counts no polling, and each side may
// spend up to one status read (20 cycles, 0.128 µs, §4.2) noticing the
// packet. Rel: the per-word figures are approximate ("about 20", "~0.4 µs"),
// and the paper does not say whether the ARM's writes overlap the network and
// the remote reads (virtual cut-through, §3.3, would allow it); the overlapped
// reading is at most 15% lower, at 512 B.
const (
	rttRelTol = 0.15
	rttAbsUS  = 0.25
)

// RTT is the expected mean round trip of the KARMA ping-pong (metric
// exanet.rtt, µs) to a node hops away answering with a packet of the same
// size.
func RTT(hops, payload int) (results.Expectation, error) {
	l, err := PingPong(hops, payload)
	if err != nil {
		return results.Expectation{}, fmt.Errorf("exanet.rtt: %w", err)
	}
	return results.Expectation{
		Metric: "exanet.rtt",
		Params: results.Params{"hops": strconv.Itoa(hops), "payload": strconv.Itoa(payload)},
		Value:  l.RoundTripUS,
		Unit:   "us",
		RelTol: rttRelTol,
		AbsTol: rttAbsUS,
		Source: "ExaNet §4.2, Fig. 7/8: ARM write 4 and read 20 cycles per 128-bit word at 156.25 MHz, 0.46 µs per hop; §4.4 sub-µs single hop",
		Note: fmt.Sprintf("2 × (write %.3f + %d hop × 0.46 + read %.3f µs) for %d words; Fig. 7 read as per direction; ±max(15%%, 0.25 µs: one status poll per side)",
			l.WriteUS, hops, l.ReadUS, l.Words),
	}, nil
}
