package prr

import (
	"context"
	"errors"
	"fmt"
	"strings"

	gp "github.com/labrunner/labrunner/golden/prr"
	"github.com/labrunner/labrunner/results"
	"github.com/labrunner/labrunner/selftest"
	tp "github.com/labrunner/labrunner/traffic/prr"
)

const placementSource = "FPGA'20 §3.1-§3.2 (combined parallel round-robin arbiter), §4.4 (output arbiters), §5 (debug peripheral); golden/prr Switch"

// placementRun is one board's batch replay against the golden switch.
type placementRun struct {
	env   *selftest.Env
	b     *selftest.Board
	sw    *tp.Switch
	gold  *gp.Switch
	gen   *batchGen
	p     int
	limit int

	requested        int // batches the plan asked for
	batches, packets int
	totalDropped     int // drops over the whole run (the counters restart at each reset)
	inserted, placed int
	dropped, out     int
	drains, reads    int
	group            int // batches released at once (groupMax, or 1 after a BUSY)
	unjudged         int // batches released behind a differing one in its group
	tailWords        int // QTAGS words past a fill level read (each must be 0)

	// Differences, each kind with its count and first few messages.
	batchDiffs, stateDiffs, egressDiffs int
	batchMsgs, stateMsgs, egressMsgs    []string
}

func runPlacement(ctx context.Context, env *selftest.Env) error {
	p, err := selftest.ParamsOf[placementParams](env)
	if err != nil {
		return err
	}
	n, checkEvery, drainEvery, resetEvery, limit := p.Batches, p.CheckEvery, p.DrainEvery, p.ResetEvery, p.MaxDiffering
	for _, b := range env.Boards {
		sw, err := open(ctx, env, b)
		if err != nil {
			env.Error("placement", b.Name, nil, err)
			continue
		}
		gold, err := gp.NewSwitch(sw.Build.Ports, sw.Build.FIFODepth)
		if err != nil {
			env.Error("placement", b.Name, nil, fmt.Errorf("board %s: golden switch for the build %s: %w", b.Name, sw.Build, err))
			continue
		}
		r := &placementRun{env: env, b: b, sw: sw, gold: gold, p: sw.Build.Ports, limit: limit, requested: n, group: groupMax,
			gen: newBatchGen(boardSeed(env, b.Name, "placement"), sw.Build.Ports)}
		if err := r.run(ctx, n, checkEvery, drainEvery, resetEvery); err != nil {
			env.Error("placement", b.Name, r.params(), fmt.Errorf("board %s, after %d batches: %w", b.Name, r.batches, err))
			continue
		}
		r.verdicts(ctx)
	}
	return nil
}

// params identify the run's cases by what the plan asked (the batches
// requested), never by how far the run got: a run that stopped early keeps
// its JUnit name.
func (r *placementRun) params() results.Params {
	p := buildParams(r.sw.Build)
	p["batches"] = fmt.Sprint(r.requested)
	return p
}

func (r *placementRun) stopped() bool {
	return r.batchDiffs >= r.limit || r.stateDiffs >= r.limit || r.egressDiffs >= r.limit
}

// groupMax is the most batches released in one batch of register
// accesses (Switch.InsertMany): on a UART bridge the round trip Insert
// pays per batch (the USB-UART's latency, the window filling and
// emptying) is paid once per group. A group ends where a drain, a
// read-back or a reset follows, so these see the switch after the same
// batches as with one batch at a time; only a difference costs more: the
// batches released behind a differing one in its group are not judged
// (the golden switch takes the read-back state over after the group).
const groupMax = 16

