package shoal

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/labrunner/labrunner/drivers"
)

// Running traffic on a Shoal rack: counters, bit errors, flows, runs of slots.

// ClearCounters zeroes every board's counters, queue maxima and record
// FIFOs (COUNTERS_CLEAR is per board).
func (r *Rack) ClearCounters(ctx context.Context) error {
	for _, b := range append(append([]string{}, r.NICBoards...), r.SwitchBoards...) {
		if err := r.write(ctx, b, "COUNTERS_CLEAR", 1); err != nil {
			return err
		}
	}
	return nil
}

// SetBER sets a board's injected bit-error rate, in errors per bit (the
// register counts units of 1e-12, App. D).
func (r *Rack) SetBER(ctx context.Context, board string, perBit float64) error {
	if !(perBit >= 0) || perBit > 4.29e-3 {
		return fmt.Errorf("%s: bit-error rate %g: want 0..4.29e-3 (BER_INJECT is 32-bit in units of 1e-12)", board, perBit)
	}
	return r.writeCheck(ctx, board, "BER_INJECT", uint32(perBit*1e12+0.5))
}

// Cell returns the cell and payload sizes the boards compute from the slot
// parameters (CELL_BYTES, PAYLOAD_BYTES, §6.1).
func (r *Rack) Cell(ctx context.Context) (cell, payload int, err error) {
	c, err := r.read(ctx, r.Master, "CELL_BYTES")
	if err != nil {
		return 0, 0, err
	}
	p, err := r.read(ctx, r.Master, "PAYLOAD_BYTES")
	if err != nil {
		return 0, 0, err
	}
	if p == 0 {
		return 0, 0, fmt.Errorf("%s: PAYLOAD_BYTES reads 0: the slot leaves no room for a cell", r.Master)
	}
	return int(c), int(p), nil
}

// LoadFlows writes each source NIC's flow table, in start order, and its
// FLOW_COUNT; NICs without flows get FLOW_COUNT 0.
func (r *Rack) LoadFlows(ctx context.Context, flows []Flow) error {
	n := r.Fabric.N()
	if err := checkFlows(flows, n); err != nil {
		return err
	}
	bySrc := make([][]Flow, n)
	for _, f := range flows {
		bySrc[f.Src] = append(bySrc[f.Src], f)
	}
	for node, fs := range bySrc {
		b, p := r.nic(node)
		base, size, err := r.window(b, "flows")
		if err != nil {
			return err
		}
		stride := size / uint64(r.nicsPerBoard)
		if uint64(16*len(fs)) > stride {
			return fmt.Errorf("node %d: %d flows, the flow table holds %d", node, len(fs), stride/16)
		}
		// Descriptors start in table order, each at its start time
		// (docs/shoal.md: keep them sorted).
		sort.SliceStable(fs, func(i, j int) bool { return fs[i].StartNS < fs[j].StartNS })
		words := make([]uint32, 0, 4*len(fs))
		for _, f := range fs {
			words = append(words, uint32(f.Dst)&0x3FF|uint32(f.Src)&0x3FF<<16, uint32(f.Bytes), uint32(f.StartNS), f.Tag)
		}
		if len(words) > 0 {
			if err := r.writeBurst(ctx, b, base+uint64(p)*stride, words); err != nil {
				return err
			}
		}
		if err := r.writeCheck(ctx, b, "FLOW_COUNT["+strconv.Itoa(p)+"]", uint32(len(fs))); err != nil {
			return err
		}
	}
	return nil
}

// RunStatus is how a traffic run (or a stretch of it) ended.
type RunStatus struct {
	Done, Limit, Stalled, NotRunning bool
	// Slots run by this call; Writes it took.
	Slots  int64
	Writes int
	// FlowsTotal and FlowsDone rack-wide (TG_FLOWS_TOTAL, TG_FLOWS_DONE).
	FlowsTotal, FlowsDone int
	Wall                  time.Duration
}

func (s RunStatus) String() string {
	state := "limit"
	switch {
	case s.Done:
		state = "done"
	case s.Stalled:
		state = "stalled"
	case s.NotRunning:
		state = "not running"
	}
	return fmt.Sprintf("%s after %d slots (%d of %d flows completed)", state, s.Slots, s.FlowsDone, s.FlowsTotal)
}

