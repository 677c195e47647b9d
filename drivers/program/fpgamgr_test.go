package program

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labrunner/labrunner/drivers"
	"github.com/labrunner/labrunner/internal/syncbuf"
)

// fakeManager is a sysfs tree with one fpga_manager and a goroutine that
// plays the kernel: when a name is written to the firmware attribute, it
// records what it found (flags, the image in the firmware directory) and
// moves the state through the given states.
type fakeManager struct {
	sysfs, fwDir, mgrDir string
	states               []string // the states a load goes through
	step                 time.Duration

	mu     sync.Mutex
	loads  []fakeLoad
	stopFn context.CancelFunc
	done   chan struct{}
}

type fakeLoad struct {
	name  string
	flags string
	image []byte // the file the name leads to, as found at load time
}

func newFakeManager(t *testing.T, mgr, initial string, states ...string) *fakeManager {
	t.Helper()
	root := t.TempDir()
	k := &fakeManager{
		sysfs:  filepath.Join(root, "sys"),
		fwDir:  filepath.Join(root, "firmware"),
		states: states,
		step:   3 * time.Millisecond,
		done:   make(chan struct{}),
	}
	k.mgrDir = filepath.Join(k.sysfs, "class", "fpga_manager", mgr)
	writeFile(t, filepath.Join(k.mgrDir, "name"), "Xilinx ZynqMP FPGA Manager\n")
	writeFile(t, filepath.Join(k.mgrDir, "firmware"), "")
	writeFile(t, filepath.Join(k.mgrDir, "flags"), "")
	k.setState(initial)
	if err := os.MkdirAll(k.fwDir, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	k.stopFn = cancel
	go k.run(ctx)
	t.Cleanup(k.stop)
	return k
}

func (k *fakeManager) stop() {
	k.stopFn()
	<-k.done
}

// setState replaces the state attribute atomically, as a read of a real
// attribute is atomic.
func (k *fakeManager) setState(s string) {
	tmp := filepath.Join(k.mgrDir, ".state.tmp")
	if err := os.WriteFile(tmp, []byte(s+"\n"), 0o644); err != nil {
		panic(err)
	}
	if err := os.Rename(tmp, filepath.Join(k.mgrDir, "state")); err != nil {
		panic(err)
	}
}

func (k *fakeManager) run(ctx context.Context) {
	defer close(k.done)
	fw := filepath.Join(k.mgrDir, "firmware")
	for ctx.Err() == nil {
		time.Sleep(time.Millisecond)
		b, err := os.ReadFile(fw)
		if err != nil || len(b) == 0 {
			continue
		}
		name := strings.TrimSpace(string(b))
		os.WriteFile(fw, nil, 0o644)
		flags, _ := os.ReadFile(filepath.Join(k.mgrDir, "flags"))
		img, _ := os.ReadFile(filepath.Join(k.fwDir, name))
		k.mu.Lock()
		k.loads = append(k.loads, fakeLoad{name: name, flags: string(flags), image: img})
		k.mu.Unlock()
		if img == nil {
			k.setState("firmware request error")
			continue
		}
		for _, s := range k.states {
			k.setState(s)
			time.Sleep(k.step)
		}
	}
}

func (k *fakeManager) Loads() []fakeLoad {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]fakeLoad(nil), k.loads...)
}

func (k *fakeManager) programmer(board string) *FPGAManager {
	// A long settle time: on a loaded test machine the simulated kernel may
	// react late, and an unchanged state must not be believed too early.
	return &FPGAManager{Board: board, Sysfs: k.sysfs, FirmwareDir: k.fwDir, Manager: "fpga0",
		Poll: 2 * time.Millisecond, Settle: 2 * time.Second}
}

func binImage(n int) drivers.Image {
	bin := make([]byte, n)
	for i := range bin {
		bin[i] = byte(i * 7)
	}
	return drivers.Image{Path: "designs/exanet/exanet.bit", Design: "exanet", Bin: bin}
}

