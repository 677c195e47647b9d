package bringup

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"labrunner/drivers"
	"labrunner/drivers/pmos"
	"labrunner/results"
)

// The bootstrap in waves (Aquila §4.4; docs/mgmt.md §7): the DCN boards get
// their address and routes directly (wave 0) and relay the DISCOVERs their
// neighbours send over MOS; the runner answers each with an ASSIGN sent
// link-local through the proxy that relayed it, configures the target and
// the routes toward it through the proxy over PMOS, reaches it over the
// routed management network, and uses it as the proxy of the next wave.
// Targets are bootstrapped in parallel as their relays arrive.

// Management-time budgets of the bootstrap (mgmt.md §7).
const (
	fwBootBudgetNS = 50_000_000 // a firmware still booting after 50 ms never boots
	// relayGraceNS: how long a target heard only through a proxy of a
	// later wave than the breadth-first one waits for its breadth-first
	// proxies, once those are ready (Aquila §4.4: waves spread breadth-first).
	relayGraceNS = 10_000_000
	// discoverQuietNS: with nothing in progress, how long the runner waits
	// for DISCOVERs before it probes the boards still unheard of.
	discoverQuietNS = 30_000_000
)

type bootStatus string

const (
	bootNone        bootStatus = ""
	bootOK          bootStatus = "ok"
	bootFailed      bootStatus = "failed"
	bootDied        bootStatus = "died"
	bootUnreachable bootStatus = "unreachable"
)

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
	StartNS   int64 // root's management time at the first relay
	DoneNS    int64 // at the first routed answer
	Why       string
	Check     string
	ReHomed   []string
	// Reconciled lists the reconciliations done on the board.
	Reconciled []Reconciliation

	inProgress   bool
	orphan       bool // its proxy died: reach it again through another neighbour
	probes       int
	firstRelayNS int64
	relays       []relayCand
	readyNS      int64
}

type relayCand struct {
	proxy *node
	port  int
	at    int64
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
	events chan bootEvent
	mu     sync.Mutex
}

type evKind int

const (
	evReady evKind = iota
	evFailed
	evDied   // a proxy (or the target) stopped answering
	evOrphan // the target's bootstrap stopped with its proxy: reach it another way
)

type bootEvent struct {
	kind evKind
	n    *node
	err  error
	why  string
	chk  string
}

// linkLocal is the path of a request to the board at the other end of
// proxy's port.
func (rr *rackRun) linkLocal(proxy *node, port int) pmos.Path {
	proxy.mu.Lock()
	root, dcn := proxy.boot.Root, proxy.DCN && proxy.boot.Root == proxy
	proxy.mu.Unlock()
	if dcn {
		return pmos.Path{Kind: pmos.PathPort, Via: proxy.Name, Port: uint8(port)}
	}
	return pmos.Path{Kind: pmos.PathProxy, Via: root.Name, Proxy: proxy.Addr, Port: uint8(port)}
}

func (rr *rackRun) bootstrap(ctx context.Context, quiet bool) {
	r := rr.run
	rr.byAddr = map[uint16]*node{}
	rr.byName = map[string]*node{}
	for _, n := range rr.nodes {
		rr.byAddr[n.Addr] = n
		rr.byName[n.Name] = n
	}
	rr.client = pmos.NewClient(pmos.ClientConfig{Log: r.log.With("rack", rr.Name), OnRetry: func(p pmos.Path, t pmos.MsgType, tag uint16) {
		if p.Kind == pmos.PathRouted {
			if n := rr.byAddr[p.Addr]; n != nil {
				n.mu.Lock()
				n.suspect = true
				n.mu.Unlock()
			}
		}
	}})
	rr.events = make(chan bootEvent, 64)
	t0 := time.Now()
	if len(rr.DCN) == 0 {
		for _, n := range rr.nodes {
			rr.finish(n, quiet, &StageResult{Status: Failed, Class: drivers.ClassSetup.String(),
				Expected: "a DCN board in the rack (Aquila §4.4: the bootstrap starts from the DCN-connected boards)",
				Seen:     "no board of the rack is `dcn: true` and none has a register bus",
				Check:    "mark the boards whose console or bridge is cabled to the runner `dcn: true` in the lab file"})
		}
		return
	}
	// Wave 0, in parallel.
	var wg sync.WaitGroup
	for _, n := range rr.nodes {
		if !n.DCN {
			continue
		}
		if prev := n.failedBefore(StageBootstrap); prev != nil || n.direct == nil {
			rr.setBoot(n, func(b *bootInfo) {
				b.Status, b.Wave = bootFailed, -1
				b.Why = "its power stage failed: the runner cannot reach it"
			})
			continue
		}
		wg.Add(1)
		go func(n *node) {
			defer wg.Done()
			if err := rr.wave0(ctx, n); err != nil {
				why, chk := "", ""
				var fe *fwError
				if errors.As(err, &fe) {
					why, chk = fe.why, fe.check
				}
				rr.events <- bootEvent{kind: evFailed, n: n, err: err, why: why, chk: chk}
				return
			}
			rr.events <- bootEvent{kind: evReady, n: n}
		}(n)
	}
	go func() { wg.Wait() }()
	rr.loop(ctx, quiet)
	rr.client.Listen(false)
	r.log.Debug("bootstrap done", "rack", rr.Name, "seconds", time.Since(t0).Seconds())
	rr.cableHealth(ctx)
	for _, n := range rr.nodes {
		rr.finish(n, quiet, rr.bootResult(n))
	}
	if !quiet {
		rr.scoreBootstrap()
	}
}

