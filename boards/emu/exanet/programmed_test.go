package exanet

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/boards/emu"
	"github.com/labrunner/labrunner/drivers"
	"github.com/labrunner/labrunner/labconfig"
)

// TestProgrammedThroughEmulator takes the real path: two cabled boards are
// programmed with the catalogue's exanet bitstream through the emulated
// programmer, driven through their in-process register buses, and one is
// powered off and back on.
func TestProgrammedThroughEmulator(t *testing.T) {
	lab := &labconfig.Lab{Name: "prog", Seed: 5,
		Boards: []labconfig.Board{
			{Name: "a", Kind: "tebf0808", Emulated: &labconfig.Emulated{}},
			{Name: "b", Kind: "tebf0808", Emulated: &labconfig.Emulated{ClockPPM: 20}},
		},
		Links: []labconfig.Link{{A: labconfig.Endpoint{Board: "a", Port: "sfp0"}, B: labconfig.Endpoint{Board: "b", Port: "sfp0"}, LatencyNS: 5}},
	}
	r, err := emu.Start(lab, emu.Options{NoPTY: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cat := bitstreams.Default()
	program := func(name string) drivers.RegisterBus {
		b, _ := r.Board(name)
		img, err := cat.Image(DesignName, b.Kind().Part)
		if err != nil {
			t.Fatalf("catalogue image for %s: %v", name, err)
		}
		p, err := r.Programmer(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Program(ctx, img); err != nil {
			t.Fatalf("program %s: %v", name, err)
		}
		bus, err := r.Bus(name)
		if err != nil {
			t.Fatal(err)
		}
		return bus
	}
	rd := func(bus drivers.RegisterBus, reg string) uint32 {
		t.Helper()
		v, err := bus.Read32(ctx, uint64(regAddr(t, reg)))
		if err != nil {
			t.Fatalf("read %s: %v", reg, err)
		}
		return v
	}
	wr := func(bus drivers.RegisterBus, reg string, v uint32) {
		t.Helper()
		if err := bus.Write32(ctx, uint64(regAddr(t, reg)), v); err != nil {
			t.Fatalf("write %s: %v", reg, err)
		}
	}
	a, b := program("a"), program("b")
	if id := rd(a, "ID"); id != 0x45584E54 {
		t.Fatalf("ID = %#x", id)
	}
	for _, x := range []struct {
		bus   drivers.RegisterBus
		coord uint32
		dir   uint32
	}{{a, 0, dXp}, {b, 1, dXm}} {
		wr(x.bus, "COORD", x.coord)
		wr(x.bus, "LATTICE", coordWord(2, 1, 1))
		wr(x.bus, "LINK_DIR", x.dir)
	}
	if rd(a, "LINK_STATUS[0]")&1 == 0 || rd(b, "LINK_STATUS[0]")&1 == 0 {
		t.Fatal("link not up between two programmed boards")
	}
	wr(a, "TG_DEST", 1)
	wr(a, "TG_PAYLOAD", 256)
	wr(a, "TG_COUNT", 100)
	wr(a, "TG_CTRL", 1)
	if st := rd(a, "TG_STATUS"); st != 1 {
		t.Fatalf("TG_STATUS = %#x", st)
	}
	if got := rd(b, "CONS_PACKETS"); got != 100 {
		t.Errorf("b consumed %d of 100", got)
	}
	pw, _ := r.Power("b")
	if err := pw.Set(ctx, false); err != nil {
		t.Fatal(err)
	}
	if rd(a, "LINK_STATUS[0]")&1 != 0 {
		t.Error("b powered off, a still reports the link UP")
	}
	if _, err := b.Read32(ctx, 0); !errors.Is(err, emu.ErrBusy) {
		t.Errorf("read from a powered-off board: %v", err)
	}
	if err := pw.Set(ctx, true); err != nil {
		t.Fatal(err)
	}
	b = program("b")
	if rd(b, "COORD") != 0 || rd(b, "CONS_PACKETS") != 0 {
		t.Error("reprogrammed board did not start from reset")
	}
	if rd(a, "LINK_STATUS[0]")&1 == 0 || rd(a, "CREDITS[0]") != linkPayload {
		t.Errorf("after b came back: LINK_STATUS %#x, CREDITS %d", rd(a, "LINK_STATUS[0]"), rd(a, "CREDITS[0]"))
	}
}
