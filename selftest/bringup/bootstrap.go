package bringup

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/labrunner/labrunner/drivers/pmos"
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
