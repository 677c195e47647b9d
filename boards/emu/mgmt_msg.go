package emu

import (
	"encoding/binary"
	"fmt"
)

// Management messages: what the firmware carries in PMOS payloads and in its
// mailbox (docs/pmos.md, "Management messages"). An 8-byte header (type,
// hop limit, destination, source, tag) and a body that depends on the type.
// Addresses are the DHCP-like ones the runner hands out (Aquila §4.4).

const (
	msgHeaderLen = 8

	addrNone       = 0x0000 // unassigned
	addrController = 0xFFFE // the runner; routed like any address
	addrLinkLocal  = 0xFFFF // "whoever is at the other end of this cable"

	defaultTTL = 16

	msgDiscover  = 0x01
	msgRelay     = 0x02
	msgAssign    = 0x03
	msgAssigned  = 0x04
	msgSend      = 0x05
	msgRegReq    = 0x10
	msgRegResp   = 0x11
	msgEchoReq   = 0x20
	msgEchoReply = 0x21
	msgError     = 0x7F

	// REG_REQ operations.
	regOpRead  = 1
	regOpWrite = 2
	regOpLen   = 9 // OP, ADDR(4), VALUE(4)
	regResLen  = 5 // STATUS, VALUE(4)
	// regMaxOps fits a REG_REQ in one PMOS payload: 8 + 2 + 25*9 = 235.
	regMaxOps = (pmosMaxPayload - msgHeaderLen - 2) / regOpLen

	// REG_RESP status codes: the UART bridge's (docs/uart-bridge.md) plus two.
	regOK          = 0x00
	regBusError    = 0x01
	regAlign       = 0x02
	regBusy        = 0x05
	regReadOnly    = 0x06
	regBadOp       = 0x10
	regNotExecuted = 0x11

	// ERROR codes.
	errNoRoute   = 1
	errTTL       = 2
	errMalformed = 3
	errPortDown  = 4
	errQueueFull = 5

	maxHostname = 32
)

// msgHeader is the fixed part of every management message.
type msgHeader struct {
	Type uint8
	TTL  uint8
	Dst  uint16
	Src  uint16
	Tag  uint16
}

func appendHeader(dst []byte, h msgHeader) []byte {
	dst = append(dst, h.Type, h.TTL)
	dst = binary.BigEndian.AppendUint16(dst, h.Dst)
	dst = binary.BigEndian.AppendUint16(dst, h.Src)
	return binary.BigEndian.AppendUint16(dst, h.Tag)
}

func decodeHeader(p []byte) (msgHeader, error) {
	if len(p) < msgHeaderLen {
		return msgHeader{}, fmt.Errorf("message of %d bytes is shorter than its %d-byte header", len(p), msgHeaderLen)
	}
	return msgHeader{
		Type: p[0], TTL: p[1],
		Dst: binary.BigEndian.Uint16(p[2:]),
		Src: binary.BigEndian.Uint16(p[4:]),
		Tag: binary.BigEndian.Uint16(p[6:]),
	}, nil
}

// discoverBody is what a board without an address says about itself.
type discoverBody struct {
	DNA    uint32
	Port   uint8 // index of the port the DISCOVER left through
	NPorts uint8
	Boots  uint16 // firmware boots since power-on
	Name   string // hostname, at most 32 bytes
}

func appendDiscover(dst []byte, d discoverBody) []byte {
	dst = binary.BigEndian.AppendUint32(dst, d.DNA)
	dst = append(dst, d.Port, d.NPorts)
	dst = binary.BigEndian.AppendUint16(dst, d.Boots)
	name := d.Name
	if len(name) > maxHostname {
		name = name[:maxHostname]
	}
	dst = append(dst, byte(len(name)))
	return append(dst, name...)
}

func decodeDiscover(b []byte) (discoverBody, error) {
	var d discoverBody
	if len(b) < 9 {
		return d, fmt.Errorf("DISCOVER body of %d bytes (at least 9)", len(b))
	}
	d.DNA = binary.BigEndian.Uint32(b)
	d.Port, d.NPorts = b[4], b[5]
	d.Boots = binary.BigEndian.Uint16(b[6:])
	n := int(b[8])
	if n > maxHostname || len(b) != 9+n {
		return d, fmt.Errorf("DISCOVER hostname length %d does not match the %d bytes left", n, len(b)-9)
	}
	d.Name = string(b[9:])
	return d, nil
}

// regOp is one operation of a REG_REQ.
type regOp struct {
	Op    uint8
	Addr  uint32
	Value uint32
}

// decodeRegReq returns the operations of a REG_REQ body.
func decodeRegReq(b []byte, ops []regOp) ([]regOp, error) {
	if len(b) < 2 {
		return nil, fmt.Errorf("REG_REQ body of %d bytes (at least 2)", len(b))
	}
	n := int(b[0])
	if n < 1 || n > regMaxOps {
		return nil, fmt.Errorf("REG_REQ of %d operations (1..%d)", n, regMaxOps)
	}
	if len(b) != 2+n*regOpLen {
		return nil, fmt.Errorf("REG_REQ of %d operations needs %d body bytes, has %d", n, 2+n*regOpLen, len(b))
	}
	ops = ops[:0]
	for i := range n {
		p := b[2+i*regOpLen:]
		ops = append(ops, regOp{Op: p[0], Addr: binary.BigEndian.Uint32(p[1:]), Value: binary.BigEndian.Uint32(p[5:])})
	}
	return ops, nil
}

// appendErrorBody builds the body of an ERROR about message h.
func appendErrorBody(dst []byte, code uint8, h msgHeader, reporter uint16) []byte {
	dst = append(dst, code, 0, h.Type, 0)
	dst = binary.BigEndian.AppendUint16(dst, h.Dst)
	dst = binary.BigEndian.AppendUint16(dst, h.Tag)
	return binary.BigEndian.AppendUint16(dst, reporter)
}
