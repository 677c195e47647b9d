package tin

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// SimConfig describes one run of the reference fabric simulation: uniform
// random IP traffic with Poisson arrivals (Aquila §5.1, "UR") through
// RTS/CTS solicitation (§3.3) over a Clique.
type SimConfig struct {
	Clique *Clique
	Timing Timing
	Mode   Mode // routing mode of the data cells (RTS and CTS are hashed minimal, §3.3)
	// Load is the offered request load of every TiN as a fraction of its
	// injection rate (Timing.InjectGbps), in (0, 1].
	Load float64
	// Bytes is the IP packet size of a request; ReplyBytes that of the reply
	// the destination sends back at once (0: no replies, and no RTT).
	Bytes, ReplyBytes int
	// Warmup requests are simulated but not measured; Packets are measured.
	Warmup, Packets int
	// Shares: every TiN sends its share of the Warmup + Packets requests
	// (shares differ by one at most) from an idle fabric, as a test's
	// generators do, and stops; otherwise the TiNs send until the Clique
	// has sent them all.
	Shares bool
	// CTSWindow bounds the packet fetches (CTS issued, data not all
	// received) a destination has outstanding, the window §3.3 says the
	// CTS scheduler "may" throttle with; 0: no such window.
	CTSWindow int
	// EgressBytes is the egress reassembly buffer of a destination: a CTS
	// is issued only when the packet's data cells fit in what is free
	// (§3.3). 0: sized as §3.3 says, EgressBDP (reading A21).
	EgressBytes int
	// BufferBytes is the input FIFO of a VC (credits, §3.1); 0: the
	// reading's 1280 bytes (A4).
	BufferBytes int
	// NonMinWeight and NonMinBias weigh the adaptive modes' non-minimal
	// candidates against the minimal ones (reading A40); 0 and 0: the
	// reading's 2 and one full cell.
	NonMinWeight, NonMinBias float64
	Align                    int // cell granularity (CellsAlign)
	// HashSeed picks the hash the RTS and CTS routes are chosen by
	// (FabricConfig.HashSeed).
	HashSeed uint64
	Seed     uint64
	// KeepSamples keeps every measured request's RTT and one-way latency,
	// in the order the requests completed.
	KeepSamples bool
}

// Stats summarises a latency sample in ns.
type Stats struct {
	N                   int
	Mean, P50, P99, Max float64
}

// SimResult is what a run measured.
type SimResult struct {
	// RTT: from a request entering the source's ingress buffer (its RTS is
	// issued at once) to its reply delivered in order to the source's NIC:
	// the six GNet half round trips of §3.4 plus queuing (§5.1 "IP Fabric
	// RTT"). OneWay: request entering the ingress buffer to its in-order
	// delivery at the destination.
	RTT, OneWay Stats
	// RTTSamples and OneWaySamples: with KeepSamples, each measured
	// request's, in completion order.
	RTTSamples, OneWaySamples []float64
	Cells                     int64   // cells simulated
	Events                    int64   // events processed
	SimNs                     float64 // simulated time
	// NonMinimal is the share of data cells routed non-minimally.
	NonMinimal float64
	// EgressBytes is the egress buffer the run used.
	EgressBytes int
	// Saturated: the run did not reach a steady state: the offered load
	// exceeds what the Clique carries, or the warm-up was too short for
	// the fabric to fill. Either way the latencies depend on the run's
	// length and mean nothing (they grow with it).
	Saturated bool
	// Growth is what the backlog of undelivered requests grew by over the
	// last third of the measured requests' generation, as a share of
	// those requests: about 0 in a steady state, the share of the offered
	// load the Clique does not carry when it saturates (without Shares).
	Growth float64
	// Request and Reply: where the measured requests' RTT goes, leg by
	// leg (means over the measured requests and their replies).
	Request, Reply Legs
}

// Legs splits one packet's journey through the protocol of §3.3 into its
// stages, in ns: its RTS from entering the ingress buffer to reaching the
// destination's RTS queue; the wait there for the CTS scheduler; the CTS
// back to the source; the source's pulling the packet as cells until the
// first one lands at the destination; the first to the last cell landing;
// and the last cell landing to the packet delivered in order over the
// host port.
type Legs struct {
	RTS, Queue, CTS, Fetch, Spread, Host float64
}

