package pmos

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/drivers"
	"github.com/labrunner/labrunner/drivers/regmap"
)

// PortRoute is the mailbox's PORT 15 (mgmt.md §4): on send, "hand the
// message to this board's firmware as if it came from a port" (it is served
// or routed); on receive, "made by this board". In a ROUTE entry, 15 is LOCAL.
const PortRoute = 15

// TxResult is MBOX_TX_STATUS.RESULT.
type TxResult uint8

const (
	TxOK        TxResult = 0
	TxBadLen    TxResult = 1
	TxBadPort   TxResult = 2
	TxPortDown  TxResult = 3
	TxQueueFull TxResult = 4
)

func (r TxResult) String() string {
	switch r {
	case TxOK:
		return "OK"
	case TxBadLen:
		return "BAD_LEN"
	case TxBadPort:
		return "BAD_PORT"
	case TxPortDown:
		return "PORT_DOWN (uncabled port, RAW mode, or the firmware stopped)"
	case TxQueueFull:
		return "QUEUE_FULL"
	}
	return fmt.Sprintf("result %d", uint8(r))
}

// ErrTxRefused wraps a message the mailbox did not accept.
var ErrTxRefused = errors.New("mailbox refused the message")

// Mailbox is the runner's mailbox on one DCN board (mgmt.md §4), reached
// through the board's own register bus. Send and Receive may be called from
// different goroutines; Receive must have one caller at a time.
type Mailbox struct {
	Board string
	// mu keeps a message's burst and a receive sequence (status, data,
	// pop) whole: a bus splits bursts into single accesses that other
	// goroutines' accesses may come between.
	mu                                        sync.Mutex
	regs                                      *regmap.Regs
	bus                                       drivers.RegisterBus
	txCtrl, txStatus, rxStatus, rxData, rxPop uint64
}

// NewMailbox resolves the mailbox registers of the mgmt map on bus.
func NewMailbox(bus drivers.RegisterBus, mgmt *bitstreams.Manifest, board string) (*Mailbox, error) {
	mb := &Mailbox{Board: board, regs: regmap.New(bus, mgmt, board), bus: bus}
	for _, r := range []struct {
		name string
		dst  *uint64
	}{{"MBOX_TX_CTRL", &mb.txCtrl}, {"MBOX_TX_STATUS", &mb.txStatus}, {"MBOX_RX_STATUS", &mb.rxStatus},
		{"MBOX_RX_DATA[0]", &mb.rxData}, {"MBOX_RX_POP", &mb.rxPop}} {
		loc, err := mb.regs.Lookup(r.name)
		if err != nil {
			return nil, fmt.Errorf("mailbox of %s: %w", board, err)
		}
		*r.dst = loc.Addr
	}
	return mb, nil
}

// Regs is the board's management block by name.
func (mb *Mailbox) Regs() *regmap.Regs { return mb.regs }

// PackWords packs bytes 4 a word, byte 4i in bits 31:24 of word i (the
// mailbox's layout).
func PackWords(b []byte) []uint32 {
	out := make([]uint32, (len(b)+3)/4)
	for i, c := range b {
		out[i/4] |= uint32(c) << (24 - 8*uint(i%4))
	}
	return out
}

// UnpackWords is PackWords' inverse, n bytes.
func UnpackWords(w []uint32, n int) []byte {
	out := make([]byte, n)
	for i := range out {
		if i/4 < len(w) {
			out[i] = byte(w[i/4] >> (24 - 8*uint(i%4)))
		}
	}
	return out
}

// Send hands msg to the board in one burst starting at MBOX_TX_CTRL: out of
// port (link-local, as it is) or, with PortRoute, to the board's firmware.
// It does not read the verdict: delivery failures come back as ERRORs.
func (mb *Mailbox) Send(ctx context.Context, port uint8, msg []byte) error {
	if err := checkTx(port, msg); err != nil {
		return drivers.Setup(mb.Board, "mailbox send", "", err)
	}
	words := append([]uint32{uint32(len(msg)) | uint32(port)<<16}, PackWords(msg)...)
	mb.mu.Lock()
	defer mb.mu.Unlock()
	if err := mb.bus.WriteBurst(ctx, mb.txCtrl, words); err != nil {
		return fmt.Errorf("%s: mailbox send of %d bytes on port %d: %w", mb.Board, len(msg), port, err)
	}
	return nil
}

