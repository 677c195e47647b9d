package emu

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// PMOS frames (docs/pmos.md, "Frames"): the robust packet layer the
// embedded processors run over MOS words (Aquila §3.5). A frame is a 4-byte
// header, a payload and a CRC-16; it travels as consecutive PMOS words of
// one port, SOF on the first and EOF on the last.

const (
	pmosVersion = 1
	pmosData    = 1 // a payload, reliable and in order
	pmosAck     = 2 // cumulative acknowledgement
	pmosRst     = 3 // "I hold no receive session for your session S"

	pmosHeaderLen = 4
	pmosCRCLen    = 2
	// pmosMaxPayload: the firmware's frame buffers (§3.5: the ECP has only
	// 2 MB of SRAM; §4.2: the largest RPC must fit in memory). Emulator's
	// choice: 240 bytes, 41 MOS words a frame.
	pmosMaxPayload = 240
	pmosMaxFrame   = pmosHeaderLen + pmosMaxPayload + pmosCRCLen
	// pmosWindow: frames a sender may have unacknowledged ("a small
	// window").
	pmosWindow = 4
	// pmosRTOPS: a sender that has seen no acknowledgement progress for
	// this long after the last word of its oldest frame went out sends
	// every unacknowledged frame again (go-back-N).
	pmosRTOPS = 250_000_000 // 250 us
	// pmosRetries: timeouts in a row before the sender gives up on the
	// frames it holds.
	pmosRetries = 12
)

// pmosFrame is a decoded frame. Payload aliases the decoded bytes.
type pmosFrame struct {
	Type    uint8
	Session uint8
	Seq     uint8 // DATA: the frame's sequence number; ACK: the next one expected
	Payload []byte
}

var errPMOSShort = errors.New("frame shorter than header and CRC")

// crc16 (bridge_wire.go) is CRC-16/CCITT-FALSE, the CRC docs/pmos.md names.

// appendPMOS encodes a frame onto dst.
func appendPMOS(dst []byte, f pmosFrame) []byte {
	start := len(dst)
	dst = append(dst, pmosVersion<<4|f.Type&0x0F, f.Session, f.Seq, byte(len(f.Payload)))
	dst = append(dst, f.Payload...)
	return binary.BigEndian.AppendUint16(dst, crc16(dst[start:]))
}

// decodePMOS checks and decodes one frame's bytes.
func decodePMOS(p []byte) (pmosFrame, error) {
	var f pmosFrame
	if len(p) < pmosHeaderLen+pmosCRCLen {
		return f, fmt.Errorf("%w: %d bytes", errPMOSShort, len(p))
	}
	body := p[:len(p)-pmosCRCLen]
	if got, want := binary.BigEndian.Uint16(p[len(body):]), crc16(body); got != want {
		return f, fmt.Errorf("CRC 0x%04x, computed 0x%04x", got, want)
	}
	if v := p[0] >> 4; v != pmosVersion {
		return f, fmt.Errorf("version %d (this firmware speaks %d)", v, pmosVersion)
	}
	f.Type, f.Session, f.Seq = p[0]&0x0F, p[1], p[2]
	n := int(p[3])
	switch f.Type {
	case pmosData:
		if n < 1 || n > pmosMaxPayload {
			return f, fmt.Errorf("DATA length %d outside 1..%d", n, pmosMaxPayload)
		}
	case pmosAck, pmosRst:
		if n != 0 {
			return f, fmt.Errorf("type %d carries no payload, LEN is %d", f.Type, n)
		}
	default:
		return f, fmt.Errorf("unknown frame type %d", f.Type)
	}
	if len(body) != pmosHeaderLen+n {
		return f, fmt.Errorf("LEN %d but %d payload bytes", n, len(body)-pmosHeaderLen)
	}
	f.Payload = body[pmosHeaderLen:]
	return f, nil
}

// pmosReassembler turns the PMOS words of one port back into frames
// (docs/pmos.md, "Receiving words").
type pmosReassembler struct {
	buf     []byte
	inFrame bool
	// dropped counts partial frames abandoned (a new SOF, a malformed or
	// surplus word, an oversize frame) and stray words outside any frame.
	dropped uint32
}

// push takes one decoded PMOS word (CH=0). It returns a frame's bytes when
// the word completes one: either a one-word frame (SOF and EOF), which never
// disturbs a frame being reassembled, or the last word of a longer frame.
// The bytes are valid until the next push.
func (r *pmosReassembler) push(f mosFields) ([]byte, bool) {
	data := f.Data[:f.N]
	switch {
	case f.SOF && f.EOF:
		// A one-word frame (ACK, RST) may come between any two words of a
		// longer frame: it is handled on its own.
		return data, true
	case f.SOF:
		if r.inFrame {
			r.dropped++
		}
		r.buf = append(r.buf[:0], data...)
		r.inFrame = true
		return nil, false
	case !r.inFrame:
		r.dropped++
		return nil, false
	}
	r.buf = append(r.buf, data...)
	if len(r.buf) > pmosMaxFrame {
		r.inFrame = false
		r.dropped++
		return nil, false
	}
	if f.EOF {
		r.inFrame = false
		return r.buf, true
	}
	return nil, false
}

// reset forgets a partial frame (firmware restart, mode change).
func (r *pmosReassembler) reset() { r.buf, r.inFrame = r.buf[:0], false }
