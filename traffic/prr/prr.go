// Package prr drives the parallel round-robin switch design (FPGA'20,
// Papaphilippou, Meng and Luk) through its registers
// (bitstreams/catalogue/prr.yaml, docs/prr.md): the AXI debug peripheral of
// §5 (batch registers, release, placement and queue read-back, drain and
// egress capture, timestamps) and the traffic generator of §5.1 with its
// counters. It works the same on a real Ultra96 and on the emulated rack: it
// only reads and writes registers, in bursts wherever the map lays
// registers out next to each other (a UART bridge pays per frame, not per
// word), and it polls with deadlines.
package prr

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"strings"
	"time"

	"github.com/labrunner/labrunner/drivers"
	"github.com/labrunner/labrunner/drivers/regmap"
)

// Design is the catalogue name of the design this package drives.
const Design = "prr"

// CTRL command bits (docs/prr.md, "Other commands"): when several are set
// they act in the order CLEAR_COUNTERS, CLEAR_QUEUES, CLEAR_BATCH, RELEASE,
// DRAIN.
const (
	CmdRelease       uint32 = 1 << 0
	CmdDrain         uint32 = 1 << 1
	CmdClearQueues   uint32 = 1 << 2
	CmdClearCounters uint32 = 1 << 3
	CmdClearBatch    uint32 = 1 << 4
)

// STATUS bits.
const (
	StatusBusy           uint32 = 1 << 0
	StatusDropped        uint32 = 1 << 1
	StatusNonEmpty       uint32 = 1 << 2
	StatusEgressOverflow uint32 = 1 << 3
)

// BATCH_CTRL: VALID and the 8-bit destination field.
const (
	BatchValid    uint32 = 1 << 31
	BatchDestMask uint32 = 0xff
)

// Limits of the map (docs/prr.md): per-port arrays have 256 elements, the
// egress capture FIFO holds 1024 tags, a port's egress block is 256 words,
// a batch slot carries at most 32 data words.
const (
	MaxPorts       = 256
	EgressCapacity = 1024
	egressBlock    = 256
	maxDataWords   = 32
	maxDepth       = 4096
	maxQueueWords  = 1 << 20
)

// Build is what the loaded bitstream was built for, as its registers say.
type Build struct {
	Ports      int    // P
	S          int    // register-removal parameter (§4.2)
	FIFODepth  int    // entries per output queue
	PacketBits int    // packet width
	ClockKHz   uint32 // the design clock
}

// ClockMHz is the design clock in MHz.
func (b Build) ClockMHz() float64 { return float64(b.ClockKHz) / 1e3 }

// LogPorts is log2(P).
func (b Build) LogPorts() int { return bits.TrailingZeros(uint(b.Ports)) }

// DataWords is the number of 32-bit data words of a packet.
func (b Build) DataWords() int { return b.PacketBits / 32 }

func (b Build) String() string {
	return fmt.Sprintf("%dx%d, S=%d, FIFO depth %d, %d-bit packets, %g MHz", b.Ports, b.Ports, b.S, b.FIFODepth, b.PacketBits, b.ClockMHz())
}

// Check refuses build parameters outside what the map and the paper allow:
// P a power of two from 2 to 256 (Table 1), S ≥ 1 (§4.2), depth 1..4096 with
// P²·depth ≤ 2²⁰ (the QTAGS window), a packet a multiple of 32 bits up to
// 1024, a clock above zero.
func (b Build) Check() error {
	switch {
	case b.Ports < 2 || b.Ports > MaxPorts || b.Ports&(b.Ports-1) != 0:
		return fmt.Errorf("PORTS reads %d: want a power of two from 2 to %d (FPGA'20 Table 1)", b.Ports, MaxPorts)
	case b.S < 1:
		return fmt.Errorf("STAGE_S reads %d: want S ≥ 1 (FPGA'20 §4.2)", b.S)
	case b.FIFODepth < 1 || b.FIFODepth > maxDepth || b.Ports*b.Ports*b.FIFODepth > maxQueueWords:
		return fmt.Errorf("FIFO_DEPTH reads %d with %d ports: want 1..%d and P²·depth ≤ %d", b.FIFODepth, b.Ports, maxDepth, maxQueueWords)
	case b.PacketBits < 32 || b.PacketBits%32 != 0 || b.PacketBits > 32*maxDataWords:
		return fmt.Errorf("PKT_BITS reads %d: want a multiple of 32 up to %d", b.PacketBits, 32*maxDataWords)
	case b.ClockKHz == 0:
		return errors.New("CLOCK_KHZ reads 0")
	}
	return nil
}

// Switch is one board's prr design, opened: its build and the addresses of
// the blocks it reads in bursts, resolved once from the register map.
type Switch struct {
	Regs *regmap.Regs
	// Build is the build the switch is driven and judged as: what its
	// build registers read (Open), or what the caller declares (OpenAs).
	Build Build
	// HW is what the board's build registers read (PORTS, STAGE_S,
	// FIFO_DEPTH, PKT_BITS, CLOCK_KHZ): the board's own statement, with
	// which its cycle counts convert to time.
	HW Build
	a  addrs
}

