package emu

import (
	"fmt"
	"strings"

	"github.com/labrunner/labrunner/labconfig"
)

// Faults of the management plane: the MOS channel, the firmware, the
// TimeSync hardware. slow-clock (board.go) drifts the TimeSync counter too.
const (
	FaultMOSLossy       = "mos-lossy"
	FaultMOSLinkCut     = "mos-link-cut"
	FaultLinkAsymmetric = "link-asymmetric"
	FaultProxyDies      = "mgmt-proxy-dies"
	FaultNeverBoots     = "mgmt-never-boots"
	FaultNSFReboot      = "mgmt-nsf-reboot"
	FaultTSyncDead      = "tsync-dead"
)

func init() {
	RegisterFault(FaultInfo{Name: FaultMOSLossy, Scope: "link", Params: map[string]string{"rate": "0.05"},
		Benign: true, Severe: []string{"rate=0.6"},
		Doc: "each MOS word crossing this cable (either direction) is lost with probability rate (default 0.05). " +
			"Symptoms: PMOS_RETX and PMOS_REASM_DROPS rise on both ends; management messages still arrive, later " +
			"(PMOS retransmits); at rate 0.5 and above a 240-byte packet (41 words) almost never crosses, PMOS_GIVEUPS " +
			"rises and bootstrap through this cable fails: the runner must use another neighbour as proxy"})
	RegisterFault(FaultInfo{Name: FaultMOSLinkCut, Scope: "link", Params: map[string]string{"at_us": "0"},
		Doc: "from at_us microseconds of emulated management time on (default 0: from the start) no ordered set " +
			"crosses this cable: MOS words, TimeSync messages and latency probes are lost. Symptoms: PORT_STATUS." +
			"CHANNEL_UP reads 0 on both ends, PMOS gives up (PMOS_GIVEUPS), LAT_STATUS.ERROR, and a TimeSync client " +
			"receiving over it counts TS_MISSED until TS_STATUS.FAILED: the runner must re-root the tree around it"})
	RegisterFault(FaultInfo{Name: FaultLinkAsymmetric, Scope: "link", Params: map[string]string{"ns": "40"},
		Doc: "the cable's delay from the named port to its peer grows by ns nanoseconds (default 40), the other " +
			"direction is unchanged (as the lab's asymmetry_ns does for B->A). Symptoms: LAT_DELAY_PS on either end " +
			"reads half the added delay above the symmetric value; a TimeSync client behind this cable is offset by " +
			"half the asymmetry (behind when its messages come the slow way, ahead when they come the fast way), " +
			"which the hardware cannot see: TS_LAST_CORR_PS stays small while the true offset exceeds the bound"})
	RegisterFault(FaultInfo{Name: FaultProxyDies, Scope: "board", Params: map[string]string{"after": "12"},
		Needs: []string{NeedsCable},
		Doc: "the board's management firmware crashes once it has sent or received `after` new PMOS data frames " +
			"(default 12), e.g. in the middle of proxying a bootstrap. Symptoms: its MOS falls silent (no ACKs: the " +
			"neighbours' PMOS gives up, messages through it are lost), firmware registers (mailbox, ROUTE, " +
			"PROXY_CTRL) answer BUSY, FW_HEARTBEAT stops and FW_STATE reads HALTED 5 ms later; the console prints " +
			"a kernel panic and answers nothing more. The data plane and TimeSync hardware keep running. Only a power " +
			"cycle brings it back: the runner must bootstrap its targets through another neighbour"})
	RegisterFault(FaultInfo{Name: FaultNeverBoots, Scope: "board",
		Doc: "the board's management firmware never finishes booting. Symptoms: FW_STATE stays BOOTING, " +
			"FW_HEARTBEAT stays 0, firmware registers answer BUSY, it sends no DISCOVER and acknowledges no PMOS " +
			"frame (neighbours' PMOS gives up on it); its console shows the boot log stopping after the kernel " +
			"started init, with an RCU stall and no prompt. Its design registers still answer over the bridge. The " +
			"runner must report it failed and go on with the rest"})
	RegisterFault(FaultInfo{Name: FaultNSFReboot, Scope: "board", Params: map[string]string{"after": "6"},
		Benign: true, Needs: []string{NeedsCable, NeedsInBand},
		Doc: "the board's management firmware reboots without traffic loss (non-stop forwarding, §4.3) on the " +
			"`after`-th remote register request it receives (default 6), which is lost unexecuted with whatever the " +
			"firmware held. Symptoms: that request gets no answer; after 1 ms the firmware is back, forwarding went " +
			"on, but its view of the routing table reads empty (ROUTE, DEFAULT_ROUTE VALID=0) and its settings " +
			"(PROXY_CTRL, TS_THRESHOLD_NS, TS_FAIL_LIMIT) are back at their defaults: a runner reconciling the board's " +
			"registers with its intent finds and rewrites them. Only remote requests (over PMOS) count: on a board " +
			"the runner reaches on the DCN (dcn: true) the fault never fires"})
	RegisterFault(FaultInfo{Name: FaultTSyncDead, Scope: "board", Params: map[string]string{"at_us": "0"},
		Needs: []string{NeedsCable},
		Doc: "from at_us microseconds of emulated management time on (default 0) the board's TimeSync transmitter " +
			"sends nothing, as a failed primary would. Symptoms: its TS_TX_COUNT keeps counting attempts but its " +
			"clients count TS_MISSED and set TS_STATUS.FAILED within about five intervals; the runner must choose a " +
			"new primary (re-root the tree)"})
}

