package emu

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/labrunner/labrunner/bitstreams"
)

// The register decoder and bitstreams/catalogue/mgmt.yaml agree: every
// register of the map decodes with its access class and reset value, and
// every other word of the register windows is a bus error.
func TestMgmtRegsMatchManifest(t *testing.T) {
	// one board, no cables: nothing moves but the clocks
	r := startMgmtRack(t, mgmtLab{boards: []string{"a"}})
	ba, _ := r.Board("a")
	m := regsOf(t, r, "a")
	m.waitUp()
	bus := ba.Bus()
	ctx := context.Background()
	live := map[string]bool{"DNA": true, "NPORTS": true, "FW_STATE": true, "FW_HEARTBEAT": true, "CYCLES_LO": true,
		"CYCLES_HI": true, "TS_TIME_LO": true, "TS_TIME_HI": true,
		"PMOS_SESSION": true} // a new sending session every boot
	decoded := map[uint64]bool{}
	for _, reg := range mgmtManifest.Registers {
		for e := range max(reg.Count, 1) {
			addr := reg.Offset + uint64(e)*reg.Stride
			decoded[addr] = true
			name := reg.Name
			if reg.Count > 1 {
				name += "[" + itoa(e) + "]"
			}
			if reg.Access.Readable() && !reg.Access.ReadSideEffect() {
				v, err := bus.Read32(ctx, addr)
				if err != nil {
					t.Errorf("%s (0x%x): read: %v", name, addr, err)
					continue
				}
				if !live[reg.Name] && v != reg.Reset {
					t.Errorf("%s: reads 0x%x, the map says reset 0x%x", name, v, reg.Reset)
				}
				if reg.Width < 32 && v>>uint(reg.Width) != 0 && !live[reg.Name] {
					t.Errorf("%s: 0x%x is wider than %d bits", name, v, reg.Width)
				}
			}
			if !reg.Access.Writable() && reg.Access != bitstreams.Pop {
				if err := bus.Write32(ctx, addr, 0); !errors.Is(err, ErrReadOnly) {
					t.Errorf("%s (%s): write: %v, want ErrReadOnly", name, reg.Access, err)
				}
			}
		}
	}
	if got := m.rd("NPORTS"); got != 4 {
		t.Errorf("NPORTS %d on a zcu102", got)
	}
	if got := m.rd("DNA"); got != ba.DeviceID() {
		t.Errorf("DNA 0x%x, board 0x%x", got, ba.DeviceID())
	}
	// every word of the register windows that is not in the map is a bus error
	for _, w := range mgmtManifest.Windows {
		if w.Name == "mbox" || w.Name == "mos_tx" || w.Name == "mos_rx" {
			continue
		}
		for addr := w.Base; addr < w.Base+w.Size; addr += 4 {
			if decoded[addr] {
				continue
			}
			if _, err := bus.Read32(ctx, addr); !errors.Is(err, ErrBusError) {
				t.Errorf("0x%x (window %s, no register): %v", addr, w.Name, err)
			}
		}
	}
	for _, addr := range []uint64{0xF0000700, 0xF0000A00, 0xF0002000, 0xFFFFFFFC} {
		if _, err := bus.Read32(ctx, addr); !errors.Is(err, ErrBusError) {
			t.Errorf("0x%x outside every window: %v", addr, err)
		}
	}
	if _, err := bus.Read32(ctx, 0xF0000002); err == nil {
		t.Error("an unaligned access was accepted")
	}
	// a design's manifest never reaches into the management window
	for _, d := range bitstreams.Default().Designs() {
		if d.Builtin {
			continue
		}
		for _, w := range d.Windows {
			if w.Base+w.Size > uint64(MgmtBase) {
				t.Errorf("design %s window %s (0x%x+0x%x) overlaps the management window", d.Name, w.Name, w.Base, w.Size)
			}
		}
	}
	// a board that is off answers BUSY
	ba.setPower(false)
	if _, err := bus.Read32(ctx, 0xF0000000); !errors.Is(err, ErrBusy) {
		t.Errorf("powered off: %v", err)
	}
}

// Each access costs 50 us; DELAY_US waits.
func TestMgmtTimeModel(t *testing.T) {
	r := startMgmtRack(t, mgmtLab{boards: []string{"a"}})
	m := regsOf(t, r, "a")
	t0 := r.MgmtTime()
	m.rd("SCRATCH")
	if d := r.MgmtTime() - t0; d != 50*time.Microsecond {
		t.Fatalf("an access took %v", d)
	}
	m.wait(1234)
	if d := r.MgmtTime() - t0; d != (100+1234)*time.Microsecond {
		t.Fatalf("DELAY_US 1234 after a read: %v", d)
	}
	c1, _ := m.Read64(tctx(), "CYCLES_LO")
	m.wait(1000)
	c2, _ := m.Read64(tctx(), "CYCLES_LO")
	// 400 MHz: 1000 us + 3 accesses = 1150 us = 460000 cycles
	if d := c2 - c1; d < 459_990 || d > 460_010 {
		t.Fatalf("CYCLES advanced %d", d)
	}
	// A power cycle puts the hardware registers back to reset.
	m.waitUp()
	m.wr("MY_ADDR", 7)
	m.wr("SCRATCH", 9)
	ba, _ := r.Board("a")
	ba.setPower(false)
	ba.setPower(true)
	if m.rd("MY_ADDR") != 0 || m.rd("SCRATCH") != 0 || m.field("FW_STATE", "STATE") != fwBooting {
		t.Fatalf("after a power cycle: MY_ADDR %d SCRATCH %d FW_STATE 0x%x", m.rd("MY_ADDR"), m.rd("SCRATCH"), m.rd("FW_STATE"))
	}
}

// The management window through the board's real UART bridge, next to
// the design's registers.
func TestMgmtThroughTheBridge(t *testing.T) {
	b := testBoard(t, rackOpts{})
	h := openHost(t, b)
	if v := h.read(0xF0000000); v != mgmtID {
		t.Fatalf("MGMT_ID over the bridge: 0x%x", v)
	}
	if v := h.read(tdID); v != tdIDValue {
		t.Fatalf("the design's ID: 0x%x", v)
	}
	// DNA and the burst of the first words
	r, err := h.do(0x03, 0xF0000000, 4)
	if err != nil || r.Status != 0 || r.Words[3] != b.DeviceID() {
		t.Fatalf("READ_BURST: %v %+v", err, r)
	}
	// a write to a read-only management register is refused with READ_ONLY
	r, err = h.do(0x02, 0xF0000000, 1, 5)
	if err != nil || r.Status != statusReadOnly {
		t.Fatalf("write MGMT_ID: %v %+v", err, r)
	}
}
