package shoal

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/labrunner/labrunner/drivers"
)

// Reading a Shoal rack back: flow-completion records, NIC and switch state, slot timing.

// Record is one flow-completion record (docs/shoal.md): times are ns on the
// synchronised rack clock, relative to traffic time 0.
type Record struct {
	Tag, Src, Dst, Bytes, StartNS, EndNS, FirstTxNS uint32
}

// FCTNS is the flow completion time: end - start (§6.2, §7.3).
func (r Record) FCTNS() int64 { return int64(r.EndNS) - int64(r.StartNS) }

// RecordWords is the length of a record in the FIFO.
const RecordWords = 6

// DecodeRecord decodes one record's six words: tag; source | destination<<16;
// bytes; start ns; end ns; first-transmission ns.
func DecodeRecord(w []uint32) (Record, error) {
	if len(w) != RecordWords {
		return Record{}, fmt.Errorf("record of %d words, want %d", len(w), RecordWords)
	}
	rec := Record{Tag: w[0], Src: w[1] & 0xFFFF, Dst: w[1] >> 16, Bytes: w[2], StartNS: w[3], EndNS: w[4], FirstTxNS: w[5]}
	switch {
	case rec.Tag == 0:
		return rec, fmt.Errorf("record with tag 0 (an empty FIFO reads 0): the FIFO lost its alignment")
	case rec.Src > 1023 || rec.Dst > 1023:
		return rec, fmt.Errorf("record %d: nodes %d>%d beyond the 10-bit node ids", rec.Tag, rec.Src, rec.Dst)
	case rec.EndNS < rec.StartNS:
		return rec, fmt.Errorf("record %d: ends at %d ns before its start %d ns", rec.Tag, rec.EndNS, rec.StartNS)
	}
	return rec, nil
}

// Records pops every completion record waiting at node (its flows as
// destination). REC_DATA is a FIFO: each word is read exactly once.
func (r *Rack) Records(ctx context.Context, node int) ([]Record, error) {
	b, p := r.nic(node)
	ix := "[" + strconv.Itoa(p) + "]"
	cnt, err := r.read(ctx, b, "REC_COUNT"+ix)
	if err != nil {
		return nil, err
	}
	out := make([]Record, 0, cnt)
	w := make([]uint32, RecordWords)
	for i := 0; i < int(cnt); i++ {
		for k := range w {
			if w[k], err = r.read(ctx, b, "REC_DATA"+ix); err != nil {
				return out, err
			}
		}
		rec, err := DecodeRecord(w)
		if err != nil {
			return out, fmt.Errorf("node %d (%s): %w", node, r.Fabric.Nodes[node], err)
		}
		out = append(out, rec)
	}
	ov, err := r.read(ctx, b, "REC_OVERFLOW"+ix)
	if err != nil {
		return out, err
	}
	if ov != 0 {
		return out, fmt.Errorf("node %d (%s): %d completion records lost to a full FIFO (REC_OVERFLOW): read records more often", node, r.Fabric.Nodes[node], ov)
	}
	return out, nil
}

// AllRecords pops the records of every node.
func (r *Rack) AllRecords(ctx context.Context) ([]Record, error) {
	var out []Record
	for node := range r.Fabric.Nodes {
		rs, err := r.Records(ctx, node)
		if err != nil {
			return nil, err
		}
		out = append(out, rs...)
	}
	return out, nil
}

// counterNames are the NIC counters from TX_CELLS on, in register order.
var counterNames = []string{
	"TX_CELLS", "TX_LOCAL_CELLS", "TX_FWD_CELLS", "TX_EMPTY_CELLS", "TX_RETX_CELLS", "TX_NOTICE_CELLS",
	"RX_CELLS", "RX_DELIVERED_CELLS", "RX_FWD_CELLS", "RX_EMPTY_CELLS", "RX_CORRUPT_CELLS", "RX_DUPLICATE_CELLS",
	"RX_MISROUTED_CELLS", "FAILED_SLOTS", "SKIPPED_SLOTS", "DROPS", "FAIL_DISCARDS", "FLOWS_STARTED",
	"FLOWS_COMPLETED", "BAD_DESCRIPTORS", "LCD_SENT", "NOTICES_RECEIVED", "FB_SLOTS_SUM", "FB_COUNT",
	"TX_SLOTS", "RX_SLOTS",
}

// NIC is one NIC's status and counters since the last clear. The 32-bit
// counters cannot wrap within a test's run (at most one cell a slot: 2^32
// slots are 5.5 minutes of rack time at 76.8 ns); the driver clears them
// before every measurement.
type NIC struct {
	Node                                    int
	Status                                  uint32
	FailedPeers                             uint64
	MaxQueueAny, MaxQueueTotal, MaxReadyAny uint32
	// C holds the counters by register name (TX_CELLS ... RX_SLOTS).
	C map[string]uint32
}

// Synced, Running and AnyFailed decode NIC_STATUS.
func (n NIC) Synced() bool    { return n.Status&nicSynced != 0 }
func (n NIC) Running() bool   { return n.Status&nicRunning != 0 }
func (n NIC) AnyFailed() bool { return n.Status&nicAnyFailed != 0 }

// Failed lists the peers this NIC inferred failed (FAILED_PEERS, §3.5).
func (n NIC) Failed() []int {
	var out []int
	for i := 0; i < 64; i++ {
		if n.FailedPeers&(1<<uint(i)) != 0 {
			out = append(out, i)
		}
	}
	return out
}

