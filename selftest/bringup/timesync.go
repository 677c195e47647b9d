package bringup

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/labrunner/labrunner/drivers"
	"github.com/labrunner/labrunner/drivers/pmos"
	"github.com/labrunner/labrunner/drivers/regmap"
)

// TimeSync calibration (Aquila App. B; docs/mgmt.md §9): the runner builds
// the time-distribution tree breadth-first from the primary, measures each
// client's receive port in latency-measurement mode, writes its delay
// compensation and receive port, starts the primary, and verifies: per-link
// delay, lock, depth, the offset from the primary the hardware vouches for
// (the sum of the largest corrections along the path), convergence. A
// client that signals failure makes the runner re-root the tree around the
// failed cable or primary.

// TimeSync settings the runner writes (mgmt.yaml's defaults: App. B gives
// "about 100us" and a "configurable threshold"; 100 ns and 4 are choices).
const (
	tsThresholdNS = 100
	tsFailLimit   = 4
	tsSettleUS    = 2_000 // before the statistics are cleared
	tsMeasureUS   = 3_000 // statistics window: 30 intervals of 100 µs
	maxReroots    = 2
)

// tsInfo is a board's place in the tree and what it measured.
type tsInfo struct {
	Role       string  `json:"role"` // primary, client, off
	Parent     string  `json:"parent,omitempty"`
	RxPort     string  `json:"rx_port,omitempty"`
	Depth      int     `json:"depth"`
	DelayNS    float64 `json:"rx_delay_ns,omitempty"`
	CompPS     uint32  `json:"delay_comp_ps,omitempty"`
	Locked     bool    `json:"locked"`
	Failed     bool    `json:"failed"`
	LastCorrNS float64 `json:"last_correction_ns"`
	MaxCorrNS  float64 `json:"max_correction_ns"`
	RxValid    uint32  `json:"rx_valid"`
	RxInvalid  uint32  `json:"rx_invalid"`
	Missed     uint32  `json:"missed"`
	WaitMaxNS  float64 `json:"wait_max_ns"`
	// OffsetNS is the board's measured offset from the primary: its
	// largest correction since TS_CLEAR (TS_MAX_CORR_PS). Each client steps
	// to its parent's time as the parent forwards the primary's (App. B.2:
	// an update goes downstream at once), so a correction is the client's
	// distance from the primary's time as it reached it.
	OffsetNS float64 `json:"offset_ns"`
	// BoundNS is the offset the hardware vouches for whatever the parents
	// did: the sum of TS_MAX_CORR_PS along the path (mgmt.md §9,
	// "Verifying").
	BoundNS float64 `json:"offset_bound_ns"`
	// DriftPPM is the rate error against the parent that the last
	// correction implies (negative: slower than its parent).
	DriftPPM float64 `json:"drift_ppm"`
	// SenderErr says why a board the tree never had send (a leaf) failed
	// the sender check: a neighbour made its client received nothing.
	SenderErr string `json:"sender_error,omitempty"`
	Status    string `json:"status"` // primary, synced, invalid, unsynced, down

	parent *node
	rx     int
	kids   []int // ports toward children
}

// LinkDelay is one cable's latency measurement.
type LinkDelay struct {
	Cable      string  `json:"cable"`
	From       string  `json:"measured_from"`
	MeasuredNS float64 `json:"measured_ns"`
	// LabNS is what the lab file implies: latency + asymmetry/2 + the
	// transceivers and one PCS block (PHY_LATENCY_PS + 2.56 ns).
	LabNS float64 `json:"lab_ns"`
	Err   string  `json:"error,omitempty"`
}

// MarshalJSON renders the tree with the convergence time as a number, or
// null when it was not measured.
func (t *tsRack) MarshalJSON() ([]byte, error) {
	type plain tsRack
	var conv *float64
	if !math.IsNaN(t.ConvergeUS) {
		v := t.ConvergeUS
		conv = &v
	}
	return json.Marshal(struct {
		*plain
		ConvergeUS *float64 `json:"converge_us"`
	}{(*plain)(t), conv})
}

// UnmarshalJSON reads what MarshalJSON wrote (null: NaN).
func (t *tsRack) UnmarshalJSON(b []byte) error {
	type plain tsRack
	aux := struct {
		*plain
		ConvergeUS *float64 `json:"converge_us"`
	}{plain: (*plain)(t)}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	t.ConvergeUS = math.NaN()
	if aux.ConvergeUS != nil {
		t.ConvergeUS = *aux.ConvergeUS
	}
	return nil
}

