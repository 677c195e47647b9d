package tin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labrunner/labrunner/drivers"
	"github.com/labrunner/labrunner/drivers/regmap"
)

// TG_CTRL and TG_STATUS bits (tin.yaml).
const (
	ctrlStart    = 1 << 0
	ctrlContinue = 1 << 1
	ctrlAbort    = 1 << 2

	// StatusDone and the others are TG_STATUS bits.
	StatusDone        = 1 << 0
	StatusLimit       = 1 << 1
	StatusStalled     = 1 << 2
	StatusConfigError = 1 << 3
	StatusIdle        = 1 << 4
)

// PORT_STATUS bits.
const (
	portUp      = 1 << 0
	portFEC     = 1 << 3
	portCabled  = 1 << 4
	portPeerTiN = 1 << 5
)

// CONFIG_STATUS bits.
const (
	ConfigAddrConflict = 1 << 0
	ConfigAddrRange    = 1 << 1
	ConfigRoleMismatch = 1 << 2
)

// Latency sample classes (LAT_*[k], docs/tin.md).
const (
	LatIP     = 0 // IP: fabric RTT with REPLY, else one-way
	LatBurst  = 1
	LatRMAHi  = 2
	LatRMALo  = 3
	LatStream = 4
)

// TRACE_CTRL bits.
const (
	TraceIP    = 1 << 0
	TraceBurst = 1 << 1
	TraceRMA   = 1 << 2
	TraceOrd   = 1 << 3
)

// Rack drives a TiN Clique through registers only: the same code runs the
// emulated rack and ZCU102 boards on UART bridges or MMIO. A TG_CTRL write
// on one board runs the whole fabric; an emulated board returns from it
// when the run stops (docs/tin.md "Traffic and runs"), real hardware returns
// at once. The driver polls TG_STATUS after every write, so both work, and
// splits a run into CONTINUE writes whose emulator budget it adapts to the
// wall time they take.
type Rack struct {
	Topo *Topology
	regs map[string]*regmap.Regs
	// Master receives the fabric-wide TG_CTRL strobes.
	Master string
	// Access bounds one register access; Settle bounds the polling of
	// TG_STATUS after a run write on hardware that returns at once.
	Access, Settle time.Duration
	// WriteTarget is the wall time one START or CONTINUE write should take
	// (the emulator's TG_BUDGET_KEVENTS is adapted to it).
	WriteTarget time.Duration
	Log         *slog.Logger
	// Budget is the emulator's event budget of the next run write
	// (TG_BUDGET_KEVENTS, thousands of events), adapted after every write
	// to WriteTarget within 1..MaxBudget.
	Budget uint32
}

// NewRack binds the topology to the boards' registers; regs must hold every
// board of the topology.
func NewRack(t *Topology, regs map[string]*regmap.Regs) (*Rack, error) {
	for _, b := range t.Boards {
		if regs[b] == nil {
			return nil, fmt.Errorf("tin rack: no registers for board %s", b)
		}
	}
	return &Rack{Topo: t, regs: regs, Master: t.Boards[0], Access: 2 * time.Second, Settle: 30 * time.Second,
		WriteTarget: 100 * time.Millisecond, Log: slog.New(slog.DiscardHandler), Budget: 200}, nil
}

// Regs returns a board's registers.
func (r *Rack) Regs(board string) *regmap.Regs { return r.regs[board] }

func (r *Rack) access(ctx context.Context, n int) (context.Context, context.CancelFunc) {
	return drivers.Deadline(ctx, r.Access*time.Duration(max(n, 1)))
}

// Read reads one register of a board.
func (r *Rack) Read(ctx context.Context, board, name string) (uint32, error) {
	actx, cancel := r.access(ctx, 1)
	defer cancel()
	return r.regs[board].Read(actx, name)
}

// Write writes one register of a board.
func (r *Rack) Write(ctx context.Context, board, name string, v uint32) error {
	actx, cancel := r.access(ctx, 1)
	defer cancel()
	return r.regs[board].Write(actx, name, v)
}

// WriteAll writes the same value into a register of every board.
func (r *Rack) WriteAll(ctx context.Context, name string, v uint32) error {
	return r.eachBoard(func(_ int, b string) error { return r.Write(ctx, b, name, v) })
}