// ReadNIC reads a node's status and counters.
func (r *Rack) ReadNIC(ctx context.Context, node int) (NIC, error) {
	b, p := r.nic(node)
	ix := "[" + strconv.Itoa(p) + "]"
	n := NIC{Node: node, C: map[string]uint32{}}
	// Every register in one batch, in the order they were read one by one
	// (one round trip on a UART bridge with a window).
	var lo, hi uint32
	bt := r.regs[b].Batch().Read("NIC_STATUS"+ix, &n.Status).Read("FAILED_PEERS_LO"+ix, &lo).Read("FAILED_PEERS_HI"+ix, &hi).
		Read("MAX_QUEUE_ANY"+ix, &n.MaxQueueAny).Read("MAX_QUEUE_TOTAL"+ix, &n.MaxQueueTotal).Read("MAX_READY_ANY"+ix, &n.MaxReadyAny)
	w := make([]uint32, len(counterNames))
	if r.counterBurst {
		loc, err := r.regs[b].Lookup("TX_CELLS" + ix)
		if err != nil {
			return n, err
		}
		bt.ReadBurst(loc.Addr, w)
	} else {
		for i, c := range counterNames {
			bt.Read(c+ix, &w[i])
		}
	}
	actx, cancel := drivers.Deadline(ctx, r.Access*time.Duration(bt.Len()))
	defer cancel()
	if err := bt.Run(actx); err != nil {
		var be *drivers.BatchError
		if errors.As(err, &be) {
			return n, be.Err
		}
		return n, err
	}
	n.FailedPeers = uint64(hi)<<32 | uint64(lo)
	for i, c := range counterNames {
		n.C[c] = w[i]
	}
	return n, nil
}

// ReadNICs reads every node's NIC.
func (r *Rack) ReadNICs(ctx context.Context) ([]NIC, error) {
	out := make([]NIC, r.Fabric.N())
	for node := range out {
		var err error
		if out[node], err = r.ReadNIC(ctx, node); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// MaxQueues returns node's largest occupancy of each per-destination queue
// since the clear (MAX_QUEUE, Eq. 3/5), indexed by destination node.
func (r *Rack) MaxQueues(ctx context.Context, node int) ([]int, error) {
	b, p := r.nic(node)
	loc, err := r.regs[b].Lookup(fmt.Sprintf("MAX_QUEUE[%d]", p*r.maxNodes))
	if err != nil {
		return nil, err
	}
	w := make([]uint32, r.Fabric.N())
	if err := r.readBurst(ctx, b, loc.Addr, w); err != nil {
		return nil, err
	}
	out := make([]int, len(w))
	for i, v := range w {
		out[i] = int(v)
	}
	return out, nil
}

// Switch is a switch board's status and counters.
type Switch struct {
	Board                       string
	Status                      uint32
	Slots, Misaligned, DeadEnds uint32
	TraceEpoch                  uint32
	CellsIn, CellsOut           []uint32
}

// ReadSwitch reads a switch board's status and counters.
func (r *Rack) ReadSwitch(ctx context.Context, board string) (Switch, error) {
	s := Switch{Board: board}
	var err error
	for _, x := range []struct {
		name string
		dst  *uint32
	}{{"SW_STATUS", &s.Status}, {"SW_SLOTS", &s.Slots}, {"SW_MISALIGNED", &s.Misaligned}, {"SW_DEAD_ENDS", &s.DeadEnds}, {"SW_TRACE_EPOCH", &s.TraceEpoch}} {
		if *x.dst, err = r.read(ctx, board, x.name); err != nil {
			return s, err
		}
	}
	for p := 0; p < r.Fabric.Radix; p++ {
		in, err := r.read(ctx, board, fmt.Sprintf("SW_CELLS_IN[%d]", p))
		if err != nil {
			return s, err
		}
		out, err := r.read(ctx, board, fmt.Sprintf("SW_CELLS_OUT[%d]", p))
		if err != nil {
			return s, err
		}
		s.CellsIn, s.CellsOut = append(s.CellsIn, in), append(s.CellsOut, out)
	}
	return s, nil
}

// SetSlot changes the slot length and guard band on every board and
// bootstraps again with them (the parameters take effect at the bootstrap;
// the sync is kept, docs/shoal.md). Counters are cleared.
func (r *Rack) SetSlot(ctx context.Context, slotCycles, guardCycles int) error {
	if err := r.Stop(ctx); err != nil {
		return err
	}
	for _, b := range append(append([]string{}, r.NICBoards...), r.SwitchBoards...) {
		if err := r.writeCheck(ctx, b, "SLOT_CYCLES", uint32(slotCycles)); err != nil {
			return err
		}
		if err := r.writeCheck(ctx, b, "GUARD_CYCLES", uint32(guardCycles)); err != nil {
			return err
		}
	}
	if err := r.Boot(ctx); err != nil {
		return err
	}
	return r.ClearCounters(ctx)
}

// Enable sets a node's NIC_CTRL.ENABLE; it takes effect at the next
// bootstrap (a disabled NIC is a failed node to the others, §3.5).
func (r *Rack) Enable(ctx context.Context, node int, on bool) error {
	b, p := r.nic(node)
	v := uint32(0)
	if on {
		v = 1
	}
	return r.writeCheck(ctx, b, "NIC_CTRL["+strconv.Itoa(p)+"]", v)
}
