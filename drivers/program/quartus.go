package program

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/labrunner/labrunner/drivers"
)

// QuartusPGM programs an Intel FPGA (the DE5-Net's Stratix V) over JTAG
// with Quartus' quartus_pgm:
//
//	quartus_pgm -c "DE5-Net [1-1.2]" -m JTAG -o "p;design.sof@1"
//
// The cable is named as jtagconfig lists it, a name that carries the USB
// port path in brackets: that is how it is bound to one board. For a board
// on a host's PCIe (PCIDevice set), the endpoint is removed from the bus
// before programming and the bus rescanned after, also when programming
// fails.
type QuartusPGM struct {
	Board string
	Tool  string // the program; default quartus_pgm on PATH
	Cable string // e.g. "DE5-Net [1-1.2]"
	// Device is the FPGA's position in the JTAG chain (default 1).
	Device int
	// PCIDevice is the board's PCIe address (0000:01:00.0); empty for a
	// board that is not on this host's PCIe.
	PCIDevice string
	Sysfs     string // sysfs root, default /sys
	// Timeout bounds a programming when the context has no earlier
	// deadline (default: the lab file's default program deadline).
	Timeout  time.Duration
	StageDir string // where checked images are staged, default os.TempDir()
	Log      io.Writer

	// pcie tunes the hotplug waits (tests).
	pcie pcieHotplug
}

// Name says which cable.
func (q *QuartusPGM) Name() string { return "quartus_pgm:" + q.Cable }

// SetLog sets the transcript writer.
func (q *QuartusPGM) SetLog(w io.Writer) { q.Log = w }

func (q *QuartusPGM) tool() tool {
	return tool{name: "quartus_pgm", path: q.Tool,
		install: "install the Quartus Prime Programmer (quartus_pgm is in <quartus>/bin) and put it on PATH"}
}

var (
	bracketRe = regexp.MustCompile(`\[([^\[\]]*)\]\s*$`)
	digitsRe  = regexp.MustCompile(`^[0-9]+$`)
)

// quartusCable names the cable the way quartus_pgm -c takes it, bound to
// its USB port: "DE5-Net [1-1.2]" as given, or built from "DE5-Net" and the
// usb_path 1-1.2. A name without its port, or a bare cable index, would let
// Quartus pick a cable by enumeration order, and is refused.
func quartusCable(cable, usbPath, serial string) (string, error) {
	if serial != "" {
		return "", fmt.Errorf("quartus_pgm names cables by USB port, not serial number (serial %q): give the port in cable: or usb_path:", serial)
	}
	cable = strings.TrimSpace(cable)
	if cable == "" {
		return "", fmt.Errorf("quartus_pgm needs cable: (the cable name jtagconfig lists)")
	}
	if digitsRe.MatchString(cable) {
		return "", fmt.Errorf("cable %q is a cable index, which follows enumeration order; name the cable as jtagconfig lists it", cable)
	}
	if strings.ContainsAny(cable, "\"\n\r\x00") || strings.HasPrefix(cable, "-") {
		return "", fmt.Errorf("cable %q is not a cable name", cable)
	}
	if m := bracketRe.FindStringSubmatch(cable); m != nil {
		port := strings.TrimSpace(m[1])
		if port == "" {
			return "", fmt.Errorf("cable %q has an empty port in brackets", cable)
		}
		if usbPath != "" && usbPath != port {
			return "", fmt.Errorf("cable %q names USB port %s but usb_path is %s", cable, port, usbPath)
		}
		return cable, nil
	}
	if usbPath == "" {
		return "", fmt.Errorf("cable %q does not say which USB port it is on, so Quartus would pick the first such cable", cable)
	}
	if _, err := ParseUSBPath(usbPath); err != nil {
		return "", err
	}
	return cable + " [" + usbPath + "]", nil
}

// quartusRules recognise quartus_pgm's failure messages.
var quartusRules = []rule{
	{phrases: []string{"cable not detected", "no jtag hardware available", "can't access jtag chain", "can't scan jtag chain",
		"hardware not available", "hardware is not available", "hardware not connected", "invalid cable", "invalid device cable",
		"can't find programming hardware", "can't find the programming hardware", "can't find hardware"},
		class: drivers.ClassInfra, priority: 2, reason: "the JTAG cable was not found",
		hint: "check that the cable named in the lab file is plugged in (jtagconfig lists cables with their USB port) and that the board is powered"},
	{phrases: []string{"jtag server", "jtagd"},
		class: drivers.ClassInfra, priority: 2, reason: "the JTAG server (jtagd) failed",
		hint: "restart jtagd (killall jtagd; jtagconfig), and check that no other tool holds the cable"},
	{phrases: []string{"can't recognize silicon id"},
		re: regexp.MustCompile(`(?i)Expected JTAG ID code .* but found`), keys: []string{"expected jtag id code"},
		class: drivers.ClassSetup, priority: 4, reason: "the device on this cable is not the FPGA the .sof is for (IDCODE mismatch)",
		hint: "check that cable: names this board's USB-Blaster, that the .sof was built for this board's part, and the device's position in the chain"},
	{phrases: []string{"can't open file", "can't open the file", "can't open programming file", "does not exist",
		"can't find file", "can't find the file", "invalid programming file", "is not a valid", "corrupt"},
		class: drivers.ClassSetup, priority: 4, reason: "quartus_pgm could not read the programming file",
		hint: "check that the file is a complete .sof for this board"},
	{phrases: []string{"conf_done", "configuration failed", "can't configure device"},
		class: drivers.ClassInfra, priority: 3, reason: "the FPGA did not finish configuration",
		hint: "check the board's power and the .sof; power-cycle the board if configuration keeps failing"},
	{phrases: []string{"operation failed", "quartus_pgm was unsuccessful"},
		re: regexp.MustCompile(`(?i)^error \(\d+\)`), keys: []string{"error ("},
		class: drivers.ClassInfra, priority: 1, reason: "quartus_pgm reported an error",
		hint: "see quartus_pgm's output; check the cable, the board's power and the .sof"},
}

