package tin

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/labrunner/labrunner/labconfig"
)

// deviceFaults are the faults injected into one board, parsed once when the
// design is loaded.
type deviceFaults struct {
	rtsEvery      int // tin-rts-overtake: every n-th RTS of a flow is held back (0: none)
	robHold       int // tin-rob-early-release: release at this many held REQs (0: none)
	adaptiveStuck bool
	linkDownAfter [nExt]int64 // tin-link-down per cage, ps after the run starts; -1 none
}

func (x *deviceFaults) parse(d *device) error {
	b := d.b
	for i := range x.linkDownAfter {
		x.linkDownAfter[i] = -1
	}
	for _, f := range b.FaultsNamed(FaultRTSOvertake) {
		v, err := paramInt(f, "every", defaultOvertakeGap)
		if err != nil {
			return err
		}
		if v < 2 {
			return fmt.Errorf("%s: fault %s: every=%d: an RTS needs a later one to overtake it, use 2 or more", f.Pos, f.Name, v)
		}
		x.rtsEvery = int(v)
	}
	for _, f := range b.FaultsNamed(FaultROBEarly) {
		v, err := paramInt(f, "hold", defaultROBEarlyHold)
		if err != nil {
			return err
		}
		x.robHold = int(max(v, 1))
	}
	x.adaptiveStuck = b.HasFault(FaultAdaptiveStuck)
	for _, f := range b.FaultsNamed(FaultLinkDown) {
		p, err := cage(f, d)
		if err != nil {
			return err
		}
		after, err := paramInt(f, "after_ns", 0)
		if err != nil {
			return err
		}
		x.linkDownAfter[p] = after * 1000
	}
	for _, f := range b.FaultsNamed(FaultCreditLeak) {
		p, err := cage(f, d)
		if err != nil {
			return err
		}
		n, err := paramInt(f, "count", defaultLeakCount)
		if err != nil {
			return err
		}
		vc := -1
		if s, ok := paramString(f, "vc"); ok && s != "any" {
			v, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil || v < 0 || v >= nVC {
				return fmt.Errorf("%s: fault %s: parameter vc=%q is not a VC 0..%d or any", f.Pos, f.Name, s, nVC-1)
			}
			vc = v
		}
		in := d.in[p]
		in.leakLeft, in.leakVC = int(min(n, math.MaxInt32)), vc
	}
	return nil
}

// cage finds the port index of a link fault's board:port on this board.
func cage(f labconfig.Fault, d *device) (int, error) {
	_, port, _ := strings.Cut(f.Link, ":")
	for i, p := range d.ports {
		if p.Name == port {
			return i, nil
		}
	}
	return 0, fmt.Errorf("%s: fault %s: %q is not a cage of board %s (sfp0..sfp3)", f.Pos, f.Name, f.Link, d.name)
}

// armFaults starts this run's fault clocks: tin-link-down takes its cable
// down after_ns into the run, at both ends.
func (d *device) armFaults(now int64) {
	for p, after := range d.faults.linkDownAfter {
		if after < 0 {
			continue
		}
		o := d.out[p]
		o.downAt = now + after
		if o.up {
			o.peer.out[o.peerPort].downAt = now + after
		}
	}
}

func paramString(f labconfig.Fault, key string) (string, bool) {
	p, ok := f.Params[key]
	if !ok || len(p.Values) == 0 {
		return "", false
	}
	return p.Values[0], true
}

func paramInt(f labconfig.Fault, key string, def int64) (int64, error) {
	s, ok := paramString(f, key)
	if !ok {
		return def, nil
	}
	v, err := strconv.ParseInt(strings.TrimSpace(s), 0, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("%s: fault %s: parameter %s=%q is not a whole number >= 0", f.Pos, f.Name, key, s)
	}
	return v, nil
}
