package regmap

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/drivers"
)

// fakeBus is an in-memory register file that models read side effects:
// reading an rc address clears it, reading a pop address pops its FIFO. It
// records every access, so tests can prove what was (not) touched.
type fakeBus struct {
	mu     sync.Mutex
	mem    map[uint64]uint32
	rc     map[uint64]bool
	fifo   map[uint64][]uint32
	reads  []uint64
	writes []uint64
	fail   error
}

func newFakeBus() *fakeBus {
	return &fakeBus{mem: map[uint64]uint32{}, rc: map[uint64]bool{}, fifo: map[uint64][]uint32{}}
}

func (b *fakeBus) read(addr uint64) uint32 {
	b.reads = append(b.reads, addr)
	if q, ok := b.fifo[addr]; ok {
		if len(q) == 0 {
			return 0
		}
		b.fifo[addr] = q[1:]
		return q[0]
	}
	v := b.mem[addr]
	if b.rc[addr] {
		b.mem[addr] = 0
	}
	return v
}

func (b *fakeBus) Read32(ctx context.Context, addr uint64) (uint32, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.fail != nil {
		return 0, b.fail
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	return b.read(addr), nil
}

func (b *fakeBus) Write32(ctx context.Context, addr uint64, v uint32) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.fail != nil {
		return b.fail
	}
	b.writes = append(b.writes, addr)
	b.mem[addr] = v
	return nil
}

func (b *fakeBus) ReadBurst(ctx context.Context, addr uint64, dst []uint32) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i := range dst {
		dst[i] = b.read(addr + uint64(i)*4)
	}
	return nil
}

func (b *fakeBus) WriteBurst(ctx context.Context, addr uint64, src []uint32) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, v := range src {
		b.writes = append(b.writes, addr+uint64(i)*4)
		b.mem[addr+uint64(i)*4] = v
	}
	return nil
}

func (b *fakeBus) Close() error { return nil }

func (b *fakeBus) touched(addr uint64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, a := range b.reads {
		if a == addr {
			return true
		}
	}
	return false
}

func testManifest() *bitstreams.Manifest {
	return &bitstreams.Manifest{
		Name: "toy", Version: "0.1.0", Source: "toy.yaml",
		Windows: []bitstreams.Window{
			{Name: "ctrl", Base: 0, Size: 0x100, Access: bitstreams.RW},
			{Name: "rom", Base: 0x100, Size: 0x100, Access: bitstreams.RO},
			{Name: "rxfifo", Base: 0x400, Size: 0x100, Access: bitstreams.Pop},
		},
		Registers: []bitstreams.Register{
			{Name: "ID", Offset: 0x0, Width: 32, Access: bitstreams.RO, Line: 10},
			{Name: "SCRATCH", Offset: 0x4, Width: 32, Access: bitstreams.RW, Line: 11},
			{Name: "CTRL", Offset: 0x8, Width: 12, Access: bitstreams.RW, Line: 12, Fields: []bitstreams.Field{
				{Name: "ENABLE", Bits: "0"}, {Name: "MODE", Bits: "3:1"}, {Name: "DIV", Bits: "11:4"},
			}},
			{Name: "CMD", Offset: 0xC, Width: 3, Access: bitstreams.WO, Line: 13, Fields: []bitstreams.Field{
				{Name: "START", Bits: "0"}, {Name: "CLEAR", Bits: "2"},
			}},
			{Name: "IRQ", Offset: 0x10, Width: 4, Access: bitstreams.W1C, Fields: []bitstreams.Field{
				{Name: "DONE", Bits: "0"}, {Name: "ERR", Bits: "1"},
			}},
			{Name: "ERRS", Offset: 0x14, Width: 32, Access: bitstreams.RC, Counter: &bitstreams.Counter{Unit: "errors", Rollover: "saturate"}},
			{Name: "T_LO", Offset: 0x18, Width: 32, Access: bitstreams.RO, Counter: &bitstreams.Counter{Unit: "cycles", Rollover: "wrap", Hi: "T_HI"}},
			{Name: "T_HI", Offset: 0x1C, Width: 32, Access: bitstreams.RO},
			{Name: "LANE", Offset: 0x20, Count: 4, Stride: 0x10, Width: 8, Access: bitstreams.RW, Fields: []bitstreams.Field{
				{Name: "UP", Bits: "0"}, {Name: "SPEED", Bits: "7:4"},
			}},
			{Name: "LANE_PKTS", Offset: 0x24, Count: 4, Stride: 0x10, Width: 16, Access: bitstreams.RO, Counter: &bitstreams.Counter{Unit: "packets", Rollover: "wrap"}},
			{Name: "VERSION", Offset: 0x100, Width: 32, Access: bitstreams.RO},
			{Name: "RX", Offset: 0x400, Width: 32, Access: bitstreams.Pop},
			{Name: "TX", Offset: 0x80, Width: 32, Access: bitstreams.WO},
		},
	}
}

