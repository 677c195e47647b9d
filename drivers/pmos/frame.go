package pmos

import (
	"errors"
	"fmt"
)

// FrameType is the low nibble of a PMOS frame's VT byte (pmos.md §2).
type FrameType uint8

const (
	FrameData FrameType = 1
	FrameAck  FrameType = 2
	FrameRst  FrameType = 3
)

func (t FrameType) String() string {
	switch t {
	case FrameData:
		return "DATA"
	case FrameAck:
		return "ACK"
	case FrameRst:
		return "RST"
	}
	return fmt.Sprintf("type%d", uint8(t))
}

// PMOS figures (pmos.md §3.4; all choices of the document except the 6 bytes
// of a MOS word, Aquila §3.5).
const (
	Version       = 1
	MaxPayload    = 240 // bytes of payload a DATA frame carries at most
	FrameOverhead = 6   // VT, SESSION, SEQ, LEN, CRC(2)
	MaxFrame      = MaxPayload + FrameOverhead
	Window        = 4 // frames a sender may have unacknowledged
	RTOPS         = 250 * 1_000_000
	Retries       = 12 // timeouts without progress before a sender gives up
)

// Frame is one PMOS frame. For ACK, Seq is NEXT (the sequence number the
// receiver expects next); for RST it is 0.
type Frame struct {
	Type    FrameType
	Session uint8
	Seq     uint8
	Payload []byte // DATA only
}

// Errors a receiver refuses a frame with (counted in PMOS_RX_BAD).
var (
	ErrFrameShort   = errors.New("frame shorter than 6 bytes")
	ErrFrameCRC     = errors.New("frame CRC mismatch")
	ErrFrameVersion = errors.New("frame version is not 1")
	ErrFrameType    = errors.New("unknown frame type")
	ErrFrameLen     = errors.New("frame LEN does not fit the frame")
	ErrPayloadSize  = errors.New("a DATA frame carries 1 to 240 payload bytes")
)

// CRC16 is CRC-16/CCITT-FALSE (pmos.md §2.1): polynomial 0x1021, initial
// value 0xFFFF, no reflection, no final XOR; CRC16("123456789") = 0x29B1.
func CRC16(p []byte) uint16 {
	crc := uint16(0xFFFF)
	for _, b := range p {
		crc ^= uint16(b) << 8
		for i := 0; i < 8; i++ {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// Marshal renders the frame: VT, SESSION, SEQ, LEN, payload, CRC.
func (f Frame) Marshal() ([]byte, error) {
	switch f.Type {
	case FrameData:
		if len(f.Payload) < 1 || len(f.Payload) > MaxPayload {
			return nil, fmt.Errorf("%w: %d given", ErrPayloadSize, len(f.Payload))
		}
	case FrameAck, FrameRst:
		if len(f.Payload) != 0 {
			return nil, fmt.Errorf("an %s frame carries no payload (%d bytes given)", f.Type, len(f.Payload))
		}
	default:
		return nil, fmt.Errorf("%w: %d", ErrFrameType, f.Type)
	}
	b := make([]byte, 0, len(f.Payload)+FrameOverhead)
	b = append(b, Version<<4|byte(f.Type), f.Session, f.Seq, byte(len(f.Payload)))
	b = append(b, f.Payload...)
	c := CRC16(b)
	return append(b, byte(c>>8), byte(c)), nil
}

// ParseFrame checks and takes apart a received frame (pmos.md §2.1): at least
// 6 bytes, the CRC, version 1, a known type, a DATA LEN of 1..240, ACK and RST
// with LEN 0, and a LEN that matches the bytes received.
func ParseFrame(b []byte) (Frame, error) {
	if len(b) < FrameOverhead {
		return Frame{}, fmt.Errorf("%w: %d bytes", ErrFrameShort, len(b))
	}
	body := b[:len(b)-2]
	if got, want := uint16(b[len(b)-2])<<8|uint16(b[len(b)-1]), CRC16(body); got != want {
		return Frame{}, fmt.Errorf("%w: carries 0x%04x, computed 0x%04x", ErrFrameCRC, got, want)
	}
	if b[0]>>4 != Version {
		return Frame{}, fmt.Errorf("%w: %d", ErrFrameVersion, b[0]>>4)
	}
	f := Frame{Type: FrameType(b[0] & 0xF), Session: b[1], Seq: b[2]}
	n := int(b[3])
	switch f.Type {
	case FrameData:
		if n < 1 || n > MaxPayload {
			return Frame{}, fmt.Errorf("%w: DATA LEN %d", ErrFrameLen, n)
		}
	case FrameAck, FrameRst:
		if n != 0 {
			return Frame{}, fmt.Errorf("%w: %s LEN %d", ErrFrameLen, f.Type, n)
		}
	default:
		return Frame{}, fmt.Errorf("%w: %d", ErrFrameType, f.Type)
	}
	if n+FrameOverhead != len(b) {
		return Frame{}, fmt.Errorf("%w: LEN %d in a frame of %d bytes", ErrFrameLen, n, len(b))
	}
	if n > 0 {
		f.Payload = append([]byte(nil), b[4:4+n]...)
	}
	return f, nil
}

// SplitWords cuts a marshalled frame into its PMOS words (pmos.md §2.2): 6
// bytes a word, SOF on the first, EOF on the last.
func SplitWords(frame []byte) ([]Word, error) {
	if len(frame) < FrameOverhead || len(frame) > MaxFrame {
		return nil, fmt.Errorf("a frame is %d to %d bytes, %d given", FrameOverhead, MaxFrame, len(frame))
	}
	n := (len(frame) + WordData - 1) / WordData
	out := make([]Word, 0, n)
	for k := 0; k < n; k++ {
		end := min((k+1)*WordData, len(frame))
		w, err := EncodeWord(ChPMOS, k == 0, k == n-1, frame[k*WordData:end])
		if err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, nil
}

// FrameWords is the number of MOS words of a DATA frame with payload bytes.
func FrameWords(payload int) int { return (payload + FrameOverhead + WordData - 1) / WordData }

// Reassembler rebuilds frames from the PMOS words of one port (pmos.md §2.3).
type Reassembler struct {
	buf     []byte
	inFrame bool
	// Drops counts partial frames and stray words dropped (PMOS_REASM_DROPS).
	Drops int
}

// Push takes one accepted PMOS word (Ch = ChPMOS) and returns a complete
// frame's bytes when the word ends one. The bytes are the reassembler's
// own copy for a one-word frame and a fresh slice otherwise.
func (r *Reassembler) Push(d Decoded) ([]byte, bool) {
	switch {
	case d.SOF && d.EOF:
		// A one-word frame may sit between the words of a longer one: leave
		// the buffer alone.
		return append([]byte(nil), d.Data...), true
	case d.SOF:
		if r.inFrame {
			r.Drops++
		}
		r.buf = append(r.buf[:0], d.Data...)
		r.inFrame = true
		return nil, false
	case !r.inFrame:
		r.Drops++
		return nil, false
	}
	r.buf = append(r.buf, d.Data...)
	if len(r.buf) > MaxFrame {
		r.Drops++
		r.inFrame = false
		r.buf = r.buf[:0]
		return nil, false
	}
	if d.EOF {
		r.inFrame = false
		out := append([]byte(nil), r.buf...)
		r.buf = r.buf[:0]
		return out, true
	}
	return nil, false
}

// Reset forgets a frame in progress (a port's mode changed, the peer restarted).
func (r *Reassembler) Reset() { r.buf, r.inFrame = r.buf[:0], false }