// SendThen is Send with accesses run right behind the message's burst,
// in one batch (a requester's clock read: on a UART bridge with a window
// no round trip of its own). sent reports whether the burst went out
// (then an error is about the accesses after it); their Words receive
// what they read.
func (mb *Mailbox) SendThen(ctx context.Context, port uint8, msg []byte, after []drivers.Access) (sent bool, err error) {
	if err := checkTx(port, msg); err != nil {
		return false, drivers.Setup(mb.Board, "mailbox send", "", err)
	}
	words := append([]uint32{uint32(len(msg)) | uint32(port)<<16}, PackWords(msg)...)
	acc := append([]drivers.Access{{Addr: mb.txCtrl, Write: true, Words: words}}, after...)
	mb.mu.Lock()
	defer mb.mu.Unlock()
	if err := drivers.RunBatch(ctx, mb.bus, acc); err != nil {
		var be *drivers.BatchError
		if errors.As(err, &be) && be.Index > 0 {
			return true, fmt.Errorf("%s: read 0x%x after a mailbox send: %w", mb.Board, acc[be.Index].Addr, be.Err)
		}
		if errors.As(err, &be) {
			err = be.Err
		}
		return false, fmt.Errorf("%s: mailbox send of %d bytes on port %d: %w", mb.Board, len(msg), port, err)
	}
	return true, nil
}

// SendChecked is Send followed by a read of MBOX_TX_STATUS: a refusal
// (BAD_LEN, BAD_PORT, PORT_DOWN, QUEUE_FULL) is an ErrTxRefused error naming
// the result.
func (mb *Mailbox) SendChecked(ctx context.Context, port uint8, msg []byte) (TxResult, error) {
	if err := checkTx(port, msg); err != nil {
		return 0, drivers.Setup(mb.Board, "mailbox send", "", err)
	}
	words := append([]uint32{uint32(len(msg)) | uint32(port)<<16}, PackWords(msg)...)
	mb.mu.Lock()
	defer mb.mu.Unlock()
	if err := mb.bus.WriteBurst(ctx, mb.txCtrl, words); err != nil {
		return 0, fmt.Errorf("%s: mailbox send of %d bytes on port %d: %w", mb.Board, len(msg), port, err)
	}
	st, err := mb.bus.Read32(ctx, mb.txStatus)
	if err != nil {
		return 0, fmt.Errorf("%s: read MBOX_TX_STATUS: %w", mb.Board, err)
	}
	r := TxResult(st & 0xF)
	if r != TxOK {
		return r, fmt.Errorf("%s: %w on port %d: %s", mb.Board, ErrTxRefused, port, r)
	}
	return r, nil
}

func checkTx(port uint8, msg []byte) error {
	switch {
	case port > PortRoute:
		return fmt.Errorf("mailbox port %d: a port index (0..7) or 15", port)
	case port == PortRoute && (len(msg) < HeaderLen || len(msg) > MaxMsg):
		return fmt.Errorf("a message handed to the firmware is %d..%d bytes, %d given", HeaderLen, MaxMsg, len(msg))
	case len(msg) < 1 || len(msg) > MaxMsg:
		return fmt.Errorf("a mailbox message is 1..%d bytes, %d given", MaxMsg, len(msg))
	}
	return nil
}

// RxStatus is MBOX_RX_STATUS taken apart.
type RxStatus struct {
	Count int // messages queued
	Len   int // bytes of the head message
	Port  int // port it arrived on; PortRoute: made by the board
}

// ParseRxStatus reads the MBOX_RX_STATUS word.
func ParseRxStatus(v uint32) RxStatus {
	return RxStatus{Count: int(v & 0xFF), Len: int(v >> 8 & 0xFF), Port: int(v >> 16 & 0xF)}
}

// Received is one message taken from the mailbox.
type Received struct {
	Port int
	Len  int
	// Bytes holds the message, or only its first bytes when the keep
	// function of Receive declined the rest (Truncated).
	Bytes     []byte
	Truncated bool
}

