package emu

import "encoding/binary"

// The device side of the UART debug bridge's wire format, written from
// docs/uart-bridge.md alone (it is the independent peer that page promises:
// the host side, drivers/uartbridge, was written from the same page by
// someone else, and neither imports the other).

// Frame constants (docs/uart-bridge.md, "Frames").
const (
	reqSync0  = 0xA5 // a request starts A5 5A
	reqSync1  = 0x5A
	respSync0 = 0x5A // a response starts 5A A5: a host hearing its own echo never takes it for an answer
	respSync1 = 0xA5

	reqHeaderLen  = 10 // sync(2) seq cmd addr(4) count(2)
	crcLen        = 2
	respHeaderLen = 7 // sync(2) seq cmd status count(2)
	maxBurst      = 256

	cmdInfo       = 0x00
	cmdRead       = 0x01
	cmdWrite      = 0x02
	cmdReadBurst  = 0x03
	cmdWriteBurst = 0x04
	respFlag      = 0x80
	// windowFlag marks the windowed forms of READ..WRITE_BURST (0x41-0x44):
	// executed only in turn, inside a window the host opened with INFO
	// (docs/uart-bridge.md, "Window").
	windowFlag = 0x40

	statusOK       = 0x00
	statusBusError = 0x01
	statusAlign    = 0x02
	statusBadCount = 0x03
	statusBadCmd   = 0x04
	statusBusy     = 0x05
	statusReadOnly = 0x06
	statusRefused  = 0x07
	statusSequence = 0x08

	// INFO's answer (docs/uart-bridge.md, "Commands").
	infoMagic   = 0x4252424C // "LBRB"
	infoVersion = 1
	// Capabilities (docs/uart-bridge.md, "Capabilities"): INFO words 4
	// (the bits) and 5 (the window open).
	capWindow = 1 << 0
	// maxWindow is the largest window the emulated bridge opens: what it
	// remembers to replay. 32 one-word READs in flight fill a 921600-baud
	// line behind a round trip of 4.5 ms.
	maxWindow = 32
)

// crcTable drives CRC-16/CCITT-FALSE (poly 0x1021, init 0xFFFF, no
// reflection, no final XOR; docs/uart-bridge.md, "CRC").
var crcTable = func() (t [256]uint16) {
	for i := range t {
		c := uint16(i) << 8
		for range 8 {
			if c&0x8000 != 0 {
				c = c<<1 ^ 0x1021
			} else {
				c <<= 1
			}
		}
		t[i] = c
	}
	return t
}()

func crc16(p []byte) uint16 {
	c := uint16(0xFFFF)
	for _, b := range p {
		c = c<<8 ^ crcTable[byte(c>>8)^b]
	}
	return c
}

// carriesData reports whether a request with this CMD has COUNT data words
// after its header. Only WRITE and WRITE_BURST do, plain or windowed; every
// other CMD, known or not, is a 12-byte frame, so that an unknown CMD with a
// good CRC can be answered BAD_CMD.
func carriesData(cmd byte) bool {
	c := plainCmd(cmd)
	return c == cmdWrite || c == cmdWriteBurst
}

// windowed reports whether cmd is the windowed form of READ..WRITE_BURST.
func windowed(cmd byte) bool { return cmd >= windowFlag|cmdRead && cmd <= windowFlag|cmdWriteBurst }

// plainCmd is the command a windowed one executes as (others unchanged).
func plainCmd(cmd byte) byte {
	if windowed(cmd) {
		return cmd &^ windowFlag
	}
	return cmd
}

// request is one parsed request frame. Data aliases the parser's buffer and
// is valid only until the next push.
type request struct {
	Seq   uint8
	Cmd   uint8
	Addr  uint32
	Count uint16
	CRC   uint16
	Data  []byte // 4*Count bytes for WRITE/WRITE_BURST, little-endian words
}

// word returns data word i of a write request.
func (r *request) word(i int) uint32 { return binary.LittleEndian.Uint32(r.Data[4*i:]) }