func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return c
}

func TestLookup(t *testing.T) {
	r := New(newFakeBus(), testManifest(), "b0")
	cases := []struct {
		name   string
		canon  string
		addr   uint64
		lo, hi uint
	}{
		{"ID", "ID", 0, 0, 31},
		{" CTRL ", "CTRL", 8, 0, 11},
		{"CTRL.MODE", "CTRL.MODE", 8, 1, 3},
		{"LANE[2]", "LANE[2]", 0x40, 0, 7},
		{"LANE[3].SPEED", "LANE[3].SPEED", 0x50, 4, 7},
		{"ID[0]", "ID", 0, 0, 31},
	}
	for _, c := range cases {
		loc, err := r.Lookup(c.name)
		if err != nil {
			t.Errorf("%q: %v", c.name, err)
			continue
		}
		if loc.Name != c.canon || loc.Addr != c.addr || loc.Lo != c.lo || loc.Hi != c.hi {
			t.Errorf("%q resolved to %+v", c.name, loc)
		}
	}
	bad := []struct{ name, want string }{
		{"SCRTACH", "did you mean SCRATCH"},
		{"scratch", "did you mean SCRATCH"},
		{"LANE", "LANE[0] .. LANE[3]"},
		{"LANE[4]", "index 4 is beyond LANE"},
		{"ID[1]", "not an array"},
		{"CTRL.MOD", "did you mean MODE"},
		{"ID.X", "ID has no fields"},
		{"CTRL.", "expected a field name"},
		{"LANE[x]", "decimal number"},
		{"9LIVES", "expected a register name"},
		{"CTRL.MODE.X", "unexpected"},
		{"NOTHING_LIKE_IT", "design toy 0.1.0 has no register NOTHING_LIKE_IT"},
	}
	for _, c := range bad {
		_, err := r.Lookup(c.name)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want it to say %q", c.name, err, c.want)
			continue
		}
		if drivers.ClassOf(err) != drivers.ClassSetup || !strings.Contains(err.Error(), "b0") {
			t.Errorf("%q: %v is not a setup error naming the board", c.name, err)
		}
	}
}

