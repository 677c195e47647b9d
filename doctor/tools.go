package doctor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/labrunner/labrunner/boards"
	"github.com/labrunner/labrunner/drivers"
	"github.com/labrunner/labrunner/drivers/program"
	"github.com/labrunner/labrunner/internal/strictyaml"
	"github.com/labrunner/labrunner/labconfig"
)

// toolAnswer is a tool's answer to one question, asked once for every
// board that needs it.
type toolAnswer struct {
	once sync.Once
	out  string
	err  error
}

// ask runs a tool read-only (program.Query) under the tool deadline, once
// per tool and arguments.
func (d *doctor) ask(ctx context.Context, path string, args ...string) (string, error) {
	key := path + "\x00" + strings.Join(args, "\x00")
	d.mu.Lock()
	a, ok := d.tools[key]
	if !ok {
		a = &toolAnswer{}
		d.tools[key] = a
	}
	d.mu.Unlock()
	a.once.Do(func() {
		qctx, cancel := context.WithTimeout(ctx, d.o.ToolTimeout)
		defer cancel()
		a.out, a.err = program.Query(qctx, path, args...)
	})
	return a.out, a.err
}

// toolProblem records a tool that hung or failed on a read-only question.
func toolProblem(f *findings, check, tool string, err error, out string) {
	detail := err.Error()
	if t := strings.TrimSpace(out); t != "" {
		detail += "; it said: " + lastLines(t, 3)
	}
	fix := "run it by hand to see why; check its installation"
	if errors.Is(err, drivers.ErrTimeout) {
		fix = "the tool hangs: check that no other program holds its cables, and its installation"
	}
	f.problem(check, drivers.ClassInfra, tool+": "+oneLine(detail), fix)
}

func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " / ")
}

func (d *doctor) programmer(ctx context.Context, f *findings, b *labconfig.Board, kind boards.Kind) {
	switch b.Programmer.Type {
	case "emulated":
		f.ok("programmer", "emulated: programmed by the emulated rack")
		return
	case "none":
		f.note("programmer", "none: the board's design is fixed and never programmed")
		return
	}
	cfg := b.Programmer
	if cfg.Type == "openfpgaloader" && cfg.Sysfs == "" {
		cfg.Sysfs = d.o.Sysfs
	}
	p, err := boards.Programmer(b.Name, cfg, kind.Vendor)
	if err != nil {
		f.fromError("programmer", err)
		return
	}
	switch p := p.(type) {
	case *program.FPGAManager:
		d.fpgaManager(ctx, f, p)
	case *program.OpenFPGALoader:
		d.openFPGALoader(ctx, f, p, kind)
	case *program.QuartusPGM:
		d.quartus(ctx, f, p)
	case *program.XSDB:
		d.xsdb(ctx, f, p)
	}
}

func (d *doctor) fpgaManager(ctx context.Context, f *findings, m *program.FPGAManager) {
	if err := m.Check(ctx); err != nil {
		f.fromError("fpga_manager", err)
		return
	}
	st, err := m.State()
	if err != nil {
		f.fromError("fpga_manager", err)
		return
	}
	f.ok("fpga_manager", fmt.Sprintf("%s present, state %q; firmware directory writable", m.Name(), st))
}

