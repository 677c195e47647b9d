package prr

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/boards/emu"
)

// elements lists every register element of the manifest with its address.
func elements(m *bitstreams.Manifest) []bitstreams.Element { return m.Elements() }

// TestResetValues reads every register element of a freshly programmed
// board: each reads its manifest reset value (write-only ones read 0).
func TestResetValues(t *testing.T) {
	g := newRig(t, rigOpts{})
	for _, e := range elements(g.M) {
		v, err := g.bus.Read32(g.Ctx, e.Addr)
		if err != nil {
			t.Errorf("read %s at 0x%x: %v", e.Name, e.Addr, err)
			continue
		}
		want := e.Reg.Reset
		if !e.Reg.Access.Readable() {
			want = 0
		}
		if v != want {
			t.Errorf("%s at 0x%x reads 0x%x after programming, the manifest's reset is 0x%x", e.Name, e.Addr, v, want)
		}
	}
}

// TestAccessRules checks every element against its manifest access: rw
// registers keep what is written (masked to their width; per-port elements
// at or above PORTS ignore writes), ro and pop registers refuse writes,
// write-only registers read 0.
func TestAccessRules(t *testing.T) {
	g := newRig(t, rigOpts{})
	commands := map[string]bool{"CTRL": true, "TG_CTRL": true}
	for _, e := range elements(g.M) {
		r := e.Reg
		switch {
		case r.Access == bitstreams.RW:
			for _, v := range []uint32{0xffffffff, 0xa5a5a5a5, 0} {
				if err := g.bus.Write32(g.Ctx, e.Addr, v); err != nil {
					t.Fatalf("write %s: %v", e.Name, err)
				}
				got := g.rd(e.Addr)
				want := v & widthMask(r.Width)
				if perPort[regNames[r.Name]] && elementIndex(e.Name) >= g.cfg.Ports {
					want = 0
				}
				if got != want {
					t.Errorf("%s: wrote 0x%x, read 0x%x, want 0x%x", e.Name, v, got, want)
				}
			}
			// Put it back for the registers whose value matters below.
			if err := g.bus.Write32(g.Ctx, e.Addr, r.Reset); err != nil {
				t.Fatal(err)
			}
		case r.Access == bitstreams.WO:
			if !commands[r.Name] {
				t.Errorf("%s is write-only but not a command register the test knows", e.Name)
			}
			if got := g.rd(e.Addr); got != 0 {
				t.Errorf("write-only %s reads 0x%x, want 0", e.Name, got)
			}
		default:
			err := g.bus.Write32(g.Ctx, e.Addr, 1)
			if !errors.Is(err, emu.ErrReadOnly) {
				t.Errorf("write to %s (%s): got %v, want ErrReadOnly", e.Name, r.Access, err)
			}
		}
	}
}

func (g *rig) rd(a uint64) uint32 {
	g.T.Helper()
	v, err := g.bus.Read32(g.Ctx, a)
	if err != nil {
		g.T.Fatalf("read 0x%x: %v", a, err)
	}
	return v
}

func elementIndex(name string) int {
	i := strings.IndexByte(name, '[')
	if i < 0 {
		return 0
	}
	var n int
	fmt.Sscanf(name[i:], "[%d]", &n)
	return n
}

// TestDecoding checks the address decoder: every word of every window is
// decoded or refused as the map says, unaligned accesses are refused, and
// words between registers are bus errors.
func TestDecoding(t *testing.T) {
	g := newRig(t, rigOpts{})
	for _, a := range []uint64{0x002, 0x0041} {
		if _, err := g.bus.Read32(g.Ctx, a); err == nil {
			t.Errorf("unaligned read at 0x%x succeeded", a)
		}
	}
	// Holes: inside the ctrl window but not a register.
	for _, a := range []uint64{0x028, 0x074, 0x174, 0x280, 0x314, 0x1C00, 0x1FFC} {
		if _, ok := g.M.At(a); ok {
			t.Fatalf("0x%x is a register of the manifest; pick another hole", a)
		}
		if _, err := g.bus.Read32(g.Ctx, a); !errors.Is(err, emu.ErrBusError) {
			t.Errorf("read of the hole at 0x%x: %v, want a bus error", a, err)
		}
	}
	// A batch slot's data words: PKT_BITS/32 of them are storage, the rest
	// of the 32-word block reads 0.
	base := g.Addr("BATCH_DATA[3]")
	for k := 0; k < 32; k++ {
		if err := g.bus.Write32(g.Ctx, base+uint64(4*k), uint32(0x1000+k)); err != nil {
			t.Fatalf("write BATCH_DATA[3]+%d: %v", 4*k, err)
		}
	}
	for k := 0; k < 32; k++ {
		want := uint32(0x1000 + k)
		if k >= g.cfg.PacketBits/32 {
			want = 0
		}
		if got := g.rd(base + uint64(4*k)); got != want {
			t.Errorf("BATCH_DATA[3] word %d: 0x%x, want 0x%x", k, got, want)
		}
	}
	// The QSTAT and QTAGS windows decode over their whole size.
	for _, w := range g.M.Windows {
		if w.Name != "qstat" && w.Name != "qtags" {
			continue
		}
		for _, a := range []uint64{w.Base, w.Base + w.Size/2, w.Base + w.Size - 4} {
			if _, err := g.bus.Read32(g.Ctx, a); err != nil {
				t.Errorf("read of window %s at 0x%x: %v", w.Name, a, err)
			}
		}
	}
}

