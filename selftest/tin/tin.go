// Package tin holds the TiN plan's tests: a Clique of ZCU102 boards running
// the TiN-style cell fabric (Aquila, NSDI 2022, §2-3 and §6) with the SC'18
// ordering engine, configured and driven through registers only
// (traffic/tin) and scored against golden/tin and golden/ordering:
// cellification against traced cells (§3.3, §6), per-flow order under fully
// adaptive routing (§3.3), each routing mode's paths against the golden
// route sets (§3.2), fabric RTT versus load against the golden simulation
// (§5.1), 1RMA latency isolation (§5.1, Fig. 9), CTD under incast (§3.3),
// ordered, synchronized and exactly-once transfers under loss and
// reordering, slow-mode fall-back and reorder-buffer occupancy (SC'18 §III,
// §IV-D), a traced packet's stitched path (§6) and credits at rest (§3.1).
//
// Each board of the plan names its place in the Clique in its parameters
// ({pod: P, tin: T}); the lab's cables say which cages are local links
// (inside a pod) and which are global links (between pods). The same plan
// runs on real ZCU102 boards by changing only the lab file.
package tin

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/drivers"
	"github.com/labrunner/labrunner/drivers/regmap"
	gt "github.com/labrunner/labrunner/golden/tin"
	"github.com/labrunner/labrunner/internal/memo"
	"github.com/labrunner/labrunner/labconfig"
	"github.com/labrunner/labrunner/results"
	"github.com/labrunner/labrunner/selftest"
	tt "github.com/labrunner/labrunner/traffic/tin"
)

const design = "tin"

// cliqueState is the Clique the setup brought up, for every test.
var cliqueState = selftest.State[*clique]{Key: "tin"}

// clique is what setup learnt and built, for the tests.
type clique struct {
	r *tt.Rack
	// topo is the Clique of the boards in the plan that are up; all is
	// the plan's whole Clique (planTopo): the tests choose their targets,
	// peers and pairs in all, so that a case's name comes from the plan,
	// and leave out the cases that need a board not in topo (the runner
	// reports them, naming the board: selftest.RegisterCases).
	topo *tt.Topology
	all  *tt.Topology
	// timing is the build the manifest declares (never a board's
	// registers): the cell format the tests expect, the injection rate
	// loads are fractions of.
	timing tt.Timing
	// decl holds the other declared values the tests use (cts_window,
	// vc_fifo_bytes, rob_entries, max_outstanding, rma_tc_ord).
	decl map[string]float64
	// set is golden/tin's configuration of this Clique (Predict's --set
	// values): its shape and wiring, the declared timing of the build,
	// the lab's cable delays and the declared CTS window.
	set map[string]string
	// align is the cell granularity golden/tin is told the design uses.
	align int
	seed  uint64
	// cells adds up the cells of every finished run (conservation).
	cells *cellTally
	// plan is golden/tin's parsed configuration of the Clique (set), for
	// the tests that ask golden/tin for routes and latencies.
	plan *gt.Plan
}

// golden returns golden/tin's predictions for the Clique with extra
// settings on top. Parts not asked for (cellification, reads, the
// simulation, routes) are left out unless extra sets them.
func (c *clique) golden(extra map[string]string) ([]results.Expectation, error) {
	s := map[string]string{"packets": "", "reads": "", "loads": "", "modes": ""}
	for k, v := range c.set {
		s[k] = v
	}
	for k, v := range extra {
		s[k] = v
	}
	es, err := predict(s)
	if err != nil {
		return nil, drivers.Setup("", "golden/tin", "the Clique's configuration is outside what the golden model takes", err)
	}
	return es, nil
}

// predictions remembers golden/tin's predictions by their settings for the
// life of the process. Golden's inputs are the catalogue's, the lab's and
// the plan's, never the board's (reading A60), so every run of a plan on
// one lab asks for the same ones: a campaign or a test binary that runs the
// plan once per fault pays for its simulations once.
var predictions memo.Map[string, []results.Expectation]

