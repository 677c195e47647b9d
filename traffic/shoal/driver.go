package shoal

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/drivers"
	"github.com/labrunner/labrunner/drivers/regmap"
)

// Values of the ROLE register (docs/shoal.md).
const (
	RoleNone   = 0
	RoleNIC    = 1
	RoleSwitch = 2
)

// Bits of the status registers (bitstreams/catalogue/shoal.yaml).
const (
	syncDone  = 1 << 0
	syncError = 1 << 1
	// SyncLocked is SYNC_STATUS.LOCKED: the board's PLL is locked to the
	// rack's distributed reference (§6.1).
	SyncLocked = 1 << 2

	bootRunning     = 1 << 0
	bootNotSynced   = 1 << 1
	bootConfigError = 1 << 2
	bootBadParams   = 1 << 3

	tgDone       = 1 << 0
	tgLimit      = 1 << 1
	tgStalled    = 1 << 2
	tgNotRunning = 1 << 3

	nicSynced    = 1 << 0
	nicRunning   = 1 << 1
	nicAnyFailed = 1 << 2

	// SwRunning, SwConflict, SwTraceValid are SW_STATUS bits.
	SwRunning    = 1 << 0
	SwConflict   = 1 << 1
	SwTraceValid = 1 << 2

	// CC_CTRL bits (§3.3.2-3.3.3).
	CCRateLimit   = 1 << 0
	CCReadyQueues = 1 << 1
	CCNewFlow     = 1 << 2
)

// Rack drives the Shoal rack through registers only: the same code runs the
// emulated rack and a DE5-Net rack on PCIe or UART bridges. Boards are
// addressed through their loaded design's register map (regmap); the
// fabric says which cage is which node and which switch port.
//
// A write that starts activity (SYNC_CTRL, BOOT_CTRL, RUN_SLOTS, TG_CTRL)
// returns on an emulated board only once the fabric has run (docs/shoal.md);
// on hardware it returns at once and the status registers say when it is
// over. The driver polls the status after every such write, so both work,
// and it splits long runs into writes of a bounded slot budget whose size
// it adapts to the wall time they take (an emulated board's bridge gives a
// request about a second).
type Rack struct {
	Fabric       *Fabric
	NICBoards    []string
	SwitchBoards []string
	regs         map[string]*regmap.Regs
	// Master is the NIC board that receives the rack-wide strobes
	// (SYNC_CTRL of the sync master, BOOT_CTRL, TG_CTRL, RUN_SLOTS).
	Master string
	// Access bounds one register access; Settle bounds the wait for a
	// strobe's status (a run's chunk on hardware).
	Access, Settle time.Duration
	// WriteTarget is the wall time one run write should take; MaxChunk
	// bounds its slots (TG_LIMIT_SLOTS is 32-bit; RUN_SLOTS at most 2^24).
	WriteTarget time.Duration
	MaxChunk    int64
	Log         *slog.Logger

	nicsPerBoard int
	maxNodes     int
	chunk        int64
	epoch        int
	counterBurst bool
}

// NewRack binds the fabric to the boards' registers. regs must hold every
// NIC and switch board of the fabric.
func NewRack(f *Fabric, nicBoards, switchBoards []string, regs map[string]*regmap.Regs) (*Rack, error) {
	r := &Rack{Fabric: f, NICBoards: nicBoards, SwitchBoards: switchBoards, regs: regs,
		Access: 2 * time.Second, Settle: 10 * time.Second, WriteTarget: 100 * time.Millisecond, MaxChunk: 1 << 18,
		Log: slog.New(slog.DiscardHandler), chunk: 4096}
	if len(nicBoards) == 0 {
		return nil, errors.New("shoal rack: no NIC board")
	}
	r.Master = nicBoards[0]
	for _, b := range append(append([]string{}, nicBoards...), switchBoards...) {
		if regs[b] == nil {
			return nil, fmt.Errorf("shoal rack: no registers for board %s", b)
		}
	}
	m := regs[r.Master].Manifest()
	var err error
	if r.nicsPerBoard, err = manifestInt(m.Params, "nics_per_board"); err != nil {
		return nil, fmt.Errorf("design %s: %w", m.Name, err)
	}
	if r.maxNodes, err = manifestInt(m.Params, "max_nodes"); err != nil {
		return nil, fmt.Errorf("design %s: %w", m.Name, err)
	}
	if f.N() > r.maxNodes {
		return nil, fmt.Errorf("shoal rack: %d nodes, design %s holds %d", f.N(), m.Name, r.maxNodes)
	}
	// The NIC counters are consecutive words from TX_CELLS[p]: read them
	// in one burst when the map says so.
	r.counterBurst = true
	base, err := regs[r.Master].Lookup("TX_CELLS[0]")
	if err != nil {
		return nil, err
	}
	for i, c := range counterNames {
		loc, err := regs[r.Master].Lookup(c + "[0]")
		if err != nil {
			return nil, err
		}
		if loc.Addr != base.Addr+4*uint64(i) || loc.Reg.Access != bitstreams.RO {
			r.counterBurst = false
		}
	}
	return r, nil
}

