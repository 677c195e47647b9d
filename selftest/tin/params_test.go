package tin

import (
	"fmt"
	"testing"

	"github.com/labrunner/labrunner/labconfig"
	"github.com/labrunner/labrunner/selftest"
	tt "github.com/labrunner/labrunner/traffic/tin"
)

// The TiN helpers read the seed (seedOf) and the ordering targets
// (targetsOf, streamSources) through interfaces of the embedded structs:
// every test that declares those parameters must satisfy them, or the
// read fails on the rack.
func TestParameterStructsSatisfyTheirReaders(t *testing.T) {
	for _, tc := range selftest.Tests() {
		if tc.Design != design || tc.Params == nil {
			continue
		}
		fs, err := labconfig.ParamFields(tc.Params)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range fs {
			switch f.Name {
			case "seed":
				if _, ok := tc.Params.(seeded); !ok {
					t.Errorf("%s: declares seed, but seedOf cannot read it from %T", tc.Name, tc.Params)
				}
			case "sources":
				if _, ok := tc.Params.(targetedOrdering); !ok {
					t.Errorf("%s: declares sources, but streamSources cannot read it from %T", tc.Name, tc.Params)
				}
			}
		}
	}
}

// A board's pod and TiN are limited to what the routing tables reach
// (traffic/tin's MaxPods and MaxTiNs): lab check refuses what NewTopology
// would refuse on the rack, and nothing it takes.
func TestBoardParamsReachTheRoutingTables(t *testing.T) {
	fs, err := labconfig.ParamFields(boardParams{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"pod": fmt.Sprintf("0..%d", tt.MaxPods-1), "tin": fmt.Sprintf("0..%d", tt.MaxTiNs-1)}
	for _, f := range fs {
		if f.Limits != want[f.Name] || !f.Required {
			t.Errorf("%s: limits %q, required %v; want %q, required", f.Name, f.Limits, f.Required, want[f.Name])
		}
	}
	if len(fs) != len(want) {
		t.Errorf("board parameters %+v, want pod and tin", fs)
	}
}