// predict returns golden/tin's predictions for settings s, a copy each
// caller may change.
func predict(s map[string]string) ([]results.Expectation, error) {
	// fmt prints a map's keys sorted.
	es, err := predictions.Get(fmt.Sprintf("%q", s), func() ([]results.Expectation, error) { return gt.Model{}.Predict(s) })
	if err != nil {
		return nil, err
	}
	out := make([]results.Expectation, len(es))
	for i, e := range es {
		if e.Min != nil {
			e.Min = results.Float(*e.Min)
		}
		if e.Max != nil {
			e.Max = results.Float(*e.Max)
		}
		if e.Params != nil {
			e.Params = e.Params.Clone()
		}
		out[i] = e
	}
	return out, nil
}

// goldenPlan parses the Clique's golden configuration (its Clique for route sets).
func (c *clique) goldenPlan(extra map[string]string) (*gt.Plan, error) {
	s := map[string]string{"packets": "", "reads": "", "loads": "", "modes": ""}
	for k, v := range c.set {
		s[k] = v
	}
	for k, v := range extra {
		s[k] = v
	}
	pl, err := gt.ParsePlan(s)
	if err != nil {
		return nil, drivers.Setup("", "golden/tin", "the Clique's configuration is outside what the golden model takes", err)
	}
	return pl, nil
}

// up says whether every board named is in the Clique that was brought
// up (none left the plan).
func (c *clique) up(boards ...string) bool {
	for _, b := range boards {
		if _, ok := c.topo.Node[b]; !ok {
			return false
		}
	}
	return true
}

// planTopo is the Clique the plan describes: every board of the plan at
// the place its parameters give, cabled as the lab says. It touches no
// board; the setup's topology is this one without the boards that left
// the plan.
func planTopo(lab *labconfig.Lab, plan *labconfig.Plan) (*tt.Topology, error) {
	d, err := selftest.DecodePlan(plan)
	if err != nil {
		return nil, err
	}
	var order []string
	nodes := map[string]tt.Node{}
	in := map[string]bool{}
	for _, pb := range plan.Boards {
		bp := d.Boards[pb.Board].(boardParams)
		order = append(order, pb.Board)
		nodes[pb.Board] = tt.Node{Pod: bp.Pod, TiN: bp.TiN}
		in[pb.Board] = true
	}
	cables, err := cablesOf(lab, func(b string) bool { return in[b] })
	if err != nil {
		return nil, err
	}
	return tt.NewTopology(order, nodes, cables)
}

func cliqueOf(env *selftest.Env) (*clique, error) {
	c, ok := cliqueState.Get(env)
	if !ok {
		return nil, drivers.Setup("", "tin tests", "see the setup error above", fmt.Errorf("the TiN Clique was not brought up"))
	}
	return c, nil
}

