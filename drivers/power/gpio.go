package power

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"periph.io/x/conn/v3/gpio"
	"periph.io/x/conn/v3/gpio/gpioreg"
	"periph.io/x/host/v3"

	"github.com/labrunner/labrunner/drivers"
)

// A relay on a GPIO line must stay switched after `labrunner power on`
// returns, but Linux's GPIO character device (which periph.io drives)
// keeps a line as requested only while the process that requested it
// holds it: once that process exits, "the state of the line becomes
// uncontrolled from the userspace perspective, and may revert to its
// default state" (the kernel's GPIO userspace API). So power is switched
// on by starting a holder: a small detached process (`labrunner power hold
// --gpio-holder`) that requests the line at the on level and holds it until
// it is told to switch off (SIGTERM), when it drives the off level and
// lets the line go. Power off stops the holder, or, when none holds the
// line, drives the off level itself. Nothing else is recorded anywhere: the kernel's record of who
// holds the line (its consumer, "labrunner@PID") is the state, so a holder
// that died (a host reboot, kill -9) is simply power off.
//
// The relay's wiring must make a free line (no holder: the host booting,
// the holder gone) mean off: a pull resistor to the off level, or an
// active-low relay board whose input idles high. docs/real-lab.md says
// so for the bench.

// HolderFlag marks a holder's command line, so that power off can tell
// the holder it may stop from any other program holding the line.
const HolderFlag = "--gpio-holder"

// Lines is how the power switch reaches GPIO lines: periph.io's drivers
// of this host (PeriphLines), or a stand-in in tests.
type Lines interface {
	// Find says whether the line exists and which consumer holds it now
	// ("" when nobody does); an error when there is no such line.
	Find(pin string) (holder string, err error)
	// Request drives the line at level and holds it until Close.
	Request(pin string, level bool) (Line, error)
}

// Line is a held GPIO line.
type Line interface {
	Set(level bool) error
	Close() error
}

// HostLines is the host's GPIO lines (periph.io); tests replace it.
var HostLines Lines = PeriphLines{}

// GPIO switches a relay on a GPIO line of the host running labrunner.
type GPIO struct {
	board     string
	pin       string
	activeLow bool
	lines     Lines
	// Holder is the command that holds the line while the power is on;
	// the flags --pin, --level and --off-level are appended (default:
	// this program, `power hold --gpio-holder`).
	Holder []string
	// Env is added to the holder's environment.
	Env []string
}

// NewGPIO finds the line (a periph.io name such as "GPIO17") without
// requesting it. activeLow: the relay closes (power on) when the line is
// driven low. A line that is not there is infrastructure: the lab file may
// be right and the GPIO chip missing (a USB GPIO expander unplugged).
func NewGPIO(board, pin string, activeLow bool) (*GPIO, error) {
	g := &GPIO{board: board, pin: pin, activeLow: activeLow, lines: HostLines}
	if _, err := g.lines.Find(pin); err != nil {
		return nil, drivers.Infra(board, "power gpio "+pin,
			"check that the GPIO chip the relay hangs on is present (gpiodetect, gpioinfo), or fix power.pin in the lab file", err)
	}
	return g, nil
}

// Name returns "gpio PIN".
func (g *GPIO) Name() string { return "gpio " + g.pin }

// onLevel is the line level that closes the relay.
func (g *GPIO) onLevel() bool { return !g.activeLow }

