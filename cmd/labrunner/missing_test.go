package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/labrunner/labrunner/results"
)

// testdata/missing.yaml is a real rack's lab on a host where none of its
// devices is there, next to two emulated boards: every command must answer
// with the driver's own message and exit 3, never a stack trace.

const missingLab = "testdata/missing.yaml"

// noCrash fails when out shows a Go panic.
func noCrash(t *testing.T, out string) {
	t.Helper()
	for _, s := range []string{"panic:", "goroutine ", "runtime error", "nil pointer"} {
		if strings.Contains(out, s) {
			t.Fatalf("the output shows a crash (%q):\n%s", s, out)
		}
	}
}

func TestMissingDevicesBoardCommands(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args []string
		says []string
	}{
		// program opens only the programmer (and power): its own error.
		{[]string{"program", "--board", "te-0"}, []string{"te-0", "fpga_manager", "nonexistent-labrunner-test/sys/class/fpga_manager"}},
		{[]string{"regs", "read", "--board", "zcu-0", "ID"}, []string{"zcu-0", "uio0 is missing", "uio driver"}},
		{[]string{"regs", "dump", "--board", "de5-0"}, []string{"de5-0", "resource0 is missing", "lspci"}},
		{[]string{"regs", "read", "--board", "te-1", "ID"}, []string{"te-1", "LABRUNNER_TEST_ABSENT_RELAY", "GPIO"}},
		// console opens only the console, not the unplugged bridge.
		{[]string{"console", "--board", "te-0", "--send", "id", "--expect", "dna="}, []string{"te-0", "absent-if00", "USB-UART"}},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args[:2], " "), func(t *testing.T) {
			args := append(append([]string{tc.args[0]}, "--lab", missingLab), tc.args[1:]...)
			if tc.args[0] == "regs" {
				args = append([]string{"regs", tc.args[1], "--lab", missingLab}, tc.args[2:]...)
			}
			code, out := runCLI(t, args...)
			noCrash(t, out)
			if code != 3 {
				t.Errorf("exit %d, want 3 (infrastructure):\n%s", code, out)
			}
			for _, s := range tc.says {
				if !strings.Contains(out, s) {
					t.Errorf("output does not say %q:\n%s", s, out)
				}
			}
		})
	}
}

// TestMissingDevicesNightly: the working rack runs and passes, every board
// of the others gets its own driver's message as an infrastructure error,
// the run exits 3 and its directory is finished.
func TestMissingDevicesNightly(t *testing.T) {
	t.Parallel()
	out, locks := t.TempDir(), t.TempDir()
	code, text := runCLI(t, "--log-level", "error", "nightly", "--lab", missingLab, "--out", out, "--locks", locks)
	noCrash(t, text)
	if code != 3 {
		t.Fatalf("exit %d, want 3:\n%s", code, text)
	}
	dir := onlyRunDir(t, out)
	run, err := results.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != "infrastructure-error" || run.ExitCode != 3 || run.End == nil {
		t.Errorf("run.json: status %q exit %d end %v", run.Status, run.ExitCode, run.End)
	}
	vs, err := results.ReadVerdictLog(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"te-0":  "usb-FTDI_labrunner-test-absent-if01-port0",
		"te-1":  "LABRUNNER_TEST_ABSENT_RELAY",
		"zcu-0": "uio0 is missing",
		"de5-0": "resource0 is missing",
	}
	seen := map[string]bool{}
	for _, v := range vs {
		switch {
		case v.Board == "a0" || v.Board == "a1":
			if v.Status != results.Pass && !(v.Status == results.Skip && strings.Contains(v.Message, "is the TimeSync primary")) {
				t.Errorf("the working rack: %s %s %s: %s", v.Board, v.Name(), v.Status, v.Message)
			}
		case want[v.Board] != "":
			seen[v.Board] = true
			if v.Status != results.Error || v.Class != "infrastructure" || !strings.Contains(v.Message, want[v.Board]) {
				t.Errorf("%s %s: %s %s %q", v.Board, v.Name(), v.Status, v.Class, v.Message)
			}
			for other, s := range want {
				if other != v.Board && strings.Contains(v.Message, s) {
					t.Errorf("%s's verdict carries %s's error: %q", v.Board, other, v.Message)
				}
			}
		}
	}
	for b := range want {
		if !seen[b] {
			t.Errorf("no verdict for %s", b)
		}
	}
	// The lock directory records why each board sat the run out.
	code, text = runCLI(t, "boards", "--lab", missingLab, "--locks", locks, "--json")
	if code != 0 || !strings.Contains(text, `"health":"unhealthy"`) || !strings.Contains(text, "did not open: te-1: power gpio LABRUNNER_TEST_ABSENT_RELAY") {
		t.Errorf("boards after the nightly: exit %d:\n%s", code, text)
	}
}

