package shoal

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/labrunner/labrunner/boards/emu"
)

// Subtle faults: one cycle, one slot, one cell of difference, the size of
// a real regression, which a plan must still catch.
const (
	FaultSlotLong     = "shoal-slot-long"
	FaultGuardShort   = "shoal-guard-short"
	FaultFeedbackLate = "shoal-feedback-late"
	FaultReadyLeak    = "shoal-ready-leak"
	FaultCellDrop     = "shoal-cell-drop"
)

func init() {
	emu.RegisterFault(emu.FaultInfo{
		Name: FaultSlotLong, Scope: "board", Design: DesignName,
		Params: map[string]string{"cycles": "1", "report": emu.ReportDeclared},
		Check:  emu.Checks(emu.IntIn("cycles", 1, 64), emu.ReportCheck),
		Doc: "the board's slots last `cycles` (default 1) cycles more than SLOT_CYCLES says (a slot counter " +
			"compared with the wrong bound); the cell stays the declared size, the extra cycles idle. With " +
			"report=actual SLOT_CYCLES reads the real length (a build with other timings: the configuration " +
			"check of SLOT_CYCLES fails, and §3.4 wants the same slot on every board); with report=declared " +
			"(default) it reads what was written. Symptoms: the board's slot grid slips a cycle a slot against " +
			"the rack's: within a few slots its cells (or, on a switch, the cells it passes) fall outside the " +
			"guard band: SW_MISALIGNED, RX_CORRUPT_CELLS and FAILED_SLOTS at the NICs, then RX_MISROUTED_CELLS " +
			"and peers inferred failed (FAILED_PEERS); traffic tests lose throughput or stall",
	})
	emu.RegisterFault(emu.FaultInfo{
		Name: FaultGuardShort, Scope: "board", Design: DesignName,
		Params: map[string]string{"cycles": "1", "report": emu.ReportDeclared},
		Check:  emu.Checks(emu.IntIn("cycles", 1, 8), emu.ReportCheck),
		Doc: "the board keeps a guard band `cycles` (default 1) shorter than GUARD_CYCLES: its NICs start " +
			"their cells that many cycles earlier in the slot, its switches reconfigure that many cycles later " +
			"(§3.4: the guard band absorbs reconfiguration and synchronisation errors). With report=actual " +
			"GUARD_CYCLES reads the shorter guard (the configuration check fails); with report=declared " +
			"(default) it reads what was written. Symptoms: with the prototype's one-cycle guard every cell " +
			"the board sends (or passes) meets a reconfiguration: SW_MISALIGNED, RX_CORRUPT_CELLS, " +
			"FAILED_SLOTS, retransmissions (TX_RETX_CELLS); with a wider guard the margin is gone and the " +
			"same counters rise as soon as a cable or a clock is off by a cycle",
	})
	emu.RegisterFault(emu.FaultInfo{
		Name: FaultFeedbackLate, Scope: "board", Design: DesignName,
		Params: map[string]string{"slots": "1", "nic": "all"}, Needs: []string{"param:role=nic"},
		Check: emu.Checks(emu.IntIn("slots", 1, 64), nicCheck),
		Doc: "the NICs of this board (or only cage `nic`) take rate-limit feedback as covering the cells sent " +
			"`slots` (default 1) slots earlier than the one-way delay allows (§3.3.2, App. A: an extra register " +
			"in the feedback path), so a subflow waits for feedback about a cell it could already count as " +
			"seen. Symptoms: feedback loops cross more epoch boundaries: the mean feedback delay " +
			"(FB_SLOTS_SUM / FB_COUNT) grows by about an epoch, one pair's throughput at 96-cycle slots falls " +
			"from 4/7 to 1/2 of the link (reading S20) and the permutation's below the golden curve; queues " +
			"stay within their bounds",
	})
	emu.RegisterFault(emu.FaultInfo{
		Name: FaultReadyLeak, Scope: "board", Design: DesignName,
		Params: map[string]string{"nic": "all"}, Needs: []string{"param:role=nic"},
		Check: emu.Checks(nicCheck),
		Doc: "the NICs of this board (or only cage `nic`) let two local cells into a queue Q[j] instead of " +
			"one, the second from the ready queue R[j] (§3.3.3: \"at most one local cell in Q_jk\"). Symptoms: " +
			"a queue holds one cell more than Eq. 5 allows once the queue is full of forwarded cells; at a node " +
			"sending long flows to several destinations with nothing forwarded through it (an outcast) " +
			"MAX_QUEUE reads 2 where §3.3.3 allows one local cell; throughput and completion times barely change",
	})
	emu.RegisterFault(emu.FaultInfo{
		Name: FaultCellDrop, Scope: "link", Design: DesignName,
		Params: map[string]string{"rate": "1e-4"},
		Check:  emu.Checks(emu.FloatIn("rate", 0, 1)),
		Doc: "each cell leaving through this cage (board:port) is lost with probability `rate` (default 1e-4: " +
			"a synchronisation FIFO that slips now and then) without a trace on the wire. Symptoms: the " +
			"receiving NIC finds nothing in the slot: FAILED_SLOTS, and because §3.5 infers a failure from a " +
			"single missing cell, the pair infers each other failed (FAILED_PEERS, notices, FAIL_DISCARDS): " +
			"after about 1/rate cells through the cable a pair stops talking and flows between it stall",
	})
}

