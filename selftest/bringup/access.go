package bringup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/labrunner/labrunner/boards"
	"github.com/labrunner/labrunner/drivers"
	"github.com/labrunner/labrunner/drivers/console"
	"github.com/labrunner/labrunner/drivers/pmos"
	"github.com/labrunner/labrunner/drivers/regmap"
	"github.com/labrunner/labrunner/internal/syncbuf"
)

// gate lets one timing-critical section (the TimeSync convergence
// measurement) run with no other access of the runner between its own: on
// the emulated rack every access moves the one management clock by 50 µs
// (mgmt.md §2), so an access of another goroutine in the middle would shift
// its time stamps. Every other access takes the gate shared.
type gate struct{ mu sync.RWMutex }

type gatedBus struct {
	g *gate
	b drivers.RegisterBus
}

func (x *gatedBus) Read32(ctx context.Context, addr uint64) (uint32, error) {
	x.g.mu.RLock()
	defer x.g.mu.RUnlock()
	return x.b.Read32(ctx, addr)
}

func (x *gatedBus) Write32(ctx context.Context, addr uint64, v uint32) error {
	x.g.mu.RLock()
	defer x.g.mu.RUnlock()
	return x.b.Write32(ctx, addr, v)
}

func (x *gatedBus) ReadBurst(ctx context.Context, addr uint64, dst []uint32) error {
	x.g.mu.RLock()
	defer x.g.mu.RUnlock()
	return x.b.ReadBurst(ctx, addr, dst)
}

func (x *gatedBus) WriteBurst(ctx context.Context, addr uint64, src []uint32) error {
	x.g.mu.RLock()
	defer x.g.mu.RUnlock()
	return x.b.WriteBurst(ctx, addr, src)
}

// Batch runs accesses in order as the board's bus runs a batch (through
// its window on a UART bridge: one round trip for all of them), holding
// the gate shared for the whole batch, as every access does.
func (x *gatedBus) Batch(ctx context.Context, acc []drivers.Access) error {
	x.g.mu.RLock()
	defer x.g.mu.RUnlock()
	return drivers.RunBatch(ctx, x.b, acc)
}

var _ drivers.Batcher = (*gatedBus)(nil)

func (x *gatedBus) Close() error { return nil }

// node is a board during the run: its drivers, how its registers are
// reached now, what each stage found, and the runner's intent for it.
type node struct {
	*Board
	open *boards.Board // drivers opened from the lab file (nil if none could be)
	// direct is the board's own register bus (DCN boards), gated.
	direct drivers.RegisterBus
	raw    drivers.RegisterBus // the same, ungated (for the gate's holder)
	// remote reaches an in-band board over the management network once
	// the bootstrap has reached it.
	remote *pmos.RemoteBus

	// borrowed: open is the caller's (Options.Opened), not closed here.
	borrowed bool

	mu      sync.Mutex
	results [numStages]*StageResult
	intent  intent
	boot    bootInfo
	ts      tsInfo
	notes   []string
	// suspect: a request to the board went unanswered once: check its
	// firmware's boots and reconcile.
	suspect bool
}

// bus is how the board's registers are reached now (nil: not yet).
func (n *node) bus() drivers.RegisterBus {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.direct != nil {
		return n.direct
	}
	if n.remote != nil {
		return n.remote
	}
	return nil
}

// reachable says whether the runner can read the board's registers now.
func (n *node) reachable() bool { return n.bus() != nil }

// mg is the board's management block by name; dg its design's registers.
func (n *node) mg(r *run) (*regmap.Regs, error) {
	b := n.bus()
	if b == nil {
		return nil, fmt.Errorf("%s is not reachable yet (in-band boards are reached after their bootstrap)", n.Name)
	}
	return regmap.New(b, r.mgmt, n.Name), nil
}

func (n *node) dg() (*regmap.Regs, error) {
	b := n.bus()
	if b == nil {
		return nil, fmt.Errorf("%s is not reachable yet", n.Name)
	}
	if n.Design == nil {
		return nil, fmt.Errorf("%s runs no design (it is in no plan)", n.Name)
	}
	return regmap.New(b, n.Design, n.Name), nil
}

