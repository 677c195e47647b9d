package shoal_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/labrunner/labrunner/boards/emu"
	_ "github.com/labrunner/labrunner/boards/emu/designs" // the emulated shoal design (test only: the driver never imports the emulator)
	"github.com/labrunner/labrunner/boards/emu/emutest"
	"github.com/labrunner/labrunner/drivers"
	"github.com/labrunner/labrunner/drivers/regmap"
	"github.com/labrunner/labrunner/labconfig"
	ts "github.com/labrunner/labrunner/traffic/shoal"
)

// The rig is the prototype of Shoal §6.1 as docs/shoal.md cables it, on the
// in-process emulated rack: the driver sees only registers.

var (
	nicBoards = []string{"shoal-nic0", "shoal-nic1"}
	swBoards  = []string{"shoal-sw0", "shoal-sw1", "shoal-sw2", "shoal-sw3", "shoal-sw4", "shoal-sw5"}
)

// docCables is the cabling of docs/shoal.md.
func docCables() []ts.Cable {
	var c []ts.Cable
	for n := 0; n < 8; n++ {
		c = append(c, ts.Cable{A: ts.Cage{Board: nicBoards[n/4], Index: n % 4}, B: ts.Cage{Board: fmt.Sprintf("shoal-sw%d", n/2), Index: n % 2}, LatencyNS: 10})
	}
	for l := 0; l < 4; l++ {
		c = append(c, ts.Cable{A: ts.Cage{Board: fmt.Sprintf("shoal-sw%d", l), Index: 2}, B: ts.Cage{Board: "shoal-sw4", Index: l}, LatencyNS: 10})
		c = append(c, ts.Cable{A: ts.Cage{Board: fmt.Sprintf("shoal-sw%d", l), Index: 3}, B: ts.Cage{Board: "shoal-sw5", Index: l}, LatencyNS: 10})
	}
	return c
}

type rig struct {
	t    testing.TB
	ctx  context.Context
	rack *ts.Rack
	emu  *emu.Rack
}

func newRig(t testing.TB, cables []ts.Cable, faults ...labconfig.Fault) *rig {
	t.Helper()
	return newWrappedRig(t, cables, nil, faults...)
}

// newWrappedRig is newRig with wrap (when not nil) between the driver and
// each board's bus.
func newWrappedRig(t testing.TB, cables []ts.Cable, wrap func(board string, bus drivers.RegisterBus) drivers.RegisterBus, faults ...labconfig.Fault) *rig {
	t.Helper()
	spec := emutest.Rack{Name: "shoal-driver-test", Seed: 7, Faults: faults, Design: "shoal", Timeout: 2 * time.Minute}
	for _, b := range append(append([]string{}, nicBoards...), swBoards...) {
		spec.Boards = append(spec.Boards, emutest.Board{Name: b, Kind: "de5net", PPM: 20})
	}
	for _, c := range cables {
		spec.Cables = append(spec.Cables, emutest.Cable{A: fmt.Sprintf("%s:sfp%d", c.A.Board, c.A.Index),
			B: fmt.Sprintf("%s:sfp%d", c.B.Board, c.B.Index), LatencyNS: c.LatencyNS})
	}
	er := emutest.Start(t, spec)
	regs := map[string]*regmap.Regs{}
	for _, b := range er.Names {
		regs[b] = er.Regs(b)
		if wrap != nil {
			regs[b] = regmap.New(wrap(b, er.Bus(b)), regs[b].Manifest(), b)
		}
	}
	f, err := ts.NewFabric(nicBoards, 4, swBoards, 4, cables)
	if err != nil {
		t.Fatal(err)
	}
	rack, err := ts.NewRack(f, nicBoards, swBoards, regs)
	if err != nil {
		t.Fatal(err)
	}
	return &rig{t: t, ctx: er.Ctx, rack: rack, emu: er.Rack}
}

// up configures the cyclic schedule at the prototype's slot, synchronises
// and bootstraps.
func (g *rig) up(slotCycles int) {
	g.t.Helper()
	s, err := ts.Cyclic(g.rack.Fabric.N())
	if err != nil {
		g.t.Fatal(err)
	}
	if err := g.rack.Configure(g.ctx, ts.Setup{SlotCycles: slotCycles, GuardCycles: 1, Schedule: s}); err != nil {
		g.t.Fatalf("configure: %v", err)
	}
	if _, err := g.rack.Sync(g.ctx, 0); err != nil {
		g.t.Fatalf("sync: %v", err)
	}
	if err := g.rack.Boot(g.ctx); err != nil {
		g.t.Fatalf("boot: %v", err)
	}
	if err := g.rack.ClearCounters(g.ctx); err != nil {
		g.t.Fatal(err)
	}
}
