package ordering

import (
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/labrunner/labrunner/golden/tin"
)

// NetConfig is a run of the protocols over a simulated network (SC'18 §IV:
// the 1,056-node Dragonfly, tin.SC18Dragonfly). Sources and targets are
// the reference ones of Run; the network is a golden/tin Fabric, so
// reordering, loss-free NACKs and timing come out of the network's
// routing and queues instead of a script.
type NetConfig struct {
	Fabric tin.FabricConfig
	Alg    tin.Algorithm // routing of every packet (§IV: PAR)
	// ReqFlits and AckFlits: sizes of a REQ and of every other packet
	// (ACK, NACK, FIN, FIN-ACK) in flits. §IV gives REQs of 8 to 32
	// flits and no ACK size (reading O4: one flit).
	ReqFlits, AckFlits int
	// Target sizes every destination's receiver.
	Target TargetConfig
	// Window bounds the REQs outstanding per connection (Fig. 12c: 25);
	// SourceConns the connections of a source endpoint (0: unlimited).
	Window, SourceConns int
	// LimitNs bounds the simulated time (0: 100 ms).
	LimitNs float64
}

// NetStream is one stream of a timed run: from endpoint Src (Stream.Src)
// to endpoint Dst. Its REQs become available at the source at the times
// of Avail (ns, non-decreasing, one per REQ; nil: all at time 0), and a
// source endpoint starts a stream only once its previous one has sent
// every REQ once.
type NetStream struct {
	Stream
	Dst   int
	Avail []float64
	// SourceSync runs a synchronized transfer with source-side
	// synchronization (§IV-C "flush"): data unordered, the operation sent
	// once every data ACK is in.
	SourceSync bool
}

// StreamTiming is what a timed run measured of one stream.
type StreamTiming struct {
	FirstSendNs float64 // first REQ handed to the source's NIC
	FirstExecNs float64 // first REQ executed at the target
	LastExecNs  float64 // last REQ (the synchronization operation) executed at the target
	DoneNs      float64 // stream closed at the source (FIN-ACK, or last ACK without connection)
	// LatencyNs per REQ: first send to first execution (NaN: never
	// executed).
	LatencyNs []float64
	// OutOfOrder: REQs whose first copy arrived before an earlier REQ of
	// the stream had arrived.
	OutOfOrder int
	NACKs      int
	FellBack   bool
	Complete   bool
}

// Occupancy is a time series of a target's reorder buffer or open
// connections: a step function sampled at every change.
type Occupancy struct {
	T []float64 // ns
	V []int
	// Mean is time-weighted over the run; Max the peak.
	Mean float64
	Max  int
}

func (o *Occupancy) add(t float64, v int) {
	if n := len(o.V); n > 0 && o.V[n-1] == v {
		return
	}
	o.T = append(o.T, t)
	o.V = append(o.V, v)
	o.Max = max(o.Max, v)
}

func (o *Occupancy) finish(end float64) {
	if len(o.T) == 0 || end <= o.T[0] {
		return
	}
	area := 0.0
	for i := range o.T {
		next := end
		if i+1 < len(o.T) {
			next = o.T[i+1]
		}
		area += float64(o.V[i]) * (next - o.T[i])
	}
	o.Mean = area / (end - o.T[0])
}

// NetResult is the outcome of a timed run.
type NetResult struct {
	Streams []StreamTiming
	// Per destination endpoint: reorder buffer occupancy and open
	// connections over time, REQs inserted into the reorder buffer, REQs
	// that arrived.
	ROB, Conns        map[int]*Occupancy
	Inserted, Arrived map[int]int
	// Full and NoConn: REQs NACKed for a full reorder buffer ("dropped",
	// §IV-D) and for want of a receiver connection.
	Full, NoConn     map[int]int
	ReqFlitsExecuted int64
	// NetLatencyNs: for every REQ's first copy, its send to its arrival at
	// the target (the network's share of its latency, source queue
	// included).
	NetLatencyNs        []float64
	EndNs               float64
	NonMinimal          float64 // share of packets routed off the minimal route
	Anomalies           []string
	Stalled             string
	Events, FabricCells int64
}

