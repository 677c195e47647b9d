// Package drivers holds the small interfaces through which labrunner touches
// hardware: a register bus, a text console, a programmer and a power switch.
// Implementations live in sub-packages (drivers/mmio, drivers/uartbridge,
// drivers/console, drivers/program, drivers/power) and in boards/emu for the
// emulated rack. Everything here takes a context: nothing waits forever.
package drivers

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// RegisterBus reads and writes 32-bit registers at byte addresses of a
// board's programmable-logic address space. Addresses must be 4-byte aligned.
// Bursts access consecutive words (addr, addr+4, ...); a FIFO window in the
// register map accepts a burst as a sequence of pushes or pops.
type RegisterBus interface {
	Read32(ctx context.Context, addr uint64) (uint32, error)
	Write32(ctx context.Context, addr uint64, v uint32) error
	ReadBurst(ctx context.Context, addr uint64, dst []uint32) error
	WriteBurst(ctx context.Context, addr uint64, src []uint32) error
	Close() error
}

// Access is one register access of a batch: a read of len(Words) words
// from Addr on (one register, or a burst) into Words, or a write of Words.
type Access struct {
	Addr  uint64
	Write bool
	Words []uint32
}

// Batcher is a register bus that can have several accesses under way at
// once (the UART bridge's window, docs/uart-bridge.md): they still run in
// order, each once, but their round trips overlap. Batch returns the first
// failing access's error, as a *BatchError; accesses after it may have run.
// It is not a transaction.
type Batcher interface {
	Batch(ctx context.Context, acc []Access) error
}

// BatchError is a batch's failure and the access it is about (its index
// in the batch), so that a caller can name that access as it would have
// named it alone.
type BatchError struct {
	Index int
	Err   error
}

func (e *BatchError) Error() string { return e.Err.Error() }
func (e *BatchError) Unwrap() error { return e.Err }

// RunBatch runs accesses on bus in order: through its Batch method when it
// has one, else one at a time, stopping at the first error. Its error is a
// *BatchError.
func RunBatch(ctx context.Context, bus RegisterBus, acc []Access) error {
	if b, ok := bus.(Batcher); ok {
		return b.Batch(ctx, acc)
	}
	for i, a := range acc {
		var err error
		switch {
		case a.Write && len(a.Words) == 1:
			err = bus.Write32(ctx, a.Addr, a.Words[0])
		case a.Write:
			err = bus.WriteBurst(ctx, a.Addr, a.Words)
		case len(a.Words) == 1:
			a.Words[0], err = bus.Read32(ctx, a.Addr)
		default:
			err = bus.ReadBurst(ctx, a.Addr, a.Words)
		}
		if err != nil {
			return &BatchError{Index: i, Err: err}
		}
	}
	return nil
}

// Console is a board's text console (a UART with a shell or boot loader on
// the other end). Expect tolerates interleaved noise (kernel messages): it
// returns once pattern matches anywhere in what arrived since the last
// successful Expect, or fails at the context's deadline.
type Console interface {
	Send(ctx context.Context, line string) error
	// Expect waits for a regular expression and returns the text that
	// arrived up to and including the match.
	Expect(ctx context.Context, pattern string) (string, error)
	Close() error
}

// Image is what a programmer loads: a bitstream file that has already been
// parsed and checked against the board (see bitstreams.Check).
type Image struct {
	Path   string // the file as given (.bit, .bin, .rbf, .sof)
	Design string // design name from the catalogue manifest
	Part   string // the part the file was built for
	SHA256 string
	// Data is the file's content, as read and checked.
	Data []byte
	// Bin is the configuration data with its 32-bit words byte-swapped,
	// as the Zynq UltraScale+ fpga_manager loads it (from a .bit, or a .bin
	// of either byte order). Empty for formats without it (.rbf, .sof).
	Bin []byte
	// Raw is the configuration data in the .bit's own byte order, without
	// the header: what JTAG loaders (openFPGALoader, xsdb) load from a .bin
	// as it is. Empty for formats without it.
	Raw []byte
}

