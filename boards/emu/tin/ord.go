package tin

import (
	"math"
	"math/rand/v2"
	"sort"
)

// The ordering engine of the RMA endpoint (SC'18 §III): ordered transfers
// in slow mode (one REQ outstanding, source-side ordering, §III-D1) and fast
// mode (speculative connections, CID/SEQ, SYN, a reorder buffer at the
// target, §III-D2), exactly-once delivery with replay buffers (§III-D3),
// synchronized transfers counted with CNT (§III-E), FIN/FIN-ACK connection
// teardown, and fall-back to slow mode when connections run out (§III-C).
// Both ends of every stream live here: the source side (streams this board
// sends) and the target side (connections, reorder buffer, replay buffer,
// target memory).

// OREQ flag bits in payload word 0.
const (
	ofSYN    = 1 << 23
	ofEOD    = 1 << 22
	ofSYNC   = 1 << 21
	ofSLOW   = 1 << 20
	ofSYNCOP = 1 << 19
	cidNone  = 0xFF
)

// OCTL kinds (payload bits 63:60) and NACK reasons (19:16).
const (
	ocACK    = 1
	ocNACK   = 2
	ocFIN    = 3
	ocFINACK = 4

	nackNoConn     = 1
	nackROBFull    = 2
	nackReplayFull = 3
)

// Delivery-log flag bits (word 1, bits 31:24).
const (
	dlSlow     = 1 << 0
	dlEOD      = 1 << 1
	dlSyncOp   = 1 << 2
	dlDup      = 1 << 3 // an execution of a REQ that had executed before
	dlSync     = 1 << 4
	dlFromROB  = 1 << 5 // waited in the reorder buffer
	dlReleased = 1 << 6 // released by tin-rob-early-release
)

// Per-REQ states at the source.
const (
	stUnsent = iota
	stInflight
	stLost   // its timer expired: to be sent again
	stNacked // the target rejected it: to be sent again in slow mode
	stAcked
)

type oreqState struct {
	state    uint8
	lastSent int64
}

// ostream is one stream at its source.
type ostream struct {
	g        *ordGenState
	tag      uint16
	dst      Addr
	n        int
	bytes    int
	sync     bool
	eod      bool
	forced   bool // OG_CTRL.SLOW: slow mode from the start
	cid      int  // -1: no source connection
	slow     bool
	fellBack bool
	noCID    bool
	traced   []bool

	st       []oreqState
	next     int // fast mode: first REQ never sent
	acked    int
	base     int // oldest REQ not acked
	since    int64
	slowSeq  int // the slow-mode REQ in flight, -1 none
	sendNext int64
	pumpAt   int64

	timerGen uint32
	timerAt  int64

	retxAny  bool
	lastSend int64
	finSent  bool
	finAt    int64
	done     bool

	start, allAcked int64
	retx, nacks     uint32
}

type connKey struct {
	src Addr
	cid uint8
}

type streamKey struct {
	src Addr
	tag uint16
}

type replayKey struct {
	src Addr
	tag uint16
	seq uint16
}

// robEntry is a REQ held at the target.
type robEntry struct {
	seq  int
	cnt  int
	c    cellInfo
	cid  uint8
	flag uint32
}

// cellInfo is what the target keeps of a REQ cell.
type cellInfo struct {
	src    Addr
	tag    uint16
	seq    uint16
	flags  uint32
	cid    uint8
	traced bool
	sentNS uint32 // the copy's send timestamp (fabric ns)
}

// oconn is a target-side connection ({source endpoint, CID}, §III-D2).
type oconn struct {
	key      connKey
	tag      uint16
	sync     bool
	expected int // -1 until the SYN (or a slow-mode REQ) sets it
	rob      map[int]*robEntry
	done     map[int]bool // synchronized: data REQs whose ACK left target memory
	pending  map[int]bool // synchronized: executed, memory not done yet
	doneN    int
	held     *robEntry // synchronized: the sync operation waiting for CNT
}