func TestMissingDevicesBringup(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	code, text := runCLI(t, "bringup", "--lab", missingLab, "--all", "--out", out)
	noCrash(t, text)
	if code != 3 {
		t.Fatalf("exit %d, want 3:\n%s", code, text)
	}
	for _, s := range []string{"te-0: first failed stage power", "LABRUNNER_TEST_ABSENT_RELAY", "uio0 is missing", "resource0 is missing"} {
		if !strings.Contains(text, s) {
			t.Errorf("bringup does not say %q:\n%s", s, text)
		}
	}
	run, err := results.ReadRun(onlyRunDir(t, out))
	if err != nil || run.Status == "running" {
		t.Errorf("run directory not finished: %v %v", run, err)
	}
}

// power switches only the board's supply (a board that is off may have no
// USB-UART to open): with a command switch, on, off and cycle run its
// commands; a missing GPIO line is the driver's error, exit 3.
func TestPowerCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	lab := filepath.Join(dir, "lab.yaml")
	os.WriteFile(lab, []byte(`lab: pdu
boards:
  - name: b0
    kind: zcu102
    bus: {uart_bridge: {port: /nonexistent-labrunner-test/ttyUSB0}}
    programmer: {type: fpga_manager}
    power: {type: command, on: [sh, -c, "echo on >> `+state+`"], off: [sh, -c, "echo off >> `+state+`"]}
`), 0o644)
	for _, args := range [][]string{{"on"}, {"off"}, {"cycle", "--wait", "10ms"}} {
		cmd := append([]string{"power", args[0], "--lab", lab, "--board", "b0"}, args[1:]...)
		if code, out := runCLI(t, cmd...); code != 0 {
			t.Fatalf("%v: exit %d:\n%s", args, code, out)
		}
	}
	if b, _ := os.ReadFile(state); string(b) != "on\noff\noff\non\n" {
		t.Errorf("the switch ran %q", b)
	}
	code, out := runCLI(t, "power", "on", "--lab", missingLab, "--board", "te-1")
	noCrash(t, out)
	if code != 3 || !strings.Contains(out, "LABRUNNER_TEST_ABSENT_RELAY") {
		t.Errorf("a missing GPIO line: exit %d:\n%s", code, out)
	}
	if code, out := runCLI(t, "power", "on", "--board", "exa-00"); code != 2 || !strings.Contains(out, "emulated board") {
		t.Errorf("an emulated board: exit %d:\n%s", code, out)
	}
}

// labrunner doctor on the default lab (the emulated rack: all ok) and on
// a lab of missing devices (every problem named, exit 3).
func TestDoctorCommand(t *testing.T) {
	code, out := runCLI(t, "doctor", "--locks", t.TempDir())
	if code != 0 || !strings.Contains(out, "every check passed") {
		t.Fatalf("doctor on the default lab: exit %d:\n%s", code, out)
	}
	t.Setenv("PATH", t.TempDir())
	code, out = runCLI(t, "doctor", "--lab", missingLab, "--locks", t.TempDir(), "--json")
	noCrash(t, out)
	if code != 3 {
		t.Fatalf("doctor on missing devices: exit %d:\n%s", code, out)
	}
	for _, s := range []string{"usb-FTDI_labrunner-test-absent-if01-port0", "usb-FTDI_labrunner-test-absent-if00-port0", "LABRUNNER_TEST_ABSENT_RELAY",
		"uio0", "resource0", "xsdb is not installed", "quartus_pgm is not installed", `"exit_code":3`} {
		if !strings.Contains(out, s) {
			t.Errorf("doctor --json does not say %q:\n%s", s, out)
		}
	}
}
