package program

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/labrunner/labrunner/drivers"
	"github.com/labrunner/labrunner/internal/syncbuf"
)

const wantScript = `# labrunner: configure the programmable logic of board zu-1 over JTAG.
set url "tcp:lab-host:3121"
set serial "210308A1B2C3"
set bitfile "/bits/my design \[v2\] \$x.bit"
proc labrunner_fail {msg} {
	puts stderr "labrunner: $msg"
	catch {puts stderr "labrunner: targets seen:\n[targets]"}
	exit 1
}
if {[catch {connect -url $url} err]} {
	labrunner_fail "cannot connect to hw_server at $url: $err"
}
# The PL target of the board's cable. On a Zynq UltraScale+ whose PL TAP is
# not in the chain, the PSU target, which configures the PL through the PCAP.
if {[catch {targets -set -filter {jtag_cable_serial =~ "210308A1B2C3*" && name =~ "*PL*"}} err]} {
	if {[catch {targets -set -filter {jtag_cable_serial =~ "210308A1B2C3*" && name =~ "PSU"}} err2]} {
		labrunner_fail "no PL or PSU target on the JTAG cable with serial $serial: $err"
	}
}
if {[catch {fpga -file $bitfile} err]} {
	labrunner_fail "fpga -file failed: $err"
}
puts "labrunner: configured"
catch {disconnect}
exit 0
`

// tclPrelude stands in for xsdb's commands when the script runs in a real
// Tcl shell: each call is recorded (arguments NUL-separated, calls
// separated by \x01); the PL target is missing when $::env(FAKE_PL) is 0.
const tclPrelude = `set ::rec [open $::env(FAKE_REC) w]
fconfigure $::rec -translation binary -encoding utf-8
proc record {name args} {
	puts -nonewline $::rec [join [concat [list $name] $args] "\x00"]
	puts -nonewline $::rec "\x01"
	flush $::rec
}
proc connect {args} { record connect {*}$args }
proc targets {args} {
	record targets {*}$args
	if {[llength $args] == 0} { return "  1  PS TAP\n  4  PSU" }
	if {$::env(FAKE_PL) eq "0" && [string match {*"\*PL\*"*} [lindex $args end]]} {
		error "no targets found with \"[lindex $args end]\". available targets: ..."
	}
}
proc fpga {args} { record fpga {*}$args }
proc disconnect {args} { record disconnect }
rename exit tcl_exit
proc exit {{code 0}} { record exit $code; close $::rec; tcl_exit $code }
source [lindex $::argv 0]
`

func readCalls(t *testing.T, file string) [][]string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var calls [][]string
	for _, c := range strings.Split(strings.TrimSuffix(string(b), "\x01"), "\x01") {
		calls = append(calls, strings.Split(c, "\x00"))
	}
	return calls
}

func TestXSDBScript(t *testing.T) {
	got := xsdbScript("zu-1", "tcp:lab-host:3121", "210308A1B2C3", "/bits/my design [v2] $x.bit")
	if got != wantScript {
		t.Fatalf("script:\n%s\nwant:\n%s", got, wantScript)
	}

	// Where a Tcl shell is installed, run the script in it with xsdb's
	// commands recorded, with and without a PL target on the cable.
	tclsh, err := exec.LookPath("tclsh")
	if err != nil {
		t.Log("no tclsh here: the script was checked as text only")
		return
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "program.tcl")
	prelude := filepath.Join(dir, "prelude.tcl")
	writeFile(t, script, got)
	writeFile(t, prelude, tclPrelude)
	plFilter := `jtag_cable_serial =~ "210308A1B2C3*" && name =~ "*PL*"`
	psuFilter := `jtag_cable_serial =~ "210308A1B2C3*" && name =~ "PSU"`
	for _, pl := range []string{"1", "0"} {
		rec := filepath.Join(dir, "calls"+pl)
		cmd := exec.Command(tclsh, prelude, script)
		cmd.Env = append(os.Environ(), "FAKE_REC="+rec, "FAKE_PL="+pl)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("PL=%s: tclsh: %v\n%s", pl, err, out)
		}
		want := [][]string{
			{"connect", "-url", "tcp:lab-host:3121"},
			{"targets", "-set", "-filter", plFilter},
		}
		if pl == "0" {
			want = append(want, []string{"targets", "-set", "-filter", psuFilter})
		}
		want = append(want,
			[]string{"fpga", "-file", "/bits/my design [v2] $x.bit"},
			[]string{"disconnect"},
			[]string{"exit", "0"})
		calls := readCalls(t, rec)
		if len(calls) != len(want) {
			t.Fatalf("PL=%s: calls %q, want %q", pl, calls, want)
		}
		for i := range want {
			equalArgv(t, calls[i], want[i])
		}
	}
}

