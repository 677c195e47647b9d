package prr

// The switch proper: the combined parallel round-robin arbiter (§3.1,
// Figure 4) feeding P groups of P output queues, and the P output arbiters
// (§4.4), clocked one cycle at a time.
//
// A batch of up to P packets enters stage 0 in one cycle and moves through
// the pipeline stage by stage:
//
//   - the sorting network (stages 0 .. log2P(log2P+1)/2 - 1): one layer of
//     CAS units per stage, on the key {valid, dest, src};
//   - beside it, the offsets pipeline (stages 0 .. 2·log2P): log2P levels of
//     the P+1 popcount adder trees, then at stage log2P (index_comp, §4.2)
//     the per-port offset counters together with the first of log2P
//     prefix-sum levels, then the subtractors;
//   - the P barrel shifters, log2P stages, one select bit per stage;
//   - the filters, which need no stage (§3.2 "Filters"), and the write into
//     the output queues.
//
// Register removal (§4.2) keeps the output register of stage i only when
// (i - index_comp) is a multiple of S; the stages between two kept
// registers form one segment that a batch crosses in one cycle. A batch
// inserted in cycle t is written into its queues at the end of cycle t+n
// (n registers) and can leave through an output arbiter from cycle t+n+1:
// the "one extra cycle for reading from the queues" of §5.2.
//
// Sort order. The paper's CAS units compare {valid, dest} (§3.2a), which
// leaves the order of packets with equal keys to the network's wiring. Here
// each lane also carries its input index below the key, so that equal
// {valid, dest} keys leave the network in input order: the placement of a
// batch is then a function of the batch and the offset counters only, which
// is what makes a bit-exact read-back check possible (docs/prr.md). The
// sort-unstable fault removes that tie-break.

// packet is one packet inside the switch.
type packet struct {
	tag  uint32 // first data word: what read-back windows show
	src  uint16 // input port (batch slot)
	dest uint16 // output port, already reduced to log2(P) bits
	seq  uint32 // traffic generator: sequence number in its (src, dest) flow
	ins  uint64 // cycle the packet entered stage 0
	enq  uint64 // cycle at whose end it was written into its queue
	// meas: the traffic generator counts this packet in its statistics.
	meas bool
	// debug: a packet from the batch registers, whose data words are in
	// core.data[id]; generated packets carry only their tag.
	debug bool
}

// offOp is what the offsets pipeline does at one stage.
type offOp uint8

const (
	offNone     offOp = iota
	offAdder          // one level of the P+1 adder trees
	offCounter        // offset counters + first prefix-sum level (index_comp)
	offPrefix         // one prefix-sum level
	offSubtract       // rotation select = offset - start
)

type stagePlan struct {
	sn    int // sorting network layer, -1 when the network is done (shift register)
	off   offOp
	level int // adder or prefix level
	bs    int // barrel shifter select bit, -1 before the shifters
}

// batch is the state one batch carries through the pipeline registers.
type batch struct {
	ins    uint64
	valid  int
	pkt    []int32  // packet per input slot, -1 for none
	lanes  []uint32 // sorting network lanes: key {valid, dest, src}
	tree   []int32  // (P+1) adder trees of P inputs, level by level in place
	used   []int32  // the trees with a non-zero input: the others add zeros
	isUsed []bool   // per tree: listed in used
	prefix []int32  // prefix sum, level by level in place
	off    []int32  // offset counters as this batch saw them
	sel    []int32  // rotation per port (subtractor output)
	acc    []int32  // rotation applied so far by each barrel shifter
}

type core struct {
	cfg   Config
	p, lg int
	mask  int32
	depth int32

	layers [][]cas
	plan   []stagePlan
	segs   [][2]int // segment k covers stages [segs[k][0], segs[k][1])
	pipe   []*batch // pipe[k]: the batch in segment k this cycle
	spare  []*batch

	offset []int32 // offset counters, one per output port (§3.2b)
	arb    []int32 // output arbiter indices (§4.4)

	qbuf   []int32 // queue (g, q) entries at [(g·P+q)·depth ...]
	qhead  []int32
	qcount []int32
	queued int // packets in queues
	flight int // packets in the pipeline

	pk     []packet
	pkFree []int32
	data   [][]uint32 // data words of debug packets, by packet id

	cycle uint64
	// out receives what happens to packets at the queues and outputs (a
	// concrete type: these calls are the simulation's hot path).
	out *design

	// Faults.
	skipPort, skipValue int32 // offset-skip: -1 when off
	unstable            bool  // sort-unstable
	arbPort, arbStep    int32 // arbiter-out-of-step: -1 when off
	// capacity: entries a queue accepts (depth, less with prr-fifo-short).
	capacity int32
	// prr-silent-drop: a queue write is lost with this probability.
	dropRate float64
	dropRng  interface{ Float64() float64 }
	// prr-arbiter-bubble: an arbiter idles a cycle after every
	// bubbleEvery packets it sent.
	bubbleEvery int32
	bubbleSent  []int32
	bubbleIdle  []bool
}

