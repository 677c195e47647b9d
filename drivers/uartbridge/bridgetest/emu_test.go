package bridgetest_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/boards"
	"github.com/labrunner/labrunner/boards/emu"
	"github.com/labrunner/labrunner/drivers/uartbridge/bridgetest"
	"github.com/labrunner/labrunner/labconfig"
)

// The conformance suite against the emulated boards' bridge
// (boards/emu/bridge*.go), with the design bridge-example behind it. The
// emulator has no model of that design (it is the RTL's example, not a
// paper's), so this test gives it one, written from the design's manifest
// and docs/uart-bridge.md ("The example design"): the suite's subject is the
// bridge, and the design only has to hold words, push and pop them, and be
// busy for a while after a soft reset.
func TestEmulatorBridge(t *testing.T) {
	for _, baud := range []int{115200, 921600} {
		t.Run(fmt.Sprint(baud), func(t *testing.T) {
			port, id := emulatedBoard(t, &labconfig.Serial{Port: "emu", Baud: baud})
			bridgetest.Run(t, bridgetest.Target{Name: "emulated", Port: port, Baud: baud, DeviceID: id})
		})
	}
	// At line rate with a USB-UART's latency (docs/uart-bridge.md,
	// "Line-rate emulation"): the line as the RTL's co-simulation has it,
	// plus 1 ms a round trip.
	t.Run("921600-line-rate", func(t *testing.T) {
		port, id := emulatedBoard(t, &labconfig.Serial{Port: "emu", Baud: 921600, LineRate: true, RequestLatency: time.Millisecond})
		bridgetest.Run(t, bridgetest.Target{Name: "emulated at line rate", Port: port, Baud: 921600, DeviceID: id})
	})
}

func init() {
	emu.RegisterDesign(bridgetest.Design, func(b *emu.Board, m *bitstreams.Manifest) (emu.Design, error) {
		d := &example{start: time.Now()}
		d.reset()
		return d, nil
	})
}