type addrs struct {
	ident, ctrl, status, drainCycles, placement, offset, arb, egressCount uint64
	counters, tgCtrl, tgConfig, tgResults, tgHist, qreadSel, qreadStatus  uint64
	qreadData, batchCtrl, batchData, egressPop, qstat, qtags              uint64
	slotStride, egressStride                                              uint64
}

// span resolves names and checks that they are consecutive words, so that
// one burst reads or writes them all; it returns the first one's address.
func span(r *regmap.Regs, names ...string) (uint64, error) {
	var base uint64
	for i, n := range names {
		loc, err := r.Lookup(n)
		if err != nil {
			return 0, err
		}
		if i == 0 {
			base = loc.Addr
			continue
		}
		if want := base + 4*uint64(i); loc.Addr != want {
			return 0, drivers.Setup("", "resolve "+n, "fix the register map, or this driver's burst layout",
				fmt.Errorf("%s is at 0x%x, not at 0x%x right after %s: the burst over %s..%s is not contiguous", n, loc.Addr, want, names[i-1], names[0], names[len(names)-1]))
		}
	}
	return base, nil
}

// Layouts of the bursts (docs/prr.md, address map).
var (
	identNames    = []string{"ID", "VERSION", "SCRATCH", "PORTS", "STAGE_S", "FIFO_DEPTH", "PKT_BITS", "CLOCK_KHZ"}
	statusNames   = []string{"STATUS", "DRAIN_CYCLES", "BATCH_PENDING", "LAST_INS_CYCLE", "LAST_ENQ_CYCLE", "LAST_PLACED", "LAST_DROPPED"}
	counterNames  = []string{"PKTS_IN", "PKTS_ENQ", "PKTS_DROPPED", "PKTS_OUT", "EGRESS_LOST"}
	tgConfigNames = []string{"TG_MODEL", "TG_LOAD", "TG_BURST", "TG_NONUNIF_P", "TG_SEED", "TG_CYCLES", "TG_WARMUP", "TG_DRAIN_MAX"}
	tgResultNames = []string{"TG_STATUS", "TG_OFFERED_LO", "TG_OFFERED_HI", "TG_DELIVERED_LO", "TG_DELIVERED_HI",
		"TG_DROPPED_LO", "TG_DROPPED_HI", "TG_LAT_SUM_LO", "TG_LAT_SUM_HI", "TG_LAT_MIN", "TG_LAT_MAX",
		"TG_WAIT_SUM_LO", "TG_WAIT_SUM_HI", "TG_WAIT_MAX", "TG_WINDOW_OUT_LO", "TG_WINDOW_OUT_HI",
		"TG_RUN_CYCLES_LO", "TG_RUN_CYCLES_HI", "TG_STRANDED", "TG_ORDER_ERRORS"}
	qreadNames = []string{"QREAD_STATUS", "QREAD_HDR", "QREAD_TS_INS", "QREAD_TS_ENQ"}
)

// HistBins is the number of TG_HIST bins.
const HistBins = 32

func resolve(r *regmap.Regs) (addrs, error) {
	var a addrs
	var err error
	one := func(name string) uint64 {
		if err != nil {
			return 0
		}
		var loc regmap.Loc
		loc, err = r.Lookup(name)
		return loc.Addr
	}
	seq := func(names []string) uint64 {
		if err != nil {
			return 0
		}
		var base uint64
		base, err = span(r, names...)
		return base
	}
	a.ident = seq(identNames)
	a.ctrl = one("CTRL")
	a.status = seq(statusNames)
	a.drainCycles = one("DRAIN_CYCLES")
	a.counters = seq(counterNames)
	a.tgCtrl = one("TG_CTRL")
	a.tgConfig = seq(tgConfigNames)
	a.tgResults = seq(tgResultNames)
	a.tgHist = seq([]string{"TG_HIST[0]", "TG_HIST[1]"})
	a.qreadSel = one("QREAD_SEL")
	a.qreadStatus = seq(qreadNames)
	a.qreadData = seq([]string{"QREAD_DATA[0]", "QREAD_DATA[1]"})
	a.placement = seq([]string{"PLACEMENT[0]", "PLACEMENT[1]"})
	a.offset = seq([]string{"OFFSET[0]", "OFFSET[1]"})
	a.arb = seq([]string{"ARB_INDEX[0]", "ARB_INDEX[1]"})
	a.egressCount = seq([]string{"EGRESS_COUNT[0]", "EGRESS_COUNT[1]"})
	a.batchCtrl = one("BATCH_CTRL[0]")
	a.batchData = one("BATCH_DATA[0]")
	a.egressPop = one("EGRESS_POP[0]")
	a.qstat = one("QSTAT")
	a.qtags = one("QTAGS")
	if err != nil {
		return a, err
	}
	s1, s2 := one("BATCH_CTRL[1]"), one("EGRESS_POP[1]")
	if err != nil {
		return a, err
	}
	a.slotStride, a.egressStride = s1-a.batchCtrl, s2-a.egressPop
	if a.egressStride < 4*egressBlock {
		return a, drivers.Setup("", "resolve EGRESS_POP", "fix the register map",
			fmt.Errorf("EGRESS_POP's stride 0x%x is below a port's %d-word block", a.egressStride, egressBlock))
	}
	return a, nil
}

