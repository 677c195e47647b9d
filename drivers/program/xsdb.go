package program

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/labrunner/labrunner/drivers"
)

// XSDB programs a Xilinx FPGA through Vivado's hw_server with xsdb: it
// writes a Tcl batch script (connect to hw_server, select the PL target of
// the JTAG cable with the board's serial number, fpga -file, exit) and runs
// `xsdb <script>`.
type XSDB struct {
	Board    string
	Tool     string // the program; default xsdb on PATH
	HWServer string // host[:port] of hw_server, default localhost:3121
	Serial   string // the JTAG cable's serial number as hw_server lists it (prefix match)
	// Timeout bounds a programming when the context has no earlier
	// deadline (default: the lab file's default program deadline).
	Timeout  time.Duration
	StageDir string // where the script and checked images go, default os.TempDir()
	Log      io.Writer
}

// Name says which cable through which hw_server.
func (x *XSDB) Name() string { return "xsdb:" + x.hwServer() + "/serial:" + x.Serial }

// SetLog sets the transcript writer.
func (x *XSDB) SetLog(w io.Writer) { x.Log = w }

func (x *XSDB) hwServer() string {
	if x.HWServer == "" {
		return "localhost:3121"
	}
	return x.HWServer
}

func (x *XSDB) tool() tool {
	return tool{name: "xsdb", path: x.Tool,
		install: "install Vivado Lab Edition or Vitis (xsdb is in their bin directory) and source its settings64.sh"}
}