func (rr *rackRun) setBoot(n *node, f func(*bootInfo)) {
	n.mu.Lock()
	f(&n.boot)
	n.mu.Unlock()
}

// fwError is a management firmware that is not running.
type fwError struct {
	why, check string
}

func (e *fwError) Error() string { return e.why }

// wave0 configures a DCN board directly: it waits for its firmware, gives
// it its address, routes the controller to its mailbox and turns relaying
// on (mgmt.md §7, wave 0).
func (rr *rackRun) wave0(ctx context.Context, n *node) error {
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
	ops, err := writes(mg, "MY_ADDR", n.Addr, "ROUTE[0]", 0x800FFFFE, "PROXY_CTRL", 3)
	if err != nil {
		return err
	}
	if _, err := r.ops(ctx, n, ops); err != nil {
		return fmt.Errorf("writing MY_ADDR, ROUTE[0] and PROXY_CTRL: %w", err)
	}
	n.mu.Lock()
	n.intent.set("MY_ADDR", uint32(n.Addr))
	n.intent.routes = map[uint16]string{pmos.AddrController: "ROUTE[0]"}
	n.intent.next = 1
	n.intent.set("ROUTE[0]", 0x800FFFFE)
	n.intent.set("PROXY_CTRL", 3)
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
	if _, err := rr.client.AddMailbox(ctx, n.direct, r.mgmt, n.Name); err != nil {
		return err
	}
	return nil
}