func (d *doctor) openFPGALoader(ctx context.Context, f *findings, o *program.OpenFPGALoader, kind boards.Kind) {
	path, err := o.ToolPath()
	if err != nil {
		f.fromError("openFPGALoader", err)
		return
	}
	out, err := d.ask(ctx, path, "--Version")
	if err != nil {
		toolProblem(f, "openFPGALoader", path, err, out)
		return
	}
	version := program.ParseVersion(out)
	f.ok("openFPGALoader", path+" version "+version)

	out, err = d.ask(ctx, path, "--list-fpga")
	if err != nil {
		toolProblem(f, "part support", path+" --list-fpga", err, out)
	} else if list, perr := program.ParseListFPGA(out); perr != nil {
		f.problem("part support", drivers.ClassInfra, perr.Error(), "is "+path+" openFPGALoader?")
	} else if dev, ok := (&program.PartList{Version: version, FPGAs: list}).Supports(kind.Part); ok {
		f.ok("part support", fmt.Sprintf("%s: %s %s (IDCODE 0x%08x)", kind.Part, dev.Manufacturer, dev.Family, dev.IDCode))
	} else {
		f.problem("part support", drivers.ClassSetup, fmt.Sprintf("openFPGALoader %s does not support the %s's %s (its --list-fpga has no such device)", version, kind.Name, kind.Part),
			"program the "+kind.Name+" with "+otherProgrammers(kind, "openfpgaloader")+", or install an openFPGALoader that lists it")
	}

	out, err = d.ask(ctx, path, "--list-cables")
	if err != nil {
		toolProblem(f, "cable type", path+" --list-cables", err, out)
	} else if names, perr := program.ParseListCables(out); perr != nil {
		f.problem("cable type", drivers.ClassInfra, perr.Error(), "is "+path+" openFPGALoader?")
	} else if !contains(names, o.Cable) {
		fix := "set cable: to a name openFPGALoader --list-cables prints"
		if n := strictyaml.Nearest(o.Cable, names); n != "" {
			fix = "did you mean " + n + "?"
		}
		f.problem("cable type", drivers.ClassSetup, fmt.Sprintf("openFPGALoader %s does not know cable %q", version, o.Cable), fix)
	} else {
		f.ok("cable type", o.Cable)
	}

	out, err = d.ask(ctx, path, "--scan-usb")
	if err != nil {
		toolProblem(f, "cable", path+" --scan-usb", err, out)
		return
	}
	probes, perr := program.ParseScanUSB(out)
	if perr != nil {
		f.problem("cable", drivers.ClassInfra, perr.Error(), "is "+path+" openFPGALoader?")
		return
	}
	var seen []string
	for _, p := range probes {
		s := p.Serial
		if s == "" {
			s = "no serial"
		}
		seen = append(seen, fmt.Sprintf("%03d:%03d %s (%s)", p.Bus, p.Device, p.Product, s))
	}
	listed := "it sees no probe"
	if len(seen) > 0 {
		listed = "it sees " + strings.Join(seen, ", ")
	}
	switch {
	case o.USBPath != "":
		bus, dev, err := o.BusDevice()
		if err != nil {
			f.problem("cable", drivers.ClassInfra, fmt.Sprintf("no USB device at port %s (the lab file's usb_path): %v; %s", o.USBPath, err, listed),
				"plug the cable into the port the lab file names (lsusb -t shows the tree), or fix usb_path:")
			return
		}
		for _, p := range probes {
			if p.Bus == bus && p.Device == dev {
				f.ok("cable", fmt.Sprintf("%s at USB port %s (bus %03d device %03d): %s", o.Cable, o.USBPath, bus, dev, p.Product))
				return
			}
		}
		f.problem("cable", drivers.ClassInfra, fmt.Sprintf("the device at USB port %s (bus %03d device %03d) is not a JTAG probe openFPGALoader sees; %s", o.USBPath, bus, dev, listed),
			"check that the cable at that port is the board's JTAG probe and that this user may open it (openFPGALoader's udev rules)")
	default:
		for _, p := range probes {
			if p.Serial == o.Serial {
				f.ok("cable", fmt.Sprintf("%s with serial %s at bus %03d device %03d: %s", o.Cable, o.Serial, p.Bus, p.Device, p.Product))
				return
			}
		}
		f.problem("cable", drivers.ClassInfra, fmt.Sprintf("openFPGALoader --scan-usb sees no cable with serial %s (the lab file's); %s", o.Serial, listed),
			"plug in the cable with that serial, or fix serial: (openFPGALoader --scan-usb lists the serials)")
	}
}