type ordEngine struct {
	d *device
	e *rmaEP
	f *fabric

	srcConns, tgtConns, robEntries, maxOut, replayN uint32
	timeoutNS, lifetimeNS, memNS, backoffNS         uint32
	lossReq, lossAck, jitterNS, dropEvery           uint32

	// Source side.
	cidFree []int
	cidUsed []bool
	streams map[uint16]*ostream

	// Target side.
	conns     map[connKey]*oconn
	connsOpen int
	robUsed   int
	replay    map[replayKey]uint32
	bySteam   map[streamKey][]uint16 // replay entries per stream
	execs     map[replayKey]uint8
	fetchAdd  map[streamKey]uint32
	memFree   int64
	dropped   map[replayKey]bool // ORD_DROP_EVERY: REQs dropped once

	rng *rand.Rand
	ctr [nOrdCounters]uint32
}

func newOrdEngine(d *device, e *rmaEP) *ordEngine {
	o := &ordEngine{d: d, e: e, rng: d.b.Rand("tin/ordering")}
	o.flush()
	return o
}

func (o *ordEngine) reset() {
	o.srcConns, o.tgtConns, o.robEntries = resetSrcConns, resetTgtConns, resetROB
	o.maxOut, o.replayN = resetMaxOut, resetReplay
	o.timeoutNS, o.lifetimeNS, o.memNS, o.backoffNS = resetTimeoutNS, resetLifetimeNS, resetOrdMemNS, resetBackoffNS
	o.lossReq, o.lossAck, o.jitterNS, o.dropEvery = 0, 0, 0, 0
}

// flush forgets every stream and connection (a run abandoned, or a new
// run starting).
func (o *ordEngine) flush() {
	o.cidFree, o.cidUsed = nil, nil
	o.streams = map[uint16]*ostream{}
	o.conns = map[connKey]*oconn{}
	o.connsOpen, o.robUsed = 0, 0
	o.replay = map[replayKey]uint32{}
	o.bySteam = map[streamKey][]uint16{}
	o.execs = map[replayKey]uint8{}
	o.fetchAdd = map[streamKey]uint32{}
	o.memFree = 0
	o.dropped = map[replayKey]bool{}
}

// prepare sizes the source connection pool for a run.
func (o *ordEngine) prepare() {
	n := int(min(o.srcConns, cidNone))
	o.cidFree = o.cidFree[:0]
	for i := n - 1; i >= 0; i-- {
		o.cidFree = append(o.cidFree, i)
	}
	o.cidUsed = make([]bool, n)
}

func (o *ordEngine) readCfg(addr uint32) (uint32, bool) {
	switch addr {
	case regOrdSrcConns:
		return o.srcConns, true
	case regOrdTgtConns:
		return o.tgtConns, true
	case regOrdROBEntries:
		return o.robEntriesReads(), true
	case regOrdMaxOut:
		return o.maxOut, true
	case regOrdReplay:
		return o.replayN, true
	case regOrdTimeoutNS:
		return o.timeoutNS, true
	case regOrdLifetimeNS:
		return o.lifetimeNS, true
	case regOrdMemNS:
		return o.memNS, true
	case regOrdBackoffNS:
		return o.backoffNS, true
	case regOrdLossReqPPM:
		return o.lossReq, true
	case regOrdLossAckPPM:
		return o.lossAck, true
	case regOrdJitterNS:
		return o.jitterNS, true
	case regOrdDropEvery:
		return o.dropEvery, true
	}
	return 0, false
}

func (o *ordEngine) writeCfg(addr, v uint32) bool {
	switch addr {
	case regOrdSrcConns:
		o.srcConns = v & 0xFF
	case regOrdTgtConns:
		o.tgtConns = v & 0xFF
	case regOrdROBEntries:
		o.robEntries = v & 0xFFFF
	case regOrdMaxOut:
		o.maxOut = v & 0xFFFF
	case regOrdReplay:
		o.replayN = v & 0xFFFF
	case regOrdTimeoutNS:
		o.timeoutNS = v
	case regOrdLifetimeNS:
		o.lifetimeNS = v
	case regOrdMemNS:
		o.memNS = v & 0xFFFF
	case regOrdBackoffNS:
		o.backoffNS = v & 0xFFFF
	case regOrdLossReqPPM:
		o.lossReq = v & 0xFFFFF
	case regOrdLossAckPPM:
		o.lossAck = v & 0xFFFFF
	case regOrdJitterNS:
		o.jitterNS = v & 0xFFFF
	case regOrdDropEvery:
		o.dropEvery = v & 0xFFFF
	default:
		return false
	}
	return true
}

