package tin

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
)

// SwitchSpec makes every router of a Fabric the cell switch of Aquila
// §3.1 rather than an output-queued router: per-VC input FIFOs whose head
// cells alone request the crossbar ("A centralized arbiter implements a
// variant of the iSLIP arbitration protocol [38], supporting one
// arbitration request per VC per port"), a crossbar whose ports carry one
// cell at a time ("the ingress and egress ports communicate a 'busy'
// signal to the crossbar arbiter"), and shallow per-VC output buffers in
// which QoS between VCs is applied ("QoS between VCs is implemented in the
// output buffer"). A cell therefore waits where §3.1's switch makes it
// wait: behind the head of its input FIFO while that head's output is
// full (head of line), for a busy crossbar port, in its output buffer for
// the link and credits. The adaptive modes weigh each candidate by the
// occupancy of its output buffer on the cell's VC (§3.2, reading A40),
// decided when the cell reaches the head of its FIFO (reading A23).
type SwitchSpec struct {
	// FallThroughNs is the part of a link's LatencyNs spent in the next
	// switch's pipeline before its crossbar (§3.1: 20 ns). A cell may
	// request the crossbar that long after its head entered the input
	// FIFO; the credits of its bytes come back LatencyNs - FallThroughNs
	// after it has crossed (the reverse flow-control ordered sets take the
	// link's PCS and flight time, §3.1).
	FallThroughNs float64
	// OutputBytes is the depth of one VC's output buffer (reading A22).
	OutputBytes int
	// CrossbarBytesPerNs is the rate at which a crossbar port moves a
	// cell that has arrived whole (reading A24); a cell cut through before
	// its tail arrived keeps both ports busy until its tail is in.
	CrossbarBytesPerNs float64
	// ClockNs is the period of the switches' clock (reading A28); 0: none,
	// every event at its exact time. With a clock, a head requests the
	// crossbar and an output starts a cell only on an edge of its
	// switch's clock, each switch at its own phase (drawn per run: the
	// boards of a rack are not phase-locked).
	ClockNs float64
}

func (s *SwitchSpec) check(links ...LinkSpec) error {
	if math.IsNaN(s.FallThroughNs) || s.FallThroughNs < 0 {
		return fmt.Errorf("tin: switch fall-through %g ns: want 0 or more", s.FallThroughNs)
	}
	for _, l := range links {
		if l.LatencyNs < s.FallThroughNs {
			return fmt.Errorf("tin: a link's head latency %g ns is below the switch fall-through %g ns it includes", l.LatencyNs, s.FallThroughNs)
		}
	}
	if s.OutputBytes < MaxCell || s.OutputBytes > 1<<20 {
		return fmt.Errorf("tin: output buffer of %d bytes per VC: want %d (one full cell) .. %d", s.OutputBytes, MaxCell, 1<<20)
	}
	if math.IsNaN(s.CrossbarBytesPerNs) || s.CrossbarBytesPerNs <= 0 || s.CrossbarBytesPerNs > 1e6 {
		return fmt.Errorf("tin: crossbar rate %g bytes/ns: want 0 < rate <= 1e6", s.CrossbarBytesPerNs)
	}
	if math.IsNaN(s.ClockNs) || s.ClockNs < 0 || s.ClockNs > 1e3 {
		return fmt.Errorf("tin: switch clock period %g ns: want 0 (none) .. 1000", s.ClockNs)
	}
	return nil
}

// xport is the crossbar side of a link: as an input (the link's far-end
// FIFOs) and as an output (the buffers in front of the link). Its fields
// fill one 64-byte cache line: every event of a large Clique touches a
// few ports of thousands.
type xport struct {
	outBusy Time      // the output port is receiving a cell until then
	credDel Time      // the input's credit return delay
	waiting []request // requests for this output
	xOut    int32     // output of the input's transfer in progress
	xBytes  int32
	outRR   int32 // request key granted last by this output (iSLIP's pointer)
	// inOccupied has bit v set while the input FIFO of VC v holds a cell:
	// swXbarDone looks at the heads without touching the empty FIFOs.
	inOccupied uint32
	// The cell on the link holds its output-buffer space until its tail
	// has gone out.
	relBytes int32
	relVC    uint8
	xVC      uint8
	inRR     uint8 // the VC the input tries first when it comes free
	inBusy   bool  // the input port is transferring a cell (until its evXbar)
}

