package shoal

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
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
