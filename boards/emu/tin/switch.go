package tin

import (
	"math"
	"math/bits"
)

// cell is one GNet cell. h and the payload words p0, p1 are the bits on the
// wire (docs/tin.md, "Cell formats"); the rest is simulation bookkeeping
// (what the cell's remaining payload bytes carry in hardware, and where it
// is).
type cell struct {
	h      Header
	p0, p1 uint64

	// pkt: the packet an RTS, CTS or CTD is about. Data cells have none:
	// the egress lands them by the RPTR in their header (ip.go, onData).
	pkt *packet
	rd  *rmaRead // 1RMA: the read

	born  int64 // entered the fabric (ps)
	arr   int64 // its head reached the current input FIFO
	ready int64 // the route pipeline is done: the head may request the crossbar
	avail int64 // in an output buffer: the head has crossed the crossbar
	// Cut-through (reading A3, Aquila §3.1; docs/tin.md, "Timing model"):
	// a cell moves on while its tail is still coming in. tail: when the
	// last byte reaches the current input FIFO; tailOut, in an output
	// buffer: the earliest the last byte can leave the output (it crossed
	// the crossbar, and the switch's fall-through after it arrived).
	tail    int64
	tailOut int64

	// A data cell at its source: the ingress-buffer slot it was read from
	// and the bytes it frees there when it leaves the endpoint (the source's
	// own bookkeeping; nothing downstream reads them).
	ingSlot int32
	ingFree int32
	out     int8 // routed output port, -1 before routing
	outVC   uint8
	rkind   uint8 // route kind (trace records)
	err     uint8 // bit errors picked up on the last wire: errHdr, errPay

	id int32 // index in the fabric's cells (events name cells by it)
}

const (
	errHdr = 1 << 0
	errPay = 1 << 1
)

// Route kinds, as trace records report them.
const (
	rkEject   = 0
	rkMinimal = 1
	rkNonMin  = 2
	rkDetMin  = 3 // deterministic mode chose a minimal entry
	rkDetNon  = 4 // deterministic mode chose a non-minimal entry
)

// fifo is a ring of cells with a byte count.
type fifo struct {
	buf   []*cell
	head  int
	n     int
	bytes int
}

func (q *fifo) push(c *cell) {
	if q.n == len(q.buf) {
		nb := make([]*cell, max(8, 2*len(q.buf)))
		for i := 0; i < q.n; i++ {
			nb[i] = q.buf[(q.head+i)&(len(q.buf)-1)]
		}
		q.buf, q.head = nb, 0
	}
	q.buf[(q.head+q.n)&(len(q.buf)-1)] = c
	q.n++
	q.bytes += c.h.Len
}

func (q *fifo) peek() *cell { return q.buf[q.head] }

func (q *fifo) pop() *cell {
	c := q.buf[q.head]
	q.buf[q.head] = nil
	q.head = (q.head + 1) & (len(q.buf) - 1)
	q.n--
	q.bytes -= c.h.Len
	return c
}

// Port classes, from PORT_ROLE (the input classes of §4.2's port classes).
const (
	classTerminal = 0
	classLocal    = 1
	classGlobal   = 2
)

// Port roles (PORT_ROLE fields).
const (
	roleOff    = 0
	roleLocal  = 1
	roleGlobal = 2
)

func classOf(role int) uint8 {
	switch role {
	case roleLocal:
		return classLocal
	case roleGlobal:
		return classGlobal
	}
	return classTerminal
}

// inPort is a switch input: one FIFO per VC, each protected by credits
// (§3.1: "Each VC has its own input FIFO space protected by a reliable
// credit mechanism").
type inPort struct {
	q     [nVC]fifo
	ne    uint32 // VCs with cells
	bit   uint32 // this port's bit in the device's inNE
	busy  int64  // transferring a cell across the crossbar until
	acc   int    // iSLIP accept pointer
	class uint8
	// The cell being read out across the crossbar (until busy): it still
	// holds its FIFO space, readLen bytes of VC readVC.
	readVC  int
	readLen int

	// Credits go back to upDev's output upPort after upDelay (ports 0-3),
	// or to the endpoint's injection port (4, 5).
	upDev   *device
	upPort  int
	upDelay int64

	// tin-credit-leak: credit returns still to swallow, and on which VC.
	leakLeft int
	leakVC   int

	hwm                        int // largest FIFO occupancy of any VC, bytes
	rxCells, rxBytes, crcErrs  uint32
	payErrs, fecFixed, linkDrp uint32
}

