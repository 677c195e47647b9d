package uartbridge

import (
	"encoding/binary"
	"fmt"
)

// Wire format version 1, docs/uart-bridge.md. All integers are little-endian.
const (
	// ProtocolVersion is the version this package speaks (INFO word 1).
	ProtocolVersion = 1
	// InfoMagic is INFO's first word, "LBRB".
	InfoMagic = 0x4252424C
	// MaxCount is the largest COUNT of a frame: 256 words.
	MaxCount = 256

	reqSync0, reqSync1   = 0xA5, 0x5A // request: A5 5A
	respSync0, respSync1 = 0x5A, 0xA5 // response: the request's, swapped
	respBit              = 0x80       // a response's CMD is the request's with bit 7 set

	reqFixed  = 10 // sync, SEQ, CMD, ADDR, COUNT
	respFixed = 7  // sync, SEQ, CMD, STATUS, COUNT
	crcLen    = 2
)

// Cmd is a request command.
type Cmd uint8

// Commands (docs/uart-bridge.md, "Commands").
const (
	CmdInfo       Cmd = 0x00
	CmdRead       Cmd = 0x01
	CmdWrite      Cmd = 0x02
	CmdReadBurst  Cmd = 0x03
	CmdWriteBurst Cmd = 0x04
	// CmdWindowed marks the windowed forms of READ..WRITE_BURST
	// (0x41-0x44), sent only inside a window the device opened
	// (docs/uart-bridge.md, "Window").
	CmdWindowed Cmd = 0x40
)

// Capability bits of INFO word 4 (docs/uart-bridge.md, "Capabilities").
const (
	CapWindow = 1 << 0
)

func (c Cmd) String() string {
	if c.Windowed() {
		return c.Plain().String() + " (windowed)"
	}
	switch c {
	case CmdInfo:
		return "INFO"
	case CmdRead:
		return "READ"
	case CmdWrite:
		return "WRITE"
	case CmdReadBurst:
		return "READ_BURST"
	case CmdWriteBurst:
		return "WRITE_BURST"
	}
	return fmt.Sprintf("CMD(0x%02x)", uint8(c))
}

// Known reports whether c is a version-1 command, plain or windowed.
func (c Cmd) Known() bool { return c <= CmdWriteBurst || c.Windowed() }

// Windowed reports whether c is the windowed form of READ..WRITE_BURST.
func (c Cmd) Windowed() bool { return c >= CmdWindowed|CmdRead && c <= CmdWindowed|CmdWriteBurst }

// Plain is the command a windowed one executes as (c itself otherwise).
func (c Cmd) Plain() Cmd {
	if c.Windowed() {
		return c &^ CmdWindowed
	}
	return c
}

// HasData reports whether a request with this command carries DATA words.
func (c Cmd) HasData() bool { p := c.Plain(); return p == CmdWrite || p == CmdWriteBurst }

// Status is a response's result code.
type Status uint8

// Status codes (docs/uart-bridge.md, "Status codes").
const (
	StatusOK       Status = 0x00
	StatusBusError Status = 0x01
	StatusAlign    Status = 0x02
	StatusBadCount Status = 0x03
	StatusBadCmd   Status = 0x04
	StatusBusy     Status = 0x05
	StatusReadOnly Status = 0x06
	StatusRefused  Status = 0x07
	StatusSequence Status = 0x08
)

func (s Status) String() string {
	switch s {
	case StatusOK:
		return "OK"
	case StatusBusError:
		return "BUS_ERROR"
	case StatusAlign:
		return "ALIGN"
	case StatusBadCount:
		return "BAD_COUNT"
	case StatusBadCmd:
		return "BAD_CMD"
	case StatusBusy:
		return "BUSY"
	case StatusReadOnly:
		return "READ_ONLY"
	case StatusRefused:
		return "REFUSED"
	case StatusSequence:
		return "SEQUENCE"
	}
	return fmt.Sprintf("STATUS(0x%02x)", uint8(s))
}

// Request is a host-to-device frame.
type Request struct {
	Seq  uint8
	Cmd  Cmd
	Addr uint32
	// Count is the COUNT field: words to read or write (0 for INFO).
	Count uint16
	// Data holds the words written; only WRITE and WRITE_BURST carry it,
	// and then len(Data) == Count.
	Data []uint32
}

// Response is a device-to-host frame.
type Response struct {
	Seq uint8
	// Cmd is the command answered, without the response bit (the wire
	// carries Cmd|0x80).
	Cmd    Cmd
	Status Status
	Data   []uint32 // COUNT is len(Data)
}