// tsRack is the rack's tree.
type tsRack struct {
	Primary      string      `json:"primary"`
	Depth        int         `json:"tree_depth"`
	ConvergeUS   float64     `json:"-"` // NaN: not measured (ConvergeNote says why)
	ConvergeNote string      `json:"converge_note,omitempty"`
	IntervalNS   uint32      `json:"interval_ns"`
	Links        []LinkDelay `json:"links"`
	Rerooted     []string    `json:"rerooted,omitempty"`
	Shoal        *ShoalSlot  `json:"shoal,omitempty"`
	phyNS        float64
	failedCables map[*Cable]bool
	excluded     map[*node]bool
	delays       map[*Cable]float64 // measured one-way delay, ns
}

func (rr *rackRun) timesync(ctx context.Context, quiet bool) {
	r := rr.run
	ts := &tsRack{failedCables: map[*Cable]bool{}, excluded: map[*node]bool{}, delays: map[*Cable]float64{}}
	rr.ts = ts
	var live []*node
	for _, n := range rr.nodes {
		if n.bootStatus() == bootOK && n.reachable() {
			live = append(live, n)
		}
	}
	finishAll := func(res func(n *node) *StageResult) {
		for _, n := range rr.nodes {
			x := res(n)
			x.Stage = StageTimeSync
			r.conclude(n, x, quiet, true)
		}
	}
	if len(live) == 0 {
		finishAll(func(n *node) *StageResult {
			return &StageResult{Status: Blocked, Summary: "no board of the rack was bootstrapped"}
		})
		return
	}
	// The hardware's figures, from the first live board.
	mg, _ := live[0].mg(r)
	figs, err := r.readMany(ctx, live[0], mg, "TS_INTERVAL_NS", "PHY_LATENCY_PS")
	if err != nil {
		finishAll(func(n *node) *StageResult {
			return fail("the TimeSync registers answer", "the path to "+live[0].Name, err)
		})
		return
	}
	ts.IntervalNS = figs["TS_INTERVAL_NS"]
	if ts.IntervalNS == 0 {
		ts.IntervalNS = 100_000 // App. B: "about 100us"
	}
	ts.phyNS = float64(figs["PHY_LATENCY_PS"]+2560) / 1000
	// Every cable between live boards, in latency-measurement mode, before
	// the tree runs: a measurement turns the board's TimeSync off.
	errs := rr.measureCables(ctx, live, ts)
	primary := rr.buildTree(live, ts)
	if primary == nil {
		finishAll(func(n *node) *StageResult {
			return &StageResult{Status: Failed, Class: drivers.ClassInfra.String(), Expected: "a live primary candidate",
				Seen: "every candidate failed", Check: "the TimeSync hardware of the DCN boards"}
		})
		return
	}
	rr.announceTree(primary, ts, "")
	if err := rr.configureTree(ctx, live, primary, ts); err != nil {
		finishAll(func(n *node) *StageResult {
			return fail("the TimeSync tree is configured", "the path to the boards", err)
		})
		return
	}
	rr.converge(ctx, live, primary, ts)
	for round := 0; ; round++ {
		rr.verify(ctx, live, ts)
		moved := round < maxReroots && rr.reroot(ctx, live, ts)
		if !moved {
			break
		}
	}
	rr.offsets(live, ts)
	rr.checkSenders(ctx, live, ts)
	rr.scoreTimeSync(ctx, live, ts, quiet)
	for _, n := range rr.nodes {
		res := rr.tsResult(n, ts, errs[n])
		res.Stage = StageTimeSync
		r.conclude(n, res, quiet, true)
	}
}

// senderWaitUS is how long a leaf sends to its parent in the sender check:
// ten intervals of the default 100 µs.
const senderWaitUS = 1_000

