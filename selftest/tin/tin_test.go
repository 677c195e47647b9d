package tin

import (
	"testing"

	gt "github.com/labrunner/labrunner/golden/tin"
	"github.com/labrunner/labrunner/results"
	tt "github.com/labrunner/labrunner/traffic/tin"
)

func TestModeOfReadsROUTE_MODE(t *testing.T) {
	// Reset: RTS deterministic, everything else fully adaptive (docs/tin.md).
	for typ, want := range map[tt.CellType]gt.Mode{tt.CellRTS: gt.Deterministic, tt.CellCTS: gt.FullyAdaptive, tt.CellData: gt.FullyAdaptive} {
		if m, ok := modeOf(0x2, typ); !ok || m != want {
			t.Errorf("ROUTE_MODE 0x2, %s: %s, want %s", typ, m, want)
		}
	}
	for name, v := range tt.RouteModes {
		want, err := gt.ParseMode(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, typ := range []tt.CellType{tt.CellRTS, tt.CellCTS, tt.CellCTD, tt.CellData, tt.CellReq, tt.CellResp, tt.CellOReq, tt.CellOCtl} {
			if m, ok := modeOf(v, typ); !ok || m != want {
				t.Errorf("ROUTE_MODE 0x%x, %s: %s, want %s", v, typ, m, want)
			}
		}
	}
	if _, ok := modeOf(0, 0); ok {
		t.Error("a mode for cell type 0")
	}
	if ms, err := parseRouteModes([]string{"deterministic", "MINIMAL-ADAPTIVE"}); err != nil || ms[0].value != 0x2AAA || ms[1].value != 0x1555 {
		t.Errorf("route modes %+v (%v)", ms, err)
	}
	if _, err := parseRouteModes([]string{"random"}); err == nil {
		t.Error("an unknown mode accepted")
	}
}

func TestPercentileAndExpectationLookup(t *testing.T) {
	s := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	if percentile(s, 0.5) != 5 || percentile(s, 0.99) != 10 || percentile(s, 0) != 1 || percentile(nil, 0.5) != 0 {
		t.Errorf("percentiles %g %g %g", percentile(s, 0.5), percentile(s, 0.99), percentile(s, 0))
	}
	if mean(s) != 5.5 || mean(nil) != 0 {
		t.Errorf("mean %g", mean(s))
	}
	es := []results.Expectation{
		{Metric: "tin.fabric.rtt", Params: results.Params{"load": "0.1", "stat": "mean"}, Value: 1},
		{Metric: "tin.fabric.rtt", Params: results.Params{"load": "0.1", "stat": "p99"}, Value: 2},
	}
	if e, ok := expectation(es, "tin.fabric.rtt", results.Params{"stat": "p99", "load": "0.1"}); !ok || e.Value != 2 {
		t.Errorf("lookup %+v %v", e, ok)
	}
	if _, ok := expectation(es, "tin.fabric.rtt", results.Params{"stat": "p99"}); ok {
		t.Error("a lookup with fewer parameters matched")
	}
}