func (d *doctor) quartus(ctx context.Context, f *findings, q *program.QuartusPGM) {
	path, err := q.ToolPath()
	if err != nil {
		f.fromError("quartus_pgm", err)
		return
	}
	out, err := d.ask(ctx, path, "--version")
	if err != nil {
		toolProblem(f, "quartus_pgm", path, err, out)
		return
	}
	f.ok("quartus_pgm", path+" version "+program.ParseVersion(out))
	if q.PCIDevice != "" {
		if err := q.Check(ctx); err != nil {
			f.fromError("PCIe device", err)
		} else {
			f.ok("PCIe device", q.PCIDevice+" on the bus")
		}
	}
	jtag := filepath.Join(filepath.Dir(path), "jtagconfig")
	if _, err := os.Stat(jtag); err != nil {
		if jtag, err = exec.LookPath("jtagconfig"); err != nil {
			f.problem("cable", drivers.ClassInfra, "jtagconfig (which lists the cables) is neither next to "+path+" nor on PATH",
				"install the Quartus Prime Programmer whole, or put its bin directory on PATH")
			return
		}
	}
	out, err = d.ask(ctx, jtag)
	if err != nil && strings.TrimSpace(out) == "" {
		toolProblem(f, "cable", jtag, err, out)
		return
	}
	cables, _ := program.ParseJTAGConfig(out)
	var names []string
	for _, c := range cables {
		names = append(names, c.Name)
		if !strings.EqualFold(c.Name, q.Cable) {
			continue
		}
		var devs []string
		for _, dv := range c.Devices {
			if len(dv) < 8 || strings.ContainsAny(dv[:8], " \t") {
				f.problem("cable", drivers.ClassInfra, fmt.Sprintf("cable %q: %s", q.Cable, dv), "check that the board is powered and the cable seated on its JTAG header")
				return
			}
			devs = append(devs, dv)
		}
		if len(devs) == 0 {
			f.problem("cable", drivers.ClassInfra, fmt.Sprintf("cable %q sees no device on its chain", q.Cable), "check that the board is powered and the cable seated on its JTAG header")
			return
		}
		f.ok("cable", fmt.Sprintf("%q: %s", q.Cable, strings.Join(devs, "; ")))
		return
	}
	listed := "it lists no cable"
	if len(names) > 0 {
		listed = "it lists " + strings.Join(names, ", ")
	}
	f.problem("cable", drivers.ClassInfra, fmt.Sprintf("jtagconfig does not list cable %q (the lab file's); %s", q.Cable, listed),
		"plug the board's USB-Blaster into the USB port the lab file names (the port is in brackets), or fix cable:")
}

func (d *doctor) xsdb(ctx context.Context, f *findings, x *program.XSDB) {
	path, err := x.ToolPath()
	if err != nil {
		f.fromError("xsdb", err)
		return
	}
	version := ""
	if dir, err := os.MkdirTemp("", "labrunner-doctor-"); err == nil {
		script := filepath.Join(dir, "version.tcl")
		if os.WriteFile(script, []byte("puts [version]\nexit 0\n"), 0o600) == nil {
			if out, err := d.ask(ctx, path, script); err == nil {
				version = program.ParseVersion(out)
			}
		}
		os.RemoveAll(dir)
	}
	if version == "" {
		f.ok("xsdb", path+" (its version did not show)")
	} else {
		f.ok("xsdb", path+" version "+version)
	}
	addr, err := x.HWServerAddr()
	if err != nil {
		f.problem("hw_server", drivers.ClassSetup, err.Error(), "for xsdb, cable: names the hw_server as host or host:port")
		return
	}
	if err := dial(ctx, addr, d.o.ToolTimeout); err != nil {
		f.problem("hw_server", drivers.ClassInfra, fmt.Sprintf("hw_server at %s does not answer: %v", addr, err),
			"start hw_server on the host with the cable (hw_server -d), or fix cable: (host:port)")
		return
	}
	f.ok("hw_server", addr+" answers (the cable with serial "+x.Serial+" is checked when programming)")
}

func otherProgrammers(kind boards.Kind, not string) string {
	var alt []string
	for _, t := range kind.Programmers {
		if t != not && t != "emulated" {
			alt = append(alt, t)
		}
	}
	if len(alt) == 0 {
		return "another programmer"
	}
	return strings.Join(alt, " or ")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
