package bringup

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/labrunner/labrunner/drivers"
	"github.com/labrunner/labrunner/drivers/pmos"
	"github.com/labrunner/labrunner/drivers/regmap"
	"github.com/labrunner/labrunner/results"
)

// The bootstrap in waves (Aquila §4.4; docs/mgmt.md §7): the DCN boards get
// their address and routes directly (wave 0); every other board sends
// DISCOVERs over MOS on all its cables, a bootstrapped neighbour relays
// them to the runner, and the runner answers with an ASSIGN sent link-local
// through that proxy, configures the target and the routes toward it
// through the proxy over PMOS, reaches it over the routed management network
// and uses it as the proxy of the next wave. Targets are bootstrapped in
// parallel as their relays arrive.
//
// One goroutine (engine.run) owns every decision; workers do the register
// traffic and report back with events. The engine never waits for a
// deadline when the outcome is known: a board that no working board can
// reach any more is reported at once, naming the boards it depends on.

// Management-time budgets of the bootstrap (mgmt.md §7).
const (
	fwBootBudgetNS = 50_000_000 // a firmware still booting after 50 ms never boots
	// relayWaitNS: how long the runner waits for a target's DISCOVER once
	// every acceptable proxy relays, before it asks the target link-local
	// (DISCOVERs come every millisecond, pmos.md §5.2; a board that kept
	// its address from an earlier run sends none).
	relayWaitNS = 10_000_000
	// maxAttempts bounds the attempts at one target through its proxies
	// (each proxy is tried at least once).
	maxAttempts = 6
)

type bootStatus string

const (
	bootNone        bootStatus = ""
	bootOK          bootStatus = "ok"
	bootFailed      bootStatus = "failed"
	bootDied        bootStatus = "died"
	bootUnreachable bootStatus = "unreachable"
)

func (s bootStatus) terminal() bool { return s != bootNone }

type hop struct {
	n    *node
	port int // the port of n toward the next board
}

// bootInfo is a board's bootstrap as the runner did it.
type bootInfo struct {
	Status    bootStatus
	Wave      int
	Proxy     *node // nil for a DCN board
	ProxyPort int   // the proxy's port toward the board
	UpPort    int   // the board's port toward its proxy (ASSIGNED.PORT)
	Root      *node // the DCN board whose mailbox reaches it
	Path      []hop // from the root to the board's proxy, then the proxy's port
	DNA       uint32
	Boots     uint16
	StartNS   int64 // management time at the first relay (or the first probe)
	DoneNS    int64 // at the first routed answer
	Why       string
	Check     string
	ReHomed   []string
	// Reconciled lists the reconciliations done on the board.
	Reconciled []Reconciliation

	// The engine's bookkeeping.
	busy      bool        // a worker handles the board
	addressed bool        // it has its address: it sends no DISCOVER
	heard     []relayCand // acceptable relays of its DISCOVER
	tried     map[*node]int
	attempts  int
	lastErr   string
	lastChk   string
	readyNS   int64
	waitNS    int64 // management time it began to wait for a relay
	everHeard bool  // a DISCOVER of it was relayed at least once
}

type relayCand struct {
	proxy *node
	port  int
	at    int64
	dna   uint32
}

func (n *node) bootStatus() bootStatus {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.boot.Status
}

func (n *node) wave() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.boot.Wave
}

func (n *node) bootCopy() bootInfo {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.boot
}

// rackRun is one rack during the run.
type rackRun struct {
	*Rack
	run    *run
	nodes  []*node
	client *pmos.Client
	byAddr map[uint16]*node
	byName map[string]*node
	// expect holds the golden predictions by key (results.Key).
	expect map[string]results.Expectation
	mu     sync.Mutex
	lossy  []CableNote
	ts     *tsRack
	// rawExpect: the predictions with the lab's cables as they are (the
	// link delays see their asymmetry).
	rawExpect map[string]results.Expectation
	echoes    []Echo
	// badCables are cables PMOS gave up on while they damaged frames (a
	// very lossy cable): the bootstrap goes around them. Engine only.
	badCables map[*Cable]string
}

// linkLocal is the path of a request to the board at the other end of
// proxy's port.
func (rr *rackRun) linkLocal(proxy *node, port int) pmos.Path {
	proxy.mu.Lock()
	root := proxy.boot.Root
	proxy.mu.Unlock()
	if proxy.DCN && (root == nil || root == proxy) {
		return pmos.Path{Kind: pmos.PathPort, Via: proxy.Name, Port: uint8(port)}
	}
	return pmos.Path{Kind: pmos.PathProxy, Via: root.Name, Proxy: proxy.Addr, Port: uint8(port)}
}

func (rr *rackRun) setBoot(n *node, f func(*bootInfo)) {
	n.mu.Lock()
	f(&n.boot)
	n.mu.Unlock()
}

// bootstrap runs the rack's bootstrap stage.
func (rr *rackRun) bootstrap(ctx context.Context, quiet bool) {
	r := rr.run
	rr.client = pmos.NewClient(pmos.ClientConfig{Log: r.log.With("rack", rr.Name), OnRetry: func(p pmos.Path, t pmos.MsgType, tag uint16) {
		if p.Kind == pmos.PathRouted {
			if n := rr.byAddr[p.Addr]; n != nil {
				n.mu.Lock()
				n.suspect = true
				n.mu.Unlock()
			}
		}
	}})
	t0 := time.Now()
	e := newEngine(rr, ctx, quiet)
	if len(rr.DCN) == 0 {
		for _, n := range rr.nodes {
			rr.setBoot(n, func(b *bootInfo) {
				b.Status, b.Wave = bootFailed, -1
				b.Why = "no board of the rack is `dcn: true` and none has a register bus: the bootstrap has nowhere to start (Aquila §4.4)"
				b.Check = "mark the boards whose console or bridge is cabled to the runner `dcn: true` in the lab file"
			})
			e.report(n)
		}
	} else {
		e.run()
		e.quietRelays()
	}
	rr.client.Listen(false)
	r.log.Debug("bootstrap done", "rack", rr.Name, "seconds", time.Since(t0).Seconds(), "client", fmt.Sprintf("%+v", rr.client.Stats()))
	rr.cableHealth(ctx)
	rr.mailboxHealth(ctx)
	for _, n := range rr.nodes {
		rr.finish(n, quiet, rr.bootResult(n))
	}
	if !quiet {
		rr.scoreBootstrap()
	}
}

// fwError is a management firmware that is not running.
type fwError struct {
	why, check string
}

func (e *fwError) Error() string { return e.why }

// ---- the engine --------------------------------------------------------------

type evKind int

const (
	evReady  evKind = iota // the board is bootstrapped (wave 0 or in-band)
	evFailed               // the board failed for good
	evRetry                // an attempt through a proxy ended without the board: try again
	evRelay                // a relay switch finished
)

type bootEvent struct {
	kind evKind
	n    *node
	why  string
	chk  string
	// evRetry: the proxy tried; dead names a board on the way whose
	// firmware stopped (deadWhy says how it showed); addressed says the
	// target has its address now.
	proxy     *node
	dead      *node
	deadWhy   string
	addressed bool
	// badCable: the cable to the target damaged frames until PMOS gave
	// up on it (too lossy to bootstrap through).
	badCable *Cable
	// evReady of an in-band board.
	ready *readyInfo
	// evRelay
	on  bool
	err error
}