// checkSenders checks the TimeSync transmitter of every board the tree
// never had send: a leaf's parent becomes, for a moment, a client of the
// leaf (the leaf primary toward it), and must receive valid messages. A
// transmitter that fails (tsync-dead) would otherwise go unseen until the
// tree changes. The tree is restored as it was after each pair; the
// subtree below the parent, which missed its messages meanwhile, has its
// FAILED flag cleared.
func (rr *rackRun) checkSenders(ctx context.Context, live []*node, ts *tsRack) {
	r := rr.run
	root := rr.anyRoot(live)
	if root == nil {
		return
	}
	for _, l := range live {
		p := l.ts.parent
		if l.ts.Role != "client" || len(l.ts.kids) > 0 || l.ts.Status != "synced" || p == nil {
			continue
		}
		e := l.Ports[l.ts.rx]
		pe := e.Peer()
		lm, err1 := l.mg(r)
		pm, err2 := p.mg(r)
		if err1 != nil || err2 != nil || pe == nil {
			continue
		}
		do := func(n *node, regs *regmap.Regs, kv ...any) error {
			ops, err := writes(regs, kv...)
			if err == nil {
				_, err = r.ops(ctx, n, ops)
			}
			return err
		}
		comp := uint32(math.Max(0, math.Round(ts.delays[e.Cable]*1000)))
		err := do(p, pm, "TS_TX_PORTS", 0, "TS_DELAY_COMP_PS", comp, "TS_CTRL", uint32(2|pe.Index<<8), "TS_STATUS", 2, "TS_CLEAR", 1)
		if err == nil {
			err = do(l, lm, "TS_TX_PORTS", uint32(1<<e.Index), "TS_CTRL", 1)
		}
		if err == nil {
			err = rr.client.Wait(ctx, root.Name, senderWaitUS)
		}
		var v map[string]uint32
		if err == nil {
			v, err = r.readMany(ctx, p, pm, "TS_RX_VALID", "TS_STATUS")
		}
		switch {
		case err != nil:
			l.note("timesync: the sender check toward %s could not run: %v", p.Name, err)
		case v["TS_RX_VALID"] == 0:
			l.ts.SenderErr = fmt.Sprintf("as a TimeSync sender it sent nothing %s accepted in %d µs over %s (TS_RX_VALID 0 at %s, made its client for the check)",
				p.Name, senderWaitUS, e.Cable.Name(), pe)
		}
		// Back to the tree as configured (the intents are unchanged).
		if err := do(l, lm, "TS_TX_PORTS", 0, "TS_CTRL", uint32(2|l.ts.rx<<8), "TS_STATUS", 2); err != nil {
			l.note("timesync: restoring it after the sender check failed: %v", err)
		}
		kv := []any{"TS_TX_PORTS", portMask(p.ts.kids), "TS_CTRL", 1}
		if p.ts.Role == "client" {
			kv = []any{"TS_DELAY_COMP_PS", p.ts.CompPS, "TS_TX_PORTS", portMask(p.ts.kids), "TS_CTRL", uint32(2 | p.ts.rx<<8), "TS_STATUS", 2}
		}
		if err := do(p, pm, kv...); err != nil {
			p.note("timesync: restoring it after the sender check failed: %v", err)
		}
	}
	// The boards below a parent that listened to a leaf missed messages
	// meanwhile: clear their FAILED flags.
	for _, n := range live {
		if n.ts.Role != "client" {
			continue
		}
		if mg, err := n.mg(r); err == nil {
			if ops, err := writes(mg, "TS_STATUS", 2); err == nil {
				r.ops(ctx, n, ops)
			}
		}
	}
}

// announceTree prints the tree: its primary, depth, and each client's
// parent.
func (rr *rackRun) announceTree(primary *node, ts *tsRack, why string) {
	var kids []string
	for _, n := range rr.nodes {
		if n.ts.Role == "client" {
			kids = append(kids, fmt.Sprintf("%s<-%s", n.Name, n.ts.Parent))
		}
	}
	status := "tree"
	if why != "" {
		status = "reroot"
	}
	text := fmt.Sprintf("primary %s, depth %d, interval %d ns: %s", primary.Name, ts.Depth, ts.IntervalNS, orNone(kids))
	if why != "" {
		text = why + "; new tree: " + text
	}
	rr.run.out.line("timesync", rr.Name, status, text)
}

func (rr *rackRun) primaryNode(live []*node) *node {
	for _, n := range live {
		if n.ts.Role == "primary" {
			return n
		}
	}
	return nil
}

