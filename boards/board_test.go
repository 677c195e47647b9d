package boards_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/labrunner/labrunner/boards"
	"github.com/labrunner/labrunner/drivers"
	"github.com/labrunner/labrunner/drivers/program"
	"github.com/labrunner/labrunner/labconfig"
)

// missing is a path that exists on no machine the tests run on.
const missing = "/nonexistent-labrunner-test"

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}

// regular returns a register file (an mmio bus over a regular file opens
// without root), so that a later step's failure has something to close.
func regular(t *testing.T) string {
	p := filepath.Join(t.TempDir(), "regs")
	if err := os.WriteFile(p, make([]byte, 0x1000), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func realBoard(name string) labconfig.Board {
	return labconfig.Board{
		Name: name, Kind: "zcu102",
		Programmer: labconfig.Programmer{Type: "fpga_manager", Sysfs: missing + "/sys", FirmwareDir: missing + "/fw", Manager: "fpga0"},
		Power:      labconfig.Power{Type: "none"},
		Pos:        labconfig.Pos{File: "lab.yaml", Line: 3},
	}
}

// TestOpenMissingDevices opens boards whose lab entries name devices that
// are not there: every one must come back as the driver's own error, of the
// driver's class, naming the board and the device, and never panic (a
// failed step used to leave a nil board for the cleanup to close).
func TestOpenMissingDevices(t *testing.T) {
	regs := regular(t)
	cases := []struct {
		name  string
		edit  func(b *labconfig.Board)
		class drivers.Class
		says  []string
	}{
		{"bridge USB-UART unplugged", func(b *labconfig.Board) {
			b.Bus.UARTBridge = &labconfig.Serial{Port: missing + "/ttyUSB-bridge", Baud: 921600}
		}, drivers.ClassInfra, []string{"ttyUSB-bridge", "plugged in"}},
		{"console USB-UART unplugged", func(b *labconfig.Board) {
			b.Bus.MMIO = &labconfig.MMIO{Device: regs, Size: 0x1000}
			b.Console = &labconfig.Serial{Port: missing + "/ttyUSB-console", Baud: 115200}
		}, drivers.ClassInfra, []string{"ttyUSB-console", "USB-UART"}},
		{"no /dev/uioN", func(b *labconfig.Board) {
			b.Bus.MMIO = &labconfig.MMIO{Device: missing + "/dev/uio7", Size: 0x1000}
		}, drivers.ClassInfra, []string{"uio7", "uio driver"}},
		{"no PCIe BAR resource file", func(b *labconfig.Board) {
			b.Bus.MMIO = &labconfig.MMIO{Device: missing + "/sys/bus/pci/devices/0000:03:00.0/resource0", Size: 0x1000}
		}, drivers.ClassInfra, []string{"resource0", "lspci"}},
		{"no GPIO line for the relay", func(b *labconfig.Board) {
			b.Bus.MMIO = &labconfig.MMIO{Device: regs, Size: 0x1000}
			b.Power = labconfig.Power{Type: "gpio", Pin: "LABRUNNER_NO_SUCH_LINE"}
		}, drivers.ClassInfra, []string{"LABRUNNER_NO_SUCH_LINE", "GPIO"}},
		{"emulated board without a rack", func(b *labconfig.Board) {
			b.Emulated = &labconfig.Emulated{}
			b.Bus.Emulated = &struct{}{}
		}, drivers.ClassSetup, []string{"no emulated rack"}},
		{"emulated bus on a real board", func(b *labconfig.Board) {
			b.Bus.Emulated = &struct{}{}
		}, drivers.ClassSetup, []string{"emulated bus"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := realBoard("b1")
			tc.edit(&cfg)
			b, err := boards.Open(ctx(t), cfg, boards.Options{})
			if err == nil {
				b.Close()
				t.Fatal("Open succeeded")
			}
			if b != nil {
				t.Errorf("Open returned a board with its error")
			}
			if got := drivers.ClassOf(err); got != tc.class {
				t.Errorf("class %v, want %v: %v", got, tc.class, err)
			}
			msg := err.Error()
			for _, s := range append([]string{"b1"}, tc.says...) {
				if !strings.Contains(msg, s) {
					t.Errorf("error %q does not say %q", msg, s)
				}
			}
		})
	}
}

// TestOpenMissingTool: a programming tool that is not installed is found
// out when the board is programmed (a lab file must be checkable on a
// machine without the tools), as infrastructure, naming the tool.
func TestOpenMissingTool(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	cfg := realBoard("b2")
	cfg.Bus.MMIO = &labconfig.MMIO{Device: regular(t), Size: 0x1000}
	cfg.Programmer = labconfig.Programmer{Type: "openfpgaloader", Cable: "digilent", Serial: "210249A1B2C3"}
	b, err := boards.Open(ctx(t), cfg, boards.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	err = b.Programmer.Program(ctx(t), drivers.Image{Path: "x.bit", Data: []byte{1}})
	if drivers.ClassOf(err) != drivers.ClassInfra || !strings.Contains(err.Error(), "openFPGALoader") || !strings.Contains(err.Error(), "b2") {
		t.Errorf("missing tool: %v (class %v)", err, drivers.ClassOf(err))
	}
}

// TestOpenClosesWhatOpened: when a later step fails, the steps that opened
// are closed (the register file's mapping is released), and Close of a
// board that opened works.
func TestOpenClosesWhatOpened(t *testing.T) {
	cfg := realBoard("b3")
	cfg.Bus.MMIO = &labconfig.MMIO{Device: regular(t), Size: 0x1000}
	b, err := boards.Open(ctx(t), cfg, boards.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	cfg.Programmer = labconfig.Programmer{Type: "xsdb"} // no serial: refused by program.New
	if _, err := boards.Open(ctx(t), cfg, boards.Options{}); drivers.ClassOf(err) != drivers.ClassSetup {
		t.Errorf("bad programmer after an open bus: %v", err)
	}
}

// A command that does not use the bus (program, console) does not open
// it: an unplugged bridge does not stop it.
func TestOpenWithoutTheBus(t *testing.T) {
	cfg := realBoard("b4")
	cfg.Bus.UARTBridge = &labconfig.Serial{Port: missing + "/ttyUSB-bridge", Baud: 921600}
	b, err := boards.Open(ctx(t), cfg, boards.Options{NoBus: true})
	if err != nil {
		t.Fatalf("NoBus still opened the bridge: %v", err)
	}
	defer b.Close()
	if b.Bus != nil || b.Programmer == nil || b.Power == nil {
		t.Errorf("bus %v programmer %v power %v", b.Bus, b.Programmer, b.Power)
	}
}

// The programmer's own default deadline is the lab file's: a programmer
// built outside a plan waits as long as one in it.
func TestProgramDeadlineDefaultsAgree(t *testing.T) {
	if program.DefaultTimeout != labconfig.DefaultDeadlines.Program {
		t.Errorf("drivers/program waits %v by default, the lab file's program deadline is %v", program.DefaultTimeout, labconfig.DefaultDeadlines.Program)
	}
}