type readyInfo struct {
	proxy      *node
	pport, up  int
	root       *node
	path       []hop
	boots      uint16
	dna        uint32
	doneNS     int64
	remote     *pmos.RemoteBus
	assignedAt int64
}

type relayKey struct {
	proxy uint16
	port  uint8
}

type relayState struct {
	on, pending bool
	sinceNS     int64
}

type engine struct {
	rr      *rackRun
	ctx     context.Context
	quiet   bool
	events  chan bootEvent
	workers int
	relay   map[*node]*relayState

	fmu    sync.Mutex // the relay filter runs in the mailbox pollers
	wanted map[relayKey]bool
	seen   map[relayKey]bool
}

func newEngine(rr *rackRun, ctx context.Context, quiet bool) *engine {
	return &engine{rr: rr, ctx: ctx, quiet: quiet, events: make(chan bootEvent, 64), relay: map[*node]*relayState{},
		wanted: map[relayKey]bool{}, seen: map[relayKey]bool{}}
}

func (e *engine) now() int64 { return e.rr.client.NowNS("") }

func (e *engine) printf(n *node, status, format string, a ...any) {
	st := status
	if status == "ok" && e.label(n) != "" {
		st = e.label(n)
	}
	e.rr.run.out.line(StageBootstrap.String(), n.Name, st, fmt.Sprintf(format, a...))
}

// label marks a board's lines that are not judged.
func (e *engine) label(n *node) string {
	switch {
	case !e.rr.run.judged(n.Board):
		return "(help)"
	case e.quiet:
		return "(pre)"
	}
	return ""
}

// run is the engine's loop: start wave 0, then react to relays and worker
// events until every board it needs has an outcome.
func (e *engine) run() {
	rr := e.rr
	rr.client.SetRelayFilter(e.keepRelay)
	rr.client.Listen(true)
	for _, n := range rr.nodes {
		if !n.DCN {
			continue
		}
		prev := n.failedBefore(StageBootstrap)
		if prev == nil && n.direct != nil {
			continue
		}
		why, chk := "the runner has no register bus to it", "the lab file's bus entry of "+n.Name
		if prev != nil {
			why = fmt.Sprintf("its %s stage failed: %s", prev.Stage, firstLine(strings.TrimSpace(prev.Summary+" "+prev.Seen)))
			chk = "the " + prev.Stage.String() + " stage's diagnosis of " + n.Name
		}
		rr.setBoot(n, func(b *bootInfo) { b.Status, b.Wave, b.Why, b.Check = bootFailed, -1, why, chk })
		e.report(n)
	}
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		e.decide()
		if e.workers == 0 && e.done() {
			return
		}
		select {
		case <-e.ctx.Done():
			e.expire()
			return
		case ev := <-e.events:
			e.workers--
			e.apply(ev)
		case rel := <-rr.client.Relays():
			e.onRelay(rel)
		case <-tick.C:
		}
	}
}

// quietRelays turns relaying off wherever the engine left it on (the stage
// ended at its deadline with targets waiting): DISCOVERs relayed to a
// mailbox nobody drains would fill it and drop the later stages' answers.
// It has a deadline of its own, the stage's being spent.
func (e *engine) quietRelays() {
	for p, s := range e.relay {
		if !s.on && !s.pending || p.bootStatus() != bootOK {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		if err := e.rr.setRelay(ctx, p, false); err != nil {
			e.rr.run.log.Warn("turning relaying off after the bootstrap failed", "board", p.Name, "err", err)
		} else {
			s.on = false
		}
		cancel()
	}
}

// start runs a worker on n.
func (e *engine) start(n *node, f func() bootEvent) {
	e.rr.setBoot(n, func(b *bootInfo) { b.busy = true })
	e.workers++
	go func() {
		ev := f()
		ev.n = n
		e.events <- ev
	}()
}

// expire ends the bootstrap at the stage's deadline: boards without an
// outcome fail with what was last seen, and the workers are waited for
// (their requests end with the context).
func (e *engine) expire() {
	rr := e.rr
	for e.workers > 0 {
		ev := <-e.events
		e.workers--
		if ev.kind == evReady {
			e.apply(ev)
		}
	}
	for _, n := range rr.nodes {
		b := n.bootCopy()
		if b.Status.terminal() || !e.wants(n, nil) {
			continue
		}
		rr.setBoot(n, func(b *bootInfo) {
			b.Status, b.Wave, b.busy = bootFailed, -1, false
			b.Why = fmt.Sprintf("the bootstrap stage's deadline of %s ran out before the board was reached", rr.run.opts.Deadlines[StageBootstrap])
			if b.lastErr != "" {
				b.Why += "; last attempt: " + b.lastErr
			}
			b.Check = "the boards on its path and the run directory's labrunner.log; raise --deadline bootstrap=... for a large rack"
		})
		e.report(n)
	}
}

// done says whether every board the run needs has an outcome.
func (e *engine) done() bool {
	for _, n := range e.rr.nodes {
		b := n.bootCopy()
		if !b.Status.terminal() && (b.busy || e.wants(n, nil)) {
			return false
		}
	}
	for _, s := range e.relay {
		if s.pending {
			return false
		}
	}
	return true
}

// dist is each board's breadth-first distance over the lab's cables from
// the DCN boards that are up or on their way, through boards that have not
// failed or died (golden/bringup's waves, with the failures seen so far).
func (e *engine) dist() map[*node]int {
	rr := e.rr
	d := map[*node]int{}
	var frontier []*node
	for _, n := range rr.nodes {
		if s := n.bootStatus(); n.DCN && (s == bootNone || s == bootOK) {
			d[n] = 0
			frontier = append(frontier, n)
		}
	}
	for k := 1; len(frontier) > 0; k++ {
		var next []*node
		for _, x := range frontier {
			for _, y := range rr.neighbours(x) {
				if _, seen := d[y]; seen {
					continue
				}
				if s := y.bootStatus(); s == bootFailed || s == bootDied || s == bootUnreachable {
					continue
				}
				if y.DCN {
					continue // a DCN board is never a target (and, down, never a source)
				}
				d[y] = k
				next = append(next, y)
			}
		}
		sortNodes(next)
		frontier = next
	}
	return d
}

// needed says whether the bootstrap must reach n: every board when the
// whole lab is brought up; with --board, the boards named and those on a
// shortest path from a DCN board to one of them.
func (e *engine) needed(n *node, dist map[*node]int) bool {
	r := e.rr.run
	if len(r.opts.Boards) == 0 || r.judged(n.Board) {
		return true
	}
	if dist == nil {
		dist = e.dist()
	}
	dn, ok := dist[n]
	if !ok {
		return false
	}
	for _, g := range e.rr.nodes {
		if !r.judged(g.Board) {
			continue
		}
		dg, ok := dist[g]
		if !ok {
			continue
		}
		if h := e.hops(n, g); h >= 0 && dn+h == dg {
			return true
		}
	}
	return false
}

// hops is the distance from a to b over boards that have not failed or
// died (-1: none).
func (e *engine) hops(a, b *node) int {
	seen := map[*node]bool{a: true}
	frontier := []*node{a}
	for k := 0; len(frontier) > 0; k++ {
		var next []*node
		for _, x := range frontier {
			if x == b {
				return k
			}
			for _, y := range e.rr.neighbours(x) {
				if seen[y] {
					continue
				}
				if s := y.bootStatus(); s == bootFailed || s == bootDied || s == bootUnreachable {
					continue
				}
				seen[y] = true
				next = append(next, y)
			}
		}
		frontier = next
	}
	return -1
}

// neighbours are the boards cabled to x over cables the bootstrap still
// uses (not found too lossy for PMOS), each once, in port order.
func (rr *rackRun) neighbours(x *node) []*node {
	var out []*node
	seen := map[*node]bool{}
	for _, e := range x.Ports {
		pe := e.Peer()
		if pe == nil || rr.badCables[e.Cable] != "" {
			continue
		}
		y := rr.byName[pe.Board.Name]
		if !seen[y] {
			seen[y] = true
			out = append(out, y)
		}
	}
	return out
}

// acceptable lists u's bootstrapped neighbours one wave before it (its
// breadth-first proxies), each with its port toward u, in port order of u.
func (e *engine) acceptable(u *node, du int) []hop {
	var out []hop
	seen := map[*node]bool{}
	for _, end := range u.Ports {
		pe := end.Peer()
		if pe == nil || e.rr.badCables[end.Cable] != "" {
			continue
		}
		y := e.rr.byName[pe.Board.Name]
		if seen[y] {
			continue
		}
		b := y.bootCopy()
		if b.Status != bootOK || b.Wave != du-1 {
			continue
		}
		seen[y] = true
		out = append(out, hop{n: y, port: pe.Index})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].n.Index < out[j].n.Index })
	return out
}

