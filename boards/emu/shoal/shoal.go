// Package shoal is the emulated hardware of the Shoal prototype (Shoal,
// NSDI 2019, §4 and §6.1): eight DE5-Net boards, two running four Shoal NICs
// each (one per SFP+ cage) and six running 4-port layer-1 circuit switches
// cabled as a two-stage leaf-spine (Fig. 2, Fig. 8).
//
// One bitstream ("shoal", bitstreams/catalogue/shoal.yaml) holds both blocks;
// the ROLE register selects the one a board runs, so that one plan drives
// the whole rack. The boards of one cabled set share a fabric
// (Rack.Shared("shoal/fabric/<first board>")) simulated slot by slot on a
// picosecond time base: each NIC transmits one cell per slot (an empty one
// when nothing is queued, §3.3.1) according to its schedule memory; each
// switch applies, every slot after the bootstrap signal reached it, the
// configuration of its schedule memory for that slot (§3.4, §4.1); cells
// cross cables with the lab's delays, the switches' 50-cycle latency and the
// NICs' MAC/PHY latency (§4.1, §6.2), pick up bit errors, and are corrupted
// when they reach a switch outside the guard band. The NICs implement detour
// routing, the congestion control of §3.3.2-3.3.3, failure detection (§3.5),
// cell-corruption recovery (App. D), reassembly by sequence number, a traffic
// generator driven by a flow table, and completion records.
//
// A register write that starts activity (SYNC_CTRL, BOOT_CTRL, RUN_SLOTS,
// TG_CTRL) simulates the fabric before it returns, so the runner's polls see
// final counters; emulated time stands still between such writes. docs/shoal.md
// is the programming model, the formats, the timing model and the faults.
//
// The package registers itself with the emulator from init: import it (or
// boards/emu/designs) for its side effect.
package shoal

import "github.com/labrunner/labrunner/boards/emu"

// DesignName is the design this package emulates, as the catalogue names it.
const DesignName = "shoal"

// Timing of the prototype. Every figure comes from the paper.
const (
	// cyclePS: the design runs at 156.25 MHz, a 6.4 ns cycle (§4).
	cyclePS = 6400
	// reconfCycles: a switch reconfigures in one cycle (§4.1).
	reconfCycles = 1
	// swLatencyCycles: PHY 45 + switching 1 + synchronisation FIFO 4 (§4.1).
	swLatencyCycles = 50
	// nicTxCycles, nicRxCycles: 576 ns of Altera 10G MAC and PHY latency at
	// the two end nodes (§6.2), split evenly between transmit and receive.
	nicTxCycles = 45
	nicRxCycles = 45
	// ccTxCycles, ccRxCycles: routing and congestion control add 4 and 5
	// cycles on the transmit and receive paths (§4.2).
	ccTxCycles = 4
	ccRxCycles = 5
	// macOverheadCycles: 24 B of Altera MAC overhead per slot (§6.1).
	macOverheadCycles = 3
	// bytesPerCycle: 10 Gb/s at 6.4 ns is 64 bits a cycle (§6.1).
	bytesPerCycle = 8
	// headerBytes: the cell header (§3.5, Fig. 5).
	headerBytes = 8
)

// Sizes of this build (manifest params).
const (
	nicsPerBoard  = 4 // one NIC per SFP+ cage (§6.1)
	swPorts       = 4 // 4-port circuit switches (§6.1)
	maxNodes      = 64
	maxSlots      = 256
	flowTableSize = 4096
	recDepth      = 4096
	recWords      = 6
	// reorderWindow: cells a destination buffers ahead of the next
	// expected sequence number (half the 11-bit sequence space).
	reorderWindow = seqMod / 2
	// stallEpochs: a traffic run stops when no cell was delivered and no
	// flow started for this many epochs (the 10-bit feedback field can hold
	// a subflow back 1023).
	stallEpochs = 1100
	// histCap bounds the cells remembered per peer awaiting feedback.
	histCap = 64
)

// Roles a board can run.
const (
	roleNone   = 0
	roleNIC    = 1
	roleSwitch = 2
)

// Fault names.
const (
	FaultWrongSlot       = "wrong-slot"
	FaultIgnoreRateLimit = "ignore-rate-limit"
	FaultClockDrift      = "clock-drift"
	FaultNodeDown        = "shoal-node-down"
	FaultLinkDown        = "shoal-link-down"
)

