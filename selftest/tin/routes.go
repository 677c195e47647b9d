package tin

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/drivers"
	gt "github.com/labrunner/labrunner/golden/tin"
	"github.com/labrunner/labrunner/results"
	"github.com/labrunner/labrunner/selftest"
	tt "github.com/labrunner/labrunner/traffic/tin"
)

// goldenAddr converts a design address to golden/tin's.
func goldenAddr(a tt.Addr) gt.Addr { return gt.Addr{Pod: a.Pod(), TiN: a.TiN(), EP: a.EP()} }

// pathJudge checks stitched paths against golden/tin's route sets.
type pathJudge struct {
	pl   *gt.Plan
	sets map[string]gt.RouteSet
}

func newPathJudge(c *clique) *pathJudge {
	return &pathJudge{pl: c.plan, sets: map[string]gt.RouteSet{}}
}

// set returns the golden route set of a cell's addresses, mode and class.
func (j *pathJudge) set(id tt.CellID, mode gt.Mode, class int) (gt.RouteSet, error) {
	k := fmt.Sprintf("%s>%s/%d/%d", id.Src.Node(), id.Dst.Node(), mode, class)
	if rs, ok := j.sets[k]; ok {
		return rs, nil
	}
	rs, err := j.pl.Clique.Routes(goldenAddr(id.Src), goldenAddr(id.Dst), mode, class)
	if err != nil {
		return rs, err
	}
	j.sets[k] = rs
	return rs, nil
}

// judge reports whether a complete path is one the mode may give: in the
// golden route set, or — for a non-minimal route of a mode that allows them
// — a route with the properties the paper fixes (reading A7, Aquila §3.2):
// Aquila keeps inside a pod "turn rules similar to the parity-sign approach
// in [20]" without giving them, so which two-hop and inter-pod detours a
// pod's tables offer is the operator's choice, and golden/tin's own
// reconstruction of [20] is not the only right one. What the paper does fix
// is checked instead: at most two global hops (the worst route, "a
// non-minimal route via an intermediate pod", uses 3 VCs), no TiN twice,
// the VC raised on each global-to-local turn (VC = 3·class + global hops
// already crossed, as golden/tin numbers them), and — over every path
// observed — no cycle of channel dependencies (checked by deadlockFree).
// Minimal routes must be in the golden set.
func (j *pathJudge) judge(p tt.CellPath, mode gt.Mode) (bool, string, error) {
	rs, err := j.set(p.ID, mode, p.Class())
	if err != nil {
		return false, "", err
	}
	in, err := gt.PathInSet(p.Text(), rs)
	if err != nil {
		return false, "", err
	}
	if !in && !mode.Minimal() {
		if gp, perr := gt.ParsePath(p.Text()); perr == nil && nonMinimalOK(gp, p.Class(), len(rs.Minimal) > 0 && minimalLen(rs) < len(gp.Hops)) {
			in = true
		}
	}
	all := rs.All()
	names := make([]string, 0, len(all))
	for _, q := range all {
		names = append(names, q.String())
	}
	return in, strings.Join(names, " | "), nil
}

// routeMode is a mode's name, ROUTE_MODE value and golden mode.
type routeMode struct {
	name  string
	value uint32
	mode  gt.Mode
}

func parseRouteModes(names []string) ([]routeMode, error) {
	var out []routeMode
	for _, n := range names {
		m, err := gt.ParseMode(n)
		if err != nil {
			return nil, err
		}
		v, ok := tt.RouteModes[m.String()]
		if !ok {
			return nil, fmt.Errorf("routing mode %s has no ROUTE_MODE value", m)
		}
		out = append(out, routeMode{m.String(), v, m})
	}
	return out, nil
}

