// Package mmio is a drivers.RegisterBus over a memory-mapped device file: the
// programmable logic's AXI window as seen from a Zynq's ARM cores (/dev/mem,
// or /dev/uioN when a uio driver owns the range), a PCIe BAR of a board in a
// host (sysfs .../resourceN), or a regular file in tests.
//
// Addresses given to Read32 and friends are offsets from the design's
// address 0, which sits at byte `base` of the device file; the bus refuses
// anything outside [0, size) and anything that is not 4-byte aligned before
// it touches the mapping, because a stray access to a device mapping is a bus
// error that kills the process, not an error value.
//
// Accesses are single 32-bit loads and stores done with sync/atomic, so the
// compiler can neither merge, split, reorder across one another nor elide
// them: a register read with a side effect happens exactly once per call.
// Words are in host byte order, as the CPU's own loads see them (little
// endian on every host labrunner targets: arm64 and amd64).
package mmio

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
	"periph.io/x/host/v3/pmem"

	"github.com/labrunner/labrunner/drivers"
)

// Options tune Open. The zero value is fine for /dev/mem, a PCIe resource
// file and a regular file, and selects map 0 of a /dev/uioN device.
type Options struct {
	// Board names the board in error messages.
	Board string
	// UIOMap selects the memory map of a /dev/uioN device. The device path
	// may name it instead, as "/dev/uio0:map1"; if both are given they must
	// agree.
	UIOMap int
	// SysfsRoot is where sysfs is mounted, "/sys" when empty. Tests point it
	// at a fake tree to exercise the uio map lookup.
	SysfsRoot string
}

// Bus is a mapped register range. It is safe for concurrent use; Close waits
// for accesses in flight so that no access ever touches an unmapped page.
type Bus struct {
	board  string
	device string // as given, without a :mapN suffix
	kind   string // "/dev/mem", "uio", "file"
	base   uint64 // byte offset of address 0 in the device (physical address for /dev/mem)
	size   uint64

	mu    sync.RWMutex
	mem   []byte       // [base, base+size) of the device; nil once closed
	unmap func() error // releases the whole mapping
}

var _ drivers.RegisterBus = (*Bus)(nil)

var (
	uioName   = regexp.MustCompile(`^uio[0-9]+$`)
	uioSuffix = regexp.MustCompile(`^(.*):map([0-9]+)$`)
)

// Open maps size bytes at byte offset base of device. For /dev/uioN, base is
// an offset inside the selected map and size 0 means "the rest of the map"
// (read from /sys/class/uio/uioN/maps/mapM/size); for a regular or PCIe
// resource file, size 0 means "the rest of the file". /dev/mem needs an
// explicit size.
func Open(device string, base, size uint64, opts Options) (*Bus, error) {
	b := &Bus{board: opts.Board, device: device, base: base, size: size}
	mapIdx := opts.UIOMap
	if m := uioSuffix.FindStringSubmatch(device); m != nil {
		idx, err := strconv.Atoi(m[2])
		if err != nil {
			return nil, b.setup("open", "write the map as /dev/uioN:mapM", fmt.Errorf("bad uio map index in %q: %w", device, err))
		}
		if opts.UIOMap != 0 && opts.UIOMap != idx {
			return nil, b.setup("open", "name the uio map once, in the path or in the options",
				fmt.Errorf("device %q names map %d but the options say map %d", device, idx, opts.UIOMap))
		}
		b.device, mapIdx = m[1], idx
	}
	if mapIdx < 0 {
		return nil, b.setup("open", "uio maps are numbered from 0", fmt.Errorf("uio map index %d is negative", mapIdx))
	}
	if err := drivers.CheckAligned(base); err != nil {
		return nil, b.setup("open", "the design's address 0 sits on a word boundary; fix bus.mmio.base", fmt.Errorf("base of %s: %w", b.device, err))
	}
	if size%4 != 0 {
		return nil, b.setup("open", "fix bus.mmio.size", fmt.Errorf("size 0x%x of %s is not a whole number of 32-bit words", size, b.device))
	}
	if size > math.MaxInt/2 {
		return nil, b.setup("open", "fix bus.mmio.size", fmt.Errorf("size 0x%x of %s is too large to map", size, b.device))
	}

	var err error
	switch {
	case filepath.Clean(b.device) == "/dev/mem":
		b.kind = "/dev/mem"
		if mapIdx != 0 {
			return nil, b.setup("open", "drop the map index", errors.New("/dev/mem has no uio maps"))
		}
		err = b.openDevMem()
	case uioName.MatchString(filepath.Base(b.device)):
		b.kind = "uio"
		sysfs := opts.SysfsRoot
		if sysfs == "" {
			sysfs = "/sys"
		}
		err = b.openUIO(sysfs, mapIdx)
	default:
		b.kind = "file"
		if mapIdx != 0 {
			return nil, b.setup("open", "map indexes apply to /dev/uioN only", fmt.Errorf("%s is not a uio device but map %d was asked for", b.device, mapIdx))
		}
		err = b.openFile()
	}
	if err != nil {
		return nil, err
	}
	return b, nil
}

