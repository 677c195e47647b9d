package tin

import (
	"fmt"
)

// CellType is the TYPE field of the routing header (docs/tin.md, "Cell formats").
type CellType uint8

// Cell types.
const (
	CellRTS  CellType = 1
	CellCTS  CellType = 2
	CellCTD  CellType = 3
	CellData CellType = 4
	CellReq  CellType = 5 // 1RMA read request (§3.4)
	CellResp CellType = 6
	CellOReq CellType = 7 // ordering-protocol REQ (SC'18)
	CellOCtl CellType = 8 // ACK, NACK, FIN, FIN-ACK
)

var cellTypeNames = map[CellType]string{CellRTS: "RTS", CellCTS: "CTS", CellCTD: "CTD", CellData: "DATA",
	CellReq: "REQ", CellResp: "RESP", CellOReq: "OREQ", CellOCtl: "OCTL"}

func (c CellType) String() string {
	if s, ok := cellTypeNames[c]; ok {
		return s
	}
	return fmt.Sprintf("type%d", uint8(c))
}

// Header is a GNet cell's 8-byte routing header (§3.1), big-endian.
type Header struct {
	Dst, Src Addr
	Len      int // whole cell, bytes
	Type     CellType
	VC       int
	Hop      int
	Trace    bool
	CRC      uint8
}

// DecodeHeader splits the 64-bit header word.
func DecodeHeader(w uint64) Header {
	return Header{Dst: Addr(w >> 48), Src: Addr(w >> 32), Len: int(w >> 24 & 0xFF), Type: CellType(w >> 20 & 0xF),
		VC: int(w >> 15 & 0x1F), Hop: int(w >> 10 & 0x1F), Trace: w>>9&1 != 0, CRC: uint8(w)}
}

// Word packs the header (the CRC field as held).
func (h Header) Word() uint64 {
	w := uint64(h.Dst)<<48 | uint64(h.Src)<<32 | uint64(h.Len&0xFF)<<24 | uint64(h.Type&0xF)<<20 |
		uint64(h.VC&0x1F)<<15 | uint64(h.Hop&0x1F)<<10 | uint64(h.CRC)
	if h.Trace {
		w |= 1 << 9
	}
	return w
}

// HeaderCRC is the CRC-8 the header carries: bytes 0-6 (bits 63:8),
// polynomial 0x07, initial value 0, no reflection (CRC-8/SMBUS,
// docs/tin.md).
func HeaderCRC(w uint64) uint8 {
	var b [7]byte
	for i := range b {
		b[i] = uint8(w >> (56 - 8*i))
	}
	return CRC8(b[:])
}

