package bringup

import (
	"context"
	"errors"
	"fmt"

	"github.com/labrunner/labrunner/drivers"
	"github.com/labrunner/labrunner/drivers/pmos"
	"github.com/labrunner/labrunner/drivers/regmap"
)

// The bootstrap's workers: the register traffic of one wave-0 board, one
// target through its proxy, one relay; each reports back with an event.

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
