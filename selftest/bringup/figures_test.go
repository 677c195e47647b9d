package bringup

import "testing"

// The bring-up's report description parses, and draws the clock offsets
// per board against their golden bounds.
func TestFigures(t *testing.T) {
	r := Figures()
	if r.Title == "" || len(r.Figures) == 0 {
		t.Fatalf("figures = %+v", r)
	}
	f := r.Figures[0]
	if f.Metric != "bringup.timesync.offset_ns" || f.X != "board" || f.Golden != f.Metric {
		t.Errorf("first figure = %+v, want the clock offsets per board against golden", f)
	}
}