// run replays n batches; it returns an error only for trouble that leaves
// nothing to judge (a board that does not answer).
func (r *placementRun) run(ctx context.Context, n, checkEvery, drainEvery, resetEvery int) error {
	if err := r.reset(ctx); err != nil {
		return err
	}
	boundary := func(k int) bool {
		return (k+1)%drainEvery == 0 || (k+1)%checkEvery == 0 || (k+1)%resetEvery == 0 || k == n-1
	}
	for k := 0; k < n && !r.stopped(); {
		end := k + 1
		for end < n && end-k < r.group && !boundary(end-1) {
			end++
		}
		if err := r.insert(ctx, k, end); err != nil {
			return err
		}
		k = end
		last := k - 1
		if (last+1)%drainEvery == 0 {
			if err := r.drain(ctx, r.gen.drainCycles()); err != nil {
				return err
			}
		}
		if (last+1)%checkEvery == 0 || last == n-1 {
			if err := r.check(ctx, fmt.Sprintf("after batch %d", last)); err != nil {
				return err
			}
		}
		if (last+1)%resetEvery == 0 && last < n-1 {
			if err := r.reset(ctx); err != nil {
				return err
			}
		}
	}
	return nil
}

// reset empties the switch (CLEAR_QUEUES: offsets and arbiters to 0) and
// checks that the read-back agrees with a golden switch after reset.
func (r *placementRun) reset(ctx context.Context) error {
	cctx, cancel := steps(ctx, r.env, 4)
	defer cancel()
	if err := r.sw.Command(cctx, tp.CmdClearCounters|tp.CmdClearQueues|tp.CmdClearBatch); err != nil {
		return err
	}
	g, err := gp.NewSwitch(r.p, r.sw.Build.FIFODepth)
	if err != nil {
		return err
	}
	r.gold = g
	r.inserted, r.placed, r.dropped, r.out = 0, 0, 0, 0
	return r.check(ctx, "after CLEAR_QUEUES")
}

// insert writes and releases batches from..to-1 (one group, see
// groupMax) and judges them in order, up to the first that differs.
func (r *placementRun) insert(ctx context.Context, from, to int) error {
	slots, tags := make([][]tp.Slot, to-from), make([][]uint32, to-from)
	accesses := 0
	for j := range slots {
		slots[j] = r.gen.next()
		tags[j] = make([]uint32, len(slots[j]))
		for i, sl := range slots[j] {
			tags[j][i] = tagOf(from+j, i)
			if sl.Valid {
				accesses += 2
			}
		}
		accesses += 4
	}
	// Two writes per packet (tag, BATCH_CTRL), the release, two bursts a
	// batch: one batch of accesses (Switch.InsertMany).
	bctx, cancel := steps(ctx, r.env, accesses)
	defer cancel()
	sts, got, err := r.sw.InsertMany(bctx, slots, tags)
	judge := len(slots)
	var busy *tp.BusyError
	switch {
	case errors.As(err, &busy):
		// Hardware that showed BUSY behind a release: the batches from
		// that one on cannot be judged, and the rest of the run releases
		// one batch at a time (Insert waits for BUSY to clear).
		judge, r.group = busy.Batch, 1
		r.env.Log.Info("placement: STATUS.BUSY behind a release inside a group; releasing one batch at a time from now on",
			"board", r.b.Name, "batch", from+busy.Batch)
	case err != nil:
		return err
	}
	differs := false
	for j := range slots {
		valid := 0
		for _, sl := range slots[j] {
			if sl.Valid {
				valid++
			}
		}
		r.batches++
		r.packets += valid
		if differs || j >= judge {
			r.unjudged++
			continue
		}
		differs = r.judge(from+j, slots[j], sts[j], got[j], valid)
	}
	if differs || judge < len(slots) {
		return r.resync(ctx)
	}
	return nil
}