// outPort is a switch output (its shallow output buffer, the QoS
// scheduler, the link), or an endpoint's injection into the switch.
type outPort struct {
	q      [nVC]fifo
	ne     uint32
	bit    uint32   // this port's bit in the device's outNE
	cred   [nVC]int // bytes the next FIFO can take, per VC
	txFree int64    // the serialiser is free from
	xbusy  int64    // receiving a cell across the crossbar until
	grant  int      // iSLIP grant pointer over (input, VC)
	class  uint8

	// kind says where cells go: a GNet link, the endpoint (ejection), or
	// the switch (injection).
	kind      uint8
	idx       int // index among the device's ports (0-5) or injection ports (0-1)
	up        bool
	global    bool
	cabled    bool
	peerIsTiN bool
	peer      *device
	peerPort  int
	delay     int64 // ps from the end of serialisation to the cell's arrival
	serNum    int64 // serialisation: bytes * serNum / serDen ps
	serDen    int64
	ber       float64
	downAt    int64 // tin-link-down: the link fails at this time
	credInit  int
	leaked    [nVC]int

	wrrTC, wrrLeft int
	rr             [nTC + 1]uint8

	txCells, txBytes uint32
	drops            uint32 // cells discarded because the link was down
	hwm              int
}

const (
	kindLink = iota
	kindEject
	kindInject
)

func (o *outPort) isUp(t int64) bool {
	if o.kind != kindLink {
		return true
	}
	return o.up && t < o.downAt
}

func (o *outPort) ser(n int) int64 { return (int64(n)*o.serNum + o.serDen - 1) / o.serDen }

// flushDown forgets the queues of o, a link that went down.
func (d *device) flushDown(o *outPort) {
	for v := range o.q {
		for o.q[v].n > 0 {
			d.f.freeCell(o.q[v].pop())
		}
	}
	o.ne = 0
	d.outNE &^= o.bit
}

// wake asks for an arbitration cycle at the first cycle edge at or after t.
func (d *device) wake(t int64) {
	if t < d.f.now {
		t = d.f.now
	}
	k := (t - d.phase + cyclePS - 1) / cyclePS
	t = d.phase + k*cyclePS
	if t < d.tickAt {
		d.tickAt = t
		d.f.push(t, tickEvent(d))
	}
}

// tick is one switch cycle: the outputs and the injection ports start
// transmissions, then the arbiter matches inputs to outputs.
func (d *device) tick(now int64) {
	// The outputs, then the injection ports, in port order (an idle one
	// has nothing to do; serving one never fills another).
	for m := d.outNE; m != 0; m &= m - 1 {
		o := d.outs[bits.TrailingZeros32(m)]
		if o.txFree > now && o.isUp(now) {
			continue // still serialising (serve would do nothing)
		}
		d.serve(o, now)
	}
	if d.arbitrate(now) {
		// Requests lost this round try again next cycle.
		d.wake(now + cyclePS)
		return
	}
	if t := d.nextChange(now); t != math.MaxInt64 {
		d.wake(t)
	}
}

