package prr

import "math/bits"

// The traffic generator drives all P inputs with one of the three traffic
// models of §5.1 for TG_CYCLES cycles, then lets the switch drain, and
// measures what leaves the output ports.
//
// Each input port has its own SplitMix64 generator; port s starts from
// SplitMix64 state TG_SEED·2^32 + s, so a run depends on TG_SEED and the
// configuration only. Probabilities are fixed-point: TG_LOAD and
// TG_NONUNIF_P in 1/65536 (0x10000 = 1).

// Traffic models (TG_MODEL), §5.1.
const (
	ModelBernoulli  = 0 // (a) uniform Bernoulli arrivals
	ModelBursty     = 1 // (b) uniform bursty: On/Off/New Markov chain
	ModelNonuniform = 2 // (c) nonuniform: own port with probability p
)

const (
	one16    = 1 << 16
	histBins = 32
)

// tgState is the generator's configuration and its results.
type tgState struct {
	model, load, burst, nonunif, seed, cycles, warmup, drainMax uint32

	done, stranded, badConfig  bool
	offered, deliveredN, dropN uint64
	latSum, waitSum            uint64
	windowOut, runCycles       uint64
	latMin, latMax, waitMax    uint32
	strandedN, orderErr        uint32
	hist                       [histBins]uint32

	// During a run.
	p            int
	winLo, winHi uint64
	expect       []uint32 // next sequence number expected per (src, dest) flow
}

func (t *tgState) clearResults() {
	t.done, t.stranded, t.badConfig = false, false, false
	t.offered, t.deliveredN, t.dropN, t.latSum, t.waitSum, t.windowOut, t.runCycles = 0, 0, 0, 0, 0, 0, 0
	t.latMin, t.latMax, t.waitMax, t.strandedN, t.orderErr = 0, 0, 0, 0, 0
	t.hist = [histBins]uint32{}
}

func sat32(v uint64) uint32 {
	if v > 0xffffffff {
		return 0xffffffff
	}
	return uint32(v)
}

// delivered records a packet leaving output port dest in cycle.
func (t *tgState) delivered(p *packet, cycle uint64) {
	if cycle >= t.winLo && cycle < t.winHi {
		t.windowOut++
	}
	// The output's sequence checker: a flow's packets must leave in the
	// order they were generated (drops leave gaps, which are fine).
	f := int(p.src)*t.p + int(p.dest)
	if p.seq < t.expect[f] {
		t.orderErr++
	} else {
		t.expect[f] = p.seq + 1
	}
	if !p.meas {
		return
	}
	lat := cycle - p.ins      // port to port
	wait := cycle - p.enq - 1 // beyond the one cycle of reading the queue
	if t.deliveredN == 0 || lat < uint64(t.latMin) {
		t.latMin = sat32(lat)
	}
	t.deliveredN++
	t.latSum += lat
	t.waitSum += wait
	t.latMax = max(t.latMax, sat32(lat))
	t.waitMax = max(t.waitMax, sat32(wait))
	t.hist[min(bits.Len64(wait), histBins-1)]++
}

func (t *tgState) dropped(p *packet) {
	if p.meas {
		t.dropN++
	}
}

// generators are the per-input traffic sources.
type generators struct {
	model      uint32
	p          int
	lg         uint
	load       uint64 // Bernoulli threshold on 16 bits
	pEnd       uint64 // bursty: a burst ends, on 32 bits (1/s)
	pStart     uint64 // bursty: Off -> New, on 32 bits (r/s)
	pSelf      uint64 // nonuniform: own port, on 16 bits
	state      []uint64
	active     []bool
	dest       []uint16
	otherPorts uint64 // P-1
	destShift  uint
}