func newCore(cfg Config) *core {
	c := &core{cfg: cfg, p: cfg.Ports, lg: cfg.log2P(), mask: int32(cfg.Ports - 1), depth: int32(cfg.FIFODepth),
		skipPort: -1, arbPort: -1, capacity: int32(cfg.FIFODepth)}
	c.layers = oddEvenMergeLayers(c.p)
	lsn, loff, L := cfg.sortStages(), cfg.offsetStages(), cfg.stages()
	m := max(lsn, loff)
	c.plan = make([]stagePlan, L)
	for i := range c.plan {
		sp := stagePlan{sn: -1, bs: -1}
		if i < lsn {
			sp.sn = i
		}
		switch {
		case i < c.lg:
			sp.off, sp.level = offAdder, i
		case i == c.lg:
			sp.off, sp.level = offCounter, 0
		case i < 2*c.lg:
			sp.off, sp.level = offPrefix, i-c.lg
		case i == 2*c.lg:
			sp.off = offSubtract
		}
		if i >= m {
			sp.bs = i - m
		}
		c.plan[i] = sp
	}
	start := 0
	for i := 0; i < L; i++ {
		if cfg.hasRegister(i) {
			c.segs = append(c.segs, [2]int{start, i + 1})
			start = i + 1
		}
	}
	c.segs = append(c.segs, [2]int{start, L}) // last segment: into the queues, maybe empty
	c.pipe = make([]*batch, len(c.segs))
	n := c.p * c.p
	c.qbuf = make([]int32, n*cfg.FIFODepth)
	c.qhead = make([]int32, n)
	c.qcount = make([]int32, n)
	c.offset = make([]int32, c.p)
	c.arb = make([]int32, c.p)
	return c
}

// latency is the number of pipeline registers: cycles from insertion to the
// queue write.
func (c *core) latency() int { return len(c.segs) - 1 }

// reset empties the pipeline and the queues and puts the offset counters and
// output arbiters at 0 (the arbiter-out-of-step fault puts its arbiter
// elsewhere). Packets are forgotten.
func (c *core) reset() {
	for k, b := range c.pipe {
		if b != nil {
			c.putBatch(b)
			c.pipe[k] = nil
		}
	}
	clear(c.qhead)
	clear(c.qcount)
	clear(c.offset)
	clear(c.arb)
	clear(c.bubbleSent)
	clear(c.bubbleIdle)
	if c.arbPort >= 0 {
		c.arb[c.arbPort] = c.arbStep & c.mask
	}
	c.queued, c.flight = 0, 0
	c.pk = c.pk[:0]
	c.pkFree = c.pkFree[:0]
}

// newPacket allocates a packet record.
func (c *core) newPacket() (int32, *packet) {
	if n := len(c.pkFree); n > 0 {
		id := c.pkFree[n-1]
		c.pkFree = c.pkFree[:n-1]
		p := &c.pk[id]
		*p = packet{}
		return id, p
	}
	c.pk = append(c.pk, packet{})
	id := int32(len(c.pk) - 1)
	return id, &c.pk[id]
}

// setData stores a debug packet's data words.
func (c *core) setData(id int32, words []uint32) {
	for int(id) >= len(c.data) {
		c.data = append(c.data, nil)
	}
	c.data[id] = append(c.data[id][:0], words...)
	c.pk[id].debug = true
}

// words returns a packet's data words: a generated packet has its tag only.
func (c *core) words(id int32) []uint32 {
	if c.pk[id].debug {
		return c.data[id]
	}
	return []uint32{c.pk[id].tag}
}

func (c *core) freePacket(id int32) { c.pkFree = append(c.pkFree, id) }

// getBatch returns an empty batch (every slot invalid).
func (c *core) getBatch() *batch {
	var b *batch
	if n := len(c.spare); n > 0 {
		b = c.spare[n-1]
		c.spare = c.spare[:n-1]
	} else {
		p := c.p
		b = &batch{pkt: make([]int32, p), lanes: make([]uint32, p), tree: make([]int32, (p+1)*p), used: make([]int32, 0, p+1), isUsed: make([]bool, p+1),
			prefix: make([]int32, p), off: make([]int32, p), sel: make([]int32, p), acc: make([]int32, p)}
	}
	for i := range b.pkt {
		b.pkt[i] = -1
	}
	b.valid = 0
	return b
}

