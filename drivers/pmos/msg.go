package pmos

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// MsgType is a management message's TYPE (pmos.md §5.1).
type MsgType uint8

const (
	MsgDiscover  MsgType = 0x01
	MsgRelay     MsgType = 0x02
	MsgAssign    MsgType = 0x03
	MsgAssigned  MsgType = 0x04
	MsgSend      MsgType = 0x05
	MsgRegReq    MsgType = 0x10
	MsgRegResp   MsgType = 0x11
	MsgEchoReq   MsgType = 0x20
	MsgEchoReply MsgType = 0x21
	MsgError     MsgType = 0x7F
)

func (t MsgType) String() string {
	switch t {
	case MsgDiscover:
		return "DISCOVER"
	case MsgRelay:
		return "RELAY"
	case MsgAssign:
		return "ASSIGN"
	case MsgAssigned:
		return "ASSIGNED"
	case MsgSend:
		return "SEND"
	case MsgRegReq:
		return "REG_REQ"
	case MsgRegResp:
		return "REG_RESP"
	case MsgEchoReq:
		return "ECHO_REQ"
	case MsgEchoReply:
		return "ECHO_REPLY"
	case MsgError:
		return "ERROR"
	}
	return fmt.Sprintf("type 0x%02x", uint8(t))
}

// Addresses (pmos.md §5.1; Aquila §4.4's DHCP-like addresses).
const (
	AddrNone       uint16 = 0x0000 // a board without an address
	AddrMax        uint16 = 0xFFFD // highest board address
	AddrController uint16 = 0xFFFE // the runner
	AddrLinkLocal  uint16 = 0xFFFF // the board at the other end of this cable
)

// Sizes of the message layer.
const (
	HeaderLen = 8
	MaxMsg    = MaxPayload // one message fills at most one DATA frame
	// DefaultTTL is what originators set (DISCOVER: 1).
	DefaultTTL = 16
	// MaxRegOps is the operations one REG_REQ carries at most.
	MaxRegOps = 25
	MaxName   = 32
	// MaxInner is the message a SEND carries at most.
	MaxInner = 230
	MaxEcho  = 232
)

// Msg is one management message: the 8-byte header and its body.
type Msg struct {
	Type MsgType
	TTL  uint8
	Dst  uint16
	Src  uint16
	Tag  uint16
	Body []byte
}

// ErrMalformed wraps every message that cannot be parsed.
var ErrMalformed = errors.New("malformed management message")

func malformed(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrMalformed, fmt.Sprintf(format, a...))
}

// Marshal renders the message.
func (m Msg) Marshal() ([]byte, error) {
	if HeaderLen+len(m.Body) > MaxMsg {
		return nil, fmt.Errorf("%s message of %d bytes: at most %d fit a PMOS frame", m.Type, HeaderLen+len(m.Body), MaxMsg)
	}
	b := make([]byte, HeaderLen, HeaderLen+len(m.Body))
	b[0], b[1] = byte(m.Type), m.TTL
	binary.BigEndian.PutUint16(b[2:], m.Dst)
	binary.BigEndian.PutUint16(b[4:], m.Src)
	binary.BigEndian.PutUint16(b[6:], m.Tag)
	return append(b, m.Body...), nil
}

// ParseMsg takes a message's header apart; the body is checked by the typed
// parsers below.
func ParseMsg(b []byte) (Msg, error) {
	if len(b) < HeaderLen {
		return Msg{}, malformed("%d bytes, shorter than the 8-byte header", len(b))
	}
	if len(b) > MaxMsg {
		return Msg{}, malformed("%d bytes, longer than %d", len(b), MaxMsg)
	}
	return Msg{
		Type: MsgType(b[0]), TTL: b[1],
		Dst: binary.BigEndian.Uint16(b[2:]), Src: binary.BigEndian.Uint16(b[4:]), Tag: binary.BigEndian.Uint16(b[6:]),
		Body: append([]byte(nil), b[HeaderLen:]...),
	}, nil
}

func (m Msg) expect(t MsgType) error {
	if m.Type != t {
		return malformed("a %s message, not %s", m.Type, t)
	}
	return nil
}

// Discover is a DISCOVER's body (pmos.md §5.2).
type Discover struct {
	DNA    uint32
	Port   uint8 // the sender's port it left through
	NPorts uint8
	Boots  uint16
	Name   string // the board's hostname: the lab file's board name
}

