// Package doctor checks a lab's host and boards without changing their
// state, for a person setting up a real rack (`labrunner doctor`): the
// device nodes the lab file names exist and this user may open them; each
// programming tool is on PATH, with its version, and supports the board's
// part; the JTAG cables it sees include the one the lab file binds; the
// fpga_manager is there and in which state; the UART bridge answers INFO;
// the console gives a prompt; the power switch is reachable; the lock
// directory is safe. It loads no bitstream, writes no register, switches
// no power and takes no lease: what it opens it only reads (a console gets
// an Enter, as the nightly's health check gives it).
package doctor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/labrunner/labrunner/boards"
	"github.com/labrunner/labrunner/boards/lease"
	"github.com/labrunner/labrunner/drivers"
	"github.com/labrunner/labrunner/drivers/console"
	"github.com/labrunner/labrunner/drivers/mmio"
	"github.com/labrunner/labrunner/drivers/power"
	"github.com/labrunner/labrunner/drivers/uartbridge"
	"github.com/labrunner/labrunner/labconfig"
)

// Status of a finding.
type Status string

const (
	OK      Status = "ok"
	Problem Status = "problem"
	// Note: nothing wrong, but something a person should know (a tool's
	// version it could not tell, a check that does not apply).
	Note Status = "note"
)

// Finding is the result of one check.
type Finding struct {
	Board  string `json:"board,omitempty"` // "" for the host's own checks
	Check  string `json:"check"`
	Status Status `json:"status"`
	// Class of a problem: "setup" (the lab file is wrong) or
	// "infrastructure" (the host or the rack is not ready).
	Class  string `json:"class,omitempty"`
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
}

// Report is every finding and the exit code they make: 2 when a problem is
// the lab file's, else 3 when one is the host's or the rack's, else 0.
type Report struct {
	Lab      string    `json:"lab"`
	Findings []Finding `json:"findings"`
	ExitCode int       `json:"exit_code"`
}

// Options for Run.
type Options struct {
	// Emulator serves the lab's emulated boards (nil when it has none).
	Emulator boards.Emulator
	// LockDir is the lock directory the lab's users share.
	LockDir string
	// Sysfs is the root under which USB port paths are looked up
	// (default /sys).
	Sysfs string
	// ToolTimeout bounds each question to a tool (default 10 s).
	ToolTimeout time.Duration
	Log         *slog.Logger
}

// Run checks every board of the lab, the tools they need and the lock
// directory, boards in parallel, each step under a deadline.
func Run(ctx context.Context, lab *labconfig.Lab, o Options) Report {
	if o.ToolTimeout <= 0 {
		o.ToolTimeout = 10 * time.Second
	}
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	d := &doctor{lab: lab, o: o, tools: map[string]*toolAnswer{}}
	var wg sync.WaitGroup
	per := make([][]Finding, len(lab.Boards))
	for i := range lab.Boards {
		wg.Add(1)
		go func() {
			defer wg.Done()
			per[i] = d.board(ctx, &lab.Boards[i])
		}()
	}
	host := d.lockDir()
	wg.Wait()
	r := Report{Lab: lab.Name, Findings: host}
	for _, f := range per {
		r.Findings = append(r.Findings, f...)
	}
	r.ExitCode = exitCode(r.Findings)
	return r
}

func exitCode(fs []Finding) int {
	setup, infra := false, false
	for _, f := range fs {
		if f.Status != Problem {
			continue
		}
		if f.Class == drivers.ClassSetup.String() {
			setup = true
		} else {
			infra = true
		}
	}
	switch {
	case setup:
		return 2
	case infra:
		return 3
	}
	return 0
}

type doctor struct {
	lab *labconfig.Lab
	o   Options

	mu    sync.Mutex
	tools map[string]*toolAnswer // asked once per tool and question
}

// findings collects one board's findings.
type findings struct {
	board string
	list  []Finding
}

func (f *findings) ok(check, detail string) {
	f.list = append(f.list, Finding{Board: f.board, Check: check, Status: OK, Detail: detail})
}

