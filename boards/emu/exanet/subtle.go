package exanet

import (
	"fmt"
	"strconv"

	"github.com/labrunner/labrunner/boards/emu"
)

// Subtle faults: regressions of the size a real change to the RTL or the
// transceiver setup makes (a few cycles here and there, a FIFO a tenth
// smaller), which a plan must still catch.
const (
	FaultArbSlow     = "exa-arb-slow"
	FaultRxFIFOShort = "exa-rx-fifo-short"
	FaultXcvrSlow    = "exa-xcvr-slow"
	FaultLinkGap     = "exa-link-gap"

	defaultArbExtra   = 2
	defaultShortWords = linkPayload / 10
	defaultXcvrExtra  = 2
	defaultGapExtra   = 2
)

func init() {
	emu.RegisterFault(emu.FaultInfo{
		Name: FaultArbSlow, Scope: "board", Design: DesignName,
		Params: map[string]string{"cycles": strconv.Itoa(defaultArbExtra)},
		Check:  emu.Checks(emu.IntIn("cycles", 1, 64)),
		Doc: "the router's arbiters take `cycles` (default 2) more cycles to grant an output, on every packet " +
			"(an extra register in the grant path). Symptoms: one sender's router bandwidth at 512 B falls from " +
			"76.2% to 72.7% of the 20 Gb/s peak (42 to 44 cycles a packet, §4.3 Fig. 9: 76%), two senders' from " +
			"88.9% to 84.2% (paper 89.5%): PC_BYTES over PC_CYCLES about 5% low; each router crossing adds 2 " +
			"cycles (12.8 ns) to a ping-pong's round trip per hop and direction",
	})
	emu.RegisterFault(emu.FaultInfo{
		Name: FaultRxFIFOShort, Scope: "link", Design: DesignName,
		Params: map[string]string{"words": strconv.Itoa(defaultShortWords), "report": emu.ReportDeclared},
		Check:  emu.Checks(emu.IntIn("words", 1, linkPayload-64), emu.ReportCheck),
		Doc: "the APElink receive payload FIFO behind this cage (board:port) is `words` (default 102, 10%) " +
			"128-bit words smaller than §3.3's 1024: it hands its peer that much less credit. With report=actual " +
			"CREDIT_MAX of this cage reads the smaller size (a build with another FIFO: the configuration check " +
			"fails); with report=declared (default) it reads 1024. Symptoms: at rest the peer's CREDITS on that " +
			"link stay `words` below CREDIT_MAX (922 of 1024) although nothing leaked and LINK_STATUS shows no " +
			"stall; bandwidth is unchanged (the credit round trip needs far fewer words)",
	})
	emu.RegisterFault(emu.FaultInfo{
		Name: FaultXcvrSlow, Scope: "link", Design: DesignName,
		Params: map[string]string{"cycles": strconv.Itoa(defaultXcvrExtra)},
		Check:  emu.Checks(emu.IntIn("cycles", 1, 1000)),
		Doc: "the transceiver path of this cable (both directions) takes `cycles` (default 2) more core-clock " +
			"cycles than the 22 of the calibrated Aurora 64B/66B + GTH pipeline (a different elastic-buffer or " +
			"gearbox setting). Symptoms: every crossing of the cable takes cycles x 6.4 ns longer (12.8 ns by " +
			"default): a ping-pong whose path crosses it once each way takes 25.6 ns more, and the per-hop " +
			"increment of §4.2 (0.46 us) reads 0.473 us on a 2x2 mesh when the second hop's cable is the slow " +
			"one; the trace's per-hop times and PP_RTT_MIN show it; bandwidth is unchanged",
	})
	emu.RegisterFault(emu.FaultInfo{
		Name: FaultLinkGap, Scope: "link", Design: DesignName,
		Params: map[string]string{"cycles": strconv.Itoa(defaultGapExtra)},
		Check:  emu.Checks(emu.IntIn("cycles", 1, 64)),
		Doc: "the APElink transmitters of this cable (both ends) leave `cycles` (default 2) idle cycles after " +
			"every packet's separator block (a state machine that returns to idle through extra states). " +
			"Symptoms: the link bandwidth of 512 B packets falls from 90.1% to 87.7% of 10 Gb/s (71 to 73 cycles " +
			"a packet; §4.3 Fig. 10: 90%), more for small packets (a 64 B packet goes from 15 to 17 cycles); " +
			"latency across the link is unchanged for a single packet",
	})
}

// parseSubtleNode reads the board's exa-arb-slow fault.
func (n *node) parseSubtleNode() error {
	for _, f := range n.b.FaultsNamed(FaultArbSlow) {
		c, err := paramInt(f, "cycles", defaultArbExtra)
		if err != nil {
			return err
		}
		if c < 1 || c > 64 {
			return fmt.Errorf("%s: fault %s: cycles=%d: want 1..64", f.Pos, f.Name, c)
		}
		n.arbExtra = int64(c)
	}
	return nil
}

// parseSubtleLink reads the link faults of cage l.port.
func (l *link) parseSubtleLink() error {
	b := l.n.b
	here := b.Name() + ":" + l.port.Name
	for _, f := range linkFaults(b, l.port, FaultRxFIFOShort) {
		if f.Link != here {
			continue // the FIFO of the other end
		}
		w, err := paramInt(f, "words", defaultShortWords)
		if err != nil {
			return err
		}
		if w < 1 || w > linkPayload-64 {
			return fmt.Errorf("%s: fault %s: words=%d: want 1..%d", f.Pos, f.Name, w, linkPayload-64)
		}
		actual, err := emu.ReportsActual(f)
		if err != nil {
			return err
		}
		l.rxShort, l.rxShortReport = w, actual
	}
	for _, f := range linkFaults(b, l.port, FaultXcvrSlow) {
		c, err := paramInt(f, "cycles", defaultXcvrExtra)
		if err != nil {
			return err
		}
		if c < 1 || c > 1000 {
			return fmt.Errorf("%s: fault %s: cycles=%d: want 1..1000", f.Pos, f.Name, c)
		}
		l.xcvrExtra = int64(c)
	}
	for _, f := range linkFaults(b, l.port, FaultLinkGap) {
		c, err := paramInt(f, "cycles", defaultGapExtra)
		if err != nil {
			return err
		}
		if c < 1 || c > 64 {
			return fmt.Errorf("%s: fault %s: cycles=%d: want 1..64", f.Pos, f.Name, c)
		}
		l.gapExtra = int64(c)
	}
	return nil
}

// rxCap is the payload FIFO this receiver really has.
func (l *link) rxCap() int { return linkPayload - l.rxShort }

// creditMaxReads is what CREDIT_MAX reads for this cage.
func (l *link) creditMaxReads() uint32 {
	if l.rxShortReport {
		return uint32(l.rxCap())
	}
	return linkPayload
}