func splitmix(s *uint64) uint64 {
	*s += 0x9e3779b97f4a7c15
	z := *s
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

func newGenerators(t *tgState, p, lg int) *generators {
	g := &generators{model: t.model, p: p, lg: uint(lg), otherPorts: uint64(p - 1), destShift: uint(64 - lg)}
	g.load = uint64(min(t.load, one16))
	s := uint64(max(t.burst, 1))
	g.pEnd = (1 << 32) / s
	g.pStart = (g.load << 16) / s
	g.pSelf = uint64(min(t.nonunif, one16))
	g.state = make([]uint64, p)
	g.active = make([]bool, p)
	g.dest = make([]uint16, p)
	for i := range g.state {
		g.state[i] = uint64(t.seed)<<32 | uint64(i)
		if g.model == ModelBursty {
			// Start each chain in its stationary state: in a burst with
			// probability r, towards a uniform destination.
			x := splitmix(&g.state[i])
			g.active[i] = x&0xffff < g.load
			g.dest[i] = uint16(x >> g.destShift)
		}
	}
	return g
}

// next returns the packet input port s offers this cycle, if any.
func (g *generators) next(s int) (uint16, bool) {
	x := splitmix(&g.state[s])
	switch g.model {
	case ModelBursty:
		// §5.1 (b), Figure 8: in a burst ('New' or 'On') the burst ends
		// with probability 1/s, after which a new burst starts at once
		// ('New') with probability r, else the input goes 'Off'; 'Off'
		// starts a new burst with probability r/s. Bursts average s
		// packets, the input rate is r, and r = 1 is reachable (no forced
		// Off cycle between bursts, unlike the two-state model [12]).
		u := x & 0xffffffff
		if g.active[s] {
			if u >= g.pEnd {
				return g.dest[s], true // 'On': same destination as before
			}
			if (x>>32)&0xffff < g.load {
				g.dest[s] = uint16(x >> g.destShift) // 'New'
				return g.dest[s], true
			}
			g.active[s] = false
			return 0, false
		}
		if u < g.pStart {
			g.active[s] = true
			g.dest[s] = uint16(x >> g.destShift)
			return g.dest[s], true
		}
		return 0, false
	case ModelNonuniform:
		// §5.1 (c): a packet with probability r; to its own port with
		// probability p, else to one of the P-1 others uniformly.
		if x&0xffff >= g.load {
			return 0, false
		}
		if (x>>16)&0xffff < g.pSelf {
			return uint16(s), true
		}
		k := ((x >> 32) * g.otherPorts) >> 32
		if k >= uint64(s) {
			k++
		}
		return uint16(k), true
	default:
		// §5.1 (a): a packet with probability r, to any port with 1/P.
		if x&0xffff >= g.load {
			return 0, false
		}
		return uint16(x >> g.destShift), true
	}
}

// tgCommand executes a TG_CTRL write.
func (d *design) tgCommand(v uint32) {
	if v&tgClear != 0 {
		d.tg.clearResults()
	}
	if v&tgStart != 0 {
		d.tgRun()
	}
}

// tgRun resets the switch, offers TG_CYCLES cycles of traffic with the
// output arbiters running, then clocks on with no input until the switch
// is empty, nothing can move any more, or TG_DRAIN_MAX cycles have passed.
func (d *design) tgRun() {
	t := &d.tg
	t.clearResults()
	if t.model > ModelNonuniform {
		t.badConfig, t.done = true, true
		return
	}
	d.c.reset()
	d.clearDebug()
	p := d.cfg.Ports
	t.p = p
	if len(t.expect) != p*p {
		t.expect = make([]uint32, p*p)
	} else {
		clear(t.expect)
	}
	seq := make([]uint32, p*p)
	g := newGenerators(t, p, d.cfg.log2P())
	start := d.c.cycle
	t.winLo, t.winHi = start+uint64(t.warmup), start+uint64(t.cycles)
	d.tgRunning = true
	for n := uint32(0); n < t.cycles; n++ {
		b := d.c.getBatch()
		meas := n >= t.warmup
		for s := 0; s < p; s++ {
			dest, ok := g.next(s)
			if !ok {
				continue
			}
			id, pk := d.c.newPacket()
			f := s*p + int(dest)
			pk.src, pk.dest, pk.seq, pk.meas = uint16(s), dest, seq[f], meas
			pk.tag = uint32(s)<<24 | seq[f]&0xffffff
			seq[f]++
			b.put(s, id)
			d.pktsIn++
			if meas {
				t.offered++
			}
		}
		d.c.clock(b, true)
	}
	for n := uint32(0); n < t.drainMax && !d.c.idle() && !d.c.frozen(); n++ {
		d.c.clock(nil, true)
	}
	d.tgRunning = false
	t.runCycles = d.c.cycle - start
	t.strandedN = uint32(d.c.flight + d.c.queued)
	t.stranded = t.strandedN > 0
	t.done = true
}

// tgRead reads a traffic generator register.
func (d *design) tgRead(id regID, idx int) uint32 {
	t := &d.tg
	switch id {
	case rTG_MODEL:
		return t.model
	case rTG_LOAD:
		return t.load
	case rTG_BURST:
		return t.burst
	case rTG_NONUNIF_P:
		return t.nonunif
	case rTG_SEED:
		return t.seed
	case rTG_CYCLES:
		return t.cycles
	case rTG_WARMUP:
		return t.warmup
	case rTG_DRAIN_MAX:
		return t.drainMax
	case rTG_STATUS:
		var v uint32
		if t.done {
			v |= tgDone
		}
		if t.stranded {
			v |= tgStranded
		}
		if t.badConfig {
			v |= tgBadConfig
		}
		return v
	case rTG_OFFERED_LO:
		return d.lo(t.offered, rTG_OFFERED_HI)
	case rTG_DELIVERED_LO:
		return d.lo(t.deliveredN, rTG_DELIVERED_HI)
	case rTG_DROPPED_LO:
		return d.lo(t.dropN, rTG_DROPPED_HI)
	case rTG_LAT_SUM_LO:
		return d.lo(t.latSum, rTG_LAT_SUM_HI)
	case rTG_WAIT_SUM_LO:
		return d.lo(t.waitSum, rTG_WAIT_SUM_HI)
	case rTG_WINDOW_OUT_LO:
		return d.lo(t.windowOut, rTG_WINDOW_OUT_HI)
	case rTG_RUN_CYCLES_LO:
		return d.lo(t.runCycles, rTG_RUN_CYCLES_HI)
	case rTG_OFFERED_HI, rTG_DELIVERED_HI, rTG_DROPPED_HI, rTG_LAT_SUM_HI, rTG_WAIT_SUM_HI,
		rTG_WINDOW_OUT_HI, rTG_RUN_CYCLES_HI:
		return d.hi[id]
	case rTG_LAT_MIN:
		return t.latMin
	case rTG_LAT_MAX:
		return t.latMax
	case rTG_WAIT_MAX:
		return t.waitMax
	case rTG_STRANDED:
		return t.strandedN
	case rTG_ORDER_ERRORS:
		return t.orderErr
	case rTG_HIST:
		if idx < histBins {
			return t.hist[idx]
		}
	}
	return 0
}
