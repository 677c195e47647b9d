package tin

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
)

// Algorithm is how a Fabric routes a packet's cells through the Dragonfly.
type Algorithm uint8

// The routing algorithms. The first four are the Dragonfly's textbook
// ones (Kim et al., ISCA 2008, Aquila's reference [30]; García et al., ICPP
// 2013, SC'18's reference [13]); the other three are Aquila's adaptive and
// deterministic modes (§3.2), Minimal standing for Minimal Deterministic.
const (
	// AlgMinimal: the minimal route; where two pods are joined by several
	// global links, one chosen by a hash of the source and destination
	// routers (Aquila's Minimal Deterministic mode).
	AlgMinimal Algorithm = iota
	// AlgValiant: inter-group packets through a random intermediate group.
	AlgValiant
	// AlgUGAL: UGAL-L decided once at the source router, between the
	// minimal route and a Valiant route through a random intermediate
	// group, on the occupancy of the two first outputs (reading O3).
	AlgUGAL
	// AlgPAR: progressive adaptive routing: the UGAL-L choice made at the
	// source router and made again at every router of the source group the
	// packet reaches on its minimal route, until it leaves the group or
	// turns non-minimal (SC'18 §IV: "PAR6/2", reading O3).
	AlgPAR
	// AlgFullyAdaptive: Aquila's Fully Adaptive mode: at each switch of the
	// source pod that routes the cell, two sampled minimal and three sampled
	// non-minimal candidates weighed by the bytes waiting at their first
	// output, the non-minimal ones at twice that plus a cell (readings A40,
	// A20).
	AlgFullyAdaptive
	// AlgMinimalAdaptive: the better of two sampled minimal candidates.
	AlgMinimalAdaptive
	// AlgDeterministic: one of all candidates, by a hash of the addresses.
	AlgDeterministic
	algCount
)

var algNames = [...]string{"minimal", "valiant", "ugal", "par", "fully-adaptive", "minimal-adaptive", "deterministic"}

func (a Algorithm) String() string {
	if int(a) < len(algNames) {
		return algNames[a]
	}
	return fmt.Sprintf("algorithm(%d)", int(a))
}

// ParseAlgorithm reads an algorithm as String writes it; Aquila's mode
// names are accepted too ("minimal-deterministic" is AlgMinimal).
func ParseAlgorithm(s string) (Algorithm, error) {
	for i, n := range algNames {
		if s == n {
			return Algorithm(i), nil
		}
	}
	if m, err := ParseMode(s); err == nil {
		return m.Algorithm(), nil
	}
	return 0, fmt.Errorf("tin: routing algorithm %q: want one of %v, or an Aquila mode", s, algNames)
}

// Algorithm returns the fabric algorithm of an Aquila routing mode.
func (m Mode) Algorithm() Algorithm {
	switch m {
	case FullyAdaptive:
		return AlgFullyAdaptive
	case MinimalAdaptive:
		return AlgMinimalAdaptive
	case Deterministic:
		return AlgDeterministic
	}
	return AlgMinimal
}

func (a Algorithm) aquila() bool { return a >= AlgFullyAdaptive }

// LevelRule says how the VC of a hop is numbered within its class.
type LevelRule uint8

const (
	// LevelGlobals: the number of global links the cell has crossed
	// (Aquila §3.2: the VC steps from a global link to the next link; 3
	// levels).
	LevelGlobals LevelRule = iota
	// LevelHops: the hop's index on the route: every hop a VC higher, the
	// channel dependencies cannot close a cycle (SC'18 §IV's six VCs for
	// the six hops of the longest PAR route, reading O3).
	LevelHops
)

// LinkSpec is one kind of link of a Fabric.
type LinkSpec struct {
	// LatencyNs is the head latency of a hop over the link: from a cell
	// starting on it to its head reaching the next switch's output stage
	// (the channel and the next switch's pipeline). On an ejection link, to
	// the endpoint holding the cell's tail.
	LatencyNs float64
	// BytesPerNs is the data rate. A flit network counts one flit as one
	// byte.
	BytesPerNs float64
}

func (l LinkSpec) check(name string) error {
	if math.IsNaN(l.LatencyNs) || l.LatencyNs < 0 || l.LatencyNs > 1e6 {
		return fmt.Errorf("tin: %s link latency %g ns: want 0..1e6", name, l.LatencyNs)
	}
	if math.IsNaN(l.BytesPerNs) || l.BytesPerNs <= 0 || l.BytesPerNs > 1e6 {
		return fmt.Errorf("tin: %s link rate %g bytes/ns: want 0 < rate <= 1e6", name, l.BytesPerNs)
	}
	return nil
}

// FabricConfig describes a Fabric.
type FabricConfig struct {
	Clique *Clique // pods (groups) of TiNs (routers) and their global links
	// Endpoints per router; endpoint e of router r is r·Endpoints + e,
	// routers numbered pod·TiNs + TiN.
	Endpoints                    int
	Inject, Eject, Local, Global LinkSpec
	// BufferBytes is the depth of one VC's input FIFO at a switch (and of
	// the switch's injection buffer): a link sends a cell only when the
	// next switch has room for it on the cell's VC (credits, Aquila §3.1).
	// 0 is unlimited.
	BufferBytes int
	// Levels is the number of routing VCs per class; VC = class·Levels +
	// level (classes 1 and 2, control cells, have strict priority).
	Levels int
	Rule   LevelRule
	// Threshold is what a non-minimal route must save, in occupancy bytes
	// times hops, to be taken by UGAL and PAR (UGAL-L's T; reading O3).
	Threshold float64
	// NonMinWeight and NonMinBias weigh an Aquila mode's candidates
	// (reading A40): a minimal one costs the bytes waiting at its first
	// output on the VC the cell would leave on, a non-minimal one
	// NonMinWeight times that plus NonMinBias.
	NonMinWeight, NonMinBias float64
	// Switch, when set, makes every router Aquila's input-queued cell
	// switch (§3.1, SwitchSpec); nil: an output-queued router whose cells
	// reach their output queue as they arrive (the SC'18 and BookSim
	// networks).
	Switch *SwitchSpec
	// HashSeed picks the hash function the deterministic modes route by
	// (a switch's is fixed; which one is not in the papers).
	HashSeed uint64
	Seed     uint64
	// HiPriWeight, when set, adds the data class ClassHiPri: where its
	// cells and class 0's both wait for a link, the link sends up to
	// HiPriWeight of its cells for each one of class 0's (§5.1: "The
	// relative egress scheduling priority between H and L classes is
	// 8:1"; reading A30). 0: three classes, as before.
	HiPriWeight int
}

