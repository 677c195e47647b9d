package exanet

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/labrunner/labrunner/drivers"
	gx "github.com/labrunner/labrunner/golden/exanet"
	"github.com/labrunner/labrunner/results"
	"github.com/labrunner/labrunner/selftest"
	tx "github.com/labrunner/labrunner/traffic/exanet"
)

// One bad cable fails the tests that cross it, quickly, and nothing else
// (reading E60). A cable is bad once it is seen down (LINK_STATUS.UP clear
// at either end), short of credit at rest (CREDITS below the declared
// CREDIT_MAX, or CREDIT_STALL set, at either end), or once a transfer over
// it stalls or loses packets. Every traffic test surveys the cables before
// it starts; a case whose path crosses a bad cable is not run and fails at
// once, as a design failure naming the cable and what was seen, instead of
// leaving packets queued for a link that will never take them (they would
// hold the sending port and stall every later transfer from that board,
// and each later access would wait on a fabric that never goes quiet). A
// transfer that stalls on a cable that is still up has its cable retrained
// (LINK_CTRL.ENABLE off and on at both ends: credit restarts from the
// peer's free space, ExaNet §3.4) so that what it left queued drains.

// end is one link port of a board.
type end struct {
	board string
	link  int
}

// badState is the cables the plan found bad, for the tests after.
var badState = selftest.State[badCables]{Key: "exanet.bad"}

func (e end) String() string { return e.board + ":" + linkPorts[e.link] }

// cable is one cabled APElink between two plan boards.
type cable struct{ a, b end }

// String names a cable by its two ends, the lower end first.
func (c cable) String() string { return c.a.String() + " - " + c.b.String() }

// cableAt returns the cable on a board's link port, if a plan board is
// cabled there.
func (t *topo) cableAt(board string, link int) (cable, bool) {
	peer := t.peer[board][link]
	if peer == "" {
		return cable{}, false
	}
	for j := range linkPorts {
		if t.peer[peer][j] == board {
			a, b := end{board, link}, end{peer, j}
			if b.String() < a.String() {
				a, b = b, a
			}
			return cable{a, b}, true
		}
	}
	return cable{}, false
}