type netPkt struct {
	p    Packet
	from int32
	to   int32
}

type netRun struct {
	cfg      NetConfig
	f        *tin.Fabric
	streams  []NetStream
	src      []*source
	byEP     map[int][]int // source endpoint -> its streams in order
	tgt      map[int]*Target
	pk       []netPkt
	pkFree   []int32
	reqIn    []int
	srcConns map[int][]bool
	arrived  [][]bool
	sentAt   [][]float64 // first send of each REQ
	prefix   []int
	res      NetResult
	left     int // streams not done
	nonMin   int64
	packets  int64
}

const (
	tagAvail = 1 // a REQ of a stream becomes available
	tagLimit = 2 // the run's time bound
)

// RunNet plays the streams over the network.
func RunNet(cfg NetConfig, streams []NetStream) (NetResult, error) {
	if len(streams) == 0 {
		return NetResult{}, fmt.Errorf("ordering: a run needs at least one stream")
	}
	if cfg.ReqFlits < 1 || cfg.AckFlits < 1 {
		return NetResult{}, fmt.Errorf("ordering: REQs of %d and ACKs of %d flits: want 1 or more", cfg.ReqFlits, cfg.AckFlits)
	}
	if cfg.Target.Conns < 0 || cfg.Target.ROB < 0 || cfg.Window < 0 || cfg.SourceConns < 0 {
		return NetResult{}, fmt.Errorf("ordering: negative resource count in %+v", cfg)
	}
	r := &netRun{cfg: cfg, streams: streams, byEP: map[int][]int{}, tgt: map[int]*Target{}, srcConns: map[int][]bool{},
		res: NetResult{ROB: map[int]*Occupancy{}, Conns: map[int]*Occupancy{}, Inserted: map[int]int{}, Arrived: map[int]int{}, Full: map[int]int{}, NoConn: map[int]int{}}}
	f, err := tin.NewFabric(cfg.Fabric, r)
	if err != nil {
		return NetResult{}, err
	}
	r.f = f
	for i, s := range streams {
		if err := s.check(); err != nil {
			return NetResult{}, fmt.Errorf("stream %d: %w", i, err)
		}
		if s.Src >= f.Endpoints() || s.Dst < 0 || s.Dst >= f.Endpoints() || s.Src == s.Dst {
			return NetResult{}, fmt.Errorf("stream %d: endpoints %d -> %d: want two different endpoints of 0..%d", i, s.Src, s.Dst, f.Endpoints()-1)
		}
		if s.Avail != nil && (len(s.Avail) != s.N || !slices.IsSorted(s.Avail) || s.Avail[0] < 0) {
			return NetResult{}, fmt.Errorf("stream %d: %d availability times for %d REQs, want one per REQ, non-decreasing from 0", i, len(s.Avail), s.N)
		}
		if s.SourceSync && s.Mode != Sync {
			return NetResult{}, fmt.Errorf("stream %d: source-side synchronization is a mode of synchronized transfers", i)
		}
		src := newSource(i, s.Stream)
		if s.Avail != nil {
			src.avail = 0
			for k, t := range s.Avail {
				f.At(tin.Time(t*1000+0.5), int64(i)<<32|int64(k)<<4|tagAvail)
			}
		}
		r.src = append(r.src, src)
		r.byEP[s.Src] = append(r.byEP[s.Src], i)
		if _, ok := r.tgt[s.Dst]; !ok {
			r.tgt[s.Dst] = NewTarget(cfg.Target)
			r.res.ROB[s.Dst], r.res.Conns[s.Dst] = &Occupancy{}, &Occupancy{}
			r.res.ROB[s.Dst].add(0, 0)
			r.res.Conns[s.Dst].add(0, 0)
		}
		lat := make([]float64, s.N)
		for k := range lat {
			lat[k] = math.NaN()
		}
		r.res.Streams = append(r.res.Streams, StreamTiming{FirstSendNs: -1, LatencyNs: lat})
		r.sentAt = append(r.sentAt, make([]float64, s.N))
		r.arrived = append(r.arrived, make([]bool, s.N))
	}
	r.reqIn = make([]int, len(streams))
	r.prefix = make([]int, len(streams))
	r.left = len(streams)
	limit := cfg.LimitNs
	if limit <= 0 {
		limit = 1e8
	}
	f.At(tin.Time(limit*1000), tagLimit)
	// Source endpoints start in order: a run is a function of its inputs.
	for _, ep := range slices.Sorted(maps.Keys(r.byEP)) {
		r.pump(ep)
	}
	if r.left > 0 {
		f.Run()
	}
	end := r.now()
	r.res.EndNs = end
	for ep, o := range r.res.ROB {
		o.finish(end)
		r.res.Conns[ep].finish(end)
	}
	for i, s := range r.src {
		st := &r.res.Streams[i]
		st.Complete, st.FellBack, st.NACKs = s.done, s.fellBack, s.nacks
	}
	if r.left > 0 {
		r.res.Stalled = fmt.Sprintf("%d of %d streams not complete after %.0f ns", r.left, len(streams), end)
	}
	for _, ep := range slices.Sorted(maps.Keys(r.tgt)) {
		r.res.Anomalies = append(r.res.Anomalies, r.tgt[ep].Anomalies...)
	}
	if r.packets > 0 {
		r.res.NonMinimal = float64(r.nonMin) / float64(r.packets)
	}
	r.res.Events, r.res.FabricCells = f.Stats.Events, f.Stats.Cells
	return r.res, nil
}

