// Package ordering is the golden model of the ordering protocols of Eberle
// and Dennison, "Light-Weight Protocols for Wire-Speed Ordering" (SC 2018),
// sections III and IV — the paper alone. The TiN-style design's RMA endpoint
// implements them (boards/emu, an independent reading that never imports
// this package, nor this package it).
//
// It offers the reference semantics of every mode as a function of the
// arrival order and loss pattern (Run, Target, CheckLog), and closed-form
// expectations for slow-mode throughput, stream latency by mode and
// reorder-buffer sizing (Net, ROBCapacity).
//
// # Reference semantics (§III)
//
// Run plays streams from source endpoints to one target through a Network
// that chooses, step by step, which packet in flight arrives next, which is
// lost, and when a timeout fires; when the network has nothing more to say
// the run drains in order without loss. The reference source and target
// follow §III:
//
//   - Slow mode (§III-D1): one outstanding REQ; the next only after the
//     previous one's ACK. Without a connection the target executes a slow
//     REQ at once, so a REQ whose ACK was lost executes again when resent
//     (Fig. 4, "acceptable as exactly-once delivery was not specified").
//   - Fast mode (§III-D2): REQs carry CID and SEQ, the first SYN; the first
//     REQ received opens the target connection {source, CID} whether it has
//     SYN or not; REQs that arrive early wait in the reorder buffer; ACKs
//     may return out of order; FIN/FIN-ACK closes the connection once every
//     REQ is acknowledged and no copy can still be in the network.
//   - Exactly-once (EOD, §III-D3): a duplicate of an executed REQ is
//     answered from the replay buffer and not executed. Without EOD a
//     duplicate is executed again (the paper detects duplicates only with
//     the option, §III-C).
//   - Synchronized transfers (§III-E): data REQs execute on arrival; the
//     synchronization operation (the last REQ, always EOD, CNT = REQs in the
//     transfer) waits in the reorder buffer until CNT-1 distinct data REQs
//     have executed. Counting distinct SEQs, not ACKs, keeps a duplicated
//     data REQ from releasing it early.
//   - Resources (§III-C, §IV-D): Conns receiver connections and a reorder
//     buffer of ROB packets shared by all connections. A REQ that finds the
//     buffer full is NACKed and resent; a REQ that finds no free connection
//     is NACKed and its stream falls back: an ordered stream to slow mode, a
//     synchronized one to source-side synchronization (data unordered, the
//     operation sent with CNT = 1 once every data ACK is in). A stream with
//     exactly-once delivery keeps needing a connection (its duplicates are
//     detected there). A source without a free connection of its own runs
//     a fast stream without EOD in slow mode; its other streams that need
//     one wait for it.
//
// Where the paper leaves corner cases out (§III-D footnote 8), the model
// completes them so that every run terminates with the guarantees intact
// (FuzzRun): a slow REQ found on an existing connection advances it to its
// SEQ (the source sends it only when every earlier REQ is acknowledged); a
// copy of a REQ already buffered is merged with it; a FIN for a closed
// connection is answered again; a timeout fires only for a REQ with no copy
// and no answer left in the network (the fixed packet lifetime of §III-B),
// including one held in the reorder buffer. Where an emulated target may
// legitimately differ (re-executing or not a non-EOD duplicate it can
// detect), judge its log with CheckLog, which checks what §III guarantees
// rather than the exact order.
//
// # Over a simulated network (§IV)
//
// RunNet plays streams of the same reference sources and targets over a
// golden/tin Fabric in simulated time: REQs, ACKs, NACKs and FIN/FIN-ACK
// are packets routed through the network, so reordering, reorder-buffer
// occupancy and connection use come out of its routing and queues. SC18
// runs §IV's experiments on the 1,056-node Dragonfly (tin.SC18Dragonfly,
// PAR routing; readings O1-O7): Fig. 8(a) and 8(b) (accepted load and
// stream latency by mode), Fig. 9 (granularity), Fig. 10 (synchronization),
// Fig. 11 and 12 (reorder buffer and connections), and Sizing, the
// reorder buffer and window from the simulated skew, which Predict's
// ordering.rob.capacity and ordering.window use by default (skew_ns=sim).
// Each figure is a golden/figure.Figure whose checks put the simulated
// value next to the paper's; `labrunner golden simulate sc18` writes them.
//
// # Text form of a delivery log
//
// The order of executions in target memory, comma-separated, REQs counted
// from 1 as the paper's figures do: "1,2,2" (Fig. 4). With several streams
// each entry is "stream.REQ", streams counted from 0: "0.1,1.1,0.2". A
// synchronized transfer's operation is its last REQ. ParseLog reads it.
//
// # Closed forms (§III-A, §IV)
//
// With D the path latency, Tp the time of a REQ on a link and Ta that of an
// ACK (§IV: D = 40 + 500 + 40 ns, 16-flit REQs at 1 flit/ns; the ACK size is
// not given and taken as 1 flit), and no endpoint delay (§IV-A):
//
//	RTT         = Tp + D + Ta + D                      slow mode's period
//	slow rate   = 1/RTT                                "less than 1/RTT" (§III-A)
//	latency(n)  = n·Tp + D                             unordered, fast, sync-target
//	            = (n-1)·RTT + Tp + D                   slow
//	            = n·Tp + 3·D + Ta                      sync-source (flush)
//	ROB         = ceil(skew / Tp) + switch allowance   §IV-D: ceil(500/16) + 20 = 52 (the paper: 30 + 20 = 50)
//	window      = ROB / 2                              Fig. 12c
//
// # Metrics
//
//	ordering.latency       {mode, n}  ns, unloaded stream latency of n REQs (±5%); mode: unordered, slow,
//	                                  fast, sync-source, sync-target (§IV-A Fig. 8b, §IV-C Fig. 10)
//	ordering.slow.rtt      {}         ns, slow mode's round trip (±5%)
//	ordering.slow.rate     {}         REQ/µs of a slow stream: [0.5, 1.02] × 1/RTT (at most one per RTT)
//	ordering.throughput    {mode}     fraction of link: slow [0.5, 1.02] × Tp/RTT; fast and unordered [0.9, 1]
//	ordering.rob.capacity  {}         packets, the skew-sized reorder buffer (exact)
//	ordering.rob.occupancy {}         packets, peak occupancy measured under a test: [0, capacity]
//	ordering.window        {}         REQs outstanding per sender connection: capacity / 2 (exact)
//	ordering.connections   {conns}    active receiver connections: [0, conns]
//	ordering.delivery      {case}     Text: the delivery log of a hand-worked case (exact)
//	ordering.executions    {case}     executions in target memory (exact)
//	ordering.duplicates    {case}     executions beyond a REQ's first (exact)
//	ordering.replays       {case}     duplicates answered from a replay buffer (exact)
//	ordering.nacks         {case}     REQs NACKed (exact)
//	ordering.rob.peak      {case}     peak reorder buffer occupancy (exact)
//	ordering.fallbacks     {case}     streams that fell back to slow mode (exact)
//
// The cases: fig4 (slow mode, ACK 2 lost), fig5 (fast mode, REQ 1 last),
// fig6 (exactly-once, ACK 2 lost), fig7 (synchronized transfer, CNT = 4),
// robfull (reorder buffer of 2 overflowing), fallback (three fast streams,
// two receiver connections), and "custom" from the parameters mode, n,
// arrivals, lost, lost_acks, eod, rob, window and conns.
package ordering