// Total is the leg's latency.
func (l Legs) Total() float64 { return l.RTS + l.Queue + l.CTS + l.Fetch + l.Spread + l.Host }

func (l *Legs) add(p *ipPacket, deliveredAt float64, w float64) {
	l.RTS += w * (p.rtsAt - p.created)
	l.Queue += w * (p.ctsIssued - p.rtsAt)
	l.CTS += w * (p.ctsAt - p.ctsIssued)
	l.Fetch += w * (p.firstAt - p.ctsAt)
	l.Spread += w * (p.lastAt - p.firstAt)
	l.Host += w * (deliveredAt - p.lastAt)
}

// Limits of a simulation run: the fabric's endpoints bound the Clique
// (MaxFabricEndpoints), the packets the run's length.
const MaxSimPackets = 5_000_000

// ZeroLoad is a load low enough for a run to see an idle fabric (tests and
// the unloaded figures).
const ZeroLoad = 0.001

// Reading A40's weighing of a non-minimal candidate: twice its output's
// occupancy plus one full cell.
const (
	AquilaNonMinWeight = 2
	AquilaNonMinBias   = MaxCell
)

// DefaultBufferBytes is the depth of a VC input FIFO the simulation takes
// (reading A4: 8 full cells).
const DefaultBufferBytes = 8 * MaxCell

// DefaultOutputBytes is the depth of a VC's output buffer (reading A22:
// two full cells, one going out on the link while the next crosses the
// crossbar behind it).
const DefaultOutputBytes = 2 * MaxCell

// CrossbarSpeedup is how much faster than an endpoint port the crossbar
// moves a cell that has arrived whole (reading A24: twice).
const CrossbarSpeedup = 2

func (cfg *SimConfig) check() error {
	if err := checkFabricConfig(cfg.Clique, cfg.Timing, cfg.Mode, cfg.BufferBytes, cfg.NonMinWeight, cfg.NonMinBias, ""); err != nil {
		return err
	}
	if math.IsNaN(cfg.Load) || cfg.Load <= 0 || cfg.Load > 1 {
		return fmt.Errorf("tin: offered load %g: want 0 < load <= 1 (a fraction of the %g Gb/s injection rate)", cfg.Load, cfg.Timing.InjectGbps)
	}
	if cfg.Bytes < 1 || cfg.Bytes > MaxPacket || cfg.ReplyBytes < 0 || cfg.ReplyBytes > MaxPacket {
		return fmt.Errorf("tin: packet sizes %d and reply %d bytes: want 1..%d (reply 0: none)", cfg.Bytes, cfg.ReplyBytes, MaxPacket)
	}
	if cfg.Packets < 1 || cfg.Warmup < 0 || cfg.Packets+cfg.Warmup > MaxSimPackets {
		return fmt.Errorf("tin: %d measured and %d warm-up requests: want at least 1 measured, at most %d in all", cfg.Packets, cfg.Warmup, MaxSimPackets)
	}
	if cfg.CTSWindow < 0 || cfg.CTSWindow > 1<<16 {
		return fmt.Errorf("tin: CTS window %d: want 0 (none) or 1..65536 outstanding packet fetches", cfg.CTSWindow)
	}
	if cfg.EgressBytes < 0 || cfg.EgressBytes > 1<<30 {
		return fmt.Errorf("tin: egress buffer of %d bytes: want 0 (sized by §3.3) or up to 1 GiB", cfg.EgressBytes)
	}
	return checkAlign(cfg.Align)
}