// nextChange is the earliest time a blocked cell can move without an
// outside event (an arrival or a credit), or MaxInt64.
func (d *device) nextChange(now int64) int64 {
	t := int64(math.MaxInt64)
	for mo := d.outNE; mo != 0; mo &= mo - 1 {
		o := d.outs[bits.TrailingZeros32(mo)]
		if !o.isUp(now) {
			continue
		}
		if o.txFree > now {
			t = min(t, o.txFree)
			continue
		}
		for m := o.ne; m != 0; m &= m - 1 {
			c := o.q[bits.TrailingZeros32(m)].peek()
			if c.avail > now {
				t = min(t, c.avail)
			}
		}
	}
	for mi := d.inNE; mi != 0; mi &= mi - 1 {
		in := d.in[bits.TrailingZeros32(mi)]
		if in.busy > now {
			t = min(t, in.busy)
			continue
		}
		for m := in.ne; m != 0; m &= m - 1 {
			c := in.q[bits.TrailingZeros32(m)].peek()
			switch {
			case c.ready > now:
				t = min(t, c.ready)
			case c.out >= 0 && d.out[c.out].xbusy > now:
				t = min(t, d.out[c.out].xbusy)
			}
		}
	}
	return t
}

// serve starts one transmission on o if its serialiser is free: the QoS
// scheduler picks the VC (§3.1: "QoS between VCs is implemented in the
// output buffer and supports both weighted round robin and strict
// priority").
func (d *device) serve(o *outPort, now int64) bool {
	if o.ne == 0 {
		return false
	}
	if !o.isUp(now) {
		// The PHY reports the link down (§3.1 ordered sets): what is
		// queued for it is discarded.
		for v := range o.q {
			for o.q[v].n > 0 {
				d.f.freeCell(o.q[v].pop())
				o.drops++
			}
		}
		o.ne = 0
		d.outNE &^= o.bit
		return true
	}
	if o.txFree > now {
		return false
	}
	v := d.pick(o, now)
	if v < 0 {
		return false
	}
	q := &o.q[v]
	c := q.pop()
	if q.n == 0 {
		o.ne &^= 1 << v
		if o.ne == 0 {
			d.outNE &^= o.bit
		}
	}
	// Cut-through: the head goes out now, as soon as it has crossed the
	// crossbar, whether or not the tail has arrived; the last byte leaves
	// after the serialisation, or, when the cell's tail is still coming in
	// over a slower input, once it has come through the switch (tailOut):
	// the input paces a faster output (docs/tin.md, "Timing model").
	ser := o.ser(c.h.Len)
	fin := max(now+ser, c.tailOut)
	o.txFree = fin
	o.txCells++
	o.txBytes += uint32(c.h.Len)
	f := d.f
	switch o.kind {
	case kindLink:
		o.cred[v] -= c.h.Len
		c.err = d.bitErrors(o, c)
		// The head reaches the next input PCS + wire (+ FEC) after it left;
		// the tail as long after the last byte left.
		c.tail = fin + o.delay
		f.push(now+o.delay, cellEvent(evArrive, o.peer, o.peerPort, c))
	case kindEject:
		f.push(fin, cellEvent(evDeliver, d, o.idx, c))
	case kindInject:
		o.cred[v] -= c.h.Len
		if c.ingFree > 0 {
			d.ip.ingressFreed(c)
		}
		// An intra-chip port: the head is in the switch's input FIFO at
		// once, the tail after the endpoint's serialisation.
		c.tail = fin
		d.arrive(portIP+o.idx, c, now)
	}
	return true
}

