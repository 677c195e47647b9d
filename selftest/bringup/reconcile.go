package bringup

import (
	"context"
	"fmt"
	"strings"

	"github.com/labrunner/labrunner/drivers/pmos"
	"github.com/labrunner/labrunner/results"
)

// intent is what the runner wrote into a board's management block, by
// register name (§4.3: the controller's intent, which it reconciles with
// the hardware after any loss of connection). Only the runner's own
// bring-up registers are kept: address, routes, proxy settings, TimeSync.
type intent struct {
	order  []string
	vals   map[string]uint32
	routes map[uint16]string // destination address -> ROUTE[k]
	next   int               // next free ROUTE entry
}

func (in *intent) set(name string, v uint32) {
	if in.vals == nil {
		in.vals = map[string]uint32{}
	}
	if _, ok := in.vals[name]; !ok {
		in.order = append(in.order, name)
	}
	in.vals[name] = v
}

// routeEntry returns the ROUTE element that holds the route to dst,
// allocating the next free one (mgmt.md §6: 64 entries, first valid match).
func (in *intent) routeEntry(dst uint16) (string, error) {
	if in.routes == nil {
		in.routes = map[uint16]string{}
	}
	if name, ok := in.routes[dst]; ok {
		return name, nil
	}
	if in.next >= 64 {
		return "", fmt.Errorf("the management routing table is full (64 entries): a rack this size needs default routes toward its subtrees")
	}
	name := fmt.Sprintf("ROUTE[%d]", in.next)
	in.next++
	in.routes[dst] = name
	return name, nil
}

// setIntent records writes in a board's intent.
func (n *node) setIntent(kv ...any) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for i := 0; i+1 < len(kv); i += 2 {
		n.intent.set(kv[i].(string), toU32(kv[i+1]))
	}
}

func (n *node) routeEntry(dst uint16) (string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.intent.routeEntry(dst)
}

func (n *node) intentCopy() ([]string, map[string]uint32) {
	n.mu.Lock()
	defer n.mu.Unlock()
	vals := make(map[string]uint32, len(n.intent.vals))
	for k, v := range n.intent.vals {
		vals[k] = v
	}
	return append([]string(nil), n.intent.order...), vals
}

// Diff is one register that did not hold the runner's intent.
type Diff struct {
	Register string `json:"register"`
	Want     uint32 `json:"want"`
	Found    uint32 `json:"found"`
	Fixed    bool   `json:"fixed"`
}

func (d Diff) String() string {
	s := fmt.Sprintf("%s 0x%08x -> 0x%08x", d.Register, d.Found, d.Want)
	if !d.Fixed {
		s += " (NOT fixed)"
	}
	return s
}

// Reconciliation is one pass over a board.
type Reconciliation struct {
	Board  string `json:"board"`
	When   string `json:"when"`
	Reason string `json:"reason"`
	Diffs  []Diff `json:"diffs"`
}

// reconcile reads every register of the board's intent (REG_REQs of up to
// 25 reads), rewrites what differs and reads it back (mgmt.md §8).
func (r *run) reconcile(ctx context.Context, n *node) ([]Diff, error) {
	order, want := n.intentCopy()
	if len(order) == 0 {
		return nil, nil
	}
	mg, err := n.mg(r)
	if err != nil {
		return nil, err
	}
	got, err := r.readMany(ctx, n, mg, order...)
	if err != nil {
		return nil, fmt.Errorf("reading %d registers of the runner's intent: %w", len(order), err)
	}
	var diffs []Diff
	var kv []any
	for _, name := range order {
		if got[name] != want[name] {
			diffs = append(diffs, Diff{Register: name, Want: want[name], Found: got[name]})
			kv = append(kv, name, want[name])
		}
	}
	if len(diffs) == 0 {
		return nil, nil
	}
	ops, err := writes(mg, kv...)
	if err != nil {
		return diffs, err
	}
	if _, err := r.ops(ctx, n, ops); err != nil {
		return diffs, fmt.Errorf("rewriting %d registers: %w", len(ops), err)
	}
	var names []string
	for _, d := range diffs {
		names = append(names, d.Register)
	}
	again, err := r.readMany(ctx, n, mg, names...)
	if err != nil {
		return diffs, fmt.Errorf("reading back: %w", err)
	}
	for i := range diffs {
		diffs[i].Fixed = again[diffs[i].Register] == diffs[i].Want
	}
	return diffs, nil
}

// reconcileAll checks every board the runner controls for a firmware
// reboot (FW_STATE.BOOTS changed) or an unanswered request, and reconciles
// those that had one, reporting the differences fixed by name.
func (r *run) reconcileAll(ctx context.Context, when string) {
	for _, rr := range r.racks {
		for _, n := range rr.nodes {
			if !n.reachable() || n.bootStatus() != bootOK {
				continue
			}
			r.reconcileBoard(ctx, n, when)
		}
	}
}

func (r *run) reconcileBoard(ctx context.Context, n *node, when string) {
	mg, err := n.mg(r)
	if err != nil {
		return
	}
	st, err := r.readMany(ctx, n, mg, "FW_STATE")
	n.mu.Lock()
	suspect, boots := n.suspect, n.boot.Boots
	n.mu.Unlock()
	if err != nil {
		n.note("%s: FW_STATE did not answer (%v)", when, err)
		return
	}
	now := uint16(st["FW_STATE"] >> 16)
	var reasons []string
	if boots != 0 && now != boots {
		reasons = append(reasons, fmt.Sprintf("its firmware rebooted (FW_STATE.BOOTS %d -> %d)", boots, now))
	}
	if suspect {
		reasons = append(reasons, "a request to it went unanswered")
	}
	if len(reasons) == 0 {
		return
	}
	diffs, err := r.reconcile(ctx, n)
	n.mu.Lock()
	n.suspect = false
	n.boot.Boots = now
	n.mu.Unlock()
	rec := Reconciliation{Board: n.Name, When: when, Reason: strings.Join(reasons, "; "), Diffs: diffs}
	n.mu.Lock()
	n.boot.Reconciled = append(n.boot.Reconciled, rec)
	n.mu.Unlock()
	var ds []string
	fixed := err == nil
	for _, d := range diffs {
		ds = append(ds, d.String())
		fixed = fixed && d.Fixed
	}
	summary := "no difference"
	if len(ds) > 0 {
		summary = fmt.Sprintf("%d differences fixed: %s", len(ds), strings.Join(ds, ", "))
	}
	if err != nil {
		summary += "; " + err.Error()
	}
	r.out.printf("%-9s  %-14s %-7s %s: %s", "reconcile", n.Name, map[bool]string{true: "ok", false: "FAILED"}[fixed], rec.Reason, summary)
	if !r.judged(n.Board) {
		return
	}
	m := results.Measurement{Board: n.Name, Metric: "bringup.reconcile", Value: float64(len(diffs)), Unit: "registers",
		Text: rec.Reason + ": " + summary, Params: results.Params{"when": when}}
	r.env.Check("bringup.reconcile", m, fixed, "the board's registers hold the runner's intent after reconciliation",
		"Aquila §4.3: reconciliation after a loss of connection (NSF reboot)",
		"reconciliation could not restore the intent: "+summary)
}

var _ = pmos.MaxRegOps