// decide looks at every board and starts what can start: unreachable
// boards are reported, heard targets assigned, silent ones asked
// link-local, relays switched on where a target waits and off where none
// does.
func (e *engine) decide() {
	rr := e.rr
	dist := e.dist()
	now := e.now()
	wantRelay := map[*node]bool{}
	wanted := map[relayKey]bool{}
	for _, n := range rr.nodes {
		// Wave 0: each DCN board the run needs, directly.
		if b := n.bootCopy(); n.DCN && b.Status == bootNone && !b.busy && e.needed(n, dist) {
			e.start(n, func() bootEvent { return rr.wave0(e.ctx, n) })
		}
	}
	for _, u := range rr.nodes {
		if u.DCN {
			continue
		}
		b := u.bootCopy()
		if b.Status.terminal() || b.busy || !e.wants(u, dist) {
			continue
		}
		du, reach := dist[u]
		if !reach {
			e.unreachable(u)
			continue
		}
		cands := e.acceptable(u, du)
		if len(cands) == 0 {
			continue // its breadth-first proxies are on their way
		}
		limit := min(maxAttempts, max(2, len(cands)))
		// A relay heard from an acceptable proxy not yet tried: assign.
		var pick *relayCand
		for i := range b.heard {
			c := &b.heard[i]
			if b.tried[c.proxy] == 0 && containsHop(cands, c.proxy) {
				pick = c
				break
			}
		}
		if pick != nil {
			c := *pick
			e.startTarget(u, c.proxy, c.port, modeAssign, c.dna, b.attempts+1 >= limit)
			continue
		}
		// Untried proxies first; once each was tried, the least tried.
		sort.SliceStable(cands, func(i, j int) bool { return b.tried[cands[i].n] < b.tried[cands[j].n] })
		// Each acceptable proxy is tried once, a lone one twice (a
		// transient: a request lost to a full mailbox).
		if b.attempts >= limit {
			why := fmt.Sprintf("gave up after %d attempts through %s: %s", b.attempts, hopNames(cands), b.lastErr)
			if !b.everHeard && !b.addressed {
				why = fmt.Sprintf("never answered: no DISCOVER of it was relayed by %s, and %d requests link-local through them failed; the last: %s",
					hopNames(cands), b.attempts, b.lastErr)
			}
			e.fail(u, why, b.lastChk)
			continue
		}
		if b.addressed {
			// It has its address (its proxy died under it, or an attempt
			// ended after the ASSIGN): it sends no DISCOVER any more.
			e.startTarget(u, cands[0].n, cands[0].port, modeProbe, 0, b.attempts+1 >= limit)
			continue
		}
		// Wait for its DISCOVER, relayed by every acceptable proxy; after
		// relayWaitNS of silence once they relay, ask it link-local.
		relaying := false
		for _, c := range cands {
			wantRelay[c.n] = true
			wanted[relayKey{c.n.Addr, uint8(c.port)}] = true
			if s := e.relay[c.n]; s != nil && s.on && !s.pending {
				relaying = true
			}
		}
		if !relaying {
			continue
		}
		if b.waitNS == 0 {
			rr.setBoot(u, func(b *bootInfo) { b.waitNS = now })
			continue
		}
		if now-b.waitNS >= relayWaitNS*int64(1+b.attempts) {
			e.startTarget(u, cands[0].n, cands[0].port, modeProbe, 0, b.attempts+1 >= limit)
		}
	}
	e.fmu.Lock()
	e.wanted = wanted
	e.fmu.Unlock()
	// Relays on where a target waits, off where none does (every relay
	// floods the DCN board's mailbox every millisecond: mgmt.md §4 holds 32).
	for _, p := range rr.nodes {
		want := wantRelay[p]
		s := e.relay[p]
		if s == nil {
			if !want {
				continue
			}
			s = &relayState{}
			e.relay[p] = s
		}
		if s.pending || s.on == want || p.bootStatus() != bootOK {
			continue
		}
		s.pending = true
		on := want
		e.workers++
		go func() {
			err := e.rr.setRelay(e.ctx, p, on)
			e.events <- bootEvent{kind: evRelay, n: p, on: on, err: err}
		}()
	}
}

// wants says whether the engine must give the board an outcome: it is
// needed, or it was started (a board with its address, or heard, finishes
// its bootstrap even when a --board run no longer needs it).
func (e *engine) wants(n *node, dist map[*node]int) bool {
	if e.needed(n, dist) {
		return true
	}
	b := n.bootCopy()
	return b.addressed || len(b.heard) > 0 || b.attempts > 0
}

func containsHop(hs []hop, n *node) bool {
	for _, h := range hs {
		if h.n == n {
			return true
		}
	}
	return false
}

func hopNames(hs []hop) string {
	var s []string
	for _, h := range hs {
		s = append(s, h.n.Name+":"+h.n.Ports[h.port].Name)
	}
	return strings.Join(s, ", ")
}

type targetMode int

const (
	modeAssign targetMode = iota // its DISCOVER was relayed: ASSIGN at once
	modeProbe                    // ask it link-local first (silent, or addressed already)
)

