// Package rtl holds the FPGA side of the UART bridge (the Verilog beside this
// file, docs/uart-bridge.md "The RTL") and runs it: it builds the Verilator
// co-simulation of the design bridge-example (rtl/sim/tb.cpp around
// lbrb_example_top) into the ignored cache .cache/rtl, starts it, and hands
// out the pseudo-terminal its bridge UART is served on, which labrunner opens
// like a USB-UART.
package rtl

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ToolsTarget is the make target that installs the tools the RTL needs.
const ToolsTarget = "make rtl-tools"

// DefaultClkHz is the co-simulation's least clock, 921.6 kHz, raised to 4
// x the baud for faster lines: 8 clocks a bit at 115200 baud, 4 at 921600
// (3.6864 MHz), the least the bridge's UART takes (the testbench drives the
// line in step with the clock, so mid-bit sampling is exact). Cheap enough
// to keep real time on a loaded machine, which matters: a line slower than
// its baud makes the host time out long frames. Fast enough that the
// design's own time stays small: a 256-word burst runs in about 2300
// cycles, 2.5 ms at 921.6 kHz (25 us at 100 MHz), under the 5 ms the host's
// adaptive deadline allows beyond line time.
const DefaultClkHz = 921600

// DeviceID is INFO's device ID of lbrb_example_top (its DEVICE_ID default).
const DeviceID = 0x5A170001

// Dir returns the directory holding the RTL sources (this package's).
func Dir() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "rtl"
	}
	return filepath.Dir(file)
}