// loop is the bootstrap's main loop: it owns the decisions (which relay to
// answer, when to probe, when to stop); workers do the register traffic.
func (rr *rackRun) loop(ctx context.Context, quiet bool) {
	r := rr.run
	pending := 0 // wave-0 workers and target workers running
	for _, n := range rr.nodes {
		if n.DCN && n.bootStatus() == bootNone {
			pending++
		}
	}
	seenDNA := map[uint32]*node{}
	var dnaMu sync.Mutex
	rr.client.SetRelayFilter(func(dna uint32, proxy uint16) bool {
		dnaMu.Lock()
		n := seenDNA[dna]
		dnaMu.Unlock()
		if n == nil {
			return true
		}
		n.mu.Lock()
		defer n.mu.Unlock()
		return n.boot.Status == bootNone && !n.boot.inProgress
	})
	rr.client.Listen(true)
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	lastProgress := int64(-1)
	start := func(u, p *node, port int, skipAssign bool) {
		rr.setBoot(u, func(b *bootInfo) { b.inProgress = true })
		pending++
		go rr.target(ctx, u, p, port, skipAssign)
	}
	for {
		now := rr.client.NowNS("")
		if lastProgress < 0 && now > 0 {
			lastProgress = now
		}
		select {
		case <-ctx.Done():
			for _, n := range rr.nodes {
				if n.bootStatus() == bootNone {
					rr.setBoot(n, func(b *bootInfo) {
						b.Status, b.Wave = bootFailed, -1
						b.Why = fmt.Sprintf("the bootstrap stage's deadline of %s ran out before the board was reached", r.opts.Deadlines[StageBootstrap])
						b.Check = "the boards on its path and the bootstrap log; raise --deadline bootstrap=... for a large rack"
					})
				}
			}
			return
		case ev := <-rr.events:
			pending--
			lastProgress = rr.client.NowNS("")
			rr.onEvent(ev)
		case rel := <-rr.client.Relays():
			u := rr.byName[rel.Discover.Name]
			if u == nil {
				r.log.Warn("relay of a board the rack does not have", "hostname", rel.Discover.Name, "dna", fmt.Sprintf("0x%08x", rel.Discover.DNA))
				continue
			}
			dnaMu.Lock()
			seenDNA[rel.Discover.DNA] = u
			dnaMu.Unlock()
			p := rr.byAddr[rel.Proxy]
			if p == nil || p.bootStatus() != bootOK || int(rel.ProxyPort) >= len(p.Ports) {
				continue
			}
			rr.checkCabling(p, int(rel.ProxyPort), u, int(rel.Discover.Port))
			u.mu.Lock()
			if u.boot.Status != bootNone || u.boot.inProgress {
				u.mu.Unlock()
				continue
			}
			u.boot.DNA = rel.Discover.DNA
			if u.boot.firstRelayNS == 0 {
				u.boot.firstRelayNS = rel.AtNS
			}
			u.boot.relays = append(u.boot.relays, relayCand{proxy: p, port: int(rel.ProxyPort), at: rel.AtNS})
			u.mu.Unlock()
			if rr.acceptable(u, p) {
				rr.setBoot(u, func(b *bootInfo) { b.StartNS = rel.AtNS })
				start(u, p, int(rel.ProxyPort), false)
			}
		case <-tick.C:
		}
		// Targets heard only through later-wave proxies: once their
		// breadth-first proxies are all ready and silent for a grace
		// period, take the best relay there is.
		now = rr.client.NowNS("")
		for _, u := range rr.nodes {
			u.mu.Lock()
			waiting := u.boot.Status == bootNone && !u.boot.inProgress && len(u.boot.relays) > 0
			u.mu.Unlock()
			if !waiting {
				continue
			}
			if best, port, ok := rr.lateProxy(u, now); ok {
				rr.setBoot(u, func(b *bootInfo) { b.StartNS = b.firstRelayNS })
				start(u, best, port, false)
			}
		}
		// Orphans (their proxy died): reach them through another
		// neighbour at once.
		for _, u := range rr.nodes {
			u.mu.Lock()
			orphan := u.boot.orphan && !u.boot.inProgress
			u.mu.Unlock()
			if !orphan {
				continue
			}
			if nb, port := rr.bestNeighbour(u); nb != nil {
				rr.setBoot(u, func(b *bootInfo) { b.orphan, b.inProgress = false, true })
				pending++
				go rr.probe(ctx, u, nb, port)
			}
		}
		if pending > 0 {
			continue
		}
		// Nothing in progress: boards still unheard of after a quiet spell
		// are probed link-local through a ready neighbour, and those that
		// no ready board neighbours are unreachable.
		left := 0
		for _, u := range rr.nodes {
			if u.bootStatus() == bootNone {
				left++
			}
		}
		if left == 0 {
			return
		}
		if now-lastProgress < discoverQuietNS {
			continue
		}
		probed := false
		for _, u := range rr.nodes {
			u.mu.Lock()
			eligible := u.boot.Status == bootNone && !u.boot.inProgress && u.boot.probes < 2
			u.mu.Unlock()
			if !eligible {
				continue
			}
			if nb, port := rr.bestNeighbour(u); nb != nil {
				rr.setBoot(u, func(b *bootInfo) { b.inProgress = true; b.probes++ })
				pending++
				probed = true
				go rr.probe(ctx, u, nb, port)
			}
		}
		if probed {
			continue
		}
		for _, u := range rr.nodes {
			if u.bootStatus() != bootNone {
				continue
			}
			rr.setBoot(u, func(b *bootInfo) {
				if b.probes > 0 && b.Why != "" {
					b.Status, b.Wave = bootFailed, -1
					return
				}
				b.Status, b.Wave = bootUnreachable, -1
				b.Why = "no board next to it was bootstrapped: " + rr.cutOff(u)
				b.Check = "the boards named, which failed or died, and the cabling"
			})
		}
		return
	}
}

// dist is each live board's breadth-first distance, over the lab's cables,
// from the DCN boards that came up, not through failed, died or
// unreachable boards (golden/bringup's waves).
func (rr *rackRun) dist() map[*node]int {
	d := map[*node]int{}
	var frontier []*node
	for _, n := range rr.nodes {
		if n.DCN && n.bootStatus() == bootOK {
			d[n] = 0
			frontier = append(frontier, n)
		}
	}
	for k := 1; len(frontier) > 0; k++ {
		var next []*node
		for _, x := range frontier {
			for _, nb := range x.Neighbours() {
				y := rr.byName[nb.Name]
				if _, seen := d[y]; seen {
					continue
				}
				switch y.bootStatus() {
				case bootFailed, bootDied, bootUnreachable:
					continue
				}
				d[y] = k
				next = append(next, y)
			}
		}
		frontier = next
	}
	return d
}

