package program

import (
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

const pciAddr = "0000:03:00.0"

// fakePCI is a sysfs tree with the board's PCIe device and a goroutine that
// plays the kernel: a 1 written to the device's remove attribute takes it
// off the bus, a 1 written to bus/pci/rescan brings it back (unless the
// device is made to stay away). Both are appended to an event file, which
// the fake quartus_pgm appends to as well, so the order is on record.
type fakePCI struct {
	sysfs, events string
	stayAway      bool

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

func newFakePCI(t *testing.T, present, stayAway bool) *fakePCI {
	t.Helper()
	root := t.TempDir()
	k := &fakePCI{sysfs: filepath.Join(root, "sys"), events: filepath.Join(root, "events"), stayAway: stayAway,
		done: make(chan struct{})}
	writeFile(t, filepath.Join(k.sysfs, "bus", "pci", "rescan"), "")
	writeFile(t, k.events, "")
	if present {
		k.plug(t)
	} else {
		os.MkdirAll(filepath.Join(k.sysfs, "bus", "pci", "devices"), 0o755)
	}
	ctx, cancel := context.WithCancel(context.Background())
	k.cancel = cancel
	go k.run(ctx)
	t.Cleanup(func() { cancel(); <-k.done })
	return k
}

func (k *fakePCI) devDir() string { return filepath.Join(k.sysfs, "bus", "pci", "devices", pciAddr) }

func (k *fakePCI) plug(t *testing.T) {
	writeFile(t, filepath.Join(k.devDir(), "remove"), "")
	writeFile(t, filepath.Join(k.devDir(), "vendor"), "0x1172\n")
}

func (k *fakePCI) event(s string) {
	f, err := os.OpenFile(k.events, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		panic(err)
	}
	f.WriteString(s + "\n")
	f.Close()
}

func (k *fakePCI) run(ctx context.Context) {
	defer close(k.done)
	rescan := filepath.Join(k.sysfs, "bus", "pci", "rescan")
	for ctx.Err() == nil {
		time.Sleep(time.Millisecond)
		if b, err := os.ReadFile(filepath.Join(k.devDir(), "remove")); err == nil && strings.TrimSpace(string(b)) == "1" {
			// The event is logged before the device goes: the driver
			// starts the programmer as soon as the directory is gone,
			// and a loaded machine must not log "program" first.
			k.event("remove")
			os.RemoveAll(k.devDir())
		}
		if b, _ := os.ReadFile(rescan); strings.TrimSpace(string(b)) == "1" {
			os.WriteFile(rescan, nil, 0o644)
			k.event("rescan")
			if !k.stayAway {
				os.MkdirAll(k.devDir(), 0o755)
				os.WriteFile(filepath.Join(k.devDir(), "remove"), nil, 0o644)
			}
		}
	}
}

func (k *fakePCI) Events(t *testing.T) []string {
	b, err := os.ReadFile(k.events)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(b))
}

// fakeQuartus writes a quartus_pgm that records its argv, notes on the
// event file whether the PCIe device was on the bus while it ran, and then
// runs tail (a shell fragment: output, exit status, sleeping).
func fakeQuartus(t *testing.T, k *fakePCI, rec, tail string) {
	t.Helper()
	dir := fakeTools(t)
	body := recordArgv(rec)
	if k != nil {
		body += "if [ -e '" + k.devDir() + "' ]; then echo program-while-on-bus >> '" + k.events + "'; else echo program >> '" + k.events + "'; fi\n"
	}
	writeTool(t, dir, "quartus_pgm", body+tail)
}

func TestQuartusArgv(t *testing.T) {
	rec := filepath.Join(t.TempDir(), "argv")
	fakeQuartus(t, nil, rec, "echo 'Info (209011): Successfully performed operation(s)'\nexit 0\n")
	sof := bitFile(t, "shoal top.sof", []byte("sof"))
	q := &QuartusPGM{Board: "de5-1", Cable: "DE5-Net [1-1.2]"}
	if err := q.Program(context.Background(), drivers.Image{Path: sof}); err != nil {
		t.Fatal(err)
	}
	equalArgv(t, readArgv(t, rec), []string{"-c", "DE5-Net [1-1.2]", "-m", "JTAG", "-o", "p;" + sof + "@1"})

	// The same through New, with the port given separately and
	// the device second in the chain.
	p, err := New("de5-2", labconfigProgrammer("quartus_pgm", "DE5-Net", "2-1.4"), "intel")
	if err != nil {
		t.Fatal(err)
	}
	p.(*QuartusPGM).Device = 2
	if err := p.Program(context.Background(), drivers.Image{Path: sof}); err != nil {
		t.Fatal(err)
	}
	equalArgv(t, readArgv(t, rec), []string{"-c", "DE5-Net [2-1.4]", "-m", "JTAG", "-o", "p;" + sof + "@2"})
}

func TestQuartusRefusesRBF(t *testing.T) {
	rec := filepath.Join(t.TempDir(), "argv")
	fakeQuartus(t, nil, rec, "exit 0\n")
	q := &QuartusPGM{Board: "de5-1", Cable: "DE5-Net [1-1.2]"}
	err := q.Program(context.Background(), drivers.Image{Path: bitFile(t, "shoal.rbf", []byte("rbf"))})
	de := wantClass(t, err, drivers.ClassSetup)
	wantContains(t, de.Hint, ".sof", "quartus_cpf", "catalogue lists one")
	// A path quartus_pgm's -o syntax would misread (and no Data to
	// stage it under a safe name).
	err = q.Program(context.Background(), drivers.Image{Path: bitFile(t, "a;b@c.sof", []byte("sof"))})
	wantClass(t, err, drivers.ClassSetup)
	if _, serr := os.Stat(rec); serr == nil {
		t.Fatal("quartus_pgm ran although the programming was refused")
	}
	// Staged from Data, the same file is fine.
	if err := q.Program(context.Background(), drivers.Image{Path: "x/a;b@c.sof", Data: []byte("sof")}); err != nil {
		t.Fatal(err)
	}
	argv := readArgv(t, rec)
	if !strings.HasSuffix(argv[5], "/a_b_c.sof@1") {
		t.Fatalf("argv %q", argv)
	}
}

func TestQuartusRecognisesFailures(t *testing.T) {
	cases := []struct {
		name, output string
		class        drivers.Class
		reason       string
	}{
		{"no cable", "Info: Running Quartus Prime Programmer\nError (213013): Programming hardware cable not detected\nError: Quartus Prime Programmer was unsuccessful. 1 error, 0 warnings\n",
			drivers.ClassInfra, "cable was not found"},
		{"idcode", "Info (209060): Started Programmer operation\nError (209015): Can't configure device. Expected JTAG ID code 0x029070DD for device 1, but found JTAG ID code 0x02B050DD.\nError (209012): Operation failed\n",
			drivers.ClassSetup, "IDCODE mismatch"},
		{"jtagd", "Error (209053): Unexpected error in JTAG server -- error code 89\nError (209012): Operation failed\n",
			drivers.ClassInfra, "jtagd"},
		{"other", "Error (123456): something new\n", drivers.ClassInfra, "quartus_pgm reported an error"},
	}
	for _, c := range cases {
		t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			writeFile(t, out, c.output)
			fakeQuartus(t, nil, filepath.Join(t.TempDir(), "argv"), "cat '"+out+"'\nexit 2\n")
			q := &QuartusPGM{Board: "de5-4", Cable: "DE5-Net [1-1.2]"}
			err := q.Program(context.Background(), drivers.Image{Path: bitFile(t, "a.sof", []byte("x"))})
			wantClass(t, err, c.class)
			wantContains(t, err.Error(), "de5-4", "exited with status 2", c.reason)
		})
	}
}