// Sources lists the synthesizable Verilog files, sorted.
func Sources() ([]string, error) {
	files, err := filepath.Glob(filepath.Join(Dir(), "*.v"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no Verilog sources in %s", Dir())
	}
	sort.Strings(files)
	return files, nil
}

// RequireTools checks that Verilator and yosys are installed, with the C++
// compiler and make that Verilator's builds need, and says how to install
// them when not.
func RequireTools() error {
	var missing []string
	for _, t := range []string{"verilator", "yosys", "g++", "make"} {
		if _, err := exec.LookPath(t); err != nil {
			missing = append(missing, t)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s not installed: run `%s` (it installs Verilator, yosys, g++ and make from Debian's packages)",
			strings.Join(missing, " and "), ToolsTarget)
	}
	return nil
}

// Config selects a build of the co-simulation.
type Config struct {
	Baud     int // the line rate, and BAUD of the design
	ClockHz  int // CLK_HZ of the design; 0: DefaultClkHz, or 4 x Baud if more
	MaxCount int // the bridge's MAX_COUNT; 0 means its default, 256
}

// name tells builds apart in the cache.
func (c Config) name() string {
	if c.MaxCount > 0 {
		return fmt.Sprintf("%d-max%d", c.Baud, c.MaxCount)
	}
	return fmt.Sprint(c.Baud)
}

func (c Config) ClkHz() int {
	if c.ClockHz > 0 {
		return c.ClockHz
	}
	return max(DefaultClkHz, 4*c.Baud)
}

// cacheDir is the repository's .cache/rtl.
func cacheDir() string { return filepath.Join(Dir(), "..", ".cache", "rtl") }

// Build returns the path of the co-simulation binary for cfg, building it
// when the cache has none for these sources, parameters and Verilator.
func Build(ctx context.Context, cfg Config) (string, error) {
	if cfg.Baud <= 0 {
		return "", fmt.Errorf("co-simulation: baud %d must be positive", cfg.Baud)
	}
	args := []string{"--top-module", "lbrb_example_top",
		"-GCLK_HZ=" + strconv.Itoa(cfg.ClkHz()), "-GBAUD=" + strconv.Itoa(cfg.Baud),
		"-CFLAGS", fmt.Sprintf("-O2 -DTB_CLK_HZ=%d -DTB_BAUD=%d", cfg.ClkHz(), cfg.Baud)}
	if cfg.MaxCount > 0 {
		args = append(args, "-GMAX_COUNT="+strconv.Itoa(cfg.MaxCount))
	}
	return buildTB(ctx, "sim-"+cfg.name(), "tb.cpp", args)
}

var buildMu sync.Mutex

// buildTB returns the path of a Verilator build of the RTL sources with the
// testbench rtl/sim/<tb> and the extra Verilator arguments args (top
// module, parameters, C flags), cached in .cache/rtl/<name>-<key> by a hash
// of Verilator's version, args and the sources. A lock file serialises
// builds between test processes; the binary appears under its final name
// only once complete.
func buildTB(ctx context.Context, name, tb string, args []string) (string, error) {
	if err := RequireTools(); err != nil {
		return "", err
	}
	srcs, err := Sources()
	if err != nil {
		return "", err
	}
	tbPath := filepath.Join(Dir(), "sim", tb)
	ver, err := exec.CommandContext(ctx, "verilator", "--version").Output()
	if err != nil {
		return "", fmt.Errorf("verilator --version: %w", err)
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%s\n", strings.TrimSpace(string(ver)), strings.Join(args, "\x00"))
	for _, f := range append(srcs, tbPath) {
		data, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d\n", filepath.Base(f), len(data))
		h.Write(data)
	}
	key := hex.EncodeToString(h.Sum(nil))[:16]
	dir := filepath.Join(cacheDir(), fmt.Sprintf("%s-%s", name, key))
	bin := filepath.Join(dir, "tb")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}

	buildMu.Lock()
	defer buildMu.Unlock()
	if err := os.MkdirAll(cacheDir(), 0o755); err != nil {
		return "", err
	}
	lock, err := os.OpenFile(filepath.Join(cacheDir(), ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("lock %s: %w", lock.Name(), err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	if _, err := os.Stat(bin); err == nil {
		return bin, nil // another process built it meanwhile
	}
	tmp, err := os.MkdirTemp(cacheDir(), ".build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	all := []string{"--cc", "--exe", "--build", "-j", "2", "-O3", "--x-assign", "fast", "--x-initial", "fast",
		"--default-language", "1364-2005", "-Mdir", tmp, "-o", filepath.Join(tmp, "tb")}
	all = append(all, args...)
	all = append(all, srcs...)
	all = append(all, tbPath)
	cmd := exec.CommandContext(ctx, "verilator", all...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("building %s (verilator %s): %w\n%s", name, strings.Join(all, " "), err, tail(out, 4000))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if err := os.Rename(filepath.Join(tmp, "tb"), bin); err != nil {
		return "", err
	}
	// Builds of this name from other sources are of no more use.
	for _, o := range otherBuilds(cacheDir(), name, key) {
		os.RemoveAll(o)
	}
	return bin, nil
}

// otherBuilds lists the builds in cache named name with a key other than
// key. The key's characters are matched one by one, so that the builds of
// another name that begins with this one (sim-921600-max16 for sim-921600)
// are not taken for this name's: removing them would pull a binary from
// under a test about to run it.
func otherBuilds(cache, name, key string) []string {
	all, _ := filepath.Glob(filepath.Join(cache, name+"-"+strings.Repeat("?", len(key))))
	var old []string
	for _, d := range all {
		if filepath.Base(d) != name+"-"+key {
			old = append(old, d)
		}
	}
	return old
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// Sim is a running co-simulation.
type Sim struct {
	Config
	// Port is the pseudo-terminal the design's bridge UART is served on.
	Port string

	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string // stdout, line by line
	done  chan struct{}
	mu    sync.Mutex
	err   error
}

// Start runs the co-simulation binary bin (built by Build for cfg). The
// simulation lives until Close (or ctx ends).
func Start(ctx context.Context, bin string, cfg Config) (*Sim, error) {
	cmd := exec.CommandContext(ctx, bin)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the co-simulation %s: %w", bin, err)
	}
	s := &Sim{Config: cfg, cmd: cmd, stdin: stdin, lines: make(chan string, 16), done: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
		close(s.lines)
	}()
	go func() {
		s.mu.Lock()
		s.err = cmd.Wait()
		s.mu.Unlock()
		close(s.done)
	}()
	line, err := s.line(10 * time.Second)
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("co-simulation %s: no pseudo-terminal announced: %w", bin, err)
	}
	path, ok := strings.CutPrefix(line, "pty ")
	if !ok {
		s.Close()
		return nil, fmt.Errorf("co-simulation %s: want \"pty PATH\", got %q", bin, line)
	}
	s.Port = path
	return s, nil
}

// Done is closed when the simulator process has exited.
func (s *Sim) Done() <-chan struct{} { return s.done }

func (s *Sim) line(wait time.Duration) (string, error) {
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case l, ok := <-s.lines:
		if !ok {
			<-s.done
			return "", fmt.Errorf("the simulator exited: %v", s.exitErr())
		}
		return l, nil
	case <-t.C:
		return "", fmt.Errorf("no answer within %v", wait)
	}
}

func (s *Sim) exitErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Stats are the simulator's counters since it started.
type Stats struct {
	Cycles  uint64        // clock cycles simulated
	Sim     time.Duration // simulated time: Cycles / CLK_HZ
	Wall    time.Duration // wall time since start
	Busy    time.Duration // wall time spent simulating (the rest it slept, ahead of the wall clock)
	CPU     time.Duration // CPU time spent simulating
	RxBytes uint64        // bytes the host sent
	TxBytes uint64        // bytes the design sent
}

// CyclesPerCPUSecond is the simulator's speed, what a loaded machine does
// not change.
func (st Stats) CyclesPerCPUSecond() float64 {
	if st.CPU <= 0 {
		return 0
	}
	return float64(st.Cycles) / st.CPU.Seconds()
}

// Stats asks the simulator for its counters.
func (s *Sim) Stats() (Stats, error) {
	if _, err := io.WriteString(s.stdin, "stats\n"); err != nil {
		return Stats{}, fmt.Errorf("co-simulation: %w", err)
	}
	line, err := s.line(5 * time.Second)
	if err != nil {
		return Stats{}, fmt.Errorf("co-simulation stats: %w", err)
	}
	f, ok := strings.CutPrefix(line, "stats ")
	if !ok {
		return Stats{}, fmt.Errorf("co-simulation stats: got %q", line)
	}
	vals := map[string]uint64{}
	for _, kv := range strings.Fields(f) {
		k, v, _ := strings.Cut(kv, "=")
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return Stats{}, fmt.Errorf("co-simulation stats: %q: %w", kv, err)
		}
		vals[k] = n
	}
	return Stats{
		Cycles: vals["cycles"], Sim: time.Duration(vals["sim_ns"]), Wall: time.Duration(vals["wall_ns"]),
		Busy: time.Duration(vals["busy_ns"]), CPU: time.Duration(vals["cpu_ns"]),
		RxBytes: vals["rx_bytes"], TxBytes: vals["tx_bytes"],
	}, nil
}

// Close stops the simulator and waits for it (killing it after 5 s).
func (s *Sim) Close() error {
	io.WriteString(s.stdin, "quit\n")
	s.stdin.Close()
	t := time.NewTimer(5 * time.Second)
	defer t.Stop()
	select {
	case <-s.done:
	case <-t.C:
		s.cmd.Process.Kill()
		<-s.done
		return errors.New("co-simulation did not stop within 5 s: killed")
	}
	var ee *exec.ExitError
	if err := s.exitErr(); err != nil && !errors.As(err, &ee) {
		return err
	} else if ee != nil && ee.ExitCode() != 0 {
		return fmt.Errorf("co-simulation exited with %v", ee)
	}
	return nil
}

// Board is the co-simulated board's name in the lab file LabFile writes.
const Board = "rtl-sim"

// LabFile is a lab with the co-simulated board on port at baud. It has no
// plan: a plan programs its boards, and this one's design is fixed, so
// commands name the design (--design bridge-example).
func LabFile(port string, baud int) string {
	return fmt.Sprintf(`# The Verilator co-simulation of rtl/ (go run ./rtl/cosim), as a board.
lab: rtl-cosim
boards:
  - name: %s
    kind: verilator
    dcn: true
    bus: {uart_bridge: {port: %s, baud: %d}}
    programmer: {type: none}
`, Board, port, baud)
}
