package prr

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/boards"
	"github.com/labrunner/labrunner/boards/emu"
	"github.com/labrunner/labrunner/drivers"
	"github.com/labrunner/labrunner/labconfig"
)

// rig is one emulated Ultra96 programmed with the prr design through the
// catalogue and the board's programmer, driven over its register bus.
type rig struct {
	t    testing.TB
	rack *emu.Rack
	bus  drivers.RegisterBus
	m    *bitstreams.Manifest
	cfg  Config
	ctx  context.Context
}

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
	seed := o.seed
	if seed == 0 {
		seed = 1
	}
	lab := &labconfig.Lab{Name: "prr-test", Seed: seed, Faults: o.faults}
	lab.Boards = []labconfig.Board{{
		Name: "u96", Kind: "ultra96",
		Bus:        labconfig.Bus{Emulated: &struct{}{}},
		Programmer: labconfig.Programmer{Type: "emulated"},
		Emulated:   &labconfig.Emulated{},
	}}
	for i := range lab.Faults {
		if lab.Faults[i].Board == "" {
			lab.Faults[i].Board = "u96"
		}
	}
	r, err := emu.Start(lab, emu.Options{NoPTY: true, Catalogue: cat})
	if err != nil {
		t.Fatalf("emu.Start: %v", err)
	}
	t.Cleanup(func() { r.Close() })
	b, _ := r.Board("u96")
	kind, err := boards.Lookup("ultra96")
	if err != nil {
		t.Fatal(err)
	}
	img, err := cat.Image(DesignName, kind.Part)
	if err != nil {
		t.Fatalf("catalogue image for %s: %v", kind.Part, err)
	}
	timeout := o.timeout
	if timeout == 0 {
		timeout = 2 * time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	if err := b.Programmer().Program(ctx, img); err != nil {
		t.Fatalf("program: %v", err)
	}
	m, err := cat.Design(DesignName)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := ConfigFromManifest(m)
	if err != nil {
		t.Fatal(err)
	}
	return &rig{t: t, rack: r, bus: b.Bus(), m: m, cfg: cfg, ctx: ctx}
}

func (g *rig) addr(name string) uint64 {
	g.t.Helper()
	_, a, err := g.m.Lookup(name)
	if err != nil {
		g.t.Fatal(err)
	}
	return a
}

func (g *rig) w(name string, v uint32) {
	g.t.Helper()
	if err := g.bus.Write32(g.ctx, g.addr(name), v); err != nil {
		g.t.Fatalf("write %s = 0x%x: %v", name, v, err)
	}
}

func (g *rig) r(name string) uint32 {
	g.t.Helper()
	v, err := g.bus.Read32(g.ctx, g.addr(name))
	if err != nil {
		g.t.Fatalf("read %s: %v", name, err)
	}
	return v
}

func (g *rig) r64(lo string) uint64 {
	g.t.Helper()
	l := g.r(lo + "_LO")
	h := g.r(lo + "_HI")
	return uint64(h)<<32 | uint64(l)
}

func (g *rig) burst(addr uint64, n int) []uint32 {
	g.t.Helper()
	out := make([]uint32, n)
	for off := 0; off < n; off += 256 { // the UART bridge's largest burst
		k := min(256, n-off)
		if err := g.bus.ReadBurst(g.ctx, addr+uint64(4*off), out[off:off+k]); err != nil {
			g.t.Fatalf("burst read 0x%x: %v", addr, err)
		}
	}
	return out
}

// pkt is one packet of a debug batch.
type pkt struct {
	slot int
	dest int
	tag  uint32
}

// insert writes a batch into the batch registers and releases it.
func (g *rig) insert(batch []pkt) {
	g.t.Helper()
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
	g.t.Helper()
	words := g.burst(g.addr("PLACEMENT[0]"), g.cfg.Ports)
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
	g.t.Helper()
	p, depth := g.cfg.Ports, g.cfg.FIFODepth
	st := g.burst(g.addr("QSTAT"), p*p)
	all := g.burst(g.addr("QTAGS"), p*p*depth)
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
	g.t.Helper()
	n := int(g.r(fmt.Sprintf("EGRESS_COUNT[%d]", port)))
	base := g.addr(fmt.Sprintf("EGRESS_POP[%d]", port))
	out := make([]uint32, n)
	// Every word of the port's block pops, so each burst starts at its base
	// and stays inside the 256-word block.
	for off := 0; off < n; off += 256 {
		k := min(256, n-off)
		if err := g.bus.ReadBurst(g.ctx, base, out[off:off+k]); err != nil {
			g.t.Fatalf("burst read EGRESS_POP[%d]: %v", port, err)
		}
	}
	return out
}

func fault(name string, kv ...string) labconfig.Fault {
	f := labconfig.Fault{Name: name, Params: labconfig.Params{}}
	for i := 0; i+1 < len(kv); i += 2 {
		f.Params[kv[i]] = labconfig.Param{Values: []string{kv[i+1]}}
	}
	return f
}
