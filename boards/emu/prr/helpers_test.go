package prr

import (
	"fmt"
	"testing"
	"time"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/boards/emu/emutest"
	"github.com/labrunner/labrunner/drivers"
	"github.com/labrunner/labrunner/labconfig"
)

// rig is one emulated Ultra96 programmed with the prr design through the
// catalogue and the board's programmer, driven over its register bus.
type rig struct {
	*emutest.Rig
	bus drivers.RegisterBus // the board's
	cfg Config
}

// rigBoard is the rig's one board.
const rigBoard = "u96"

type rigOpts struct {
	cfg    *Config // nil: the catalogue's build
	faults []labconfig.Fault
	seed   int64
	// timeout bounds the rig's register accesses (default 2 minutes): a
	// test that runs millions of cycles inside its writes needs more under
	// the race detector on a loaded machine.
	timeout time.Duration
}

// catalogueConfig is the build the embedded catalogue lists.
func catalogueConfig(t testing.TB) Config {
	t.Helper()
	m, err := bitstreams.Default().Design(DesignName)
	if err != nil {
		t.Fatal(err)
	}
	c, err := ConfigFromManifest(m)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func newRig(t testing.TB, o rigOpts) *rig {
	t.Helper()
	cat := bitstreams.Default()
	if o.cfg != nil {
		var err error
		if cat, err = VariantCatalogue(t.TempDir(), cat, *o.cfg); err != nil {
			t.Fatal(err)
		}
	}
	var faults []labconfig.Fault
	for _, f := range o.faults {
		if f.Board == "" {
			f.Board = rigBoard
		}
		faults = append(faults, f)
	}
	timeout := o.timeout
	if timeout == 0 {
		timeout = 2 * time.Minute
	}
	g := emutest.Start(t, emutest.Rack{Name: "prr-test", Seed: o.seed, Faults: faults, Design: DesignName, Catalogue: cat,
		Timeout: timeout, Boards: []emutest.Board{{Name: rigBoard, Kind: "ultra96"}}})
	cfg, err := ConfigFromManifest(g.M)
	if err != nil {
		t.Fatal(err)
	}
	return &rig{Rig: g, bus: g.Bus(rigBoard), cfg: cfg}
}

func (g *rig) w(name string, v uint32)           { g.T.Helper(); g.Write(rigBoard, name, v) }
func (g *rig) r(name string) uint32              { g.T.Helper(); return g.Read(rigBoard, name) }
func (g *rig) r64(lo string) uint64              { g.T.Helper(); return g.Read64(rigBoard, lo+"_LO") }
func (g *rig) burst(addr uint64, n int) []uint32 { g.T.Helper(); return g.Burst(rigBoard, addr, n) }

// pkt is one packet of a debug batch.
type pkt struct {
	slot int
	dest int
	tag  uint32
}

// insert writes a batch into the batch registers and releases it.
func (g *rig) insert(batch []pkt) {
	g.T.Helper()
	for _, p := range batch {
		g.w(fmt.Sprintf("BATCH_DATA[%d]", p.slot), p.tag)
		g.w(fmt.Sprintf("BATCH_CTRL[%d]", p.slot), 1<<31|uint32(p.dest))
	}
	g.w("CTRL", ctrlRelease)
}

// place is where a packet went.
type place struct {
	group, queue, pos int
	dropped           bool
}

func (g *rig) placements() []place {
	g.T.Helper()
	words := g.burst(g.Addr("PLACEMENT[0]"), g.cfg.Ports)
	out := make([]place, len(words))
	for i, w := range words {
		switch {
		case w&placePlaced != 0:
			out[i] = place{group: int(w & 0xff), queue: int(w >> 8 & 0xff), pos: int(w >> 16 & 0xfff)}
		case w&placeDropped != 0:
			out[i] = place{group: int(w & 0xff), queue: int(w >> 8 & 0xff), dropped: true, pos: -1}
		default:
			out[i] = place{group: -1, queue: -1, pos: -1}
		}
	}
	return out
}

// queues reads every queue's fill level and contents (QSTAT and QTAGS).
func (g *rig) queues() (count []int, tags [][]uint32) {
	g.T.Helper()
	p, depth := g.cfg.Ports, g.cfg.FIFODepth
	st := g.burst(g.Addr("QSTAT"), p*p)
	all := g.burst(g.Addr("QTAGS"), p*p*depth)
	count = make([]int, p*p)
	tags = make([][]uint32, p*p)
	for k := range st {
		count[k] = int(st[k] & 0x1fff)
		tags[k] = all[k*depth : k*depth+count[k]]
	}
	return count, tags
}

// egress pops every tag captured at port.
func (g *rig) egress(port int) []uint32 {
	g.T.Helper()
	n := int(g.r(fmt.Sprintf("EGRESS_COUNT[%d]", port)))
	// Every word of the port's block pops, so each burst starts at its base
	// and stays inside the 256-word block.
	return g.Pop(rigBoard, g.Addr(fmt.Sprintf("EGRESS_POP[%d]", port)), n)
}

// fault is a fault to inject, with its parameters as key, value pairs.
var fault = emutest.Fault
