package exanet

// The figures of the hardware model. Each says where it comes from: a
// section of the ExaNet paper (Large scale low power computing system, ParCo 2017), a
// public datasheet, or a calibration whose target is a figure of the paper.
// docs/exanet.md explains how the calibrated latencies reproduce the
// paper's measurements as a consequence of the pipeline, not by lookup.

const (
	// clockKHz: the ExaNet Network IP and the APEphy run at 156.25 MHz "in
	// order to achieve 10 Gbps on the serial side" (§4).
	clockKHz = 156250
	// periodFS is one core-clock cycle, 6.4 ns, in femtoseconds.
	periodFS = 6_400_000

	// datapathBits: one 128-bit word per cycle inside the router (§4:
	// "the 128-bit bus operating at 156.25 MHz").
	datapathBits = 128

	nIntra = 3 // intra-tile ports (§4: a 3x2 APErouter)
	nLinks = 2 // inter-tile ports: the two SFP+ cages of the TEBF0808 (§3.1)
	nPorts = nIntra + nLinks
	nVCs   = 2 // two virtual channels per physical channel (§3.3)

	// FIFO sizes of the Switch Ports (§3.3): header/footer FIFOs are
	// 128 x 128 bit, the intra-tile payload FIFOs 4096 x 128 bit (64 KB),
	// the inter-tile payload FIFOs 1024 x 128 bit (16 KB).
	hdrFIFO         = 128
	intraPayload128 = 4096
	intraPayload32  = 4 * intraPayload128 // the ARM side sees 32-bit words
	linkPayload     = 1024

	// maxPayload: "the maximum payload size is 256÷512 bytes" (§3.2); this
	// build takes 512.
	maxPayload = 512
)

// Router pipeline, in core-clock cycles. The paper attributes the router's
// 76% efficiency at 512 B to "the unoptimized pipeline of the APERouter"
// (§4.3) without listing its stages; these are the stages of §3.3 (switch
// port FIFO, router, arbiter, switch gate) with latencies chosen so that the
// mechanism reproduces both §4.3 figures (Fig. 9):
//
//   - one sender: an input port handles one packet every
//     fetch+route+arb+gate+(2+W)+release+1 = 2+3+1+1+34+1+1 = 42 cycles for
//     W = 32 payload words, so 32/42 = 76.2% of peak (paper: 76%);
//   - two senders to one output: the arbiter hands the output over in the
//     cycle it is released, with the other input already routed, so the
//     output is busy arb+gate+(2+W)+release = 1+1+34 = 36 cycles a packet,
//     32/36 = 88.9% (paper: 89.5%).
const (
	fetchCycles   = 2 // header FIFO read latency once the packet is at the head
	routeCycles   = 3 // DOR: offsets, dimension order, port lookup (§3.3)
	arbCycles     = 1 // the arbiter registers its grant (§3.3)
	gateCycles    = 1 // the switch gate connects the input to the crossbar (§3.3)
	releaseCycles = 1 // the output is freed one cycle after the footer
)

// APElink (§3.4) and the Aurora 64B/66B transceiver, in core-clock cycles.
// The wire carries one 64-bit block per cycle (10 Gb/s at 156.25 MHz, §4),
// so a 128-bit word takes 2 cycles.
const (
	wireCyclesPerWord = 2
	// framingCycles: "two words — Magic/Start — ... their transmission
	// takes 2 clock cycles only" (§3.4).
	framingCycles = 2
	// sepCycles: Aurora 64B/66B ends a frame whose length is a multiple of 8
	// bytes with a separator block carrying no data (Aurora 64B/66B protocol,
	// Xilinx PG074 "Framing Efficiency"): one more cycle per packet. With it
	// a 512-byte packet takes 2+2+64+2+1 = 71 cycles for 64 cycles of
	// payload: 90.1% of 10 Gb/s (paper §4.3, Fig. 10: 90%).
	sepCycles = 1
	// tclTxCycles: the TCL reads a header from the link TX FIFO.
	tclTxCycles = 1
	// xcvrCycles: TCL encoder + Aurora 64B/66B PE + GTH, TX and RX, plus the
	// receive TCL's ECC check: 22 cycles (140.8 ns). Calibrated, with a 1 m
	// cable (5 ns), so that one more hop adds 0.46 µs to a round trip
	// (§4.2); it lies within what the Aurora 64B/66B and GTH pipelines take
	// (Xilinx PG074 "Latency"; PG056 gives the GTHE4 64b/66b fixed path
	// alone as 176 + 125.5 UI ≈ 29 ns at 10.3125 Gb/s).
	xcvrCycles = 22
	// The receive path's elastic buffer and clock-domain crossing (the
	// GTH's variable latency component, Xilinx PG056 "Delay Through the
	// GTHE4 Transceiver") add up to one more cycle, uniformly, drawn per
	// frame: arrivals fall on any phase of the receiver's clock.
	// creditBatch: a receiver returns credit as soon as its transmitter is
	// idle, and at the latest when this many words are owed; each return is
	// one 64-bit block on the reverse wire (LO|FA|MO status rides in it,
	// §3.4).
	creditBatch = 16
)

// KARMA ping-pong (§4.2). The ARM Cortex-A53 runs at 1.5 GHz (§4); the
// user-space ping-pong takes "about 20 clock cycles per word" to read and
// "4 clock cycles per word" to write. These are ARM cycles and ARM words
// (32 bits): reading E3, ExaNet §4 (docs/readings.md). Time on the ARM
// side is counted in fifths of an ARM cycle, so that one core-clock cycle
// is an integer (1500/156.25 = 9.6 ARM cycles = 48 units).
const (
	armUnitsPerCycle = 48  // units per core-clock cycle
	armReadUnits     = 100 // 20 ARM cycles per 32-bit read (§4.2)
	armWriteUnits    = 20  // 4 ARM cycles per 32-bit write (§4.2)
	hdrWords32       = 4   // a 128-bit header is four 32-bit words
	// armJitter: each ARM access takes its nominal time ±2 ARM cycles
	// (uniform); the mean stays the paper's figure.
	armJitter = 10
)

// Give-up limits from the register map (exanet.yaml).
const (
	tgStallCycles = 65536   // TG_STATUS.STALLED: no word moved for 65536 cycles
	ppTimeout     = 1 << 20 // PP_STATUS.TIMEOUT: no reply within 2^20 cycles
	ppMaxIter     = 1024
	ppSampleFIFO  = 1024
	traceEntries  = 1024 // trace FIFO depth, 4 words an entry
)

// Simulation budgets, in core-clock cycles (nominal): a write that starts
// activity simulates at most startBudget; any other access at most
// settleBudget. accessNS is the time one register access takes on the
// emulated bus, so that free-running counters advance between accesses.
const (
	startBudget  = 1 << 22
	settleBudget = 1 << 16
	accessNS     = 1000
)