// startTarget runs an attempt at u through p's port; last says it is the
// last one the engine will make (the worker then gathers the evidence a
// person needs: the board's console).
func (e *engine) startTarget(u, p *node, pport int, mode targetMode, dna uint32, last bool) {
	now := e.now()
	e.rr.setBoot(u, func(b *bootInfo) {
		if b.tried == nil {
			b.tried = map[*node]int{}
		}
		b.tried[p]++
		b.attempts++
		if b.StartNS == 0 {
			b.StartNS = now
		}
		if dna != 0 {
			b.DNA = dna
		}
	})
	e.rr.run.log.Debug("target", "board", u.Name, "proxy", p.Name, "mode", mode, "at_ns", now)
	if mode == modeProbe {
		b := u.bootCopy()
		what := "no DISCOVER of it was relayed"
		if b.addressed {
			what = "it has its address already"
		}
		e.printf(u, "...", "%s: asking it link-local through %s:%s", what, p.Name, p.Ports[pport].Name)
	}
	e.start(u, func() bootEvent { return e.rr.target(e.ctx, u, p, pport, mode, last) })
}

// keepRelay is the mailbox pollers' relay filter: a relay is read whole
// when a waiting target is expected from that proxy's port, or when that
// proxy's port was never heard from (its hostname is checked against the
// lab file's cabling).
func (e *engine) keepRelay(proxy uint16, port uint8) bool {
	k := relayKey{proxy, port}
	e.fmu.Lock()
	defer e.fmu.Unlock()
	if !e.seen[k] {
		e.seen[k] = true
		return true
	}
	return e.wanted[k]
}

// onRelay records a relayed DISCOVER of a target from an acceptable proxy.
func (e *engine) onRelay(rel pmos.Relayed) {
	rr := e.rr
	p := rr.byAddr[rel.Proxy]
	if p == nil || p.bootStatus() != bootOK || int(rel.ProxyPort) >= len(p.Ports) {
		rr.run.log.Debug("relay from a proxy the runner did not bootstrap", "via", rel.Via, "proxy", rel.Proxy)
		return
	}
	u := rr.byName[rel.Discover.Name]
	rr.run.log.Debug("relay", "proxy", p.Name, "port", p.Ports[rel.ProxyPort].Name, "target", rel.Discover.Name, "at_ns", rel.AtNS)
	rr.checkCabling(p, int(rel.ProxyPort), rel.Discover.Name, int(rel.Discover.Port))
	if u == nil {
		rr.run.log.Warn("relay of a board the lab file does not have", "proxy", p.Name, "hostname", rel.Discover.Name, "dna", fmt.Sprintf("0x%08x", rel.Discover.DNA))
		return
	}
	if u.DCN {
		return // the runner configures DCN boards directly (wave 0), never through a proxy
	}
	if !e.needed(u, nil) {
		return // a --board run leaves it alone
	}
	b := u.bootCopy()
	if b.Status.terminal() || b.busy || b.addressed {
		return
	}
	du, ok := e.dist()[u]
	if !ok || !containsHop(e.acceptable(u, du), p) {
		return // not a breadth-first proxy of it: another one will relay it
	}
	for _, c := range b.heard {
		if c.proxy == p {
			return
		}
	}
	rr.setBoot(u, func(b *bootInfo) {
		b.everHeard = true
		b.heard = append(b.heard, relayCand{proxy: p, port: int(rel.ProxyPort), at: rel.AtNS, dna: rel.Discover.DNA})
		if b.StartNS == 0 || rel.AtNS < b.StartNS {
			b.StartNS = rel.AtNS
		}
	})
}

// apply takes a worker's outcome.
func (e *engine) apply(ev bootEvent) {
	rr := e.rr
	n := ev.n
	switch ev.kind {
	case evRelay:
		s := e.relay[n]
		s.pending = false
		if ev.err != nil {
			rr.run.log.Warn("switching relaying failed", "board", n.Name, "on", ev.on, "err", ev.err)
			if alive, why := rr.alive(e.ctx, n); !alive {
				e.died(n, why)
			}
			return
		}
		s.on = ev.on
		if ev.on {
			s.sinceNS = e.now()
		}
		rr.run.log.Debug("relaying switched", "board", n.Name, "on", ev.on, "at_ns", e.now())
		return
	case evReady:
		now := e.now()
		wave := 0
		if ri := ev.ready; ri != nil {
			wave = ri.proxy.wave() + 1
		}
		rr.setBoot(n, func(b *bootInfo) {
			b.busy, b.Status, b.readyNS, b.addressed = false, bootOK, now, true
			if ri := ev.ready; ri != nil {
				if b.Proxy != nil && b.Proxy != ri.proxy {
					b.ReHomed = append(b.ReHomed, fmt.Sprintf("first through %s:%s, reached again through %s:%s", b.Proxy.Name,
						portName(b.Proxy.Board, b.ProxyPort), ri.proxy.Name, portName(ri.proxy.Board, ri.pport)))
				}
				b.Wave = wave
				b.Proxy, b.ProxyPort, b.UpPort = ri.proxy, ri.pport, ri.up
				b.Root, b.Path, b.Boots = ri.root, ri.path, ri.boots
				if b.DNA == 0 {
					b.DNA = ri.dna
				}
				b.DoneNS = ri.doneNS
				if b.StartNS == 0 || b.StartNS > b.DoneNS {
					b.StartNS = ri.assignedAt
				}
			}
		})
		if ri := ev.ready; ri != nil {
			n.mu.Lock()
			n.remote = ri.remote
			n.mu.Unlock()
		}
		e.report(n)
	case evFailed:
		rr.setBoot(n, func(b *bootInfo) { b.busy = false })
		e.fail(n, ev.why, ev.chk)
	case evRetry:
		rr.setBoot(n, func(b *bootInfo) {
			b.busy = false
			b.addressed = b.addressed || ev.addressed
			b.lastErr, b.lastChk = ev.why, ev.chk
			// The relays heard so far are used up: a new attempt waits for
			// a fresh one (or asks it link-local).
			b.heard, b.waitNS = nil, 0
		})
		if ev.dead != nil {
			e.died(ev.dead, ev.deadWhy)
		}
		e.printf(n, "retry", "%s", ev.why)
		if c := ev.badCable; c != nil && rr.badCables[c] == "" {
			rr.badCables[c] = ev.why
			rr.run.out.line("bootstrap", c.Name(), "WARN", "too lossy for PMOS (it damages frames until PMOS gives up): the bootstrap goes around it")
			rr.setBoot(n, func(b *bootInfo) { b.attempts, b.tried = 0, nil })
		}
	}
}

// fail reports a board failed.
func (e *engine) fail(n *node, why, chk string) {
	e.rr.setBoot(n, func(b *bootInfo) {
		b.Status, b.Wave, b.busy = bootFailed, -1, false
		b.Why, b.Check = why, chk
	})
	e.report(n)
}

// unreachable reports a board no working board can reach: every path to a
// DCN board goes through boards that failed or died.
func (e *engine) unreachable(u *node) {
	deps := e.rr.cutOff(u)
	e.rr.setBoot(u, func(b *bootInfo) {
		b.Status, b.Wave = bootUnreachable, -1
		b.Why = "no working board can reach it: every path to a DCN board goes through " + deps
		b.Check = "the boards named (their own diagnosis) and the cabling"
	})
	e.report(u)
}