func (r *netRun) now() float64 { return float64(r.f.Now()) / 1000 }

func (r *netRun) claim(ep int) int {
	slots := r.srcConns[ep]
	for i, used := range slots {
		if !used {
			slots[i] = true
			return i
		}
	}
	if r.cfg.SourceConns > 0 && len(slots) >= r.cfg.SourceConns {
		return -1
	}
	r.srcConns[ep] = append(slots, true)
	return len(slots)
}

// pump lets the streams of source endpoint ep send what they may, starting
// them in turn.
func (r *netRun) pump(ep int) {
	for _, i := range r.byEP[ep] {
		s := r.src[i]
		if s.done {
			r.closeStream(ep, i) // done on its FIN-ACK
			continue
		}
		if !s.started {
			if s.avail == 0 || !s.start(func() int { return r.claim(ep) }) {
				return
			}
			if r.streams[i].SourceSync {
				s.fellBack = true
			}
		}
		s.pump(r.cfg.Window, r.reqIn[i] > 0, func(p Packet) { r.emit(i, p) })
		if s.done {
			r.closeStream(ep, i)
			continue
		}
		if !s.sentAll {
			return
		}
	}
}

// closeStream records a stream's end and gives its source connection back.
func (r *netRun) closeStream(ep, i int) {
	s := r.src[i]
	if s.cid >= 0 && !s.released {
		r.srcConns[ep][s.cid] = false
		s.released = true
	}
	st := &r.res.Streams[i]
	if st.DoneNs == 0 {
		st.DoneNs = r.now()
		r.left--
		if r.left == 0 {
			r.f.Stop()
		}
	}
}

func (r *netRun) emit(i int, p Packet) {
	s := r.streams[i]
	from, to := int32(s.Src), int32(s.Dst)
	flits := r.cfg.AckFlits
	if p.Kind == REQ {
		flits = r.cfg.ReqFlits
		r.reqIn[i]++
		st := &r.res.Streams[i]
		if p.Copy == 0 {
			if st.FirstSendNs < 0 {
				st.FirstSendNs = r.now()
			}
			r.sentAt[i][p.Seq] = r.now()
		}
	}
	r.send(p, from, to, flits)
}