func TestReadWrite(t *testing.T) {
	bus := newFakeBus()
	r := New(bus, testManifest(), "b0")
	bus.mem[0] = 0xC0FFEE
	if v, err := r.Read(ctx(t), "ID"); err != nil || v != 0xC0FFEE {
		t.Fatalf("ID = 0x%x, %v", v, err)
	}
	if err := r.Write(ctx(t), "SCRATCH", 0xA5A5A5A5); err != nil || bus.mem[4] != 0xA5A5A5A5 {
		t.Fatalf("write SCRATCH: %v (mem 0x%x)", err, bus.mem[4])
	}
	// Read-modify-write of a field keeps the others.
	bus.mem[8] = 0xAB1 // DIV=0xAB MODE=0 ENABLE=1
	if err := r.WriteField(ctx(t), "CTRL", "MODE", 5); err != nil {
		t.Fatal(err)
	}
	if bus.mem[8] != 0xABB {
		t.Errorf("CTRL after MODE=5: 0x%x, want 0xabb", bus.mem[8])
	}
	if v, err := r.ReadField(ctx(t), "CTRL", "DIV"); err != nil || v != 0xAB {
		t.Errorf("CTRL.DIV = 0x%x, %v", v, err)
	}
	if err := r.Write(ctx(t), "LANE[1].SPEED", 0xF); err != nil || bus.mem[0x30] != 0xF0 {
		t.Errorf("LANE[1].SPEED: %v, mem 0x%x", err, bus.mem[0x30])
	}
	// w1c: only the field's bits are written.
	bus.mem[0x10] = 0x3
	if err := r.WriteField(ctx(t), "IRQ", "ERR", 1); err != nil || bus.mem[0x10] != 0x2 {
		t.Errorf("IRQ.ERR w1c: %v, wrote 0x%x, want 0x2", err, bus.mem[0x10])
	}
	// Compose + Write for a write-only command register.
	v, err := r.Compose("CMD", map[string]uint32{"START": 1, "CLEAR": 1})
	if err != nil || v != 0x5 {
		t.Fatalf("Compose = 0x%x, %v", v, err)
	}
	if err := r.Write(ctx(t), "CMD", v); err != nil || bus.mem[0xC] != 5 {
		t.Errorf("write CMD: %v", err)
	}

	writesBefore := len(bus.writes)
	refused := []struct {
		do   func() error
		want string
	}{
		{func() error { return r.Write(ctx(t), "ID", 1) }, "ID is read-only (ro)"},
		{func() error { return r.Write(ctx(t), "CTRL", 0x1000) }, "does not fit CTRL, 12 bits wide"},
		{func() error { return r.WriteField(ctx(t), "CTRL", "MODE", 8) }, "does not fit CTRL.MODE, 3 bits wide"},
		{func() error { return r.WriteField(ctx(t), "CMD", "START", 1) }, "write-only: a read-modify-write"},
		{func() error { return r.WriteField(ctx(t), "ID.X", "Y", 1) }, "already names a field"},
		{func() error { _, err := r.Read(ctx(t), "CMD"); return err }, "CMD is write-only"},
		{func() error { _, err := r.ReadField(ctx(t), "CMD", "START"); return err }, "CMD is write-only"},
		{func() error { return r.Write(ctx(t), "VERSION", 1) }, "read-only"},
		{func() error { _, err := r.Compose("CMD", map[string]uint32{"START": 2}); return err }, "does not fit"},
		{func() error { _, err := r.Compose("CMD", map[string]uint32{"STRAT": 1}); return err }, "did you mean START"},
	}
	for i, c := range refused {
		err := c.do()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("case %d: %v, want %q", i, err, c.want)
		} else if drivers.ClassOf(err) != drivers.ClassSetup {
			t.Errorf("case %d: class %v", i, drivers.ClassOf(err))
		}
	}
	if len(bus.writes) != writesBefore {
		t.Errorf("refused writes reached the bus: %x", bus.writes[writesBefore:])
	}
}