// runRoutes puts every cell type in one routing mode at a time (ROUTE_MODE
// all 0, 0x1555, 0x2AAA or 0x3FFF), traces light uniform-random traffic
// between every pair of boards, stitches the RTS, CTS and data cells'
// paths and judges them against golden/tin's route set of that mode and
// traffic class (§3.2): TiN sequence, hop count and VCs. In a hashed mode
// every cell of an address pair and class must take one path.
func runRoutes(ctx context.Context, env *selftest.Env) error {
	c, err := cliqueOf(env)
	if err != nil {
		return err
	}
	prm, err := selftest.ParamsOf[routesParams](env)
	if err != nil {
		return err
	}
	modes, err := parseRouteModes(prm.Modes)
	if err != nil {
		return fmt.Errorf("%s: %w", env.Test.Pos, err)
	}
	load, count := prm.Load, prm.Count
	// Packets of several cells: a packet's cells queue at the source's
	// output faster than a link drains them (100 Gb/s injection, 25 Gb/s
	// links), so adaptive modes take non-minimal entries too (§5.1
	// self-congestion) and their whole route sets are exercised.
	bytes := prm.Bytes
	seed, err := c.seedOf(env)
	if err != nil {
		return err
	}
	classes, err := ipClasses(env.Design)
	if err != nil {
		return drivers.Setup("", "design "+env.Design.Name, "", err)
	}
	judge := newPathJudge(c)
	es, err := c.golden(map[string]string{"modes": strings.Join(prm.Modes, ",")})
	if err != nil {
		return err
	}
	for _, rm := range modes {
		if err := c.fresh(ctx); err != nil {
			return err
		}
		if err := c.r.WriteAll(ctx, "ROUTE_MODE", rm.value); err != nil {
			return err
		}
		if err := c.r.WriteAll(ctx, "TRACE_CTRL", tt.TraceIP); err != nil {
			return err
		}
		ws, err := tt.UniformRandom{Load: load, Bytes: bytes, Count: count, Port: tt.EPNIC, Seed: seed}.Writes(c.topo, c.timing.InjectMbps)
		if err != nil {
			return err
		}
		if err := c.r.Load(ctx, ws); err != nil {
			return err
		}
		rr, err := c.run(ctx)
		if err != nil {
			return err
		}
		runStatus(env, "routes", rr, results.Params{"mode": rm.name}, "traced uniform-random traffic in mode "+rm.name)
		recs, err := c.r.AllTraces(ctx)
		if err != nil {
			return err
		}
		paths := tt.Stitch(c.topo, recs)
		judgeModePaths(env, c, judge, es, rm, paths, classes)
	}
	return nil
}

// ipClasses are the traffic classes the routes test's IP cells (CoS 0)
// travel in: RTS in TC0, CTS in TC1 (docs/tin.md, traffic classes) and
// data in the class COS_TC gives CoS 0 at reset, as the manifest declares
// it (the runner puts every knob back to reset before a run).
func ipClasses(m *bitstreams.Manifest) ([]int, error) {
	for _, r := range m.Registers {
		if r.Name == "COS_TC" {
			data := int(r.Reset & 0xF)
			if data <= 1 {
				return []int{0, 1}, nil
			}
			return []int{0, 1, data}, nil
		}
	}
	return nil, fmt.Errorf("design %s declares no COS_TC register: the class of IP data cells is not known", m.Name)
}