// Body renders the DISCOVER body.
func (d Discover) Body() ([]byte, error) {
	if len(d.Name) > MaxName {
		return nil, fmt.Errorf("DISCOVER hostname of %d bytes: at most %d", len(d.Name), MaxName)
	}
	b := make([]byte, 9, 9+len(d.Name))
	binary.BigEndian.PutUint32(b, d.DNA)
	b[4], b[5] = d.Port, d.NPorts
	binary.BigEndian.PutUint16(b[6:], d.Boots)
	b[8] = byte(len(d.Name))
	return append(b, d.Name...), nil
}

// ParseDiscover reads a DISCOVER message's body.
func ParseDiscover(m Msg) (Discover, error) {
	if err := m.expect(MsgDiscover); err != nil {
		return Discover{}, err
	}
	b := m.Body
	if len(b) < 9 {
		return Discover{}, malformed("DISCOVER body of %d bytes, at least 9", len(b))
	}
	n := int(b[8])
	if n > MaxName || len(b) != 9+n {
		return Discover{}, malformed("DISCOVER NAMELEN %d in a body of %d bytes", n, len(b))
	}
	return Discover{DNA: binary.BigEndian.Uint32(b), Port: b[4], NPorts: b[5], Boots: binary.BigEndian.Uint16(b[6:]),
		Name: string(b[9:])}, nil
}

// Relay is a RELAY's body (pmos.md §5.3): the proxy's port the DISCOVER
// arrived on and the DISCOVER as received. The proxy is the RELAY's Src.
type Relay struct {
	Port     uint8
	Discover Msg
}

// ParseRelay reads a RELAY message's body, the inner DISCOVER included.
func ParseRelay(m Msg) (Relay, Discover, error) {
	if err := m.expect(MsgRelay); err != nil {
		return Relay{}, Discover{}, err
	}
	if len(m.Body) < 2+HeaderLen {
		return Relay{}, Discover{}, malformed("RELAY body of %d bytes carries no DISCOVER", len(m.Body))
	}
	inner, err := ParseMsg(m.Body[2:])
	if err != nil {
		return Relay{}, Discover{}, fmt.Errorf("RELAY: %w", err)
	}
	d, err := ParseDiscover(inner)
	if err != nil {
		return Relay{}, Discover{}, fmt.Errorf("RELAY: %w", err)
	}
	return Relay{Port: m.Body[0], Discover: inner}, d, nil
}

// RelayHeadLen is how many leading bytes of a RELAY RelayHead needs: the
// header (the proxy is its SRC) and the PORT byte (pmos.md §5.3), three
// mailbox words.
const RelayHeadLen = HeaderLen + 1

// RelayHead reads the relaying proxy's address and the proxy's port from
// the first bytes of a message (a mailbox reads words one bus access each:
// a runner decides from these whether the rest of a RELAY is worth
// reading). ok is false when b is not the start of a RELAY.
func RelayHead(b []byte) (proxy uint16, port uint8, ok bool) {
	if len(b) < RelayHeadLen || MsgType(b[0]) != MsgRelay {
		return 0, 0, false
	}
	return binary.BigEndian.Uint16(b[4:]), b[HeaderLen], true
}

// Assign is an ASSIGN's body (pmos.md §5.4).
type Assign struct {
	DNA  uint32
	Addr uint16
}

// Body renders the ASSIGN body.
func (a Assign) Body() []byte {
	b := make([]byte, 6)
	binary.BigEndian.PutUint32(b, a.DNA)
	binary.BigEndian.PutUint16(b[4:], a.Addr)
	return b
}

// ParseAssign reads an ASSIGN message's body.
func ParseAssign(m Msg) (Assign, error) {
	if err := m.expect(MsgAssign); err != nil {
		return Assign{}, err
	}
	if len(m.Body) != 6 {
		return Assign{}, malformed("ASSIGN body of %d bytes, want 6", len(m.Body))
	}
	return Assign{DNA: binary.BigEndian.Uint32(m.Body), Addr: binary.BigEndian.Uint16(m.Body[4:])}, nil
}

// Assigned is an ASSIGNED's body: the port is the assignee's port the ASSIGN
// came in on (its upstream port), 0xFF from its mailbox.
type Assigned struct {
	DNA  uint32
	Addr uint16
	Port uint8
}

