// Package bringup is the golden model of rack bring-up, read from the Aquila
// paper (Gibson et al., "Aquila: a unified, low-latency fabric for
// datacenter networks", NSDI 2022) §3.1, §3.5, §4.3, §4.4 and Appendix B,
// and from the Shoal paper (Shrivastav et al., NSDI 2019) §3.4 with the
// figures of §4.1, §6.1 and §7.1 — the papers alone. It never imports the
// emulator (boards/emu), whose MOS/PMOS firmware and TimeSync hardware are
// a second, independent reading of the same sections. It registers itself
// with package golden as "bringup".
//
// A runner calls the plain functions with its lab's topology (Bootstrap,
// Plan.Schedule, Plan.CheckProxy, TimeTree, Tree.Detects, Sync.*,
// Slotting.Plan, PrecisionNS), or Predict with Topology.Params() merged into
// its settings, and scores its bring-up report against the metrics below.
//
// # Bootstrap waves (Aquila §4.4)
//
// The controller first reaches the DCN-connected boards (wave 0); "it uses
// that TiN as a proxy TiN ... to bootstrap a directly connected target TiN
// using the point-to-point low bandwidth PMOS protocol", then uses the
// target as a proxy in turn, "and so on", in "waves originating from the
// TiNs that are directly connected to the DCN". A board's wave is its
// breadth-first distance over the cables from the nearest DCN board, and
// any of its neighbours in the previous wave is an acceptable proxy (the
// paper names no rule to pick one). The wave count includes wave 0.
//
// Faults. A dead board (never answers) gets no wave and proxies for nobody:
// its would-be targets are reached through other neighbours, possibly a
// wave later, and a board every path of which goes through failed boards
// is unreachable. A proxy-dies board bootstraps, then dies the first time
// it relays for a target: it keeps its wave with status died, is no
// acceptable proxy, and its targets are taken over by another neighbour in
// its wave, or later, or not at all. The model expects the fault to fire
// when the board has a neighbour still to bootstrap once its own wave is
// done, because a target "sends DHCP discovery messages over MOS over all
// GNet links, which are trapped by the proxy" (§4.4).
//
// # Bootstrap time (Aquila §3.1, §3.5, §4.4)
//
// A MOS is one 64-bit control ordered set of the 66/64 PCS (§3.1) carrying
// 6 data bytes (§3.5), sent between cells at the lab's MOS rate. The
// papers give no MOS rate, no PMOS format and no configuration size (§4.4
// reports only 3 to 48 minutes per TiN and about 2.5 hours for a full
// Clique, with "several of the waves of bootstrap" simultaneous), so every
// one of those is a parameter the runner passes from its lab; the defaults
// are placeholders, not the paper's.
//
// Assumptions of the cost model (PMOS): a frame is up to pmos_payload data
// bytes plus pmos_overhead framing bytes, padded to 6-byte MOS words; each
// frame is acknowledged by a pmos_ack-byte frame on the reverse direction's
// own MOS channel; at most window frames are unacknowledged; a transmission
// fails when any word of the frame or its ack is lost (mos_loss per word,
// independent), and is repeated rto_us after it was sent (selective
// repeat); retries+1 failures of one frame make the sender give up. A
// board's time is, for Min, every MOS word of its config_bytes at the MOS
// rate plus one ack (no loss, no stall: a lower bound); for Value, the
// transfer with the window's stalls plus the expected retransmissions, each
// costing its frame and the part of the timeout the rest of the window
// does not cover, plus overhead_ms; for Max, the retransmission count
// exceeded once in a million runs, each costing its frame and a whole
// timeout, plus overhead_ms, plus proxy_fail_ms when a neighbour of the
// previous wave dies as a proxy. Max holds only if the MOS link is the
// bottleneck: a runner whose own path to a proxy (a UART bridge) is slower
// must say so in overhead_ms.
//
// Waves overlap (§4.4): a target starts when its first acceptable proxy is
// done (Max: the last one), each proxy bootstraps its targets in parallel
// over their own cables, and a wave's time is when its last board is done,
// counted from the start of the bootstrap (DCN boards take dcn_ms; with
// the default 0, times count from the DCN boards being configured).
// The paper's own figures are consistent with this: a full 48 x 12 Clique
// with DCN boards as in Fig. 6 has four waves, and 3 min for the DCN wave
// plus three in-band waves of 48 min is 147 min, "approximately 2.5 hours"
// (a test checks it).
//
// # TimeSync (Aquila App. B)
//
// Software sets up the time-distribution tree; the model's tree is
// breadth-first from the first primary candidate that is up (the DCN
// boards, then the rest, unless primary is given), so a board's depth is
// its hop distance from the primary and any live neighbour one level up is
// an acceptable parent. Clients forward each update at once, so a client
// at depth d is updated at most an interval plus d waits apart, and the
// hop errors add up along the path. With rho the relative rate error of
// two clocks (2 x drift_ppm when undeclared, |ppm_b - ppm_primary| when
// clock_ppm declares both):
//
//	hop    = tx_err (2.5 ns, App. B.2) + meas_err + asym_max/2 + rho·(wait + chip + cable + phy)
//	bound  = Σ hops + rho·(interval·(1+ppm) + d·wait) + read_err
//	offset ∈ [sys_min - bound, sys_max + bound]
//
// The ≤128 ns wait is counted into the carried time (App. B.2), so it costs
// only the drift while it lasts. sys is the systematic offset of declared
// cable asymmetries the round trip cannot see: the receiver adds half the
// round trip, so a client is off by half the asymmetry per cable, behind
// when the parent-to-client direction is the slow one (-(down - up)/2),
// summed along the path; sys_min/sys_max span the acceptable paths. The
// offset is board time minus primary time. A client whose declared clock
// drifts past valid_threshold_ns in one interval is invalid: every
// message fails the validity check and it signals failure after
// invalid_count of them; its subtree follows its free-running clock and is
// unsynced (no failure signalled, no bound). A failure is detected after
// invalid_count intervals without a valid message (a missing message
// counts as invalid), (N-1)·I to N·I after the failure; software then
// re-roots: a new tree breadth-first from the first candidate still up,
// over the boards and cables left.
//
// # Shoal guard band and slot (Shoal §3.4)
//
// guard = reconfiguration + propagation variability + precision. The rack
// of §7.1: 2.5 ns (§4.1) + 0.2 ns (±2 cm at 5 ns/m, §3.4) + 0.05 ns
// (WhiteRabbit, §3.4) = 2.75 ns. The prototype of §6.1 counts cycles of
// 6.4 ns: a one-cycle reconfiguration, wires of one length and a precision
// under a cycle give "a guard band of one clock cycle" — the model adds a
// cycle only per whole cycle of variability plus precision (frequency-
// locked clocks within a cycle agree on the slot's cycle; §4.1's
// synchronisation FIFOs absorb the phase). The recommended slot carries
// guard + MAC overhead + the whole number of cells nearest to what a 10%
// guard overhead leaves: §6.1's 12 cycles = 76.8 ns (1 guard + 3 MAC + 8 =
// one 64 B cell at 10 Gb/s, 8.3%) and §7.1's 23.25 ns (2.75 + 20.5 ns = one
// 64 B cell at 25 Gb/s, 11.8%), both "around 10%".
//
// # Metrics (the contract with the runner's bring-up report)
//
// Exact (integers: equal; other arithmetic: RelTol 1e-9):
//
//	bringup.waves                           number of waves, wave 0 included
//	bringup.wave {board}                    the board's wave (bootstrapped boards only)
//	bringup.wave.size {wave}                boards bootstrapped in the wave
//	bringup.boards {status}                 boards per status: ok, died, failed, unreachable
//	bringup.proxy {board, proxy}            1 for every acceptable proxy of a board; the runner
//	                                        reports 1 under its own proxy, and a key with no
//	                                        expectation is a proxy outside the golden set
//	bringup.pmos.frame_words                MOS words of a full PMOS frame
//	bringup.pmos.efficiency                 payload share of a full frame's MOS data bytes
//	bringup.pmos.abandon_probability {bytes}  chance PMOS gives up on a transfer (information)
//	bringup.timesync.tree_depth             deepest board of the tree, hops
//	bringup.timesync.depth {board}          hops from the primary
//	bringup.timesync.parent {board, parent} 1 for every acceptable parent (as proxy)
//	bringup.timesync.offset_bound_ns {depth}  the bound at a depth for undeclared clocks and
//	                                        asymmetries (ns), depths 1..tree_depth
//	bringup.timesync.link_delay_ns {link}   half the measured round trip, ns, ±meas_err_ns
//	                                        (cables with a declared latency between live boards)
//	bringup.timesync.detect {board}         1: notices the ts_fail failure; 0: does not;
//	                                        band [0, 1] when it depends on the parent chosen
//	bringup.timesync.reroot.tree_depth, .reroot.depth {board}, .reroot.parent {board, parent}
//	                                        the same after re-rooting (ts_fail given)
//	bringup.shoal.guard_ns, .guard_cycles, .min_slot_ns, .cell_ns, .cells, .slot_ns,
//	bringup.shoal.slot_cycles, .usable_ns, .overhead, .duty_cycle
//	                                        slot arithmetic (shoal given; cycles when clocked)
//
// Text (exact match):
//
//	bringup.status {board}                  ok | died | failed | unreachable (Note: why)
//	bringup.timesync.primary                the primary board ("" when none is up)
//	bringup.timesync.status {board}         primary | synced | invalid | unsynced | down
//	                                        (left out where the model cannot decide)
//	bringup.timesync.reroot.primary, .reroot.status {board}   after re-rooting
//
// Bands (Min/Max; Value is the estimate or the middle; each has a Note):
//
//	bringup.board_ms {board}                in-band board's own bootstrap time, ms
//	bringup.wave_ms {wave}                  wave's last board done, ms from the start (waves ≥ 1)
//	bringup.time_ms                         last board done, ms from the start
//	bringup.pmos.goodput {bytes}            payload rate of a transfer over the MOS data rate
//	                                        (6 B x mos_rate), a fraction: the PMOS benchmark
//	bringup.timesync.offset_ns {board}      board time - primary time, ns (synced boards)
//	bringup.timesync.reroot.offset_ns {board}  the same after re-rooting
//	bringup.timesync.converge_us            primary starts until every client is valid, µs
//	bringup.timesync.drift_detect_us {board}  first update to failure signal of an invalid board, µs
//	bringup.timesync.detect_us {board}      failure (ts_fail) to the board's signal, µs
//	bringup.shoal.precision_ns              [0, the precision the configured guard absorbs], ns
//
// Parameters: see Model.Params (`labrunner golden list`). The topology is
// either links (+ boards, dcn; a cable's latency, asymmetry and MOS loss
// ride on it: "a:sfp0=b:sfp0/5/2/0.01") or the clique shorthand (default
// 2x4 with DCN boards p0t0, p0t2).
//
// # Faults the expectations catch
//
// bringup.status and bringup.wave catch mgmt-never-boots and
// mgmt-proxy-dies (a board failed, or bootstrapped through another proxy);
// bringup.board_ms and bringup.time_ms catch mos-lossy beyond the declared
// loss (retransmissions past the tail) and mos-link-cut (PMOS gives up);
// bringup.timesync.offset_ns catches slow-clock beyond the drift bound and
// tsync-dead (clients fail: bringup.timesync.detect and the re-rooted tree);
// bringup.timesync.link_delay_ns (±2.5 ns) catches link-asymmetric (the
// measured delay is half the added 40 ns above the declared cable), which
// the offset band alone (±25 ns at depth 1, half of it 20 ns) would not.
package bringup