// buildTree chooses the primary (reading M2: the DCN boards first, then the
// others; within each the board nearest the middle of the rack, then lab
// order; golden/bringup is given this choice as its first candidate) and
// spans the live boards breadth-first over the cables not known to have
// failed; each client receives from its lowest-index parent.
func (rr *rackRun) buildTree(live []*node, ts *tsRack) *node {
	isLive := map[*node]bool{}
	for _, n := range live {
		isLive[n] = !ts.excluded[n]
		n.ts = tsInfo{Role: "off", Depth: -1, Status: "unsynced"}
	}
	// Candidates (reading M2, Aquila Appendix B): the DCN boards (the
	// runner reaches them directly, so it can time the primary's first
	// message), then the others; within each, the board nearest the middle
	// of the rack first (App. B.2: each hop adds its errors, so a shallow
	// tree keeps the offsets small), then lab order.
	ecc := rr.eccentricity(live, isLive, ts)
	cands := append([]*node(nil), live...)
	sort.SliceStable(cands, func(i, j int) bool {
		a, b := cands[i], cands[j]
		if a.DCN != b.DCN {
			return a.DCN
		}
		return ecc[a] < ecc[b]
	})
	var primary *node
	for _, n := range cands {
		if isLive[n] {
			primary = n
			break
		}
	}
	if primary == nil {
		return nil
	}
	primary.ts.Role, primary.ts.Depth, primary.ts.Status = "primary", 0, "primary"
	ts.Primary, ts.Depth = primary.Name, 0
	frontier := []*node{primary}
	for d := 1; len(frontier) > 0; d++ {
		var next []*node
		for _, p := range frontier {
			for _, e := range p.Ports {
				pe := e.Peer()
				if pe == nil || ts.failedCables[e.Cable] {
					continue
				}
				c := rr.byName[pe.Board.Name]
				if !isLive[c] || c.ts.Depth >= 0 {
					continue
				}
				c.ts = tsInfo{Role: "client", Depth: d, parent: p, Parent: p.Name, rx: pe.Index, RxPort: pe.Name, Status: "unsynced",
					DelayNS: ts.delays[e.Cable]}
				p.ts.kids = append(p.ts.kids, e.Index)
				next = append(next, c)
				ts.Depth = d
			}
		}
		sortNodes(next)
		frontier = next
	}
	return primary
}

// eccentricity is each live board's largest hop distance to the other
// live boards over the cables not known to have failed (boards it cannot
// reach count as far away).
func (rr *rackRun) eccentricity(live []*node, isLive map[*node]bool, ts *tsRack) map[*node]int {
	out := map[*node]int{}
	for _, src := range live {
		seen := map[*node]int{src: 0}
		frontier := []*node{src}
		far := 0
		for d := 1; len(frontier) > 0; d++ {
			var next []*node
			for _, x := range frontier {
				for _, e := range x.Ports {
					pe := e.Peer()
					if pe == nil || ts.failedCables[e.Cable] {
						continue
					}
					y := rr.byName[pe.Board.Name]
					if _, ok := seen[y]; ok || !isLive[y] {
						continue
					}
					seen[y] = d
					far = d
					next = append(next, y)
				}
			}
			frontier = next
		}
		for _, n := range live {
			if _, ok := seen[n]; !ok && isLive[n] {
				far += len(live) // cut off: a poor root
			}
		}
		out[src] = far
	}
	return out
}

// latency measures a port's channel delay in latency-measurement mode
// (App. B.2): one REG_REQ (or accesses) that starts the probes, lets 30 µs
// pass and reads the result. It also turns the board's TimeSync off, so
// that a tree from an earlier run does not interfere.
func (rr *rackRun) latency(ctx context.Context, n *node, port int) (delayPS uint32, err error) {
	r := rr.run
	mg, err := n.mg(r)
	if err != nil {
		return 0, err
	}
	ops, err := writes(mg, "TS_CTRL", 0, fmt.Sprintf("LAT_CTRL[%d]", port), 1, "DELAY_US", 30)
	if err != nil {
		return 0, err
	}
	for wait := 0; wait < 3; wait++ {
		if wait > 0 {
			ops, _ = writes(mg, "DELAY_US", 100)
		}
		if _, err := r.ops(ctx, n, ops); err != nil {
			return 0, err
		}
		v, err := r.readMany(ctx, n, mg, fmt.Sprintf("LAT_STATUS[%d]", port), fmt.Sprintf("LAT_DELAY_PS[%d]", port))
		if err != nil {
			return 0, err
		}
		st := v[fmt.Sprintf("LAT_STATUS[%d]", port)]
		switch {
		case st&4 != 0:
			return 0, fmt.Errorf("LAT_STATUS[%d].ERROR: no echo within 10 µs (no cable, peer off, cable cut)", port)
		case st&2 != 0:
			return v[fmt.Sprintf("LAT_DELAY_PS[%d]", port)], nil
		}
	}
	return 0, fmt.Errorf("LAT_STATUS[%d] never read DONE", port)
}

