// Package labconfig holds the lab description: the boards of a rack, how
// the runner reaches each one (console, register bus, programmer, power),
// the cables between board ports, and the plans to run on them. It loads and
// validates the YAML lab file, reporting every error with file:line, the
// field and the fix, and it embeds the default lab: the emulated rack.
package labconfig

import (
	"fmt"
	"time"
)

// Pos is where something was declared: file and line.
type Pos struct {
	File string
	Line int
}

func (p Pos) String() string {
	if p.File == "" {
		return fmt.Sprintf("line %d", p.Line)
	}
	if p.Line == 0 {
		return p.File // not from a file's line: a command-line flag
	}
	return fmt.Sprintf("%s:%d", p.File, p.Line)
}

// Lab is one lab file.
type Lab struct {
	Name      string     `yaml:"lab"`
	Seed      int64      `yaml:"seed"` // emulator seed; the same seed gives the same run
	Deadlines Deadlines  `yaml:"deadlines"`
	Results   ResultsCfg `yaml:"results"`
	Influx    *Influx    `yaml:"influx"`
	Locks     *Locks     `yaml:"locks"`
	Boards    []Board    `yaml:"boards"`
	Links     []Link     `yaml:"links"`
	Plans     []Plan     `yaml:"plans"`
	Faults    []Fault    `yaml:"faults"` // emulator faults to inject
	Pos       Pos        `yaml:"-"`
}

// Deadlines bound every hardware step. Zero values take the defaults
// (DefaultDeadlines).
type Deadlines struct {
	Register time.Duration `yaml:"register"` // one register access, retries included
	Program  time.Duration `yaml:"program"`  // programming one board
	Console  time.Duration `yaml:"console"`  // one console expect
	Test     time.Duration `yaml:"test"`     // one test case
	Power    time.Duration `yaml:"power"`
}

// DefaultDeadlines are used for every deadline the lab file leaves out.
var DefaultDeadlines = Deadlines{
	Register: 2 * time.Second,
	Program:  2 * time.Minute,
	Console:  10 * time.Second,
	Test:     2 * time.Minute,
	Power:    10 * time.Second,
}

// ResultsCfg says where run directories go.
type ResultsCfg struct {
	Root string `yaml:"root"` // default "runs"
	// Regression thresholds per metric (relative change that counts as a
	// regression), used by compare; "*" is the default.
	Thresholds map[string]float64 `yaml:"thresholds"`
}

// Influx names the InfluxDB server runs are exported to. The token is never
// in the lab file: it comes from TokenFile or the INFLUX_TOKEN variable.
type Influx struct {
	URL       string `yaml:"url"`
	Org       string `yaml:"org"`
	Bucket    string `yaml:"bucket"`
	TokenFile string `yaml:"token_file"`
	Pos       Pos    `yaml:"-"`
}

// Locks configures board reservations.
type Locks struct {
	Dir   string        `yaml:"dir"`
	Lease time.Duration `yaml:"lease"`
	Pos   Pos           `yaml:"-"`
}

// Serial is a serial port.
type Serial struct {
	Port string `yaml:"port"` // device path, or "emu" for an emulated board's pseudo-terminal
	Baud int    `yaml:"baud"`
	// PacingUS inserts a pause after every byte sent, for boards whose
	// UART drops bytes at speed.
	PacingUS int `yaml:"pacing_us"`
	// LineRate and RequestLatency shape an emulated board's bridge line
	// (port emu only) as a rack of USB-UARTs would: with LineRate the
	// emulated bridge holds the bytes it hears and sends to Baud (10 bit
	// times a byte); RequestLatency is what the USB-UART adds to each
	// request's round trip (USB scheduling and the chip's latency timer),
	// half on the way in, half on the way out. Both off: the pseudo-
	// terminal moves bytes as fast as the host can (docs/uart-bridge.md,
	// "Line-rate emulation").
	LineRate       bool          `yaml:"line_rate"`
	RequestLatency time.Duration `yaml:"request_latency"`
	// Prompt is a regular expression matching the console's shell prompt,
	// for health checks (default `[#$>] ?$`: Linux and U-Boot shells).
	Prompt string `yaml:"prompt"`
	Pos    Pos    `yaml:"-"`
}

// MMIO is a register bus mapped from a device file.
type MMIO struct {
	Device string `yaml:"device"` // /dev/mem, /dev/uioN, /sys/bus/pci/devices/.../resourceN, or a regular file
	Base   uint64 `yaml:"base"`   // offset of the design's address 0 in the device file
	Size   uint64 `yaml:"size"`
	Pos    Pos    `yaml:"-"`
}

// Bus says how the runner reaches a board's registers: exactly one of the
// three is set.
type Bus struct {
	MMIO       *MMIO     `yaml:"mmio"`
	UARTBridge *Serial   `yaml:"uart_bridge"`
	Emulated   *struct{} `yaml:"emulated"` // in process, emulated boards only
	Pos        Pos       `yaml:"-"`
}

// Kind returns "mmio", "uart_bridge" or "emulated" ("" when none is set).
func (b Bus) Kind() string {
	switch {
	case b.MMIO != nil:
		return "mmio"
	case b.UARTBridge != nil:
		return "uart_bridge"
	case b.Emulated != nil:
		return "emulated"
	}
	return ""
}