// Body renders the ASSIGNED body.
func (a Assigned) Body() []byte {
	b := make([]byte, 7)
	binary.BigEndian.PutUint32(b, a.DNA)
	binary.BigEndian.PutUint16(b[4:], a.Addr)
	b[6] = a.Port
	return b
}

// ParseAssigned reads an ASSIGNED message's body.
func ParseAssigned(m Msg) (Assigned, error) {
	if err := m.expect(MsgAssigned); err != nil {
		return Assigned{}, err
	}
	if len(m.Body) != 7 {
		return Assigned{}, malformed("ASSIGNED body of %d bytes, want 7", len(m.Body))
	}
	return Assigned{DNA: binary.BigEndian.Uint32(m.Body), Addr: binary.BigEndian.Uint16(m.Body[4:]), Port: m.Body[6]}, nil
}

// SendBody renders a SEND's body (pmos.md §5.6): the addressee sends inner,
// link-local, out of its port.
func SendBody(port uint8, inner []byte) ([]byte, error) {
	if len(inner) < 1 || len(inner) > MaxInner {
		return nil, fmt.Errorf("SEND carries a message of 1..%d bytes, %d given", MaxInner, len(inner))
	}
	return append([]byte{port, 0}, inner...), nil
}

// ParseSend reads a SEND message's body.
func ParseSend(m Msg) (port uint8, inner Msg, err error) {
	if err := m.expect(MsgSend); err != nil {
		return 0, Msg{}, err
	}
	if len(m.Body) < 2+HeaderLen || len(m.Body) > 2+MaxInner {
		return 0, Msg{}, malformed("SEND body of %d bytes", len(m.Body))
	}
	inner, err = ParseMsg(m.Body[2:])
	return m.Body[0], inner, err
}

// Register operations (pmos.md §5.5).
const (
	OpRead  uint8 = 1
	OpWrite uint8 = 2
)

// RegOp is one operation of a REG_REQ.
type RegOp struct {
	Op    uint8
	Addr  uint32
	Value uint32 // written by a WRITE; 0 for a READ
}

// RegReqBody renders a REG_REQ body of 1..25 operations.
func RegReqBody(ops []RegOp) ([]byte, error) {
	if len(ops) < 1 || len(ops) > MaxRegOps {
		return nil, fmt.Errorf("a REG_REQ carries 1..%d operations, %d given", MaxRegOps, len(ops))
	}
	b := make([]byte, 2, 2+9*len(ops))
	b[0] = byte(len(ops))
	for _, op := range ops {
		var w [9]byte
		w[0] = op.Op
		binary.BigEndian.PutUint32(w[1:], op.Addr)
		binary.BigEndian.PutUint32(w[5:], op.Value)
		b = append(b, w[:]...)
	}
	return b, nil
}

// ParseRegReq reads a REG_REQ message's body.
func ParseRegReq(m Msg) ([]RegOp, error) {
	if err := m.expect(MsgRegReq); err != nil {
		return nil, err
	}
	b := m.Body
	if len(b) < 2 {
		return nil, malformed("REG_REQ body of %d bytes", len(b))
	}
	n := int(b[0])
	if n < 1 || n > MaxRegOps || len(b) != 2+9*n {
		return nil, malformed("REG_REQ of %d operations in a body of %d bytes", n, len(b))
	}
	ops := make([]RegOp, n)
	for i := range ops {
		w := b[2+9*i:]
		ops[i] = RegOp{Op: w[0], Addr: binary.BigEndian.Uint32(w[1:]), Value: binary.BigEndian.Uint32(w[5:])}
	}
	return ops, nil
}

// RegStatus is a REG_RESP result's STATUS.
type RegStatus uint8

const (
	RegOK          RegStatus = 0x00
	RegBusError    RegStatus = 0x01
	RegAlign       RegStatus = 0x02
	RegBusy        RegStatus = 0x05
	RegReadOnly    RegStatus = 0x06
	RegBadOp       RegStatus = 0x10
	RegNotExecuted RegStatus = 0x11
)

func (s RegStatus) String() string {
	switch s {
	case RegOK:
		return "OK"
	case RegBusError:
		return "BUS_ERROR"
	case RegAlign:
		return "ALIGN"
	case RegBusy:
		return "BUSY"
	case RegReadOnly:
		return "READ_ONLY"
	case RegBadOp:
		return "BAD_OP"
	case RegNotExecuted:
		return "NOT_EXECUTED"
	}
	return fmt.Sprintf("status 0x%02x", uint8(s))
}

