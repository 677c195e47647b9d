package pmos

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

// The examples of docs/pmos.md §4, byte for byte.

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	s = strings.NewReplacer(" ", "", "|", "", "\n", "", "\t", "").Replace(s)
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatalf("bad hex %q: %v", s, err)
	}
	return b
}

func TestCRC16CheckValue(t *testing.T) {
	if got := CRC16([]byte("123456789")); got != 0x29B1 {
		t.Fatalf("CRC16(123456789) = 0x%04x, pmos.md §2.1 says 0x29B1", got)
	}
}

func TestSpecAckAndRst(t *testing.T) {
	for _, c := range []struct {
		f     Frame
		frame string
		word  string
	}{
		{Frame{Type: FrameAck, Session: 5, Seq: 3}, "12 05 03 00 cc ac", "4d 36 12 05 03 00 cc ac"},
		{Frame{Type: FrameRst, Session: 9}, "13 09 00 00 9a 2a", "4d 36 13 09 00 00 9a 2a"},
	} {
		b, err := c.f.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, unhex(t, c.frame)) {
			t.Errorf("%s frame % x, want %s", c.f.Type, b, c.frame)
		}
		ws, err := SplitWords(b)
		if err != nil || len(ws) != 1 {
			t.Fatalf("%s: %d words, %v", c.f.Type, len(ws), err)
		}
		wb := ws[0].Bytes()
		if !bytes.Equal(wb[:], unhex(t, c.word)) {
			t.Errorf("%s word % x, want %s", c.f.Type, wb, c.word)
		}
		back, err := ParseFrame(b)
		if err != nil || back.Type != c.f.Type || back.Session != c.f.Session || back.Seq != c.f.Seq {
			t.Errorf("%s parsed back as %+v, %v", c.f.Type, back, err)
		}
	}
}

func TestSpecDataFrameCarryingARegReq(t *testing.T) {
	body, err := RegReqBody([]RegOp{{Op: OpRead, Addr: 0xF0000000}})
	if err != nil {
		t.Fatal(err)
	}
	msg, err := Msg{Type: MsgRegReq, TTL: 16, Dst: AddrLinkLocal, Src: AddrController, Tag: 0x0102, Body: body}.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	wantMsg := unhex(t, "10 10 ff ff ff fe 01 02 | 01 00 | 01 f0 00 00 00 00 00 00 00")
	if !bytes.Equal(msg, wantMsg) {
		t.Fatalf("message % x\nwant    % x", msg, wantMsg)
	}
	frame, err := Frame{Type: FrameData, Session: 0x21, Seq: 0, Payload: msg}.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if want := append(append(unhex(t, "11 21 00 13"), wantMsg...), unhex(t, "ac 5a")...); !bytes.Equal(frame, want) {
		t.Fatalf("frame % x\nwant  % x", frame, want)
	}
	ws, err := SplitWords(frame)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"4d 26 11 21 00 13 10 10", "4d 06 ff ff ff fe 01 02", "4d 06 01 00 01 f0 00 00",
		"4d 06 00 00 00 00 00 ac", "4d 11 5a 00 00 00 00 00"}
	if len(ws) != len(want) {
		t.Fatalf("%d words, want %d", len(ws), len(want))
	}
	var r Reassembler
	for i, w := range ws {
		b := w.Bytes()
		if !bytes.Equal(b[:], unhex(t, want[i])) {
			t.Errorf("word %d % x, want %s", i, b, want[i])
		}
		d, err := DecodeWord(w)
		if err != nil {
			t.Fatalf("word %d: %v", i, err)
		}
		if got, ok := r.Push(d); ok != (i == len(ws)-1) || (ok && !bytes.Equal(got, frame)) {
			t.Fatalf("reassembly after word %d: %v % x", i, ok, got)
		}
	}
	f, err := ParseFrame(frame)
	if err != nil {
		t.Fatal(err)
	}
	m, err := ParseMsg(f.Payload)
	if err != nil {
		t.Fatal(err)
	}
	ops, err := ParseRegReq(m)
	if err != nil || len(ops) != 1 || ops[0] != (RegOp{Op: OpRead, Addr: 0xF0000000}) || m.Tag != 0x0102 {
		t.Fatalf("REG_REQ parsed as %+v %+v %v", m, ops, err)
	}
}

