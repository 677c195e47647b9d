package uartbridge

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
)

// found is a frame a decoder returned, with where it started in the stream.
type found struct {
	off   int64
	frame []byte
}

// feedAll feeds stream to next/write in chunks, then expires partial frames
// until nothing is buffered, and returns every frame found. It fails the
// test if decoding does not make progress (a hang).
func feedAll(t *testing.T, stream []byte, chunk int, write func([]byte), next func() ([]byte, error), expire func() bool, offset func() int64) []found {
	var out []found
	// Each Next call either returns ErrNeedMore (once per drain: per chunk
	// and per expiry) or consumes at least one byte (a frame, or the first
	// sync byte of a rejected candidate).
	budget := 4*len(stream) + 16
	drain := func() {
		for {
			if budget--; budget < 0 {
				t.Fatalf("decoder made no progress on %x", stream)
			}
			f, err := next()
			if errors.Is(err, ErrNeedMore) {
				return
			}
			var fe *FrameError
			if err != nil && !errors.As(err, &fe) {
				t.Fatalf("Next: unexpected error %v", err)
			}
			if err == nil {
				out = append(out, found{offset(), f})
			}
		}
	}
	for i := 0; i < len(stream); i += chunk {
		write(stream[i:min(i+chunk, len(stream))])
		drain()
	}
	for expire() {
		drain()
	}
	return out
}

// checkFound verifies that every frame found is really in the stream at its
// offset, and that the frame embedded at off was found, unless a valid frame
// starting earlier covers it (the stream is then genuinely ambiguous).
func checkFound(t *testing.T, stream []byte, fs []found, off int, frame []byte) {
	t.Helper()
	hit := false
	for _, f := range fs {
		end := f.off + int64(len(f.frame))
		if f.off < 0 || end > int64(len(stream)) || !bytes.Equal(stream[f.off:end], f.frame) {
			t.Fatalf("decoder returned %x at offset %d, not what the stream holds", f.frame, f.off)
		}
		if f.off == int64(off) && bytes.Equal(f.frame, frame) {
			hit = true
		}
		if f.off < int64(off) && end > int64(off) {
			hit = true // an earlier valid frame covers the embedded one
		}
	}
	if !hit {
		t.Fatalf("frame %x at offset %d not found in %x (found %v)", frame, off, stream, fs)
	}
}

func FuzzResponseDecoder(f *testing.F) {
	f.Add([]byte{}, []byte{}, uint8(7), uint8(1), uint8(0), uint8(1), uint32(0x12345678), uint8(0))
	f.Add([]byte{0x5A, 0xA5, 0x07, 0x83, 0x00, 0x05, 0x00}, []byte{1, 2, 3, 4, 5, 6, 7, 8, 9}, uint8(7), uint8(1), uint8(0), uint8(1), uint32(42), uint8(3))
	f.Add([]byte{0x5A, 0xA5, 0x07, 0x83, 0x00, 0xC8, 0x00}, []byte{0x5A}, uint8(0), uint8(3), uint8(0), uint8(64), uint32(1), uint8(1))
	f.Add([]byte{0x5A, 0x5A, 0xA5, 0xFF, 0xA5, 0x5A}, []byte{0x5A, 0xA5, 0x00}, uint8(255), uint8(4), uint8(5), uint8(0), uint32(0), uint8(31))
	f.Fuzz(func(t *testing.T, prefix, suffix []byte, seq, cmd, status, nwords uint8, seed uint32, chunk uint8) {
		r := Response{Seq: seq, Cmd: Cmd(cmd%5) | Cmd(cmd&0x40), Status: Status(status)}
		if r.Cmd == CmdInfo|CmdWindowed {
			r.Cmd = CmdInfo
		}
		for i := range uint32(nwords) {
			r.Data = append(r.Data, seed*(i+1)^i<<24)
		}
		frame := mustResp(t, r)
		stream := append(append(append([]byte(nil), prefix...), frame...), suffix...)
		d := NewResponseDecoder()
		fs := feedAll(t, stream, int(chunk%32)+1,
			func(p []byte) { d.Write(p) },
			func() ([]byte, error) {
				resp, err := d.Next()
				if err != nil {
					return nil, err
				}
				return AppendResponse(nil, resp)
			},
			d.Expire, d.Offset)
		checkFound(t, stream, fs, len(prefix), frame)
		if d.Buffered() != 0 {
			t.Fatalf("%d bytes left after expiring everything", d.Buffered())
		}
		// Arbitrary bytes alone: no panic, no hang, only true frames.
		g := NewResponseDecoder()
		fs = feedAll(t, prefix, int(chunk%7)+1, func(p []byte) { g.Write(p) },
			func() ([]byte, error) {
				resp, err := g.Next()
				if err != nil {
					return nil, err
				}
				return AppendResponse(nil, resp)
			}, g.Expire, g.Offset)
		for _, x := range fs {
			if !bytes.Equal(prefix[x.off:x.off+int64(len(x.frame))], x.frame) {
				t.Fatalf("decoder invented frame %x", x.frame)
			}
		}
	})
}