func init() {
	emu.RegisterDesign(DesignName, newDesign)
	emu.RegisterFault(emu.FaultInfo{
		Name: FaultWrongSlot, Scope: "board", Design: DesignName,
		Params: map[string]string{"offset": "1"}, Needs: []string{"param:role=switch"},
		Check: emu.Checks(emu.IntIn("offset", 0, maxSlots)),
		Doc: "a switch board applies, in slot s of its schedule, the configuration of slot s+offset (default 1). " +
			"Symptoms: the switch's sw_trace window differs from the schedule written to sw_sched (the schedule " +
			"check fails on that switch); cells reach NICs the schedule does not connect in that slot, so the NICs " +
			"count RX_MISROUTED_CELLS and FAILED_SLOTS, infer their peers failed (FAILED_PEERS) and traffic tests " +
			"lose throughput or stall",
	})
	emu.RegisterFault(emu.FaultInfo{
		Name: FaultIgnoreRateLimit, Scope: "board", Design: DesignName,
		Params: map[string]string{"nic": "all"}, Needs: []string{"param:role=nic"},
		Check: emu.Checks(nicCheck),
		Doc: "the NICs of this board (or only cage `nic`, e.g. sfp1) ignore rate-limit feedback: every epoch they " +
			"put a cell of every active flow into the queue of every intermediate node, without waiting for " +
			"feedback, without Eq. 2 and without ready queues. Symptom: queues exceed the bound of Eq. 5 " +
			"(1 + incast degree): MAX_QUEUE at the intermediate nodes and at the faulty NIC grows with the " +
			"flow sizes under incast or random traffic of flows longer than N cells; the queue-bound test fails",
	})
	emu.RegisterFault(emu.FaultInfo{
		Name: FaultClockDrift, Scope: "board", Design: DesignName,
		Params: map[string]string{"ppm": "100", "after_slots": "0"},
		Check:  emu.Checks(emu.FloatIn("ppm", -1e6, 1e6), emu.IntIn("after_slots", 0, 1<<40)),
		Doc: "the board's core clock loses the rack's frequency lock after_slots slots after the bootstrap and " +
			"drifts by ppm parts per million (default 100): after about 3.2 ns / ppm of running (32 us at 100 ppm) " +
			"its cells reach the switches outside the one-cycle guard band (§3.4). Symptoms: SW_MISALIGNED on the " +
			"leaf switch, RX_CORRUPT_CELLS and FAILED_SLOTS at every node receiving from that board, " +
			"retransmissions (TX_RETX_CELLS); once the drift passes half a slot, RX_MISROUTED_CELLS and " +
			"failures inferred (FAILED_PEERS). Time-sync registers still read as synchronised",
	})
	emu.RegisterFault(emu.FaultInfo{
		Name: FaultNodeDown, Scope: "board", Design: DesignName,
		Params: map[string]string{"nic": "all", "after_slots": "0"},
		Check:  emu.Checks(nicCheck, emu.IntIn("after_slots", 0, 1<<40)),
		Doc: "after_slots slots after the bootstrap the board stops: a NIC board's NICs (or only cage `nic`) " +
			"neither send nor receive, a switch board passes nothing. Symptoms (§3.5): the other NICs count " +
			"FAILED_SLOTS for the dead nodes' slots, infer them failed (FAILED_PEERS, symmetric), notify each " +
			"other (NOTICES_RECEIVED) and route around them; flows to the dead nodes never complete",
	})
	emu.RegisterFault(emu.FaultInfo{
		Name: FaultLinkDown, Scope: "link", Design: DesignName,
		Params: map[string]string{"after_slots": "0"},
		Check:  emu.Checks(emu.IntIn("after_slots", 0, 1<<40)),
		Doc: "after_slots slots after the bootstrap the cable fails: nothing crosses it either way. Symptoms " +
			"(§3.5, Table 1): the node pairs whose slot uses the cable miss each other's cells, count " +
			"FAILED_SLOTS and infer each other failed symmetrically (a node-leaf cable isolates its node; a " +
			"leaf-spine cable fails two pairs per slot); traffic between the other pairs continues",
	})
}
