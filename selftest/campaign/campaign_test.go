package campaign

import (
	"strings"
	"testing"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/boards/emu"
	_ "github.com/labrunner/labrunner/boards/emu/designs"
	"github.com/labrunner/labrunner/labconfig"
	"github.com/labrunner/labrunner/selftest"
	_ "github.com/labrunner/labrunner/selftest/all"
)

func defaultLab(t *testing.T) *labconfig.Lab {
	t.Helper()
	cat := bitstreams.Default()
	var designs []string
	for _, d := range cat.Designs() {
		designs = append(designs, d.Name)
	}
	lab, err := labconfig.Default(labconfig.Known{Designs: designs, Tests: selftest.TestNames(designs), Faults: faultNames()})
	if err != nil {
		t.Fatal(err)
	}
	return lab
}

func faultNames() []string {
	var out []string
	for _, f := range emu.Faults() {
		out = append(out, f.Name)
	}
	return out
}

// A fault is aimed at the boards of its design that have what it needs, a
// link fault at each cabled port; severe settings of a benign fault are
// jobs of their own; the rotation takes one target per fault and group.
func TestJobsTargets(t *testing.T) {
	lab := defaultLab(t)
	reg := []emu.FaultInfo{
		{Name: "ex-link", Scope: "link", Design: "exanet"},
		{Name: "any-board", Scope: "board"},
		{Name: "bridge-only", Scope: "board", Benign: true, Severe: []string{"rate=1"}, Needs: []string{emu.NeedsUARTBridge}},
		{Name: "cabled-only", Scope: "board", Needs: []string{emu.NeedsCable}},
		{Name: "nic-only", Scope: "board", Design: "shoal", Needs: []string{"param:role=nic"}},
	}
	groups, err := Jobs(Options{Lab: lab, Plans: []string{"exanet-mesh", "prr", "shoal"}, Registry: reg, Targets: TargetsAll})
	if err != nil {
		t.Fatal(err)
	}
	if len(groups) != 3 {
		t.Fatalf("%d groups, want 3 (exanet, prr, shoal)", len(groups))
	}
	count := map[string]int{}
	var specs []string
	for _, g := range groups {
		for _, j := range g {
			count[j.Info.Name]++
			specs = append(specs, j.Fault)
			if j.Benign != (j.Info.Name == "bridge-only" && !strings.Contains(j.Fault, "rate=")) {
				t.Errorf("%s: benign %v", j.Fault, j.Benign)
			}
		}
	}
	all := strings.Join(specs, " ")
	// 4 cables of the mesh, both ends: 8.
	if count["ex-link"] != 8 || !strings.Contains(all, "ex-link@exa-00:sfp0") {
		t.Errorf("ex-link: %d jobs (%s)", count["ex-link"], all)
	}
	// 4 mesh boards, prr-0 and the 8 Shoal boards.
	if count["any-board"] != 13 {
		t.Errorf("any-board: %d jobs, want 13", count["any-board"])
	}
	// exa-11's bus is the emulator's own, not a bridge: 3 mesh boards,
	// prr-0 and the 8 Shoal boards, each at the default and at rate=1.
	if count["bridge-only"] != 24 || strings.Contains(all, "bridge-only@exa-11") || !strings.Contains(all, "bridge-only@prr-0,rate=1") {
		t.Errorf("bridge-only: %d jobs (%s)", count["bridge-only"], all)
	}
	// prr-0 has no cable; the 8 Shoal boards have.
	if count["cabled-only"] != 12 || strings.Contains(all, "cabled-only@prr-0") {
		t.Errorf("cabled-only: %d jobs (%s)", count["cabled-only"], all)
	}
	// The plan's role parameter: the two NIC boards, not the six switches.
	if count["nic-only"] != 2 || !strings.Contains(all, "nic-only@shoal-nic0") || strings.Contains(all, "nic-only@shoal-sw") {
		t.Errorf("nic-only: %d jobs (%s)", count["nic-only"], all)
	}

	// Rotation: one target per fault (and severe setting) and group, and
	// over as many nights as there are targets every one comes up.
	seen := map[string]bool{}
	for night := 0; night < 8; night++ {
		groups, err := Jobs(Options{Lab: lab, Plans: []string{"exanet-mesh"}, Registry: reg[:1], Night: night})
		if err != nil || len(groups) != 1 || len(groups[0]) != 1 {
			t.Fatalf("night %d: %v %v", night, groups, err)
		}
		seen[groups[0][0].Target] = true
	}
	if len(seen) != 8 {
		t.Errorf("8 nights of rotation covered %d of 8 link ends", len(seen))
	}

	if _, err := Jobs(Options{Lab: lab, Registry: reg, Faults: []string{"nosuch-*"}}); err == nil {
		t.Error("a fault pattern matching nothing was accepted")
	}
	if _, err := Jobs(Options{Lab: lab, Registry: reg, Plans: []string{"nosuch"}}); err == nil {
		t.Error("an unknown plan was accepted")
	}
}

// A fault that acts on remote register requests (mgmt-nsf-reboot) is aimed
// only at boards the runner reaches in band: on a DCN board (every ExaNet,
// PRR and Shoal board of the default lab, tin-p0b0 and tin-p0b2) it never
// fires, and a passing run there would be reported as the fault absorbed.
func TestInBandFaultsSkipDCNBoards(t *testing.T) {
	lab := defaultLab(t)
	reg := []emu.FaultInfo{{Name: "in-band-only", Scope: "board", Needs: []string{emu.NeedsCable, emu.NeedsInBand}}}
	groups, err := Jobs(Options{Lab: lab, Registry: reg, Targets: TargetsAll})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, g := range groups {
		for _, j := range g {
			got = append(got, j.Target)
			if b, ok := lab.Board(j.Target); !ok || b.DCN {
				t.Errorf("in-band-only aimed at %s, a board on the DCN", j.Target)
			}
		}
	}
	// The TiN Clique's six boards behind tin-p0b0 and tin-p0b2.
	if len(got) != 6 {
		t.Errorf("in-band-only: targets %v, want the 6 in-band TiN boards", got)
	}

	// The registry's own NSF-reboot fault says so.
	groups, err = Jobs(Options{Lab: lab, Faults: []string{emu.FaultNSFReboot}, Targets: TargetsAll})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, g := range groups {
		for _, j := range g {
			n++
			if b, ok := lab.Board(j.Target); !ok || b.DCN {
				t.Errorf("%s aimed at a board on the DCN", j.Fault)
			}
		}
	}
	if n != 6 {
		t.Errorf("%s: %d targets, want the 6 in-band TiN boards", emu.FaultNSFReboot, n)
	}
}