// pick chooses the VC o transmits next: a cell must have crossed the
// crossbar and, on links and injection ports, have credits. Strict-priority
// classes go first in class order; the others share by weighted round
// robin, WEIGHT cells per turn; VCs of one class take turns. The escape VCs
// (30, 31) are served as a strict class above all.
func (d *device) pick(o *outPort, now int64) int {
	var elig uint32
	for m := o.ne; m != 0; m &= m - 1 {
		v := bits.TrailingZeros32(m)
		c := o.q[v].peek()
		if c.avail <= now && (o.kind == kindEject || o.cred[v] >= c.h.Len) {
			elig |= 1 << v
		}
	}
	if elig == 0 {
		return -1
	}
	const escape = (1<<nVC - 1) &^ (1<<(nTC*vcsTC) - 1)
	if e := elig & escape; e != 0 {
		return bits.TrailingZeros32(e)
	}
	// inTC takes the class's next VC in turn: the first eligible one at or
	// after its pointer, wrapping.
	inTC := func(tc int) int {
		m := elig >> (tc * vcsTC) & 7
		if m == 0 {
			return -1
		}
		l := uint32(o.rr[tc])
		rot := (m>>l | m<<(vcsTC-l)) & 7
		l = (l + uint32(bits.TrailingZeros32(rot))) % vcsTC
		o.rr[tc] = uint8((l + 1) % vcsTC)
		return tc*vcsTC + int(l)
	}
	strict := d.qosStrict
	var tcs uint32 // classes with an eligible VC
	// Bit vcsTC*tc of has is set when class tc has an eligible VC.
	const firstVCs = 0b001_001_001_001_001_001_001_001_001_001
	has := (elig | elig>>1 | elig>>2) & firstVCs
	for m := has; m != 0; m &= m - 1 {
		tcs |= 1 << (bits.TrailingZeros32(m) / vcsTC)
	}
	if s := tcs & strict; s != 0 {
		return inTC(bits.TrailingZeros32(s))
	}
	w := tcs &^ strict
	// The first class with an eligible VC at or after the WRR cursor.
	rot := (w>>o.wrrTC | w<<(nTC-o.wrrTC)) & (1<<nTC - 1)
	tc := (o.wrrTC + bits.TrailingZeros32(rot)) % nTC
	if tc != o.wrrTC || o.wrrLeft <= 0 {
		o.wrrTC, o.wrrLeft = tc, max(int(d.qosWeight[tc]), 1)
	}
	o.wrrLeft--
	if o.wrrLeft <= 0 {
		o.wrrTC = (tc + 1) % nTC
	}
	return inTC(tc)
}

// bitErrors draws the bit errors a cell picks up on the wire: a Poisson
// number with mean bits x BER; on global links the FEC corrects up to three
// (§3.2: "Noise on global links is mitigated with FEC"). An error in the
// first 64 bits breaks the header CRC.
func (d *device) bitErrors(o *outPort, c *cell) uint8 {
	if o.ber <= 0 {
		return 0
	}
	nbits := 8 * c.h.Len
	k := poisson(d.berRng, float64(nbits)*o.ber)
	if k == 0 {
		return 0
	}
	if o.global && k <= 3 {
		o.peer.in[o.peerPort].fecFixed++
		return 0
	}
	var e uint8
	for range k {
		if d.berRng.IntN(nbits) < 64 {
			e |= errHdr
		} else {
			e |= errPay
		}
	}
	return e
}

// arrive puts a cell whose head came off a link (or an injection port) into
// its input FIFO; c.tail says when its last byte will be in.
func (d *device) arrive(p int, c *cell, now int64) {
	in := d.in[p]
	if p < nExt {
		up := in.upDev
		if up == nil || !up.out[in.upPort].isUp(now) {
			in.linkDrp++
			d.f.freeCell(c)
			return
		}
		if c.err&errHdr != 0 {
			// The header CRC fails: the cell is discarded as it comes in
			// and its credit returned once it is past (the FIFO never held
			// it).
			in.crcErrs++
			d.f.push(max(c.tail, now)+in.upDelay, creditEvent(up, in.upPort, c.h.VC, c.h.Len))
			d.f.freeCell(c)
			return
		}
		if c.err&errPay != 0 {
			in.payErrs++
		}
		if d.dropsArrival(p) {
			// tin-cell-drop: lost before the FIFO; the credit comes back
			// once the cell is past.
			d.f.push(max(c.tail, now)+in.upDelay, creditEvent(up, in.upPort, c.h.VC, c.h.Len))
			d.f.freeCell(c)
			return
		}
		c.err = 0
	}
	c.arr = now
	c.ready = now + d.requestDelay()
	c.out = -1
	q := &in.q[c.h.VC]
	q.push(c)
	in.ne |= 1 << c.h.VC
	d.inNE |= in.bit
	occ := q.bytes
	if in.busy > now && in.readVC == c.h.VC {
		occ += in.readLen
	}
	in.hwm = max(in.hwm, occ)
	in.rxCells++
	in.rxBytes += uint32(c.h.Len)
	d.wake(c.ready)
}

