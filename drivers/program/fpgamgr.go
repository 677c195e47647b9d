package program

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/labrunner/labrunner/drivers"
)

// FPGAManager programs the PL of a Zynq UltraScale+ MPSoC from Linux on its
// own ARM cores, through the fpga_manager sysfs interface of the Xilinx
// kernel (linux-xlnx, PetaLinux): the configuration image is copied into the
// firmware directory, the flags (0 full, 1 partial) are written, then the
// image's name is written to the manager's firmware attribute, and the
// manager's state must end at "operating".
//
// The image is drivers.Image.Bin: the .bit converted to the byte-swapped
// .bin the manager takes (bitstreams.ToBin).
type FPGAManager struct {
	Board       string
	Sysfs       string // sysfs root, default /sys
	FirmwareDir string // where the kernel's firmware loader looks, default /lib/firmware
	Manager     string // default fpga0
	Partial     bool   // flags 1: partial reconfiguration (default full)
	// Timeout bounds a programming when the context has no earlier
	// deadline (default: the lab file's default program deadline).
	Timeout time.Duration
	// Poll is the state polling period (default 20 ms).
	Poll time.Duration
	// Settle: when the state after loading equals the state before it,
	// the state is believed only after it stayed so this long (default
	// 300 ms); see waitOperating.
	Settle time.Duration
	Log    io.Writer
}

// Name says which manager this is.
func (m *FPGAManager) Name() string { return "fpga_manager:" + m.manager() }

// SetLog sets the transcript writer.
func (m *FPGAManager) SetLog(w io.Writer) { m.Log = w }

func (m *FPGAManager) sysfs() string {
	if m.Sysfs == "" {
		return "/sys"
	}
	return m.Sysfs
}

func (m *FPGAManager) firmwareDir() string {
	if m.FirmwareDir == "" {
		return "/lib/firmware"
	}
	return m.FirmwareDir
}

func (m *FPGAManager) manager() string {
	if m.Manager == "" {
		return "fpga0"
	}
	return m.Manager
}