var hostRe = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?$`)

// parseHWServer checks host[:port] and returns the xsdb URL tcp:host:port.
func parseHWServer(s string) (string, error) {
	host, port := s, "3121"
	if i := strings.LastIndexByte(s, ':'); i >= 0 {
		host, port = s[:i], s[i+1:]
	}
	if !hostRe.MatchString(host) {
		return "", fmt.Errorf("hw_server %q: %q is not a host name or IPv4 address", s, host)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 || port != strconv.Itoa(n) {
		return "", fmt.Errorf("hw_server %q: %q is not a TCP port", s, port)
	}
	return "tcp:" + host + ":" + port, nil
}

// xsdbScript is the Tcl batch script. Every value from outside is either
// validated to a harmless alphabet (the serial, inside xsdb's filter
// syntax) or quoted with tclQuote.
func xsdbScript(board, url, serial, file string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# labrunner: configure the programmable logic of board %s over JTAG.\n", safeFileName(board))
	fmt.Fprintf(&b, "set url %s\n", tclQuote(url))
	fmt.Fprintf(&b, "set serial %s\n", tclQuote(serial))
	fmt.Fprintf(&b, "set bitfile %s\n", tclQuote(file))
	b.WriteString(`proc labrunner_fail {msg} {
	puts stderr "labrunner: $msg"
	catch {puts stderr "labrunner: targets seen:\n[targets]"}
	exit 1
}
if {[catch {connect -url $url} err]} {
	labrunner_fail "cannot connect to hw_server at $url: $err"
}
# The PL target of the board's cable. On a Zynq UltraScale+ whose PL TAP is
# not in the chain, the PSU target, which configures the PL through the PCAP.
`)
	fmt.Fprintf(&b, "if {[catch {targets -set -filter {jtag_cable_serial =~ \"%s*\" && name =~ \"*PL*\"}} err]} {\n", serial)
	fmt.Fprintf(&b, "\tif {[catch {targets -set -filter {jtag_cable_serial =~ \"%s*\" && name =~ \"PSU\"}} err2]} {\n", serial)
	b.WriteString(`		labrunner_fail "no PL or PSU target on the JTAG cable with serial $serial: $err"
	}
}
if {[catch {fpga -file $bitfile} err]} {
	labrunner_fail "fpga -file failed: $err"
}
puts "labrunner: configured"
catch {disconnect}
exit 0
`)
	return b.String()
}

// xsdbRules recognise what the script and xsdb report.
var xsdbRules = []rule{
	{phrases: []string{"cannot connect to hw_server", "connection refused", "no route to host", "could not connect"},
		class: drivers.ClassInfra, priority: 2, reason: "hw_server is not reachable",
		hint: "start hw_server on the host that has the cable (hw_server -d), or fix cable: (host:port of hw_server) in the lab file"},
	{phrases: []string{"no pl or psu target on the jtag cable", "no targets found"},
		class: drivers.ClassInfra, priority: 3, reason: "hw_server sees no FPGA on the cable with this serial",
		hint: "check that the cable with this serial is plugged into hw_server's host (xsdb: jtag targets lists cables) and that the board is powered; fix serial: if it names another cable"},
	{phrases: []string{"idcode", "not compatible", "does not match", "doesn't match", "incompatible", "wrong device"},
		class: drivers.ClassSetup, priority: 4, reason: "the device on this cable is not the FPGA the bitstream is for (IDCODE mismatch)",
		hint: "check that serial: binds this board's cable and not a neighbour's, and that the bitstream was built for this board's part"},
	{phrases: []string{"couldn't open", "cannot open", "no such file", "invalid bitstream", "not a valid bit", "unable to read"},
		class: drivers.ClassSetup, priority: 4, reason: "xsdb could not read the bitstream",
		hint: "check that the file is a complete .bit or .bin"},
	{phrases: []string{"done pin is not high", "done pin", "fpga configuration failed"},
		class: drivers.ClassInfra, priority: 4, reason: "the FPGA did not finish configuration (DONE stayed low)",
		hint: "check that the bitstream was built for this board's part, the board's power, and (Zynq MPSoC) that the PS has booted"},
	{re: regexp.MustCompile(`^labrunner: |(?i)^error`), keys: []string{"labrunner: ", "error"},
		class: drivers.ClassInfra, priority: 1, reason: "xsdb reported an error",
		hint: "see xsdb's output; check hw_server, the cable and the bitstream"},
}

// Check finds the tool.
func (x *XSDB) Check(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if _, err := parseHWServer(x.hwServer()); err != nil {
		return drivers.Setup(x.Board, "hw_server", "for xsdb, cable: names the hw_server as host or host:port", err)
	}
	_, err := x.tool().resolve(x.Board)
	return err
}

// Program configures the FPGA with img (.bit or .bin).
func (x *XSDB) Program(ctx context.Context, img drivers.Image) error {
	ctx, cancel := bounded(ctx, x.Timeout)
	defer cancel()
	op := "xsdb: load " + img.Path + " through hw_server " + x.hwServer() + ", cable serial " + x.Serial
	if ext := imageExt(img); ext != "bit" && ext != "bin" {
		return drivers.Setup(x.Board, op, "give the design's .bit (or .bin)", fmt.Errorf("xsdb's fpga command does not load %q files", ext))
	}
	url, err := parseHWServer(x.hwServer())
	if err != nil {
		return drivers.Setup(x.Board, op, "for xsdb, cable: names the hw_server as host or host:port", err)
	}
	if !validSerial(x.Serial) {
		return drivers.Setup(x.Board, op, "set serial: to the cable's serial number as hw_server lists it",
			fmt.Errorf("cable serial %q is empty or not a serial number (cables are never picked by enumeration order)", x.Serial))
	}
	if !utf8.ValidString(img.Path) && len(img.Data) == 0 {
		return drivers.Setup(x.Board, op, "rename the file to a UTF-8 name", fmt.Errorf("the file name is not valid UTF-8, which a Tcl script cannot carry"))
	}
	path, err := x.tool().resolve(x.Board)
	if err != nil {
		return err
	}
	if imageExt(img) == "bin" && len(img.Raw) > 0 {
		// Like Vivado's hardware manager, xsdb's fpga command loads a .bin
		// in the .bit's byte order (write_bitstream -bin_file).
		img.Data = img.Raw
	}
	st, err := stage(x.Board, x.StageDir, img)
	if err != nil {
		return err
	}
	defer st.cleanup()

	dir := x.StageDir
	if dir == "" {
		dir = os.TempDir()
	}
	tmp, err := os.MkdirTemp(dir, "labrunner-xsdb-")
	if err != nil {
		return drivers.Infra(x.Board, op, "the staging directory must be writable (TMPDIR)", err)
	}
	defer os.RemoveAll(tmp)
	script := xsdbScript(x.Board, url, x.Serial, st.path)
	scriptPath := filepath.Join(tmp, "program.tcl")
	if err := os.WriteFile(scriptPath, []byte(script), 0o600); err != nil {
		return drivers.Infra(x.Board, op, "the staging directory must be writable (TMPDIR)", err)
	}
	logf(x.Log, "# xsdb script %s:\n%s", scriptPath, script)
	return run{board: x.Board, name: "xsdb", path: path, args: []string{scriptPath}, log: x.Log,
		rules: xsdbRules, op: op,
		hint: "see xsdb's output; check hw_server, the cable and the bitstream"}.do(ctx)
}

// ToolPath finds xsdb (the lab file's tool:, else PATH).
func (x *XSDB) ToolPath() (string, error) { return x.tool().resolve(x.Board) }

// HWServerAddr is hw_server's host:port.
func (x *XSDB) HWServerAddr() (string, error) {
	u, err := parseHWServer(x.hwServer())
	if err != nil {
		return "", err
	}
	return strings.TrimPrefix(u, "tcp:"), nil
}