// ReceiveOptions say how much of each message Receive reads: every word
// costs a bus access (mgmt.md §2: 50 µs each on the emulator), and a burst of
// relays for boards already handled is better dropped after its first words.
type ReceiveOptions struct {
	// Prefix > 0 reads the words holding the first Prefix bytes first and
	// asks Keep whether the rest is worth reading.
	Prefix int
	Keep   func(head []byte) bool
	// ShedAbove > 0: while more messages than this are queued, a message
	// whose first byte is a type in Shed is dropped after reading only its
	// first word (the queue holds 32; an answer that finds it full is lost).
	ShedAbove int
	Shed      []MsgType
	// Before are accesses run in one batch with the read of
	// MBOX_RX_STATUS, ahead of it (a poller's clock and drop counter): on
	// a UART bridge with a window they cost no round trip of their own.
	// Their Words receive what they read.
	Before []drivers.Access
}

// Receive takes the head message, if any, and pops it whether it was read
// whole or not (Received.Truncated).
func (mb *Mailbox) Receive(ctx context.Context, opts ReceiveOptions) (Received, bool, error) {
	mb.mu.Lock()
	defer mb.mu.Unlock()
	acc := append(slices.Clone(opts.Before), drivers.Access{Addr: mb.rxStatus, Words: make([]uint32, 1)})
	if err := drivers.RunBatch(ctx, mb.bus, acc); err != nil {
		var be *drivers.BatchError
		if errors.As(err, &be) && be.Index < len(opts.Before) {
			return Received{}, false, fmt.Errorf("%s: read 0x%x: %w", mb.Board, acc[be.Index].Addr, be.Err)
		}
		if errors.As(err, &be) {
			err = be.Err
		}
		return Received{}, false, fmt.Errorf("%s: read MBOX_RX_STATUS: %w", mb.Board, err)
	}
	st := ParseRxStatus(acc[len(acc)-1].Words[0])
	if st.Count == 0 {
		return Received{}, false, nil
	}
	r := Received{Port: st.Port, Len: st.Len}
	if st.Len == 0 {
		return r, true, mb.pop(ctx)
	}
	total := (st.Len + 3) / 4
	buf := make([]uint32, total)
	first := 0 // words read so far
	readTo := func(n int) error {
		n = min(n, total)
		if n <= first {
			return nil
		}
		if err := mb.bus.ReadBurst(ctx, mb.rxData+uint64(4*first), buf[first:n]); err != nil {
			return fmt.Errorf("%s: read MBOX_RX_DATA (%d words): %w", mb.Board, n-first, err)
		}
		first = n
		return nil
	}
	truncated := func() (Received, bool, error) {
		r.Bytes, r.Truncated = UnpackWords(buf[:first], min(st.Len, 4*first)), true
		return r, true, mb.pop(ctx)
	}
	if opts.ShedAbove > 0 && st.Count > opts.ShedAbove && len(opts.Shed) > 0 {
		if err := readTo(1); err != nil {
			return Received{}, false, err
		}
		for _, t := range opts.Shed {
			if MsgType(buf[0]>>24) == t {
				return truncated()
			}
		}
	}
	if opts.Prefix > 0 && opts.Keep != nil && (opts.Prefix+3)/4 < total {
		if err := readTo((opts.Prefix + 3) / 4); err != nil {
			return Received{}, false, err
		}
		if !opts.Keep(UnpackWords(buf[:first], min(st.Len, 4*first))) {
			return truncated()
		}
	}
	// The rest of the message and the pop in one batch: one round trip
	// on a UART bridge with a window.
	if first < total {
		acc := []drivers.Access{{Addr: mb.rxData + uint64(4*first), Words: buf[first:total]}, {Addr: mb.rxPop, Write: true, Words: []uint32{1}}}
		if err := drivers.RunBatch(ctx, mb.bus, acc); err != nil {
			var be *drivers.BatchError
			if errors.As(err, &be) && be.Index == 1 {
				return Received{}, false, fmt.Errorf("%s: write MBOX_RX_POP: %w", mb.Board, be.Err)
			}
			if errors.As(err, &be) {
				err = be.Err
			}
			return Received{}, false, fmt.Errorf("%s: read MBOX_RX_DATA (%d words): %w", mb.Board, total-first, err)
		}
		r.Bytes = UnpackWords(buf, st.Len)
		return r, true, nil
	}
	r.Bytes = UnpackWords(buf, st.Len)
	return r, true, mb.pop(ctx)
}

func (mb *Mailbox) pop(ctx context.Context) error {
	if err := mb.bus.Write32(ctx, mb.rxPop, 1); err != nil {
		return fmt.Errorf("%s: write MBOX_RX_POP: %w", mb.Board, err)
	}
	return nil
}
