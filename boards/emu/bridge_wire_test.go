package emu

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

func TestCRC16(t *testing.T) {
	// docs/uart-bridge.md, "CRC": the check value of "123456789".
	if c := crc16([]byte("123456789")); c != 0x29B1 {
		t.Fatalf("check value 0x%04X, want 0x29B1", c)
	}
	if c := refCRC([]byte("123456789")); c != 0x29B1 {
		t.Fatalf("test's CRC: check value 0x%04X", c)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 200; i++ {
		p := make([]byte, r.IntN(300))
		for j := range p {
			p[j] = byte(r.Uint32())
		}
		if crc16(p) != refCRC(p) {
			t.Fatalf("table and bitwise CRC disagree on %x", p)
		}
	}
}

func TestSpecExample(t *testing.T) {
	// docs/uart-bridge.md, "Example": READ of 0x00000004, SEQ 7.
	req := reqFrame(7, 0x01, 4, 1)
	if want := []byte{0xA5, 0x5A, 0x07, 0x01, 0x04, 0, 0, 0, 0x01, 0x00}; !bytes.Equal(req[:10], want) {
		t.Fatalf("request % X", req)
	}
	var p reqParser
	p.push(req)
	var r request
	if !p.next(&r) || r.Seq != 7 || r.Cmd != 1 || r.Addr != 4 || r.Count != 1 || r.CRC != binary.LittleEndian.Uint16(req[10:]) {
		t.Fatalf("parsed %+v", r)
	}
	resp := appendResponse(nil, 7, 0x01, statusOK, []uint32{0x11223344})
	want := []byte{0x5A, 0xA5, 0x07, 0x81, 0x00, 0x01, 0x00, 0x44, 0x33, 0x22, 0x11}
	want = binary.LittleEndian.AppendUint16(want, refCRC(want[2:]))
	if !bytes.Equal(resp, want) {
		t.Fatalf("response % X, want % X", resp, want)
	}
	// An error answer carries no data even if words are at hand.
	if e := appendResponse(nil, 1, 0x03, statusBusError, []uint32{1, 2}); len(e) != 9 || e[5] != 0 {
		t.Fatalf("error response % X", e)
	}
}

func TestFrameSizes(t *testing.T) {
	// docs/uart-bridge.md, "Sizes on the wire".
	w64 := make([]uint32, 64)
	for _, c := range []struct {
		name       string
		req        []byte
		resp       []byte
		reqN, resN int
	}{
		{"INFO", reqFrame(0, 0, 0, 0), appendResponse(nil, 0, 0, 0, make([]uint32, 4)), 12, 25},
		{"READ", reqFrame(0, 1, 0, 1), appendResponse(nil, 0, 1, 0, w64[:1]), 12, 13},
		{"WRITE", reqFrame(0, 2, 0, 1, 0), appendResponse(nil, 0, 2, 0, nil), 16, 9},
		{"READ_BURST 64", reqFrame(0, 3, 0, 64), appendResponse(nil, 0, 3, 0, w64), 12, 265},
		{"WRITE_BURST 64", reqFrame(0, 4, 0, 64, w64...), appendResponse(nil, 0, 4, 0, nil), 268, 9},
	} {
		if len(c.req) != c.reqN || len(c.resp) != c.resN {
			t.Errorf("%s: %d + %d bytes, want %d + %d", c.name, len(c.req), len(c.resp), c.reqN, c.resN)
		}
		var p reqParser
		p.push(c.req)
		var r request
		if !p.next(&r) || p.pending() {
			t.Errorf("%s: not parsed as one frame", c.name)
		}
	}
}

func TestParserResync(t *testing.T) {
	good := reqFrame(1, 0x02, 0x40, 1, 0xDEADBEEF)
	badCRC := append([]byte(nil), good...)
	badCRC[12] ^= 1
	cases := []struct {
		name string
		in   []byte
		want int // frames found
		rest bool
	}{
		{"clean", good, 1, false},
		{"leading noise", append([]byte{1, 2, 0xA5, 3, 0x5A}, good...), 1, false},
		{"bad crc then good", append(badCRC, good...), 1, false},
		{"response header then good", append([]byte{0xA5, 0x5A, 0, 0x81, 0, 0, 0, 0, 0, 0}, good...), 1, false},
		{"oversized write burst then good", append([]byte{0xA5, 0x5A, 0, 0x04, 0, 0, 0, 0, 0x01, 0x01}, good...), 1, false},
		{"two", append(append([]byte(nil), good...), good...), 2, false},
		{"trailing sync byte kept", append(append([]byte(nil), good...), 0xA5), 1, true},
		{"partial kept", append(append([]byte(nil), good...), good[:5]...), 1, true},
	}
	for _, c := range cases {
		// Whole, and byte by byte: the same frames.
		for _, step := range []int{len(c.in), 1} {
			var p reqParser
			n := 0
			var r request
			for i := 0; i < len(c.in); i += step {
				p.push(c.in[i:min(i+step, len(c.in))])
				for p.next(&r) {
					if r.Addr != 0x40 || r.word(0) != 0xDEADBEEF {
						t.Fatalf("%s: wrong frame %+v", c.name, r)
					}
					n++
				}
			}
			if n != c.want || p.pending() != c.rest {
				t.Errorf("%s (step %d): %d frames, pending %v; want %d, %v", c.name, step, n, p.pending(), c.want, c.rest)
			}
		}
	}
	// A partial frame that hides a real one: found once the partial is dropped.
	var p reqParser
	p.push([]byte{0xA5, 0x5A, 0, 0x04, 0, 0, 0, 0, 0x00, 0x01})
	p.push(good)
	var r request
	if p.next(&r) {
		t.Fatal("found a frame inside a pending one before the timeout")
	}
	p.dropPartial()
	if !p.next(&r) || r.Seq != 1 {
		t.Fatal("frame inside the dropped partial not found")
	}
}

// refFrames is a reference reading of the resynchronisation rules over a
// whole input: at each sync pair, a frame is taken if it is complete and
// valid, otherwise the search resumes one byte further.
func refFrames(in []byte) [][]byte {
	var out [][]byte
	for i := 0; i+1 < len(in); {
		if in[i] != 0xA5 || in[i+1] != 0x5A || len(in)-i < 10 {
			i++
			continue
		}
		cmd, count := in[i+3], int(binary.LittleEndian.Uint16(in[i+8:]))
		// WRITE and WRITE_BURST carry words, plain or windowed.
		data := cmd == 2 || cmd == 4 || cmd == 0x42 || cmd == 0x44
		n := 12
		if data {
			n += 4 * count
		}
		ok := cmd < 0x80 && !(data && count > 256) && len(in)-i >= n &&
			refCRC(in[i+2:i+n-2]) == binary.LittleEndian.Uint16(in[i+n-2:])
		if !ok {
			i++
			continue
		}
		out = append(out, in[i:i+n])
		i += n
	}
	return out
}

// FuzzRequestParser checks the streaming parser against the reference over
// any input cut into any chunks, then drained as after a long silence.
func FuzzRequestParser(f *testing.F) {
	good := reqFrame(1, 0x01, 0x40, 1)
	f.Add(good, []byte{3})
	f.Add(append([]byte{0xA5, 0x5A, 0, 0x04, 0, 0, 0, 0, 0, 1}, good...), []byte{1, 2, 200})
	f.Add(append(reqFrame(2, 0x04, 0, 3, 1, 2, 3), reqFrame(3, 0x09, 0, 7)...), []byte{5})
	f.Add(append(reqFrame(4, 0x44, 0, 2, 1, 2), reqFrame(5, 0x42, 8, 1, 9)...), []byte{7})
	f.Add([]byte{0xA5, 0xA5, 0x5A, 0x5A, 0xA5}, []byte{})
	f.Fuzz(func(t *testing.T, in []byte, cuts []byte) {
		var p reqParser
		var got [][]byte
		var r request
		collect := func() {
			for p.next(&r) {
				f := []byte{0xA5, 0x5A, r.Seq, r.Cmd, 0, 0, 0, 0, 0, 0}
				binary.LittleEndian.PutUint32(f[4:], r.Addr)
				binary.LittleEndian.PutUint16(f[8:], r.Count)
				f = append(f, r.Data...)
				got = append(got, binary.LittleEndian.AppendUint16(f, r.CRC))
			}
		}
		for i, k := 0, 0; i < len(in); k++ {
			step := len(in)
			if len(cuts) > 0 {
				step = int(cuts[k%len(cuts)]) + 1
			}
			p.push(in[i:min(i+step, len(in))])
			i += step
			collect()
			if n := len(p.buf) - p.start; n >= maxFrame {
				t.Fatalf("%d bytes kept undecided; a frame is at most %d", n, maxFrame)
			}
		}
		for p.pending() {
			p.dropPartial()
			collect()
		}
		want := refFrames(in)
		if len(got) != len(want) {
			t.Fatalf("%d frames, reference %d", len(got), len(want))
		}
		for i := range got {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("frame %d: % X, reference % X", i, got[i], want[i])
			}
		}
	})
}

