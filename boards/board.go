package boards

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/labrunner/labrunner/drivers"
	"github.com/labrunner/labrunner/drivers/console"
	"github.com/labrunner/labrunner/drivers/mmio"
	"github.com/labrunner/labrunner/drivers/uartbridge"
	"github.com/labrunner/labrunner/labconfig"
)

// Board is a lab file's board with its drivers opened.
type Board struct {
	Name       string
	Kind       Kind
	Config     labconfig.Board
	Bus        drivers.RegisterBus
	Console    drivers.Console // nil when the board has no console
	Programmer drivers.Programmer
	Power      drivers.Power
	// BridgeStats reports the UART bridge's counters, when the bus is one.
	BridgeStats func() uartbridge.Stats
	// Ping checks that the register bus answers without touching the
	// design (nil when the bus has no such check: an MMIO read of an
	// unprogrammed fabric can hang the AXI bus, so it is never tried).
	Ping func(ctx context.Context) error

	onClose []func()
}

// OnClose registers f to run when the board is closed (a transcript file
// the board's console writes to, say).
func (b *Board) OnClose(f func()) { b.onClose = append(b.onClose, f) }

// Emulator gives access to emulated boards without this package importing
// the emulator (boards/emu imports boards for the kinds). *emu.Rack
// implements it.
type Emulator interface {
	ConsolePath(board string) (string, error)
	BridgePath(board string) (string, error)
	Bus(board string) (drivers.RegisterBus, error)
	Programmer(board string) (drivers.Programmer, error)
	Power(board string) (drivers.Power, error)
}

// Options for Open.
type Options struct {
	// Emulator serves the boards marked `emulated:`; required for them.
	Emulator Emulator
	// Transcript receives the console's traffic (the run directory's
	// consoles/<board>.log); nil keeps none.
	Transcript io.Writer
	Log        *slog.Logger
	// RegisterTimeout is the per-request deadline of the UART bridge.
	RegisterTimeout time.Duration
	// NoConsole skips opening the console.
	NoConsole bool
	// NoBus skips opening the register bus (a command that only programs
	// the board, or only talks to its console, must not fail on a bridge
	// that is unplugged).
	NoBus bool
}

