package emu

import (
	"encoding/binary"
	"strings"
	"testing"
	"time"
)

// An independent controller (the runner's side of docs/mgmt.md, written
// from that page and docs/pmos.md without the firmware's encoders): it
// talks to a DCN board's mailbox through the register map, by symbolic
// names resolved from bitstreams/catalogue/mgmt.yaml, and bootstraps the
// boards behind it in waves.

const (
	cCtrl     = 0xFFFE
	cLL       = 0xFFFF
	cDiscover = 0x01
	cRelay    = 0x02
	cAssign   = 0x03
	cAssigned = 0x04
	cSend     = 0x05
	cRegReq   = 0x10
	cRegResp  = 0x11
	cEchoReq  = 0x20
	cEchoRep  = 0x21
	cError    = 0x7F
	cRoute    = 15 // MBOX_TX_CTRL.PORT: hand to the firmware
)

type tmsg struct {
	typ, ttl      byte
	dst, src, tag uint16
	body          []byte
}

func (m tmsg) bytes() []byte {
	b := []byte{m.typ, m.ttl, byte(m.dst >> 8), byte(m.dst), byte(m.src >> 8), byte(m.src), byte(m.tag >> 8), byte(m.tag)}
	return append(b, m.body...)
}

func parseT(t testing.TB, p []byte) tmsg {
	t.Helper()
	if len(p) < 8 {
		t.Fatalf("message of %d bytes: % x", len(p), p)
	}
	return tmsg{typ: p[0], ttl: p[1], dst: uint16(p[2])<<8 | uint16(p[3]), src: uint16(p[4])<<8 | uint16(p[5]),
		tag: uint16(p[6])<<8 | uint16(p[7]), body: p[8:]}
}

type top struct {
	write bool
	addr  uint32
	val   uint32
}

func regReqBody(ops []top) []byte {
	b := []byte{byte(len(ops)), 0}
	for _, o := range ops {
		op := byte(1)
		if o.write {
			op = 2
		}
		b = append(b, op)
		b = binary.BigEndian.AppendUint32(b, o.addr)
		b = binary.BigEndian.AppendUint32(b, o.val)
	}
	return b
}

type tres struct {
	status byte
	val    uint32
}

// tctl is the controller: one DCN board's mailbox, and a tag counter.
type tctl struct {
	t   testing.TB
	dcn *mregs
	tag uint16
	// what it saw
	relays []trelay
}

type trelay struct {
	proxy    uint16
	port     int // at the proxy
	dna      uint32
	fromPort int
	name     string
}

// send puts a message in the mailbox: MBOX_TX_CTRL and the data in one
// burst, as docs/mgmt.md recommends.
func (c *tctl) send(port int, m []byte) {
	c.t.Helper()
	words := []uint32{uint32(len(m)) | uint32(port)<<16}
	for i := 0; i < len(m); i += 4 {
		var w uint32
		for k := range 4 {
			w <<= 8
			if i+k < len(m) {
				w |= uint32(m[i+k])
			}
		}
		words = append(words, w)
	}
	if err := c.dcn.WriteBurst(tctx(), uint64(c.dcn.addr("MBOX_TX_CTRL")), words); err != nil {
		c.t.Fatal(err)
	}
	if r := c.dcn.field("MBOX_TX_STATUS", "RESULT"); r != 0 {
		c.t.Fatalf("mailbox refused the message: RESULT %d", r)
	}
}

// next reads the head of the mailbox — its status, then only the words the
// message fills, since every word read costs a word's time on the bus —
// and pops it; ok is false when it is empty.
func (c *tctl) next() ([]byte, int, bool) {
	c.t.Helper()
	st := c.dcn.rd("MBOX_RX_STATUS")
	if st&0xFF == 0 {
		return nil, 0, false
	}
	n, port := int(st>>8&0xFF), int(st>>16&0xF)
	buf := make([]uint32, 1+(n+3)/4)
	if err := c.dcn.ReadBurst(tctx(), uint64(c.dcn.addr("MBOX_RX_DATA[0]")), buf[1:]); err != nil {
		c.t.Fatal(err)
	}
	m := make([]byte, n)
	for i := range m {
		m[i] = byte(buf[1+i/4] >> (24 - 8*uint(i%4)))
	}
	c.dcn.wr("MBOX_RX_POP", 1)
	return m, port, true
}

