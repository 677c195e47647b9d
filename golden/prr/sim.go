package prr

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
)

// Alg names a switch in the comparisons of FPGA'20 §5.1.
type Alg string

// The switches of FPGA'20 §5.1. A name without suffix is the scheduler with
// log2(P) iterations, "-1" its single-iteration version, as in Fig. 7.
const (
	PRR    Alg = "prr"     // the proposal: combined parallel round-robin arbiter and output FIFO groups (§3, §4.4)
	FIFO   Alg = "fifo"    // input-queued, one FIFO per input, head-of-line blocking (§2.1)
	PIM    Alg = "pim"     // parallel iterative matching, Anderson et al. [2]
	PIM1   Alg = "pim-1"   //
	RRM    Alg = "rrm"     // round-robin matching, McKeown [21]
	RRM1   Alg = "rrm-1"   //
	ISLIP  Alg = "islip"   // iSLIP, McKeown [21]
	ISLIP1 Alg = "islip-1" //
	DRRM   Alg = "drrm"    // dual round-robin matching, Chao [7], Li et al. [18]
	DRRM1  Alg = "drrm-1"  //
	EDRRM  Alg = "edrrm"   // DRRM with exhaustive service, Li et al. [19]
	EDRRM1 Alg = "edrrm-1" //
)

// Algs lists every switch the model simulates.
var Algs = []Alg{PRR, FIFO, PIM, PIM1, RRM, RRM1, ISLIP, ISLIP1, DRRM, DRRM1, EDRRM, EDRRM1}

type schedKind uint8

const (
	kPRR schedKind = iota
	kFIFO
	kPIM
	kRRM
	kISLIP
	kDRRM
	kEDRRM
)

// kindOf returns an algorithm's scheduler and whether it is the
// single-iteration version.
func kindOf(a Alg) (schedKind, bool, error) {
	switch a {
	case PRR:
		return kPRR, false, nil
	case FIFO:
		return kFIFO, false, nil
	case PIM, PIM1:
		return kPIM, a == PIM1, nil
	case RRM, RRM1:
		return kRRM, a == RRM1, nil
	case ISLIP, ISLIP1:
		return kISLIP, a == ISLIP1, nil
	case DRRM, DRRM1:
		return kDRRM, a == DRRM1, nil
	case EDRRM, EDRRM1:
		return kEDRRM, a == EDRRM1, nil
	}
	return 0, false, fmt.Errorf("algorithm %q: want one of %v", a, Algs)
}

// MaxVOQPorts bounds the VOQ schedulers: request and grant matrices are rows
// of 64-bit masks.
const MaxVOQPorts = 64

// MaxCycles bounds a run: arrival times are 32-bit cycle numbers.
const MaxCycles = 1 << 30

// SimConfig describes one simulation run (FPGA'20 §5.1).
type SimConfig struct {
	P       int
	Alg     Alg
	Traffic Traffic
	Load    float64 // input rate r, packets per input per cycle, 0..1
	// Depth is the depth of each of the P×P queues (VOQs, or the proposal's
	// output queues); 0 is unbounded. The FIFO switch has P queues, one per
	// input: each gets P·Depth, the same total buffer (§5.1 measures buffer
	// as the depth of P×P queues).
	Depth    int
	Cycles   int
	Seed     uint64
	BurstLen float64 // bursty: mean burst size s; 0 means DefaultBurstLen
	HotProb  float64 // nonuniform: p, 0 < p ≤ 1; 0 means DefaultHotProb
	// Drain: after Cycles the switch goes on serving with no arrivals
	// until a cycle serves nothing (its queues are empty, or every output
	// arbiter of the proposal waits at an empty queue, §4.4), as the
	// hardware's traffic generator drains a run (reading P41). Packets
	// delivered then count in SimResult.DrainMax and Drained only: the
	// figures of the run's cycles (Delivered, AvgLatency, LatencyMax,
	// Throughput) stay those of §5.1's runs.
	Drain bool
}

