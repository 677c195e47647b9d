// Package program configures FPGAs: through the Linux fpga_manager sysfs
// interface (Zynq UltraScale+ MPSoC boards programming themselves), and
// through the JTAG tools openFPGALoader, Vivado's xsdb (via hw_server) and
// Quartus' quartus_pgm (Stratix V, with the PCIe remove/rescan a board on a
// host's PCIe needs). Every programmer implements drivers.Programmer.
//
// External tools run from an argument vector, never through a shell, in
// their own process group, under the context's deadline; on timeout the
// whole group is killed. Their output is kept: all of it goes to an optional
// transcript writer (SetLog), the last few KiB go into errors, and the
// failure messages each tool is known to print are recognised and turned
// into errors that say what to check (cable, power, wrong device, file).
//
// JTAG cables are bound by USB port path or serial number, never by
// enumeration order (docs/architecture.md, "Lessons").
package program

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/labrunner/labrunner/drivers"
)

// LogSetter is implemented by every programmer of this package: what the
// programmer does and everything its tool prints go to w, the run
// directory's transcript. A nil w turns the transcript off.
type LogSetter interface {
	SetLog(w io.Writer)
}

// Checker is implemented by every programmer of this package: Check looks
// at what programming will need (the tool, the cable's USB port, the
// fpga_manager, the firmware directory) without touching the FPGA, for a
// board's quick health check before a plan uses it.
type Checker interface {
	Check(ctx context.Context) error
}

// Types lists the programmer types New builds ("emulated" is built
// by boards/emu).
var Types = []string{"fpga_manager", "openfpgaloader", "xsdb", "quartus_pgm"}

// DefaultTimeout bounds one programming when the caller's context has no
// deadline (the lab file's default program deadline is the same).
const DefaultTimeout = 2 * time.Minute

// Config is a board's programmer as its lab entry gives it; the driver
// knows nothing of the lab file (boards.Programmer binds one to the other).
type Config struct {
	Type                         string // fpga_manager, openfpgaloader, xsdb, quartus_pgm
	Sysfs, FirmwareDir, Manager  string // fpga_manager
	Cable, USBPath, Serial, Tool string // JTAG tools
	PCIDevice                    string // a board on a host's PCIe: removed before programming, rescanned after
	Where                        string // the entry's file:line, for messages ("" when not from a file)
}

