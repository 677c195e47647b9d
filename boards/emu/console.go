package emu

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
)

// ConsoleHandler runs one console command. args are the words typed after
// the command's name (split on blanks); the returned text is printed as the
// command's output (lines separated by "\n"; "\r\n" is added on the wire).
//
// A handler runs on the console's goroutine without the board's lock: it
// reaches registers through b.Bus() as the board's firmware would through
// /dev/mem, and locks whatever else it shares. While it runs the console
// answers nothing, as a shell running a slow command.
type ConsoleHandler func(args []string) string

// consoleCmds are the commands designs and features added to a board's
// shell (the zero value is ready).
type consoleCmds struct {
	mu sync.Mutex
	m  map[string]ConsoleHandler
}

// builtinCommands are the firmware's own commands; help lists them first.
var builtinCommands = []struct{ name, help string }{
	{"help", "list the commands"},
	{"id", "print board=<name> kind=<kind> part=<FPGA part> dna=<device id>"},
	{"status", "print power, the loaded design and version, and the uptime"},
	{"version", "print the firmware version"},
	{"reboot", "restart the firmware (the programmable logic and its design keep running)"},
}

func isBuiltin(name string) bool {
	for _, c := range builtinCommands {
		if c.name == name {
			return true
		}
	}
	return false
}

// HandleConsole adds the command name to the board's console shell, or
// replaces the handler registered under that name; a nil h removes it.
// Designs register their commands when they are instantiated and remove them
// in Close. It panics on a name that is empty, contains blanks or is one of
// the firmware's own commands (help, id, status, version, reboot): that is a
// programming error.
func (b *Board) HandleConsole(name string, h func(args []string) string) {
	if name == "" || strings.ContainsAny(name, " \t\r\n") || isBuiltin(name) {
		panic(fmt.Sprintf("emu: board %s: HandleConsole(%q): a command name must be one word and not a built-in command", b.cfg.Name, name))
	}
	c := &b.cmds
	c.mu.Lock()
	defer c.mu.Unlock()
	if h == nil {
		delete(c.m, name)
		return
	}
	if c.m == nil {
		c.m = map[string]ConsoleHandler{}
	}
	c.m[name] = h
}

func (b *Board) consoleHandler(name string) ConsoleHandler {
	b.cmds.mu.Lock()
	defer b.cmds.mu.Unlock()
	return b.cmds.m[name]
}