func init() {
	selftest.RegisterSetup(design, setup, selftest.DesignParams{Plan: planParams{Align: 1}, Board: boardParams{}})
	selftest.RegisterHealth(design, health)
	selftest.Register(selftest.Test{Name: "links", Design: design, Run: runLinks,
		Doc: "every cabled cage trained with the role its cable gives it (local, global with FEC), its peer's address and credits (§3.1, §3.2), and no address conflict"})
	selftest.Register(selftest.Test{Name: "credits", Design: design, Run: runCredits,
		Params: creditsParams{Load: 0.1, Bytes: 1500, Count: 100},
		Doc:    "after uniform-random traffic has drained, every up cage holds CREDIT_INIT on every VC: no credit lost (§3.1 reliable credit mechanism)"})
	selftest.Register(selftest.Test{Name: "cellification", Design: design, Run: runCellification,
		Params: cellificationParams{Packets: []int{1, 64, 152, 153, 1500, 4096}},
		Doc: "a traced message of each length, one packet, from every board in turn, is cut into the cells golden/tin's cellification gives (§3.1, §3.3, §6), " +
			"read off the source switch's trace records (LEN, index, LAST, header CRC); the declared cell format is checked too"})
	selftest.Register(selftest.Test{Name: "flow_order", Design: design, Run: runFlowOrder,
		Params: flowOrderParams{Load: 0.1, Bytes: 1500, Count: 150, Flows: 4},
		Doc:    "uniform-random IP under fully adaptive data routing: every flow's packets are delivered in the order they were sent (§3.3: RTS order), read from the receivers' delivery logs and IP_OOO_PKTS"})
	selftest.Register(selftest.Test{Name: "routes", Design: design, Run: runRoutes,
		Params: routesParams{Modes: []string{"fully-adaptive", "minimal-adaptive", "deterministic", "minimal-deterministic"}, Load: 0.02, Count: 8, Bytes: 600},
		Doc:    "with every cell type in one routing mode, traced paths (RTS, CTS, data) lie in golden/tin's route set of that mode, VCs included, and a hashed mode uses one path per address pair (§3.2)"})
	selftest.Register(selftest.Test{Name: "rtt", Design: design, Run: runRTT,
		Params: rttParams{Loads: []float64{0.05, 0.1, 0.2}, Bytes: 1500, Reply: 64, Count: 200, Replicas: 16},
		Doc:    "fabric RTT versus offered uniform-random load (§5.1), mean and 99th percentile, against golden/tin's simulation of the same Clique fed the build's timing registers and the lab's cables"})
	selftest.Register(selftest.Test{Name: "rma_isolation", Design: design, Run: runRMAIsolation,
		Params: rmaParams{QPS: 10000, Bytes: 4096, Reads: 20, BulkLoad: 0.2, BulkBytes: 4864, HipriWeight: 8},
		Doc:    "§5.1 Fig. 9: 4 KB high-priority 1RMA reads alone and beside bulk IP, low-priority reads beside bulk IP; high priority is nearly unaffected, low priority slower"})
	selftest.Register(selftest.Test{Name: "incast", Design: design, Run: runIncast,
		Params: incastParams{Bytes: 1500, Messages: 4, MessageBytes: 65536, Threshold: 16},
		Doc:    "many sources burst to one destination port: RTS queues stay at the CTD threshold, the excess is dropped by CTD at the source without its data crossing the fabric, ECN marks the rest (§3.3)"})
	selftest.Register(selftest.Test{Name: "ordering", Design: design, Run: runOrdering,
		Params: orderingParams{Modes: []string{"ordered", "ordered-eod", "sync"}, orderingTargets: orderingTargets{Sources: 3}, Streams: 4, Lengths: []int{10, 20, 40}, Concurrent: 2, LossReqPPM: 20000, LossAckPPM: 20000, DropEvery: 7, JitterNS: 200},
		Doc: "ordered (fast, falling back to slow), exactly-once and synchronized streams under injected REQ and ACK loss and reordering: " +
			"each target's delivery log (every board by default) satisfies golden/ordering.CheckLog for every stream and every stream completes (SC'18 §III)"})
	selftest.Register(selftest.Test{Name: "fallback", Design: design, Run: runFallback,
		Params: fallbackParams{orderingTargets: orderingTargets{Sources: 3}, Length: 20, Conns: 2},
		Doc:    "§IV-D with two receiver connections: more concurrent fast streams than connections; the extra ones are NACKed and fall back to slow mode as golden/ordering.Run predicts, the log stays correct, connections never exceed two"})
	selftest.Register(selftest.Test{Name: "rob_occupancy", Design: design, Run: runROB,
		Params: robParams{orderingTargets: orderingTargets{Sources: 2}, Streams: 4, Length: 40, JitterNS: 200, GapNS: "link", BufferPackets: 20},
		Doc:    "reorder-buffer occupancy under reordering stays within golden/ordering's skew-sized capacity (§IV-D), the skew taken from golden/tin's path latencies of this Clique plus the injected jitter"})
	selftest.Register(selftest.Test{Name: "conservation", Design: design, Run: runConservation,
		Doc: "every cell each cabled cage sent over the plan's finished runs reached its peer's input FIFO (TX_CELLS against the peer's RX_CELLS, added up run by run): §3.1's links lose none; put it after the traffic tests"})
	selftest.Register(selftest.Test{Name: "rob_skew", Design: design, Run: runROBSkew,
		Params: robSkewParams{orderingTargets: orderingTargets{Sources: 2}},
		Doc: "§IV-D's reorder buffer under a skew the runner sets: the target discards SEQ w-1 of each source's fast stream (w the declared window) so each holds w-1 REQs " +
			"for a timeout; the peak occupancy, the NACKs for a full buffer and the fall-backs to slow mode are golden/ordering.Run's with the declared 50-entry buffer (48, 0, 0 with two sources)"})
	selftest.Register(selftest.Test{Name: "trace_path", Design: design, Run: runTracePath,
		Params: traceParams{Bytes: 1500},
		Doc:    "one traced IP packet from every board in turn: its RTS, CTS and data cells are stitched from every board's collector (§6), each path consistent with the cabling and in golden/tin's route set, the data cells as the design cellifies the packet"})
}

