package exanet

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/boards/emu"
)

// selfClearing lists the rw fields that act and read back 0.
var selfClearing = map[string]uint32{"CONS_CTRL": 1 << 1, "TRACE_CTRL": 1 << 1}

// definedBits is the union of a register's fields, or its width.
func definedBits(t *testing.T, r *bitstreams.Register) uint32 {
	if len(r.Fields) == 0 {
		return widthMask(r.Width)
	}
	var m uint32
	for _, f := range r.Fields {
		hi, lo, ok := strings.Cut(f.Bits, ":")
		h, err := strconv.Atoi(hi)
		if err != nil {
			t.Fatalf("%s.%s: bits %q", r.Name, f.Name, f.Bits)
		}
		l := h
		if ok {
			if l, err = strconv.Atoi(lo); err != nil {
				t.Fatalf("%s.%s: bits %q", r.Name, f.Name, f.Bits)
			}
		}
		for b := l; b <= h; b++ {
			m |= 1 << b
		}
	}
	return m
}

type regInstance struct {
	r    *bitstreams.Register
	addr uint32
	name string
}

func instances(m *bitstreams.Manifest) []regInstance {
	var out []regInstance
	for i := range m.Registers {
		r := &m.Registers[i]
		if r.Count <= 1 {
			out = append(out, regInstance{r, uint32(r.Offset), r.Name})
			continue
		}
		for e := 0; e < r.Count; e++ {
			out = append(out, regInstance{r, uint32(r.Offset + uint64(e)*r.Stride), fmt.Sprintf("%s[%d]", r.Name, e)})
		}
	}
	return out
}

// TestRegisterResetValues reads every register of a freshly programmed
// board without cables: each must read its manifest reset value (write-only
// registers read 0). The cycle counter is free-running and is checked
// separately.
func TestRegisterResetValues(t *testing.T) {
	m := testManifest(t)
	rk := newRack(t, rackSpec{boards: []string{"a"}})
	n := rk.nodes["a"]
	checked := 0
	for _, in := range instances(m) {
		if in.r.Name == "CYCLE_LO" || in.r.Name == "CYCLE_HI" {
			continue
		}
		v, err := n.Read32(in.addr)
		if err != nil {
			t.Errorf("read %s: %v", in.name, err)
			continue
		}
		want := in.r.Reset & widthMask(in.r.Width)
		if !in.r.Access.Readable() {
			want = 0
		}
		if v != want {
			t.Errorf("%s at 0x%x reads 0x%x after reset, manifest says 0x%x", in.name, in.addr, v, want)
		}
		checked++
	}
	if checked < 60 {
		t.Errorf("checked only %d registers", checked)
	}
	if v, _ := n.Read32(regAddr(t, "ID")); v != m.ID {
		t.Errorf("ID = 0x%x, manifest id 0x%x", v, m.ID)
	}
	if v, _ := n.Read32(regAddr(t, "VERSION")); v != m.VersionWord {
		t.Errorf("VERSION = 0x%x, manifest version_word 0x%x", v, m.VersionWord)
	}
}

// TestRegisterAccess checks the access the manifest declares: ro refuses
// writes and keeps its value, rw reads back what was written (within its
// fields), wo reads 0, and addresses outside the map are bus errors.
func TestRegisterAccess(t *testing.T) {
	m := testManifest(t)
	rk := newRack(t, rackSpec{boards: []string{"a"}})
	n := rk.nodes["a"]
	for _, in := range instances(m) {
		switch in.r.Access {
		case bitstreams.RO, bitstreams.RC, bitstreams.Pop:
			if strings.HasPrefix(in.r.Name, "CYCLE") {
				continue
			}
			before, _ := n.Read32(in.addr)
			err := n.Write32(in.addr, 0xffffffff)
			if !errors.Is(err, emu.ErrReadOnly) {
				t.Errorf("write to %s (%s): err = %v, want ErrReadOnly", in.name, in.r.Access, err)
			}
			if in.r.Access == bitstreams.RO {
				if after, _ := n.Read32(in.addr); after != before {
					t.Errorf("%s changed from 0x%x to 0x%x after a refused write", in.name, before, after)
				}
			}
		case bitstreams.RW:
			for _, pat := range []uint32{0x5a5a5a5a, 0xa5a5a5a5} {
				if err := n.Write32(in.addr, pat); err != nil {
					t.Errorf("write %s: %v", in.name, err)
					continue
				}
				want := pat & widthMask(in.r.Width) & definedBits(t, in.r) &^ selfClearing[in.r.Name]
				if got, _ := n.Read32(in.addr); got != want {
					t.Errorf("%s: wrote 0x%x, read 0x%x, want 0x%x", in.name, pat, got, want)
				}
			}
		case bitstreams.WO:
			if v, err := n.Read32(in.addr); err != nil || v != 0 {
				t.Errorf("read of write-only %s = 0x%x, %v; want 0, nil", in.name, v, err)
			}
		}
	}
	for _, a := range []uint32{0x0ffc, 0x4000, 0x1030, 0x1c00} {
		if _, err := n.Read32(a); !errors.Is(err, emu.ErrBusError) {
			t.Errorf("read 0x%x: err = %v, want ErrBusError", a, err)
		}
		if err := n.Write32(a, 1); !errors.Is(err, emu.ErrBusError) {
			t.Errorf("write 0x%x: err = %v, want ErrBusError", a, err)
		}
	}
}

// TestCycleCounter: the cycle counter is free-running (every access takes
// 1 µs of bus time on the emulated board) and reading CYCLE_LO latches
// CYCLE_HI; a board whose oscillator is fast counts more cycles.
func TestCycleCounter(t *testing.T) {
	// Cabled, so that they share a fabric and its time base.
	rk := newRack(t, rackSpec{boards: []string{"a", "b"}, ppm: map[string]float64{"a": 0, "b": 500},
		links: []testLink{{a: "a:sfp0", b: "b:sfp0"}}})
	c1 := rk.r("a", "CYCLE_LO")
	c2 := rk.r("a", "CYCLE_LO")
	if d := c2 - c1; d < 150 || d > 320 {
		t.Errorf("CYCLE_LO advanced %d cycles over two 1 µs accesses, want about 156-312", d)
	}
	if hi := rk.r("a", "CYCLE_HI"); hi != 0 {
		t.Errorf("CYCLE_HI = %d early in the run", hi)
	}
	for i := 0; i < 2000; i++ {
		rk.r("a", "SCRATCH0")
	}
	a1 := rk.r("a", "CYCLE_LO")
	b := rk.r("b", "CYCLE_LO")
	a2 := rk.r("a", "CYCLE_LO")
	a := (float64(a1) + float64(a2)) / 2 // a's count when b was read
	ratio := float64(b) / a
	if ratio < 1.0003 || ratio > 1.0007 {
		t.Errorf("a counted %.0f, b (+500 ppm) %d cycles: ratio %.6f, want about 1.0005", a, b, ratio)
	}
}