func (m *FPGAManager) dur(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// fwFileName is the image's file name in the firmware directory: one per
// board, overwritten by each programming, so that images do not pile up.
func (m *FPGAManager) fwFileName() string {
	b := safeFileName(m.Board)
	if b == "" {
		return "labrunner.bin"
	}
	return "labrunner-" + b + ".bin"
}

// fwRequestName is what is written to the firmware attribute: the image's
// path relative to the kernel's firmware search path. Under /lib/firmware
// that is the path below it; elsewhere the kernel finds the file only when
// the directory is the firmware_class.path parameter, and the name is the
// bare file name.
func (m *FPGAManager) fwRequestName() string {
	dir := filepath.Clean(m.firmwareDir())
	if rel, err := filepath.Rel("/lib/firmware", dir); err == nil && filepath.IsAbs(dir) && !strings.HasPrefix(rel, "..") {
		return filepath.ToSlash(filepath.Join(rel, m.fwFileName()))
	}
	return m.fwFileName()
}

// managerDir checks that the manager exists and offers the attributes this
// programmer uses, and returns its sysfs directory.
func (m *FPGAManager) managerDir() (string, error) {
	class := filepath.Join(m.sysfs(), "class", "fpga_manager")
	dir := filepath.Join(class, m.manager())
	op := "fpga_manager " + m.manager()
	if _, err := os.Stat(dir); err != nil {
		entries, lerr := os.ReadDir(class)
		if lerr != nil {
			return "", drivers.Infra(m.Board, op,
				"this Linux has no FPGA manager framework: boot a Xilinx (PetaLinux/linux-xlnx) kernel with CONFIG_FPGA_MGR_ZYNQMP_FPGA, or use the xsdb or openfpgaloader programmer",
				fmt.Errorf("%s does not exist: %w", class, lerr))
		}
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		sort.Strings(names)
		present := "none"
		if len(names) > 0 {
			present = strings.Join(names, ", ")
		}
		if len(names) == 0 {
			return "", drivers.Infra(m.Board, op,
				"no FPGA manager is registered: check that the zynqmp-fpga driver probed (dmesg | grep -i fpga)",
				fmt.Errorf("manager %s not found in %s (present: none): %w", m.manager(), class, err))
		}
		return "", drivers.Setup(m.Board, op,
			"set manager: in the lab file to one of the managers present",
			fmt.Errorf("manager %s not found in %s (present: %s): %w", m.manager(), class, present, err))
	}
	for _, attr := range []string{"firmware", "flags", "state"} {
		if _, err := os.Stat(filepath.Join(dir, attr)); err != nil {
			hint := "check the kernel's FPGA manager driver (dmesg | grep -i fpga)"
			if attr != "state" {
				hint = "this kernel's fpga_manager has no sysfs " + attr + " attribute (a linux-xlnx addition; mainline kernels load images through device-tree overlays): boot a Xilinx/PetaLinux kernel, or use the xsdb or openfpgaloader programmer"
			}
			return "", drivers.Infra(m.Board, op, hint, fmt.Errorf("%s has no %s attribute: %w", dir, attr, err))
		}
	}
	return dir, nil
}

// checkFirmwareDir makes sure an image can be put where the kernel looks.
func (m *FPGAManager) checkFirmwareDir() error {
	f, err := os.CreateTemp(m.firmwareDir(), ".labrunner-check-*")
	if err != nil {
		return m.fwDirError(err)
	}
	name := f.Name()
	f.Close()
	os.Remove(name)
	return nil
}

func (m *FPGAManager) fwDirError(err error) error {
	return drivers.Infra(m.Board, "firmware directory "+m.firmwareDir(),
		"the firmware directory must exist and be writable by labrunner (run as root on the board, or set firmware_dir: to a directory in the kernel's firmware_class.path)",
		err)
}

// Check looks at the manager and the firmware directory without loading
// anything.
func (m *FPGAManager) Check(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if _, err := m.managerDir(); err != nil {
		return err
	}
	return m.checkFirmwareDir()
}

// installImage writes the image into the firmware directory atomically
// (temporary file, fsync, rename), so that the kernel never reads half an
// image, and returns its path.
func (m *FPGAManager) installImage(bin []byte) (string, error) {
	dir := m.firmwareDir()
	final := filepath.Join(dir, m.fwFileName())
	f, err := os.CreateTemp(dir, ".labrunner-*.bin.tmp")
	if err != nil {
		return "", m.fwDirError(err)
	}
	tmp := f.Name()
	fail := func(err error) (string, error) {
		f.Close()
		os.Remove(tmp)
		return "", m.fwDirError(fmt.Errorf("write %s: %w", final, err))
	}
	if _, err := f.Write(bin); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	// The kernel's loader reads it as root; 0644 keeps it readable for a
	// person looking into the directory too.
	if err := f.Chmod(0o644); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return "", m.fwDirError(fmt.Errorf("write %s: %w", final, err))
	}
	if err := os.Rename(tmp, final); err != nil {
		os.Remove(tmp)
		return "", m.fwDirError(fmt.Errorf("rename into %s: %w", final, err))
	}
	return final, nil
}

// writeAttr writes one sysfs attribute. The file must exist (sysfs cannot
// create files); the kernel's store function runs inside write(2), so its
// error comes back from Write or Close.
func writeAttr(path, value string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	_, err = f.Write([]byte(value))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func readState(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, "state"))
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// stateKind sorts the fpga_manager states (linux drivers/fpga/fpga-mgr.c,
// state_str).
type stateKind int

const (
	stateBusy stateKind = iota // in progress, or not (yet) recognisable
	stateOperating
	stateFailed
)

func classifyState(s string) stateKind {
	switch s {
	case "operating":
		return stateOperating
	case "unknown", "power off":
		return stateFailed
	}
	if strings.HasSuffix(s, " error") {
		return stateFailed
	}
	return stateBusy
}

