package tin

// The 1RMA endpoint (§3.4): reads are Req cells (48 B) that solicit Resp
// cells in the reverse direction, both routed adaptively; the initiator
// keeps a window of outstanding reads (it has room for their responses);
// the target reads host memory over PCIe (RMA_MEM_NS) and returns one Resp
// cell per 128 B completion; the initiator lands them in arrival order and
// completes the read after its own completion write (RMA_CPL_NS). The
// endpoint also runs the ordering engine (ord.go).

type rmaRead struct {
	init, tgt Addr
	tag       uint16
	n         int
	tc        int
	hi        bool
	traced    bool
	submitted int64 // the command reached the hardware (ps)
	cells     int
	got       int
	g         *rmaGenState
}

type rmaEP struct {
	d *device
	f *fabric

	window, memNS, cplNS uint32

	out         map[uint16]*rmaRead
	nextTag     uint16
	outstanding int
	backlog     []*rmaRead

	ctr [nRMACounters]uint32
	ord *ordEngine
}

func newRMAEP(d *device) *rmaEP {
	e := &rmaEP{d: d, out: map[uint16]*rmaRead{}}
	e.ord = newOrdEngine(d, e)
	return e
}

func (e *rmaEP) reset() {
	e.window, e.memNS, e.cplNS = resetRMAWindow, resetRMAMemNS, resetRMACplNS
	e.ord.reset()
}

func (e *rmaEP) flush() {
	e.out = map[uint16]*rmaRead{}
	e.outstanding = 0
	e.backlog = nil
	e.ord.flush()
}

// submit takes a read command from the host at time now.
func (e *rmaEP) submit(r *rmaRead, now int64) {
	r.submitted = now
	e.ctr[cRMAIssued]++
	if e.outstanding >= int(max(e.window, 1)) || len(e.backlog) > 0 {
		e.ctr[cRMABlocked]++
		e.backlog = append(e.backlog, r)
		return
	}
	e.issue(r, now)
}

func (e *rmaEP) issue(r *rmaRead, now int64) {
	for {
		if _, used := e.out[e.nextTag]; !used {
			break
		}
		e.nextTag++
	}
	r.tag = e.nextTag
	e.nextTag++
	e.out[r.tag] = r
	e.outstanding++
	r.cells = len(RespCells(r.n))
	d := e.d
	c := d.newCell(TypeReq, r.tgt, r.init, ReqCell, vcOf(r.tc), r.traced, now)
	c.p0 = uint64(r.tag)<<48 | uint64(uint32(r.n))<<16
	c.p1 = uint64(r.tag) * 4096 // the remote address read
	c.rd = r
	d.inject(1, c, now)
}

// receive takes a cell the switch ejected to the RMA endpoint.
func (e *rmaEP) receive(c *cell, now int64) {
	switch c.h.Type {
	case TypeReq:
		e.onReq(c, now)
	case TypeResp:
		e.onResp(c, now)
	case TypeOReq, TypeOCtl:
		e.ord.receive(c, now)
	}
}

// onReq serves a read: after the PCIe read latency the completions go back
// as Resp cells on the request's traffic class.
func (e *rmaEP) onReq(c *cell, now int64) {
	e.ctr[cRMAServed]++
	r := c.rd
	tc := c.h.VC / vcsTC
	d := e.d
	e.f.at(now+int64(e.memNS)*1000, func() {
		t := e.f.now
		sizes := RespCells(r.n)
		for i, sz := range sizes {
			rc := d.newCell(TypeResp, r.init, r.tgt, sz, vcOf(tc), r.traced, t)
			last := uint64(0)
			if i == len(sizes)-1 {
				last = 1
			}
			rc.p0 = (uint64(r.tag)<<16 | uint64(i&0x7F)<<1 | last) << 32
			rc.rd = r
			e.ctr[cRMARespSent]++
			d.inject(1, rc, t)
		}
	})
}

// onResp lands one completion; the last one completes the read after the
// initiator's completion write.
func (e *rmaEP) onResp(c *cell, now int64) {
	e.ctr[cRMARespReceived]++
	tag := uint16(c.p0 >> 48)
	r := e.out[tag]
	if r == nil || r != c.rd {
		return
	}
	r.got++
	if r.got < r.cells {
		return
	}
	e.f.at(now+int64(e.cplNS)*1000, func() {
		t := e.f.now
		delete(e.out, r.tag)
		e.outstanding--
		e.ctr[cRMADone]++
		k := latRMALo
		if r.hi {
			k = latRMAHi
		}
		e.d.latSample(k, t-r.submitted)
		r.g.completed++
		e.f.opDone()
		for len(e.backlog) > 0 && e.outstanding < int(max(e.window, 1)) {
			b := e.backlog[0]
			e.backlog = e.backlog[1:]
			e.issue(b, t)
		}
	})
}