func (f *findings) note(check, detail string) {
	f.list = append(f.list, Finding{Board: f.board, Check: check, Status: Note, Detail: detail})
}

func (f *findings) problem(check string, class drivers.Class, detail, fix string) {
	f.list = append(f.list, Finding{Board: f.board, Check: check, Status: Problem, Class: class.String(), Detail: detail, Fix: fix})
}

// fromError records a driver's error with its class and hint.
func (f *findings) fromError(check string, err error) {
	class := drivers.ClassOf(err)
	if class == drivers.ClassDesign {
		class = drivers.ClassInfra
	}
	detail, fix := err.Error(), ""
	var de *drivers.Error
	if errors.As(err, &de) {
		// The board is the table's first column and the hint its fix.
		fix = de.Hint
		h := *de
		h.Hint, h.Board = "", ""
		detail = h.Error()
	}
	f.problem(check, class, oneLine(detail), fix)
}

func (d *doctor) board(ctx context.Context, b *labconfig.Board) []Finding {
	f := &findings{board: b.Name}
	kind, err := boards.Lookup(b.Kind)
	if err != nil {
		f.problem("kind", drivers.ClassSetup, err.Error(), "fix kind: at "+b.Pos.String())
		return f.list
	}
	emulated := b.Emulated != nil
	if emulated && d.o.Emulator == nil {
		f.problem("emulated", drivers.ClassSetup, "the board is emulated but no emulated rack runs", "")
		return f.list
	}
	port := func(s *labconfig.Serial, pathOf func(string) (string, error)) (string, bool) {
		if s.Port != "emu" {
			return s.Port, true
		}
		p, err := pathOf(b.Name)
		if err != nil || p == "" {
			f.note("emulated port", "served in process (no pseudo-terminal)")
			return "", false
		}
		return p, true
	}
	// The register bus.
	switch {
	case b.Bus.UARTBridge != nil:
		if p, ok := port(b.Bus.UARTBridge, func(n string) (string, error) { return d.o.Emulator.BridgePath(n) }); ok && d.node(f, "bridge device", p, true) {
			d.bridge(ctx, f, b, p)
		}
	case b.Bus.MMIO != nil:
		mm := b.Bus.MMIO
		dev := mm.Device
		if i := strings.LastIndex(dev, ":map"); i > 0 {
			dev = dev[:i]
		}
		if d.node(f, "bus device", dev, false) {
			bus, err := mmio.Open(mm.Device, mm.Base, mm.Size, mmio.Options{Board: b.Name})
			if err != nil {
				f.fromError("bus mapping", err)
			} else {
				f.ok("bus mapping", fmt.Sprintf("%s mapped, 0x%x bytes (no register read: an unprogrammed fabric may hang the bus)", mm.Device, bus.Size()))
				bus.Close()
			}
		}
	case b.Bus.Emulated != nil:
		f.ok("bus", "emulated, in process")
	default:
		f.note("bus", "none: reached in-band through its neighbours")
	}
	// The console.
	if b.Console != nil {
		if p, ok := port(b.Console, func(n string) (string, error) { return d.o.Emulator.ConsolePath(n) }); ok && d.node(f, "console device", p, true) {
			d.console(ctx, f, b, p)
		}
	}
	d.programmer(ctx, f, b, kind)
	d.power(f, b, emulated)
	return f.list
}

