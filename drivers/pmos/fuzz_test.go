package pmos

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// FuzzDecodeWord: any 64-bit value either decodes to a word that encodes
// back to itself (the bytes past N are 0 on the wire) or is refused.
func FuzzDecodeWord(f *testing.F) {
	for _, w := range []uint64{0x4d3612050300ccac, 0x4d26112100131010, 0x4d115a0000000000, 0x4d41deadbeef0000, 0, 0xFFFFFFFFFFFFFFFF} {
		f.Add(w)
	}
	f.Fuzz(func(t *testing.T, v uint64) {
		d, err := DecodeWord(Word(v))
		if err != nil {
			return
		}
		if len(d.Data) < 1 || len(d.Data) > WordData {
			t.Fatalf("decoded %d data bytes", len(d.Data))
		}
		w, err := EncodeWord(d.Ch, d.SOF, d.EOF, d.Data)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		mask := ^uint64(0) << (8 * uint(WordData-len(d.Data)))
		if uint64(w) != v&mask {
			t.Fatalf("0x%016x decoded and re-encoded as 0x%016x", v, uint64(w))
		}
	})
}

// FuzzParseFrame: a frame that parses marshals back to the same bytes, and
// its words reassemble to it.
func FuzzParseFrame(f *testing.F) {
	for _, fr := range []Frame{{Type: FrameAck, Session: 5, Seq: 3}, {Type: FrameRst, Session: 9},
		{Type: FrameData, Session: 0x21, Payload: []byte("hello, PMOS")}} {
		b, _ := fr.Marshal()
		f.Add(b)
	}
	f.Add([]byte{0x11, 0, 0, 0xf0})
	f.Fuzz(func(t *testing.T, b []byte) {
		fr, err := ParseFrame(b)
		if err != nil {
			return
		}
		back, err := fr.Marshal()
		if err != nil || !bytes.Equal(back, b) {
			t.Fatalf("% x parsed as %+v and marshalled as % x (%v)", b, fr, back, err)
		}
		ws, err := SplitWords(b)
		if err != nil {
			t.Fatal(err)
		}
		var r Reassembler
		for i, w := range ws {
			d, err := DecodeWord(w)
			if err != nil {
				t.Fatalf("word %d of a good frame refused: %v", i, err)
			}
			got, ok := r.Push(d)
			if ok != (i == len(ws)-1) || (ok && !bytes.Equal(got, b)) {
				t.Fatalf("reassembly of % x after word %d: %v", b, i, ok)
			}
		}
	})
}

// FuzzReassembler: any sequence of words (8 bytes each) never yields a
// frame longer than the longest frame, and never panics.
func FuzzReassembler(f *testing.F) {
	good, _ := Frame{Type: FrameData, Session: 1, Seq: 2, Payload: bytes.Repeat([]byte{7}, 40)}.Marshal()
	ws, _ := SplitWords(good)
	var seed []byte
	for _, w := range ws {
		b := w.Bytes()
		seed = append(seed, b[:]...)
	}
	f.Add(seed)
	f.Add(seed[8:])
	f.Fuzz(func(t *testing.T, b []byte) {
		var r Reassembler
		for len(b) >= 8 {
			d, err := DecodeWord(Word(binary.BigEndian.Uint64(b)))
			b = b[8:]
			if err != nil || d.Ch != ChPMOS {
				continue
			}
			if fr, ok := r.Push(d); ok && (len(fr) > MaxFrame || len(fr) == 0) {
				t.Fatalf("reassembled a frame of %d bytes", len(fr))
			}
		}
	})
}

