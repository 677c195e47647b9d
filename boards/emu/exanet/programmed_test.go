package exanet

import (
	"errors"
	"testing"

	"github.com/labrunner/labrunner/boards/emu"
	"github.com/labrunner/labrunner/boards/emu/emutest"
)

// TestProgrammedThroughEmulator takes the real path: two cabled boards are
// programmed with the catalogue's exanet bitstream through the emulated
// programmer (emutest), driven through their in-process register buses,
// and one is powered off and back on.
func TestProgrammedThroughEmulator(t *testing.T) {
	g := emutest.Start(t, emutest.Rack{Name: "prog", Seed: 5, Design: DesignName,
		Boards: []emutest.Board{{Name: "a", Kind: "tebf0808"}, {Name: "b", Kind: "tebf0808", PPM: 20}},
		Cables: []emutest.Cable{{A: "a:sfp0", B: "b:sfp0", LatencyNS: 5}}})
	ctx := g.Ctx
	rd := func(board, reg string) uint32 { t.Helper(); return g.ReadAddr(board, uint64(regAddr(t, reg))) }
	wr := func(board, reg string, v uint32) { t.Helper(); g.WriteAddr(board, uint64(regAddr(t, reg)), v) }
	if id := rd("a", "ID"); id != 0x45584E54 {
		t.Fatalf("ID = %#x", id)
	}
	for _, x := range []struct {
		board string
		coord uint32
		dir   uint32
	}{{"a", 0, dXp}, {"b", 1, dXm}} {
		wr(x.board, "COORD", x.coord)
		wr(x.board, "LATTICE", coordWord(2, 1, 1))
		wr(x.board, "LINK_DIR", x.dir)
	}
	if rd("a", "LINK_STATUS[0]")&1 == 0 || rd("b", "LINK_STATUS[0]")&1 == 0 {
		t.Fatal("link not up between two programmed boards")
	}
	wr("a", "TG_DEST", 1)
	wr("a", "TG_PAYLOAD", 256)
	wr("a", "TG_COUNT", 100)
	wr("a", "TG_CTRL", 1)
	if st := rd("a", "TG_STATUS"); st != 1 {
		t.Fatalf("TG_STATUS = %#x", st)
	}
	if got := rd("b", "CONS_PACKETS"); got != 100 {
		t.Errorf("b consumed %d of 100", got)
	}
	pw, _ := g.Rack.Power("b")
	if err := pw.Set(ctx, false); err != nil {
		t.Fatal(err)
	}
	if rd("a", "LINK_STATUS[0]")&1 != 0 {
		t.Error("b powered off, a still reports the link UP")
	}
	if _, err := g.Bus("b").Read32(ctx, 0); !errors.Is(err, emu.ErrBusy) {
		t.Errorf("read from a powered-off board: %v", err)
	}
	if err := pw.Set(ctx, true); err != nil {
		t.Fatal(err)
	}
	g.Program("b", DesignName)
	if rd("b", "COORD") != 0 || rd("b", "CONS_PACKETS") != 0 {
		t.Error("reprogrammed board did not start from reset")
	}
	if rd("a", "LINK_STATUS[0]")&1 == 0 || rd("a", "CREDITS[0]") != linkPayload {
		t.Errorf("after b came back: LINK_STATUS %#x, CREDITS %d", rd("a", "LINK_STATUS[0]"), rd("a", "CREDITS[0]"))
	}
}
