// Package exanet holds the ExaNet plan's tests: link-up, the self-test
// bandwidth of the APErouter and APElink (ExaNet §4.3), the KARMA ping-pong
// latency (§4.2), the DOR path of traced packets (§3.3) and the intra-tile
// port access KARMA uses (§4). Measurements come from the design's counters
// through traffic/exanet; expectations from golden/exanet.
package exanet

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	gx "github.com/labrunner/labrunner/golden/exanet"
	"github.com/labrunner/labrunner/labconfig"
	"github.com/labrunner/labrunner/selftest"
	tx "github.com/labrunner/labrunner/traffic/exanet"
)

const design = "exanet"

// linkPorts are the board cages the two APElinks sit on (link 0, link 1).
var linkPorts = []string{"sfp0", "sfp1"}

// topo is what setup learnt about the mesh, for the tests.
type topo struct {
	lattice tx.Coord
	order   string
	coord   map[string]tx.Coord
	byCoord map[tx.Coord]string
	// peer[board][i] is the plan board cabled to link i, or "".
	peer map[string][2]string
	// boards in plan order.
	names []string
}

// newTopo is the mesh of a plan's parameters, with no board placed yet.
func newTopo(pp planParams) *topo {
	return &topo{coord: map[string]tx.Coord{}, byCoord: map[tx.Coord]string{}, peer: map[string][2]string{},
		lattice: tx.Coord{pp.Lattice[0], pp.Lattice[1], pp.Lattice[2]}, order: pp.DOROrder}
}

// place puts a board at its coordinate (the decode checked that it is
// inside the lattice and alone at its place).
func (t *topo) place(board string, bp boardParams) {
	co := bp.coord()
	t.coord[board], t.byCoord[co] = co, board
	t.names = append(t.names, board)
}

// topoState is the mesh the setup brought up, for every test.
var topoState = selftest.State[*topo]{Key: "exanet"}

func (t *topo) gcoord(board string) gx.Coord {
	c := t.coord[board]
	return gx.Coord{X: c[0], Y: c[1], Z: c[2]}
}

// missing returns the first node of a path that is not a working board of
// the plan ("" when every node is).
func (t *topo) missing(nodes []gx.Coord) string {
	for _, n := range nodes {
		if _, ok := t.byCoord[tx.Coord{n.X, n.Y, n.Z}]; !ok {
			return n.String()
		}
	}
	return ""
}

func topoOf(env *selftest.Env) (*topo, error) {
	t, ok := topoState.Get(env)
	if !ok {
		return nil, fmt.Errorf("exanet setup did not run")
	}
	return t, nil
}

// bandwidthParams are the bandwidth test's parameters.
type bandwidthParams struct {
	Path     string `param:"path" oneof:"router,router2x,link" doc:"the path measured: one intra-tile port to another (router), two to the same target port (router2x), or across each APElink (link)"`
	Payloads []int  `param:"payloads" doc:"payload sizes in bytes, one run each"`
	Packets  int    `param:"packets" doc:"packets per run"`
}

// latencyParams are the latency test's parameters.
type latencyParams struct {
	Hops       []int `param:"hops" doc:"hop counts of the ping-pong pairs"`
	Payloads   []int `param:"payloads" doc:"payload sizes in bytes"`
	Iterations int   `param:"iterations" doc:"round trips per pair and payload"`
}

// hopLatencyParams are the hop_latency test's parameters.
type hopLatencyParams struct {
	Pairs int `param:"pairs" min:"1" max:"256" doc:"traced packets each way per cable (each router's trace FIFO holds 1024 entries)"`
}

// planParams are what an ExaNet plan takes in its params: the mesh's size
// and the routers' dimension order (§3.3).
type planParams struct {
	Lattice  []int  `param:"lattice" min:"1" doc:"the mesh's size in nodes along X, Y and Z (three sizes); every board's coord lies inside it"`
	DOROrder string `param:"dor_order" doc:"the dimension order of the routers' DOR (§3.3): a permutation of XYZ"`
}

// CheckParams wants three lattice sizes and a dimension order the router
// takes.
func (p planParams) CheckParams() error {
	if len(p.Lattice) != 3 {
		return &labconfig.ParamError{Key: "lattice", Msg: fmt.Sprintf("got %d sizes, want three (X, Y, Z)", len(p.Lattice)), Fix: "write lattice: [X, Y, Z], e.g. [2, 2, 1]"}
	}
	if _, err := tx.OrderWord(p.DOROrder); err != nil {
		return &labconfig.ParamError{Key: "dor_order", Msg: err.Error(), Fix: "write dor_order: XYZ (or another order of X, Y and Z)"}
	}
	return nil
}