// died marks a board whose management firmware stopped answering, and
// every board reached through it as one to reach again another way.
func (e *engine) died(x *node, why string) {
	rr := e.rr
	x.mu.Lock()
	if x.boot.Status == bootDied || x.boot.Status == bootFailed {
		x.mu.Unlock()
		return
	}
	wasOK := x.boot.Status == bootOK
	x.boot.Status = bootDied
	if !wasOK {
		x.boot.Status, x.boot.Wave = bootFailed, -1
	}
	x.boot.Why = why
	x.boot.Check = "its console (a kernel panic?); only a power cycle brings a crashed firmware back; the boards it proxied go through other neighbours"
	x.remote = nil
	x.mu.Unlock()
	e.report(x)
	if s := e.relay[x]; s != nil {
		s.on = false
	}
	for _, n := range rr.nodes {
		n.mu.Lock()
		through := n.boot.Root == x && n != x
		for _, h := range n.boot.Path {
			through = through || h.n == x
		}
		if through && n.boot.Status == bootOK {
			n.boot.Status, n.boot.addressed = bootNone, true
			n.boot.tried = nil
			n.boot.attempts = 0
			n.remote = nil
			n.mu.Unlock()
			e.printf(n, "retry", "reached through %s, whose firmware stopped: reaching it again through another neighbour", x.Name)
			continue
		}
		n.mu.Unlock()
	}
}

// report prints a board's bootstrap outcome as it is known.
func (e *engine) report(n *node) {
	b := n.bootCopy()
	switch b.Status {
	case bootOK:
		if b.Proxy == nil {
			e.printf(n, "ok", "wave 0 (DCN), address 0x%04x", n.Addr)
			return
		}
		line := fmt.Sprintf("wave %d via %s:%s, address 0x%04x, %.2f ms", b.Wave, b.Proxy.Name, portName(b.Proxy.Board, b.ProxyPort), n.Addr, float64(b.DoneNS-b.StartNS)/1e6)
		if len(b.ReHomed) > 0 {
			line += "; " + b.ReHomed[len(b.ReHomed)-1]
		}
		e.printf(n, "ok", "%s", line)
	default:
		res := e.rr.bootResult(n)
		res.Stage = StageBootstrap
		e.rr.run.out.stage(res, n.Name, e.label(n))
	}
}

// ---- workers ---------------------------------------------------------------

// wave0 configures a DCN board directly: it waits for its firmware, gives
// it its address and routes the controller to its mailbox (mgmt.md §7,
// wave 0). Relaying stays off until a neighbour waits for it.
func (rr *rackRun) wave0(ctx context.Context, n *node) bootEvent {
	if err := rr.wave0Do(ctx, n); err != nil {
		var fe *fwError
		if errors.As(err, &fe) {
			return bootEvent{kind: evFailed, why: fe.why, chk: fe.check}
		}
		return bootEvent{kind: evFailed, why: err.Error(), chk: "its register bus (bridge cable, power) and the management block at 0xF0000000"}
	}
	return bootEvent{kind: evReady}
}

func (rr *rackRun) wave0Do(ctx context.Context, n *node) error {
	r := rr.run
	mg, err := n.mg(r)
	if err != nil {
		return err
	}
	c0, err := mg.Read64(ctx, "CYCLES_LO")
	if err != nil {
		return err
	}
	var st uint32
	for {
		st, err = mg.Read(ctx, "FW_STATE")
		if err != nil {
			return err
		}
		if st&0xF == fwUp {
			break
		}
		c, err := mg.Read64(ctx, "CYCLES_LO")
		if err != nil {
			return err
		}
		if st&0xF == fwHalted {
			return &fwError{why: fmt.Sprintf("its management firmware crashed: FW_STATE reads HALTED (boots %d), the watchdog saw its heartbeat stop", st>>16),
				check: "its console for a kernel panic; only a power cycle brings the firmware back"}
		}
		if int64(c-c0)*5/2 > fwBootBudgetNS {
			hb, _ := mg.Read(ctx, "FW_HEARTBEAT")
			why := fmt.Sprintf("its management firmware never booted: FW_STATE still %s after %d ms, FW_HEARTBEAT %d", fwStateName(st&0xF), fwBootBudgetNS/1_000_000, hb)
			if tail := consoleTail(ctx, n); tail != "" {
				why += "; its console ends with: " + tail
			}
			return &fwError{why: why, check: "its console: a boot log that stops after the kernel started init (RCU stall) means the firmware image or its flash; power-cycle it"}
		}
		if err := mg.Write(ctx, "DELAY_US", 2000); err != nil {
			return err
		}
	}
	ops, err := writes(mg, "MY_ADDR", n.Addr, "ROUTE[0]", 0x800FFFFE, "PROXY_CTRL", proxyQuiet)
	if err != nil {
		return err
	}
	if _, err := r.ops(ctx, n, ops); err != nil {
		return fmt.Errorf("writing MY_ADDR, ROUTE[0] and PROXY_CTRL: %w", err)
	}
	n.mu.Lock()
	n.intent.set("MY_ADDR", uint32(n.Addr))
	if n.intent.routes == nil {
		n.intent.routes = map[uint16]string{}
	}
	n.intent.routes[pmos.AddrController] = "ROUTE[0]"
	n.intent.next = max(n.intent.next, 1)
	n.intent.set("ROUTE[0]", 0x800FFFFE)
	n.intent.set("PROXY_CTRL", proxyQuiet)
	n.boot.Root, n.boot.Wave, n.boot.Boots = n, 0, uint16(st>>16)
	n.mu.Unlock()
	got, err := r.readMany(ctx, n, mg, "MY_ADDR", "ROUTE[0]", "DNA")
	if err != nil {
		return err
	}
	if got["MY_ADDR"] != uint32(n.Addr) || got["ROUTE[0]"] != 0x800FFFFE {
		return fmt.Errorf("MY_ADDR reads 0x%04x and ROUTE[0] 0x%08x after writing 0x%04x and 0x800FFFFE", got["MY_ADDR"], got["ROUTE[0]"], n.Addr)
	}
	rr.setBoot(n, func(b *bootInfo) { b.DNA = got["DNA"] })
	if _, ok := rr.client.Mailbox(n.Name); !ok {
		if _, err := rr.client.AddMailbox(ctx, n.direct, r.mgmt, n.Name); err != nil {
			return err
		}
	}
	return nil
}

// PROXY_CTRL values the runner writes (mgmt.yaml: RELAY bit 0, DISCOVER
// bit 1).
const (
	proxyQuiet = 2 // discover while unaddressed, relay nothing
	proxyRelay = 3 // and relay the neighbours' DISCOVERs to the controller
)

// setRelay turns a bootstrapped board's relaying on or off.
func (rr *rackRun) setRelay(ctx context.Context, p *node, on bool) error {
	v := uint32(proxyQuiet)
	if on {
		v = proxyRelay
	}
	mg, err := p.mg(rr.run)
	if err != nil {
		return err
	}
	ops, err := writes(mg, "PROXY_CTRL", v)
	if err != nil {
		return err
	}
	if _, err := rr.run.ops(ctx, p, ops); err != nil {
		return err
	}
	p.setIntent("PROXY_CTRL", v)
	return nil
}