func (b *Board) consoleNames() []string {
	b.cmds.mu.Lock()
	defer b.cmds.mu.Unlock()
	out := make([]string, 0, len(b.cmds.m))
	for n := range b.cmds.m {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// ConsoleCommand runs one command line as the board's shell would, in
// process, and returns what it prints, without the kernel noise and the
// prompt. A board that is off or silent prints nothing. It is for tests and
// for racks started without pseudo-terminals; `reboot` restarts the firmware
// (and, when the console is served, prints the boot log there).
func (b *Board) ConsoleCommand(line string) string {
	if b.HasFault("board-silent") || !b.Powered() {
		return ""
	}
	if stuck, crashed := b.fwConsoleState(); stuck || crashed {
		return "" // the firmware never reached its shell, or died
	}
	out, reboot := b.runCommand(line, time.Now())
	if reboot && b.srv != nil {
		b.srv.boot()
	}
	return out
}

// runCommand executes a command line. reboot reports that the firmware
// restarted (the caller prints the boot log).
func (b *Board) runCommand(line string, now time.Time) (out string, reboot bool) {
	args := strings.Fields(line)
	if len(args) == 0 {
		return "", false
	}
	name, args := args[0], args[1:]
	switch name {
	case "help":
		var sb strings.Builder
		sb.WriteString("Commands:\n")
		for _, c := range builtinCommands {
			fmt.Fprintf(&sb, "  %-10s %s\n", c.name, c.help)
		}
		for _, n := range b.consoleNames() {
			fmt.Fprintf(&sb, "  %s\n", n)
		}
		return sb.String(), false
	case "id":
		return fmt.Sprintf("board=%s kind=%s part=%s dna=0x%08x\n", b.cfg.Name, b.kind.Name, b.kind.Part, b.deviceID), false
	case "status":
		b.mu.Lock()
		powered, design, m := b.powered, b.design, b.manifest
		b.mu.Unlock()
		var sb strings.Builder
		sb.WriteString("power=")
		if powered {
			sb.WriteString("on")
		} else {
			sb.WriteString("off")
		}
		switch {
		case design == nil:
			sb.WriteString(" design=none")
		case m != nil:
			fmt.Fprintf(&sb, " design=%s version=%s", m.Name, m.Version)
		default:
			fmt.Fprintf(&sb, " design=%s", design.Name())
		}
		fmt.Fprintf(&sb, " uptime=%.2fs\n", b.uptime(now).Seconds())
		return sb.String(), false
	case "version":
		v := "PetaLinux 2023.2, Linux 6.1.30-xilinx-v2023.2"
		if !b.isXilinx() {
			v = "Nios II, Linux 5.15.0-nios2"
		}
		return fmt.Sprintf("%s (%s)\n", FirmwareVersion, v), false
	case "reboot":
		var sb strings.Builder
		for _, l := range b.shutdownLog(b.uptime(now)) {
			sb.WriteString(strings.TrimSuffix(l.render(), "\r\n"))
			sb.WriteByte('\n')
		}
		b.mu.Lock()
		// Only the processor restarts: the design keeps forwarding, so
		// neither it nor the board's generation changes.
		b.booted = now
		b.mu.Unlock()
		b.mgmtReboot()
		return sb.String(), true
	}
	if h := b.consoleHandler(name); h != nil {
		return h(args), false
	}
	return "-sh: " + name + ": command not found\n", false
}

// defaultBoot is how long the firmware takes to boot when the lab file does
// not say (emulated.boot_ms): short, so that tests stay fast, yet long
// enough that a runner sees a boot in progress.
const defaultBoot = 250 * time.Millisecond

func (b *Board) bootDuration() time.Duration {
	if b.cfg.Emulated != nil && b.cfg.Emulated.BootMS > 0 {
		return time.Duration(b.cfg.Emulated.BootMS) * time.Millisecond
	}
	return defaultBoot
}

// uptime is the kernel clock: the boot log is played in bootDuration with
// its own time stamps, then the clock goes on from the last of them.
func (b *Board) uptime(now time.Time) time.Duration {
	b.mu.Lock()
	booted := b.booted
	b.mu.Unlock()
	el := now.Sub(booted) - b.bootDuration()
	return b.kernelBootEnd() + max(el, 0)
}

// prompt is the shell's prompt.
func (b *Board) prompt() string { return "root@" + b.cfg.Name + ":~# " }

// lineEditor is the shell's line discipline: it echoes what is typed and
// hands over complete lines. "\r", "\n" and "\r\n" all end a line; DEL and
// BS erase; Ctrl-C abandons the line; Ctrl-U erases it; other control bytes
// are ignored.
type lineEditor struct {
	buf    []byte
	lastCR bool
}

// maxLine bounds a typed line; bytes beyond it are ignored (not echoed), as
// a shell's line buffer fills.
const maxLine = 1024

// editEvent says what a byte did to the line.
type editEvent int

const (
	editNone      editEvent = iota
	editLine                // a line is complete
	editInterrupt           // Ctrl-C: the line was abandoned
)

// feed processes one byte, appending its echo to echo.
func (e *lineEditor) feed(c byte, echo []byte) ([]byte, editEvent) {
	wasCR := e.lastCR
	e.lastCR = false
	switch {
	case c == '\r':
		e.lastCR = true
		return append(echo, '\r', '\n'), editLine
	case c == '\n':
		if wasCR {
			return echo, editNone // the \n of a \r\n
		}
		return append(echo, '\r', '\n'), editLine
	case c == 0x7f || c == 0x08:
		if len(e.buf) > 0 {
			e.buf = e.buf[:len(e.buf)-1]
			echo = append(echo, '\b', ' ', '\b')
		}
		return echo, editNone
	case c == 0x03:
		e.buf = e.buf[:0]
		return append(echo, '^', 'C', '\r', '\n'), editInterrupt
	case c == 0x15:
		for range e.buf {
			echo = append(echo, '\b', ' ', '\b')
		}
		e.buf = e.buf[:0]
		return echo, editNone
	case c == '\t' || c >= 0x20 && c != 0x7f:
		if len(e.buf) < maxLine {
			e.buf = append(e.buf, c)
			echo = append(echo, c)
		}
		return echo, editNone
	}
	return echo, editNone
}

// take returns the line typed and starts a new one.
func (e *lineEditor) take() string {
	s := string(e.buf)
	e.buf = e.buf[:0]
	return s
}

func (e *lineEditor) reset() { e.buf, e.lastCR = e.buf[:0], false }