func TestXSDBRunsScript(t *testing.T) {
	dir := fakeTools(t)
	recDir := t.TempDir()
	rec := filepath.Join(recDir, "argv")
	writeTool(t, dir, "xsdb", recordArgv(rec)+"cp \"$1\" '"+filepath.Join(recDir, "script.tcl")+"'\necho 'labrunner: configured'\n")
	bit := bitFile(t, "top.bit", []byte("bits"))
	stageDir := t.TempDir()
	var log syncbuf.Buffer
	x := &XSDB{Board: "zu-1", HWServer: "lab-host", Serial: "210308A1B2C3", StageDir: stageDir, Log: &log}
	if err := x.Program(context.Background(), drivers.Image{Path: bit}); err != nil {
		t.Fatal(err)
	}
	argv := readArgv(t, rec)
	if len(argv) != 1 || filepath.Base(argv[0]) != "program.tcl" || !strings.HasPrefix(argv[0], stageDir) {
		t.Fatalf("argv %q, want the script's path only", argv)
	}
	script, err := os.ReadFile(filepath.Join(recDir, "script.tcl"))
	if err != nil {
		t.Fatal(err)
	}
	if want := xsdbScript("zu-1", "tcp:lab-host:3121", "210308A1B2C3", bit); string(script) != want {
		t.Fatalf("script:\n%s\nwant:\n%s", script, want)
	}
	if entries, _ := os.ReadDir(stageDir); len(entries) != 0 {
		t.Fatalf("the script was left behind: %v", entries)
	}
	wantContains(t, log.String(), "# xsdb script", "fpga -file $bitfile", "labrunner: configured")
}

func TestXSDBRecognisesFailures(t *testing.T) {
	cases := []struct {
		name, output string
		class        drivers.Class
		reason       string
	}{
		{"no hw_server", "labrunner: cannot connect to hw_server at tcp:localhost:3121: Connection refused\nlabrunner: targets seen:\n",
			drivers.ClassInfra, "hw_server is not reachable"},
		{"no target", "labrunner: no PL or PSU target on the JTAG cable with serial X: no targets found with \"jtag_cable_serial =~ \"X*\" && name =~ \"*PL*\"\". available targets: none\n",
			drivers.ClassInfra, "no FPGA on the cable"},
		{"done low", "  0%    0MB   0.0MB/s  ??:?? ETA\r100%   25MB   1.7MB/s  00:15\nlabrunner: fpga -file failed: fpga configuration failed. DONE PIN is not HIGH\n",
			drivers.ClassInfra, "DONE stayed low"},
		{"idcode", "labrunner: fpga -file failed: bitstream is not compatible with the target device (idcode)\n",
			drivers.ClassSetup, "IDCODE mismatch"},
	}
	for _, c := range cases {
		t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
			dir := fakeTools(t)
			out := filepath.Join(t.TempDir(), "out")
			writeFile(t, out, c.output)
			writeTool(t, dir, "xsdb", "cat '"+out+"' >&2\nexit 1\n")
			x := &XSDB{Board: "zu-3", Serial: "X"}
			err := x.Program(context.Background(), drivers.Image{Path: bitFile(t, "a.bit", []byte("x"))})
			wantClass(t, err, c.class)
			wantContains(t, err.Error(), "zu-3", c.reason)
		})
	}
}

func TestXSDBTimeoutAndRefusals(t *testing.T) {
	dir := fakeTools(t)
	writeTool(t, dir, "xsdb", "sleep 30\n")
	bit := bitFile(t, "a.bit", []byte("x"))
	x := &XSDB{Board: "zu-1", Serial: "S1"}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := x.Program(ctx, drivers.Image{Path: bit}); !isTimeout(err) || drivers.ClassOf(err) != drivers.ClassInfra {
		t.Fatalf("want an infrastructure timeout: %v", err)
	}

	for _, bad := range []*XSDB{
		{Board: "zu-1"},               // no serial: would pick a cable by order
		{Board: "zu-1", Serial: "S*"}, // a glob in the filter
		{Board: "zu-1", Serial: "S1", HWServer: "host:99999"},
		{Board: "zu-1", Serial: "S1", HWServer: "[::1]:3121"},
	} {
		if err := bad.Program(context.Background(), drivers.Image{Path: bit}); drivers.ClassOf(err) != drivers.ClassSetup {
			t.Errorf("%+v: want a setup error, got %v", bad, err)
		}
	}
	err := x.Program(context.Background(), drivers.Image{Path: bitFile(t, "a.rbf", []byte("x"))})
	wantClass(t, err, drivers.ClassSetup)

	t.Setenv("PATH", t.TempDir())
	err = x.Program(context.Background(), drivers.Image{Path: bit})
	de := wantClass(t, err, drivers.ClassInfra)
	wantContains(t, err.Error(), "xsdb is not installed")
	wantContains(t, de.Hint, "Vivado", "tool:")
}

func TestParseHWServer(t *testing.T) {
	for in, want := range map[string]string{
		"localhost":       "tcp:localhost:3121",
		"lab-host:3121":   "tcp:lab-host:3121",
		"10.0.0.5:4000":   "tcp:10.0.0.5:4000",
		"a.example.org:1": "tcp:a.example.org:1",
	} {
		if got, err := parseHWServer(in); err != nil || got != want {
			t.Errorf("%q: %q %v, want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", ":3121", "host:", "host:0", "host:65536", "host:03121", "ho st", "host;exit", "-host", "h[1]"} {
		if _, err := parseHWServer(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