// judge compares batch k's status and PLACEMENT words with the golden
// switch's (which takes the batch in) and reports whether they differ.
func (r *placementRun) judge(k int, slots []tp.Slot, st tp.Status, got []uint32, valid int) bool {
	gb := goldenBatch(slots, r.p, k)
	want := expectPlacement(r.gold, gb)
	r.inserted += valid
	r.placed += want.placed
	r.dropped += want.dropped
	r.totalDropped += want.dropped
	ds := diffPlacement(slots, want.words, got)
	var extra []string
	if st.LastPlaced != want.placed || st.LastDropped != want.dropped {
		extra = append(extra, fmt.Sprintf("LAST_PLACED %d and LAST_DROPPED %d, golden %d and %d", st.LastPlaced, st.LastDropped, want.placed, want.dropped))
	}
	if st.BatchPending != 0 {
		extra = append(extra, fmt.Sprintf("BATCH_PENDING reads %d after the release (VALID bits not cleared)", st.BatchPending))
	}
	if len(ds) == 0 && len(extra) == 0 {
		return false
	}
	r.batchDiffs++
	var msg string
	if len(ds) > 0 {
		msg = describeBatchDiff(k, slots, ds, valid, diagnose(slots, want.words, got, r.p))
		if len(extra) > 0 {
			msg += "; " + strings.Join(extra, "; ")
		}
	} else {
		msg = fmt.Sprintf("batch %d: %s", k, strings.Join(extra, "; "))
	}
	if len(r.batchMsgs) < 3 {
		r.batchMsgs = append(r.batchMsgs, msg)
	}
	r.env.Log.Debug("placement differs", "board", r.b.Name, "batch", k, "msg", msg)
	return true
}

// resync reads the whole state back and carries on from it, so that one
// difference is counted once and the next batches are judged on their own.
func (r *placementRun) resync(ctx context.Context) error {
	cctx, cancel := steps(ctx, r.env, 8+r.p*r.p*r.sw.Build.FIFODepth/256)
	defer cancel()
	h, err := r.sw.ReadStateFilled(cctx, nil)
	if err != nil {
		return err
	}
	if err := r.gold.SetState(stateOf(h, r.p)); err != nil {
		return fmt.Errorf("resuming from the read-back state: %w", err)
	}
	return nil
}

// drain clocks the output arbiters and checks what left each port.
func (r *placementRun) drain(ctx context.Context, cycles int) error {
	dctx, cancel := steps(ctx, r.env, 4+2*r.p+cycles*r.p/256)
	defer cancel()
	got, err := r.sw.DrainEgress(dctx, cycles)
	if err != nil {
		return err
	}
	r.drains++
	want := goldenDrain(r.gold, cycles)
	for _, w := range want {
		r.out += len(w)
	}
	ds := diffEgress(want, got, 3)
	if len(ds) == 0 {
		return nil
	}
	r.egressDiffs++
	if len(r.egressMsgs) < 3 {
		r.egressMsgs = append(r.egressMsgs, fmt.Sprintf("drain %d (%d cycles, after batch %d): %s", r.drains, cycles, r.batches-1, strings.Join(ds, "; ")))
	}
	return r.resync(ctx)
}

// sweepParts: each read-back reads one part in sweepParts of the QTAGS
// window in full, the next part at the next read-back, so that every word
// past a fill level is checked to read 0 once every sweepParts read-backs;
// of the other queues it reads the entries up to their fill levels, which
// is all a queue's contents are, and on a UART bridge a few percent of the
// window's bytes (the window, 8192 words for the catalogue build, is most
// of a full read-back).
const sweepParts = 8

// check reads the whole state back and compares it with the golden one:
// OFFSET, ARB_INDEX, QSTAT, every queue's entries, and the words past the
// fill levels of this read-back's part of the QTAGS window (sweepParts).
func (r *placementRun) check(ctx context.Context, when string) error {
	cctx, cancel := steps(ctx, r.env, 8+r.p*r.p*r.sw.Build.FIFODepth/256)
	defer cancel()
	part, queues := r.reads%sweepParts, r.p*r.p
	h, err := r.sw.ReadStateFilled(cctx, func(i int) bool { return i*sweepParts/queues == part })
	if err != nil {
		return err
	}
	r.reads++
	for _, n := range h.TailRead {
		r.tailWords += n
	}
	ds := diffState(r.gold.State(), h, r.p, 4)
	if len(ds) == 0 {
		return nil
	}
	r.stateDiffs++
	if len(r.stateMsgs) < 3 {
		r.stateMsgs = append(r.stateMsgs, when+": "+strings.Join(ds, "; "))
	}
	return r.gold.SetState(stateOf(h, r.p))
}

