package uartbridge

import (
	"errors"

	"github.com/labrunner/labrunner/drivers"
)

// StatusError is a response STATUS other than OK. Compare with errors.Is
// against ErrBusError, ErrAlign, ...; the Bridge wraps it in a
// *drivers.Error that names the board and the operation.
type StatusError struct {
	Status Status
}

func (e *StatusError) Error() string {
	switch e.Status {
	case StatusBusError:
		return "device answered BUS_ERROR: address not decoded, or no design loaded"
	case StatusRefused:
		return "device answered REFUSED: the design's register refused the access (a push into a full FIFO, a pop it cannot serve)"
	case StatusAlign:
		return "device answered ALIGN: address not a multiple of 4"
	case StatusBadCount:
		return "device answered BAD_COUNT: word count refused"
	case StatusBadCmd:
		return "device answered BAD_CMD: command unknown"
	case StatusBusy:
		return "device answered BUSY: cannot execute now"
	case StatusReadOnly:
		return "device answered READ_ONLY: register is read-only"
	case StatusSequence:
		return "device answered SEQUENCE: a windowed request out of turn, or no window open"
	}
	return "device answered unknown " + e.Status.String()
}

// Is matches any *StatusError with the same status.
func (e *StatusError) Is(target error) bool {
	t, ok := target.(*StatusError)
	return ok && t.Status == e.Status
}

// Sentinels for errors.Is.
var (
	ErrBusError = &StatusError{Status: StatusBusError}
	ErrAlign    = &StatusError{Status: StatusAlign}
	ErrBadCount = &StatusError{Status: StatusBadCount}
	ErrBadCmd   = &StatusError{Status: StatusBadCmd}
	ErrBusy     = &StatusError{Status: StatusBusy}
	ErrReadOnly = &StatusError{Status: StatusReadOnly}
	ErrRefused  = &StatusError{Status: StatusRefused}
	ErrSequence = &StatusError{Status: StatusSequence}

	// ErrStale: only answers to other requests (wrong SEQ or CMD) arrived.
	ErrStale = errors.New("stale response")
	// ErrClosed: the Bridge was closed.
	ErrClosed = errors.New("bridge closed")
	// ErrProtocol: a well-formed answer that breaks the protocol (wrong
	// word count, wrong INFO magic or version).
	ErrProtocol = errors.New("protocol violation")
)

const (
	hintLine     = "check the bridge cable and baud rate"
	hintFirmware = "the bridge firmware does not follow docs/uart-bridge.md version 1"
)

// statusError classifies a final (not retried) status.
func statusError(board, op string, s Status) error {
	err := &StatusError{Status: s}
	switch s {
	case StatusBusError:
		return drivers.Setup(board, op, "is the design programmed, and is the address in its register map?", err)
	case StatusReadOnly:
		return drivers.Setup(board, op, "the register is read-only in the loaded design", err)
	case StatusRefused:
		// The address is decoded and the design answered: its state did
		// not allow the access. That is the design's verdict to take.
		return drivers.Design(board, op, "the design's state refused the access: read its status registers (FIFO levels, stall flags)", err)
	case StatusBusy:
		return drivers.Infra(board, op, "the device stayed busy (a design being programmed?): wait for programming to finish", err)
	}
	// ALIGN, BAD_COUNT, BAD_CMD: the host checked all three before sending,
	// so the device reads the protocol differently.
	return drivers.Infra(board, op, hintFirmware, err)
}
