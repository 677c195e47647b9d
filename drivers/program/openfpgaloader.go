package program

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/labrunner/labrunner/drivers"
)

// OpenFPGALoader programs over JTAG with openFPGALoader:
//
//	openFPGALoader -c <cable> --busdev-num <bus>:<dev> --bitstream <file>
//	openFPGALoader -c <cable> --ftdi-serial <serial> --bitstream <file>
//
// The cable is bound by its USB port path (resolved through sysfs to the
// bus and device numbers it has right now: the device number changes at
// every replug, the port path does not) or by its FTDI serial number. It
// loads the configuration memory (SRAM), from a .bit or .bin (Xilinx) or a
// .rbf (Intel).
type OpenFPGALoader struct {
	Board   string
	Tool    string // the program; default openFPGALoader on PATH
	Cable   string // openFPGALoader's cable name (--list-cables), e.g. digilent, ft2232
	USBPath string // the cable's USB port path, e.g. 1-1.2 (preferred when both are set)
	Serial  string // the cable's FTDI serial number
	Sysfs   string // sysfs root for the USB lookup, default /sys
	// Timeout bounds a programming when the context has no earlier
	// deadline (default: the lab file's default program deadline).
	Timeout  time.Duration
	StageDir string // where checked images are staged, default os.TempDir()
	Log      io.Writer
}

// Name says which cable this is.
func (o *OpenFPGALoader) Name() string {
	if o.USBPath != "" {
		return "openfpgaloader:" + o.Cable + "@usb:" + o.USBPath
	}
	return "openfpgaloader:" + o.Cable + "@serial:" + o.Serial
}

// SetLog sets the transcript writer.
func (o *OpenFPGALoader) SetLog(w io.Writer) { o.Log = w }

func (o *OpenFPGALoader) tool() tool {
	return tool{name: "openFPGALoader", path: o.Tool,
		install: "install openFPGALoader (apt install openfpgaloader, or build it from github.com/trabucayre/openFPGALoader)"}
}

const usbPathHint = "give usb_path: as the cable's port path under /sys/bus/usb/devices (lsusb -t shows the tree), e.g. 1-1.2; bus:device numbers change at every replug"

// usbPathRe is a USB port path as Linux names devices in sysfs: the bus
// number, a dash, and the port chain (1-1.2 is port 2 of the hub on port 1
// of bus 1). Hub chains are at most 7 deep.
var usbPathRe = regexp.MustCompile(`^[1-9][0-9]{0,2}-[1-9][0-9]{0,2}(\.[1-9][0-9]{0,2}){0,6}$`)

var busDevRe = regexp.MustCompile(`^[0-9]+:[0-9]+$`)

// ParseUSBPath checks a USB port path ("1-1.2") and returns it.
func ParseUSBPath(s string) (string, error) {
	if usbPathRe.MatchString(s) {
		return s, nil
	}
	if busDevRe.MatchString(s) {
		return "", fmt.Errorf("usb_path %q is a bus:device number pair, which changes at every replug; give the port path (e.g. 1-1.2)", s)
	}
	if strings.Contains(s, ":") {
		return "", fmt.Errorf("usb_path %q names a USB interface; give the device's port path without the :config.interface part", s)
	}
	return "", fmt.Errorf("usb_path %q is not a USB port path like 1-1.2", s)
}

// readInt reads a small decimal number from a sysfs attribute's text.
func readInt(b []byte) (int, error) {
	return strconv.Atoi(string(bytes.TrimSpace(b)))
}

// busDev returns the bus and device numbers the cable at the USB port has
// now.
func busDev(sysfs, port string) (bus, dev int, err error) {
	if sysfs == "" {
		sysfs = "/sys"
	}
	dir := filepath.Join(sysfs, "bus", "usb", "devices", port)
	b, err := os.ReadFile(filepath.Join(dir, "busnum"))
	if err != nil {
		return 0, 0, err
	}
	if bus, err = readInt(b); err != nil {
		return 0, 0, fmt.Errorf("%s/busnum: %w", dir, err)
	}
	d, err := os.ReadFile(filepath.Join(dir, "devnum"))
	if err != nil {
		return 0, 0, err
	}
	if dev, err = readInt(d); err != nil {
		return 0, 0, fmt.Errorf("%s/devnum: %w", dir, err)
	}
	return bus, dev, nil
}