// New builds the programmer c describes.
// kindVendor is the board kind's vendor ("xilinx", "intel"; "" skips the
// vendor check). Bindings (USB path, serial, PCIe address) are checked here;
// the tool, the cable and sysfs are looked at only when programming (or by
// Check), so that a lab file can be validated on a machine without them.
func New(board string, p Config, kindVendor string) (drivers.Programmer, error) {
	op := "programmer"
	if p.Where != "" {
		op = "programmer at " + p.Where
	}
	bad := func(hint string, format string, args ...any) error {
		return drivers.Setup(board, op, hint, fmt.Errorf(format, args...))
	}
	vendor := strings.ToLower(kindVendor)
	needVendor := func(want string) error {
		if vendor != "" && vendor != want {
			return bad("choose a programmer that fits the board kind (see boards.Kind.Programmers)",
				"programmer type %q programs %s FPGAs, but the board kind is a %s board", p.Type, want, vendor)
		}
		return nil
	}
	// unused refuses fields the type does not read: a usb_path that is
	// silently ignored would leave the cable bound some other way.
	unused := func(hint string, fields ...string) error {
		if hint == "" {
			hint = "remove the field, or choose the programmer type it belongs to"
		}
		for i := 0; i+1 < len(fields); i += 2 {
			if fields[i+1] != "" {
				return bad(hint, "field %s is not used by programmer type %q", fields[i], p.Type)
			}
		}
		return nil
	}

	switch p.Type {
	case "fpga_manager":
		if err := needVendor("xilinx"); err != nil {
			return nil, err
		}
		if err := unused("", "cable", p.Cable, "usb_path", p.USBPath, "serial", p.Serial,
			"tool", p.Tool, "pci_device", p.PCIDevice); err != nil {
			return nil, err
		}
		mgr := p.Manager
		if mgr == "" {
			mgr = "fpga0"
		}
		if !validName(mgr) {
			return nil, bad("name the manager as it appears in /sys/class/fpga_manager, e.g. fpga0",
				"manager %q is not a plain sysfs directory name", mgr)
		}
		return &FPGAManager{Board: board, Sysfs: p.Sysfs, FirmwareDir: p.FirmwareDir, Manager: mgr}, nil

	case "openfpgaloader":
		if err := unused("", "manager", p.Manager, "firmware_dir", p.FirmwareDir,
			"pci_device", p.PCIDevice); err != nil {
			return nil, err
		}
		if p.Cable == "" {
			return nil, bad("set cable: to openFPGALoader's cable name (openFPGALoader --list-cables), e.g. digilent, ft2232, usb-blasterII",
				"openfpgaloader needs a cable")
		}
		if !validName(p.Cable) {
			return nil, bad("use the cable name openFPGALoader --list-cables prints", "cable %q is not an openFPGALoader cable name", p.Cable)
		}
		if p.USBPath == "" && p.Serial == "" {
			return nil, bad("set usb_path: (the port path under /sys/bus/usb/devices, see lsusb -t) or serial: (the FTDI serial number)",
				"openfpgaloader needs the cable bound by usb_path or serial, never by enumeration order")
		}
		if p.USBPath != "" {
			if _, err := ParseUSBPath(p.USBPath); err != nil {
				return nil, drivers.Setup(board, op, usbPathHint, err)
			}
		}
		if p.Serial != "" && !validSerial(p.Serial) {
			return nil, bad("give the serial number exactly as the cable reports it (letters, digits, - and _)",
				"serial %q has characters a cable serial number does not have", p.Serial)
		}
		return &OpenFPGALoader{Board: board, Tool: p.Tool, Cable: p.Cable, USBPath: p.USBPath,
			Serial: p.Serial, Sysfs: p.Sysfs}, nil

	case "xsdb":
		if err := needVendor("xilinx"); err != nil {
			return nil, err
		}
		if err := unused("", "manager", p.Manager, "firmware_dir", p.FirmwareDir,
			"pci_device", p.PCIDevice, "sysfs", p.Sysfs); err != nil {
			return nil, err
		}
		if err := unused("hw_server names JTAG cables by serial number: use serial: instead", "usb_path", p.USBPath); err != nil {
			return nil, err
		}
		if p.Serial == "" {
			return nil, bad("set serial: to the cable's serial number as hw_server lists it (xsdb: jtag targets), e.g. 210308A12345",
				"xsdb needs the JTAG cable's serial number (cables are never picked by enumeration order)")
		}
		if !validSerial(p.Serial) {
			return nil, bad("give the serial number exactly as hw_server lists it (letters, digits, - and _)",
				"serial %q has characters a cable serial number does not have", p.Serial)
		}
		hw := p.Cable
		if hw == "" {
			hw = "localhost:3121"
		}
		if _, err := parseHWServer(hw); err != nil {
			return nil, drivers.Setup(board, op, "for xsdb, cable: names the hw_server as host or host:port (default localhost:3121)", err)
		}
		return &XSDB{Board: board, Tool: p.Tool, HWServer: hw, Serial: p.Serial}, nil

	case "quartus_pgm":
		if err := needVendor("intel"); err != nil {
			return nil, err
		}
		if err := unused("", "manager", p.Manager, "firmware_dir", p.FirmwareDir); err != nil {
			return nil, err
		}
		cable, err := quartusCable(p.Cable, p.USBPath, p.Serial)
		if err != nil {
			return nil, drivers.Setup(board, op, "name the cable as jtagconfig lists it, with its USB port, e.g. cable: \"DE5-Net [1-1.2]\" (or cable: DE5-Net and usb_path: 1-1.2)", err)
		}
		q := &QuartusPGM{Board: board, Tool: p.Tool, Cable: cable, Sysfs: p.Sysfs}
		if p.PCIDevice != "" {
			addr, err := ParsePCIAddress(p.PCIDevice)
			if err != nil {
				return nil, drivers.Setup(board, op, "give the device's address as lspci -D prints it, e.g. 0000:01:00.0", err)
			}
			q.PCIDevice = addr
		}
		return q, nil

	case "emulated":
		return nil, bad("emulated boards are programmed by the emulator (boards/emu); the runner takes their programmer from there",
			"programmer type \"emulated\" is not built by drivers/program")
	case "":
		return nil, bad("set type: to one of "+strings.Join(Types, ", ")+" or emulated", "the programmer has no type")
	}
	return nil, bad("use one of "+strings.Join(Types, ", ")+" or emulated", "unknown programmer type %q", p.Type)
}