// TestCounterLatch checks that reading a 64-bit counter's LO latches its HI
// (the manifest's counter.hi), and that the cycle counter counts the
// cycles a command clocks.
func TestCounterLatch(t *testing.T) {
	g := newRig(t, rigOpts{})
	c0 := uint64(g.r("CYCLE_LO")) | uint64(g.r("CYCLE_HI"))<<32
	g.w("DRAIN_CYCLES", 1000)
	g.w("CTRL", ctrlDrain)
	c1 := uint64(g.r("CYCLE_LO")) | uint64(g.r("CYCLE_HI"))<<32
	if c1-c0 != 1000 {
		t.Errorf("a 1000-cycle drain advanced CYCLE by %d", c1-c0)
	}
	for _, r := range g.M.Registers {
		if r.Counter == nil || r.Counter.Hi == "" {
			continue
		}
		if _, _, err := g.M.Lookup(r.Counter.Hi); err != nil {
			t.Errorf("%s: %v", r.Name, err)
		}
	}
	// A latched HI does not change until LO is read again.
	g.w("TG_CYCLES", 2000)
	g.w("TG_CTRL", tgStart)
	lo := g.r("TG_RUN_CYCLES_LO")
	if hi := g.r("TG_RUN_CYCLES_HI"); hi != 0 || lo < 2000 {
		t.Errorf("TG_RUN_CYCLES = 0x%x:%x after a 2000-cycle run", hi, lo)
	}
}

// TestBuildParameters checks that the ro parameter registers report the
// build, for the catalogue's and for a variant.
func TestBuildParameters(t *testing.T) {
	for _, cfg := range []*Config{nil, {Ports: 4, S: 4, FIFODepth: 7, PacketBits: 512, ClockMHz: 110}} {
		g := newRig(t, rigOpts{cfg: cfg})
		want := map[string]uint32{"PORTS": uint32(g.cfg.Ports), "STAGE_S": uint32(g.cfg.S), "FIFO_DEPTH": uint32(g.cfg.FIFODepth),
			"PKT_BITS": uint32(g.cfg.PacketBits), "CLOCK_KHZ": uint32(g.cfg.ClockMHz * 1000), "ID": g.M.ID, "VERSION": g.M.VersionWord}
		for name, v := range want {
			if got := g.r(name); got != v {
				t.Errorf("%+v: %s = %d, want %d", g.cfg, name, got, v)
			}
		}
	}
}

// TestManifestMismatch checks that the emulated design refuses a manifest
// whose map it does not implement, naming the register.
func TestManifestMismatch(t *testing.T) {
	base, err := bitstreams.Default().Design(DesignName)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := ConfigFromManifest(base)
	if err != nil {
		t.Fatal(err)
	}
	mod := func(f func(m *bitstreams.Manifest)) *bitstreams.Manifest {
		m := *base
		m.Registers = append([]bitstreams.Register(nil), base.Registers...)
		m.Windows = append([]bitstreams.Window(nil), base.Windows...)
		f(&m)
		return &m
	}
	cases := []struct {
		name string
		m    *bitstreams.Manifest
		want string
	}{
		{"unknown register", mod(func(m *bitstreams.Manifest) {
			m.Registers = append(m.Registers, bitstreams.Register{Name: "BOGUS", Offset: 0x7c, Width: 32, Access: bitstreams.RO})
		}), "BOGUS"},
		{"missing register", mod(func(m *bitstreams.Manifest) { m.Registers = m.Registers[1:] }), "lacks register ID"},
		{"short array", mod(func(m *bitstreams.Manifest) {
			for i := range m.Registers {
				if m.Registers[i].Name == "PLACEMENT" {
					m.Registers[i].Count = 16
				}
			}
		}), "PLACEMENT"},
		{"small window", mod(func(m *bitstreams.Manifest) {
			for i := range m.Windows {
				if m.Windows[i].Name == "qtags" {
					m.Windows[i].Size = 0x1000
				}
			}
		}), "qtags"},
	}
	for _, tc := range cases {
		_, err := decodeMap(tc.m, cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error naming %q", tc.name, err, tc.want)
		}
	}
	bad := *base
	bad.Params = map[string]string{"ports": "12", "s": "2", "fifo_depth": "4", "packet_bits": "256"}
	if _, err := ConfigFromManifest(&bad); err == nil || !strings.Contains(err.Error(), "power of two") {
		t.Errorf("ports 12: %v", err)
	}
	bad.Params = map[string]string{"ports": "16", "s": "2", "fifo_depth": "4", "packet_bits": "256", "prots": "3"}
	if _, err := ConfigFromManifest(&bad); err == nil || !strings.Contains(err.Error(), "prots") {
		t.Errorf("unknown param: %v", err)
	}
}

// TestUnloaded checks that a design closed by reprogramming answers bus errors.
func TestUnloaded(t *testing.T) {
	m, err := bitstreams.Default().Design(DesignName)
	if err != nil {
		t.Fatal(err)
	}
	g := newRig(t, rigOpts{})
	b, _ := g.Rack.Board("u96")
	d, ok := b.LoadedDesign().(*design)
	if !ok {
		t.Fatalf("loaded design is %T", b.LoadedDesign())
	}
	d.Close()
	if _, err := d.Read32(uint32(m.Registers[0].Offset)); !errors.Is(err, emu.ErrBusError) {
		t.Errorf("read after close: %v", err)
	}
}
