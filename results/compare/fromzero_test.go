package compare

import (
	"math"
	"testing"
)

func TestChangeFromZeroSurvivesJSON(t *testing.T) {
	dir := t.TempDir()
	r := &Result{Moved: []Change{{Metric: "m", A: 0, B: 3, Rel: relChange(0, 3)}, {Metric: "n", A: 2, B: 1, Rel: relChange(2, 1)}}}
	if err := Save(dir, r); err != nil {
		t.Fatalf("saving a change from zero: %v", err)
	}
	got, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !math.IsInf(got.Moved[0].Rel, 1) || got.Moved[1].Rel != -0.5 {
		t.Fatalf("read back %+v", got.Moved)
	}
}