func manifestInt(p map[string]string, key string) (int, error) {
	v, ok := p[key]
	if !ok {
		return 0, fmt.Errorf("manifest parameter %s missing", key)
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 1 {
		return 0, fmt.Errorf("manifest parameter %s = %q: want a positive integer", key, v)
	}
	return n, nil
}

// Regs returns a board's registers.
func (r *Rack) Regs(board string) *regmap.Regs { return r.regs[board] }

// nic returns the board and cage of a node.
func (r *Rack) nic(node int) (string, int) {
	c := r.Fabric.Nodes[node]
	return c.Board, c.Index
}

func (r *Rack) access(ctx context.Context) (context.Context, context.CancelFunc) {
	return drivers.Deadline(ctx, r.Access)
}

func (r *Rack) read(ctx context.Context, board, name string) (uint32, error) {
	actx, cancel := r.access(ctx)
	defer cancel()
	return r.regs[board].Read(actx, name)
}

// ReadReg reads one register of a board of the rack, under the access
// deadline.
func (r *Rack) ReadReg(ctx context.Context, board, name string) (uint32, error) {
	return r.read(ctx, board, name)
}

func (r *Rack) write(ctx context.Context, board, name string, v uint32) error {
	actx, cancel := r.access(ctx)
	defer cancel()
	return r.regs[board].Write(actx, name, v)
}

// strobe writes a run strobe (TG_CTRL, RUN_SLOTS) under the Settle
// deadline rather than one access's: hardware answers at once, but an
// emulated board runs the chunk inside the write, and a fabric that
// suddenly costs more per slot (cells corrupted and resent after a clock
// drifted) must not turn a sized chunk into a bus timeout.
func (r *Rack) strobe(ctx context.Context, board, name string, v uint32) error {
	sctx, cancel := drivers.Deadline(ctx, max(r.Settle, r.Access))
	defer cancel()
	return r.regs[board].Write(sctx, name, v)
}

// writeCheck writes a configuration register and reads it back: a bus that
// drops or garbles writes shows here, not as a mysterious traffic failure.
func (r *Rack) writeCheck(ctx context.Context, board, name string, v uint32) error {
	if err := r.write(ctx, board, name, v); err != nil {
		return err
	}
	got, err := r.read(ctx, board, name)
	if err != nil {
		return err
	}
	if got != v {
		return drivers.Infra(board, "configure "+name, "the register bus lost or changed a write",
			fmt.Errorf("wrote %d, read back %d", v, got))
	}
	return nil
}

func (r *Rack) window(board, name string) (base, size uint64, err error) {
	for _, w := range r.regs[board].Manifest().Windows {
		if w.Name == name {
			return w.Base, w.Size, nil
		}
	}
	m := r.regs[board].Manifest()
	return 0, 0, drivers.Setup(board, "find window "+name, "the shoal register map (bitstreams/catalogue/shoal.yaml) names it",
		fmt.Errorf("design %s %s has no window %q", m.Name, m.Version, name))
}

func (r *Rack) writeBurst(ctx context.Context, board string, addr uint64, words []uint32) error {
	// A burst of up to a few thousand words: one access deadline per 256.
	actx, cancel := drivers.Deadline(ctx, r.Access*time.Duration(1+len(words)/256))
	defer cancel()
	return r.regs[board].WriteBurst(actx, addr, words)
}

func (r *Rack) readBurst(ctx context.Context, board string, addr uint64, words []uint32) error {
	actx, cancel := drivers.Deadline(ctx, r.Access*time.Duration(1+len(words)/256))
	defer cancel()
	return r.regs[board].ReadBurst(actx, addr, words)
}

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
	if err := r.writeBurst(ctx, board, base, words); err != nil {
		return err
	}
	back := make([]uint32, E)
	if err := r.readBurst(ctx, board, base, back); err != nil {
		return err
	}
	for t := range words {
		if back[t] != words[t] {
			return drivers.Infra(board, "load switch schedule", "the register bus lost or changed a write",
				fmt.Errorf("slot %d: wrote 0x%04x, read back 0x%04x", t, words[t], back[t]))
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
	if err := r.writeBurst(ctx, b, addr, words); err != nil {
		return err
	}
	back := make([]uint32, E)
	if err := r.readBurst(ctx, b, addr, back); err != nil {
		return err
	}
	for t := range words {
		if back[t] != words[t] {
			return drivers.Infra(b, "load NIC schedule", "the register bus lost or changed a write",
				fmt.Errorf("NIC %d slot %d: wrote 0x%08x, read back 0x%08x", p, t, words[t], back[t]))
		}
	}
	return nil
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