func TestRawAccessAndWindows(t *testing.T) {
	bus := newFakeBus()
	r := New(bus, testManifest(), "b0")
	bus.mem[0x40] = 7
	if v, err := r.ReadAddr(ctx(t), 0x40); err != nil || v != 7 {
		t.Errorf("ReadAddr 0x40 = %d, %v", v, err)
	}
	if err := r.WriteAddr(ctx(t), 0x48, 9); err != nil || bus.mem[0x48] != 9 {
		t.Errorf("WriteAddr: %v", err)
	}
	if err := r.WriteBurst(ctx(t), 0x80, []uint32{1, 2, 3}); err != nil {
		t.Errorf("burst into the ctrl window: %v", err)
	}
	bus.fifo[0x400] = []uint32{11, 22}
	dst := make([]uint32, 2)
	if err := r.ReadBurst(ctx(t), 0x3F8, dst); err == nil {
		t.Error("burst from an unmapped gap accepted")
	}
	if err := r.ReadBurst(ctx(t), 0x400, dst); err != nil || dst[0] != 11 {
		t.Errorf("burst from the FIFO window: %v %v", dst, err)
	}
	if err := r.ReadBurst(ctx(t), 0xF8, make([]uint32, 4)); err != nil {
		t.Errorf("burst across the ctrl and rom windows: %v", err)
	}
	writes := len(bus.writes)
	reads := len(bus.reads)
	refused := []struct {
		do   func() error
		want string
	}{
		{func() error { _, err := r.ReadAddr(ctx(t), 0x200); return err }, "outside every window"},
		{func() error { _, err := r.ReadAddr(ctx(t), 0x6); return err }, "not 4-byte aligned"},
		{func() error { return r.WriteAddr(ctx(t), 0x104, 1) }, "window rom [0x100, 0x200) does not take writes"},
		{func() error { return r.WriteAddr(ctx(t), 0x400, 1) }, "window rxfifo"},
		{func() error { return r.WriteAddr(ctx(t), 0x0, 1) }, "ID is read-only"},
		{func() error { return r.WriteAddr(ctx(t), 0x44, 1) }, "LANE_PKTS[2] is read-only"},
		{func() error { _, err := r.ReadAddr(ctx(t), 0xC); return err }, "CMD is write-only"},
		{func() error { return r.ReadBurst(ctx(t), 0x78, make([]uint32, 4)) }, "TX is write-only"},
		{func() error { return r.WriteBurst(ctx(t), 0xF8, make([]uint32, 4)) }, "does not take writes"},
		{func() error { return r.WriteBurst(ctx(t), 0xFFFFFFFFFFFFFFF8, make([]uint32, 4)) }, "past the end"},
		{func() error { return r.ReadBurst(ctx(t), 0x4F8, make([]uint32, 4)) }, "outside every window"},
	}
	for i, c := range refused {
		err := c.do()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("case %d: %v, want %q", i, err, c.want)
		}
	}
	if len(bus.writes) != writes || len(bus.reads) != reads {
		t.Errorf("refused accesses reached the bus")
	}
	// The window list is in the hint.
	_, err := r.ReadAddr(ctx(t), 0x200)
	if !strings.Contains(err.Error(), "rom [0x100, 0x200) ro") {
		t.Errorf("hint lacks the windows: %v", err)
	}
}

func TestRead64AndCounters(t *testing.T) {
	bus := newFakeBus()
	r := New(bus, testManifest(), "b0")
	bus.mem[0x18] = 0x89ABCDEF
	bus.mem[0x1C] = 0x01234567
	v, err := r.Read64(ctx(t), "T_LO")
	if err != nil || v != 0x0123456789ABCDEF {
		t.Fatalf("Read64 = 0x%x, %v", v, err)
	}
	if n := len(bus.reads); n < 2 || bus.reads[n-2] != 0x18 || bus.reads[n-1] != 0x1C {
		t.Errorf("Read64 must read LO then HI, read %x", bus.reads)
	}
	if _, err := r.Read64(ctx(t), "SCRATCH"); err == nil || !strings.Contains(err.Error(), "not the low half") {
		t.Errorf("Read64 of a plain register: %v", err)
	}

	c, err := r.Counter("LANE_PKTS[2]")
	if err != nil || c.Width != 16 || c.Unit != "packets" {
		t.Fatalf("counter %+v, %v", c, err)
	}
	if d, err := c.Delta(0xFFF0, 0x0010); err != nil || d != 0x20 {
		t.Errorf("16-bit wrap delta = %d, %v", d, err)
	}
	wide, _ := r.Counter("T_LO")
	if wide.Width != 64 {
		t.Errorf("T_LO width %d", wide.Width)
	}
	if d, err := wide.Delta(^uint64(0)-1, 3); err != nil || d != 5 {
		t.Errorf("64-bit wrap delta = %d, %v", d, err)
	}
	sat, _ := r.Counter("ERRS")
	if d, err := sat.Delta(10, 15); err != nil || d != 5 {
		t.Errorf("saturating delta = %d, %v", d, err)
	}
	if d, err := sat.Delta(10, 0xFFFFFFFF); !errors.Is(err, ErrSaturated) || d != 0xFFFFFFFF-10 {
		t.Errorf("saturated: %d, %v", d, err)
	}
	if _, err := sat.Delta(10, 5); err == nil || !strings.Contains(err.Error(), "cleared") {
		t.Errorf("saturating counter going back: %v", err)
	}
	if !sat.Saturated(0xFFFFFFFF) || sat.Saturated(1) || wide.Saturated(^uint64(0)) {
		t.Error("Saturated")
	}
	if _, err := c.Delta(0, 1<<16); err == nil {
		t.Error("a reading wider than the counter accepted")
	}
	if _, err := r.Counter("SCRATCH"); err == nil {
		t.Error("SCRATCH is not a counter")
	}
	last := Counter{Name: "X", Counter: bitstreams.Counter{Accumulation: "last"}, Width: 32}
	if _, err := last.Delta(1, 2); err == nil {
		t.Error("delta of a last-value counter")
	}
}