// setup brings the Clique up (docs/tin.md "Recipes for the TiN plan"):
// addresses and port roles, the routing tables of the recipe, links up,
// generators quiet; then it reads the build's timing for the golden models.
func setup(ctx context.Context, env *selftest.Env) error {
	pp, err := selftest.PlanParamsOf[planParams](env)
	if err != nil {
		return err
	}
	align, seed := pp.Align, int(env.Lab.Seed)
	if pp.Seed != nil {
		seed = *pp.Seed
	}
	var order []string
	nodes := map[string]tt.Node{}
	regs := map[string]*regmap.Regs{}
	for _, b := range env.Boards {
		bp, err := selftest.BoardParamsOf[boardParams](env, b)
		if err != nil {
			return err
		}
		order = append(order, b.Name)
		nodes[b.Name] = tt.Node{Pod: bp.Pod, TiN: bp.TiN}
		regs[b.Name] = b.Regs
	}
	if len(order) < 2 {
		return drivers.Infra(strings.Join(order, ", "), "tin setup", "a Clique needs at least two working boards", fmt.Errorf("%d board(s) left in the plan", len(order)))
	}
	cables, err := cablesOf(env.Lab, func(b string) bool { return regs[b] != nil })
	if err != nil {
		return drivers.Setup("", "lab "+env.Lab.Name, "", err)
	}
	topo, err := tt.NewTopology(order, nodes, cables)
	if err != nil {
		return drivers.Setup("", "plan "+env.Plan.Name, "cable the Clique as docs/tin.md prescribes and give each board its pod and TiN", err)
	}
	all, err := planTopo(env.Lab, env.Plan)
	if err != nil {
		return drivers.Setup("", "plan "+env.Plan.Name, "cable the Clique as docs/tin.md prescribes and give each board its pod and TiN", err)
	}
	r, err := tt.NewRack(topo, regs)
	if err != nil {
		return err
	}
	r.Access = env.Deadlines.Register
	r.Log = env.Log
	if err := r.Configure(ctx); err != nil {
		return fmt.Errorf("configuring the Clique: %w", err)
	}
	// Links train after PORT_ROLE; the links test judges any still down.
	if _, err := r.WaitLinks(ctx, 2*time.Second); err != nil {
		return err
	}
	if err := r.Quiet(ctx); err != nil {
		return err
	}
	// Golden is fed the build the manifest declares, never the board's
	// registers (reading A60): the registers test judges each board's
	// timing registers against the same declared values.
	tm, decl, err := declaredTiming(env.Design)
	if err != nil {
		return drivers.Setup("", "design "+env.Design.Name, "declare the value in the manifest's config: block", err)
	}
	c := &clique{r: r, topo: topo, all: all, timing: tm, decl: decl, align: align, seed: uint64(seed), set: goldenSettings(topo, tm, decl, align)}
	pl, err := c.goldenPlan(nil)
	if err != nil {
		return err
	}
	c.plan = pl
	cliqueState.Set(env, c)
	return nil
}

