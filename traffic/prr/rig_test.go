package prr_test

import (
	"context"
	"testing"
	"time"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/boards"
	_ "github.com/labrunner/labrunner/boards/emu/designs" // the emulated prr design
	"github.com/labrunner/labrunner/boards/emu/emutest"
	"github.com/labrunner/labrunner/drivers"
	"github.com/labrunner/labrunner/drivers/regmap"
	"github.com/labrunner/labrunner/labconfig"
	tp "github.com/labrunner/labrunner/traffic/prr"
)

// The driver is tested against the emulated Ultra96 as a fixture, over the
// same UART bridge on a pseudo-terminal a lab run uses (or the in-process
// bus, where the test is about the registers and not the line). The driver
// itself never imports the emulator.

type rigOpts struct {
	uart   bool
	faults []labconfig.Fault
	// wrap, when set, stands between the driver and the board's bus (a
	// test's way to show what no emulated fault does).
	wrap func(drivers.RegisterBus) drivers.RegisterBus
}

func newRig(t testing.TB, o rigOpts) (*tp.Switch, context.Context) {
	t.Helper()
	cat := bitstreams.Default()
	spec := emutest.Rack{Name: "traffic-prr-test", Seed: 7, Catalogue: cat, PTY: o.uart, Timeout: 2 * time.Minute,
		Boards: []emutest.Board{{Name: "u96", Kind: "ultra96"}}}
	for _, f := range o.faults {
		f.Board = "u96"
		spec.Faults = append(spec.Faults, f)
	}
	// The board is opened and programmed the way a lab run does it, over
	// the UART bridge when the test is about the line.
	b := spec.Lab().Boards[0]
	if o.uart {
		b.Bus = labconfig.Bus{UARTBridge: &labconfig.Serial{Port: "emu", Baud: 921600}}
	}
	er := emutest.Start(t, spec)
	rack, ctx := er.Rack, er.Ctx
	board, err := boards.Open(ctx, b, boards.Options{Emulator: rack, NoConsole: true})
	if err != nil {
		t.Fatalf("open board: %v", err)
	}
	t.Cleanup(func() { board.Close() })
	img, err := cat.Image(tp.Design, board.Kind.Part)
	if err != nil {
		t.Fatal(err)
	}
	if err := board.Programmer.Program(ctx, img); err != nil {
		t.Fatalf("program: %v", err)
	}
	m, err := cat.Design(tp.Design)
	if err != nil {
		t.Fatal(err)
	}
	bus := board.Bus
	if o.wrap != nil {
		bus = o.wrap(bus)
	}
	sw, err := tp.Open(ctx, regmap.New(bus, m, board.Name))
	if err != nil {
		t.Fatalf("open switch: %v", err)
	}
	return sw, ctx
}