// acceptable: p is a breadth-first proxy of u (its wave is u's distance
// minus one).
func (rr *rackRun) acceptable(u, p *node) bool {
	d, ok := rr.dist()[u]
	return ok && p.bootStatus() == bootOK && p.wave()+1 == d
}

// lateProxy decides whether u, relayed so far only by proxies of later
// waves, should take the best of them now.
func (rr *rackRun) lateProxy(u *node, now int64) (*node, int, bool) {
	d := rr.dist()
	du, reach := d[u]
	u.mu.Lock()
	cands := append([]relayCand(nil), u.boot.relays...)
	first := u.boot.firstRelayNS
	u.mu.Unlock()
	latest := first
	for _, nb := range u.Neighbours() {
		y := rr.byName[nb.Name]
		if dy, ok := d[y]; ok && reach && dy == du-1 {
			if y.bootStatus() != bootOK {
				return nil, 0, false // a breadth-first proxy is still on its way
			}
			y.mu.Lock()
			latest = max(latest, y.boot.readyNS)
			y.mu.Unlock()
		}
	}
	if now-latest < relayGraceNS {
		return nil, 0, false
	}
	var best *relayCand
	for i := range cands {
		c := &cands[i]
		if c.proxy.bootStatus() != bootOK {
			continue
		}
		if best == nil || c.proxy.wave() < best.proxy.wave() || (c.proxy.wave() == best.proxy.wave() && c.proxy.Index < best.proxy.Index) {
			best = c
		}
	}
	if best == nil {
		return nil, 0, false
	}
	return best.proxy, best.port, true
}

// bestNeighbour is u's bootstrapped neighbour of the lowest wave, and its
// port toward u.
func (rr *rackRun) bestNeighbour(u *node) (*node, int) {
	var best *node
	var port int
	for _, e := range u.Ports {
		pe := e.Peer()
		if pe == nil {
			continue
		}
		y := rr.byName[pe.Board.Name]
		y.mu.Lock()
		usable := y.boot.Status == bootOK && !y.boot.orphan
		y.mu.Unlock()
		if !usable {
			continue
		}
		if best == nil || y.wave() < best.wave() {
			best, port = y, pe.Index
		}
	}
	return best, port
}

// cutOff names the failed or died boards around an unreachable one.
func (rr *rackRun) cutOff(u *node) string {
	var names []string
	for _, nb := range u.Neighbours() {
		y := rr.byName[nb.Name]
		if s := y.bootStatus(); s != bootNone {
			names = append(names, fmt.Sprintf("%s (%s)", y.Name, s))
		}
	}
	if len(names) == 0 {
		return "none of its neighbours was reached either"
	}
	return strings.Join(names, ", ")
}

// checkCabling compares a relay with the lab's cabling: the proxy's port
// must lead to the board named in the DISCOVER, on the port it names.
func (rr *rackRun) checkCabling(p *node, pport int, u *node, uport int) {
	peer := p.Ports[pport].Peer()
	if peer != nil && peer.Board.Name == u.Name && peer.Index == uport {
		return
	}
	lab := "nothing"
	if peer != nil {
		lab = peer.String()
	}
	got := fmt.Sprintf("%s:%s", u.Name, portName(u.Board, uport))
	key := p.Ports[pport].String() + ">" + got
	rr.mu.Lock()
	defer rr.mu.Unlock()
	for _, s := range p.notes {
		if strings.Contains(s, key) {
			return
		}
	}
	p.note("cabling %s: the DISCOVER relayed from %s came from %s, the lab file says %s is cabled there", key, p.Ports[pport], got, lab)
	rr.run.out.printf("%-9s  %-14s %-7s %s is cabled to %s, the lab file says %s", "bootstrap", p.Name, "WARN", p.Ports[pport], got, lab)
	if rr.run.judged(p.Board) {
		m := results.Measurement{Board: p.Name, Metric: "bringup.cabling", Params: results.Params{"port": p.Ports[pport].Name}, Text: got}
		rr.run.env.Check("bringup.cabling", m, false, lab, "the lab file's links", fmt.Sprintf("%s leads to %s, the lab file says %s: fix the cable or the lab file", p.Ports[pport], got, lab))
	}
}

