package tin

import (
	"testing"

	"github.com/labrunner/labrunner/labconfig"
	"github.com/labrunner/labrunner/selftest"
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