// FuzzParseMsg: every typed parser either refuses a message or returns
// fields that render back to the same body.
func FuzzParseMsg(f *testing.F) {
	add := func(t MsgType, body []byte) {
		b, _ := Msg{Type: t, TTL: 16, Dst: 0xFFFF, Src: 0xFFFE, Tag: 0x1234, Body: body}.Marshal()
		f.Add(b)
	}
	db, _ := Discover{DNA: 0x1234ABCD, Port: 1, NPorts: 4, Boots: 1, Name: "rack-b"}.Body()
	add(MsgDiscover, db)
	disc, _ := Msg{Type: MsgDiscover, TTL: 1, Dst: 0xFFFF, Tag: 1, Body: db}.Marshal()
	add(MsgRelay, append([]byte{2, 0}, disc...))
	add(MsgAssign, Assign{DNA: 5, Addr: 9}.Body())
	add(MsgAssigned, Assigned{DNA: 5, Addr: 9, Port: 2}.Body())
	rq, _ := RegReqBody([]RegOp{{Op: OpRead, Addr: 0xF0000000}, {Op: OpWrite, Addr: 0xF0000080, Value: 3}})
	add(MsgRegReq, rq)
	rs, _ := RegRespBody([]RegResult{{Status: RegOK, Value: 1}})
	add(MsgRegResp, rs)
	sb, _ := SendBody(1, disc)
	add(MsgSend, sb)
	add(MsgError, ErrorBody{Code: ErrCodePortDown, OrigType: MsgRegReq, OrigDst: 3, OrigTag: 4, Reporter: 1}.Body())
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseMsg(b)
		if err != nil {
			return
		}
		back, err := m.Marshal()
		if err != nil || !bytes.Equal(back, b) {
			t.Fatalf("header round trip: % x -> % x (%v)", b, back, err)
		}
		same := func(what string, body []byte, err error) {
			if err != nil || !bytes.Equal(body, m.Body) {
				t.Fatalf("%s body % x rendered back as % x (%v)", what, m.Body, body, err)
			}
		}
		switch m.Type {
		case MsgDiscover:
			if d, err := ParseDiscover(m); err == nil {
				body, err := d.Body()
				same("DISCOVER", body, err)
			}
		case MsgRelay:
			if r, d, err := ParseRelay(m); err == nil {
				inner, _ := r.Discover.Marshal()
				same("RELAY", append([]byte{r.Port, m.Body[1]}, inner...), nil)
				if len(d.Name) > MaxName {
					t.Fatal("long hostname accepted")
				}
			}
		case MsgAssign:
			if a, err := ParseAssign(m); err == nil {
				same("ASSIGN", a.Body(), nil)
			}
		case MsgAssigned:
			if a, err := ParseAssigned(m); err == nil {
				same("ASSIGNED", a.Body(), nil)
			}
		case MsgSend:
			if port, inner, err := ParseSend(m); err == nil {
				ib, _ := inner.Marshal()
				body, err := SendBody(port, ib)
				if err == nil {
					body[1] = m.Body[1]
				}
				same("SEND", body, err)
			}
		case MsgRegReq:
			if ops, err := ParseRegReq(m); err == nil {
				body, err := RegReqBody(ops)
				if err == nil {
					body[1] = m.Body[1]
				}
				same("REG_REQ", body, err)
			}
		case MsgRegResp:
			if rs, err := ParseRegResp(m); err == nil {
				body, err := RegRespBody(rs)
				if err == nil {
					body[1] = m.Body[1]
				}
				same("REG_RESP", body, err)
			}
		case MsgError:
			if e, err := ParseError(m); err == nil {
				body := e.Body()
				body[1], body[3] = m.Body[1], m.Body[3]
				same("ERROR", body, nil)
			}
		}
	})
}

// FuzzEndpointReceive: an endpoint fed arbitrary words keeps its
// invariants (window, queue bounds) and never panics; its sender still
// delivers to a clean peer afterwards.
func FuzzEndpointReceive(f *testing.F) {
	ack, _ := Frame{Type: FrameAck, Session: 0, Seq: 1}.Marshal()
	aw, _ := SplitWords(ack)
	data, _ := Frame{Type: FrameData, Session: 3, Seq: 0, Payload: []byte("x")}.Marshal()
	dw, _ := SplitWords(data)
	seed := make([]byte, 0, 16)
	for _, w := range append(aw, dw...) {
		b := w.Bytes()
		seed = append(seed, b[:]...)
	}
	f.Add(seed)
	f.Fuzz(func(t *testing.T, b []byte) {
		e := NewEndpoint(EndpointConfig{})
		for i := 0; i < 3; i++ {
			_ = e.Send([]byte{byte(i)})
		}
		now := int64(0)
		for len(b) >= 8 {
			e.Receive(Word(binary.BigEndian.Uint64(b)), now)
			b = b[8:]
			now += PeriodPS
			e.NextWord(now)
			if len(e.unacked) > e.cfg.Window || len(e.inbox) > e.cfg.InboxLimit {
				t.Fatalf("window %d, inbox %d", len(e.unacked), len(e.inbox))
			}
		}
	})
}

// FuzzRelayHead: the three-word look at a message the mailbox poller takes
// agrees with the full parse: a RELAY's proxy is its SRC and its port the
// body's first byte; anything that is not a RELAY is not one.
func FuzzRelayHead(f *testing.F) {
	db, _ := Discover{DNA: 0x1234ABCD, Port: 1, NPorts: 4, Boots: 1, Name: "rack-b"}.Body()
	disc, _ := Msg{Type: MsgDiscover, TTL: 1, Dst: AddrLinkLocal, Tag: 1, Body: db}.Marshal()
	rel, _ := Msg{Type: MsgRelay, TTL: 16, Dst: AddrController, Src: 7, Tag: 1, Body: append([]byte{2, 0}, disc...)}.Marshal()
	f.Add(rel)
	f.Add(rel[:RelayHeadLen])
	f.Add(rel[:RelayHeadLen-1])
	f.Add([]byte{byte(MsgRegResp), 16, 0xff, 0xfe, 0, 7, 0, 1, 2})
	f.Fuzz(func(t *testing.T, b []byte) {
		proxy, port, ok := RelayHead(b)
		if ok != (len(b) >= RelayHeadLen && MsgType(b[0]) == MsgRelay) {
			t.Fatalf("RelayHead(% x) ok=%v", b, ok)
		}
		m, err := ParseMsg(b)
		if err != nil {
			return
		}
		r, _, err := ParseRelay(m)
		if err != nil {
			return
		}
		if !ok || proxy != m.Src || port != r.Port {
			t.Fatalf("RelayHead says proxy %d port %d (ok %v), the parse %d and %d", proxy, port, ok, m.Src, r.Port)
		}
	})
}