// MaxHiPriWeight bounds FabricConfig.HiPriWeight (a weight of cells per
// turn).
const MaxHiPriWeight = 255

// Classes of cells a Fabric carries: 0 data, 1 and 2 control.
const Classes = 3

// ClassHiPri is the class of a Fabric whose HiPriWeight is set: data cells
// on VCs of their own (Aquila §3.4: "we map roughly half of GNet's virtual
// channels to carry low-latency protocol messages"), served against class
// 0 by weighted round robin (§3.1: "QoS between VCs is implemented in the
// output buffer and supports both weighted round robin and strict
// priority"; reading A30).
const ClassHiPri = 3

// Limits of a Fabric.
const (
	MaxFabricEndpoints = 1 << 20
	MaxLevels          = 8
)

func (cfg *FabricConfig) check() error {
	c := cfg.Clique
	if c == nil {
		return fmt.Errorf("tin: a fabric without a Clique")
	}
	if cfg.Endpoints < 1 || c.Pods*c.TiNs*cfg.Endpoints > MaxFabricEndpoints {
		return fmt.Errorf("tin: %d endpoints per router on %d routers: want 1 or more, at most %d in all", cfg.Endpoints, c.Pods*c.TiNs, MaxFabricEndpoints)
	}
	if c.Pods*c.TiNs*cfg.Endpoints < 2 {
		return fmt.Errorf("tin: a fabric of one endpoint carries nothing")
	}
	for _, l := range []struct {
		name string
		s    LinkSpec
	}{{"injection", cfg.Inject}, {"ejection", cfg.Eject}, {"local", cfg.Local}, {"global", cfg.Global}} {
		if err := l.s.check(l.name); err != nil {
			return err
		}
	}
	if cfg.BufferBytes < 0 {
		return fmt.Errorf("tin: VC buffer of %d bytes: want 0 (unlimited) or more", cfg.BufferBytes)
	}
	if cfg.Levels < 1 || cfg.Levels > MaxLevels {
		return fmt.Errorf("tin: %d VC levels: want 1..%d", cfg.Levels, MaxLevels)
	}
	if cfg.Rule == LevelGlobals && cfg.Levels < 3 || cfg.Rule == LevelHops && cfg.Levels < 6 {
		return fmt.Errorf("tin: %d VC levels cannot number the longest route's hops (3 by global links crossed, 6 by hop)", cfg.Levels)
	}
	if math.IsNaN(cfg.Threshold) || cfg.Threshold < 0 {
		return fmt.Errorf("tin: adaptive threshold %g: want 0 or more", cfg.Threshold)
	}
	if math.IsNaN(cfg.NonMinWeight) || cfg.NonMinWeight < 0 || math.IsNaN(cfg.NonMinBias) || cfg.NonMinBias < 0 {
		return fmt.Errorf("tin: non-minimal weight %g and bias %g: want 0 or more", cfg.NonMinWeight, cfg.NonMinBias)
	}
	if cfg.HiPriWeight < 0 || cfg.HiPriWeight > MaxHiPriWeight {
		return fmt.Errorf("tin: high-priority weight %d: want 0 (no high-priority class) or 1..%d cells per turn", cfg.HiPriWeight, MaxHiPriWeight)
	}
	if cfg.Switch != nil {
		return cfg.Switch.check(cfg.Inject, cfg.Local, cfg.Global)
	}
	return nil
}

// Packet is what a Host sends: Bytes from endpoint Src to endpoint Dst in
// one or more cells, routed by Alg. Classes 1 and 2 (control: Aquila's RTS
// and CTS, each "carried on their own VCs", §3.3) have strict priority over
// class 0 (data) and ClassHiPri on every link and take turns between them.
type Packet struct {
	Src, Dst int32
	Bytes    int32
	Class    uint8
	Alg      Algorithm
	Tag      int64 // the host's
	SentAt   Time  // when Send was called
	// NonMinimal: a cell of the packet left the minimal route.
	NonMinimal bool
	// Hops: fabric links the packet's last cell crossed.
	Hops int
	// FirstAt: when the packet's first cell (in arrival order) fully
	// reached its destination endpoint.
	FirstAt   Time
	cellsLeft int32
}

// Host is the traffic above a Fabric: it is told when a packet's last
// cell has fully reached its destination endpoint, and when a timer set
// with At fires.
type Host interface {
	Delivered(f *Fabric, p *Packet)
	Timer(f *Fabric, tag int64)
}

// FabricStats counts what a run did.
type FabricStats struct {
	Events, Cells, Packets int64
	// DataCells routed adaptively and, of those, NonMinimal ones.
	DataCells, NonMinimal int64
}

type glink struct {
	from, to int32 // routers
	link     int32
}