func (r *netRun) send(p Packet, from, to int32, flits int) {
	var id int32
	if k := len(r.pkFree); k > 0 {
		id = r.pkFree[k-1]
		r.pkFree = r.pkFree[:k-1]
		r.pk[id] = netPkt{p, from, to}
	} else {
		r.pk = append(r.pk, netPkt{p, from, to})
		id = int32(len(r.pk) - 1)
	}
	// Endpoints and sizes are checked by RunNet: Send cannot fail.
	if err := r.f.Send(tin.Packet{Src: from, Dst: to, Bytes: int32(flits), Alg: r.cfg.Alg, Tag: int64(id)}, nil); err != nil {
		panic(err)
	}
}

// Timer implements tin.Host.
func (r *netRun) Timer(f *tin.Fabric, tag int64) {
	switch tag & 15 {
	case tagLimit:
		f.Stop()
	case tagAvail:
		i, k := int(tag>>32), int(tag>>4&0xfffffff)
		s := r.src[i]
		s.avail = max(s.avail, k+1)
		r.pump(r.streams[i].Src)
	}
}

// Delivered implements tin.Host.
func (r *netRun) Delivered(f *tin.Fabric, fp *tin.Packet) {
	np := r.pk[fp.Tag]
	r.pkFree = append(r.pkFree, int32(fp.Tag))
	r.packets++
	if fp.NonMinimal {
		r.nonMin++
	}
	p := np.p
	switch p.Kind {
	case REQ, FIN:
		r.atTarget(p, np)
	default:
		r.src[p.Stream].receive(p)
		r.pump(r.streams[p.Stream].Src)
	}
}

func (r *netRun) atTarget(p Packet, np netPkt) {
	dst := int(np.to)
	t := r.tgt[dst]
	now := r.now()
	before := t.Buffered()
	nExec := len(t.Execs)
	if p.Kind == REQ {
		i := p.Stream
		r.reqIn[i]--
		r.res.Arrived[dst]++
		if p.Copy == 0 {
			r.res.NetLatencyNs = append(r.res.NetLatencyNs, now-r.sentAt[i][p.Seq])
			if p.Seq != r.prefix[i] {
				r.res.Streams[i].OutOfOrder++
			}
			r.arrived[i][p.Seq] = true
			for r.prefix[i] < len(r.arrived[i]) && r.arrived[i][r.prefix[i]] {
				r.prefix[i]++
			}
		}
	}
	out := t.Receive(p)
	if t.Buffered() > before {
		r.res.Inserted[dst]++
	}
	for _, e := range t.Execs[nExec:] {
		st := &r.res.Streams[e.Stream]
		if st.FirstExecNs == 0 {
			st.FirstExecNs = now
		}
		if math.IsNaN(st.LatencyNs[e.Seq]) {
			st.LatencyNs[e.Seq] = now - r.sentAt[e.Stream][e.Seq]
		}
		if s := r.streams[e.Stream]; s.Mode != Sync || e.Seq == s.N-1 {
			st.LastExecNs = max(st.LastExecNs, now)
		}
		r.res.ReqFlitsExecuted += int64(r.cfg.ReqFlits)
	}
	t.Execs = t.Execs[:0]
	r.res.ROB[dst].add(now, t.Buffered())
	r.res.Conns[dst].add(now, t.Open())
	for _, q := range out {
		if q.Kind == NACK {
			switch q.Reason {
			case Full:
				r.res.Full[dst]++
			case NoConn:
				r.res.NoConn[dst]++
			}
		}
		r.send(q, np.to, np.from, r.cfg.AckFlits)
	}
	if p.Kind == REQ {
		// A copy left the network: the source may now close.
		r.pump(r.streams[p.Stream].Src)
	}
}
