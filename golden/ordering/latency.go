package ordering

import (
	"fmt"
	"math"
)

// Net holds the network figures the closed forms of SC'18 §IV need. The
// paper's Dragonfly (§IV): 40 ns local and 500 ns global channels, 1 flit/ns,
// no other latency; a stream to another group crosses at most a local, a
// global and a local channel on its minimal route.
type Net struct {
	OneWayNs float64 // D: latency of the path, source to target
	PacketNs float64 // Tp: time a REQ takes on a link (16 flits at 1 flit/ns)
	AckNs    float64 // Ta: time an ACK takes on a link
}

// PaperNet returns §IV's figures: D = 40 + 500 + 40 ns, 16-flit REQs
// (Fig. 8b, 10, 11), and a 1-flit ACK (the paper gives no ACK size; an ACK
// carries no data for a write).
func PaperNet() Net { return Net{OneWayNs: 580, PacketNs: 16, AckNs: 1} }

// Check reports an implausible figure.
func (n Net) Check() error {
	for _, f := range []struct {
		name string
		v    float64
	}{{"one-way latency", n.OneWayNs}, {"packet time", n.PacketNs}, {"ACK time", n.AckNs}} {
		if math.IsNaN(f.v) || f.v < 0 || f.v > 1e9 {
			return fmt.Errorf("ordering: %s %g ns: want 0..1e9 ns", f.name, f.v)
		}
	}
	if n.PacketNs <= 0 {
		return fmt.Errorf("ordering: packet time %g ns: a REQ takes some time on a link", n.PacketNs)
	}
	return nil
}

// RTT is a REQ's round trip in slow mode: the REQ on the link, across the
// network, its ACK on the link and back, with no delay in the endpoints
// (§IV-A: "no delays occur when the target returns an ACK ... or when the
// source injects the next REQ").
func (n Net) RTT() float64 { return n.PacketNs + n.OneWayNs + n.AckNs + n.OneWayNs }

// SlowRate is slow mode's best rate in REQs per ns: one per round trip
// (§III-A: "Throughput of source-side ordering is less than 1/RTT").
func (n Net) SlowRate() float64 { return 1 / n.RTT() }

// SlowShare is the share of the link slow mode can use: one REQ time per
// round trip (§IV-A, Fig. 8a: "a small fraction of the available link
// bandwidth").
func (n Net) SlowShare() float64 { return n.PacketNs / n.RTT() }

// LatencyMode names a transfer mode of §IV-A and §IV-C.
type LatencyMode string

// The transfer modes whose stream latency the model predicts.
const (
	LatUnordered  LatencyMode = "unordered"   // §IV-A No Ordering
	LatSlow       LatencyMode = "slow"        // §IV-A source-side ordering
	LatFast       LatencyMode = "fast"        // §IV-A/C target-side ordering
	LatSyncSource LatencyMode = "sync-source" // §IV-C source-side synchronization (flush)
	LatSyncTarget LatencyMode = "sync-target" // §IV-C target-side synchronization
)

// LatencyModes lists them.
var LatencyModes = []LatencyMode{LatUnordered, LatSlow, LatFast, LatSyncSource, LatSyncTarget}

// StreamLatency is the unloaded latency of a stream of n REQs, from the
// injection of the first at the source to the delivery of the last at the
// target (§IV-A; for the synchronized modes, to the delivery of the
// synchronization operation, the n-th REQ, §IV-C):
//
//	unordered, fast, sync-target: n·Tp + D        (REQs back to back; the last one arrives D after it leaves)
//	slow:                         (n-1)·RTT + Tp + D
//	sync-source:                  n·Tp + 3·D + Ta (the n-1 data REQs, their last ACK back, then the operation)
//
// Target-side ordering adds no latency unloaded: REQs arrive in order on an
// idle network, so the reorder buffer holds nothing. Source-side
// synchronization exceeds target-side by 2·D + Ta, a round trip less the
// operation's own Tp (§IV-C: "adds at least a full RTT").
func (n Net) StreamLatency(mode LatencyMode, count int) (float64, error) {
	if count < 1 {
		return 0, fmt.Errorf("ordering: a stream of %d REQs: want at least 1", count)
	}
	k := float64(count)
	switch mode {
	case LatUnordered, LatFast, LatSyncTarget:
		return k*n.PacketNs + n.OneWayNs, nil
	case LatSlow:
		return (k-1)*n.RTT() + n.PacketNs + n.OneWayNs, nil
	case LatSyncSource:
		if count < 2 {
			return n.PacketNs + n.OneWayNs, nil // no data to flush
		}
		return k*n.PacketNs + 3*n.OneWayNs + n.AckNs, nil
	}
	return 0, fmt.Errorf("ordering: latency mode %q: want one of %v", mode, LatencyModes)
}

// ROBCapacity sizes a reorder buffer from the network skew (§IV-D): the
// packets that arrive during the skew, rounded up, plus an allowance for
// switch buffering. With §IV-D's figures, 500 ns of extra global channel at
// 16 ns per packet is 31.25 packets, rounded up to 32, plus 20 packets: 52.
// §IV-D rounds the 31.25 to "30 packets" and sizes the buffer at 50.
func ROBCapacity(skewNs, packetNs float64, bufferPackets int) (int, error) {
	if math.IsNaN(skewNs) || skewNs < 0 || skewNs > 1e9 || math.IsNaN(packetNs) || packetNs <= 0 || packetNs > 1e9 {
		return 0, fmt.Errorf("ordering: skew %g ns and packet time %g ns: want 0 <= skew <= 1e9, 0 < packet <= 1e9", skewNs, packetNs)
	}
	if bufferPackets < 0 || bufferPackets > 1<<20 {
		return 0, fmt.Errorf("ordering: %d packets of switch buffering: want 0..%d", bufferPackets, 1<<20)
	}
	// Guard the rounding against 31.000000001 from float noise.
	return int(math.Ceil(skewNs/packetNs-1e-9)) + bufferPackets, nil
}
