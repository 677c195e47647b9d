package doctor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/labrunner/labrunner/boards/emu"
)

// A real lab as labrunner sees a rack of USB-UARTs: the boards' consoles
// and bridges are the emulated rack's pseudo-terminals (as `labrunner sim
// serve` offers them), the programming tools are stand-ins on PATH that
// answer as openFPGALoader 0.10.0 and Quartus do, and the fpga_manager is
// a sysfs tree in a temporary directory.

const emulatedThree = `lab: served
boards:
  - {name: e0, kind: tebf0808, emulated: {}, console: {port: emu}, bus: {uart_bridge: {port: emu}}, programmer: {type: emulated}}
  - {name: e1, kind: zcu102, emulated: {}, console: {port: emu}, bus: {uart_bridge: {port: emu}}, programmer: {type: emulated}}
  - {name: e2, kind: de5net, emulated: {}, console: {port: emu}, bus: {uart_bridge: {port: emu}}, programmer: {type: emulated}}
`

type bench struct {
	tools string // directory on PATH
	sysfs string
	lab   string // the real lab file's text
}

func writeTool(t *testing.T, dir, name, body string) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p+".tmp", []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(p+".tmp", p); err != nil {
		t.Fatal(err)
	}
}

// openFPGALoader 0.10.0's answers, the USB probe with serial 210249A1B2C3
// plugged in.
func fakeOpenFPGALoader(t *testing.T, dir, scan string) {
	list, _ := filepath.Abs("../drivers/program/openfpgaloader-0.10.0-list-fpga.txt")
	cables, _ := filepath.Abs("../drivers/program/testdata/openfpgaloader-0.10.0-list-cables.txt")
	writeTool(t, dir, "openFPGALoader", `case "$1" in
--Version) echo 'openFPGALoader v0.10.0';;
--list-fpga) /bin/cat '`+list+`';;
--list-cables) /bin/cat '`+cables+`';;
--scan-usb) printf '%s' '`+scan+`';;
*) echo "unexpected $*" >&2; exit 1;;
esac
`)
}

const scanWithCable = "empty\nBus device vid:pid       probe type      manufacturer serial               product\n" +
	"001 003    0x0403:0x6014 ft232H          Digilent     210249A1B2C3         Digilent USB Device\n"

func newBench(t *testing.T) *bench {
	t.Helper()
	lab := parse(t, emulatedThree)
	rack, err := emu.Start(lab, emu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rack.Close() })
	b := &bench{tools: t.TempDir(), sysfs: t.TempDir()}
	t.Setenv("PATH", b.tools)
	fakeOpenFPGALoader(t, b.tools, scanWithCable)
	writeTool(t, b.tools, "quartus_pgm", "echo 'Quartus Prime Programmer'\necho 'Version 20.1.0 Build 711 06/05/2020 SJ Lite Edition'\n")
	writeTool(t, b.tools, "jtagconfig", "echo '1) DE5-Net [1-1.2]'\necho '  029070DD   5SGXEA7H(1|2|3)/5SGXEA7K1/..'\n")
	// A Xilinx kernel's fpga_manager with its linux-xlnx attributes.
	mgr := filepath.Join(b.sysfs, "class", "fpga_manager", "fpga0")
	os.MkdirAll(mgr, 0o755)
	for f, v := range map[string]string{"state": "operating\n", "firmware": "", "flags": "0\n", "name": "Xilinx ZynqMP FPGA Manager\n"} {
		os.WriteFile(filepath.Join(mgr, f), []byte(v), 0o644)
	}
	fw := t.TempDir()
	ports := func(n string) (string, string) {
		c, err1 := rack.ConsolePath(n)
		br, err2 := rack.BridgePath(n)
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		return c, br
	}
	c0, b0 := ports("e0")
	c1, b1 := ports("e1")
	c2, b2 := ports("e2")
	b.lab = `lab: real-on-ptys
deadlines: {register: 2s, console: 10s}
boards:
  - name: te-0
    kind: tebf0808
    console: {port: ` + c0 + `}
    bus: {uart_bridge: {port: ` + b0 + `}}
    programmer: {type: fpga_manager, sysfs: ` + b.sysfs + `, firmware_dir: ` + fw + `}
    power: {type: command, on: [/bin/true], off: [/bin/true]}
  - name: zcu-0
    kind: zcu102
    console: {port: ` + c1 + `}
    bus: {uart_bridge: {port: ` + b1 + `}}
    programmer: {type: openfpgaloader, cable: digilent_hs2, serial: "210249A1B2C3"}
  - name: de5-0
    kind: de5net
    console: {port: ` + c2 + `}
    bus: {uart_bridge: {port: ` + b2 + `}}
    programmer: {type: quartus_pgm, cable: "DE5-Net [1-1.2]"}
`
	return b
}

