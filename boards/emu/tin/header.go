package tin

import (
	"encoding/binary"
	"fmt"
)

// Addr is a 16-bit GNet address: pod, TiN and endpoint (§3.2: "GNet
// addresses have three components: pod id, TiN id and endpoint id"; §3.1:
// 16-bit source and destination addresses). Bits 15:10 pod, 9:5 TiN, 4:0
// endpoint.
type Addr uint16

// MakeAddr builds an address; out-of-range components are truncated to
// their fields.
func MakeAddr(pod, tin, ep int) Addr {
	return Addr((pod&0x3F)<<10 | (tin&0x1F)<<5 | ep&0x1F)
}

// Pod, TiN and EP are the address's components.
func (a Addr) Pod() int { return int(a >> 10 & 0x3F) }
func (a Addr) TiN() int { return int(a >> 5 & 0x1F) }
func (a Addr) EP() int  { return int(a & 0x1F) }

// Chip is the address with the endpoint cleared: the TiN chip itself.
func (a Addr) Chip() Addr { return a &^ 0x1F }

func (a Addr) String() string { return fmt.Sprintf("p%dt%de%d", a.Pod(), a.TiN(), a.EP()) }

// Cell types (the 4-bit TYPE field). GNet carries IP over GNet (RTS, CTS,
// CTD, data; §3.3) and 1RMA as first-class cell types (Req, Resp; §3.4);
// the ordering engine of the SC'18 paper rides on two more (its REQ and its
// ACK/NACK/FIN/FIN-ACK packets, §III-D, Table I).
const (
	TypeRTS  = 1 // request to send, 16 B (§3.3)
	TypeCTS  = 2 // clear to send, 16 B (§3.3)
	TypeCTD  = 3 // clear to drop, 16 B (§3.3)
	TypeData = 4 // IP data cell (§3.3, Fig. 3)
	TypeReq  = 5 // 1RMA read request, 48 B (§3.4)
	TypeResp = 6 // 1RMA read response (§3.4)
	TypeOReq = 7 // ordering-protocol REQ (ordered or synchronized transfer)
	TypeOCtl = 8 // ordering-protocol ACK, NACK, FIN, FIN-ACK
	numTypes = 9
)

var typeNames = [numTypes]string{"?", "RTS", "CTS", "CTD", "DATA", "REQ", "RESP", "OREQ", "OCTL"}

// TypeName names a cell type.
func TypeName(t int) string {
	if t > 0 && t < numTypes {
		return typeNames[t]
	}
	return fmt.Sprintf("type%d", t)
}

// Header is the 8-byte routing header every GNet cell starts with (§3.1):
// source and destination addresses, the cell length and type, the VC, a
// decrementing hop count, an 8-bit header CRC and the trace-enable bit.
//
// Wire layout (big-endian 64-bit word, docs/tin.md):
//
//	63:48 DST   47:32 SRC   31:24 LEN (bytes, 16..160)   23:20 TYPE
//	19:15 VC    14:10 HOP   9 TRACE   8 reserved (0)     7:0 CRC-8
//
// In a DATA cell, SRC is the reassembly pointer (DataRPTR), not an address.
type Header struct {
	Dst   Addr
	Src   Addr // DATA cells: the RPTR, egress slot<<5 | cell index
	Len   int  // whole cell, header included, in bytes
	Type  int
	VC    int
	Hop   int
	Trace bool
}

// Cell size limits (§3.1: "GNet links support cells between 16 bytes and
// 160 bytes"; every cell has "a common routing header of 8 bytes").
const (
	MinCell    = 16
	MaxCell    = 160
	HeaderSize = 8
)

// Word packs the header into its 64-bit wire word with the CRC filled in.
func (h Header) Word() uint64 {
	w := uint64(h.Dst)<<48 | uint64(h.Src)<<32 | uint64(h.Len&0xFF)<<24 | uint64(h.Type&0xF)<<20 |
		uint64(h.VC&0x1F)<<15 | uint64(h.Hop&0x1F)<<10
	if h.Trace {
		w |= 1 << 9
	}
	return w | uint64(crc8Word(w))
}

// Bytes is the header as it goes on the wire.
func (h Header) Bytes() [8]byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], h.Word())
	return b
}

// Header decoding errors.
var (
	errHdrCRC = fmt.Errorf("header CRC-8 mismatch")
)

// DecodeHeader parses an 8-byte header as a switch's input stage does: it
// checks the CRC-8, the reserved bit, the length range and the type, and
// says which check failed.
func DecodeHeader(b []byte) (Header, error) {
	if len(b) < HeaderSize {
		return Header{}, fmt.Errorf("header: %d bytes, want %d", len(b), HeaderSize)
	}
	w := binary.BigEndian.Uint64(b)
	if crc8Word(w) != uint8(w) {
		return Header{}, fmt.Errorf("%w: computed 0x%02x, cell carries 0x%02x", errHdrCRC, crc8Word(w), uint8(w))
	}
	h := Header{
		Dst:   Addr(w >> 48),
		Src:   Addr(w >> 32),
		Len:   int(w >> 24 & 0xFF),
		Type:  int(w >> 20 & 0xF),
		VC:    int(w >> 15 & 0x1F),
		Hop:   int(w >> 10 & 0x1F),
		Trace: w>>9&1 != 0,
	}
	switch {
	case w>>8&1 != 0:
		return h, fmt.Errorf("header: reserved bit 8 is set")
	case h.Len < MinCell || h.Len > MaxCell:
		return h, fmt.Errorf("header: cell length %d outside %d..%d bytes", h.Len, MinCell, MaxCell)
	case h.Type == 0 || h.Type >= numTypes:
		return h, fmt.Errorf("header: unknown cell type %d", h.Type)
	}
	return h, nil
}

