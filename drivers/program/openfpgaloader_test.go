package program

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/labrunner/labrunner/drivers"
	"github.com/labrunner/labrunner/internal/syncbuf"
)

// fakeUSB makes a sysfs tree with one USB device at port.
func fakeUSB(t *testing.T, port string, bus, dev int) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "sys")
	d := filepath.Join(root, "bus", "usb", "devices", port)
	writeFile(t, filepath.Join(d, "busnum"), strconv.Itoa(bus)+"\n")
	writeFile(t, filepath.Join(d, "devnum"), strconv.Itoa(dev)+"\n")
	return root
}

func TestOpenFPGALoaderArgvByUSBPath(t *testing.T) {
	dir := fakeTools(t)
	rec := filepath.Join(t.TempDir(), "argv")
	writeTool(t, dir, "openFPGALoader", recordArgv(rec)+"echo 'Load SRAM: [==========] 100.00%'\nexit 0\n")
	sys := fakeUSB(t, "1-1.2", 3, 17)
	bit := bitFile(t, "exanet.bit", []byte("bits"))
	var log syncbuf.Buffer
	o := &OpenFPGALoader{Board: "zu-1", Cable: "digilent", USBPath: "1-1.2", Sysfs: sys, Log: &log}
	if err := o.Program(context.Background(), drivers.Image{Path: bit}); err != nil {
		t.Fatal(err)
	}
	equalArgv(t, readArgv(t, rec), []string{"-c", "digilent", "--busdev-num", "3:17", "--bitstream", bit})
	wantContains(t, log.String(), "--busdev-num 3:17", "Load SRAM", "openFPGALoader exited 0")
	if err := o.Check(context.Background()); err != nil {
		t.Fatalf("Check: %v", err)
	}
}

func TestOpenFPGALoaderArgvBySerial(t *testing.T) {
	dir := fakeTools(t)
	rec := filepath.Join(t.TempDir(), "argv")
	writeTool(t, dir, "openFPGALoader", recordArgv(rec)+"exit 0\n")
	rbf := bitFile(t, "shoal.rbf", []byte("rbf"))
	o := &OpenFPGALoader{Board: "de5-1", Cable: "usb-blasterII", Serial: "FT12AB34"}
	if err := o.Program(context.Background(), drivers.Image{Path: rbf}); err != nil {
		t.Fatal(err)
	}
	equalArgv(t, readArgv(t, rec), []string{"-c", "usb-blasterII", "--ftdi-serial", "FT12AB34", "--bitstream", rbf})
}

// With the checked bytes in the image, the tool loads a private copy of
// them, not the file on disk (which may have changed since the check), and
// the copy is removed afterwards.
func TestOpenFPGALoaderLoadsTheCheckedBytes(t *testing.T) {
	dir := fakeTools(t)
	recDir := t.TempDir()
	rec := filepath.Join(recDir, "argv")
	// Copy the file named after --bitstream.
	writeTool(t, dir, "openFPGALoader", recordArgv(rec)+
		"while [ $# -gt 0 ]; do if [ \"$1\" = --bitstream ]; then cp \"$2\" '"+filepath.Join(recDir, "loaded")+"'; fi; shift; done\n")
	stageDir := t.TempDir()
	bit := bitFile(t, "my design;v2 [new].bit", []byte("changed on disk since the check"))
	checked := []byte("the checked bitstream bytes")
	o := &OpenFPGALoader{Board: "zu-1", Cable: "ft2232", Serial: "ABC", StageDir: stageDir}
	if err := o.Program(context.Background(), drivers.Image{Path: bit, Data: checked}); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(recDir, "loaded"))
	if err != nil || !bytes.Equal(got, checked) {
		t.Fatalf("the tool loaded %q (%v), want the checked bytes", got, err)
	}
	argv := readArgv(t, rec)
	loaded := argv[len(argv)-1]
	if filepath.Base(loaded) != "my_design_v2__new_.bit" || !strings.HasPrefix(loaded, stageDir) {
		t.Fatalf("staged as %q", loaded)
	}
	if entries, _ := os.ReadDir(stageDir); len(entries) != 0 {
		t.Fatalf("staging left %v behind", entries)
	}
}