func (o *ordEngine) tc() int { return int(o.d.rmaTC >> 8 & 0xF) }

// --- source side -----------------------------------------------------------

// startStream opens a stream of n REQs to dst at time now: with a source
// connection (fast mode) when one is free, else in slow mode (§III-C).
func (o *ordEngine) startStream(g *ordGenState, tag uint16, now int64) *ostream {
	s := &ostream{g: g, tag: tag, dst: g.dst, n: g.length, bytes: g.bytes, sync: g.sync, eod: g.eod,
		forced: g.slow, cid: -1, slowSeq: -1, start: now, since: now, pumpAt: math.MaxInt64, timerAt: math.MaxInt64}
	s.st = make([]oreqState, s.n)
	s.traced = g.traced(s.n)
	switch {
	case s.forced:
		s.slow = true
	case len(o.cidFree) > 0:
		s.cid = o.cidFree[len(o.cidFree)-1]
		o.cidFree = o.cidFree[:len(o.cidFree)-1]
		o.cidUsed[s.cid] = true
	default:
		s.slow, s.noCID = true, true
		o.ctr[cOrdNoCID]++
	}
	o.streams[tag] = s
	o.pump(s, now)
	return s
}

func (s *ostream) cidByte() uint8 {
	if s.cid < 0 {
		return cidNone
	}
	return uint8(s.cid)
}

// pump sends whatever the stream may send now.
func (o *ordEngine) pump(s *ostream, now int64) {
	if s.done {
		return
	}
	if s.acked == s.n {
		if s.finSent {
			return
		}
		t := now
		if s.retxAny {
			// Copies sent again may still be on their way: wait until
			// any such copy has outlived the packet lifetime (§III-B),
			// so no duplicate can reach a closed connection.
			t = max(t, s.lastSend+int64(o.lifetimeNS)*1000)
		}
		if t > now {
			o.pumpLater(s, t)
			return
		}
		o.sendFIN(s, now)
		return
	}
	if now < s.sendNext {
		o.pumpLater(s, s.sendNext)
		return
	}
	if s.slow {
		if s.slowSeq >= 0 {
			return
		}
		k := s.base
		if s.st[k].state == stInflight {
			return // a fast copy is still out: its timer decides
		}
		o.sendREQ(s, k, true, now)
		s.slowSeq = k
		o.rearm(s, now)
		return
	}
	if k := s.base; k < s.next && s.st[k].state == stLost {
		o.sendREQ(s, k, false, now)
	}
	gap := int64(s.g.gapNS) * 1000
	for s.next < s.n && s.next-s.acked < int(max(o.maxOut, 1)) {
		if now < s.sendNext {
			o.pumpLater(s, s.sendNext)
			break
		}
		o.sendREQ(s, s.next, false, now)
		s.next++
		s.sendNext = now + gap
	}
	o.rearm(s, now)
}

func (o *ordEngine) pumpLater(s *ostream, t int64) {
	if s.pumpAt <= t {
		return
	}
	s.pumpAt = t
	o.e.f.at(t, func() {
		if s.pumpAt != t {
			return
		}
		s.pumpAt = math.MaxInt64
		o.pump(s, o.e.f.now)
	})
}