// crc8Word is the CRC-8 (polynomial x^8+x^2+x+1, 0x07, initial value 0, no
// reflection: CRC-8/SMBUS) of the header's first seven bytes, bits 63:8.
func crc8Word(w uint64) uint8 {
	var c uint8
	for i := 7; i >= 1; i-- {
		c = crcTable[c^uint8(w>>(8*uint(i)))]
	}
	return c
}

var crcTable = func() (t [256]uint8) {
	for i := range t {
		c := uint8(i)
		for range 8 {
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

// Sizes of the cells the endpoints build (docs/tin.md, "Cell formats").
const (
	// RTS, CTS and CTD are 16 B: the header and 8 B of payload (§3.3).
	CtlCell = 16
	// ReqCell: a 1RMA read request fully encodes a read (host address,
	// memory identifiers, HMAC), "a cell 3x larger than CTS at 48B" (§3.4).
	ReqCell = 48
	// DataPerCell: packet bytes in a full 160 B data cell. A data cell is
	// the 8 B routing header and packet bytes, nothing else (§6: "an 8 byte
	// GNet header for each 160 byte GNet cell", ~5% overhead). Its header's
	// SRC field carries the reassembly pointer instead of the source
	// address (RPTR, below).
	DataPerCell = MaxCell - HeaderSize - DataTag // 152
	// DataTag: bytes between a data cell's header and its packet bytes
	// (CELL_FORMAT.DATA_TAG): none (reading A1, Aquila §6).
	DataTag = 0
	// RespTag: a Resp cell carries 4 bytes after its header, the request
	// tag and the segment index: the initiator "lands the individual
	// response segments in arrival order" (§3.4), so each says which read
	// and which completion it is.
	RespTag = 4
	// RespData: packet bytes of one Resp cell: "sized to handle the most
	// common PCIe completion sizes" (§3.4); this design uses 128 B
	// completions.
	RespData = 128
	RespCell = HeaderSize + RespTag + RespData // 140
	// OReqHdr is the ordering header of an OREQ cell (CID, SEQ, CNT,
	// flags, stream tag; send time and operation), after the routing header.
	OReqHdr = 16
	// MaxOReqData: write data an OREQ carries.
	MaxOReqData = MaxCell - HeaderSize - OReqHdr // 136
	// OCtlCell: ACK, NACK, FIN and FIN-ACK are 16 B, GNet's smallest cell
	// (reading O4, SC'18 §III-C).
	OCtlCell = 16
)

// The reassembly pointer of a data cell (reading A2, Aquila §3.3 and §6). The
// CTS carries "a pointer to the allocated location in the egress
// cell-to-packet reassemble buffer" (§3.3); the source writes it, with the
// cell's position in the packet, into the SRC field (bits 47:32) of every
// data cell's header, where a solicited cell has no use for its source
// address: the egress's reassembly context, created by its CTS, knows the
// source. RPTR = egress reassembly slot (bits 15:5) | cell index (4:0).
// The egress lands a data cell by its RPTR alone.
const (
	// EgressSlots: reassembly slots an 11-bit RPTR slot can name.
	EgressSlots = 1 << 11
	// MaxPacketCells: cells a packet can have, the 5-bit cell index.
	MaxPacketCells = 1 << 5
	// MaxPacket: the longest IP packet the fabric carries, 32 x 152 =
	// 4864 bytes; the ingress refuses a longer one (IP_PKTS_TOO_LONG).
	MaxPacket = MaxPacketCells * DataPerCell
)

// DataRPTR is the RPTR of cell index of the packet reassembled in egress
// slot slot, as it goes in a data cell's header SRC field; out-of-range
// values are truncated to their fields.
func DataRPTR(slot, index int) Addr {
	return Addr((slot&(EgressSlots-1))<<5 | index&(MaxPacketCells-1))
}

// SplitRPTR returns the egress slot and the cell index of a data cell's
// RPTR (its header's SRC field).
func SplitRPTR(r Addr) (slot, index int) {
	return int(r >> 5), int(r & (MaxPacketCells - 1))
}

// Cellify returns the cell lengths (header included) an IP packet of n
// bytes becomes (§3.3, Fig. 3; §6): full 160 B cells carrying 152 B of the
// packet each, then one cell of the 8 B header and the rest, at least the
// 16 B minimum of §3.1. n <= 0 gives no cells.
func Cellify(n int) []int {
	if n <= 0 {
		return nil
	}
	out := make([]int, 0, (n+DataPerCell-1)/DataPerCell)
	for n > DataPerCell {
		out = append(out, MaxCell)
		n -= DataPerCell
	}
	return append(out, max(HeaderSize+n, MinCell))
}

// RespCells returns the Resp cell lengths of an RMA read of n bytes: one
// 128 B completion per cell, the last one shorter (§3.4).
func RespCells(n int) []int {
	if n <= 0 {
		return nil
	}
	out := make([]int, 0, (n+RespData-1)/RespData)
	for n > RespData {
		out = append(out, RespCell)
		n -= RespData
	}
	return append(out, max(HeaderSize+RespTag+n, MinCell))
}
