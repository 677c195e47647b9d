package tin

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
)

// Pattern is a synthetic traffic pattern.
type Pattern uint8

// The patterns.
const (
	// Uniform: every packet to an endpoint drawn uniformly from all of
	// them, the source itself included (BookSim2's "uniform").
	Uniform Pattern = iota
	// GroupShift: every packet to a random endpoint of the next group
	// (pod g sends to pod g+1 mod P): the adversarial pattern of Dragonfly
	// studies, which minimal routing funnels onto one global link per pod
	// pair.
	GroupShift
)

var patternNames = [...]string{"uniform", "group-shift"}

func (p Pattern) String() string {
	if int(p) < len(patternNames) {
		return patternNames[p]
	}
	return fmt.Sprintf("pattern(%d)", int(p))
}

// ParsePattern reads a pattern as String writes it.
func ParsePattern(s string) (Pattern, error) {
	for i, n := range patternNames {
		if strings.EqualFold(strings.TrimSpace(s), n) {
			return Pattern(i), nil
		}
	}
	return 0, fmt.Errorf("tin: traffic pattern %q: want %s", s, strings.Join(patternNames[:], " or "))
}

// SynthConfig is a run of synthetic traffic as BookSim2 runs it in its
// "latency" mode: Bernoulli injection on the nanosecond grid (a packet per
// endpoint per ns with probability Rate·inject rate / packet size), a
// warm-up, a measurement window, then a drain of the packets created in
// the window while the sources keep injecting.
type SynthConfig struct {
	Fabric  FabricConfig
	Alg     Algorithm
	Pattern Pattern
	// Rate is the offered load: a fraction of the injection link's rate
	// (flits per endpoint per ns on a 1 flit/ns network).
	Rate float64
	// PacketBytes is the size of a packet, sent as one cell (one flit is
	// one byte).
	PacketBytes int
	// WarmupNs and MeasureNs: BookSim's anchor runs 3 and 3 sample periods
	// of 2000 cycles.
	WarmupNs, MeasureNs float64
	// DrainNs bounds the drain; 0: ten measurement windows. Packets still
	// in the network after it mean the load is not carried (Saturated).
	DrainNs float64
	Seed    uint64
}

// SynthResult is what a synthetic run measured, in BookSim2's terms.
type SynthResult struct {
	// LatencyNs: average over the packets created in the measurement
	// window of creation to the tail received ("Packet latency average").
	LatencyNs, MaxLatencyNs float64
	// Accepted: bytes (flits) received per endpoint per ns during the
	// window ("Accepted flit rate average"); Offered: created, likewise.
	Accepted, Offered float64
	// Hops: routers a measured packet went through (fabric links + 1, as
	// BookSim counts).
	Hops float64
	// NonMinimal: share of the measured packets that left the minimal
	// route.
	NonMinimal float64
	Measured   int64 // packets created in the window
	Packets    int64 // packets delivered over the whole run
	Events     int64
	SimNs      float64
	Saturated  bool
}

type synth struct {
	cfg              SynthConfig
	f                *Fabric
	rng              *rand.Rand
	n                int32
	perGroup         int32
	lnq              float64 // ln(1 - p) for geometric gaps
	p                float64
	warm, end, limit Time
	measuring        bool
	outstanding      int64 // measured packets not yet delivered
	res              SynthResult
	latSum, hopSum   float64
	recvBytes        int64
	sentBytes        int64
	nonMin           int64
	stopInject       bool
	last             Time // the last delivery
}

// SaturationShortfall is how much less than offered a window may deliver
// before the run counts as saturated: the Bernoulli sources' own spread
// over a 6,000 ns window of 1,056 endpoints is far below it.
const SaturationShortfall = 0.05

// maxSynthNs bounds a synthetic run's windows.
const maxSynthNs = 1e9

