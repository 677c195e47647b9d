package uartbridge

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"testing"
)

func TestCRC16CheckValue(t *testing.T) {
	if got := CRC16([]byte("123456789")); got != 0x29B1 {
		t.Fatalf("CRC16(\"123456789\") = 0x%04X, want 0x29B1 (docs/uart-bridge.md, CRC)", got)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		p := make([]byte, r.IntN(300))
		for i := range p {
			p[i] = byte(r.Uint32())
		}
		if a, b := CRC16(p), crcBitwise(p); a != b {
			t.Fatalf("table CRC %04x != bitwise %04x for %x", a, b, p)
		}
	}
}

func TestEncodeRefuses(t *testing.T) {
	for _, r := range []Request{
		{Cmd: 5, Count: 1},
		{Cmd: CmdReadBurst, Count: 257},
		{Cmd: CmdWrite, Count: 1},
		{Cmd: CmdWriteBurst, Count: 2, Data: []uint32{1}},
	} {
		if _, err := AppendRequest(nil, r); err == nil {
			t.Errorf("AppendRequest(%+v) accepted a frame a receiver would reject", r)
		}
	}
	if _, err := AppendResponse(nil, Response{Cmd: CmdReadBurst, Data: make([]uint32, 257)}); err == nil {
		t.Error("AppendResponse accepted 257 words")
	}
	if _, err := AppendResponse(nil, Response{Cmd: 0x7f}); err == nil {
		t.Error("AppendResponse accepted an unknown command")
	}
}