func TestSpecRegRespFrame(t *testing.T) {
	frame := unhex(t, "11 07 04 0f | 11 10 ff fe 00 00 01 02 01 00 00 4d 47 4d 54 | e8 be")
	f, err := ParseFrame(frame)
	if err != nil {
		t.Fatal(err)
	}
	if f.Type != FrameData || f.Session != 7 || f.Seq != 4 {
		t.Fatalf("frame %+v", f)
	}
	m, err := ParseMsg(f.Payload)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := ParseRegResp(m)
	if err != nil || len(rs) != 1 || rs[0] != (RegResult{Status: RegOK, Value: 0x4D474D54}) {
		t.Fatalf("REG_RESP %+v %v", rs, err)
	}
	if m.Dst != AddrController || m.Src != AddrNone || m.Tag != 0x0102 {
		t.Fatalf("header %+v", m)
	}
	body, _ := RegRespBody(rs)
	again, _ := Msg{Type: MsgRegResp, TTL: 16, Dst: AddrController, Tag: 0x0102, Body: body}.Marshal()
	if re, _ := (Frame{Type: FrameData, Session: 7, Seq: 4, Payload: again}).Marshal(); !bytes.Equal(re, frame) {
		t.Fatalf("re-marshalled % x", re)
	}
}

func TestSpecDiscover(t *testing.T) {
	raw := unhex(t, "01 01 ff ff 00 00 00 01 | 12 34 ab cd 01 04 00 01 06 72 61 63 6b 2d 62")
	m, err := ParseMsg(raw)
	if err != nil {
		t.Fatal(err)
	}
	d, err := ParseDiscover(m)
	if err != nil {
		t.Fatal(err)
	}
	if d != (Discover{DNA: 0x1234ABCD, Port: 1, NPorts: 4, Boots: 1, Name: "rack-b"}) || m.TTL != 1 || m.Dst != AddrLinkLocal || m.Tag != 1 {
		t.Fatalf("DISCOVER %+v %+v", m, d)
	}
	body, err := d.Body()
	if err != nil || !bytes.Equal(body, raw[8:]) {
		t.Fatalf("body % x %v", body, err)
	}
	// Relayed by a proxy at 0x0002 from its port 3.
	rb := append([]byte{3, 0}, raw...)
	rel, err := Msg{Type: MsgRelay, TTL: 16, Dst: AddrController, Src: 2, Tag: 1, Body: rb}.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	rm, _ := ParseMsg(rel)
	r, d2, err := ParseRelay(rm)
	if err != nil || r.Port != 3 || d2 != d || rm.Src != 2 {
		t.Fatalf("RELAY %+v %+v %v", r, d2, err)
	}
}

func TestDecodeWordRefusals(t *testing.T) {
	ok, _ := EncodeWord(ChPMOS, true, true, []byte{1, 2, 3})
	cases := []struct {
		name string
		w    Word
		err  error
	}{
		{"type", ok&^(0xFF<<56) | 0x54<<56, ErrNotMOS},
		{"reserved", ok | 1<<51, ErrReservedBit},
		{"n0", ok &^ (7 << 48), ErrByteCount},
		{"n7", ok | 7<<48, ErrByteCount},
		{"ch2", ok | 2<<54, ErrChannel},
		{"short middle", mustWord(t, ChPMOS, false, false, []byte{1, 2}), ErrShortPMOS},
	}
	for _, c := range cases {
		if _, err := DecodeWord(c.w); !errors.Is(err, c.err) {
			t.Errorf("%s: %v, want %v", c.name, err, c.err)
		}
	}
	if _, err := DecodeWord(mustWord(t, ChRaw, false, false, []byte{1})); err != nil {
		t.Errorf("a 1-byte RAW word is fine: %v", err)
	}
}