func (n *node) note(format string, a ...any) {
	n.mu.Lock()
	n.notes = append(n.notes, fmt.Sprintf(format, a...))
	n.mu.Unlock()
}

func (n *node) result(s Stage) *StageResult {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.results[s]
}

func (n *node) setResult(r *StageResult) {
	n.mu.Lock()
	n.results[r.Stage] = r
	n.mu.Unlock()
}

// failedBefore returns the first stage before s that failed (or was
// blocked), if any.
func (n *node) failedBefore(s Stage) *StageResult {
	n.mu.Lock()
	defer n.mu.Unlock()
	for i := Stage(0); i < s; i++ {
		if r := n.results[i]; r != nil && (r.Status == Failed || r.Status == Blocked) {
			return r
		}
	}
	return nil
}

// openBoard opens a board's drivers. A DCN board is opened whole
// (boards.Open: its bus is required). An in-band board has no bus the
// runner reaches: only its programmer, power switch and console (when the
// lab file gives them) are opened, and its registers come later over the
// management network.
func (r *run) openBoard(ctx context.Context, n *node) error {
	var tr io.Writer
	var f io.WriteCloser
	if r.opts.Transcripts != nil && n.Cfg.Console != nil {
		if w, err := r.opts.Transcripts(n.Name); err == nil {
			f, tr = w, &syncbuf.Writer{W: w}
		}
	}
	closeF := func() {
		if f != nil {
			f.Close()
		}
	}
	log := r.log.With("board", n.Name)
	if n.DCN {
		b, err := boards.Open(ctx, n.Cfg, boards.Options{Emulator: r.opts.Emulator, Transcript: tr, Log: log})
		if err != nil {
			closeF()
			return err
		}
		if f != nil {
			b.OnClose(closeF)
		}
		n.open = b
		n.raw = b.Bus
		n.direct = &gatedBus{g: r.gate, b: b.Bus}
		return nil
	}
	b := &boards.Board{Name: n.Name, Kind: n.Kind, Config: n.Cfg}
	emulated := n.Cfg.Emulated != nil
	if emulated && r.opts.Emulator == nil {
		closeF()
		return drivers.Setup(n.Name, "open", "", errors.New("the board is emulated but no emulated rack is running"))
	}
	var err error
	switch {
	case n.Cfg.Programmer.Type == "emulated" && emulated:
		b.Programmer, err = r.opts.Emulator.Programmer(n.Name)
	case n.Cfg.Programmer.Type != "" && n.Cfg.Programmer.Type != "emulated":
		b.Programmer, err = boards.Programmer(n.Name, n.Cfg.Programmer, n.Kind.Vendor)
	}
	if err != nil {
		closeF()
		return err
	}
	if emulated && (n.Cfg.Power.Type == "" || n.Cfg.Power.Type == "none") {
		b.Power, err = r.opts.Emulator.Power(n.Name)
	} else {
		b.Power, err = boards.Power(n.Name, n.Cfg.Power)
	}
	if err != nil {
		closeF()
		return err
	}
	if c := n.Cfg.Console; c != nil {
		path := c.Port
		if path == "emu" {
			if !emulated {
				closeF()
				return drivers.Setup(n.Name, "open console", "`port: emu` is for emulated boards", fmt.Errorf("%s: port emu on a real board", c.Pos))
			}
			if path, err = r.opts.Emulator.ConsolePath(n.Name); err != nil {
				closeF()
				return err
			}
		}
		con, err := console.Open(path, c.Baud, console.Options{Board: n.Name, Transcript: tr, Pacing: time.Duration(c.PacingUS) * time.Microsecond})
		if err != nil {
			// The console only helps a diagnosis: the bring-up goes on.
			log.Warn("console of an in-band board could not be opened", "err", err)
			closeF()
		} else {
			b.Console = con
			if f != nil {
				b.OnClose(closeF)
			}
		}
	} else {
		closeF()
	}
	n.open = b
	return nil
}

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
