package shoal

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/labrunner/labrunner/boards/emu"
	"github.com/labrunner/labrunner/labconfig"
)

// deviceFaults are the faults injected into one board, parsed once when the
// design is loaded.
type deviceFaults struct {
	wrongSlot     int64 // wrong-slot: configuration offset (0: none)
	ignoreRL      uint8 // ignore-rate-limit: mask of NICs
	driftPPM      float64
	driftAfter    int64 // slots after the bootstrap
	downMask      uint8 // shoal-node-down: NICs (or the whole switch when the board switches)
	downAfter     int64
	downAll       bool
	linkDownAfter [nicsPerBoard]int64 // shoal-link-down per cage; -1 none
}

func (x *deviceFaults) parse(b *emu.Board) error {
	for i := range x.linkDownAfter {
		x.linkDownAfter[i] = -1
	}
	for _, f := range b.FaultsNamed(FaultWrongSlot) {
		v, err := paramInt(f, "offset", 1)
		if err != nil {
			return err
		}
		x.wrongSlot = v
	}
	for _, f := range b.FaultsNamed(FaultIgnoreRateLimit) {
		m, err := nicMask(f, b)
		if err != nil {
			return err
		}
		x.ignoreRL |= m
	}
	for _, f := range b.FaultsNamed(FaultClockDrift) {
		ppm, err := paramFloat(f, "ppm", 100)
		if err != nil {
			return err
		}
		after, err := paramInt(f, "after_slots", 0)
		if err != nil {
			return err
		}
		x.driftPPM, x.driftAfter = ppm, after
	}
	for _, f := range b.FaultsNamed(FaultNodeDown) {
		m, err := nicMask(f, b)
		if err != nil {
			return err
		}
		after, err := paramInt(f, "after_slots", 0)
		if err != nil {
			return err
		}
		x.downMask |= m
		x.downAll = x.downAll || m == 1<<nicsPerBoard-1
		x.downAfter = after
	}
	for _, f := range b.FaultsNamed(FaultLinkDown) {
		_, port, _ := strings.Cut(f.Link, ":")
		after, err := paramInt(f, "after_slots", 0)
		if err != nil {
			return err
		}
		for i, p := range b.Ports() {
			if i < nicsPerBoard && p.Name == port {
				x.linkDownAfter[i] = after
			}
		}
	}
	return nil
}

// drift is the clock error the clock-drift fault has built up by rack time
// t, in ps: the board loses the frequency lock driftAfter slots after the
// bootstrap of the current run.
func (x *deviceFaults) drift(f *fabric, t int64) float64 {
	if x.driftPPM == 0 || f.run == nil {
		return 0
	}
	on := f.run.tbAbs + x.driftAfter*f.run.nomSlotPS
	if t <= on {
		return 0
	}
	return x.driftPPM * 1e-6 * float64(t-on)
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

func paramFloat(f labconfig.Fault, key string, def float64) (float64, error) {
	s, ok := paramString(f, key)
	if !ok {
		return def, nil
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%s: fault %s: parameter %s=%q is not a number", f.Pos, f.Name, key, s)
	}
	return v, nil
}

// nicMask reads a fault's `nic` parameter: "all" (the default), a cage
// name (sfp2) or a cage index (2).
func nicMask(f labconfig.Fault, b *emu.Board) (uint8, error) {
	s, ok := paramString(f, "nic")
	if !ok || s == "all" || s == "" {
		return 1<<nicsPerBoard - 1, nil
	}
	for i, p := range b.Ports() {
		if i < nicsPerBoard && (p.Name == s || strconv.Itoa(i) == s) {
			return 1 << i, nil
		}
	}
	return 0, fmt.Errorf("%s: fault %s: parameter nic=%q is not a cage of board %s (sfp0..sfp3, 0..3 or all)", f.Pos, f.Name, s, b.Name())
}