func TestDoctorRealLabOnPseudoTerminals(t *testing.T) {
	b := newBench(t)
	r := Run(ctx(t), parse(t, b.lab), Options{LockDir: t.TempDir()})
	if r.ExitCode != 0 {
		t.Fatalf("exit %d:\n%s", r.ExitCode, table(r))
	}
	want(t, finding(t, r, "te-0", "bridge device"), OK, "character device", "readable and writable")
	want(t, finding(t, r, "te-0", "bridge INFO"), OK, "protocol 1", "921600 baud")
	want(t, finding(t, r, "te-0", "console prompt"), OK, "115200 baud")
	want(t, finding(t, r, "te-0", "fpga_manager"), OK, `state "operating"`)
	want(t, finding(t, r, "te-0", "power on"), OK, "not run")
	want(t, finding(t, r, "zcu-0", "openFPGALoader"), OK, "version 0.10.0")
	want(t, finding(t, r, "zcu-0", "part support"), OK, "xczu9eg", "zynqmp", "0x04738093")
	want(t, finding(t, r, "zcu-0", "cable type"), OK, "digilent_hs2")
	want(t, finding(t, r, "zcu-0", "cable"), OK, "serial 210249A1B2C3", "bus 001 device 003")
	want(t, finding(t, r, "de5-0", "quartus_pgm"), OK, "version 20.1.0")
	want(t, finding(t, r, "de5-0", "cable"), OK, "DE5-Net [1-1.2]", "029070DD")
}

// What goes wrong with tools on a real host: absent, hanging, failing, a
// cable not plugged, a cable name the tool does not know, a part it does
// not support.
func TestDoctorToolTrouble(t *testing.T) {
	cases := []struct {
		name  string
		setup func(t *testing.T, b *bench)
		exit  int
		board string
		check string
		says  []string
	}{
		{"openFPGALoader absent", func(t *testing.T, b *bench) { os.Remove(filepath.Join(b.tools, "openFPGALoader")) },
			3, "zcu-0", "openFPGALoader", []string{"not installed", "apt install openfpgaloader"}},
		{"openFPGALoader hangs", func(t *testing.T, b *bench) { writeTool(t, b.tools, "openFPGALoader", "/bin/sleep 30\n") },
			3, "zcu-0", "openFPGALoader", []string{"did not answer in time", "hangs"}},
		{"openFPGALoader fails", func(t *testing.T, b *bench) {
			writeTool(t, b.tools, "openFPGALoader", "echo 'openFPGALoader: error while loading shared libraries: libftdi1.so.2' >&2\nexit 127\n")
		}, 3, "zcu-0", "openFPGALoader", []string{"exit status 127", "libftdi1.so.2"}},
		{"cable not plugged", func(t *testing.T, b *bench) {
			fakeOpenFPGALoader(t, b.tools, "empty\nBus device vid:pid       probe type      manufacturer serial               product\n")
		}, 3, "zcu-0", "cable", []string{"no cable with serial 210249A1B2C3", "it sees no probe"}},
		{"another cable plugged", func(t *testing.T, b *bench) {
			fakeOpenFPGALoader(t, b.tools, strings.Replace(scanWithCable, "210249A1B2C3", "210249FFFFFF", 1))
		}, 3, "zcu-0", "cable", []string{"serial 210249A1B2C3", "210249FFFFFF"}},
		{"unknown cable name", func(t *testing.T, b *bench) { b.lab = strings.Replace(b.lab, "digilent_hs2", "digilent_hs9", 1) },
			2, "zcu-0", "cable type", []string{`does not know cable "digilent_hs9"`, "did you mean digilent_hs2?"}},
		{"part not supported", func(t *testing.T, b *bench) {
			b.lab = strings.Replace(b.lab, "kind: zcu102", "kind: ultra96", 1)
		}, 2, "zcu-0", "part support", []string{"0.10.0 does not support the ultra96's xczu3eg", "fpga_manager or xsdb"}},
		{"jtagconfig sees another cable", func(t *testing.T, b *bench) {
			writeTool(t, b.tools, "jtagconfig", "echo '1) USB-BlasterII [2-1]'\necho '  02B040DD   5CGTFD9(A5|C5|D5|E5)/..'\n")
		}, 3, "de5-0", "cable", []string{`does not list cable "DE5-Net [1-1.2]"`, "USB-BlasterII [2-1]"}},
		{"jtag chain broken", func(t *testing.T, b *bench) {
			writeTool(t, b.tools, "jtagconfig", "echo '1) DE5-Net [1-1.2]'\necho '  Unable to read device chain - JTAG chain broken'\n")
		}, 3, "de5-0", "cable", []string{"chain broken", "powered"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := newBench(t)
			tc.setup(t, b)
			start := time.Now()
			r := Run(ctx(t), parse(t, b.lab), Options{LockDir: t.TempDir(), ToolTimeout: 500 * time.Millisecond})
			if took := time.Since(start); took > 20*time.Second {
				t.Errorf("doctor took %v", took)
			}
			if r.ExitCode != tc.exit {
				t.Errorf("exit %d, want %d:\n%s", r.ExitCode, tc.exit, table(r))
			}
			want(t, finding(t, r, tc.board, tc.check), Problem, tc.says...)
		})
	}
}