// checkFabricConfig checks what every simulation on the Clique's fabric
// takes (what names the run in errors: "" or "reads on ").
func checkFabricConfig(c *Clique, t Timing, mode Mode, buffer int, weight, bias float64, what string) error {
	if c == nil {
		return fmt.Errorf("tin: simulating %sa Clique: no Clique given", what)
	}
	if n := c.Pods * c.TiNs; n < 2 || n > MaxFabricEndpoints {
		return fmt.Errorf("tin: simulating %sa Clique of %d TiNs: want 2..%d", what, n, MaxFabricEndpoints)
	}
	if err := t.Check(); err != nil {
		return err
	}
	if mode < FullyAdaptive || mode > MinimalDeterministic {
		return fmt.Errorf("tin: routing mode %d is not one of the four of Aquila §3.2", int(mode))
	}
	if buffer < 0 || buffer > 0 && buffer < MaxCell {
		return fmt.Errorf("tin: VC buffer of %d bytes: want 0 (reading A4) or at least one %d-byte cell", buffer, MaxCell)
	}
	if math.IsNaN(weight) || weight < 0 || math.IsNaN(bias) || bias < 0 {
		return fmt.Errorf("tin: non-minimal weight %g and bias %g: want 0 or more (0 and 0: reading A40's 2 and %d bytes)", weight, bias, MaxCell)
	}
	return nil
}

// fabricDefaults gives a simulation's fabric the reference values where
// its configuration leaves them 0 (readings A4, A40).
func fabricDefaults(buffer *int, weight, bias *float64) {
	if *buffer == 0 {
		*buffer = DefaultBufferBytes
	}
	if *weight == 0 && *bias == 0 {
		*weight, *bias = AquilaNonMinWeight, AquilaNonMinBias
	}
}

// AquilaFabric returns the fabric configuration of a Clique of TiNs as the
// reference simulation runs it: one IP endpoint per TiN at the injection
// rate, switches cutting through with the §3.1/§3.2 per-hop latencies, VC
// FIFOs of buffer bytes with credits, VCs numbered by global links crossed.
func AquilaFabric(c *Clique, t Timing, buffer int, weight, bias float64, endpoints int, epGbps float64, seed uint64) FabricConfig {
	return FabricConfig{
		Clique: c, Endpoints: endpoints,
		Inject:      LinkSpec{LatencyNs: t.FallThroughNs, BytesPerNs: epGbps / 8},
		Eject:       LinkSpec{LatencyNs: 0, BytesPerNs: epGbps / 8},
		Local:       LinkSpec{LatencyNs: t.HopLatency(Local), BytesPerNs: t.LinkBytesPerNs(Local)},
		Global:      LinkSpec{LatencyNs: t.HopLatency(Global), BytesPerNs: t.LinkBytesPerNs(Global)},
		BufferBytes: buffer, Levels: RoutingVCs, Rule: LevelGlobals, NonMinWeight: weight, NonMinBias: bias, Seed: seed,
		Switch: &SwitchSpec{FallThroughNs: t.FallThroughNs, OutputBytes: DefaultOutputBytes, CrossbarBytesPerNs: CrossbarSpeedup * t.InjectBytesPerNs(),
			ClockNs: t.SwitchClockNs},
	}
}

// EgressBDP is the egress reassembly buffer §3.3 describes: "the bandwidth
// delay product of the output port bandwidth and the cell fabric round
// trip delay, plus an allowance for packet reordering delays" (reading
// A21). The round trip is a CTS over the Clique's longest minimal route and
// the largest packet's cells back over its longest route, serialised on
// one link (they may all take one path); the allowance for reordering is
// as much again (a detour can bring a packet's last cell a round trip
// late), and one packet more, so that any packet can always be fetched.
func EgressBDP(c *Clique, t Timing, maxPacket, align int) int {
	shape := func(kinds ...LinkKind) Path {
		p := Path{}
		for _, k := range kinds {
			p.Hops = append(p.Hops, Hop{Kind: k})
		}
		return p
	}
	longMin, longAny := shape(Local), shape(Local)
	if c.TiNs > 2 {
		longAny = shape(Local, Local) // an intra-pod detour
	}
	if c.Pods > 1 {
		longMin, longAny = shape(Local, Global, Local), shape(Local, Global, Local)
	}
	if c.Pods > 2 {
		longAny = shape(Local, Global, Local, Global, Local)
	}
	cells, _ := CellsAlign(maxPacket, align)
	wire := Sum(cells)
	rt := t.CellLatency(longMin, ControlCell) + t.CellLatency(longAny, MaxCell) + float64(wire-MaxCell)/t.LinkBytesPerNs(Global)
	return int(math.Ceil(2*rt*t.InjectBytesPerNs())) + wire
}