// goldenSettings is golden/tin's configuration of a Clique (Predict's
// --set values): its shape and wiring, the declared timing of the build,
// the lab's cable delays and the declared CTS window.
func goldenSettings(topo *tt.Topology, tm tt.Timing, decl map[string]float64, align int) map[string]string {
	pods, tins := topo.Shape()
	g := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	set := map[string]string{
		"clique":         fmt.Sprintf("%dx%d", pods, tins),
		"link_gbps":      g(float64(tm.LinkMbps) / 1000),
		"inject_gbps":    g(float64(tm.InjectMbps) / 1000),
		"fallthrough_ns": g(float64(tm.FallThroughNS)),
		// §3.1: the per-hop latency without FEC is the fall-through
		// plus the link's PHY/PCS (PCS_NS).
		"hop_ns": g(float64(tm.FallThroughNS + tm.PCSNS)),
		"fec_ns": g(float64(tm.FECNS)),
		// The declared switch clock: golden aligns to its edges
		// what this design's switches align (reading A28).
		"switch_clock_mhz": g(float64(tm.ClockKHz) / 1000),
		"fec_overhead":     g(float64(tm.FECOverheadPct) / 100),
		"local_prop_ns":    g(topo.MeanLatency(tt.RoleLocal)),
		"global_prop_ns":   g(topo.MeanLatency(tt.RoleGlobal)),
		"cts_window":       g(decl["cts_window"]),
		"align":            strconv.Itoa(align),
		"completion":       strconv.Itoa(int(tm.RespPayload)),
	}
	if w := topo.Wiring(); w != "" {
		set["wiring"] = w
	}
	return set
}

// declaredTiming is the build's timing and cell format as its manifest
// declares them (config:), in the form traffic/tin's Timing has, and the
// other declared values the tests use, by name.
func declaredTiming(m *bitstreams.Manifest) (tt.Timing, map[string]float64, error) {
	var t tt.Timing
	decl := map[string]float64{}
	for _, f := range []struct {
		name string
		dst  *uint32
	}{
		{"clock_khz", &t.ClockKHz}, {"link_mbps", &t.LinkMbps}, {"inject_mbps", &t.InjectMbps},
		{"fallthrough_ns", &t.FallThroughNS}, {"pcs_ns", &t.PCSNS}, {"fec_ns", &t.FECNS}, {"fec_overhead_pct", &t.FECOverheadPct},
		{"cell_min_bytes", &t.CellMin}, {"cell_max_bytes", &t.CellMax}, {"header_bytes", &t.Header},
		{"data_tag_bytes", &t.DataTag}, {"data_bytes_per_cell", &t.DataPayload}, {"resp_data_bytes", &t.RespPayload},
		{"oreq_max_bytes", &t.OReqMax},
		{"cts_window", nil}, {"vc_fifo_bytes", nil}, {"rob_entries", nil}, {"max_outstanding", nil}, {"rma_tc_ord", nil},
	} {
		c, err := m.Declared(f.name)
		if err != nil {
			return t, nil, err
		}
		decl[f.name] = c.Value
		if f.dst != nil {
			*f.dst = uint32(c.Value)
		}
	}
	if t.LinkMbps == 0 || t.InjectMbps == 0 || t.CellMax == 0 || t.DataPayload == 0 {
		return t, nil, fmt.Errorf("design %s declares link_mbps %d, inject_mbps %d, cell_max_bytes %d, data_bytes_per_cell %d: none may be 0",
			m.Name, t.LinkMbps, t.InjectMbps, t.CellMax, t.DataPayload)
	}
	return t, decl, nil
}

// cablesOf lists the lab's cables between the plan's boards (in).
func cablesOf(lab *labconfig.Lab, in func(board string) bool) ([]tt.Cable, error) {
	var out []tt.Cable
	for _, l := range lab.Links {
		if !in(l.A.Board) || !in(l.B.Board) {
			continue
		}
		a, err := tt.ParseCage(l.A.Port)
		if err != nil {
			return nil, fmt.Errorf("%s: cable %s - %s: %w", l.Pos, l.A, l.B, err)
		}
		b, err := tt.ParseCage(l.B.Port)
		if err != nil {
			return nil, fmt.Errorf("%s: cable %s - %s: %w", l.Pos, l.A, l.B, err)
		}
		out = append(out, tt.Cable{A: tt.Cage{Board: l.A.Board, Index: a}, B: tt.Cage{Board: l.B.Board, Index: b}, LatencyNS: l.LatencyNS})
	}
	return out, nil
}