// Open opens a board's drivers as its lab entry says. On error nothing stays
// open, and the error is the failing driver's own, with its class: a device
// that is not there (a USB-UART unplugged, no /dev/uio0, no GPIO line) is
// infrastructure, a lab entry that cannot work is setup.
func Open(ctx context.Context, cfg labconfig.Board, opts Options) (*Board, error) {
	kind, err := Lookup(cfg.Kind)
	if err != nil {
		return nil, drivers.Setup(cfg.Name, "open", "fix `kind:` at "+cfg.Pos.String(), err)
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	b := &Board{Name: cfg.Name, Kind: kind, Config: cfg}
	if err := b.open(ctx, kind, opts); err != nil {
		// b holds only what opened: each driver is stored once it opened,
		// never a nil pointer in an interface.
		b.Close()
		return nil, err
	}
	return b, nil
}

func (b *Board) open(ctx context.Context, kind Kind, opts Options) error {
	cfg := b.Config
	emulated := cfg.Emulated != nil
	if emulated && opts.Emulator == nil {
		return drivers.Setup(cfg.Name, "open", "", errors.New("the board is emulated but no emulated rack is running"))
	}
	if err := ctx.Err(); err != nil {
		return drivers.Infra(cfg.Name, "open", "", err)
	}
	port := func(s *labconfig.Serial, pathOf func(string) (string, error)) (string, error) {
		if s.Port == "emu" {
			if !emulated {
				return "", drivers.Setup(cfg.Name, "open", "`port: emu` is for emulated boards; give the device path", fmt.Errorf("%s: port emu on a real board", s.Pos))
			}
			return pathOf(cfg.Name)
		}
		return s.Port, nil
	}

	switch {
	case opts.NoBus:
	case cfg.Bus.Emulated != nil:
		if !emulated {
			return drivers.Setup(cfg.Name, "open bus", "use mmio or uart_bridge, or add an emulated: block to the board", fmt.Errorf("%s: the emulated bus on a real board", cfg.Bus.Pos))
		}
		bus, err := opts.Emulator.Bus(cfg.Name)
		if err != nil {
			return drivers.Setup(cfg.Name, "open bus", "", err)
		}
		b.Bus = bus
		b.Ping = func(ctx context.Context) error {
			// Any answer, a bus error included, proves the board alive.
			_, err := bus.Read32(ctx, 0)
			if err != nil && drivers.ClassOf(err) == drivers.ClassInfra {
				return err
			}
			return nil
		}
	case cfg.Bus.UARTBridge != nil:
		path, err := port(cfg.Bus.UARTBridge, func(n string) (string, error) { return opts.Emulator.BridgePath(n) })
		if err != nil {
			return err
		}
		timeout := opts.RegisterTimeout
		if emulated && timeout < time.Second {
			// An emulated board simulates a whole transfer inside the
			// register write that starts it, which takes wall time a real
			// board's register access never does: give each attempt longer.
			timeout = time.Second
		}
		br, err := uartbridge.Open(path, cfg.Bus.UARTBridge.Baud, uartbridge.Options{
			Board: cfg.Name, Timeout: timeout, Logger: opts.Log,
			Pacing: time.Duration(cfg.Bus.UARTBridge.PacingUS) * time.Microsecond,
		})
		if err != nil {
			return err
		}
		b.Bus = br
		b.BridgeStats = br.Stats
		b.Ping = func(ctx context.Context) error {
			_, err := br.Info(ctx)
			return err
		}
	case cfg.Bus.MMIO != nil:
		mm := cfg.Bus.MMIO
		bus, err := mmio.Open(mm.Device, mm.Base, mm.Size, mmio.Options{Board: cfg.Name})
		if err != nil {
			return err
		}
		b.Bus = bus
	default:
		return drivers.Setup(cfg.Name, "open", "give one of mmio, uart_bridge, emulated under bus:", fmt.Errorf("%s: no register bus", cfg.Pos))
	}

	if cfg.Console != nil && !opts.NoConsole {
		path, err := port(cfg.Console, func(n string) (string, error) { return opts.Emulator.ConsolePath(n) })
		if err != nil {
			return err
		}
		c, err := console.Open(path, cfg.Console.Baud, console.Options{
			Board: cfg.Name, Transcript: opts.Transcript,
			Pacing: time.Duration(cfg.Console.PacingUS) * time.Microsecond,
		})
		if err != nil {
			return err
		}
		b.Console = c
	}

	if cfg.Programmer.Type == "none" {
		b.Programmer = fixedDesign{board: cfg.Name}
	} else if cfg.Programmer.Type == "emulated" {
		if !emulated {
			return drivers.Setup(cfg.Name, "open", "", fmt.Errorf("%s: programmer emulated on a real board", cfg.Programmer.Pos))
		}
		p, err := opts.Emulator.Programmer(cfg.Name)
		if err != nil {
			return err
		}
		b.Programmer = p
	} else {
		p, err := Programmer(cfg.Name, cfg.Programmer, kind.Vendor)
		if err != nil {
			return err
		}
		b.Programmer = p
	}

	if emulated && (cfg.Power.Type == "" || cfg.Power.Type == "none" || cfg.Power.Type == "emulated") {
		p, err := opts.Emulator.Power(cfg.Name)
		if err != nil {
			return err
		}
		b.Power = p
		return nil
	}
	p, err := Power(cfg.Name, cfg.Power)
	if err != nil {
		return err
	}
	b.Power = p
	return nil
}

// Close closes the board's drivers.
func (b *Board) Close() error {
	var errs []error
	if b.Bus != nil {
		errs = append(errs, b.Bus.Close())
	}
	if b.Console != nil {
		errs = append(errs, b.Console.Close())
	}
	for _, f := range b.onClose {
		f()
	}
	b.onClose = nil
	return errors.Join(errs...)
}

// String names the board and its kind.
func (b *Board) String() string {
	if b.Kind.Part == "" {
		return b.Name + " (" + strings.ToUpper(b.Kind.Name) + ")"
	}
	return b.Name + " (" + strings.ToUpper(b.Kind.Name) + ", " + b.Kind.Part + ")"
}

// fixedDesign is the programmer of a board whose design cannot be changed
// (programmer type none: the Verilator co-simulation of rtl/, whose design
// is built into the simulator). Programming it is refused, not faked.
type fixedDesign struct{ board string }

func (fixedDesign) Name() string { return "none" }

func (p fixedDesign) Program(ctx context.Context, img drivers.Image) error {
	return drivers.Setup(p.board, "program "+img.Design,
		"the board's design is fixed (programmer: none); run register commands without --program, or give the board a real programmer in the lab file",
		errors.New("the board has no programmer"))
}
