package bridgetest

import (
	"bytes"
	"testing"

	"github.com/labrunner/labrunner/drivers/uartbridge"
)

// A response frame built by the host codec, for the seeds and the checks.
func respFrame(t *testing.T, seq uint8, status uint8, words []uint32) []byte {
	t.Helper()
	f, err := uartbridge.AppendResponse(nil, uartbridge.Response{Seq: seq, Cmd: uartbridge.CmdReadBurst,
		Status: uartbridge.Status(status), Data: words})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// FuzzScanResponse: the strict reader of hand-driven sessions never
// panics, never reads past its input, returns only frames whose CRC holds,
// and finds a whole frame at the start of its input.
func FuzzScanResponse(f *testing.F) {
	f.Add([]byte{}, uint8(1), uint8(0), uint8(2))
	f.Add([]byte{0x5A, 0xA5, 0x07, 0x81, 0x00, 0x01, 0x00, 0x78, 0x56, 0x34, 0x12, 0xD1, 0x86}, uint8(7), uint8(0), uint8(1))
	f.Add([]byte{0x5A, 0xA5, 0, 0x83, 0, 0x01, 0x01}, uint8(9), uint8(1), uint8(0))
	f.Fuzz(func(t *testing.T, b []byte, seq, status, n uint8) {
		if r, used, err := scanResponse(b); err == nil && used > 0 {
			if used > len(b) || !bytes.Equal(r.Raw, b[:used]) || uartbridge.CRC16(b[2:used-2]) != uint16(b[used-2])|uint16(b[used-1])<<8 {
				t.Fatalf("scanResponse(% x) returned a frame of %d bytes that is not there", b, used)
			}
		}
		words := make([]uint32, int(n)%8)
		for i := range words {
			words[i] = uint32(i) * 0x01010101
		}
		frame := respFrame(t, seq, status%8, words)
		stream := append(append([]byte(nil), frame...), b...)
		r, used, err := scanResponse(stream)
		if err != nil || used != len(frame) || r.Seq != seq || r.Status != status%8 || len(r.Words) != len(words) {
			t.Fatalf("scanResponse of a whole frame then % x: %+v, %d, %v", b, r, used, err)
		}
	})
}

// FuzzSplitResponse: the fault line's framer consumes every byte of any
// stream (nothing lost, nothing invented), and a response frame after any
// garbage comes out whole.
func FuzzSplitResponse(f *testing.F) {
	f.Add([]byte{}, uint8(3))
	f.Add([]byte{0x5A, 0x5A, 0xA5, 0x00}, uint8(0))
	f.Add([]byte{0x00, 0x5A, 0xA5, 0x01, 0x81, 0x00, 0xFF, 0xFF}, uint8(2))
	f.Fuzz(func(t *testing.T, garbage []byte, n uint8) {
		words := make([]uint32, int(n)%5)
		frame := respFrame(t, 0x33, 0, words)
		stream := append(append(append([]byte(nil), garbage...), frame...), 0x00)
		var out []byte
		var frames [][]byte
		rest := stream
		for steps := 0; ; steps++ {
			if steps > 4*len(stream)+4 {
				t.Fatalf("no progress on % x", stream)
			}
			skip, fl := splitResponse(rest)
			if skip < 0 || fl < 0 || skip+fl > len(rest) || (skip > 0 && fl > 0) {
				t.Fatalf("splitResponse(% x) = %d, %d", rest, skip, fl)
			}
			if skip == 0 && fl == 0 {
				break
			}
			if fl > 0 {
				frames = append(frames, rest[:fl])
			}
			out = append(out, rest[:skip+fl]...)
			rest = rest[skip+fl:]
		}
		// What is left is a partial frame the pump holds until more comes
		// (or hands on after a pause): it starts like one.
		if len(rest) > 0 && rest[0] != 0x5A {
			t.Fatalf("left % x, which cannot start a frame", rest)
		}
		if !bytes.Equal(append(out, rest...), stream) {
			t.Fatalf("bytes lost or changed: % x became % x + % x", stream, out, rest)
		}
		whole := false
		for _, f := range frames {
			whole = whole || bytes.Equal(f, frame)
		}
		// A header in the garbage may claim the frame's bytes as its own
		// (the host's decoder rescans them: they pass unchanged); garbage
		// without a 0x5A byte cannot, and the frame comes out whole.
		if !whole && bytes.IndexByte(garbage, 0x5A) < 0 {
			t.Fatalf("frame % x not passed whole after % x", frame, garbage)
		}
	})
}