// Open reads the design's identity and build parameters (one burst) and
// checks them against the register map's manifest.
func Open(ctx context.Context, r *regmap.Regs) (*Switch, error) {
	a, err := resolve(r)
	if err != nil {
		return nil, err
	}
	w := make([]uint32, len(identNames))
	if err := r.ReadBurst(ctx, a.ident, w); err != nil {
		return nil, fmt.Errorf("reading the prr identity and build registers: %w", err)
	}
	m := r.Manifest()
	if w[0] != m.ID {
		return nil, drivers.Setup("", "open the prr switch", "program the board with the prr bitstream",
			fmt.Errorf("ID reads 0x%08x, the %s %s manifest says 0x%08x: another design is loaded", w[0], m.Name, m.Version, m.ID))
	}
	b := Build{Ports: int(w[3]), S: int(w[4]), FIFODepth: int(w[5]), PacketBits: int(w[6]), ClockKHz: w[7]}
	if err := b.Check(); err != nil {
		return nil, drivers.Setup("", "open the prr switch", "check the bitstream's build parameters", fmt.Errorf("the loaded build: %w", err))
	}
	return &Switch{Regs: r, Build: b, HW: b, a: a}, nil
}

// OpenAs opens the switch as the build the caller declares (the
// manifest's configuration values): Build is decl, and the tests judge the
// board as that build; HW keeps what its build registers read, unchecked
// (a board whose registers differ from the declaration is judged on its
// own verdict, not refused here).
func OpenAs(ctx context.Context, r *regmap.Regs, decl Build) (*Switch, error) {
	if err := decl.Check(); err != nil {
		return nil, drivers.Setup("", "open the prr switch", "fix the manifest's config: block", fmt.Errorf("the declared build: %w", err))
	}
	a, err := resolve(r)
	if err != nil {
		return nil, err
	}
	w := make([]uint32, len(identNames))
	if err := r.ReadBurst(ctx, a.ident, w); err != nil {
		return nil, fmt.Errorf("reading the prr identity and build registers: %w", err)
	}
	m := r.Manifest()
	if w[0] != m.ID {
		return nil, drivers.Setup("", "open the prr switch", "program the board with the prr bitstream",
			fmt.Errorf("ID reads 0x%08x, the %s %s manifest says 0x%08x: another design is loaded", w[0], m.Name, m.Version, m.ID))
	}
	hw := Build{Ports: int(w[3]), S: int(w[4]), FIFODepth: int(w[5]), PacketBits: int(w[6]), ClockKHz: w[7]}
	return &Switch{Regs: r, Build: decl, HW: hw, a: a}, nil
}

// Command writes CTRL and waits until STATUS.BUSY reads 0 (docs/prr.md:
// the emulator finishes inside the write; hardware may take a few cycles,
// a DRAIN up to DRAIN_CYCLES).
func (s *Switch) Command(ctx context.Context, bits uint32) error {
	if err := s.Regs.WriteAddr(ctx, s.a.ctrl, bits); err != nil {
		return fmt.Errorf("CTRL = 0x%x: %w", bits, err)
	}
	_, err := s.waitIdle(ctx, fmt.Sprintf("CTRL = 0x%x", bits))
	return err
}

// waitIdle polls STATUS until BUSY is clear and returns the status burst.
func (s *Switch) waitIdle(ctx context.Context, what string) (Status, error) {
	pause := time.Millisecond
	for {
		st, err := s.ReadStatus(ctx)
		if err != nil {
			return st, err
		}
		if st.Word&StatusBusy == 0 {
			return st, nil
		}
		select {
		case <-ctx.Done():
			return st, drivers.Stalled(ctx, what+": STATUS.BUSY still set")
		case <-time.After(pause):
		}
		pause = min(2*pause, 50*time.Millisecond)
	}
}

// Status is the debug peripheral's status and what the last RELEASE did.
type Status struct {
	Word         uint32 // STATUS
	DrainCycles  uint32
	BatchPending int
	LastIns      uint32 // LAST_INS_CYCLE
	LastEnq      uint32 // LAST_ENQ_CYCLE
	LastPlaced   int
	LastDropped  int
}

// PipelineCycles is LAST_ENQ_CYCLE - LAST_INS_CYCLE (mod 2^32): the last
// batch's pipeline latency (§4.2).
func (st Status) PipelineCycles() uint32 { return st.LastEnq - st.LastIns }

