package labrun

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/boards/emu"
	_ "github.com/labrunner/labrunner/boards/emu/designs"
	"github.com/labrunner/labrunner/labconfig"
	"github.com/labrunner/labrunner/results"
	"github.com/labrunner/labrunner/selftest"
)

// Two independent two-board racks; the first one's design setup panics.
const twoRacks = `
lab: panic-test
seed: 7
deadlines: {register: 2s, program: 5s, console: 10s, test: 60s}
boards:
  - {name: a0, kind: tebf0808, emulated: {}, console: {port: emu}, bus: {emulated: {}}, programmer: {type: emulated}}
  - {name: a1, kind: tebf0808, emulated: {}, console: {port: emu}, bus: {emulated: {}}, programmer: {type: emulated}}
  - {name: b0, kind: tebf0808, emulated: {}, console: {port: emu}, bus: {emulated: {}}, programmer: {type: emulated}}
  - {name: b1, kind: tebf0808, emulated: {}, console: {port: emu}, bus: {emulated: {}}, programmer: {type: emulated}}
links:
  - {a: "a0:sfp0", b: "a1:sfp0"}
  - {a: "b0:sfp0", b: "b1:sfp0"}
plans:
  - name: rack-a
    design: exanet
    params: {lattice: [2, 1, 1], dor_order: XYZ}
    boards: [{board: a0, params: {coord: [0, 0, 0]}}, {board: a1, params: {coord: [1, 0, 0]}}]
    tests: [{test: registers}]
  - name: rack-b
    design: exanet
    params: {lattice: [2, 1, 1], dor_order: XYZ}
    boards: [{board: b0, params: {coord: [0, 0, 0]}}, {board: b1, params: {coord: [1, 0, 0]}}]
    tests: [{test: registers}]
`

// TestGroupPanicIsAnInfrastructureError: a panic inside one board group
// (here its management check, run inside the group after the design's
// setup) ends that group only, with an infrastructure error on each of its
// tests; the other group runs and passes.
func TestGroupPanicIsAnInfrastructureError(t *testing.T) {
	t.Parallel()
	lab, err := labconfig.Parse("panic.yaml", []byte(twoRacks), labconfig.Known{})
	if err != nil {
		t.Fatal(err)
	}
	cat := bitstreams.Default()
	rack, err := emu.Start(lab, emu.Options{Catalogue: cat})
	if err != nil {
		t.Fatal(err)
	}
	defer rack.Close()
	mgmt := func(ctx context.Context, env *selftest.Env) error {
		if env.Plan.Name == "rack-a" {
			var m map[string]int
			m["boom"]++ // a nil map: a driver's or a check's bug
		}
		env.Check("mgmt", results.Measurement{Metric: "mgmt.checked"}, true, "checked", "test", "")
		return nil
	}
	dir, err := results.Create(t.TempDir(), results.Run{Lab: lab.Name, Start: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	n := &Groups{Lab: lab, Catalogue: cat, Emulator: rack, Dir: dir, Mgmt: mgmt}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out := n.Run(ctx)
	if out.ExitCode != ExitInfra {
		t.Errorf("exit %d (%s), want %d", out.ExitCode, out.Status, ExitInfra)
	}
	seen := map[string]bool{}
	for _, v := range dir.Verdicts() {
		seen[v.Plan+" "+v.Board] = true
		switch v.Plan {
		case "rack-a":
			if v.Test == "registers" && (v.Status != results.Error || v.Class != "infrastructure" || !strings.Contains(v.Message, "panic")) {
				t.Errorf("rack-a %s %s: %s %s %q", v.Board, v.Name(), v.Status, v.Class, v.Message)
			}
		case "rack-b":
			if v.Status != results.Pass {
				t.Errorf("rack-b %s %s: %s %q", v.Board, v.Name(), v.Status, v.Message)
			}
		}
	}
	for _, k := range []string{"rack-a a0", "rack-a a1", "rack-b b0", "rack-b b1"} {
		if !seen[k] {
			t.Errorf("no verdict for %s", k)
		}
	}
}