// request is an input FIFO's head cell asking for an output. It carries
// what the output's arbiter weighs of the cell, which does not change
// while it waits (the head leaves its FIFO only when granted), so that
// scanning the requests touches neither the FIFOs nor the cells.
type request struct {
	k     int32 // the FIFO: input link*nVC + input VC
	in    int32 // the input link
	vc    int32 // the VC the cell takes at the output
	bytes int32
}

// swState is the switch model's state of a Fabric.
type swState struct {
	spec  SwitchSpec
	ports []xport       // per link
	in    []ring[int32] // per link*nVC: input FIFO of the link's far end
	held  []int32       // per link*nVC: bytes in the output buffer in front of the link
	psPB  float64       // crossbar ps per byte
	clock Time          // switch clock period; 0: none
	phase []Time        // per router: its clock's first edge, in [0, clock)
}

// edge is the first edge of router r's clock at or after t.
func (s *swState) edge(r int32, t Time) Time {
	if s.clock == 0 || r < 0 {
		return t
	}
	k := (t - s.phase[r] + s.clock - 1) / s.clock
	return s.phase[r] + max(k, 0)*s.clock
}

func (f *Fabric) initSwitch() {
	s := &swState{spec: *f.cfg.Switch, ports: make([]xport, len(f.links)), in: make([]ring[int32], len(f.links)*f.nVC),
		held: make([]int32, len(f.links)*f.nVC), psPB: 1000 / f.cfg.Switch.CrossbarBytesPerNs}
	if s.clock = toTime(s.spec.ClockNs); s.clock > 0 {
		// Phases from their own stream: a clocked run draws the same
		// traffic and routes as an unclocked one of the same seed.
		rng := rand.New(rand.NewPCG(f.cfg.Seed^0x5851f42d4c957f2d, f.cfg.Seed))
		s.phase = make([]Time, f.R)
		for r := range s.phase {
			s.phase[r] = Time(rng.Int64N(int64(s.clock)))
		}
	}
	ft := toTime(s.spec.FallThroughNs)
	for i := range f.links {
		s.ports[i].credDel = max(0, f.links[i].lat-ft)
		s.ports[i].outRR = -1
	}
	f.sw = s
}

// swArrive: the head of cell ci has come through the pipeline of the
// switch at the far end of the link it came on; it joins that link's FIFO
// for its VC and requests the crossbar if it is the head.
func (f *Fabric) swArrive(ci int32) {
	c := &f.cells[ci]
	k := c.inLink*int32(f.nVC) + int32(c.inVC)
	q := &f.sw.in[k]
	q.push(ci)
	f.links[c.inLink].fifo += c.bytes
	if q.len() == 1 {
		f.sw.ports[c.inLink].inOccupied |= 1 << c.inVC
		f.swHead(k)
	}
}

// swHead routes the head cell of FIFO k (reading A23: when it reaches the
// head, on the output buffers as they are then) and makes its request.
func (f *Fabric) swHead(k int32) {
	ci := f.sw.in[k].peek()
	c := &f.cells[ci]
	r := f.links[c.inLink].to
	if !c.decided {
		f.decide(c, r)
	}
	l, fabricHop := f.next(c, r)
	c.outLink, c.outLevel = l, uint8(f.level(c, l, fabricHop))
	p := &f.sw.ports[l]
	vc := int32(c.cls)*int32(f.cfg.Levels) + int32(c.outLevel)
	p.waiting = append(p.waiting, request{k: k, in: c.inLink, vc: vc, bytes: c.bytes})
	f.swOutput(l)
}

