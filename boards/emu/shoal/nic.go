package shoal

import (
	"math"
	"math/bits"
)

// cell is a cell as a NIC holds it in a queue: its header fields (the full
// sequence number at the source) and the flow information the generator
// writes into a flow's first cell.
type cell struct {
	kind  uint8
	sop   bool
	eop   bool
	local bool // sourced by the NIC holding it
	dst   uint16
	src   uint16
	seq   uint32
	meta  *flowMeta
}

// flowMeta is one flow of the traffic generator: what its first cell's
// payload carries to the destination.
type flowMeta struct {
	tag, bytes, startNS uint32
	firstTxNS           uint32
	txSet               bool
	cells               int
	run                 uint32
}

// histEntry remembers a cell sent to a peer until the peer's feedback
// about it arrives (§3.3.2: the sender records the subflow of each cell it
// sends; App. D: it keeps the cell to retransmit it).
type histEntry struct {
	slot int64
	c    cell
}

type stream struct {
	flows     []*flowMeta // started, not yet fully released
	cellIdx   int         // next cell of flows[0]
	remaining int         // cells of flows not yet released
	nextSeq   uint32
	ageStart  int64 // slot the flow to this destination started (§3.3.3)
}

type reasm struct {
	expected uint32
	buf      map[uint32]bufCell
	cur      *flowMeta
}

type bufCell struct {
	sop, eop bool
	meta     *flowMeta
}

type rxMark struct {
	r     int64
	state uint8
}

const (
	markNone    = 0
	markIntact  = 1
	markCorrupt = 2
	rxRingSize  = 4096
)

type flowDesc struct {
	dst            int
	bytes, startNS uint32
	tag            uint32
	cells          int
}

// nicState is a NIC while the fabric runs (§3.3, §3.5, §4.2). Queue Q[j]
// holds the cells to send when the schedule connects this node to node j:
// cells whose final destination is j, and at most one local cell (any
// destination) routed through j, the others waiting as flow ids in the
// ready queue R[j] (§3.3.3).
type nicState struct {
	e    *engine
	nd   *nicDev
	dev  *device
	id   int
	N, E int
	S, G int64 // slot and guard the hardware keeps, cycles
	// dataCyc: the cycles a cell occupies, the declared slot minus the
	// declared guard (shoal-slot-long and shoal-guard-short change S and
	// G, not the cell).
	dataCyc int64
	slotPS  int64

	cellBits   int
	payload    int
	owd        int64 // one-way node-to-node delay measured by the sync, ps
	kfb        int64 // slots between a cell and the peer slot whose feedback covers it (the whole cell in, reading S3)
	closeLag   int64 // slots until a receive slot is judged
	slot       int64 // next slot to transmit
	rxClose    int64 // next receive slot to judge
	rxRing     [rxRingSize]rxMark
	downAt     int64
	dead       bool
	ignoreRL   bool
	cc         uint32
	queueCap   int
	residPS    float64
	residRound int64 // residPS rounded to a ps
	qTotal     int
	localInQ   uint64
	leakReady  bool   // shoal-ready-leak: a second local cell may enter Q[j]
	localTwo   []bool // shoal-ready-leak: Q[j] holds a second local cell
	pendLCD    uint64
	retxValid  uint64
	failed     uint64
	active     uint64 // destinations with cells to release
	readyMask  uint64 // bit j: R[j] holds a flow (noteReady)

	q           []cellQueue
	ready       []intQueue
	inReady     []uint64 // [j] bit k: flow to k waits in R[j]
	outstanding []uint64 // [j] bit k: the subflow via j to k awaits feedback
	hasFb       []uint64
	fb          [][]uint16
	fbT         [][]int64
	reserved    []int
	hist        []histQueue
	lastRecv    []int16
	retx        []cell
	notices     [][]uint16
	unreach     []uint64 // [j] bit k: j told us it cannot reach k
	streams     []stream
	resend      [][]cell
	rr          []int
	reasm       []reasm
	flows       []flowDesc
	next        int
}

