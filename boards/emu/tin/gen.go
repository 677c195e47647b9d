package tin

import (
	"math"
	"math/rand/v2"
)

// The traffic generators of one TiN (docs/tin.md, "Traffic"): uniform
// random IP with Poisson arrivals (§5.1 "UR"), bursty messages at a fixed
// injection rate (§5.1, Fig. 10), CliqueMap-like RMA reads of 4 KB values
// (§5.1) and ordered or synchronized streams of set lengths (SC'18 §IV).
// TG_CTRL.START loads every enabled generator of the fabric.
type generators struct {
	d   *device
	ipg ipGenState
	bg  burstGenState
	rg  rmaGenState
	og  ordGenState
}

func (g *generators) init(d *device) {
	g.d = d
	g.ipg.d, g.bg.d, g.rg.d, g.og.d = d, d, d, d
	g.ipg.rng = d.b.Rand("tin/gen/ip")
	g.bg.rng = d.b.Rand("tin/gen/burst")
	g.rg.rng = d.b.Rand("tin/gen/rma")
	g.ipg.seq = map[flowKey]uint32{}
	g.bg.seq = map[flowKey]uint32{}
}

func (g *generators) reset() {
	g.ipg.bytes, g.ipg.dstPort, g.ipg.flows, g.ipg.replyBytes = resetIPGBytes, resetIPGPort, resetIPGFlows, resetIPGReply
	g.bg.msgBytes, g.bg.rate, g.bg.mtu = resetBGMsg, resetBGRate, resetBGMTU
	g.rg.bytes, g.rg.qps = resetRGBytes, resetRGQPS
	g.og.streams, g.og.len, g.og.bytesReg, g.og.conc = resetOGStreams, resetOGLen, resetOGBytes, resetOGConc
}

func (g *generators) clear() {
	g.ipg.sent, g.ipg.completed, g.ipg.dropped = 0, 0, 0
	g.bg.sent, g.bg.completed = 0, 0
	g.rg.issued, g.rg.completed = 0, 0
	g.og.started, g.og.completed = 0, 0
}

// dstList turns a destination mask (bit i: TiN index pod*8+tin) into the
// TiNs a generator may pick, this one excluded.
func (d *device) dstList(lo, hi uint32) []int {
	var out []int
	self := d.addr.Pod()*maxTins + d.addr.TiN()
	for i := 0; i < nDst; i++ {
		m := lo
		if i >= 32 {
			m = hi
		}
		if m>>(i%32)&1 != 0 && i != self {
			out = append(out, i)
		}
	}
	return out
}

// startGenerators loads the enabled generators for a run starting at now;
// it reports whether any has work.
func (d *device) startGenerators(now int64) bool {
	g := &d.gen
	a := g.ipg.start(now)
	b := g.bg.start(now)
	c := g.rg.start(now)
	o := g.og.start(now)
	return a || b || c || o
}

func (d *device) gensDone() bool {
	g := &d.gen
	return g.ipg.left == 0 && g.bg.left == 0 && g.rg.left == 0 && g.og.started >= g.og.total && g.og.waiting == 0
}

func (d *device) gensFlush() {
	g := &d.gen
	g.ipg.left, g.bg.left, g.rg.left = 0, 0, 0
	g.og.total, g.og.started, g.og.active, g.og.waiting = 0, 0, 0, 0
	g.ipg.run++
	g.bg.run++
	g.rg.run++
	g.og.run++
}

// traceNext says whether the next unit of a generator is traced: TRACE_CTRL
// selects the generator, TRACE_EVERY the sampling.
func (d *device) traceNext(bit uint32, n *uint32) bool {
	if d.traceCtrl&bit == 0 {
		return false
	}
	*n++
	return *n%max(d.traceEvery, 1) == 0
}

// expGap draws a Poisson inter-arrival time with the given mean, in ps.
func expGap(r *rand.Rand, meanPS float64) int64 {
	return max(int64(math.Round(r.ExpFloat64()*meanPS)), 1)
}

// --- IP uniform random ------------------------------------------------------

type ipGenState struct {
	d   *device
	rng *rand.Rand

	ctrl, rate, bytes, count   uint32
	dstLo, dstHi, dstPort, cos uint32
	flows, replyBytes          uint32
	sent, completed, dropped   uint32
	left                       uint32
	dsts                       []int
	seq                        map[flowKey]uint32
	traceN                     uint32
	run                        uint32
}

func (g *ipGenState) start(now int64) bool {
	g.left = 0
	if g.ctrl&ipgEnable == 0 || g.count == 0 || g.rate == 0 || g.bytes == 0 {
		return false
	}
	g.dsts = g.d.dstList(g.dstLo, g.dstHi)
	if len(g.dsts) == 0 {
		return false
	}
	g.left = g.count
	g.run++
	g.schedule(now)
	return true
}

