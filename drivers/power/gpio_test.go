package power

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/labrunner/labrunner/drivers"
)

// fileLines stands in for a GPIO chip shared by processes: one file per
// line in a directory, holding "LEVEL CONSUMER" while a process holds the
// line and "free LEVEL" once it let go (the kernel would then leave the
// line to its default; the file keeps the last level so a test can see
// what the holder drove on its way out). A holder whose process is gone no
// longer holds the line, as the kernel releases a dead process's lines.
type fileLines struct{ dir string }

func (f fileLines) path(pin string) string { return filepath.Join(f.dir, pin) }

func (f fileLines) read(pin string) (level, consumer string, err error) {
	b, err := os.ReadFile(f.path(pin))
	if err != nil {
		return "", "", fmt.Errorf("no GPIO line named %q: %w", pin, err)
	}
	fs := strings.Fields(string(b))
	if len(fs) != 2 {
		return "", "", fmt.Errorf("line file %q", b)
	}
	if fs[0] == "free" {
		return fs[1], "", nil
	}
	if pid, ok := pidOf(fs[1]); ok && syscall.Kill(pid, 0) != nil {
		return fs[0], "", nil // its holder died
	}
	return fs[0], fs[1], nil
}

func pidOf(consumer string) (int, bool) {
	m := consumerPID.FindStringSubmatch(consumer)
	if m == nil {
		return 0, false
	}
	pid, err := strconv.Atoi(m[1])
	return pid, err == nil
}

func (f fileLines) Find(pin string) (string, error) {
	_, c, err := f.read(pin)
	return c, err
}

func (f fileLines) Request(pin string, level bool) (Line, error) {
	_, c, err := f.read(pin)
	if err != nil {
		return nil, err
	}
	if c != "" {
		return nil, fmt.Errorf("line_request ioctl: %w (held by %s)", syscall.EBUSY, c)
	}
	l := &fileLine{f: f, pin: pin, consumer: fmt.Sprintf("%s@%d", filepath.Base(os.Args[0]), os.Getpid())}
	return l, l.Set(level)
}

type fileLine struct {
	f        fileLines
	pin      string
	consumer string
	level    string
}

func (l *fileLine) Set(level bool) error {
	l.level = levelArg(level)
	return os.WriteFile(l.f.path(l.pin), []byte(l.level+" "+l.consumer+"\n"), 0o644)
}

func (l *fileLine) Close() error {
	return os.WriteFile(l.f.path(l.pin), []byte("free "+l.level+"\n"), 0o644)
}

// The test binary is also the holder: started with LABRUNNER_TEST_HOLDER
// set (and HolderFlag in its arguments), it holds a file line as
// `labrunner power hold` holds a real one.
func TestMain(m *testing.M) {
	if dir := os.Getenv("LABRUNNER_TEST_HOLDER"); dir != "" {
		os.Exit(holderMain(dir, os.Args[1:]))
	}
	os.Exit(m.Run())
}

