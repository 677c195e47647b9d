package exanet_test

import (
	"strings"
	"testing"
	"time"

	_ "github.com/labrunner/labrunner/boards/emu/designs" // the emulated exanet design (test only: the driver never imports the emulator)
	"github.com/labrunner/labrunner/boards/emu/emutest"
	tx "github.com/labrunner/labrunner/traffic/exanet"
)

func TestCoordWord(t *testing.T) {
	for _, c := range []tx.Coord{{0, 0, 0}, {1, 0, 0}, {3, 2, 1}, {255, 255, 255}} {
		if got := tx.CoordOf(c.Word()); got != c {
			t.Errorf("CoordOf(%s.Word()) = %s", c, got)
		}
	}
	if w := (tx.Coord{1, 2, 3}).Word(); w != 0x030201 {
		t.Errorf("Word of (1,2,3) = %#x, want X[7:0] Y[15:8] Z[23:16] = 0x030201", w)
	}
}

func TestDirectionTo(t *testing.T) {
	for _, c := range []struct {
		a, b tx.Coord
		want int
	}{
		{tx.Coord{0, 0, 0}, tx.Coord{1, 0, 0}, tx.DirXp},
		{tx.Coord{1, 0, 0}, tx.Coord{0, 0, 0}, tx.DirXm},
		{tx.Coord{0, 0, 0}, tx.Coord{0, 1, 0}, tx.DirYp},
		{tx.Coord{0, 1, 0}, tx.Coord{0, 0, 0}, tx.DirYm},
		{tx.Coord{0, 0, 0}, tx.Coord{0, 0, 1}, tx.DirZp},
		{tx.Coord{0, 0, 1}, tx.Coord{0, 0, 0}, tx.DirZm},
	} {
		if got, err := tx.DirectionTo(c.a, c.b); err != nil || got != c.want {
			t.Errorf("DirectionTo(%s, %s) = %d, %v; want %d", c.a, c.b, got, err, c.want)
		}
	}
	for _, c := range []struct {
		a, b tx.Coord
		msg  string
	}{
		{tx.Coord{0, 0, 0}, tx.Coord{1, 1, 0}, "more than one dimension"},
		{tx.Coord{0, 0, 0}, tx.Coord{0, 0, 0}, "to itself"},
		{tx.Coord{0, 0, 0}, tx.Coord{2, 0, 0}, "2 apart"},
	} {
		if _, err := tx.DirectionTo(c.a, c.b); err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("DirectionTo(%s, %s): %v, want an error saying %q", c.a, c.b, err, c.msg)
		}
	}
}

func TestOrderWord(t *testing.T) {
	for order, want := range map[string]uint32{"XYZ": 0 | 1<<2 | 2<<4, "zyx": 2 | 1<<2 | 0<<4, "YXZ": 1 | 0<<2 | 2<<4} {
		if got, err := tx.OrderWord(order); err != nil || got != want {
			t.Errorf("OrderWord(%q) = %#x, %v; want %#x", order, got, err, want)
		}
	}
	for _, bad := range []string{"", "XY", "XYZW", "XXZ", "XYQ"} {
		if _, err := tx.OrderWord(bad); err == nil {
			t.Errorf("OrderWord(%q) accepted", bad)
		}
	}
}

func TestHeaderRoundTrip(t *testing.T) {
	h := tx.Header{Dest: tx.Coord{1, 1, 0}, DestPort: 2, Src: tx.Coord{0, 1, 0}, SrcPort: 1, Length: 512, Type: 3, Trace: true, Tag: 0xdeadbeef}
	if got := tx.ParseHeader(h.Words()); got != h {
		t.Errorf("ParseHeader(Words(%+v)) = %+v", h, got)
	}
}

// FuzzParseHeader: any four words decode without panicking, and the fields
// a header's Words encode come back from them unchanged.
func FuzzParseHeader(f *testing.F) {
	f.Add(uint32(0x02010100), uint32(0x01000100), uint32(0x13200), uint32(7))
	f.Add(^uint32(0), ^uint32(0), ^uint32(0), ^uint32(0))
	f.Fuzz(func(t *testing.T, a, b, c, d uint32) {
		h := tx.ParseHeader([4]uint32{a, b, c, d})
		h.CRCErr, h.ECCFixed = false, false // status bits the receiver sets, never sent
		if got := tx.ParseHeader(h.Words()); got != h {
			t.Errorf("ParseHeader(Words(%+v)) = %+v", h, got)
		}
	})
}

// The driver against two emulated boards cabled X+ to X-: configuration
// read back, a traffic-generator run counted by the far consumer, and a
// ping-pong that comes back.
func TestDriverOnTwoBoards(t *testing.T) {
	g := emutest.Start(t, emutest.Rack{Name: "exanet-driver", Seed: 3, Design: "exanet", Timeout: 2 * time.Minute,
		Boards: []emutest.Board{{Name: "a", Kind: "tebf0808"}, {Name: "b", Kind: "tebf0808", PPM: 20}},
		Cables: []emutest.Cable{{A: "a:sfp0", B: "b:sfp0", LatencyNS: 5}}})
	ctx := g.Ctx
	a, b := g.Regs("a"), g.Regs("b")
	lattice := tx.Coord{2, 1, 1}
	for _, n := range []struct {
		name string
		cfg  tx.Config
	}{
		{"a", tx.Config{Coord: tx.Coord{0, 0, 0}, Lattice: lattice, Order: "XYZ", LinkDir: [2]int{tx.DirXp, tx.DirNone}}},
		{"b", tx.Config{Coord: tx.Coord{1, 0, 0}, Lattice: lattice, Order: "XYZ", LinkDir: [2]int{tx.DirXm, tx.DirNone}}},
	} {
		if err := tx.Configure(ctx, g.Regs(n.name), n.cfg); err != nil {
			t.Fatalf("configure %s: %v", n.name, err)
		}
	}
	if err := tx.Configure(ctx, a, tx.Config{Order: "XXY"}); err == nil {
		t.Error("a bad dimension order was written")
	}
	if ls, err := tx.ReadLink(ctx, a, 0); err != nil || !ls.Up {
		t.Fatalf("link 0 of a: %+v, %v", ls, err)
	}
	if err := tx.ClearConsumer(ctx, b, true); err != nil {
		t.Fatal(err)
	}
	if err := tx.StartTG(ctx, a, tx.Generate{Payload: 0}); err == nil {
		t.Error("a 0-byte payload was started")
	}
	if err := tx.StartTG(ctx, a, tx.Generate{SrcPorts: 1, Dest: tx.Coord{1, 0, 0}, Payload: 256, Count: 50}); err != nil {
		t.Fatal(err)
	}
	st, err := tx.WaitTG(ctx, a)
	if err != nil || st&tx.TGDone == 0 {
		t.Fatalf("generator status %#x, %v", st, err)
	}
	p, err := tx.ReadPerf(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	if p.Packets != 50 || p.Bytes != 50*256 || p.CRCErrors != 0 || p.Misdelivered != 0 || p.Cycles == 0 {
		t.Errorf("far consumer counted %+v, want 50 packets of 256 B, no errors", p)
	}
	if err := b.Write(ctx, "PP_RESPONDER", 1); err != nil {
		t.Fatal(err)
	}
	pp, err := tx.RunPingPong(ctx, a, tx.Coord{1, 0, 0}, 0, 64, 10)
	if err != nil {
		t.Fatal(err)
	}
	if pp.Iterations != 10 || pp.TimedOut || pp.Min == 0 || len(pp.Samples) != 10 {
		t.Errorf("ping-pong: %+v", pp)
	}
}