// sendREQ sends one copy of REQ k.
func (o *ordEngine) sendREQ(s *ostream, k int, slow bool, now int64) {
	d := o.d
	st := &s.st[k]
	if st.state != stUnsent {
		o.ctr[cOrdRetx]++
		s.retx++
		s.retxAny = true
	}
	switch {
	case slow:
		o.ctr[cOrdSlowSent]++
	case st.state == stUnsent:
		o.ctr[cOrdReqsSent]++
	}
	st.state, st.lastSent = stInflight, now
	s.lastSend = now
	flags := uint64(0)
	if k == 0 {
		flags |= ofSYN
	}
	if s.eod {
		flags |= ofEOD
	}
	if s.sync {
		flags |= ofSYNC
	}
	if slow {
		flags |= ofSLOW
	}
	cnt := 0
	if s.sync && k == s.n-1 {
		// SC'18 §III-E: "Since the synchronization operation is a
		// non-idempotent operation, the EOD flag is set", whatever the
		// stream's data asked for.
		flags |= ofSYNCOP | ofEOD
		cnt = s.n
	}
	c := d.newCell(TypeOReq, s.dst, MakeAddr(d.addr.Pod(), d.addr.TiN(), epRMA), HeaderSize+OReqHdr+s.bytes, vcOf(o.tc()), s.traced[k], now)
	c.p0 = uint64(s.cidByte())<<56 | uint64(uint16(k))<<40 | uint64(uint16(cnt))<<24 | flags | uint64(s.tag)
	c.p1 = uint64(uint32(now/1000))<<32 | 1<<24 | uint64(s.bytes)
	if o.jitterNS > 0 {
		// ORD_JITTER_NS: the REQ waits a random time before it enters the
		// fabric, so REQs of a stream reach the target out of order.
		t := now + int64(o.rng.IntN(int(o.jitterNS)+1))*1000
		o.e.f.at(t, func() { d.inject(1, c, o.e.f.now) })
		return
	}
	d.inject(1, c, now)
}

func (o *ordEngine) sendFIN(s *ostream, now int64) {
	if !s.finSent {
		s.allAcked = now
	}
	s.finSent, s.finAt = true, now
	o.sendCtl(o.d.addr|epRMA, s.dst, ocFIN, s.cidByte(), 0, s.tag, 0, 0, false, now)
	o.rearm(s, now)
}

// rearm points the stream's single timer at the oldest REQ in flight (or
// the FIN): a REQ waiting in the target's reorder buffer is answered when
// its predecessors arrive, so only the oldest one can time out.
func (o *ordEngine) rearm(s *ostream, now int64) {
	var at int64 = math.MaxInt64
	switch {
	case s.done:
	case s.finSent:
		at = s.finAt + int64(o.timeoutNS)*1000
	case s.base < s.n && s.st[s.base].state == stInflight:
		at = max(s.st[s.base].lastSent, s.since) + int64(o.timeoutNS)*1000
	}
	if at == s.timerAt {
		return
	}
	s.timerAt = at
	s.timerGen++
	if at == math.MaxInt64 {
		return
	}
	gen := s.timerGen
	o.e.f.timer(at, func() {
		if s.timerGen != gen {
			return
		}
		o.expire(s, o.e.f.now)
	})
}

func (o *ordEngine) expire(s *ostream, now int64) {
	s.timerAt = math.MaxInt64
	o.ctr[cOrdTimeouts]++
	if s.finSent {
		o.sendFIN(s, now) // the FIN or its FIN-ACK was lost
		return
	}
	if k := s.base; k < s.n && s.st[k].state == stInflight {
		s.st[k].state = stLost
		if s.slowSeq == k {
			s.slowSeq = -1
		}
	}
	o.pump(s, now)
	o.rearm(s, now)
}

// onCtl takes an ACK, NACK or FIN-ACK at the source.
func (o *ordEngine) onCtl(kind int, src Addr, cid uint8, seq int, tag uint16, now int64) {
	s := o.streams[tag]
	if s == nil || s.done || s.dst.Chip() != src.Chip() {
		return
	}
	switch kind {
	case ocACK:
		if seq >= s.n || s.st[seq].state == stAcked {
			return
		}
		s.st[seq].state = stAcked
		s.acked++
		if s.slowSeq == seq {
			s.slowSeq = -1
		}
		if seq == s.base {
			for s.base < s.n && s.st[s.base].state == stAcked {
				s.base++
			}
			s.since = now
		}
		if s.acked == s.n {
			s.allAcked = now
		}
	case ocNACK:
		if seq >= s.n || s.st[seq].state == stAcked {
			return
		}
		o.ctr[cOrdNacksReceived]++
		s.nacks++
		if !s.slow {
			// §III-C: "when connection resources are exhausted, the
			// protocol falls back to slow mode so that progress can
			// still be made".
			s.slow, s.fellBack = true, true
			o.ctr[cOrdFallbacks]++
		}
		s.st[seq].state = stNacked
		if s.slowSeq == seq {
			s.slowSeq = -1
			s.sendNext = max(s.sendNext, now+int64(o.backoffNS)*1000)
		}
	case ocFINACK:
		if !s.finSent {
			return
		}
		o.finish(s, now)
		return
	}
	o.pump(s, now)
	o.rearm(s, now)
}