// Programmer says how a board is programmed.
type Programmer struct {
	// Type: fpga_manager, openfpgaloader, xsdb, quartus_pgm, emulated.
	Type string `yaml:"type"`
	// fpga_manager: sysfs root (default /sys) and firmware directory
	// (default /lib/firmware); the manager's index (default fpga0).
	Sysfs       string `yaml:"sysfs"`
	FirmwareDir string `yaml:"firmware_dir"`
	Manager     string `yaml:"manager"`
	// JTAG tools: the cable and how it is bound. Cables are bound by USB
	// path or serial number, never by enumeration order.
	Cable   string `yaml:"cable"`
	USBPath string `yaml:"usb_path"`
	Serial  string `yaml:"serial"`
	// Tool overrides the tool's path (default: found on PATH).
	Tool string `yaml:"tool"`
	// PCIDevice: for boards on a host's PCIe (DE5-Net), the device's sysfs
	// address; it is removed before programming and rescanned after.
	PCIDevice string `yaml:"pci_device"`
	Pos       Pos    `yaml:"-"`
}

// Power says how a board's supply is switched.
type Power struct {
	Type      string   `yaml:"type"` // none, gpio, command
	Pin       string   `yaml:"pin"`  // gpio: periph.io pin name, e.g. GPIO17
	ActiveLow bool     `yaml:"active_low"`
	On        []string `yaml:"on"`  // command: argv to switch on
	Off       []string `yaml:"off"` // command: argv to switch off
	Pos       Pos      `yaml:"-"`
}

// Emulated marks a board as emulated (boards/emu) and sets the imperfections
// of its hardware.
type Emulated struct {
	ClockPPM float64 `yaml:"clock_ppm"` // oscillator error, parts per million
	OffsetNS float64 `yaml:"offset_ns"` // clock offset at power-on
	BootMS   int     `yaml:"boot_ms"`   // time the firmware takes to boot
	Pos      Pos     `yaml:"-"`
}

// Board is one board of the rack.
type Board struct {
	Name       string     `yaml:"name"`
	Kind       string     `yaml:"kind"` // tebf0808, zcu102, ultra96, de5net
	Console    *Serial    `yaml:"console"`
	Bus        Bus        `yaml:"bus"`
	Programmer Programmer `yaml:"programmer"`
	Power      Power      `yaml:"power"`
	Emulated   *Emulated  `yaml:"emulated"`
	// DCN: the runner reaches this board directly (its console or bridge is
	// cabled). Boards without it are reached in-band through neighbours.
	DCN  bool     `yaml:"dcn"`
	Tags []string `yaml:"tags"`
	Pos  Pos      `yaml:"-"`
}

// Endpoint is one end of a cable: a board and one of its ports.
type Endpoint struct {
	Board string
	Port  string
}

func (e Endpoint) String() string { return e.Board + ":" + e.Port }

// Link is a cable between two board ports. The emulation fields describe
// the emulated cable and are ignored on real hardware.
type Link struct {
	A, B      Endpoint `yaml:"-"`
	RawA      string   `yaml:"a"` // "board:port"
	RawB      string   `yaml:"b"`
	LatencyNS float64  `yaml:"latency_ns"` // one-way propagation
	// AsymmetryNS adds to the B->A direction only.
	AsymmetryNS float64 `yaml:"asymmetry_ns"`
	BER         float64 `yaml:"ber"` // bit error rate
	Pos         Pos     `yaml:"-"`
}

// Param is a plan or test parameter: a scalar or a list of scalars.
type Param struct {
	Values []string
	List   bool // written as a YAML list
	Pos    Pos
}

// Params are named parameters.
type Params map[string]Param

// Tolerance overrides the golden model's tolerance for a test's metrics.
type Tolerance struct {
	Rel *float64 `yaml:"rel"`
	Abs *float64 `yaml:"abs"`
}

// Test is one test of a plan.
type Test struct {
	Name      string        `yaml:"test"`
	Params    Params        `yaml:"params"`
	Tolerance *Tolerance    `yaml:"tolerance"`
	Deadline  time.Duration `yaml:"deadline"`
	Pos       Pos           `yaml:"-"`
}

// PlanBoard is a board taking part in a plan, with its per-board parameters
// (coordinates in a mesh, role in a rack).
type PlanBoard struct {
	Board  string `yaml:"board"`
	Params Params `yaml:"params"`
	Pos    Pos    `yaml:"-"`
}

// Plan says which design goes on which boards and which tests run there.
type Plan struct {
	Name   string `yaml:"name"`
	Design string `yaml:"design"`
	// Bitstream overrides the catalogue's file for this plan (path relative
	// to the lab file).
	Bitstream string      `yaml:"bitstream"`
	Boards    []PlanBoard `yaml:"boards"`
	Params    Params      `yaml:"params"`
	Tests     []Test      `yaml:"tests"`
	Pos       Pos         `yaml:"-"`
}

// Fault is an emulator fault to inject, by name.
type Fault struct {
	Name   string `yaml:"name"`
	Board  string `yaml:"board"` // "" for rack-wide faults
	Link   string `yaml:"link"`  // "board:port" for link faults
	Params Params `yaml:"params"`
	Pos    Pos    `yaml:"-"`
}

// Known lists the names a lab file may refer to; the loader checks kinds,
// designs, tests and faults against it. Empty lists are not checked.
type Known struct {
	Kinds   []string
	Designs []string
	Tests   map[string][]string // design -> test names
	Faults  []string
	// Ports lists each kind's port names, for links.
	Ports map[string][]string
	// Programmers lists, per kind, the programmer types that fit it
	// (boards.Kind.Programmers); a kind missing here is not checked.
	Programmers map[string][]string
}
