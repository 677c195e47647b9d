package tin_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/labrunner/labrunner/bitstreams"
	_ "github.com/labrunner/labrunner/boards/emu/designs" // the emulated tin design (test only: the driver never imports the emulator)
	"github.com/labrunner/labrunner/boards/emu/emutest"
	"github.com/labrunner/labrunner/drivers"
	"github.com/labrunner/labrunner/drivers/regmap"
	"github.com/labrunner/labrunner/labconfig"
	tt "github.com/labrunner/labrunner/traffic/tin"
)

// The rig is the default Clique of docs/tin.md (2 pods x 4 ZCU102 boards,
// 16 cables) on the in-process emulated rack: the driver sees only
// registers.

func boardName(p, t int) string { return fmt.Sprintf("tin-p%db%d", p, t) }

// docCables is the cabling rule of docs/tin.md: in a pod, board T's sfpK
// goes to board (T+K+1) mod 4 on its sfp(2-K); sfp3 joins the pods.
func docCables() []tt.Cable {
	var out []tt.Cable
	for p := 0; p < 2; p++ {
		for t := 0; t < 4; t++ {
			for k := 0; k < 3; k++ {
				u := (t + k + 1) % 4
				if u <= t {
					continue
				}
				out = append(out, tt.Cable{A: tt.Cage{Board: boardName(p, t), Index: k}, B: tt.Cage{Board: boardName(p, u), Index: 2 - k}, LatencyNS: 5})
			}
		}
	}
	for t := 0; t < 4; t++ {
		out = append(out, tt.Cable{A: tt.Cage{Board: boardName(0, t), Index: 3}, B: tt.Cage{Board: boardName(1, t), Index: 3}, LatencyNS: 50})
	}
	return out
}

func docNodes() ([]string, map[string]tt.Node) {
	var order []string
	nodes := map[string]tt.Node{}
	for p := 0; p < 2; p++ {
		for t := 0; t < 4; t++ {
			order = append(order, boardName(p, t))
			nodes[boardName(p, t)] = tt.Node{Pod: p, TiN: t}
		}
	}
	return order, nodes
}

type rig struct {
	t    testing.TB
	ctx  context.Context
	rack *tt.Rack
	topo *tt.Topology
}

func newRig(t testing.TB, faults ...labconfig.Fault) *rig {
	t.Helper()
	return newWrappedRig(t, nil, faults...)
}

// newWrappedRig is newRig with wrap (when not nil) between the driver and
// each board's bus.
func newWrappedRig(t testing.TB, wrap func(board string, bus drivers.RegisterBus) drivers.RegisterBus, faults ...labconfig.Fault) *rig {
	t.Helper()
	return newBuildRig(t, wrap, nil, faults...)
}

// newBuildRig is newWrappedRig with the driver given build(manifest) for
// each board (when build is not nil): another build of the design on the
// same emulated boards.
func newBuildRig(t testing.TB, wrap func(board string, bus drivers.RegisterBus) drivers.RegisterBus,
	build func(*bitstreams.Manifest) *bitstreams.Manifest, faults ...labconfig.Fault) *rig {
	t.Helper()
	order, nodes := docNodes()
	cables := docCables()
	spec := emutest.Rack{Name: "tin-driver-test", Seed: 11, Faults: faults, Design: "tin", Timeout: 2 * time.Minute}
	for i, b := range order {
		spec.Boards = append(spec.Boards, emutest.Board{Name: b, Kind: "zcu102", PPM: float64(3*i - 9)})
	}
	for _, c := range cables {
		spec.Cables = append(spec.Cables, emutest.Cable{A: fmt.Sprintf("%s:sfp%d", c.A.Board, c.A.Index),
			B: fmt.Sprintf("%s:sfp%d", c.B.Board, c.B.Index), LatencyNS: c.LatencyNS})
	}
	er := emutest.Start(t, spec)
	ctx := er.Ctx
	regs := map[string]*regmap.Regs{}
	for _, b := range er.Names {
		regs[b] = er.Regs(b)
		bus, m := er.Bus(b), regs[b].Manifest()
		if wrap != nil {
			bus = wrap(b, bus)
		}
		if build != nil {
			m = build(m)
		}
		if wrap != nil || build != nil {
			regs[b] = regmap.New(bus, m, b)
		}
	}
	topo, err := tt.NewTopology(order, nodes, cables)
	if err != nil {
		t.Fatal(err)
	}
	rack, err := tt.NewRack(topo, regs)
	if err != nil {
		t.Fatal(err)
	}
	g := &rig{t: t, ctx: ctx, rack: rack, topo: topo}
	if err := rack.Configure(ctx); err != nil {
		t.Fatalf("configure: %v", err)
	}
	if down, err := rack.WaitLinks(ctx, time.Second); err != nil || len(down) > 0 {
		t.Fatalf("links down after configure: %v (%v)", down, err)
	}
	if err := rack.Quiet(ctx); err != nil {
		t.Fatal(err)
	}
	return g
}

func (g *rig) load(ws map[string]tt.Writes, err error) {
	g.t.Helper()
	if err != nil {
		g.t.Fatal(err)
	}
	if err := g.rack.Load(g.ctx, ws); err != nil {
		g.t.Fatal(err)
	}
}

func (g *rig) run() tt.RunResult {
	g.t.Helper()
	rr, err := g.rack.Run(g.ctx, 0)
	if err != nil {
		g.t.Fatalf("run: %v", err)
	}
	if !rr.Done() {
		g.t.Fatalf("run ended %s", rr.Describe())
	}
	return rr
}

func (g *rig) sum(name string) uint64 {
	g.t.Helper()
	v, err := g.rack.Sum(g.ctx, name)
	if err != nil {
		g.t.Fatal(err)
	}
	return v
}