// CheckBoards wants every board inside the lattice and no two boards at
// one place.
func (p planParams) CheckBoards(boards []selftest.BoardParams) error {
	var errs []error
	at := map[tx.Coord]string{}
	for _, b := range boards {
		c := b.Params.(boardParams).coord()
		for i := 0; i < 3; i++ {
			if c[i] >= p.Lattice[i] {
				errs = append(errs, &selftest.BoardParamError{Board: b.Name, Key: "coord",
					Msg: fmt.Sprintf("coordinate %s is outside the lattice %v", c, p.Lattice),
					Fix: fmt.Sprintf("give each coordinate below the plan's lattice (%d, %d, %d), or enlarge the lattice", p.Lattice[0], p.Lattice[1], p.Lattice[2])})
				break
			}
		}
		if other, dup := at[c]; dup {
			errs = append(errs, &selftest.BoardParamError{Board: b.Name, Key: "coord",
				Msg: fmt.Sprintf("boards %s and %s are both at %s", other, b.Name, c), Fix: "give each board its own place in the mesh"})
			continue
		}
		at[c] = b.Name
	}
	return errors.Join(errs...)
}

// boardParams are what each board of an ExaNet plan takes in its params:
// its place in the mesh, which the routers are programmed with (§4).
type boardParams struct {
	Coord []int `param:"coord" required:"true" min:"0" doc:"the board's place in the mesh: [x, y, z], each below the plan's lattice"`
}

// CheckCables wants every cable between two of the plan's link ports to
// join boards one hop apart in the mesh (the direction the setup programs
// each link with, traffic/exanet.DirectionTo).
func (p planParams) CheckCables(c selftest.Cabling) error {
	coord := map[string]tx.Coord{}
	for _, b := range c.Boards {
		coord[b.Name] = b.Params.(boardParams).coord()
	}
	var errs []error
	for _, l := range c.Lab.Links {
		if !c.InPlan(l.A.Board) || !c.InPlan(l.B.Board) || !slices.Contains(linkPorts, l.A.Port) || !slices.Contains(linkPorts, l.B.Port) {
			continue
		}
		if _, err := tx.DirectionTo(coord[l.A.Board], coord[l.B.Board]); err != nil {
			errs = append(errs, &labconfig.Error{Pos: l.Pos, Msg: fmt.Sprintf("cable %s:%s - %s:%s: %v", l.A.Board, l.A.Port, l.B.Board, l.B.Port, err),
				Fix: "cable boards one hop apart in the mesh, or fix their coord"})
		}
	}
	return errors.Join(errs...)
}

// CheckParams wants three coordinates.
func (p boardParams) CheckParams() error {
	if len(p.Coord) != 3 {
		return &labconfig.ParamError{Key: "coord", Msg: fmt.Sprintf("got %d coordinates, want three", len(p.Coord)), Fix: "write coord: [x, y, z], e.g. [1, 0, 0]"}
	}
	return nil
}

func (p boardParams) coord() tx.Coord { return tx.Coord{p.Coord[0], p.Coord[1], p.Coord[2]} }

// portLoopbackParams are the port_loopback test's parameters.
type portLoopbackParams struct {
	Payloads []int `param:"payloads" doc:"payload sizes in words written into the port"`
}

