package shoal

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/labrunner/labrunner/drivers"
)

// Bringing a configured Shoal rack up: the time sync, the boot, stop and restart.

// SyncReport is what the time sync measured (§3.4, §6.1).
type SyncReport struct {
	Status uint32
	// OneWayPS is the node-to-node one-way delay the exchange measured.
	OneWayPS uint32
	// MaxResidualPS is the largest |offset| of the verification round.
	MaxResidualPS uint32
	// Residual and Offset per node, ps.
	Residual, Offset []int32
}

// Sync runs the DTP-like offset exchange with `master` as the reference
// (docs/shoal.md step 5). The fabric must be stopped.
func (r *Rack) Sync(ctx context.Context, master int) (SyncReport, error) {
	var rep SyncReport
	if master < 0 || master >= r.Fabric.N() {
		return rep, fmt.Errorf("sync: master node %d: nodes are 0..%d", master, r.Fabric.N()-1)
	}
	mb, _ := r.nic(master)
	if err := r.write(ctx, mb, "SYNC_MASTER", uint32(master)); err != nil {
		return rep, err
	}
	if err := r.write(ctx, mb, "SYNC_CTRL", 1); err != nil {
		return rep, err
	}
	st, err := r.poll(ctx, mb, "SYNC_STATUS", func(v uint32) bool { return v&(syncDone|syncError) != 0 })
	if err != nil {
		return rep, fmt.Errorf("sync: %w", err)
	}
	rep.Status = st
	if rep.OneWayPS, err = r.read(ctx, mb, "SYNC_OWD_PS"); err != nil {
		return rep, err
	}
	if rep.MaxResidualPS, err = r.read(ctx, mb, "SYNC_MAX_RESIDUAL_PS"); err != nil {
		return rep, err
	}
	var unsynced []string
	for node := range r.Fabric.Nodes {
		b, p := r.nic(node)
		ix := "[" + strconv.Itoa(p) + "]"
		ns, err := r.read(ctx, b, "NIC_STATUS"+ix)
		if err != nil {
			return rep, err
		}
		en, err := r.read(ctx, b, "NIC_CTRL"+ix)
		if err != nil {
			return rep, err
		}
		if en&1 != 0 && ns&nicSynced == 0 {
			unsynced = append(unsynced, fmt.Sprintf("node %d (%s)", node, r.Fabric.Nodes[node]))
		}
		res, err := r.read(ctx, b, "SYNC_RESIDUAL_PS"+ix)
		if err != nil {
			return rep, err
		}
		off, err := r.read(ctx, b, "SYNC_OFFSET_PS"+ix)
		if err != nil {
			return rep, err
		}
		rep.Residual = append(rep.Residual, int32(res))
		rep.Offset = append(rep.Offset, int32(off))
	}
	if st&syncError != 0 || st&syncDone == 0 {
		why := "the master is not on a cycle of the sync slot's circuits, or the fabric was running"
		if len(unsynced) > 0 {
			why = "not reached: " + strings.Join(unsynced, ", ")
		}
		return rep, fmt.Errorf("time sync from node %d failed (SYNC_STATUS 0x%x): %s; check the switches' sync-slot configuration and the cables", master, st, why)
	}
	return rep, nil
}

// Boot sends the bootstrap signal (docs/shoal.md step 6) and checks the
// fabric runs.
func (r *Rack) Boot(ctx context.Context) error {
	if err := r.write(ctx, r.Master, "BOOT_CTRL", 1); err != nil {
		return err
	}
	st, err := r.poll(ctx, r.Master, "BOOT_STATUS", func(v uint32) bool { return v != 0 })
	if err != nil {
		return fmt.Errorf("bootstrap: %w", err)
	}
	if st&bootRunning != 0 && st&^bootRunning == 0 {
		return nil
	}
	var why []string
	if st&bootNotSynced != 0 {
		why = append(why, "NOT_SYNCED: an enabled NIC is not synchronised (run the time sync first)")
	}
	if st&bootConfigError != 0 {
		why = append(why, "CONFIG_ERROR: two enabled NICs share a NODE_ID, or a NODE_ID is not below NODES")
	}
	if st&bootBadParams != 0 {
		why = append(why, "BAD_PARAMS: SLOT_CYCLES, GUARD_CYCLES, EPOCH_SLOTS, NODES or SYNC_SLOT out of range on some board")
	}
	return fmt.Errorf("bootstrap refused (BOOT_STATUS 0x%x): %s", st, strings.Join(why, "; "))
}

// Stop ends the run: queues flushed, inferred failures forgotten, the sync
// kept (BOOT_CTRL.STOP).
func (r *Rack) Stop(ctx context.Context) error {
	if err := r.write(ctx, r.Master, "BOOT_CTRL", 2); err != nil {
		return err
	}
	_, err := r.poll(ctx, r.Master, "BOOT_STATUS", func(v uint32) bool { return v&bootRunning == 0 })
	if err != nil {
		return fmt.Errorf("stop: %w", err)
	}
	return nil
}

// Restart stops and bootstraps again, and clears every board's counters:
// a fresh run on the loaded configuration.
func (r *Rack) Restart(ctx context.Context) error {
	if err := r.Stop(ctx); err != nil {
		return err
	}
	if err := r.Boot(ctx); err != nil {
		return err
	}
	return r.ClearCounters(ctx)
}

// poll reads a register until cond holds, within Settle. An emulated board
// has finished before the first read; hardware gets pauses from 100 µs up
// to 20 ms.
func (r *Rack) poll(ctx context.Context, board, name string, cond func(uint32) bool) (uint32, error) {
	pctx, cancel := drivers.Deadline(ctx, r.Settle)
	defer cancel()
	pause := 100 * time.Microsecond
	for {
		v, err := r.read(pctx, board, name)
		if err != nil {
			return v, err
		}
		if cond(v) {
			return v, nil
		}
		select {
		case <-pctx.Done():
			// The board answered every read: the design never got there.
			return v, drivers.Design(board, "wait for "+name, "the design did not finish in time",
				drivers.Stalled(pctx, fmt.Sprintf("%s still 0x%x after %s", name, v, r.Settle)))
		case <-time.After(pause):
		}
		pause = min(2*pause, 20*time.Millisecond)
	}
}