// measureCables measures every cable between live boards in
// latency-measurement mode (App. B.2), from its A end (the B end if A is
// not live); a failed measurement marks the cable failed, and the tree is
// built around it. It returns the errors of boards that did not answer.
func (rr *rackRun) measureCables(ctx context.Context, live []*node, ts *tsRack) map[*node]error {
	isLive := map[string]*node{}
	for _, n := range live {
		isLive[n.Name] = n
	}
	errs := map[*node]error{}
	for _, c := range rr.Cables {
		a, b := isLive[c.A.Board.Name], isLive[c.B.Board.Name]
		if a == nil || b == nil {
			continue // a cable to a dead board says nothing about the cable
		}
		ld := LinkDelay{Cable: c.Name(), From: c.A.String(), LabNS: rr.labDelay(c, ts)}
		d, err := rr.latency(ctx, a, c.A.Index)
		switch {
		case err != nil && strings.Contains(err.Error(), "LAT_STATUS"):
			ld.Err = err.Error()
			ts.failedCables[c] = true
			ts.Rerooted = append(ts.Rerooted, fmt.Sprintf("cable %s: latency measurement failed (%s): the tree avoids it", c.Name(), err))
		case err != nil:
			errs[a] = err
			continue
		default:
			ld.MeasuredNS = float64(d) / 1000
			ts.delays[c] = ld.MeasuredNS
		}
		ts.Links = append(ts.Links, ld)
	}
	sort.Slice(ts.Links, func(i, j int) bool { return ts.Links[i].Cable < ts.Links[j].Cable })
	return errs
}

// labDelay is what the latency measurement should read on a cable the lab
// file describes: its latency, half its asymmetry (the round trip cannot
// tell the directions apart) and the transceivers and PCS block.
func (rr *rackRun) labDelay(c *Cable, ts *tsRack) float64 {
	return c.LatencyNS + c.AsymmetryNS/2 + ts.phyNS
}

// compPS is the delay compensation of a client: its receive port's delay,
// corrected by half the cable's declared asymmetry (mgmt.md §9: add a/2 when
// the messages come the slow way, subtract it when they come the fast way).
func compPS(n *node) uint32 {
	c := n.Ports[n.ts.rx].Cable
	v := n.ts.DelayNS * 1000
	if c.AsymmetryNS != 0 {
		// The asymmetry is added to B->A: messages from the parent at B
		// come the slow way.
		if c.B.Board.Name == n.ts.Parent {
			v += c.AsymmetryNS * 500
		} else {
			v -= c.AsymmetryNS * 500
		}
	}
	return uint32(math.Max(0, math.Round(v)))
}

func portMask(ports []int) uint32 {
	var m uint32
	for _, p := range ports {
		m |= 1 << p
	}
	return m
}

// configureTree writes every client (receive port, delay compensation,
// ports toward its children) and the primary's ports; the primary is
// started by converge.
func (rr *rackRun) configureTree(ctx context.Context, live []*node, primary *node, ts *tsRack) error {
	r := rr.run
	for _, n := range live {
		mg, err := n.mg(r)
		if err != nil {
			return err
		}
		var kv []any
		switch n.ts.Role {
		case "client":
			n.ts.CompPS = compPS(n)
			kv = []any{"TS_INTERVAL_NS", ts.IntervalNS, "TS_THRESHOLD_NS", tsThresholdNS, "TS_FAIL_LIMIT", tsFailLimit,
				"TS_DELAY_COMP_PS", n.ts.CompPS, "TS_TX_PORTS", portMask(n.ts.kids), "TS_CTRL", uint32(2 | n.ts.rx<<8)}
		case "primary":
			kv = []any{"TS_INTERVAL_NS", ts.IntervalNS, "TS_TX_PORTS", portMask(n.ts.kids)}
		default:
			kv = []any{"TS_CTRL", 0, "TS_TX_PORTS", 0}
		}
		ops, err := writes(mg, kv...)
		if err != nil {
			return err
		}
		if _, err := r.ops(ctx, n, ops); err != nil {
			return fmt.Errorf("%s: %w", n.Name, err)
		}
		n.setIntent(kv...)
	}
	return nil
}

