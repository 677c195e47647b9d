package rtl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/drivers"
	"github.com/labrunner/labrunner/drivers/regmap"
	"github.com/labrunner/labrunner/drivers/uartbridge"
	"github.com/labrunner/labrunner/drivers/uartbridge/bridgetest"
)

// What the RTL does that the conformance suite cannot ask of every device:
// the AXI master's timeout, and the example design's traffic generator.

// openRegs opens the co-simulated design through labrunner's driver.
func openRegs(t testing.TB, s *Sim) (*uartbridge.Bridge, *regmap.Regs) {
	t.Helper()
	br, err := uartbridge.Open(s.Port, s.Baud, uartbridge.Options{Board: "rtl-sim",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { br.Close() })
	m, err := bitstreams.Default().Design(bridgetest.Design)
	if err != nil {
		t.Fatal(err)
	}
	return br, regmap.New(br, m, "rtl-sim")
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestBusTimeout: an AXI slave that answers later than BUS_TIMEOUT_CYCLES
// (1 ms) is a BUS_ERROR; while the late transaction is still open the
// bridge answers BUSY and executes nothing; a write that timed out may
// still take effect when the slave gets to it (docs/uart-bridge.md, "The
// RTL").
func TestBusTimeout(t *testing.T) {
	baud := 921600
	s := startSim(t, baud)
	br, regs := openRegs(t, s)
	ctx := ctxT(t)
	timeout := uint32(Config{Baud: baud}.ClkHz() / 1000) // BUS_TIMEOUT_CYCLES
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}

	// Late, but within the timeout: answered.
	must(regs.Write(ctx, "RESP_DELAY", timeout/2))
	must(regs.Write(ctx, "DELAYED", 0x11))
	if v, err := regs.Read(ctx, "DELAYED"); err != nil || v != 0x11 {
		t.Fatalf("DELAYED answered after half the bus timeout: 0x%x, %v", v, err)
	}
	// Later than the timeout: BUS_ERROR, a final setup error.
	must(regs.Write(ctx, "RESP_DELAY", 2*timeout))
	_, err := regs.Read(ctx, "DELAYED")
	if !errors.Is(err, uartbridge.ErrBusError) || drivers.ClassOf(err) != drivers.ClassSetup {
		t.Fatalf("read of a register answered after twice the bus timeout: %v, want BUS_ERROR", err)
	}
	// A write that timed out still lands.
	if err := regs.Write(ctx, "DELAYED", 0x22); !errors.Is(err, uartbridge.ErrBusError) {
		t.Fatalf("write of a register answered after twice the bus timeout: %v, want BUS_ERROR", err)
	}
	br.Close()

	// Back to back: the late read times out (BUS_ERROR), and the request
	// behind it finds the bus still waiting for that read: BUSY, not run.
	p, err := bridgetest.OpenPort(s.Port, baud)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	raw := &bridgetest.Raw{P: p}
	// The timed-out write is still open for a while: wait until the bus is
	// free (a READ of SCRATCH answered, not BUSY).
	for seq := uint8(0x30); ; seq++ {
		r, err := raw.Do(nil, bridgetest.Frame(seq, 0x01, 0x008, 1), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status == 0 {
			break
		}
		if r.Status != 0x05 || seq == 0x3F {
			t.Fatalf("READ SCRATCH after the timed-out write: STATUS %d", r.Status)
		}
		time.Sleep(time.Millisecond)
	}
	late := bridgetest.Frame(0x40, 0x01, 0x028, 1)          // READ DELAYED
	push := bridgetest.Frame(0x41, 0x02, 0x1000, 1, 0xB5B5) // WRITE FIFO_PUSH
	if err := raw.Send(append(append([]byte(nil), late...), push...)); err != nil {
		t.Fatal(err)
	}
	for _, want := range []struct{ seq, status uint8 }{{0x40, 0x01}, {0x41, 0x05}} {
		r, err := raw.Next(time.Now().Add(5 * time.Second))
		if err != nil || r.Seq != want.seq || r.Status != want.status {
			t.Fatalf("answer %+v, %v; want SEQ 0x%02x STATUS %d", r, err, want.seq, want.status)
		}
	}
	time.Sleep(20 * time.Millisecond) // the slave answers 2 ms after the read started
	for _, step := range []struct {
		frame  []byte
		status uint8
		word   uint32
	}{
		{bridgetest.Frame(0x42, 0x02, 0x024, 1, 0), 0, 0}, // RESP_DELAY = 0
		{bridgetest.Frame(0x43, 0x01, 0x028, 1), 0, 0x22}, // DELAYED: the timed-out write landed
		{bridgetest.Frame(0x44, 0x01, 0x020, 1), 0, 0},    // FIFO_LEVEL: the BUSY push did not run
	} {
		r, err := raw.Do(nil, step.frame, 5*time.Second)
		if err != nil || r.Status != step.status || (len(r.Words) > 0 && r.Words[0] != step.word) {
			t.Fatalf("request % x: %+v, %v; want STATUS %d word 0x%x", step.frame, r, err, step.status, step.word)
		}
	}
}

// TestTrafficGenerator: the counters follow the programming model of
// bitstreams/catalogue/bridge-example.yaml: a run of TG_COUNT packets of
// TG_PAYLOAD bytes, one 32-bit word a cycle and TG_GAP idle cycles after
// each, takes TG_COUNT x (ceil(TG_PAYLOAD/4) + TG_GAP) cycles.
func TestTrafficGenerator(t *testing.T) {
	s := startSim(t, 921600)
	_, regs := openRegs(t, s)
	ctx := ctxT(t)
	w := func(name string, v uint32) {
		t.Helper()
		if err := regs.Write(ctx, name, v); err != nil {
			t.Fatal(err)
		}
	}
	r := func(name string) uint32 {
		t.Helper()
		v, err := regs.Read(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	ctrl := func(fields map[string]uint32) uint32 {
		v, err := regs.Compose("TG_CTRL", fields)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	waitDone := func() {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); ; {
			done, err := regs.ReadField(ctx, "TG_STATUS", "DONE")
			if err != nil {
				t.Fatal(err)
			}
			if done == 1 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatal("TG_STATUS.DONE not set within 20 s")
			}
			time.Sleep(5 * time.Millisecond)
		}
	}

	for _, c := range []struct{ payload, gap, count uint32 }{{61, 3, 1000}, {64, 0, 500}, {1, 1, 300}, {0, 0, 10}} {
		t.Run(fmt.Sprintf("payload-%d-gap-%d-count-%d", c.payload, c.gap, c.count), func(t *testing.T) {
			w("TG_PAYLOAD", c.payload)
			w("TG_GAP", c.gap)
			w("TG_COUNT", c.count)
			w("TG_CTRL", ctrl(map[string]uint32{"CLEAR": 1, "START": 1}))
			waitDone()
			l := max(c.payload, 1)
			beats := (l + 3) / 4
			bytes, err := regs.Read64(ctx, "TG_BYTES_LO")
			if err != nil {
				t.Fatal(err)
			}
			if sent, cyc := r("TG_SENT"), r("TG_CYCLES"); sent != c.count || bytes != uint64(c.count*l) || cyc != c.count*(beats+c.gap) {
				t.Fatalf("TG_SENT %d TG_BYTES %d TG_CYCLES %d; want %d, %d, %d", sent, bytes, cyc, c.count, c.count*l, c.count*(beats+c.gap))
			}
			if busy, _ := regs.ReadField(ctx, "TG_STATUS", "BUSY"); busy != 0 {
				t.Fatal("TG_STATUS.BUSY after the run")
			}
		})
	}
	t.Run("until-stop", func(t *testing.T) {
		w("TG_PAYLOAD", 16)
		w("TG_GAP", 4)
		w("TG_COUNT", 0)
		w("TG_CTRL", ctrl(map[string]uint32{"CLEAR": 1, "START": 1}))
		time.Sleep(30 * time.Millisecond)
		if busy, _ := regs.ReadField(ctx, "TG_STATUS", "BUSY"); busy != 1 {
			t.Fatal("a run with TG_COUNT 0 is not running")
		}
		c0 := r("TG_CYCLES")
		w("TG_CTRL", ctrl(map[string]uint32{"START": 1})) // ignored while running
		w("TG_CTRL", ctrl(map[string]uint32{"STOP": 1}))
		if st := r("TG_STATUS"); st != 1 {
			t.Fatalf("TG_STATUS 0x%x after STOP, want DONE only", st)
		}
		sent, cyc := r("TG_SENT"), r("TG_CYCLES")
		// Every 8-cycle slot (4 words + 4 idle) ends a packet after its 4th
		// word; a slot cut by STOP may have counted its packet already.
		if cyc <= c0 || sent != cyc/8 && sent != cyc/8+1 {
			t.Fatalf("after STOP: TG_SENT %d, TG_CYCLES %d (before STOP %d)", sent, cyc, c0)
		}
		bytes, err := regs.Read64(ctx, "TG_BYTES_LO")
		if err != nil || bytes != uint64(sent)*16 {
			t.Fatalf("TG_BYTES %d (%v) for %d packets of 16 bytes", bytes, err, sent)
		}
	})
	t.Run("cycle-counter", func(t *testing.T) {
		// Each read of the design's cycle counter is bracketed by the
		// simulator's own count: the difference of two reads lies within
		// the brackets' differences.
		read := func() (v, lo, hi uint64) {
			st0, err := s.Stats()
			if err != nil {
				t.Fatal(err)
			}
			if v, err = regs.Read64(ctx, "CYCLE_LO"); err != nil {
				t.Fatal(err)
			}
			st1, err := s.Stats()
			if err != nil {
				t.Fatal(err)
			}
			return v, st0.Cycles, st1.Cycles
		}
		a, a0, a1 := read()
		time.Sleep(50 * time.Millisecond)
		b, b0, b1 := read()
		if d := b - a; d < b0-a1 || d > b1-a0 {
			t.Fatalf("CYCLE moved %d between two reads; the simulator ran between %d and %d cycles", d, b0-a1, b1-a0)
		}
		if khz := r("CLOCK_KHZ"); khz != uint32(s.ClkHz()/1000) {
			t.Fatalf("CLOCK_KHZ %d, the simulation runs at %d Hz", khz, s.ClkHz())
		}
	})
}