// stateHint says what to check for a failed state, and whether the failure
// is a setup error (the image or the configuration) rather than the board.
func (m *FPGAManager) stateHint(state string) (drivers.Class, string) {
	switch state {
	case "firmware request error":
		return drivers.ClassSetup, fmt.Sprintf("the kernel could not read %s from its firmware search path: keep firmware_dir: at /lib/firmware (or a directory below it), or add the directory to firmware_class.path (/sys/module/firmware_class/parameters/path)", m.fwRequestName())
	case "parse header error":
		return drivers.ClassSetup, "the manager did not recognise the image: load the byte-swapped .bin made from the .bit (bitstreams.ToBin), not the .bit itself"
	case "write init error":
		return drivers.ClassInfra, "the PL refused to start configuration: check that the image is a byte-swapped .bin for this part, that the PMU firmware supports PL loading, and dmesg"
	case "write error":
		return drivers.ClassInfra, "the transfer to the PL failed: check that the bitstream was built for this board's part, that it is not corrupted, and dmesg"
	case "write complete error":
		return drivers.ClassInfra, "the PL did not finish configuration (DONE stayed low): check that the bitstream was built for this board's part, and dmesg"
	case "unknown", "power off":
		return drivers.ClassInfra, "the manager cannot tell the PL's state: check that the PL is powered and that the zynqmp-fpga driver works (dmesg)"
	}
	return drivers.ClassInfra, "check dmesg for the FPGA manager's messages"
}

// Program loads img.Bin into the PL.
func (m *FPGAManager) Program(ctx context.Context, img drivers.Image) error {
	ctx, cancel := bounded(ctx, m.Timeout)
	defer cancel()
	op := "fpga_manager " + m.manager() + ": load " + img.Path
	if len(img.Bin) == 0 {
		return drivers.Setup(m.Board, op,
			"convert the .bit first: the runner must set Image.Bin with bitstreams.ToBin",
			errors.New("no configuration image for fpga_manager (Image.Bin is empty)"))
	}
	dir, err := m.managerDir()
	if err != nil {
		return err
	}
	path, err := m.installImage(img.Bin)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(img.Bin)
	logf(m.Log, "# fpga_manager %s: wrote %s (%d bytes, sha256 %s) for %s", m.manager(), path, len(img.Bin), hex.EncodeToString(sum[:]), img.Path)
	if err := ctx.Err(); err != nil {
		return drivers.Infra(m.Board, op, "the deadline passed before loading started", fmt.Errorf("%w: %w", drivers.ErrTimeout, err))
	}

	flags := "0"
	if m.Partial {
		flags = "1"
	}
	if err := writeAttr(filepath.Join(dir, "flags"), flags); err != nil {
		return drivers.Infra(m.Board, op, "labrunner must be allowed to write the manager's sysfs attributes (run as root)",
			fmt.Errorf("write flags %s: %w", flags, err))
	}
	logf(m.Log, "# fpga_manager %s: flags=%s", m.manager(), flags)

	before, err := readState(dir)
	if err != nil {
		return drivers.Infra(m.Board, op, "check the kernel's FPGA manager driver (dmesg)", fmt.Errorf("read state: %w", err))
	}
	name := m.fwRequestName()
	start := time.Now()
	// The kernel loads the image inside write(2) of the firmware attribute,
	// which cannot be interrupted: the write runs in its own goroutine so
	// that the deadline holds. A goroutine left blocked there ends when the
	// kernel's own timeouts end the write.
	wrote := make(chan error, 1)
	go func() { wrote <- writeAttr(filepath.Join(dir, "firmware"), name) }()
	logf(m.Log, "# fpga_manager %s: firmware=%s (state before: %s)", m.manager(), name, before)

	state, err := m.waitOperating(ctx, dir, before, wrote)
	elapsed := time.Since(start).Round(time.Millisecond)
	if err != nil {
		return m.loadError(op, name, state, elapsed, err)
	}
	logf(m.Log, "# fpga_manager %s: state %s after %s", m.manager(), state, elapsed)
	return nil
}

