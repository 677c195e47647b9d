// Package prr is the emulated hardware of the parallel round-robin FPGA
// switch (Papaphilippou, Meng, Luk, "High-Performance FPGA Network Switch
// Architecture", FPGA 2020) as the paper validated it on an Ultra96
// (XCZU3EG, §5): a PxP switch whose P groups of P output queues are filled
// through the combined parallel round-robin arbiter (§3.1-§3.2: sorting
// network on {valid, dest}, popcount adder trees, prefix sum, offset
// counters, subtractors, barrel shifters, filters), with the register
// removal parameter S (§4.2) and the simplified output arbiters (§4.4),
// wrapped in the AXI debug peripheral of §5 (software writes a batch of up
// to P packets, a release command inserts it in one cycle, software reads
// the queues back) and a traffic generator for the three traffic models of
// §5.1 with throughput, latency and drop counters.
//
// P, S, the packet width and the FIFO depth are build parameters of the
// bitstream (the manifest's params); the clock is the manifest's
// clock_mhz. Everything is counted in cycles of that clock. Commands run to
// completion inside the register write that starts them, so a runner's
// next read sees final state. The register map is
// bitstreams/catalogue/prr.yaml; docs/prr.md is the programming model.
//
// The package registers itself with the emulator from init: import it (or
// boards/emu/designs) for its side effect.
package prr

import (
	"fmt"
	"strconv"

	"github.com/labrunner/labrunner/boards/emu"
	"github.com/labrunner/labrunner/labconfig"
)

// DesignName is the design this package emulates, as the catalogue names it.
const DesignName = "prr"

// Fault names.
const (
	FaultOffsetSkip        = "offset-skip"
	FaultSortUnstable      = "sort-unstable"
	FaultArbiterOutOfStep  = "arbiter-out-of-step"
	defaultSkipPort        = 0
	defaultSkipValue       = 1
	defaultOutOfStepPort   = 0
	defaultOutOfStepOffset = 1
)

func init() {
	emu.RegisterDesign(DesignName, newDesign)
	emu.RegisterFault(emu.FaultInfo{
		Name: FaultOffsetSkip, Scope: "board", Design: DesignName,
		Params: map[string]string{"port": strconv.Itoa(defaultSkipPort), "value": strconv.Itoa(defaultSkipValue)},
		Check:  emu.Checks(emu.IntIn("port", 0, MaxPorts-1), emu.IntIn("value", 0, MaxPorts-1)),
		Doc: "the offset counter of output `port` (default 0) skips `value` (default 1): an update that would " +
			"leave it at value leaves it at value+1 (mod P), so the next batch for that port starts one queue " +
			"late. Symptoms: after CLEAR_QUEUES, a one-packet batch to the port lands in queue 0 and the next " +
			"one in queue 2 instead of 1 (PLACEMENT, QSTAT, OFFSET read back); random batches soon disagree " +
			"with the golden placement; queue 1 of the group stays short and the group's output arbiter falls " +
			"out of step (packets of the port leave out of order, some stay stranded after a drain)",
	})
	emu.RegisterFault(emu.FaultInfo{
		Name: FaultSortUnstable, Scope: "board", Design: DesignName,
		Doc: "the sorting network's CAS units compare {valid, dest} only and swap equal keys (>= where > was " +
			"meant): packets of one batch with the same destination leave the network out of input order and " +
			"land in each other's queues. Symptoms: a batch with two or more packets for one port reads back " +
			"with those packets permuted across the group's queues (PLACEMENT and QTAGS disagree with the " +
			"golden placement); counts, offsets and drops stay right",
	})
	emu.RegisterFault(emu.FaultInfo{
		Name: FaultArbiterOutOfStep, Scope: "board", Design: DesignName,
		Params: map[string]string{"port": strconv.Itoa(defaultOutOfStepPort), "step": strconv.Itoa(defaultOutOfStepOffset)},
		Check:  emu.Checks(emu.IntIn("port", 0, MaxPorts-1), emu.IntIn("step", 1, MaxPorts-1)),
		Doc: "after every reset (programming, CLEAR_QUEUES, TG start) the output arbiter of `port` (default 0) " +
			"starts `step` queues (default 1) ahead of its group's offset counter instead of with it (ARB_INDEX " +
			"reads step). Symptoms: the port's packets leave out of arrival order (a batch of P packets for " +
			"the port drains as 2nd..Pth then 1st through EGRESS_POP), a batch of fewer than P leaves its " +
			"first packet stranded in queue 0 after DRAIN (QSTAT), and the traffic generator counts order " +
			"errors (TG_ORDER_ERRORS) and stranded packets without any drop",
	})
}

// paramInt reads an integer fault parameter.
func paramInt(f labconfig.Fault, key string, def int) (int, error) {
	v, ok := f.Params[key]
	if !ok || len(v.Values) == 0 {
		return def, nil
	}
	n, err := strconv.Atoi(v.Values[0])
	if err != nil {
		return 0, fmt.Errorf("%s: fault %s: parameter %s = %q is not an integer", f.Pos, f.Name, key, v.Values[0])
	}
	return n, nil
}