type flink struct {
	to      int32 // router at the far end; -1 for an ejection link
	from    int32 // router at the near end; -1 for an injection link
	lat     Time
	psPB    float64 // ps per byte
	freeAt  Time    // the current cell's tail leaves the link
	wake    Time    // a pending evFree at this time; 0: none
	queued  int32   // bytes waiting, all VCs
	inUse   int32   // bytes whose credits have not come back
	fifo    int32   // bytes in the next switch's input FIFO (arrived, not forwarded)
	hiRun   int32   // ClassHiPri cells sent in a row while class 0 waited
	rr      uint8   // round-robin among data VCs
	crr     uint8   // and among control VCs
	hrr     uint8   // and among ClassHiPri's VCs
	credits bool    // credit flow control applies
	// occupied has bit v set while VC v's queue holds a cell: tryStart's
	// round robins skip the empty VCs without touching their state.
	occupied uint32
	ret      ring[credit]
}

type credit struct {
	t     Time
	bytes int32
	vc    uint8
}

type vcState struct {
	q       ring[int32]
	credits int32
	bytes   int32 // waiting in q
}

type fcell struct {
	pkt      int32
	bytes    int32
	dstR     int32
	g        [2]int32 // directed global links still to cross, in order; -1 none
	mid      int32    // TiN of the pod still to visit (intra-pod detour); -1 none
	inLink   int32    // link the cell arrived on; -1 none
	outLink  int32    // with a Switch: the link its request is for
	tailArr  Time
	inVC     uint8
	outLevel uint8 // with a Switch: the VC level it leaves on
	hops     uint8 // fabric hops taken
	globals  uint8
	cls      uint8
	decided  bool
	nonMin   bool
	adaptive bool // counted in DataCells
}

const (
	evArrive uint8 = iota
	evFree
	evDone
	evTimer
	evXbar // a crossbar transfer ends (Switch)
)

// Fabric is an event-driven, cell-level simulation of a Dragonfly: pods of
// routers fully connected by local links, pods joined by global links,
// endpoints on every router. Switches cut through (a cell's head goes on
// as soon as it is routed; its tail trails by its slowest link's
// serialization), each output is a set of VC queues served strictly by
// class and round robin within, and a link sends only with credits for
// the next switch's VC FIFO. Routes are computed as cells travel (a route
// is at most two global links and an intra-pod detour), so memory grows
// with the network and the cells in flight, not with the square of the
// routers.
type Fabric struct {
	cfg                   FabricConfig
	P, T, E, R, nEP       int
	nVC                   int
	classes               uint8
	q                     *calQueue
	now                   Time
	links                 []flink
	vcs                   []vcState // [link*nVC + vc]
	gls                   []glink
	between               [][]int32 // [podA*P + podB]: directed global links
	own                   [][]int32 // [router]: the global links leaving it
	localBase, globalBase int
	cells                 []fcell
	cellFree              []int32
	pkts                  []Packet
	pktFree               []int32
	timers                []int64
	timerFree             []int32
	host                  Host
	rng                   *rand.Rand
	stopped               bool
	Stats                 FabricStats
	sampleBuf             []plan
	sw                    *swState // with a Switch
}

// NewFabric builds an idle fabric whose traffic is host's.
func NewFabric(cfg FabricConfig, host Host) (*Fabric, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	c := cfg.Clique
	f := &Fabric{cfg: cfg, P: c.Pods, T: c.TiNs, E: cfg.Endpoints, host: host, q: newCalQueue(),
		rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15))}
	f.R = f.P * f.T
	f.nEP = f.R * f.E
	f.classes = Classes
	if cfg.HiPriWeight > 0 {
		f.classes = ClassHiPri + 1
	}
	f.nVC = int(f.classes) * cfg.Levels
	add := func(from, to int32, s LinkSpec, credits bool) {
		f.links = append(f.links, flink{from: from, to: to, lat: toTime(s.LatencyNs), psPB: 1000 / s.BytesPerNs, credits: credits && cfg.BufferBytes > 0})
	}
	for ep := 0; ep < f.nEP; ep++ {
		add(-1, int32(ep/f.E), cfg.Inject, true)
	}
	for ep := 0; ep < f.nEP; ep++ {
		add(int32(ep/f.E), -1, cfg.Eject, false)
	}
	f.localBase = len(f.links)
	for r := 0; r < f.R; r++ {
		pod := r / f.T
		for t := 0; t < f.T; t++ {
			if s := pod*f.T + t; s != r {
				add(int32(r), int32(s), cfg.Local, true)
			}
		}
	}
	f.globalBase = len(f.links)
	f.between = make([][]int32, f.P*f.P)
	for _, g := range c.Globals {
		for _, d := range [][2]Node{{g.A, g.B}, {g.B, g.A}} {
			from, to := int32(d[0].Pod*f.T+d[0].TiN), int32(d[1].Pod*f.T+d[1].TiN)
			id := int32(len(f.links))
			add(from, to, cfg.Global, true)
			k := d[0].Pod*f.P + d[1].Pod
			f.between[k] = append(f.between[k], int32(len(f.gls)))
			f.gls = append(f.gls, glink{from: from, to: to, link: id})
		}
	}
	// Each router's own global links, by the pod they reach and then in
	// between's order: the order the adaptive modes' samplers draw from
	// (scanning between for them was a twelfth of a full-Clique run).
	f.own = make([][]int32, f.R)
	for r := range f.own {
		ps := r / f.T
		for m := 0; m < f.P; m++ {
			for _, gi := range f.between[ps*f.P+m] {
				if f.gls[gi].from == int32(r) {
					f.own[r] = append(f.own[r], gi)
				}
			}
		}
	}
	f.vcs = make([]vcState, len(f.links)*f.nVC)
	for i := range f.vcs {
		f.vcs[i].credits = int32(cfg.BufferBytes)
	}
	if cfg.Switch != nil {
		f.initSwitch()
	}
	return f, nil
}

