package tin

import (
	"fmt"
	"math/rand/v2"
	"strconv"

	"github.com/labrunner/labrunner/boards/emu"
	"github.com/labrunner/labrunner/labconfig"
)

// Subtle faults: regressions of the size a real change makes (10 ns of
// fall-through, a tenth of the credits, a reorder buffer of 40 instead of
// 50, one cell in ten thousand lost), which a plan must still catch.
const (
	FaultSlowFallthrough = "tin-slow-fallthrough"
	FaultFewCredits      = "tin-few-credits"
	FaultROBSmall        = "tin-rob-small"
	FaultCellDrop        = "tin-cell-drop"
)

func init() {
	emu.RegisterFault(emu.FaultInfo{
		Name: FaultSlowFallthrough, Scope: "board", Design: DesignName,
		Params: map[string]string{"ns": "10", "report": emu.ReportDeclared},
		Check:  emu.Checks(emu.IntIn("ns", 1, 200), emu.ReportCheck),
		Doc: "the board's core switch takes `ns` (default 10) longer than §3.1's 20 ns fall-through (a pipeline " +
			"stage more in the route lookup), rounded up to its 4 ns clock: 32 ns instead of 20. With " +
			"report=actual FALLTHROUGH_NS reads the slower figure (a build with other timings: the configuration " +
			"check against §3.1's 20 ns fails); with report=declared (default) it reads 20. Symptoms: traced cells " +
			"spend 26-30 ns from arrival to grant in that switch instead of 16-20, every path through the board " +
			"is about 12 ns a hop slower (the unloaded latency and the fabric RTT at low load rise above golden's)",
	})
	emu.RegisterFault(emu.FaultInfo{
		Name: FaultFewCredits, Scope: "link", Design: DesignName,
		Params: map[string]string{"pct": "10", "report": emu.ReportDeclared},
		Check:  emu.Checks(emu.IntIn("pct", 1, 80), emu.ReportCheck),
		Doc: "the input FIFOs behind this cage (board:port) grant the peer `pct` percent (default 10) fewer " +
			"credits per VC than VC_FIFO_BYTES at link training (§3.1: credits protect each VC's FIFO): 1152 of " +
			"1280 bytes. With report=actual the peer's CREDIT_INIT reads what it got (1152, no longer the " +
			"VC_FIFO_BYTES of this board: the configuration check fails); with report=declared (default) it " +
			"reads 1280. Symptoms: at rest the peer's CREDITS for every VC of that link read 1152, below " +
			"CREDIT_INIT (the credit check fails) with nothing leaked; throughput is unchanged while 1152 B " +
			"still covers the credit round trip",
	})
	emu.RegisterFault(emu.FaultInfo{
		Name: FaultROBSmall, Scope: "board", Design: DesignName,
		Params: map[string]string{"entries": "40", "report": emu.ReportDeclared},
		Check:  emu.Checks(emu.IntIn("entries", 1, 4096), emu.ReportCheck),
		Doc: "the ordering engine's reorder buffer on this (target) board holds at most `entries` REQs " +
			"(default 40) whatever ORD_ROB_ENTRIES says (50 at reset, SC'18 §IV-D). With report=actual " +
			"ORD_ROB_ENTRIES reads the smaller size (the configuration check fails); with report=declared " +
			"(default) it reads what was written. Symptoms: ORD_ROB_HWM never passes 40, REQs are NACKed for a " +
			"full buffer (ORD_NACK_ROBFULL) at skews of 40-50 REQs that a 50-entry buffer absorbs, streams fall " +
			"back to slow mode (ORD_FALLBACKS) and take longer",
	})
	emu.RegisterFault(emu.FaultInfo{
		Name: FaultCellDrop, Scope: "link", Design: DesignName,
		Params: map[string]string{"rate": "1e-4"},
		Check:  emu.Checks(emu.FloatIn("rate", 0, 1)),
		Doc: "each cell arriving at this cage (board:port) is lost with probability `rate` (default 1e-4: a PCS " +
			"that loses cell delineation now and then) before the input FIFO, without a CRC count; its credit " +
			"comes back. Symptoms: RX_CELLS here falls behind the peer's TX_CELLS on the same link; the packets " +
			"whose cells were lost are dropped by IP_REASM_TIMEOUT_US (lost data cells) or IP_FETCH_TIMEOUT_US " +
			"(lost RTS or CTS) and count in IPG_DROPPED; lost ordering REQs and ACKs cost retransmissions " +
			"(ORD_RETX)",
	})
}

// subtleFaults are a board's parsed subtle faults.
type subtleFaults struct {
	ftExtraPS    int64
	ftReport     bool
	creditCut    [nExt]int // tin-few-credits: percent less per cage
	creditReport [nExt]bool
	robCap       int // tin-rob-small: 0 none
	robReport    bool
	dropRate     [nExt]float64
	dropRng      *rand.Rand
}

