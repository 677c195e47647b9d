package prr

import (
	"fmt"
	"slices"
)

// Packet is what one input port presents to the arbiter in a cycle
// (FPGA'20 §3.2a): a valid bit, a destination port and the payload. Data
// stands for the packet's payload bits; the reference only carries it along
// so that a read-back can be compared packet by packet.
type Packet struct {
	Valid bool
	Dest  int
	Data  uint64
}

// Placement says where one valid packet of a batch was written: queue Queue
// of the FIFO group of its destination port Dest (FPGA'20 §3, Fig. 3).
type Placement struct {
	Input int // input port (index in the batch)
	Dest  int // destination port, which is also the FIFO group
	Queue int // queue within the group, 0..P-1
	Data  uint64
}

// Entry is a packet held in an output queue.
type Entry struct {
	Input int
	Data  uint64
}

// Departure is a packet an output arbiter read from its FIFO group.
type Departure struct {
	Output int // output port, which is also the FIFO group
	Queue  int // the queue it came from
	Entry
}

// Switch is the reference state of the proposed switch (FPGA'20 §3-§4): P
// FIFO groups of P queues each, the per-port offset counters of the combined
// parallel round-robin arbiter, and the index of each port's output arbiter.
// It is functional: a batch passes the whole pipeline in one Insert; pipeline
// timing is in PipelineLatency.
type Switch struct {
	p, logp int
	depth   int // queue depth; 0: unbounded
	net     *SortNet
	offsets []int       // per port: queue the next packet for the port is written to
	arb     []int       // per port: queue the output arbiter reads next (§4.4)
	q       [][][]Entry // [group][queue], head first

	// scratch for Insert, reused so that a replay of many batches does not
	// allocate per batch beyond its results.
	lanes []lane
	count []int
	start []int
}

// NewSwitch returns an empty switch with p ports and queues of the given
// depth (0: unbounded). Offset counters and output arbiters start at 0, as
// after reset.
func NewSwitch(p, depth int) (*Switch, error) {
	net, err := NewSortNet(p)
	if err != nil {
		return nil, fmt.Errorf("prr: new switch: %w", err)
	}
	if depth < 0 {
		return nil, fmt.Errorf("prr: new switch: queue depth %d: want 0 (unbounded) or more", depth)
	}
	s := &Switch{
		p: p, logp: log2(p), depth: depth, net: net,
		offsets: make([]int, p), arb: make([]int, p),
		q:     make([][][]Entry, p),
		lanes: make([]lane, p), count: make([]int, p), start: make([]int, p),
	}
	for g := range s.q {
		s.q[g] = make([][]Entry, p)
	}
	return s, nil
}

// Ports returns P.
func (s *Switch) Ports() int { return s.p }

// Depth returns the queue depth (0: unbounded).
func (s *Switch) Depth() int { return s.depth }

// CheckBatch reports whether batch is something the hardware can be given:
// at most P packets, and every destination (of invalid packets too: the
// field is log2(P) bits wide in the sort key) inside 0..P-1.
func (s *Switch) CheckBatch(batch []Packet) error {
	if len(batch) > s.p {
		return fmt.Errorf("prr: batch of %d packets for a %d-port switch: at most one packet per input port", len(batch), s.p)
	}
	for i, pk := range batch {
		if pk.Dest < 0 || pk.Dest >= s.p {
			return fmt.Errorf("prr: batch input %d: destination %d outside 0..%d (the dest field is %d bits)", i, pk.Dest, s.p-1, s.logp)
		}
	}
	return nil
}

