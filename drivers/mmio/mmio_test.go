package mmio

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/labrunner/labrunner/drivers"
)

// tempDevice creates a regular file of n bytes whose word i holds 0xA5000000|i.
func tempDevice(t testing.TB, name string, n int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	data := make([]byte, n)
	for i := 0; i+4 <= n; i += 4 {
		binary.NativeEndian.PutUint32(data[i:], 0xA5000000|uint32(i/4))
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return c
}

func wordAt(t *testing.T, path string, off int) uint32 {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return binary.NativeEndian.Uint32(data[off:])
}

func TestReadSeesFileAndWriteLandsInFile(t *testing.T) {
	dev := tempDevice(t, "regs", 3*4096)
	b, err := Open(dev, 0, 0, Options{Board: "b0"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.Size() != 3*4096 {
		t.Fatalf("size 0 should map the whole file, got 0x%x", b.Size())
	}
	for _, addr := range []uint64{0, 4, 0x1000, 3*4096 - 4} {
		v, err := b.Read32(ctx(t), addr)
		if err != nil {
			t.Fatal(err)
		}
		if want := 0xA5000000 | uint32(addr/4); v != want {
			t.Errorf("read32 0x%x = 0x%08x, want 0x%08x", addr, v, want)
		}
	}
	if err := b.Write32(ctx(t), 0x1004, 0xDEADBEEF); err != nil {
		t.Fatal(err)
	}
	if got := wordAt(t, dev, 0x1004); got != 0xDEADBEEF {
		t.Errorf("file word at 0x1004 = 0x%08x after write32, want 0xdeadbeef", got)
	}
	// A change made through the file shows through the mapping (MAP_SHARED).
	f, err := os.OpenFile(dev, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	var w [4]byte
	binary.NativeEndian.PutUint32(w[:], 0x12345678)
	if _, err := f.WriteAt(w[:], 0x20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if v, err := b.Read32(ctx(t), 0x20); err != nil || v != 0x12345678 {
		t.Errorf("read32 0x20 = 0x%08x, %v after writing the file, want 0x12345678", v, err)
	}
}

func TestBursts(t *testing.T) {
	dev := tempDevice(t, "regs", 4096)
	b, err := Open(dev, 0, 0, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	// Longer than burstCheckEvery so that the periodic context check runs.
	dst := make([]uint32, 200)
	if err := b.ReadBurst(ctx(t), 0x100, dst); err != nil {
		t.Fatal(err)
	}
	for i, v := range dst {
		if want := 0xA5000000 | uint32(0x40+i); v != want {
			t.Fatalf("burst word %d = 0x%08x, want 0x%08x", i, v, want)
		}
	}
	src := make([]uint32, 130)
	for i := range src {
		src[i] = uint32(i * 3)
	}
	if err := b.WriteBurst(ctx(t), 0x800, src); err != nil {
		t.Fatal(err)
	}
	for i := range src {
		if got := wordAt(t, dev, 0x800+4*i); got != uint32(i*3) {
			t.Fatalf("file word %d after burst = %d, want %d", i, got, i*3)
		}
	}
	// A burst ending exactly at the end of the map is fine; one word more is not.
	if err := b.ReadBurst(ctx(t), 4096-16, make([]uint32, 4)); err != nil {
		t.Errorf("burst up to the end of the map refused: %v", err)
	}
	err = b.ReadBurst(ctx(t), 4096-16, make([]uint32, 5))
	if err == nil || !strings.Contains(err.Error(), "outside the mapped range") {
		t.Errorf("burst past the end: err = %v", err)
	}
	if err := b.WriteBurst(ctx(t), 0, make([]uint32, 1025)); err == nil {
		t.Error("write burst larger than the map accepted")
	}
}

func TestRefusals(t *testing.T) {
	dev := tempDevice(t, "regs", 4096)
	b, err := Open(dev, 0, 0x100, Options{Board: "zcu-3"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	cases := []struct {
		name string
		do   func() error
		want string
	}{
		{"read past size", func() error { _, err := b.Read32(ctx(t), 0x100); return err }, "outside the mapped range [0x0, 0x100)"},
		{"write far", func() error { return b.Write32(ctx(t), 1<<40, 1) }, "outside the mapped range"},
		{"wraparound burst", func() error { return b.ReadBurst(ctx(t), 0xFFFFFFFFFFFFFFFC, make([]uint32, 2)) }, "outside"},
		{"misaligned read", func() error { _, err := b.Read32(ctx(t), 0x6); return err }, "not 4-byte aligned"},
		{"misaligned write", func() error { return b.Write32(ctx(t), 0x1, 1) }, "not 4-byte aligned"},
		{"misaligned burst", func() error { return b.WriteBurst(ctx(t), 0x2, []uint32{1}) }, "not 4-byte aligned"},
	}
	for _, c := range cases {
		err := c.do()
		if err == nil {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, c.want) || !strings.Contains(msg, "zcu-3") || !strings.Contains(msg, dev) {
			t.Errorf("%s: error %q should contain %q, the board and the device", c.name, msg, c.want)
		}
		if drivers.ClassOf(err) != drivers.ClassSetup {
			t.Errorf("%s: class %v, want setup", c.name, drivers.ClassOf(err))
		}
	}
	// Nothing was written by the refused writes.
	if got := wordAt(t, dev, 0); got != 0xA5000000 {
		t.Errorf("word 0 changed to 0x%08x by a refused access", got)
	}
}

func TestUnalignedBase(t *testing.T) {
	dev := tempDevice(t, "regs", 3*4096)
	// 0x1234 is not page aligned: the mapping starts at page 0x1000 and the
	// bus keeps the 0x234 delta.
	b, err := Open(dev, 0x1234, 0x100, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	v, err := b.Read32(ctx(t), 0)
	if err != nil {
		t.Fatal(err)
	}
	if want := 0xA5000000 | uint32(0x1234/4); v != want {
		t.Errorf("read32 0 at base 0x1234 = 0x%08x, want 0x%08x", v, want)
	}
	if err := b.Write32(ctx(t), 0xFC, 7); err != nil {
		t.Fatal(err)
	}
	if got := wordAt(t, dev, 0x1234+0xFC); got != 7 {
		t.Errorf("file word at 0x%x = %d, want 7", 0x1234+0xFC, got)
	}
	// A range that crosses a page boundary of the file.
	b2, err := Open(dev, 0xFF8, 0x10, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Close()
	dst := make([]uint32, 4)
	if err := b2.ReadBurst(ctx(t), 0, dst); err != nil {
		t.Fatal(err)
	}
	if dst[0] != 0xA5000000|0x3FE || dst[3] != 0xA5000000|0x401 {
		t.Errorf("burst across a page = %x", dst)
	}
	// Size 0 with a base maps the rest of the file.
	b3, err := Open(dev, 0x2000, 0, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b3.Close()
	if b3.Size() != 0x1000 {
		t.Errorf("size of the rest of the file = 0x%x, want 0x1000", b3.Size())
	}
}

func TestOpenErrors(t *testing.T) {
	dev := tempDevice(t, "regs", 4096)
	cases := []struct {
		name       string
		device     string
		base, size uint64
		opts       Options
		want       string
		class      drivers.Class
	}{
		{"missing", filepath.Join(t.TempDir(), "nope"), 0, 0x100, Options{}, "missing", drivers.ClassInfra},
		{"beyond file", dev, 0, 0x2000, Options{}, "beyond the end", drivers.ClassSetup},
		{"base beyond file", dev, 0x2000, 0, Options{}, "beyond the end", drivers.ClassSetup},
		{"range beyond file", dev, 0xF00, 0x200, Options{}, "beyond the end", drivers.ClassSetup},
		{"misaligned base", dev, 0x2, 0x10, Options{}, "not 4-byte aligned", drivers.ClassSetup},
		{"odd size", dev, 0, 0x13, Options{}, "whole number", drivers.ClassSetup},
		{"map index on a file", dev, 0, 0, Options{UIOMap: 1}, "not a uio device", drivers.ClassSetup},
		{"nothing left", dev, 0x1000, 0, Options{}, "no size", drivers.ClassSetup},
	}
	for _, c := range cases {
		b, err := Open(c.device, c.base, c.size, c.opts)
		if err == nil {
			b.Close()
			t.Errorf("%s: Open succeeded", c.name)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %q does not say %q", c.name, err, c.want)
		}
		if got := drivers.ClassOf(err); got != c.class {
			t.Errorf("%s: class %v, want %v (%v)", c.name, got, c.class, err)
		}
	}
	// /dev/mem needs a size, before anything is opened.
	if _, err := Open("/dev/mem", 0xA0000000, 0, Options{}); err == nil || !strings.Contains(err.Error(), "explicit size") {
		t.Errorf("/dev/mem without size: %v", err)
	}
}

func TestPermissionHint(t *testing.T) {
	b := &Bus{board: "b", device: "/dev/uio0", kind: "uio"}
	err := b.openError(&os.PathError{Op: "open", Path: "/dev/uio0", Err: os.ErrPermission})
	if !strings.Contains(err.Error(), "run as root or use the uio driver") || !errors.Is(err, os.ErrPermission) {
		t.Errorf("permission error %q lacks the hint or the cause", err)
	}
	// The lab file is right and the host does not let the user in.
	if drivers.ClassOf(err) != drivers.ClassInfra {
		t.Errorf("class %v", drivers.ClassOf(err))
	}
}

// fakeUIO builds a device file with three 4 KiB maps and a sysfs tree that
// describes map 1 as 0x800 bytes starting 0x100 into its page.
func fakeUIO(t *testing.T) (dev, sysfs string) {
	dir := t.TempDir()
	dev = filepath.Join(dir, "uio7")
	data := make([]byte, 3*4096)
	for i := 0; i < len(data); i += 4 {
		binary.NativeEndian.PutUint32(data[i:], uint32(i))
	}
	if err := os.WriteFile(dev, data, 0o600); err != nil {
		t.Fatal(err)
	}
	sysfs = filepath.Join(dir, "sys")
	m1 := filepath.Join(sysfs, "class", "uio", "uio7", "maps", "map1")
	if err := os.MkdirAll(m1, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(m1, "size"), []byte("0x00000800\n"), 0o644)
	os.WriteFile(filepath.Join(m1, "offset"), []byte("0x100\n"), 0o644)
	return dev, sysfs
}

func TestUIOMap(t *testing.T) {
	dev, sysfs := fakeUIO(t)
	for _, c := range []struct {
		device string
		opts   Options
	}{
		{dev + ":map1", Options{SysfsRoot: sysfs}},
		{dev, Options{SysfsRoot: sysfs, UIOMap: 1}},
	} {
		b, err := Open(c.device, 0x10, 0, c.opts)
		if err != nil {
			t.Fatalf("%s: %v", c.device, err)
		}
		if b.Size() != 0x800-0x10 {
			t.Errorf("%s: size 0x%x, want the rest of the map 0x7f0", c.device, b.Size())
		}
		// Map 1 starts at file offset 4096 (mmap offset 1*pagesize), plus
		// the in-page offset 0x100, plus base 0x10.
		v, err := b.Read32(ctx(t), 0)
		if err != nil {
			t.Fatal(err)
		}
		if want := uint32(4096 + 0x100 + 0x10); v != want {
			t.Errorf("%s: read32 0 = 0x%x, want 0x%x", c.device, v, want)
		}
		if _, err := b.Read32(ctx(t), 0x7F0); err == nil {
			t.Errorf("%s: read past the map accepted", c.device)
		}
		b.Close()
	}
	if _, err := Open(dev+":map1", 0, 0x1000, Options{SysfsRoot: sysfs}); err == nil || !strings.Contains(err.Error(), "beyond uio map 1") {
		t.Errorf("size beyond the uio map: %v", err)
	}
	if _, err := Open(dev+":map2", 0, 0, Options{SysfsRoot: sysfs}); err == nil || !strings.Contains(err.Error(), "uio map 2") {
		t.Errorf("map without sysfs entry: %v", err)
	}
	if _, err := Open(dev+":map1", 0, 0, Options{SysfsRoot: sysfs, UIOMap: 2}); err == nil || !strings.Contains(err.Error(), "names map 1") {
		t.Errorf("conflicting map index: %v", err)
	}
}

func TestContextAndClose(t *testing.T) {
	dev := tempDevice(t, "regs", 4096)
	b, err := Open(dev, 0, 0, Options{Board: "b"})
	if err != nil {
		t.Fatal(err)
	}
	c, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := b.Read32(c, 0); !errors.Is(err, context.Canceled) || drivers.ClassOf(err) != drivers.ClassInfra {
		t.Errorf("read with a cancelled context: %v (class %v)", err, drivers.ClassOf(err))
	}
	if err := b.WriteBurst(c, 0, []uint32{1}); !errors.Is(err, context.Canceled) {
		t.Errorf("burst with a cancelled context: %v", err)
	}
	if got := wordAt(t, dev, 0); got != 0xA5000000 {
		t.Errorf("a write with a cancelled context landed: 0x%x", got)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := b.Read32(ctx(t), 0); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("read after Close: %v", err)
	}
}

func TestConcurrentAccessAndClose(t *testing.T) {
	dev := tempDevice(t, "regs", 4096)
	b, err := Open(dev, 0, 0, Options{})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	for g := 0; g < 4; g++ {
		go func(g int) {
			defer func() { done <- struct{}{} }()
			for i := 0; ; i++ {
				addr := uint64(g*256 + (i%64)*4)
				if err := b.Write32(context.Background(), addr, uint32(i)); err != nil {
					return // closed
				}
				if _, err := b.Read32(context.Background(), addr); err != nil {
					return
				}
			}
		}(g)
	}
	time.Sleep(20 * time.Millisecond)
	b.Close()
	for g := 0; g < 4; g++ {
		<-done
	}
}

func BenchmarkRead32(b *testing.B) {
	dev := tempDevice(b, "regs", 4096)
	bus, err := Open(dev, 0, 0, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer bus.Close()
	c := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := bus.Read32(c, uint64(i&1023)*4); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReadBurst256(b *testing.B) {
	dev := tempDevice(b, "regs", 4096)
	bus, err := Open(dev, 0, 0, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer bus.Close()
	dst := make([]uint32, 256)
	c := context.Background()
	b.SetBytes(int64(len(dst) * 4))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := bus.ReadBurst(c, 0, dst); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzAccess throws arbitrary addresses and burst lengths at a small mapping:
// the bus must accept exactly the aligned in-range accesses and never fault.
func FuzzAccess(f *testing.F) {
	f.Add(uint64(0), uint16(1), false)
	f.Add(uint64(0xFC), uint16(1), true)
	f.Add(uint64(0x100), uint16(0), false)
	f.Add(uint64(0xFFFFFFFFFFFFFFFC), uint16(2), true)
	f.Add(uint64(3), uint16(3), false)
	dev := tempDevice(f, "regs", 4096)
	bus, err := Open(dev, 0x40, 0x100, Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { bus.Close() })
	f.Fuzz(func(t *testing.T, addr uint64, n uint16, write bool) {
		buf := make([]uint32, n%130)
		var err error
		if write {
			err = bus.WriteBurst(context.Background(), addr, buf)
		} else {
			err = bus.ReadBurst(context.Background(), addr, buf)
		}
		words := uint64(len(buf))
		ok := addr%4 == 0 && addr < 0x100 && words <= (0x100-addr)/4
		if ok != (err == nil) {
			t.Fatalf("burst of %d words at 0x%x: err = %v, want ok = %v", words, addr, err, ok)
		}
	})
}

// TestDevMemMissing: a kernel without /dev/mem (CONFIG_DEVMEM off, or a
// container) is infrastructure, and the hint says to use uio.
func TestDevMemMissing(t *testing.T) {
	old := devMemPath
	devMemPath = filepath.Join(t.TempDir(), "no-mem")
	defer func() { devMemPath = old }()
	_, err := Open("/dev/mem", 0xA0000000, 0x1000, Options{Board: "zu-1"})
	if err == nil {
		t.Fatal("opened a /dev/mem that is not there")
	}
	if drivers.ClassOf(err) != drivers.ClassInfra || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("class %v: %v", drivers.ClassOf(err), err)
	}
	for _, want := range []string{"zu-1", "/dev/mem is missing", "uio"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}