func (x *subtleFaults) parse(d *device) error {
	b := d.b
	for _, f := range b.FaultsNamed(FaultSlowFallthrough) {
		ns, err := paramInt(f, "ns", 10)
		if err != nil {
			return err
		}
		if ns < 1 || ns > 200 {
			return fmt.Errorf("%s: fault %s: ns=%d: want 1..200", f.Pos, f.Name, ns)
		}
		if x.ftReport, err = emu.ReportsActual(f); err != nil {
			return err
		}
		x.ftExtraPS = ns * 1000
	}
	for _, f := range b.FaultsNamed(FaultFewCredits) {
		p, err := cage(f, d)
		if err != nil {
			return err
		}
		pct, err := paramInt(f, "pct", 10)
		if err != nil {
			return err
		}
		if pct < 1 || pct > 80 {
			return fmt.Errorf("%s: fault %s: pct=%d: want 1..80", f.Pos, f.Name, pct)
		}
		rep, err := emu.ReportsActual(f)
		if err != nil {
			return err
		}
		x.creditCut[p], x.creditReport[p] = int(pct), rep
	}
	for _, f := range b.FaultsNamed(FaultROBSmall) {
		n, err := paramInt(f, "entries", 40)
		if err != nil {
			return err
		}
		if n < 1 || n > 4096 {
			return fmt.Errorf("%s: fault %s: entries=%d: want 1..4096", f.Pos, f.Name, n)
		}
		if x.robReport, err = emu.ReportsActual(f); err != nil {
			return err
		}
		x.robCap = int(n)
	}
	for _, f := range b.FaultsNamed(FaultCellDrop) {
		p, err := cage(f, d)
		if err != nil {
			return err
		}
		s, ok := paramString(f, "rate")
		r := 1e-4
		if ok {
			if _, err := fmt.Sscan(s, &r); err != nil || r < 0 || r > 1 {
				return fmt.Errorf("%s: fault %s: rate=%q: want a probability", f.Pos, f.Name, s)
			}
		}
		x.dropRate[p] = r
	}
	x.dropRng = b.Rand("tin/cell-drop")
	return nil
}

// requestDelay and fallThrough are the switch's pipeline figures on this
// board (tin-slow-fallthrough adds to both).
func (d *device) requestDelay() int64 { return requestPS + d.subtle.ftExtraPS }
func (d *device) fallThrough() int64  { return fallThroughPS + d.subtle.ftExtraPS }

// fallThroughReads is what FALLTHROUGH_NS reads.
func (d *device) fallThroughReads() uint32 {
	if d.subtle.ftReport {
		// The slower build's figure: the grant waits for the next clock edge.
		ps := fallThroughPS + (d.subtle.ftExtraPS+cyclePS-1)/cyclePS*cyclePS
		return uint32(ps / 1000)
	}
	return fallThroughCycles * cyclePS / 1000
}

// creditsFor is the credit per VC this board's input FIFO behind cage p
// grants its peer at link training.
func (d *device) creditsFor(p int) int {
	v := int(d.vcFifo)
	if cut := d.subtle.creditCut[p]; cut > 0 {
		v -= v * cut / 100
	}
	return v
}

// creditInitReads is what the sender's CREDIT_INIT reads for an output
// toward peer's cage pp that granted it got.
func creditInitReads(peer *device, pp, got int) int {
	if pp >= 0 && pp < nExt && peer.subtle.creditCut[pp] > 0 && !peer.subtle.creditReport[pp] {
		return int(peer.vcFifo) // the declared figure
	}
	return got
}

// robCapacity is the reorder buffer's real size.
func (o *ordEngine) robCapacity() int {
	if c := o.d.subtle.robCap; c > 0 {
		return min(int(o.robEntries), c)
	}
	return int(o.robEntries)
}

// robEntriesReads is what ORD_ROB_ENTRIES reads.
func (o *ordEngine) robEntriesReads() uint32 {
	if o.d.subtle.robCap > 0 && o.d.subtle.robReport {
		return uint32(o.robCapacity())
	}
	return o.robEntries
}

// dropsArrival reports whether tin-cell-drop loses a cell arriving at cage p.
func (d *device) dropsArrival(p int) bool {
	r := d.subtle.dropRate[p]
	return r > 0 && d.subtle.dropRng.Float64() < r
}

// vcCheck: a `vc` parameter is any or a VC 0..31.
func vcCheck(p labconfig.Params) error {
	v, err := p.String("vc", "any")
	if err != nil {
		return err
	}
	if v == "any" {
		return nil
	}
	if n, err := strconv.Atoi(v); err != nil || n < 0 || n >= nVC {
		return fmt.Errorf("parameter vc=%s: want any or a VC from 0 to %d", v, nVC-1)
	}
	return nil
}