// Insert passes one batch through the combined parallel round-robin arbiter
// (FPGA'20 §3.1-§3.2) and writes it to the output queues. batch[i] is what
// input port i presents; missing inputs (len(batch) < P) are invalid
// packets with destination 0. It panics on a batch CheckBatch refuses: that
// is a bug of the caller, not a state of the hardware.
//
// Step by step, as the paper's pipeline does it:
//  1. sort the batch on the key {valid, dest} with Batcher's odd-even merge
//     network, invalid packets first (§3.2a);
//  2. popcount the invalid packets and the packets for each port (P+1 adder
//     trees, §3.2b);
//  3. prefix-sum the null count and the counts of ports 0..P-2: out_d is the
//     first sorted position of the packets for port d (§3.2c);
//  4. for each port d rotate the whole sorted batch right by
//     offset_d - out_d (mod P): left by out_d to bring port d's packets to
//     lane 0, right by the port's offset counter for the round-robin effect
//     (§3.2d, Subtractors);
//  5. filter: lane q of rotator d keeps its packet only if it is valid and
//     for port d, and writes it to queue q of group d; a full queue drops it
//     ("dropped packets can only occur at the queue level", §3.1);
//  6. advance offset_d by the popcount of port d, mod P, whether or not the
//     queues took the packets (the counter only sees the popcount, §3.2b;
//     this is why drops unsynchronise the output arbiter, §4.4).
//
// placements lists the packets written, by port and then in the order they
// were written (queues offset_d, offset_d+1, ...); drops lists the inputs of
// the valid packets that found their queue full, in the same order.
func (s *Switch) Insert(batch []Packet) (placements []Placement, drops []int) {
	if err := s.CheckBatch(batch); err != nil {
		panic(err)
	}
	p := s.p
	mask := p - 1
	valid := uint16(1) << s.logp
	nulls := 0
	clear(s.count)
	for i := range p {
		pk := Packet{}
		if i < len(batch) {
			pk = batch[i]
		}
		k := uint16(pk.Dest)
		if pk.Valid {
			k |= valid
			s.count[pk.Dest]++
		} else {
			nulls++
		}
		s.lanes[i] = lane{key: k, input: int16(i)}
	}
	s.net.sort(s.lanes)

	// Prefix sum over {nulls, count_0, ..., count_{P-2}}.
	acc := nulls
	for d := range p {
		s.start[d] = acc
		acc += s.count[d]
	}

	for d := range p {
		if s.count[d] == 0 {
			continue
		}
		rot := (s.offsets[d] - s.start[d]) & mask
		want := valid | uint16(d)
		// Walk the lanes in the order they are written: lane offset_d holds
		// the first packet for d.
		for j := range p {
			q := (s.offsets[d] + j) & mask
			src := (q - rot) & mask
			ln := s.lanes[src]
			if ln.key != want {
				continue
			}
			in := int(ln.input)
			data := batch[in].Data
			if s.depth > 0 && len(s.q[d][q]) >= s.depth {
				drops = append(drops, in)
				continue
			}
			s.q[d][q] = append(s.q[d][q], Entry{Input: in, Data: data})
			placements = append(placements, Placement{Input: in, Dest: d, Queue: q, Data: data})
		}
		s.offsets[d] = (s.offsets[d] + s.count[d]) & mask
	}
	return placements, drops
}

// Dequeue runs the P output arbiters for one cycle (FPGA'20 §4.4): the
// arbiter of port d looks only at queue arb_d of group d; if it holds a
// packet, the packet leaves and arb_d moves to the next queue (mod P); if it
// is empty, the arbiter stays where it is, since the next packet for the port
// will be written there (without drops the queues are filled in the same
// round-robin order they are read). Departures are listed by port.
func (s *Switch) Dequeue() []Departure {
	var out []Departure
	for d := range s.p {
		q := s.arb[d]
		if len(s.q[d][q]) == 0 {
			continue
		}
		e := s.q[d][q][0]
		s.q[d][q] = s.q[d][q][1:]
		out = append(out, Departure{Output: d, Queue: q, Entry: e})
		s.arb[d] = (q + 1) & (s.p - 1)
	}
	return out
}

// State is a snapshot of a switch: what the hardware's read-back shows.
type State struct {
	Offsets  []int       // per port: the offset counter (next queue written)
	Arbiters []int       // per port: the output arbiter's index (next queue read)
	Queues   [][][]Entry // [group][queue], head first
}

// State returns a deep copy of the switch's state.
func (s *Switch) State() State {
	st := State{Offsets: slices.Clone(s.offsets), Arbiters: slices.Clone(s.arb), Queues: make([][][]Entry, s.p)}
	for g := range s.q {
		st.Queues[g] = make([][]Entry, s.p)
		for q := range s.q[g] {
			st.Queues[g][q] = slices.Clone(s.q[g][q])
		}
	}
	return st
}

// SetState loads a state (for instance one read back from the hardware, or a
// random one in a fuzz test). It checks the shape, the counter ranges and
// the queue depth; the switch keeps its old state on error.
func (s *Switch) SetState(st State) error {
	p := s.p
	if len(st.Offsets) != p || len(st.Arbiters) != p || len(st.Queues) != p {
		return fmt.Errorf("prr: set state: want %d offsets, arbiters and groups, got %d, %d and %d",
			p, len(st.Offsets), len(st.Arbiters), len(st.Queues))
	}
	for d := range p {
		if st.Offsets[d] < 0 || st.Offsets[d] >= p || st.Arbiters[d] < 0 || st.Arbiters[d] >= p {
			return fmt.Errorf("prr: set state: port %d: offset %d / arbiter %d outside 0..%d", d, st.Offsets[d], st.Arbiters[d], p-1)
		}
		if len(st.Queues[d]) != p {
			return fmt.Errorf("prr: set state: group %d has %d queues, want %d", d, len(st.Queues[d]), p)
		}
		for q, e := range st.Queues[d] {
			if s.depth > 0 && len(e) > s.depth {
				return fmt.Errorf("prr: set state: queue %d of group %d holds %d packets, more than the depth %d", q, d, len(e), s.depth)
			}
		}
	}
	s.offsets = slices.Clone(st.Offsets)
	s.arb = slices.Clone(st.Arbiters)
	for g := range p {
		for q := range p {
			s.q[g][q] = slices.Clone(st.Queues[g][q])
		}
	}
	return nil
}

// QueueLen returns how many packets queue q of group g holds.
func (s *Switch) QueueLen(g, q int) int { return len(s.q[g][q]) }