// node checks that a device node exists and that this user may open it
// for reading and writing; serial says it should be a character device.
func (d *doctor) node(f *findings, check, path string, serial bool) bool {
	st, err := os.Stat(path)
	if err != nil {
		fix := "check that the device is plugged in and its driver loaded, and the lab file's path"
		if serial {
			fix = "is the USB-UART plugged in and the board powered? Name it by /dev/serial/by-id (ls -l /dev/serial/by-id), not ttyUSBn"
		}
		if strings.Contains(path, "/uio") {
			fix = "is the uio driver bound (ls /sys/class/uio)? Check the lab file's bus.mmio.device"
		}
		if strings.Contains(path, "/bus/pci/devices/") {
			fix = "is the board's PCIe endpoint on the bus (lspci -D)? Rescan it (echo 1 > /sys/bus/pci/rescan) or check the lab file's path"
		}
		f.problem(check, drivers.ClassInfra, fmt.Sprintf("%s: %v", path, errors.Unwrap(err)), fix)
		return false
	}
	if serial && st.Mode()&os.ModeCharDevice == 0 {
		f.problem(check, drivers.ClassSetup, fmt.Sprintf("%s is not a character device (%v)", path, st.Mode().Type()), "name the USB-UART's device node")
		return false
	}
	if err := syscall.Access(path, 6 /* R_OK|W_OK */); err != nil {
		group := "its group"
		if sys, ok := st.Sys().(*syscall.Stat_t); ok {
			if g, err := user.LookupGroupId(strconv.Itoa(int(sys.Gid))); err == nil {
				group = "group " + g.Name
			}
		}
		u := "this user"
		if me, err := user.Current(); err == nil {
			u = me.Username
		}
		f.problem(check, drivers.ClassInfra, fmt.Sprintf("%s exists but %s may not open it for reading and writing (%v, mode %v)", path, u, err, st.Mode().Perm()),
			fmt.Sprintf("add %s to %s (usermod -aG GROUP %s, then log in again; dialout for USB-UARTs) or give the device to a group with a udev rule", u, group, u))
		return false
	}
	what := "file"
	switch {
	case st.Mode()&os.ModeCharDevice != 0:
		what = "character device"
	case st.Mode()&os.ModeDevice != 0:
		what = "device"
	}
	f.ok(check, fmt.Sprintf("%s (%s, mode %04o, readable and writable)", path, what, st.Mode().Perm()))
	return true
}

func (d *doctor) bridge(ctx context.Context, f *findings, b *labconfig.Board, path string) {
	cfg := b.Bus.UARTBridge
	br, err := uartbridge.Open(path, cfg.Baud, uartbridge.Options{Board: b.Name, Timeout: d.lab.Deadlines.Register, Logger: d.o.Log,
		Pacing: time.Duration(cfg.PacingUS) * time.Microsecond})
	if err != nil {
		f.fromError("bridge INFO", err)
		return
	}
	defer br.Close()
	rctx, cancel := drivers.Deadline(ctx, 2*d.lab.Deadlines.Register)
	defer cancel()
	info, err := br.Info(rctx)
	if err != nil {
		f.fromError("bridge INFO", err)
		return
	}
	f.ok("bridge INFO", fmt.Sprintf("protocol %d, up to %d words a request, device 0x%08x, at %d baud", info.Version, info.MaxCount, info.DeviceID, cfg.Baud))
}

func (d *doctor) console(ctx context.Context, f *findings, b *labconfig.Board, path string) {
	cfg := b.Console
	c, err := console.Open(path, cfg.Baud, console.Options{Board: b.Name, Pacing: time.Duration(cfg.PacingUS) * time.Microsecond})
	if err != nil {
		f.fromError("console prompt", err)
		return
	}
	defer c.Close()
	prompt := cfg.Prompt
	if prompt == "" {
		prompt = `[#$>] ?$`
	}
	cctx, cancel := drivers.Deadline(ctx, d.lab.Deadlines.Console)
	defer cancel()
	out, err := c.WaitPrompt(cctx, prompt, 0)
	if err != nil {
		f.fromError("console prompt", err)
		return
	}
	f.ok("console prompt", fmt.Sprintf("%q at %d baud", lastLine(out), cfg.Baud))
}

