package shoal

import (
	"fmt"
	"math"
	"math/bits"
	"sort"
)

// Flow is one workload flow of a simulation — a transport connection, §7.3's
// Pareto flow: Cells cells from Src to Dst, arriving at StartNS. Bytes is the
// payload it carries, for goodput (0: Cells times the cell payload).
//
// Workload flows are not Shoal's flows. §3.3.2: "In Shoal, a flow refers to
// all layer-2 packets being exchanged between a pair of nodes. For network
// traffic, this includes all transport connections between the nodes."
// Simulate therefore serves the workload flows of one pair as one Shoal flow:
// they share the pair's N-1 subflows and its queue at the source, in arrival
// order, and count once in every incast and outcast degree (reading S1,
// see the package documentation). A workload flow's completion
// time is still its own: its last cell delivered minus its arrival.
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
	// catch such a NIC (the ignore-rate-limit fault); a Shoal NIC never does
	// this.
	IgnoreFeedback bool
}

// FlowResult is what happened to one workload flow.
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
	// NodeMaxQueue is, for each node i, the longest of its queues Q_ij
	// seen (MaxQueue is the largest of them).
	NodeMaxQueue []int
	// BoundViolations counts enqueues that took a queue past its bound at
	// that instant: Eq. 5, 1 + incast degree of the destination (Eq. 3,
	// outcast of the node + incast of the destination, with NoReadyQueues).
	BoundViolations int64
	// MaxIncast and MaxOutcast are the largest incast and outcast degrees
	// any node reached: Shoal flows — node pairs with cells not yet
	// delivered — into (out of) one node (§3.3.2: a flow is a pair, so two
	// workload flows of one pair count once).
	MaxIncast, MaxOutcast int
	// Joined counts the workload flows that arrived while a Shoal flow of
	// their pair was still live and joined it: queued behind the cells of
	// the pair's earlier workload flows still in the rack, or, when all of
	// those were delivered, inheriting its subflows' pending feedback
	// (§3.3.2).
	Joined int
	// ShoalFlows counts the Shoal flows the run started: one per pair and
	// period of activity.
	ShoalFlows int
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

// The state of one ordered pair (a, b) at node a is its queue Q_ab and the
// last local cell a received from b, awaiting its rate-limit feedback: the
// arrays qs and recv of sim. Pairs are stored in the order of their active
// bits (sim.bit): the pairs a slot serves, one column of the schedule per
// channel, are consecutive, and the next slot serves the next columns, so
// the visits of an epoch read the arrays from one end to the other, in an
// order the processor's prefetching follows, instead of jumping between N
// nodes' rows.
//
// What costs is what is read at random: a cell's arrival writes the queue
// it joins and recv of the pair that owes its feedback, and a feedback
// reads the length of a queue and looks for its sender's cell in it. A
// read the next instruction waits for costs most; a write does not hold
// the processor up. So the head of Q_ab is kept in the pair (queue), not
// in the cell pool: most queues hold one cell (the ready queues of §3.3.3
// and Eq. 5 keep them short), and its arrival writes it where the visit
// that sends it reads it, in the visits' order; only the cells behind it
// go to the pool, whose cells a visit would otherwise read at random. recv
// is an array of its own, so that the random writes to it touch four bytes
// a pair. Whether Q_ab is empty and whether a local cell waits in it are
// bits of their own (queued, localQ), read in place of the pair where the
// answer is all that is needed. The queue the last local cell joined is
// that cell's destination (its Shoal flow's dst), the receiver itself for
// a direct cell.

// recvFlow is the Shoal flow of recv[x], -1 none.
func (m *sim) recvFlow(x int) int32 { return int32(m.recv[x]) - 1 }

// queue is Q_ab: its head cell, kept with the pair, and the cells behind
// it, a circular list in the cell pool (rest is its last cell, whose next
// is the first). flow is the head cell's workload flow, ^flow (negative)
// for a local cell; its Shoal flow is the workload flow's (wflow.owner),
// so that a queue is eight bytes. rest is -1 when the head is alone or
// Q_ab is empty (its queued bit is clear).
type queue struct {
	rest, flow int32
}

// cellEntry is a cell waiting in a queue behind its head: flow is its
// workload flow, owner that flow's Shoal flow, ^owner (negative) for a
// local cell (kept with the cell: the feedback's place and the release of
// the next cell read it for every queued cell). meta, read only in the
// last cell, is how many cells the queue has behind its head.
type cellEntry struct {
	next, flow, owner int32
	meta              int32
}

// shoalFlow is one Shoal flow (§3.3.2): all traffic of one node pair while
// the pair has cells in the rack or a subflow awaiting feedback. Its workload
// flows are kept in arrival order; cells are assigned to its subflows from
// the first one that has cells left.
type shoalFlow struct {
	src, dst   int32
	slab       int32 // subflow state at [slab*N + intermediate]
	head, tail int32 // workload flows with cells left to release, FIFO
	livePos    int32 // its place in live[src]
	unassigned int64 // cells of its workload flows not yet released
	pending    int64 // cells not yet delivered
	startSlot  int64 // for the new-flow rule's age (§3.3.3)
	seq0       int64 // the sfSeq of its first subflow listed at its start (sfSeqFresh)
	waiting    int32 // subflows awaiting feedback (sfOutstanding)
	ended      bool
	// last: the last workload flow of its pair has joined it, so that no
	// workload flow will join it again (unlist).
	last bool
}

// wflow is the state of one workload flow, in one 64-byte struct because a
// cell's arrival reads and writes most of it.
type wflow struct {
	unassigned, delivered, window, startSlot, cells int64
	endNS                                           float64
	owner                                           int32 // its Shoal flow
	next                                            int32 // the next workload flow of the same Shoal flow
	done                                            bool
	lastOfPair                                      bool // no later workload flow has its pair (in start order)
}

// A subflow (a Shoal flow through one intermediate node) has its state in
// three arrays indexed alike ([slab*N + intermediate]), split by how often
// they are read: every visit of a pair scans the subflows of the source's
// live Shoal flows through the pair's node for the listed ones (one byte
// each, sfState), a release or a count of ready subflows reads the
// rate-limit state of the listed ones (sfRate), and only a list of two or
// more needs their order (sfSeq). A node visits its pairs in schedule
// order, so a live Shoal flow's bytes are read in runs and stay cached.
//
// The candidate list of (source i, intermediate j) — the ready queue R_ij
// and the subflows still waiting on Eq. 2 — is the subflows through j of
// i's live Shoal flows that are on it (sfInList), in the order they joined
// it (sfSeq): a node has few live Shoal flows, so listing a subflow is a
// write to its own state, not to a list shared by the pair.
const (
	sfStateMask uint8 = 3 // the subflow state, sfIdle … sfOutstanding
	sfInList    uint8 = 4 // the subflow is on its candidate list
	// sfRated: the subflow has had feedback, and sfRate holds its state;
	// before, it is due noFeedback and clear 0, and a new Shoal flow's
	// slab need not be written but for its state bytes.
	sfRated uint8 = 8
	// sfSeqFresh: the subflow joined its list when its Shoal flow started,
	// in node order, and its sfSeq is implicit (seqOf): a new Shoal flow
	// lists all its subflows, and need not write their order.
	sfSeqFresh uint8 = 16
)