// RegResult is one result of a REG_RESP.
type RegResult struct {
	Status RegStatus
	Value  uint32
}

// RegRespBody renders a REG_RESP body.
func RegRespBody(rs []RegResult) ([]byte, error) {
	if len(rs) < 1 || len(rs) > MaxRegOps {
		return nil, fmt.Errorf("a REG_RESP carries 1..%d results, %d given", MaxRegOps, len(rs))
	}
	b := make([]byte, 2, 2+5*len(rs))
	b[0] = byte(len(rs))
	for _, r := range rs {
		var w [5]byte
		w[0] = byte(r.Status)
		binary.BigEndian.PutUint32(w[1:], r.Value)
		b = append(b, w[:]...)
	}
	return b, nil
}

// ParseRegResp reads a REG_RESP message's body.
func ParseRegResp(m Msg) ([]RegResult, error) {
	if err := m.expect(MsgRegResp); err != nil {
		return nil, err
	}
	b := m.Body
	if len(b) < 2 {
		return nil, malformed("REG_RESP body of %d bytes", len(b))
	}
	n := int(b[0])
	if n < 1 || n > MaxRegOps || len(b) != 2+5*n {
		return nil, malformed("REG_RESP of %d results in a body of %d bytes", n, len(b))
	}
	rs := make([]RegResult, n)
	for i := range rs {
		w := b[2+5*i:]
		rs[i] = RegResult{Status: RegStatus(w[0]), Value: binary.BigEndian.Uint32(w[1:])}
	}
	return rs, nil
}

// ErrorCode is an ERROR message's CODE (pmos.md §5.8).
type ErrorCode uint8

const (
	ErrCodeNoRoute   ErrorCode = 1
	ErrCodeTTL       ErrorCode = 2
	ErrCodeMalformed ErrorCode = 3
	ErrCodePortDown  ErrorCode = 4
	ErrCodeQueueFull ErrorCode = 5
	ErrCodeUnknown   ErrorCode = 6
)

func (c ErrorCode) String() string {
	switch c {
	case ErrCodeNoRoute:
		return "NO_ROUTE"
	case ErrCodeTTL:
		return "TTL"
	case ErrCodeMalformed:
		return "MALFORMED"
	case ErrCodePortDown:
		return "PORT_DOWN"
	case ErrCodeQueueFull:
		return "QUEUE_FULL"
	case ErrCodeUnknown:
		return "UNKNOWN"
	}
	return fmt.Sprintf("code %d", uint8(c))
}

// ErrorBody is an ERROR's body.
type ErrorBody struct {
	Code     ErrorCode
	OrigType MsgType
	OrigDst  uint16
	OrigTag  uint16
	Reporter uint16 // the reporting board's address
}

// Body renders the ERROR body.
func (e ErrorBody) Body() []byte {
	b := make([]byte, 10)
	b[0], b[2] = byte(e.Code), byte(e.OrigType)
	binary.BigEndian.PutUint16(b[4:], e.OrigDst)
	binary.BigEndian.PutUint16(b[6:], e.OrigTag)
	binary.BigEndian.PutUint16(b[8:], e.Reporter)
	return b
}

// ParseError reads an ERROR message's body.
func ParseError(m Msg) (ErrorBody, error) {
	if err := m.expect(MsgError); err != nil {
		return ErrorBody{}, err
	}
	if len(m.Body) != 10 {
		return ErrorBody{}, malformed("ERROR body of %d bytes, want 10", len(m.Body))
	}
	b := m.Body
	return ErrorBody{Code: ErrorCode(b[0]), OrigType: MsgType(b[2]), OrigDst: binary.BigEndian.Uint16(b[4:]),
		OrigTag: binary.BigEndian.Uint16(b[6:]), Reporter: binary.BigEndian.Uint16(b[8:])}, nil
}

// Error renders the ERROR for a person.
func (e ErrorBody) Error() string {
	return fmt.Sprintf("ERROR %s about a %s to 0x%04x (tag 0x%04x), reported by board 0x%04x",
		e.Code, e.OrigType, e.OrigDst, e.OrigTag, e.Reporter)
}
