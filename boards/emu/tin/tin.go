// Package tin is the emulated hardware of a TiN-style cell fabric (Aquila,
// NSDI 2022, §2-3 and §6) with the ordering engine of "Light-weight
// protocols for wire-speed ordering" (SC'18, §III-IV) in its RMA endpoint,
// built on ZCU102 boards: each board is one ToR-in-NIC chip with its four
// SFP+ cages as GNet ports, and a set of boards cabled as a small Dragonfly
// (by default two pods of four: three local links and one global link per
// board) forms a Clique.
//
// Each chip (docs/tin.md) holds:
//   - the cell switch, cut-through with §3.1's 20 ns fall-through: six
//     ports (four GNet links, the IP and the 1RMA endpoints), 32 VCs with
//     per-VC input FIFOs under credit flow control,
//     an iSLIP arbiter that honours "busy" for variable cells, output
//     buffers with strict-priority and weighted-round-robin QoS between
//     traffic classes, table-based routing in four modes (§3.1, §3.2);
//   - IP over GNet: RTS/CTS/CTD solicitation, RTS queues per port and class
//     of service, the CTS scheduler with its window, reassembly buffers
//     that land each data cell by the pointer its header carries (RPTR:
//     the CTS's slot and the cell's index, in the SRC field), delivery in
//     RTS order per flow, CTD and ECN thresholds (§3.3);
//   - the 1RMA endpoint: Req and Resp cells (§3.4) and the ordering engine:
//     ordered transfers in slow and fast mode, synchronized transfers,
//     exactly-once delivery (SC'18 §III-C..E);
//   - cell tracing (§6), traffic generators, counters, hardware timestamps,
//     delivery logs and latency samples.
//
// The boards of one cabled set share a fabric (Rack.Shared("tin/fabric/<first
// board>")) simulated event by event on a picosecond time base. A write to
// TG_CTRL runs it to quiescence (or to a budget; CONTINUE carries on) before
// it returns, so the runner's polls see final counters; emulated time stands
// still between such writes.
//
// The package registers itself with the emulator from init: import it (or
// boards/emu/designs) for its side effect.
package tin

import "github.com/labrunner/labrunner/boards/emu"

// DesignName is the design this package emulates, as the catalogue names it.
const DesignName = "tin"

// Timing. Figures from the Aquila paper carry their section; the rest are
// this FPGA design's own choices (docs/tin.md, "Timing model").
const (
	// cyclePS: the switch core runs at 250 MHz (this design).
	cyclePS = 4000
	// xbarBytes: the crossbar moves 64 B per cycle per port (this design),
	// so a 160 B cell keeps its input and output busy 3 cycles.
	xbarBytes = 64
	// A cell's head spends routeCycles in the route pipeline, arbCycles
	// requesting the crossbar (the iSLIP request-grant-accept cycle) and one
	// cycle crossing it: the core switch's fall-through latency of 20 ns
	// (§3.1: "The fall through latency of the core cell switch is 20ns").
	routeCycles       = 3
	arbCycles         = 1
	fallThroughCycles = routeCycles + arbCycles + 1
	// requestPS: from a cell's head entering the input FIFO to the earliest
	// crossbar grant (the end of its arbitration cycle).
	requestPS = (routeCycles + arbCycles) * cyclePS
	// fallThroughPS: the switch is cut-through and its core a fixed-latency
	// pipeline: no byte of a cell, head or tail, leaves the output earlier
	// than this after it entered the input (docs/tin.md, "Timing model").
	fallThroughPS = fallThroughCycles * cyclePS
	// pcsPS: transmit plus receive PHY/PCS of a GNet link. §3.1 gives 40 ns
	// per hop without FEC, of which 20 ns is the switch fall-through.
	pcsPS = 20000
	// fecPS: FEC on global links costs 30 ns per hop and 6% of the
	// bandwidth (§3.2).
	fecPS       = 30000
	fecOverhead = 6 // percent
	// linkMbps: GNet link data rate; a 160 B cell serialises in ~50 ns on
	// 25G links (§3.1).
	linkMbps = 25000
	// injectMbps: the IP and RMA endpoints inject (and receive) at
	// 100 Gb/s (§5.1: "an injection rate of 100 Gbps per TiN").
	injectMbps = 100000
)

// Sizes of this build (manifest params; regs_test.go compares them).
const (
	nExt   = 4 // GNet ports: the four SFP+ cages of a ZCU102
	portIP = 4 // switch port of the IP endpoint (intra-chip, §3.1)
	portRM = 5 // switch port of the 1RMA endpoint
	nPorts = 6
	nVC    = 32 // §3.1: "GNet links support 32 Virtual Channels"
	nTC    = 10 // §3.2: 10 traffic classes of 3 routing VCs, 2 escape VCs
	vcsTC  = 3
	// Routing-table reach: pods and TiNs per pod the tables cover.
	maxPods = 8
	maxTins = 8
	nDst    = maxPods * maxTins
	// Routing-table entries per (input port, destination): 8 minimal and
	// 24 non-minimal candidates (§3.2).
	nMin    = 8
	nNonMin = 24
	nRoute  = nMin + nNonMin
	// IP endpoint: 4 ports x 8 classes of service = 32 RTS queues (§3.3).
	ipPorts = 4
	nCoS    = 8
	// Slot tables: the ingress buffer's (12-bit pointers in RTS and CTS)
	// and the egress reassembly buffer's (11-bit: the slot field of a data
	// cell's RPTR, header.go; the CTS's 12-bit field carries values below
	// 2048).
	nIngSlots = 4096
	nEgSlots  = EgressSlots
	// FIFO depths of the collector, logs and latency samples.
	traceDepth = 4096
	logDepth   = 8192
	latDepth   = 8192
	latClasses = 5
)

