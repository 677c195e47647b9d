package shoal

import (
	"fmt"
	"math"
	"sort"
)

// Flow is one flow of a simulation: Cells cells from Src to Dst, arriving at
// StartNS. Bytes is the payload it carries, for goodput (0: Cells times the
// cell payload).
type Flow struct {
	Src, Dst int
	Cells    int64
	Bytes    int64
	StartNS  float64
}

// SimOptions are the knobs of Simulate beyond the rack configuration.
type SimOptions struct {
	// NoReadyQueues turns off the intermediate-node optimisation of §3.3.3:
	// local cells go straight into Q_ij when Eq. 2 allows (several may wait
	// there), feedback is len(Q) (Eq. 1) and the queue bound is Eq. 3.
	NoReadyQueues bool
	// NoNewFlowRule turns off the source-node optimisation of §3.3.3 (a new
	// flow's cell enters Q_ij only while len(Q_ij) ≤ 2^age).
	NoNewFlowRule bool
	// Failed lists failed nodes: every slot to or from them goes unused
	// (§3.5, §7.3 "the slots corresponding to the failed nodes are wasted").
	// Flows from or to a failed node are an error.
	Failed []int
	// UntilNS stops the run even if flows remain; 0 means the last flow's
	// start plus the larger of a quarter of that and 1000 epochs (time for
	// the short flows to finish and the long ones to show their goodput).
	UntilNS float64
	// MeasureFromNS starts the per-flow Window count of delivered cells.
	MeasureFromNS float64
	// IgnoreFeedback models a faulty NIC that never waits for rate-limit
	// feedback: a subflow may release its next cell as soon as the last
	// one has left. It exists so that tests can show the expectations
	// catch such a NIC (issue 4's injected fault); a Shoal NIC never does
	// this.
	IgnoreFeedback bool
}

// FlowResult is what happened to one flow.
type FlowResult struct {
	Delivered int64 // cells received by the destination
	Window    int64 // of those, cells received at or after MeasureFromNS
	Done      bool
	// EndNS is when the last cell was received (Done) or the end of the run.
	EndNS float64
}

// FCTNS is the flow completion time, or the time in the run if not Done.
func (r FlowResult) FCTNS(f Flow) float64 { return r.EndNS - f.StartNS }

// SimResult is the outcome of Simulate.
type SimResult struct {
	Flows []FlowResult
	EndNS float64
	Slots int64
	// MaxQueue is the longest per-destination queue Q_ij seen (cells,
	// local and forwarded, §3.3); MaxNodeQueue the most cells queued at one
	// node over all its Q_ij (§7.3 "maximum aggregate queue per node").
	MaxQueue, MaxNodeQueue int
	// BoundViolations counts enqueues that took a queue past its bound at
	// that instant: Eq. 5, 1 + incast degree of the destination (Eq. 3,
	// outcast of the node + incast of the destination, with NoReadyQueues).
	BoundViolations int64
	// Cells sent with data, empty transmissions (nothing queued, §3.3.1),
	// and cells forwarded by intermediate nodes.
	DataCells, EmptyCells, Forwarded int64
	// DeliveredPerNode counts cells received by each destination node.
	DeliveredPerNode []int64
}

// subflow states
const (
	sfIdle        uint8 = iota // not listed, nothing outstanding
	sfListed                   // on its (src, intermediate) candidate list
	sfQueued                   // its cell waits in Q_ij at the source
	sfOutstanding              // its cell left; feedback not yet received
)

// pair is the state of one ordered pair (a, b) at node a: its queue Q_ab,
// the candidate list of a's local subflows through b (the ready queue R_ab
// and the subflows still waiting on Eq. 2), and the last local cell a
// received from b, awaiting its rate-limit feedback. One struct keeps what a
// slot touches in one cache line.
type pair struct {
	qHead, qTail, qLen, qLocal int32
	cHead, cTail, cCount       int32
	recvFlow, recvQueue        int32
}

// cellEntry is a cell waiting in a queue.
type cellEntry struct {
	next, flow int32
	local      bool
}

type inflight struct {
	to, from int32
	flow     int32 // -1: no data
	final    int32
	local    bool // first hop of the cell (from == source of the flow)
	fbFlow   int32
	fbLen    int32
}