// credit returns n bytes of credit for VC vc to output port p (0-5) or
// injection port p-6.
func (d *device) credit(p, vc, n int) {
	var o *outPort
	if p < nPorts {
		o = d.out[p]
		if !o.up {
			return // the link went down meanwhile: the credits are moot
		}
	} else {
		o = d.inj[p-nPorts]
	}
	o.cred[vc] += n
	d.wake(d.f.now)
}

// returnCredit frees n bytes of input FIFO p's VC vc at time t.
func (d *device) returnCredit(p, vc, n int, t int64) {
	in := d.in[p]
	if in.leakLeft > 0 && (in.leakVC < 0 || in.leakVC == vc) {
		in.leakLeft--
		if in.upDev != nil {
			in.upDev.out[in.upPort].leaked[vc] += n
		}
		return
	}
	if p >= nExt {
		d.f.push(t, creditEvent(d, nPorts+p-nExt, vc, n))
		return
	}
	if in.upDev != nil {
		d.f.push(t+in.upDelay, creditEvent(in.upDev, in.upPort, vc, n))
	}
}

// deliver hands a cell that left ejection port p to its endpoint.
func (d *device) deliver(p int, c *cell, now int64) {
	if p == portIP {
		d.ip.receive(c, now)
	} else {
		d.rm.receive(c, now)
	}
	d.f.freeCell(c)
}

// arbitrate is one request-grant-accept round of the iSLIP-style arbiter
// (§3.1): one request per VC per input, outputs grant round-robin over
// (input, VC), inputs accept round-robin over outputs; pointers move only
// on first-iteration accepts; a second iteration fills unmatched ports.
// Ports transferring a cell are "busy" and take no part (§3.1's
// modification for variable cell sizes). It reports whether the arbiter
// must run again next cycle: an input lost every request, or a cell was
// dropped at a head.
//
// The requests are bit sets (req[o][i]: the VCs of input i requesting
// output o), so that a grant or an accept is a search of a few words in
// round-robin order rather than a scan of every request.
func (d *device) arbitrate(now int64) bool {
	var req [nPorts][nPorts]uint32
	var reqIns uint32        // inputs with a request
	var insOf [nPorts]uint32 // per output, the inputs requesting it
	var reqOuts uint32       // outputs requested
	moved := false
	for mi := d.inNE; mi != 0; mi &= mi - 1 {
		i := bits.TrailingZeros32(mi)
		in := d.in[i]
		if in.busy > now {
			continue
		}
		for m := in.ne; m != 0; m &= m - 1 {
			v := bits.TrailingZeros32(m)
			c := in.q[v].peek()
			if c.ready > now {
				continue
			}
			if c.out < 0 && !d.route(c, i, now) {
				d.drop(i, v, now)
				moved = true
				continue
			}
			o := d.out[c.out]
			if o.xbusy > now || o.q[c.outVC].bytes+c.h.Len > int(d.outqCap) {
				continue
			}
			req[c.out][i] |= 1 << v
			reqIns |= 1 << i
			insOf[c.out] |= 1 << i
			reqOuts |= 1 << c.out
		}
	}
	if reqIns == 0 {
		return moved
	}

	var inM, outM uint32 // matched inputs and outputs
	for iter := 0; iter < 2; iter++ {
		// Grant: each free output takes the first requesting (input, VC)
		// at or after its pointer, in (input, VC) order, wrapping.
		var gIn, gVC [nPorts]int
		var grantsTo [nPorts]uint32 // per input, the outputs granting it
		for m := reqOuts &^ outM; m != 0; m &= m - 1 {
			o := bits.TrailingZeros32(m)
			if d.out[o].xbusy > now {
				continue
			}
			if i, v := grantFor(&req[o], insOf[o]&^inM, d.out[o].grant); i >= 0 {
				gIn[o], gVC[o] = i, v
				grantsTo[i] |= 1 << o
			}
		}
		// Accept: each input takes the first granting output at or after
		// its pointer, wrapping.
		matched := false
		for i := range nPorts {
			g := grantsTo[i]
			if g == 0 || inM>>i&1 != 0 {
				continue
			}
			acc := uint(d.in[i].acc)
			rot := (g>>acc | g<<(nPorts-acc)) & (1<<nPorts - 1)
			pick := (int(acc) + bits.TrailingZeros32(rot)) % nPorts
			v := gVC[pick]
			inM |= 1 << i
			outM |= 1 << pick
			matched = true
			if iter == 0 {
				d.out[pick].grant = (i*nVC + v + 1) % (nPorts * nVC)
				d.in[i].acc = (pick + 1) % nPorts
			}
			d.transfer(i, v, now)
		}
		if !matched {
			break
		}
	}
	// An input whose requests all lost stays eligible: arbitrate again.
	if reqIns&^inM != 0 {
		return true
	}
	return moved
}

