package bringup

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/labrunner/labrunner/drivers"
	"github.com/labrunner/labrunner/results"
)

// The bootstrap's outcome: per-board results, the cabling and the health of
// cables and mailboxes after it.

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