// judgeModePaths records, per traffic class (those the IP cells travel
// in, classes, and any other a traced cell carried), the share of
// complete paths in the golden sets, the paths that could not be
// stitched, and for a hashed mode the distinct paths per address pair.
func judgeModePaths(env *selftest.Env, c *clique, judge *pathJudge, es []results.Expectation, rm routeMode, paths []tt.CellPath, classes []int) {
	type tally struct {
		total, in int
		outside   []string
		distinct  map[string]map[string]bool // address pair -> path texts
		pairs     map[string]bool
	}
	byClass := map[int]*tally{}
	var broken []string
	for _, p := range paths {
		if !p.Complete {
			broken = append(broken, fmt.Sprintf("%s %s->%s: %s", p.ID.Type, p.ID.Src, p.ID.Dst, firstLines(p.Problems, 2)))
			continue
		}
		t := byClass[p.Class()]
		if t == nil {
			t = &tally{distinct: map[string]map[string]bool{}, pairs: map[string]bool{}}
			byClass[p.Class()] = t
		}
		t.total++
		in, set, err := judge.judge(p, rm.mode)
		if err != nil {
			env.Error("routes", "", results.Params{"mode": rm.name}, err)
			return
		}
		if in {
			t.in++
		} else if len(t.outside) < 4 {
			t.outside = append(t.outside, fmt.Sprintf("%s %s: %s not in {%s}", p.ID.Type, p.ID.Src.Node().String()+">"+p.ID.Dst.Node().String(), p.Text(), set))
		}
		k := p.ID.Src.String() + ">" + p.ID.Dst.String()
		if t.distinct[k] == nil {
			t.distinct[k] = map[string]bool{}
		}
		t.distinct[k][p.Text()] = true
		t.pairs[p.ID.Src.Node().String()+">"+p.ID.Dst.Node().String()] = true
	}
	p := results.Params{"mode": rm.name}
	if !rm.mode.Hashed() {
		adaptiveSources(env, c, judge, rm, paths)
	}
	cycle, derr := deadlockFree(paths)
	if derr != nil {
		env.Error("routes.deadlock", "", p, derr)
	} else {
		env.Check("routes.deadlock", results.Measurement{Params: p, Metric: "tin.route.dependency_cycle", Text: cycle},
			cycle == "", "no cycle of channel dependencies over every observed path", "Aquila §3.2 (turn rules and VCs for deadlock avoidance)",
			"mode "+rm.name+": the observed routes can deadlock: "+cycle)
	}
	env.Check("routes.stitch", results.Measurement{Params: p, Metric: "tin.trace.broken_paths", Value: float64(len(broken)), Text: firstLines(broken, 3)},
		len(broken) == 0 && len(byClass) > 0, "every traced cell stitched from injection to ejection along the cabling", "Aquila §6 (cell tracing)",
		fmt.Sprintf("mode %s: %d traced cells could not be stitched into a path (%s)%s", rm.name, len(broken), firstLines(broken, 3),
			map[bool]string{true: "; no traced cell at all"}[len(byClass) == 0]))
	classes = slices.Clone(classes)
	for k := range byClass {
		if !slices.Contains(classes, k) {
			classes = append(classes, k)
		}
	}
	sort.Ints(classes)
	for _, cls := range classes {
		t := byClass[cls]
		pc := results.Params{"mode": rm.name, "class": strconv.Itoa(cls)}
		if t == nil {
			env.Check("routes", results.Measurement{Params: pc, Metric: "tin.route.in_set", Text: "no complete traced path of the class"}, false,
				fmt.Sprintf("traced paths of class %d (RTS TC0, CTS TC1, IP data of CoS 0 in COS_TC's class)", cls), "docs/tin.md (traffic classes), Aquila §6 (cell tracing)",
				fmt.Sprintf("mode %s: no cell of class %d was traced from injection to ejection: the class's routes cannot be judged", rm.name, cls))
			if rm.mode.Hashed() {
				notJudged(env, "", pc, fmt.Sprintf("no traced path of class %d (routes)", cls), "routes.distinct")
			}
			continue
		}
		var e results.Expectation
		found := false
		for _, x := range es {
			if x.Metric == "tin.route.in_set" && x.Params["mode"] == rm.name {
				e, found = x, true
				break
			}
		}
		if !found {
			env.Error("routes", "", pc, fmt.Errorf("golden/tin predicted no tin.route.in_set for mode %s", rm.name))
			continue
		}
		e.Note = fmt.Sprintf("every traced path of class %d in golden/tin's %s route set of its pair, or a detour with the properties §3.2 fixes (%d pairs traced)", cls, rm.name, len(t.pairs))
		m := results.Measurement{Params: pc, Metric: "tin.route.in_set", Value: float64(t.in) / float64(t.total), Unit: "fraction",
			Text: fmt.Sprintf("%d of %d paths in the golden set", t.in, t.total)}
		if len(t.outside) > 0 {
			m.Text += "; outside: " + strings.Join(t.outside, "; ")
		}
		env.Record("routes", m, e)
		if !rm.mode.Hashed() {
			continue
		}
		most, where := 0, ""
		for k, set := range t.distinct {
			if len(set) > most {
				most, where = len(set), k
				if len(set) > 1 {
					var ps []string
					for s := range set {
						ps = append(ps, s)
					}
					sort.Strings(ps)
					where = k + ": " + strings.Join(ps, " | ")
				}
			}
		}
		var d results.Expectation
		found = false
		for _, x := range es {
			if x.Metric == "tin.route.distinct" && x.Params["mode"] == rm.name {
				d, found = x, true
				break
			}
		}
		if !found {
			env.Error("routes.distinct", "", pc, fmt.Errorf("golden/tin predicted no tin.route.distinct for mode %s", rm.name))
			continue
		}
		env.Record("routes.distinct", results.Measurement{Params: pc, Metric: "tin.route.distinct", Value: float64(most), Unit: "paths", Text: where}, d)
	}
}