// subRate is a subflow's rate-limit state.
type subRate struct {
	// due is the slot its last feedback lets it release a cell with an
	// empty queue ahead: Eq. 2 allows a release in slot s behind qlen cells
	// once s + qlen·E ≥ t + len·E, t the send slot of the reply carrying
	// the feedback and len its queue length; noFeedback before any (the
	// subflow is not sfRated).
	due int64
	// clear is reading S40's slot in which the subflow's last cell leaves
	// the intermediate's queue, 0 when it has left already.
	clear int64
}

// nodeState is what a node counts across its pairs, in one place because
// an enqueue reads and writes most of it.
type nodeState struct {
	q               int32 // cells queued at the node over all its Q_ij
	maxQ            int32 // the longest of its Q_ij seen (NodeMaxQueue)
	incast, outcast int32 // Shoal flows with cells in the rack into, out of it
}

// noFeedback is subRate.due before a subflow's first feedback: Eq. 2 does
// not hold it back.
const noFeedback = math.MinInt64

// liveFlow is an entry of a node's list of live Shoal flows.
type liveFlow struct {
	f int32
	// base is its slab·N: the subflow through j is at base + j. It fits
	// in 32 bits: 2^31 subflows would be over 50 GB of subflow state.
	base int32
}

// dataCell is a cell on its way to its receiver, acted on DelaySlots after
// the start of its send slot.
type dataCell struct {
	flow            int32  // workload flow
	owner           int32  // its Shoal flow
	to, from, final uint16 // nodes (< MaxNodes)
	local           bool   // first hop of the cell (from == source of the flow)
	// col is the place of the cell's column among its send slot's
	// (< MaxChannels): col and from give the order in which the cells of
	// a slot were sent (arrivals).
	col uint8
}

// emptiedFlow is a Shoal flow whose last cell in the rack arrivals has
// delivered: its pair no longer counts in the degrees of its nodes from
// the cell's place in its slot's send order (sendOrder) on.
type emptiedFlow struct {
	src, dst int32
	order    int
}

// sendOrder is the place of cell c in the order its slot sent its cells:
// by column, then by sender.
func sendOrder(c *dataCell) int { return int(c.col)<<16 | int(c.from) }

// feedback is the rate-limit feedback of a cell's header (Eq. 1, Eq. 6),
// usable FeedbackSlots after the start of its send slot (reading S2).
type feedback struct {
	// nodes is to | from<<16 (nodes < MaxNodes): with four fields the
	// struct is built in registers, not on the stack.
	nodes  uint32
	flow   int32 // Shoal flow
	length int32
	// clear is the slot in which the subflow's previous cell leaves the
	// intermediate's queue, 0 when it has left already (reading S40).
	clear int64
}

// sim holds the flat arrays of one run.
type sim struct {
	c         Config
	o         SimOptions
	s         *Schedule
	n, E      int
	d, fb     int // DelaySlots (whole cells), FeedbackSlots (headers)
	slotNS    float64
	failed    []bool
	anyFailed bool
	flows     []Flow
	wf        []wflow // per workload flow
	// Shoal flows, in the order they started; the live one of each pair
	sf       []shoalFlow
	pairFlow []int32 // [src*N + dst], -1 none
	// live lists each node's live Shoal flows (as source), in no order,
	// with their slabs: a visit of a pair reads the subflow state of each.
	// liveLen is how many, and liveOne the first: most nodes with live
	// flows have one, and listedOne reads it from an array of N entries
	// rather than through the node's list (a load less before the
	// subflow's state).
	live    [][]liveFlow
	liveOne []liveFlow
	liveLen []int32
	// per Shoal-flow slab, [slab*N + intermediate]: see sfStateMask
	sfState []uint8
	sfRate  []subRate
	sfSeq   []int64
	free    []int32
	seq     int64 // candidate-list order (sfSeq)
	// per ordered pair (a, b), at its active bit (bit): qs is Q_ab, its
	// cells valid while its queued bit is set; recv is recvFlow+1,
	// recvFlow the Shoal flow of the last local cell a received from b
	// (awaiting its rate-limit feedback), -1 none. Whether a local cell
	// waits in Q_ab is a bit of localQ: a cell's arrival sets recv without
	// reading it.
	qs   []queue
	recv []uint32
	// active has a bit per pair that may have something to send: a queued
	// cell, a listed subflow or feedback to return. It is a superset (bits
	// are set when one of those appears and cleared when a visit finds
	// none), so that a slot visits only those pairs and counts the others
	// as empty cells without touching them. Bit ((b-a) mod N)·N + a is
	// pair (a, b): one column of the schedule (every node a sending to
	// a+t) is a run of bits.
	active []uint64
	// slotOf[t] is the slot of the epoch in which every node a sends to
	// a+t (the schedule is static); halfSlot the two slots of offset N/2
	// when the propagation-aware schedule splits it (halves).
	slotOf   []int32
	halfSlot [2]int32
	halves   bool
	slotMod  int // the current slot modulo E (see wait)
	// failedIn[q] counts the pairs of column q of the schedule (slot·C +
	// channel) that touch a failed node: their slots are unused, not empty.
	failedIn []int32
	// queued, owed and localQ have a bit per pair, as active: Q_ab is not
	// empty, a owes b feedback (recv > 0), a local cell waits in Q_ab
	// (with ready queues at most one does, §3.3.3; without them it is not
	// kept). liveBits has a bit per node with live Shoal flows (and a word
	// of zeros beyond). column sorts its visits with them. A pair's bits
	// are read where the pair itself is not: a bitmap stays cached, the
	// pairs, read at random, often do not.
	queued, owed, localQ []uint64
	liveBits             []uint64
	cand                 []liveFlow // see releaseList
	candSeq              []int64    // their sfSeq (releaseList)
	// direct: release handed the visit a local cell (directFlow, of Shoal
	// flow directOwner) to send at once (a release's direct)
	direct                  bool
	directFlow, directOwner int32
	// failedBelow[j] counts the failed nodes below j (seqOf).
	failedBelow []int32
	// out and fbOut collect the cells and feedback sent in the current
	// slot (the buckets of the rings they will be acted on from).
	out   []dataCell
	fbOut []feedback
	// cell pool (singly linked lists)
	cells    []cellEntry
	cellFree int32
	// per node
	node                 []nodeState
	maxNodeQ             int32 // SimResult.MaxNodeQueue
	dataCells, forwarded int64 // SimResult.DataCells, Forwarded
	boundViolations      int64 // SimResult.BoundViolations
	// dataRing holds the cells on their way to their destination (the
	// last hop), hopRing those on their way to their intermediate node
	// (the first): arrivals acts on each kind in a loop of its own.
	dataRing, hopRing [][]dataCell
	hopOut            []dataCell // the current slot's hopRing bucket (see out)
	// emptied lists the Shoal flows whose last cell arrivals delivered in
	// the current slot (see arrivals).
	emptied     []emptiedFlow
	fbRing      [][]feedback
	res         *SimResult
	measureFrom float64
}