// RunSynthetic runs synthetic traffic over a fabric.
func RunSynthetic(cfg SynthConfig) (SynthResult, error) {
	if math.IsNaN(cfg.Rate) || cfg.Rate <= 0 || cfg.Rate > 1 {
		return SynthResult{}, fmt.Errorf("tin: offered rate %g: want 0 < rate <= 1 of the injection rate", cfg.Rate)
	}
	if cfg.PacketBytes < 1 || cfg.PacketBytes > MaxPacket {
		return SynthResult{}, fmt.Errorf("tin: packets of %d bytes (flits): want 1..%d", cfg.PacketBytes, MaxPacket)
	}
	for _, w := range []float64{cfg.WarmupNs, cfg.MeasureNs, cfg.DrainNs} {
		if math.IsNaN(w) || w < 0 || w > maxSynthNs {
			return SynthResult{}, fmt.Errorf("tin: synthetic run windows %g, %g, %g ns: want 0..%g", cfg.WarmupNs, cfg.MeasureNs, cfg.DrainNs, maxSynthNs)
		}
	}
	if cfg.MeasureNs < 1 {
		return SynthResult{}, fmt.Errorf("tin: a measurement window of %g ns measures nothing", cfg.MeasureNs)
	}
	if cfg.Alg >= algCount {
		return SynthResult{}, fmt.Errorf("tin: routing algorithm %d", cfg.Alg)
	}
	if cfg.Pattern > GroupShift {
		return SynthResult{}, fmt.Errorf("tin: traffic pattern %d", cfg.Pattern)
	}
	if cfg.Pattern == GroupShift && cfg.Fabric.Clique != nil && cfg.Fabric.Clique.Pods < 2 {
		return SynthResult{}, fmt.Errorf("tin: group-shift traffic needs two groups or more")
	}
	s := &synth{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0xda942042e4dd58b5))}
	f, err := NewFabric(cfg.Fabric, s)
	if err != nil {
		return SynthResult{}, err
	}
	if err := f.checkPacket(Packet{Src: 0, Dst: 0, Bytes: int32(cfg.PacketBytes), Alg: cfg.Alg}, nil); err != nil {
		return SynthResult{}, err
	}
	s.f = f
	s.n = int32(f.nEP)
	s.perGroup = int32(f.T * f.E)
	s.p = cfg.Rate * cfg.Fabric.Inject.BytesPerNs / float64(cfg.PacketBytes)
	if s.p > 1 {
		return SynthResult{}, fmt.Errorf("tin: rate %g asks %.3g packets per endpoint per ns: the injection link sends at most one %d-byte packet per %.3g ns",
			cfg.Rate, s.p, cfg.PacketBytes, float64(cfg.PacketBytes)/cfg.Fabric.Inject.BytesPerNs)
	}
	s.lnq = math.Log1p(-s.p)
	s.warm = toTime(cfg.WarmupNs)
	s.end = s.warm + toTime(cfg.MeasureNs)
	drain := cfg.DrainNs
	if drain == 0 {
		drain = 10 * cfg.MeasureNs
	}
	s.limit = s.end + toTime(drain)
	for ep := int32(0); ep < s.n; ep++ {
		f.At(s.gap(0), int64(ep))
	}
	f.At(s.end, -1)
	f.At(s.limit, -2)
	f.Run()
	r := &s.res
	win := float64(s.end-s.warm) / float64(Ns)
	r.Accepted = float64(s.recvBytes) / float64(s.n) / win
	r.Offered = float64(s.sentBytes) / float64(s.n) / win
	done := r.Measured - s.outstanding
	if done > 0 {
		r.LatencyNs = s.latSum / float64(done)
		r.Hops = s.hopSum / float64(done)
		r.NonMinimal = float64(s.nonMin) / float64(done)
	}
	r.Events = f.Stats.Events
	r.SimNs = float64(s.last) / float64(Ns)
	// BookSim aborts a run whose latency runs away; here a run is
	// saturated when packets of the window are still out after the drain,
	// or the fabric delivered noticeably less than was offered in it.
	r.Saturated = s.outstanding > 0 || r.Accepted < (1-SaturationShortfall)*r.Offered
	return *r, nil
}

// gap returns the next packet creation time after t: Bernoulli trials,
// one per ns.
func (s *synth) gap(t Time) Time {
	if s.p >= 1 {
		return t + Ns
	}
	u := 1 - s.rng.Float64() // (0, 1]
	k := math.Floor(math.Log(u) / s.lnq)
	if k > 1e12 {
		k = 1e12
	}
	return t + Time(1+k)*Ns
}

func (s *synth) dest(src int32) int32 {
	if s.cfg.Pattern == GroupShift {
		g := (src/s.perGroup + 1) % (s.n / s.perGroup)
		return g*s.perGroup + s.rng.Int32N(s.perGroup)
	}
	return s.rng.Int32N(s.n)
}

// Timer implements Host: a packet creation at an endpoint, or the end of
// the window (-1), or of the drain (-2).
func (s *synth) Timer(f *Fabric, tag int64) {
	switch tag {
	case -1:
		s.measuring = false
		if s.outstanding == 0 {
			s.finish()
		}
		return
	case -2:
		f.Stop()
		return
	}
	if s.stopInject {
		return
	}
	now := f.Now()
	src := int32(tag)
	measured := now >= s.warm && now < s.end
	if measured {
		s.measuring = true
		s.res.Measured++
		s.outstanding++
		s.sentBytes += int64(s.cfg.PacketBytes)
	}
	var flag int64
	if measured {
		flag = 1
	}
	// The packet's creation time rides in its tag: SentAt is when it was
	// handed to the fabric, which is the same here.
	_ = f.Send(Packet{Src: src, Dst: s.dest(src), Bytes: int32(s.cfg.PacketBytes), Alg: s.cfg.Alg, Tag: flag}, nil)
	f.At(s.gap(now), tag)
}

// Delivered implements Host.
func (s *synth) Delivered(f *Fabric, p *Packet) {
	s.res.Packets++
	now := f.Now()
	s.last = now
	if now >= s.warm && now < s.end {
		s.recvBytes += int64(p.Bytes)
	}
	if p.Tag == 0 {
		return
	}
	lat := float64(now-p.SentAt) / float64(Ns)
	s.latSum += lat
	s.res.MaxLatencyNs = max(s.res.MaxLatencyNs, lat)
	if p.NonMinimal {
		s.nonMin++
	}
	s.hopSum += float64(p.Hops) + 1
	s.outstanding--
	if s.outstanding == 0 && now >= s.end {
		s.finish()
	}
}

// finish ends the run once every measured packet is in: sources stop,
// what is in flight drains (BookSim's "Draining remaining packets").
func (s *synth) finish() {
	s.stopInject = true
}