// grantFor is an output's grant: the first (input, VC) of req (VCs per
// input) at or after the pointer g = input*nVC + VC in round-robin order,
// among the inputs ins; (-1, -1) when there is none.
func grantFor(req *[nPorts]uint32, ins uint32, g int) (int, int) {
	if ins == 0 {
		return -1, -1
	}
	gi, gv := g/nVC, uint(g%nVC)
	mine := ins>>gi&1 != 0
	if mine {
		if m := req[gi] & (^uint32(0) << gv); m != 0 {
			return gi, bits.TrailingZeros32(m)
		}
	}
	// The other inputs from gi+1 on, wrapping.
	if r := ins &^ (1 << gi); r != 0 {
		s := uint(gi + 1)
		rot := (r>>s | r<<(nPorts-s)) & (1<<nPorts - 1)
		i := (gi + 1 + bits.TrailingZeros32(rot)) % nPorts
		return i, bits.TrailingZeros32(req[i])
	}
	if mine {
		if m := req[gi] & (1<<gv - 1); m != 0 {
			return gi, bits.TrailingZeros32(m)
		}
	}
	return -1, -1
}

// transfer moves the head cell of input i, VC v across the crossbar into
// its output buffer.
func (d *device) transfer(i, v int, now int64) {
	in := d.in[i]
	q := &in.q[v]
	c := q.pop()
	if q.n == 0 {
		in.ne &^= 1 << v
		if in.ne == 0 {
			d.inNE &^= in.bit
		}
	}
	o := d.out[c.out]
	// The crossbar moves 64 B a cycle, but a cell cut through before its
	// tail arrived streams at its input's pace: input and output stay busy
	// (§3.1's "busy" for variable cells) until the tail has been read out of
	// the FIFO, which is when its credit goes back: the space is free only
	// once the whole cell has left it. The tail follows the head's path through
	// the switch's pipeline: it can leave the output a fall-through after it
	// arrived.
	across := now + int64((c.h.Len+xbarBytes-1)/xbarBytes)*cyclePS
	busy := max(across, c.tail+d.requestDelay())
	in.busy, o.xbusy = busy, busy
	in.readVC, in.readLen = v, c.h.Len
	c.tailOut = max(across, c.tail+d.fallThrough())
	d.returnCredit(i, v, c.h.Len, busy)
	if c.h.Trace {
		d.traceCell(c, i, int(c.out), now)
	}
	if int(c.out) < nExt {
		c.h.Hop--
	}
	c.h.VC = int(c.outVC)
	c.avail = now + cyclePS
	oq := &o.q[c.outVC]
	oq.push(c)
	o.ne |= 1 << c.outVC
	d.outNE |= o.bit
	o.hwm = max(o.hwm, oq.bytes)
	d.swCells++
	d.swBytes += uint32(c.h.Len)
	switch {
	case int(c.out) >= nExt:
		d.swEjected++
	case i >= nExt:
		d.swInjected++
	}
}

// drop discards the head cell of input i, VC v (no route, hop count spent,
// VC overflow): its credit is returned once its tail is in (a cell cut
// through may still be arriving).
func (d *device) drop(i, v int, now int64) {
	in := d.in[i]
	q := &in.q[v]
	c := q.pop()
	if q.n == 0 {
		in.ne &^= 1 << v
		if in.ne == 0 {
			d.inNE &^= in.bit
		}
	}
	d.returnCredit(i, v, c.h.Len, max(now, c.tail))
	d.f.freeCell(c)
}