// Now is the simulated time.
func (f *Fabric) Now() Time { return f.now }

// Endpoints returns the number of endpoints.
func (f *Fabric) Endpoints() int { return f.nEP }

// RouterOf returns the router of an endpoint.
func (f *Fabric) RouterOf(ep int32) int32 { return ep / int32(f.E) }

// Stop ends Run after the current event.
func (f *Fabric) Stop() { f.stopped = true }

// At sets a timer: the host's Timer is called with tag at time t (not
// before now).
func (f *Fabric) At(t Time, tag int64) {
	var id int32
	if k := len(f.timerFree); k > 0 {
		id = f.timerFree[k-1]
		f.timerFree = f.timerFree[:k-1]
		f.timers[id] = tag
	} else {
		f.timers = append(f.timers, tag)
		id = int32(len(f.timers) - 1)
	}
	f.q.push(event{t: max(t, f.now), id: id, kind: evTimer})
}

// Send injects a packet at its source endpoint now: one cell of p.Bytes,
// or cells of the given sizes, in order, behind what the endpoint already
// queued.
func (f *Fabric) Send(p Packet, cellSizes []int) error {
	if err := f.checkPacket(p, cellSizes); err != nil {
		return err
	}
	p.SentAt, p.NonMinimal, p.FirstAt = f.now, false, -1
	var id int32
	if k := len(f.pktFree); k > 0 {
		id = f.pktFree[k-1]
		f.pktFree = f.pktFree[:k-1]
	} else {
		f.pkts = append(f.pkts, Packet{})
		id = int32(len(f.pkts) - 1)
	}
	n := len(cellSizes)
	if n == 0 {
		n = 1
	}
	p.cellsLeft = int32(n)
	f.pkts[id] = p
	f.Stats.Packets++
	dstR := p.Dst / int32(f.E)
	for i := 0; i < n; i++ {
		b := p.Bytes
		if len(cellSizes) > 0 {
			b = int32(cellSizes[i])
		}
		ci := f.newCell(fcell{pkt: id, bytes: b, dstR: dstR, g: [2]int32{-1, -1}, mid: -1, inLink: -1, tailArr: math.MinInt64, cls: p.Class})
		f.enqueue(ci, p.Src, 0)
	}
	return nil
}

func (f *Fabric) checkPacket(p Packet, cellSizes []int) error {
	if p.Src < 0 || int(p.Src) >= f.nEP || p.Dst < 0 || int(p.Dst) >= f.nEP {
		return fmt.Errorf("tin: packet %d -> %d: endpoints are 0..%d", p.Src, p.Dst, f.nEP-1)
	}
	if p.Alg >= algCount || p.Class >= f.classes || p.Bytes < 1 {
		return fmt.Errorf("tin: packet of %d bytes, class %d, algorithm %d", p.Bytes, p.Class, p.Alg)
	}
	if p.Alg == AlgPAR && f.cfg.Rule != LevelHops {
		// Two local hops in the source group on one VC could close a
		// cycle: PAR needs a VC per hop.
		return fmt.Errorf("tin: PAR routing needs VCs numbered by hop")
	}
	for _, b := range cellSizes {
		if f.cfg.BufferBytes > 0 && b > f.cfg.BufferBytes || b < 1 {
			return fmt.Errorf("tin: a cell of %d bytes: want 1..%d (the VC buffer)", b, f.cfg.BufferBytes)
		}
	}
	if len(cellSizes) == 0 && f.cfg.BufferBytes > 0 && int(p.Bytes) > f.cfg.BufferBytes {
		return fmt.Errorf("tin: a packet of %d bytes in one cell does not fit the %d-byte VC buffer", p.Bytes, f.cfg.BufferBytes)
	}
	return nil
}

func (f *Fabric) newCell(c fcell) int32 {
	f.Stats.Cells++
	if k := len(f.cellFree); k > 0 {
		i := f.cellFree[k-1]
		f.cellFree = f.cellFree[:k-1]
		f.cells[i] = c
		return i
	}
	f.cells = append(f.cells, c)
	return int32(len(f.cells) - 1)
}

// Run processes events until Stop is called or none is left.
func (f *Fabric) Run() {
	f.stopped = false
	for !f.stopped {
		e, ok := f.q.pop()
		if !ok {
			return
		}
		f.now = e.t
		f.Stats.Events++
		switch e.kind {
		case evArrive:
			if f.sw != nil {
				f.swArrive(e.id)
			} else {
				f.arrive(e.id)
			}
		case evXbar:
			f.swXbarDone(e.id)
		case evFree:
			l := &f.links[e.id]
			if l.wake == e.t {
				l.wake = 0
			}
			f.tryStart(e.id)
		case evDone:
			f.done(e.id)
		case evTimer:
			tag := f.timers[e.id]
			f.timerFree = append(f.timerFree, e.id)
			f.host.Timer(f, tag)
		}
	}
}

// enqueue puts a cell in a VC queue of link l.
func (f *Fabric) enqueue(ci int32, l int32, level int) {
	c := &f.cells[ci]
	vc := int(c.cls)*f.cfg.Levels + level
	v := &f.vcs[int(l)*f.nVC+vc]
	v.q.push(ci)
	v.bytes += c.bytes
	L := &f.links[l]
	L.queued += c.bytes
	L.occupied |= 1 << vc
	f.tryStart(l)
}