// finish closes a stream at its source: the connection id is free again,
// the record and the latency sample are written.
func (o *ordEngine) finish(s *ostream, now int64) {
	s.done = true
	s.timerGen++
	if s.cid >= 0 {
		o.cidUsed[s.cid] = false
		o.cidFree = append(o.cidFree, s.cid)
	}
	delete(o.streams, s.tag)
	o.ctr[cOrdStreamsDone]++
	var flags uint32
	if s.fellBack {
		flags |= 1
	}
	if s.noCID {
		flags |= 2
	}
	if s.eod {
		flags |= 4
	}
	if s.sync {
		flags |= 8
	}
	if s.forced {
		flags |= 16
	}
	d := o.d
	d.orec.push([]uint32{uint32(s.dst.Chip())<<16 | uint32(s.tag), uint32(s.n)<<16 | flags,
		uint32(s.start / 1000), uint32(s.allAcked / 1000), uint32(now / 1000), min(s.retx, 0xFFFF)<<16 | min(s.nacks, 0xFFFF)})
	d.latSample(latOrd, s.allAcked-s.start)
	s.g.streamDone(now)
}

// --- target side -----------------------------------------------------------

// receive takes an OREQ or OCTL cell.
func (o *ordEngine) receive(c *cell, now int64) {
	if c.h.Type == TypeOCtl {
		kind := int(c.p0 >> 60)
		cid := uint8(c.p0 >> 52)
		seq := int(uint16(c.p0 >> 36))
		tag := uint16(c.p0 >> 20)
		if kind == ocFIN {
			o.onFIN(c.h.Src, cid, tag, c.h.Trace, now)
			return
		}
		if o.lossAck > 0 && o.rng.IntN(1_000_000) < int(o.lossAck) {
			o.ctr[cOrdDroppedAck]++
			return
		}
		o.onCtl(kind, c.h.Src, cid, seq, tag, now)
		return
	}
	if o.lossReq > 0 && o.rng.IntN(1_000_000) < int(o.lossReq) {
		o.ctr[cOrdDroppedReq]++
		return
	}
	// ORD_DROP_EVERY n: the first arrival of SEQ n-1, 2n-1, ... of every
	// stream is discarded, a loss pattern a reference model can replay.
	if n := uint16(o.dropEvery); n > 0 {
		seq := uint16(c.p0 >> 40)
		k := replayKey{c.h.Src, uint16(c.p0), seq}
		if seq%n == n-1 && !o.dropped[k] {
			o.dropped[k] = true
			o.ctr[cOrdDroppedReq]++
			return
		}
	}
	// §III-B: packets have a maximum lifetime; an older REQ is discarded.
	age := uint32(now/1000) - uint32(c.p1>>32)
	if o.lifetimeNS > 0 && age > o.lifetimeNS {
		o.ctr[cOrdAgedDrops]++
		return
	}
	ci := cellInfo{src: c.h.Src, tag: uint16(c.p0), seq: uint16(c.p0 >> 40), flags: uint32(c.p0) & 0xFF0000,
		cid: uint8(c.p0 >> 56), traced: c.h.Trace, sentNS: uint32(c.p1 >> 32)}
	cnt := int(uint16(c.p0 >> 24))
	o.onREQ(ci, cnt, now)
}

