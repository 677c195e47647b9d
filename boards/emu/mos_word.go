package emu

import "fmt"

// The management ordered set (MOS): the 64-bit word of the board's link
// layer that carries 6 bytes between directly connected boards whether or
// not the link layer is up (Aquila, NSDI 2022, §3.5). docs/pmos.md,
// "MOS words", is the format; this file is its device-side codec.
//
// Aquila §3.1 gives the frame it lives in: a custom 66/64 PCS whose control
// blocks carry compact ordered sets, MOS being one of their five classes,
// and Appendix B says an ordered set is 8 bytes. Neither section gives the
// rate at which MOS words may be sent ("a low bandwidth ... control path",
// §3.5): the rate below is this emulator's choice, documented as such.

// Ordered-set types: the first byte of the 64-bit payload of a control
// block, telling the receiving PCS which class of ordered set it is (§3.1).
const (
	osMOS     = 0x4D // 'M': a management ordered set
	osTS      = 0x54 // 'T': a TimeSync ordered set (Appendix B)
	osLatReq  = 0x4C // 'L': a latency-measurement probe (Appendix B)
	osLatEcho = 0x6C // 'l': its reflection
)

// Timing of the PCS (§3.1: 25G GNet links, a 160-byte cell in about 50 ns,
// so 64 payload bits every 2.56 ns).
const (
	blockPS = 2560 // one 66-bit block on the wire
	// mosEveryBlocks: a MOS word may take one block in this many. Not in
	// the paper (see above); 1024 blocks keeps MOS below 0.1% of the link,
	// "between cells", while a 240-byte PMOS packet still crosses in about
	// 110 us.
	mosEveryBlocks = 1024
	mosPeriodPS    = blockPS * mosEveryBlocks // 2.62144 us
	mosDataBytes   = 6
)

// MOS control byte (byte 1 of the word).
const (
	mosChPMOS  = 0    // CH=0: a word of a PMOS frame
	mosChRaw   = 1    // CH=1: an application word, delivered to the raw FIFO
	mosSOF     = 0x20 // first word of a PMOS frame
	mosEOF     = 0x10 // last word of a PMOS frame
	mosNMask   = 0x07 // number of valid data bytes, 1..6
	mosResMask = 0x08 // reserved, 0
)

// mosWord is one management ordered set as 64 bits, byte 0 (the ordered-set
// type) in bits 63:56 and data byte 5 in bits 7:0.
type mosWord uint64

// mosFields is a MOS word taken apart.
type mosFields struct {
	Ch       uint8 // 0..3
	SOF, EOF bool
	N        int // valid data bytes
	Data     [mosDataBytes]byte
}

// encodeMOS builds a MOS word. It never fails: N is clipped to 0..7 and Ch
// to 0..3, so that the raw interface can send malformed words on purpose.
func encodeMOS(f mosFields) mosWord {
	ctl := (f.Ch&3)<<6 | uint8(f.N)&mosNMask
	if f.SOF {
		ctl |= mosSOF
	}
	if f.EOF {
		ctl |= mosEOF
	}
	w := uint64(osMOS)<<56 | uint64(ctl)<<48
	for i, b := range f.Data {
		w |= uint64(b) << (40 - 8*uint(i))
	}
	return mosWord(w)
}

// decodeMOS takes a word apart and checks it is a well-formed MOS word: the
// type byte says MOS, the reserved bit is clear, N is 1..6 and a word that
// does not end a frame carries 6 bytes.
func decodeMOS(w mosWord) (mosFields, error) {
	var f mosFields
	if t := byte(w >> 56); t != osMOS {
		return f, fmt.Errorf("ordered-set type 0x%02x is not MOS (0x%02x)", t, osMOS)
	}
	ctl := byte(w >> 48)
	f.Ch = ctl >> 6
	f.SOF = ctl&mosSOF != 0
	f.EOF = ctl&mosEOF != 0
	f.N = int(ctl & mosNMask)
	for i := range f.Data {
		f.Data[i] = byte(w >> (40 - 8*uint(i)))
	}
	switch {
	case ctl&mosResMask != 0:
		return f, fmt.Errorf("MOS control byte 0x%02x has the reserved bit set", ctl)
	case f.N < 1 || f.N > mosDataBytes:
		return f, fmt.Errorf("MOS control byte 0x%02x gives %d data bytes (1..6)", ctl, f.N)
	case f.Ch == mosChPMOS && !f.EOF && f.N != mosDataBytes:
		return f, fmt.Errorf("MOS control byte 0x%02x: a PMOS word that does not end its frame must carry 6 bytes, not %d", ctl, f.N)
	}
	return f, nil
}

// frameToWords cuts a PMOS frame (docs/pmos.md, "Frames") into MOS words:
// 6 bytes a word, SOF on the first, EOF and the byte count on the last.
func frameToWords(dst []mosWord, frame []byte) []mosWord {
	for off := 0; off < len(frame); off += mosDataBytes {
		var f mosFields
		f.Ch = mosChPMOS
		f.SOF = off == 0
		end := min(off+mosDataBytes, len(frame))
		f.EOF = end == len(frame)
		f.N = end - off
		copy(f.Data[:], frame[off:end])
		dst = append(dst, encodeMOS(f))
	}
	return dst
}
