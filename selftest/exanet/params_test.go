package exanet

import (
	"strings"
	"testing"

	"github.com/labrunner/labrunner/selftest"
)

// The plan's lattice and dimension order are refused as the router would
// refuse them, and the boards must fit the lattice, each at its own place.
func TestPlanParamsChecks(t *testing.T) {
	for _, c := range []struct {
		p    planParams
		want string
	}{
		{planParams{Lattice: []int{2, 2, 1}, DOROrder: "XYZ"}, ""},
		{planParams{Lattice: []int{2, 2, 1}, DOROrder: "zyx"}, ""},
		{planParams{Lattice: []int{2, 2}, DOROrder: "XYZ"}, "lattice: got 2 sizes, want three"},
		{planParams{Lattice: []int{2, 2, 1}, DOROrder: "XZZ"}, "dor_order: dimension order \"XZZ\" names a dimension twice"},
		{planParams{Lattice: []int{2, 2, 1}, DOROrder: "XY"}, "dor_order: dimension order \"XY\": write three letters"},
	} {
		err := c.p.CheckParams()
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%+v: %v, want %q", c.p, err, c.want)
		}
	}
	if err := (boardParams{Coord: []int{1, 0}}).CheckParams(); err == nil || !strings.Contains(err.Error(), "coord: got 2 coordinates, want three") {
		t.Errorf("two coordinates: %v", err)
	}
	p := planParams{Lattice: []int{2, 2, 1}, DOROrder: "XYZ"}
	bs := []selftest.BoardParams{
		{Name: "a", Params: boardParams{Coord: []int{0, 0, 0}}},
		{Name: "b", Params: boardParams{Coord: []int{1, 1, 1}}},
		{Name: "c", Params: boardParams{Coord: []int{0, 0, 0}}},
	}
	err := p.CheckBoards(bs)
	if err == nil || !strings.Contains(err.Error(), "board b: coord: coordinate (1,1,1) is outside the lattice [2 2 1]") ||
		!strings.Contains(err.Error(), "board c: coord: boards a and c are both at (0,0,0)") {
		t.Errorf("CheckBoards: %v", err)
	}
	if err := p.CheckBoards(bs[:1]); err != nil {
		t.Errorf("one board at the origin: %v", err)
	}
}
