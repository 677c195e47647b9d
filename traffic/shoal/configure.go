package shoal

import (
	"context"
	"fmt"
	"strconv"

	"github.com/labrunner/labrunner/drivers"
)

// Configuring a Shoal rack: the setup registers and the schedules of NICs and switches.

// Setup is what Configure writes into the rack before the sync and the
// bootstrap (docs/shoal.md, "Bring-up, register by register").
type Setup struct {
	SlotCycles, GuardCycles int
	Schedule                Schedule
	// SyncSlot is the slot whose circuits the switches hold before the
	// bootstrap and the sync runs over (§3.4); it must form a cycle
	// through every node (slot 0 of the cyclic schedule does).
	SyncSlot int
	// QueueCap and CCCtrl set every NIC's QUEUE_CAP and CC_CTRL (0: the
	// design's reset values 1024 and 7).
	QueueCap int
	CCCtrl   int
	// SwitchWords, if set, replace the decomposed switch schedules (a
	// test that takes ports out of service writes its own).
	SwitchWords map[string][]uint32
	// Disabled nodes keep NIC_CTRL.ENABLE clear: they take no part in the
	// sync, the bootstrap or traffic (a failed node, §3.5).
	Disabled []int
}

// Configure writes roles, slot parameters, node ids and schedules on every
// board (docs/shoal.md steps 2-4). The parameters take effect at the next
// bootstrap; a ROLE change stops the fabric and forgets the sync.
func (r *Rack) Configure(ctx context.Context, s Setup) error {
	f := r.Fabric
	if s.Schedule.Nodes != f.N() {
		return fmt.Errorf("configure: a schedule of %d nodes for a fabric of %d", s.Schedule.Nodes, f.N())
	}
	if err := s.Schedule.Validate(); err != nil {
		return fmt.Errorf("configure: %w", err)
	}
	E := s.Schedule.Epoch()
	if s.SyncSlot < 0 || s.SyncSlot >= E {
		return fmt.Errorf("configure: sync slot %d outside the %d-slot epoch", s.SyncSlot, E)
	}
	words := s.SwitchWords
	if words == nil {
		var err error
		if words, err = f.SwitchWords(s.Schedule); err != nil {
			return fmt.Errorf("configure: %w", err)
		}
	}
	common := []struct {
		name string
		v    uint32
	}{
		{"SLOT_CYCLES", uint32(s.SlotCycles)}, {"GUARD_CYCLES", uint32(s.GuardCycles)},
		{"EPOCH_SLOTS", uint32(E)}, {"SYNC_SLOT", uint32(s.SyncSlot)},
	}
	for _, b := range r.SwitchBoards {
		if err := r.writeCheck(ctx, b, "ROLE", RoleSwitch); err != nil {
			return err
		}
		for _, c := range common {
			if err := r.writeCheck(ctx, b, c.name, c.v); err != nil {
				return err
			}
		}
		if err := r.loadSwitchWords(ctx, b, words[b], E); err != nil {
			return err
		}
		if err := r.writeCheck(ctx, b, "SW_CTRL", 1); err != nil {
			return err
		}
	}
	disabled := map[int]bool{}
	for _, d := range s.Disabled {
		disabled[d] = true
	}
	for _, b := range r.NICBoards {
		if err := r.writeCheck(ctx, b, "ROLE", RoleNIC); err != nil {
			return err
		}
		for _, c := range common {
			if err := r.writeCheck(ctx, b, c.name, c.v); err != nil {
				return err
			}
		}
		if err := r.writeCheck(ctx, b, "NODES", uint32(f.N())); err != nil {
			return err
		}
		for p := 0; p < r.nicsPerBoard; p++ {
			node := f.Node(Cage{b, p})
			ix := "[" + strconv.Itoa(p) + "]"
			if node < 0 {
				// An uncabled cage is no node.
				if err := r.writeCheck(ctx, b, "NIC_CTRL"+ix, 0); err != nil {
					return err
				}
				continue
			}
			if err := r.writeCheck(ctx, b, "NODE_ID"+ix, uint32(node)); err != nil {
				return err
			}
			if err := r.LoadNICSchedule(ctx, node, s.Schedule); err != nil {
				return err
			}
			qc, cc := uint32(1024), uint32(CCRateLimit|CCReadyQueues|CCNewFlow)
			if s.QueueCap > 0 {
				qc = uint32(s.QueueCap)
			}
			if s.CCCtrl > 0 {
				cc = uint32(s.CCCtrl)
			}
			if err := r.writeCheck(ctx, b, "QUEUE_CAP"+ix, qc); err != nil {
				return err
			}
			if err := r.writeCheck(ctx, b, "CC_CTRL"+ix, cc); err != nil {
				return err
			}
			en := uint32(1)
			if disabled[node] {
				en = 0
			}
			if err := r.writeCheck(ctx, b, "NIC_CTRL"+ix, en); err != nil {
				return err
			}
		}
	}
	r.epoch = E
	return nil
}