func (o *ordEngine) onREQ(ci cellInfo, cnt int, now int64) {
	seq := int(ci.seq)
	key := replayKey{ci.src, ci.tag, ci.seq}
	eod := ci.flags&ofEOD != 0
	if ci.flags&ofSLOW != 0 {
		if eod {
			if r, ok := o.replay[key]; ok {
				o.ctr[cOrdDupSuppressed]++
				o.ack(ci, r, now)
				return
			}
		}
		// Slow mode proves every earlier REQ of the stream was acked:
		// their replay entries can go (§III-D3).
		o.freeReplayBelow(streamKey{ci.src, ci.tag}, ci.seq)
		if eod && len(o.replay) >= int(o.replayN) {
			o.nack(ci, nackReplayFull, now)
			return
		}
		conn := o.conns[connKey{ci.src, ci.cid}]
		if ci.cid == cidNone {
			conn = nil
		}
		var dup bool
		if conn != nil && conn.sync && ci.flags&ofSYNCOP == 0 && !conn.done[seq] {
			conn.pending[seq] = true
		}
		if conn != nil && !conn.sync {
			dup = conn.expected >= 0 && seq < conn.expected
			if e := conn.rob[seq]; e != nil {
				delete(conn.rob, seq) // the fast copy it supersedes
				o.robUsed--
			}
		}
		o.exec(ci, 0, conn, dup, now)
		if conn != nil {
			if conn.sync {
				if conn.held != nil && int(conn.held.seq) == seq {
					conn.held = nil
					o.robUsed--
				}
			} else {
				conn.expected = max(conn.expected, seq+1)
				o.drain(conn, now)
			}
		}
		return
	}
	ck := connKey{ci.src, ci.cid}
	conn := o.conns[ck]
	if conn == nil {
		// §III-D2: the first REQ received opens a connection, SYN or not.
		if o.connsOpen >= int(o.tgtConns) {
			o.nack(ci, nackNoConn, now)
			return
		}
		conn = &oconn{key: ck, tag: ci.tag, sync: ci.flags&ofSYNC != 0, expected: -1,
			rob: map[int]*robEntry{}, done: map[int]bool{}, pending: map[int]bool{}}
		o.conns[ck] = conn
		o.connsOpen++
		o.ctr[cOrdConnHWM] = max(o.ctr[cOrdConnHWM], uint32(o.connsOpen))
	}
	if ci.flags&ofSYN != 0 && conn.expected < 0 {
		conn.expected = seq
	}
	if conn.sync {
		o.onSyncREQ(conn, ci, cnt, now)
		return
	}
	switch {
	case conn.expected >= 0 && seq < conn.expected:
		o.duplicate(conn, ci, now)
	case seq == conn.expected:
		if eod && len(o.replay) >= int(o.replayN) {
			o.nack(ci, nackReplayFull, now)
			return
		}
		o.exec(ci, 0, conn, false, now)
		conn.expected++
		o.drain(conn, now)
	default:
		if conn.rob[seq] != nil {
			return // a copy of a REQ already waiting: answered when it runs
		}
		if o.robUsed >= o.robCapacity() {
			o.nack(ci, nackROBFull, now)
			return
		}
		conn.rob[seq] = &robEntry{seq: seq, c: ci}
		o.robUsed++
		o.ctr[cOrdROBInserts]++
		o.ctr[cOrdROBHWM] = max(o.ctr[cOrdROBHWM], uint32(o.robUsed))
		if h := o.d.faults.robHold; h > 0 && len(conn.rob) >= h {
			o.releaseEarly(conn, now)
		}
	}
}

// duplicate handles a REQ the connection has executed: exactly-once
// delivery replays the stored result (§III-D3); without EOD the REQ is
// executed again (§III-D1, Fig. 4).
func (o *ordEngine) duplicate(conn *oconn, ci cellInfo, now int64) {
	key := replayKey{ci.src, ci.tag, ci.seq}
	if ci.flags&ofEOD != 0 {
		if r, ok := o.replay[key]; ok {
			o.ctr[cOrdDupSuppressed]++
			o.ack(ci, r, now)
			return
		}
		o.ctr[cOrdReplayMiss]++
		o.exec(ci, 0, conn, o.execs[key] > 0, now)
		return
	}
	o.exec(ci, 0, conn, true, now)
}