func mustResp(t testing.TB, r Response) []byte {
	t.Helper()
	f, err := AppendResponse(nil, r)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func mustReq(t testing.TB, r Request) []byte {
	t.Helper()
	f, err := AppendRequest(nil, r)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// drainResponses returns the frames Next yields and the discards it reports.
func drainResponses(d *ResponseDecoder) (out []Response, crc, header int) {
	for {
		r, err := d.Next()
		var fe *FrameError
		switch {
		case err == nil:
			out = append(out, r)
		case errors.As(err, &fe) && errors.Is(err, ErrCRCMismatch):
			crc++
		case errors.As(err, &fe) && errors.Is(err, ErrBadHeader):
			header++
		default:
			return
		}
	}
}

func TestDecoderPartialFrameExpires(t *testing.T) {
	good := mustResp(t, Response{Seq: 7, Cmd: CmdRead, Data: []uint32{0x12345678}})
	// A sync pair whose header claims 200 words: it would swallow the real
	// answer and wait for 800 more bytes. Only the deadline's Expire frees it.
	bogus := []byte{0x5A, 0xA5, 0x07, 0x83, 0x00, 200, 0x00}
	d := NewResponseDecoder()
	d.Write(bogus)
	d.Write(good)
	if out, _, _ := drainResponses(d); len(out) != 0 {
		t.Fatalf("found %+v before the partial frame expired", out)
	}
	if d.Buffered() != len(bogus)+len(good) {
		t.Fatalf("buffered %d, want %d", d.Buffered(), len(bogus)+len(good))
	}
	if !d.Expire() {
		t.Fatal("Expire reported nothing buffered")
	}
	out, _, _ := drainResponses(d)
	if len(out) != 1 || out[0].Data[0] != 0x12345678 {
		t.Fatalf("after Expire found %+v, want the READ answer", out)
	}
	if d.Offset() != int64(len(bogus)) {
		t.Errorf("Offset %d, want %d", d.Offset(), len(bogus))
	}
	if d.Dropped() != int64(len(bogus)) {
		t.Errorf("Dropped %d, want %d", d.Dropped(), len(bogus))
	}
	if d.Buffered() != 0 || d.Expire() {
		t.Errorf("decoder not empty after the frame: %d bytes", d.Buffered())
	}
}

func TestDecoderCRCRescanIncludesBufferedBytes(t *testing.T) {
	good := mustResp(t, Response{Seq: 9, Cmd: CmdRead, Data: []uint32{42}})
	// The first frame (29 bytes claimed) holds the good one at offset 7 and
	// ends 9 bytes later; its CRC fails, and the rescan must find the good
	// frame among bytes already buffered.
	stream := append([]byte{0x5A, 0xA5, 0x01, 0x83, 0x00, 0x05, 0x00}, good...)
	stream = append(stream, 1, 2, 3, 4, 5, 6, 7, 8, 9)
	for chunk := 1; chunk <= len(stream); chunk++ {
		d := NewResponseDecoder()
		var out []Response
		crcs := 0
		for i := 0; i < len(stream); i += chunk {
			d.Write(stream[i:min(i+chunk, len(stream))])
			o, c, _ := drainResponses(d)
			out = append(out, o...)
			crcs += c
		}
		if len(out) != 1 || out[0].Seq != 9 || crcs != 1 {
			t.Fatalf("chunks of %d: found %+v with %d CRC errors, want the SEQ 9 answer after 1", chunk, out, crcs)
		}
	}
}

func TestDecoderKeepsTrailingSyncByte(t *testing.T) {
	good := mustReq(t, Request{Seq: 1, Cmd: CmdWrite, Addr: 8, Count: 1, Data: []uint32{5}})
	d := NewRequestDecoder()
	d.Write([]byte{0x00, 0x11, good[0]})
	if _, _, err := d.Next(); !errors.Is(err, ErrNeedMore) {
		t.Fatalf("Next = %v, want ErrNeedMore", err)
	}
	if d.Buffered() != 1 {
		t.Fatalf("buffered %d, want the lone first sync byte", d.Buffered())
	}
	d.Write(good[1:])
	r, crc, err := d.Next()
	if err != nil || r.Data[0] != 5 || crc != CRC16(good[2:len(good)-2]) {
		t.Fatalf("Next = %+v, %04x, %v", r, crc, err)
	}
	if d.Dropped() != 2 {
		t.Errorf("Dropped %d, want 2", d.Dropped())
	}
}

func TestDecodeOneFrameRefusesExtra(t *testing.T) {
	f := mustResp(t, Response{Seq: 1, Cmd: CmdWrite})
	if _, err := DecodeResponse(append([]byte{0}, f...)); err == nil {
		t.Error("DecodeResponse accepted a leading byte")
	}
	if _, err := DecodeResponse(f[:len(f)-1]); !errors.Is(err, ErrNeedMore) {
		t.Errorf("DecodeResponse of a truncated frame: %v, want ErrNeedMore", err)
	}
	bad := bytes.Clone(f)
	bad[4] ^= 1
	if _, err := DecodeResponse(bad); !errors.Is(err, ErrCRCMismatch) {
		t.Errorf("DecodeResponse of a damaged frame: %v, want ErrCRCMismatch", err)
	}
	q := mustReq(t, Request{Seq: 1, Cmd: CmdRead, Count: 1})
	if _, err := DecodeRequest(append(q, 0x00)); err == nil {
		t.Error("DecodeRequest accepted a trailing byte")
	}
}

func TestDecoderLongRandomStream(t *testing.T) {
	// Random noise with valid frames scattered in it: every frame is found
	// (noise holds no sync pair here, so nothing can swallow a frame).
	r := rand.New(rand.NewPCG(3, 4))
	var stream []byte
	var want []Response
	for i := range 300 {
		for range r.IntN(40) {
			b := byte(r.Uint32())
			if b == 0x5A {
				b = 0
			}
			stream = append(stream, b)
		}
		resp := Response{Seq: uint8(i), Cmd: Cmd(r.IntN(5)), Status: Status(r.IntN(7))}
		for range r.IntN(8) {
			resp.Data = append(resp.Data, r.Uint32())
		}
		want = append(want, resp)
		stream = append(stream, mustResp(t, resp)...)
	}
	d := NewResponseDecoder()
	var got []Response
	for i := 0; i < len(stream); {
		n := 1 + r.IntN(64)
		d.Write(stream[i:min(i+n, len(stream))])
		i += n
		o, _, _ := drainResponses(d)
		got = append(got, o...)
	}
	if len(got) != len(want) {
		t.Fatalf("found %d frames, want %d", len(got), len(want))
	}
	for i := range want {
		if !responsesEqual(got[i], want[i]) {
			t.Fatalf("frame %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

// A request header is refused only when it cannot start a request: the
// response bit set, or a data-carrying COUNT above 256. An unknown CMD or a
// READ_BURST above 256 words is a 12-byte frame a device answers
// (docs/uart-bridge.md, "Resynchronisation").
func TestRequestHeaderCheck(t *testing.T) {
	raw := func(seq, cmd uint8, count uint16, words int) []byte {
		f := []byte{0xA5, 0x5A, seq, cmd, 0, 0, 0, 0, byte(count), byte(count >> 8)}
		f = append(f, make([]byte, 4*words)...)
		return binary.LittleEndian.AppendUint16(f, CRC16(f[2:]))
	}
	for _, c := range []struct {
		name  string
		frame []byte
		ok    bool
	}{
		{"unknown CMD", raw(1, 0x09, 0, 0), true},
		{"unknown CMD with a COUNT", raw(2, 0x7F, 300, 0), true},
		{"READ_BURST COUNT 257", raw(3, 0x03, 257, 0), true},
		{"INFO COUNT 65535", raw(4, 0x00, 65535, 0), true},
		{"response bit", raw(5, 0x81, 1, 0), false},
		{"WRITE_BURST COUNT 257", raw(6, 0x04, 257, 257), false},
		{"WRITE COUNT 300", raw(7, 0x02, 300, 0), false},
	} {
		d := NewRequestDecoder()
		d.Write(c.frame)
		r, _, err := d.Next()
		if c.ok && (err != nil || r.Seq != c.frame[2] || byte(r.Cmd) != c.frame[3]) {
			t.Errorf("%s: %+v, %v; want the frame", c.name, r, err)
		}
		if !c.ok && !errors.Is(err, ErrBadHeader) {
			t.Errorf("%s: %+v, %v; want a bad header", c.name, r, err)
		}
	}
}