func TestFPGAManagerLoads(t *testing.T) {
	for _, partial := range []bool{false, true} {
		k := newFakeManager(t, "fpga0", "unknown", "firmware request", "write init", "write", "write complete", "operating")
		p := k.programmer("zu-1")
		p.Partial = partial
		var log syncbuf.Buffer
		p.SetLog(&log)
		img := binImage(100_000)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := p.Program(ctx, img)
		cancel()
		if err != nil {
			t.Fatalf("partial=%v: %v", partial, err)
		}
		loads := k.Loads()
		if len(loads) != 1 {
			t.Fatalf("%d loads, want 1", len(loads))
		}
		wantFlags := "0"
		if partial {
			wantFlags = "1"
		}
		if loads[0].name != "labrunner-zu-1.bin" || loads[0].flags != wantFlags || !bytes.Equal(loads[0].image, img.Bin) {
			t.Fatalf("load: name %q flags %q image ok %v", loads[0].name, loads[0].flags, bytes.Equal(loads[0].image, img.Bin))
		}
		entries, _ := os.ReadDir(k.fwDir)
		if len(entries) != 1 || entries[0].Name() != "labrunner-zu-1.bin" {
			t.Fatalf("firmware dir holds %v, want only the image (no temporary files)", entries)
		}
		wantContains(t, log.String(), "flags="+wantFlags, "firmware=labrunner-zu-1.bin", "state operating")
	}
}

// A load that starts from "operating" (a design already loaded) and ends
// there: the unchanged state is believed after the settle time.
func TestFPGAManagerReloadFromOperating(t *testing.T) {
	k := newFakeManager(t, "fpga0", "operating", "write init", "write", "operating")
	p := k.programmer("zu-1")
	if err := p.Program(context.Background(), binImage(1000)); err != nil {
		t.Fatal(err)
	}
	if n := len(k.Loads()); n != 1 {
		t.Fatalf("%d loads", n)
	}
}

func TestFPGAManagerFailureStates(t *testing.T) {
	cases := []struct {
		initial string
		states  []string
		class   drivers.Class
		hint    string
	}{
		{"unknown", []string{"write init", "write", "write error"}, drivers.ClassInfra, "built for this board's part"},
		{"operating", []string{"write init", "write error"}, drivers.ClassInfra, "built for this board's part"},
		{"unknown", []string{"write init", "write init error"}, drivers.ClassInfra, "byte-swapped .bin"},
		{"unknown", []string{"write init", "write", "write complete", "write complete error"}, drivers.ClassInfra, "DONE"},
		{"operating", []string{"write init", "unknown"}, drivers.ClassInfra, "PL is powered"},
		{"unknown", []string{"parse header", "parse header error"}, drivers.ClassSetup, "not the .bit itself"},
	}
	for _, c := range cases {
		last := c.states[len(c.states)-1]
		t.Run(strings.ReplaceAll(last, " ", "_"), func(t *testing.T) {
			k := newFakeManager(t, "fpga0", c.initial, c.states...)
			err := k.programmer("zu-2").Program(context.Background(), binImage(1000))
			de := wantClass(t, err, c.class)
			wantContains(t, err.Error(), `state "`+last+`"`, "zu-2", "labrunner-zu-2.bin")
			wantContains(t, de.Hint, c.hint)
			if errors.Is(err, drivers.ErrTimeout) {
				t.Fatal("a failed state is not a timeout")
			}
		})
	}
}

func TestFPGAManagerFirmwareNotFound(t *testing.T) {
	k := newFakeManager(t, "fpga0", "unknown", "operating")
	p := k.programmer("zu-3")
	// The kernel looks somewhere else than where the image was put.
	k.fwDir = t.TempDir()
	err := p.Program(context.Background(), binImage(10))
	de := wantClass(t, err, drivers.ClassSetup)
	wantContains(t, err.Error(), `state "firmware request error"`)
	wantContains(t, de.Hint, "firmware_class.path")
}

func TestFPGAManagerNeverFinishes(t *testing.T) {
	k := newFakeManager(t, "fpga0", "unknown", "write init", "write")
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err := k.programmer("zu-4").Program(ctx, binImage(10))
	wantClass(t, err, drivers.ClassInfra)
	if !errors.Is(err, drivers.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want a timeout: %v", err)
	}
	wantContains(t, err.Error(), `state "write"`)
}