type ipPacket struct {
	src, dst  int32
	bytes     int32
	wire      int32 // bytes of its data cells
	created   float64
	complete  bool
	measured  bool
	isReply   bool
	request   int32 // for a reply: its request
	delivered bool
	// when its RTS reached the destination, its CTS was issued and reached
	// the source, its first and last data cells landed (Legs)
	rtsAt, ctsIssued, ctsAt, firstAt, lastAt, deliveredAt float64
}

// kinds of fabric packets of the IP protocol, in Packet.Tag's low bits
const (
	ipRTS = iota
	ipCTS
	ipData
)

// Fabric classes of the IP protocol's cells: RTS cells "are carried on
// their own VCs, allowing them to be sent at high priority" (§3.3), CTS
// cells on others, at high priority too (§6: "the RTS/CTS cells get high
// priority through the GNet network").
const (
	classData = 0
	classRTS  = 1
	classCTS  = 2
)

// timer tags
const (
	tmGen  = 0 // request generation at a TiN
	tmHost = 1 // a packet has crossed the egress's host port
)

type sim struct {
	cfg   SimConfig
	f     *Fabric
	n     int
	rng   *rand.Rand
	pkts  []ipPacket
	alg   Algorithm
	sizes map[int32][]int
	// egress state per destination TiN
	rtsQ        []ring[int32]
	outstanding []int
	egressFree  []int
	egressCap   int
	flowQ       map[int64]*ring[int32] // per (source, destination) TiN pair: packets in CTS order
	hostFree    []float64              // when each TiN's host port is free again
	lambda      float64                // requests per ns per TiN
	generated   int
	sent        []int // with Shares: requests each TiN has sent
	delivered   int   // requests delivered
	doneN       int   // measured requests finished (reply delivered, or delivered without replies)
	half        int
	thirds      [3]int // the backlog when the measured requests' generation was a third and two thirds done, and at its end
	rtt, oneway []float64
	legs        []int32 // measured requests whose reply was delivered
	result      SimResult
	// Beside other traffic on the same fabric (SimulateReadsBeside): the
	// endpoints and timers this simulation's are among, and no stopping
	// the fabric when its requests are done.
	ep     epMap
	shared bool
}

// epMap places one traffic's endpoints and timers among others' on a
// shared Fabric: TiN t's endpoint is t·stride + off (stride 0: t), and its
// timer tags are shifted left by shift with mark in the bits freed.
type epMap struct {
	stride, off int32
	shift       uint
	mark        int64
}

func (m epMap) of(t int32) int32 {
	if m.stride == 0 {
		return t
	}
	return t*m.stride + m.off
}

func (s *sim) at(t Time, tag int64) { s.f.At(t, tag<<s.ep.shift|s.ep.mark) }

// Simulate runs the reference simulation of IP traffic over the TiN fabric.
//
// The model: every TiN's IP endpoint sends requests of cfg.Bytes to a
// uniformly random other TiN with Poisson arrivals at cfg.Load of its
// injection rate. A request issues its RTS at once (16 B, control class,
// hashed minimal route); the destination queues RTSs in arrival order (one
// RTS queue: one port, one class of service) and its CTS scheduler issues a
// CTS (16 B, control class) when the packet's data cells fit in the free
// egress reassembly buffer (and, if set, fewer than cfg.CTSWindow fetches
// are outstanding); the source then sends the packet's data cells, routed
// by cfg.Mode; the destination reassembles them and forwards packets of a
// flow (source TiN to destination TiN) in CTS order over its 100 Gb/s host
// port (§3.3), freeing their egress space, and the host, once a request
// has crossed, sends the reply.
//
// The fabric (Fabric, AquilaFabric): §3.1's input-queued, cut-through
// switches with the per-hop latencies of §3.1/§3.2 (SwitchSpec: VC input
// FIFOs of BufferBytes with credits and head-of-line waits, a crossbar
// carrying one cell per port at a time, output buffers of two cells per
// VC; readings A22-A24), RTS and CTS on their own VCs before data cells on
// every link, routes chosen by the mode at each switch of the source pod
// (readings A40, A20, A23, A25), and with Timing.SwitchClockNs, switches
// that act on the edges of their own clocks (reading A28). Not modelled:
// CTD and ECN, congestion control of the hosts.
func Simulate(cfg SimConfig) (SimResult, error) {
	s, err := newSim(cfg)
	if err != nil {
		return SimResult{}, err
	}
	fc := AquilaFabric(s.cfg.Clique, s.cfg.Timing, s.cfg.BufferBytes, s.cfg.NonMinWeight, s.cfg.NonMinBias, 1, s.cfg.Timing.InjectGbps, s.cfg.Seed^0x5851f42d4c957f2d)
	fc.HashSeed = s.cfg.HashSeed
	f, err := NewFabric(fc, s)
	if err != nil {
		return SimResult{}, err
	}
	s.f = f
	s.start()
	f.Run()
	s.finish()
	return s.result, nil
}