func portName(b *Board, i int) string {
	if i >= 0 && i < len(b.Ports) {
		return b.Ports[i].Name
	}
	return fmt.Sprintf("port%d", i)
}

func (rr *rackRun) onEvent(ev bootEvent) {
	r := rr.run
	n := ev.n
	switch ev.kind {
	case evReady:
		now := rr.client.NowNS("")
		var line string
		rr.setBoot(n, func(b *bootInfo) {
			b.Status, b.inProgress, b.readyNS, b.orphan = bootOK, false, now, false
			if b.Proxy == nil {
				line = fmt.Sprintf("wave 0: DCN, address 0x%04x, relaying DISCOVERs", n.Addr)
			} else {
				line = fmt.Sprintf("wave %d via %s:%s (address 0x%04x, %.2f ms)", b.Wave, b.Proxy.Name, portName(b.Proxy.Board, b.ProxyPort),
					n.Addr, float64(b.DoneNS-b.StartNS)/1e6)
			}
		})
		r.out.printf("%-9s  %-14s %-7s %s", "bootstrap", n.Name, "ok", line)
	case evFailed:
		rr.setBoot(n, func(b *bootInfo) {
			b.inProgress = false
			b.Status, b.Wave = bootFailed, -1
			b.Why, b.Check = ev.why, ev.chk
			if b.Why == "" {
				b.Why = ev.err.Error()
			}
		})
		r.out.printf("%-9s  %-14s %-7s %s", "bootstrap", n.Name, "FAILED", firstLine(n.boot.Why))
	case evDied:
		rr.died(n, ev.why, ev.chk)
	case evOrphan:
		rr.setBoot(n, func(b *bootInfo) {
			b.inProgress = false
			if b.Status == bootNone {
				b.orphan = true
			}
		})
		r.out.printf("%-9s  %-14s %-7s %s", "bootstrap", n.Name, "retry", ev.why)
	}
}

// died marks a board whose management firmware stopped answering, and every
// board reached through it as an orphan to reach again another way.
func (rr *rackRun) died(x *node, why, chk string) {
	x.mu.Lock()
	if x.boot.Status == bootDied {
		x.mu.Unlock()
		return
	}
	wasOK := x.boot.Status == bootOK
	x.boot.Status, x.boot.inProgress = bootDied, false
	if !wasOK {
		x.boot.Status, x.boot.Wave = bootFailed, -1
	}
	x.boot.Why, x.boot.Check = why, chk
	x.remote = nil
	x.mu.Unlock()
	rr.run.out.printf("%-9s  %-14s %-7s %s", "bootstrap", x.Name, "DIED", why)
	for _, n := range rr.nodes {
		n.mu.Lock()
		through := false
		for _, h := range n.boot.Path {
			through = through || h.n == x
		}
		if through && n.boot.Status == bootOK {
			n.boot.Status, n.boot.orphan = bootNone, true
			n.boot.ReHomed = append(n.boot.ReHomed, x.Name+" died")
		}
		n.mu.Unlock()
	}
}