// converge starts the primary and measures when its first TimeSync message
// left: on a primary the runner reaches directly, by reading TS_TX_COUNT at
// chosen instants of management time with no other access in between (a
// binary search over the following intervals, to 1 µs). Clients forward
// each update at once (App. B.2), so convergence is that moment plus the
// tree's propagation; the clients' counters then confirm that each locked
// on those first messages. An in-band primary is started but not timed: a
// request's round trip is coarser than the interval being measured.
func (rr *rackRun) converge(ctx context.Context, live []*node, primary *node, ts *tsRack) {
	r := rr.run
	I := float64(ts.IntervalNS)
	// TS_TX_COUNT counts ordered sets sent: one per port every interval.
	per := len(primary.ts.kids)
	ts.ConvergeUS = math.NaN()
	if per == 0 || primary.raw == nil {
		pm, err := primary.mg(r)
		if err == nil {
			var ops []pmos.RegOp
			if ops, err = writes(pm, "TS_CTRL", 1); err == nil {
				_, err = r.ops(ctx, primary, ops)
			}
		}
		primary.setIntent("TS_CTRL", 1)
		switch {
		case err != nil:
			ts.ConvergeNote = "the primary could not be started: " + err.Error()
		case per == 0:
			ts.ConvergeNote = "no client: nothing to converge"
		default:
			ts.ConvergeNote = "not timed: the primary is reached in-band, and a request's round trip is coarser than the interval being measured"
		}
		return
	}
	phi, halfWidth, err := rr.convergeDirect(ctx, primary, I, per)
	primary.setIntent("TS_CTRL", 1)
	if err != nil {
		ts.ConvergeNote = "the primary's first message could not be timed: " + err.Error()
		return
	}
	// Propagation: the deepest path's measured link delays plus the
	// longest wait for a gap (128 ns, App. B.2) at each sender.
	path := 0.0
	for _, n := range live {
		p := 0.0
		for x := n; x.ts.Role == "client"; x = x.ts.parent {
			p += x.ts.DelayNS + 128
		}
		path = math.Max(path, p)
	}
	ts.ConvergeUS = (phi + path) / 1000
	ts.ConvergeNote = fmt.Sprintf("first message %.1f µs (±%.1f) after the primary started, plus %.0f ns across the tree", phi/1000, halfWidth/1000, path)
	// Every client locked on that first wave of messages: it has counted
	// every message the primary sent before it was read.
	mg, _ := primary.mg(r)
	tx, err := r.readMany(ctx, primary, mg, "TS_TX_COUNT")
	if err != nil {
		return
	}
	sent := tx["TS_TX_COUNT"] / uint32(per)
	var late []string
	for _, n := range live {
		if n.ts.Role != "client" {
			continue
		}
		cm, _ := n.mg(r)
		v, err := r.readMany(ctx, n, cm, "TS_RX_VALID", "TS_STATUS")
		if err != nil || v["TS_RX_VALID"] < sent || v["TS_STATUS"]&1 == 0 {
			late = append(late, n.Name)
		}
	}
	if len(late) > 0 {
		ts.ConvergeNote += fmt.Sprintf("; %s did not lock on the primary's first messages", strings.Join(late, ", "))
		ts.ConvergeUS = math.NaN()
	}
}