// newSim checks cfg and makes the simulation's state, without its fabric.
func newSim(cfg SimConfig) (*sim, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	fabricDefaults(&cfg.BufferBytes, &cfg.NonMinWeight, &cfg.NonMinBias)
	c := cfg.Clique
	n := c.Pods * c.TiNs
	s := &sim{cfg: cfg, n: n,
		rng:         rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
		rtsQ:        make([]ring[int32], n),
		outstanding: make([]int, n),
		egressFree:  make([]int, n),
		flowQ:       map[int64]*ring[int32]{},
		hostFree:    make([]float64, n),
		sent:        make([]int, n),
		sizes:       map[int32][]int{},
		alg:         cfg.Mode.Algorithm(),
	}
	s.egressCap = cfg.EgressBytes
	if s.egressCap == 0 {
		s.egressCap = EgressBDP(c, cfg.Timing, max(cfg.Bytes, cfg.ReplyBytes), cfg.Align)
	}
	for i := range s.egressFree {
		s.egressFree[i] = s.egressCap
	}
	if w := Sum(s.cellSizes(int32(max(cfg.Bytes, cfg.ReplyBytes)))); w > s.egressCap {
		return nil, fmt.Errorf("tin: an egress buffer of %d bytes cannot hold one %d-byte packet's cells (%d bytes)", s.egressCap, max(cfg.Bytes, cfg.ReplyBytes), w)
	}
	s.lambda = cfg.Load * cfg.Timing.InjectBytesPerNs() / float64(cfg.Bytes)
	s.result.EgressBytes = s.egressCap
	return s, nil
}

// start sets every TiN's first request.
func (s *sim) start() {
	for i := 0; i < s.n; i++ {
		s.at(toTime(s.rng.ExpFloat64()/s.lambda), int64(i)<<2|tmGen)
	}
}

func (s *sim) nowNs() float64 { return float64(s.f.Now()) / float64(Ns) }

func (s *sim) finish() {
	st := s.f.Stats
	s.result.SimNs = s.nowNs()
	s.result.Cells, s.result.Events = st.Cells, st.Events
	s.result.RTT = summarize(s.rtt)
	s.result.OneWay = summarize(s.oneway)
	if s.cfg.KeepSamples {
		s.result.RTTSamples, s.result.OneWaySamples = s.rtt, s.oneway
	}
	if st.DataCells > 0 {
		s.result.NonMinimal = float64(st.NonMinimal) / float64(st.DataCells)
	}
	if n := len(s.legs); n > 0 {
		for _, r := range s.legs {
			rep := &s.pkts[r]
			req := &s.pkts[rep.request]
			s.result.Request.add(req, req.deliveredAt, 1/float64(n))
			s.result.Reply.add(rep, rep.deliveredAt, 1/float64(n))
		}
	}
}

func (s *sim) cellSizes(bytes int32) []int {
	if c, ok := s.sizes[bytes]; ok {
		return c
	}
	c, _ := CellsAlign(int(bytes), s.cfg.Align) // sizes checked in check()
	s.sizes[bytes] = c
	return c
}

// Timer implements Host.
func (s *sim) Timer(f *Fabric, tag int64) {
	id := int32(tag >> 2)
	switch tag & 3 {
	case tmGen:
		s.generate(id)
	case tmHost:
		s.deliver(id)
	}
}

