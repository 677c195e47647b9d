// Package tin is the golden model of the TiN-style cell fabric, read from
// Gibson et al., "Aquila: A unified, low-latency fabric for datacenter
// networks" (NSDI 2022), sections 2, 3 and 6 with the sizes of §4.2 and
// App. A and the evaluation setup of §5.1 — the paper alone. It never imports
// the emulator (boards/emu); the emulated TiN boards are a second,
// independent reading of the same paper.
//
// The runner calls the Go API directly for bit-exact checks (Cells,
// CellsAlign, RespCells, Clique.Routes, PathInSet, ParsePath,
// Clique.CheckDeadlockFree, Simulate) and scores measurements against the
// expectations of Model.Predict (`labrunner golden predict tin`).
//
// # Addresses and paths
//
// A GNet address has three components, pod, TiN and endpoint (§3.2),
// written "p<pod>t<tin>e<endpoint>": p0t1e2 is endpoint 2 of TiN 1 of pod
// 0. A TiN alone is "p0t1". Numbers are decimal without leading zeros.
//
// A path is the text form a runner builds from the traced cells of one
// packet (§6, "cell tracing": every TiN in a traced cell's path samples it):
//
//	path := tin ( "->" tin "[vc" N "]" )*
//	tin  := "p" POD "t" TIN
//
// The first TiN is the source TiN (whose endpoint injected the cell); each
// following element is the next TiN the cell reached, with the VC number,
// 0..31, the cell travelled on over that link (the VC field of the header as
// the receiving TiN sees it). The samples are put in order by the header's
// decrementing hop count. Example, a minimal route from pod 0 to pod 1 in
// the small Clique: "p0t1->p0t0[vc0]->p1t0[vc0]->p1t2[vc1]". A cell between
// endpoints of one TiN has the path "p0t1". Endpoints are not part of the
// path: the route set is keyed by the source and destination addresses.
//
// # Cellification (§3.1, §3.3, §3.4, §6)
//
// Cells are 16..160 bytes with an 8-byte routing header (§3.1). An IP packet
// of L bytes becomes ceil(L/152) data cells: full 160-byte cells of 152 data
// bytes (§6 counts "an 8 byte GNet header for each 160 byte GNet cell", 5%)
// and a last cell with the rest, at least 16 bytes. Data cells are
// "data-only" (§3.3). Cell sizes are rounded up to 8 bytes by default (the
// 66/64-bit PCS carries cells in 64-bit blocks; 16, 48 and 160 are all
// multiples of 8) — the paper states no granularity, so "align" is a
// parameter (1 for byte granularity). RTS, CTS and CTD are 16-byte cells (8 B
// header + 8 B payload, §3.3); a 1RMA Req is 48 bytes (§3.4); a Resp carries
// one PCIe read completion, whose size the paper does not give (parameter
// "completion", default 64 B).
//
// # Per-hop latency (§3.1, §3.2)
//
// Switch fall-through 20 ns; total per hop without FEC 40 ns; FEC adds 30 ns
// per global hop and takes 6% of a global link's bandwidth. Links run at 25
// Gb/s ("~50ns" to serialize 160 B "on 25G links", §3.1). Because 40 ns per
// hop is less than the 51.2 ns a 160-byte cell takes to serialize, the switch
// cuts through: an unloaded cell pays the source switch's fall-through, each
// hop's head latency and its slowest link's serialization once
// (Timing.CellLatency). Cable flight time is the lab's (parameters
// local_prop_ns, global_prop_ns).
//
// # Routes (§3.2)
//
// The Clique is P pods of T TiNs; the TiNs of a pod are fully connected by
// local links, pods by global links. NewClique wires global ports in the
// consecutive arrangement (global port k of pod a goes to pod a+1+(k mod
// (P-1))), which gives the full Clique's "two optical GNet global links
// between any pod pair" (App. A) and, for the 2x4 Clique with one global
// port per TiN, TiN t of pod 0 to TiN t of pod 1. A lab wired differently
// passes its links (parameter "wiring", NewCliqueWired).
//
// Minimal routes: within a pod, the direct local link; between pods, one
// global link joining the two pods directly, with at most one local hop
// before it (to the TiN owning the link) and one after it. Non-minimal
// routes: within a pod, through an intermediate TiN allowed by the turn rule
// (below); between pods, through an intermediate pod (local, global, local,
// global, local at most; Valiant routing in a Dragonfly, Kim et al., the
// paper's [30]). A 2-pod Clique has no intermediate pod, so its inter-pod
// traffic has minimal routes only.
//
// The modes draw from these sets: fully adaptive, minimal and non-minimal
// candidates (the switch samples 2 of up to 8 minimal and 3 of up to 24
// non-minimal table entries and weighs them by queue depth in favour of the
// minimal ones); minimal adaptive, minimal candidates only; deterministic,
// one route of all candidates per (source, destination) address pair by
// hash; minimal deterministic, one minimal route by hash. Which of a large
// Clique's candidates the 8- and 24-entry tables hold is the SDN's choice
// (§4.2), so the golden set holds them all. The hash is not in the paper: the
// golden checks that a hashed mode uses a single path per pair (metric
// tin.route.distinct ≤ 1) and that it lies in the set.
//
// VCs and deadlock freedom: a hop travels on VC 3·class + g, class the
// traffic class 0..9 (10 classes × 3 routing VCs + 2 escape VCs = 32) and g
// the number of global links the cell has already crossed. That is §3.2's
// "the VC is incremented when moving from a global link to a local link",
// and the worst route, non-minimal through an intermediate pod, uses the 3
// routing VCs §3.2 counts. The model also increments when a global link
// follows a global link directly (the TiN reached in the intermediate pod
// may own the onward link): read word for word, §3.2's rule would leave such
// hops on one VC, and the global links of three pods would then close a
// cycle (TestLiteralVCRuleDeadlocks). Inside a pod, two local hops on one VC
// are only taken where the parity-sign turn rule allows (ParitySign: "turn
// rules similar to the parity-sign approach in [20]", García et al., ICPP
// 2013, whose restricted local misrouting rule the model takes). The
// channel dependency graph of every route of a Clique is acyclic
// (Clique.CheckDeadlockFree).
//
// # The fabric simulation (§3.1-§3.3, §5.1)
//
// Fabric is an event-driven, cell-level simulation of any Dragonfly of
// Cliques: switches that cut through with the per-hop latencies above,
// routes computed as cells travel (at most two global links and an
// intra-pod detour: memory grows with the network, not its square), and a
// calendar queue keyed by the nanosecond (a heap only for events more
// than 4 µs ahead). Aquila's switch (SwitchSpec, §3.1) is input queued:
// per-VC input FIFOs of 1280 bytes with credits (reading A4) whose head
// cells alone request the crossbar, "one arbitration request per VC per
// port", so a head whose output is full holds the cells behind it; a
// crossbar whose ports carry one cell at a time (the "busy" signal), at
// twice the endpoint rate for a cell that has arrived whole, until its
// tail is in for one cut through (reading A24); per-VC output buffers of
// two cells (reading A22) served control classes first (RTS and CTS on
// their own VCs, §3.3) and round robin within, one cell at a time and never
// preempted. Its adaptive modes route a cell when it reaches the head of
// its FIFO (reading A23), at each switch of the source pod while the cell
// is still minimal there (reading A20): a minimal candidate costs its
// output buffer's occupancy on the cell's VC, a non-minimal one twice that
// plus a cell (reading A40), the cheapest wins: uncongested traffic stays
// minimal, a congested minimal route spills. A destination in the source's
// pod has, besides the turn rule's two-hop detours, the routes through
// another pod that leave on one of the source's own global links (reading
// A25). The paper's switch has no clock; a design that declares one
// (switch_clock_mhz, from its catalogue entry) has its switches take
// requests and start cells on their own clocks' edges, each at a phase
// drawn per run (reading A28). The same engine runs the
// SC'18 Dragonfly (SC18Dragonfly, PAR routing) and BookSim2's
// configuration of it (BookSimDragonfly) with output-queued routers (no
// SwitchSpec: a cell joins its output's queue as it arrives), and Aquila's
// full Clique with its 1,152 hosts
// (AquilaRack); RunSynthetic drives them with BookSim's traffic and
// definitions (Bernoulli injection, average packet latency, accepted flit
// rate per node per ns).
//
// Simulate runs uniform random IP traffic with Poisson arrivals over a
// Clique: requests of "bytes" at "load" × inject_gbps per TiN, each
// answered by a reply of "reply" bytes; every packet goes RTS, CTS, data
// cells (§3.3), reassembled, then forwarded whole in CTS order per flow over
// the egress's 100 Gb/s host port ("A packet is transmittable at egress
// after receipt of all its data cells", §3.3), delivered when its last byte
// is across (reading A5). The CTS scheduler issues a CTS when the packet's
// cells fit in the egress reassembly buffer, sized as §3.3 says: the port's
// bandwidth-delay product over the fabric round trip plus one packet
// (reading A21); §3.3's optional window of outstanding fetches is
// cts_window (0: none). RTT is from the request entering the source's
// ingress buffer to its reply delivered at the source (the six half round
// trips of §3.4 plus queuing); the one-way latency is to the request's
// delivery. The paper's Fig. 7 figures (sub-20 µs at 70% load on 500
// hosts with host congestion control) are not comparable with a small
// Clique's; the simulation predicts the Clique's own curve. A run without
// Shares whose backlog of undelivered requests still grows over the last
// third of its measured requests (SimResult.Growth beyond SteadyGrowth
// and the backlog's own fluctuation) reached no steady state and is
// flagged Saturated: its latencies are the run's length.
//
// A measured RTT is scored against a band made of its error budget
// (reading A27). Each golden run is one measurement as the test makes it:
// every TiN sends its share of "measured" requests (the measurement's
// samples) from an idle fabric, with its own traffic and its own hash for
// the RTS and CTS routes, which the paper does not give (reading A26). The
// golden value is the statistic's mean over "replicas" runs; the band is
// that ± three standard deviations of the statistic between runs (times
// √(1+1/R) for the mean's own error), the design's 5 ns timestamp cycle
// and 100 ppm of clock. There is no allowance for a design that behaves
// otherwise: the simulation is the paper's fabric. A load that saturates
// the Clique is refused (the 2x4 Clique's four global links carry 4/7 of
// every TiN's uniform traffic; with 25 Gb/s links, a 100 Gb/s injection
// rate and head-of-line waits it saturates between loads 0.3 and 0.35).
// SimResult.Request and Reply split the RTT into its legs (RTS, wait for
// the CTS, CTS, the first data cell, the rest of the packet, host port).
//
// # 1RMA reads (§3.4, §5.1)
//
// SimulateReads runs 1RMA reads over the same fabric (reading A29): every
// TiN issues "rma_count" reads of each size of "reads" at "rma_qps"
// (Poisson, §5.1 Fig. 9's 10,000 QPS) to TiNs drawn at random. A read is
// a 48 B Req (§3.4), the target's PCIe read ("rma_mem_ns"), one Resp cell
// per PCIe completion ("completion" bytes and "resp_tag" bytes more after
// the header) entering the fabric at the endpoint's rate, and the
// initiator's completion "rma_cpl_ns" after the last one; Req and Resp
// route fully adaptively ("rma_mode"), so a read's Resp cells spill onto
// detours. Its execution latency runs from its issue to its completion
// (§5.1). §3.4's "4us end-to-end", "2.5-3us" of it in the fabric, leaves
// at least 1 µs to PCIe, which the defaults put at the target. The band
// of a statistic is A27's (the spread of runs as long as the measurement,
// the timestamp quantum, the clock's ppm) with the lab's cable spread
// ("cable_spread_ns") over the longest minimal read's links and a switch
// clock's cycle at each of its switches; the p99's reaches down further,
// to the 90th percentile of every pair's read alone (PairReads): the
// slowest pairs are those the turn rule gives the fewest detours, which
// other tables would give others (reading A7). ReadLatency is the closed
// form of a read whose cells all take one path.
//
// SimulateReadsBeside runs the same reads beside bulk IP on one fabric
// (reading A30), Fig. 9's other two scenarios: with "rma_bulk_load" set,
// every TiN's IP endpoint sends "rma_bulk_packets" packets of
// "rma_bulk_bytes" (Simulate's RTS/CTS protocol, "cts_window") while its
// 1RMA endpoint issues the reads (§3.1: IP and 1RMA are endpoints of their
// own). High-priority reads travel in a class of their own (ClassHiPri),
// each link sending up to "rma_hipri_weight" of their cells for one of the
// bulk's (§5.1: 8:1); low-priority reads in the bulk's class and VCs. A
// statistic's band is the spread of "rma_bulk_runs" runs (no smaller than
// the bootstrap's over their reads pooled) with the terms of the reads
// alone.
//
// # Metrics
//
// Cells and solicitation:
//
//	tin.cell.count            {bytes}                  cells an IP packet of `bytes` becomes (exact)
//	tin.cell.sizes            {bytes}                  Text: its cell sizes, header included, in order ("160,...,144")
//	tin.cell.wire_bytes       {bytes}                  bytes of its data cells on a link (exact)
//	tin.ip.efficiency         {bytes}                  bytes / (data cells + RTS + CTS) (exact)
//	tin.rts.incast_reduction  {bytes}                  bytes / 16: an RTS incast against a packet incast (§3.3: 64 for 1 KB)
//	tin.rma.resp_cells        {bytes}                  Resp cells of a 1RMA read of `bytes` (exact, given "completion")
//	tin.cell.header_overhead  {}                       8/160 = 0.05 (§6)
//	tin.ip.solicitation_bytes {}                       RTS + CTS = 32 bytes per IP packet (§3.3)
//	tin.rma.req_bytes         {}                       48 (§3.4)
//	tin.ip.half_round_trips   {}                       6 GNet half round trips per IP round trip (§3.4)
//	tin.rma.half_round_trips  {}                       2 per 1RMA read (§3.4)
//
// Latency (unloaded; ±5 ns, cell latency ±(5 ns + 2%)):
//
//	tin.latency.fallthrough   {}                       switch fall-through, ns
//	tin.latency.hop           {link=local|global}      head latency of one hop, ns
//	tin.latency.serialization {link, cell}             cell of 16, 48, 160 bytes on a link, ns (exact)
//	tin.latency.cell          {local, global, cell}    endpoint-to-endpoint latency of a cell over a route
//	                                                    with that many local and global hops, ns (the route
//	                                                    shapes of the routed pairs)
//
// Routes (for every ordered pair of TiNs, endpoint 0, or the src/dst given):
//
//	tin.route.in_set          {src, dst, mode}         share of traced paths in the golden set: 1 (exact);
//	                                                    the Note lists the set (the runner checks with PathInSet)
//	tin.route.distinct        {src, dst, mode}         distinct traced paths: [1, set size]; [1, 1] for hashed modes
//	tin.route.vcs             {clique}                 routing VCs the Clique's routes use (exact)
//
// Clique sizes ({clique=full}: Aquila's 48 × 12 Clique; {clique=PxT}: the
// configured one; exact unless noted):
//
//	tin.clique.pods, tin.clique.tins, tin.clique.hosts, tin.clique.mgmt_cpus, tin.clique.racks,
//	tin.clique.local_links, tin.clique.global_links, tin.clique.global_links_per_pod_pair,
//	tin.clique.pod_pairs, tin.clique.unused_global_ports_per_pod, tin.clique.fibre_bundles,
//	tin.clique.cables_per_bundle, tin.clique.pod_pair_gbps,
//	tin.clique.ip_flows (±5%: §4.2 "approximately 1.9 million" for the product's 1.99 M),
//	tin.clique.ip_flows_indexed, tin.clique.gnet_flows_naive (±5%: the model's decomposition
//	of §4.2's "almost 5 million"; the ~700k of six port classes is not derivable and not predicted)
//
// Fabric simulation (bands, see above):
//
//	tin.fabric.rtt            {load, bytes, stat=mean|p99}  request-to-reply RTT, ns
//	tin.fabric.latency        {load, bytes, stat=mean|p99}  one-way request latency, ns
//	tin.rma.latency_alone     {bytes, stat=p50|p99}         execution latency of 1RMA reads alone, ns
//	tin.rma.latency_bulk      {bytes, priority=hi|lo, stat=p50|p99}
//	                                                        the same reads beside bulk IP, ns
package tin
