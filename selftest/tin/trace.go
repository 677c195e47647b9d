package tin

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/labrunner/labrunner/drivers"
	gt "github.com/labrunner/labrunner/golden/tin"
	"github.com/labrunner/labrunner/results"
	"github.com/labrunner/labrunner/selftest"
	tt "github.com/labrunner/labrunner/traffic/tin"
)

// modeOf returns the golden routing mode ROUTE_MODE gives a cell type.
func modeOf(routeMode uint32, t tt.CellType) (gt.Mode, bool) {
	field := map[tt.CellType]uint{tt.CellRTS: 0, tt.CellCTS: 2, tt.CellCTD: 2, tt.CellData: 4, tt.CellReq: 6, tt.CellResp: 8, tt.CellOReq: 10, tt.CellOCtl: 12}
	sh, ok := field[t]
	if !ok {
		return 0, false
	}
	return gt.Mode(routeMode >> sh & 3), true
}

// runTracePath traces one IP packet (§6: "Cells that are marked with a bit
// are sampled by each TiN in the cell's path and sent to a central
// collector"), reads every board's collector as that collector and stitches
// the packet: its RTS from source to destination, the CTS back, every data
// cell. Each path must follow the cabling hop by hop (cage to cage, VC and
// hop count), end at its destination endpoint and lie in golden/tin's route
// set of the mode ROUTE_MODE gives its cell type; the data cells must be
// the design's cellification of the packet.
func runTracePath(ctx context.Context, env *selftest.Env) error {
	c, err := cliqueOf(env)
	if err != nil {
		return err
	}
	seed, err := c.seedOf(env)
	if err != nil {
		return err
	}
	prm, err := selftest.ParamsOf[traceParams](env)
	if err != nil {
		return err
	}
	bytes := prm.Bytes
	// Every board's collector and routes are traced in turn (targets),
	// each towards a seeded other board, unless the plan names src.
	var srcs []string
	if prm.Src != nil {
		src, err := boardParam(env, c, "src", prm.Src, "")
		if err != nil {
			return err
		}
		srcs = []string{src}
	} else {
		rot, err := env.Targets(c.all.Boards, env.PlanStart())
		if err != nil {
			return drivers.Setup("", env.Test.Pos.String(), "", err)
		}
		srcs = rot.Boards
	}
	dsts := traceDests(c.all, seed)
	for _, src := range c.all.Boards {
		if !slices.Contains(srcs, src) {
			continue
		}
		dst, err := boardParam(env, c, "dst", prm.Dst, dsts[src])
		if err != nil {
			return err
		}
		if src == dst {
			if prm.Src != nil {
				return fmt.Errorf("%s: trace_path needs two boards, src and dst are both %s", env.Test.Pos, src)
			}
			continue // the named destination does not trace to itself
		}
		if !c.up(src, dst) {
			continue // the runner reports the pair's cases (tracePathCases)
		}
		if err := tracePair(ctx, env, c, src, dst, bytes, seed); err != nil {
			return err
		}
	}
	return nil
}

// traceDests draws each board's destination: one seeded draw per board
// of the plan, in plan order, run or not, so that each source's
// destination is the same whatever the rotation and whichever boards are
// up.
func traceDests(all *tt.Topology, seed uint64) map[string]string {
	r := rand.New(rand.NewPCG(seed, 0x7472616365)) // "trace"
	out := map[string]string{}
	for _, src := range all.Boards {
		others := make([]string, 0, len(all.Boards))
		for _, b := range all.Boards {
			if b != src {
				others = append(others, b)
			}
		}
		out[src] = others[r.IntN(len(others))]
	}
	return out
}