// Delivered implements Host.
func (s *sim) Delivered(f *Fabric, p *Packet) {
	id := int32(p.Tag >> 2)
	switch p.Tag & 3 {
	case ipRTS:
		q := &s.pkts[id]
		q.rtsAt = s.nowNs()
		s.rtsQ[q.dst].push(id)
		s.issueCTS(q.dst)
	case ipCTS:
		// At the packet's source: pull it from the ingress buffer as data
		// cells, in order, behind any cell already on the injection port.
		q := &s.pkts[id]
		q.ctsAt = s.nowNs()
		s.send(q.src, q.dst, q.bytes, id, ipData, s.alg, classData, s.cellSizes(q.bytes))
	case ipData:
		q := &s.pkts[id]
		q.complete = true
		q.firstAt, q.lastAt = float64(p.FirstAt)/float64(Ns), s.nowNs()
		s.outstanding[q.dst]--
		fq := s.flow(q.src, q.dst)
		for fq.len() > 0 && s.pkts[fq.peek()].complete {
			s.toHost(fq.pop())
		}
		s.issueCTS(q.dst)
	}
}

func (s *sim) send(src, dst, bytes, id int32, kind int, alg Algorithm, class uint8, cells []int) {
	// The sizes and endpoints are checked: Send cannot fail.
	if err := s.f.Send(Packet{Src: s.ep.of(src), Dst: s.ep.of(dst), Bytes: bytes, Class: class, Alg: alg, Tag: int64(id)<<2 | int64(kind)}, cells); err != nil {
		panic(err)
	}
}

func (s *sim) flow(src, dst int32) *ring[int32] {
	k := int64(src)<<32 | int64(dst)
	q, ok := s.flowQ[k]
	if !ok {
		q = &ring[int32]{}
		s.flowQ[k] = q
	}
	return q
}

func (s *sim) generate(src int32) {
	total := s.cfg.Warmup + s.cfg.Packets
	if s.generated >= total {
		return
	}
	if s.cfg.Shares {
		share := total / s.n
		if int(src) < total%s.n {
			share++
		}
		if s.sent[src] >= share {
			return
		}
		s.sent[src]++
	}
	dst := int32(s.rng.IntN(s.n - 1))
	if dst >= src {
		dst++
	}
	id := s.packet(src, dst, int32(s.cfg.Bytes))
	s.pkts[id].measured = s.generated >= s.cfg.Warmup
	s.generated++
	s.send(src, dst, ControlCell, id, ipRTS, AlgMinimal, classRTS, nil)
	now := s.nowNs()
	if m := s.generated - s.cfg.Warmup; m > 0 && !s.cfg.Shares {
		for k := 1; k <= 3; k++ {
			if m == k*s.cfg.Packets/3 {
				s.thirds[k-1] = s.generated - s.delivered
			}
		}
	}
	switch {
	case s.generated < total:
		s.at(toTime(now+s.rng.ExpFloat64()/s.lambda), int64(src)<<2|tmGen)
		if s.generated == total/2 {
			s.half = s.generated - s.delivered
		}
	case s.shared:
		// Beside other traffic: the fabric runs until that is done too.
	default:
		// All requests are out. Below saturation the backlog of
		// undelivered requests hovers around a constant (Little's law);
		// above, it grows with the offered excess. Growth over the second
		// half beyond what the egress buffers hold or 5% of that half's
		// requests means the fabric does not carry the load.
		growth := s.generated - s.delivered - s.half
		held := s.n * max(1, s.egressCap/max(1, Sum(s.cellSizes(int32(s.cfg.Bytes)))))
		unsteady := s.unsteady()
		if growth > max(2*held, (total-total/2)/20) || unsteady {
			s.result.Saturated = true
			s.f.Stop()
		}
	}
}

// SteadyGrowth is the share of a run's last measured requests by which
// its backlog may grow before the run counts as not steady (Saturated).
const SteadyGrowth = 0.02

