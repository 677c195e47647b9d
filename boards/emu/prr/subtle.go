package prr

import (
	"fmt"
	"math/rand/v2"
	"strconv"

	"github.com/labrunner/labrunner/boards/emu"
	"github.com/labrunner/labrunner/labconfig"
)

// Subtle faults: regressions of the size a real change of the RTL or of a
// build has (one pipeline register more, one FIFO entry less, a rare lost
// write, an arbiter bubble), which a plan must still catch.
const (
	FaultExtraStage     = "prr-extra-stage"
	FaultFIFOShort      = "prr-fifo-short"
	FaultSilentDrop     = "prr-silent-drop"
	FaultArbiterBubble  = "prr-arbiter-bubble"
	defaultExtraCycles  = 1
	defaultShortEntries = 1
	defaultDropRate     = 1e-4
	defaultBubbleEvery  = 64
)

func init() {
	emu.RegisterFault(emu.FaultInfo{
		Name: FaultExtraStage, Scope: "board", Design: DesignName,
		Params: map[string]string{"cycles": strconv.Itoa(defaultExtraCycles)},
		Check:  emu.Checks(emu.IntIn("cycles", 1, 16)),
		Doc: "the pipeline has `cycles` (default 1) more registers than §4.2's latency_opt for the build's P and S " +
			"(a retiming register left in, or the compulsory register counted twice): every packet reaches its " +
			"queue that much later. STAGE_S and PORTS still read the build's values. Symptoms: LAST_ENQ_CYCLE - " +
			"LAST_INS_CYCLE reads 8 instead of Table 1's 7 for the 16x16 S=2 build (the pipeline latency check " +
			"fails), TG_LAT_MIN at a light load reads 9 instead of 8 (port to port, §5.2); throughput, placement " +
			"and queue waits stay right",
	})
	emu.RegisterFault(emu.FaultInfo{
		Name: FaultFIFOShort, Scope: "board", Design: DesignName,
		Params: map[string]string{"entries": strconv.Itoa(defaultShortEntries), "report": emu.ReportDeclared},
		Check:  emu.Checks(emu.IntIn("entries", 1, MaxFIFODepth-1), emu.ReportCheck),
		Doc: "each output queue holds `entries` (default 1) fewer packets than the build's depth: 31 for the " +
			"catalogue's 32. With report=actual FIFO_DEPTH reads the smaller depth (a build with other params: " +
			"the configuration check against the manifest fails); with report=declared (default) it reads 32 " +
			"and only the behaviour shows it. Symptoms: the 32nd packet written into a queue is dropped " +
			"(PLACEMENT.DROPPED, LAST_DROPPED, PORT_DROPPED: 32 full batches for one port drop the whole last " +
			"batch), QSTAT.COUNT never exceeds 31, and the drop rate at input rate 1 rises above the golden curve " +
			"for depth 32",
	})
	emu.RegisterFault(emu.FaultInfo{
		Name: FaultSilentDrop, Scope: "board", Design: DesignName,
		Params: map[string]string{"rate": strconv.FormatFloat(defaultDropRate, 'g', -1, 64)},
		Check:  emu.Checks(emu.FloatIn("rate", 0, 1)),
		Doc: "each queue write is lost with probability `rate` (default 1e-4: a write-enable glitch) while the " +
			"pipeline counts it written (PKTS_ENQ, PLACEMENT.PLACED): the packet never reaches its queue. " +
			"Symptoms: packets are not conserved (TG_OFFERED > TG_DELIVERED + TG_DROPPED + TG_STRANDED, and " +
			"PKTS_ENQ > PKTS_OUT + the queues' QSTAT counts), the output arbiter of that group waits at the " +
			"empty queue and falls out of step (TG_ORDER_ERRORS, TG_STRANDED without drops); a read-back after " +
			"a batch misses the packet PLACEMENT says was placed",
	})
	emu.RegisterFault(emu.FaultInfo{
		Name: FaultArbiterBubble, Scope: "board", Design: DesignName,
		Params: map[string]string{"every": strconv.Itoa(defaultBubbleEvery)},
		Check:  emu.Checks(emu.IntIn("every", 1, 1<<20)),
		Doc: "every output arbiter idles one cycle after each `every` packets it sent (default 64: a pointer " +
			"update that takes a second cycle when its counter wraps), so a port leaves line rate by 1/(every+1) " +
			"(1.5%). Symptoms: a permutation at input rate 1 (every input to its own port) delivers " +
			"TG_WINDOW_OUT below (cycles - pipeline) x P and its latency grows over the run (TG_LAT_MAX above " +
			"the minimum), where §4.5 says the switch keeps line rate; order, placement and drops stay right at " +
			"light load",
	})
}

