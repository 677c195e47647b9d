package uartbridge

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// Decoding errors. Next returns ErrNeedMore when the buffered bytes hold no
// complete frame, and a *FrameError (wrapping ErrBadHeader or
// ErrCRCMismatch) each time it discards a candidate frame; callers keep
// calling Next after a *FrameError.
var (
	ErrNeedMore    = errors.New("uartbridge: need more bytes")
	ErrBadHeader   = errors.New("bad frame header")
	ErrCRCMismatch = errors.New("CRC mismatch")
)

// FrameError describes a candidate frame (two sync bytes) the decoder
// discarded. Seq and Cmd are as read and cannot be trusted.
type FrameError struct {
	Err    error // ErrBadHeader or ErrCRCMismatch
	Offset int64 // stream offset of the candidate's first sync byte
	Seq    uint8
	Cmd    uint8 // raw CMD byte
	Len    int   // frame length the header claimed (CRC mismatches only)
}

func (e *FrameError) Error() string {
	if errors.Is(e.Err, ErrCRCMismatch) {
		return fmt.Sprintf("%v in a %d-byte frame at stream offset %d (SEQ 0x%02x, CMD 0x%02x as read)", e.Err, e.Len, e.Offset, e.Seq, e.Cmd)
	}
	return fmt.Sprintf("%v at stream offset %d (SEQ 0x%02x, CMD 0x%02x as read)", e.Err, e.Offset, e.Seq, e.Cmd)
}

func (e *FrameError) Unwrap() error { return e.Err }

// scanner is the resynchronising byte-stream parser both directions share
// (docs/uart-bridge.md, "Resynchronisation"): find the sync pair, check the
// fixed part, then the CRC; on either failure drop only the first sync byte
// and rescan from the next one, bytes already buffered included, because
// the real frame (a retry's answer, say) may start inside the rejected one.
type scanner struct {
	sync     [2]byte
	fixed    int
	frameLen func(h []byte) (int, bool)

	buf     []byte // buf[start:] is live
	start   int
	base    int64 // stream offset of buf[start]
	dropped int64
	lastOff int64
}

func (s *scanner) write(p []byte) {
	// Compact when the dead prefix is at least as large as the live part,
	// so copying stays amortised O(1) per byte.
	if s.start > 0 && s.start >= len(s.buf)-s.start {
		n := copy(s.buf, s.buf[s.start:])
		s.buf = s.buf[:n]
		s.start = 0
	}
	s.buf = append(s.buf, p...)
}

func (s *scanner) drop(n int) {
	s.start += n
	s.base += int64(n)
	if s.start == len(s.buf) {
		s.buf = s.buf[:0]
		s.start = 0
	}
}

func (s *scanner) discard(n int) {
	s.dropped += int64(n)
	s.drop(n)
}

// next returns the next checked frame. The slice aliases the buffer and is
// valid until the next write.
func (s *scanner) next() ([]byte, error) {
	b := s.buf[s.start:]
	i := bytes.Index(b, s.sync[:])
	if i < 0 {
		// A trailing first sync byte may be half of a sync pair.
		keep := 0
		if len(b) > 0 && b[len(b)-1] == s.sync[0] {
			keep = 1
		}
		s.discard(len(b) - keep)
		return nil, ErrNeedMore
	}
	s.discard(i)
	b = s.buf[s.start:]
	if len(b) < s.fixed {
		return nil, ErrNeedMore
	}
	off := s.base
	n, ok := s.frameLen(b)
	if !ok {
		fe := &FrameError{Err: ErrBadHeader, Offset: off, Seq: b[2], Cmd: b[3]}
		s.discard(1)
		return nil, fe
	}
	if len(b) < n {
		return nil, ErrNeedMore
	}
	f := b[:n]
	if CRC16(f[2:n-crcLen]) != binary.LittleEndian.Uint16(f[n-crcLen:]) {
		fe := &FrameError{Err: ErrCRCMismatch, Offset: off, Seq: f[2], Cmd: f[3], Len: n}
		s.discard(1)
		return nil, fe
	}
	s.drop(n) // moves indices only: f's bytes stay put until the next write
	s.lastOff = off
	return f, nil
}

// expire gives up on a partial frame: the first buffered byte (its first
// sync byte) is dropped so that the next call to next rescans after it.
func (s *scanner) expire() bool {
	if len(s.buf)-s.start == 0 {
		return false
	}
	s.discard(1)
	return true
}