// eachBoard runs f for every board at once and waits for all: each board
// has its own bus (on a rack of USB-UARTs its own line), so their accesses
// overlap instead of queueing behind one another. It returns the error of
// the first board, in the topology's order, whose f failed, as going
// through the boards one by one would.
func (r *Rack) eachBoard(f func(i int, board string) error) error {
	return ForBoards(r.Topo.Boards, f)
}

// ForBoards runs f for each of boards at once, as eachBoard does for
// every board of the rack: a test that reads several boards' logs or
// counters reads them side by side, each board on its own bus. It returns
// the error of the first board, in the order given, whose f failed.
func ForBoards(boards []string, f func(i int, board string) error) error {
	errs := make([]error, len(boards))
	var wg sync.WaitGroup
	for i, b := range boards {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f(i, b)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// Writes is a list of register writes for one board, applied in order.
type Writes []RegWrite

// RegWrite is one register write.
type RegWrite struct {
	Name  string
	Value uint32
}

// Total adds the value every board's writes give a register (the last
// write of it on each board): what the runner asked the generators for,
// e.g. Total(ws, "IPG_COUNT") packets, against which what the boards
// count is judged.
func Total(ws map[string]Writes, name string) uint64 {
	var t uint64
	for _, w := range ws {
		var v uint32
		for _, x := range w {
			if x.Name == name {
				v = x.Value
			}
		}
		t += uint64(v)
	}
	return t
}

// Apply writes them, in order, whole registers in batches (one round trip
// on a UART bridge with a window); a field is read, changed and written
// back between them.
func (r *Rack) Apply(ctx context.Context, board string, ws Writes) error {
	b := r.regs[board].Batch()
	flush := func() error {
		if b.Len() == 0 {
			return nil
		}
		actx, cancel := r.access(ctx, b.Len())
		defer cancel()
		err := b.Run(actx)
		b = r.regs[board].Batch()
		return unbatched(err)
	}
	for _, w := range ws {
		if loc, err := r.regs[board].Lookup(w.Name); err == nil && loc.Field != nil {
			if err := flush(); err != nil {
				return err
			}
			if err := r.Write(ctx, board, w.Name, w.Value); err != nil {
				return err
			}
			continue
		}
		b.Write(w.Name, w.Value)
	}
	return flush()
}

// unbatched is a batch's error as the single access would have given it.
func unbatched(err error) error {
	var be *drivers.BatchError
	if errors.As(err, &be) {
		return be.Err
	}
	return err
}

// writeCheck writes a configuration register and reads it back: a bus that
// drops or garbles writes shows here, not as a mysterious traffic failure.
func (r *Rack) writeCheck(ctx context.Context, board, name string, v uint32) error {
	if err := r.Write(ctx, board, name, v); err != nil {
		return err
	}
	got, err := r.Read(ctx, board, name)
	if err != nil {
		return err
	}
	if got != v {
		return drivers.Infra(board, "configure "+name, "the register bus lost or changed a write",
			fmt.Errorf("wrote 0x%x, read back 0x%x", v, got))
	}
	return nil
}

// Sum adds a register over the given boards (every board when none
// given), reading them at once.
func (r *Rack) Sum(ctx context.Context, name string, boards ...string) (uint64, error) {
	if len(boards) == 0 {
		boards = r.Topo.Boards
	}
	vs := make([]uint32, len(boards))
	if err := ForBoards(boards, func(i int, b string) error {
		var err error
		vs[i], err = r.Read(ctx, b, name)
		return err
	}); err != nil {
		return 0, err
	}
	var s uint64
	for _, v := range vs {
		s += uint64(v)
	}
	return s, nil
}

// Defaults writes the manifest's reset value into each named register of
// every board: tests change run knobs (modes, thresholds, loss) and put
// them back this way, whatever the previous test left.
func (r *Rack) Defaults(ctx context.Context, names ...string) error {
	ws := map[string]Writes{}
	for _, b := range r.Topo.Boards {
		for _, n := range names {
			loc, err := r.regs[b].Lookup(n)
			if err != nil {
				return err
			}
			ws[b] = append(ws[b], RegWrite{Name: n, Value: loc.Reg.Reset})
		}
	}
	return r.eachBoard(func(_ int, b string) error { return r.Apply(ctx, b, ws[b]) })
}

// Knobs are the run-time registers the TiN plan's tests change: Quiet and
// Defaults put every one back to its reset value.
var Knobs = []string{
	"IPG_CTRL", "IPG_RATE_MBPS", "IPG_BYTES", "IPG_COUNT", "IPG_DST_MASK_LO", "IPG_DST_MASK_HI", "IPG_DST_PORT", "IPG_COS",
	"IPG_FLOWS", "IPG_REPLY_BYTES",
	"BG_CTRL", "BG_DST", "BG_MSG_BYTES", "BG_RATE_MBPS", "BG_COUNT", "BG_MTU", "BG_COS",
	"RG_CTRL", "RG_QPS", "RG_BYTES", "RG_COUNT", "RG_DST_MASK_LO", "RG_DST_MASK_HI",
	"OG_CTRL", "OG_DST", "OG_STREAMS", "OG_LEN", "OG_BYTES", "OG_GAP_NS", "OG_STREAM_GAP_NS", "OG_CONCURRENT",
	"TRACE_CTRL", "TRACE_EVERY", "ROUTE_MODE",
	"ORD_TGT_CONNS", "ORD_SRC_CONNS", "ORD_LOSS_REQ_PPM", "ORD_LOSS_ACK_PPM", "ORD_JITTER_NS", "ORD_DROP_EVERY",
	"ORD_MAX_OUTSTANDING", "ORD_ROB_ENTRIES",
	"IP_CTD_THRESHOLD", "IP_ECN_THRESHOLD", "IP_CTS_WINDOW", "IP_PORT_MBPS",
	"QOS_STRICT", "COS_TC", "RMA_TC", "QOS_WEIGHT[0]", "QOS_WEIGHT[1]", "QOS_WEIGHT[2]", "QOS_WEIGHT[3]", "QOS_WEIGHT[4]",
	"QOS_WEIGHT[5]", "QOS_WEIGHT[6]", "QOS_WEIGHT[7]", "QOS_WEIGHT[8]", "QOS_WEIGHT[9]",
}

// Quiet disables every generator, tracing and logging, puts the run knobs
// back to their reset values and clears every board's counters, logs,
// collector and samples: the state each test starts from.
func (r *Rack) Quiet(ctx context.Context) error {
	if err := r.Defaults(ctx, Knobs...); err != nil {
		return err
	}
	return r.Clear(ctx)
}

// Clear zeroes every board's counters, marks, logs, collector and samples
// (COUNTERS_CLEAR; credits are kept).
func (r *Rack) Clear(ctx context.Context) error {
	return r.WriteAll(ctx, "COUNTERS_CLEAR", 1)
}

// Configure writes every board's address and port roles, then its routing
// tables (the recipe of Topology.Table), and reads a sample of each table
// back.
func (r *Rack) Configure(ctx context.Context) error {
	for _, b := range r.Topo.Boards {
		if err := r.writeCheck(ctx, b, "TIN_ADDR", uint32(r.Topo.Node[b].Addr())); err != nil {
			return err
		}
		if err := r.writeCheck(ctx, b, "PORT_ROLE", r.Topo.RoleWord(b)); err != nil {
			return err
		}
	}
	return r.eachBoard(func(_ int, b string) error { return r.LoadTables(ctx, b) })
}

// LoadTables writes a board's whole rt window and reads it back, each in
// one batch of 256-word bursts.
func (r *Rack) LoadTables(ctx context.Context, board string) error {
	img := r.Topo.TableImage(board)
	const chunk = 256
	chunks := (len(img) + chunk - 1) / chunk
	wb := r.regs[board].Batch()
	for off := 0; off < len(img); off += chunk {
		wb.WriteBurst(tableBase+uint64(4*off), img[off:min(off+chunk, len(img))])
	}
	actx, cancel := r.access(ctx, chunks)
	err := wb.Run(actx)
	cancel()
	if err != nil {
		return fmt.Errorf("%s: writing the routing tables: %w", board, unbatched(err))
	}
	back := make([]uint32, len(img))
	rb := r.regs[board].Batch()
	for off := 0; off < len(img); off += chunk {
		end := min(off+chunk, len(img))
		rb.ReadBurst(tableBase+uint64(4*off), back[off:end])
	}
	actx, cancel = r.access(ctx, chunks)
	err = rb.Run(actx)
	cancel()
	if err != nil {
		return fmt.Errorf("%s: reading the routing tables back: %w", board, unbatched(err))
	}
	for w := range back {
		if back[w] != img[w] {
			in, dst := w/(Destinations*tableWords), w/tableWords%Destinations
			return drivers.Infra(board, "load routing tables", "the register bus lost or changed a write",
				fmt.Errorf("input port %d, destination %s, word %d: wrote 0x%08x, read back 0x%08x", in, NodeOfIndex(dst), w%tableWords, img[w], back[w]))
		}
	}
	return nil
}

// PortState is one cage as its PORT_STATUS, PORT_PEER and credit registers
// describe it.
type PortState struct {
	Cage       int
	Up, FEC    bool
	Cabled     bool
	PeerTiN    bool
	Role       Role
	Peer       Addr
	CreditInit uint32
	Credits    [32]uint32 // per VC
}

// Short lists the VCs holding fewer credits than CreditInit, as "vcN:have/init".
func (p PortState) Short() []string { return p.ShortOf(p.CreditInit) }

// ShortOf lists the VCs whose credits are not want (the credits the
// peer's FIFO is known to hold), as "vcN:have/want".
func (p PortState) ShortOf(want uint32) []string {
	var out []string
	for vc, c := range p.Credits {
		if c != want {
			out = append(out, fmt.Sprintf("vc%d:%d/%d", vc, c, want))
		}
	}
	return out
}

// Port reads one cage's state, credits included.
func (r *Rack) Port(ctx context.Context, board string, cage int) (PortState, error) {
	ix := "[" + strconv.Itoa(cage) + "]"
	ps := PortState{Cage: cage}
	loc, err := r.regs[board].Lookup("CREDITS[" + strconv.Itoa(cage*32) + "]")
	if err != nil {
		return ps, err
	}
	// The three registers and the credits' burst, in one batch.
	var st, peer uint32
	b := r.regs[board].Batch().Read("PORT_STATUS"+ix, &st).Read("PORT_PEER"+ix, &peer).Read("CREDIT_INIT"+ix, &ps.CreditInit).
		ReadBurst(loc.Addr, ps.Credits[:])
	actx, cancel := r.access(ctx, b.Len())
	defer cancel()
	if err := b.Run(actx); err != nil {
		return ps, unbatched(err)
	}
	ps.Up, ps.FEC, ps.Cabled, ps.PeerTiN = st&portUp != 0, st&portFEC != 0, st&portCabled != 0, st&portPeerTiN != 0
	ps.Role = Role(st >> 1 & 3)
	ps.Peer = Addr(peer)
	return ps, nil
}

// WaitLinks polls until every cabled cage of every board is up, or the
// deadline: real links take time to train after PORT_ROLE is written. It
// returns the cages still down ("board:sfpK").
func (r *Rack) WaitLinks(ctx context.Context, within time.Duration) ([]string, error) {
	end := time.Now().Add(within)
	for {
		var down []string
		for _, b := range r.Topo.Boards {
			// A board's cabled cages in one batch.
			var cages []int
			bt := r.regs[b].Batch()
			st := make([]uint32, len(r.Topo.Ports[b]))
			for k, p := range r.Topo.Ports[b] {
				if p.Peer != "" {
					cages = append(cages, k)
					bt.Read("PORT_STATUS["+strconv.Itoa(k)+"]", &st[k])
				}
			}
			actx, cancel := r.access(ctx, bt.Len())
			err := bt.Run(actx)
			cancel()
			if err != nil {
				return nil, unbatched(err)
			}
			for _, k := range cages {
				if st[k]&portUp == 0 {
					down = append(down, Cage{b, k}.String())
				}
			}
		}
		if len(down) == 0 || time.Now().After(end) {
			return down, nil
		}
		select {
		case <-ctx.Done():
			return down, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// RunResult is how a run ended.
type RunResult struct {
	Status    uint32 // TG_STATUS
	ElapsedUS uint32 // emulated (or hardware) time since START
	KEvents   uint32 // emulator work
	OpsOpen   uint32 // operations left open (a stalled or limited run)
	Writes    int    // TG_CTRL writes it took
	Wall      time.Duration
}

// Done reports a run that finished with everything complete.
func (rr RunResult) Done() bool { return rr.Status&StatusDone != 0 }

// Describe names the status bits.
func (rr RunResult) Describe() string {
	var s []string
	for _, b := range []struct {
		bit  uint32
		name string
	}{{StatusDone, "DONE"}, {StatusLimit, "LIMIT"}, {StatusStalled, "STALLED"}, {StatusConfigError, "CONFIG_ERROR"}, {StatusIdle, "IDLE"}} {
		if rr.Status&b.bit != 0 {
			s = append(s, b.name)
		}
	}
	if len(s) == 0 {
		return fmt.Sprintf("TG_STATUS 0x%x", rr.Status)
	}
	return strings.Join(s, "|") + fmt.Sprintf(" after %d µs (%d operations open)", rr.ElapsedUS, rr.OpsOpen)
}

// ErrRunTooLong is returned when a run exceeds its emulated-time bound.
var ErrRunTooLong = errors.New("the run did not finish within its time bound")

// Run starts every enabled generator of the fabric (TG_CTRL.START on the
// master) and carries the run on with CONTINUE until it is DONE, STALLED,
// refused (CONFIG_ERROR) or IDLE, or until maxUS of fabric time have gone
// (0: no bound; the context's deadline still applies). A STALLED or refused
// run is returned with its status, not as an error: the caller judges it.
// Each run write goes in one batch with its budget before it and
// TG_STATUS and TG_ELAPSED_US after it (one round trip on a UART bridge
// with a window); when TG_STATUS still reads 0 (hardware whose write
// returns at once) it is polled until the run slice ends.
func (r *Rack) Run(ctx context.Context, maxUS uint32) (RunResult, error) {
	t0 := time.Now()
	var rr RunResult
	ctrl := uint32(ctrlStart)
	for {
		var st uint32
		w0 := time.Now()
		b := r.regs[r.Master].Batch().Write("TG_BUDGET_KEVENTS", min(max(r.Budget, 1), MaxBudget)).Write("TG_CTRL", ctrl).
			Read("TG_STATUS", &st).Read("TG_ELAPSED_US", &rr.ElapsedUS)
		actx, cancel := r.access(ctx, b.Len())
		err := b.Run(actx)
		cancel()
		if err != nil {
			var be *drivers.BatchError
			if errors.As(err, &be) && be.Index >= 1 {
				if be.Index == 1 {
					return rr, fmt.Errorf("run write %d: %w", rr.Writes+1, be.Err)
				}
				rr.Writes++
			}
			return rr, unbatched(err)
		}
		rr.Writes++
		if st == 0 {
			if st, err = r.settle(ctx); err != nil {
				return rr, err
			}
			if rr.ElapsedUS, err = r.Read(ctx, r.Master, "TG_ELAPSED_US"); err != nil {
				return rr, err
			}
		}
		r.adapt(time.Since(w0))
		rr.Status = st
		if st&StatusLimit == 0 {
			break
		}
		if maxUS > 0 && rr.ElapsedUS >= maxUS {
			rr.Wall = time.Since(t0)
			_ = r.Abort(ctx)
			return rr, fmt.Errorf("%w: %d µs of fabric time, bound %d µs", ErrRunTooLong, rr.ElapsedUS, maxUS)
		}
		if err := ctx.Err(); err != nil {
			_ = r.Abort(context.WithoutCancel(ctx))
			return rr, drivers.Infra(r.Master, "run", "the run was cut short", err)
		}
		ctrl = ctrlContinue
	}
	b := r.regs[r.Master].Batch().Read("TG_KEVENTS", &rr.KEvents).Read("TG_OPS_OPEN", &rr.OpsOpen)
	actx, cancel := r.access(ctx, b.Len())
	err := b.Run(actx)
	cancel()
	if err != nil {
		return rr, unbatched(err)
	}
	rr.Wall = time.Since(t0)
	r.Log.Debug("tin run", "status", rr.Describe(), "writes", rr.Writes, "kevents", rr.KEvents, "wall", rr.Wall)
	return rr, nil
}

// settle polls TG_STATUS until the write's run slice has ended (at once on
// the emulator, whose write returns at the end of the slice).
func (r *Rack) settle(ctx context.Context) (uint32, error) {
	end := time.Now().Add(r.Settle)
	pause := time.Millisecond
	for {
		st, err := r.Read(ctx, r.Master, "TG_STATUS")
		if err != nil {
			return 0, err
		}
		if st != 0 {
			return st, nil
		}
		if time.Now().After(end) {
			// The master answered every read: the design never ended the run.
			return 0, drivers.Design(r.Master, "run", "TG_STATUS stayed 0 (running): the run neither ended nor reached its limit",
				fmt.Errorf("no status after %v: %w", r.Settle, drivers.ErrStalled))
		}
		select {
		case <-ctx.Done():
			return 0, drivers.Infra(r.Master, "run", "", ctx.Err())
		case <-time.After(pause):
		}
		pause = min(2*pause, 50*time.Millisecond)
	}
}

// adapt scales the emulator's event budget so that one run write takes
// about WriteTarget of wall time.
func (r *Rack) adapt(took time.Duration) {
	if took <= 0 || r.WriteTarget <= 0 {
		return
	}
	f := float64(r.WriteTarget) / float64(took)
	f = min(max(f, 0.25), 2)
	b := uint32(float64(r.Budget) * f)
	r.Budget = min(max(b, 1), MaxBudget)
}

// MaxBudget bounds the emulator's event budget per write: docs/tin.md gives
// 0.2-0.6 s of wall time for 1000 thousand events on the 8-board Clique,
// and a UART bridge attempt waits about a second, so a write must never
// grow past that whatever the traffic's event density.
const MaxBudget = 600

// Abort abandons a loaded run (cells dropped, credits restored).
func (r *Rack) Abort(ctx context.Context) error {
	return r.Write(ctx, r.Master, "TG_CTRL", ctrlAbort)
}

// popBatch is how many pops go in one batch: on a UART bridge with a
// window they overlap (docs/uart-bridge.md, "Window"), and the batch's
// deadline grows with it (Access per pop).
const popBatch = 256

// fifoBlockWords is the words of one block of the logs window (version
// 1.2 of the design, catalogue tin.yaml): every word of a block pops its
// FIFO, so a burst of up to this many words pops that many.
const fifoBlockWords = 0x400 / 4

// fifoBatch is how many bursts go in one batch (16 blocks: 4096 words).
const fifoBatch = 16

// pop reads n records of words words from a FIFO: in bursts through its
// block of the logs window (fifoReg, the dataReg's _FIFO twin) when the
// build has one, else a read of dataReg per word. On a UART bridge a burst
// of 256 words is one request of about a kilobyte on the line where 256
// single reads are 256 requests and about seven.
func (r *Rack) pop(ctx context.Context, board, countReg, dataReg string, words int) ([][]uint32, error) {
	n, err := r.Read(ctx, board, countReg)
	if err != nil {
		return nil, err
	}
	flat := make([]uint32, int(n)*words)
	out := make([][]uint32, n)
	for i := range out {
		out[i] = flat[i*words : (i+1)*words]
	}
	regs := r.regs[board]
	fifo, err := regs.Lookup(strings.Replace(dataReg, "_DATA", "_FIFO", 1))
	burst := err == nil
	if !burst {
		if fifo, err = regs.Lookup(dataReg); err != nil {
			return nil, err
		}
	}
	per, chunk := 1, popBatch // words per access, accesses per batch
	if burst {
		per, chunk = fifoBlockWords, fifoBatch
	}
	for start := 0; start < len(flat); start += per * chunk {
		end := min(start+per*chunk, len(flat))
		b := regs.Batch()
		for k := start; k < end; k += per {
			if burst {
				b.ReadBurst(fifo.Addr, flat[k:min(k+per, end)])
			} else {
				b.ReadAddr(fifo.Addr, flat[k:k+1])
			}
		}
		actx, cancel := r.access(ctx, end-start)
		err := b.Run(actx)
		cancel()
		if err != nil {
			// The records before the failing access are whole.
			i := start / words
			var be *drivers.BatchError
			if errors.As(err, &be) {
				i = (start + be.Index*per) / words
				err = be.Err
			}
			return out[:i], fmt.Errorf("%s: popping %s record %d of %d: %w", board, dataReg, i+1, n, err)
		}
	}
	return out, nil
}

// Traces pops every record of a board's trace collector.
func (r *Rack) Traces(ctx context.Context, board string) ([]TraceRecord, error) {
	raw, err := r.pop(ctx, board, "TRACE_COUNT", "TRACE_DATA", TraceWords)
	if err != nil {
		return nil, err
	}
	out := make([]TraceRecord, 0, len(raw))
	for _, w := range raw {
		t, err := DecodeTrace(w)
		if err != nil {
			return out, fmt.Errorf("%s: %w", board, err)
		}
		t.Board = board
		out = append(out, t)
	}
	return out, nil
}

// AllTraces pops every board's collector: the runner is the central
// collector of §6.
func (r *Rack) AllTraces(ctx context.Context) ([]TraceRecord, error) {
	per := make([][]TraceRecord, len(r.Topo.Boards))
	errs := make([]error, len(r.Topo.Boards))
	r.eachBoard(func(i int, b string) error {
		per[i], errs[i] = r.Traces(ctx, b)
		return errs[i]
	})
	var all []TraceRecord
	for i := range per {
		if errs[i] != nil {
			return all, errs[i]
		}
		all = append(all, per[i]...)
	}
	return all, nil
}

// Executions pops a target's ordering delivery log.
func (r *Rack) Executions(ctx context.Context, board string) ([]Execution, error) {
	raw, err := r.pop(ctx, board, "DLOG_COUNT", "DLOG_DATA", DLogWords)
	if err != nil {
		return nil, err
	}
	out := make([]Execution, 0, len(raw))
	for _, w := range raw {
		e, err := DecodeExecution(w)
		if err != nil {
			return out, fmt.Errorf("%s: %w", board, err)
		}
		out = append(out, e)
	}
	return out, nil
}

// Streams pops a source's ordering stream records.
func (r *Rack) Streams(ctx context.Context, board string) ([]StreamRecord, error) {
	raw, err := r.pop(ctx, board, "OREC_COUNT", "OREC_DATA", ORecWords)
	if err != nil {
		return nil, err
	}
	out := make([]StreamRecord, 0, len(raw))
	for _, w := range raw {
		s, err := DecodeStreamRecord(w)
		if err != nil {
			return out, fmt.Errorf("%s: %w", board, err)
		}
		s.Board = board
		s.SourceEnd = r.Topo.Node[board].Addr().WithEP(EPRMA)
		out = append(out, s)
	}
	return out, nil
}

// Deliveries pops a receiver's IP delivery log.
func (r *Rack) Deliveries(ctx context.Context, board string) ([]Delivery, error) {
	raw, err := r.pop(ctx, board, "IPLOG_COUNT", "IPLOG_DATA", IPLogWords)
	if err != nil {
		return nil, err
	}
	out := make([]Delivery, 0, len(raw))
	for _, w := range raw {
		d, err := DecodeDelivery(w)
		if err != nil {
			return out, fmt.Errorf("%s: %w", board, err)
		}
		out = append(out, d)
	}
	return out, nil
}

// Samples pops a board's latency samples of one class, ns.
func (r *Rack) Samples(ctx context.Context, board string, class int) ([]float64, error) {
	ix := "[" + strconv.Itoa(class) + "]"
	raw, err := r.pop(ctx, board, "LAT_COUNT"+ix, "LAT_DATA"+ix, 1)
	if err != nil {
		return nil, err
	}
	out := make([]float64, len(raw))
	for i, w := range raw {
		out[i] = float64(w[0])
	}
	return out, nil
}

// AllSamples pops one class's samples from every board.
func (r *Rack) AllSamples(ctx context.Context, class int) ([]float64, error) {
	per := make([][]float64, len(r.Topo.Boards))
	errs := make([]error, len(r.Topo.Boards))
	r.eachBoard(func(i int, b string) error {
		per[i], errs[i] = r.Samples(ctx, b, class)
		return errs[i]
	})
	var all []float64
	for i := range per {
		if errs[i] != nil {
			return all, errs[i]
		}
		all = append(all, per[i]...)
	}
	return all, nil
}

// Timing is what the build says about its own timing (the read-only
// constants of tin.yaml): the figures a golden model must be fed to
// predict this fabric.
type Timing struct {
	ClockKHz, LinkMbps, InjectMbps    uint32
	FallThroughNS, PCSNS, FECNS       uint32
	FECOverheadPct                    uint32
	CellMin, CellMax, Header, DataTag uint32
	DataPayload, RespPayload, OReqMax uint32
}

// ReadTiming reads the build's constants from a board.
func (r *Rack) ReadTiming(ctx context.Context, board string) (Timing, error) {
	var t Timing
	b := r.regs[board].Batch()
	for _, f := range []struct {
		name string
		dst  *uint32
	}{
		{"CLOCK_KHZ", &t.ClockKHz}, {"LINK_MBPS", &t.LinkMbps}, {"INJECT_MBPS", &t.InjectMbps},
		{"FALLTHROUGH_NS", &t.FallThroughNS}, {"PCS_NS", &t.PCSNS}, {"FEC_NS", &t.FECNS}, {"FEC_OVERHEAD_PCT", &t.FECOverheadPct},
		{"CELL_FORMAT.MIN", &t.CellMin}, {"CELL_FORMAT.MAX", &t.CellMax}, {"CELL_FORMAT.HEADER", &t.Header},
		{"CELL_FORMAT.DATA_TAG", &t.DataTag}, {"CELL_PAYLOAD.DATA", &t.DataPayload}, {"CELL_PAYLOAD.RESP", &t.RespPayload},
		{"CELL_PAYLOAD.OREQ_MAX", &t.OReqMax},
	} {
		b.Read(f.name, f.dst)
	}
	actx, cancel := r.access(ctx, b.Len())
	defer cancel()
	if err := b.Run(actx); err != nil {
		return t, unbatched(err)
	}
	if t.LinkMbps == 0 || t.InjectMbps == 0 || t.CellMax == 0 || t.DataPayload == 0 {
		return t, drivers.Infra(board, "read the build's constants", "the design's identity registers read zero: is it programmed?",
			fmt.Errorf("LINK_MBPS %d, INJECT_MBPS %d, CELL_FORMAT.MAX %d, CELL_PAYLOAD.DATA %d", t.LinkMbps, t.InjectMbps, t.CellMax, t.DataPayload))
	}
	return t, nil
}

// DataCells is this build's cellification of an IP packet of n bytes, from
// its own CELL_FORMAT and CELL_PAYLOAD registers (docs/tin.md
// "Cellification"): full cells of header + tag + DataPayload bytes, the
// last header + tag + rest, at least CellMin.
func (t Timing) DataCells(n int) []int {
	if n < 1 || t.DataPayload == 0 {
		return nil
	}
	per := int(t.DataPayload)
	k := (n + per - 1) / per
	out := make([]int, k)
	for i := range out {
		out[i] = int(t.Header + t.DataTag + t.DataPayload)
	}
	out[k-1] = max(int(t.Header+t.DataTag)+n-(k-1)*per, int(t.CellMin))
	return out
}

// RouteModes are the ROUTE_MODE values that put every cell type into one of
// §3.2's modes (docs/tin.md "Each routing mode's paths").
var RouteModes = map[string]uint32{
	"fully-adaptive":        0x0000,
	"minimal-adaptive":      0x1555,
	"deterministic":         0x2AAA,
	"minimal-deterministic": 0x3FFF,
}

// Set is one register write, for Writes literals outside this package.
func Set(name string, v uint32) RegWrite { return RegWrite{Name: name, Value: v} }

// CageCells are one board's per-cage cell counters: TX_CELLS and RX_CELLS
// of the four GNet cages since the last COUNTERS_CLEAR.
type CageCells struct{ TX, RX [Cages]uint32 }

// Cells reads every cage's TX_CELLS and RX_CELLS of one board in one
// batch.
func (r *Rack) Cells(ctx context.Context, board string) (CageCells, error) {
	var cc CageCells
	b := r.regs[board].Batch()
	for k := range Cages {
		ix := "[" + strconv.Itoa(k) + "]"
		b.Read("TX_CELLS"+ix, &cc.TX[k]).Read("RX_CELLS"+ix, &cc.RX[k])
	}
	actx, cancel := r.access(ctx, b.Len())
	defer cancel()
	if err := b.Run(actx); err != nil {
		return cc, unbatched(err)
	}
	return cc, nil
}
