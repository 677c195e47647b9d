package power

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/labrunner/labrunner/drivers"
)

func ctxFor(t *testing.T, d time.Duration) context.Context {
	c, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return c
}

func TestNone(t *testing.T) {
	var p drivers.Power = None{}
	if err := p.Set(ctxFor(t, time.Second), true); err != nil {
		t.Fatal(err)
	}
	c, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.Set(c, false); !errors.Is(err, context.Canceled) || drivers.ClassOf(err) != drivers.ClassInfra {
		t.Errorf("Set with a cancelled context: %v", err)
	}
	if p.Name() != "none" {
		t.Errorf("name %q", p.Name())
	}
}

func TestCommandRunsArgvWithoutShell(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "state")
	// touch with an argument a shell would expand: it must arrive verbatim.
	weird := filepath.Join(dir, "$HOME;*")
	c := &Command{Board: "b1", On: []string{"touch", marker, weird}, Off: []string{"rm", marker}}
	if err := c.Set(ctxFor(t, 5*time.Second), true); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Errorf("on command did not run: %v", err)
	}
	if _, err := os.Stat(weird); err != nil {
		t.Errorf("argument was not passed verbatim: %v", err)
	}
	if err := c.Set(ctxFor(t, 5*time.Second), false); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Errorf("off command did not run: %v", err)
	}
}

func TestCommandTrueFalse(t *testing.T) {
	c := &Command{Board: "b2", On: []string{"true"}, Off: []string{"false"}}
	if err := c.Set(ctxFor(t, 5*time.Second), true); err != nil {
		t.Errorf("true: %v", err)
	}
	err := c.Set(ctxFor(t, 5*time.Second), false)
	if err == nil {
		t.Fatal("false succeeded")
	}
	var ee interface{ ExitCode() int }
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Errorf("false: %v does not carry the exit status", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "b2") || !strings.Contains(msg, "power off: false") {
		t.Errorf("false: error %q does not name the board and the command", msg)
	}
	if drivers.ClassOf(err) != drivers.ClassInfra {
		t.Errorf("class %v", drivers.ClassOf(err))
	}
}

func TestCommandOutputInError(t *testing.T) {
	c := &Command{On: []string{"sh", "-c", "echo relay busy; echo port 3 stuck >&2; exit 4"}}
	err := c.Set(ctxFor(t, 5*time.Second), true)
	if err == nil {
		t.Fatal("failing command succeeded")
	}
	for _, want := range []string{"relay busy", "port 3 stuck", "exit status 4"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	long := &Command{On: []string{"sh", "-c", "head -c 100000 /dev/zero | tr '\\0' x; exit 1"}}
	err = long.Set(ctxFor(t, 5*time.Second), true)
	if err == nil || len(err.Error()) > 3*maxOutput || !strings.Contains(err.Error(), "more bytes dropped") {
		t.Errorf("long output: %d bytes of error", len(err.Error()))
	}
}

func TestCommandMissing(t *testing.T) {
	c := &Command{Board: "b3", On: []string{"no-such-power-tool-xyz", "on"}}
	err := c.Set(ctxFor(t, 5*time.Second), true)
	if err == nil || !strings.Contains(err.Error(), `program "no-such-power-tool-xyz" not found`) || !errors.Is(err, exec.ErrNotFound) {
		t.Errorf("missing program: %v", err)
	}
	if err := (&Command{}).Set(ctxFor(t, time.Second), false); drivers.ClassOf(err) != drivers.ClassSetup {
		t.Errorf("empty argv: %v", err)
	}
}

func TestCommandKilledAtDeadline(t *testing.T) {
	// The child shell starts a grandchild that holds the output pipe: the
	// whole group must die and Set must return at the deadline.
	c := &Command{Board: "b4", On: []string{"sh", "-c", "sleep 30 & sleep 30"}}
	start := time.Now()
	err := c.Set(ctxFor(t, 200*time.Millisecond), true)
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Set returned after %v with a 200ms deadline", took)
	}
	if !errors.Is(err, drivers.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) || drivers.ClassOf(err) != drivers.ClassInfra {
		t.Errorf("sleep past the deadline: %v", err)
	}
	// The command's own timeout applies when the caller has none.
	c.Timeout = 150 * time.Millisecond
	if err := c.Set(context.Background(), true); !errors.Is(err, drivers.ErrTimeout) {
		t.Errorf("command timeout: %v", err)
	}
}

func TestGPIOMissingPin(t *testing.T) {
	_, err := NewGPIO("rack-2", "GPIO_NO_SUCH_PIN", false)
	if err == nil {
		t.Fatal("a pin that does not exist was found")
	}
	msg := err.Error()
	if !strings.Contains(msg, `no GPIO line named "GPIO_NO_SUCH_PIN"`) || !strings.Contains(msg, "rack-2") {
		t.Errorf("error %q", msg)
	}
	if !strings.Contains(msg, "available: ") && !strings.Contains(msg, "no GPIO lines") {
		t.Errorf("error %q does not list the pins", msg)
	}
	// The GPIO chip may be what is missing: infrastructure.
	if drivers.ClassOf(err) != drivers.ClassInfra {
		t.Errorf("class %v", drivers.ClassOf(err))
	}
}