// verdicts records the run's judgements: batches, read-backs, drains and
// the packet counters.
func (r *placementRun) verdicts(ctx context.Context) {
	env, name := r.env, r.b.Name
	p := r.params()
	stop := ""
	if r.stopped() {
		stop = fmt.Sprintf(" (stopped after %d differences)", r.limit)
	}
	summary := func(n int, what string, msgs []string) string {
		if n == 0 {
			return ""
		}
		return fmt.Sprintf("%d %s differ from golden/prr%s; first: %s", n, what, stop, strings.Join(msgs, " | "))
	}
	of := fmt.Sprintf("of %d batches (%d packets)", r.batches, r.packets)
	if r.unjudged > 0 {
		of = fmt.Sprintf("of %d batches (%d packets; %d released behind a differing one in its group of up to %d not judged)", r.batches, r.packets, r.unjudged, groupMax)
	}
	msg := summary(r.batchDiffs, of, r.batchMsgs)
	env.Check("placement", results.Measurement{Board: name, Params: p, Metric: "prr.placement.differing_batches",
		Value: float64(r.batchDiffs), Unit: "batches", Text: msg}, r.batchDiffs == 0,
		fmt.Sprintf("every PLACEMENT word of %d batches (%d packets, %d of them dropped at full queues) equal to golden/prr's", r.batches, r.packets, r.totalDropped), placementSource, msg)

	msg = summary(r.stateDiffs, fmt.Sprintf("of %d full read-backs", r.reads), r.stateMsgs)
	env.Check("placement.state", results.Measurement{Board: name, Params: p, Metric: "prr.placement.differing_readbacks",
		Value: float64(r.stateDiffs), Unit: "read-backs", Text: msg}, r.stateDiffs == 0,
		fmt.Sprintf("OFFSET, ARB_INDEX, QSTAT and every queue's QTAGS entries equal to golden/prr's state at every read-back, "+
			"and the %d QTAGS words past the fill levels read 0 (the whole window once every %d read-backs)", r.tailWords, sweepParts), placementSource, msg)

	msg = summary(r.egressDiffs, fmt.Sprintf("of %d drains", r.drains), r.egressMsgs)
	env.Check("placement.egress", results.Measurement{Board: name, Params: p, Metric: "prr.placement.differing_drains",
		Value: float64(r.egressDiffs), Unit: "drains", Text: msg}, r.egressDiffs == 0,
		"every port's departures during each drain equal to golden/prr's output arbiters'", placementSource, msg)

	// The counters cover the batches since the last CLEAR_COUNTERS; they
	// are only comparable when no difference made the golden switch take
	// the hardware's state over.
	if n := r.batchDiffs + r.stateDiffs + r.egressDiffs; n > 0 {
		env.Skip("placement.counters", name, p, fmt.Sprintf("not judged: after %d differences the golden switch took the hardware's state over, so its counts no longer describe the run (see placement)", n))
		return
	}
	cctx, cancel := steps(ctx, env, 2)
	c, err := r.sw.ReadCounters(cctx)
	cancel()
	if err != nil {
		env.Error("placement.counters", name, p, err)
		return
	}
	want := tp.Counters{In: uint32(r.inserted), Enq: uint32(r.placed), Dropped: uint32(r.dropped), Out: uint32(r.out)}
	msg = ""
	if c != want {
		msg = fmt.Sprintf("PKTS_IN %d, PKTS_ENQ %d, PKTS_DROPPED %d, PKTS_OUT %d, EGRESS_LOST %d; golden %d, %d, %d, %d, 0",
			c.In, c.Enq, c.Dropped, c.Out, c.EgressLost, want.In, want.Enq, want.Dropped, want.Out)
	}
	env.Check("placement.counters", results.Measurement{Board: name, Params: p, Metric: "prr.placement.pkts_dropped",
		Value: float64(c.Dropped), Unit: "packets", Text: msg}, c == want,
		fmt.Sprintf("PKTS_IN %d, PKTS_ENQ %d, PKTS_DROPPED %d, PKTS_OUT %d since the last reset", want.In, want.Enq, want.Dropped, want.Out),
		placementSource, msg)
}