// devMemPath is where /dev/mem is opened; the tests point it at a path
// that does not exist, to see a kernel without /dev/mem without root.
var devMemPath = "/dev/mem"

// openDevMem maps physical memory through periph.io's pmem, which owns
// /dev/mem for the process. pmem flattens the open error into a string, so
// open the device here first to keep the cause (ENOENT, EACCES) classifiable.
func (b *Bus) openDevMem() error {
	if b.size == 0 {
		return b.setup("open", "give bus.mmio.size: /dev/mem has no size of its own", errors.New("/dev/mem needs an explicit size"))
	}
	f, err := os.OpenFile(devMemPath, os.O_RDWR|os.O_SYNC, 0)
	if err != nil {
		return b.openError(err)
	}
	f.Close()
	v, err := pmem.Map(b.base, int(b.size))
	if err != nil {
		hint := "the kernel refused the mapping: with CONFIG_STRICT_DEVMEM only I/O ranges not claimed by a driver can be mapped; boot with iomem=relaxed or bind the range to uio_pdrv_genirq and use /dev/uioN"
		return b.infra("open", hint, fmt.Errorf("map 0x%x bytes at physical 0x%x of /dev/mem: %w", b.size, b.base, err))
	}
	b.mem = v.Bytes()
	b.unmap = v.Close
	return nil
}

// openUIO maps map mapIdx of a uio device: the kernel selects the map by the
// mmap offset mapIdx*pagesize and always maps it from its start, so the
// whole map (plus the in-page offset of its physical address) is mapped and
// base is applied by slicing.
func (b *Bus) openUIO(sysfs string, mapIdx int) error {
	if _, err := os.Stat(b.device); err != nil {
		return b.openError(err)
	}
	dir := filepath.Join(sysfs, "class", "uio", filepath.Base(b.device), "maps", "map"+strconv.Itoa(mapIdx))
	mapSize, err := readSysfsUint(filepath.Join(dir, "size"))
	if err != nil {
		return b.infra("open", "check that the uio driver exposes this map (ls "+filepath.Dir(dir)+")",
			fmt.Errorf("size of uio map %d of %s: %w", mapIdx, b.device, err))
	}
	// Kernels since 4.x export the offset of the map's start inside its first page.
	var inPage uint64
	if _, statErr := os.Stat(filepath.Join(dir, "offset")); statErr == nil {
		if inPage, err = readSysfsUint(filepath.Join(dir, "offset")); err != nil {
			return b.infra("open", "", fmt.Errorf("offset of uio map %d of %s: %w", mapIdx, b.device, err))
		}
	}
	if b.base > mapSize {
		return b.setup("open", "base is an offset inside the uio map; fix bus.mmio.base",
			fmt.Errorf("base 0x%x is beyond uio map %d of %s (0x%x bytes)", b.base, mapIdx, b.device, mapSize))
	}
	if b.size == 0 {
		b.size = mapSize - b.base
		b.size &^= 3
	}
	if b.size == 0 || b.base+b.size > mapSize {
		return b.setup("open", "fix bus.mmio.base/size to fit the map",
			fmt.Errorf("range [0x%x, 0x%x) is beyond uio map %d of %s (0x%x bytes)", b.base, b.base+b.size, mapIdx, b.device, mapSize))
	}
	f, err := os.OpenFile(b.device, os.O_RDWR|os.O_SYNC, 0)
	if err != nil {
		return b.openError(err)
	}
	defer f.Close()
	page := uint64(os.Getpagesize())
	length := roundUp(inPage+mapSize, page)
	m, err := unix.Mmap(int(f.Fd()), int64(uint64(mapIdx)*page), int(length), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return b.infra("open", "check that the map exists and the uio driver is bound", fmt.Errorf("mmap uio map %d of %s: %w", mapIdx, b.device, err))
	}
	start := inPage + b.base
	b.mem = m[start : start+b.size : start+b.size]
	b.unmap = func() error { return unix.Munmap(m) }
	return nil
}