func newNICState(e *engine, nd *nicDev) *nicState {
	d := nd.dev
	N := int(d.nodes)
	n := &nicState{e: e, nd: nd, dev: d, id: int(nd.nodeID), N: N, E: int(d.epoch),
		S: int64(d.slotCyclesReal()), G: int64(d.guardReal()), owd: d.f.owdPS, cc: nd.ccCtrl,
		dataCyc:  int64(d.slotCycles) - int64(d.guard),
		queueCap: int(nd.queueCap), residPS: nd.residualPS, downAt: math.MaxInt64}
	n.slotPS = n.S * cyclePS
	n.residRound = int64(math.Round(n.residPS))
	n.cellBits = d.cellBytes() * 8
	n.payload = d.cellBytes() - headerBytes
	// The peer's decision for slot r sees our cell of slot s when the
	// whole cell, ending with its slot, crossed the fabric and the receive
	// pipeline (its CRC checked, App. D) before the peer's transmit
	// pipeline started (§4.2; reading S3).
	n.kfb = ceilDiv(n.slotPS+n.owd+(ccRxCycles+ccTxCycles)*cyclePS, n.slotPS)
	if d.subtle.fbMask&(1<<nd.port) != 0 {
		n.kfb += d.subtle.fbLate // shoal-feedback-late
	}
	n.leakReady = d.subtle.readyLeak&(1<<nd.port) != 0
	n.closeLag = ceilDiv(n.G*cyclePS+n.owd+(ccRxCycles+ccTxCycles)*cyclePS+n.slotPS/2, n.slotPS)
	if d.faults.downMask&(1<<nd.port) != 0 {
		n.downAt = e.tbAbs + d.faults.downAfter*n.slotPS
	}
	n.ignoreRL = d.faults.ignoreRL&(1<<nd.port) != 0
	n.q = make([]cellQueue, N)
	n.ready = make([]intQueue, N)
	n.inReady = make([]uint64, N)
	n.outstanding = make([]uint64, N)
	n.hasFb = make([]uint64, N)
	n.fb = make([][]uint16, N)
	n.fbT = make([][]int64, N)
	for j := range n.fb {
		n.fb[j] = make([]uint16, N)
		n.fbT[j] = make([]int64, N)
	}
	n.reserved = make([]int, N)
	n.localTwo = make([]bool, N)
	n.hist = make([]histQueue, N)
	n.lastRecv = make([]int16, N)
	for j := range n.lastRecv {
		n.lastRecv[j] = -1
	}
	n.retx = make([]cell, N)
	n.notices = make([][]uint16, N)
	n.unreach = make([]uint64, N)
	n.streams = make([]stream, N)
	n.resend = make([][]cell, N)
	n.rr = make([]int, N)
	n.reasm = make([]reasm, N)
	for i := range n.rxRing {
		n.rxRing[i].r = -1
	}
	return n
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

func (n *nicState) ctr(i int) { n.nd.ctr[i]++ }

// clockErr is this NIC's clock minus rack time at rack time t, ps.
func (n *nicState) clockErr(t int64) float64 {
	return n.residPS + n.dev.faults.drift(n.e.f, t)
}

// slotStartAbs is the rack time at which this NIC's clock reads the start
// of slot s.
func (n *nicState) slotStartAbs(s int64) int64 {
	local := n.e.tbAbs + s*n.slotPS
	if n.dev.faults.driftPPM == 0 {
		return local - n.residRound // clockErr is residPS throughout
	}
	return local - int64(math.Round(n.clockErr(local)))
}

// decisionTime: the transmit pipeline picks slot s's cell ccTxCycles
// before the slot starts (§4.2).
func (n *nicState) decisionTime(s int64) int64 {
	return n.slotStartAbs(s) - ccTxCycles*cyclePS
}

// relNS is this NIC's reading of traffic time at rack time t, in ns.
func (n *nicState) relNS(t int64) uint32 {
	v := (float64(t) + n.clockErr(t) - float64(n.e.tZero)) / 1000
	return uint32(max(min(v, math.MaxUint32), 0))
}

// tx is one transmit slot (§3.3.1): the cell at the head of the queue for
// the connected node, else an empty cell. It returns false when the NIC is
// dead (node-down) and needs no more slots.
func (n *nicState) tx(e *engine) bool {
	s := n.slot
	n.slot++
	if e.now >= n.downAt {
		// A dead node starts none of its flows: do not wait for them.
		n.dead = true
		if e.tg {
			e.pendingStarts -= len(n.flows) - n.next
		}
		n.next = len(n.flows)
		return false
	}
	n.closeRx(s)
	if e.tg && n.next < len(n.flows) {
		n.startDue(e, s)
	}
	n.releaseDue(e, s)
	ent := n.nd.sched[s%int64(n.E)]
	if ent&schedTxValid == 0 {
		return true
	}
	j := int(ent & schedTxMask)
	if j >= n.N || j == n.id {
		return true
	}
	n.ctr(cTxSlots)
	bj := uint64(1) << j
	if n.failed&bj != 0 {
		n.ctr(cSkippedSlots) // §3.5 i: stop sending to a failed node
		return true
	}
	var c cell
	switch {
	case n.retxValid&bj != 0:
		c = n.retx[j]
		n.retxValid &^= bj
		n.ctr(cTxRetx)
	case len(n.notices[j]) > 0:
		c = cell{kind: KindNotice, dst: n.notices[j][0], src: uint16(n.id)}
		n.notices[j] = n.notices[j][1:]
		n.ctr(cTxNotice)
	default:
		n.release(e, j, s, true)
		if n.q[j].n > 0 {
			c = n.q[j].pop()
			n.qTotal--
			if c.local {
				if n.leakReady && n.localTwo[j] {
					n.localTwo[j] = false
				} else {
					n.localInQ &^= bj
				}
				n.ctr(cTxLocal)
				n.refill(e, j)
			} else {
				n.ctr(cTxFwd)
			}
		} else {
			c = cell{kind: KindEmpty, src: uint16(n.id)}
			n.ctr(cTxEmpty)
		}
	}
	h := Header{Kind: c.kind, Dst: c.dst, Src: c.src, Hop: uint16(n.id), Seq: uint16(c.seq % seqMod),
		Feedback: n.feedbackFor(j), SOP: c.sop, EOP: c.eop, LCD: n.pendLCD&bj != 0}
	if h.LCD {
		n.pendLCD &^= bj
		n.ctr(cLCDSent)
	}
	n.ctr(cTxCells)
	hq := &n.hist[j]
	if hq.n >= histCap {
		// The peer never answered about the oldest cell: let its subflow go.
		if old := hq.pop(); old.c.local && old.c.kind == KindData {
			n.outstanding[j] &^= 1 << old.c.dst
		}
	}
	hq.push(histEntry{slot: s, c: c})
	if c.sop && c.meta != nil && !c.meta.txSet {
		c.meta.txSet, c.meta.firstTxNS = true, n.relNS(e.now)
	}
	e.launch(n, newWire(h, c.meta), n.slotStartAbs(s)+(n.G+nicTxCycles)*cyclePS)
	return true
}

// feedbackFor is the rate-limit feedback for peer j: the length of the
// queue the last cell from j went into (Eq. 1), counting the local flows
// waiting for it with ready queues (Eq. 6).
func (n *nicState) feedbackFor(j int) uint16 {
	k := int(n.lastRecv[j])
	if k < 0 {
		return 0
	}
	v := n.q[k].n
	if n.cc&ccReady != 0 {
		v += n.ready[k].n - 1
	}
	return uint16(max(min(v, maxFeedback), 0))
}

func (n *nicState) avail(k int) int { return n.streams[k].remaining + len(n.resend[k]) }

func (n *nicState) updateActive(k int) {
	if n.avail(k) > 0 {
		n.active |= 1 << k
	} else {
		n.active &^= 1 << k
	}
}

// routeOK says whether a local cell for k may go through j: j is a live
// node that has not told us it cannot reach k (§3.5 ii).
func (n *nicState) routeOK(j, k int) bool {
	return j != n.id && j < n.N && n.failed&(1<<j) == 0 && n.unreach[j]&(1<<k) == 0
}

// releaseDue applies the release rule to the subflows through every peer at
// the start of slot s, not only through the peer the slot connects: Eq. 2
// releases a cell "at time t when" the rule holds (§3.3.2), and a released
// flow joins the ready queue and, when Q[j] holds no local cell, Q[j] at
// once (§3.3.3). Q[j] is a FIFO, so the moment matters: a local cell
// released only at j's slot falls behind the forwarded cells that arrived
// in between, its subflow loses an epoch, and two subflows sharing a
// virtual link settle into three-epoch turns instead of the fair halves
// the mechanism gives (§3.3.2: fair queuing at cell granularity on each
// virtual link). Feedback is acted on when it arrives (applyFeedback).
// Reading S63, Shoal §3.3.2-§3.3.3.
func (n *nicState) releaseDue(e *engine, s int64) {
	if n.active == 0 || n.ignoreRL {
		return
	}
	// release(j) without rotation changes something only when some
	// active flow's subflow through j is free (no cell awaiting feedback,
	// not in the ready queue, j a live route) or, with ready queues, Q[j]
	// can take a ready flow's cell. Most slots neither holds for most
	// peers: a few mask operations instead of release's walk. release(j)
	// changes only peer j's masks (and active, read afresh), so what is
	// taken before the loop holds for the peers after j.
	out, inR, unr := n.outstanding[:n.N], n.inReady[:n.N], n.unreach[:n.N]
	two := n.localTwo[:n.N]
	var refillable uint64
	if n.cc&ccReady != 0 {
		refillable = n.readyMask
	}
	for j := range out {
		bj := uint64(1) << j
		if j == n.id {
			continue
		}
		if n.failed&bj == 0 && n.active&^out[j]&^inR[j]&^unr[j] != 0 ||
			refillable&bj != 0 && (n.localInQ&bj == 0 || n.leakReady && !two[j]) {
			n.release(e, j, s, false)
		}
	}
}

// noteReady keeps readyMask's bit j equal to whether R[j] holds a flow.
func (n *nicState) noteReady(j int) {
	if n.ready[j].n > 0 {
		n.readyMask |= 1 << j
	} else {
		n.readyMask &^= 1 << j
	}
}

// release decides which local flows may put a cell through node j now
// (§3.3.2, §3.3.3): a subflow with no cell awaiting feedback whose release
// rule (Eq. 2) holds, and for a new flow, the queue is short (len <= 2^age).
// rotate moves the round-robin start among the local flows through j: done
// once per transmit slot to j, so that the order among flows released
// together rotates as it did when j's slot was the only release point.
func (n *nicState) release(e *engine, j int, s int64, rotate bool) {
	if n.active == 0 {
		if n.cc&ccReady != 0 {
			n.refill(e, j)
		}
		return
	}
	if n.ignoreRL {
		// ignore-rate-limit: a cell of every active flow, every epoch.
		for m := n.active; m != 0; m &= m - 1 {
			k := bits.TrailingZeros64(m)
			if n.routeOK(j, k) {
				if c, ok := n.makeCell(e, k); ok {
					n.push(j, c)
				}
			}
		}
		return
	}
	E := int64(n.E)
	rot := uint(n.rr[j])
	// The flows whose subflow through j is free: routeOK(j, k), no cell
	// awaiting feedback, not in the ready queue. The loop changes these
	// only for the flow it is at, so they are taken once before it.
	free := n.active &^ n.outstanding[j] &^ n.inReady[j] &^ n.unreach[j]
	if j == n.id || j >= n.N || n.failed&(1<<j) != 0 {
		free = 0
	}
	for m := bits.RotateLeft64(free, -int(rot)); m != 0; m &= m - 1 {
		k := (bits.TrailingZeros64(m) + int(rot)) & 63
		if n.avail(k)-n.reserved[k] <= 0 {
			continue
		}
		b := uint64(1) << k
		lq := int64(n.q[j].n + n.ready[j].n)
		if n.cc&ccRateLimit != 0 && n.hasFb[j]&b != 0 {
			// Eq. 2: len(Q_ij(t)) + (t - T) >= len(Q_jk(T)), in epochs.
			if lq*E+(s-n.fbT[j][k]) < int64(n.fb[j][k])*E {
				continue
			}
		}
		if n.cc&ccNewFlow != 0 {
			if age := (s - n.streams[k].ageStart) / E; age < 62 && int64(n.q[j].n) > 1<<age {
				continue
			}
		}
		if n.cc&ccReady != 0 {
			n.inReady[j] |= b
			n.reserved[k]++
			n.ready[j].push(k)
			n.readyMask |= uint64(1) << j
			if l := uint16(min(n.ready[j].n, 0xFFFF)); l > n.nd.maxR[j] {
				n.nd.maxR[j] = l
				n.nd.maxRA = max(n.nd.maxRA, l)
			}
		} else if c, ok := n.makeCell(e, k); ok {
			n.push(j, c)
			n.outstanding[j] |= b
		}
	}
	if rotate {
		// rr[j] < N: the next one round.
		if n.rr[j]++; n.rr[j] >= n.N {
			n.rr[j] = 0
		}
	}
	if n.cc&ccReady != 0 && n.ready[j].n > 0 {
		n.refill(e, j)
	}
}

// refill moves the next ready flow's cell into Q[j] when Q[j] holds no
// local cell (§3.3.3).
func (n *nicState) refill(e *engine, j int) {
	bj := uint64(1) << j
	for (n.localInQ&bj == 0 || n.leakReady && !n.localTwo[j]) && n.ready[j].n > 0 {
		k := n.ready[j].pop()
		b := uint64(1) << k
		n.inReady[j] &^= b
		n.reserved[k]--
		if !n.routeOK(j, k) {
			continue
		}
		c, ok := n.makeCell(e, k)
		if !ok {
			continue
		}
		n.push(j, c)
		if n.localInQ&bj != 0 {
			n.localTwo[j] = true // shoal-ready-leak: the second one
		}
		n.localInQ |= bj
		n.outstanding[j] |= b
	}
	n.noteReady(j)
}

func (n *nicState) push(j int, c cell) {
	n.q[j].push(c)
	n.qTotal++
	nd := n.nd
	if l := uint16(min(n.q[j].n, 0xFFFF)); l > nd.maxQ[j] {
		nd.maxQ[j] = l
		nd.maxQAny = max(nd.maxQAny, l)
	}
	nd.maxQTotal = max(nd.maxQTotal, uint16(min(n.qTotal, 0xFFFF)))
}

// makeCell takes the next cell of the flow to k: one to send again first
// (§3.5 iii), else the stream's next.
func (n *nicState) makeCell(e *engine, k int) (cell, bool) {
	if len(n.resend[k]) > 0 {
		c := n.resend[k][0]
		n.resend[k] = n.resend[k][1:]
		n.updateActive(k)
		return c, true
	}
	st := &n.streams[k]
	if st.remaining == 0 {
		return cell{}, false
	}
	f := st.flows[0]
	c := cell{kind: KindData, dst: uint16(k), src: uint16(n.id), seq: st.nextSeq, local: true,
		sop: st.cellIdx == 0, eop: st.cellIdx == f.cells-1, meta: f}
	st.nextSeq++
	st.cellIdx++
	st.remaining--
	if st.cellIdx == f.cells {
		st.flows[0] = nil
		st.flows = st.flows[1:]
		st.cellIdx = 0
	}
	n.updateActive(k)
	return c, true
}

// arrive handles a cell leaving the receive pipeline.
func (n *nicState) arrive(e *engine, ev *event) {
	if e.now >= n.downAt {
		return
	}
	// The slot the cell belongs to, by this NIC's clock: slot r's cells
	// leave the MAC one-way delay after the sender's slot start + guard.
	tMac := ev.tMac()
	local := float64(tMac) + n.clockErr(tMac)
	x := (local - float64(e.tbAbs+n.G*cyclePS+n.owd)) / float64(n.slotPS)
	r := int64(math.Floor(x + 0.5))
	if r < n.rxClose || r-n.rxClose >= rxRingSize {
		n.ctr(cRxMisrouted)
		return
	}
	ent := n.nd.sched[r%int64(n.E)]
	j := int(ent >> schedRxShift & schedTxMask)
	if ent&schedRxValid == 0 || j >= n.N || j == n.id {
		n.ctr(cRxMisrouted)
		return
	}
	bj := uint64(1) << j
	h, ok := ev.w.header()
	if !ok || ev.w.bad {
		// App. D: take the congestion-control fields, assume
		// last-cell-dropped, and once the whole cell is in (its CRC
		// checked, reading S3) discard it and ask the sender to
		// retransmit.
		n.ctr(cRxCorrupt)
		n.mark(r, markCorrupt)
		if n.failed&bj != 0 {
			return
		}
		n.applyFeedback(e, j, r, int(h.Feedback), true)
		n.wholeCellAt(e, ev, r)
		return
	}
	if int(h.Hop) != j {
		n.ctr(cRxMisrouted)
		return
	}
	n.mark(r, markIntact)
	n.ctr(cRxCells)
	if n.failed&bj != 0 {
		return
	}
	n.applyFeedback(e, j, r, int(h.Feedback), h.LCD)
	switch h.Kind {
	case KindEmpty:
		n.ctr(cRxEmpty)
		n.lastRecv[j] = -1
	case KindNotice:
		n.ctr(cNoticesRx)
		n.lastRecv[j] = -1
		n.onUnreach(j, int(h.Dst))
	case KindData:
		// The header's feedback is used now (reading S2); the cell is
		// queued, forwarded or delivered once it is wholly in and its
		// CRC checked (App. D), dataCyc cycles later (reading S3).
		n.wholeCellAt(e, ev, r)
	}
}

// wholeCellAt schedules the cell whose header ev is for when its last word
// has left the receive pipeline: dataCyc cycles after its header (reading
// S3).
func (n *nicState) wholeCellAt(e *engine, ev *event, r int64) {
	in := *ev
	in.t, in.kind, in.r = ev.t+n.dataCyc*cyclePS, evCellIn, r
	e.push(&in)
}

// cellIn handles a data cell whose last word has left the receive
// pipeline: it is delivered, or queued to its destination, and the queue
// it joined is what the next feedback to its sender reports (§3.3.2).
func (n *nicState) cellIn(e *engine, ev *event) {
	if e.now >= n.downAt {
		return
	}
	j := int(n.nd.sched[ev.r%int64(n.E)] >> schedRxShift & schedTxMask)
	bj := uint64(1) << j
	if n.failed&bj != 0 {
		return
	}
	h, ok := ev.w.header()
	if !ok || ev.w.bad {
		n.pendLCD |= bj
		n.lastRecv[j] = -1
		return
	}
	dst := int(h.Dst)
	switch {
	case dst == n.id:
		n.lastRecv[j] = -1
		n.deliver(e, h, ev.w.meta)
	case dst >= n.N:
		n.ctr(cRxMisrouted)
		n.lastRecv[j] = -1
	case n.failed&(1<<dst) != 0:
		n.ctr(cFailDiscards) // §3.5 iv
		n.lastRecv[j] = int16(dst)
	case n.q[dst].n >= n.queueCap:
		n.ctr(cDrops)
		n.pendLCD |= bj
		n.lastRecv[j] = int16(dst)
	default:
		n.push(dst, cell{kind: KindData, dst: h.Dst, src: h.Src, seq: uint32(h.Seq), sop: h.SOP, eop: h.EOP, meta: ev.w.meta})
		n.ctr(cRxFwd)
		n.lastRecv[j] = int16(dst)
	}
}

func (n *nicState) mark(r int64, state uint8) {
	m := &n.rxRing[r&(rxRingSize-1)]
	if m.r != r {
		m.r, m.state = r, state
	} else if state == markIntact {
		m.state = state
	}
}

// applyFeedback takes peer j's feedback, carried by its cell of slot r. It
// covers the last cell we sent j that reached j before j decided that
// slot (App. A: the feedback needs j to have seen our cell).
func (n *nicState) applyFeedback(e *engine, j int, r int64, fb int, lcd bool) {
	cut := r - n.kfb
	hq := &n.hist[j]
	var last histEntry
	have := false
	for hq.n > 0 && hq.front().slot <= cut {
		ent := hq.pop()
		if have && last.c.local && last.c.kind == KindData {
			n.ack(j, last, fb)
		}
		last, have = ent, true
	}
	if !have {
		return
	}
	if lcd && last.c.kind == KindData {
		// App. D: send the cell again; its subflow stays outstanding.
		n.retx[j] = last.c
		n.retxValid |= 1 << j
		return
	}
	if last.c.local && last.c.kind == KindData {
		n.ack(j, last, fb)
		// Eq. 2 may hold at T itself (§3.3.2: "at time t (≥ T)"): release
		// now, ahead of forwarded cells that reach Q[j] later in the slot.
		if !n.ignoreRL {
			n.release(e, j, n.slot, false)
		}
	}
}

func (n *nicState) ack(j int, ent histEntry, fb int) {
	k := int(ent.c.dst)
	b := uint64(1) << k
	n.outstanding[j] &^= b
	n.hasFb[j] |= b
	n.fb[j][k] = uint16(min(fb, maxFeedback))
	n.fbT[j][k] = n.slot
	n.nd.ctr[cFBSlotsSum] += uint32(n.slot - ent.slot)
	n.ctr(cFBCount)
}

// closeRx judges the receive slots whose cells must have arrived by slot s:
// a slot with no cell from the scheduled peer is failed, and a peer heard
// nothing from is inferred failed (§3.5).
func (n *nicState) closeRx(s int64) {
	for limit := s - n.closeLag; n.rxClose <= limit; {
		r := n.rxClose
		n.rxClose++
		if r < 0 {
			continue
		}
		ent := n.nd.sched[r%int64(n.E)]
		j := int(ent >> schedRxShift & schedTxMask)
		if ent&schedRxValid == 0 || j >= n.N || j == n.id {
			continue
		}
		n.ctr(cRxSlots)
		state := uint8(markNone)
		if m := n.rxRing[r&(rxRingSize-1)]; m.r == r {
			state = m.state
		}
		if state != markIntact {
			n.ctr(cFailedSlots)
		}
		if state == markNone && n.failed&(1<<j) == 0 {
			n.inferFailed(j)
		}
	}
}

// inferFailed acts on a missing cell from j (§3.5): stop sending to j,
// notify the other nodes, send our outstanding local cells through other
// nodes, and discard what we were to forward to j.
func (n *nicState) inferFailed(j int) {
	bj := uint64(1) << j
	n.failed |= bj
	n.nd.failedPeers |= bj
	for m := 0; m < n.N; m++ {
		if m != n.id && m != j {
			n.notices[m] = append(n.notices[m], uint16(j))
		}
	}
	n.notices[j] = nil
	for n.q[j].n > 0 {
		c := n.q[j].pop()
		n.qTotal--
		if c.local {
			n.resendCell(c)
		} else {
			n.ctr(cFailDiscards)
		}
	}
	n.localInQ &^= bj
	n.localTwo[j] = false
	for n.ready[j].n > 0 {
		n.reserved[n.ready[j].pop()]--
	}
	n.noteReady(j)
	n.inReady[j] = 0
	for n.hist[j].n > 0 {
		if ent := n.hist[j].pop(); ent.c.local && ent.c.kind == KindData {
			n.resendCell(ent.c)
		}
	}
	if n.retxValid&bj != 0 && n.retx[j].local {
		n.resendCell(n.retx[j])
	}
	n.retxValid &^= bj
	n.outstanding[j], n.hasFb[j] = 0, 0
	n.pendLCD &^= bj
	n.lastRecv[j] = -1
}

// onUnreach: j can no longer reach k, so our local cells for k must go
// through other nodes (§3.5 ii).
func (n *nicState) onUnreach(j, k int) {
	if k >= n.N || k >= 64 {
		return
	}
	b := uint64(1) << k
	n.unreach[j] |= b
	if k == n.id {
		return
	}
	q := &n.q[j]
	for i, cnt := 0, q.n; i < cnt; i++ {
		c := q.pop()
		if c.local && int(c.dst) == k {
			n.qTotal--
			n.localInQ &^= 1 << j
			n.localTwo[j] = false
			n.resendCell(c)
			continue
		}
		q.push(c)
	}
	r := &n.ready[j]
	for i, cnt := 0, r.n; i < cnt; i++ {
		x := r.pop()
		if x == k {
			n.reserved[k]--
			continue
		}
		r.push(x)
	}
	n.noteReady(j)
	n.inReady[j] &^= b
	hq := &n.hist[j]
	for i, cnt := 0, hq.n; i < cnt; i++ {
		ent := hq.pop()
		if ent.c.local && ent.c.kind == KindData && int(ent.c.dst) == k {
			n.resendCell(ent.c)
			continue
		}
		hq.push(ent)
	}
	n.outstanding[j] &^= b
	n.refill(n.e, j)
}

func (n *nicState) resendCell(c cell) {
	k := int(c.dst)
	n.resend[k] = append(n.resend[k], c)
	n.updateActive(k)
}

// deliver puts a cell for this node in order (§3.5: reassembly by sequence
// number); a flow completes when its last cell is delivered in order.
func (n *nicState) deliver(e *engine, h Header, meta *flowMeta) {
	src := int(h.Src)
	if src >= n.N {
		n.ctr(cRxMisrouted)
		return
	}
	ra := &n.reasm[src]
	diff := (uint32(h.Seq) - ra.expected) % seqMod
	if diff >= reorderWindow {
		n.ctr(cRxDuplicate)
		return
	}
	if diff != 0 {
		full := ra.expected + diff
		if ra.buf == nil {
			ra.buf = map[uint32]bufCell{}
		}
		if _, dup := ra.buf[full]; dup {
			n.ctr(cRxDuplicate)
			return
		}
		ra.buf[full] = bufCell{sop: h.SOP, eop: h.EOP, meta: meta}
		n.ctr(cRxDelivered)
		e.progress()
		return
	}
	n.ctr(cRxDelivered)
	e.progress()
	n.consume(e, src, h.SOP, h.EOP, meta)
	ra.expected++
	for len(ra.buf) > 0 {
		b, ok := ra.buf[ra.expected]
		if !ok {
			break
		}
		delete(ra.buf, ra.expected)
		n.consume(e, src, b.sop, b.eop, b.meta)
		ra.expected++
	}
}

func (n *nicState) consume(e *engine, src int, sop, eop bool, meta *flowMeta) {
	ra := &n.reasm[src]
	if sop {
		ra.cur = meta
	}
	if !eop {
		return
	}
	if m := ra.cur; m != nil {
		n.nd.pushRecord([recWords]uint32{m.tag, uint32(src) | uint32(n.id)<<16, m.bytes, m.startNS, n.relNS(e.now), m.firstTxNS})
		n.ctr(cFlowsCompleted)
		if e.tg && m.run == e.runID {
			e.tgDone++
		}
	}
	ra.cur = nil
}

// loadFlows reads the flow table for a traffic run.
func (n *nicState) loadFlows(e *engine) int {
	nd := n.nd
	n.flows, n.next = n.flows[:0], 0
	for k := range n.streams {
		st := &n.streams[k]
		st.flows, st.cellIdx, st.remaining = nil, 0, 0
		n.resend[k] = nil
		n.updateActive(k)
	}
	for i := 0; i < int(nd.flowCount); i++ {
		w := nd.flows[i]
		fd := flowDesc{dst: int(w[0] & maxNodeID), bytes: w[1], startNS: w[2], tag: w[3]}
		src := int(w[0] >> 16 & maxNodeID)
		if src != n.id || fd.dst >= n.N || fd.dst == n.id || fd.bytes == 0 || n.payload <= 0 {
			nd.ctr[cBadDescriptors] = satAdd(nd.ctr[cBadDescriptors])
			continue
		}
		fd.cells = int((int64(fd.bytes) + int64(n.payload) - 1) / int64(n.payload))
		n.flows = append(n.flows, fd)
	}
	return len(n.flows)
}

// startDue starts the flows whose start time has come, in table order.
func (n *nicState) startDue(e *engine, s int64) {
	now := n.relNS(e.now)
	for n.next < len(n.flows) && n.flows[n.next].startNS <= now {
		fd := n.flows[n.next]
		n.next++
		e.pendingStarts--
		st := &n.streams[fd.dst]
		if n.avail(fd.dst) == 0 {
			st.ageStart = s // a new flow to this destination (§3.3.3)
		}
		st.flows = append(st.flows, &flowMeta{tag: fd.tag, bytes: fd.bytes, startNS: fd.startNS, cells: fd.cells, run: e.runID})
		st.remaining += fd.cells
		n.updateActive(fd.dst)
		n.ctr(cFlowsStarted)
		e.progress()
	}
}

func (e *engine) startTraffic() {
	e.runID++
	e.tg = true
	// Traffic time 0 is now, or slot 0 when the bootstrap just happened.
	e.tZero = max(e.now, e.tbAbs)
	e.tgFlows, e.tgDone, e.pendingStarts = 0, 0, 0
	for _, n := range e.nics {
		c := n.loadFlows(e)
		e.tgFlows += c
		if !n.dead {
			e.pendingStarts += c
		} else {
			n.next = len(n.flows)
		}
	}
	e.lastProgress = e.slotNow()
}

// Small FIFOs. Their buffers' lengths are powers of two (8, then doubled),
// so that an index wraps with a mask.

type cellQueue struct {
	buf     []cell
	head, n int
}

func (q *cellQueue) push(c cell) {
	if q.n == len(q.buf) {
		nb := make([]cell, max(8, 2*len(q.buf)))
		for i := 0; i < q.n; i++ {
			nb[i] = q.buf[(q.head+i)&(len(q.buf)-1)]
		}
		q.buf, q.head = nb, 0
	}
	q.buf[(q.head+q.n)&(len(q.buf)-1)] = c
	q.n++
}

func (q *cellQueue) pop() cell {
	c := q.buf[q.head]
	q.buf[q.head] = cell{}
	q.head = (q.head + 1) & (len(q.buf) - 1)
	q.n--
	return c
}

type intQueue struct {
	buf     []int
	head, n int
}

func (q *intQueue) push(v int) {
	if q.n == len(q.buf) {
		nb := make([]int, max(8, 2*len(q.buf)))
		for i := 0; i < q.n; i++ {
			nb[i] = q.buf[(q.head+i)&(len(q.buf)-1)]
		}
		q.buf, q.head = nb, 0
	}
	q.buf[(q.head+q.n)&(len(q.buf)-1)] = v
	q.n++
}

func (q *intQueue) pop() int {
	v := q.buf[q.head]
	q.head = (q.head + 1) & (len(q.buf) - 1)
	q.n--
	return v
}

type histQueue struct {
	buf     []histEntry
	head, n int
}

func (q *histQueue) push(h histEntry) {
	if q.n == len(q.buf) {
		nb := make([]histEntry, max(8, 2*len(q.buf)))
		for i := 0; i < q.n; i++ {
			nb[i] = q.buf[(q.head+i)&(len(q.buf)-1)]
		}
		q.buf, q.head = nb, 0
	}
	q.buf[(q.head+q.n)&(len(q.buf)-1)] = h
	q.n++
}

func (q *histQueue) front() *histEntry { return &q.buf[q.head] }

func (q *histQueue) pop() histEntry {
	h := q.buf[q.head]
	q.buf[q.head] = histEntry{}
	q.head = (q.head + 1) & (len(q.buf) - 1)
	q.n--
	return h
}