func (c *SimConfig) normalize() error {
	if err := checkPorts(c.P); err != nil {
		return err
	}
	kind, _, err := kindOf(c.Alg)
	if err != nil {
		return err
	}
	if kind >= kPIM && c.P > MaxVOQPorts {
		return fmt.Errorf("algorithm %s: %d ports: the VOQ schedulers are simulated up to %d ports", c.Alg, c.P, MaxVOQPorts)
	}
	if !(c.Load >= 0 && c.Load <= 1) {
		return fmt.Errorf("load %g: want an input rate from 0 to 1 packet per input per cycle", c.Load)
	}
	if c.Depth < 0 {
		return fmt.Errorf("queue depth %d: want 0 (unbounded) or more", c.Depth)
	}
	if c.Cycles < 1 || c.Cycles > MaxCycles {
		return fmt.Errorf("cycles %d: want 1..%d", c.Cycles, MaxCycles)
	}
	if c.BurstLen == 0 {
		c.BurstLen = DefaultBurstLen
	}
	if c.HotProb == 0 {
		c.HotProb = DefaultHotProb
	}
	if !(c.HotProb > 0 && c.HotProb <= 1) {
		return fmt.Errorf("nonuniform p %g: want a probability above 0 and at most 1 (0 selects the paper's %g)", c.HotProb, DefaultHotProb)
	}
	return nil
}

// SimResult is what one run measured.
type SimResult struct {
	Config     SimConfig
	Offered    int64 // packets generated
	Dropped    int64 // packets refused by a full queue
	Delivered  int64 // packets that left the switch
	LatencySum int64 // over delivered packets, cycles
	LatencyMax int64 // worst delivered packet, cycles
	// MaxOccupancy is the largest fill any one queue reached (right after
	// the cycle's arrivals). With unbounded queues it is the smallest depth
	// at which the same run drops nothing (see ZeroDropDepth).
	MaxOccupancy int
	// With SimConfig.Drain: Drained counts the packets delivered after the
	// run's cycles, Stranded those still queued when the drain stopped,
	// and DrainMax is the worst latency of every delivered packet, drained
	// ones included (a traffic generator's TG_WAIT_MAX + 1). All 0
	// without Drain.
	Drained  int64
	Stranded int64
	DrainMax int64
	// DrainedLatencySum is the latency sum of the Drained packets (reading
	// P42): with LatencySum it is the hardware's TG_WAIT_SUM + TG_DELIVERED.
	DrainedLatencySum int64
}

// AvgLatency is the mean time a delivered packet spent queued, in cycles. A
// packet that arrives in cycle t and leaves in the next has latency 1: one
// cycle is the least a packet stays in the queues (FPGA'20 §4.2), and the
// paper's simulations add no processing latency (§5.1).
func (r SimResult) AvgLatency() float64 {
	if r.Delivered == 0 {
		return 0
	}
	return float64(r.LatencySum) / float64(r.Delivered)
}

// DrainedAvgLatency is the mean latency of every packet delivered, those
// the drain delivered after the run's cycles included: what a traffic
// generator that drains and counts them reads (TG_WAIT_SUM / TG_DELIVERED
// + 1; reading P42). Without SimConfig.Drain it is AvgLatency.
func (r SimResult) DrainedAvgLatency() float64 {
	n := r.Delivered + r.Drained
	if n == 0 {
		return 0
	}
	return float64(r.LatencySum+r.DrainedLatencySum) / float64(n)
}

// Throughput is the delivered packets per output per cycle.
func (r SimResult) Throughput() float64 {
	return float64(r.Delivered) / float64(r.Config.P) / float64(r.Config.Cycles)
}

// DropRate is the fraction of offered packets that were dropped.
func (r SimResult) DropRate() float64 {
	if r.Offered == 0 {
		return 0
	}
	return float64(r.Dropped) / float64(r.Offered)
}

// ZeroDropDepth is, for a run with unbounded queues, the smallest depth
// (SimConfig.Depth) with which the same run drops nothing: a run with depth
// D follows the unbounded run exactly until some queue would exceed D, so it
// drops nothing if and only if MaxOccupancy ≤ D (FIFO switch: ≤ P·D).
func (r SimResult) ZeroDropDepth() int {
	if r.Config.Alg == FIFO {
		return ceilDiv(r.MaxOccupancy, r.Config.P)
	}
	return r.MaxOccupancy
}

