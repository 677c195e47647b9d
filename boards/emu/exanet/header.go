package exanet

import (
	"encoding/binary"
	"hash/crc32"
	"math/bits"
)

// header holds the fields of a packet header (ExaNet §3.2: a 128-bit header
// in front of the payload). The layout software sees at the intra-tile ports
// and the layout on the APElink wire are both built from it; docs/exanet.md
// describes both.
type header struct {
	dest   uint32 // X[7:0] Y[15:8] Z[23:16] PORT[25:24]
	src    uint32 // same layout, filled in by the router at injection
	length uint32 // payload bytes, 1..512 (10 bits)
	typ    uint32 // 4 bits
	trace  bool
	vc     uint32 // virtual channel of the current hop (wire only)
	tag    uint32
	crcErr bool // receive side only: payload CRC32 mismatch somewhere on the path
	eccFix bool // receive side only: a header ECC correction somewhere on the path
}

const (
	addrMask = 0x03ffffff // 26 bits: X, Y, Z and PORT

	// Packet types the ping-pong engine uses (TYPE is free for anything
	// else: the traffic generator sends TG_TYPE).
	typePing = 0xE
	typePong = 0xF
)

// swWords lays the header out as software reads it from PORT_RX_HDR:
// w0 DEST, w1 SRC, w2 LENGTH[9:0] TYPE[15:12] TRACE[16] CRC_ERR[24]
// ECC_CORRECTED[25], w3 TAG.
func (h *header) swWords() [4]uint32 {
	w2 := h.length&0x3ff | (h.typ&0xf)<<12
	if h.trace {
		w2 |= 1 << 16
	}
	if h.crcErr {
		w2 |= 1 << 24
	}
	if h.eccFix {
		w2 |= 1 << 25
	}
	return [4]uint32{h.dest & addrMask, h.src & addrMask, w2, h.tag}
}

// parseSW reads the header words software wrote into PORT_TX_HDR. SRC and
// the receive-only flags are ignored: the router fills SRC in at injection.
func parseSW(w [4]uint32) header {
	return header{
		dest:   w[0] & addrMask,
		length: w[2] & 0x3ff,
		typ:    w[2] >> 12 & 0xf,
		trace:  w[2]>>16&1 != 0,
		tag:    w[3],
	}
}

// The wire header (§3.4: "the highly critical header integrity is protected
// by an Error Correction Code") carries 100 data bits and an 8-bit SECDED
// code: a Hamming code over positions 1..107 (7 check bits at the powers of
// two) plus an overall parity bit, so single-bit errors are corrected and
// double-bit errors detected.
//
//	w0: DEST[25:0]  VC[26]
//	w1: SRC[25:0]
//	w2: LENGTH[9:0] TYPE[15:12] TRACE[16] CHECK[30:24] PARITY[31]
//	w3: TAG
//
// Bits not listed are sent as zero and ignored on receive.
const (
	dataBits   = 100
	checkBits  = 7
	codeLength = dataBits + checkBits // Hamming positions 1..107
)

// dataPos[i] is the Hamming position of data bit i; posData is the inverse
// (-1 for check positions and positions beyond the code).
var (
	dataPos [dataBits]uint8
	posData [128]int8
)

func init() {
	for i := range posData {
		posData[i] = -1
	}
	i := 0
	for p := 1; p <= codeLength; p++ {
		if p&(p-1) == 0 {
			continue // power of two: a check bit
		}
		dataPos[i] = uint8(p)
		posData[p] = int8(i)
		i++
	}
	if i != dataBits {
		panic("exanet: SECDED layout does not cover the header's data bits")
	}
}

// packData gathers the 100 protected bits: DEST 0-25, VC 26, SRC 27-52,
// LENGTH 53-62, TYPE 63-66, TRACE 67, TAG 68-99.
func packData(h *header) (lo, hi uint64) {
	lo = uint64(h.dest & addrMask)
	lo |= uint64(h.vc&1) << 26
	lo |= uint64(h.src&addrMask) << 27
	lo |= uint64(h.length&0x3ff) << 53
	lo |= uint64(h.typ&1) << 63
	hi = uint64(h.typ>>1) & 0x7
	if h.trace {
		hi |= 1 << 3
	}
	hi |= uint64(h.tag) << 4
	return lo, hi
}