func (c *core) putBatch(b *batch) { c.spare = append(c.spare, b) }

// put places packet id in input slot src of b.
func (b *batch) put(src int, id int32) {
	if b.pkt[src] < 0 {
		b.valid++
	}
	b.pkt[src] = id
}

// clock advances the switch by one cycle. in is the batch presented at the
// pipeline's input this cycle (nil or empty: no packet). With arbiters set
// the output arbiters serve their queues; the debug peripheral keeps them
// idle so that software can read the queues back (§5).
func (c *core) clock(in *batch, arbiters bool) {
	if arbiters && c.queued > 0 {
		c.serve()
	}
	if in != nil {
		if in.valid == 0 {
			c.putBatch(in)
		} else {
			in.ins = c.cycle
			c.pipe[0] = in
			c.flight += in.valid
			c.load(in)
		}
	}
	last := len(c.pipe) - 1
	for k := last; k >= 0; k-- {
		if b := c.pipe[k]; b != nil {
			for i := c.segs[k][0]; i < c.segs[k][1]; i++ {
				c.stage(b, i)
			}
		}
	}
	if b := c.pipe[last]; b != nil {
		c.write(b)
		c.flight -= b.valid
		c.putBatch(b)
		c.pipe[last] = nil
	}
	copy(c.pipe[1:], c.pipe[:last])
	c.pipe[0] = nil
	c.cycle++
}

// load presents the batch's packets at the inputs of stage 0: the sorting
// network's lanes and the adder trees' one-bit inputs (tree 0 counts the
// Null packets, tree 1+d those for port d, §3.2b). Stage 0 always runs in
// the cycle a batch is loaded, so the trees' first level of adders (pairs
// of one-bit inputs) is evaluated here, as the inputs arrive: an input
// only ever adds to one tree.
func (c *core) load(b *batch) {
	p := c.p
	for _, t := range b.used {
		clear(b.tree[int(t)*p : int(t)*p+p/2])
		b.isUsed[t] = false
	}
	b.used = b.used[:0]
	for i := 0; i < p; i++ {
		id := b.pkt[i]
		t := 0
		if id < 0 {
			b.lanes[i] = uint32(i) // {valid 0, dest 0, src i}
		} else {
			pk := &c.pk[id]
			pk.ins = c.cycle
			d := int(pk.dest)
			b.lanes[i] = 1<<(2*c.lg) | uint32(d)<<c.lg | uint32(i)
			t = 1 + d
		}
		if !b.isUsed[t] {
			b.isUsed[t] = true
			b.used = append(b.used, int32(t))
		}
		b.tree[t*p+i/2]++ // level 0: inputs 2j and 2j+1 into adder j
	}
}

// stage computes pipeline stage i on batch b.
func (c *core) stage(b *batch, i int) {
	sp := &c.plan[i]
	if sp.sn >= 0 {
		c.sortLayer(b.lanes, c.layers[sp.sn])
	}
	switch sp.off {
	case offAdder:
		// Level 0 is evaluated with the inputs (load); level l >= 1 adds
		// pairs of level l-1 sums. Trees with no input set add zeros:
		// skipping them changes nothing.
		if sp.level == 0 {
			break
		}
		p := c.p
		w := p >> (sp.level + 1)
		for _, t := range b.used {
			s := b.tree[int(t)*p : int(t)*p+2*w]
			for j, k := 0, 0; j < w; j, k = j+1, k+2 {
				s[j] = s[k] + s[k+1]
			}
		}
	case offCounter:
		p := c.p
		for d := 0; d < p; d++ {
			b.off[d] = c.offset[d]
			n := b.tree[(1+d)*p]
			if n == 0 {
				continue
			}
			nv := (c.offset[d] + n) & c.mask
			if int32(d) == c.skipPort && nv == c.skipValue {
				nv = (nv + 1) & c.mask // offset-skip: the counter never holds skipValue
			}
			c.offset[d] = nv
		}
		// Prefix-sum inputs: the Null count, then the counts for ports
		// 0 .. P-2 (§3.2c); out_k is then where port k's packets start.
		for k := 0; k < p; k++ {
			b.prefix[k] = b.tree[k*p]
		}
		c.prefixLevel(b.prefix, 0)
	case offPrefix:
		c.prefixLevel(b.prefix, sp.level)
	case offSubtract:
		for d := range b.sel {
			b.sel[d] = (b.off[d] - b.prefix[d]) & c.mask
			b.acc[d] = 0
		}
	}
	if sp.bs >= 0 {
		bit := int32(1) << sp.bs
		for d := range b.acc {
			b.acc[d] |= b.sel[d] & bit
		}
	}
}