// reqParser finds request frames in a byte stream, with the
// resynchronisation rules of docs/uart-bridge.md ("Resynchronisation"):
// bytes before a sync pair are dropped; a header that cannot start a request
// (response bit set, or a data-carrying COUNT above 256) or a frame whose CRC
// fails costs only its first sync byte, and the search resumes from the next
// byte, bytes already received included.
type reqParser struct {
	buf   []byte
	start int // buf[start:] is not consumed yet
}

// maxFrame is the longest request: a WRITE_BURST of 256 words.
const maxFrame = reqHeaderLen + 4*maxBurst + crcLen

// push appends received bytes.
func (p *reqParser) push(b []byte) {
	if p.start > 0 && (p.start == len(p.buf) || p.start >= len(p.buf)/2) {
		// Keep the buffer from growing: unconsumed bytes never exceed one
		// frame plus what one read brings.
		n := copy(p.buf, p.buf[p.start:])
		p.buf = p.buf[:n]
		p.start = 0
	}
	p.buf = append(p.buf, b...)
}

// next extracts the next valid request into r. It returns false when more
// bytes are needed; the bytes kept then begin with a request's first sync
// byte (or are none).
func (p *reqParser) next(r *request) bool {
	for {
		b := p.buf[p.start:]
		i := syncIndex(b)
		if i < 0 {
			// Keep a trailing first sync byte: its partner may be on the way.
			if len(b) > 0 && b[len(b)-1] == reqSync0 {
				p.start = len(p.buf) - 1
			} else {
				p.start = len(p.buf)
			}
			return false
		}
		p.start += i
		b = b[i:]
		if len(b) < reqHeaderLen {
			return false
		}
		cmd := b[3]
		count := binary.LittleEndian.Uint16(b[8:])
		if cmd&respFlag != 0 || (carriesData(cmd) && count > maxBurst) {
			p.start++ // not a frame start: resume after its first sync byte
			continue
		}
		n := reqHeaderLen + crcLen
		if carriesData(cmd) {
			n += 4 * int(count)
		}
		if len(b) < n {
			return false
		}
		got := binary.LittleEndian.Uint16(b[n-crcLen:])
		if crc16(b[2:n-crcLen]) != got {
			p.start++
			continue
		}
		*r = request{
			Seq:   b[2],
			Cmd:   cmd,
			Addr:  binary.LittleEndian.Uint32(b[4:]),
			Count: count,
			CRC:   got,
			Data:  b[reqHeaderLen : n-crcLen],
		}
		p.start += n
		return true
	}
}

// pending reports whether bytes of a possible frame are waiting.
func (p *reqParser) pending() bool { return p.start < len(p.buf) }

// dropPartial gives up on the partial frame (the line went quiet for too
// long): its first sync byte is dropped and the search resumes after it.
func (p *reqParser) dropPartial() {
	if p.pending() {
		p.start++
	}
}

// reset forgets every byte received (power loss).
func (p *reqParser) reset() {
	p.buf = p.buf[:0]
	p.start = 0
}

// syncIndex returns the index of the first request sync pair in b, or -1.
func syncIndex(b []byte) int {
	for i := 0; i+1 < len(b); i++ {
		if b[i] == reqSync0 && b[i+1] == reqSync1 {
			return i
		}
	}
	return -1
}

// appendResponse encodes a response frame (docs/uart-bridge.md, "Response").
// words are sent only with STATUS OK.
func appendResponse(dst []byte, seq, cmd, status uint8, words []uint32) []byte {
	if status != statusOK {
		words = nil
	}
	s := len(dst)
	dst = append(dst, respSync0, respSync1, seq, cmd|respFlag, status)
	dst = binary.LittleEndian.AppendUint16(dst, uint16(len(words)))
	for _, w := range words {
		dst = binary.LittleEndian.AppendUint32(dst, w)
	}
	return binary.LittleEndian.AppendUint16(dst, crc16(dst[s+2:]))
}