func (g *ipGenState) schedule(now int64) {
	mean := float64(g.bytes) * 8e6 / float64(g.rate)
	t := now + expGap(g.rng, mean)
	run := g.run
	g.d.f.at(t, func() {
		if g.run == run {
			g.fire(t)
		}
	})
}

func (g *ipGenState) fire(now int64) {
	d := g.d
	i := g.dsts[g.rng.IntN(len(g.dsts))]
	flow := uint16(0)
	if g.flows > 1 {
		flow = uint16(g.rng.IntN(int(min(g.flows, 0x8000))))
	}
	dst := MakeAddr(i/maxTins, i%maxTins, int(g.dstPort&3))
	k := flowKey{src: dst, port: uint8(g.dstPort & 3), cos: uint8(g.cos & 7), flow: flow}
	g.seq[k]++
	p := &packet{src: d.addr | 1, dst: dst, n: int(g.bytes), cos: uint8(g.cos & 7), kind: pkUR,
		flow: flow, seq: g.seq[k], wantReply: g.ctrl&ipgReply != 0, replyN: int(g.replyBytes),
		traced: d.traceNext(trIP, &g.traceN), log: g.ctrl&ipgLog != 0, gen: g}
	g.sent++
	g.left--
	d.f.opStart()
	d.ip.submit(p, now)
	if g.left > 0 {
		g.schedule(now)
	} else {
		d.ip.releaseHeld(now)
	}
}

// --- bursty messages --------------------------------------------------------

type burstGenState struct {
	d   *device
	rng *rand.Rand

	ctrl, dst, msgBytes, rate, count, mtu, cos uint32
	sent, completed                            uint32
	left                                       uint32
	seq                                        map[flowKey]uint32
	traceN                                     uint32
	run                                        uint32
}

// burstMsg is one message: its packets enter the ingress buffer
// back-to-back, which is what makes it bursty (§5.1).
type burstMsg struct {
	g       *burstGenState
	left    int
	anyLost bool
}

func (m *burstMsg) packetDone(f *fabric, lost bool) {
	m.left--
	m.anyLost = m.anyLost || lost
	if m.left == 0 {
		if !m.anyLost {
			m.g.completed++
		}
		f.opDone()
	}
}

func (g *burstGenState) start(now int64) bool {
	g.left = 0
	if g.ctrl&bgEnable == 0 || g.count == 0 || g.rate == 0 || g.msgBytes == 0 {
		return false
	}
	if Addr(g.dst).Chip() == g.d.addr {
		return false
	}
	g.left = g.count
	g.run++
	run := g.run
	g.d.f.at(now, func() {
		if g.run == run {
			g.fire(now)
		}
	})
	return true
}

func (g *burstGenState) fire(now int64) {
	d := g.d
	mtu := int(max(g.mtu, 64)) // BG_MTU is at most MaxPacket (write)
	dst := Addr(g.dst)&^0x1F | Addr(g.dst&3)
	k := flowKey{src: dst, port: uint8(dst.EP()), cos: uint8(g.cos & 7)}
	n := int(g.msgBytes)
	m := &burstMsg{g: g, left: (n + mtu - 1) / mtu}
	traced := d.traceNext(trBurst, &g.traceN)
	d.f.opStart()
	g.sent++
	for n > 0 {
		sz := min(n, mtu)
		n -= sz
		g.seq[k]++
		p := &packet{src: d.addr | 1, dst: dst, n: sz, cos: uint8(g.cos & 7), kind: pkBurst, seq: g.seq[k],
			traced: traced, log: g.ctrl&bgLog != 0, msg: m}
		d.ip.submit(p, now)
	}
	g.left--
	if g.left > 0 {
		// A fixed injection rate: one message every msg*8/rate.
		t := now + int64(float64(g.msgBytes)*8e6/float64(g.rate))
		run := g.run
		d.f.at(t, func() {
			if g.run == run {
				g.fire(t)
			}
		})
	} else {
		d.ip.releaseHeld(now)
	}
}

// --- RMA reads ------------------------------------------------------------

type rmaGenState struct {
	d   *device
	rng *rand.Rand

	ctrl, qps, bytes, count, dstLo, dstHi uint32
	issued, completed                     uint32
	left                                  uint32
	dsts                                  []int
	traceN                                uint32
	run                                   uint32
}

func (g *rmaGenState) start(now int64) bool {
	g.left = 0
	if g.ctrl&rgEnable == 0 || g.count == 0 || g.qps == 0 || g.bytes == 0 {
		return false
	}
	g.dsts = g.d.dstList(g.dstLo, g.dstHi)
	if len(g.dsts) == 0 {
		return false
	}
	g.left = g.count
	g.run++
	g.schedule(now)
	return true
}