// convergeDirect times the primary's first message on its own bus, under
// the gate (no other access moves the management clock meanwhile).
func (rr *rackRun) convergeDirect(ctx context.Context, primary *node, I float64, per int) (phi, half float64, err error) {
	r := rr.run
	r.gate.mu.Lock()
	defer r.gate.mu.Unlock()
	mg := regmap.New(primary.raw, r.mgmt, primary.Name)
	cyc := func() (float64, error) {
		v, err := mg.Read64(ctx, "CYCLES_LO")
		return float64(v) * 2.5, err // ns when the LO read took effect
	}
	c1, err := cyc()
	if err != nil {
		return 0, 0, err
	}
	c2, err := cyc()
	if err != nil {
		return 0, 0, err
	}
	// Read64 is two accesses: LO (which is the time stamp) and HI.
	cost := (c2 - c1) / 2
	if cost <= 0 || cost > 10e6 {
		return 0, 0, fmt.Errorf("the bus's access time reads %.0f ns", cost)
	}
	now := c2 + cost // after the HI read
	if err := mg.Write(ctx, "TS_CTRL", 1); err != nil {
		return 0, 0, err
	}
	now += cost
	t0 := now
	count := func(at float64) (uint32, float64, error) {
		// The read takes effect one access after it starts: wait so that
		// it lands at `at` (1 µs resolution of DELAY_US).
		if wait := at - now - 2*cost; wait >= 1000 {
			us := math.Floor(wait / 1000)
			if err := mg.Write(ctx, "DELAY_US", uint32(us)); err != nil {
				return 0, 0, err
			}
			now += cost + us*1000
		}
		v, err := mg.Read(ctx, "TS_TX_COUNT")
		now += cost
		return v / uint32(per), now, err
	}
	lo, hi := 0.0, 0.0
	for {
		v, at, err := count(now + cost)
		if err != nil {
			return 0, 0, err
		}
		if v >= 1 {
			hi = at - t0
			break
		}
		lo = at - t0
		if lo > 2*I {
			return 0, 0, fmt.Errorf("the primary sent nothing within two intervals of being started (TS_TX_COUNT 0)")
		}
	}
	// Refine on later messages: the m-th leaves at phi + (m-1)·I.
	for i := 0; i < 12 && hi-lo > 1000; i++ {
		mid := (lo + hi) / 2
		m := math.Ceil((now+3*cost-t0-mid)/I) + 1
		v, at, err := count(t0 + mid + (m-1)*I)
		if err != nil {
			return 0, 0, err
		}
		// The read landed at `at` (DELAY_US counts whole µs): the m-th
		// message had left by then, or had not.
		x := at - t0 - (m-1)*I
		sent := float64(v) >= m
		if (sent && x < lo-1000) || (!sent && x > hi+1000) || float64(v) > m+1 {
			return 0, 0, fmt.Errorf("the primary's messages are not periodic: a read %.1f µs after it started found %d messages", (at-t0)/1000, v)
		}
		if sent {
			hi = math.Max(lo, math.Min(hi, x))
		} else {
			lo = math.Min(hi, math.Max(lo, x))
		}

	}
	return (lo + hi) / 2, (hi - lo) / 2, nil
}

// verify clears every client's FAILED flag and statistics after a settling
// time, lets the statistics window pass and reads each board's TimeSync
// state.
func (rr *rackRun) verify(ctx context.Context, live []*node, ts *tsRack) {
	r := rr.run
	root := rr.anyRoot(live)
	if root != nil {
		rr.client.Wait(ctx, root.Name, tsSettleUS)
	}
	// A client configured before its parent sent anything counted the
	// silence as missed messages and may have raised FAILED (sticky):
	// clear it with the statistics, once every client had time to lock.
	for _, n := range live {
		var kv []any
		switch n.ts.Role {
		case "off":
			continue
		case "client":
			kv = []any{"TS_STATUS", 2, "TS_CLEAR", 1}
		default:
			kv = []any{"TS_CLEAR", 1}
		}
		mg, _ := n.mg(r)
		ops, _ := writes(mg, kv...)
		if _, err := r.ops(ctx, n, ops); err != nil {
			n.note("timesync: clearing its statistics failed: %v", err)
		}
	}
	if root != nil {
		rr.client.Wait(ctx, root.Name, tsMeasureUS)
	}
	for _, n := range live {
		if n.ts.Role == "off" {
			continue
		}
		mg, _ := n.mg(r)
		v, err := r.readMany(ctx, n, mg, "TS_STATUS", "TS_LAST_CORR_PS", "TS_MAX_CORR_PS", "TS_RX_VALID", "TS_RX_INVALID",
			"TS_MISSED", "TS_WAIT_MAX_PS")
		if err != nil {
			n.ts.Status = "down"
			n.note("timesync: its TimeSync state could not be read: %v", err)
			continue
		}
		st := v["TS_STATUS"]
		n.ts.Locked, n.ts.Failed = st&1 != 0, st&2 != 0
		n.ts.LastCorrNS = float64(int32(v["TS_LAST_CORR_PS"])) / 1000
		n.ts.MaxCorrNS = float64(v["TS_MAX_CORR_PS"]) / 1000
		n.ts.RxValid, n.ts.RxInvalid, n.ts.Missed = v["TS_RX_VALID"], v["TS_RX_INVALID"], v["TS_MISSED"]
		n.ts.WaitMaxNS = float64(v["TS_WAIT_MAX_PS"]) / 1000
		if n.ts.Role == "client" {
			// Positive correction: this clock was behind, it runs slower.
			n.ts.DriftPPM = -n.ts.LastCorrNS / float64(ts.IntervalNS) * 1e6
		}
		switch {
		case n.ts.Role == "primary":
			n.ts.Status = "primary"
		case n.ts.Locked && !n.ts.Failed:
			n.ts.Status = "synced"
		case n.ts.RxInvalid > 0:
			n.ts.Status = "invalid"
		default:
			n.ts.Status = "unsynced"
		}
	}
}