func (f *Fabric) wakeAt(l int32, t Time) {
	L := &f.links[l]
	if L.wake != 0 && L.wake <= t {
		return
	}
	L.wake = t
	f.q.push(event{t: t, id: l, kind: evFree})
}

// drain takes in the credits of link l that have come back by now.
func (f *Fabric) drain(l int32) {
	L := &f.links[l]
	for L.ret.len() > 0 && L.ret.peek().t <= f.now {
		cr := L.ret.pop()
		f.vcs[int(l)*f.nVC+int(cr.vc)].credits += cr.bytes
		L.inUse -= cr.bytes
	}
}

// occupancy is what an adaptive decision weighs for output l: the bytes
// waiting for it in this switch and those it delivered to the next
// switch's input FIFO that have not moved on — the buffer levels of the
// two switches (SC'18 §IV; Aquila §3.2's "output queue lengths", which
// credits make reflect the next switch's congestion). Cells on the wire
// and credits on their way back do not count: with SC'18's 500 ns global
// channels they would make every global link look congested (reading O3).
func (f *Fabric) occupancy(l int32) float64 {
	L := &f.links[l]
	return float64(L.queued + L.fifo)
}

// tryStart sends the next cell on link l if the link is free and a VC has
// a cell with credits for it.
func (f *Fabric) tryStart(l int32) {
	L := &f.links[l]
	if f.sw != nil && f.sw.ports[l].relBytes > 0 {
		// The cell on the link holds its output-buffer space until its
		// tail is out.
		if L.freeAt <= f.now {
			f.swRelease(l)
			defer f.swOutput(l)
		} else {
			f.wakeAt(l, L.freeAt)
		}
	}
	if L.queued == 0 {
		return
	}
	if L.freeAt > f.now {
		f.wakeAt(l, L.freeAt)
		return
	}
	if f.sw != nil && f.sw.clock > 0 {
		// A clocked switch's output starts a cell on an edge (reading A28).
		if e := f.sw.edge(L.from, f.now); e > f.now {
			f.wakeAt(l, e)
			return
		}
	}
	if L.credits {
		f.drain(l)
	}
	base := int(l) * f.nVC
	lv := f.cfg.Levels
	pick := -1
	// Round robins over the VCs whose queue holds a cell (occupied), in
	// the order of their turns (rotated).
	nc, crr, rr := (Classes-1)*lv, int(L.crr), int(L.rr)
	for m := rotated(L.occupied>>lv, crr, nc); m != 0; m &= m - 1 { // control cells first
		v := crr + bits.TrailingZeros32(m)
		if v >= nc {
			v -= nc
		}
		if f.sendable(L, base+lv+v) {
			pick = lv + v
			L.crr = uint8((v + 1) % nc)
			break
		}
	}
	if pick < 0 && f.classes > Classes {
		pick = f.pickHiPri(L, base)
	}
	for m := rotated(L.occupied, rr, lv); m != 0 && pick < 0; m &= m - 1 {
		v := rr + bits.TrailingZeros32(m)
		if v >= lv {
			v -= lv
		}
		if f.sendable(L, base+v) {
			pick = v
			L.rr = uint8((v + 1) % lv)
		}
	}
	if pick < 0 {
		// Blocked on credits: wake when the next one comes back (one is
		// always on its way, or will be when the next switch forwards a
		// cell it holds for this link).
		if L.ret.len() > 0 {
			f.wakeAt(l, L.ret.peek().t)
		}
		return
	}
	s := &f.vcs[base+pick]
	ci := s.q.pop()
	if s.q.len() == 0 {
		L.occupied &^= 1 << pick
	}
	c := &f.cells[ci]
	s.bytes -= c.bytes
	L.queued -= c.bytes
	if L.credits {
		s.credits -= c.bytes
		L.inUse += c.bytes
	}
	if c.inLink >= 0 && f.sw == nil {
		// The cell leaves the FIFO it waited in: its credit goes back.
		in := &f.links[c.inLink]
		in.fifo -= c.bytes
		if in.credits {
			t := f.now + in.lat
			in.ret.push(credit{t: t, bytes: c.bytes, vc: c.inVC})
			if in.queued > 0 && in.freeAt <= f.now {
				f.wakeAt(c.inLink, t)
			}
		}
	}
	tail := max(f.now+Time(float64(c.bytes)*L.psPB+0.5), c.tailArr)
	L.freeAt = tail
	if f.sw != nil && int(l) >= f.nEP {
		// A switch output: the cell's buffer space is free when its tail
		// is out.
		f.sw.ports[l].relBytes, f.sw.ports[l].relVC = c.bytes, uint8(pick)
		f.wakeAt(l, tail)
	}
	if L.to < 0 {
		f.q.push(event{t: tail + L.lat, id: ci, kind: evDone})
	} else {
		c.tailArr = tail + L.lat
		c.inLink, c.inVC = l, uint8(pick)
		at := f.now + L.lat
		if f.sw != nil {
			// A clocked switch takes the head's request on an edge.
			at = f.sw.edge(L.to, at)
		}
		f.q.push(event{t: at, id: ci, kind: evArrive})
	}
	if L.queued > 0 {
		f.wakeAt(l, tail)
	}
}

// sendable says whether the head cell of VC queue v (of link L, the
// queue not empty) may go: it has the credits for its bytes.
func (f *Fabric) sendable(L *flink, v int) bool {
	s := &f.vcs[v]
	return !L.credits || f.cells[s.q.peek()].bytes <= s.credits
}