// ReadStatus reads STATUS through LAST_DROPPED in one burst.
func (s *Switch) ReadStatus(ctx context.Context) (Status, error) {
	w := make([]uint32, len(statusNames))
	if err := s.Regs.ReadBurst(ctx, s.a.status, w); err != nil {
		return Status{}, err
	}
	return Status{Word: w[0], DrainCycles: w[1], BatchPending: int(w[2]), LastIns: w[3], LastEnq: w[4],
		LastPlaced: int(w[5]), LastDropped: int(w[6])}, nil
}

// Slot is one batch slot (input port) of the debug peripheral.
type Slot struct {
	Valid bool
	Dest  int // 0..255; the switch decodes the low log2(P) bits
}

// CtrlWord encodes BATCH_CTRL.
func (sl Slot) CtrlWord() uint32 {
	w := uint32(sl.Dest) & BatchDestMask
	if sl.Valid {
		w |= BatchValid
	}
	return w
}

// WriteTags writes data word 0 (the tag the read-back windows show) of
// every slot i < len(tags). Data words stay across releases.
func (s *Switch) WriteTags(ctx context.Context, tags []uint32) error {
	if len(tags) > s.Build.Ports {
		return fmt.Errorf("%d tags for %d batch slots", len(tags), s.Build.Ports)
	}
	for i, t := range tags {
		if err := s.Regs.WriteAddr(ctx, s.a.batchData+uint64(i)*s.a.slotStride, t); err != nil {
			return fmt.Errorf("writing the tag of batch slot %d: %w", i, err)
		}
	}
	return nil
}

// WriteTag writes data word 0 of one slot.
func (s *Switch) WriteTag(ctx context.Context, slot int, tag uint32) error {
	if slot < 0 || slot >= s.Build.Ports {
		return fmt.Errorf("batch slot %d: the build has %d", slot, s.Build.Ports)
	}
	if err := s.Regs.WriteAddr(ctx, s.a.batchData+uint64(slot)*s.a.slotStride, tag); err != nil {
		return fmt.Errorf("writing the tag of batch slot %d: %w", slot, err)
	}
	return nil
}

// WriteData writes every data word of slot i (at most PKT_BITS/32).
func (s *Switch) WriteData(ctx context.Context, slot int, words []uint32) error {
	if slot < 0 || slot >= s.Build.Ports || len(words) > s.Build.DataWords() {
		return fmt.Errorf("slot %d, %d data words: the build has %d slots of %d words", slot, len(words), s.Build.Ports, s.Build.DataWords())
	}
	return s.Regs.WriteBurst(ctx, s.a.batchData+uint64(slot)*s.a.slotStride, words)
}

// Load writes BATCH_CTRL of every valid slot (one write each: the slots are
// 0x100 apart). Slots that are not valid are not written: RELEASE left them
// clear, as CLEAR_BATCH does.
func (s *Switch) Load(ctx context.Context, slots []Slot) error {
	if len(slots) > s.Build.Ports {
		return fmt.Errorf("a batch of %d slots for %d ports", len(slots), s.Build.Ports)
	}
	for i, sl := range slots {
		if !sl.Valid {
			continue
		}
		if sl.Dest < 0 || sl.Dest > int(BatchDestMask) {
			return fmt.Errorf("batch slot %d: destination %d does not fit the 8-bit DEST field", i, sl.Dest)
		}
		if err := s.Regs.WriteAddr(ctx, s.a.batchCtrl+uint64(i)*s.a.slotStride, sl.CtrlWord()); err != nil {
			return fmt.Errorf("loading batch slot %d: %w", i, err)
		}
	}
	return nil
}

// Release inserts the loaded batch (CTRL.RELEASE) and returns the status
// burst, whose LAST_* registers describe the batch.
func (s *Switch) Release(ctx context.Context) (Status, error) {
	if err := s.Regs.WriteAddr(ctx, s.a.ctrl, CmdRelease); err != nil {
		return Status{}, fmt.Errorf("CTRL.RELEASE: %w", err)
	}
	return s.waitIdle(ctx, "CTRL.RELEASE")
}

// Insert is WriteTag for every valid slot i (tags[i]), Load, Release and
// ReadPlacement, in that order, in one batch: on a UART bridge with a
// window one round trip instead of one a register (docs/uart-bridge.md,
// "Window"). The status is read right behind the release; when it still
// shows BUSY (hardware that takes cycles over a RELEASE), STATUS is polled
// as Release does and PLACEMENT read again, so that what is returned is
// read after the release ended, as with the calls one by one.
func (s *Switch) Insert(ctx context.Context, slots []Slot, tags []uint32) (Status, []uint32, error) {
	sts, places, err := s.InsertMany(ctx, [][]Slot{slots}, [][]uint32{tags})
	if err != nil {
		return Status{}, nil, err
	}
	return sts[0], places[0], nil
}

// BusyError is InsertMany's error when the status read behind a release
// that is not the last one shows BUSY: the batches after it were written
// and released while it may still have run, and its PLACEMENT may have been
// read before it ended (docs/prr.md: every command has finished when its
// write returns). Nothing of the batches from Batch on can be judged; the
// statuses and PLACEMENT words of the batches before it are returned with
// the error, and the switch is idle again when it is returned.
type BusyError struct {
	Batch int // the batch whose status showed BUSY
}