// applyLinkFaults changes the cables themselves before anything reads
// them (link-asymmetric), so that designs see the same cable as the
// management plane.
func applyLinkFaults(r *Rack) error {
	for _, f := range r.faults {
		if f.Name != FaultLinkAsymmetric {
			continue
		}
		if err := f.Params.Check("ns"); err != nil {
			return faultErr(f, err)
		}
		ns, err := f.Params.Float("ns", 40)
		if err != nil || ns < 0 {
			return faultErr(f, fmt.Errorf("ns must be a number of nanoseconds, 0 or more (default 40)"))
		}
		p, err := faultPort(r, f)
		if err != nil {
			return err
		}
		l := p.Link
		if p == l.A {
			// A->B is LatencyNS, B->A is LatencyNS+AsymmetryNS
			l.LatencyNS += ns
			l.AsymmetryNS -= ns
		} else {
			l.AsymmetryNS += ns
		}
	}
	return nil
}

// applyFaults reads the management faults aimed at this board.
func (mb *mgmtBoard) applyFaults() error {
	b := mb.b
	for _, f := range b.rack.faults {
		switch f.Name {
		case FaultMOSLossy, FaultMOSLinkCut:
			p, err := faultPort(b.rack, f)
			if err != nil || p.Board != b {
				continue
			}
			if f.Name == FaultMOSLossy {
				if err := f.Params.Check("rate"); err != nil {
					return faultErr(f, err)
				}
				rate, err := rateParam(f, 0.05)
				if err != nil {
					return faultErr(f, err)
				}
				// both directions of the cable
				for _, mp := range []*mgmtPort{mb.ports[portIndex(p)], peerOf(p)} {
					if mp != nil {
						mp.lossRate = 1 - (1-mp.lossRate)*(1-rate)
					}
				}
				continue
			}
			if err := f.Params.Check("at_us"); err != nil {
				return faultErr(f, err)
			}
			at, err := f.Params.Float("at_us", 0)
			if err != nil || at < 0 {
				return faultErr(f, fmt.Errorf("at_us must be a time in microseconds, 0 or more"))
			}
			mp := mb.ports[portIndex(p)]
			if t := int64(at * psPerUS); mp.cutAt < 0 || t < mp.cutAt {
				mp.cutAt = t
			}
		}
	}
	for _, f := range b.FaultsNamed(FaultProxyDies) {
		if err := f.Params.Check("after"); err != nil {
			return faultErr(f, err)
		}
		n, err := f.Params.Int("after", 12)
		if err != nil || n < 1 {
			return faultErr(f, fmt.Errorf("after must be a number of PMOS packets, 1 or more (default 12)"))
		}
		mb.crashAfter = n
	}
	for _, f := range b.FaultsNamed(FaultNSFReboot) {
		if err := f.Params.Check("after"); err != nil {
			return faultErr(f, err)
		}
		n, err := f.Params.Int("after", 6)
		if err != nil || n < 1 {
			return faultErr(f, fmt.Errorf("after must be a number of remote register requests, 1 or more (default 6)"))
		}
		mb.rebootAfter = n
	}
	for _, f := range b.FaultsNamed(FaultTSyncDead) {
		if err := f.Params.Check("at_us"); err != nil {
			return faultErr(f, err)
		}
		at, err := f.Params.Float("at_us", 0)
		if err != nil || at < 0 {
			return faultErr(f, fmt.Errorf("at_us must be a time in microseconds, 0 or more"))
		}
		mb.ts.deadAt = int64(at * psPerUS)
	}
	if b.HasFault(FaultNeverBoots) || b.HasFault("board-silent") {
		mb.neverBoots = true
		mb.stuckBoot.Store(true)
	}
	return nil
}

func peerOf(p *Port) *mgmtPort {
	q := p.Peer()
	if q == nil || q.Board.mg == nil {
		return nil
	}
	return q.Board.mg.ports[portIndex(q)]
}

// faultPort finds the cabled port a link fault names.
func faultPort(r *Rack, f labconfig.Fault) (*Port, error) {
	bn, pn, _ := strings.Cut(f.Link, ":")
	b := r.boards[bn]
	if b == nil || b.Port(pn) == nil || b.Port(pn).Link == nil {
		return nil, faultErr(f, fmt.Errorf("link %q is not a cabled port of an emulated board (write board:port)", f.Link))
	}
	return b.Port(pn), nil
}

func faultErr(f labconfig.Fault, err error) error {
	return fmt.Errorf("%s: fault %s: %w", f.Pos, f.Name, err)
}