// pickHiPri is the weighted round robin between ClassHiPri and class 0 on
// link L (VCs from base): a ClassHiPri VC that may send goes, round robin
// among its levels, unless HiPriWeight of its cells went in a row while a
// class-0 cell could have: then class 0 has its turn (-1: the caller's
// round robin over class 0). A class that cannot send gives its turn away
// (work conserving).
func (f *Fabric) pickHiPri(L *flink, base int) int {
	lv := f.cfg.Levels
	ready := func(v int) bool { return L.occupied&(1<<v) != 0 && f.sendable(L, base+v) }
	lo := false
	for v := 0; v < lv && !lo; v++ {
		lo = ready(v)
	}
	if lo && L.hiRun >= int32(f.cfg.HiPriWeight) {
		L.hiRun = 0
		return -1
	}
	for k := 0; k < lv; k++ {
		v := ClassHiPri*lv + (int(L.hrr)+k)%lv
		if ready(v) {
			L.hrr = uint8((v - ClassHiPri*lv + 1) % lv)
			if lo {
				L.hiRun++
			}
			return v
		}
	}
	L.hiRun = 0
	return -1
}

func (f *Fabric) done(ci int32) {
	c := &f.cells[ci]
	p := &f.pkts[c.pkt]
	if c.nonMin {
		p.NonMinimal = true
	}
	p.Hops = int(c.hops)
	if p.FirstAt < 0 {
		p.FirstAt = f.now
	}
	f.cellFree = append(f.cellFree, ci)
	p.cellsLeft--
	if p.cellsLeft > 0 {
		return
	}
	// The host gets a copy: the slot is free again for what it sends.
	pk := *p
	f.pktFree = append(f.pktFree, c.pkt)
	f.host.Delivered(f, &pk)
}

// arrive routes a cell whose head reached router r (the far end of the
// link it came on) to its next link.
func (f *Fabric) arrive(ci int32) {
	c := &f.cells[ci]
	in := &f.links[c.inLink]
	in.fifo += c.bytes
	r := in.to
	if !c.decided {
		f.decide(c, r)
	}
	l, fabricHop := f.next(c, r)
	f.enqueue(ci, l, f.level(c, l, fabricHop))
}

// level returns the VC level a cell takes onto link l, and counts the hop.
func (f *Fabric) level(c *fcell, l int32, fabricHop bool) int {
	if !fabricHop {
		return 0
	}
	level := int(c.globals)
	if f.cfg.Rule == LevelHops {
		level = int(c.hops)
	}
	if level >= f.cfg.Levels {
		panic(fmt.Sprintf("tin: a route longer than the fabric's %d VC levels", f.cfg.Levels))
	}
	c.hops++
	if int(l) >= f.globalBase {
		c.globals++
	}
	return level
}

// next returns the link a cell at router r takes, and whether it is a
// fabric link (not the ejection link). It consumes the route's waypoints.
func (f *Fabric) next(c *fcell, r int32) (int32, bool) {
	if c.mid >= 0 {
		if r != c.mid {
			return f.local(r, c.mid), true
		}
		c.mid = -1
	}
	if c.g[0] >= 0 {
		g := &f.gls[c.g[0]]
		if g.from == r {
			c.g[0], c.g[1] = c.g[1], -1
			return g.link, true
		}
		return f.local(r, g.from), true
	}
	if r == c.dstR {
		return int32(f.nEP) + f.pkts[c.pkt].Dst, false
	}
	return f.local(r, c.dstR), true
}

// local returns the local link from router r to router s of its pod.
func (f *Fabric) local(r, s int32) int32 {
	T := int32(f.T)
	rt, st := r%T, s%T
	if st > rt {
		st--
	}
	return int32(f.localBase) + r*(T-1) + st
}

// plan is a route still to travel: an intra-pod detour TiN, or up to two
// global links (the second through an intermediate pod).
type plan struct {
	mid int32
	g   [2]int32
}

var minimalPlan = plan{mid: -1, g: [2]int32{-1, -1}}

// firstLink returns the link plan p starts with from router r, and its
// hops from r to router d.
func (f *Fabric) firstLink(p plan, r, d int32) (int32, int) {
	if p.mid >= 0 {
		return f.local(r, p.mid), 2
	}
	first, hops, cur := int32(-1), 0, r
	for _, gi := range p.g {
		if gi < 0 {
			break
		}
		g := &f.gls[gi]
		if g.from != cur {
			if first < 0 {
				first = f.local(cur, g.from)
			}
			hops++
		}
		if first < 0 {
			first = g.link
		}
		hops++
		cur = g.to
	}
	if cur != d {
		if first < 0 {
			first = f.local(cur, d)
		}
		hops++
	}
	return first, hops
}

func (f *Fabric) cost(p plan, r, d int32) float64 {
	l, h := f.firstLink(p, r, d)
	return f.occupancy(l) * float64(h)
}

func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// routeHash is the hash of a source and destination router that the
// deterministic modes route by: fixed, as a switch's hash function is.
func (f *Fabric) routeHash(s, d int32) uint64 {
	return mix(uint64(uint32(s))<<32 | uint64(uint32(d)) ^ f.cfg.HashSeed)
}

// minimalFor returns the hashed minimal plan from router s to router d.
func (f *Fabric) minimalFor(s, d int32) plan {
	ps, pd := int(s)/f.T, int(d)/f.T
	p := minimalPlan
	if ps != pd {
		b := f.between[ps*f.P+pd]
		p.g[0] = b[f.routeHash(s, d)%uint64(len(b))]
	}
	return p
}

// valiant returns a route through a random intermediate pod, from pod ps
// to pod pd (which differ; the fabric has a third pod).
func (f *Fabric) valiant(ps, pd int) plan {
	m := f.rng.IntN(f.P - 2)
	if m >= min(ps, pd) {
		m++
	}
	if m >= max(ps, pd) {
		m++
	}
	b1, b2 := f.between[ps*f.P+m], f.between[m*f.P+pd]
	p := minimalPlan
	p.g[0] = b1[f.rng.IntN(len(b1))]
	p.g[1] = b2[f.rng.IntN(len(b2))]
	return p
}

