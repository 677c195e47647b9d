package designs

import (
	"testing"

	"github.com/labrunner/labrunner/boards/emu"
	"github.com/labrunner/labrunner/labconfig"
)

// Every fault of every design is well formed: a known scope, a
// documentation text, and defaults that emu.CheckFault accepts. (Duplicate
// names cannot get this far: the second registration panics at init.)
func TestAllFaultsWellFormed(t *testing.T) {
	fs := emu.Faults()
	if len(fs) < 20 {
		t.Fatalf("only %d faults registered", len(fs))
	}
	for _, fi := range fs {
		if fi.Doc == "" {
			t.Errorf("fault %s has no documentation", fi.Name)
		}
		ps := labconfig.Params{}
		for k, v := range fi.Params {
			ps[k] = labconfig.Param{Values: []string{v}}
		}
		f := labconfig.Fault{Name: fi.Name, Board: "b", Link: "b:p", Params: ps}
		if err := emu.CheckFault(f); err != nil {
			t.Errorf("fault %s with its defaults: %v", fi.Name, err)
		}
		f.Params = labconfig.Params{"no_such_parameter": {Values: []string{"1"}}}
		if err := emu.CheckFault(f); err == nil {
			t.Errorf("fault %s accepts an unknown parameter", fi.Name)
		}
	}
}