func quartusOnPCIe(k *fakePCI) *QuartusPGM {
	return &QuartusPGM{Board: "de5-1", Cable: "DE5-Net [1-1.2]", PCIDevice: "03:00.0", Sysfs: k.sysfs,
		pcie: pcieHotplug{poll: 2 * time.Millisecond, rescanEvery: 50 * time.Millisecond, grace: 2 * time.Second}}
}

func TestQuartusPCIeRemoveProgramRescan(t *testing.T) {
	k := newFakePCI(t, true, false)
	fakeQuartus(t, k, filepath.Join(t.TempDir(), "argv"), "exit 0\n")
	var log syncbuf.Buffer
	q := quartusOnPCIe(k)
	q.SetLog(&log)
	if err := q.Check(context.Background()); err != nil {
		t.Fatalf("Check: %v", err)
	}
	if err := q.Program(context.Background(), drivers.Image{Path: bitFile(t, "a.sof", []byte("x"))}); err != nil {
		t.Fatal(err)
	}
	ev := k.Events(t)
	if len(ev) < 3 || ev[0] != "remove" || ev[1] != "program" || ev[2] != "rescan" {
		t.Fatalf("events %q, want remove, program (off the bus), rescan", ev)
	}
	if _, err := os.Stat(k.devDir()); err != nil {
		t.Fatal("the device is not back on the bus")
	}
	wantContains(t, log.String(), "pcie 0000:03:00.0: removed", "back on the bus")
}