// Set switches the relay: on starts a holder (none is started when one
// already holds the line on); off stops the holder, which drives the off
// level on its way out, or, with no holder, drives the off level itself.
func (g *GPIO) Set(ctx context.Context, on bool) error {
	op := fmt.Sprintf("power %s via gpio %s", onOff(on), g.pin)
	if err := ctx.Err(); err != nil {
		return drivers.Infra(g.board, op, "", err)
	}
	ctx, cancel := drivers.Deadline(ctx, 10*time.Second)
	defer cancel()
	holder, err := g.lines.Find(g.pin)
	if err != nil {
		return drivers.Infra(g.board, op, "check that the GPIO chip is present (gpiodetect)", err)
	}
	pid, ours := holderPID(holder, g.pin)
	if holder != "" && !ours {
		return drivers.Infra(g.board, op, "another program holds the relay's line: stop it (gpioinfo shows the consumer), or fix power.pin",
			fmt.Errorf("GPIO line %s is held by %q", g.pin, holder))
	}
	if on {
		if ours {
			return nil // already on: its holder holds it
		}
		return g.startHolder(ctx, op)
	}
	if ours {
		// The holder drives the off level on its way out; requesting the
		// line again would only add a glitch (see docs/real-lab.md).
		if err := stopHolder(ctx, pid); err != nil {
			return drivers.Infra(g.board, op, "the process holding the relay on did not stop; stop it by hand (kill "+strconv.Itoa(pid)+")", err)
		}
		return nil
	}
	// Nobody holds the line (the host rebooted, the holder died): drive
	// the off level, so that off is off whatever the line's default.
	l, err := g.lines.Request(g.pin, !g.onLevel())
	if err != nil {
		return drivers.Infra(g.board, op, "check that labrunner may use the GPIO chip (/dev/gpiochipN: root, or a gpio group with a udev rule)", err)
	}
	return l.Close()
}

// Status says whether the relay is held on, and by which process.
func (g *GPIO) Status() (on bool, detail string, err error) {
	holder, err := g.lines.Find(g.pin)
	if err != nil {
		return false, "", drivers.Infra(g.board, "power gpio "+g.pin, "check that the GPIO chip is present (gpiodetect)", err)
	}
	switch pid, ours := holderPID(holder, g.pin); {
	case ours:
		return true, fmt.Sprintf("on: line %s held by labrunner's holder, pid %d", g.pin, pid), nil
	case holder != "":
		return false, fmt.Sprintf("unknown: line %s held by another program (%s)", g.pin, holder), nil
	}
	return false, fmt.Sprintf("off: line %s free (the relay at its wired default)", g.pin), nil
}

func (g *GPIO) holderArgv() []string {
	argv := append([]string(nil), g.Holder...)
	if len(argv) == 0 {
		self, err := os.Executable()
		if err != nil {
			self = os.Args[0]
		}
		argv = []string{self, "power", "hold", HolderFlag}
	}
	return append(argv, "--pin", g.pin, "--level", levelArg(g.onLevel()), "--off-level", levelArg(!g.onLevel()))
}

func levelArg(l bool) string {
	if l {
		return "1"
	}
	return "0"
}

// startHolder starts the holder in a session of its own (a terminal's
// Ctrl-C or hang-up does not reach it) and waits for it to say that it
// holds the line ("ok"), or why it could not.
func (g *GPIO) startHolder(ctx context.Context, op string) error {
	argv := g.holderArgv()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), g.Env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return drivers.Infra(g.board, op, "", err)
	}
	if err := cmd.Start(); err != nil {
		return drivers.Infra(g.board, op, "the holder process could not be started", err)
	}
	reply := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		reply <- strings.TrimSpace(line)
	}()
	select {
	case r := <-reply:
		if r == "ok" {
			// It lives on, on its own, beyond this process if need be;
			// while this process lives (a nightly power-cycling boards)
			// it is reaped when it exits.
			go cmd.Wait()
			return nil
		}
		cmd.Process.Kill()
		cmd.Wait()
		if r == "" {
			r = "the holder exited without a word"
		}
		return drivers.Infra(g.board, op, "check that labrunner may use the GPIO chip (/dev/gpiochipN: root, or a gpio group with a udev rule)",
			errors.New(strings.TrimPrefix(r, "error: ")))
	case <-ctx.Done():
		cmd.Process.Kill()
		cmd.Wait()
		return drivers.Infra(g.board, op, "the holder process did not answer", fmt.Errorf("%w: %w", drivers.ErrTimeout, ctx.Err()))
	}
}

var consumerPID = regexp.MustCompile(`@(\d+)$`)

