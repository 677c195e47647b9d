// Package power switches a board's supply: not at all (None), through a
// relay on a GPIO line of the host (GPIO: the line is held by a small
// process of its own while the power is on, see gpio.go), or by running a
// program (Command: a smart PDU's CLI, a USB relay tool, an IPMI client ...).
package power

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/labrunner/labrunner/drivers"
)

var (
	_ drivers.Power = None{}
	_ drivers.Power = (*GPIO)(nil)
	_ drivers.Power = (*Command)(nil)
)

// None is a board whose supply labrunner does not switch: Set succeeds and
// does nothing, so plans that power-cycle still run on such a bench.
type None struct{}

// Set does nothing but honour a context that is already done.
func (None) Set(ctx context.Context, on bool) error {
	if err := ctx.Err(); err != nil {
		return drivers.Infra("", "power "+onOff(on), "", err)
	}
	return nil
}

// Name returns "none".
func (None) Name() string { return "none" }

// Command runs one program to switch the supply on and another to switch it
// off. The argument vectors run without a shell, so no quoting or
// expansion happens: what the lab file says is what runs.
type Command struct {
	Board string
	On    []string
	Off   []string
	// Timeout bounds one run when the caller's context has no earlier
	// deadline; 30 s when zero.
	Timeout time.Duration
	// Dir is the working directory; the current one when empty.
	Dir string
}

// maxOutput bounds the stdout/stderr kept in an error message.
const maxOutput = 2048

// Set runs the On or the Off command. On a deadline the whole process group
// is killed, and Set returns promptly even if a grandchild keeps the
// output pipes open.
func (c *Command) Set(ctx context.Context, on bool) error {
	argv := c.Off
	if on {
		argv = c.On
	}
	op := "power " + onOff(on)
	if len(argv) == 0 || argv[0] == "" {
		return drivers.Setup(c.Board, op, "give power.on and power.off as argument vectors in the lab file", fmt.Errorf("no command to switch power %s", onOff(on)))
	}
	op += ": " + quoteArgv(argv)
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return drivers.Infra(c.Board, op, "install the tool or give its full path in the lab file", fmt.Errorf("program %q not found: %w", argv[0], err))
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := drivers.Deadline(ctx, timeout)
	defer cancel()

	cmd := exec.CommandContext(ctx, path, argv[1:]...)
	cmd.Args[0] = argv[0]
	cmd.Dir = c.Dir
	var out limitedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	// Kill the process group, not just the child: a script's children
	// would otherwise keep running and keep the pipes open.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	start := time.Now()
	err = cmd.Run()
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return drivers.Infra(c.Board, op, "the power switch did not answer in time: check its network or USB connection",
			fmt.Errorf("%w after %v (%w), killed; output: %s", drivers.ErrTimeout, time.Since(start).Round(time.Millisecond), ctx.Err(), out.String()))
	}
	return drivers.Infra(c.Board, op, "run the command by hand to see why it fails", fmt.Errorf("%w; output: %s", err, out.String()))
}

// Name returns "command".
func (c *Command) Name() string { return "command" }

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

func quoteArgv(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		if a == "" || strings.ContainsAny(a, " \t\n\"'\\$`") {
			q[i] = fmt.Sprintf("%q", a)
		} else {
			q[i] = a
		}
	}
	return strings.Join(q, " ")
}

// limitedBuffer keeps the first maxOutput bytes written to it, for error
// messages, and says how much it dropped.
type limitedBuffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	dropped int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	room := maxOutput - l.b.Len()
	if room < len(p) {
		if room > 0 {
			l.b.Write(p[:room])
		}
		l.dropped += len(p) - max(room, 0)
		return len(p), nil
	}
	l.b.Write(p)
	return len(p), nil
}

func (l *limitedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := strings.TrimSpace(l.b.String())
	if s == "" {
		return "(none)"
	}
	s = fmt.Sprintf("%q", s)
	if l.dropped > 0 {
		s += fmt.Sprintf(" (%d more bytes dropped)", l.dropped)
	}
	return s
}