func TestQuartusPCIeRescanAfterFailure(t *testing.T) {
	k := newFakePCI(t, true, false)
	fakeQuartus(t, k, filepath.Join(t.TempDir(), "argv"),
		"echo 'Error (213013): Programming hardware cable not detected'\nexit 2\n")
	err := quartusOnPCIe(k).Program(context.Background(), drivers.Image{Path: bitFile(t, "a.sof", []byte("x"))})
	wantClass(t, err, drivers.ClassInfra)
	wantContains(t, err.Error(), "cable was not found")
	if ev := k.Events(t); len(ev) < 3 || ev[0] != "remove" || ev[1] != "program" || ev[2] != "rescan" {
		t.Fatalf("events %q, want remove, program, rescan", ev)
	}
	if _, err := os.Stat(k.devDir()); err != nil {
		t.Fatal("the device is not back on the bus")
	}
}

func TestQuartusPCIeRescanAfterTimeout(t *testing.T) {
	k := newFakePCI(t, true, false)
	fakeQuartus(t, k, filepath.Join(t.TempDir(), "argv"), "sleep 30\n")
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	err := quartusOnPCIe(k).Program(ctx, drivers.Image{Path: bitFile(t, "a.sof", []byte("x"))})
	if !isTimeout(err) || drivers.ClassOf(err) != drivers.ClassInfra {
		t.Fatalf("want an infrastructure timeout: %v", err)
	}
	if ev := k.Events(t); len(ev) < 3 || ev[0] != "remove" || ev[1] != "program" || ev[2] != "rescan" {
		t.Fatalf("events %q: the rescan must happen after the deadline too", ev)
	}
	if _, err := os.Stat(k.devDir()); err != nil {
		t.Fatal("the device is not back on the bus")
	}
}

func TestQuartusPCIeDeviceDoesNotComeBack(t *testing.T) {
	k := newFakePCI(t, true, true)
	fakeQuartus(t, k, filepath.Join(t.TempDir(), "argv"), "exit 0\n")
	q := quartusOnPCIe(k)
	q.pcie.grace = 300 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Second)
	defer cancel()
	err := q.Program(ctx, drivers.Image{Path: bitFile(t, "a.sof", []byte("x"))})
	de := wantClass(t, err, drivers.ClassInfra)
	wantContains(t, err.Error(), "0000:03:00.0", "rescans")
	wantContains(t, de.Hint, "did not come back")
	ev := k.Events(t)
	if len(ev) < 4 || ev[0] != "remove" || ev[1] != "program" || ev[2] != "rescan" || ev[3] != "rescan" {
		t.Fatalf("events %q, want remove, program and repeated rescans", ev)
	}
}

// A device already off the bus (a run stopped before its rescan) is
// programmed and brought back.
func TestQuartusPCIeDeviceAlreadyRemoved(t *testing.T) {
	k := newFakePCI(t, false, false)
	fakeQuartus(t, k, filepath.Join(t.TempDir(), "argv"), "exit 0\n")
	if err := quartusOnPCIe(k).Program(context.Background(), drivers.Image{Path: bitFile(t, "a.sof", []byte("x"))}); err != nil {
		t.Fatal(err)
	}
	if ev := k.Events(t); len(ev) < 2 || ev[0] != "program" || ev[1] != "rescan" {
		t.Fatalf("events %q", ev)
	}
}

