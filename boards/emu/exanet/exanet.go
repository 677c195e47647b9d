// Package exanet is the emulated hardware of the ExaNet network IP (ExaNet,
// ParCo 2017, §3-§4): the APErouter (3 intra-tile and 2 inter-tile ports,
// Dimension-Ordered Routing, two virtual channels, virtual cut-through,
// round-robin or fixed-priority arbitration), two APElink TCLs (Magic/Start
// framing, header ECC, payload CRC32, credits with a programmable threshold)
// over Aurora 64B/66B at 10 Gb/s, the 128-bit datapath at 156.25 MHz, the
// KARMA intra-tile port access, the self-test IPs (Traffic Generator,
// Consumer, Performance Counter), a ping-pong engine replaying the KARMA
// user-space ping-pong with hardware timestamps, and router tracing.
//
// Boards programmed with the exanet bitstream run it. The boards of one
// cabled set share a fabric (Rack.Shared("exanet/fabric/...")) simulated in
// cycles, each board on its own oscillator. A register write that starts
// activity simulates the fabric to quiescence before it returns, so the
// runner's polls over a slow bus see final counters. The register map is
// bitstreams/catalogue/exanet.yaml; docs/exanet.md is the programming model,
// the formats, the timing model and the faults.
//
// The package registers itself with the emulator from init: import it (or
// boards/emu/designs) for its side effect.
package exanet

import "github.com/labrunner/labrunner/boards/emu"

// DesignName is the design this package emulates, as the catalogue names it.
const DesignName = "exanet"

func init() {
	emu.RegisterDesign(DesignName, newDesign)
	emu.RegisterFault(emu.FaultInfo{
		Name: "credit-leak", Scope: "link", Design: DesignName,
		Params: map[string]string{"every": "64"},
		Check:  emu.Checks(emu.IntIn("every", 1, 1<<30)),
		Doc: "the APElink receivers on this cable fail to return one credit every `every` words they free " +
			"(default 64): available credit drains until transmission stalls at the threshold. Symptoms: " +
			"CREDITS stays below CREDIT_MAX after traffic, LINK_STATUS.CREDIT_STALL is set and " +
			"LINK_STALL_CYCLES grows on the transmitting side; a link bandwidth test of 2000 x 512 B stalls " +
			"(TG_STATUS.STALLED) or delivers fewer packets than were sent",
	})
	emu.RegisterFault(emu.FaultInfo{
		Name: "dor-misroute", Scope: "board", Design: DesignName,
		Doc: "the board's router evaluates the dimensions in the reverse of DOR_ORDER (it ignores the " +
			"configured order): packets still arrive, but the router traces show paths that are not " +
			"dimension-ordered (on a 2x2 mesh with order XYZ, a packet from (0,0) to (1,1) leaves on its Y link)",
	})
	emu.RegisterFault(emu.FaultInfo{
		Name: "link-down", Scope: "link", Design: DesignName,
		Doc: "the cable fails: the Aurora channel never comes up. Symptoms: LINK_STATUS.UP is 0 on both " +
			"ends; traffic routed over it stays in the TX FIFO and the traffic generator stalls (TG_STATUS.STALLED); " +
			"a ping-pong across it times out",
	})
	emu.RegisterFault(emu.FaultInfo{
		Name: "arbiter-starve", Scope: "board", Design: DesignName,
		Params: map[string]string{"port": "1"},
		Check:  emu.Checks(emu.IntIn("port", 0, nPorts-1)),
		Doc: "in round-robin mode the router's arbiters never grant input `port` (default 1; 0-2 intra-tile, " +
			"3-4 links) while another input requests the same output. Symptoms in the two-sender router test " +
			"(TG_SRC_PORTS=3 to one target port): unequal per-source service — CONS_SRC_PACKETS[1] far below " +
			"CONS_SRC_PACKETS[0], the generator stalls with enough packets (2000 x 512 B), and the aggregate " +
			"bandwidth falls from 89.5% toward the single-sender 76%",
	})
	emu.RegisterFault(emu.FaultInfo{
		Name: "header-bit-flip", Scope: "link", Design: DesignName,
		Params: map[string]string{"rate": "0.01"}, Benign: true,
		Check: emu.Checks(emu.FloatIn("rate", 0, 1)),
		Doc: "each header sent over this cable (either direction) suffers a single-bit error with probability " +
			"`rate` (default 0.01). The header ECC must correct them: LINK_ECC_CORRECTED grows on the " +
			"receiving side (and ECC_CORRECTED is set in the delivered headers), while deliveries stay " +
			"correct: no CRC errors, no misdelivered or lost packets",
	})
}