// target bootstraps u through proxy p's port (mgmt.md §7: assign,
// configure through the proxy, route toward it, reach it routed).
func (rr *rackRun) target(ctx context.Context, u, p *node, pport int, skipAssign bool) {
	r := rr.run
	path := rr.linkLocal(p, pport)
	u.mu.Lock()
	dna := u.boot.DNA
	u.mu.Unlock()
	up := -1
	if pe := p.Ports[pport].Peer(); pe != nil && pe.Board.Name == u.Name {
		up = pe.Index
	}
	assigned := skipAssign
	if !skipAssign {
		a, err := rr.client.Assign(ctx, path, dna, u.Addr)
		if err != nil {
			rr.targetFailed(ctx, u, p, false, "ASSIGN", err)
			return
		}
		assigned = true
		if up >= 0 && int(a.Port) != up {
			u.note("ASSIGNED names its port %d as upstream; the lab file cables %s to %s", a.Port, p.Ports[pport], p.Ports[pport].Peer())
		}
		up = int(a.Port)
	}
	if up < 0 || up >= len(u.Ports) {
		rr.events <- bootEvent{kind: evFailed, n: u, err: fmt.Errorf("no port of %s leads to %s:%s", u.Name, p.Name, p.Ports[pport].Name)}
		return
	}
	mg := rr.mgmtRegs(rr.client.Bus(u.Name, path), u.Name)
	cfg, err := writes(mg, "DEFAULT_ROUTE", 0x80000000|uint32(up)<<16, "PROXY_CTRL", 3)
	if err != nil {
		rr.events <- bootEvent{kind: evFailed, n: u, err: err}
		return
	}
	ll := rr.client.Bus(u.Name, path)
	rd := []pmos.RegOp{{Op: pmos.OpRead, Addr: addrOf(mg, "MY_ADDR")}, {Op: pmos.OpRead, Addr: addrOf(mg, "FW_STATE")}, {Op: pmos.OpRead, Addr: addrOf(mg, "DNA")}}
	res, err := ll.Do(ctx, append(cfg, rd...))
	if err != nil {
		rr.targetFailed(ctx, u, p, assigned, "configuring it through "+p.Name, err)
		return
	}
	if got := res[len(cfg)].Value; got != uint32(u.Addr) {
		if skipAssign && got == 0 {
			// It lost (or never got) its address: assign it now.
			rr.target(ctx, u, p, pport, false)
			return
		}
		rr.events <- bootEvent{kind: evFailed, n: u, err: fmt.Errorf("MY_ADDR reads 0x%04x after ASSIGN of 0x%04x", got, u.Addr),
			why: fmt.Sprintf("%s kept address 0x%04x after it was assigned 0x%04x", u.Name, got, u.Addr), chk: "its firmware's ASSIGN handling (docs/pmos.md §5.4)"}
		return
	}
	boots := uint16(res[len(cfg)+1].Value >> 16)
	u.setIntent("MY_ADDR", u.Addr, "DEFAULT_ROUTE", 0x80000000|uint32(up)<<16, "PROXY_CTRL", 3)
	u.mu.Lock()
	if u.boot.DNA == 0 {
		u.boot.DNA = res[len(cfg)+2].Value
	}
	u.mu.Unlock()
	// Routes toward u on every board from the root to the proxy.
	p.mu.Lock()
	hops := append(append([]hop(nil), p.boot.Path...), hop{n: p, port: pport})
	root := p.boot.Root
	p.mu.Unlock()
	subtree := rr.subtree(u)
	for _, h := range hops {
		if err := rr.addRoutes(ctx, h, append([]*node{u}, subtree...)); err != nil {
			rr.targetFailed(ctx, u, h.n, assigned, "writing a route on "+h.n.Name, err)
			return
		}
	}
	// Reach it over the routed network.
	remote := rr.client.Bus(u.Name, pmos.Path{Kind: pmos.PathRouted, Via: root.Name, Addr: u.Addr})
	got, err := remote.Do(ctx, []pmos.RegOp{{Op: pmos.OpRead, Addr: addrOf(mg, "MY_ADDR")}, {Op: pmos.OpRead, Addr: addrOf(mg, "MGMT_ID")}})
	if err != nil || got[0].Value != uint32(u.Addr) || got[1].Value != r.mgmt.ID {
		if err == nil {
			err = fmt.Errorf("routed read answers MY_ADDR 0x%04x MGMT_ID 0x%08x", got[0].Value, got[1].Value)
		}
		rr.targetFailed(ctx, u, p, assigned, "reaching it over the routed network", err)
		return
	}
	done := rr.client.NowNS(root.Name)
	u.mu.Lock()
	first := u.boot.Proxy == nil
	if first {
		u.boot.Wave = p.boot.Wave + 1
		u.boot.Proxy, u.boot.ProxyPort, u.boot.UpPort = p, pport, up
		u.boot.DoneNS = done
		if u.boot.StartNS == 0 {
			u.boot.StartNS = done
		}
	} else {
		u.boot.ReHomed = append(u.boot.ReHomed, fmt.Sprintf("reached again through %s:%s", p.Name, p.Ports[pport].Name))
	}
	u.boot.Root, u.boot.Path, u.boot.Boots = root, hops, boots
	u.remote = remote
	u.mu.Unlock()
	// Its subtree follows it.
	for _, s := range subtree {
		s.mu.Lock()
		idx := -1
		for i, h := range s.boot.Path {
			if h.n == u {
				idx = i
			}
		}
		if idx >= 0 {
			s.boot.Path = append(append([]hop(nil), hops...), s.boot.Path[idx:]...)
			s.boot.Root = root
			s.remote = rr.client.Bus(s.Name, pmos.Path{Kind: pmos.PathRouted, Via: root.Name, Addr: s.Addr})
		}
		s.mu.Unlock()
	}
	rr.events <- bootEvent{kind: evReady, n: u}
}

