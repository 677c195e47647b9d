package shoal

import (
	"context"
	"fmt"
	"math"
	"strconv"

	"github.com/labrunner/labrunner/results"
	"github.com/labrunner/labrunner/selftest"
	ts "github.com/labrunner/labrunner/traffic/shoal"
)

// runCorruption injects bit errors at the NICs' receivers (BER_INJECT on the
// NIC boards) and runs a flow between every ordered pair of nodes. App. D:
// a cell failing its CRC is discarded, its congestion-control fields taken
// as if last-cell-dropped were set, the last cell to that peer sent again,
// and the sender told with last-cell-dropped to resend its own; duplicates
// are dropped by sequence number. So every flow must complete with each cell
// delivered exactly once, the corrupted cells must be counted at the rate
// the BER gives, and retransmissions must have happened.
func runCorruption(ctx context.Context, env *selftest.Env) (err error) {
	k, err := rackOf(env)
	if err != nil {
		return err
	}
	par, err := selftest.ParamsOf[corruptionParams](env)
	if err != nil {
		return err
	}
	ber, cells := par.BER, par.Cells
	r, n := k.r, k.fab.N()
	defer func() {
		if rerr := k.restore(ctx); rerr != nil && err == nil {
			err = fmt.Errorf("restoring the rack after the bit-error test: %w", rerr)
		}
	}()
	for _, b := range r.NICBoards {
		if err := r.SetBER(ctx, b, ber); err != nil {
			return paramErr(env, err)
		}
	}
	var pairs [][2]int
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			if i != j {
				pairs = append(pairs, [2]int{i, j})
			}
		}
	}
	flows, err := ts.Pairs(n, pairs, int64(cells*k.payload))
	if err != nil {
		return err
	}
	o, err := k.runFlows(ctx, flows, 2_000_000)
	if err != nil {
		return err
	}
	p := results.Params{"ber": strconv.FormatFloat(ber, 'g', -1, 64)}
	k.checkComplete(env, "corruption.recovered", p, flows, o, "cells lost to corruption were not recovered (App. D)")
	var delivered, corrupt, intact, retx, lcd, dup uint64
	for _, nic := range o.nics {
		delivered += uint64(nic.C["RX_DELIVERED_CELLS"])
		corrupt += uint64(nic.C["RX_CORRUPT_CELLS"])
		intact += uint64(nic.C["RX_CELLS"])
		retx += uint64(nic.C["TX_RETX_CELLS"])
		lcd += uint64(nic.C["LCD_SENT"])
		dup += uint64(nic.C["RX_DUPLICATE_CELLS"])
	}
	want := uint64(len(flows) * cells)
	m := meas(r.Master, p, "shoal.corruption.delivered_cells", float64(delivered), fmt.Sprintf("%d duplicates dropped", dup))
	m.Unit = "cells"
	env.Check("corruption.delivered", m, delivered == want, fmt.Sprintf("%d cells, each once", want),
		"Shoal §3.5: reassembly by sequence number; App. D: duplicates of a retransmission are dropped",
		fmt.Sprintf("destinations counted %d useful cells for the %d the flows carry (%d duplicates dropped): cells lost or counted twice", delivered, want, dup))

	// A cell of `bits` bits crosses the NIC's receiver with BER_INJECT and
	// every cable of its path with the lab's own rate (docs/shoal.md, "Bit
	// errors"): it is corrupted with probability 1 - (1 - b)^bits.
	bits := float64(8 * k.cell)
	pc := 1 - math.Pow(1-(ber+k.fab.PathBER()), bits)
	seen := float64(intact + corrupt)
	exp := pc * seen
	sd := math.Sqrt(exp * (1 - pc))
	// At least one corrupted cell: a receiver that counts none at this
	// rate has not looked.
	lo, hi := math.Max(1, exp-5*sd-2), exp+5*sd+2
	m = meas(r.Master, p, "shoal.corruption.corrupt_cells", float64(corrupt), fmt.Sprintf("%d of %d cells received (%.3g%%)", corrupt, intact+corrupt, 100*float64(corrupt)/math.Max(seen, 1)))
	m.Unit = "cells"
	e := results.Expectation{Metric: "shoal.corruption.corrupt_cells", Value: exp, Min: results.Float(lo), Max: results.Float(hi), Unit: "cells",
		Source: "Shoal App. D: the CRC-8 and the MAC FCS catch corrupted cells; the count follows the injected bit-error rate",
		Note:   fmt.Sprintf("%.3g%% of %d-bit cells at BER %g (BER_INJECT plus the cables' own) of the %.0f cells received", 100*pc, int(bits), ber, seen),
		Budget: fmt.Sprintf("binomial count: ±(5 sd + 2) with sd = sqrt(n p (1-p)) = %.3g cells for n = %.0f cells received, p = %.3g; at least one", sd, seen, pc)}
	if e.NeedsReason() {
		e.Wide = fmt.Sprintf("a count of about %.0f random events: five standard deviations of a binomial count are that wide relative to it (reading S61)", exp)
	}
	env.Record("corruption.counted", m, e)
	m = meas(r.Master, p, "shoal.corruption.retransmitted_cells", float64(retx), fmt.Sprintf("%d last-cell-dropped signals", lcd))
	m.Unit = "cells"
	env.Check("corruption.retransmitted", m, corrupt == 0 || (retx > 0 && lcd > 0),
		"retransmissions (TX_RETX_CELLS) and last-cell-dropped signals (LCD_SENT) after corrupted cells",
		"Shoal App. D: the receiver signals last-cell-dropped and resends its last cell; the sender resends its own",
		fmt.Sprintf("%d corrupted cells but %d retransmissions and %d last-cell-dropped signals", corrupt, retx, lcd))
	return nil
}