// sim holds the flat arrays of one run. Per ordered pair (a, b) the index is
// ((b-a) mod N)·N + a, so that one column of the schedule (every node a
// sending to a+t) walks the arrays in order.
type sim struct {
	c         Config
	o         SimOptions
	s         *Schedule
	n, E      int
	d         int
	slotNS    float64
	failed    []bool
	anyFailed bool
	flows     []Flow
	// per flow
	dst        []int32
	unassigned []int64
	delivered  []int64
	window     []int64
	startSlot  []int64
	done       []bool
	slab       []int32
	endNS      []float64
	// per active flow slab, [slab*N + intermediate]
	sfState []uint8
	sfT     []int64
	sfLen   []int32
	free    []int32
	// per ordered pair
	p []pair
	// cell and candidate pools (singly linked lists)
	cells              []cellEntry
	cellFree           int32
	candNext, candFlow []int32
	candFree           int32
	// per node
	nodeQ, incast, outcast []int32
	ring                   [][]inflight
	res                    *SimResult
	measureFrom            float64
}

// Simulate runs a slot-level simulation of a Shoal rack (§3.3): the static
// schedule, detour routing through one intermediate node, per-destination
// queues served once per epoch, empty cells when nothing is queued, the
// rate-limit feedback of Eq. 1/6 and the release rule of Eq. 2, and, unless
// turned off, the ready queues and new-flow rule of §3.3.3. It is
// deterministic: the same flows give the same result. See the package
// documentation for the exact rules.
func Simulate(c Config, flows []Flow, o SimOptions) (*SimResult, error) {
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("simulate: %w", err)
	}
	s, err := NewSchedule(c.Nodes, c.Channels, c.Schedule)
	if err != nil {
		return nil, fmt.Errorf("simulate: %w", err)
	}
	m := &sim{c: c, o: o, s: s, n: c.Nodes, E: s.EpochSlots(), d: c.DelaySlots(), slotNS: c.SlotNS,
		failed: make([]bool, c.Nodes), flows: flows, measureFrom: o.MeasureFromNS}
	for _, f := range o.Failed {
		if f < 0 || f >= c.Nodes {
			return nil, fmt.Errorf("simulate: failed node %d: nodes are 0..%d", f, c.Nodes-1)
		}
		m.failed[f] = true
		m.anyFailed = true
	}
	lastStart := 0.0
	for k, f := range flows {
		switch {
		case f.Src < 0 || f.Src >= c.Nodes || f.Dst < 0 || f.Dst >= c.Nodes:
			return nil, fmt.Errorf("simulate: flow %d: %d→%d, nodes are 0..%d", k, f.Src, f.Dst, c.Nodes-1)
		case f.Src == f.Dst:
			return nil, fmt.Errorf("simulate: flow %d: node %d sends to itself", k, f.Src)
		case f.Cells < 1:
			return nil, fmt.Errorf("simulate: flow %d has %d cells, want ≥ 1", k, f.Cells)
		case !(f.StartNS >= 0) || math.IsInf(f.StartNS, 0):
			return nil, fmt.Errorf("simulate: flow %d starts at %g ns, want a time ≥ 0", k, f.StartNS)
		case m.failed[f.Src] || m.failed[f.Dst]:
			return nil, fmt.Errorf("simulate: flow %d: %d→%d touches a failed node", k, f.Src, f.Dst)
		}
		lastStart = math.Max(lastStart, f.StartNS)
	}
	if len(flows) > math.MaxInt32-1 {
		return nil, fmt.Errorf("simulate: %d flows, at most %d", len(flows), math.MaxInt32-1)
	}
	until := o.UntilNS
	if until <= 0 {
		until = lastStart + math.Max(lastStart/4, 1000*c.EpochNS())
	}
	m.init()
	m.run(until)
	return m.res, nil
}

