package pmos

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/labrunner/labrunner/drivers"
)

// RemoteBus is a board's register bus over the management network
// (mgmt.md §1): every access is a REG_REQ to the board, a burst packs up to
// 25 operations into one. Wrap it with regmap.New for symbolic names (§4.3:
// "symbolic names of the chip registers"), with the mgmt manifest for the
// management block and with the design's for the design.
type RemoteBus struct {
	c     *Client
	board string
	mu    sync.Mutex
	path  Path
}

// Bus returns the register bus of a board reached along path.
func (c *Client) Bus(board string, path Path) *RemoteBus {
	return &RemoteBus{c: c, board: board, path: path}
}

// Board names the board.
func (r *RemoteBus) Board() string { return r.board }

// Path is how the board is reached now.
func (r *RemoteBus) Path() Path {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.path
}

// SetPath changes how the board is reached (it got an address and routes,
// its proxy died and another neighbour took over).
func (r *RemoteBus) SetPath(p Path) {
	r.mu.Lock()
	r.path = p
	r.mu.Unlock()
}

// StatusError is a REG_RESP status other than OK.
type StatusError struct {
	Status RegStatus
	Addr   uint32
	Op     uint8
}

func (e *StatusError) Error() string {
	op := "read"
	if e.Op == OpWrite {
		op = "write"
	}
	return fmt.Sprintf("%s 0x%08x answered %s", op, e.Addr, e.Status)
}

// Do executes up to 25 operations in one REG_REQ and returns the results;
// the first failed operation is an error (the ones after it were not
// executed), classified like the UART bridge's statuses.
func (r *RemoteBus) Do(ctx context.Context, ops []RegOp) ([]RegResult, error) {
	path := r.Path()
	rs, err := r.c.Registers(ctx, path, ops)
	if err != nil {
		var na *NoAnswerError
		var re *ReplyError
		switch {
		case errors.As(err, &na):
			return nil, drivers.Infra(r.board, "remote register access", "the board or a proxy on its path stopped answering over the management network", err)
		case errors.As(err, &re):
			return nil, drivers.Infra(r.board, "remote register access", "the management network could not deliver the request", err)
		}
		return nil, err
	}
	for i, res := range rs {
		if res.Status == RegOK {
			continue
		}
		se := &StatusError{Status: res.Status, Addr: ops[i].Addr, Op: ops[i].Op}
		op := fmt.Sprintf("remote %d of %d operations", i+1, len(ops))
		switch res.Status {
		case RegBusError:
			return rs, drivers.Setup(r.board, op, "is the design programmed, and is the address in its register map?", se)
		case RegReadOnly:
			return rs, drivers.Setup(r.board, op, "the register is read-only", se)
		case RegBusy:
			return rs, drivers.Infra(r.board, op, "the board is busy: firmware booting or rebooting, or a design being programmed", se)
		}
		return rs, drivers.Infra(r.board, op, "the firmware reads docs/pmos.md §5.5 differently", se)
	}
	return rs, nil
}

func addr32(board string, addr uint64, words int) (uint32, error) {
	if addr%4 != 0 {
		return 0, drivers.Setup(board, "remote access", "", fmt.Errorf("address 0x%x is not 4-byte aligned", addr))
	}
	if addr+uint64(4*words) > 1<<32 {
		return 0, drivers.Setup(board, "remote access", "", fmt.Errorf("address 0x%x beyond the 32-bit space a REG_REQ reaches", addr))
	}
	return uint32(addr), nil
}

// Read32 implements drivers.RegisterBus.
func (r *RemoteBus) Read32(ctx context.Context, addr uint64) (uint32, error) {
	a, err := addr32(r.board, addr, 1)
	if err != nil {
		return 0, err
	}
	rs, err := r.Do(ctx, []RegOp{{Op: OpRead, Addr: a}})
	if err != nil {
		return 0, err
	}
	return rs[0].Value, nil
}

// Write32 implements drivers.RegisterBus.
func (r *RemoteBus) Write32(ctx context.Context, addr uint64, v uint32) error {
	a, err := addr32(r.board, addr, 1)
	if err != nil {
		return err
	}
	_, err = r.Do(ctx, []RegOp{{Op: OpWrite, Addr: a, Value: v}})
	return err
}

// ReadBurst implements drivers.RegisterBus, 25 words per REG_REQ.
func (r *RemoteBus) ReadBurst(ctx context.Context, addr uint64, dst []uint32) error {
	a, err := addr32(r.board, addr, len(dst))
	if err != nil {
		return err
	}
	for i := 0; i < len(dst); i += MaxRegOps {
		n := min(MaxRegOps, len(dst)-i)
		ops := make([]RegOp, n)
		for k := range ops {
			ops[k] = RegOp{Op: OpRead, Addr: a + uint32(4*(i+k))}
		}
		rs, err := r.Do(ctx, ops)
		if err != nil {
			return err
		}
		for k := range rs {
			dst[i+k] = rs[k].Value
		}
	}
	return nil
}

// WriteBurst implements drivers.RegisterBus, 25 words per REG_REQ.
func (r *RemoteBus) WriteBurst(ctx context.Context, addr uint64, src []uint32) error {
	a, err := addr32(r.board, addr, len(src))
	if err != nil {
		return err
	}
	for i := 0; i < len(src); i += MaxRegOps {
		n := min(MaxRegOps, len(src)-i)
		ops := make([]RegOp, n)
		for k := range ops {
			ops[k] = RegOp{Op: OpWrite, Addr: a + uint32(4*(i+k)), Value: src[i+k]}
		}
		if _, err := r.Do(ctx, ops); err != nil {
			return err
		}
	}
	return nil
}

// Close implements drivers.RegisterBus; the client stays open.
func (r *RemoteBus) Close() error { return nil }