// errNotOperating marks a load that ended in a state other than operating.
var errNotOperating = errors.New("the manager did not reach operating")

// waitOperating follows the state until the load ended. The firmware write
// returns when the kernel has finished, so the state read after it is
// normally final. Where a state update may come later than the write (some
// managers, and the test's simulated kernel), a final state equal to the
// state before the load could be stale: it is believed once a change was
// seen, or after it stayed the same for Settle.
func (m *FPGAManager) waitOperating(ctx context.Context, dir, before string, wrote <-chan error) (string, error) {
	tick := time.NewTicker(m.dur(m.Poll, 20*time.Millisecond))
	defer tick.Stop()
	settle := m.dur(m.Settle, 300*time.Millisecond)
	last, changed := before, false
	var writeDone bool
	var doneAt time.Time
	for {
		select {
		case <-ctx.Done():
			if !writeDone {
				return last, fmt.Errorf("%w: the firmware write had not returned (the kernel is still loading): %w", drivers.ErrTimeout, ctx.Err())
			}
			return last, fmt.Errorf("%w: %w", drivers.ErrTimeout, ctx.Err())
		case err := <-wrote:
			writeDone, doneAt = true, time.Now()
			if err != nil {
				st, _ := readState(dir)
				if st == "" {
					st = last
				}
				return st, fmt.Errorf("write firmware: %w", err)
			}
		case <-tick.C:
		}
		st, err := readState(dir)
		if err != nil {
			return last, fmt.Errorf("read state: %w", err)
		}
		if st != last {
			logf(m.Log, "# fpga_manager %s: state %s", m.manager(), st)
			last, changed = st, true
		}
		if !writeDone {
			continue
		}
		kind := classifyState(st)
		if kind == stateBusy {
			continue
		}
		if !changed && st == before && time.Since(doneAt) < settle {
			continue
		}
		if kind == stateOperating {
			return st, nil
		}
		return st, errNotOperating
	}
}

func (m *FPGAManager) loadError(op, name, state string, elapsed time.Duration, err error) error {
	if errors.Is(err, drivers.ErrTimeout) {
		return drivers.Infra(m.Board, op,
			"the load did not finish in time: check dmesg for the FPGA manager, the PL's power, or raise deadlines.program",
			fmt.Errorf("state %q after %s: %w", state, elapsed, err))
	}
	if errors.Is(err, fs.ErrPermission) {
		return drivers.Infra(m.Board, op, "labrunner must be allowed to write the manager's sysfs attributes (run as root)", err)
	}
	class, hint := m.stateHint(state)
	if errors.Is(err, errNotOperating) {
		return &drivers.Error{Class: class, Board: m.Board, Op: op, Hint: hint,
			Err: fmt.Errorf("loading %s ended in state %q after %s: %w", name, state, elapsed, err)}
	}
	// The kernel refused the write itself; the state says why.
	if classifyState(state) != stateFailed {
		class, hint = drivers.ClassInfra, "the kernel refused the load: check dmesg for the FPGA manager's messages"
	}
	return &drivers.Error{Class: class, Board: m.Board, Op: op, Hint: hint,
		Err: fmt.Errorf("loading %s failed (state %q after %s): %w", name, state, elapsed, err)}
}

// State reads the manager's state ("operating", "unknown" ...) without
// loading anything, for `labrunner doctor`.
func (m *FPGAManager) State() (string, error) {
	dir, err := m.managerDir()
	if err != nil {
		return "", err
	}
	st, err := readState(dir)
	if err != nil {
		return "", drivers.Infra(m.Board, "fpga_manager "+m.manager(), "check the kernel's FPGA manager driver (dmesg)", err)
	}
	return st, nil
}
