package exanet

import (
	"strings"
	"testing"

	tx "github.com/labrunner/labrunner/traffic/exanet"
)

// mesh2x2 is the default lab's mesh: sfp0 cables X, sfp1 cables Y.
func mesh2x2() *topo {
	t := &topo{lattice: tx.Coord{2, 2, 1}, order: "XYZ", coord: map[string]tx.Coord{}, byCoord: map[tx.Coord]string{}, peer: map[string][2]string{}}
	for name, c := range map[string]tx.Coord{"exa-00": {0, 0, 0}, "exa-10": {1, 0, 0}, "exa-01": {0, 1, 0}, "exa-11": {1, 1, 0}} {
		t.coord[name], t.byCoord[c] = c, name
	}
	t.names = []string{"exa-00", "exa-10", "exa-01", "exa-11"}
	t.peer["exa-00"] = [2]string{"exa-10", "exa-01"}
	t.peer["exa-10"] = [2]string{"exa-00", "exa-11"}
	t.peer["exa-01"] = [2]string{"exa-11", "exa-00"}
	t.peer["exa-11"] = [2]string{"exa-01", "exa-10"}
	return t
}

func TestCablesOfTheMesh(t *testing.T) {
	m := mesh2x2()
	cs := m.cables()
	if len(cs) != 4 {
		t.Fatalf("%d cables, want 4: %v", len(cs), cs)
	}
	a, _ := m.cableAt("exa-00", 0)
	b, _ := m.cableAt("exa-10", 0)
	if a != b || a.String() != "exa-00:sfp0 - exa-10:sfp0" {
		t.Errorf("the two ends of one cable: %s, %s", a, b)
	}
	if _, ok := (&topo{peer: map[string][2]string{"x": {"", ""}}}).cableAt("x", 0); ok {
		t.Error("a cable on an uncabled port")
	}
	// XYZ: (0,0) -> (1,1) crosses X then Y; back from (1,1) -> (0,0) crosses X at y=1 then Y at x=0.
	there, err := m.pathCables("exa-00", "exa-11")
	if err != nil || len(there) != 2 || there[0].String() != "exa-00:sfp0 - exa-10:sfp0" || there[1].String() != "exa-10:sfp1 - exa-11:sfp1" {
		t.Errorf("path cables there: %v %v", there, err)
	}
	back, err := m.pathCables("exa-11", "exa-00")
	if err != nil || len(back) != 2 || back[0].String() != "exa-01:sfp0 - exa-11:sfp0" || back[1].String() != "exa-00:sfp1 - exa-01:sfp1" {
		t.Errorf("path cables back: %v %v", back, err)
	}
	if self, err := m.pathCables("exa-10", "exa-10"); err != nil || len(self) != 0 {
		t.Errorf("a board to itself crosses %v (%v)", self, err)
	}
}

func TestBadCablesFailTheCasesThatCrossThem(t *testing.T) {
	m := mesh2x2()
	bad := badCables{}
	x0, _ := m.cableAt("exa-00", 0)
	y1, _ := m.cableAt("exa-11", 1)
	bad.mark(x0, "down")
	bad.mark(x0, "a later reason") // the first reason is kept
	there, _ := m.pathCables("exa-00", "exa-11")
	if why := bad.crossing(there); !strings.Contains(why, "exa-00:sfp0 - exa-10:sfp0: down") {
		t.Errorf("crossing: %q", why)
	}
	if why := bad.crossing([]cable{y1}); why != "" {
		t.Errorf("a sound cable reported bad: %q", why)
	}
}

func TestEndState(t *testing.T) {
	e := end{"exa-00", 1}
	for _, c := range []struct {
		ls   tx.LinkState
		want string
	}{
		{tx.LinkState{Up: true, Credits: 1024}, ""},
		{tx.LinkState{Up: false, Credits: 0}, "exa-00:sfp1 down"},
		{tx.LinkState{Up: true, Credits: 900}, "900 of 1024 credits at rest (credit leak)"},
		{tx.LinkState{Up: true, Credits: 8, CreditStall: true}, "CREDIT_STALL"},
	} {
		got := endState(e, c.ls, 1024)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%+v: %q, want %q", c.ls, got, c.want)
		}
	}
}

// One hop's round trip from four stamps on two counters: the offset
// between the counters cancels, and a counter that wrapped between two
// stamps does not matter.
func TestHopCycles(t *testing.T) {
	for _, c := range []struct {
		name                 string
		aOut, bIn, bOut, aIn uint32
		want                 int64
	}{
		{"B's counter ahead", 1000, 5036, 5100, 1136, 72},
		{"B's counter behind", 900000, 100036, 100100, 900136, 72},
		{"A's counter wraps on the way back", 0xffffff80, 5036, 5100, 8, 72},
		{"B's counter wraps while B holds the packet", 1000, 0xfffffff0, 48, 1136, 72},
		{"a slow cable, two cycles each way", 1000, 5038, 5100, 1138, 76},
	} {
		if got := hopCycles(c.aOut, c.bIn, c.bOut, c.aIn); got != c.want {
			t.Errorf("%s: %d cycles, want %d", c.name, got, c.want)
		}
	}
}