func (g *rmaGenState) schedule(now int64) {
	t := now + expGap(g.rng, 1e12/float64(g.qps))
	run := g.run
	g.d.f.at(t, func() {
		if g.run == run {
			g.fire(t)
		}
	})
}

func (g *rmaGenState) fire(now int64) {
	d := g.d
	i := g.dsts[g.rng.IntN(len(g.dsts))]
	hi := g.ctrl&rgHiPri != 0
	tc := int(d.rmaTC >> 4 & 0xF)
	if hi {
		tc = int(d.rmaTC & 0xF)
	}
	r := &rmaRead{init: MakeAddr(d.addr.Pod(), d.addr.TiN(), epRMA), tgt: MakeAddr(i/maxTins, i%maxTins, epRMA),
		n: int(min(g.bytes, 1<<20)), tc: tc, hi: hi, traced: d.traceNext(trRMA, &g.traceN), g: g}
	g.issued++
	g.left--
	d.f.opStart()
	d.rm.submit(r, now)
	if g.left > 0 {
		g.schedule(now)
	}
}

// --- ordered and synchronized streams ------------------------------------------

type ordGenState struct {
	d *device

	ctrl, dstReg, streams, len, bytesReg, gapNS, streamGap, conc uint32
	started, completed                                           uint32

	// The run.
	dst     Addr
	length  int
	bytes   int
	sync    bool
	eod     bool
	slow    bool
	total   uint32
	active  uint32
	waiting uint32 // starts scheduled after a stream gap
	nextTag uint16
	traceN  uint32
	run     uint32
}

func (g *ordGenState) start(now int64) bool {
	g.total, g.active, g.waiting = 0, 0, 0
	d := g.d
	if g.ctrl&ogEnable == 0 || g.streams == 0 || g.len == 0 {
		return false
	}
	g.dst = MakeAddr(Addr(g.dstReg).Pod(), Addr(g.dstReg).TiN(), epRMA)
	if g.dst.Chip() == d.addr {
		return false
	}
	g.length = int(min(g.len, 1<<16-1))
	g.bytes = int(min(g.bytesReg, MaxOReqData))
	g.sync, g.eod, g.slow = g.ctrl&ogSync != 0, g.ctrl&ogEOD != 0, g.ctrl&ogSlow != 0
	g.total = g.streams
	g.started = 0
	g.run++
	d.rm.ord.prepare()
	for i := uint32(0); i < max(g.conc, 1) && g.started < g.total; i++ {
		g.launch(now)
	}
	return true
}

func (g *ordGenState) launch(now int64) {
	g.started++
	g.active++
	g.d.f.opStart()
	tag := g.nextTag
	g.nextTag++
	g.d.rm.ord.startStream(g, tag, now)
}

// traced marks which REQs of a new stream carry the trace bit.
func (g *ordGenState) traced(n int) []bool {
	t := make([]bool, n)
	for i := range t {
		t[i] = g.d.traceNext(trOrd, &g.traceN)
	}
	return t
}

// streamDone: a stream closed (FIN-ACK); the next one starts after the
// stream gap.
func (g *ordGenState) streamDone(now int64) {
	g.active--
	g.completed++
	g.d.f.opDone()
	if g.started >= g.total {
		return
	}
	t := now + int64(g.streamGap)*1000
	run := g.run
	g.waiting++
	g.d.f.at(t, func() {
		if g.run != run {
			return
		}
		g.waiting--
		if g.started < g.total {
			g.launch(t)
		}
	})
}

// --- registers --------------------------------------------------------------

