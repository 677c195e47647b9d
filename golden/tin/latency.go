package tin

import (
	"fmt"
	"math"
)

// Timing holds the per-hop figures of a TiN fabric. PaperTiming gives
// Aquila's; a lab whose boards differ (link rate, cable length) sets its own.
type Timing struct {
	FallThroughNs float64 // core cell switch fall-through (§3.1: 20 ns)
	HopNs         float64 // total per hop without FEC: switch and link (§3.1: 40 ns)
	FECNs         float64 // extra per-hop latency of FEC on global links (§3.2: 30 ns)
	FECOverhead   float64 // bandwidth FEC takes on global links (§3.2: 6%)
	LocalPropNs   float64 // flight time of a local link beyond HopNs (backplane: 0)
	GlobalPropNs  float64 // flight time of a global link (fibre up to 100 m, §3.2: the lab's cable)
	LinkGbps      float64 // GNet link data rate (§3.1: 25G links; §3.6: 28 Gb/s lanes)
	InjectGbps    float64 // endpoint port into the switch (§5.1: 100 Gb/s IP injection per TiN)
	// SwitchClockNs is the period of a design's switch clock: a switch
	// acts only on its edges (reading A28). 0, the paper's figures: no
	// clock.
	SwitchClockNs float64
}

// PaperTiming returns Aquila's figures. Links are taken at 25 Gb/s: §3.1
// sizes the 160-byte cell for "~50ns" serialization "on 25G links" (51.2 ns
// at 25 Gb/s); the 28 Gb/s of §3.6 is the lane rate of the 66/64-coded
// SerDes. Flight time is zero: the per-hop figures exclude it and the lab
// supplies its cables'.
func PaperTiming() Timing {
	return Timing{
		FallThroughNs: 20,
		HopNs:         40,
		FECNs:         30,
		FECOverhead:   0.06,
		LinkGbps:      25,
		InjectGbps:    100,
	}
}

// Check reports the first implausible figure.
func (t Timing) Check() error {
	for _, f := range []struct {
		name string
		v    float64
		lo   float64
	}{
		{"fall-through", t.FallThroughNs, 0}, {"per-hop latency", t.HopNs, 0}, {"FEC latency", t.FECNs, 0},
		{"local flight time", t.LocalPropNs, 0}, {"global flight time", t.GlobalPropNs, 0},
		{"switch clock period", t.SwitchClockNs, 0},
	} {
		if math.IsNaN(f.v) || f.v < f.lo || f.v > 1e6 {
			return fmt.Errorf("tin: %s %g ns: want 0..1e6 ns", f.name, f.v)
		}
	}
	if math.IsNaN(t.FECOverhead) || t.FECOverhead < 0 || t.FECOverhead >= 1 {
		return fmt.Errorf("tin: FEC bandwidth overhead %g: want 0 <= x < 1 (Aquila §3.2: 0.06)", t.FECOverhead)
	}
	for _, r := range []struct {
		name string
		v    float64
	}{{"link rate", t.LinkGbps}, {"injection rate", t.InjectGbps}} {
		if math.IsNaN(r.v) || r.v <= 0 || r.v > 1e4 {
			return fmt.Errorf("tin: %s %g Gb/s: want 0 < x <= 10000", r.name, r.v)
		}
	}
	if t.HopNs < t.FallThroughNs {
		return fmt.Errorf("tin: per-hop latency %g ns is below the switch fall-through %g ns it includes (Aquila §3.1)", t.HopNs, t.FallThroughNs)
	}
	return nil
}

// HopLatency is the head latency of one hop: from a cell leaving the output
// of one switch to its reaching the output of the next, flight included.
// It is a head latency because the switch cuts through (reading A3, Aquila
// §3.1): §3.1's 40 ns a hop is below a 160-byte cell's serialisation.
func (t Timing) HopLatency(k LinkKind) float64 {
	if k == Global {
		return t.HopLatencyOver(k, t.GlobalPropNs)
	}
	return t.HopLatencyOver(k, t.LocalPropNs)
}

// HopLatencyOver is HopLatency over one cable of propNs flight time (the
// lab's own cable rather than the kind's mean): §3.1's per-hop latency,
// plus §3.2's FEC on a global link.
func (t Timing) HopLatencyOver(k LinkKind, propNs float64) float64 {
	if k == Global {
		return t.HopNs + t.FECNs + propNs
	}
	return t.HopNs + propNs
}

// LinkBytesPerNs is a link's data rate: FEC takes its share of a global
// link (§3.2).
func (t Timing) LinkBytesPerNs(k LinkKind) float64 {
	r := t.LinkGbps / 8
	if k == Global {
		r *= 1 - t.FECOverhead
	}
	return r
}

// InjectBytesPerNs is the endpoint port rate, in and out of the switch.
func (t Timing) InjectBytesPerNs() float64 { return t.InjectGbps / 8 }

// Serialization is the time a cell of the given size occupies a link.
func (t Timing) Serialization(bytes int, k LinkKind) float64 {
	return float64(bytes) / t.LinkBytesPerNs(k)
}

// CellLatency is the unloaded time from an endpoint starting to send a cell
// to the destination endpoint holding all of it, along path p.
//
// The cell switch cuts through: §3.1's "total per hop latency without FEC is
// 40ns" is below the 51.2 ns a 160-byte cell takes to serialize at 25 Gb/s,
// so a switch forwards a cell's head before its tail has arrived. The cell
// pays the source switch's fall-through once (20 ns, from the injecting
// endpoint to the output port), each hop's head latency (40 ns; 70 ns on a
// global link with FEC, §3.2; plus flight time), and the serialization of
// its slowest link once: its tail trails its head by that much.
func (t Timing) CellLatency(p Path, bytes int) float64 {
	lat := t.FallThroughNs
	ser := float64(bytes) / t.InjectBytesPerNs()
	for _, h := range p.Hops {
		lat += t.HopLatency(h.Kind)
		ser = math.Max(ser, t.Serialization(bytes, h.Kind))
	}
	return lat + ser
}