// GroupDrain is P·D, the longest latency a packet of the proposal with
// P×P queues of depth D can have while its group has never overflowed
// (reading P41): the arbiters of §3.2 fill a group's P queues round robin
// and its output arbiter (§4.4) reads them in the same order, so until a
// drop the group is one FIFO of at most P·D packets that sends one a
// cycle, and a packet with k packets ahead of it leaves k+1 cycles after
// it arrived. The packet admitted just before a group's first overflow has
// P·D − 1 ahead of it: every run that drops has a packet of latency P·D
// exactly, and more only after an output arbiter stalled on a queue a drop
// left short (§4.4). 0 for unbounded queues (depth 0).
func GroupDrain(p, depth int) int {
	return p * depth
}

// ring is a FIFO of arrival times (or packed time and destination) in a
// power-of-two circular buffer that grows by doubling: no allocation per
// packet. A ring always has room for one more packet: newRings gives each
// one a buffer, and whatever fills it grows it. The arrival loops write
// with offer, which calls nothing, and grow the rings it filled after the
// loop: a call inside the loop made the compiler save and reload the
// loop's registers around every packet. Each ring takes at most one packet
// a cycle (a VOQ or a FIFO from its one input; the proposal's arrivals for
// a port go to as many different queues of its group), so the room for one
// is enough for a whole cycle.
type ring[T int32 | int64] struct {
	buf  []T
	head int
	n    int
}

// ringMin is a ring's first capacity.
const ringMin = 4

// newRings returns n empty rings with room for ringMin packets each, cut
// from one allocation.
func newRings[T int32 | int64](n int) []ring[T] {
	rs := make([]ring[T], n)
	back := make([]T, n*ringMin)
	for k := range rs {
		rs[k].buf = back[k*ringMin : (k+1)*ringMin : (k+1)*ringMin]
	}
	return rs
}

// offer writes v past the ring's tail, where the ring has room, and keeps
// it if the ring holds fewer than limit packets. It returns how many
// packets the ring then holds, whether it kept v, and whether the ring is
// now full: then it must grow before the next offer. A packet it does not
// keep takes no branch to drop: its slot just stays free (a drop at a
// shallow depth goes either way at random, and mispredicted).
func (r *ring[T]) offer(v T, limit int) (n int, kept, full bool) {
	buf, n := r.buf, r.n
	buf[(r.head+n)&(len(buf)-1)] = v
	kept = n < limit
	n += b2i(kept)
	r.n = n
	return n, kept, n == len(buf)
}

func (r *ring[T]) push(v T) {
	if _, _, full := r.offer(v, math.MaxInt); full {
		r.grow()
	}
}

func (r *ring[T]) pop() T {
	v := r.buf[r.head]
	r.head = (r.head + 1) & (len(r.buf) - 1)
	r.n--
	return v
}

func (r *ring[T]) grow() {
	c := max(ringMin, 2*len(r.buf))
	nb := make([]T, c)
	for k := range r.n {
		nb[k] = r.buf[(r.head+k)&(len(r.buf)-1)]
	}
	r.buf, r.head = nb, 0
}

// growFilled grows the rings an arrival loop filled, outside the loop,
// where the call costs the loop nothing. The three arrival loops
// (prrArrive, fifoArrive, voqArrive) write out their offer, its tally and
// this ending each: a generic helper for the offer, though inlined, made
// them 15-30 % slower (BenchmarkSimulate), and one for the ending, called
// through its dictionary every cycle, 2-5 %.
func growFilled[T int32 | int64](s *sim, rs []ring[T]) {
	for _, k := range s.filled[:s.nfilled] {
		rs[k].grow()
	}
	s.nfilled = 0
}

// voqPorts is the VOQ schedulers' per-port state. Its rows are arrays of
// MaxVOQPorts: a port number masked with voqMask, an AND, indexes them
// where a slice of P would take a bounds check per access in the
// schedulers' loops over request and grant masks.
type voqPorts struct {
	inM     [MaxVOQPorts]uint64 // bit j of row i: VOQ(i,j) non-empty
	outM    [MaxVOQPorts]uint64 // bit i of row j: VOQ(i,j) non-empty
	g       [MaxVOQPorts]int    // per output: grant pointer
	a       [MaxVOQPorts]int    // per input: accept (RRM, iSLIP) or request (DRRM, EDRRM) pointer
	grant   [MaxVOQPorts]uint64 // per input: outputs that granted it
	req     [MaxVOQPorts]uint64 // per output: inputs that requested it
	reqTo   [MaxVOQPorts]int    // EDRRM: output each input requested in the first iteration
	matched [MaxVOQPorts]int    // the cycle's matches (input<<8 | output), which sim.match holds
}