// Simulate runs a slot-level simulation of a Shoal rack (§3.3): the static
// schedule, detour routing through one intermediate node, per-destination
// queues served once per epoch, empty cells when nothing is queued, the
// rate-limit feedback of Eq. 1/6 and the release rule of Eq. 2, and, unless
// turned off, the ready queues and new-flow rule of §3.3.3. The workload
// flows of one node pair form one Shoal flow (§3.3.2). It is deterministic:
// the same flows give the same result. See the package documentation for
// the exact rules.
func Simulate(c Config, flows []Flow, o SimOptions) (*SimResult, error) {
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("simulate: %w", err)
	}
	s, err := NewSchedule(c.Nodes, c.Channels, c.Schedule)
	if err != nil {
		return nil, fmt.Errorf("simulate: %w", err)
	}
	m := &sim{c: c, o: o, s: s, n: c.Nodes, E: s.EpochSlots(), d: c.DelaySlots(), fb: c.FeedbackSlots(), slotNS: c.SlotNS,
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
	m.wf = make([]wflow, F)
	for k, f := range m.flows {
		m.wf[k] = wflow{unassigned: f.Cells, cells: f.Cells, startSlot: int64(math.Ceil(f.StartNS/m.slotNS - 1e-9)), owner: -1, next: -1}
	}
	m.pairFlow = make([]int32, n*n)
	for i := range m.pairFlow {
		m.pairFlow[i] = -1
	}
	m.live = make([][]liveFlow, n)
	m.liveOne, m.liveLen = make([]liveFlow, n), make([]int32, n)
	m.qs, m.recv = make([]queue, n*n), make([]uint32, n*n)
	m.active = make([]uint64, (n*n+63)/64)
	m.queued, m.owed, m.localQ = make([]uint64, len(m.active)), make([]uint64, len(m.active)), make([]uint64, len(m.active))
	m.liveBits = make([]uint64, (n+63)/64+1)
	for i := range m.qs {
		m.qs[i].rest = -1
	}
	m.slotOf = make([]int32, n)
	m.failedIn = make([]int32, len(m.s.cols))
	for q, col := range m.s.cols {
		if col.Offset == 0 {
			continue
		}
		if slot := int32(q / m.s.channels); col.Half == 0 {
			m.slotOf[col.Offset] = slot
		} else {
			m.halfSlot[col.Half-1], m.halves = slot, true
		}
		if m.anyFailed {
			for i := 0; i < n; i++ {
				if col.Includes(i, n) && (m.failed[i] || m.failed[(i+col.Offset)%n]) {
					m.failedIn[q]++
				}
			}
		}
	}
	m.cellFree = -1
	if m.anyFailed {
		m.failedBelow = make([]int32, n)
		for j := 1; j < n; j++ {
			m.failedBelow[j] = m.failedBelow[j-1]
			if m.failed[j-1] {
				m.failedBelow[j]++
			}
		}
	}
	m.node = make([]nodeState, n)
	m.dataRing, m.hopRing = make([][]dataCell, m.d+1), make([][]dataCell, m.d+1)
	for i := range m.dataRing {
		m.dataRing[i] = make([]dataCell, 0, n*m.c.Channels)
		m.hopRing[i] = make([]dataCell, 0, n*m.c.Channels)
	}
	m.fbRing = make([][]feedback, m.fb+1)
	for i := range m.fbRing {
		m.fbRing[i] = make([]feedback, 0, n*m.c.Channels)
	}
	m.res = &SimResult{Flows: make([]FlowResult, F), DeliveredPerNode: make([]int64, n), NodeMaxQueue: make([]int, n)}
}

// bit is the index of pair (a, b) in active, qs and recv.
func (m *sim) bit(a, b int) int {
	return wrap(b-a, m.n)*m.n + a
}

// wrap is v mod n for v in (-n, n), without a branch: whether the offset
// between two random nodes is negative cannot be predicted, and a
// mispredicted branch costs more than the arithmetic.
func wrap(v, n int) int { return v + n&(v>>63) }

// when is the slot of the epoch in which node a sends to node b
// (Schedule.When, without its N² table).
func (m *sim) when(a, b int) int32 {
	off := wrap(b-a, m.n)
	if m.halves && 2*off == m.n {
		if 2*a < m.n {
			return m.halfSlot[0]
		}
		return m.halfSlot[1]
	}
	return m.slotOf[off]
}

func (m *sim) run(until float64) {
	// Workload flows start in arrival order (ties by index): the order in
	// which the NIC appends their cells to their pair's Shoal flow.
	order := make([]int32, len(m.flows))
	for k := range order {
		order[k] = int32(k)
	}
	sort.SliceStable(order, func(a, b int) bool { return m.flows[order[a]].StartNS < m.flows[order[b]].StartNS })
	seen := make([]uint64, (m.n*m.n+63)/64)
	for k := len(order) - 1; k >= 0; k-- {
		fl := &m.flows[order[k]]
		key := fl.Src*m.n + fl.Dst
		if seen[key>>6]&(1<<uint(key&63)) == 0 {
			seen[key>>6] |= 1 << uint(key&63)
			m.wf[order[k]].lastOfPair = true
		}
	}
	next, remaining := 0, len(m.flows)
	n := m.n
	var slot int64
	for ; ; slot++ {
		if float64(slot)*m.slotNS >= until {
			break
		}
		m.slotMod = int(slot % int64(m.E))
		for next < len(order) && m.wf[order[next]].startSlot <= slot {
			m.activate(int(order[next]), slot)
			next++
		}
		// Feedback is usable from the slot boundary after the reply
		// cell's header is in, cells once wholly received; of the two
		// that become usable at this boundary, the one that came in
		// first acts first (reading S63: a released cell takes its place
		// among the forwarded cells by that moment). A cell of slot
		// slot-d is wholly in at (slot-d+1)·S + prop + pipelines, a header
		// of slot slot-fb at (slot-fb)·S + guard + prop + pipelines: the
		// cell first exactly when d > fb (the guard is shorter than a
		// slot).
		fbBucket := &m.fbRing[slot%int64(m.fb+1)]
		bucket, hops := &m.dataRing[slot%int64(m.d+1)], &m.hopRing[slot%int64(m.d+1)]
		if m.d > m.fb {
			remaining -= m.arrivals(*bucket, *hops, slot)
			m.feedbacks(*fbBucket, slot)
		} else {
			m.feedbacks(*fbBucket, slot)
			remaining -= m.arrivals(*bucket, *hops, slot)
		}
		*fbBucket = (*fbBucket)[:0]
		*bucket, *hops = (*bucket)[:0], (*hops)[:0]
		if remaining == 0 && next == len(order) {
			slot++
			break
		}
		q0 := m.slotMod * m.c.Channels
		m.out = m.dataRing[(slot+int64(m.d))%int64(m.d+1)]
		m.hopOut = m.hopRing[(slot+int64(m.d))%int64(m.d+1)]
		m.fbOut = m.fbRing[(slot+int64(m.fb))%int64(m.fb+1)]
		for q := q0; q < q0+m.c.Channels; q++ {
			col := m.s.cols[q]
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
			// Slots to or from a failed node are unused (§3.5), not empty;
			// the rest carry a cell or go empty (less DataCells at the end).
			m.res.EmptyCells += int64(hi - lo - int(m.failedIn[q]))
			m.column(col.Offset*n, col.Offset, lo, hi, q-q0, slot)
		}
		m.dataRing[(slot+int64(m.d))%int64(m.d+1)] = m.out
		m.hopRing[(slot+int64(m.d))%int64(m.d+1)] = m.hopOut
		m.fbRing[(slot+int64(m.fb))%int64(m.fb+1)] = m.fbOut
	}
	m.res.DataCells, m.res.Forwarded, m.res.BoundViolations = m.dataCells, m.forwarded, m.boundViolations
	m.res.EmptyCells -= m.dataCells
	m.res.MaxNodeQueue = int(m.maxNodeQ)
	for i, nd := range m.node {
		// MaxQueue rose whenever a node's longest queue did.
		m.res.NodeMaxQueue[i] = int(nd.maxQ)
		m.res.MaxQueue = max(m.res.MaxQueue, int(nd.maxQ))
	}
	m.res.Slots = slot
	m.res.EndNS = float64(slot) * m.slotNS
	m.res.ShoalFlows = len(m.sf)
	for k := range m.flows {
		r := &m.res.Flows[k]
		r.Delivered, r.Window, r.Done = m.wf[k].delivered, m.wf[k].window, m.wf[k].done
		if m.wf[k].done {
			r.EndNS = m.wf[k].endNS
		} else {
			r.EndNS = math.Max(m.res.EndNS, m.flows[k].StartNS)
		}
	}
}

