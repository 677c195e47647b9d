package emu

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/labrunner/labrunner/labconfig"
)

// Faults of a board's UART bridge line. They act on the bytes the board
// sends, after the request was executed, as a noisy or lossy cable would;
// their draws come from b.Rand("uart"), so a seed replays them exactly.
func init() {
	RegisterFault(FaultInfo{Name: "uart-corrupt", Scope: "board", Params: map[string]string{"rate": "0.02"},
		Benign: true, Severe: []string{"rate=0.3"}, Needs: []string{NeedsUARTBridge},
		Doc: "each byte of a bridge response has one bit flipped with probability rate (default 0.02): the host sees CRC " +
			"mismatches (or frames it cannot find), retries, and gets the remembered answer, so values stay right and a " +
			"FIFO pop is never repeated; its CRC-error and retry counters rise. At high rates (0.3 and up) requests run " +
			"out of retries and fail as infrastructure errors naming the CRC mismatch"})
	RegisterFault(FaultInfo{Name: "uart-drop", Scope: "board", Params: map[string]string{"rate": "0.1"},
		Benign: true, Severe: []string{"rate=1"}, Needs: []string{NeedsUARTBridge},
		Doc: "each bridge response (first answers and replays alike) is lost with probability rate (default 0.1): the " +
			"host times out, retries, and gets the remembered answer; the request executes once. At rate 1 every access " +
			"fails after its attempts with a timeout, while a write still took effect once"})
	RegisterFault(FaultInfo{Name: "uart-stale", Scope: "board", Params: map[string]string{"rate": "1"},
		Benign: true, Needs: []string{NeedsUARTBridge},
		Doc: "before a bridge response the board also sends, with probability rate (default 1), a copy of the response " +
			"before it (an old SEQ), as a line that delivers a late answer would: the host must discard it (its stale " +
			"counter rises) and still return the right value; a host that takes the first frame reads the previous " +
			"request's data"})
}

// uartFaults are the probabilities of the UART faults aimed at a board.
type uartFaults struct {
	corrupt float64 // per byte
	drop    float64 // per response
	stale   float64 // per response
}

func uartFaultsOf(b *Board) (uartFaults, error) {
	var f uartFaults
	var err error
	if f.corrupt, err = faultRate(b, "uart-corrupt", 0.02); err != nil {
		return f, err
	}
	if f.drop, err = faultRate(b, "uart-drop", 0.1); err != nil {
		return f, err
	}
	f.stale, err = faultRate(b, "uart-stale", 1)
	return f, err
}

// faultRate combines the rates of every fault of that name aimed at b (two
// independent sources of loss); 0 when none is.
func faultRate(b *Board, name string, def float64) (float64, error) {
	pass := 1.0
	for _, f := range b.FaultsNamed(name) {
		r, err := rateParam(f, def)
		if err != nil {
			return 0, fmt.Errorf("%s: fault %s on board %s: %w", f.Pos, f.Name, b.cfg.Name, err)
		}
		pass *= 1 - r
	}
	return 1 - pass, nil
}

func rateParam(f labconfig.Fault, def float64) (float64, error) {
	p, ok := f.Params["rate"]
	if !ok || len(p.Values) == 0 {
		return def, nil
	}
	if len(p.Values) > 1 {
		return 0, fmt.Errorf("rate takes one value, not a list of %d", len(p.Values))
	}
	r, err := strconv.ParseFloat(strings.TrimSpace(p.Values[0]), 64)
	if err != nil || r < 0 || r > 1 || math.IsNaN(r) {
		return 0, fmt.Errorf("rate %q is not a probability: write a number from 0 to 1 (default %g)", p.Values[0], def)
	}
	return r, nil
}