func TestDeltaFunctions(t *testing.T) {
	cases := []struct {
		prev, cur uint32
		width     int
		want      uint64
	}{
		{5, 9, 32, 4},
		{0xFFFFFFFE, 1, 32, 3},
		{0xFFFFFFFF, 0xFFFFFFFF, 32, 0},
		{250, 4, 8, 10},
		{0, 0xFF, 8, 0xFF},
		{0x3FF, 0, 10, 1},
		{7, 3, 0, 0xFFFFFFFC}, // width out of range: 32
	}
	for _, c := range cases {
		if got := Delta(c.prev, c.cur, c.width); got != c.want {
			t.Errorf("Delta(%d, %d, %d) = %d, want %d", c.prev, c.cur, c.width, got, c.want)
		}
	}
	if !Saturated(0xFFFF, 16) || Saturated(0xFFFE, 16) || !Saturated(0xFFFFFFFF, 32) || !Saturated(1, 1) {
		t.Error("Saturated")
	}
}

func TestDumpNeverDisturbs(t *testing.T) {
	bus := newFakeBus()
	m := testManifest()
	r := New(bus, m, "b0")
	bus.mem[0x8] = 0xAB3
	bus.mem[0x14] = 42 // rc: a read would clear it
	bus.rc[0x14] = true
	bus.fifo[0x400] = []uint32{1, 2, 3}
	vals, err := r.Dump(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if bus.touched(0x14) || bus.touched(0x400) || bus.touched(0xC) || bus.touched(0x80) {
		t.Errorf("Dump read a register it must not: %x", bus.reads)
	}
	if bus.mem[0x14] != 42 || len(bus.fifo[0x400]) != 3 {
		t.Error("Dump disturbed the hardware")
	}
	byName := map[string]Value{}
	for _, v := range vals {
		byName[v.Name] = v
	}
	// 13 registers, two arrays of 4: 19 entries.
	if len(vals) != 19 {
		t.Errorf("dump has %d entries, want 19", len(vals))
	}
	ctrl := byName["CTRL"]
	if ctrl.Value != 0xAB3 || len(ctrl.Fields) != 3 || ctrl.Fields[1] != (FieldValue{"MODE", "3:1", 1}) || ctrl.Fields[2].Value != 0xAB {
		t.Errorf("CTRL in dump: %+v", ctrl)
	}
	for name, want := range map[string]string{"ERRS": "read side effect (rc)", "RX": "read side effect (pop)", "CMD": "write-only", "TX": "write-only"} {
		if !strings.Contains(byName[name].Skipped, want) {
			t.Errorf("%s skipped as %q, want %q", name, byName[name].Skipped, want)
		}
	}
	if _, ok := byName["LANE[3]"]; !ok || byName["LANE[3]"].Addr != 0x50 {
		t.Errorf("LANE[3] in dump: %+v", byName["LANE[3]"])
	}
	// A dead bus ends the dump with what was read.
	bus.fail = drivers.Infra("b0", "read32", "", drivers.ErrTimeout)
	vals, err = r.Dump(ctx(t))
	if err == nil || drivers.ClassOf(err) != drivers.ClassInfra || len(vals) != 0 {
		t.Errorf("dump of a dead bus: %d values, %v", len(vals), err)
	}
}

func TestCheck(t *testing.T) {
	if err := New(newFakeBus(), testManifest(), "b").Check(); err != nil {
		t.Errorf("the toy map has problems: %v", err)
	}
	m := testManifest()
	m.Registers = append(m.Registers,
		bitstreams.Register{Name: "ID", Offset: 0x30, Access: bitstreams.RO, Line: 40},
		bitstreams.Register{Name: "BAD", Offset: 0x34, Width: 8, Access: "rwx", Line: 41, Fields: []bitstreams.Field{
			{Name: "A", Bits: "9:8"}, {Name: "B", Bits: "3:0"}, {Name: "C", Bits: "2"}, {Name: "D", Bits: "1:3"},
		}},
		bitstreams.Register{Name: "ARR", Offset: 0x38, Count: 2, Access: bitstreams.RO, Line: 42},
		bitstreams.Register{Name: "FAR", Offset: 0x300, Access: bitstreams.RO, Line: 43},
		bitstreams.Register{Name: "C_LO", Offset: 0x3C, Access: bitstreams.RO, Line: 44, Counter: &bitstreams.Counter{Hi: "C_HIGH"}},
	)
	err := New(newFakeBus(), m, "b").Check()
	if err == nil {
		t.Fatal("no problems found")
	}
	for _, want := range []string{
		"toy.yaml:40: register ID: declared twice",
		`toy.yaml:41: register BAD: access "rwx"`,
		"field BAD.A: bits 9:8 do not fit the register's 8 bits",
		"field C overlaps",
		"write the high bit first",
		"toy.yaml:42: register ARR: array of 2 with stride 0x0",
		"toy.yaml:43: register FAR: address 0x300 is outside every window",
		"counter.hi names C_HIGH",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Check does not report %q:\n%v", want, err)
		}
	}
	r := New(newFakeBus(), m, "b")
	if _, err := r.Lookup("BAD.A"); err == nil || !strings.Contains(err.Error(), "toy.yaml:41") {
		t.Errorf("a field with bad bits: %v", err)
	}
	if _, err := r.Lookup("ARR[1]"); err == nil || !strings.Contains(err.Error(), "stride") {
		t.Errorf("an array without stride: %v", err)
	}
}

