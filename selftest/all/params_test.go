package all_test

import (
	"reflect"
	"testing"

	"github.com/labrunner/labrunner/labconfig"
	"github.com/labrunner/labrunner/selftest"
	_ "github.com/labrunner/labrunner/selftest/all"
)

// Every registered test's parameters are a struct `labrunner lab tests` can
// describe (each with what it sets), and an entry without params decodes
// to the defaults the test registered.
func TestEveryTestDeclaresItsParameters(t *testing.T) {
	withParams := 0
	for _, tc := range selftest.Tests() {
		name := tc.Design + "/" + tc.Name
		v, err := tc.DecodeParams(labconfig.Params{})
		if _, checked := tc.Params.(labconfig.ParamsChecker); err != nil && !checked {
			// Only a check of what ties fields together may need the
			// entry to set something (the failure test: a link or a node).
			t.Errorf("%s: an entry without params: %v", name, err)
			continue
		}
		if tc.Params == nil {
			continue
		}
		withParams++
		if err == nil && !reflect.DeepEqual(v, tc.Params) {
			t.Errorf("%s: an entry without params gave %#v, not the defaults %#v", name, v, tc.Params)
		}
		fs, err := labconfig.ParamFields(tc.Params)
		if err != nil {
			t.Errorf("%s: %v", name, err)
		}
		for _, f := range fs {
			if f.Doc == "" || f.Default == "" {
				t.Errorf("%s: parameter %s has no doc or default: %+v", name, f.Name, f)
			}
		}
	}
	if withParams < 30 {
		t.Errorf("only %d tests declare parameters", withParams)
	}
}