func mustWord(t *testing.T, ch Channel, sof, eof bool, data []byte) Word {
	t.Helper()
	w, err := EncodeWord(ch, sof, eof, data)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func TestParseFrameRefusals(t *testing.T) {
	good, _ := Frame{Type: FrameData, Session: 1, Seq: 2, Payload: []byte("hello")}.Marshal()
	withCRC := func(b []byte) []byte {
		b = append([]byte(nil), b[:len(b)-2]...)
		c := CRC16(b)
		return append(b, byte(c>>8), byte(c))
	}
	bad := func(f func(b []byte)) []byte {
		b := append([]byte(nil), good...)
		f(b)
		return withCRC(b)
	}
	cases := []struct {
		name string
		b    []byte
		err  error
	}{
		{"short", good[:5], ErrFrameShort},
		{"crc", append(append([]byte(nil), good[:len(good)-1]...), good[len(good)-1]^1), ErrFrameCRC},
		{"version", bad(func(b []byte) { b[0] = 0x21 }), ErrFrameVersion},
		{"type", bad(func(b []byte) { b[0] = 0x14 }), ErrFrameType},
		{"len", bad(func(b []byte) { b[3] = 4 }), ErrFrameLen},
		{"ack with len", bad(func(b []byte) { b[0] = 0x12 }), ErrFrameLen},
	}
	for _, c := range cases {
		if _, err := ParseFrame(c.b); !errors.Is(err, c.err) {
			t.Errorf("%s: %v, want %v", c.name, err, c.err)
		}
	}
}

// A one-word frame between the words of a long one leaves the long one
// whole (pmos.md §2.3 rule 1); a lost middle word makes the long frame fail
// its CRC; a lost SOF makes the rest stray.
func TestReassemblyRules(t *testing.T) {
	long, _ := Frame{Type: FrameData, Session: 3, Seq: 0, Payload: bytes.Repeat([]byte{0xAB}, 30)}.Marshal()
	ws, _ := SplitWords(long)
	ack, _ := Frame{Type: FrameAck, Session: 9, Seq: 1}.Marshal()
	aw, _ := SplitWords(ack)
	var r Reassembler
	var got [][]byte
	push := func(w Word) {
		d, err := DecodeWord(w)
		if err != nil {
			t.Fatal(err)
		}
		if b, ok := r.Push(d); ok {
			got = append(got, b)
		}
	}
	push(ws[0])
	push(ws[1])
	push(aw[0])
	for _, w := range ws[2:] {
		push(w)
	}
	if len(got) != 2 || !bytes.Equal(got[0], ack) || !bytes.Equal(got[1], long) {
		t.Fatalf("got %d frames", len(got))
	}
	got = nil
	for i, w := range ws {
		if i != 2 {
			push(w)
		}
	}
	if len(got) != 1 {
		t.Fatalf("lost middle word: %d frames", len(got))
	}
	if _, err := ParseFrame(got[0]); err == nil {
		t.Fatal("a frame one word short passed its checks")
	}
	got, r.Drops = nil, 0
	for _, w := range ws[1:] {
		push(w)
	}
	if len(got) != 0 || r.Drops != len(ws)-1 {
		t.Fatalf("lost SOF: %d frames, %d drops", len(got), r.Drops)
	}
}

func TestMessageRoundTrips(t *testing.T) {
	m := Msg{Type: MsgAssign, TTL: 16, Dst: AddrLinkLocal, Src: AddrController, Tag: 7, Body: Assign{DNA: 0xDEADBEEF, Addr: 5}.Body()}
	b, _ := m.Marshal()
	// mgmt.md §7's ASSIGN: 03 10 ff ff ff fe TAG | DNA(4) ADDR(2).
	if want := unhex(t, "03 10 ff ff ff fe 00 07 de ad be ef 00 05"); !bytes.Equal(b, want) {
		t.Fatalf("ASSIGN % x", b)
	}
	pm, _ := ParseMsg(b)
	if a, err := ParseAssign(pm); err != nil || a.Addr != 5 || a.DNA != 0xDEADBEEF {
		t.Fatalf("%+v %v", a, err)
	}
	sb, err := SendBody(2, b)
	if err != nil {
		t.Fatal(err)
	}
	sm, _ := ParseMsg(append(unhex(t, "05 10 00 04 ff fe 00 07"), sb...))
	port, inner, err := ParseSend(sm)
	if err != nil || port != 2 || inner.Type != MsgAssign || inner.Tag != 7 {
		t.Fatalf("SEND %d %+v %v", port, inner, err)
	}
	eb := ErrorBody{Code: ErrCodePortDown, OrigType: MsgRegReq, OrigDst: 9, OrigTag: 0x1234, Reporter: 3}
	em, _ := ParseMsg(append(unhex(t, "7f 10 ff fe 00 03 12 34"), eb.Body()...))
	if got, err := ParseError(em); err != nil || got != eb {
		t.Fatalf("ERROR %+v %v", got, err)
	}
	as := Assigned{DNA: 1, Addr: 2, Port: 3}
	am, _ := ParseMsg(append(unhex(t, "04 10 ff fe 00 02 00 07"), as.Body()...))
	if got, err := ParseAssigned(am); err != nil || got != as {
		t.Fatalf("ASSIGNED %+v %v", got, err)
	}
	if _, err := RegReqBody(make([]RegOp, 26)); err == nil {
		t.Fatal("26 operations accepted")
	}
	if _, err := ParseRegReq(Msg{Type: MsgRegReq, Body: []byte{2, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0}}); !errors.Is(err, ErrMalformed) {
		t.Fatalf("a REG_REQ announcing 2 operations with 1: %v", err)
	}
}

func TestMailboxPacking(t *testing.T) {
	b := []byte{1, 2, 3, 4, 5}
	w := PackWords(b)
	if len(w) != 2 || w[0] != 0x01020304 || w[1] != 0x05000000 {
		t.Fatalf("% x", w)
	}
	if got := UnpackWords(w, 5); !bytes.Equal(got, b) {
		t.Fatalf("% x", got)
	}
	st := ParseRxStatus(0x000F2803)
	if st != (RxStatus{Count: 3, Len: 0x28, Port: 15}) {
		t.Fatalf("%+v", st)
	}
}