// Formats lists the bitstream formats a programmer type loads on a board
// of vendor ("xilinx", "intel"), in its order of preference (for
// bitstreams.Catalogue.FileFor); nil for "emulated", which loads every
// format the catalogue lists. An fpga_manager loads the .bit converted to
// its byte-swapped .bin (or a .bin of either order, converted); the JTAG
// tools load a .bit as it is and a .bin in the .bit's byte order (converted
// when it is not); quartus_pgm's JTAG mode loads a .sof only; openFPGALoader
// loads an Intel part's .rbf.
func Formats(typ, vendor string) []string {
	switch typ {
	case "fpga_manager", "xsdb":
		return []string{"bit", "bin"}
	case "quartus_pgm":
		return []string{"sof"}
	case "openfpgaloader":
		if strings.EqualFold(vendor, "intel") {
			return []string{"rbf"}
		}
		return []string{"bit", "bin"}
	}
	return nil
}

// validName accepts the names that end up as one sysfs path element or one
// tool argument naming a thing: no separators, no spaces, nothing a tool
// could read as an option.
func validName(s string) bool {
	if s == "" || s == "." || s == ".." || s[0] == '-' || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}

// validSerial accepts cable serial numbers. They go into a glob filter of
// hw_server and onto a command line, so glob and quoting characters are out.
func validSerial(s string) bool {
	if s == "" || s[0] == '-' || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// safeFileName turns s into a file name made of letters, digits, '.', '-'
// and '_' only, so that no tool syntax (Tcl, quartus_pgm's "p;file@1") and no
// shell in a transcript can misread it.
func safeFileName(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	out := strings.TrimLeft(b.String(), ".-")
	if len(out) > 100 {
		out = out[len(out)-100:]
	}
	return out
}

// imageExt returns the lower-case extension of the image's file name,
// without the dot.
func imageExt(img drivers.Image) string {
	return strings.TrimPrefix(strings.ToLower(filepath.Ext(img.Path)), ".")
}

// staged is an image file as a tool will read it.
type staged struct {
	path    string
	cleanup func()
}

// stage returns the file a tool should load. When the image carries its
// checked bytes (img.Data), they are written to a private directory under a
// safe name and that copy is loaded: the tool then loads exactly what was
// checked, even if the file on disk changed since, and no file name can
// break the tool's own syntax. Without Data the file is loaded where it is.
func stage(board, dir string, img drivers.Image) (staged, error) {
	op := "stage " + img.Path
	if img.Path == "" {
		return staged{}, drivers.Setup(board, "stage image", "the runner must pass the bitstream's path", fmt.Errorf("image has no file name"))
	}
	if len(img.Data) == 0 {
		if _, err := os.Stat(img.Path); err != nil {
			return staged{}, drivers.Setup(board, op, "check the bitstream path in the catalogue or the plan", err)
		}
		abs, err := filepath.Abs(img.Path)
		if err != nil {
			return staged{}, drivers.Setup(board, op, "check the bitstream path", err)
		}
		return staged{path: abs, cleanup: func() {}}, nil
	}
	if dir == "" {
		dir = os.TempDir()
	}
	tmp, err := os.MkdirTemp(dir, "labrunner-program-")
	if err != nil {
		return staged{}, drivers.Infra(board, op, "the staging directory must be writable (TMPDIR)", err)
	}
	// Tools tell formats by the extension: keep it, in lower case.
	ext := filepath.Ext(filepath.Base(img.Path))
	base := safeFileName(strings.TrimSuffix(filepath.Base(img.Path), ext))
	if base == "" {
		base = "image"
	}
	if ext = safeFileName(strings.TrimPrefix(ext, ".")); ext != "" {
		base += "." + strings.ToLower(ext)
	}
	path := filepath.Join(tmp, base)
	if err := os.WriteFile(path, img.Data, 0o600); err != nil {
		os.RemoveAll(tmp)
		return staged{}, drivers.Infra(board, op, "check free space in the staging directory (TMPDIR)", err)
	}
	return staged{path: path, cleanup: func() { os.RemoveAll(tmp) }}, nil
}

// bounded returns ctx bounded by timeout (or the default program deadline)
// when it has no earlier deadline.
func bounded(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	return drivers.Deadline(ctx, timeout)
}

// logf writes one line to a transcript, if there is one.
func logf(w io.Writer, format string, args ...any) {
	if w == nil {
		return
	}
	fmt.Fprintf(w, format+"\n", args...)
}