// Check finds the tool (and, for a board on PCIe, the device).
func (q *QuartusPGM) Check(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if _, err := q.tool().resolve(q.Board); err != nil {
		return err
	}
	if q.PCIDevice != "" {
		addr, err := ParsePCIAddress(q.PCIDevice)
		if err != nil {
			return drivers.Setup(q.Board, "PCIe device", "give the device's address as lspci -D prints it", err)
		}
		h := q.hotplug(addr)
		present, err := exists(h.devDir())
		if err != nil || !present {
			return drivers.Infra(q.Board, "PCIe device "+q.PCIDevice,
				"the board's PCIe device is not on the bus: check lspci, then rescan (echo 1 > /sys/bus/pci/rescan) or reboot the host",
				fmt.Errorf("%s not found (%v)", h.devDir(), err))
		}
	}
	return nil
}

func (q *QuartusPGM) hotplug(addr string) pcieHotplug {
	h := q.pcie
	h.board, h.sysfs, h.addr, h.log = q.Board, q.Sysfs, addr, q.Log
	return h
}

// Program configures the FPGA with a .sof.
func (q *QuartusPGM) Program(ctx context.Context, img drivers.Image) error {
	ctx, cancel := bounded(ctx, q.Timeout)
	defer cancel()
	op := "quartus_pgm: load " + img.Path + " through cable \"" + q.Cable + "\""
	switch ext := imageExt(img); ext {
	case "sof":
	case "rbf":
		return drivers.Setup(q.Board, op,
			"give the design's .sof (the catalogue lists one for each Intel part; quartus_cpf converts .sof to .rbf, not back)",
			fmt.Errorf("quartus_pgm loads a .sof over JTAG; a .rbf is for passive-serial or fast-passive-parallel configuration"))
	default:
		return drivers.Setup(q.Board, op, "give the design's .sof", fmt.Errorf("quartus_pgm's JTAG mode does not load %q files here", ext))
	}
	cable, err := quartusCable(q.Cable, "", "")
	if err != nil {
		return drivers.Setup(q.Board, op, "name the cable as jtagconfig lists it, with its USB port", err)
	}
	dev := q.Device
	if dev == 0 {
		dev = 1
	}
	if dev < 1 {
		return drivers.Setup(q.Board, op, "the device position in the JTAG chain counts from 1", fmt.Errorf("device %d", dev))
	}
	var pciAddr string
	if q.PCIDevice != "" {
		if pciAddr, err = ParsePCIAddress(q.PCIDevice); err != nil {
			return drivers.Setup(q.Board, op, "give the device's address as lspci -D prints it", err)
		}
	}
	path, err := q.tool().resolve(q.Board)
	if err != nil {
		return err
	}
	st, err := stage(q.Board, q.StageDir, img)
	if err != nil {
		return err
	}
	defer st.cleanup()
	// quartus_pgm's -o is "<operation>;<file>@<device>": a ';' or '@' in
	// the file's path would be read as part of that syntax.
	if strings.ContainsAny(st.path, ";@") {
		return drivers.Setup(q.Board, op, "move the .sof to a path without ';' or '@'",
			fmt.Errorf("path %q cannot be given to quartus_pgm -o", st.path))
	}
	program := func(ctx context.Context) error {
		return run{board: q.Board, name: "quartus_pgm", path: path,
			args: []string{"-c", cable, "-m", "JTAG", "-o", "p;" + st.path + "@" + strconv.Itoa(dev)},
			log:  q.Log, rules: quartusRules, op: op,
			hint: "see quartus_pgm's output; check the cable, the board's power and the .sof"}.do(ctx)
	}
	if pciAddr == "" {
		return program(ctx)
	}
	return q.hotplug(pciAddr).around(ctx, program)
}

// ToolPath finds quartus_pgm (the lab file's tool:, else PATH).
func (q *QuartusPGM) ToolPath() (string, error) { return q.tool().resolve(q.Board) }