// drain delivers the REQs the reorder buffer holds in sequence.
func (o *ordEngine) drain(conn *oconn, now int64) {
	for {
		e := conn.rob[conn.expected]
		if e == nil {
			return
		}
		delete(conn.rob, conn.expected)
		o.robUsed--
		if e.c.flags&ofEOD != 0 && len(o.replay) >= int(o.replayN) {
			o.nack(e.c, nackReplayFull, now)
			return
		}
		o.exec(e.c, dlFromROB, conn, false, now)
		conn.expected++
	}
}

// releaseEarly is the tin-rob-early-release fault: the lowest held REQ runs
// without its predecessors.
func (o *ordEngine) releaseEarly(conn *oconn, now int64) {
	seqs := make([]int, 0, len(conn.rob))
	for s := range conn.rob {
		seqs = append(seqs, s)
	}
	sort.Ints(seqs)
	e := conn.rob[seqs[0]]
	delete(conn.rob, e.seq)
	o.robUsed--
	o.exec(e.c, dlFromROB|dlReleased, conn, false, now)
	conn.expected = e.seq + 1
	o.drain(conn, now)
}

// onSyncREQ handles a REQ of a synchronized transfer (§III-E): data REQs
// run on arrival in any order; the sync operation waits in the reorder
// buffer until CNT-1 data REQs have their ACKs back from target memory.
func (o *ordEngine) onSyncREQ(conn *oconn, ci cellInfo, cnt int, now int64) {
	seq := int(ci.seq)
	key := replayKey{ci.src, ci.tag, ci.seq}
	if ci.flags&ofSYNCOP == 0 {
		if conn.done[seq] || conn.pending[seq] {
			o.duplicate(conn, ci, now)
			return
		}
		if ci.flags&ofEOD != 0 && len(o.replay) >= int(o.replayN) {
			o.nack(ci, nackReplayFull, now)
			return
		}
		conn.pending[seq] = true
		o.exec(ci, 0, conn, false, now)
		return
	}
	if _, ok := o.replay[key]; ok || o.execs[key] > 0 {
		o.duplicate(conn, ci, now)
		return
	}
	if conn.held != nil {
		return // its copy waits already
	}
	if conn.doneN >= cnt-1 {
		o.exec(ci, 0, conn, false, now)
		return
	}
	if o.robUsed >= o.robCapacity() {
		o.nack(ci, nackROBFull, now)
		return
	}
	conn.held = &robEntry{seq: seq, cnt: cnt, c: ci}
	o.robUsed++
	o.ctr[cOrdROBInserts]++
	o.ctr[cOrdROBHWM] = max(o.ctr[cOrdROBHWM], uint32(o.robUsed))
	if h := o.d.faults.robHold; h > 0 {
		o.releaseHeld(conn, dlFromROB|dlReleased, now)
	}
}

func (o *ordEngine) releaseHeld(conn *oconn, flags uint8, now int64) {
	e := conn.held
	conn.held = nil
	o.robUsed--
	o.exec(e.c, flags, conn, false, now)
}

