// Package pmos is the runner's side of the in-band management channel every
// board with cabled ports has (Aquila, NSDI 2022, §3.5, §4.3, §4.4): MOS words
// (one 64-bit management ordered set carrying 6 data bytes between directly
// connected boards, §3.5), the PMOS packet layer above them (framing, CRC,
// sequence numbers, acknowledgements, retransmission, a small window), the
// management messages the boards' firmware carries in PMOS packets (the
// DHCP-like discover/assign exchange, remote register access, echo, errors),
// the client of a DCN board's mailbox through which the runner sends and
// receives those messages, and a drivers.RegisterBus that reaches a board's
// registers over the management network.
//
// It is written from docs/pmos.md (the wire format) and docs/mgmt.md (the
// programming model) alone; it never imports the emulator. Section numbers
// in comments ("pmos.md §2.3") refer to those pages; figures the papers do not
// give are the documents' choices.
package pmos

import (
	"errors"
	"fmt"
)

// MOS word layout (pmos.md §1.1): byte 0 TYPE, byte 1 CTL, bytes 2..7 data.
const (
	// TypeMOS is the ordered-set class of a MOS word.
	TypeMOS = 0x4D
	// WordData is the data bytes a MOS word carries (Aquila §3.5: "Each MOS
	// 64 bit word allows 6 bytes of data").
	WordData = 6
	// PeriodPS is the time between two MOS slots of a port, 1024 blocks of
	// 2.56 ns (pmos.md §1.2, a choice; MOS_PERIOD_PS reports it).
	PeriodPS = 2621440
)

// Channel is a MOS word's CH field.
type Channel uint8

const (
	// ChPMOS words carry the bytes of PMOS frames.
	ChPMOS Channel = 0
	// ChRaw words go to the receiving port's raw FIFO as they are.
	ChRaw Channel = 1
)

// Word is a MOS word as a 64-bit number: TYPE in bits 63:56, CTL in 55:48,
// D0 in 47:40 ... D5 in 7:0 (the form of the raw FIFOs, mgmt.md §5).
type Word uint64

// CTL bits (pmos.md §1.1).
const (
	ctlSOF      = 1 << 5
	ctlEOF      = 1 << 4
	ctlReserved = 1 << 3
	ctlN        = 0x7
)

// Decoded is a MOS word taken apart.
type Decoded struct {
	Ch       Channel
	SOF, EOF bool
	// Data holds the N valid bytes (1..6).
	Data []byte
}

// Errors a receiver refuses a word with (counted in MOS_RX_ERRORS).
var (
	ErrNotMOS       = errors.New("not a MOS word (type byte is not 0x4D)")
	ErrReservedBit  = errors.New("reserved CTL bit set")
	ErrByteCount    = errors.New("byte count N is 0 or 7")
	ErrChannel      = errors.New("reserved channel (CH 2 or 3)")
	ErrShortPMOS    = errors.New("PMOS word without EOF carries fewer than 6 bytes")
	ErrWordDataSize = errors.New("a MOS word carries 1 to 6 data bytes")
)

// EncodeWord builds a word of channel ch carrying data (1..6 bytes). The
// bytes past len(data) are sent as 0.
func EncodeWord(ch Channel, sof, eof bool, data []byte) (Word, error) {
	if len(data) < 1 || len(data) > WordData {
		return 0, fmt.Errorf("%w: %d given", ErrWordDataSize, len(data))
	}
	if ch > ChRaw {
		return 0, fmt.Errorf("%w: %d", ErrChannel, ch)
	}
	ctl := byte(ch)<<6 | byte(len(data))
	if sof {
		ctl |= ctlSOF
	}
	if eof {
		ctl |= ctlEOF
	}
	w := Word(TypeMOS)<<56 | Word(ctl)<<48
	for i, b := range data {
		w |= Word(b) << (40 - 8*uint(i))
	}
	return w, nil
}

// Bytes returns the word's 8 bytes, byte 0 first.
func (w Word) Bytes() [8]byte {
	var b [8]byte
	for i := range b {
		b[i] = byte(w >> (56 - 8*uint(i)))
	}
	return b
}

// Halves returns the word as the raw FIFOs move it: bytes 0-3 first (the high
// half), then bytes 4-7 (mgmt.md §5).
func (w Word) Halves() (hi, lo uint32) { return uint32(w >> 32), uint32(w) }

// WordFromHalves joins the two halves a raw receive FIFO gives.
func WordFromHalves(hi, lo uint32) Word { return Word(hi)<<32 | Word(lo) }

// DecodeWord takes a received word apart, refusing what a receiver must
// refuse (pmos.md §1.1): a type byte other than 0x4D, the reserved bit, N of
// 0 or 7, a reserved channel, a PMOS word without EOF carrying fewer than 6
// bytes.
func DecodeWord(w Word) (Decoded, error) {
	b := w.Bytes()
	if b[0] != TypeMOS {
		return Decoded{}, fmt.Errorf("%w: 0x%02x", ErrNotMOS, b[0])
	}
	ctl := b[1]
	if ctl&ctlReserved != 0 {
		return Decoded{}, ErrReservedBit
	}
	n := int(ctl & ctlN)
	if n == 0 || n == 7 {
		return Decoded{}, fmt.Errorf("%w: N=%d", ErrByteCount, n)
	}
	ch := Channel(ctl >> 6)
	if ch > ChRaw {
		return Decoded{}, fmt.Errorf("%w: %d", ErrChannel, ch)
	}
	d := Decoded{Ch: ch, SOF: ctl&ctlSOF != 0, EOF: ctl&ctlEOF != 0, Data: append([]byte(nil), b[2:2+n]...)}
	if ch == ChPMOS && !d.EOF && n < WordData {
		return Decoded{}, ErrShortPMOS
	}
	return d, nil
}