// RequestLen is the size on the wire of a request.
func RequestLen(cmd Cmd, count int) int {
	n := reqFixed + crcLen
	if cmd.HasData() {
		n += 4 * count
	}
	return n
}

// ResponseLen is the size on the wire of a response carrying count words.
func ResponseLen(count int) int { return respFixed + 4*count + crcLen }

// AppendRequest appends r's frame to dst. It refuses frames that the
// receiver's header check would reject (unknown CMD, COUNT above 256) and
// a WRITE/WRITE_BURST whose Data does not match Count.
func AppendRequest(dst []byte, r Request) ([]byte, error) {
	if !r.Cmd.Known() {
		return dst, fmt.Errorf("encode request: unknown command 0x%02x", uint8(r.Cmd))
	}
	if r.Count > MaxCount {
		return dst, fmt.Errorf("encode request: COUNT %d above %d", r.Count, MaxCount)
	}
	if r.Cmd.HasData() && len(r.Data) != int(r.Count) {
		return dst, fmt.Errorf("encode request: %v with COUNT %d carries %d data words", r.Cmd, r.Count, len(r.Data))
	}
	start := len(dst)
	dst = append(dst, reqSync0, reqSync1, r.Seq, byte(r.Cmd))
	dst = binary.LittleEndian.AppendUint32(dst, r.Addr)
	dst = binary.LittleEndian.AppendUint16(dst, r.Count)
	if r.Cmd.HasData() {
		for _, w := range r.Data {
			dst = binary.LittleEndian.AppendUint32(dst, w)
		}
	}
	return binary.LittleEndian.AppendUint16(dst, CRC16(dst[start+2:])), nil
}

// AppendResponse appends r's frame to dst.
func AppendResponse(dst []byte, r Response) ([]byte, error) {
	if !r.Cmd.Known() {
		return dst, fmt.Errorf("encode response: unknown command 0x%02x", uint8(r.Cmd))
	}
	if len(r.Data) > MaxCount {
		return dst, fmt.Errorf("encode response: %d data words, above %d", len(r.Data), MaxCount)
	}
	start := len(dst)
	dst = append(dst, respSync0, respSync1, r.Seq, byte(r.Cmd)|respBit, byte(r.Status))
	dst = binary.LittleEndian.AppendUint16(dst, uint16(len(r.Data)))
	for _, w := range r.Data {
		dst = binary.LittleEndian.AppendUint32(dst, w)
	}
	return binary.LittleEndian.AppendUint16(dst, CRC16(dst[start+2:])), nil
}

// requestFrameLen checks a request's fixed part (h holds at least reqFixed
// bytes, sync first) and returns the frame's full length. A CMD with the
// response bit set cannot start a request, nor can a WRITE or WRITE_BURST
// with COUNT above 256; any other header starts a frame, 12 bytes unless it
// carries data, so that a device can answer an unknown CMD (BAD_CMD) or a
// READ_BURST of more than 256 words (BAD_COUNT) (docs/uart-bridge.md,
// "Resynchronisation").
func requestFrameLen(h []byte) (int, bool) {
	cmd := Cmd(h[3])
	count := int(binary.LittleEndian.Uint16(h[8:10]))
	if cmd&respBit != 0 || (cmd.HasData() && count > MaxCount) {
		return 0, false
	}
	return RequestLen(cmd, count), true
}

// responseFrameLen is requestFrameLen for responses.
func responseFrameLen(h []byte) (int, bool) {
	if h[3]&respBit == 0 || !Cmd(h[3]&^respBit).Known() {
		return 0, false
	}
	count := int(binary.LittleEndian.Uint16(h[5:7]))
	if count > MaxCount {
		return 0, false
	}
	return ResponseLen(count), true
}

// parseRequest decodes a complete, checked request frame.
func parseRequest(f []byte) Request {
	r := Request{
		Seq:   f[2],
		Cmd:   Cmd(f[3]),
		Addr:  binary.LittleEndian.Uint32(f[4:8]),
		Count: binary.LittleEndian.Uint16(f[8:10]),
	}
	if r.Cmd.HasData() {
		r.Data = words(f[reqFixed : len(f)-crcLen])
	}
	return r
}

// parseResponse decodes a complete, checked response frame.
func parseResponse(f []byte) Response {
	return Response{
		Seq:    f[2],
		Cmd:    Cmd(f[3] &^ respBit),
		Status: Status(f[4]),
		Data:   words(f[respFixed : len(f)-crcLen]),
	}
}

func words(p []byte) []uint32 {
	if len(p) == 0 {
		return nil
	}
	w := make([]uint32, len(p)/4)
	for i := range w {
		w[i] = binary.LittleEndian.Uint32(p[4*i:])
	}
	return w
}