// column serves the pairs of bits base+lo .. base+hi-1 (nodes i sending to
// j = i+offset), visiting only the pairs whose active bit is set: every
// other pair sends an empty cell. A visit is node i's slot to node j: a
// release (when i has live Shoal flows), the head of Q_ij or an empty cell,
// and the feedback i owes j. col is the column's place among the slot's
// (arrivals orders the cells sent by it and the sender).
//
// The visits of 64 pairs at a time are sorted by kind with a few word
// operations on the pairs' bits (queued, owed) and the nodes' (liveBits),
// and each kind is served in a loop of its own: which kind comes next
// cannot be predicted, and a branch on it per visit was mispredicted about
// every other visit. Pairs with only a forwarded cell to send (no live
// Shoal flow at the node, no feedback owed) and pairs with only feedback to
// send take short loops; the rest, fullVisits. The visits of one column are
// independent: each reads and writes its own node's queues, flows and
// pairs, and counters whose sums and maxima do not depend on the order.
// What they send is acted on in an order of its own: the cells on their
// first hop (hopOut) are all sent by fullVisits, in node order; the order
// of the cells on their last hop does not matter (see arrivals); and the
// feedback of one column reaches each node from one sender and is acted on
// per (source, intermediate) pair.
func (m *sim) column(base, offset, lo, hi, col int, slot int64) {
	n := m.n
	active, queued, owed, qs := m.active, m.queued, m.owed, m.qs
	// The cells sent go to out[len(m.out):], whose capacity (a cell per
	// node and channel) a slot cannot exceed: nOut is the one value that
	// grows, not a slice header.
	out, nOut := m.out[:cap(m.out)], len(m.out)
	offN := offset - n
	first, last := base+lo, base+hi-1
	for w := first >> 6; w <= last>>6; w++ {
		a := active[w]
		if w<<6 < first {
			a &^= 1<<uint(first-w<<6) - 1
		}
		if end := w<<6 + 63; end > last {
			a &^= ^uint64(0) << uint(last-w<<6+1)
		}
		if a == 0 {
			continue
		}
		// Bit b of the word is pair (i, i+offset) for node i = w·64 - base + b.
		live := m.liveWord(w<<6 - base)
		q, o := queued[w], owed[w]
		fwd := a & q &^ o &^ live
		fb := a & o &^ q &^ live
		full := a & (live | q&o)
		// Nothing queued, no feedback owed and no live flow: nothing to
		// send until a mark.
		active[w] &^= a &^ (live | q | o)
		if fwd != 0 {
			for bs := fwd; bs != 0; bs &= bs - 1 {
				// Only the head of Q_ij to send, a forwarded cell (a local
				// cell's Shoal flow is live), on its last hop.
				b := bits.TrailingZeros64(bs)
				x := w<<6 + b
				i := x - base
				qx := &qs[x]
				oc := &out[nOut] // written in place: a cell literal goes through the stack
				nOut++
				oc.flow, oc.owner = qx.flow, m.wf[qx.flow].owner
				j := wrap(i+offN, n)
				oc.to, oc.from, oc.final, oc.local, oc.col = uint16(j), uint16(i), uint16(j), false, uint8(col)
				if qx.rest < 0 {
					active[w] &^= 1 << uint(b) // nothing left to send
					queued[w] &^= 1 << uint(b)
				} else {
					m.popRest(qx)
				}
				m.node[i].q--
			}
			c := int64(bits.OnesCount64(fwd))
			m.forwarded += c
			m.dataCells += c
		}
		if full != 0 {
			m.out = out[:nOut]
			m.fullVisits(w, full, live, base, offset, col, slot)
			nOut = len(m.out)
		}
		for bs := fb; bs != 0; bs &= bs - 1 {
			// Only feedback to send, in an empty cell.
			b := bits.TrailingZeros64(bs)
			x := w<<6 + b
			i := x - base
			m.sendFeedback(i, wrap(i+offN, n), x, 0, slot) // no live flow, none ready
			active[w] &^= 1 << uint(b)
		}
	}
	m.out = out[:nOut]
}

// liveWord is 64 bits of liveBits from node s on (s > -64; bits below
// node 0 are 0): the live bits of the nodes of one word of pair bits.
func (m *sim) liveWord(s int) uint64 {
	lb := m.liveBits
	if s < 0 {
		return lb[0] << uint(-s)
	}
	q, r := s>>6, uint(s&63)
	return lb[q]>>r | lb[q+1]<<(64-r) // a shift by 64 is 0
}

// fullVisits serves the visits of the pairs of bits full of active word w
// (column; liveW its nodes' liveBits) whose node has live Shoal flows or
// that have a cell and feedback to send: a release (when the node has live Shoal flows), the
// head of Q_ij, and the feedback owed. The visit's common steps are written
// out here rather than called: a slot visits hundreds of pairs.
func (m *sim) fullVisits(w int, full, liveW uint64, base, offset, col int, slot int64) {
	n := m.n
	active, queued, localQ, qs, recv := m.active, m.queued, m.localQ, m.qs, m.recv
	noReady, ignoreFeedback := m.o.NoReadyQueues, m.o.IgnoreFeedback
	// Cells on their last hop go to out, on their first to hop (see
	// column's out).
	out, nOut := m.out[:cap(m.out)], len(m.out)
	hop, nHop := m.hopOut[:cap(m.hopOut)], len(m.hopOut)
	offN := offset - n
	for ; full != 0; full &= full - 1 {
		b := bits.TrailingZeros64(full)
		x := w<<6 + b
		i := x - base
		anyLive := liveW>>uint(b)&1 != 0 // len(m.live[i]) > 0
		j := wrap(i+offN, n)
		// listed: the pair may have something to send at its next
		// visit (a listed subflow or a queued cell).
		listed := anyLive
		if anyLive && (noReady || localQ[w]>>uint(b)&1 == 0) {
			// release, written out: one call less for the list of one.
			switch one, nl := m.listedOne(i, j); {
			case nl == 1:
				_, left := m.releaseOne(i, j, x, one, slot, !noReady)
				listed = !left
			case nl > 1:
				listed = m.releaseList(i, j, x, slot, !noReady)
			default:
				listed = false
			}
			if m.direct {
				// Released into the empty Q_ij: its head, sent now
				// (the local cell's steps below).
				m.direct = false
				s := &m.sf[m.directOwner]
				var oc *dataCell
				if int(s.dst) != j {
					oc = &hop[nHop]
					nHop++
				} else {
					oc = &out[nOut] // a direct subflow: j is the destination
					nOut++
				}
				oc.flow, oc.owner = m.directFlow, m.directOwner
				oc.to, oc.from, oc.final, oc.local, oc.col = uint16(j), uint16(i), uint16(s.dst), true, uint8(col)
				if !ignoreFeedback {
					sf := int(s.slab)*n + j
					m.sfState[sf] = m.sfState[sf]&^sfStateMask | sfOutstanding
					s.waiting++
				} else if m.sentIgnoringFeedback(s, j, x) {
					listed = true
				}
				m.dataCells++
			}
		}
		if queued[w]>>uint(b)&1 != 0 {
			qx := &qs[x]
			flow := qx.flow
			local := flow < 0
			flow ^= flow >> 31
			owner := m.wf[flow].owner
			if qx.rest < 0 {
				queued[w] &^= 1 << uint(b)
			} else {
				m.popRest(qx)
			}
			m.node[i].q--
			if local {
				localQ[w] &^= 1 << uint(b)
				s := &m.sf[owner]
				var oc *dataCell
				if int(s.dst) != j {
					oc = &hop[nHop]
					nHop++
				} else {
					oc = &out[nOut] // a direct subflow: j is the destination
					nOut++
				}
				oc.flow, oc.owner = flow, owner
				oc.to, oc.from, oc.final, oc.local, oc.col = uint16(j), uint16(i), uint16(s.dst), true, uint8(col)
				if !ignoreFeedback {
					// The subflow awaits its feedback.
					sf := int(s.slab)*n + j
					m.sfState[sf] = m.sfState[sf]&^sfStateMask | sfOutstanding
					s.waiting++
				} else if m.sentIgnoringFeedback(s, j, x) {
					listed = true
				}
			} else {
				oc := &out[nOut]
				nOut++
				oc.flow, oc.owner = flow, owner
				oc.to, oc.from, oc.final, oc.local, oc.col = uint16(j), uint16(i), uint16(j), false, uint8(col)
				m.forwarded++
			}
			m.dataCells++
		}
		if recv[x] != 0 {
			var ready int32
			if anyLive {
				ready = m.readyFor(i, x, slot)
			}
			m.sendFeedback(i, j, x, ready, slot)
		}
		if !listed && queued[w]>>uint(b)&1 == 0 {
			active[w] &^= 1 << uint(b) // nothing left to send: the next visit can wait for a mark
		}
	}
	m.out, m.hopOut = out[:nOut], hop[:nHop]
}