// boundAs says how the lab file binds the cable, for messages.
func (o *OpenFPGALoader) boundAs() string {
	if o.USBPath != "" {
		return "at USB port " + o.USBPath
	}
	return "with serial " + o.Serial
}

// binding returns the arguments that select the cable.
func (o *OpenFPGALoader) binding() ([]string, error) {
	op := "bind cable " + o.Cable
	switch {
	case o.USBPath != "":
		port, err := ParseUSBPath(o.USBPath)
		if err != nil {
			return nil, drivers.Setup(o.Board, op, usbPathHint, err)
		}
		bus, dev, err := busDev(o.Sysfs, port)
		if err != nil {
			return nil, drivers.Infra(o.Board, op,
				"no USB device at that port: check that the cable is plugged into the port the lab file names (lsusb -t), or fix usb_path:",
				fmt.Errorf("USB port %s: %w", port, err))
		}
		return []string{"--busdev-num", strconv.Itoa(bus) + ":" + strconv.Itoa(dev)}, nil
	case o.Serial != "":
		if !validSerial(o.Serial) {
			return nil, drivers.Setup(o.Board, op, "give the FTDI serial number exactly as the cable reports it",
				fmt.Errorf("serial %q is not a cable serial number", o.Serial))
		}
		return []string{"--ftdi-serial", o.Serial}, nil
	}
	return nil, drivers.Setup(o.Board, op, "set usb_path: or serial: in the lab file's programmer entry",
		fmt.Errorf("the cable is not bound (cables are never picked by enumeration order)"))
}

// openFPGALoaderRules recognise openFPGALoader's failure messages
// (src/main.cpp, src/jtag.cpp, src/ftdipp_mpsse.cpp, src/xilinx.cpp).
var openFPGALoaderRules = []rule{
	{phrases: []string{"unable to open ftdi device", "no cable found", "jtag init failed", "failed to claim cable",
		"libusb_open", "libusb_error_no_device", "libusb_error_not_found", "cable not found", "no probe found"},
		class: drivers.ClassInfra, priority: 2, reason: "no JTAG cable found",
		hint: "check that the cable is plugged in at the USB port or with the serial the lab file names, and that no other program (hw_server, jtagd) holds it"},
	{phrases: []string{"libusb_error_access", "permission denied", "insufficient permissions"},
		class: drivers.ClassInfra, priority: 2, reason: "no permission to open the JTAG cable",
		hint: "install openFPGALoader's udev rules (99-openfpgaloader.rules) or run with access to the USB device"},
	// An unknown cable name is the lab file's mistake (exit 2), whatever
	// the tool says after it about opening a device: it outranks "no cable".
	{phrases: []string{"cannot find board"}, re: regexp.MustCompile(`(?i)^error\s*:\s*\S+ not found$`), keys: []string{"not found"},
		class: drivers.ClassSetup, priority: 3, reason: "openFPGALoader does not know this cable",
		hint: "set cable: to a name from openFPGALoader --list-cables"},
	{phrases: []string{"ftdi serial param is for ftdi cables", "ftdi channel param is for ftdi cables"},
		class: drivers.ClassSetup, priority: 2, reason: "a serial number binds FTDI cables only",
		hint: "bind this cable by usb_path: instead of serial:"},
	{phrases: []string{"error: no device found", "tdo is stuck at", "wrong jtag length"},
		re: regexp.MustCompile(`(?i)JTAG chain.*(empty|broken)`), keys: []string{"jtag chain"},
		class: drivers.ClassInfra, priority: 3, reason: "the cable sees no device on its JTAG chain",
		hint: "check that the board is powered and that the cable is attached to its JTAG header (a Zynq MPSoC must also have booted its PS for the PL to appear)"},
	{phrases: []string{"idcode mismatch", "unknown device with idcode", "not the pl tap", "zynqmp error", "more than one fpga found"},
		re: regexp.MustCompile(`(?i)device \S+ not supported|bitstream.*(not|doesn't|does not) (match|compatible)`), keys: []string{"not supported", "bitstream"},
		class: drivers.ClassSetup, priority: 4, reason: "the device on this cable is not the FPGA the bitstream is for (IDCODE mismatch)",
		hint: "check that usb_path:/serial: binds this board's cable and not a neighbour's, and that the bitstream was built for this board's part; openFPGALoader may also not know this part (openFPGALoader --list-fpga)"},
	{phrases: []string{"unable to open '", "failed to parse bitstream", "file has an unknown type", "bitfile not specified", "wrong file"},
		class: drivers.ClassSetup, priority: 4, reason: "openFPGALoader could not read the bitstream",
		hint: "check that the file is a complete .bit/.bin (Xilinx) or .rbf (Intel) for this board"},
	{phrases: []string{"failed to program"}, re: regexp.MustCompile(`(?i)^error\b`), keys: []string{"error"},
		class: drivers.ClassInfra, priority: 1, reason: "openFPGALoader reported an error",
		hint: "see openFPGALoader's output; check the cable, the board's power and the bitstream"},
}

