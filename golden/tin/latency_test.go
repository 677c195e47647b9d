package tin

import (
	"math"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// Hand-worked unloaded cell latencies with the paper's figures.
func TestCellLatencyHandWorked(t *testing.T) {
	tm := PaperTiming()
	globalSer := 160 / (25.0 / 8 * 0.94) // 54.468 ns: FEC takes 6%
	for _, c := range []struct {
		path  string
		bytes int
		want  float64
	}{
		{"p0t1", 160, 20 + 160/12.5},                  // same TiN: fall-through, endpoint port at 100 Gb/s
		{"p0t1->p0t2[vc0]", 160, 20 + 40 + 51.2},      // 111.2
		{"p0t1->p0t2[vc0]", 16, 20 + 40 + 5.12},       //
		{"p0t1->p1t1[vc0]", 160, 20 + 70 + globalSer}, // FEC: +30 ns, slower link
		{"p0t1->p0t0[vc0]->p1t0[vc0]->p1t2[vc1]", 160, 20 + 40 + 70 + 40 + globalSer},
	} {
		p, err := ParsePath(c.path)
		if err != nil {
			t.Fatal(err)
		}
		if got := tm.CellLatency(p, c.bytes); !near(got, c.want) {
			t.Errorf("CellLatency(%s, %d) = %g, want %g", c.path, c.bytes, got, c.want)
		}
	}
	tm.GlobalPropNs = 500 // 100 m of fibre
	if got := tm.HopLatency(Global); got != 570 {
		t.Errorf("global hop with 100 m of fibre: %g ns, want 40 + 30 + 500", got)
	}
}

func TestTimingCheck(t *testing.T) {
	if err := PaperTiming().Check(); err != nil {
		t.Fatal(err)
	}
	for _, f := range []func(*Timing){
		func(t *Timing) { t.LinkGbps = 0 },
		func(t *Timing) { t.InjectGbps = math.NaN() },
		func(t *Timing) { t.FECOverhead = 1 },
		func(t *Timing) { t.HopNs = 10 }, // below the fall-through it contains
		func(t *Timing) { t.GlobalPropNs = -1 },
	} {
		tm := PaperTiming()
		f(&tm)
		if tm.Check() == nil {
			t.Errorf("implausible timing %+v accepted", tm)
		}
	}
}