// loadExanet parses the catalogue's ExaNet manifest directly with yaml.v3
// (the catalogue loader is written elsewhere), with register lines.
func loadExanet(t testing.TB) *bitstreams.Manifest {
	t.Helper()
	const path = "../../bitstreams/catalogue/exanet.yaml"
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m bitstreams.Manifest
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	root := doc.Content[0]
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == "registers" {
			for k, n := range root.Content[i+1].Content {
				m.Registers[k].Line = n.Line
			}
		}
	}
	m.Source = "exanet.yaml"
	return &m
}

func TestExanetManifest(t *testing.T) {
	m := loadExanet(t)
	bus := newFakeBus()
	r := New(bus, m, "tebf-1")
	if err := r.Check(); err != nil {
		t.Errorf("exanet.yaml: %v", err)
	}
	bus.mem[0] = m.ID
	if v, err := r.Read(ctx(t), "ID"); err != nil || v != 0x45584E54 {
		t.Errorf("ID = 0x%x, %v", v, err)
	}
	bus.mem[0x10] = 0x00080223
	want := map[string]uint32{"INTRA_PORTS": 3, "LINK_PORTS": 2, "VCS": 2, "DATAPATH_BITS": 128}
	for f, w := range want {
		if v, err := r.ReadField(ctx(t), "CAPS", f); err != nil || v != w {
			t.Errorf("CAPS.%s = %d, %v; want %d", f, v, err, w)
		}
	}
	if err := r.WriteField(ctx(t), "LINK_CTRL[1]", "LOOPBACK", 1); err != nil || bus.mem[0x244] != 2 {
		t.Errorf("LINK_CTRL[1].LOOPBACK: %v, mem 0x%x", err, bus.mem[0x244])
	}
	if loc, err := r.Lookup("PORT_RX_DATA[2]"); err != nil || loc.Addr != 0x3800 {
		t.Errorf("PORT_RX_DATA[2] at 0x%x, %v", loc.Addr, err)
	}
	bus.mem[0x61C], bus.mem[0x620] = 5, 1
	if v, err := r.Read64(ctx(t), "PP_RTT_SUM_LO"); err != nil || v != 1<<32|5 {
		t.Errorf("PP_RTT_SUM = 0x%x, %v", v, err)
	}
	_, err := r.Read(ctx(t), "LINK_STATUSS[0]")
	if err == nil || !strings.Contains(err.Error(), "did you mean LINK_STATUS") {
		t.Errorf("typo: %v", err)
	}
	// The payload FIFO window takes a burst of pushes.
	if err := r.WriteBurst(ctx(t), 0x1400, make([]uint32, 256)); err != nil {
		t.Errorf("payload burst: %v", err)
	}
	if _, err := r.Read(ctx(t), "TG_CTRL"); err == nil {
		t.Error("TG_CTRL is write-only")
	}
	start, err := r.Compose("TG_CTRL", map[string]uint32{"START": 1})
	if err != nil || r.Write(ctx(t), "TG_CTRL", start) != nil || bus.mem[0x400] != 1 {
		t.Errorf("start the traffic generator: %v", err)
	}

	vals, err := r.Dump(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	skipped := map[string]bool{}
	for _, v := range vals {
		if v.Skipped != "" {
			skipped[v.Name] = true
		}
	}
	for _, name := range []string{"LINK_CRC_ERRORS[0]", "LINK_CRC_ERRORS[1]", "LINK_ECC_CORRECTED[1]", "PP_SAMPLES", "TRACE_DATA", "PORT_RX_HDR[0]", "PORT_RX_DATA[2]", "TG_CTRL", "PP_CTRL", "PORT_TX_DATA[1]"} {
		if !skipped[name] {
			t.Errorf("Dump did not skip %s", name)
		}
	}
	for _, name := range []string{"ID", "CAPS", "LINK_STATUS[1]", "CYCLE_LO", "PORT_TX_STATUS[2]"} {
		if skipped[name] {
			t.Errorf("Dump skipped %s", name)
		}
	}
	for _, a := range []uint64{0x224, 0x264, 0x628, 0x708, 0x1020, 0x1800, 0x3800} {
		if bus.touched(a) {
			t.Errorf("Dump read 0x%x, which has a read side effect", a)
		}
	}
}

// FuzzLookup: any name resolves or fails cleanly; what resolves is stable
// under its canonical name, inside the register, and inside a window.
func FuzzLookup(f *testing.F) {
	for _, s := range []string{"ID", "CTRL.MODE", "LANE[3].SPEED", "LANE[4]", "X[", "A.B.C", "LANE[99999999999999999999]", " CMD ", "ID[0]"} {
		f.Add(s)
	}
	r := New(newFakeBus(), testManifest(), "b")
	f.Fuzz(func(t *testing.T, name string) {
		loc, err := r.Lookup(name)
		if err != nil {
			return
		}
		again, err := r.Lookup(loc.Name)
		if err != nil || again.Addr != loc.Addr || again.Name != loc.Name || again.Lo != loc.Lo || again.Hi != loc.Hi {
			t.Fatalf("%q resolved to %+v, its canonical name %q to %+v, %v", name, loc, loc.Name, again, err)
		}
		if loc.Hi < loc.Lo || loc.Hi >= uint(regWidth(loc.Reg)) || loc.Addr%4 != 0 || r.window(loc.Addr) == nil {
			t.Fatalf("%q resolved to %+v", name, loc)
		}
	})
}

// FuzzParseBits: a field range parses to 0 <= lo <= hi <= 31, and a parsed
// range prints back to an equivalent string.
func FuzzParseBits(f *testing.F) {
	for _, s := range []string{"3:0", "0", "31:31", "32", "1:3", ":", "7:", " 5 : 2 ", "-1", "+1", "00:0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		lo, hi, err := parseBits(s)
		if err != nil {
			return
		}
		if lo > hi || hi > 31 {
			t.Fatalf("%q parsed to %d:%d", s, hi, lo)
		}
		lo2, hi2, err := parseBits(fmt.Sprintf("%d:%d", hi, lo))
		if err != nil || lo2 != lo || hi2 != hi {
			t.Fatalf("%q -> %d:%d does not round-trip", s, hi, lo)
		}
	})
}

func BenchmarkReadField(b *testing.B) {
	bus := newFakeBus()
	r := New(bus, testManifest(), "b")
	c := context.Background()
	for i := 0; i < b.N; i++ {
		if _, err := r.ReadField(c, "LANE[2]", "SPEED"); err != nil {
			b.Fatal(err)
		}
		bus.reads = bus.reads[:0]
	}
}