func (e *BusyError) Error() string {
	return fmt.Sprintf("STATUS.BUSY still set behind the RELEASE of batch %d of a group: the batches after it ran while it may have", e.Batch)
}

// InsertMany is Insert for several batches one after another in one
// batch of register accesses: on a UART bridge with a window the round
// trip that Insert pays per batch is paid once for all of them. Each
// batch's status and PLACEMENT are read right behind its own release. A
// BUSY status behind the last release is handled as Insert handles it;
// behind an earlier one it is a *BusyError.
func (s *Switch) InsertMany(ctx context.Context, slots [][]Slot, tags [][]uint32) ([]Status, [][]uint32, error) {
	if len(tags) != len(slots) {
		return nil, nil, fmt.Errorf("%d batches with %d lists of tags", len(slots), len(tags))
	}
	b := s.Regs.Batch()
	var why []string // what each access is, for errors
	sws, places := make([][]uint32, len(slots)), make([][]uint32, len(slots))
	for k := range slots {
		pre := ""
		if len(slots) > 1 {
			pre = fmt.Sprintf("batch %d of %d: ", k+1, len(slots))
		}
		if len(slots[k]) > s.Build.Ports || len(tags[k]) < len(slots[k]) {
			return nil, nil, fmt.Errorf("%sa batch of %d slots (%d tags) for %d ports", pre, len(slots[k]), len(tags[k]), s.Build.Ports)
		}
		for i, sl := range slots[k] {
			if sl.Valid {
				b.WriteAddr(s.a.batchData+uint64(i)*s.a.slotStride, tags[k][i])
				why = append(why, fmt.Sprintf("%swriting the tag of batch slot %d", pre, i))
			}
		}
		for i, sl := range slots[k] {
			if !sl.Valid {
				continue
			}
			if sl.Dest < 0 || sl.Dest > int(BatchDestMask) {
				return nil, nil, fmt.Errorf("%sbatch slot %d: destination %d does not fit the 8-bit DEST field", pre, i, sl.Dest)
			}
			b.WriteAddr(s.a.batchCtrl+uint64(i)*s.a.slotStride, sl.CtrlWord())
			why = append(why, fmt.Sprintf("%sloading batch slot %d", pre, i))
		}
		b.WriteAddr(s.a.ctrl, CmdRelease)
		why = append(why, pre+"CTRL.RELEASE")
		sws[k] = make([]uint32, len(statusNames))
		b.ReadBurst(s.a.status, sws[k])
		why = append(why, pre)
		places[k] = make([]uint32, s.Build.Ports)
		b.ReadBurst(s.a.placement, places[k])
		why = append(why, pre+"reading PLACEMENT")
	}
	if err := b.Run(ctx); err != nil {
		var be *drivers.BatchError
		if errors.As(err, &be) && be.Index < len(why) {
			if why[be.Index] == "" {
				return nil, nil, be.Err
			}
			return nil, nil, fmt.Errorf("%s: %w", strings.TrimSuffix(why[be.Index], ": "), be.Err)
		}
		return nil, nil, err
	}
	sts := make([]Status, len(slots))
	for k, sw := range sws {
		sts[k] = Status{Word: sw[0], DrainCycles: sw[1], BatchPending: int(sw[2]), LastIns: sw[3], LastEnq: sw[4],
			LastPlaced: int(sw[5]), LastDropped: int(sw[6])}
		if sts[k].Word&StatusBusy == 0 {
			continue
		}
		st, err := s.waitIdle(ctx, "CTRL.RELEASE")
		if err != nil {
			return sts, nil, err
		}
		if k < len(slots)-1 {
			// The batches before k were judged on what was read behind
			// their own releases: the caller may still use them.
			return sts, places, &BusyError{Batch: k}
		}
		sts[k] = st
		if places[k], err = s.ReadPlacement(ctx); err != nil {
			return sts, nil, err
		}
	}
	return sts, places, nil
}

// Placement is one PLACEMENT word: where the last RELEASE put a slot's
// packet.
type Placement struct {
	Placed, Dropped bool
	Group, Queue    int
	Pos             int
}

// DecodePlacement decodes a PLACEMENT word (GROUP 7:0, QUEUE 15:8, POS
// 27:16, DROPPED 30, PLACED 31). Bits 28, 29 are reserved and ignored.
func DecodePlacement(w uint32) Placement {
	return Placement{
		Placed: w&(1<<31) != 0, Dropped: w&(1<<30) != 0,
		Group: int(w & 0xff), Queue: int(w >> 8 & 0xff), Pos: int(w >> 16 & 0xfff),
	}
}

// Word encodes p as the hardware would show it.
func (p Placement) Word() uint32 {
	w := uint32(p.Group)&0xff | (uint32(p.Queue)&0xff)<<8 | (uint32(p.Pos)&0xfff)<<16
	if p.Dropped {
		w |= 1 << 30
	}
	if p.Placed {
		w |= 1 << 31
	}
	return w
}