// subtree lists the boards reached through u (its path goes through u).
func (rr *rackRun) subtree(u *node) []*node {
	var out []*node
	for _, n := range rr.nodes {
		if n == u {
			continue
		}
		n.mu.Lock()
		for _, h := range n.boot.Path {
			if h.n == u {
				out = append(out, n)
				break
			}
		}
		n.mu.Unlock()
	}
	return out
}

// addRoutes writes, on hop h's board, a route toward each destination out
// of h's port (mgmt.md §7: "on every board on the path from A to the
// proxy, and on the proxy").
func (rr *rackRun) addRoutes(ctx context.Context, h hop, dsts []*node) error {
	mg, err := h.n.mg(rr.run)
	if err != nil {
		return err
	}
	var kv []any
	for _, d := range dsts {
		name, err := h.n.routeEntry(d.Addr)
		if err != nil {
			return err
		}
		kv = append(kv, name, 0x80000000|uint32(h.port)<<16|uint32(d.Addr))
	}
	ops, err := writes(mg, kv...)
	if err != nil {
		return err
	}
	if _, err := rr.run.ops(ctx, h.n, ops); err != nil {
		return err
	}
	h.n.setIntent(kv...)
	return nil
}

// targetFailed decides what a failed step of a target's bootstrap means:
// its proxy died (its targets are reached through other neighbours), or the
// target stopped answering.
func (rr *rackRun) targetFailed(ctx context.Context, u, p *node, assigned bool, step string, err error) {
	if alive, why := rr.alive(ctx, p); !alive {
		rr.events <- bootEvent{kind: evDied, n: p, why: why,
			chk: "its console (a kernel panic?); only a power cycle brings a crashed firmware back; its targets go through other neighbours"}
		rr.events <- bootEvent{kind: evOrphan, n: u, why: fmt.Sprintf("%s stopped while proxying it (%s)", p.Name, step)}
		return
	}
	if !assigned {
		var re *pmos.ReplyError
		if errors.As(err, &re) || isNoAnswer(err) {
			// The DISCOVER came a moment ago: the target answered nothing
			// since. Try it again through another neighbour.
			rr.events <- bootEvent{kind: evOrphan, n: u, why: fmt.Sprintf("%s via %s: %v", step, p.Name, err)}
			return
		}
	}
	if alive, why := rr.alive(ctx, u); !alive {
		rr.events <- bootEvent{kind: evDied, n: u, why: why, chk: "its console (a kernel panic?); a power cycle"}
		return
	}
	rr.events <- bootEvent{kind: evOrphan, n: u, why: fmt.Sprintf("%s failed: %v", step, err)}
}

func isNoAnswer(err error) bool {
	var na *pmos.NoAnswerError
	return errors.As(err, &na)
}

// alive says whether a board's management firmware still answers: a DCN
// board's heartbeat is read directly, an in-band board is sent an echo.
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
	if _, err := rr.client.Echo(ctx, remote.Path(), []byte("alive?")); err != nil {
		return false, fmt.Sprintf("its management firmware stopped answering: an echo over the routed network got %v", err)
	}
	return true, ""
}