// sortLayer applies one layer of CAS units.
func (c *core) sortLayer(lanes []uint32, layer []cas) {
	if c.unstable {
		// sort-unstable: the CAS units compare {valid, dest} only and swap
		// on equal keys (>= where > was meant).
		sh := uint(c.lg)
		for _, u := range layer {
			a, b := lanes[u.a], lanes[u.b]
			if a>>sh >= b>>sh {
				lanes[u.a], lanes[u.b] = b, a
			}
		}
		return
	}
	for _, u := range layer {
		a, b := lanes[u.a], lanes[u.b]
		lanes[u.a], lanes[u.b] = min(a, b), max(a, b)
	}
}

// prefixLevel is one level of the Hillis-Steele parallel prefix sum [13]:
// out_k = in_k + in_{k-2^l}.
func (c *core) prefixLevel(s []int32, l int) {
	d := 1 << l
	for k := len(s) - 1; k >= d; k-- {
		s[k] += s[k-d]
	}
}

// write is the end of the pipeline: rotator d's lane j holds sorted lane
// (j - rotation_d) mod P; its filter passes valid packets for port d, which
// are written into queue j of group d (§3.2d "Filters").
func (c *core) write(b *batch) {
	lg := uint(c.lg)
	for i, key := range b.lanes {
		if key>>(2*lg) == 0 {
			continue
		}
		src := int32(key) & c.mask
		d := int32(key>>lg) & c.mask
		j := (int32(i) + b.acc[d]) & c.mask
		id := b.pkt[src]
		c.enqueue(d, j, id)
	}
}

func (c *core) enqueue(g, q int32, id int32) {
	p := &c.pk[id]
	p.enq = c.cycle
	k := g*int32(c.p) + q
	n := c.qcount[k]
	if n >= c.capacity {
		c.out.dropped(id, p, int(g), int(q))
		return
	}
	if c.dropRate > 0 && c.dropRng.Float64() < c.dropRate {
		// prr-silent-drop: the pipeline counts the write, the queue never
		// gets the packet.
		c.out.enqueued(id, p, int(g), int(q), int(n))
		c.out.lost(id)
		return
	}
	pos := c.qhead[k] + n
	if pos >= c.depth {
		pos -= c.depth
	}
	c.qbuf[k*c.depth+pos] = id
	c.qcount[k] = n + 1
	c.queued++
	c.out.enqueued(id, p, int(g), int(q), int(n))
}

// serve runs the output arbiters for one cycle: arbiter d looks only at
// queue arb[d] of group d; a packet there leaves and the index moves on,
// an empty queue holds the arbiter (§4.4).
func (c *core) serve() {
	p := int32(c.p)
	for d := int32(0); d < p; d++ {
		if c.bubbleEvery > 0 && c.bubbleIdle[d] {
			c.bubbleIdle[d] = false // prr-arbiter-bubble: the idle cycle
			continue
		}
		k := d*p + c.arb[d]
		if c.qcount[k] == 0 {
			continue
		}
		if c.bubbleEvery > 0 {
			if c.bubbleSent[d]++; c.bubbleSent[d] == c.bubbleEvery {
				c.bubbleSent[d], c.bubbleIdle[d] = 0, true
			}
		}
		h := c.qhead[k]
		id := c.qbuf[k*c.depth+h]
		h++
		if h == c.depth {
			h = 0
		}
		c.qhead[k] = h
		c.qcount[k]--
		c.queued--
		c.arb[d] = (c.arb[d] + 1) & c.mask
		c.out.delivered(id, &c.pk[id], int(d), c.cycle)
	}
}

// entry returns the packet at position pos (0 = head) of queue (g, q).
func (c *core) entry(g, q, pos int) (int32, bool) {
	k := g*c.p + q
	if pos < 0 || int32(pos) >= c.qcount[k] {
		return -1, false
	}
	i := c.qhead[k] + int32(pos)
	if i >= c.depth {
		i -= c.depth
	}
	return c.qbuf[int32(k)*c.depth+i], true
}

// idle reports whether no packet is in the pipeline or the queues.
func (c *core) idle() bool { return c.flight == 0 && c.queued == 0 }

// frozen reports whether, with no more input, nothing can ever move again:
// the pipeline is empty and every output arbiter looks at an empty queue
// (with no input it stays empty). Packets still in the queues then wait for
// arbiters that will not reach them (§4.4 after drops, or the
// arbiter-out-of-step fault).
func (c *core) frozen() bool {
	if c.flight > 0 {
		return false
	}
	p := int32(c.p)
	for d := int32(0); d < p; d++ {
		if c.qcount[d*p+c.arb[d]] > 0 {
			return false
		}
	}
	return true
}