// sentIgnoringFeedback is the state change of the subflow (of Shoal flow s
// through j, pair index x) whose local cell has just left, for a NIC that
// ignores feedback: it is listed again at once if the flow has cells left
// (reported), idle otherwise.
func (m *sim) sentIgnoringFeedback(s *shoalFlow, j, x int) bool {
	sf := int(s.slab)*m.n + j
	if s.unassigned > 0 {
		m.sfState[sf] = m.sfState[sf]&^sfStateMask | sfListed
		m.list(x, sf)
		return true
	}
	m.sfState[sf] &^= sfStateMask // sfIdle
	return false
}

// readyFor is the ready subflows the feedback node i owes at pair index x
// counts (sendFeedback's ready), for a node with live Shoal flows.
func (m *sim) readyFor(i, x int, slot int64) int32 {
	k := int(m.sf[m.recvFlow(x)].dst)
	if k == i || m.o.NoReadyQueues {
		return 0 // a direct cell, or Eq. 1
	}
	return m.ready(i, k, m.bit(i, k), slot)
}

// sendFeedback sends the rate-limit feedback node i owes j (pair index x)
// in the header of its cell to j; ready is len(R_ik) for Eq. 6 (readyFor),
// counted by the caller, which knows whether i has live Shoal flows: a
// branch on it here was mispredicted for a visit in four.
func (m *sim) sendFeedback(i, j, x int, ready int32, slot int64) {
	// Rate-limit feedback about the queue the last local cell from j
	// went into (reading S40): Eq. 1, len(Q_ik), without ready queues;
	// with them Eq. 6, len(Q_ik) + len(R_ik) - 1, and, while j's own
	// cell is still in Q_ik, the slot by which it will have left, so
	// that j's next cell of the subflow reaches i after it.
	f := m.recvFlow(x)
	m.recv[x] = 0
	m.owed[x>>6] &^= 1 << uint(x&63)
	nodes := uint32(j) | uint32(i)<<16
	k := int(m.sf[f].dst)
	if k == i {
		m.fbOut = append(m.fbOut, feedback{nodes: nodes, flow: f}) // a direct cell
		return
	}
	y := m.bit(i, k)
	if m.o.NoReadyQueues {
		m.fbOut = append(m.fbOut, feedback{nodes: nodes, flow: f, length: m.qLen(y)})
		return
	}
	// at: the place, counted from 1 at the head, of the last cell of
	// Shoal flow f among the forwarded cells of Q_ik, 0 when none is
	// there: Q_ik serves one cell an epoch, so that cell leaves in the
	// at-th slot of i to k from now. Q_ik is empty about a time in three,
	// unpredictably; its queued bit says so at once, while the queue
	// itself is seldom cached.
	var length, at int32
	if m.queued[y>>6]>>uint(y&63)&1 != 0 {
		// A local head's flow is negative: the head counts if it is a
		// forwarded cell of f.
		qy := &m.qs[y]
		hf := qy.flow
		length, at = 1, int32(b2i(m.wf[hf^hf>>31].owner == f)&int(^hf>>31&1))
		if t := qy.rest; t >= 0 {
			cells := m.cells
			length += cells[t].meta
			pos := int32(1)
			for e := cells[t].next; ; e = cells[e].next {
				pos++
				if cells[e].owner == f {
					at = pos
				}
				if e == t {
					break
				}
			}
		}
	}
	// The first slot after this one in which i sends to k, and the slot
	// the cell at leaves in; 0 when there is none (computed anyway: at
	// is as unpredictable as the queue's emptiness).
	next := m.wait(i, k)
	if next == 0 {
		next = int64(m.E)
	}
	clr := slot + next + int64(at-1)*int64(m.E)
	if at == 0 {
		clr = 0
	}
	length = max(length+ready-1, 0)
	m.fbOut = append(m.fbOut, feedback{nodes: nodes, flow: f, length: length, clear: clr})
}

// b2i is 1 for true: the compiler sets it from the flags, without a branch.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// mark sets the active bit x.
func (m *sim) mark(x int) { m.active[x>>6] |= 1 << uint(x&63) }

// list puts subflow sf (of a Shoal flow of node i, through j; r is the
// pair index of (i, j)) at the tail of the candidate list of (i, j).
func (m *sim) list(r, sf int) {
	m.sfState[sf] = m.sfState[sf]&^sfSeqFresh | sfInList
	m.sfSeq[sf] = m.seq
	m.seq++
	m.mark(r)
}