func (p Placement) String() string {
	switch {
	case p.Placed && !p.Dropped:
		return fmt.Sprintf("group %d queue %d entry %d", p.Group, p.Queue, p.Pos)
	case p.Dropped && !p.Placed:
		return fmt.Sprintf("dropped at full queue %d of group %d", p.Queue, p.Group)
	case !p.Placed && !p.Dropped:
		return "no packet"
	}
	return fmt.Sprintf("PLACED and DROPPED both set (group %d queue %d entry %d)", p.Group, p.Queue, p.Pos)
}

// ReadPlacement reads PLACEMENT[0..P-1] (one burst).
func (s *Switch) ReadPlacement(ctx context.Context) ([]uint32, error) {
	w := make([]uint32, s.Build.Ports)
	if err := s.Regs.ReadBurst(ctx, s.a.placement, w); err != nil {
		return nil, fmt.Errorf("reading PLACEMENT: %w", err)
	}
	return w, nil
}

// QueueStat is one QSTAT word.
type QueueStat struct {
	Count     int  // fill level
	Next, Arb bool // the group's offset counter / output arbiter points here
}

// DecodeQStat decodes a QSTAT word (COUNT 12:0, NEXT 30, ARB 31).
func DecodeQStat(w uint32) QueueStat {
	return QueueStat{Count: int(w & 0x1fff), Next: w&(1<<30) != 0, Arb: w&(1<<31) != 0}
}

// Word encodes q as the hardware shows it.
func (q QueueStat) Word() uint32 {
	w := uint32(q.Count) & 0x1fff
	if q.Next {
		w |= 1 << 30
	}
	if q.Arb {
		w |= 1 << 31
	}
	return w
}

// State is the switch's state as the read-back windows show it.
type State struct {
	Offsets  []int       // OFFSET[d]
	Arbiters []int       // ARB_INDEX[d]
	Queues   []QueueStat // QSTAT, index g*P+q
	// Tags[g*P+q] is queue q of group g's tags, head first (fill level
	// entries); nil when the tags were not read.
	Tags [][]uint32
	// TagTail[g*P+q] counts non-zero words past the fill level among
	// those read (they must read 0).
	TagTail []int
	// TailRead[g*P+q] is how many QTAGS words past the fill level were
	// read: FIFO_DEPTH - COUNT when the queue's whole window was.
	TailRead []int
}

// ReadState reads OFFSET, ARB_INDEX and QSTAT (three bursts for P ≤ 16)
// and, with tags, the whole QTAGS window (P²·depth words in bursts), in one
// batch: on a UART bridge with a window the bursts follow one another
// without a round trip between them.
func (s *Switch) ReadState(ctx context.Context, tags bool) (State, error) {
	p, depth := s.Build.Ports, s.Build.FIFODepth
	st, b, words := s.stateBatch()
	var all []uint32
	if tags {
		all = make([]uint32, p*p*depth)
		b.ReadBurst(s.a.qtags, all)
	}
	if err := runState(ctx, b, "QTAGS"); err != nil {
		return st, err
	}
	words()
	if !tags {
		return st, nil
	}
	read := make([]int, p*p)
	for i := range read {
		read[i] = depth
	}
	st.tagsFrom(all, read, depth)
	return st, nil
}

// tagMergeGap is the most QTAGS words ReadStateFilled reads between two
// queues' entries to keep them in one burst: a burst more costs a 12-byte
// request and a 9-byte answer frame on a UART bridge, four words 16 bytes.
const tagMergeGap = 4

// ReadStateFilled reads what ReadState with tags does, but of the QTAGS
// window only what the queues hold: OFFSET, ARB_INDEX and QSTAT in one
// batch, then, in a second, each queue's words up to its fill level as
// QSTAT.COUNT gives it, and the whole window of the queues full names
// (nil: none), whose words past the fill level must read 0. On a UART
// bridge the window is most of a full read-back's bytes, and queues are
// mostly far from full, so this moves a fraction of them. Words between
// two queues' entries are read too when that takes fewer bytes than one
// burst more (tagMergeGap); they are checked as every word past a fill
// level is (TagTail, TailRead).
func (s *Switch) ReadStateFilled(ctx context.Context, full func(queue int) bool) (State, error) {
	p, depth := s.Build.Ports, s.Build.FIFODepth
	st, b, words := s.stateBatch()
	if err := runState(ctx, b, ""); err != nil {
		return st, err
	}
	words()
	// Each queue's words to read are a prefix of its window: [0, want[i]).
	want := make([]int, p*p)
	for i, q := range st.Queues {
		want[i] = min(q.Count, depth)
		if full != nil && full(i) {
			want[i] = depth
		}
	}
	type span struct{ from, to int } // word indices into the window
	var spans []span
	for i, n := range want {
		if n == 0 {
			continue
		}
		from := i * depth
		if k := len(spans) - 1; k >= 0 && from-spans[k].to <= tagMergeGap {
			spans[k].to = from + n
			continue
		}
		spans = append(spans, span{from, from + n})
	}
	// What each queue got read: its own prefix, and all of it when a
	// merged burst ran past it.
	read := slices.Clone(want)
	for _, sp := range spans {
		for i := sp.from / depth; i*depth < sp.to; i++ {
			read[i] = max(read[i], min(depth, sp.to-i*depth))
		}
	}
	all := make([]uint32, p*p*depth)
	if len(spans) > 0 {
		tb := s.Regs.Batch()
		for _, sp := range spans {
			tb.ReadBurst(s.a.qtags+4*uint64(sp.from), all[sp.from:sp.to])
		}
		if err := tb.Run(ctx); err != nil {
			var be *drivers.BatchError
			if errors.As(err, &be) {
				return st, fmt.Errorf("reading QTAGS: %w", be.Err)
			}
			return st, err
		}
	}
	st.tagsFrom(all, read, depth)
	return st, nil
}