// openFile maps a PCIe resource file, a regular file, or any other device
// that can be mapped at a page-aligned offset.
func (b *Bus) openFile() error {
	f, err := os.OpenFile(b.device, os.O_RDWR|os.O_SYNC, 0)
	if err != nil {
		return b.openError(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return b.infra("open", "", fmt.Errorf("stat %s: %w", b.device, err))
	}
	// sysfs resourceN files and regular files report their real size; a
	// character device reports 0 and the caller must give the size.
	fsize := uint64(st.Size())
	if st.Size() > 0 || st.Mode().IsRegular() {
		if b.base > fsize {
			return b.setup("open", "fix bus.mmio.base",
				fmt.Errorf("base 0x%x is beyond the end of %s (0x%x bytes)", b.base, b.device, fsize))
		}
		if b.size == 0 {
			b.size = (fsize - b.base) &^ 3
		}
		if b.base+b.size > fsize {
			return b.setup("open", "fix bus.mmio.size: a mapping beyond the end of a file faults on access",
				fmt.Errorf("range [0x%x, 0x%x) is beyond the end of %s (0x%x bytes)", b.base, b.base+b.size, b.device, fsize))
		}
	}
	if b.size == 0 {
		return b.setup("open", "give bus.mmio.size", fmt.Errorf("%s has no size of its own and none was given (or nothing is left after base 0x%x)", b.device, b.base))
	}
	page := uint64(os.Getpagesize())
	off := b.base &^ (page - 1)
	delta := b.base - off
	length := roundUp(delta+b.size, page)
	m, err := unix.Mmap(int(f.Fd()), int64(off), int(length), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return b.infra("open", "check that the device supports mmap at this offset", fmt.Errorf("mmap 0x%x bytes at offset 0x%x of %s: %w", length, off, b.device, err))
	}
	b.mem = m[delta : delta+b.size : delta+b.size]
	b.unmap = func() error { return unix.Munmap(m) }
	return nil
}

func (b *Bus) openError(err error) error {
	switch {
	case errors.Is(err, os.ErrNotExist):
		hint := "check bus.mmio.device in the lab file"
		if b.kind == "uio" {
			hint += "; is the uio driver bound (ls /sys/class/uio)?"
		}
		if b.kind == "/dev/mem" {
			hint += "; this kernel has no /dev/mem (CONFIG_DEVMEM) — use the uio driver"
		}
		if strings.Contains(b.device, "/bus/pci/devices/") {
			hint += "; is the board's PCIe endpoint on the bus (lspci -D)? After programming, rescan it (echo 1 > /sys/bus/pci/rescan)"
		}
		return b.infra("open", hint, fmt.Errorf("device %s is missing: %w", b.device, err))
	case errors.Is(err, os.ErrPermission):
		// The lab file is right; this host does not let the runner's
		// user in: infrastructure, like a device that is not there.
		return b.infra("open", "run as root or use the uio driver (/dev/uioN, which a udev rule can give to a group: SUBSYSTEM==\"uio\", GROUP=\"labrunner\", MODE=\"0660\")",
			fmt.Errorf("permission denied opening %s: %w", b.device, err))
	}
	return b.infra("open", "", fmt.Errorf("open %s: %w", b.device, err))
}

func readSysfsUint(path string) (uint64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	s := strings.TrimSpace(string(data))
	v, err := strconv.ParseUint(s, 0, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %q is not a number: %w", path, s, err)
	}
	return v, nil
}

func roundUp(n, to uint64) uint64 { return (n + to - 1) &^ (to - 1) }

// Size returns the number of bytes mapped: valid addresses are [0, Size()).
func (b *Bus) Size() uint64 { return b.size }

// String describes the mapping, for logs and error messages.
func (b *Bus) String() string {
	return fmt.Sprintf("%s [0x%x, 0x%x)", b.device, b.base, b.base+b.size)
}

// Read32 reads the register at addr.
func (b *Bus) Read32(ctx context.Context, addr uint64) (uint32, error) {
	if err := ctx.Err(); err != nil {
		return 0, b.ctxError("read32", addr, err)
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	if err := b.check("read32", addr, 1); err != nil {
		return 0, err
	}
	return atomic.LoadUint32(b.word(addr)), nil
}

// Write32 writes v to the register at addr.
func (b *Bus) Write32(ctx context.Context, addr uint64, v uint32) error {
	if err := ctx.Err(); err != nil {
		return b.ctxError("write32", addr, err)
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	if err := b.check("write32", addr, 1); err != nil {
		return err
	}
	atomic.StoreUint32(b.word(addr), v)
	return nil
}

// burstCheckEvery is how many words a burst moves between context checks: a
// mapped access cannot block, so this only bounds how late a cancellation is
// noticed (a few microseconds) while keeping the check off the per-word path.
const burstCheckEvery = 64

// ReadBurst reads len(dst) consecutive words starting at addr, one load per
// word, in address order.
func (b *Bus) ReadBurst(ctx context.Context, addr uint64, dst []uint32) error {
	if err := ctx.Err(); err != nil {
		return b.ctxError("read burst", addr, err)
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	if err := b.check(fmt.Sprintf("read burst of %d words", len(dst)), addr, uint64(len(dst))); err != nil {
		return err
	}
	for i := range dst {
		if i%burstCheckEvery == burstCheckEvery-1 {
			if err := ctx.Err(); err != nil {
				return b.ctxError(fmt.Sprintf("read burst (after %d of %d words)", i, len(dst)), addr, err)
			}
		}
		dst[i] = atomic.LoadUint32(b.word(addr + uint64(i)*4))
	}
	return nil
}

// WriteBurst writes src to consecutive words starting at addr, one store per
// word, in address order.
func (b *Bus) WriteBurst(ctx context.Context, addr uint64, src []uint32) error {
	if err := ctx.Err(); err != nil {
		return b.ctxError("write burst", addr, err)
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	if err := b.check(fmt.Sprintf("write burst of %d words", len(src)), addr, uint64(len(src))); err != nil {
		return err
	}
	for i, v := range src {
		if i%burstCheckEvery == burstCheckEvery-1 {
			if err := ctx.Err(); err != nil {
				return b.ctxError(fmt.Sprintf("write burst (after %d of %d words)", i, len(src)), addr, err)
			}
		}
		atomic.StoreUint32(b.word(addr+uint64(i)*4), v)
	}
	return nil
}

// Close unmaps the range. Accesses after Close fail; Close is idempotent.
func (b *Bus) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.mem == nil {
		return nil
	}
	b.mem = nil
	if err := b.unmap(); err != nil {
		return b.infra("close", "", fmt.Errorf("unmap %s: %w", b.device, err))
	}
	return nil
}

// word returns the mapped word at addr; check must have passed.
func (b *Bus) word(addr uint64) *uint32 {
	return (*uint32)(unsafe.Pointer(&b.mem[addr]))
}

// check refuses a closed bus, a misaligned address and any word of the
// access outside the mapped range; b.mu is held.
func (b *Bus) check(op string, addr, words uint64) error {
	if b.mem == nil {
		return b.setup(fmt.Sprintf("%s 0x%x", op, addr), "open the bus again", fmt.Errorf("%s is closed", b.device))
	}
	if err := drivers.CheckAligned(addr); err != nil {
		return b.setup(fmt.Sprintf("%s 0x%x", op, addr), "registers are 32-bit words at multiples of 4",
			fmt.Errorf("%w (device %s)", err, b.device))
	}
	end := addr + words*4
	if addr >= b.size || words > b.size/4 || end > b.size || end < addr {
		return b.setup(fmt.Sprintf("%s 0x%x", op, addr), "the address is an offset from the design's address 0; check the register map and bus.mmio.size",
			fmt.Errorf("[0x%x, 0x%x) is outside the mapped range [0x0, 0x%x) of %s (device offset 0x%x)", addr, end, b.size, b.device, b.base))
	}
	return nil
}

func (b *Bus) ctxError(op string, addr uint64, err error) error {
	return b.infra(fmt.Sprintf("%s 0x%x", op, addr), "", fmt.Errorf("%s: %w", b.device, err))
}

func (b *Bus) setup(op, hint string, err error) error { return drivers.Setup(b.board, op, hint, err) }
func (b *Bus) infra(op, hint string, err error) error { return drivers.Infra(b.board, op, hint, err) }