// holderPID tells whether a line's consumer ("labrunner@1234") is a
// holder of this pin started by labrunner, and its pid.
func holderPID(consumer, pin string) (int, bool) {
	m := consumerPID.FindStringSubmatch(consumer)
	if m == nil {
		return 0, false
	}
	pid, err := strconv.Atoi(m[1])
	if err != nil || pid <= 0 {
		return 0, false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return 0, false
	}
	args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
	holder, thisPin := false, false
	for i, a := range args {
		holder = holder || a == HolderFlag
		thisPin = thisPin || a == "--pin" && i+1 < len(args) && args[i+1] == pin
	}
	return pid, holder && thisPin
}

// stopHolder asks a holder to switch off (SIGTERM) and waits until it is
// gone.
func stopHolder(ctx context.Context, pid int) error {
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return nil
		}
		return fmt.Errorf("signal the holder, pid %d: %w", pid, err)
	}
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return nil
		}
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil && zombie(b) {
			return nil // exited; its parent has not reaped it yet
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("holder pid %d still running: %w: %w", pid, drivers.ErrTimeout, ctx.Err())
		case <-t.C:
		}
	}
}

// zombie reports whether /proc/PID/stat shows an exited process.
func zombie(stat []byte) bool {
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] == 'Z'
}

// Hold is the holder's body: it requests the line at level, says "ok" on
// ready (or "error: ..." and returns), holds the line until ctx ends (the
// holder's SIGTERM), then drives offLevel and lets the line go.
func Hold(ctx context.Context, lines Lines, pin string, level, offLevel bool, ready io.WriteCloser) error {
	l, err := lines.Request(pin, level)
	if err != nil {
		fmt.Fprintf(ready, "error: %v\n", err)
		ready.Close()
		return err
	}
	fmt.Fprintln(ready, "ok")
	ready.Close()
	<-ctx.Done()
	err = l.Set(offLevel)
	return errors.Join(err, l.Close())
}

// PeriphLines are this host's GPIO lines as periph.io's drivers see them:
// the GPIO character device (gpioioctl), lines named by the kernel ("GPIO17"
// on a Raspberry Pi), or sysfs GPIO where it is still there.
type PeriphLines struct{}

var (
	hostOnce sync.Once
	hostErr  error
)

func periphInit() error {
	hostOnce.Do(func() { _, hostErr = host.Init() })
	return hostErr
}

// Find looks the line up; the holder is known for character-device lines.
func (PeriphLines) Find(pin string) (string, error) {
	if err := periphInit(); err != nil {
		return "", fmt.Errorf("periph.io could not initialise this host's drivers: %w", err)
	}
	p := gpioreg.ByName(pin)
	if p == nil {
		return "", fmt.Errorf("no GPIO line named %q on this host; %s", pin, availablePins())
	}
	if c, ok := p.(interface{ Consumer() string }); ok {
		return c.Consumer(), nil
	}
	return "", nil
}

// Request drives the line; Close releases it.
func (PeriphLines) Request(pin string, level bool) (Line, error) {
	if err := periphInit(); err != nil {
		return nil, err
	}
	p := gpioreg.ByName(pin)
	if p == nil {
		return nil, fmt.Errorf("no GPIO line named %q on this host; %s", pin, availablePins())
	}
	l := periphLine{p}
	if err := l.Set(level); err != nil {
		return nil, fmt.Errorf("drive GPIO line %s: %w", pin, err)
	}
	return l, nil
}

type periphLine struct{ p gpio.PinIO }

func (l periphLine) Set(level bool) error { return l.p.Out(gpio.Level(level)) }

func (l periphLine) Close() error {
	if c, ok := l.p.(interface{ Close() }); ok {
		c.Close()
	}
	return nil
}

func availablePins() string {
	var names []string
	for _, p := range gpioreg.All() {
		names = append(names, p.Name())
	}
	if len(names) == 0 {
		return "this host has no GPIO lines periph.io knows (no /dev/gpiochipN or /sys/class/gpio): run labrunner on the host the relay is wired to"
	}
	sort.Strings(names)
	const show = 40
	more := ""
	if len(names) > show {
		more = fmt.Sprintf(" and %d more", len(names)-show)
		names = names[:show]
	}
	return "available: " + strings.Join(names, ", ") + more
}