func (d *doctor) power(f *findings, b *labconfig.Board, emulated bool) {
	p := b.Power
	switch {
	case emulated:
		f.ok("power", "emulated: switched by the emulated rack")
	case p.Type == "" || p.Type == "none":
		f.note("power", "none: labrunner does not switch this board's supply")
	case p.Type == "command":
		for i, argv := range [][]string{p.On, p.Off} {
			which := []string{"on", "off"}[i]
			if len(argv) == 0 {
				continue
			}
			if path, err := exec.LookPath(argv[0]); err != nil {
				f.problem("power "+which, drivers.ClassInfra, fmt.Sprintf("the %s command's program %q is not found: %v", which, argv[0], err), "install it or give its full path in power."+which)
			} else {
				f.ok("power "+which, path+" (not run: doctor switches nothing)")
			}
		}
	case p.Type == "gpio":
		g, err := power.NewGPIO(b.Name, p.Pin, p.ActiveLow)
		if err != nil {
			f.fromError("power gpio", err)
			return
		}
		_, detail, err := g.Status()
		if err != nil {
			f.fromError("power gpio", err)
			return
		}
		if strings.HasPrefix(detail, "unknown") {
			f.problem("power gpio", drivers.ClassInfra, detail, "another program holds the relay's line: stop it, or fix power.pin")
			return
		}
		f.ok("power gpio", detail)
	}
}

// lockDir checks the lock directory without creating it.
func (d *doctor) lockDir() []Finding {
	f := &findings{}
	dir := d.o.LockDir
	if dir == "" {
		return nil
	}
	if _, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) {
		f.note("lock directory", dir+" does not exist yet: the first nightly or reserve makes it, shared and sticky (1777)")
		return f.list
	}
	if err := lease.CheckDir(dir); err != nil {
		var ue *lease.UnsafeDirError
		if errors.As(err, &ue) {
			f.problem("lock directory", drivers.ClassInfra, ue.Path+": "+ue.Why, ue.Fix)
		} else {
			f.problem("lock directory", drivers.ClassInfra, err.Error(), "")
		}
		return f.list
	}
	es, err := os.ReadDir(dir)
	if err != nil {
		f.problem("lock directory", drivers.ClassInfra, err.Error(), "")
		return f.list
	}
	bad := 0
	for _, e := range es {
		if e.Type()&os.ModeSymlink != 0 || !e.Type().IsRegular() && !e.IsDir() {
			bad++
			f.problem("lock directory", drivers.ClassInfra, fmt.Sprintf("%s is a %v, not a file labrunner made", filepath.Join(dir, e.Name()), e.Type()),
				"remove it: labrunner refuses to open links and special files in the lock directory")
		}
	}
	if bad == 0 {
		st, _ := os.Stat(dir)
		f.ok("lock directory", fmt.Sprintf("%s (%v), %d files", dir, st.Mode(), len(es)))
	}
	return f.list
}

// WriteTable prints the findings, one per line, problems with their fix
// under them, then a summary line.
func (r Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "BOARD\tCHECK\tSTATUS\tDETAIL")
	problems := 0
	for _, f := range r.Findings {
		b := f.Board
		if b == "" {
			b = "(host)"
		}
		st := string(f.Status)
		if f.Status == Problem {
			problems++
			st = "PROBLEM (" + f.Class + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", b, f.Check, st, oneLine(f.Detail))
		if f.Fix != "" {
			fmt.Fprintf(tw, "\t\t\t  fix: %s\n", oneLine(f.Fix))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if problems == 0 {
		_, err := fmt.Fprintf(w, "\nlab %s: every check passed\n", r.Lab)
		return err
	}
	_, err := fmt.Fprintf(w, "\nlab %s: %d problems (exit %d)\n", r.Lab, problems, r.ExitCode)
	return err
}

// Problems returns the problem findings, sorted by board and check.
func (r Report) Problems() []Finding {
	var out []Finding
	for _, f := range r.Findings {
		if f.Status == Problem {
			out = append(out, f)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Board != out[j].Board {
			return out[i].Board < out[j].Board
		}
		return out[i].Check < out[j].Check
	})
	return out
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func lastLine(s string) string {
	s = strings.TrimRight(s, "\r\n")
	if i := strings.LastIndexAny(s, "\r\n"); i >= 0 {
		s = s[i+1:]
	}
	return s
}

// dial checks that a TCP service answers.
func dial(ctx context.Context, addr string, timeout time.Duration) error {
	var dl net.Dialer
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c, err := dl.DialContext(cctx, "tcp", addr)
	if err != nil {
		return err
	}
	return c.Close()
}