// subtleFaults are the parsed subtle faults of one board.
type subtleFaults struct {
	extraCycles  int
	shortEntries int
	shortReport  bool // FIFO_DEPTH reads the smaller depth
	dropRate     float64
	bubbleEvery  int
}

func (s *subtleFaults) parse(b *emu.Board, cfg Config) error {
	for _, f := range b.FaultsNamed(FaultExtraStage) {
		n, err := paramInt(f, "cycles", defaultExtraCycles)
		if err != nil {
			return err
		}
		if n < 1 || n > 16 {
			return fmt.Errorf("%s: fault %s: cycles=%d: want 1..16", f.Pos, f.Name, n)
		}
		s.extraCycles = n
	}
	for _, f := range b.FaultsNamed(FaultFIFOShort) {
		n, err := paramInt(f, "entries", defaultShortEntries)
		if err != nil {
			return err
		}
		if n < 1 || n >= cfg.FIFODepth {
			return fmt.Errorf("%s: fault %s: entries=%d: want 1..%d (the build's FIFO_DEPTH is %d)", f.Pos, f.Name, n, cfg.FIFODepth-1, cfg.FIFODepth)
		}
		actual, err := emu.ReportsActual(f)
		if err != nil {
			return err
		}
		s.shortEntries, s.shortReport = n, actual
	}
	for _, f := range b.FaultsNamed(FaultSilentDrop) {
		r, err := paramFloat(f, "rate", defaultDropRate)
		if err != nil {
			return err
		}
		if r < 0 || r > 1 {
			return fmt.Errorf("%s: fault %s: rate=%g: want a probability", f.Pos, f.Name, r)
		}
		s.dropRate = r
	}
	for _, f := range b.FaultsNamed(FaultArbiterBubble) {
		n, err := paramInt(f, "every", defaultBubbleEvery)
		if err != nil {
			return err
		}
		if n < 1 {
			return fmt.Errorf("%s: fault %s: every=%d: want 1 or more", f.Pos, f.Name, n)
		}
		s.bubbleEvery = n
	}
	return nil
}

// apply puts the faults into the switch.
func (s *subtleFaults) apply(c *core, rng *rand.Rand) {
	if s.extraCycles > 0 {
		// The extra registers sit after the last stage: empty segments
		// the batch crosses one per cycle before the queue write.
		last := c.segs[len(c.segs)-1]
		for range s.extraCycles {
			c.segs = append(c.segs, [2]int{last[1], last[1]})
		}
		c.pipe = make([]*batch, len(c.segs))
	}
	if s.shortEntries > 0 {
		c.capacity = c.depth - int32(s.shortEntries)
	}
	if s.dropRate > 0 {
		c.dropRate, c.dropRng = s.dropRate, rng
	}
	if s.bubbleEvery > 0 {
		c.bubbleEvery = int32(s.bubbleEvery)
		c.bubbleSent = make([]int32, c.p)
		c.bubbleIdle = make([]bool, c.p)
	}
}

// depthReads is what FIFO_DEPTH reads.
func (s *subtleFaults) depthReads(cfg Config) int {
	if s.shortEntries > 0 && s.shortReport {
		return cfg.FIFODepth - s.shortEntries
	}
	return cfg.FIFODepth
}

func paramFloat(f labconfig.Fault, key string, def float64) (float64, error) {
	v, ok := f.Params[key]
	if !ok || len(v.Values) == 0 {
		return def, nil
	}
	x, err := strconv.ParseFloat(v.Values[0], 64)
	if err != nil {
		return 0, fmt.Errorf("%s: fault %s: parameter %s = %q is not a number", f.Pos, f.Name, key, v.Values[0])
	}
	return x, nil
}