// emulatedBoard starts an emulated Ultra96 serving its bridge on a
// pseudo-terminal as line says, programs bridge-example, and returns the
// bridge's port and the board's device ID.
func emulatedBoard(t *testing.T, line *labconfig.Serial) (string, uint32) {
	t.Helper()
	lab := &labconfig.Lab{Name: "bridgetest", Seed: 16, Boards: []labconfig.Board{{
		Name: "bx", Kind: "ultra96", DCN: true, Emulated: &labconfig.Emulated{},
		Bus:        labconfig.Bus{UARTBridge: line},
		Programmer: labconfig.Programmer{Type: "emulated"},
	}}}
	r, err := emu.Start(lab, emu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	kind, err := boards.Lookup("ultra96")
	if err != nil {
		t.Fatal(err)
	}
	img, err := bitstreams.Default().Image(bridgetest.Design, kind.Part)
	if err != nil {
		t.Fatal(err)
	}
	prog, err := r.Programmer("bx")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := prog.Program(ctx, img); err != nil {
		t.Fatal(err)
	}
	port, err := r.BridgePath("bx")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := r.Board("bx")
	return port, b.DeviceID()
}

// example is bridge-example as the emulator runs it: the registers of
// bitstreams/catalogue/bridge-example.yaml. Time is the wall clock at the
// design's 100 MHz; the traffic generator runs a whole run inside the write
// that starts it, as the emulated designs do.
type example struct {
	mu                          sync.Mutex
	start                       time.Time
	busyUntil                   time.Time
	scratch, respDelay, delayed uint32
	cycleHi                     uint32
	ram                         [256]uint32
	fifo                        []uint32

	tgPayload, tgGap, tgCount uint32
	tgBusy, tgDone            bool
	tgSent, tgCycles          uint32
	tgBytes                   uint64
	tgBytesHi                 uint32
}

const (
	exClockHz     = 100_000_000
	exResetCycles = exClockHz / 100
	exFIFODepth   = 16
)

// reset puts the registers at their reset values (CTRL.SOFT_RESET and
// configuration); the RAM and the cycle counter keep theirs.
func (d *example) reset() {
	d.scratch, d.respDelay, d.delayed, d.fifo = 0, 0, 0, nil
	d.tgPayload, d.tgGap, d.tgCount = 64, 0, 1
	d.tgBusy, d.tgDone, d.tgSent, d.tgCycles, d.tgBytes, d.tgBytesHi = false, false, 0, 0, 0, 0
}

func (d *example) Name() string { return bridgetest.Design }
func (d *example) Close()       {}

func (d *example) cycles() uint64 {
	return uint64(time.Since(d.start).Nanoseconds()) / (1e9 / exClockHz)
}

func (d *example) Read32(addr uint32) (uint32, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if time.Now().Before(d.busyUntil) {
		return 0, emu.ErrBusy
	}
	switch {
	case addr >= 0x800 && addr < 0x1000:
		return d.ram[(addr>>2)&0xFF], nil
	case addr >= 0x1000 && addr < 0x1400:
		return 0, nil
	case addr >= 0x1400 && addr < 0x1800:
		if len(d.fifo) == 0 {
			// Any other error than the emulator's three is the register
			// refusing the access: REFUSED.
			return 0, errors.New("pop of the empty FIFO")
		}
		v := d.fifo[0]
		d.fifo = d.fifo[1:]
		return v, nil
	}
	switch addr {
	case 0x000:
		return 0x42524558, nil
	case 0x004:
		return 0x00010000, nil
	case 0x008:
		return d.scratch, nil
	case 0x00C:
		return exClockHz / 1000, nil
	case 0x010:
		c := d.cycles()
		d.cycleHi = uint32(c >> 32)
		return uint32(c), nil
	case 0x014:
		return d.cycleHi, nil
	case 0x018, 0x100:
		return 0, nil // write-only
	case 0x01C:
		return exResetCycles, nil
	case 0x020:
		return uint32(len(d.fifo)), nil
	case 0x024:
		return d.respDelay, nil
	case 0x028:
		return d.delayed, nil // answered at once: the emulator has no bus to time out
	case 0x104:
		v := uint32(0)
		if d.tgDone {
			v |= 1
		}
		if d.tgBusy {
			v |= 2
		}
		return v, nil
	case 0x108:
		return d.tgPayload, nil
	case 0x10C:
		return d.tgGap, nil
	case 0x110:
		return d.tgCount, nil
	case 0x114:
		return d.tgSent, nil
	case 0x118:
		d.tgBytesHi = uint32(d.tgBytes >> 32)
		return uint32(d.tgBytes), nil
	case 0x11C:
		return d.tgBytesHi, nil
	case 0x120:
		return d.tgCycles, nil
	}
	return 0, fmt.Errorf("%w: 0x%x is not in the bridge-example map", emu.ErrBusError, addr)
}

func (d *example) Write32(addr, v uint32) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if time.Now().Before(d.busyUntil) {
		return emu.ErrBusy
	}
	switch {
	case addr >= 0x800 && addr < 0x1000:
		d.ram[(addr>>2)&0xFF] = v
		return nil
	case addr >= 0x1000 && addr < 0x1400:
		if len(d.fifo) < exFIFODepth {
			d.fifo = append(d.fifo, v)
		}
		return nil
	case addr >= 0x1400 && addr < 0x1800:
		return emu.ErrReadOnly
	}
	switch addr {
	case 0x008:
		d.scratch = v
	case 0x018:
		if v&1 != 0 {
			d.reset()
			d.busyUntil = time.Now().Add(exResetCycles * time.Second / exClockHz)
		}
	case 0x024:
		d.respDelay = v
	case 0x028:
		d.delayed = v
	case 0x100:
		d.tgCtrl(v)
	case 0x108:
		d.tgPayload = v & 0xFFFF
	case 0x10C:
		d.tgGap = v & 0xFFFF
	case 0x110:
		d.tgCount = v
	case 0x000, 0x004, 0x00C, 0x010, 0x014, 0x01C, 0x020, 0x104, 0x114, 0x118, 0x11C, 0x120:
		return emu.ErrReadOnly
	default:
		return fmt.Errorf("%w: 0x%x is not in the bridge-example map", emu.ErrBusError, addr)
	}
	return nil
}

func (d *example) tgCtrl(v uint32) {
	if v&4 != 0 { // CLEAR
		d.tgSent, d.tgBytes, d.tgCycles, d.tgDone = 0, 0, 0, false
	}
	switch {
	case v&2 != 0: // STOP
		d.tgDone = d.tgDone || d.tgBusy
		d.tgBusy = false
	case v&1 != 0 && !d.tgBusy: // START
		if d.tgCount == 0 {
			d.tgBusy, d.tgDone = true, false // runs until STOP; the emulator counts nothing meanwhile
			return
		}
		l := uint64(max(d.tgPayload, 1))
		beats := (l + 3) / 4
		n := uint64(d.tgCount)
		d.tgSent += uint32(n)
		d.tgBytes += n * l
		d.tgCycles += uint32(n * (beats + uint64(d.tgGap)))
		d.tgDone = true
	}
}