func init() {
	selftest.RegisterSetup(design, setup, selftest.DesignParams{
		Plan: planParams{Lattice: []int{2, 2, 1}, DOROrder: "XYZ"}, Board: boardParams{}})
	selftest.RegisterHealth(design, health)
	selftest.Register(selftest.Test{Name: "links", Design: design, Run: runLinks,
		Doc: "every cabled APElink of the mesh is up and idle with its full credit (§3.4)"})
	selftest.Register(selftest.Test{Name: "bandwidth", Design: design, Run: runBandwidth,
		Params: bandwidthParams{Path: gx.PathRouter, Payloads: []int{32, 64, 128, 256, 512}, Packets: 2000},
		Doc:    "self-test bandwidth of the APErouter (one or two sending ports) or of each APElink versus payload size, from the Performance Counter (§4.3)"})
	selftest.Register(selftest.Test{Name: "latency", Design: design, Run: runLatency,
		Params: latencyParams{Hops: []int{1, 2}, Payloads: []int{16, 32, 64, 128, 256, 512}, Iterations: 64},
		Doc:    "KARMA ping-pong round-trip latency versus hops and payload size (§4.2)"})
	selftest.Register(selftest.Test{Name: "hop_latency", Design: design, Run: runHopLatency,
		Params: hopLatencyParams{Pairs: 16},
		Doc:    "router-to-router time of every cable, both ways, from the routers' trace stamps, against §4.2's 0.46 µs single-hop contribution (reading E41)"})
	selftest.Register(selftest.Test{Name: "dor_path", Design: design, Run: runDORPath,
		Doc: "a traced packet between every ordered pair of nodes follows the golden dimension-ordered path, VCs included (§3.3)"})
	selftest.Register(selftest.Test{Name: "link_errors", Design: design, Run: runLinkErrors,
		Doc: "every link receiver's error counters after the plan's traffic: corrected headers recorded per cable end " +
			"(exanet.link.ecc_corrected, a degrading cable's trace), no uncorrectable header and no payload CRC error (§3.4)"})
	selftest.Register(selftest.Test{Name: "port_loopback", Design: design, Run: runPortLoopback,
		Params: portLoopbackParams{Payloads: []int{4, 100, 512}},
		Doc:    "a packet written word by word into an intra-tile port arrives intact at the neighbour's port (KARMA port access, §4)"})
}

// setup reads the plan's coordinates, derives each link's direction from
// the lab's cables, and programs every router (§4: the Target Controller
// sets coordinates and lattice size).
func setup(ctx context.Context, env *selftest.Env) error {
	pp, err := selftest.PlanParamsOf[planParams](env)
	if err != nil {
		return err
	}
	t := newTopo(pp)
	for _, b := range env.Boards {
		bp, err := selftest.BoardParamsOf[boardParams](env, b)
		if err != nil {
			return err
		}
		t.place(b.Name, bp)
	}
	for _, b := range env.Boards {
		var dirs [2]int
		var peers [2]string
		for i, port := range linkPorts {
			peer := peerOf(env.Lab, b.Name, port)
			if peer == "" {
				continue
			}
			if _, in := t.coord[peer]; !in {
				continue // cabled to a board outside this plan
			}
			d, err := tx.DirectionTo(t.coord[b.Name], t.coord[peer])
			if err != nil {
				return fmt.Errorf("cable %s:%s - %s: %w", b.Name, port, peer, err)
			}
			dirs[i], peers[i] = d, peer
		}
		t.peer[b.Name] = peers
		rctx, cancel := regDeadline(env, ctx, 16)
		err := tx.Configure(rctx, b.Regs, tx.Config{Coord: t.coord[b.Name], Lattice: t.lattice, Order: t.order, LinkDir: dirs})
		cancel()
		if err != nil {
			return fmt.Errorf("board %s: configuring the router: %w", b.Name, err)
		}
	}
	topoState.Set(env, t)
	return nil
}

// regDeadline bounds a sequence of n register accesses.
func regDeadline(env *selftest.Env, ctx context.Context, n int) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, durationTimes(env.Deadlines.Register, n))
}

func peerOf(lab *labconfig.Lab, board, port string) string {
	for _, l := range lab.Links {
		if l.A.Board == board && l.A.Port == port {
			return l.B.Board
		}
		if l.B.Board == board && l.B.Port == port {
			return l.A.Board
		}
	}
	return ""
}

func sortedNames(m map[string]tx.Coord) []string {
	out := make([]string, 0, len(m))
	for n := range m {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func joinLines(s []string) string { return strings.Join(s, "; ") }

// health takes a board out of the plan when none of its cabled links comes
// up: that is a board, cable or power problem, not something the design's
// link test should be judged on. A board with some links up stays, and the
// links test reports the others.
func health(ctx context.Context, env *selftest.Env, b *selftest.Board) error {
	t, err := topoOf(env)
	if err != nil {
		return err
	}
	cabled, up := 0, 0
	for i := range linkPorts {
		if t.peer[b.Name][i] == "" {
			continue
		}
		cabled++
		st, err := tx.ReadLink(ctx, b.Regs, i)
		if err != nil {
			return err
		}
		if st.Up {
			up++
		}
	}
	if cabled > 0 && up == 0 {
		return fmt.Errorf("none of its %d cabled links is up", cabled)
	}
	return nil
}