func TestOpenFPGALoaderRecognisesFailures(t *testing.T) {
	cases := []struct {
		name   string
		output string
		class  drivers.Class
		reason string
	}{
		{"no cable", "write to ram\n\x1b[31munable to open ftdi device: -3 (device not found)\x1b[0m\n\x1b[31mJTAG init failed with: unable to open ftdi device\x1b[0m\n",
			drivers.ClassInfra, "no JTAG cable found"},
		{"idcode", "write to ram\nJTAG init failed with: Unknown device with IDCODE: 0x0362d093 (manufacturer: 0x049 (xilinx), part: 0x1b vers: 0x0\n",
			drivers.ClassSetup, "IDCODE mismatch"},
		{"powered off", "write to ram\nError: no device found\n", drivers.ClassInfra, "no device on its JTAG chain"},
		{"tdo stuck", "JTAG init failed with: TDO is stuck at 0\n", drivers.ClassInfra, "no device on its JTAG chain"},
		{"unknown cable", "error : digilent_hs9 not found\n", drivers.ClassSetup, "does not know this cable"},
		{"serial on non-ftdi", "Error: FTDI serial param is for FTDI cables.\n", drivers.ClassSetup, "FTDI cables only"},
		{"bad file", "Open file /x/a.bit Error: Unable to open '/x/a.bit': No such file\n", drivers.ClassSetup, "could not read the bitstream"},
		{"zynqmp", "ZynqMP error: first device is not the PL TAP -> 0x14710093\n", drivers.ClassSetup, "IDCODE mismatch"},
	}
	for _, c := range cases {
		t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
			dir := fakeTools(t)
			out := filepath.Join(t.TempDir(), "out")
			writeFile(t, out, c.output)
			writeTool(t, dir, "openFPGALoader", "cat '"+out+"' >&2\nexit 1\n")
			o := &OpenFPGALoader{Board: "zu-9", Cable: "digilent", Serial: "S1"}
			err := o.Program(context.Background(), drivers.Image{Path: bitFile(t, "a.bit", []byte("x"))})
			de := wantClass(t, err, c.class)
			wantContains(t, err.Error(), "zu-9", "exited with status 1", c.reason)
			if de.Hint == "" {
				t.Fatal("no hint")
			}
		})
	}
}

func TestOpenFPGALoaderTimeout(t *testing.T) {
	dir := fakeTools(t)
	writeTool(t, dir, "openFPGALoader", "echo 'write to ram'\nsleep 30\n")
	o := &OpenFPGALoader{Board: "zu-1", Cable: "digilent", Serial: "S1", Timeout: 300 * time.Millisecond}
	err := o.Program(context.Background(), drivers.Image{Path: bitFile(t, "a.bit", []byte("x"))})
	wantClass(t, err, drivers.ClassInfra)
	if !isTimeout(err) {
		t.Fatalf("want a timeout: %v", err)
	}
	wantContains(t, err.Error(), "was killed", "write to ram")
}

func TestOpenFPGALoaderRefusals(t *testing.T) {
	dir := fakeTools(t)
	rec := filepath.Join(t.TempDir(), "argv")
	writeTool(t, dir, "openFPGALoader", recordArgv(rec)+"exit 0\n")
	bit := bitFile(t, "a.bit", []byte("x"))

	// The cable's port has nothing plugged in.
	o := &OpenFPGALoader{Board: "zu-1", Cable: "digilent", USBPath: "1-4", Sysfs: fakeUSB(t, "1-1.2", 1, 2)}
	err := o.Program(context.Background(), drivers.Image{Path: bit})
	de := wantClass(t, err, drivers.ClassInfra)
	wantContains(t, err.Error(), "USB port 1-4")
	wantContains(t, de.Hint, "lsusb -t")
	if o.Check(context.Background()) == nil {
		t.Fatal("Check passes with nothing at the port")
	}

	// Not bound at all.
	o = &OpenFPGALoader{Board: "zu-1", Cable: "digilent"}
	wantClass(t, o.Program(context.Background(), drivers.Image{Path: bit}), drivers.ClassSetup)

	// .sof is not for openFPGALoader.
	o = &OpenFPGALoader{Board: "de5", Cable: "usb-blasterII", Serial: "S"}
	err = o.Program(context.Background(), drivers.Image{Path: bitFile(t, "a.sof", []byte("x"))})
	de = wantClass(t, err, drivers.ClassSetup)
	wantContains(t, de.Hint, ".rbf")

	// The bitstream file does not exist.
	err = o.Program(context.Background(), drivers.Image{Path: filepath.Join(t.TempDir(), "gone.rbf")})
	wantClass(t, err, drivers.ClassSetup)

	if _, err := os.Stat(rec); err == nil {
		t.Fatal("the tool ran although the programming was refused")
	}

	// The tool is missing.
	t.Setenv("PATH", t.TempDir())
	err = o.Program(context.Background(), drivers.Image{Path: bit})
	de = wantClass(t, err, drivers.ClassInfra)
	wantContains(t, err.Error(), "openFPGALoader is not installed")
	wantContains(t, de.Hint, "tool:")
	if o.Check(context.Background()) == nil {
		t.Fatal("Check passes with the tool missing")
	}
}