// activate hands a workload flow to its pair's Shoal flow, starting one if
// the pair has none live: its cells queue behind those of the pair's earlier
// workload flows, and every idle subflow of the pair through a working node
// goes on the candidate list of (source, intermediate).
func (m *sim) activate(k int, slot int64) {
	fl := m.flows[k]
	key := fl.Src*m.n + fl.Dst
	f := m.pairFlow[key]
	fresh := f < 0
	if fresh {
		f = m.start(fl.Src, fl.Dst, slot)
	} else {
		m.res.Joined++
	}
	m.pairFlow[key] = f
	m.wf[k].owner = f
	s := &m.sf[f]
	s.last = m.wf[k].lastOfPair
	if s.head < 0 {
		s.head, s.tail = int32(k), int32(k)
	} else {
		m.wf[s.tail].next = int32(k)
		s.tail = int32(k)
	}
	if s.pending == 0 {
		// The pair has cells in the rack again: it counts in the degrees.
		m.node[fl.Dst].incast++
		m.node[fl.Src].outcast++
		m.res.MaxIncast = max(m.res.MaxIncast, int(m.node[fl.Dst].incast))
		m.res.MaxOutcast = max(m.res.MaxOutcast, int(m.node[fl.Src].outcast))
	}
	s.pending += fl.Cells
	wasEmpty := s.unassigned == 0
	s.unassigned += fl.Cells
	if !wasEmpty {
		return // its subflows are listed, queued or awaiting feedback already
	}
	base := int(s.slab) * m.n
	if fresh {
		// A new Shoal flow: every subflow is idle and off the lists, so
		// each through a working node joins its list (in node order, as
		// below) without the tests.
		n, src := m.n, fl.Src
		state := m.sfState[base : base+n]
		s.seq0 = m.seq
		if m.anyFailed {
			for j := range state {
				if j == src || m.failed[j] {
					continue
				}
				state[j] = sfListed | sfInList | sfSeqFresh
				m.seq++
				m.mark(wrap(j-src, n)*n + src)
			}
			return
		}
		for j := range state {
			state[j] = sfListed | sfInList | sfSeqFresh
		}
		state[src] = sfIdle
		m.seq += int64(n - 1)
		// The bits of (src, j) for j ≠ src: one per column, N apart.
		active := m.active
		for r := n + src; r < n*n; r += n {
			active[r>>6] |= 1 << uint(r&63)
		}
		return
	}
	for j := 0; j < m.n; j++ {
		sf := base + j
		st := m.sfState[sf]
		if j == fl.Src || m.failed[j] || st&sfStateMask != sfIdle {
			continue
		}
		m.sfState[sf] = st | sfListed
		if st&sfInList == 0 {
			m.list(m.bit(fl.Src, j), sf)
		}
	}
}

// start creates the Shoal flow of a pair, with fresh subflows.
func (m *sim) start(src, dst int, slot int64) int32 {
	var sl int32
	if k := len(m.free); k > 0 {
		sl, m.free = m.free[k-1], m.free[:k-1]
	} else {
		sl = int32(len(m.sfState) / m.n)
		m.sfState = append(m.sfState, make([]uint8, m.n)...)
		m.sfRate = append(m.sfRate, make([]subRate, m.n)...)
		m.sfSeq = append(m.sfSeq, make([]int64, m.n)...)
	}
	base := int(sl) * m.n
	clear(m.sfState[base : base+m.n]) // sfIdle, not listed, no feedback
	f := int32(len(m.sf))
	m.sf = append(m.sf, shoalFlow{src: int32(src), dst: int32(dst), slab: sl, head: -1, tail: -1, startSlot: slot,
		livePos: int32(len(m.live[src]))})
	m.live[src] = append(m.live[src], liveFlow{f: f, base: sl * int32(m.n)})
	m.liveOne[src] = m.live[src][0]
	m.liveLen[src]++
	m.liveBits[src>>6] |= 1 << uint(src&63)
	return f
}

// maybeEnd ends a Shoal flow once all its cells are delivered and none of
// its subflows awaits feedback: until then a new workload flow of the pair
// joins it and inherits its subflows' rate-limit state.
func (m *sim) maybeEnd(f int32) {
	s := &m.sf[f]
	if s.ended || s.pending > 0 || s.waiting > 0 {
		return
	}
	s.ended = true
	m.free = append(m.free, s.slab)
	m.pairFlow[int(s.src)*m.n+int(s.dst)] = -1
	l := m.live[s.src]
	last := l[len(l)-1]
	l[s.livePos] = last
	m.sf[last.f].livePos = s.livePos
	m.live[s.src] = l[:len(l)-1]
	m.liveOne[s.src] = l[0]
	m.liveLen[s.src]--
	if len(l) == 1 {
		m.liveBits[s.src>>6] &^= 1 << uint(s.src&63)
	}
}

// A release moves eligible local subflows of (i, j) — pair index r — into
// Q_ij: the first one of the candidate list (ready queues: at most one
// local cell in Q_ij) or all of them. Subflows that may no longer go (their
// Shoal flow has no cells left to assign, or they are no longer listed)
// leave the list as it is walked. A released subflow carries the next cell
// of its Shoal flow, which belongs to the earliest of the pair's workload
// flows with cells left (FIFO). fullVisits and feedbacks write it out (a
// call less): listedOne counts the list, releaseOne releases from a list of
// one and releaseList from a longer one; each reports whether subflows
// remain on the list (releaseOne: it did not leave it).
//
// direct: the caller is the visit of (i, j), which sends the head of Q_ij
// next; a cell released into the empty queue is not queued but handed to
// it (sim.direct), with the queue counters it would have moved.

// listedOne counts the subflows on the candidate list of (i, j) and
// returns one of them. It calls nothing, so that its loop keeps its
// values in registers. A node with one live Shoal flow (most) has one
// subflow through j, listed or not.
func (m *sim) listedOne(i, j int) (one liveFlow, listed int) {
	state := m.sfState
	if m.liveLen[i] == 1 {
		one = m.liveOne[i]
		return one, b2i(state[int(one.base)+j]&sfInList != 0)
	}
	for _, lf := range m.live[i] {
		if state[int(lf.base)+j]&sfInList != 0 {
			one = lf
			listed++
		}
	}
	return one, listed
}

// releaseList is release for a candidate list of two or more subflows.
func (m *sim) releaseList(i, j, r int, slot int64, direct bool) bool {
	c := m.cand[:0]
	for _, lf := range m.live[i] {
		if m.sfState[int(lf.base)+j]&sfInList != 0 {
			c = append(c, lf)
		}
	}
	m.cand = c
	// The list's order: when each subflow joined it (few entries).
	key := m.candSeq[:0]
	for _, lf := range c {
		key = append(key, m.seqOf(i, j, lf))
	}
	m.candSeq = key
	for a := 1; a < len(c); a++ {
		for b := a; b > 0 && key[b] < key[b-1]; b-- {
			c[b], c[b-1] = c[b-1], c[b]
			key[b], key[b-1] = key[b-1], key[b]
		}
	}
	remain := len(c)
	for _, lf := range c {
		ok, left := m.releaseOne(i, j, r, lf, slot, direct)
		if left {
			remain--
		}
		if ok && !m.o.NoReadyQueues {
			return remain > 0
		}
	}
	return remain > 0
}

// seqOf is the sfSeq of the subflow through j of live flow lf of node i:
// for one listed at its flow's start, the flow's seq0 plus the number of
// working nodes other than i below j.
func (m *sim) seqOf(i, j int, lf liveFlow) int64 {
	sf := int(lf.base) + j
	if m.sfState[sf]&sfSeqFresh == 0 {
		return m.sfSeq[sf]
	}
	rank := j
	if j > i {
		rank--
	}
	if m.anyFailed {
		rank -= int(m.failedBelow[j])
	}
	return m.sf[lf.f].seq0 + int64(rank)
}