// swOutput grants output o to one waiting request, round robin from the
// input after the last one granted, if the output's crossbar port is free
// and the request's input port is free and its cell fits the output
// buffer of its VC.
func (f *Fabric) swOutput(o int32) {
	p := &f.sw.ports[o]
	if len(p.waiting) == 0 || p.outBusy > f.now {
		return
	}
	n := int32(len(f.links) * f.nVC)
	held := f.sw.held[int(o)*f.nVC : int(o+1)*f.nVC]
	room := int32(f.sw.spec.OutputBytes)
	best, bestI, bestRank := int32(-1), -1, n
	for i, r := range p.waiting {
		// (The output buffer first: its state is at hand, the input's
		// may be a cache miss away.)
		if held[r.vc]+r.bytes > room || f.sw.ports[r.in].inBusy {
			continue
		}
		// Round robin: the first request after the one granted last, by
		// rank (k - outRR - 1) mod n.
		rank := r.k - p.outRR - 1
		if rank < 0 {
			rank += n
		}
		if rank < bestRank {
			best, bestI, bestRank = r.k, i, rank
		}
	}
	if best < 0 {
		return
	}
	p.waiting = append(p.waiting[:bestI], p.waiting[bestI+1:]...)
	p.outRR = best
	f.swGrant(best, o)
}

// swGrant moves the head of FIFO k across the crossbar into output o's
// buffer; the cell may go out on the link at once (cut-through).
func (f *Fabric) swGrant(k, o int32) {
	s := f.sw
	in := k / int32(f.nVC)
	q := &s.in[k]
	ci := q.pop()
	c := &f.cells[ci]
	end := max(f.now+Time(float64(c.bytes)*s.psPB+0.5), c.tailArr)
	pi, po := &s.ports[in], &s.ports[o]
	pi.inBusy, po.outBusy = true, end
	pi.xOut, pi.xBytes, pi.xVC = o, c.bytes, uint8(k%int32(f.nVC))
	f.q.push(event{t: end, id: in, kind: evXbar})
	vc := int(c.cls)*f.cfg.Levels + int(c.outLevel)
	s.held[int(o)*f.nVC+vc] += c.bytes
	f.enqueue(ci, o, int(c.outLevel))
	if q.len() > 0 {
		f.swHead(k)
	} else {
		pi.inOccupied &^= 1 << (k % int32(f.nVC))
	}
}

// swXbarDone ends the transfer of input link in: the cell has left its
// FIFO (its credits go back) and both crossbar ports are free again.
func (f *Fabric) swXbarDone(in int32) {
	s := f.sw
	pi := &s.ports[in]
	pi.inBusy = false
	o := pi.xOut
	L := &f.links[in]
	L.fifo -= pi.xBytes
	if L.credits {
		t := f.now + pi.credDel
		L.ret.push(credit{t: t, bytes: pi.xBytes, vc: pi.xVC})
		if L.queued > 0 {
			f.wakeAt(in, max(t, L.freeAt))
		}
	}
	f.swOutput(o)
	// The input's other heads may be waiting for outputs that are free:
	// round robin from inRR over the VCs whose FIFO holds a cell, until
	// one is granted (the input is busy again). Only a grant from this
	// input changes its FIFOs here, so the occupied VCs stay as taken.
	n, rr := f.nVC, int(pi.inRR)
	for m := rotated(pi.inOccupied, rr, n); m != 0 && !pi.inBusy; m &= m - 1 {
		v := rr + bits.TrailingZeros32(m)
		if v >= n {
			v -= n
		}
		k := in*int32(n) + int32(v)
		f.swOutput(f.cells[s.in[k].peek()].outLink)
		if pi.inBusy {
			pi.inRR = uint8((v + 1) % n)
		}
	}
}

// rotated returns the n low bits of mask rotated right by r (0 <= r < n
// <= 32): bit j of the result is bit (r+j) mod n of mask, so that its set
// bits, lowest first, are a round robin's candidates from r on.
func rotated(mask uint32, r, n int) uint32 {
	all := uint32(1)<<n - 1
	mask &= all
	return (mask>>r | mask<<(n-r)) & all
}

// swRelease frees the output-buffer space of the cell whose tail has left
// link l; the caller then lets the arbiter fill it (swOutput).
func (f *Fabric) swRelease(l int32) {
	p := &f.sw.ports[l]
	f.sw.held[int(l)*f.nVC+int(p.relVC)] -= p.relBytes
	p.relBytes = 0
}