// route computes the output port and VC of a cell at the head of input i's
// FIFO: ejection when the cell is for this TiN, else the routing table of
// input i in the mode of the cell's type (§3.2). It returns false (the cell
// is dropped, counted) when there is no route, the hop count is spent or
// the VC would leave the class's three routing VCs.
func (d *device) route(c *cell, i int, now int64) bool {
	dst := c.h.Dst
	if dst.Chip() == d.addr {
		switch ep := dst.EP(); {
		case ep < ipPorts:
			c.out = portIP
		case ep == epRMA:
			c.out = portRM
		default:
			d.swNoRoute++
			return false
		}
		c.outVC, c.rkind = uint8(c.h.VC), rkEject
		return true
	}
	if dst.Pod() >= maxPods || dst.TiN() >= maxTins {
		d.swNoRoute++
		return false
	}
	if c.h.Hop == 0 {
		d.swHopExpired++
		return false
	}
	cd := d.candidates(i, dst.Pod()*maxTins+dst.TiN())
	mins, nons := &cd.mins, &cd.nons
	nm, nn := int(cd.nm), int(cd.nn)
	if nm+nn == 0 {
		d.swNoRoute++
		return false
	}
	vcFor := func(p int) (int, bool) {
		vc := c.h.VC
		if vc >= nTC*vcsTC {
			return vc, true // escape VCs keep their VC
		}
		// §3.2: "The VC is incremented when moving from a global link to
		// a local link".
		if d.in[i].class == classGlobal && d.out[p].class == classLocal {
			if vc%vcsTC == vcsTC-1 {
				return vc, false
			}
			vc++
		}
		return vc, true
	}
	cost := func(p int, nonMin bool) int64 {
		o := d.out[p]
		if !o.isUp(now) {
			return math.MaxInt64 / 4
		}
		vc, _ := vcFor(p)
		depth := int64(o.q[vc].bytes)
		if nonMin {
			return depth*int64(d.arWeight) + int64(d.arBias)
		}
		return depth
	}
	mode := d.modeFor(c.h.Type)
	out, kind := -1, uint8(0)
	switch {
	case d.faults.adaptiveStuck && (mode == modeAdaptive || mode == modeMinAdaptive):
		if nm > 0 {
			out, kind = int(mins[0]), rkMinimal
		} else {
			out, kind = int(nons[0]), rkNonMin
		}
	case mode == modeAdaptive || mode == modeMinAdaptive && nm == 0:
		// §3.2: two of the (up to) eight minimal and three of the (up to)
		// 24 non-minimal candidates, drawn at random, weighed by output
		// queue depth in favour of the minimal ones. Minimal adaptive
		// without minimal entries falls back to this.
		best := int64(math.MaxInt64)
		for _, k := range d.sample(nm, 2) {
			if cst := cost(int(mins[k]), false); cst < best {
				best, out, kind = cst, int(mins[k]), rkMinimal
			}
		}
		if mode == modeAdaptive || nm == 0 {
			for _, k := range d.sample(nn, 3) {
				if cst := cost(int(nons[k]), true); cst < best {
					best, out, kind = cst, int(nons[k]), rkNonMin
				}
			}
		}
	case mode == modeMinAdaptive:
		best := int64(math.MaxInt64)
		for _, k := range d.sample(nm, 2) {
			if cst := cost(int(mins[k]), false); cst < best {
				best, out, kind = cst, int(mins[k]), rkMinimal
			}
		}
	default:
		// Deterministic modes: "a hash of the source and destination
		// addresses" picks the entry (§3.2). A data cell carries no source
		// address (its SRC field is its RPTR), so it hashes on its DST
		// alone: a pair's data cells still share one path, which is what a
		// deterministic mode is for (docs/tin.md, "Modes"; reading A2).
		h := routeHash(hashSrc(&c.h), c.h.Dst)
		if mode == modeDeterministic || nm == 0 {
			k := int(h % uint32(nm+nn))
			if k < nm {
				out, kind = int(mins[k]), rkDetMin
			} else {
				out, kind = int(nons[k-nm]), rkDetNon
			}
		} else {
			out, kind = int(mins[h%uint32(nm)]), rkDetMin
		}
	}
	vc, ok := vcFor(out)
	if !ok {
		d.swVCOverflow++
		return false
	}
	switch kind {
	case rkMinimal:
		d.arMinimal++
	case rkNonMin:
		d.arNonMinimal++
	default:
		d.arDeterministic++
	}
	c.out, c.outVC, c.rkind = int8(out), uint8(vc), kind
	return true
}