func (m *sim) init() {
	n, F := m.n, len(m.flows)
	m.dst = make([]int32, F)
	m.unassigned = make([]int64, F)
	m.delivered = make([]int64, F)
	m.window = make([]int64, F)
	m.startSlot = make([]int64, F)
	m.done = make([]bool, F)
	m.slab = make([]int32, F)
	m.endNS = make([]float64, F)
	for k, f := range m.flows {
		m.dst[k] = int32(f.Dst)
		m.unassigned[k] = f.Cells
		m.startSlot[k] = int64(math.Ceil(f.StartNS/m.slotNS - 1e-9))
		m.slab[k] = -1
	}
	m.p = make([]pair, n*n)
	for i := range m.p {
		m.p[i] = pair{qHead: -1, qTail: -1, cHead: -1, cTail: -1, recvFlow: -1, recvQueue: -1}
	}
	m.cellFree, m.candFree = -1, -1
	m.nodeQ, m.incast, m.outcast = make([]int32, n), make([]int32, n), make([]int32, n)
	m.ring = make([][]inflight, m.d+1)
	for i := range m.ring {
		m.ring[i] = make([]inflight, 0, n*m.c.Channels)
	}
	m.res = &SimResult{Flows: make([]FlowResult, F), DeliveredPerNode: make([]int64, n)}
}

func (m *sim) idx(a, b int) int {
	off := b - a
	if off < 0 {
		off += m.n
	}
	return off*m.n + a
}

func (m *sim) run(until float64) {
	order := make([]int32, len(m.flows))
	for k := range order {
		order[k] = int32(k)
	}
	sort.SliceStable(order, func(a, b int) bool { return m.startSlot[order[a]] < m.startSlot[order[b]] })
	next, remaining := 0, len(m.flows)
	n := m.n
	var slot int64
	for ; ; slot++ {
		if float64(slot)*m.slotNS >= until {
			break
		}
		for next < len(order) && m.startSlot[order[next]] <= slot {
			m.activate(int(order[next]))
			next++
		}
		bucket := &m.ring[slot%int64(m.d+1)]
		for _, cell := range *bucket {
			if m.arrive(cell, slot) {
				remaining--
			}
		}
		*bucket = (*bucket)[:0]
		if remaining == 0 && next == len(order) {
			slot++
			break
		}
		es := int(slot % int64(m.E))
		out := &m.ring[(slot+int64(m.d))%int64(m.d+1)]
		for ch := 0; ch < m.c.Channels; ch++ {
			col := m.s.Column(es, ch)
			if col.Offset == 0 {
				continue
			}
			lo, hi := 0, n
			switch col.Half {
			case 1:
				hi = n / 2
			case 2:
				lo = n / 2
			}
			base := col.Offset * n
			for i := lo; i < hi; i++ {
				x := base + i
				j := i + col.Offset
				if j >= n {
					j -= n
				}
				if m.anyFailed && (m.failed[i] || m.failed[j]) {
					continue // the slot is marked failed (§3.5)
				}
				if pp := &m.p[x]; pp.qLen == 0 && pp.cHead < 0 && pp.recvFlow < 0 {
					m.res.EmptyCells++
					continue
				}
				m.transmit(i, j, x, slot, out)
			}
		}
	}
	m.res.Slots = slot
	m.res.EndNS = float64(slot) * m.slotNS
	for k := range m.flows {
		r := &m.res.Flows[k]
		r.Delivered, r.Window, r.Done = m.delivered[k], m.window[k], m.done[k]
		if m.done[k] {
			r.EndNS = m.endNS[k]
		} else {
			r.EndNS = math.Max(m.res.EndNS, m.flows[k].StartNS)
		}
	}
}

// activate starts a flow: its subflow through every working node goes on the
// candidate list of (source, intermediate).
func (m *sim) activate(f int) {
	fl := m.flows[f]
	var sl int32
	if k := len(m.free); k > 0 {
		sl, m.free = m.free[k-1], m.free[:k-1]
	} else {
		sl = int32(len(m.sfState) / m.n)
		m.sfState = append(m.sfState, make([]uint8, m.n)...)
		m.sfT = append(m.sfT, make([]int64, m.n)...)
		m.sfLen = append(m.sfLen, make([]int32, m.n)...)
	}
	m.slab[f] = sl
	base := int(sl) * m.n
	m.incast[fl.Dst]++
	m.outcast[fl.Src]++
	for j := 0; j < m.n; j++ {
		m.sfLen[base+j] = -1
		m.sfT[base+j] = 0
		if j == fl.Src || m.failed[j] {
			m.sfState[base+j] = sfIdle
			continue
		}
		m.sfState[base+j] = sfListed
		m.listAppend(m.idx(fl.Src, j), int32(f))
	}
}