// exec forwards a REQ to target memory: it is logged now, its operation (a
// fetch-and-add on the stream's counter) completes ORD_MEM_NS later, in
// delivery order, and then its ACK leaves, carrying the result. EOD REQs
// keep the result in the replay buffer.
func (o *ordEngine) exec(ci cellInfo, extra uint8, conn *oconn, dup bool, now int64) {
	key := replayKey{ci.src, ci.tag, ci.seq}
	sk := streamKey{ci.src, ci.tag}
	r := o.fetchAdd[sk]
	o.fetchAdd[sk] = r + 1
	o.execs[key]++
	o.ctr[cOrdExecuted]++
	flags := uint32(extra)
	if ci.flags&ofSLOW != 0 {
		flags |= dlSlow
	}
	if ci.flags&ofEOD != 0 {
		flags |= dlEOD
		if _, ok := o.replay[key]; !ok {
			o.replay[key] = r
			o.bySteam[sk] = append(o.bySteam[sk], ci.seq)
		}
	}
	if ci.flags&ofSYNCOP != 0 {
		flags |= dlSyncOp
	}
	if ci.flags&ofSYNC != 0 {
		flags |= dlSync
	}
	if dup || o.execs[key] > 1 {
		flags |= dlDup
		o.ctr[cOrdDupExecuted]++
	}
	o.d.dlog.push([]uint32{uint32(ci.src)<<16 | uint32(ci.tag), uint32(ci.seq) | uint32(min(o.execs[key], 255))<<16 | flags<<24,
		ci.sentNS, uint32(now / 1000), uint32(ci.cid)<<24 | r&0xFFFFFF})
	// A pipeline: every operation takes ORD_MEM_NS, and completes (and is
	// acknowledged) in the order it was forwarded.
	t := max(now+int64(o.memNS)*1000, o.memFree)
	o.memFree = t
	seq := int(ci.seq)
	o.e.f.at(t, func() {
		tt := o.e.f.now
		if conn != nil && conn.sync && ci.flags&ofSYNCOP == 0 && conn.pending[seq] {
			delete(conn.pending, seq)
			if !conn.done[seq] {
				conn.done[seq] = true
				conn.doneN++
			}
			if conn.held != nil && conn.doneN >= conn.held.cnt-1 && o.conns[conn.key] == conn {
				o.releaseHeld(conn, dlFromROB, tt)
			}
		}
		o.ack(ci, r, tt)
	})
}

func (o *ordEngine) ack(ci cellInfo, result uint32, now int64) {
	o.sendCtl(MakeAddr(o.d.addr.Pod(), o.d.addr.TiN(), epRMA), ci.src, ocACK, ci.cid, int(ci.seq), ci.tag, 0, result, ci.traced, now)
}

func (o *ordEngine) nack(ci cellInfo, reason int, now int64) {
	switch reason {
	case nackNoConn:
		o.ctr[cOrdNackNoConn]++
	case nackROBFull:
		o.ctr[cOrdNackROBFull]++
	case nackReplayFull:
		o.ctr[cOrdNackReplayFull]++
	}
	o.sendCtl(MakeAddr(o.d.addr.Pod(), o.d.addr.TiN(), epRMA), ci.src, ocNACK, ci.cid, int(ci.seq), ci.tag, reason, 0, ci.traced, now)
}

// onFIN closes the connection and frees the stream's replay entries, then
// answers FIN-ACK (§III-D2).
func (o *ordEngine) onFIN(src Addr, cid uint8, tag uint16, traced bool, now int64) {
	o.ctr[cOrdFins]++
	ck := connKey{src, cid}
	if conn := o.conns[ck]; conn != nil && cid != cidNone {
		o.robUsed -= len(conn.rob)
		if conn.held != nil {
			o.robUsed--
		}
		delete(o.conns, ck)
		o.connsOpen--
	}
	sk := streamKey{src, tag}
	for _, s := range o.bySteam[sk] {
		delete(o.replay, replayKey{src, tag, s})
	}
	delete(o.bySteam, sk)
	o.sendCtl(MakeAddr(o.d.addr.Pod(), o.d.addr.TiN(), epRMA), src, ocFINACK, cid, 0, tag, 0, 0, traced, now)
}

func (o *ordEngine) freeReplayBelow(sk streamKey, seq uint16) {
	l := o.bySteam[sk]
	keep := l[:0]
	for _, s := range l {
		if s < seq {
			delete(o.replay, replayKey{sk.src, sk.tag, s})
		} else {
			keep = append(keep, s)
		}
	}
	o.bySteam[sk] = keep
}

// sendCtl sends an ACK, NACK, FIN or FIN-ACK (16 B).
func (o *ordEngine) sendCtl(src, dst Addr, kind int, cid uint8, seq int, tag uint16, reason int, result uint32, traced bool, now int64) {
	d := o.d
	c := d.newCell(TypeOCtl, dst, src, OCtlCell, vcOf(o.tc()), traced, now)
	c.p0 = uint64(kind)<<60 | uint64(cid)<<52 | uint64(uint16(seq))<<36 | uint64(tag)<<20 | uint64(reason&0xF)<<16 | uint64(result&0xFFFF)
	d.inject(1, c, now)
}