// Check finds the tool and the cable's USB port.
func (o *OpenFPGALoader) Check(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if _, err := o.tool().resolve(o.Board); err != nil {
		return err
	}
	_, err := o.binding()
	return err
}

// Program loads img into the FPGA's configuration memory.
func (o *OpenFPGALoader) Program(ctx context.Context, img drivers.Image) error {
	ctx, cancel := bounded(ctx, o.Timeout)
	defer cancel()
	// The operation names the cable as the lab file binds it, so that a
	// missing cable's error says which one to look for.
	op := "openFPGALoader: load " + img.Path + " through cable " + o.Cable + " " + o.boundAs()
	switch ext := imageExt(img); ext {
	case "bit", "bin", "rbf":
	case "sof":
		return drivers.Setup(o.Board, op, "give the .rbf (quartus_cpf -c design.sof design.rbf makes one), or use the quartus_pgm programmer for .sof",
			fmt.Errorf("openFPGALoader does not load .sof files"))
	default:
		return drivers.Setup(o.Board, op, "give a .bit or .bin (Xilinx) or a .rbf (Intel)",
			fmt.Errorf("openFPGALoader does not load %q files", ext))
	}
	path, err := o.tool().resolve(o.Board)
	if err != nil {
		return err
	}
	bind, err := o.binding()
	if err != nil {
		return err
	}
	if imageExt(img) == "bin" && len(img.Raw) > 0 {
		// openFPGALoader loads a .bin as it is: the configuration data in
		// the .bit's byte order, never fpga_manager's swapped words.
		img.Data = img.Raw
	}
	st, err := stage(o.Board, o.StageDir, img)
	if err != nil {
		return err
	}
	defer st.cleanup()
	args := append([]string{"-c", o.Cable}, bind...)
	args = append(args, "--bitstream", st.path)
	return run{board: o.Board, name: "openFPGALoader", path: path, args: args, log: o.Log,
		rules: openFPGALoaderRules, op: op,
		hint: "see openFPGALoader's output; check the cable, the board's power and the bitstream"}.do(ctx)
}

// ToolPath finds openFPGALoader (the lab file's tool:, else PATH).
func (o *OpenFPGALoader) ToolPath() (string, error) { return o.tool().resolve(o.Board) }

// BusDevice is the bus and device number the cable at USBPath has now
// (from sysfs), for matching it against openFPGALoader --scan-usb.
func (o *OpenFPGALoader) BusDevice() (bus, dev int, err error) {
	port, err := ParseUSBPath(o.USBPath)
	if err != nil {
		return 0, 0, err
	}
	return busDev(o.Sysfs, port)
}