// releaseOne is release for one listed subflow (of Shoal flow lf through
// j): ok if it released a cell into Q_ij, left if it left the list
// (released or stale). The release rule is eligible's, written out.
func (m *sim) releaseOne(i, j, r int, lf liveFlow, slot int64, direct bool) (ok, left bool) {
	f := lf.f
	s := &m.sf[f]
	sf := int(lf.base) + j
	st := m.sfState[sf]
	if s.unassigned == 0 || st&sfStateMask != sfListed {
		m.sfState[sf] = st &^ sfInList // stale: it leaves the list
		return false, true
	}
	E := int64(m.E)
	qlen := int64(m.qLen(r))
	if st&sfRated != 0 {
		sb := &m.sfRate[sf]
		if slot+qlen*E < sb.due ||
			sb.clear > 0 && slot+qlen*E+m.wait(i, j)+int64(m.d) <= sb.clear {
			return false, false // not eligible (see eligible): it keeps its place
		}
	}
	if !m.o.NoNewFlowRule && qlen > 1 && slot-s.startSlot < int64(min(bits.Len64(uint64(qlen-1)), 40))*E {
		return false, false
	}
	m.sfState[sf] = st&^(sfStateMask|sfInList) | sfQueued
	k := s.head
	if direct && qlen == 0 {
		// Enqueued and dequeued at once: the node's queue counters see it
		// (a queue of one is within Eq. 5's bound, 1 + incast ≥ 1), the
		// cell pool does not.
		nd := &m.node[i]
		nd.maxQ = max(nd.maxQ, 1)
		m.maxNodeQ = max(m.maxNodeQ, nd.q+1)
		m.direct, m.directFlow, m.directOwner = true, k, f
	} else {
		m.enqueueLocal(i, r, k, f, j)
	}
	w := &m.wf[k]
	w.unassigned--
	s.unassigned--
	if w.unassigned == 0 {
		s.head = w.next
		if s.head < 0 {
			s.tail = -1
		}
	}
	if s.unassigned == 0 {
		m.unlist(f)
	}
	return true, true
}

// eligible applies the release rule (Eq. 2) and, unless turned off, the
// new-flow rule of §3.3.3 to subflow sf of Shoal flow s through j, at pair
// index r.
// releaseOne applies the same three tests written out (it runs on nearly
// every visit): a change to one is a change to both.
func (m *sim) eligible(s *shoalFlow, sf, j, r int, slot int64) bool {
	E := int64(m.E)
	qlen := int64(m.qLen(r))
	sb := subRate{due: noFeedback} // before any feedback
	if m.sfState[sf]&sfRated != 0 {
		sb = m.sfRate[sf]
	}
	if slot+qlen*E < sb.due {
		return false
	}
	// The cell would leave behind the qlen cells of Q_ij, one an epoch,
	// and reach the intermediate d slots later: not before the previous
	// cell of its subflow has left the intermediate's queue (§3.3.2, the
	// invariant behind Eq. 3 and 5; reading S40).
	if cl := sb.clear; cl > 0 && slot+qlen*E+m.wait(int(s.src), j)+int64(m.d) <= cl {
		return false
	}
	// The new-flow rule: qlen > 2^age, age = (slot - start)/E in whole
	// epochs, for ages below 40. qlen > 2^age is age < bits.Len(qlen-1)
	// when qlen > 1 (and never when qlen ≤ 1), and age < a is
	// slot - start < a·E: no division.
	if !m.o.NoNewFlowRule && qlen > 1 {
		if a := int64(min(bits.Len64(uint64(qlen-1)), 40)); slot-s.startSlot < a*E {
			return false
		}
	}
	return true
}

// ready counts the local subflows of node i through k that satisfy the
// release rule now: len(R_ik) of Eq. 4 and 6 (y is the pair index of
// (i, k)).
func (m *sim) ready(i, k, y int, slot int64) int32 {
	var r int32
	for _, lf := range m.live[i] {
		sf := int(lf.base) + k
		if m.sfState[sf]&sfStateMask != sfListed {
			continue
		}
		if s := &m.sf[lf.f]; s.unassigned > 0 && m.eligible(s, sf, k, y, slot) {
			r++
		}
	}
	return r
}

// unlist takes the subflows of a Shoal flow that has no cells left to assign
// off their candidate lists. While a workload flow of the pair may still
// arrive, they leave the lists when a release walks them, or keep their
// place if that workload flow arrives first. Once none can (last), nothing
// would see them on the lists again but a release that would skip them, so
// they leave at once, and a pair with nothing else to send is not visited
// for them: its active bit is cleared (the next cell, feedback or listed
// subflow sets it again).
func (m *sim) unlist(f int32) {
	s := &m.sf[f]
	base := int(s.slab) * m.n
	state := m.sfState[base : base+m.n]
	if !s.last {
		for j, st := range state {
			if st&sfStateMask == sfListed {
				state[j] = st &^ sfStateMask // sfIdle
			}
		}
		return
	}
	i, n := int(s.src), m.n
	live := m.live[i]
	alone := len(live) == 1 // f itself: no other subflow of i is listed
	queued, owed, active := m.queued, m.owed, m.active
	for j, st := range state {
		if st&sfStateMask != sfListed {
			continue
		}
		// sfIdle, off the list; r is bit(i, j)
		state[j] = st &^ (sfStateMask | sfInList)
		r := wrap(j-i, n)*n + i
		if (queued[r>>6]|owed[r>>6])>>uint(r&63)&1 != 0 {
			continue // Q_ij not empty or feedback owed (recv > 0)
		}
		listed := false
		if !alone {
			for _, lf := range live {
				if m.sfState[int(lf.base)+j]&sfInList != 0 {
					listed = true
					break
				}
			}
		}
		if !listed {
			active[r>>6] &^= 1 << uint(r&63)
		}
	}
}

// pushRest appends a cell of workload flow flow (owner as a queued cell
// keeps it: ^owner for a local cell) to the cells behind the head of queue
// q, and returns how many cells are behind the head now. Only a queue that
// is not empty takes it (enqueueLocal, arrivals): most enqueues find their
// queue empty and write its head.
func (m *sim) pushRest(q *queue, flow, owner int32) int32 {
	e := m.cellFree
	if e >= 0 {
		m.cellFree = m.cells[e].next
	} else {
		e = int32(len(m.cells))
		m.cells = append(m.cells, cellEntry{})
	}
	cells := m.cells
	ce := &cells[e]
	ce.flow, ce.owner = flow, owner
	behind := int32(1)
	if t := q.rest; t >= 0 {
		tc := &cells[t]
		ce.next = tc.next
		tc.next = e
		behind += tc.meta
	} else {
		ce.next = e
	}
	ce.meta = behind
	q.rest = e
	return behind
}

// popRest moves the first cell behind q's head into the head (q.rest must
// not be empty), freeing its pool entry: pushRest's inverse, for the two
// places that send a queue's head (sendFeedback, the forwarding pass).
func (m *sim) popRest(q *queue) {
	cells := m.cells
	t := q.rest
	tc := &cells[t]
	h := tc.next
	ce := &cells[h]
	q.flow = ce.flow ^ ce.owner>>31
	if h == t {
		q.rest = -1
	} else {
		tc.next = ce.next
		tc.meta--
	}
	ce.next = m.cellFree
	m.cellFree = h
}

// enqueueLocal appends a local cell of workload flow k (Shoal flow owner)
// to the queue at pair index r of node i, the queue whose cells go to
// node next (the cell's intermediate). arrivals writes out the same steps
// for a forwarded cell: a change to one is a change to both.
func (m *sim) enqueueLocal(i, r int, k, owner int32, next int) {
	q := int32(1)
	// Whether Q_ij is empty (nearly always) comes from its queued bit, as
	// in qLen.
	if rb := uint64(1) << uint(r&63); m.queued[r>>6]&rb == 0 {
		m.qs[r] = queue{rest: -1, flow: ^k} // local
		m.active[r>>6] |= rb
		m.queued[r>>6] |= rb
	} else {
		q += m.pushRest(&m.qs[r], k, ^owner) // local
	}
	m.localQ[r>>6] |= 1 << uint(r&63)
	nd := &m.node[i]
	nd.q++
	nd.maxQ = max(nd.maxQ, q)
	m.maxNodeQ = max(m.maxNodeQ, nd.q)
	bound := 1 + m.node[next].incast // Eq. 5
	if m.o.NoReadyQueues {
		bound = nd.outcast + m.node[next].incast // Eq. 3
	}
	if q > bound {
		m.boundViolations++
	}
}

