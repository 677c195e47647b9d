// Package prr is the golden model of the parallel round-robin FPGA switch of
// Papaphilippou, Meng and Luk, "High-Performance FPGA Network Switch
// Architecture" (FPGA'20), and of the switches it is compared with — read
// from the paper alone. It never imports the emulator (boards/emu), which is
// a second, independent reading of the same paper. It registers itself with
// package golden as "prr".
//
// It offers three kinds of truth:
//
//   - Switch: the bit-exact placement of a batch of up to P packets in the
//     P×P output queues by the combined parallel round-robin arbiter
//     (§3-§4), and the output arbiters of §4.4, for replaying batches and
//     comparing with the hardware's read-back queues (§5: the Ultra96 AXI
//     peripheral that releases a batch in one cycle and reads it back).
//   - PipelineFor: pipeline length and latency with register removal
//     (§4.1-§4.2, Table 1), port-to-port latency and line throughput (§5.2).
//   - Simulate: cycle simulations of §5.1 — the proposal, a FIFO
//     input-queued switch, and VOQ switches under PIM, RRM, iSLIP, DRRM and
//     EDRRM with one and with log2(P) iterations — under uniform, bursty and
//     nonuniform traffic.
//
// # The arbiter (§3.1-§3.2)
//
// A batch is sorted on {valid, dest} by Batcher's odd-even merge network,
// invalid packets first. P+1 popcounts (invalid packets, packets per port)
// feed a prefix sum whose output d is where port d's packets start in the
// sorted batch. Rotator d turns the whole sorted batch right by
// offset_d − start_d (mod P), which puts port d's first packet on lane
// offset_d; a filter keeps the lanes holding port d's packets, and lane q
// writes queue q of FIFO group d. offset_d then grows by port d's popcount
// (mod P). So the k-th packet for port d in sorted order lands in queue
// (offset_d + k) mod P of group d.
//
// Readings where the paper leaves a choice open (each is a choice the
// emulator's author must also make; the tests pin them):
//
//   - Equal keys. Packets for the same port in one batch leave the sorter
//     in input order: the CAS units order {valid, dest} and, between equal
//     keys, the input index carried below the key (reading P1, §3.2a: a
//     sorting network that mis-orders equal keys is a fault to catch, so
//     the reference order of equal keys is the input order). The k-th packet
//     for port d counted in input order lands in queue (offset_d + k) mod P.
//     The key of an invalid packet includes its dest bits, but they never
//     move a valid packet, so a replay need not reproduce them.
//   - Drops. A packet is dropped when its queue is full ("dropped packets can
//     only occur at the queue level", §3.1); the offset counter advances by
//     the popcount regardless, since it never sees the queues. This is the
//     loss of synchronisation §4.4 mentions.
//   - Output arbiter (§4.4). Port d's arbiter looks only at queue arb_d of
//     group d; it reads a packet and moves to the next queue, or, if that
//     queue is empty, stays. Without drops this serves a group in exactly
//     the order it was written. Offsets and arbiters are 0 after reset.
//
// # Pipeline (§4.1-§4.2)
//
//	latency   = log2P + max(log2P(log2P+1)/2, 2·log2P+1)
//	latency_opt = ⌈(latency − index_comp)/S⌉ + ⌈(1 + index_comp)/S⌉ − 1,  index_comp = log2P
//	latency_p2p = (latency_opt + 1)/f_clk;  Throughput = Width × f_clk  (§5.2)
//
// These reproduce every number of Table 1 (tests check all 8 P × 3 S).
//
// # Simulations (§5.1)
//
// The paper's simulations ignore pipeline latency: every switch runs at the
// same clock with 0-cycle processing. Each cycle a switch first serves what
// was queued before the cycle (one packet per input and per output), then
// takes the cycle's arrivals, dropping a packet whose queue is full. A packet
// served the cycle after its arrival has latency 1, the minimum time in the
// queues (§4.2). Queue depth counts the P×P queues' depth (§5.1); the FIFO
// switch's P queues each get P times that depth, the same total buffer.
// With these rules the 16×16 drop rates at depth 1 and input rate 1 come out
// at the paper's values (§5.1: 5.2% for the proposal, 16.1% for PIM).
//
// Traffic: uniform Bernoulli (§5.1a); bursty (§5.1b) as the three-state
// chain described at trafficGen (Fig. 8's probabilities are not in the
// text); nonuniform (§5.1c): destination = own port number with probability
// p = 0.5, any other port with (1−p)/(P−1).
//
// Schedulers. PIM: random grant, random accept. RRM: grant and accept
// pointers move past every grant and accept, in every iteration. iSLIP: a
// grant pointer moves only when its grant is accepted, and pointers move in
// the first iteration only. DRRM: one request per input from its request
// pointer; pointers move past the match in the first iteration. EDRRM: as
// DRRM, but an output's pointer stays on the input it granted, a refused
// input moves past the output it asked, and a granted input stays on its
// VOQ until serving empties it. FIFO: each output picks uniformly among the
// inputs whose head packet is for it. Multi-iteration versions use log2(P)
// iterations (§5.1).
//
// Simulated figures in Predict come from several seeded replicas; the band
// is a 99% prediction interval for one more run of the same length, so a
// measurement with another seed passes when it agrees within the sampling
// noise at that run length. Latency maxima and zero-drop depths at input
// rate 1 grow with the run length (queues at r = 1 are critically loaded):
// the runner must simulate or measure the same number of cycles. Every
// simulated expectation carries its Budget (the replicas' spread, the floor
// that keeps it from collapsing) and, when wider than ±10%, the reason.
//
// # The §5.1 reproduction (reading P40)
//
// The paper states neither its run length nor its number of runs. Golden
// reproduces all of §5.1 with one: Section51, 16×16 at input rate 1, 25,000
// cycles, seeds 1 to 32, each figure the mean over the runs (a worst case:
// the mean of each run's largest latency, §5.1's "average worst-case"). It
// reproduces the five worst cases of the proposal and PIM within 3.5%, the
// drop rates at depth 1 (5.2%, 16.1%) and Fig. 7's latency ratios; the
// zero-drop depths of Fig. 9 need twice the length. Figures lists each
// number with the paper's (docs/figures.md).
//
// # The worst case at a finite depth (reading P41)
//
// With the build's FIFO depth D, a group that never overflowed is one FIFO
// of at most P·D packets sending one a cycle (GroupDrain): no packet waits
// longer than P·D. A group's first drop finds all its queues full, so the
// packet admitted just before it waits P·D exactly (512 cycles for 16 ports
// and depth 32); longer only once an output arbiter stalls on a queue a drop
// left short (§4.4). With SimConfig.Drain a run goes on serving after its
// cycles as the traffic generator does, and SimResult.DrainMax counts the
// packets it delivers then; without it a group that overflows late has its
// longest waits cut off by the run's end. A 16×16 run of 30,000 cycles at
// input rate 1, depth 32, drained: uniform traffic drops in 1448 of 20,000
// seeds, each reading 512 exactly, the others 231-512 (median 386); bursty
// traffic drops in every run, 19,986 of 20,000 reading 512 and 14 more
// after a stall (513-641). A run's worst case is a mixture, and its band is
// one (selftest/prr worstBand): the no-drop replicas' interval stopped at
// P·D, and the drop replicas' values. At small depths stalls dominate (depth
// 4, bursty: 143-442 cycles against P·D = 64), so P·D is no bound after a
// drop in general.
//
// # The mean below saturation (reading P42)
//
// Below saturation a group that never overflows is a discrete-time output
// queue fed by a batch of A packets a cycle: its mean latency is
// E[A(A−1)] / (2λ(1−λ)) + 1 cycles (16 ports at input rate 0.9: 5.219
// uniform, 4.300 nonuniform; the simulation gives 5.20 and 4.29), and one
// run of 30,000 cycles spreads 1.2-1.3% (one sd) around it, against about
// 7% at input rate 1. SimResult.DrainedAvgLatency counts the drained
// packets too, as the traffic generator does.
//
// # Faults the expectations catch
//
// The placement texts (Switch) catch sort-unstable (equal keys out of input
// order), offset-skip (a batch one queue late) and arbiter-out-of-step
// (departures out of fill order, packets stranded); the pipeline figures
// catch a build with other stages or latency; throughput at the declared
// clock catches a slow clock; the §5.1 bands catch a switch that serves its
// groups differently (an arbiter out of step raises the worst case and
// strands packets). At a finite depth the worst case's band ends at P·D:
// an output arbiter slower than a packet a cycle (prr-arbiter-bubble: 520
// cycles to drain a full group of 512) fails it from above, queues one
// entry short (496 when every replica reads 512) from below. The mean
// latency at input rate 0.9 catches an output arbiter 15 queues ahead of
// its fill (its port's packets wait about 15 cycles more: a cycle, 16%, on
// the mean over all ports)
// that input rate 1's band passes. Drop rates at depth 1 tell the proposal
// (5.2%) from a VOQ switch (16.1%).
package prr