// Latency-sample classes (LAT_* arrays).
const (
	latIP = iota
	latBurst
	latRMAHi
	latRMALo
	latOrd
)

// Endpoint ids at a TiN: 0 external Ethernet MAC, 1 and 2 the dual-host
// NIC, 3 the control processor (the four IP ports of §3.3), 4 the 1RMA
// engine.
const (
	epRMA = 4
)

// Fault names. Names are global across designs: prefixed where a shorter
// one is taken.
const (
	FaultRTSOvertake    = "tin-rts-overtake"
	FaultCreditLeak     = "tin-credit-leak"
	FaultROBEarly       = "tin-rob-early-release"
	FaultLinkDown       = "tin-link-down"
	FaultAdaptiveStuck  = "tin-adaptive-stuck"
	defaultOvertakeGap  = 4
	defaultLeakCount    = 1
	defaultROBEarlyHold = 1
)

func init() {
	emu.RegisterDesign(DesignName, newDesign)
	emu.RegisterFault(emu.FaultInfo{
		Name: FaultRTSOvertake, Scope: "board", Design: DesignName,
		Params: map[string]string{"every": "4"},
		Check:  emu.Checks(emu.IntIn("every", 2, 1<<30)),
		Doc: "the IP ingress of this board holds back every `every`-th RTS of a flow (default 4) and sends it " +
			"after the flow's next RTS, so that RTS overtakes it (§3.3: RTS arrival defines inter-packet order). " +
			"Symptom: the destination issues CTS, and delivers, in the swapped order: IP_OOO_PKTS counts packets " +
			"delivered behind a later packet of their flow and the IP delivery log shows the sequence inversion; " +
			"the per-flow order test fails",
	})
	emu.RegisterFault(emu.FaultInfo{
		Name: FaultCreditLeak, Scope: "link", Design: DesignName,
		Params: map[string]string{"count": "1", "vc": "any"},
		Check:  emu.Checks(emu.IntIn("count", 0, 1<<30), vcCheck),
		Doc: "the input FIFOs behind this cage (board:port) never return the credits of the first `count` cells " +
			"(default 1) that leave them on VC `vc` (default any VC): a credit that is never returned (§3.1). " +
			"Symptom: once the fabric is at rest the peer's CREDITS for that VC stay below CREDIT_INIT (the " +
			"credit check fails); with a large count the VC runs dry, cells wait behind it for ever (OUTQ_HWM), " +
			"and packets that must cross the link are dropped by IP_FETCH_TIMEOUT_US or IP_REASM_TIMEOUT_US " +
			"(IPG_DROPPED)",
	})
	emu.RegisterFault(emu.FaultInfo{
		Name: FaultROBEarly, Scope: "board", Design: DesignName,
		Params: map[string]string{"hold": "1"},
		Check:  emu.Checks(emu.IntIn("hold", 1, 1<<16)),
		Doc: "the ordering engine's reorder buffer on this (target) board releases the lowest buffered REQ of a " +
			"connection as soon as the connection holds `hold` REQs (default 1: at once) instead of waiting for " +
			"its missing predecessors; the sync operation of a synchronized transfer runs before its data " +
			"(SC'18 §III-D, §III-E). Symptom: the delivery log shows ordered streams executed out of sequence " +
			"and sync operations ahead of data; late predecessors count as ORD_REPLAY_MISS or ORD_DUP_EXECUTED; " +
			"the ordered/synchronized transfer tests fail",
	})
	emu.RegisterFault(emu.FaultInfo{
		Name: FaultLinkDown, Scope: "link", Design: DesignName,
		Params: map[string]string{"after_ns": "0"},
		Check:  emu.Checks(emu.IntIn("after_ns", 0, 1<<40)),
		Doc: "the cable fails after_ns of emulated time into each run (default at once): PHY down ordered sets " +
			"(§3.1) take PORT_STATUS.UP down at both ends, cells on the wire or queued for it are lost " +
			"(LINK_DROPS). Symptom: until the runner rewrites the routing tables (the SDN's job, §4.2) cells " +
			"routed over the link are lost and their packets dropped by the IP timeouts (IPG_DROPPED); " +
			"deterministic routes through it (RTS by default) lose every packet of their source-destination " +
			"pairs; with the link taken out of the tables adaptive routing carries everything around it",
	})
	emu.RegisterFault(emu.FaultInfo{
		Name: FaultAdaptiveStuck, Scope: "board", Design: DesignName,
		Doc: "the adaptive routing unit of this board always picks the first valid candidate of the table " +
			"instead of sampling 2 of 8 minimal and 3 of 24 non-minimal candidates and weighing queue depth " +
			"(§3.2). Symptom: no non-minimal route is ever taken from this board (AR_NONMINIMAL stays 0, traced " +
			"paths never leave the first minimal route) and its fabric RTT under load rises above the golden " +
			"curve",
	})
}