func (g *generators) read(addr uint32) (uint32, bool) {
	switch addr {
	case regIPGCtrl:
		return g.ipg.ctrl, true
	case regIPGRate:
		return g.ipg.rate, true
	case regIPGBytes:
		return g.ipg.bytes, true
	case regIPGCount:
		return g.ipg.count, true
	case regIPGDstLo:
		return g.ipg.dstLo, true
	case regIPGDstHi:
		return g.ipg.dstHi, true
	case regIPGDstPort:
		return g.ipg.dstPort, true
	case regIPGCoS:
		return g.ipg.cos, true
	case regIPGFlows:
		return g.ipg.flows, true
	case regIPGReplyBytes:
		return g.ipg.replyBytes, true
	case regIPGSent:
		return g.ipg.sent, true
	case regIPGCompleted:
		return g.ipg.completed, true
	case regIPGDropped:
		return g.ipg.dropped, true
	case regBGCtrl:
		return g.bg.ctrl, true
	case regBGDst:
		return g.bg.dst, true
	case regBGMsgBytes:
		return g.bg.msgBytes, true
	case regBGRate:
		return g.bg.rate, true
	case regBGCount:
		return g.bg.count, true
	case regBGMTU:
		return g.bg.mtu, true
	case regBGCoS:
		return g.bg.cos, true
	case regBGSent:
		return g.bg.sent, true
	case regBGCompleted:
		return g.bg.completed, true
	case regRGCtrl:
		return g.rg.ctrl, true
	case regRGQPS:
		return g.rg.qps, true
	case regRGBytes:
		return g.rg.bytes, true
	case regRGCount:
		return g.rg.count, true
	case regRGDstLo:
		return g.rg.dstLo, true
	case regRGDstHi:
		return g.rg.dstHi, true
	case regRGIssued:
		return g.rg.issued, true
	case regRGCompleted:
		return g.rg.completed, true
	case regOGCtrl:
		return g.og.ctrl, true
	case regOGDst:
		return g.og.dstReg, true
	case regOGStreams:
		return g.og.streams, true
	case regOGLen:
		return g.og.len, true
	case regOGBytes:
		return g.og.bytesReg, true
	case regOGGapNS:
		return g.og.gapNS, true
	case regOGStreamGap:
		return g.og.streamGap, true
	case regOGConc:
		return g.og.conc, true
	case regOGStarted:
		return g.og.started, true
	case regOGCompleted:
		return g.og.completed, true
	}
	return 0, false
}

func (g *generators) write(addr, v uint32) (bool, error) {
	switch addr {
	case regIPGCtrl:
		g.ipg.ctrl = v & 7
	case regIPGRate:
		g.ipg.rate = v
	// The packet-length registers clamp to MaxPacket, the longest packet
	// the ingress takes (32 cells: the RPTR's 5-bit index); they read back
	// what the generator will use.
	case regIPGBytes:
		g.ipg.bytes = min(v&0x3FFF, MaxPacket)
	case regIPGCount:
		g.ipg.count = v
	case regIPGDstLo:
		g.ipg.dstLo = v
	case regIPGDstHi:
		g.ipg.dstHi = v
	case regIPGDstPort:
		g.ipg.dstPort = v & 3
	case regIPGCoS:
		g.ipg.cos = v & 7
	case regIPGFlows:
		g.ipg.flows = v & 0xFFFF
	case regIPGReplyBytes:
		g.ipg.replyBytes = min(v&0x3FFF, MaxPacket)
	case regBGCtrl:
		g.bg.ctrl = v & 3
	case regBGDst:
		g.bg.dst = v & 0xFFFF
	case regBGMsgBytes:
		g.bg.msgBytes = v & 0xFFFFFF
	case regBGRate:
		g.bg.rate = v
	case regBGCount:
		g.bg.count = v
	case regBGMTU:
		g.bg.mtu = min(v&0x3FFF, MaxPacket)
	case regBGCoS:
		g.bg.cos = v & 7
	case regRGCtrl:
		g.rg.ctrl = v & 3
	case regRGQPS:
		g.rg.qps = v
	case regRGBytes:
		g.rg.bytes = v & 0xFFFFF
	case regRGCount:
		g.rg.count = v
	case regRGDstLo:
		g.rg.dstLo = v
	case regRGDstHi:
		g.rg.dstHi = v
	case regOGCtrl:
		g.og.ctrl = v & 0xF
	case regOGDst:
		g.og.dstReg = v & 0xFFFF
	case regOGStreams:
		g.og.streams = v & 0xFFFF
	case regOGLen:
		g.og.len = v & 0xFFFF
	case regOGBytes:
		g.og.bytesReg = v & 0xFF
	case regOGGapNS:
		g.og.gapNS = v & 0xFFFF
	case regOGStreamGap:
		g.og.streamGap = v
	case regOGConc:
		g.og.conc = v & 0xFF
	case regIPGSent, regIPGCompleted, regIPGDropped, regBGSent, regBGCompleted, regRGIssued, regRGCompleted,
		regOGStarted, regOGCompleted:
		return true, errRO(addr)
	default:
		return false, nil
	}
	return true, nil
}

// poisson draws a Poisson number with mean lambda (Knuth's method; the
// means here are small: bit errors per cell).
func poisson(r *rand.Rand, lambda float64) int {
	if lambda <= 0 {
		return 0
	}
	if lambda > 30 {
		return max(int(math.Round(lambda+math.Sqrt(lambda)*r.NormFloat64())), 0)
	}
	l := math.Exp(-lambda)
	k, p := 0, r.Float64()
	for p > l {
		k++
		p *= r.Float64()
	}
	return k
}
