package program

import (
	"testing"

	"github.com/labrunner/labrunner/drivers"
)

func labconfigProgrammer(typ, cable, usb string) Config {
	return Config{Type: typ, Cable: cable, USBPath: usb, Where: "lab.yaml:12"}
}

func TestNew(t *testing.T) {
	p, err := New("zu-1", Config{Type: "fpga_manager"}, "xilinx")
	if err != nil {
		t.Fatal(err)
	}
	m := p.(*FPGAManager)
	if m.Board != "zu-1" || m.Manager != "fpga0" || m.sysfs() != "/sys" || m.firmwareDir() != "/lib/firmware" || p.Name() != "fpga_manager:fpga0" {
		t.Fatalf("defaults: %+v", m)
	}
	p, err = New("zu-1", Config{Type: "fpga_manager", Sysfs: "/x/sys", FirmwareDir: "/lib/firmware/lr", Manager: "fpga1"}, "")
	if err != nil {
		t.Fatal(err)
	}
	if m := p.(*FPGAManager); m.Sysfs != "/x/sys" || m.FirmwareDir != "/lib/firmware/lr" || m.Manager != "fpga1" {
		t.Fatalf("%+v", m)
	}

	p, err = New("zu-2", Config{Type: "openfpgaloader", Cable: "digilent", USBPath: "1-1.2", Tool: "/opt/ofl/bin/openFPGALoader"}, "xilinx")
	if err != nil {
		t.Fatal(err)
	}
	if o := p.(*OpenFPGALoader); o.Cable != "digilent" || o.USBPath != "1-1.2" || o.Tool != "/opt/ofl/bin/openFPGALoader" || p.Name() != "openfpgaloader:digilent@usb:1-1.2" {
		t.Fatalf("%+v", o)
	}

	p, err = New("zu-3", Config{Type: "xsdb", Serial: "210308A1B2C3"}, "xilinx")
	if err != nil {
		t.Fatal(err)
	}
	if x := p.(*XSDB); x.HWServer != "localhost:3121" || x.Serial != "210308A1B2C3" || p.Name() != "xsdb:localhost:3121/serial:210308A1B2C3" {
		t.Fatalf("%+v", x)
	}

	p, err = New("de5-1", Config{Type: "quartus_pgm", Cable: "DE5-Net", USBPath: "1-1.2", PCIDevice: "03:00.0"}, "intel")
	if err != nil {
		t.Fatal(err)
	}
	if q := p.(*QuartusPGM); q.Cable != "DE5-Net [1-1.2]" || q.PCIDevice != "0000:03:00.0" || p.Name() != "quartus_pgm:DE5-Net [1-1.2]" {
		t.Fatalf("%+v", q)
	}

	for _, p := range []drivers.Programmer{&FPGAManager{}, &OpenFPGALoader{}, &XSDB{}, &QuartusPGM{}} {
		if _, ok := p.(LogSetter); !ok {
			t.Errorf("%T has no SetLog", p)
		}
		if _, ok := p.(Checker); !ok {
			t.Errorf("%T has no Check", p)
		}
	}
}

func TestNewRefusals(t *testing.T) {
	cases := []struct {
		name   string
		p      Config
		vendor string
		want   string
	}{
		{"no type", Config{}, "", "has no type"},
		{"unknown type", Config{Type: "vivado"}, "", `unknown programmer type "vivado"`},
		{"emulated", Config{Type: "emulated"}, "", "boards/emu"},
		{"fpga_manager on intel", Config{Type: "fpga_manager"}, "intel", "xilinx"},
		{"fpga_manager with a cable", Config{Type: "fpga_manager", USBPath: "1-1"}, "", "usb_path is not used"},
		{"fpga_manager odd manager", Config{Type: "fpga_manager", Manager: "../fpga0"}, "", "not a plain sysfs directory name"},
		{"ofl without cable", Config{Type: "openfpgaloader", USBPath: "1-1"}, "", "needs a cable"},
		{"ofl unbound", Config{Type: "openfpgaloader", Cable: "digilent"}, "", "never by enumeration order"},
		{"ofl bus:dev", Config{Type: "openfpgaloader", Cable: "digilent", USBPath: "3:7"}, "", "changes at every replug"},
		{"ofl bad serial", Config{Type: "openfpgaloader", Cable: "digilent", Serial: "A B"}, "", "serial"},
		{"xsdb on intel", Config{Type: "xsdb", Serial: "S"}, "intel", "xilinx"},
		{"xsdb without serial", Config{Type: "xsdb"}, "", "serial number"},
		{"xsdb by usb path", Config{Type: "xsdb", Serial: "S", USBPath: "1-1"}, "", "usb_path is not used"},
		{"xsdb bad hw_server", Config{Type: "xsdb", Serial: "S", Cable: "host:x"}, "", "not a TCP port"},
		{"quartus on xilinx", Config{Type: "quartus_pgm", Cable: "DE5-Net [1-1]"}, "xilinx", "intel"},
		{"quartus without port", Config{Type: "quartus_pgm", Cable: "DE5-Net"}, "", "which USB port"},
		{"quartus bad pci", Config{Type: "quartus_pgm", Cable: "DE5-Net [1-1]", PCIDevice: "3:0"}, "", "not a PCI address"},
	}
	for _, c := range cases {
		c.p.Where = "lab.yaml:7"
		_, err := New("b1", c.p, c.vendor)
		wantClass(t, err, drivers.ClassSetup)
		wantContains(t, err.Error(), "b1", "lab.yaml:7", c.want)
	}
}
