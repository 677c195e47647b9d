package shoal

import (
	"errors"
	"fmt"
)

// The 8-byte cell header (Shoal §3.5, Fig. 5: destination id, rate-limit
// feedback, start-of-packet, end-of-packet, last-cell-dropped and a CRC,
// with 10-bit node ids for racks of up to 1024 nodes). Fig. 5 fixes the
// field sizes of the destination (10 bits), the three flags (1 bit each) and
// the CRC (8 bits); the rest of the layout is this design's, documented in
// docs/shoal.md. Bit 63 is sent first.
//
//	[63:62] KIND      0 data, 1 empty, 2 failure notice, 3 reserved
//	[61:52] DST       final destination node
//	[51:42] SRC       original source node (reassembly, §3.5)
//	[41:32] HOP       node that sent the cell on this fabric hop
//	[31:21] SEQ       sequence number within the SRC->DST stream, mod 2048
//	[20:11] FEEDBACK  rate-limit feedback, Eq. 1/6 (saturates at 1023)
//	[10]    SOP       first cell of a flow (start-of-packet)
//	[9]     EOP       last cell of a flow (end-of-packet)
//	[8]     LCD       last-cell-dropped (App. C, D)
//	[7:0]   CRC       CRC-8 (x^8+x^2+x+1, init 0) over bytes 7..1
//
// A failure notice carries, in DST, the node its sender can no longer reach
// (§3.5 ii).

// Cell kinds.
const (
	KindData   = 0
	KindEmpty  = 1
	KindNotice = 2
)

// Header field limits.
const (
	maxNodeID   = 1<<10 - 1
	seqBits     = 11
	seqMod      = 1 << seqBits
	maxFeedback = 1<<10 - 1
)

// Header is a decoded cell header.
type Header struct {
	Kind     uint8
	Dst      uint16
	Src      uint16
	Hop      uint16
	Seq      uint16 // mod 2048
	Feedback uint16 // 0..1023
	SOP      bool
	EOP      bool
	LCD      bool
}

// ErrHeaderCRC: the header's CRC-8 does not match its contents.
var ErrHeaderCRC = errors.New("cell header CRC-8 mismatch")

// Encode packs h into its 64-bit wire form with the CRC filled in. Fields
// wider than their slots are truncated to their low bits.
func (h Header) Encode() uint64 {
	w := h.fields()
	return w | uint64(crc8(w))
}

// fields packs h without the CRC (its low byte left 0).
func (h Header) fields() uint64 {
	w := uint64(h.Kind&3)<<62 |
		uint64(h.Dst&maxNodeID)<<52 |
		uint64(h.Src&maxNodeID)<<42 |
		uint64(h.Hop&maxNodeID)<<32 |
		uint64(h.Seq&(seqMod-1))<<21 |
		uint64(h.Feedback&maxFeedback)<<11
	if h.SOP {
		w |= 1 << 10
	}
	if h.EOP {
		w |= 1 << 9
	}
	if h.LCD {
		w |= 1 << 8
	}
	return w
}

// DecodeHeader unpacks a wire header. It returns the fields even when the
// CRC fails (with ErrHeaderCRC): App. D reads the congestion-control fields
// of a corrupted cell before discarding it.
func DecodeHeader(w uint64) (Header, error) {
	h, ok := decodeHeader(w)
	if got, want := uint8(w), crc8(w); got != want {
		return h, fmt.Errorf("%w: header 0x%016x carries 0x%02x, its contents give 0x%02x", ErrHeaderCRC, w, got, want)
	}
	if !ok {
		return h, fmt.Errorf("cell header 0x%016x: kind 3 is reserved", w)
	}
	return h, nil
}

// decodeHeader is DecodeHeader for the receive path, which needs only
// whether the header is good: under a bit-error fault most cells of a link
// arrive damaged, and formatting an error for each took an eighth of a
// faulted run's CPU.
func decodeHeader(w uint64) (Header, bool) {
	h := headerFields(w)
	return h, uint8(w) == crc8(w) && h.Kind != 3
}

// headerFields unpacks a wire header's fields, leaving out its CRC.
func headerFields(w uint64) Header {
	return Header{
		Kind:     uint8(w >> 62),
		Dst:      uint16(w>>52) & maxNodeID,
		Src:      uint16(w>>42) & maxNodeID,
		Hop:      uint16(w>>32) & maxNodeID,
		Seq:      uint16(w>>21) & (seqMod - 1),
		Feedback: uint16(w>>11) & maxFeedback,
		SOP:      w&(1<<10) != 0,
		EOP:      w&(1<<9) != 0,
		LCD:      w&(1<<8) != 0,
	}
}

// crc8 is the CRC-8 (polynomial 0x07, initial value 0, no reflection) of the
// header's seven upper bytes, most significant first.
func crc8(w uint64) uint8 {
	var c uint8
	for i := 7; i >= 1; i-- {
		c = crcTable[c^uint8(w>>(8*i))]
	}
	return c
}

var crcTable = func() (t [256]uint8) {
	for i := range t {
		c := uint8(i)
		for b := 0; b < 8; b++ {
			if c&0x80 != 0 {
				c = c<<1 ^ 0x07
			} else {
				c <<= 1
			}
		}
		t[i] = c
	}
	return t
}()
