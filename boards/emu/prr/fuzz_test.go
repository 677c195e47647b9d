package prr

import (
	"encoding/binary"
	"strconv"
	"testing"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/boards/emu"
	"github.com/labrunner/labrunner/labconfig"
)

// FuzzConfigParams feeds arbitrary build parameters to the factory's
// parser: it must refuse what the switch cannot be, and for what it
// accepts the pipeline geometry must hold together.
func FuzzConfigParams(f *testing.F) {
	f.Add("16", "2", "32", "256", 150.0)
	f.Add("2", "1", "1", "32", 1.0)
	f.Add("256", "4", "16", "1024", 300.0)
	f.Add("0x10", "64", "4096", "64", 0.5)
	f.Add("12", "-1", "x", "33", -3.0)
	base, err := bitstreams.Default().Design(DesignName)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, ports, s, depth, pbits string, clock float64) {
		m := *base
		m.ClockMHz = clock
		m.Params = map[string]string{ParamPorts: ports, ParamS: s, ParamFIFODepth: depth, ParamPacketBits: pbits}
		c, err := ConfigFromManifest(&m)
		if err != nil {
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("accepted %+v that does not validate: %v", c, err)
		}
		if c.Ports&(c.Ports-1) != 0 || c.Ports*c.Ports*c.FIFODepth > MaxQueueEntries || c.PacketBits%32 != 0 {
			t.Fatalf("accepted an impossible build %+v", c)
		}
		regs := c.registers()
		if regs < 1 || regs > c.stages() || !c.hasRegister(c.compulsoryStage()) {
			t.Fatalf("%+v: %d registers over %d stages", c, regs, c.stages())
		}
		if c.S == 1 && regs != c.stages() {
			t.Fatalf("%+v: S=1 must keep every register", c)
		}
		if c.Ports*c.Ports*c.FIFODepth <= 1<<16 {
			core := newCore(c)
			if core.latency() != regs {
				t.Fatalf("%+v: core latency %d, %d registers", c, core.latency(), regs)
			}
		}
	})
}

// FuzzBus drives a small switch with arbitrary register traffic (each op:
// 1 byte kind and register, 1 byte element, 4 bytes value) and checks the
// hardware's invariants after every access: nothing panics, no queue
// exceeds its depth, the queue counts add up, the pipeline is empty when a
// command returns, and PLACEMENT words name real queues.
func FuzzBus(f *testing.F) {
	f.Add([]byte{0x80, 0, 1, 0, 0, 0x80, 1, 0x01, 0, 0, 0})
	f.Add([]byte{0x90, 0, 0, 0, 0, 0, 0x91, 0, 1, 0, 0, 0})
	base, err := bitstreams.Default().Design(DesignName)
	if err != nil {
		f.Fatal(err)
	}
	lab := &labconfig.Lab{Name: "fuzz", Seed: 1, Boards: []labconfig.Board{{Name: "u96", Kind: "ultra96", Emulated: &labconfig.Emulated{}}}}
	rack, err := emu.Start(lab, emu.Options{NoPTY: true})
	if err != nil {
		f.Fatal(err)
	}
	defer rack.Close()
	board, _ := rack.Board("u96")
	m := *base
	m.Params = map[string]string{ParamPorts: "4", ParamS: "2", ParamFIFODepth: "3", ParamPacketBits: "64"}
	els := m.Elements()
	limit := map[string]uint32{"TG_CYCLES": 0x3ff, "DRAIN_CYCLES": 0x3ff, "TG_DRAIN_MAX": 0xfff}
	dd, err := newDesign(board, &m)
	if err != nil {
		f.Fatal(err)
	}
	d := dd.(*design)
	f.Fuzz(func(t *testing.T, ops []byte) {
		d.applyResets() // as after programming
		// Keep traffic runs short: the reset TG_CYCLES is 100000.
		d.tg.cycles, d.tg.drainMax = 256, 4096
		for len(ops) >= 6 {
			op, el, v := ops[0], int(ops[1]), binary.LittleEndian.Uint32(ops[2:6])
			ops = ops[6:]
			e := els[(int(op&0x7f)*256+el)%len(els)]
			addr := uint32(e.Addr)
			if op&0x80 != 0 {
				if l, ok := limit[e.Reg.Name]; ok {
					v &= l
				}
				_ = d.Write32(addr, v)
			} else {
				_, _ = d.Read32(addr)
			}
			checkInvariants(t, d, e.Name+" "+strconv.FormatUint(uint64(v), 16))
		}
	})
}

func checkInvariants(t *testing.T, d *design, after string) {
	c := d.c
	if c.flight != 0 {
		t.Fatalf("after %s: %d packets left in the pipeline", after, c.flight)
	}
	sum := 0
	for k, n := range c.qcount {
		if n < 0 || n > c.depth {
			t.Fatalf("after %s: queue %d holds %d (depth %d)", after, k, n, c.depth)
		}
		sum += int(n)
	}
	if sum != c.queued {
		t.Fatalf("after %s: queues hold %d, the switch counts %d", after, sum, c.queued)
	}
	for s, w := range d.placement {
		if w == 0 {
			continue
		}
		if int(w&0xff) >= d.cfg.Ports || int(w>>8&0xff) >= d.cfg.Ports || int(w>>16&0xfff) >= d.cfg.FIFODepth || w&(placePlaced|placeDropped) == 0 {
			t.Fatalf("after %s: PLACEMENT[%d] = 0x%x", after, s, w)
		}
	}
	for p, e := range d.egress {
		if len(e) > egressDepth {
			t.Fatalf("after %s: egress FIFO %d holds %d", after, p, len(e))
		}
	}
}