// rtCands are the usable entries of one routing-table row (input port,
// destination): the valid ones toward a GNet port other than the input,
// minimal and non-minimal apart, in table order. Written rows are read
// again at the next cell that needs them (Write32 clears valid).
type rtCands struct {
	valid  bool
	nm, nn uint8
	mins   [nMin]int8
	nons   [nNonMin]int8
}

// candidates returns row dst of input i's table as rtCands: a cell routes
// by them, and the row is scanned only when it was written since.
func (d *device) candidates(i, dst int) *rtCands {
	cd := &d.cand[i][dst]
	if cd.valid {
		return cd
	}
	*cd = rtCands{valid: true}
	for k, e := range &d.rt[i][dst] {
		if e&rtValid == 0 {
			continue
		}
		p := int(e & rtPortMask)
		if p >= nExt || p == i {
			continue // only GNet ports, and never back where it came from
		}
		if k < nMin {
			cd.mins[cd.nm] = int8(p)
			cd.nm++
		} else {
			cd.nons[cd.nn] = int8(p)
			cd.nn++
		}
	}
	return cd
}

// hashSrc is the source address the deterministic hash takes: the
// header's SRC, but 0 for a DATA cell, whose SRC field is its RPTR.
func hashSrc(h *Header) Addr {
	if h.Type == TypeData {
		return 0
	}
	return h.Src
}

// routeHash is the deterministic modes' hash (docs/tin.md): the
// multiplicative hash of SRC<<16|DST, its bits 31:16 (SRC 0 for DATA
// cells, hashSrc).
func routeHash(src, dst Addr) uint32 {
	return (uint32(src)<<16 | uint32(dst)) * 0x9E3779B1 >> 16
}

// sample returns up to k distinct indices below n, drawn at random.
func (d *device) sample(n, k int) []int {
	if n <= k {
		s := d.sampleBuf[:n]
		for i := range s {
			s[i] = i
		}
		return s
	}
	s := d.sampleBuf[:k]
	for i := range s {
	again:
		x := d.arRng.IntN(n)
		for j := 0; j < i; j++ {
			if s[j] == x {
				goto again
			}
		}
		s[i] = x
	}
	return s
}

// flush drops every cell the device holds (a run abandoned): queued cells
// give their credits back, so that only leaked credits stay missing.
func (d *device) flush() {
	for p, in := range d.in {
		for v := range in.q {
			for in.q[v].n > 0 {
				d.f.freeCell(in.q[v].pop())
			}
		}
		in.ne, in.busy = 0, 0
		_ = p
	}
	for _, o := range append(d.out[:], d.inj[:]...) {
		for v := range o.q {
			for o.q[v].n > 0 {
				d.f.freeCell(o.q[v].pop())
			}
		}
		o.ne, o.txFree, o.xbusy = 0, 0, 0
		if o.kind == kindLink && o.up {
			for v := range o.cred {
				o.cred[v] = o.credInit - o.leaked[v]
			}
		}
		if o.kind == kindInject {
			for v := range o.cred {
				o.cred[v] = int(d.vcFifo)
			}
		}
	}
	d.inNE, d.outNE = 0, 0
	d.tickAt = math.MaxInt64
	d.ip.flush()
	d.rm.flush()
	d.gensFlush()
}