func (m *sim) listAppend(x int, f int32) {
	var e int32
	if m.candFree >= 0 {
		e = m.candFree
		m.candFree = m.candNext[e]
		m.candNext[e], m.candFlow[e] = -1, f
	} else {
		e = int32(len(m.candNext))
		m.candNext = append(m.candNext, -1)
		m.candFlow = append(m.candFlow, f)
	}
	if m.p[x].cTail >= 0 {
		m.candNext[m.p[x].cTail] = e
	} else {
		m.p[x].cHead = e
	}
	m.p[x].cTail = e
	m.p[x].cCount++
}

// release moves eligible local subflows of (i, j) into Q_ij: the first one
// (ready queues: at most one local cell in Q_ij) or all of them.
func (m *sim) release(i, j, x int, slot int64) {
	prev, e := int32(-1), m.p[x].cHead
	for e >= 0 {
		nx := m.candNext[e]
		f := m.candFlow[e]
		ok, stale := false, true
		if !m.done[f] && m.unassigned[f] > 0 {
			sf := int(m.slab[f])*m.n + j
			if m.sfState[sf] == sfListed {
				stale = false
				ok = m.eligible(f, sf, x, slot)
				if ok {
					m.sfState[sf] = sfQueued
					m.p[x].cCount--
				}
			}
		}
		if stale || ok {
			if prev >= 0 {
				m.candNext[prev] = nx
			} else {
				m.p[x].cHead = nx
			}
			if m.p[x].cTail == e {
				m.p[x].cTail = prev
			}
			m.candNext[e] = m.candFree
			m.candFree = e
		} else {
			prev = e
		}
		if ok {
			m.enqueue(i, x, f, true, j)
			m.unassigned[f]--
			if m.unassigned[f] == 0 {
				m.unlist(int(f))
			}
			if !m.o.NoReadyQueues {
				return
			}
		}
		e = nx
	}
}

// eligible applies the release rule (Eq. 2) and, unless turned off, the
// new-flow rule of §3.3.3 to subflow sf of flow f at pair x.
func (m *sim) eligible(f int32, sf, x int, slot int64) bool {
	E := int64(m.E)
	qlen := int64(m.p[x].qLen)
	if m.sfLen[sf] >= 0 && (slot-m.sfT[sf])+qlen*E < int64(m.sfLen[sf])*E {
		return false
	}
	if !m.o.NoNewFlowRule {
		if age := (slot - m.startSlot[f]) / E; age < 40 && qlen > int64(1)<<age {
			return false
		}
	}
	return true
}

// ready counts the local subflows of node i through k that satisfy the
// release rule now: len(R_ik) of Eq. 4 and 6.
func (m *sim) ready(i, k, y int, slot int64) int32 {
	var r int32
	for e := m.p[y].cHead; e >= 0; e = m.candNext[e] {
		f := m.candFlow[e]
		if m.done[f] || m.unassigned[f] == 0 {
			continue
		}
		sf := int(m.slab[f])*m.n + k
		if m.sfState[sf] == sfListed && m.eligible(f, sf, y, slot) {
			r++
		}
	}
	return r
}

// unlist drops a flow that has no cells left to assign from every candidate
// list it is on (its entries are freed lazily by release).
func (m *sim) unlist(f int) {
	base := int(m.slab[f]) * m.n
	src := m.flows[f].Src
	for j := 0; j < m.n; j++ {
		if m.sfState[base+j] == sfListed {
			m.sfState[base+j] = sfIdle
			m.p[m.idx(src, j)].cCount--
		}
	}
}

// enqueue appends a cell of flow f to the queue at pair index x of node i,
// the queue whose cells go to node next: forwarded cells bound for next,
// local cells passing through it.
func (m *sim) enqueue(i, x int, f int32, local bool, next int) {
	var e int32
	if m.cellFree >= 0 {
		e = m.cellFree
		m.cellFree = m.cells[e].next
		m.cells[e] = cellEntry{next: -1, flow: f, local: local}
	} else {
		e = int32(len(m.cells))
		m.cells = append(m.cells, cellEntry{next: -1, flow: f, local: local})
	}
	pp := &m.p[x]
	if pp.qTail >= 0 {
		m.cells[pp.qTail].next = e
	} else {
		pp.qHead = e
	}
	pp.qTail = e
	pp.qLen++
	if local {
		pp.qLocal++
	}
	m.nodeQ[i]++
	if q := int(pp.qLen); q > m.res.MaxQueue {
		m.res.MaxQueue = q
	}
	if q := int(m.nodeQ[i]); q > m.res.MaxNodeQueue {
		m.res.MaxNodeQueue = q
	}
	bound := 1 + m.incast[next] // Eq. 5
	if m.o.NoReadyQueues {
		bound = m.outcast[i] + m.incast[next] // Eq. 3
	}
	if pp.qLen > bound {
		m.res.BoundViolations++
	}
}