// ResponseDecoder parses the device-to-host byte stream, fed in arbitrary
// chunks. Create it with NewResponseDecoder. Not safe for concurrent use.
type ResponseDecoder struct{ s scanner }

// NewResponseDecoder returns an empty response decoder.
func NewResponseDecoder() *ResponseDecoder {
	return &ResponseDecoder{s: scanner{sync: [2]byte{respSync0, respSync1}, fixed: respFixed, frameLen: responseFrameLen}}
}

// Write buffers p. It never fails.
func (d *ResponseDecoder) Write(p []byte) (int, error) { d.s.write(p); return len(p), nil }

// Next returns the next valid response, ErrNeedMore, or a *FrameError for
// a discarded candidate (call Next again).
func (d *ResponseDecoder) Next() (Response, error) {
	f, err := d.s.next()
	if err != nil {
		return Response{}, err
	}
	return parseResponse(f), nil
}

// Expire drops a partial frame whose remaining bytes did not arrive in
// time (the host does it at the request deadline) and reports whether
// anything was buffered. Call Next afterwards: the rescan may find a frame.
func (d *ResponseDecoder) Expire() bool { return d.s.expire() }

// Buffered is the number of bytes held: a partial frame or a trailing
// first sync byte.
func (d *ResponseDecoder) Buffered() int { return len(d.s.buf) - d.s.start }

// Dropped is the number of bytes discarded so far while resynchronising.
func (d *ResponseDecoder) Dropped() int64 { return d.s.dropped }

// Offset is the stream offset (bytes written before it) of the first byte
// of the last frame Next returned.
func (d *ResponseDecoder) Offset() int64 { return d.s.lastOff }

// RequestDecoder parses the host-to-device byte stream (a device, an
// emulator or a test peer uses it). Create it with NewRequestDecoder.
type RequestDecoder struct{ s scanner }

// NewRequestDecoder returns an empty request decoder.
func NewRequestDecoder() *RequestDecoder {
	return &RequestDecoder{s: scanner{sync: [2]byte{reqSync0, reqSync1}, fixed: reqFixed, frameLen: requestFrameLen}}
}

// Write buffers p. It never fails.
func (d *RequestDecoder) Write(p []byte) (int, error) { d.s.write(p); return len(p), nil }

// Next returns the next valid request, ErrNeedMore, or a *FrameError.
// The returned CRC is the request's CRC field, which a device remembers
// with the SEQ to recognise a retry.
func (d *RequestDecoder) Next() (Request, uint16, error) {
	f, err := d.s.next()
	if err != nil {
		return Request{}, 0, err
	}
	return parseRequest(f), binary.LittleEndian.Uint16(f[len(f)-crcLen:]), nil
}

// Expire drops a partial frame (a device does it after 100 ms without a
// byte) and reports whether anything was buffered.
func (d *RequestDecoder) Expire() bool { return d.s.expire() }

// Buffered is the number of bytes held.
func (d *RequestDecoder) Buffered() int { return len(d.s.buf) - d.s.start }

// Dropped is the number of bytes discarded so far while resynchronising.
func (d *RequestDecoder) Dropped() int64 { return d.s.dropped }

// Offset is the stream offset of the last request Next returned.
func (d *RequestDecoder) Offset() int64 { return d.s.lastOff }

// DecodeRequest decodes exactly one complete request frame.
func DecodeRequest(frame []byte) (Request, error) {
	d := NewRequestDecoder()
	d.Write(frame)
	r, _, err := d.Next()
	if err != nil {
		return Request{}, fmt.Errorf("decode request: %w", err)
	}
	if d.Offset() != 0 || d.Buffered() != 0 {
		return Request{}, fmt.Errorf("decode request: %d bytes are not one frame", len(frame))
	}
	return r, nil
}

// DecodeResponse decodes exactly one complete response frame.
func DecodeResponse(frame []byte) (Response, error) {
	d := NewResponseDecoder()
	d.Write(frame)
	r, err := d.Next()
	if err != nil {
		return Response{}, fmt.Errorf("decode response: %w", err)
	}
	if d.Offset() != 0 || d.Buffered() != 0 {
		return Response{}, fmt.Errorf("decode response: %d bytes are not one frame", len(frame))
	}
	return r, nil
}