func TestParseUSBPath(t *testing.T) {
	for _, ok := range []string{"1-1", "1-1.2", "3-2.4.1", "12-10.3"} {
		if _, err := ParseUSBPath(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "1", "1-", "1-0", "0-1", "1-1.", "3:7", "1-1.2:1.0", "../1-1", "1-1/..", "usb1", "1-1.2.3.4.5.6.7.8"} {
		if _, err := ParseUSBPath(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	_, err := ParseUSBPath("3:7")
	wantContains(t, err.Error(), "changes at every replug")
}

// FuzzParseUSBPath: whatever a lab file says, an accepted USB path is one
// plain sysfs directory name (it is joined into a sysfs path).
func FuzzParseUSBPath(f *testing.F) {
	for _, s := range []string{"1-1.2", "3:7", "1-1.2:1.0", "../..", "1-1/../../x", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParseUSBPath(s)
		if err != nil {
			if p != "" {
				t.Fatal("a path returned with an error")
			}
			return
		}
		if p != s || strings.ContainsAny(p, "/\\:\x00 ") || strings.Contains(p, "..") || filepath.Base(p) != p {
			t.Fatalf("accepted %q", s)
		}
	})
}

// A missing cable's error names the tool, quotes what it printed, and names
// the cable and its binding as the lab file gives them; an unknown cable
// name is the lab file's mistake even when the tool then fails to open a
// device.
func TestOpenFPGALoaderNamesTheCable(t *testing.T) {
	dir := fakeTools(t)
	// openFPGALoader 0.10.0's own words for an unplugged FTDI cable.
	writeTool(t, dir, "openFPGALoader", "echo 'unable to open ftdi device: -3 (device not found)' >&2\necho 'JTAG init failed with: unable to open ftdi device' >&2\nexit 1\n")
	o := &OpenFPGALoader{Board: "zu-2", Cable: "digilent_hs2", Serial: "210249A1B2C3"}
	err := o.Program(context.Background(), drivers.Image{Path: bitFile(t, "a.bit", []byte("x"))})
	wantClass(t, err, drivers.ClassInfra)
	wantContains(t, err.Error(), "openFPGALoader", "unable to open ftdi device: -3", "digilent_hs2", "serial 210249A1B2C3", "zu-2")

	sys := fakeUSB(t, "1-1.2", 3, 17)
	o = &OpenFPGALoader{Board: "zu-2", Cable: "digilent_hs2", USBPath: "1-1.2", Sysfs: sys}
	err = o.Program(context.Background(), drivers.Image{Path: bitFile(t, "a.bit", []byte("x"))})
	wantContains(t, err.Error(), "digilent_hs2", "USB port 1-1.2")

	writeTool(t, dir, "openFPGALoader", "echo 'error : digilent_hs9 not found' >&2\necho 'unable to open ftdi device: -3 (device not found)' >&2\nexit 1\n")
	o = &OpenFPGALoader{Board: "zu-2", Cable: "digilent_hs9", Serial: "S1"}
	err = o.Program(context.Background(), drivers.Image{Path: bitFile(t, "a.bit", []byte("x"))})
	wantClass(t, err, drivers.ClassSetup)
	wantContains(t, err.Error(), "does not know this cable", "digilent_hs9")
}

// openFPGALoader loads a .bin as it is: it gets the configuration data in
// the .bit's byte order even when the .bin given was fpga_manager's swapped
// one (Image.Raw).
func TestOpenFPGALoaderLoadsBinInBitOrder(t *testing.T) {
	dir := fakeTools(t)
	recDir := t.TempDir()
	writeTool(t, dir, "openFPGALoader", "while [ $# -gt 0 ]; do if [ \"$1\" = --bitstream ]; then cp \"$2\" '"+filepath.Join(recDir, "loaded")+"'; fi; shift; done\n")
	raw := []byte{0xAA, 0x99, 0x55, 0x66, 1, 2, 3, 4}
	swapped := []byte{0x66, 0x55, 0x99, 0xAA, 4, 3, 2, 1}
	o := &OpenFPGALoader{Board: "zu-1", Cable: "ft2232", Serial: "ABC"}
	if err := o.Program(context.Background(), drivers.Image{Path: "d.bin", Data: swapped, Bin: swapped, Raw: raw}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(recDir, "loaded")); !bytes.Equal(got, raw) {
		t.Fatalf("loaded % x, want the .bit byte order % x", got, raw)
	}
}

func TestFormats(t *testing.T) {
	for _, c := range []struct{ typ, vendor, want string }{
		{"fpga_manager", "xilinx", "bit,bin"},
		{"openfpgaloader", "xilinx", "bit,bin"},
		{"openfpgaloader", "intel", "rbf"},
		{"quartus_pgm", "intel", "sof"},
		{"xsdb", "xilinx", "bit,bin"},
		{"emulated", "intel", ""},
	} {
		if got := strings.Join(Formats(c.typ, c.vendor), ","); got != c.want {
			t.Errorf("Formats(%s, %s) = %q, want %q", c.typ, c.vendor, got, c.want)
		}
	}
}