func TestFPGAManagerTimeoutWithoutCallerDeadline(t *testing.T) {
	k := newFakeManager(t, "fpga0", "unknown", "write")
	p := k.programmer("zu-4")
	p.Timeout = 200 * time.Millisecond
	err := p.Program(context.Background(), binImage(10))
	if !errors.Is(err, drivers.ErrTimeout) {
		t.Fatalf("the programmer's own timeout must bound a context without deadline: %v", err)
	}
}

func TestFPGAManagerMissingManager(t *testing.T) {
	k := newFakeManager(t, "fpga1", "unknown", "operating")
	p := k.programmer("zu-5") // asks for fpga0
	err := p.Program(context.Background(), binImage(10))
	de := wantClass(t, err, drivers.ClassSetup)
	wantContains(t, err.Error(), "fpga0 not found", "present: fpga1")
	wantContains(t, de.Hint, "manager:")
	if err := p.Check(context.Background()); err == nil {
		t.Fatal("Check passes with the manager missing")
	}
	if len(k.Loads()) != 0 {
		t.Fatal("something was loaded")
	}

	// No FPGA manager framework at all.
	p.Sysfs = t.TempDir()
	err = p.Program(context.Background(), binImage(10))
	de = wantClass(t, err, drivers.ClassInfra)
	wantContains(t, de.Hint, "CONFIG_FPGA_MGR_ZYNQMP_FPGA")
}

func TestFPGAManagerMainlineKernelHasNoFirmwareAttribute(t *testing.T) {
	k := newFakeManager(t, "fpga0", "unknown", "operating")
	k.stop()
	os.Remove(filepath.Join(k.mgrDir, "firmware"))
	err := k.programmer("zu-6").Program(context.Background(), binImage(10))
	de := wantClass(t, err, drivers.ClassInfra)
	wantContains(t, de.Hint, "linux-xlnx", "device-tree overlays")
}

func TestFPGAManagerRefusesUnconvertedImage(t *testing.T) {
	k := newFakeManager(t, "fpga0", "unknown", "operating")
	img := binImage(10)
	img.Bin = nil
	img.Data = []byte("a .bit file")
	err := k.programmer("zu-7").Program(context.Background(), img)
	de := wantClass(t, err, drivers.ClassSetup)
	wantContains(t, de.Hint, "convert the .bit first")
	if len(k.Loads()) != 0 {
		t.Fatal("something was loaded")
	}
}

func TestFPGAManagerFirmwareDirNotWritable(t *testing.T) {
	k := newFakeManager(t, "fpga0", "unknown", "operating")
	p := k.programmer("zu-8")
	p.FirmwareDir = filepath.Join(t.TempDir(), "missing")
	err := p.Program(context.Background(), binImage(10))
	de := wantClass(t, err, drivers.ClassInfra)
	wantContains(t, de.Hint, "writable")
	if err := p.Check(context.Background()); err == nil {
		t.Fatal("Check passes with the firmware directory missing")
	}
	p.FirmwareDir = k.fwDir
	if err := p.Check(context.Background()); err != nil {
		t.Fatalf("Check: %v", err)
	}
}

func TestFPGAManagerRequestName(t *testing.T) {
	cases := map[string]string{
		"":                           "labrunner-b.bin",
		"/lib/firmware":              "labrunner-b.bin",
		"/lib/firmware/":             "labrunner-b.bin",
		"/lib/firmware/labrunner":    "labrunner/labrunner-b.bin",
		"/lib/firmware/a/b":          "a/b/labrunner-b.bin",
		"/lib/firmware-other":        "labrunner-b.bin",
		"/opt/fw":                    "labrunner-b.bin",
		"/lib/firmware/../somewhere": "labrunner-b.bin",
	}
	for dir, want := range cases {
		m := &FPGAManager{Board: "b", FirmwareDir: dir}
		if got := m.fwRequestName(); got != want {
			t.Errorf("firmware dir %q: request name %q, want %q", dir, got, want)
		}
	}
	if got := (&FPGAManager{Board: "../../etc/x y"}).fwFileName(); strings.ContainsAny(got, "/ ") {
		t.Errorf("board name leaks into the path: %q", got)
	}
}