// qLen is the length of the queue at pair index y. A release reads it,
// and finds the queue empty nine times in ten: its queued bit says so
// without the queue (seldom cached when the release follows a feedback).
func (m *sim) qLen(y int) int32 {
	if m.queued[y>>6]>>uint(y&63)&1 == 0 {
		return 0
	}
	t := m.qs[y].rest
	if t < 0 {
		return 1
	}
	return 1 + m.cells[t].meta
}

// wait is how many slots from the current one (m.slotMod) node a waits
// until it sends to node b, 0 if it does in this slot: the static schedule
// repeats every epoch, so the first slot at or after slot + q·E in which a
// sends to b is slot + q·E + wait(a, b), without a division.
func (m *sim) wait(a, b int) int64 {
	return int64(wrap(int(m.when(a, b))-m.slotMod, m.E))
}

// feedbacks acts on the rate-limit feedback in the headers received in a
// slot, in the order they were sent. Feedback that node j has received
// from i: the subflow of Shoal flow fb.flow through i may be listed
// again, and Eq. 2 measures time from this slot, the feedback's receipt
// (reading S64).
func (m *sim) feedbacks(fbs []feedback, slot int64) {
	n := m.n
	dueBase, E := slot, int64(m.E)
	for fi := range fbs {
		fb := &fbs[fi]
		f := fb.flow
		s := &m.sf[f]
		if s.ended {
			continue
		}
		j, i := int(fb.nodes&0xffff), int(fb.nodes>>16)
		sf := int(s.slab)*n + i
		st := m.sfState[sf]
		if st&sfStateMask != sfOutstanding {
			continue
		}
		m.sfRate[sf] = subRate{due: dueBase + int64(fb.length)*E, clear: fb.clear}
		s.waiting--
		if s.unassigned > 0 {
			m.sfState[sf] = st&^sfStateMask | sfListed | sfRated
			r := wrap(i-j, n)*n + j // bit(j, i)
			if st&sfInList == 0 {
				m.list(r, sf)
			}
			if m.o.NoReadyQueues || m.localQ[r>>6]>>uint(r&63)&1 == 0 {
				// release, written out (see fullVisits): the list
				// holds this subflow at least.
				if one, nl := m.listedOne(j, i); nl == 1 {
					m.releaseOne(j, i, r, one, slot, false)
				} else {
					m.releaseList(j, i, r, slot, false)
				}
			}
			continue
		}
		m.sfState[sf] = st&^sfStateMask | sfRated // sfIdle
		if s.waiting == 0 && s.pending == 0 {
			m.maybeEnd(f) // most feedback leaves others awaited or cells in the rack
		}
	}
}

// arrivals processes the cells wholly received in a slot, as if in the
// order they were sent; it reports how many workload flows completed.
// Cells on their last hop (cells) are acted on first, then those on their
// first (hops), each kind in a loop of its own: which kind comes next in
// send order cannot be predicted. Acting on the last hops first changes
// nothing: a delivery reads and writes its workload and Shoal flows, which
// no first-hop cell of the slot touches (a flow with a cell on its first
// hop has cells left in the rack), and the delivered counts; each first hop
// writes the queue and pair it reaches, which no delivery reads, and reads
// the degrees of the queue's nodes (bound), which a delivery lowers when it
// empties a Shoal flow from the rack: a first hop sent before such a
// delivery counts the flow still, as in send order (emptied).
func (m *sim) arrivals(cells, hops []dataCell, slot int64) int {
	// The cells' last bytes left at the end of their send slot and took
	// PropNS.
	at := float64(slot-int64(m.d)+1)*m.slotNS + m.c.PropNS
	inWindow := at >= m.measureFrom
	n := m.n
	completed := 0
	m.emptied = m.emptied[:0]
	for ci := range cells {
		c := &cells[ci]
		j := int(c.to)
		if c.local {
			// Direct subflow: no queue at j to report, but the source still
			// waits for feedback.
			r := wrap(int(c.from)-j, n)*n + j // bit(j, i)
			m.recv[r] = uint32(c.owner + 1)
			m.mark(r)
			m.owed[r>>6] |= 1 << uint(r&63)
		}
		w := &m.wf[c.flow]
		w.delivered++
		m.res.DeliveredPerNode[j]++
		if inWindow {
			w.window++
		}
		f := c.owner
		s := &m.sf[f]
		s.pending--
		if s.pending == 0 {
			m.node[s.dst].incast--
			m.node[s.src].outcast--
			m.emptied = append(m.emptied, emptiedFlow{src: s.src, dst: s.dst, order: sendOrder(c)})
			m.maybeEnd(f)
		}
		if w.delivered == w.cells {
			w.done = true
			w.endNS = at
			completed++
		}
	}
	noReady := m.o.NoReadyQueues
	for ci := range hops {
		c := &hops[ci]
		j, i, q := int(c.to), int(c.from), int(c.final)
		// First hop: j is the intermediate node; the cell joins Q_jq and
		// j records it for its next feedback to i (§3.3.2). The enqueue
		// of a forwarded cell, written out.
		y := wrap(q-j, n)*n + j // bit(j, q)
		ql := int32(1)
		// Whether Q_jq is empty comes from its queued bit: an empty
		// queue is written, not read (it is seldom cached), and the cell
		// becomes its head.
		if yb := uint64(1) << uint(y&63); m.queued[y>>6]&yb == 0 {
			m.qs[y] = queue{rest: -1, flow: c.flow}
			m.active[y>>6] |= yb
			m.queued[y>>6] |= yb
		} else {
			ql += m.pushRest(&m.qs[y], c.flow, c.owner)
		}
		nd := &m.node[j]
		nd.q++
		nd.maxQ = max(nd.maxQ, ql)
		m.maxNodeQ = max(m.maxNodeQ, nd.q)
		bound := 1 + m.node[q].incast // Eq. 5
		if noReady {
			bound = nd.outcast + m.node[q].incast // Eq. 3
		}
		if len(m.emptied) > 0 {
			bound += m.emptiedAfter(c, j, q)
		}
		if ql > bound {
			m.boundViolations++
		}
		r := wrap(i-j, n)*n + j // bit(j, i)
		m.recv[r] = uint32(c.owner + 1)
		m.active[r>>6] |= 1 << uint(r&63)
		m.owed[r>>6] |= 1 << uint(r&63)
	}
	return completed
}

// emptiedAfter is what the bound of first-hop cell c at node j, for Q_jq,
// lacks of its value in send order: the Shoal flows emptied from the rack
// by a delivery sent after c still counted in the incast degree of q and,
// without ready queues, the outcast degree of j.
func (m *sim) emptiedAfter(c *dataCell, j, q int) int32 {
	var more int32
	o := sendOrder(c)
	for _, e := range m.emptied {
		if e.order > o {
			if int(e.dst) == q {
				more++
			}
			if m.o.NoReadyQueues && int(e.src) == j {
				more++
			}
		}
	}
	return more
}