// bit is the mask of port k of a VOQ switch (k < MaxVOQPorts). The AND
// spares the compiler's code for shifts of 64 and more.
func bit(k int) uint64 { return 1 << (uint(k) & voqMask) }

// voqMask keeps a port number inside voqPorts' rows.
const voqMask = MaxVOQPorts - 1

// sim is one run's state. Everything is sized once; the cycle loop does not
// allocate except when an unbounded queue doubles.
type sim struct {
	cfg   SimConfig
	kind  schedKind
	iters int
	p     int
	pm    int    // p-1
	full  uint64 // mask of p bits
	depth int    // per-queue limit; 0 unbounded

	tg  *trafficGen
	rnd rng // scheduler randomness (PIM, FIFO output contention)
	arr []int16

	q    []ring[int32] // P×P queues: VOQ (i*P+j) or output group (d*P+q)
	fifo []ring[int64] // FIFO switch: per input, time<<16 | dest
	*voqPorts
	match []int // VOQ: the cycle's matches (input<<8 | output)

	limit   int   // a queue holding limit packets drops the next: depth, or no limit
	filled  []int // the rings an arrival loop filled (see ring), nfilled of them
	nfilled int

	off []int // PRR: per port offset counter
	arb []int // PRR: per port output arbiter index

	draining bool  // the cycles after cfg.Cycles (SimConfig.Drain)
	served   int64 // packets served so far, drain included

	cnt []int // FIFO: contenders per output this cycle
	win []int // FIFO: chosen input per output

	res SimResult
}

func newSim(cfg SimConfig) (*sim, error) {
	if err := cfg.normalize(); err != nil {
		return nil, fmt.Errorf("prr: simulate %s/%s: %w", cfg.Alg, cfg.Traffic, err)
	}
	kind, single, _ := kindOf(cfg.Alg)
	p := cfg.P
	s := &sim{
		cfg: cfg, kind: kind, p: p, pm: p - 1, depth: cfg.Depth,
		iters: log2(p), rnd: rng{mix(cfg.Seed, labelOf("sched"), labelOf(string(cfg.Alg)))},
		arr: make([]int16, p),
	}
	if single {
		s.iters = 1
	}
	if p < 64 {
		s.full = 1<<uint(p) - 1
	} else {
		s.full = math.MaxUint64
	}
	tg, err := newTrafficGen(cfg.Traffic, p, cfg.Load, cfg.BurstLen, cfg.HotProb, mix(cfg.Seed, labelOf("traffic"), labelOf(string(cfg.Traffic))))
	if err != nil {
		return nil, fmt.Errorf("prr: simulate %s/%s: %w", cfg.Alg, cfg.Traffic, err)
	}
	s.tg = tg
	switch kind {
	case kFIFO:
		s.fifo = newRings[int64](p)
		s.cnt = make([]int, p)
		s.win = make([]int, p)
		if s.depth > 0 {
			s.depth *= p
		}
	case kPRR:
		s.q = newRings[int32](p * p)
		s.off = make([]int, p)
		s.arb = make([]int, p)
	default:
		s.q = newRings[int32](p * p)
		s.voqPorts = new(voqPorts)
		s.match = s.matched[:0]
	}
	s.limit = s.depth
	if s.depth == 0 {
		s.limit = math.MaxInt
	}
	s.filled = make([]int, p) // a ring takes at most one packet a cycle
	s.res.Config = cfg
	return s, nil
}

// Simulate runs one configuration. Each cycle the switch first serves the
// packets queued before the cycle (scheduler matching and crossbar, or the
// proposal's output arbiters), then takes the cycle's arrivals into its
// queues, dropping those that find their queue full. Runs are seeded and
// deterministic; runs that differ only in Alg see the same arrivals.
func Simulate(cfg SimConfig) (SimResult, error) {
	s, err := newSim(cfg)
	if err != nil {
		return SimResult{}, err
	}
	s.run()
	return s.res, nil
}

