package bringup

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/labrunner/labrunner/drivers/pmos"
)

// The bootstrap engine: one goroutine owning every decision of the waves
// (see bootstrap.go), fed by the workers' events.

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
	// Relays on where a target waits, off where none does (reading M3,
	// Aquila §4.4: every relay floods the DCN board's mailbox every
	// millisecond, and mgmt.md §4 holds 32).
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