// CRC8 is CRC-8/SMBUS: polynomial 0x07, initial value 0, no reflection, no
// final XOR (check value of "123456789": 0xF4).
func CRC8(p []byte) uint8 {
	var crc uint8
	for _, x := range p {
		crc ^= x
		for b := 0; b < 8; b++ {
			if crc&0x80 != 0 {
				crc = crc<<1 ^ 0x07
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// CRCOK reports whether the header's CRC field matches its bytes.
func (h Header) CRCOK() bool { return HeaderCRC(h.Word()) == h.CRC }

// Route kinds of a trace record (word 4, bits 2:0).
const (
	RouteEjected  = 0
	RouteMinimal  = 1 // adaptive, minimal entry
	RouteNonMin   = 2 // adaptive, non-minimal entry
	RouteDetMin   = 3 // deterministic, minimal entry
	RouteDetNonMn = 4 // deterministic, non-minimal entry
)

// TraceWords is the size of a collector record (docs/tin.md "Cell tracing").
const TraceWords = 8

// TraceRecord is one switch's sample of a traced cell (§6).
type TraceRecord struct {
	Board    string // the collector it was read from (set by the reader)
	Header   Header // as the cell arrived at this switch
	P0       uint64 // payload word 0 (RESP: the tag in the upper half; DATA: the first packet bytes)
	At       Addr   // this TiN's address
	In, Out  int    // input and output port (0-3 cages, 4 IP, 5 1RMA)
	OutVC    int
	Kind     int // route kind
	ArriveNS uint32
	GrantNS  uint32
	Number   uint32 // the record's number at its collector
	Injected bool   // the cell entered the fabric here (input port 4 or 5)
}

// DecodeTrace reads one 8-word collector record.
func DecodeTrace(w []uint32) (TraceRecord, error) {
	if len(w) != TraceWords {
		return TraceRecord{}, fmt.Errorf("trace record of %d words, want %d", len(w), TraceWords)
	}
	h := DecodeHeader(uint64(w[0])<<32 | uint64(w[1]))
	r := TraceRecord{Header: h, P0: uint64(w[2])<<32 | uint64(w[3]), At: Addr(w[4] >> 16),
		In: int(w[4] >> 12 & 0xF), Out: int(w[4] >> 8 & 0xF), OutVC: int(w[4] >> 3 & 0x1F), Kind: int(w[4] & 7),
		ArriveNS: w[5], GrantNS: w[6], Number: w[7] >> 8, Injected: w[7]&1 != 0}
	if r.In >= SwitchPorts || r.Out >= SwitchPorts {
		return r, fmt.Errorf("trace record %d: ports %d -> %d: a TiN has ports 0..%d", r.Number, r.In, r.Out, SwitchPorts-1)
	}
	return r, nil
}

// Ejected reports whether the record is the cell leaving the fabric into an
// endpoint of this TiN.
func (r TraceRecord) Ejected() bool { return r.Out >= Cages }

// DataPtr is a DATA cell's reassembly pointer, which the cell carries in
// its header's SRC field: a data cell needs no source address, the egress
// reassembly context its CTS created knows the source (§3.3: the CTS
// carries "a pointer to the allocated location in the egress
// cell-to-packet reassemble buffer"; §6: the 8 B header is all a 160 B
// cell carries besides packet bytes). docs/tin.md "Cell formats".
type DataPtr struct {
	Slot  int // egress reassembly slot (RPTR bits 15:5)
	Index int // the cell's position in its packet (RPTR bits 4:0)
}

// MaxPacketCells is how many cells one packet can have: the RPTR's 5-bit
// cell index.
const MaxPacketCells = 32

// DecodeDataPtr splits a DATA cell's RPTR (its header's SRC field).
func DecodeDataPtr(rptr Addr) DataPtr {
	return DataPtr{Slot: int(rptr >> 5), Index: int(rptr & 0x1F)}
}

// RespTag is the tag of a Resp cell: request tag, segment index, LAST.
type RespTag struct {
	Tag, Index int
	Last       bool
}

// DecodeRespTag splits a Resp cell's tag.
func DecodeRespTag(p0 uint64) RespTag {
	t := uint32(p0 >> 32)
	return RespTag{Tag: int(t >> 16), Index: int(t >> 1 & 0x7F), Last: t&1 != 0}
}

// DLogWords is the size of an ordering delivery-log record.
const DLogWords = 5

// Flags of a delivery-log record (word 1, bits 31:24).
const (
	DLogSlow     = 1 << 0
	DLogEOD      = 1 << 1
	DLogSyncOp   = 1 << 2
	DLogDup      = 1 << 3
	DLogSync     = 1 << 4
	DLogWaited   = 1 << 5 // waited in the reorder buffer
	DLogReleased = 1 << 6 // released early (the fault)
)

// Execution is one record of a target's ordering delivery log: a REQ
// forwarded to target memory (SC'18 §III).
type Execution struct {
	Src    Addr // source endpoint
	Tag    uint16
	Seq    int
	Execs  int // execution number of that REQ
	Flags  uint8
	SentNS uint32 // the executed copy's send timestamp
	AtNS   uint32 // execution time
	CID    int
	Result uint32 // the stream counter before this execution
}

// DecodeExecution reads one 5-word delivery-log record.
func DecodeExecution(w []uint32) (Execution, error) {
	if len(w) != DLogWords {
		return Execution{}, fmt.Errorf("delivery-log record of %d words, want %d", len(w), DLogWords)
	}
	e := Execution{Src: Addr(w[0] >> 16), Tag: uint16(w[0]), Seq: int(w[1] & 0xFFFF), Execs: int(w[1] >> 16 & 0xFF),
		Flags: uint8(w[1] >> 24), SentNS: w[2], AtNS: w[3], CID: int(w[4] >> 24), Result: w[4] & 0xFFFFFF}
	if e.Execs == 0 {
		return e, fmt.Errorf("delivery-log record of %s tag %d SEQ %d: execution number 0 (records count executions from 1)", e.Src, e.Tag, e.Seq)
	}
	return e, nil
}

// ORecWords is the size of an ordering stream record.
const ORecWords = 6

// Flags of a stream record (word 1, bits 15:0).
const (
	ORecFellBack = 1 << 0
	ORecNoCID    = 1 << 1
	ORecEOD      = 1 << 2
	ORecSync     = 1 << 3
	ORecSlow     = 1 << 4
)

// StreamRecord is one source-side ordering stream record.
type StreamRecord struct {
	Board     string // the source board (set by the reader)
	Dst       Addr   // target chip address
	Tag       uint16
	Len       int
	Flags     uint16
	StartNS   uint32
	AckedNS   uint32
	ClosedNS  uint32
	Retx      int
	NACKs     int
	SourceEnd Addr // the source endpoint address the target logs (set by the reader)
}

// DecodeStreamRecord reads one 6-word stream record.
func DecodeStreamRecord(w []uint32) (StreamRecord, error) {
	if len(w) != ORecWords {
		return StreamRecord{}, fmt.Errorf("stream record of %d words, want %d", len(w), ORecWords)
	}
	s := StreamRecord{Dst: Addr(w[0] >> 16), Tag: uint16(w[0]), Len: int(w[1] >> 16), Flags: uint16(w[1]),
		StartNS: w[2], AckedNS: w[3], ClosedNS: w[4], Retx: int(w[5] >> 16), NACKs: int(w[5] & 0xFFFF)}
	if s.Len == 0 {
		return s, fmt.Errorf("stream record to %s tag %d: length 0", s.Dst, s.Tag)
	}
	return s, nil
}

// IPLogWords is the size of an IP delivery-log record.
const IPLogWords = 5

// IP delivery kinds (flags 2:1).
const (
	IPKindUR    = 0
	IPKindBurst = 1
	IPKindReply = 2
)

// Delivery is one record of a receiver's IP delivery log (§3.3).
type Delivery struct {
	Src    Addr
	Flow   uint16
	Seq    uint32
	SentNS uint32 // send timestamp: the packet entered the ingress buffer
	RecvNS uint32 // receive timestamp: forwarded to the host
	ECN    bool
	Kind   int
	CoS    int
	Port   int
}

// DecodeDelivery reads one 5-word IP delivery-log record.
func DecodeDelivery(w []uint32) (Delivery, error) {
	if len(w) != IPLogWords {
		return Delivery{}, fmt.Errorf("IP delivery-log record of %d words, want %d", len(w), IPLogWords)
	}
	d := Delivery{Src: Addr(w[0] >> 16), Flow: uint16(w[0]), Seq: w[1], SentNS: w[2], RecvNS: w[3],
		ECN: w[4]&1 != 0, Kind: int(w[4] >> 1 & 3), CoS: int(w[4] >> 4 & 7), Port: int(w[4] >> 8 & 3)}
	if d.Kind == 3 {
		return d, fmt.Errorf("IP delivery-log record from %s: kind 3 is not UR, burst or reply", d.Src)
	}
	return d, nil
}

// FlowKey is an IP flow as the receiver orders it (§3.3): source address,
// egress port, CoS, flow label.
type FlowKey struct {
	Src  Addr
	Port int
	CoS  int
	Flow uint16
}

// Key returns the delivery's flow.
func (d Delivery) Key() FlowKey { return FlowKey{d.Src, d.Port, d.CoS, d.Flow} }

// Inversions returns, per flow, the deliveries that came behind a later
// packet of their flow (a sequence number at or below one delivered
// before), in log order: the per-flow order §3.3 promises is kept when it is
// empty.
func Inversions(log []Delivery) []Inversion {
	last := map[FlowKey]uint32{}
	var out []Inversion
	for i, d := range log {
		k := d.Key()
		if prev, ok := last[k]; ok && d.Seq <= prev {
			out = append(out, Inversion{At: i, Flow: k, Seq: d.Seq, After: prev})
			continue
		}
		last[k] = d.Seq
	}
	return out
}

// Inversion is a packet delivered behind a later packet of its flow.
type Inversion struct {
	At    int // index in the log
	Flow  FlowKey
	Seq   uint32
	After uint32
}

func (v Inversion) String() string {
	return fmt.Sprintf("flow %s/port%d/cos%d/label%d: seq %d delivered after seq %d", v.Flow.Src, v.Flow.Port, v.Flow.CoS, v.Flow.Flow, v.Seq, v.After)
}