func (s *sim) run() {
	for t := range s.cfg.Cycles {
		now := int32(t)
		s.serve(now)
		s.res.Offered += int64(s.tg.next(s.arr))
		switch s.kind {
		case kPRR:
			s.prrArrive(now)
		case kFIFO:
			s.fifoArrive(now)
		default:
			s.voqArrive(now)
		}
	}
	if !s.cfg.Drain {
		return
	}
	// The drain: no arrivals, so a cycle that serves nothing leaves the
	// state as it found it and nothing can move any more. Cycle numbers
	// stay 32-bit (MaxCycles), which bounds a drain nothing else stops.
	s.draining = true
	for t := s.cfg.Cycles; t < math.MaxInt32; t++ {
		if s.serve(int32(t)) == 0 {
			break
		}
	}
	s.res.Stranded = s.res.Offered - s.res.Dropped - s.res.Delivered - s.res.Drained
}

// serve is one cycle's departures; it returns how many packets left.
func (s *sim) serve(now int32) int {
	switch s.kind {
	case kPRR:
		return s.prrServe(now)
	case kFIFO:
		return s.fifoServe(now)
	default:
		return s.voqServe(now)
	}
}

// tally adds one cycle's departures to the run's figures: n packets whose
// latencies sum to sum, the largest mx. The serve loops keep these three in
// registers and call it once a cycle rather than once a packet.
func (s *sim) tally(n, sum, mx int64) {
	if n == 0 {
		return
	}
	s.served += n
	if s.cfg.Drain && mx > s.res.DrainMax {
		s.res.DrainMax = mx
	}
	if s.draining {
		s.res.Drained += n
		s.res.DrainedLatencySum += sum
		return
	}
	s.res.Delivered += n
	s.res.LatencySum += sum
	if mx > s.res.LatencyMax {
		s.res.LatencyMax = mx
	}
}

// --- the proposal (FPGA'20 §3, §4.4) ---

// prrServe: the output arbiter of port d reads queue arb_d of group d and
// moves on only when it found a packet (§4.4; see Switch.Dequeue).
func (s *sim) prrServe(now int32) int {
	p, pm := s.p, s.pm
	q, arb := s.q, s.arb[:p]
	var n, sum, mx int64
	for d, a := range arb {
		r := &q[d*p+a]
		if r.n == 0 {
			continue
		}
		lat := int64(now - r.pop())
		n++
		sum += lat
		mx = max(mx, lat)
		arb[d] = (a + 1) & pm
	}
	s.tally(n, sum, mx)
	return int(n)
}

// prrArrive writes the cycle's packets for port d to queues offset_d,
// offset_d+1, ... of group d and advances offset_d by their count, dropped
// packets included (§3.2, see Switch.Insert). Which packet of a batch gets
// which of those queues depends on the sorting network; all of them arrived
// in the same cycle, so it changes no statistic and the simulation takes
// them in input order.
func (s *sim) prrArrive(now int32) {
	p, pm, limit := s.p, s.pm, s.limit
	q, off := s.q, s.off[:p]
	occ, drops := s.res.MaxOccupancy, 0
	for _, d16 := range s.arr {
		if d16 < 0 {
			continue
		}
		d := int(d16) & pm
		o := off[d]
		off[d] = (o + 1) & pm
		k := d*p + o
		n, kept, full := q[k].offer(now, limit)
		drops += 1 - b2i(kept)
		if full {
			s.filled[s.nfilled] = k
			s.nfilled++
		}
		occ = max(occ, n)
	}
	s.res.MaxOccupancy = occ
	s.res.Dropped += int64(drops)
	if s.nfilled > 0 {
		growFilled(s, q)
	}
}

// --- input-queued FIFO switch (HOL blocking, §2.1) ---