// stateBatch starts the batch reading OFFSET, ARB_INDEX and QSTAT; words,
// once it ran, decodes them into the state.
func (s *Switch) stateBatch() (State, *regmap.Batch, func()) {
	p := s.Build.Ports
	st := State{Offsets: make([]int, p), Arbiters: make([]int, p), Queues: make([]QueueStat, p*p)}
	off, arb, w := make([]uint32, p), make([]uint32, p), make([]uint32, p*p)
	b := s.Regs.Batch().ReadBurst(s.a.offset, off).ReadBurst(s.a.arb, arb).ReadBurst(s.a.qstat, w)
	return st, b, func() {
		for d := range p {
			st.Offsets[d] = int(off[d])
			st.Arbiters[d] = int(arb[d])
		}
		for i := range w {
			st.Queues[i] = DecodeQStat(w[i])
		}
	}
}

// runState runs a state batch, naming the window a failure is about
// (extra: what a fourth access reads).
func runState(ctx context.Context, b *regmap.Batch, extra string) error {
	err := b.Run(ctx)
	if err == nil {
		return nil
	}
	what := []string{"OFFSET", "ARB_INDEX", "QSTAT", extra}
	var be *drivers.BatchError
	if errors.As(err, &be) && be.Index < len(what) {
		return fmt.Errorf("reading %s: %w", what[be.Index], be.Err)
	}
	return err
}

// tagsFrom fills Tags, TagTail and TailRead from the QTAGS words all, of
// which read[i] words of queue i's window (from its head) were read.
func (st *State) tagsFrom(all []uint32, read []int, depth int) {
	n := len(st.Queues)
	st.Tags, st.TagTail, st.TailRead = make([][]uint32, n), make([]int, n), make([]int, n)
	for i := range n {
		words := all[i*depth : i*depth+read[i]]
		k := min(st.Queues[i].Count, depth)
		st.Tags[i] = words[:k:k]
		st.TailRead[i] = len(words) - k
		for _, x := range words[k:] {
			if x != 0 {
				st.TagTail[i]++
			}
		}
	}
}

// Entry is one queue entry read through QREAD.
type Entry struct {
	Valid, OutOfRange bool
	Src, Dest         int
	TsIns, TsEnq      uint32
	Data              []uint32
}

// PipelineCycles is the entry's queue write minus its insertion (mod 2^32).
func (e Entry) PipelineCycles() uint32 { return e.TsEnq - e.TsIns }

// QReadSel encodes QREAD_SEL.
func QReadSel(group, queue, entry int) uint32 {
	return uint32(group&0xff)<<24 | uint32(queue&0xff)<<16 | uint32(entry&0xffff)
}

// ReadEntry reads entry k (0 = head) of queue q of group g in full.
func (s *Switch) ReadEntry(ctx context.Context, g, q, k int) (Entry, error) {
	if err := s.Regs.WriteAddr(ctx, s.a.qreadSel, QReadSel(g, q, k)); err != nil {
		return Entry{}, fmt.Errorf("QREAD_SEL: %w", err)
	}
	w := make([]uint32, len(qreadNames))
	if err := s.Regs.ReadBurst(ctx, s.a.qreadStatus, w); err != nil {
		return Entry{}, fmt.Errorf("reading QREAD: %w", err)
	}
	e := Entry{Valid: w[0]&1 != 0, OutOfRange: w[0]&2 != 0, Src: int(w[1] & 0xff), Dest: int(w[1] >> 8 & 0xff), TsIns: w[2], TsEnq: w[3]}
	if !e.Valid {
		return e, nil
	}
	e.Data = make([]uint32, s.Build.DataWords())
	if err := s.Regs.ReadBurst(ctx, s.a.qreadData, e.Data); err != nil {
		return e, fmt.Errorf("reading QREAD_DATA: %w", err)
	}
	return e, nil
}

