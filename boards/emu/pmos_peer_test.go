package emu

import (
	"encoding/binary"
	"testing"
)

// An independent PMOS peer, written from docs/pmos.md: the test puts board
// a's sfp0 in RAW mode and speaks PMOS itself, word by word through a's raw
// MOS FIFOs, to board b's firmware at the other end of the cable. Its CRC
// is refCRC (serve_test.go, bit by bit), its framing its own.

type rawPeer struct {
	t    testing.TB
	a    *mregs
	port int
	buf  []byte // reassembly
	in   bool
}

// frame encodes a PMOS frame: VER/TYPE, SESSION, SEQ, LEN, payload, CRC.
func peerFrame(typ, session, seq byte, payload []byte) []byte {
	f := append([]byte{0x10 | typ, session, seq, byte(len(payload))}, payload...)
	return binary.BigEndian.AppendUint16(f, refCRC(f))
}

// words cuts a frame into MOS words (type 0x4D, control, 6 data bytes).
func peerWords(frame []byte) []uint64 {
	var out []uint64
	for off := 0; off < len(frame); off += 6 {
		end := min(off+6, len(frame))
		ctl := byte(end - off)
		if off == 0 {
			ctl |= 0x20
		}
		if end == len(frame) {
			ctl |= 0x10
		}
		w := uint64(0x4D)<<56 | uint64(ctl)<<48
		for i, b := range frame[off:end] {
			w |= uint64(b) << (40 - 8*uint(i))
		}
		out = append(out, w)
	}
	return out
}

func (p *rawPeer) sendFrame(frame []byte) {
	p.t.Helper()
	var halves []uint32
	for _, w := range peerWords(frame) {
		halves = append(halves, uint32(w>>32), uint32(w))
	}
	if err := p.a.WriteBurst(tctx(), uint64(p.a.addr("MOS_TX[0]"))+uint64(p.port)*0x100, halves); err != nil {
		p.t.Fatal(err)
	}
}

// poll reads every word waiting in the raw FIFO and returns the frames
// they complete.
func (p *rawPeer) poll() [][]byte {
	p.t.Helper()
	// at most 32 words a burst: the port's block is 64 words long
	n := min(int(p.a.rd(portReg("RAW_RX_LEVEL", p.port))), 32)
	if n == 0 {
		return nil
	}
	halves := make([]uint32, 2*n)
	if err := p.a.ReadBurst(tctx(), uint64(p.a.addr("MOS_RX[0]"))+uint64(p.port)*0x100, halves); err != nil {
		p.t.Fatal(err)
	}
	var frames [][]byte
	for i := 0; i < n; i++ {
		w := uint64(halves[2*i])<<32 | uint64(halves[2*i+1])
		if byte(w>>56) != 0x4D {
			p.t.Fatalf("raw word %016x is not a MOS word", w)
		}
		ctl := byte(w >> 48)
		nb := int(ctl & 7)
		data := make([]byte, nb)
		for k := range data {
			data[k] = byte(w >> (40 - 8*uint(k)))
		}
		sof, eof := ctl&0x20 != 0, ctl&0x10 != 0
		switch {
		case sof && eof:
			frames = append(frames, data)
		case sof:
			p.buf, p.in = data, true
		case p.in:
			p.buf = append(p.buf, data...)
			if eof {
				frames = append(frames, p.buf)
				p.in = false
			}
		}
	}
	return frames
}

func portReg(name string, p int) string { return name + "[" + string(rune('0'+p)) + "]" }

type peerFr struct {
	typ, session, seq byte
	payload           []byte
}

func (p *rawPeer) parse(f []byte) peerFr {
	p.t.Helper()
	if len(f) < 6 || refCRC(f[:len(f)-2]) != binary.BigEndian.Uint16(f[len(f)-2:]) {
		p.t.Fatalf("bad frame % x", f)
	}
	if f[0]>>4 != 1 || int(f[3]) != len(f)-6 {
		p.t.Fatalf("frame header % x", f[:4])
	}
	return peerFr{typ: f[0] & 0xF, session: f[1], seq: f[2], payload: f[4 : len(f)-2]}
}

