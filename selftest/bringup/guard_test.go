package bringup

import (
	"strings"
	"testing"

	"github.com/labrunner/labrunner/labconfig"
	_ "github.com/labrunner/labrunner/selftest/shoal" // the Shoal plan's parameters
)

// The TimeSync score's guard band is the one the Shoal plan runs with: the
// plan's value, or its setup's default (one cycle, Shoal (NSDI 2019) §6.1)
// when the plan gives none. It was read by name with a default of 0, so a
// plan without guard_cycles was scored with no guard band at all.
func TestShoalGuardIsThePlans(t *testing.T) {
	lab, err := labconfig.Default(labconfig.Known{})
	if err != nil {
		t.Fatal(err)
	}
	var shoal *labconfig.Plan
	for i := range lab.Plans {
		if lab.Plans[i].Design == "shoal" {
			shoal = &lab.Plans[i]
		}
	}
	if shoal == nil {
		t.Fatal("the default lab has no Shoal plan")
	}
	if g := shoalGuardCycles(lab); g != 1 {
		t.Errorf("default lab: guard %d cycles, want its plan's 1", g)
	}
	data := labconfig.DefaultSource()
	for _, c := range []struct {
		params string
		want   int
	}{
		{"{slot_cycles: 12, sync_master: 0}", 1},                  // the setup's default
		{"{slot_cycles: 12, guard_cycles: 3, sync_master: 0}", 3}, // the plan's own
	} {
		src := strings.Replace(string(data), "params: {slot_cycles: 12, guard_cycles: 1, sync_master: 0}", "params: "+c.params, 1)
		if src == string(data) {
			t.Fatal("the default lab's Shoal plan parameters moved: update this test")
		}
		l, err := labconfig.Parse("lab.yaml", []byte(src), labconfig.Known{})
		if err != nil {
			t.Fatal(err)
		}
		if g := shoalGuardCycles(l); g != c.want {
			t.Errorf("params %s: guard %d cycles, want %d", c.params, g, c.want)
		}
	}
}