// fifoServe: every output takes one of the inputs whose head-of-line packet
// is for it, chosen uniformly at random (the model behind the 58.6%
// saturation throughput, Karol et al. 1987, the paper's §2.1 via [21]).
func (s *sim) fifoServe(now int32) int {
	p := s.p
	fifo, cnt, win := s.fifo[:p], s.cnt[:p], s.win[:p]
	rnd := s.rnd.s
	// busy marks the outputs with contenders, so that the second loop
	// visits only those (in port order, as a scan of cnt would).
	var busy [MaxPorts / 64]uint64
	for i := range fifo {
		f := &fifo[i]
		if f.n == 0 {
			continue
		}
		d := int(f.buf[f.head]&0xffff) & (p - 1)
		c := cnt[d] + 1
		cnt[d] = c
		busy[d>>6&(len(busy)-1)] |= 1 << (uint(d) & 63)
		// Reservoir choice: the c-th contender replaces the winner with
		// probability 1/c, which leaves each contender chosen with 1/c.
		if c == 1 {
			win[d] = i
		} else {
			rnd += splitmixGamma
			if below(splitmix(rnd), c) == 0 {
				win[d] = i
			}
		}
	}
	s.rnd.s = rnd
	var n, sum, mx int64
	for w, m := range busy {
		for ; m != 0; m &= m - 1 {
			d := w<<6 | bits.TrailingZeros64(m)
			cnt[d] = 0
			v := fifo[win[d]].pop()
			lat := int64(now - int32(v>>16))
			n++
			sum += lat
			mx = max(mx, lat)
		}
	}
	s.tally(n, sum, mx)
	return int(n)
}

func (s *sim) fifoArrive(now int32) {
	limit := s.limit
	fifo := s.fifo[:len(s.arr)]
	occ, drops := s.res.MaxOccupancy, 0
	for i, d := range s.arr {
		if d < 0 {
			continue
		}
		n, kept, full := fifo[i].offer(int64(now)<<16|int64(d), limit)
		drops += 1 - b2i(kept)
		if full {
			s.filled[s.nfilled] = i
			s.nfilled++
		}
		occ = max(occ, n)
	}
	s.res.MaxOccupancy = occ
	s.res.Dropped += int64(drops)
	if s.nfilled > 0 {
		growFilled(s, fifo)
	}
}

// --- VOQ switches (§2.2, §2.3) ---

func (s *sim) voqArrive(now int32) {
	p, pm, limit := s.p, s.pm, s.limit
	q, v := s.q, s.voqPorts
	occ, drops := s.res.MaxOccupancy, 0
	for i, d16 := range s.arr[:p] {
		if d16 < 0 {
			continue
		}
		j := int(d16) & pm
		k := i*p + j
		n, kept, full := q[k].offer(now, limit)
		drops += 1 - b2i(kept)
		if full {
			s.filled[s.nfilled] = k
			s.nfilled++
		}
		occ = max(occ, n)
		// Set even for a dropped packet: its VOQ holds limit ≥ 1 packets,
		// so its bits are set already.
		v.inM[i&voqMask] |= bit(j)
		v.outM[j&voqMask] |= bit(i)
	}
	s.res.MaxOccupancy = occ
	s.res.Dropped += int64(drops)
	if s.nfilled > 0 {
		growFilled(s, q)
	}
}

// rrPick returns the first set bit of m at or after position ptr, going
// round (a round-robin arbiter of P ports whose highest priority is ptr).
// m ≠ 0 has no bit at or above P, and 0 ≤ ptr < P. The bits at or after
// ptr shift down to the bottom and those before it to just above them, so
// the lowest set bit of r is the pick; no branch (one taken at random
// mispredicted). The shifts are masked to 6 bits: P − ptr is 64 only for
// P = 64 and ptr = 0, where a shift by 0 gives the same r.
func rrPick(m uint64, ptr, p int) int {
	r := m>>(uint(ptr)&63) | m<<(uint(p-ptr)&63)
	return (bits.TrailingZeros64(r) + ptr) & (p - 1)
}

// randPick returns one set bit of m chosen by the random word x, uniformly:
// the k-th lowest, k = below(x, popcount(m)). m ≠ 0 and has no bit at or
// above 2·half (half = P/2). It halves the window round the bit down to a
// byte, with arithmetic in place of branches, and looks the bit up in
// selectInByte: clearing the k lowest bits one by one mispredicted the
// loop's random exit on almost every pick.
func randPick(m, x uint64, half uint) int {
	k := below(x, bits.OnesCount64(m))
	pos := 0
	for w := half; w >= 8; w >>= 1 {
		c := bits.OnesCount64(m & (1<<w - 1))
		// up is -1 when the bit is in the upper half of the window
		// (k ≥ c), else 0.
		up := (c - 1 - k) >> 63
		k -= c & up
		sh := int(w) & up
		m >>= uint(sh)
		pos += sh
	}
	return pos + int(selectInByte[(m&0xff)<<3|uint64(k&7)])
}