// subtleFaults are a board's parsed subtle faults.
type subtleFaults struct {
	slotExtra, guardShort   int64
	slotReport, guardReport bool
	fbLate                  int64
	fbMask                  uint8
	readyLeak               uint8
	dropRate                [nicsPerBoard]float64
	dropRng                 *rand.Rand
}

func (x *subtleFaults) parse(b *emu.Board) error {
	for _, f := range b.FaultsNamed(FaultSlotLong) {
		v, err := paramInt(f, "cycles", 1)
		if err != nil {
			return err
		}
		if v < 1 || v > 64 {
			return fmt.Errorf("%s: fault %s: cycles=%d: want 1..64", f.Pos, f.Name, v)
		}
		if x.slotReport, err = emu.ReportsActual(f); err != nil {
			return err
		}
		x.slotExtra = v
	}
	for _, f := range b.FaultsNamed(FaultGuardShort) {
		v, err := paramInt(f, "cycles", 1)
		if err != nil {
			return err
		}
		if v < 1 || v > 8 {
			return fmt.Errorf("%s: fault %s: cycles=%d: want 1..8", f.Pos, f.Name, v)
		}
		if x.guardReport, err = emu.ReportsActual(f); err != nil {
			return err
		}
		x.guardShort = v
	}
	for _, f := range b.FaultsNamed(FaultFeedbackLate) {
		v, err := paramInt(f, "slots", 1)
		if err != nil {
			return err
		}
		if v < 1 || v > 64 {
			return fmt.Errorf("%s: fault %s: slots=%d: want 1..64", f.Pos, f.Name, v)
		}
		m, err := nicMask(f, b)
		if err != nil {
			return err
		}
		x.fbLate, x.fbMask = v, x.fbMask|m
	}
	for _, f := range b.FaultsNamed(FaultReadyLeak) {
		m, err := nicMask(f, b)
		if err != nil {
			return err
		}
		x.readyLeak |= m
	}
	for _, f := range b.Rack().FaultsNamed(FaultCellDrop) {
		bn, port, _ := strings.Cut(f.Link, ":")
		if bn != b.Name() {
			continue
		}
		r, err := paramFloat(f, "rate", 1e-4)
		if err != nil {
			return err
		}
		if r < 0 || r > 1 {
			return fmt.Errorf("%s: fault %s: rate=%g: want a probability", f.Pos, f.Name, r)
		}
		for i, p := range b.Ports() {
			if i < nicsPerBoard && p.Name == port {
				x.dropRate[i] = r
			}
		}
	}
	x.dropRng = b.Rand("shoal/cell-drop")
	return nil
}

// slotCyclesReal is the slot the board's hardware keeps.
func (d *device) slotCyclesReal() uint32 { return d.slotCycles + uint32(d.subtle.slotExtra) }

// guardReal is the guard band the board's hardware keeps (at least 0).
func (d *device) guardReal() uint32 {
	return uint32(max(int64(d.guard)-d.subtle.guardShort, 0))
}

// slotReads and guardReads are what SLOT_CYCLES and GUARD_CYCLES read.
func (d *device) slotReads() uint32 {
	if d.subtle.slotReport {
		return d.slotCyclesReal()
	}
	return d.slotCycles
}

func (d *device) guardReads() uint32 {
	if d.subtle.guardReport {
		return d.guardReal()
	}
	return d.guard
}

// drops reports whether shoal-cell-drop loses the cell leaving port p now.
func (d *device) drops(p int) bool {
	r := d.subtle.dropRate[p]
	return r > 0 && d.subtle.dropRng.Float64() < r
}

// nicCheck: a `nic` parameter names all, a cage sfp0..sfp3 or its index.
var nicCheck = emu.OneOf("nic", "all", "sfp0", "sfp1", "sfp2", "sfp3", "0", "1", "2", "3")