func TestLineEditor(t *testing.T) {
	var e lineEditor
	var lines []string
	var echo []byte
	for _, c := range []byte("ab\x7fc\r\nid\nx\x03st\x15status\r\x08\n") {
		var ev editEvent
		echo, ev = e.feed(c, echo)
		if ev == editLine {
			lines = append(lines, e.take())
		}
	}
	want := []string{"ac", "id", "status", ""}
	if len(lines) != len(want) {
		t.Fatalf("lines %q, want %q", lines, want)
	}
	for i := range want {
		if lines[i] != want[i] {
			t.Fatalf("lines %q, want %q", lines, want)
		}
	}
	if want := "ab\b \bc\r\nid\r\nx^C\r\nst\b \b\b \bstatus\r\n\r\n"; string(echo) != want {
		t.Fatalf("echo %q, want %q", echo, want)
	}
}

// FuzzLineEditor: whatever is typed, lines are bounded and hold no control
// bytes, and the echo holds only what a terminal can show.
func FuzzLineEditor(f *testing.F) {
	f.Add([]byte("id\r\nstatus\n"))
	f.Add([]byte("\x03\x15\x7f\x08\t\xff\r\r\n\n"))
	f.Add(bytes.Repeat([]byte("x"), 2000))
	f.Fuzz(func(t *testing.T, in []byte) {
		var e lineEditor
		var echo []byte
		plain := true
		for _, c := range in {
			if c < 0x20 && c != '\n' || c == 0x7f {
				plain = false
			}
		}
		var lines []string
		for _, c := range in {
			var ev editEvent
			echo, ev = e.feed(c, echo)
			if ev == editLine {
				l := e.take()
				if len(l) > maxLine {
					t.Fatalf("line of %d bytes", len(l))
				}
				for _, c := range []byte(l) {
					if c < 0x20 && c != '\t' || c == 0x7f {
						t.Fatalf("control byte 0x%02x in line %q", c, l)
					}
				}
				lines = append(lines, l)
			}
		}
		for _, c := range echo {
			if c < 0x20 && c != '\r' && c != '\n' && c != '\b' && c != '\t' {
				t.Fatalf("echo holds 0x%02x", c)
			}
		}
		if plain && len(in) < maxLine {
			// Printable text and "\n" only: the lines are the text split on "\n".
			parts := bytes.Split(in, []byte("\n"))
			parts = parts[:len(parts)-1]
			if len(parts) != len(lines) {
				t.Fatalf("%d lines, want %d", len(lines), len(parts))
			}
			for i := range parts {
				if string(parts[i]) != lines[i] {
					t.Fatalf("line %d %q, want %q", i, lines[i], parts[i])
				}
			}
		}
	})
}
