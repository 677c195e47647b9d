package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A real rack's lab with each mistake the nightly would otherwise find only
// on the rack: lab check lists them all, with file:line and the fix.
const badRealLab = `lab: real-rack
boards:
  - {name: u96-0, kind: ultra96, bus: {uart_bridge: {port: /dev/ttyUSB5}}, programmer: {type: openfpgaloader, cable: digilent_hs2, serial: "210249A1"}}
  - {name: de5-0, kind: de5net, bus: {mmio: {device: "/sys/bus/pci/devices/0000:03:00.0/resource0", size: 0x200000}}, programmer: {type: quartus_pgm, cable: "DE5-Net [1-1.2]"}}
  - {name: de5-1, kind: de5net, bus: {mmio: {device: "/sys/bus/pci/devices/0000:04:00.0/resource0", size: 0x200000}}, programmer: {type: openfpgaloader, cable: usb-blasterII, usb_path: "1-1.4"}}
plans:
  - name: prr
    design: prr
    boards: [{board: u96-0}]
    tests:
      - test: placement
        params: {batchs: 20}
  - name: shoal
    design: shoal
    bitstream: shoal-v2.sof
    boards: [{board: de5-0}]
    tests: [{test: registers}]
  - name: shoal-rbf
    design: shoal
    bitstream: shoal-v1.rbf
    boards: [{board: de5-0}, {board: de5-1}]
    tests: [{test: registers}]
`

// fakeOpenFPGALoader puts on PATH a stand-in for openFPGALoader 0.10.0
// that answers --Version and --list-fpga with that release's own output:
// the tests do not depend on an installed one.
func fakeOpenFPGALoader(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	list, err := filepath.Abs("../../drivers/program/openfpgaloader-0.10.0-list-fpga.txt")
	if err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\ncase \"$1\" in\n--Version) echo 'openFPGALoader v0.10.0';;\n--list-fpga) cat '" + list + "';;\n*) echo \"error: $1\" >&2; exit 1;;\nesac\n"
	if err := os.WriteFile(filepath.Join(dir, "openFPGALoader"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
}

func TestLabCheckRefusesWhatTheNightlyWould(t *testing.T) {
	dir := t.TempDir()
	lab := filepath.Join(dir, "lab.yaml")
	os.WriteFile(lab, []byte(badRealLab), 0o644)
	os.WriteFile(filepath.Join(dir, "shoal-v1.rbf"), []byte("not the catalogue's"), 0o644)
	for _, tool := range []string{"installed", "absent"} {
		t.Run(tool, func(t *testing.T) {
			if tool == "installed" {
				fakeOpenFPGALoader(t)
			} else {
				t.Setenv("PATH", t.TempDir())
			}
			code, out := runCLI(t, "lab", "check", "--lab", lab)
			if code != 2 {
				t.Fatalf("exit %d, want 2:\n%s", code, out)
			}
			for _, want := range []string{
				lab + ":3: boards[0].programmer.type: openFPGALoader 0.10.0 does not support the ultra96's xczu3eg",
				lab + ":5: boards[2].programmer.type: openFPGALoader 0.10.0 does not support the de5net's 5sgxea7n2f45c2",
				`plans[0].tests[0].params.batchs: test placement: unknown parameter "batchs"`, "did you mean batches?",
				"plans[1].bitstream: bitstream " + filepath.Join(dir, "shoal-v2.sof") + " cannot be read",
				"plans[2].bitstream: board de5-0 is programmed with quartus_pgm, which loads .sof, not .rbf",
			} {
				if !strings.Contains(out, want) {
					t.Errorf("lab check does not say %q:\n%s", want, out)
				}
			}
			if tool == "absent" && !strings.Contains(out, "taken from its 0.10.0 release") {
				t.Errorf("no note that the embedded list was used:\n%s", out)
			}
		})
	}
}

func TestLabCheckAndNightlyRefuseFaultParameters(t *testing.T) {
	t.Parallel()
	code, out := runCLI(t, "lab", "check", "--fault", "credit-leak@exa-10:sfp0,evry=3")
	if code != 2 || !strings.Contains(out, `--fault credit-leak@exa-10:sfp0,evry=3: params.evry: fault credit-leak: unknown parameter "evry"`) || !strings.Contains(out, "did you mean every?") {
		t.Fatalf("lab check --fault: exit %d:\n%s", code, out)
	}
	root := t.TempDir()
	code, out = runCLI(t, "nightly", "--out", root, "--locks", t.TempDir(), "--fault", "credit-leak@exa-10:sfp0,evry=3")
	if code != 2 || !strings.Contains(out, "did you mean every?") {
		t.Fatalf("nightly --fault: exit %d:\n%s", code, out)
	}
	if es, _ := os.ReadDir(root); len(es) != 0 {
		t.Errorf("the refused nightly made %v", es)
	}
	// In the lab file too.
	lab := twoGroupsLab(t, "", "faults:\n  - {name: credit-leak, link: \"a0:sfp0\", params: {evry: 3}}\n")
	if code, out := runCLI(t, "lab", "check", "--lab", lab); code != 2 || !strings.Contains(out, "faults[0].params.evry") {
		t.Fatalf("a lab file's fault: exit %d:\n%s", code, out)
	}
}

// The nightly refuses a mistyped test parameter before it touches a board
// or makes a run directory.
func TestNightlyRefusesAMistypedTestParameter(t *testing.T) {
	t.Parallel()
	lab := twoGroupsLab(t, "packets: 300", "packet: 300")
	root := t.TempDir()
	code, out := runCLI(t, "nightly", "--lab", lab, "--out", root, "--locks", t.TempDir())
	if code != 2 || !strings.Contains(out, `unknown parameter "packet"`) || !strings.Contains(out, "did you mean packets?") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	if es, _ := os.ReadDir(root); len(es) != 0 {
		t.Errorf("the refused nightly made %v", es)
	}
}