// A device that does not leave the bus is not reprogrammed.
func TestQuartusPCIeDeviceStaysOnBus(t *testing.T) {
	k := newFakePCI(t, true, false)
	k.cancel() // the kernel ignores the removal
	<-k.done
	rec := filepath.Join(t.TempDir(), "argv")
	fakeQuartus(t, k, rec, "exit 0\n")
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err := quartusOnPCIe(k).Program(ctx, drivers.Image{Path: bitFile(t, "a.sof", []byte("x"))})
	de := wantClass(t, err, drivers.ClassInfra)
	wantContains(t, de.Hint, "not reprogrammed")
	if _, serr := os.Stat(rec); !errors.Is(serr, os.ErrNotExist) {
		t.Fatal("quartus_pgm ran with the device still on the bus")
	}
}

func TestQuartusMissingTool(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	q := &QuartusPGM{Board: "de5-1", Cable: "DE5-Net [1-1.2]"}
	err := q.Program(context.Background(), drivers.Image{Path: bitFile(t, "a.sof", []byte("x"))})
	de := wantClass(t, err, drivers.ClassInfra)
	wantContains(t, err.Error(), "quartus_pgm is not installed")
	wantContains(t, de.Hint, "Quartus Prime Programmer", "tool:")
}

func TestQuartusCable(t *testing.T) {
	for _, c := range []struct{ cable, usb, want string }{
		{"DE5-Net [1-1.2]", "", "DE5-Net [1-1.2]"},
		{"DE5-Net [1-1.2]", "1-1.2", "DE5-Net [1-1.2]"},
		{"USB-BlasterII", "3-2", "USB-BlasterII [3-2]"},
		{"DE5 on lab-host [USB-1]", "", "DE5 on lab-host [USB-1]"},
	} {
		if got, err := quartusCable(c.cable, c.usb, ""); err != nil || got != c.want {
			t.Errorf("%q %q: %q %v, want %q", c.cable, c.usb, got, err, c.want)
		}
	}
	for _, c := range []struct{ cable, usb, serial string }{
		{"DE5-Net", "", ""},              // no port: first such cable
		{"1", "", ""},                    // an index
		{"DE5-Net [1-1.2]", "1-1.3", ""}, // two different ports
		{"DE5-Net", "3:7", ""},           // bus:device
		{"", "1-1", ""},                  //
		{"DE5-Net [1-1.2]", "", "ABC"},   // serials do not name Quartus cables
		{"DE5-Net []", "", ""},           //
		{"-c [1-1]", "", ""},             //
	} {
		if _, err := quartusCable(c.cable, c.usb, c.serial); err == nil {
			t.Errorf("%q %q %q accepted", c.cable, c.usb, c.serial)
		}
	}
}

func TestParsePCIAddress(t *testing.T) {
	for in, want := range map[string]string{"0000:03:00.0": "0000:03:00.0", "03:00.0": "0000:03:00.0", "0001:AF:1f.7": "0001:af:1f.7"} {
		if got, err := ParsePCIAddress(in); err != nil || got != want {
			t.Errorf("%q: %q %v", in, got, err)
		}
	}
	for _, bad := range []string{"", "03:00", "0000:03:20.0", "0000:03:00.8", "../../x", "0000:03:00.0/remove", "00000:03:00.0"} {
		if _, err := ParsePCIAddress(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// FuzzParsePCIAddress: an accepted address is one plain sysfs directory
// name in canonical form, and canonical forms are fixed points.
func FuzzParsePCIAddress(f *testing.F) {
	for _, s := range []string{"0000:03:00.0", "03:00.0", "../..", "0000:03:00.0/..", "0:0:0.0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := ParsePCIAddress(s)
		if err != nil {
			return
		}
		if len(a) != 12 || strings.ContainsAny(a, "/\\ \x00") || filepath.Base(a) != a {
			t.Fatalf("%q accepted as %q", s, a)
		}
		if b, err := ParsePCIAddress(a); err != nil || b != a {
			t.Fatalf("canonical %q reparses as %q %v", a, b, err)
		}
	})
}