// unsteady reports whether the backlog of undelivered requests still grew
// over the last third of the measured requests' generation. In a steady
// state it hovers around a constant (Little's law): between two instants
// it differs by its own fluctuation, a few square roots of its size. A
// backlog that grows by more than that and more than SteadyGrowth of the
// requests offered meanwhile means requests arrive faster than they leave
// (the load is not carried), or that the fabric and its buffers are still
// filling (the warm-up was too short): either way every latency measured
// depends on where the run stops. The whole-run test before it (growth
// over the second half beyond twice what the egress buffers hold) misses
// a Clique whose buffers hold more than a run's excess: the full Clique
// at 0.7 grows by 6% of the last third's requests (50,000 of warm-up,
// 100,000 measured), 2,500 requests, where its egress buffers hold 9,216
// packets; the 2x4 Clique at 0.4 by 18%. Runs in Shares are
// the measurement from an idle fabric (reading A27): a transient by
// design, not checked.
func (s *sim) unsteady() bool {
	if s.cfg.Shares || s.cfg.Packets < 3 {
		return false
	}
	third := s.cfg.Packets - 2*s.cfg.Packets/3
	grew := s.thirds[2] - s.thirds[1]
	s.result.Growth = float64(grew) / float64(third)
	noise := 4 * math.Sqrt(float64(max(1, s.thirds[1])))
	return float64(grew) > max(SteadyGrowth*float64(third), noise)
}

func (s *sim) packet(src, dst, bytes int32) int32 {
	s.pkts = append(s.pkts, ipPacket{src: src, dst: dst, bytes: bytes, wire: int32(Sum(s.cellSizes(bytes))), created: s.nowNs()})
	return int32(len(s.pkts) - 1)
}

func (s *sim) issueCTS(dst int32) {
	q := &s.rtsQ[dst]
	for q.len() > 0 {
		if s.cfg.CTSWindow > 0 && s.outstanding[dst] >= s.cfg.CTSWindow {
			return
		}
		p := &s.pkts[q.peek()]
		if int(p.wire) > s.egressFree[dst] {
			return
		}
		id := q.pop()
		s.outstanding[dst]++
		s.egressFree[dst] -= int(p.wire)
		s.flow(p.src, p.dst).push(id)
		p.ctsIssued = s.nowNs()
		s.send(p.dst, p.src, ControlCell, id, ipCTS, AlgMinimal, classCTS, nil)
	}
}

// toHost sends a reassembled packet, in its flow's order, over the
// egress's host port: "A packet is transmittable at egress after receipt of
// all its data cells" (§3.3), then crosses to the host's "conventional
// 100 Gbps NIC" (§3.3) whole, one packet at a time, at the endpoint port
// rate (§5.1: 100 Gb/s). It is delivered when its last byte is across
// (reading A5), and its egress space is free again.
func (s *sim) toHost(pkt int32) {
	p := &s.pkts[pkt]
	now := s.nowNs()
	start := max(now, s.hostFree[p.dst])
	end := start + float64(p.bytes)/s.cfg.Timing.InjectBytesPerNs()
	s.hostFree[p.dst] = end
	s.at(toTime(end), int64(pkt)<<2|tmHost)
}

func (s *sim) deliver(pkt int32) {
	now := s.nowNs()
	s.pkts[pkt].deliveredAt = now
	p := s.pkts[pkt]
	s.egressFree[p.dst] += int(p.wire)
	s.issueCTS(p.dst)
	if p.isReply {
		req := s.pkts[p.request]
		if req.measured {
			s.rtt = append(s.rtt, now-req.created)
			s.legs = append(s.legs, pkt)
			s.doneN++
		}
	} else {
		s.delivered++
		if p.measured {
			s.oneway = append(s.oneway, now-p.created)
		}
		if s.cfg.ReplyBytes == 0 {
			if p.measured {
				s.doneN++
			}
		} else {
			r := s.packet(p.dst, p.src, int32(s.cfg.ReplyBytes))
			s.pkts[r].isReply = true
			s.pkts[r].request = pkt
			s.send(p.dst, p.src, ControlCell, r, ipRTS, AlgMinimal, classRTS, nil)
		}
	}
	if s.doneN == s.cfg.Packets && !s.shared {
		s.f.Stop()
	}
}

func summarize(v []float64) Stats {
	if len(v) == 0 {
		return Stats{}
	}
	w := slices.Clone(v)
	slices.Sort(w)
	sum := 0.0
	for _, x := range w {
		sum += x
	}
	rank := func(q float64) float64 {
		i := int(math.Ceil(q*float64(len(w)))) - 1
		return w[max(0, min(i, len(w)-1))]
	}
	return Stats{N: len(w), Mean: sum / float64(len(w)), P50: rank(0.5), P99: rank(0.99), Max: w[len(w)-1]}
}