// health takes a board out of the plan when none of its cabled cages
// trained: a board, cable or power problem, not the design's. It looks at
// nothing the design's tests judge (peer addresses, credits, roles).
func health(ctx context.Context, env *selftest.Env, b *selftest.Board) error {
	c, err := cliqueOf(env)
	if err != nil {
		return err
	}
	cabled, up := 0, 0
	for k, p := range c.topo.Ports[b.Name] {
		if p.Peer == "" {
			continue
		}
		cabled++
		st, err := b.Regs.Read(ctx, "PORT_STATUS["+strconv.Itoa(k)+"].UP")
		if err != nil {
			return err
		}
		if st != 0 {
			up++
		}
	}
	if cabled > 0 && up == 0 {
		return fmt.Errorf("none of its %d cabled cages trained (PORT_STATUS.UP clear): check its SFP+ modules, cables and that it runs the tin design", cabled)
	}
	return nil
}

// seedOf returns the test's seed: its own parameter, else the plan's.
func (c *clique) seedOf(env *selftest.Env) (uint64, error) {
	p, err := selftest.ParamsOf[seeded](env)
	if err != nil {
		return 0, err
	}
	s := int(c.seed)
	if p.seedValue() != nil {
		s = *p.seedValue()
	}
	return uint64(s), nil
}

// fresh puts the Clique back to its quiet state before a test: generators
// off, knobs at reset, counters and logs cleared.
func (c *clique) fresh(ctx context.Context) error {
	return c.r.Quiet(ctx)
}

// run runs the loaded traffic and returns an error for a run that did not
// finish: a stalled fabric is a design failure the caller records.
func (c *clique) run(ctx context.Context) (tt.RunResult, error) {
	rr, err := c.r.Run(ctx, 0)
	if err != nil {
		return rr, err
	}
	if rr.Done() {
		c.countCells(ctx)
	}
	return rr, nil
}

// runStatus records a check that the run finished (DONE) and returns
// whether it did.
func runStatus(env *selftest.Env, name string, rr tt.RunResult, p results.Params, what string) bool {
	m := results.Measurement{Board: "", Params: p, Metric: "tin.run.done", Value: float64(rr.Status), Text: rr.Describe()}
	ok := rr.Done()
	env.Check(name+".run", m, ok, "DONE: every operation completed and the fabric is quiescent", "docs/tin.md (run control)",
		fmt.Sprintf("%s: the run ended %s: operations never completed", what, rr.Describe()))
	return ok
}

// notJudged keeps the place of cases that cannot be judged because the run
// they depend on failed (that failure is recorded on its own verdict): each
// is skipped with the reason, so that a case's JUnit identity never
// disappears when the design fails.
func notJudged(env *selftest.Env, board string, p results.Params, reason string, names ...string) {
	for _, n := range names {
		env.Skip(n, board, p, "not judged: "+reason)
	}
}

// percentile of sorted samples (the q-quantile, nearest rank).
func percentile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*q+0.999999) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

func mean(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

// expectation finds a golden expectation by metric and parameters.
func expectation(es []results.Expectation, metric string, p results.Params) (results.Expectation, bool) {
	for _, e := range es {
		if e.Metric != metric || len(e.Params) != len(p) {
			continue
		}
		ok := true
		for k, v := range p {
			if e.Params[k] != v {
				ok = false
				break
			}
		}
		if ok {
			return e, true
		}
	}
	return results.Expectation{}, false
}

// boardParam checks a board-name parameter v: a board of the plan's
// Clique, or def when v is not set. Whether the board is up is the
// caller's question (clique.up).
func boardParam(env *selftest.Env, c *clique, key string, v *string, def string) (string, error) {
	b, err := boardIn(c.all, env.Test, key, v, def)
	if err != nil {
		return "", drivers.Setup("", env.Test.Pos.String(), "name a board of the plan", err)
	}
	return b, nil
}

// boardIn is boardParam for a topology and a plan entry.
func boardIn(all *tt.Topology, t labconfig.Test, key string, v *string, def string) (string, error) {
	b := def
	if v != nil {
		b = *v
	}
	if _, ok := all.Node[b]; !ok {
		return "", fmt.Errorf("test %s: %s %q is not a board of the plan's Clique (%s)", t.Name, key, b, strings.Join(all.Boards, ", "))
	}
	return b, nil
}

func firstLines(s []string, n int) string {
	if len(s) <= n {
		return strings.Join(s, "; ")
	}
	return strings.Join(s[:n], "; ") + fmt.Sprintf("; ... %d in all", len(s))
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