func holderMain(dir string, args []string) int {
	var pin string
	var level, off bool
	for i := 0; i+1 < len(args); i++ {
		switch args[i] {
		case "--pin":
			pin = args[i+1]
		case "--level":
			level = args[i+1] == "1"
		case "--off-level":
			off = args[i+1] == "1"
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	if err := Hold(ctx, fileLines{dir}, pin, level, off, os.Stdout); err != nil {
		return 1
	}
	return 0
}

// relay makes a file line and a GPIO switch on it whose holder is this
// test binary.
func relay(t *testing.T, pin string, activeLow bool) (*GPIO, fileLines) {
	t.Helper()
	lines := fileLines{t.TempDir()}
	if err := os.WriteFile(lines.path(pin), []byte("free 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	g := &GPIO{board: "b1", pin: pin, activeLow: activeLow, lines: lines,
		Holder: []string{os.Args[0], HolderFlag}, Env: []string{"LABRUNNER_TEST_HOLDER=" + lines.dir}}
	t.Cleanup(func() {
		// Never leave a holder behind.
		if c, _ := lines.Find(pin); c != "" {
			if pid, ok := pidOf(c); ok {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	return g, lines
}

// TestPowerOnOutlivesTheCommand: after Set(on) returns, the line stays at
// the on level, held by a process of its own, not by the caller; Set(off)
// stops that process, which drives the off level on its way out.
func TestPowerOnOutlivesTheCommand(t *testing.T) {
	for _, activeLow := range []bool{false, true} {
		t.Run(fmt.Sprintf("active_low=%v", activeLow), func(t *testing.T) {
			g, lines := relay(t, "RELAY_1", activeLow)
			on, off := levelArg(!activeLow), levelArg(activeLow)
			if err := g.Set(ctxFor(t, 10*time.Second), true); err != nil {
				t.Fatal(err)
			}
			level, consumer, err := lines.read("RELAY_1")
			pid, ours := holderPID(consumer, "RELAY_1")
			if err != nil || level != on || !ours || pid == os.Getpid() {
				t.Fatalf("after power on: level %s, consumer %q (%v): want %s held by a holder process", level, consumer, err, on)
			}
			if st, detail, _ := g.Status(); !st || !strings.Contains(detail, "pid "+strconv.Itoa(pid)) {
				t.Errorf("status: %v %q", st, detail)
			}
			// On again: the same holder keeps it.
			if err := g.Set(ctxFor(t, 10*time.Second), true); err != nil {
				t.Fatal(err)
			}
			if _, c, _ := lines.read("RELAY_1"); c != consumer {
				t.Errorf("a second power on started another holder: %q, was %q", c, consumer)
			}
			if err := g.Set(ctxFor(t, 10*time.Second), false); err != nil {
				t.Fatal(err)
			}
			level, consumer, _ = lines.read("RELAY_1")
			if level != off || consumer != "" {
				t.Fatalf("after power off: level %s consumer %q, want %s and free", level, consumer, off)
			}
			if syscall.Kill(pid, 0) == nil {
				if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); !zombie(b) {
					t.Errorf("the holder, pid %d, still runs", pid)
				}
			}
			if st, detail, _ := g.Status(); st || !strings.HasPrefix(detail, "off") {
				t.Errorf("status after off: %v %q", st, detail)
			}
		})
	}
}

// A line another program holds is neither taken nor stolen.
func TestPowerRefusesALineSomeoneElseHolds(t *testing.T) {
	g, lines := relay(t, "RELAY_2", false)
	// This test process, which is not a holder, holds it.
	l, err := lines.Request("RELAY_2", false)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, on := range []bool{true, false} {
		err := g.Set(ctxFor(t, 5*time.Second), on)
		if drivers.ClassOf(err) != drivers.ClassInfra || !strings.Contains(err.Error(), "held by") {
			t.Errorf("Set(%v) on a line held by another program: %v", on, err)
		}
	}
}

// A holder that cannot get the line says why, and power on fails with it.
func TestPowerOnReportsTheHoldersError(t *testing.T) {
	g, lines := relay(t, "RELAY_3", false)
	g.Env = append(g.Env, "LABRUNNER_TEST_HOLDER="+filepath.Join(lines.dir, "gone")) // the holder sees no chip
	err := g.Set(ctxFor(t, 5*time.Second), true)
	if drivers.ClassOf(err) != drivers.ClassInfra || !strings.Contains(err.Error(), "no GPIO line") {
		t.Errorf("a holder without its line: %v", err)
	}
}

// A holder that dies (kill -9, the host rebooting) is power off: the kernel
// gave its line back.
func TestDeadHolderIsOff(t *testing.T) {
	g, lines := relay(t, "RELAY_4", false)
	if err := g.Set(ctxFor(t, 10*time.Second), true); err != nil {
		t.Fatal(err)
	}
	_, c, _ := lines.read("RELAY_4")
	pid, _ := pidOf(c)
	syscall.Kill(pid, syscall.SIGKILL)
	deadline := time.Now().Add(5 * time.Second)
	for syscall.Kill(pid, 0) == nil && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if on, _, _ := g.Status(); on {
		t.Error("a dead holder still counts as on")
	}
	if err := g.Set(ctxFor(t, 5*time.Second), false); err != nil {
		t.Errorf("power off after the holder died: %v", err)
	}
}

func TestHolderPIDNeedsTheHolderFlag(t *testing.T) {
	// This process is not a holder: its consumer name does not make it one.
	if _, ok := holderPID(fmt.Sprintf("power.test@%d", os.Getpid()), "X"); ok {
		t.Error("a process without the holder flag was taken for a holder")
	}
	for _, c := range []string{"", "kernel", "x@", "x@0", "x@-1", "x@999999999"} {
		if _, ok := holderPID(c, "X"); ok {
			t.Errorf("consumer %q taken for a holder", c)
		}
	}
}

// FuzzHolderPID: whatever a line's consumer says, and whatever a process's
// stat holds, holderPID and zombie neither panic nor take a process
// without the holder flag (this test process has none) for a holder.
func FuzzHolderPID(f *testing.F) {
	f.Add("labrunner@1234", "GPIO17", []byte("1234 (labrunner) S 1 1234"))
	f.Add(fmt.Sprintf("power.test@%d", os.Getpid()), "X", []byte("1 (a) b) Z 0"))
	f.Add("@", "", []byte(")"))
	f.Fuzz(func(t *testing.T, consumer, pin string, stat []byte) {
		zombie(stat)
		if pid, ok := holderPID(consumer, pin); ok && pid == os.Getpid() {
			t.Fatalf("consumer %q made this test process a holder", consumer)
		}
	})
}