// target bootstraps u through proxy p's port pport (mgmt.md §7): ASSIGN
// (after a link-local look at it in modeProbe), configure it through the
// proxy, write the routes toward it, reach it over the routed network.
func (rr *rackRun) target(ctx context.Context, u, p *node, pport int, mode targetMode, last bool) bootEvent {
	r := rr.run
	path := rr.linkLocal(p, pport)
	ll := rr.client.Bus(u.Name, path)
	mg := rr.mgmtRegs(nil, u.Name)
	up := -1
	if pe := p.Ports[pport].Peer(); pe != nil && pe.Board.Name == u.Name {
		up = pe.Index
	}
	retry := func(step string, addressed bool, err error) bootEvent {
		return rr.attemptFailed(ctx, u, p, pport, step, addressed, last, err)
	}
	b := u.bootCopy()
	dna := b.DNA
	addressed := false
	assignedAt := rr.client.NowNS("")
	if mode == modeProbe {
		res, err := ll.Do(ctx, []pmos.RegOp{{Op: pmos.OpRead, Addr: addrOf(mg, "MY_ADDR")}, {Op: pmos.OpRead, Addr: addrOf(mg, "DNA")},
			{Op: pmos.OpRead, Addr: addrOf(mg, "FW_STATE")}})
		if err != nil {
			return retry("asking it link-local", b.addressed, err)
		}
		dna = res[1].Value
		addressed = res[0].Value == uint32(u.Addr)
	}
	if !addressed {
		if dna == 0 {
			return bootEvent{kind: evRetry, proxy: p, why: "no DNA known for it (no DISCOVER relayed, no link-local answer)"}
		}
		a, err := rr.client.Assign(ctx, path, dna, u.Addr)
		if err != nil {
			return retry("ASSIGN", false, err)
		}
		if up >= 0 && int(a.Port) != up {
			u.note("ASSIGNED names its port %s as upstream; the lab file cables %s to %s", portName(u.Board, int(a.Port)), p.Ports[pport], p.Ports[pport].Peer())
		}
		up = int(a.Port)
		assignedAt = rr.client.NowNS("")
	}
	if up < 0 || up >= len(u.Ports) {
		return bootEvent{kind: evFailed, why: fmt.Sprintf("no port of %s leads to %s:%s (ASSIGNED names port %d)", u.Name, p.Name, p.Ports[pport].Name, up),
			chk: "the cabling against the lab file"}
	}
	cfg, err := writes(mg, "DEFAULT_ROUTE", 0x80000000|uint32(up)<<16, "PROXY_CTRL", proxyQuiet)
	if err != nil {
		return bootEvent{kind: evFailed, why: err.Error()}
	}
	rd := []pmos.RegOp{{Op: pmos.OpRead, Addr: addrOf(mg, "MY_ADDR")}, {Op: pmos.OpRead, Addr: addrOf(mg, "FW_STATE")}, {Op: pmos.OpRead, Addr: addrOf(mg, "DNA")}}
	res, err := ll.Do(ctx, append(cfg, rd...))
	if err != nil {
		return retry("configuring it through "+p.Name, true, err)
	}
	if got := res[len(cfg)].Value; got != uint32(u.Addr) {
		return bootEvent{kind: evRetry, proxy: p, why: fmt.Sprintf("MY_ADDR reads 0x%04x after the ASSIGN of 0x%04x", got, u.Addr),
			chk: "its firmware's ASSIGN handling (docs/pmos.md §5.4)"}
	}
	boots := uint16(res[len(cfg)+1].Value >> 16)
	if dna == 0 {
		dna = res[len(cfg)+2].Value
	}
	u.setIntent("MY_ADDR", u.Addr, "DEFAULT_ROUTE", 0x80000000|uint32(up)<<16, "PROXY_CTRL", proxyQuiet)
	// Routes toward u on every board from the root to the proxy.
	pb := p.bootCopy()
	hops := append(append([]hop(nil), pb.Path...), hop{n: p, port: pport})
	root := pb.Root
	for _, h := range hops {
		if err := rr.addRoute(ctx, h, u); err != nil {
			return rr.attemptFailed(ctx, u, h.n, h.port, "writing its route on "+h.n.Name, true, false, err)
		}
	}
	// Reach it over the routed network.
	remote := rr.client.Bus(u.Name, pmos.Path{Kind: pmos.PathRouted, Via: root.Name, Addr: u.Addr})
	got, err := remote.Do(ctx, []pmos.RegOp{{Op: pmos.OpRead, Addr: addrOf(mg, "MY_ADDR")}, {Op: pmos.OpRead, Addr: addrOf(mg, "MGMT_ID")}})
	if err == nil && (got[0].Value != uint32(u.Addr) || got[1].Value != r.mgmt.ID) {
		err = fmt.Errorf("a routed read answers MY_ADDR 0x%04x MGMT_ID 0x%08x, want 0x%04x and 0x%08x", got[0].Value, got[1].Value, u.Addr, r.mgmt.ID)
	}
	if err != nil {
		return retry("reaching it over the routed network", true, err)
	}
	return bootEvent{kind: evReady, ready: &readyInfo{proxy: p, pport: pport, up: up, root: root, path: hops, boots: boots, dna: dna,
		doneNS: rr.client.NowNS(root.Name), remote: remote, assignedAt: assignedAt}}
}

// addRoute writes, on hop h's board, the route toward dst out of h's port
// (mgmt.md §7: "on every board on the path from A to the proxy, and on the
// proxy").
func (rr *rackRun) addRoute(ctx context.Context, h hop, dst *node) error {
	mg, err := h.n.mg(rr.run)
	if err != nil {
		return err
	}
	name, err := h.n.routeEntry(dst.Addr)
	if err != nil {
		return err
	}
	v := 0x80000000 | uint32(h.port)<<16 | uint32(dst.Addr)
	ops, err := writes(mg, name, v)
	if err != nil {
		return err
	}
	if _, err := rr.run.ops(ctx, h.n, ops); err != nil {
		return err
	}
	h.n.setIntent(name, v)
	return nil
}