// await polls the mailbox for a message match accepts, letting 100 us pass
// between empty polls, for at most polls polls. Relays seen on the way are
// remembered.
func (c *tctl) await(what string, polls int, match func(tmsg) bool) tmsg {
	c.t.Helper()
	m, ok := c.tryAwait(polls, match)
	if !ok {
		c.t.Fatalf("no %s in %d polls of %s's mailbox", what, polls, c.dcn.name)
	}
	return m
}

func (c *tctl) tryAwait(polls int, match func(tmsg) bool) (tmsg, bool) {
	c.t.Helper()
	for range polls {
		m, _, ok := c.next()
		if !ok {
			c.dcn.wait(100)
			continue
		}
		pm := parseT(c.t, m)
		if pm.typ == cRelay {
			c.noteRelay(pm)
		}
		if match(pm) {
			return pm, true
		}
	}
	return tmsg{}, false
}

func (c *tctl) noteRelay(m tmsg) {
	inner := parseT(c.t, m.body[2:])
	if inner.typ != cDiscover {
		c.t.Fatalf("RELAY of type 0x%02x", inner.typ)
	}
	b := inner.body
	n := int(b[8])
	c.relays = append(c.relays, trelay{proxy: m.src, port: int(m.body[0]), dna: binary.BigEndian.Uint32(b), fromPort: int(b[4]), name: string(b[9 : 9+n])})
}

// discovered waits for a DISCOVER relayed by proxy from its port.
func (c *tctl) discovered(proxy uint16, port int) trelay {
	c.t.Helper()
	for _, r := range c.relays {
		if r.proxy == proxy && r.port == port {
			return r
		}
	}
	c.await("RELAY", 60, func(m tmsg) bool { return m.typ == cRelay && m.src == proxy && int(m.body[0]) == port })
	return c.relays[len(c.relays)-1]
}

func (c *tctl) newTag() uint16 { c.tag++; return c.tag }

// via wraps a link-local message so that it leaves proxy's port: directly
// from the mailbox when the proxy is the DCN board (0), else in a SEND
// routed to the proxy.
func (c *tctl) via(proxy uint16, port int, inner []byte) {
	c.t.Helper()
	if proxy == 0 {
		c.send(port, inner)
		return
	}
	c.send(cRoute, tmsg{typ: cSend, ttl: 16, dst: proxy, src: cCtrl, tag: c.newTag(), body: append([]byte{byte(port), 0}, inner...)}.bytes())
}

func (c *tctl) assign(proxy uint16, port int, dna uint32, addr uint16) {
	c.t.Helper()
	tag := c.newTag()
	body := binary.BigEndian.AppendUint32(nil, dna)
	body = binary.BigEndian.AppendUint16(body, addr)
	c.via(proxy, port, tmsg{typ: cAssign, ttl: 16, dst: cLL, src: cCtrl, tag: tag, body: body}.bytes())
	m := c.await("ASSIGNED", 60, func(m tmsg) bool { return m.typ == cAssigned && m.tag == tag })
	if m.src != addr || binary.BigEndian.Uint32(m.body) != dna {
		c.t.Fatalf("ASSIGNED from 0x%04x for DNA 0x%08x, want 0x%04x 0x%08x", m.src, binary.BigEndian.Uint32(m.body), addr, dna)
	}
}

// regs executes register operations on a target: link-local through a
// proxy's port (dst 0 means "not routed yet"), or routed to its address.
func (c *tctl) regs(proxy uint16, port int, dst uint16, ops []top) []tres {
	c.t.Helper()
	tag := c.newTag()
	m := tmsg{typ: cRegReq, ttl: 16, dst: dst, src: cCtrl, tag: tag, body: regReqBody(ops)}
	if dst == 0 {
		m.dst = cLL
		c.via(proxy, port, m.bytes())
	} else {
		c.send(cRoute, m.bytes())
	}
	r := c.await("REG_RESP", 60, func(m tmsg) bool { return (m.typ == cRegResp || m.typ == cError) && m.tag == tag })
	if r.typ == cError {
		c.t.Fatalf("ERROR code %d from 0x%04x for REG_REQ tag %d", r.body[0], r.src, tag)
	}
	n := int(r.body[0])
	if n != len(ops) || len(r.body) != 2+5*n {
		c.t.Fatalf("REG_RESP of %d results, %d bytes, for %d ops", n, len(r.body), len(ops))
	}
	out := make([]tres, n)
	for i := range out {
		out[i] = tres{status: r.body[2+5*i], val: binary.BigEndian.Uint32(r.body[3+5*i:])}
	}
	return out
}

