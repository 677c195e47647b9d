package emutest_test

import (
	"slices"
	"testing"

	_ "github.com/labrunner/labrunner/boards/emu/designs" // the emulated designs
	"github.com/labrunner/labrunner/boards/emu/emutest"
	"github.com/labrunner/labrunner/labconfig"
)

// A one-board rack programmed with prr answers by name: identity, scratch,
// sums and writes over every board, bursts, the register map through
// regmap. (Read64 and Pop are exercised by the design packages' tests.)
func TestProgrammedRack(t *testing.T) {
	g := emutest.Start(t, emutest.Rack{Design: "prr", Boards: []emutest.Board{{Name: "u96", Kind: "ultra96"}}})
	if !slices.Equal(g.Names, []string{"u96"}) {
		t.Fatalf("Names %v", g.Names)
	}
	if id := g.Read("u96", "ID"); id != g.M.ID {
		t.Errorf("ID %#x, the manifest says %#x", id, g.M.ID)
	}
	g.WriteAll("SCRATCH", 0xA5A5F00D)
	if v := g.Read("u96", "SCRATCH"); v != 0xA5A5F00D {
		t.Errorf("SCRATCH %#x after WriteAll", v)
	}
	if s := g.Sum("SCRATCH"); s != 0xA5A5F00D {
		t.Errorf("Sum %#x", s)
	}
	g.WriteAddr("u96", g.Addr("SCRATCH"), 7)
	if v := g.ReadAddr("u96", g.Addr("SCRATCH")); v != 7 {
		t.Errorf("SCRATCH %d by address", v)
	}
	if words := g.Burst("u96", 0, 2); words[0] != g.M.ID || words[1] != g.M.VersionWord {
		t.Errorf("burst from 0: %#x %#x", words[0], words[1])
	}
	// The queue contents of an empty switch, in more than one burst.
	if words := g.Burst("u96", g.Addr("QTAGS"), 600); len(words) != 600 || slices.ContainsFunc(words, func(w uint32) bool { return w != 0 }) {
		t.Errorf("QTAGS of an empty switch: %d words, not all 0", len(words))
	}
	if v, err := g.Regs("u96").Read(g.Ctx, "VERSION"); err != nil || v != g.M.VersionWord {
		t.Errorf("regmap VERSION %#x, %v", v, err)
	}
}

// The lab a rack stands for: defaults filled, cables and boards as given.
func TestLab(t *testing.T) {
	lab := emutest.Rack{
		Boards: []emutest.Board{{Name: "a", Kind: "zcu102", PPM: 5, OffsetNS: 100, BootMS: 20, DCN: true}, {Name: "b", Kind: "zcu102"}},
		Cables: []emutest.Cable{{A: "a:sfp1", B: "b:sfp0", LatencyNS: 5, AsymmetryNS: 1, BER: 1e-9}},
		Faults: []labconfig.Fault{emutest.Fault("link-down")},
	}.Lab()
	if lab.Name != "emutest" || lab.Seed != 1 || len(lab.Boards) != 2 || len(lab.Links) != 1 || len(lab.Faults) != 1 {
		t.Fatalf("lab %+v", lab)
	}
	a := lab.Boards[0]
	if !a.DCN || a.Emulated == nil || a.Emulated.ClockPPM != 5 || a.Emulated.OffsetNS != 100 || a.Emulated.BootMS != 20 ||
		a.Bus.Emulated == nil || a.Programmer.Type != "emulated" {
		t.Errorf("board a: %+v", a)
	}
	l := lab.Links[0]
	if l.A.Board != "a" || l.A.Port != "sfp1" || l.B.Board != "b" || l.B.Port != "sfp0" || l.LatencyNS != 5 || l.AsymmetryNS != 1 || l.BER != 1e-9 {
		t.Errorf("link %+v", l)
	}
}

// Without a design the boards stay unprogrammed; Unprogrammed keeps the
// manifest for a test that attaches the design itself.
func TestUnprogrammed(t *testing.T) {
	g := emutest.Start(t, emutest.Rack{Seed: 3, Boards: []emutest.Board{{Name: "b0", Kind: "zcu102"}}})
	if g.M != nil || g.Rack.Seed() != 3 {
		t.Errorf("manifest %v, seed %d", g.M, g.Rack.Seed())
	}
	if b, _ := g.Rack.Board("b0"); b.LoadedDesign() != nil {
		t.Error("a board of a rack without a design is programmed")
	}
	g = emutest.Start(t, emutest.Rack{Design: "prr", Unprogrammed: true, Boards: []emutest.Board{{Name: "u96", Kind: "ultra96"}}})
	if b, _ := g.Rack.Board("u96"); g.M == nil || b.LoadedDesign() != nil {
		t.Errorf("Unprogrammed: manifest %v, design %v", g.M, b.LoadedDesign())
	}
	g.Program("u96", "prr")
	if id := g.Read("u96", "ID"); id != g.M.ID {
		t.Errorf("after Program: ID %#x", id)
	}
}

func TestFaultAndEndpoint(t *testing.T) {
	f := emutest.Fault("credit-leak", "every", "8")
	if f.Name != "credit-leak" || f.Params["every"].Values[0] != "8" {
		t.Errorf("fault %+v", f)
	}
	if e := emutest.Endpoint("exa-00:sfp1"); e.Board != "exa-00" || e.Port != "sfp1" {
		t.Errorf("endpoint %+v", e)
	}
	defer func() {
		if recover() == nil {
			t.Error("an endpoint without a port did not panic")
		}
	}()
	emutest.Endpoint("exa-00")
}