// tracePair traces one IP packet from src to dst and judges its paths.
func tracePair(ctx context.Context, env *selftest.Env, c *clique, src, dst string, bytes int, seed uint64) error {
	if err := c.fresh(ctx); err != nil {
		return err
	}
	if err := c.r.Write(ctx, src, "TRACE_CTRL", tt.TraceIP); err != nil {
		return err
	}
	ws, err := tt.UniformRandom{Load: 0.01, Bytes: bytes, Count: 1, Port: tt.EPNIC, Sources: 0, Dsts: []string{dst}, Seed: seed}.Writes(c.topo, c.timing.InjectMbps)
	if err != nil {
		return err
	}
	if err := c.r.Load(ctx, map[string]tt.Writes{src: ws[src]}); err != nil {
		return err
	}
	rr, err := c.run(ctx)
	if err != nil {
		return err
	}
	p := results.Params{"src": src, "dst": dst, "bytes": strconv.Itoa(bytes)}
	if !runStatus(env, "trace_path", rr, p, "the traced packet") {
		notJudged(env, src, p, "the traced packet's run did not finish (trace_path.run)", "trace_path", "trace_path.routes")
		return nil
	}
	recs, err := c.r.AllTraces(ctx)
	if err != nil {
		return err
	}
	rm, err := c.r.Read(ctx, src, "ROUTE_MODE")
	if err != nil {
		return err
	}
	paths := tt.Stitch(c.topo, recs)
	pkts := tt.Packets(paths)
	var problems []string
	if len(pkts) != 1 {
		problems = append(problems, fmt.Sprintf("%d packets stitched from %d trace records, want the one traced", len(pkts), len(recs)))
	}
	var lines []string
	judge := newPathJudge(c)
	var outside []string
	if len(pkts) == 1 {
		pk := pkts[0]
		cells := []*tt.CellPath{pk.RTS, pk.CTS}
		for i := range pk.Data {
			cells = append(cells, &pk.Data[i])
		}
		if pk.CTS == nil {
			problems = append(problems, "no CTS answers the RTS in the collectors")
		}
		want := c.timing.DataCells(bytes)
		if len(pk.Data) != len(want) {
			problems = append(problems, fmt.Sprintf("%d data cells stitched, the design cuts %d bytes into %d", len(pk.Data), bytes, len(want)))
		}
		for i, cp := range cells {
			if cp == nil {
				continue
			}
			name := cp.ID.Type.String()
			if cp.ID.Type == tt.CellData {
				name = fmt.Sprintf("DATA[%d]", tt.DecodeDataPtr(cp.ID.Ptr).Index)
				if k := i - 2; k < len(want) && cp.Records[0].Header.Len != want[k] {
					problems = append(problems, fmt.Sprintf("%s is %d bytes, the design's cell %d is %d", name, cp.Records[0].Header.Len, k, want[k]))
				}
			}
			lines = append(lines, name+" "+cp.Text())
			if !cp.Complete {
				problems = append(problems, fmt.Sprintf("%s: %s", name, firstLines(cp.Problems, 2)))
				continue
			}
			mode, ok := modeOf(rm, cp.ID.Type)
			if !ok {
				continue
			}
			in, set, err := judge.judge(*cp, mode)
			if err != nil {
				return err
			}
			if !in {
				outside = append(outside, fmt.Sprintf("%s %s (%s) not in {%s}", name, cp.Text(), mode, set))
			}
		}
	}
	if len(pkts) == 1 {
		judgeHeadLatency(env, c, src, p, "RTS", pkts[0].RTS)
		judgeHeadLatency(env, c, src, p, "CTS", pkts[0].CTS)
	} else {
		for _, cell := range []string{"RTS", "CTS"} {
			pp := p.Clone()
			pp["cell"] = cell
			notJudged(env, src, pp, fmt.Sprintf("%d packets stitched, not the one traced (trace_path)", len(pkts)), "trace_path.head_latency")
		}
	}
	env.Check("trace_path", results.Measurement{Board: src, Params: p, Metric: "tin.trace.packet", Value: float64(len(problems)), Text: strings.Join(lines, "; ")},
		len(problems) == 0, "RTS, CTS and every data cell stitched from injection to ejection along the cabling", "Aquila §6 (cell tracing, stitched at the collector)",
		fmt.Sprintf("the traced packet %s -> %s could not be stitched: %s", src, dst, firstLines(problems, 4)))
	env.Check("trace_path.routes", results.Measurement{Board: src, Params: p, Metric: "tin.trace.paths_outside", Value: float64(len(outside)), Text: firstLines(outside, 3)},
		len(outside) == 0 && len(lines) > 0, "every cell's path in golden/tin's route set of its routing mode", "Aquila §3.2 (golden/tin route sets)",
		fmt.Sprintf("the traced packet %s -> %s: %s", src, dst, map[bool]string{true: firstLines(outside, 3), false: "no path stitched"}[len(outside) > 0]))
	return nil
}