func mustOK(t testing.TB, what string, rs []tres) {
	t.Helper()
	for i, r := range rs {
		if r.status != 0 {
			t.Fatalf("%s: op %d status 0x%02x", what, i, r.status)
		}
	}
}

// routeEntry composes a ROUTE value with the manifest's field names.
func routeEntry(t testing.TB, m *mregs, addr uint16, port uint32) uint32 {
	v, err := m.Compose("ROUTE[0]", map[string]uint32{"VALID": 1, "PORT": port, "ADDR": uint32(addr)})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// bootstrapChain takes the chain a - b - c (a DCN, a:sfp0-b:sfp0,
// b:sfp1-c:sfp0) to addresses 1, 2, 3, routed from the controller at a.
func bootstrapChain(t testing.TB, r *Rack) *tctl {
	a := regsOf(t, r, "a")
	a.waitUp()
	c := &tctl{t: t, dcn: a}
	a.wr("MY_ADDR", 1)
	a.wr("ROUTE[0]", routeEntry(t, a, cCtrl, 15))
	a.wr("PROXY_CTRL", 3)
	rb := c.discovered(1, 0)
	c.assign(0, 0, rb.dna, 2)
	mustOK(t, "b routes", c.regs(0, 0, 0, []top{{true, a.addr("DEFAULT_ROUTE"), 0x80000000}, {true, a.addr("PROXY_CTRL"), 3}}))
	a.wr("ROUTE[1]", routeEntry(t, a, 2, 0))
	rc := c.discovered(2, 1)
	c.assign(2, 1, rc.dna, 3)
	mustOK(t, "c routes", c.regs(2, 1, 0, []top{{true, a.addr("DEFAULT_ROUTE"), 0x80000000}}))
	mustOK(t, "b route to c", c.regs(0, 0, 2, []top{{true, a.addr("ROUTE[0]"), routeEntry(t, a, 3, 1)}}))
	a.wr("ROUTE[2]", routeEntry(t, a, 3, 0))
	return c
}

// echo sends an ECHO_REQ to dst and reports whether the reply came within
// polls polls.
func (c *tctl) echo(dst uint16, polls int) bool {
	c.t.Helper()
	tag := c.newTag()
	c.send(cRoute, tmsg{typ: cEchoReq, ttl: 16, dst: dst, src: cCtrl, tag: tag, body: []byte("ping")}.bytes())
	m, ok := c.tryAwait(polls, func(m tmsg) bool { return m.tag == tag })
	return ok && m.typ == cEchoRep && m.src == dst
}

func TestBootstrapChainIndependentController(t *testing.T) {
	r := startMgmtRack(t, mgmtLab{boards: []string{"a", "b", "c"}, links: []string{"a:sfp0-b:sfp0", "b:sfp1-c:sfp0"}})
	a := regsOf(t, r, "a")
	a.waitUp()
	c := &tctl{t: t, dcn: a}
	// wave 0: the DCN board, over its bridge
	a.wr("MY_ADDR", 1)
	a.wr("ROUTE[0]", routeEntry(t, a, cCtrl, 15))
	a.wr("PROXY_CTRL", 3)
	if got := a.rd("ROUTE[0]"); got != 0x800FFFFE {
		t.Fatalf("ROUTE[0] = 0x%08x", got)
	}

	// wave 1: b, discovered through a's sfp0
	rb := c.discovered(1, 0)
	if rb.name != "b" || rb.fromPort != 0 {
		t.Fatalf("relay %+v", rb)
	}
	bb, _ := r.Board("b")
	if rb.dna != bb.DeviceID() {
		t.Fatalf("DISCOVER DNA 0x%08x, board b is 0x%08x", rb.dna, bb.DeviceID())
	}
	c.assign(0, 0, rb.dna, 2)
	// b's routing, link-local through a (addresses from the map)
	mustOK(t, "b routes", c.regs(0, 0, 0, []top{
		{true, a.addr("DEFAULT_ROUTE"), 0x80000000 | 0<<16},
		{true, a.addr("PROXY_CTRL"), 3},
		{false, a.addr("MY_ADDR"), 0},
	}))
	a.wr("ROUTE[1]", routeEntry(t, a, 2, 0))
	// b is now reachable over the routed network
	rs := c.regs(0, 0, 2, []top{{false, a.addr("MGMT_ID"), 0}, {false, a.addr("MY_ADDR"), 0}, {false, a.addr("DEFAULT_ROUTE"), 0}})
	mustOK(t, "routed read of b", rs)
	if rs[0].val != 0x4D474D54 || rs[1].val != 2 || rs[2].val != 0x80000000 {
		t.Fatalf("routed reads of b: %+v", rs)
	}

	// wave 2: c, discovered through b (the relay comes routed from b)
	rc := c.discovered(2, 1)
	if rc.name != "c" || rc.fromPort != 0 {
		t.Fatalf("relay %+v", rc)
	}
	c.assign(2, 1, rc.dna, 3)
	mustOK(t, "c routes", c.regs(2, 1, 0, []top{{true, a.addr("DEFAULT_ROUTE"), 0x80000000}}))
	mustOK(t, "b route to c", c.regs(0, 0, 2, []top{{true, a.addr("ROUTE[0]"), routeEntry(t, a, 3, 1)}}))
	a.wr("ROUTE[2]", routeEntry(t, a, 3, 0))
	rs = c.regs(0, 0, 3, []top{
		{true, a.addr("SCRATCH"), 0xC0FFEE},
		{false, a.addr("SCRATCH"), 0},
		{false, a.addr("DNA"), 0},
		{false, 0x0000_0010, 0}, // no design loaded: the bus answers an error
		{false, a.addr("MGMT_ID"), 0},
	})
	cb, _ := r.Board("c")
	if rs[0].status != 0 || rs[1].val != 0xC0FFEE || rs[2].val != cb.DeviceID() || rs[3].status != 0x01 || rs[4].status != 0x11 {
		t.Fatalf("routed ops on c: %+v", rs)
	}
	// A DELAY_US executed remotely stalls the target's firmware before it
	// answers; the rack's clock only moves with the controller's accesses.
	t0 := r.MgmtTime()
	mustOK(t, "remote stall", c.regs(0, 0, 3, []top{{true, a.addr("DELAY_US"), 3000}, {false, a.addr("MGMT_ID"), 0}}))
	if d := r.MgmtTime() - t0; d < 3*time.Millisecond {
		t.Fatalf("a remote DELAY_US of 3 ms answered after %v", d)
	}
	// An echo over two hops, and a message for an unknown address.
	tag := c.newTag()
	c.send(cRoute, tmsg{typ: cEchoReq, ttl: 16, dst: 3, src: cCtrl, tag: tag, body: []byte("hello")}.bytes())
	e := c.await("ECHO_REPLY", 40, func(m tmsg) bool { return m.tag == tag })
	if e.typ != cEchoRep || string(e.body) != "hello" || e.src != 3 {
		t.Fatalf("echo: %+v", e)
	}
	tag = c.newTag()
	c.send(cRoute, tmsg{typ: cEchoReq, ttl: 16, dst: 9, src: cCtrl, tag: tag}.bytes())
	// a forwards it by nothing: no route, an ERROR NO_ROUTE comes back to the controller
	e = c.await("ERROR", 40, func(m tmsg) bool { return m.tag == tag })
	if e.typ != cError || e.body[0] != 1 || e.src != 1 {
		t.Fatalf("no-route: %+v", e)
	}
	if n := a.rd("MSG_NO_ROUTE"); n != 1 {
		t.Fatalf("MSG_NO_ROUTE = %d", n)
	}
	// c no longer discovers; the boards say what they did.
	cr := regsOf(t, r, "c")
	before := cr.rd("DISCOVERS_SENT")
	a.wait(5000)
	if after := cr.rd("DISCOVERS_SENT"); after != before {
		t.Fatalf("c still discovers: %d -> %d", before, after)
	}
	if out := bb.ConsoleCommand("mgmt route"); !strings.Contains(out, "0x0003 -> sfp1") || !strings.Contains(out, "default -> sfp0") {
		t.Fatalf("b's console routes:\n%s", out)
	}
	t.Logf("bootstrap of 3 boards took %v of emulated time", r.MgmtTime())
}