// Drain clocks the switch cycles cycles with no input and the output
// arbiters serving (CTRL.DRAIN). Each port's egress FIFO holds 1024 tags:
// drain at most that many cycles between reads of the egress FIFOs.
func (s *Switch) Drain(ctx context.Context, cycles int) error {
	if cycles < 1 || cycles >= 1<<24 {
		return fmt.Errorf("drain of %d cycles: DRAIN_CYCLES takes 1..%d", cycles, 1<<24-1)
	}
	if err := s.Regs.WriteAddr(ctx, s.a.drainCycles, uint32(cycles)); err != nil {
		return fmt.Errorf("DRAIN_CYCLES: %w", err)
	}
	return s.Command(ctx, CmdDrain)
}

// DrainEgress is Drain followed by ReadEgress in two batches: DRAIN_CYCLES,
// CTRL.DRAIN, the status burst and EGRESS_COUNT in the first, the pops in
// the second. When the status still shows BUSY (hardware that takes the
// drain's cycles after the write), STATUS is polled as Drain does and
// EGRESS_COUNT read again once the drain ended.
func (s *Switch) DrainEgress(ctx context.Context, cycles int) ([][]uint32, error) {
	if cycles < 1 || cycles >= 1<<24 {
		return nil, fmt.Errorf("drain of %d cycles: DRAIN_CYCLES takes 1..%d", cycles, 1<<24-1)
	}
	sw, cnt := make([]uint32, len(statusNames)), make([]uint32, s.Build.Ports)
	b := s.Regs.Batch().WriteAddr(s.a.drainCycles, uint32(cycles)).WriteAddr(s.a.ctrl, CmdDrain).
		ReadBurst(s.a.status, sw).ReadBurst(s.a.egressCount, cnt)
	if err := b.Run(ctx); err != nil {
		var be *drivers.BatchError
		if errors.As(err, &be) && be.Index < 4 {
			what := []string{"DRAIN_CYCLES", fmt.Sprintf("CTRL = 0x%x", CmdDrain), "reading STATUS", "reading EGRESS_COUNT"}[be.Index]
			return nil, fmt.Errorf("%s: %w", what, be.Err)
		}
		return nil, err
	}
	if sw[0]&StatusBusy != 0 {
		if _, err := s.waitIdle(ctx, fmt.Sprintf("CTRL = 0x%x", CmdDrain)); err != nil {
			return nil, err
		}
		if err := s.Regs.ReadBurst(ctx, s.a.egressCount, cnt); err != nil {
			return nil, fmt.Errorf("reading EGRESS_COUNT: %w", err)
		}
	}
	return s.popEgress(ctx, cnt)
}

// ReadEgress pops every port's egress FIFO: out[d] lists the tags that left
// port d, oldest first. It reads EGRESS_COUNT in one burst, then each
// non-empty FIFO in bursts from its block's base.
func (s *Switch) ReadEgress(ctx context.Context) ([][]uint32, error) {
	cnt := make([]uint32, s.Build.Ports)
	if err := s.Regs.ReadBurst(ctx, s.a.egressCount, cnt); err != nil {
		return nil, fmt.Errorf("reading EGRESS_COUNT: %w", err)
	}
	return s.popEgress(ctx, cnt)
}

// popEgress pops cnt[d] tags from each port d's egress FIFO.
func (s *Switch) popEgress(ctx context.Context, cnt []uint32) ([][]uint32, error) {
	p := s.Build.Ports
	out := make([][]uint32, p)
	// Every non-empty FIFO's bursts, in one batch.
	b := s.Regs.Batch()
	var port []int // the port of each burst
	for d := range p {
		n := int(cnt[d])
		if n > EgressCapacity {
			return out, fmt.Errorf("EGRESS_COUNT[%d] reads %d, above the FIFO's %d entries", d, n, EgressCapacity)
		}
		out[d] = make([]uint32, n)
		base := s.a.egressPop + uint64(d)*s.a.egressStride
		for off := 0; off < n; off += egressBlock {
			k := min(egressBlock, n-off)
			b.ReadBurst(base, out[d][off:off+k])
			port = append(port, d)
		}
	}
	if err := b.Run(ctx); err != nil {
		var be *drivers.BatchError
		if errors.As(err, &be) && be.Index < len(port) {
			return out, fmt.Errorf("popping egress FIFO %d: %w", port[be.Index], be.Err)
		}
		return out, err
	}
	return out, nil
}

// Counters are the debug peripheral's packet counters.
type Counters struct {
	In, Enq, Dropped, Out, EgressLost uint32
}

// ReadCounters reads PKTS_IN through EGRESS_LOST in one burst.
func (s *Switch) ReadCounters(ctx context.Context) (Counters, error) {
	w := make([]uint32, len(counterNames))
	if err := s.Regs.ReadBurst(ctx, s.a.counters, w); err != nil {
		return Counters{}, fmt.Errorf("reading the packet counters: %w", err)
	}
	return Counters{In: w[0], Enq: w[1], Dropped: w[2], Out: w[3], EgressLost: w[4]}, nil
}