// attemptFailed decides what a failed step of a target's bootstrap means:
// a board on the way (the proxy, or one on its path) died, or the target
// did not answer through this proxy; either way the engine tries again.
func (rr *rackRun) attemptFailed(ctx context.Context, u, p *node, pport int, step string, addressed, last bool, err error) bootEvent {
	ev := bootEvent{kind: evRetry, proxy: p, addressed: addressed}
	if ctx.Err() != nil {
		ev.why = fmt.Sprintf("%s through %s: %v", step, p.Name, ctx.Err())
		return ev
	}
	pb := p.bootCopy()
	for _, h := range append(append([]hop(nil), pb.Path...), hop{n: p}) {
		if alive, why := rr.alive(ctx, h.n); !alive {
			ev.dead, ev.deadWhy = h.n, why
			ev.why = fmt.Sprintf("%s: %s stopped answering on the way (%s)", step, h.n.Name, shortErr(err))
			return ev
		}
	}
	ev.why = fmt.Sprintf("%s through %s:%s: %s", step, p.Name, p.Ports[pport].Name, shortErr(err))
	ev.chk = "its console: a boot log that stops (RCU stall, no prompt) means its management firmware never booted; a kernel panic, that it crashed"
	if mg, e2 := p.mg(rr.run); e2 == nil && pport < len(p.Ports) {
		reg := func(name string) string { return fmt.Sprintf("%s[%d]", name, pport) }
		st, e3 := rr.run.readMany(ctx, p, mg, reg("PORT_STATUS"), reg("PMOS_GIVEUPS"), reg("PMOS_REASM_DROPS"), reg("PMOS_RX_BAD"))
		if e3 == nil {
			giveups, damaged := st[reg("PMOS_GIVEUPS")], st[reg("PMOS_REASM_DROPS")]+st[reg("PMOS_RX_BAD")]
			switch {
			case st[reg("PORT_STATUS")]&2 == 0:
				ev.why += fmt.Sprintf("; %s:%s hears no ordered sets from it (CHANNEL_UP 0)", p.Name, p.Ports[pport].Name)
				ev.chk = "that the board is powered and the cable to " + p.Name + " is plugged in"
			case giveups > 0 && damaged > 0:
				// Words arrive damaged: the cable loses them. A silent
				// firmware sends nothing to damage.
				ev.why += fmt.Sprintf("; PMOS on %s:%s gave up %d times and dropped %d damaged frames: the cable loses MOS words", p.Name, p.Ports[pport].Name, giveups, damaged)
				ev.chk = "the cable " + p.Ports[pport].Cable.Name() + " (reseat or replace it)"
				ev.badCable = p.Ports[pport].Cable
			case giveups > 0:
				ev.why += fmt.Sprintf("; its PCS is heard on %s:%s (CHANNEL_UP 1) but PMOS gave up on it %d times with no damaged frame: its firmware does not acknowledge", p.Name, p.Ports[pport].Name, giveups)
			default:
				ev.why += fmt.Sprintf("; its PCS is heard on %s:%s (CHANNEL_UP 1: powered, cable fine)", p.Name, p.Ports[pport].Name)
			}
		}
	}
	if last {
		if tail := consoleTail(ctx, u); tail != "" {
			ev.why += "; its console ends with: " + tail
		}
	}
	return ev
}

// alive says whether a board's management firmware still answers: a DCN
// board's heartbeat is read directly, an in-band board is pinged over the
// routed network.
func (rr *rackRun) alive(ctx context.Context, n *node) (bool, string) {
	r := rr.run
	if n.direct != nil {
		mg, _ := n.mg(r)
		h1, err := mg.Read(ctx, "FW_HEARTBEAT")
		if err != nil {
			return false, fmt.Sprintf("its register bus stopped answering: %v", err)
		}
		if err := mg.Write(ctx, "DELAY_US", 3000); err != nil {
			return false, fmt.Sprintf("its register bus stopped answering: %v", err)
		}
		h2, err := mg.Read(ctx, "FW_HEARTBEAT")
		st, err2 := mg.Read(ctx, "FW_STATE")
		if err != nil || err2 != nil {
			return false, "its register bus stopped answering"
		}
		if h2 == h1 || st&0xF == fwHalted {
			return false, fmt.Sprintf("its management firmware stopped: FW_HEARTBEAT frozen at %d, FW_STATE %s", h2, fwStateName(st&0xF))
		}
		return true, ""
	}
	n.mu.Lock()
	remote := n.remote
	n.mu.Unlock()
	if remote == nil {
		return false, "it was never reached"
	}
	if err := rr.client.Ping(ctx, remote.Path()); err != nil {
		if ctx.Err() != nil {
			return true, "" // the stage ended: nothing to conclude
		}
		return false, fmt.Sprintf("its management firmware stopped answering: an echo over the routed network got %s", shortErr(err))
	}
	return true, ""
}

func shortErr(err error) string {
	var re *pmos.ReplyError
	if errors.As(err, &re) {
		return re.ErrorBody.Error()
	}
	var na *pmos.NoAnswerError
	if errors.As(err, &na) {
		return na.Error()
	}
	return err.Error()
}

// mgmtRegs is the management map on bus (nil: for address lookups only).
func (rr *rackRun) mgmtRegs(bus drivers.RegisterBus, board string) *regmap.Regs {
	return regmap.New(bus, rr.run.mgmt, board)
}

// addrOf is a register's address in a map (names here are the runner's
// own constants: a missing one is a bug).
func addrOf(regs *regmap.Regs, name string) uint32 {
	loc, err := regs.Lookup(name)
	if err != nil {
		panic(err)
	}
	return uint32(loc.Addr)
}

// ---- outcome -------------------------------------------------------------

// cutOff names the boards an unreachable board depends on: the failed or
// died boards around the part of the rack it is stranded in, with why.
func (rr *rackRun) cutOff(u *node) string {
	seen := map[*node]bool{u: true}
	stack := []*node{u}
	var boundary []*node
	for len(stack) > 0 {
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, y := range rr.neighbours(x) {
			if seen[y] {
				continue
			}
			seen[y] = true
			if st := y.bootStatus(); st == bootFailed || st == bootDied || y.DCN {
				boundary = append(boundary, y)
				continue
			}
			stack = append(stack, y)
		}
	}
	sortNodes(boundary)
	var names []string
	for _, y := range boundary {
		b := y.bootCopy()
		why := string(b.Status)
		if b.Why != "" {
			why += ": " + clip(b.Why, 100)
		}
		if !b.Status.terminal() {
			why = "not reached"
		}
		names = append(names, fmt.Sprintf("%s (%s)", y.Name, why))
	}
	if len(names) == 0 {
		return "no cable (it is cabled to no board of the lab file)"
	}
	return strings.Join(names, ", ")
}

// checkCabling compares a relay with the lab's cabling: the proxy's port
// must lead to the board named in the DISCOVER, on the port it names.
func (rr *rackRun) checkCabling(p *node, pport int, name string, uport int) {
	peer := p.Ports[pport].Peer()
	if peer != nil && peer.Board.Name == name && peer.Index == uport {
		return
	}
	lab := "nothing"
	if peer != nil {
		lab = peer.String()
	}
	got := fmt.Sprintf("%s:port%d", name, uport)
	if u := rr.byName[name]; u != nil {
		got = fmt.Sprintf("%s:%s", name, portName(u.Board, uport))
	}
	key := p.Ports[pport].String() + ">" + got
	rr.mu.Lock()
	defer rr.mu.Unlock()
	p.mu.Lock()
	for _, s := range p.notes {
		if strings.Contains(s, key) {
			p.mu.Unlock()
			return
		}
	}
	p.mu.Unlock()
	p.note("cabling %s: the DISCOVER relayed from %s came from %s, the lab file says %s is cabled there", key, p.Ports[pport], got, lab)
	rr.run.out.line("bootstrap", p.Name, "WARN", fmt.Sprintf("%s is cabled to %s, the lab file says %s", p.Ports[pport], got, lab))
	if rr.run.judged(p.Board) {
		m := results.Measurement{Board: p.Name, Metric: "bringup.cabling", Params: results.Params{"port": p.Ports[pport].Name}, Text: got}
		rr.run.env.Check("bringup.cabling", m, false, lab, "the lab file's links", fmt.Sprintf("%s leads to %s, the lab file says %s: fix the cable or the lab file", p.Ports[pport], got, lab))
	}
}