// Traffic starts the generators on the loaded flow tables (reload: TG_CTRL
// START, traffic time 0 is now) or carries on with them (CONTINUE), for at
// most `slots` slots: until every flow completed, the generators stalled,
// or the budget is spent. Writes are split to keep each one's wall time
// near WriteTarget; a split run is the same run (docs/shoal.md).
func (r *Rack) Traffic(ctx context.Context, reload bool, slots int64) (RunStatus, error) {
	var rs RunStatus
	t0 := time.Now()
	defer func() { rs.Wall = time.Since(t0) }()
	for first := true; rs.Slots < slots; first = false {
		if err := ctx.Err(); err != nil {
			return rs, drivers.Infra(r.Master, "traffic", "", err)
		}
		n := min(r.chunk, slots-rs.Slots, r.MaxChunk)
		if err := r.write(ctx, r.Master, "TG_LIMIT_SLOTS", uint32(n)); err != nil {
			return rs, err
		}
		cmd := uint32(2) // CONTINUE
		if first && reload {
			cmd = 1 // START
		}
		w0 := time.Now()
		if err := r.strobe(ctx, r.Master, "TG_CTRL", cmd); err != nil {
			return rs, err
		}
		st, err := r.poll(ctx, r.Master, "TG_STATUS", func(v uint32) bool { return v&(tgDone|tgLimit|tgStalled|tgNotRunning) != 0 })
		if err != nil {
			return rs, fmt.Errorf("traffic: %w", err)
		}
		r.adapt(n, time.Since(w0))
		ran, err := r.read(ctx, r.Master, "TG_RUN_SLOTS")
		if err != nil {
			return rs, err
		}
		rs.Slots += int64(ran)
		rs.Writes++
		rs.Done, rs.Limit, rs.Stalled, rs.NotRunning = st&tgDone != 0, st&tgLimit != 0, st&tgStalled != 0, st&tgNotRunning != 0
		if rs.Done || rs.Stalled || rs.NotRunning {
			break
		}
		if ran == 0 {
			return rs, fmt.Errorf("traffic: TG_STATUS 0x%x but no slot ran", st)
		}
	}
	tot, err := r.read(ctx, r.Master, "TG_FLOWS_TOTAL")
	if err != nil {
		return rs, err
	}
	done, err := r.read(ctx, r.Master, "TG_FLOWS_DONE")
	if err != nil {
		return rs, err
	}
	rs.FlowsTotal, rs.FlowsDone = int(tot), int(done)
	if rs.NotRunning {
		return rs, fmt.Errorf("traffic refused: the fabric is not bootstrapped (TG_STATUS.NOT_RUNNING)")
	}
	return rs, nil
}

// RunSlots lets n slots pass with the generators running (RUN_SLOTS), in
// writes sized like Traffic's.
func (r *Rack) RunSlots(ctx context.Context, n int64) error {
	st, err := r.read(ctx, r.Master, "BOOT_STATUS")
	if err != nil {
		return err
	}
	if st&bootRunning == 0 {
		return fmt.Errorf("run slots: the fabric is not running (BOOT_STATUS 0x%x)", st)
	}
	for done := int64(0); done < n; {
		if err := ctx.Err(); err != nil {
			return drivers.Infra(r.Master, "run slots", "", err)
		}
		k := min(r.chunk, n-done, r.MaxChunk, 1<<24)
		before, err := r.Slots(ctx)
		if err != nil {
			return err
		}
		w0 := time.Now()
		if err := r.strobe(ctx, r.Master, "RUN_SLOTS", uint32(k)); err != nil {
			return err
		}
		// The slot counter says when the slots have passed (on hardware
		// the write returns at once).
		pctx, cancel := drivers.Deadline(ctx, r.Settle)
		for {
			now, err := r.Slots(pctx)
			if err != nil {
				cancel()
				return err
			}
			if now >= before+uint64(k) {
				break
			}
			select {
			case <-pctx.Done():
				cancel()
				return drivers.Design(r.Master, "run slots", "the fabric stopped counting slots",
					drivers.Stalled(pctx, fmt.Sprintf("%d of %d slots passed in %s", now-before, k, r.Settle)))
			case <-time.After(time.Millisecond):
			}
		}
		cancel()
		r.adapt(k, time.Since(w0))
		done += k
	}
	return nil
}

// Slots reads the fabric's slot counter (SLOT_LO, which latches SLOT_HI):
// slots since the bootstrap.
func (r *Rack) Slots(ctx context.Context) (uint64, error) {
	lo, err := r.read(ctx, r.Master, "SLOT_LO")
	if err != nil {
		return 0, err
	}
	hi, err := r.read(ctx, r.Master, "SLOT_HI")
	if err != nil {
		return 0, err
	}
	return uint64(hi)<<32 | uint64(lo), nil
}

// adapt sizes the next run write from the wall time the last one took.
func (r *Rack) adapt(slots int64, took time.Duration) {
	switch {
	case took > r.WriteTarget:
		r.chunk = max(256, slots*int64(r.WriteTarget)/max(int64(took), 1))
	case took < r.WriteTarget/2 && slots >= r.chunk:
		r.chunk = min(2*r.chunk, r.MaxChunk)
	}
}