func unpackData(lo, hi uint64) header {
	return header{
		dest:   uint32(lo) & addrMask,
		vc:     uint32(lo>>26) & 1,
		src:    uint32(lo>>27) & addrMask,
		length: uint32(lo>>53) & 0x3ff,
		typ:    uint32(lo>>63) | uint32(hi&0x7)<<1,
		trace:  hi>>3&1 != 0,
		tag:    uint32(hi >> 4),
	}
}

// syndromeOf XORs the Hamming positions of the set data bits.
func syndromeOf(lo, hi uint64) uint8 {
	var s uint8
	for w := lo; w != 0; w &= w - 1 {
		s ^= dataPos[bits.TrailingZeros64(w)]
	}
	for w := hi & (1<<(dataBits-64) - 1); w != 0; w &= w - 1 {
		s ^= dataPos[64+bits.TrailingZeros64(w)]
	}
	return s
}

// wireWords encodes the header for the APElink wire, ECC included.
func (h *header) wireWords() [4]uint32 {
	lo, hi := packData(h)
	check := syndromeOf(lo, hi) // check bits make the full syndrome zero
	parity := (bits.OnesCount64(lo) + bits.OnesCount64(hi&(1<<(dataBits-64)-1)) + bits.OnesCount8(check)) & 1
	w2 := h.length&0x3ff | (h.typ&0xf)<<12 | uint32(check)<<24 | uint32(parity)<<31
	if h.trace {
		w2 |= 1 << 16
	}
	return [4]uint32{h.dest&addrMask | (h.vc&1)<<26, h.src & addrMask, w2, h.tag}
}

// eccResult says what the receiver's ECC decoder did with a header.
type eccResult int

const (
	eccClean eccResult = iota
	eccCorrected
	eccUncorrectable
)

// decodeWire checks and, for a single-bit error, corrects a wire header.
// A double-bit error (or any pattern pointing outside the code) is
// reported uncorrectable: the receiver must drop the packet, since a
// misrouted packet is worse than a lost one (§3.4).
func decodeWire(w [4]uint32) (header, eccResult) {
	lo := uint64(w[0]&addrMask) | uint64(w[0]>>26&1)<<26 | uint64(w[1]&addrMask)<<27 |
		uint64(w[2]&0x3ff)<<53 | uint64(w[2]>>12&1)<<63
	hi := uint64(w[2]>>13&0x7) | uint64(w[2]>>16&1)<<3 | uint64(w[3])<<4
	check := uint8(w[2]>>24) & 0x7f
	parityBit := int(w[2] >> 31)
	s := syndromeOf(lo, hi) ^ check
	parity := (bits.OnesCount64(lo) + bits.OnesCount64(hi) + bits.OnesCount8(check) + parityBit) & 1
	res := eccClean
	switch {
	case s == 0 && parity == 0:
	case parity == 1 && s == 0:
		res = eccCorrected // the overall parity bit itself flipped
	case parity == 1 && s&(s-1) == 0:
		res = eccCorrected // a check bit flipped
	case parity == 1 && int(s) <= codeLength && posData[s] >= 0:
		d := int(posData[s])
		if d < 64 {
			lo ^= 1 << d
		} else {
			hi ^= 1 << (d - 64)
		}
		res = eccCorrected
	default:
		return header{}, eccUncorrectable
	}
	return unpackData(lo, hi), res
}

// payloadWords is the number of 32-bit payload words of a packet of n bytes.
func payloadWords(n uint32) int { return int(n+3) / 4 }

// datapathWords is the number of 128-bit payload words of a packet of n
// bytes (§4: a 128-bit datapath).
func datapathWords(n uint32) int { return int(n+15) / 16 }

// payloadCRC is the footer's CRC32 (§3.4: "payload integrity is guaranteed
// by a CRC32 code") over the payload bytes, little-endian within a word.
func payloadCRC(p []uint32, n uint32) uint32 {
	var buf [maxPayload + 4]byte
	for i := 0; i < len(p) && 4*i < int(n); i++ {
		binary.LittleEndian.PutUint32(buf[4*i:], p[i])
	}
	return crc32.ChecksumIEEE(buf[:n])
}