// probe reaches a board that sent no DISCOVER (or whose proxy died)
// link-local through neighbour nb: a board that answers with its address is
// reached again, one without an address is assigned at once, one that does
// not answer has a firmware that is not running.
func (rr *rackRun) probe(ctx context.Context, u, nb *node, port int) {
	r := rr.run
	path := rr.linkLocal(nb, port)
	mgNb, _ := nb.mg(r)
	st, stErr := r.readMany(ctx, nb, mgNb, fmt.Sprintf("PORT_STATUS[%d]", port))
	mg := rr.mgmtRegs(nil, u.Name)
	res, err := rr.client.Bus(u.Name, path).Do(ctx, []pmos.RegOp{
		{Op: pmos.OpRead, Addr: addrOf(mg, "MY_ADDR")}, {Op: pmos.OpRead, Addr: addrOf(mg, "DNA")}, {Op: pmos.OpRead, Addr: addrOf(mg, "FW_STATE")}})
	if err != nil {
		if alive, why := rr.alive(ctx, nb); !alive {
			rr.events <- bootEvent{kind: evDied, n: nb, why: why, chk: "its console; a power cycle"}
			rr.events <- bootEvent{kind: evOrphan, n: u, why: nb.Name + " stopped while probing it"}
			return
		}
		evidence := fmt.Sprintf("no DISCOVER of it was relayed; a request link-local through %s:%s got %v", nb.Name, nb.Ports[port].Name, shortErr(err))
		check := "its console: a boot log that stops (RCU stall, no prompt) means its management firmware never booted; a kernel panic, that it crashed"
		if stErr == nil {
			if v := st[fmt.Sprintf("PORT_STATUS[%d]", port)]; v&2 == 0 {
				evidence += fmt.Sprintf("; %s:%s hears no ordered sets from it (CHANNEL_UP 0)", nb.Name, nb.Ports[port].Name)
				check = "that the board is powered and the cable to " + nb.Name + " is plugged in"
			} else {
				evidence += fmt.Sprintf("; its PCS is heard on %s:%s (CHANNEL_UP 1: powered, cable fine), so its management firmware is not running", nb.Name, nb.Ports[port].Name)
			}
		}
		if tail := consoleTail(ctx, u); tail != "" {
			evidence += "; its console ends with: " + tail
		}
		rr.setBoot(u, func(b *bootInfo) { b.Why, b.Check = "never answered: "+evidence, check })
		rr.events <- bootEvent{kind: evFailed, n: u, why: "never answered: " + evidence, chk: check}
		return
	}
	addr, dna := res[0].Value, res[1].Value
	rr.setBoot(u, func(b *bootInfo) {
		b.DNA = dna
		if b.StartNS == 0 {
			b.StartNS = rr.client.NowNS("")
		}
	})
	r.out.printf("%-9s  %-14s %-7s probed through %s:%s: MY_ADDR 0x%04x, FW_STATE %s", "bootstrap", u.Name, "...", nb.Name, nb.Ports[port].Name,
		addr, fwStateName(res[2].Value&0xF))
	rr.target(ctx, u, nb, port, addr == uint32(u.Addr))
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
func (rr *rackRun) mgmtRegs(bus drivers.RegisterBus, board string) *regmapRegs {
	return newRegs(bus, rr.run.mgmt, board)
}

// bootResult turns a board's bootstrap into its stage result.
func (rr *rackRun) bootResult(n *node) *StageResult {
	n.mu.Lock()
	b := n.boot
	n.mu.Unlock()
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
		return &StageResult{Status: Failed, Class: drivers.ClassInfra.String(), Expected: "a bootstrapped neighbour relays its DISCOVER",
			Seen: b.Why, Check: b.Check, Summary: "unreachable"}
	case bootFailed:
		return &StageResult{Status: Failed, Class: drivers.ClassInfra.String(), Expected: "its DISCOVER relayed, its ASSIGNED and a routed answer (docs/mgmt.md §7)",
			Seen: b.Why, Check: b.Check, Summary: "failed: " + firstLine(b.Why)}
	}
	return &StageResult{Status: Failed, Class: drivers.ClassInfra.String(), Expected: "the board bootstrapped", Seen: "the bootstrap ended without reaching it"}
}

// finish sets a board's bootstrap stage result.
func (rr *rackRun) finish(n *node, quiet bool, res *StageResult) {
	res.Stage = StageBootstrap
	if quiet {
		rr.run.quiet(n, res)
		return
	}
	rr.run.done(n, res)
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
		v, err := r.readMany(ctx, n, mg, fmt.Sprintf("PMOS_RETX[%d]", e.Index), fmt.Sprintf("PMOS_REASM_DROPS[%d]", e.Index),
			fmt.Sprintf("PMOS_RX_BAD[%d]", e.Index), fmt.Sprintf("PMOS_GIVEUPS[%d]", e.Index))
		if err != nil {
			return counts{}, false
		}
		return counts{v[fmt.Sprintf("PMOS_RETX[%d]", e.Index)], v[fmt.Sprintf("PMOS_REASM_DROPS[%d]", e.Index)],
			v[fmt.Sprintf("PMOS_RX_BAD[%d]", e.Index)], v[fmt.Sprintf("PMOS_GIVEUPS[%d]", e.Index)]}, true
	}
	for _, c := range rr.Cables {
		a, okA := read(c.A)
		b, okB := read(c.B)
		if !okA && !okB {
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
		r.out.printf("%-9s  %-14s %-7s cable %s: %s", "bootstrap", c.A.Board.Name, "WARN", c.Name(), msg)
		r.info(results.Measurement{Metric: "bringup.pmos.retransmissions", Params: results.Params{"link": c.Name(), "rack": rr.Name},
			Value: float64(retx), Unit: "frames", Text: msg})
	}
}

// sortNodes orders boards as the lab file does.
func sortNodes(ns []*node) {
	sort.Slice(ns, func(i, j int) bool { return ns[i].Index < ns[j].Index })
}