func (m *sim) transmit(i, j, x int, slot int64, out *[]inflight) {
	pp := &m.p[x]
	if pp.cHead >= 0 && (m.o.NoReadyQueues || pp.qLocal == 0) {
		m.release(i, j, x, slot)
	}
	cell := inflight{to: int32(j), from: int32(i), flow: -1, fbFlow: -1}
	if h := pp.qHead; h >= 0 {
		ce := &m.cells[h]
		f, local := ce.flow, ce.local
		pp.qHead = ce.next
		if pp.qHead < 0 {
			pp.qTail = -1
		}
		ce.next = m.cellFree
		m.cellFree = h
		pp.qLen--
		m.nodeQ[i]--
		cell.flow, cell.local = f, local
		if local {
			pp.qLocal--
			cell.final = m.dst[f]
			sf := int(m.slab[f])*m.n + j
			m.sfState[sf] = sfOutstanding
			if m.o.IgnoreFeedback && m.unassigned[f] > 0 {
				m.sfState[sf] = sfListed
				m.listAppend(x, f)
			}
		} else {
			cell.final = int32(j)
			m.res.Forwarded++
		}
		m.res.DataCells++
	} else {
		m.res.EmptyCells++
	}
	if f := pp.recvFlow; f >= 0 {
		// Rate-limit feedback about the queue the last local cell from j
		// went into (Eq. 1; Eq. 6 with ready queues): what stands in
		// front of j's subflow on the link i→k.
		cell.fbFlow = f
		if k := pp.recvQueue; k >= 0 {
			y := m.idx(i, int(k))
			cell.fbLen = m.p[y].qLen
			if !m.o.NoReadyQueues {
				cell.fbLen += m.ready(i, int(k), y, slot)
			}
		}
		pp.recvFlow = -1
	}
	if cell.flow >= 0 || cell.fbFlow >= 0 {
		*out = append(*out, cell)
	}
}

// arrive processes a cell at its receiver; it reports whether a flow
// completed.
func (m *sim) arrive(c inflight, slot int64) bool {
	j, i := int(c.to), int(c.from)
	if f := c.fbFlow; f >= 0 && !m.done[f] {
		sf := int(m.slab[f])*m.n + i
		if m.sfState[sf] == sfOutstanding {
			m.sfT[sf], m.sfLen[sf] = slot-int64(m.d), c.fbLen
			if m.unassigned[f] > 0 {
				m.sfState[sf] = sfListed
				y := m.idx(j, i)
				m.listAppend(y, f)
				if m.o.NoReadyQueues || m.p[y].qLocal == 0 {
					m.release(j, i, y, slot)
				}
			} else {
				m.sfState[sf] = sfIdle
			}
		}
	}
	if c.flow < 0 {
		return false
	}
	f := c.flow
	x := m.idx(j, i)
	if int(c.final) != j {
		// First hop: j is the intermediate node; the cell joins Q_jk.
		k := int(c.final)
		m.enqueue(j, m.idx(j, k), f, false, k)
		m.p[x].recvFlow, m.p[x].recvQueue = f, c.final
		return false
	}
	if c.local {
		// Direct subflow: no queue at j to report, but the source still
		// waits for feedback.
		m.p[x].recvFlow, m.p[x].recvQueue = f, -1
	}
	// The cell's last byte left at the end of its send slot and took PropNS.
	at := float64(slot-int64(m.d)+1)*m.slotNS + m.c.PropNS
	m.delivered[f]++
	m.res.DeliveredPerNode[j]++
	if at >= m.measureFrom {
		m.window[f]++
	}
	if m.delivered[f] < m.flows[f].Cells {
		return false
	}
	m.done[f] = true
	m.endNS[f] = at
	fl := m.flows[f]
	m.incast[fl.Dst]--
	m.outcast[fl.Src]--
	m.free = append(m.free, m.slab[f])
	return true
}