// selectInByte[b<<3 | k] is the position of the k-th lowest set bit of the
// byte b (0 where b has no k-th bit).
var selectInByte = func() (t [256 * 8]uint8) {
	for b := range 256 {
		k := 0
		for i := range 8 {
			if b&(1<<i) != 0 {
				t[b<<3|k] = uint8(i)
				k++
			}
		}
	}
	return t
}()

func (s *sim) voqServe(now int32) int {
	var nm int
	switch s.kind {
	case kPIM:
		nm = s.pim()
	case kRRM, kISLIP:
		nm = s.slip(s.kind == kRRM)
	case kDRRM, kEDRRM:
		nm = s.drrm(s.kind == kEDRRM)
	}
	match := s.matched[:nm]
	s.match = match
	p := s.p
	q, inM, outM := s.q, &s.inM, &s.outM
	var n, sum, mx int64
	for _, m := range match {
		i, j := m>>8&voqMask, m&voqMask
		r := &q[i*p+j]
		lat := int64(now - r.pop())
		n++
		sum += lat
		mx = max(mx, lat)
		// Clear the VOQ's bits if it is now empty: masked, not branched on.
		empty := -uint64(b2i(r.n == 0))
		inM[i] &^= bit(j) & empty
		outM[j] &^= bit(i) & empty
	}
	if s.kind == kEDRRM {
		s.edrrmUpdate()
	}
	s.tally(n, sum, mx)
	return int(n)
}

// pim is parallel iterative matching (Anderson et al. 1993, FPGA'20 [2]):
// every unmatched input requests every output it holds packets for; every
// unmatched output grants one request uniformly at random; every input
// accepts one grant uniformly at random. Repeat for the unmatched ports.
// It returns the number of matches, listed in s.matched.
func (s *sim) pim() (nm int) {
	outM, grant, matched := &s.outM, &s.grant, &s.matched
	inFree, outFree := s.full, s.full
	rnd := s.rnd.s
	half := uint(s.p / 2)
	for range s.iters {
		var granted uint64
		for om := outFree; om != 0; om &= om - 1 {
			j := bits.TrailingZeros64(om)
			if rq := outM[j&voqMask] & inFree; rq != 0 {
				rnd += splitmixGamma
				i := randPick(rq, splitmix(rnd), half)
				grant[i&voqMask] |= bit(j)
				granted |= bit(i)
			}
		}
		if granted == 0 {
			break
		}
		for gm := granted; gm != 0; gm &= gm - 1 {
			i := bits.TrailingZeros64(gm) & voqMask
			rnd += splitmixGamma
			j := randPick(grant[i], splitmix(rnd), half)
			grant[i] = 0
			matched[nm&voqMask] = i<<8 | j
			nm++
			inFree &^= bit(i)
			outFree &^= bit(j)
		}
	}
	s.rnd.s = rnd
	return nm
}

// slip is RRM and iSLIP (McKeown 1999, FPGA'20 [21]): request as PIM; each
// unmatched output grants the request next at or after its grant pointer;
// each input accepts the grant next at or after its accept pointer. It
// returns the number of matches, listed in s.matched.
//
// RRM moves a grant pointer to one past the input it granted whether or not
// the grant is accepted, and an accept pointer to one past the output
// accepted, in every iteration. iSLIP moves a grant pointer only when its
// grant is accepted, and both pointers only in the first iteration (the
// rules that desynchronise the pointers, [21] §III-IV).
func (s *sim) slip(rrm bool) (nm int) {
	p, pm := s.p, s.pm
	outM, grant, g, a, matched := &s.outM, &s.grant, &s.g, &s.a, &s.matched
	inFree, outFree := s.full, s.full
	for it := range s.iters {
		var granted uint64
		for om := outFree; om != 0; om &= om - 1 {
			j := bits.TrailingZeros64(om) & voqMask
			if rq := outM[j] & inFree; rq != 0 {
				i := rrPick(rq, g[j], p)
				grant[i&voqMask] |= bit(j)
				granted |= bit(i)
				if rrm {
					g[j] = (i + 1) & pm
				}
			}
		}
		if granted == 0 {
			break
		}
		for gm := granted; gm != 0; gm &= gm - 1 {
			i := bits.TrailingZeros64(gm) & voqMask
			j := rrPick(grant[i], a[i], p)
			grant[i] = 0
			matched[nm&voqMask] = i<<8 | j
			nm++
			inFree &^= bit(i)
			outFree &^= bit(j)
			if rrm || it == 0 {
				a[i] = (j + 1) & pm
			}
			if !rrm && it == 0 {
				g[j&voqMask] = (i + 1) & pm
			}
		}
	}
	return nm
}

