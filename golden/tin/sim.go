package tin

import (
	"fmt"
	"hash/fnv"
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
	// CTSWindow bounds the packet fetches (CTS issued, data not all
	// received) a destination has outstanding (§3.3).
	CTSWindow int
	Align     int // cell granularity (CellsAlign)
	Seed      uint64
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
	Cells       int64   // cells simulated
	Events      int64   // events processed
	SimNs       float64 // simulated time
	// NonMinimal is the share of data cells routed non-minimally.
	NonMinimal float64
	// Saturated: the offered load exceeds what the Clique carries; the
	// latencies are then meaningless (they grow with the run length).
	Saturated bool
}

// Limits of a simulation run.
const (
	MaxSimNodes   = 256
	MaxSimPackets = 5_000_000
)

func (cfg *SimConfig) check() error {
	if cfg.Clique == nil {
		return fmt.Errorf("tin: simulation without a Clique")
	}
	if n := cfg.Clique.Pods * cfg.Clique.TiNs; n < 2 || n > MaxSimNodes {
		return fmt.Errorf("tin: simulating a Clique of %d TiNs: want 2..%d", n, MaxSimNodes)
	}
	if err := cfg.Timing.Check(); err != nil {
		return err
	}
	if cfg.Mode < FullyAdaptive || cfg.Mode > MinimalDeterministic {
		return fmt.Errorf("tin: routing mode %d is not one of the four of Aquila §3.2", int(cfg.Mode))
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
	if cfg.CTSWindow < 1 || cfg.CTSWindow > 1<<16 {
		return fmt.Errorf("tin: CTS window %d: want 1..65536 outstanding packet fetches", cfg.CTSWindow)
	}
	return checkAlign(cfg.Align)
}

const (
	kRTS uint8 = iota
	kCTS
	kData
)

const (
	evGen uint8 = iota
	evHead
	evFree
	evDone
	evHost // a packet has crossed the egress's host port: delivered
)

type event struct {
	t    float64
	seq  uint64
	kind uint8
	id   int32
}

type evHeap []event

func (h evHeap) less(i, j int) bool {
	return h[i].t < h[j].t || (h[i].t == h[j].t && h[i].seq < h[j].seq)
}

func (h *evHeap) push(e event) {
	*h = append(*h, e)
	s := *h
	i := len(s) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !s.less(i, p) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
}

func (h *evHeap) pop() event {
	s := *h
	top := s[0]
	n := len(s) - 1
	s[0] = s[n]
	s = s[:n]
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && s.less(r, l) {
			m = r
		}
		if !s.less(m, i) {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
	*h = s
	return top
}

// queue is a FIFO of ids.
type queue struct {
	buf  []int32
	head int
}

func (q *queue) push(v int32) { q.buf = append(q.buf, v) }
func (q *queue) len() int     { return len(q.buf) - q.head }
func (q *queue) peek() int32  { return q.buf[q.head] }
func (q *queue) pop() int32 {
	v := q.buf[q.head]
	q.head++
	if q.head > 64 && q.head*2 > len(q.buf) {
		q.buf = append(q.buf[:0], q.buf[q.head:]...)
		q.head = 0
	}
	return v
}

type simLink struct {
	rate, lat float64
	hi, lo    queue
	busy      bool
	waiting   int // bytes queued, not yet started
	inService int // bytes of the cell being sent
}

type simCell struct {
	pkt      int32
	kind     uint8
	bytes    int32
	src, dst int32 // TiNs the cell travels between
	route    []int32
	hop      int32
	tailArr  float64
	minimal  bool
}

type simPacket struct {
	src, dst  int32
	bytes     int32
	created   float64
	cellsLeft int32
	complete  bool
	measured  bool
	isReply   bool
	request   int32 // for a reply: its request
}

type routeSet struct {
	min, non [][]int32 // link ids of the fabric hops
	hash     uint32
}

type sim struct {
	cfg     SimConfig
	n       int
	rng     *rand.Rand
	ev      evHeap
	seq     uint64
	links   []simLink
	inj, ej []int32
	routes  []routeSet // [src*n+dst]
	cells   []simCell
	free    []int32
	pkts    []simPacket
	cellsOf map[int32][]int
	// egress state per destination TiN
	rtsQ        []queue
	outstanding []int
	flowQ       []queue   // [src*n+dst]: packets in CTS order
	hostFree    []float64 // when each TiN's host port is free again
	lambda      float64   // requests per ns per TiN
	generated   int
	delivered   int // requests delivered
	measuredN   int
	doneN       int // measured requests finished (reply delivered, or delivered without replies)
	rtt, oneway []float64
	dataCells   int64
	nonMin      int64
	result      SimResult
}

// Simulate runs the reference fabric simulation.
//
// The model: every TiN's IP endpoint sends requests of cfg.Bytes to a
// uniformly random other TiN with Poisson arrivals at cfg.Load of its
// injection rate. A request issues its RTS at once (16 B, high priority,
// hashed minimal route); the destination queues RTSs in arrival order (one
// RTS queue: one port, one class of service) and its CTS scheduler issues a
// CTS (16 B, high priority) whenever fewer than cfg.CTSWindow fetches are
// outstanding; the source then sends the packet's data cells, routed by
// cfg.Mode; the destination reassembles them and forwards packets of a flow
// (source TiN to destination TiN) in CTS order over its 100 Gb/s host port
// (§3.3), and the host, once a request has crossed, sends the reply.
//
// Links are output-queued, strict priority for RTS/CTS over data, FIFO
// within a priority, cut-through (Timing.CellLatency); endpoint ports in and
// out of the switch run at the injection rate. Adaptive modes decide at the
// source TiN from its output queue depths (locally adaptive, §3.2): each
// sampled candidate costs (queued bytes + 160) × its hop count, so an idle
// fabric takes a minimal route and a queue of a few cells tips a cell onto
// a longer one. Not modelled: credits and the depth of the VC FIFOs, iSLIP
// arbitration (§3.1), CTD and ECN, congestion control of the hosts.
func Simulate(cfg SimConfig) (SimResult, error) {
	if err := cfg.check(); err != nil {
		return SimResult{}, err
	}
	s := newSim(cfg)
	s.run()
	return s.result, nil
}

func newSim(cfg SimConfig) *sim {
	c := cfg.Clique
	n := c.Pods * c.TiNs
	s := &sim{
		cfg: cfg, n: n,
		rng:         rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
		rtsQ:        make([]queue, n),
		outstanding: make([]int, n),
		flowQ:       make([]queue, n*n),
		hostFree:    make([]float64, n),
		routes:      make([]routeSet, n*n),
		cellsOf:     map[int32][]int{},
	}
	t := cfg.Timing
	addLink := func(rate, lat float64) int32 {
		s.links = append(s.links, simLink{rate: rate, lat: lat})
		return int32(len(s.links) - 1)
	}
	for i := 0; i < n; i++ {
		s.inj = append(s.inj, addLink(t.InjectBytesPerNs(), t.FallThroughNs))
	}
	for i := 0; i < n; i++ {
		s.ej = append(s.ej, addLink(t.InjectBytesPerNs(), 0))
	}
	id := func(nd Node) int { return nd.Pod*c.TiNs + nd.TiN }
	local := make([]int32, n*n)
	for p := 0; p < c.Pods; p++ {
		for a := 0; a < c.TiNs; a++ {
			for b := 0; b < c.TiNs; b++ {
				if a != b {
					local[id(Node{p, a})*n+id(Node{p, b})] = addLink(t.LinkBytesPerNs(Local), t.HopLatency(Local))
				}
			}
		}
	}
	type glink struct {
		from, to Node
		id       int32
	}
	pair := make([][]glink, c.Pods*c.Pods)
	for _, g := range c.Globals {
		ab := addLink(t.LinkBytesPerNs(Global), t.HopLatency(Global))
		ba := addLink(t.LinkBytesPerNs(Global), t.HopLatency(Global))
		pair[g.A.Pod*c.Pods+g.B.Pod] = append(pair[g.A.Pod*c.Pods+g.B.Pod], glink{g.A, g.B, ab})
		pair[g.B.Pod*c.Pods+g.A.Pod] = append(pair[g.B.Pod*c.Pods+g.A.Pod], glink{g.B, g.A, ba})
	}
	// seg appends the local hop from a to b, if any.
	seg := func(r []int32, a, b Node) []int32 {
		if a != b {
			r = append(r, local[id(a)*n+id(b)])
		}
		return r
	}
	for _, sn := range c.Nodes() {
		for _, dn := range c.Nodes() {
			if sn == dn {
				continue
			}
			rs := &s.routes[id(sn)*n+id(dn)]
			h := fnv.New32a()
			h.Write([]byte(sn.String() + ">" + dn.String()))
			rs.hash = h.Sum32()
			if sn.Pod == dn.Pod {
				rs.min = append(rs.min, seg(nil, sn, dn))
				for i := 0; i < c.TiNs; i++ {
					if i != sn.TiN && i != dn.TiN && ParitySign(sn.TiN, i, dn.TiN) {
						mid := Node{sn.Pod, i}
						rs.non = append(rs.non, seg(seg(nil, sn, mid), mid, dn))
					}
				}
				continue
			}
			for _, g := range pair[sn.Pod*c.Pods+dn.Pod] {
				r := append(seg(nil, sn, g.from), g.id)
				rs.min = append(rs.min, seg(r, g.to, dn))
			}
			for mid := 0; mid < c.Pods; mid++ {
				if mid == sn.Pod || mid == dn.Pod {
					continue
				}
				for _, in := range pair[sn.Pod*c.Pods+mid] {
					for _, on := range pair[mid*c.Pods+dn.Pod] {
						r := append(seg(nil, sn, in.from), in.id)
						r = append(seg(r, in.to, on.from), on.id)
						rs.non = append(rs.non, seg(r, on.to, dn))
					}
				}
			}
		}
	}
	s.lambda = cfg.Load * t.InjectBytesPerNs() / float64(cfg.Bytes)
	return s
}

func (s *sim) schedule(t float64, kind uint8, id int32) {
	s.seq++
	s.ev.push(event{t: t, seq: s.seq, kind: kind, id: id})
}

func (s *sim) cellSizes(bytes int32) []int {
	if c, ok := s.cellsOf[bytes]; ok {
		return c
	}
	c, _ := CellsAlign(int(bytes), s.cfg.Align) // sizes checked in check()
	s.cellsOf[bytes] = c
	return c
}

func (s *sim) newCell(c simCell) int32 {
	s.result.Cells++
	if k := len(s.free); k > 0 {
		i := s.free[k-1]
		s.free = s.free[:k-1]
		s.cells[i] = c
		return i
	}
	s.cells = append(s.cells, c)
	return int32(len(s.cells) - 1)
}

// linkAt returns the link a cell crosses at hop h: injection, fabric hops,
// ejection.
func (s *sim) linkAt(c *simCell, h int32) int32 {
	switch {
	case h == 0:
		return s.inj[c.src]
	case int(h) <= len(c.route):
		return c.route[h-1]
	default:
		return s.ej[c.dst]
	}
}

func (s *sim) run() {
	for i := 0; i < s.n; i++ {
		s.schedule(s.rng.ExpFloat64()/s.lambda, evGen, int32(i))
	}
	total := s.cfg.Warmup + s.cfg.Packets
	now, half := 0.0, 0
	for len(s.ev) > 0 {
		e := s.ev.pop()
		s.result.Events++
		now = e.t
		switch e.kind {
		case evGen:
			if s.generated >= total {
				continue
			}
			s.request(e.id, now)
			switch {
			case s.generated < total:
				s.schedule(now+s.rng.ExpFloat64()/s.lambda, evGen, e.id)
				if s.generated == total/2 {
					half = s.generated - s.delivered
				}
			default:
				// All requests are out. Below saturation the backlog of
				// undelivered requests hovers around a constant (Little's
				// law); above, it grows with the offered excess. Growth over
				// the second half beyond what the CTS windows hold or 5% of
				// that half's requests means the fabric does not carry the
				// load.
				growth := s.generated - s.delivered - half
				if growth > max(2*s.n*s.cfg.CTSWindow, (total-total/2)/20) {
					s.result.Saturated = true
					s.finish(now)
					return
				}
			}
		case evHead:
			c := &s.cells[e.id]
			s.enqueue(e.id, s.linkAt(c, c.hop), now)
		case evFree:
			l := &s.links[e.id]
			l.busy = false
			l.inService = 0
			s.start(e.id, now)
		case evDone:
			s.done(e.id, now)
			if s.doneN == s.cfg.Packets {
				s.finish(now)
				return
			}
		case evHost:
			s.deliver(e.id, now)
			if s.doneN == s.cfg.Packets {
				s.finish(now)
				return
			}
		}
	}
	s.finish(now)
}

func (s *sim) finish(now float64) {
	s.result.SimNs = now
	s.result.RTT = summarize(s.rtt)
	s.result.OneWay = summarize(s.oneway)
	if s.dataCells > 0 {
		s.result.NonMinimal = float64(s.nonMin) / float64(s.dataCells)
	}
}

func (s *sim) request(src int32, now float64) {
	dst := int32(s.rng.IntN(s.n - 1))
	if dst >= src {
		dst++
	}
	id := s.packet(src, dst, int32(s.cfg.Bytes), now)
	p := &s.pkts[id]
	p.measured = s.generated >= s.cfg.Warmup
	s.generated++
	s.sendRTS(id, now)
}

func (s *sim) packet(src, dst, bytes int32, now float64) int32 {
	s.pkts = append(s.pkts, simPacket{src: src, dst: dst, bytes: bytes, created: now})
	return int32(len(s.pkts) - 1)
}

func (s *sim) hashed(src, dst int32) []int32 {
	rs := &s.routes[int(src)*s.n+int(dst)]
	return rs.min[rs.hash%uint32(len(rs.min))]
}

func (s *sim) sendRTS(pkt int32, now float64) {
	p := &s.pkts[pkt]
	c := s.newCell(simCell{pkt: pkt, kind: kRTS, bytes: ControlCell, src: p.src, dst: p.dst, route: s.hashed(p.src, p.dst), minimal: true, tailArr: math.Inf(-1)})
	s.enqueue(c, s.inj[p.src], now)
}

func (s *sim) enqueue(ci int32, li int32, now float64) {
	c := &s.cells[ci]
	if c.kind == kData && c.hop == 1 && c.route == nil {
		c.route, c.minimal = s.choose(c.src, c.dst)
		s.dataCells++
		if !c.minimal {
			s.nonMin++
		}
		li = s.linkAt(c, 1)
	}
	l := &s.links[li]
	if c.kind == kData {
		l.lo.push(ci)
	} else {
		l.hi.push(ci)
	}
	l.waiting += int(c.bytes)
	if !l.busy {
		s.start(li, now)
	}
}

func (s *sim) start(li int32, now float64) {
	l := &s.links[li]
	var ci int32
	switch {
	case l.hi.len() > 0:
		ci = l.hi.pop()
	case l.lo.len() > 0:
		ci = l.lo.pop()
	default:
		return
	}
	c := &s.cells[ci]
	l.busy = true
	l.waiting -= int(c.bytes)
	l.inService = int(c.bytes)
	tail := math.Max(now+float64(c.bytes)/l.rate, c.tailArr)
	s.schedule(tail, evFree, li)
	if li == s.ej[c.dst] {
		s.schedule(tail, evDone, ci)
		return
	}
	c.tailArr = tail + l.lat
	c.hop++
	s.schedule(now+l.lat, evHead, ci)
}

// choose picks a data cell's route by the routing mode, at the source TiN.
func (s *sim) choose(src, dst int32) ([]int32, bool) {
	rs := &s.routes[int(src)*s.n+int(dst)]
	switch s.cfg.Mode {
	case MinimalDeterministic:
		return rs.min[rs.hash%uint32(len(rs.min))], true
	case Deterministic:
		k := int(rs.hash % uint32(len(rs.min)+len(rs.non)))
		if k < len(rs.min) {
			return rs.min[k], true
		}
		return rs.non[k-len(rs.min)], false
	}
	best, bestMin := []int32(nil), true
	bestCost := math.Inf(1)
	try := func(r []int32, minimal bool) {
		l := &s.links[r[0]]
		cost := float64(l.waiting+l.inService+MaxCell) * float64(len(r))
		if cost < bestCost || (cost == bestCost && minimal && !bestMin) {
			best, bestMin, bestCost = r, minimal, cost
		}
	}
	s.sample(rs.min, MinimalSample, true, try)
	if s.cfg.Mode == FullyAdaptive {
		s.sample(rs.non, NonMinimalSample, false, try)
	}
	return best, bestMin
}

// sample offers k distinct candidates drawn at random (all if there are k or
// fewer) to try, minimal ones first so that ties go to them.
func (s *sim) sample(rs [][]int32, k int, minimal bool, try func([]int32, bool)) {
	if len(rs) <= k {
		for _, r := range rs {
			try(r, minimal)
		}
		return
	}
	var picked [NonMinimalSample]int
	for j := 0; j < k; j++ {
		x := s.rng.IntN(len(rs))
		for slices.Contains(picked[:j], x) {
			x = s.rng.IntN(len(rs))
		}
		picked[j] = x
		try(rs[x], minimal)
	}
}

// done handles a cell fully received by the destination endpoint.
func (s *sim) done(ci int32, now float64) {
	c := s.cells[ci]
	s.free = append(s.free, ci)
	switch c.kind {
	case kRTS:
		s.rtsQ[c.dst].push(c.pkt)
		s.issueCTS(c.dst, now)
	case kCTS:
		// At the packet's source: pull it from the ingress buffer as data
		// cells, in order, behind any cell already on the injection port.
		p := &s.pkts[c.pkt]
		sizes := s.cellSizes(p.bytes)
		p.cellsLeft = int32(len(sizes))
		for _, b := range sizes {
			d := s.newCell(simCell{pkt: c.pkt, kind: kData, bytes: int32(b), src: p.src, dst: p.dst, tailArr: math.Inf(-1)})
			s.enqueue(d, s.inj[p.src], now)
		}
	case kData:
		p := &s.pkts[c.pkt]
		p.cellsLeft--
		if p.cellsLeft > 0 {
			return
		}
		p.complete = true
		s.outstanding[p.dst]--
		fq := &s.flowQ[int(p.src)*s.n+int(p.dst)]
		for fq.len() > 0 && s.pkts[fq.peek()].complete {
			s.toHost(fq.pop(), now)
		}
		s.issueCTS(p.dst, now)
	}
}

func (s *sim) issueCTS(dst int32, now float64) {
	q := &s.rtsQ[dst]
	for q.len() > 0 && s.outstanding[dst] < s.cfg.CTSWindow {
		pkt := q.pop()
		p := &s.pkts[pkt]
		s.outstanding[dst]++
		s.flowQ[int(p.src)*s.n+int(p.dst)].push(pkt)
		c := s.newCell(simCell{pkt: pkt, kind: kCTS, bytes: ControlCell, src: p.dst, dst: p.src, route: s.hashed(p.dst, p.src), minimal: true, tailArr: math.Inf(-1)})
		s.enqueue(c, s.inj[dst], now)
	}
}

// toHost sends a reassembled packet, in its flow's order, over the
// egress's host port: "A packet is transmittable at egress after receipt of
// all its data cells" (§3.3), then crosses to the host's "conventional
// 100 Gbps NIC" (§3.3) whole, one packet at a time, at the endpoint port
// rate (§5.1: 100 Gb/s). It is delivered when its last byte is across.
func (s *sim) toHost(pkt int32, now float64) {
	p := &s.pkts[pkt]
	start := max(now, s.hostFree[p.dst])
	end := start + float64(p.bytes)/s.cfg.Timing.InjectBytesPerNs()
	s.hostFree[p.dst] = end
	s.schedule(end, evHost, pkt)
}

func (s *sim) deliver(pkt int32, now float64) {
	p := s.pkts[pkt]
	if p.isReply {
		req := s.pkts[p.request]
		if req.measured {
			s.rtt = append(s.rtt, now-req.created)
			s.doneN++
		}
		return
	}
	s.delivered++
	if p.measured {
		s.oneway = append(s.oneway, now-p.created)
	}
	if s.cfg.ReplyBytes == 0 {
		if p.measured {
			s.doneN++
		}
		return
	}
	r := s.packet(p.dst, p.src, int32(s.cfg.ReplyBytes), now)
	s.pkts[r].isReply = true
	s.pkts[r].request = pkt
	s.sendRTS(r, now)
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