// cables lists every cable of the mesh, in name order.
func (t *topo) cables() []cable {
	seen := map[string]cable{}
	for _, n := range t.names {
		for i := range linkPorts {
			if c, ok := t.cableAt(n, i); ok {
				seen[c.String()] = c
			}
		}
	}
	out := make([]cable, 0, len(seen))
	for _, c := range seen {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// pathCables returns the cables the golden DOR path from src to dst
// crosses, in order.
func (t *topo) pathCables(src, dst string) ([]cable, error) {
	lat := gx.Coord{X: t.lattice[0], Y: t.lattice[1], Z: t.lattice[2]}
	p, err := gx.DORPath(t.gcoord(src), t.gcoord(dst), lat, t.order)
	if err != nil {
		return nil, err
	}
	var out []cable
	for _, h := range p.Hops {
		from := t.byCoord[tx.Coord{h.From.X, h.From.Y, h.From.Z}]
		to := t.byCoord[tx.Coord{h.To.X, h.To.Y, h.To.Z}]
		found := false
		for i := range linkPorts {
			if t.peer[from][i] == to && from != "" {
				if c, ok := t.cableAt(from, i); ok {
					out = append(out, c)
					found = true
					break
				}
			}
		}
		if !found {
			return nil, fmt.Errorf("no cable of the lab joins %s and %s on the DOR path %s -> %s", h.From, h.To, src, dst)
		}
	}
	return out, nil
}

// badCables is what the plan knows about its cables so far: cable name to
// what was seen. It lives in the plan's shared state, so that a cable one
// test found bad fails the later tests that cross it too.
type badCables map[string]string

func badOf(env *selftest.Env) badCables {
	b, ok := badState.Get(env)
	if !ok {
		b = badCables{}
		badState.Set(env, b)
	}
	return b
}

// mark records a cable as bad (the first reason seen is kept).
func (b badCables) mark(c cable, why string) {
	if _, ok := b[c.String()]; !ok {
		b[c.String()] = why
	}
}

// crossing returns why the first bad cable among cs is bad ("" when none is).
func (b badCables) crossing(cs []cable) string {
	for _, c := range cs {
		if why, ok := b[c.String()]; ok {
			return fmt.Sprintf("cable %s: %s", c, why)
		}
	}
	return ""
}

// declaredCredit is the receiver FIFO the manifest declares, in words: what
// an idle link must hold in credit (never a board's own CREDIT_MAX).
func declaredCredit(env *selftest.Env) uint32 {
	if env.Design != nil {
		if c, err := env.Design.Declared("credit_max"); err == nil {
			return uint32(c.Value)
		}
	}
	return 1024
}

// endState describes one end's link state in a few words, or "" when the
// end is up, idle and holds its whole declared credit.
func endState(e end, ls tx.LinkState, credit uint32) string {
	var bad []string
	if !ls.Up {
		bad = append(bad, "down (LINK_STATUS.UP = 0)")
	}
	if ls.CreditStall {
		bad = append(bad, "transmission suspended for credit (CREDIT_STALL)")
	}
	if ls.Up && ls.Credits != credit {
		bad = append(bad, fmt.Sprintf("%d of %d credits at rest (credit leak)", ls.Credits, credit))
	}
	if len(bad) == 0 {
		return ""
	}
	return e.String() + " " + strings.Join(bad, ", ")
}

// survey reads both ends of every cable (or of the ones given) and marks
// the bad ones. It returns an error only when a board does not answer.
func survey(ctx context.Context, env *selftest.Env, t *topo, only ...cable) error {
	bad := badOf(env)
	credit := declaredCredit(env)
	cs := only
	if len(cs) == 0 {
		cs = t.cables()
	}
	for _, c := range cs {
		var why []string
		for _, e := range []end{c.a, c.b} {
			rctx, cancel := regDeadline(env, ctx, 8)
			ls, err := tx.ReadLink(rctx, env.Board(e.board).Regs, e.link)
			cancel()
			if err != nil {
				return err
			}
			if s := endState(e, ls, credit); s != "" {
				why = append(why, s)
			}
		}
		if len(why) > 0 {
			bad.mark(c, strings.Join(why, "; "))
		}
	}
	return nil
}

// retrain takes a cable's channel down and up again at both ends
// (LINK_CTRL.ENABLE): words queued for it are released and credit
// restarts from the peer's free space (ExaNet §3.4), so that a transfer
// that stalled on it leaves nothing behind for the next one.
func retrain(ctx context.Context, env *selftest.Env, c cable) error {
	rctx, cancel := regDeadline(env, ctx, 8)
	defer cancel()
	for _, v := range []uint32{0, 1} {
		for _, e := range []end{c.a, c.b} {
			if err := env.Board(e.board).Regs.Write(rctx, fmt.Sprintf("LINK_CTRL[%d]", e.link), v); err != nil {
				return err
			}
		}
	}
	return nil
}

// afterFailure is called when a transfer over cs stalled, timed out or
// lost packets: the cables are surveyed again, each found bad is marked
// and retrained; a transfer that failed while every cable it crossed
// looks sound marks them all (the failure is theirs or the routers').
func afterFailure(ctx context.Context, env *selftest.Env, t *topo, cs []cable, what string) {
	bad := badOf(env)
	if err := survey(ctx, env, t, cs...); err != nil {
		env.Log.Warn("exanet: surveying the cables after a failed transfer", "err", err)
	}
	if len(cs) == 1 {
		bad.mark(cs[0], what)
	}
	for _, c := range cs {
		if _, ok := bad[c.String()]; !ok {
			continue
		}
		if err := retrain(ctx, env, c); err != nil {
			env.Log.Warn("exanet: retraining a cable after a failed transfer", "cable", c.String(), "err", err)
		}
	}
}

// notRun records a case that was not run because its path crosses a bad
// cable: a design failure of that case (the hardware answered, and its
// cable is not sound), naming the cable and what was seen. Nothing is
// measured, so no measurement is recorded.
func notRun(env *selftest.Env, name, board string, p results.Params, why string) {
	env.Error(name, board, p, &drivers.Error{Class: drivers.ClassDesign, Board: board, Op: "not run",
		Hint: "reading E60: one bad cable fails the tests that cross it, the others go on",
		Err:  fmt.Errorf("its path crosses %s", why)})
}

// runLinkErrors reads every link receiver's error counters once the plan's
// traffic has run (they clear on read and count since programming, or since
// the last time this test read them): corrected header bits are a
// measurement per cable end (exanet.link.ecc_corrected), so that a cable
// that degrades shows in the report and InfluxDB while the header ECC still
// hides it from the data (reading E61); the verdict fails on what the ECC
// and CRC could not hide: an uncorrectable header or a payload CRC error.
func runLinkErrors(ctx context.Context, env *selftest.Env) error {
	t, err := topoOf(env)
	if err != nil {
		return err
	}
	for _, name := range t.names {
		b := env.Board(name)
		for i, port := range linkPorts {
			peer := t.peer[name][i]
			if peer == "" {
				continue
			}
			p := results.Params{"port": port, "peer": peer}
			rctx, cancel := regDeadline(env, ctx, 4)
			le, err := tx.ReadLinkErrors(rctx, b.Regs, i)
			cancel()
			if err != nil {
				env.Error("link_errors", name, p, err)
				continue
			}
			// No text: the verdict, the report and JUnit carry the count
			// itself (a text would replace it there).
			m := results.Measurement{Board: name, Params: p, Metric: "exanet.link.ecc_corrected", Value: float64(le.ECCCorrected), Unit: "headers"}
			env.Check("link_errors", m, le.ECCUncorrectable == 0 && le.CRC == 0,
				"no uncorrectable header and no payload CRC error (corrected headers are counted, not failed)",
				"ExaNet §3.4 (ECC on the header corrects single-bit errors, CRC32 on the payload detects the rest)",
				fmt.Sprintf("%s:%s received %d uncorrectable headers and %d payload CRC errors from %s since the last read (%d headers corrected): the cable or its transceivers corrupt data the link cannot repair",
					name, port, le.ECCUncorrectable, le.CRC, peer, le.ECCCorrected))
		}
	}
	return nil
}