// drrm is DRRM (Chao 2000, Li et al. 2001, FPGA'20 [7, 18]) and, with
// exhaustive set, EDRRM (Li et al. 2002, [19]). Each unmatched input sends
// one request, to the first output at or after its request pointer that it
// holds packets for (and that is still unmatched); each output grants the
// request next at or after its grant pointer; a grant is a match. It
// returns the number of matches, listed in s.matched.
//
// DRRM, first iteration: a granted input's pointer moves one past its
// output, the output's pointer one past the input; a refused input keeps
// its pointer. EDRRM, first iteration: the output's pointer stays on the
// input it granted; a refused input moves one past the output it asked; a
// granted input stays on its output unless serving the packet emptied that
// VOQ, then moves one past it (edrrmUpdate) — so a matched VOQ is served
// until it is empty. Later iterations (the log2(P)-iteration versions of
// §5.1) only add matches between unmatched ports; as in iSLIP, pointers
// move in the first iteration only.
func (s *sim) drrm(exhaustive bool) (nm int) {
	p, pm := s.p, s.pm
	inM, req, reqTo, g, a, matched := &s.inM, &s.req, &s.reqTo, &s.g, &s.a, &s.matched
	inFree, outFree := s.full, s.full
	for it := range s.iters {
		var asked uint64 // outputs with requests
		for im := inFree; im != 0; im &= im - 1 {
			i := bits.TrailingZeros64(im) & voqMask
			m := inM[i] & outFree
			if m == 0 {
				if it == 0 {
					reqTo[i] = -1
				}
				continue
			}
			j := rrPick(m, a[i], p)
			req[j&voqMask] |= bit(i)
			asked |= bit(j)
			if it == 0 {
				reqTo[i] = j
			}
		}
		if asked == 0 {
			break
		}
		for om := asked; om != 0; om &= om - 1 {
			j := bits.TrailingZeros64(om) & voqMask
			i := rrPick(req[j], g[j], p)
			req[j] = 0
			matched[nm&voqMask] = i<<8 | j
			nm++
			inFree &^= bit(i)
			outFree &^= bit(j)
			if it == 0 {
				if exhaustive {
					g[j] = i
				} else {
					g[j] = (i + 1) & pm
					a[i&voqMask] = (j + 1) & pm
				}
			}
		}
		if it == 0 && exhaustive {
			// Refused inputs move on (granted ones are settled after service).
			for im := s.full &^ inFree; im != 0; im &= im - 1 {
				reqTo[bits.TrailingZeros64(im)&voqMask] |= 1 << 16 // mark granted
			}
		}
	}
	return nm
}

// edrrmUpdate moves EDRRM's request pointers after the cycle's packets
// left: a refused input one past the output it asked, a served one too if
// serving emptied that VOQ, else it stays on the output (arithmetic, not a
// branch on the two random outcomes).
func (s *sim) edrrmUpdate() {
	pm := s.pm
	reqTo, inM, a := &s.reqTo, &s.inM, &s.a
	for i, r := range reqTo[:s.p] {
		if r < 0 { // no request
			continue
		}
		j := r & 0xffff
		served := r >> 16 & 1
		stay := served & int(inM[i]>>(uint(j)&63)&1)
		a[i] = (j + 1 - stay) & pm
	}
}

// sortedAlgs returns algs in the order of Algs (for stable output).
func sortedAlgs(algs []Alg) []Alg {
	out := slices.Clone(algs)
	slices.SortFunc(out, func(a, b Alg) int { return slices.Index(Algs, a) - slices.Index(Algs, b) })
	return out
}