// clip shortens a diagnosis quoted inside another one.
func clip(s string, n int) string {
	s = firstLine(s)
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

func portName(b *Board, i int) string {
	if i >= 0 && i < len(b.Ports) {
		return b.Ports[i].Name
	}
	return fmt.Sprintf("port%d", i)
}

// bootResult turns a board's bootstrap into its stage result.
func (rr *rackRun) bootResult(n *node) *StageResult {
	b := n.bootCopy()
	switch b.Status {
	case bootOK:
		if b.Proxy == nil {
			return ok("wave 0 (DCN), address 0x%04x", n.Addr)
		}
		s := fmt.Sprintf("wave %d via %s:%s, address 0x%04x, %.2f ms", b.Wave, b.Proxy.Name, portName(b.Proxy.Board, b.ProxyPort), n.Addr, float64(b.DoneNS-b.StartNS)/1e6)
		if len(b.ReHomed) > 0 {
			s += "; " + strings.Join(b.ReHomed, "; ")
		}
		return ok("%s", s)
	case bootDied:
		return &StageResult{Status: Failed, Class: drivers.ClassInfra.String(), Expected: "its management firmware keeps answering",
			Seen: fmt.Sprintf("bootstrapped in wave %d, then %s", b.Wave, b.Why), Check: b.Check, Summary: "died: " + firstLine(b.Why)}
	case bootUnreachable:
		return &StageResult{Status: Failed, Class: drivers.ClassInfra.String(), Expected: "a path of working boards from a DCN board to it (Aquila §4.4: waves spread over the cables)",
			Seen: b.Why, Check: b.Check, Summary: "unreachable: " + firstLine(b.Why)}
	case bootFailed:
		if n.DCN && n.failedBefore(StageBootstrap) != nil {
			return &StageResult{Status: Blocked, Summary: "not run: " + b.Why}
		}
		exp := "its DISCOVER relayed, its ASSIGNED and a routed answer (docs/mgmt.md §7)"
		if n.DCN {
			exp = "its management firmware up, its address and controller route written and read back (docs/mgmt.md §7, wave 0)"
		}
		return &StageResult{Status: Failed, Class: drivers.ClassInfra.String(), Expected: exp,
			Seen: b.Why, Check: b.Check, Summary: "failed: " + firstLine(b.Why)}
	}
	if len(rr.run.opts.Boards) > 0 && !rr.run.judged(n.Board) {
		return &StageResult{Status: Skipped, Summary: "not needed to reach the boards brought up"}
	}
	return &StageResult{Status: Failed, Class: drivers.ClassInfra.String(), Expected: "the board bootstrapped", Seen: "the bootstrap ended without reaching it"}
}

// finish sets a board's bootstrap stage result; it was printed live.
func (rr *rackRun) finish(n *node, quiet bool, res *StageResult) {
	res.Stage = StageBootstrap
	rr.run.conclude(n, res, quiet, false)
}

// cableHealth reads the PMOS counters of both ends of every cable between
// reached boards and names the cables that lost MOS words (PMOS repaired
// them, or gave up).
func (rr *rackRun) cableHealth(ctx context.Context) {
	r := rr.run
	type counts struct{ retx, drops, bad, giveups uint32 }
	read := func(e *End) (counts, bool) {
		n := rr.byName[e.Board.Name]
		if !n.reachable() || n.bootStatus() != bootOK {
			return counts{}, false
		}
		mg, _ := n.mg(r)
		names := []string{fmt.Sprintf("PMOS_RETX[%d]", e.Index), fmt.Sprintf("PMOS_REASM_DROPS[%d]", e.Index),
			fmt.Sprintf("PMOS_RX_BAD[%d]", e.Index), fmt.Sprintf("PMOS_GIVEUPS[%d]", e.Index)}
		v, err := r.readMany(ctx, n, mg, names...)
		if err != nil {
			return counts{}, false
		}
		return counts{v[names[0]], v[names[1]], v[names[2]], v[names[3]]}, true
	}
	for _, c := range rr.Cables {
		a, okA := read(c.A)
		b, okB := read(c.B)
		if !okA && !okB {
			continue
		}
		if !okA || !okB {
			// A cable to a board whose firmware is dead or never ran
			// retransmits and gives up by design: it says nothing about
			// the cable.
			continue
		}
		retx, drops, bad, giveups := a.retx+b.retx, a.drops+b.drops, a.bad+b.bad, a.giveups+b.giveups
		if retx+drops+bad+giveups == 0 {
			continue
		}
		msg := fmt.Sprintf("lossy MOS channel: %d PMOS retransmissions, %d partial frames dropped, %d bad frames, %d messages given up", retx, drops, bad, giveups)
		if giveups == 0 {
			msg += " (PMOS recovered)"
		} else {
			msg += " (PMOS gave up on some: the bootstrap went around it)"
		}
		rr.mu.Lock()
		rr.lossy = append(rr.lossy, CableNote{Cable: c.Name(), Note: msg, Retx: int(retx), Drops: int(drops + bad), GiveUps: int(giveups)})
		rr.mu.Unlock()
		r.out.line("bootstrap", c.Name(), "WARN", msg)
		r.info(results.Measurement{Metric: "bringup.pmos.retransmissions", Params: results.Params{"link": c.Name(), "rack": rr.Name},
			Value: float64(retx), Unit: "frames", Text: msg})
	}
}

// mailboxHealth logs the DCN boards' mailbox counters: messages the
// mailbox had to drop (MBOX_RX_DROPPED) are answers the runner lost.
func (rr *rackRun) mailboxHealth(ctx context.Context) {
	for _, n := range rr.nodes {
		if n.direct == nil || n.bootStatus() != bootOK {
			continue
		}
		mg, _ := n.mg(rr.run)
		v, err := rr.run.readMany(ctx, n, mg, "MBOX_RX_DROPPED", "MBOX_TX_REJECTS", "MBOX_TX_COUNT")
		if err != nil {
			continue
		}
		lvl := "debug"
		if v["MBOX_RX_DROPPED"] > 0 {
			lvl = "warn"
			rr.run.info(results.Measurement{Metric: "bringup.mailbox.dropped", Board: n.Name, Params: results.Params{"rack": rr.Name},
				Value: float64(v["MBOX_RX_DROPPED"]), Unit: "messages", Text: "messages the DCN board's mailbox dropped while full (relay floods): the runner retried their requests"})
		}
		args := []any{"board", n.Name, "dropped", v["MBOX_RX_DROPPED"], "rejects", v["MBOX_TX_REJECTS"], "sent", v["MBOX_TX_COUNT"]}
		if lvl == "warn" {
			rr.run.log.Warn("mailbox counters", args...)
		} else {
			rr.run.log.Debug("mailbox counters", args...)
		}
	}
}

// sortNodes orders boards as the lab file does.
func sortNodes(ns []*node) {
	sort.Slice(ns, func(i, j int) bool { return ns[i].Index < ns[j].Index })
}