// decide makes the packet's routing choice at router r.
func (f *Fabric) decide(c *fcell, r int32) {
	alg := f.pkts[c.pkt].Alg
	d := c.dstR
	ps, pd := int(r)/f.T, int(d)/f.T
	if (c.cls == 0 || c.cls == ClassHiPri) && !c.adaptive && alg != AlgMinimal {
		c.adaptive = true
		f.Stats.DataCells++
	}
	c.decided = true
	var p plan
	switch {
	case alg == AlgMinimal || r == d:
		p = f.minimalFor(r, d)
	case alg.aquila():
		p = f.aquila(alg, c, r, d)
	case ps == pd || f.P < 3:
		p = f.minimalFor(r, d)
	case alg == AlgValiant:
		p = f.valiant(ps, pd)
	default: // UGAL, PAR
		mp := f.minimalFor(r, d)
		if c.hops > 0 {
			mp.g[0] = c.g[0] // keep the global link the packet was heading for
		}
		vp := f.valiant(ps, pd)
		if f.cost(vp, r, d)+f.cfg.Threshold < f.cost(mp, r, d) {
			p = vp
		} else {
			p = mp
			if alg == AlgPAR && f.gls[mp.g[0]].from != r {
				c.decided = false // look again at the next router of the group
			}
		}
	}
	if p.mid >= 0 || p.g[1] >= 0 {
		if !c.nonMin {
			f.Stats.NonMinimal++
		}
		c.nonMin = true
	}
	c.mid, c.g = p.mid, p.g
}

// aquila makes an Aquila mode's choice at switch r (§3.2, readings A40
// and A20). At the source TiN: two sampled minimal candidates and three
// sampled non-minimal ones (an intra-pod detour allowed by the turn rule,
// or a route through an intermediate pod). At a later switch of the
// source pod (the one owning the minimal global link the cell came for):
// that link, or a route through an intermediate pod starting on one of
// the switch's own global links, so that a route never takes two local
// hops in its source pod. Each candidate costs the bytes waiting at its
// first output on the VC the cell would leave on; a non-minimal one
// NonMinWeight times that plus NonMinBias; the cheapest wins, a minimal
// one on a tie. Until the cell leaves its pod on a minimal route, the next
// switch chooses again.
func (f *Fabric) aquila(alg Algorithm, c *fcell, r, d int32) plan {
	ps, pd := int(r)/f.T, int(d)/f.T
	if alg == AlgDeterministic {
		return f.hashedCandidate(r, d)
	}
	vc := int(c.cls)*f.cfg.Levels + int(c.globals)
	occ := func(p plan) float64 {
		l, _ := f.firstLink(p, r, d)
		if f.sw != nil {
			// §3.2's "per-VC output queue lengths": the output buffer.
			return float64(f.sw.held[int(l)*f.nVC+vc])
		}
		return float64(f.vcs[int(l)*f.nVC+vc].bytes)
	}
	best, bestCost := minimalPlan, math.Inf(1)
	switch {
	case ps == pd:
		best, bestCost = minimalPlan, occ(minimalPlan)
	case c.hops > 0:
		// The switch owning the link the cell came for.
		best.g[0] = c.g[0]
		bestCost = occ(best)
	default:
		mins := f.between[ps*f.P+pd]
		k := min(len(mins), MinimalSample)
		first := f.rng.IntN(len(mins))
		for j := 0; j < k; j++ {
			// Two distinct entries: a random one and, where there are
			// more, another random one.
			i := first
			if j == 1 {
				i = (first + 1 + f.rng.IntN(len(mins)-1)) % len(mins)
			}
			p := minimalPlan
			p.g[0] = mins[i]
			if cst := occ(p); cst < bestCost {
				best, bestCost = p, cst
			}
		}
	}
	if alg == AlgFullyAdaptive && !(c.hops > 0 && ps == pd) {
		var cands []plan
		if c.hops > 0 {
			cands = f.ownDetours(r, pd)
		} else {
			cands = f.nonMinimalSample(r, d)
		}
		for _, p := range cands {
			if cst := f.cfg.NonMinWeight*occ(p) + f.cfg.NonMinBias; cst < bestCost {
				best, bestCost = p, cst
			}
		}
	}
	if ps != pd && best.g[1] < 0 && f.gls[best.g[0]].from != r && alg != AlgDeterministic {
		c.decided = false // the next switch of the pod chooses again
	}
	return best
}

// ownDetours samples up to NonMinimalSample routes from switch r to pod pd
// through an intermediate pod, each leaving on one of r's own global
// links.
func (f *Fabric) ownDetours(r int32, pd int) []plan {
	out := f.sampleBuf[:0]
	ps := int(r) / f.T
	var own [GlobalPortsPerTiN * 4]int32
	n := 0
	for _, gi := range f.own[r] {
		if m := int(f.gls[gi].to) / f.T; m != ps && m != pd && n < len(own) {
			own[n] = gi
			n++
		}
	}
	for j := 0; j < min(n, NonMinimalSample); j++ {
		k := j + f.rng.IntN(n-j)
		own[j], own[k] = own[k], own[j]
		m := int(f.gls[own[j]].to) / f.T
		b2 := f.between[m*f.P+pd]
		p := minimalPlan
		p.g[0], p.g[1] = own[j], b2[f.rng.IntN(len(b2))]
		out = append(out, p)
	}
	f.sampleBuf = out
	return out
}