func (rr *rackRun) anyRoot(live []*node) *node {
	for _, n := range live {
		if n.DCN {
			return n
		}
	}
	return nil
}

// reroot rebuilds the tree around failures (App. B.2: "The protocol relies
// on software to take action once failure is detected"): a primary whose
// children all fail is replaced by the next candidate; a client that fails
// under a working parent has lost its cable, and gets a new parent over
// another cable. It reports whether it changed the tree.
func (rr *rackRun) reroot(ctx context.Context, live []*node, ts *tsRack) bool {
	var primary *node
	var failed []*node
	for _, n := range live {
		switch {
		case n.ts.Role == "primary":
			primary = n
		case n.ts.Role == "client" && (n.ts.Failed || !n.ts.Locked):
			failed = append(failed, n)
		}
	}
	if len(failed) == 0 || primary == nil {
		return false
	}
	kids, kidsFailed := 0, 0
	for _, n := range live {
		if n.ts.parent == primary {
			kids++
			if n.ts.Failed || !n.ts.Locked {
				kidsFailed++
			}
		}
	}
	changed := false
	if kids > 0 && kidsFailed == kids {
		ts.excluded[primary] = true
		// The convergence was timed on the primary just replaced.
		ts.ConvergeUS = math.NaN()
		ts.ConvergeNote = fmt.Sprintf("timed on the first primary %s, since replaced: %s", primary.Name, ts.ConvergeNote)
		ts.Rerooted = append(ts.Rerooted, fmt.Sprintf("primary %s: every client under it failed (TS_MISSED rising): a new primary", primary.Name))
		changed = true
	} else {
		for _, n := range failed {
			p := n.ts.parent
			if p.ts.Role == "primary" || (p.ts.Locked && !p.ts.Failed) {
				c := n.Ports[n.ts.rx].Cable
				if !ts.failedCables[c] {
					ts.failedCables[c] = true
					ts.Rerooted = append(ts.Rerooted, fmt.Sprintf("cable %s: %s failed under a working %s (missed %d, invalid %d): new parent over another cable",
						c.Name(), n.Name, p.Name, n.ts.Missed, n.ts.RxInvalid))
					changed = true
				}
			}
		}
	}
	if !changed {
		return false
	}
	primary = rr.buildTree(live, ts)
	if primary == nil {
		return false
	}
	rr.announceTree(primary, ts, ts.Rerooted[len(ts.Rerooted)-1])
	if err := rr.configureTree(ctx, live, primary, ts); err != nil {
		rr.run.log.Warn("re-rooting: configuring the tree failed", "rack", rr.Name, "err", err)
		return false
	}
	// Clear FAILED everywhere (w1c) and start the primary.
	for _, n := range live {
		mg, _ := n.mg(rr.run)
		ops, _ := writes(mg, "TS_STATUS", 2)
		rr.run.ops(ctx, n, ops)
	}
	mg, _ := primary.mg(rr.run)
	ops, _ := writes(mg, "TS_CTRL", 1)
	rr.run.ops(ctx, primary, ops)
	primary.setIntent("TS_CTRL", 1)
	return true
}

// offsets takes each client's largest correction as its offset from the
// primary, and sums the largest corrections along its path for the bound
// the hardware vouches for (reading M1, Aquila Appendix B).
func (rr *rackRun) offsets(live []*node, ts *tsRack) {
	for _, n := range live {
		if n.ts.Role != "client" {
			continue
		}
		n.ts.OffsetNS = n.ts.MaxCorrNS
		sum := 0.0
		for x := n; x != nil && x.ts.Role == "client"; x = x.ts.parent {
			sum += x.ts.MaxCorrNS
		}
		n.ts.BoundNS = sum
	}
}