// adaptiveSources judges, per source TiN, that an adaptive mode adapts: for
// the destinations to which golden/tin's route set offers more than one
// minimal first hop, the data cells the source injects leave on more than
// one first hop for at least one of them (§3.2: each cell samples 2 of the
// 8 minimal and 3 of the 24 non-minimal candidates and weighs their
// queues; reading A63). A source whose routing unit always takes the same
// candidate sends every cell of a pair the same way. The case is per board,
// so that the board whose adaptive routing is stuck is the one named; a
// source that sent to no destination with a choice is not judged (its case
// is skipped with the reason).
func adaptiveSources(env *selftest.Env, c *clique, judge *pathJudge, rm routeMode, paths []tt.CellPath) {
	firstHops := map[string]map[string]map[string]bool{} // source board -> destination -> first hops
	choice := map[string]bool{}                          // source>destination with two minimal first hops
	cells := map[string]int{}
	for _, p := range paths {
		if !p.Complete || p.ID.Type != tt.CellData || len(p.Records) < 2 {
			continue
		}
		src := boardAt(c, p.Records[0].At.Node())
		dst := p.ID.Dst.Node().String()
		k := src + ">" + dst
		if _, known := choice[k]; !known {
			rs, err := judge.set(p.ID, rm.mode, p.Class())
			if err != nil {
				env.Error("routes.adaptive", src, results.Params{"mode": rm.name, "src": src}, err)
				return
			}
			hops := map[string]bool{}
			for _, r := range rs.Minimal {
				if len(r.Hops) > 0 {
					hops[r.Hops[0].To.String()] = true
				}
			}
			choice[k] = len(hops) > 1
		}
		if !choice[k] {
			continue
		}
		if firstHops[src] == nil {
			firstHops[src] = map[string]map[string]bool{}
		}
		if firstHops[src][dst] == nil {
			firstHops[src][dst] = map[string]bool{}
		}
		firstHops[src][dst][p.Records[1].At.Node().String()] = true
		cells[src]++
	}
	for _, b := range c.topo.Boards {
		pa := results.Params{"mode": rm.name, "src": b}
		if len(firstHops[b]) == 0 {
			env.Skip("routes.adaptive", b, pa, "not judged: this run's traffic from "+b+" went to no destination with two minimal first hops")
			continue
		}
		spread := 0
		var seen []string
		for dst, hops := range firstHops[b] {
			if len(hops) > 1 {
				spread++
			}
			seen = append(seen, fmt.Sprintf("%s:%d", dst, len(hops)))
		}
		sort.Strings(seen)
		env.Check("routes.adaptive", results.Measurement{Board: b, Params: pa, Metric: "tin.route.adaptive_pairs", Value: float64(spread), Unit: "destinations",
			Text: fmt.Sprintf("%d data cells to destinations with a choice; first hops per destination %s", cells[b], strings.Join(seen, " "))},
			spread > 0, "data cells to at least one destination with two minimal first hops leave on more than one",
			"Aquila §3.2 (adaptive routing samples minimal and non-minimal candidates per cell and weighs their queues)",
			fmt.Sprintf("mode %s: every data cell %s injected towards a destination with a choice of first hop left on one (%d cells: %s): its adaptive routing never adapts", rm.name, b, cells[b], strings.Join(seen, " ")))
	}
}

// boardAt names the board of a TiN of the Clique ("" when none).
func boardAt(c *clique, n tt.Node) string {
	for b, x := range c.topo.Node {
		if x == n {
			return b
		}
	}
	return ""
}

// minimalLen is the hop count of the set's minimal routes.
func minimalLen(rs gt.RouteSet) int {
	n := 0
	for _, m := range rs.Minimal {
		n = max(n, len(m.Hops))
	}
	return n
}

// nonMinimalOK checks a detour against the properties §3.2 fixes (see
// pathJudge.judge).
func nonMinimalOK(p gt.Path, class int, longer bool) bool {
	if !longer {
		return false // a route as short as a minimal one must be a minimal one
	}
	seen := map[string]bool{p.From.String(): true}
	globals := 0
	for _, h := range p.Hops {
		if seen[h.To.String()] {
			return false
		}
		seen[h.To.String()] = true
		if h.VC != 3*class+globals {
			return false
		}
		if h.Kind == gt.Global {
			globals++
		}
	}
	return globals <= 2 && len(p.Hops) <= 5
}

// deadlockFree builds the channel dependency graph of every observed path
// of one class and returns a cycle, if any (Dally and Seitz: no cycle, no
// deadlock; Aquila §3.2).
func deadlockFree(paths []tt.CellPath) (string, error) {
	byClass := map[int]*gt.DependencyGraph{}
	for _, p := range paths {
		if !p.Complete {
			continue
		}
		gp, err := gt.ParsePath(p.Text())
		if err != nil {
			return "", err
		}
		g := byClass[p.Class()]
		if g == nil {
			g = gt.NewDependencyGraph()
			byClass[p.Class()] = g
		}
		g.Add(gp)
	}
	for cls, g := range byClass {
		if c := g.Cycle(); c != nil {
			var parts []string
			for _, ch := range c {
				parts = append(parts, ch.String())
			}
			return fmt.Sprintf("class %d: %s", cls, strings.Join(parts, " -> ")), nil
		}
	}
	return "", nil
}