// nonMinimalSample draws up to NonMinimalSample distinct non-minimal
// candidates from s to d: an intra-pod detour allowed by the turn rule, or
// a route through an intermediate pod (§3.2).
func (f *Fabric) nonMinimalSample(s, d int32) []plan {
	out := f.sampleBuf[:0]
	T := int32(f.T)
	ps, pd := int(s)/f.T, int(d)/f.T
	if ps == pd {
		st, dt := int(s%T), int(d%T)
		var mids [MaxTiNs]int32
		n := 0
		for i := 0; i < f.T; i++ {
			if i != st && i != dt && ParitySign(st, i, dt) {
				mids[n] = int32(ps*f.T + i)
				n++
			}
		}
		var cand [MaxTiNs + GlobalPortsPerTiN*4]plan
		k := 0
		for _, i := range mids[:n] {
			cand[k] = minimalPlan
			cand[k].mid = i
			k++
		}
		// The detours through another pod leave on one of s's own global
		// links and come back on a link of that pod drawn at random
		// (reading A25).
		for _, gi := range f.own[s] {
			if int(f.gls[gi].to)/f.T == ps || k == len(cand) {
				continue
			}
			if g := f.backVia(gi, s); g[0] >= 0 {
				cand[k] = minimalPlan
				cand[k].g = g
				k++
			}
		}
		for j := 0; j < min(k, NonMinimalSample); j++ {
			x := j + f.rng.IntN(k-j)
			cand[j], cand[x] = cand[x], cand[j]
			out = append(out, cand[j])
		}
		f.sampleBuf = out
		return out
	}
	if f.P < 3 {
		return out
	}
	for tries := 0; len(out) < NonMinimalSample && tries < 4*NonMinimalSample; tries++ {
		p := f.valiant(ps, pd)
		dup := false
		for _, q := range out {
			dup = dup || q == p
		}
		if !dup {
			out = append(out, p)
		}
	}
	f.sampleBuf = out
	return out
}

// backVia returns the route through another pod that leaves s on global
// link gi and comes back to s's pod on a link drawn at random that does not
// land on s; -1s if there is none.
func (f *Fabric) backVia(gi, s int32) [2]int32 {
	ps, m := int(s)/f.T, int(f.gls[gi].to)/f.T
	b := f.between[m*f.P+ps]
	n := 0
	for _, x := range b {
		if f.gls[x].to != s {
			n++
		}
	}
	if n == 0 {
		return [2]int32{-1, -1}
	}
	k := f.rng.IntN(n)
	for _, x := range b {
		if f.gls[x].to != s {
			if k == 0 {
				return [2]int32{gi, x}
			}
			k--
		}
	}
	panic("unreachable")
}

// hashedCandidate is Aquila's Deterministic mode: one of every minimal and
// non-minimal candidate, by a hash of the addresses.
func (f *Fabric) hashedCandidate(s, d int32) plan {
	ps, pd := int(s)/f.T, int(d)/f.T
	T := int32(f.T)
	h := f.routeHash(s, d)
	if ps == pd {
		st, dt := int(s%T), int(d%T)
		var mids []int32
		for i := 0; i < f.T; i++ {
			if i != st && i != dt && ParitySign(st, i, dt) {
				mids = append(mids, int32(ps*f.T+i))
			}
		}
		cands := []plan{minimalPlan}
		for _, i := range mids {
			p := minimalPlan
			p.mid = i
			cands = append(cands, p)
		}
		for m := 0; m < f.P; m++ {
			for _, gi := range f.between[ps*f.P+m] {
				if m == ps || f.gls[gi].from != s {
					continue
				}
				for _, b := range f.between[m*f.P+ps] {
					if f.gls[b].to != s {
						p := minimalPlan
						p.g = [2]int32{gi, b}
						cands = append(cands, p)
					}
				}
			}
		}
		return cands[h%uint64(len(cands))]
	}
	mins := f.between[ps*f.P+pd]
	total := uint64(len(mins))
	for m := 0; m < f.P; m++ {
		if m != ps && m != pd {
			total += uint64(len(f.between[ps*f.P+m]) * len(f.between[m*f.P+pd]))
		}
	}
	k := h % total
	p := minimalPlan
	if k < uint64(len(mins)) {
		p.g[0] = mins[k]
		return p
	}
	k -= uint64(len(mins))
	for m := 0; m < f.P; m++ {
		if m == ps || m == pd {
			continue
		}
		b1, b2 := f.between[ps*f.P+m], f.between[m*f.P+pd]
		n := uint64(len(b1) * len(b2))
		if k < n {
			p.g[0], p.g[1] = b1[k/uint64(len(b2))], b2[k%uint64(len(b2))]
			return p
		}
		k -= n
	}
	panic("tin: hashed candidate out of range")
}

// MinimalLatencyNs is the unloaded head latency from endpoint s to
// endpoint d over the hashed minimal route: the injection link, every
// fabric hop and the ejection link, without serialization (a packet of B
// bytes arrives whole B/rate later on links of one rate).
func (f *Fabric) MinimalLatencyNs(s, d int32) float64 {
	lat := f.links[s].lat
	r, dr := f.RouterOf(s), f.RouterOf(d)
	c := fcell{dstR: dr, mid: -1}
	c.g = f.minimalFor(r, dr).g
	for r != dr {
		var l int32
		if c.g[0] >= 0 {
			g := &f.gls[c.g[0]]
			if g.from == r {
				l = g.link
				c.g[0] = -1
			} else {
				l = f.local(r, g.from)
			}
		} else {
			l = f.local(r, dr)
		}
		lat += f.links[l].lat
		r = f.links[l].to
	}
	lat += f.links[int32(f.nEP)+d].lat
	return float64(lat) / float64(Ns)
}