func FuzzRequestDecoder(f *testing.F) {
	f.Add([]byte{}, []byte{}, uint8(7), uint8(1), uint32(4), uint8(1), uint32(0), uint8(0))
	f.Add([]byte{0xA5, 0x5A, 0x08, 0x02, 0x10, 0x00}, []byte{}, uint8(8), uint8(2), uint32(0x10), uint8(1), uint32(0xCAFEF00D), uint8(2))
	f.Add([]byte{0xA5, 0x5A, 0x00, 0x04, 0, 0, 0, 0, 0xFF, 0x00}, []byte{0xA5}, uint8(1), uint8(4), uint32(0x2000), uint8(64), uint32(9), uint8(5))
	f.Fuzz(func(t *testing.T, prefix, suffix []byte, seq, cmd uint8, addr uint32, count uint8, seed uint32, chunk uint8) {
		// The commands a host sends: plain, or windowed (bit 6).
		r := Request{Seq: seq, Cmd: Cmd(cmd%5) | Cmd(cmd&0x40), Addr: addr, Count: uint16(count)}
		if r.Cmd == CmdInfo|CmdWindowed {
			r.Cmd = CmdInfo
		}
		if r.Cmd.HasData() {
			for i := range uint32(count) {
				r.Data = append(r.Data, seed+i*0x9E3779B9)
			}
		}
		frame := mustReq(t, r)
		stream := append(append(append([]byte(nil), prefix...), frame...), suffix...)
		d := NewRequestDecoder()
		next := func(d *RequestDecoder) func() ([]byte, error) {
			return func() ([]byte, error) {
				req, crc, err := d.Next()
				if err != nil {
					return nil, err
				}
				// Re-encoded by hand: the decoder also returns frames the
				// host never builds (an unknown CMD, a READ_BURST above
				// 256 words), which a device answers with an error status.
				f := binary.LittleEndian.AppendUint16(append([]byte{reqSync0, reqSync1, req.Seq, byte(req.Cmd)},
					binary.LittleEndian.AppendUint32(nil, req.Addr)...), req.Count)
				for _, w := range req.Data {
					f = binary.LittleEndian.AppendUint32(f, w)
				}
				f = binary.LittleEndian.AppendUint16(f, CRC16(f[2:]))
				if crc != CRC16(f[2:len(f)-2]) {
					t.Fatalf("Next returned CRC %04x for a frame whose CRC is %04x", crc, CRC16(f[2:len(f)-2]))
				}
				return f, nil
			}
		}
		fs := feedAll(t, stream, int(chunk%32)+1, func(p []byte) { d.Write(p) }, next(d), d.Expire, d.Offset)
		checkFound(t, stream, fs, len(prefix), frame)
		g := NewRequestDecoder()
		fs = feedAll(t, prefix, int(chunk%7)+1, func(p []byte) { g.Write(p) }, next(g), g.Expire, g.Offset)
		for _, x := range fs {
			if !bytes.Equal(prefix[x.off:x.off+int64(len(x.frame))], x.frame) {
				t.Fatalf("decoder invented frame %x", x.frame)
			}
		}
	})
}