// Programmer configures a board's FPGA with an image.
type Programmer interface {
	Program(ctx context.Context, img Image) error
	Name() string
}

// Power switches a board's supply.
type Power interface {
	Set(ctx context.Context, on bool) error
	Name() string
}

// Failure classes keep infrastructure trouble apart from bad input and from
// a design that does not meet its figures (docs/architecture.md, lessons from board farms).
type Class int

const (
	// ClassDesign: the hardware answered, and what it answered is wrong.
	ClassDesign Class = iota + 1
	// ClassSetup: configuration, bitstream or command-line input is wrong.
	ClassSetup
	// ClassInfra: a board, cable or tool did not answer.
	ClassInfra
)

func (c Class) String() string {
	switch c {
	case ClassDesign:
		return "design"
	case ClassSetup:
		return "setup"
	case ClassInfra:
		return "infrastructure"
	}
	return "unknown"
}

// Error carries a failure class, the board (or file) it concerns, and a hint
// saying what to do, around the underlying cause.
type Error struct {
	Class Class
	Board string // board name or file:line; may be empty
	Op    string // what was being done, e.g. "read32 0x0004"
	Hint  string // what the person at the bench should check
	Err   error
}

func (e *Error) Error() string {
	s := ""
	if e.Board != "" {
		s = e.Board + ": "
	}
	if e.Op != "" {
		s += e.Op + ": "
	}
	if e.Err != nil {
		s += e.Err.Error()
	}
	if e.Hint != "" {
		s += " (" + e.Hint + ")"
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// Infra wraps err as an infrastructure failure.
func Infra(board, op, hint string, err error) error {
	return &Error{Class: ClassInfra, Board: board, Op: op, Hint: hint, Err: err}
}

// Setup wraps err as a setup failure.
func Setup(board, op, hint string, err error) error {
	return &Error{Class: ClassSetup, Board: board, Op: op, Hint: hint, Err: err}
}

// Design wraps err as a design failure: the board answered, and what it
// answered is wrong (a register that refused an access it should take, a
// state that never came).
func Design(board, op, hint string, err error) error {
	return &Error{Class: ClassDesign, Board: board, Op: op, Hint: hint, Err: err}
}

// ClassOf returns the class of the first classified error in err's chain.
// A design that stalled (ErrStalled: the board kept answering, the state
// never came) is a design failure; otherwise a context deadline or a
// timeout counts as infrastructure: a board that does not answer in time is
// not a design verdict.
func ClassOf(err error) Class {
	if err == nil {
		return 0
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Class
	}
	if errors.Is(err, ErrStalled) {
		return ClassDesign
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrTimeout) {
		return ClassInfra
	}
	return ClassDesign
}

// ErrTimeout is returned (wrapped) by drivers when a device did not answer
// before the deadline.
var ErrTimeout = errors.New("timed out")

// ErrStalled is returned (wrapped) by a poll that ran out of time while the
// board answered every read: the bus is fine, the design never reached the
// state (a generator that never finishes, a FIFO that never drains). It is
// a design failure, not infrastructure. Use Stalled to make one.
var ErrStalled = errors.New("stalled: the board answered every poll but never reached the state")

// Stalled is the error of a poll whose context ended before cond held. A
// deadline that passed while the board kept answering is ErrStalled (a
// design failure); a cancelled run is reported as the cancellation.
func Stalled(ctx context.Context, what string) error {
	if err := ctx.Err(); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s: %w", what, err)
	}
	return fmt.Errorf("%s: %w", what, ErrStalled)
}

// Deadline returns ctx bounded by d when ctx has no earlier deadline. Every
// hardware step uses it so that nothing waits forever, whatever the caller did.
func Deadline(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= d {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}

// CheckAligned refuses addresses that are not 4-byte aligned.
func CheckAligned(addr uint64) error {
	if addr%4 != 0 {
		return fmt.Errorf("address 0x%x is not 4-byte aligned", addr)
	}
	return nil
}