func TestPMOSIndependentPeerOverRawWords(t *testing.T) {
	r := startMgmtRack(t, mgmtLab{boards: []string{"a", "b"}, links: []string{"a:sfp0-b:sfp0"}})
	a, b := regsOf(t, r, "a"), regsOf(t, r, "b")
	a.waitUp()
	b.waitUp()
	a.wr("PORT_MODE[0]", modeRaw)
	b.wr("PROXY_CTRL", 0) // no DISCOVERs to muddle the FIFO
	a.wait(2000)
	for range 4 {
		a.wait(300)
		p := &rawPeer{t: t, a: a}
		p.poll() // drop what b said before
	}
	p := &rawPeer{t: t, a: a}

	// A REG_REQ, link-local: read b's MGMT_ID and DNA.
	req := tmsg{typ: cRegReq, ttl: 16, dst: cLL, src: cCtrl, tag: 0x4242,
		body: regReqBody([]top{{false, a.addr("MGMT_ID"), 0}, {false, a.addr("DNA"), 0}})}.bytes()
	const S = 0x33
	p.sendFrame(peerFrame(1, S, 0, req))
	var acked, answered, resetB bool
	var resp []byte
	var bSession byte
	rxValid, rxSession, rxNext := false, byte(0), byte(0)
	for range 40 {
		a.wait(50)
		for _, f := range p.poll() {
			fr := p.parse(f)
			switch fr.typ {
			case 2: // ACK
				if fr.session == S && fr.seq == 1 {
					acked = true
				}
			case 1: // DATA from b: the receiver rules of docs/pmos.md
				if !rxValid || fr.session != rxSession {
					if fr.seq != 0 {
						// b's session began before this port went raw:
						// this side holds no receive session for it.
						p.sendFrame(peerFrame(3, fr.session, 0, nil))
						resetB = true
						continue
					}
					rxValid, rxSession, rxNext = true, fr.session, 0
				}
				if fr.seq == rxNext {
					rxNext++
					bSession, answered, resp = fr.session, true, fr.payload
				}
				p.sendFrame(peerFrame(2, rxSession, rxNext, nil)) // cumulative ACK
			}
		}
		if acked && answered {
			break
		}
	}
	if !acked || !answered {
		t.Fatalf("acked=%v answered=%v", acked, answered)
	}
	// b had sent DISCOVERs to a's firmware before the port went raw, so
	// its frames came in a session this peer never saw open: it asked for
	// a reset, and b started a new session at 0.
	if !resetB || b.rd("PMOS_RESETS[0]") != 1 {
		t.Fatalf("reset asked %v, b's PMOS_RESETS %d", resetB, b.rd("PMOS_RESETS[0]"))
	}
	m := parseT(t, resp)
	bb, _ := r.Board("b")
	if m.typ != cRegResp || m.tag != 0x4242 || m.dst != cCtrl || m.body[0] != 2 ||
		binary.BigEndian.Uint32(m.body[3:]) != 0x4D474D54 || binary.BigEndian.Uint32(m.body[8:]) != bb.DeviceID() {
		t.Fatalf("REG_RESP %+v (% x)", m, m.body)
	}

	// A frame of a session b does not know, not starting at 0: b asks for a
	// reset (RST naming that session); starting again at 0 is accepted.
	p.sendFrame(peerFrame(1, S+1, 5, req))
	var rst bool
	for range 20 {
		a.wait(50)
		for _, f := range p.poll() {
			if fr := p.parse(f); fr.typ == 3 && fr.session == S+1 {
				rst = true
			}
		}
		if rst {
			break
		}
	}
	if !rst {
		t.Fatal("no RST for an unknown session")
	}
	// A frame with a bad CRC is counted and ignored.
	bad := peerFrame(1, S+1, 0, req)
	bad[5] ^= 0xFF
	p.sendFrame(bad)
	a.wait(200)
	if n := b.rd("PMOS_RX_BAD[0]"); n != 1 {
		t.Fatalf("PMOS_RX_BAD = %d", n)
	}
	if s := b.rd("PMOS_SESSION[0]"); s>>8&0xFF != S || s&(1<<16) == 0 || byte(s) != bSession {
		t.Fatalf("b's PMOS_SESSION 0x%x (peer session 0x%x, b's 0x%x)", s, S, bSession)
	}
}