// LoadSchedule rewrites the schedule memories (NICs and switches) without
// touching anything else; the sync is kept (docs/shoal.md step 5). words
// nil: the schedule's decomposition.
func (r *Rack) LoadSchedule(ctx context.Context, s Schedule, words map[string][]uint32) error {
	if words == nil {
		var err error
		if words, err = r.Fabric.SwitchWords(s); err != nil {
			return err
		}
	}
	E := s.Epoch()
	for _, b := range r.SwitchBoards {
		if err := r.writeCheck(ctx, b, "EPOCH_SLOTS", uint32(E)); err != nil {
			return err
		}
		if err := r.loadSwitchWords(ctx, b, words[b], E); err != nil {
			return err
		}
	}
	for _, b := range r.NICBoards {
		if err := r.writeCheck(ctx, b, "EPOCH_SLOTS", uint32(E)); err != nil {
			return err
		}
	}
	for node := range r.Fabric.Nodes {
		if err := r.LoadNICSchedule(ctx, node, s); err != nil {
			return err
		}
	}
	r.epoch = E
	return nil
}

func (r *Rack) loadSwitchWords(ctx context.Context, board string, words []uint32, E int) error {
	if len(words) != E {
		return fmt.Errorf("%s: %d schedule words for a %d-slot epoch", board, len(words), E)
	}
	base, size, err := r.window(board, "sw_sched")
	if err != nil {
		return err
	}
	if uint64(4*E) > size {
		return fmt.Errorf("%s: a %d-slot epoch does not fit the %d-word switch schedule memory", board, E, size/4)
	}
	return r.writeVerified(ctx, board, base, words, "load switch schedule", "slot %d: wrote 0x%04x, read back 0x%04x")
}

// writeVerified writes words from addr in one burst and reads them back:
// a schedule memory that does not hold what was written is the bus's fault
// (infrastructure), named by op and by mismatch (slot, written, read).
func (r *Rack) writeVerified(ctx context.Context, board string, addr uint64, words []uint32, op, mismatch string) error {
	if err := r.writeBurst(ctx, board, addr, words); err != nil {
		return err
	}
	back := make([]uint32, len(words))
	if err := r.readBurst(ctx, board, addr, back); err != nil {
		return err
	}
	for t := range words {
		if back[t] != words[t] {
			return drivers.Infra(board, op, "the register bus lost or changed a write", fmt.Errorf(mismatch, t, words[t], back[t]))
		}
	}
	return nil
}

func (r *Rack) nicSchedAddr(board string, p int) (uint64, int, error) {
	base, size, err := r.window(board, "nic_sched")
	if err != nil {
		return 0, 0, err
	}
	stride := size / uint64(r.nicsPerBoard)
	return base + uint64(p)*stride, int(stride / 4), nil
}

// LoadNICSchedule writes node's schedule memory: one word per slot of the
// epoch (TX_PEER, RX_PEER and their valid bits) and reads it back.
func (r *Rack) LoadNICSchedule(ctx context.Context, node int, s Schedule) error {
	b, p := r.nic(node)
	addr, max, err := r.nicSchedAddr(b, p)
	if err != nil {
		return err
	}
	E := s.Epoch()
	if E > max {
		return fmt.Errorf("%s NIC %d: a %d-slot epoch does not fit the %d-word schedule memory", b, p, E, max)
	}
	words := make([]uint32, E)
	for t := range words {
		words[t] = s.NICWord(t, node)
	}
	return r.writeVerified(ctx, b, addr, words, "load NIC schedule", "NIC "+strconv.Itoa(p)+" slot %d: wrote 0x%08x, read back 0x%08x")
}

// NICSchedule reads node's schedule memory for an epoch of E slots.
func (r *Rack) NICSchedule(ctx context.Context, node, E int) ([]NICEntry, error) {
	b, p := r.nic(node)
	addr, _, err := r.nicSchedAddr(b, p)
	if err != nil {
		return nil, err
	}
	w := make([]uint32, E)
	if err := r.readBurst(ctx, b, addr, w); err != nil {
		return nil, err
	}
	out := make([]NICEntry, E)
	for t := range w {
		out[t] = DecodeNICWord(w[t])
	}
	return out, nil
}

// SwitchSchedule reads E words of a switch's schedule memory (sw_sched) or
// of its trace (sw_trace: what the multiplexers held in each slot of the
// last complete epoch).
func (r *Rack) SwitchSchedule(ctx context.Context, board, window string, E int) ([]uint32, error) {
	base, _, err := r.window(board, window)
	if err != nil {
		return nil, err
	}
	w := make([]uint32, E)
	return w, r.readBurst(ctx, board, base, w)
}
