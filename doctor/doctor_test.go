package doctor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/boards"
	"github.com/labrunner/labrunner/boards/emu"
	_ "github.com/labrunner/labrunner/boards/emu/designs"
	"github.com/labrunner/labrunner/labconfig"
)

func known() labconfig.Known {
	progs := map[string][]string{}
	for _, k := range boards.KindNames() {
		kind, _ := boards.Lookup(k)
		progs[k] = kind.Programmers
	}
	return labconfig.Known{Kinds: boards.KindNames(), Designs: bitstreams.Default().Names(), Ports: boards.PortsByKind(), Programmers: progs}
}

func parse(t *testing.T, src string) *labconfig.Lab {
	t.Helper()
	lab, err := labconfig.Parse(filepath.Join(t.TempDir(), "lab.yaml"), []byte(src), known())
	if err != nil {
		t.Fatal(err)
	}
	return lab
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return c
}

// finding returns the finding of a board's check, failing when absent.
func finding(t *testing.T, r Report, board, check string) Finding {
	t.Helper()
	for _, f := range r.Findings {
		if f.Board == board && f.Check == check {
			return f
		}
	}
	t.Fatalf("no finding %s/%s in:\n%s", board, check, table(r))
	return Finding{}
}

func table(r Report) string {
	var b strings.Builder
	r.WriteTable(&b)
	return b.String()
}

func want(t *testing.T, f Finding, st Status, says ...string) {
	t.Helper()
	if f.Status != st {
		t.Errorf("%s/%s: %s (%s: %s), want %s", f.Board, f.Check, f.Status, f.Detail, f.Fix, st)
	}
	for _, s := range says {
		if !strings.Contains(f.Detail+" "+f.Fix, s) {
			t.Errorf("%s/%s does not say %q: %s (%s)", f.Board, f.Check, s, f.Detail, f.Fix)
		}
	}
}

// The default lab: the emulated rack, every board answering on its
// pseudo-terminals. Every check passes.
func TestDoctorDefaultLab(t *testing.T) {
	lab, err := labconfig.Default(known())
	if err != nil {
		t.Fatal(err)
	}
	rack, err := emu.Start(lab, emu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rack.Close()
	r := Run(ctx(t), lab, Options{Emulator: rack, LockDir: t.TempDir()})
	if r.ExitCode != 0 || len(r.Problems()) != 0 {
		t.Fatalf("exit %d:\n%s", r.ExitCode, table(r))
	}
	want(t, finding(t, r, "exa-00", "bridge INFO"), OK, "protocol 1")
	want(t, finding(t, r, "exa-00", "console prompt"), OK, "exa-00")
	want(t, finding(t, r, "", "lock directory"), OK)
	if !strings.Contains(table(r), "every check passed") {
		t.Errorf("the table does not end with the verdict:\n%s", table(r))
	}
}

// A lab of missing devices: every problem is named with its fix, exit 3.
func TestDoctorMissingDevices(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // no programming tool installed
	lab := parse(t, `lab: missing
boards:
  - name: te-0
    kind: tebf0808
    console: {port: /nonexistent-labrunner-test/ttyUSB0}
    bus: {uart_bridge: {port: /nonexistent-labrunner-test/ttyUSB1}}
    programmer: {type: fpga_manager, sysfs: /nonexistent-labrunner-test/sys}
    power: {type: gpio, pin: LABRUNNER_TEST_ABSENT_RELAY}
  - name: zcu-0
    kind: zcu102
    bus: {mmio: {device: /nonexistent-labrunner-test/dev/uio0, size: 0x1000}}
    programmer: {type: openfpgaloader, cable: digilent_hs2, serial: "210249A1"}
    power: {type: command, on: [labrunner-test-absent-pdu, on, "3"], off: [labrunner-test-absent-pdu, off, "3"]}
  - name: de5-0
    kind: de5net
    bus: {mmio: {device: "/nonexistent-labrunner-test/sys/bus/pci/devices/0000:03:00.0/resource0", size: 0x1000}}
    programmer: {type: quartus_pgm, cable: "DE5-Net [1-1.2]"}
`)
	r := Run(ctx(t), lab, Options{LockDir: filepath.Join(t.TempDir(), "locks")})
	if r.ExitCode != 3 {
		t.Errorf("exit %d, want 3:\n%s", r.ExitCode, table(r))
	}
	want(t, finding(t, r, "te-0", "console device"), Problem, "ttyUSB0", "plugged in")
	want(t, finding(t, r, "te-0", "bridge device"), Problem, "ttyUSB1")
	want(t, finding(t, r, "te-0", "fpga_manager"), Problem, "fpga_manager does not exist")
	want(t, finding(t, r, "te-0", "power gpio"), Problem, "LABRUNNER_TEST_ABSENT_RELAY", "gpiodetect")
	want(t, finding(t, r, "zcu-0", "bus device"), Problem, "uio0", "uio driver")
	want(t, finding(t, r, "zcu-0", "openFPGALoader"), Problem, "not installed", "apt install openfpgaloader")
	want(t, finding(t, r, "zcu-0", "power on"), Problem, "labrunner-test-absent-pdu")
	want(t, finding(t, r, "de5-0", "bus device"), Problem, "resource0", "lspci")
	want(t, finding(t, r, "de5-0", "quartus_pgm"), Problem, "not installed")
	want(t, finding(t, r, "", "lock directory"), Note, "does not exist yet")
	if _, err := os.Stat(filepath.Join(t.TempDir(), "locks")); err == nil {
		t.Error("doctor made the lock directory")
	}
}

// A lock directory someone made unsafe, with a planted link.
func TestDoctorLockDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "locks")
	os.Mkdir(dir, 0o755)
	os.Chmod(dir, 0o777)
	lab := parse(t, "lab: l\nboards:\n  - {name: b, kind: zcu102, programmer: {type: fpga_manager, sysfs: /nonexistent-labrunner-test}}\n")
	r := Run(ctx(t), lab, Options{LockDir: dir})
	want(t, finding(t, r, "", "lock directory"), Problem, "sticky", "chmod 1777")
	os.Chmod(dir, 0o777|os.ModeSticky)
	os.Symlink("/etc/passwd", filepath.Join(dir, "b.lock"))
	r = Run(ctx(t), lab, Options{LockDir: dir})
	want(t, finding(t, r, "", "lock directory"), Problem, "b.lock", "remove it")
}
