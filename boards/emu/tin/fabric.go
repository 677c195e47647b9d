package tin

import (
	"math"
	"sort"
	"sync"

	"github.com/labrunner/labrunner/boards/emu"
)

// fabric is one cabled set of boards running the tin design. It lives in
// Rack.Shared("tin/fabric/<first board>"), keeps its own lock, the event
// queue and the fabric time in picoseconds (the TimeSync'd time every TiN's
// counters run on: Aquila's links carry TimeSync ordered sets, §3.1).
//
// Lock order: a board's lock (held by the emulator around Read32/Write32,
// Close and the factory) is taken before the fabric's lock; the fabric never
// calls back into a board's locked methods.
type fabric struct {
	mu    sync.Mutex
	rack  *emu.Rack
	devs  []*device // lab order
	order map[string]int
	now   int64 // ps

	q    evQueue // by time, then scheduling order
	hard int     // events in q that are not soft timers

	free []*cell // cell pool

	// Events name their device, cell or function by index (byID, cells,
	// fns), so that they hold no pointers: the queue moves them about
	// without the garbage collector's write barriers, and its buckets are
	// not scanned.
	byID   []*device // by device.id; nil: a free id
	cells  []*cell   // by cell.id: every cell made, free or in use
	fns    []func()  // the functions of pending evFunc and evTimer events
	fnFree []int32   // free indices of fns

	// The current run (TG_CTRL.START .. DONE, STALLED or the next START).
	loaded       bool  // generators were loaded and the run has not ended
	runStart     int64 // ps
	everStarted  bool
	open         int   // operations started and not complete, fabric-wide
	lastProgress int64 // ps of the last completion
	status       uint32
	lastRunPS    int64
	events       uint64 // events processed since the last START (stats)
}

func fabricFor(b *emu.Board) *fabric {
	r := b.Rack()
	return r.Shared("tin/fabric/"+b.Component(), func() any {
		f := &fabric{rack: r, order: map[string]int{}}
		for i, x := range r.Boards() {
			f.order[x.Name()] = i
		}
		return f
	}).(*fabric)
}

func (f *fabric) register(d *device) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.devs = append(f.devs, d)
	d.id = -1
	for i, x := range f.byID {
		if x == nil {
			d.id, f.byID[i] = i, d
			break
		}
	}
	if d.id < 0 {
		d.id = len(f.byID)
		f.byID = append(f.byID, d)
	}
	sort.SliceStable(f.devs, func(i, j int) bool { return f.order[f.devs[i].name] < f.order[f.devs[j].name] })
	f.abort("board " + d.name + " was programmed")
	f.wire()
	f.addrConflicts()
}

func (f *fabric) unregister(d *device) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, x := range f.devs {
		if x == d {
			f.devs = append(f.devs[:i], f.devs[i+1:]...)
			break
		}
	}
	f.byID[d.id] = nil
	f.abort("board " + d.name + " left the fabric (powered off or reprogrammed)")
	f.wire()
	f.addrConflicts()
}

func (f *fabric) device(b *emu.Board) *device {
	for _, d := range f.devs {
		if d.b == b {
			return d
		}
	}
	return nil
}

// wire computes, from the cables, the port roles and the programmed boards,
// which GNet links are up and where each port's cells and credits go. A
// link comes up when both ends run the design with the same role (local or
// global) set; it then (re)trains: credits start at the peer's VC FIFO
// size. An up link that stays up keeps its credits (and any leak).
func (f *fabric) wire() {
	for _, d := range f.devs {
		for p := 0; p < nExt; p++ {
			op, ip := d.out[p], d.in[p]
			role := d.role(p)
			ip.class = classOf(role)
			op.class = ip.class
			var peer *device
			pp := -1
			port := d.ports[p]
			var l *emu.Link
			if port != nil {
				l = port.Link
			}
			if l != nil {
				if q := port.Peer(); q != nil {
					peer = f.device(q.Board)
					if peer != nil {
						for i := 0; i < nExt; i++ {
							if peer.ports[i] == q {
								pp = i
							}
						}
					}
				}
			}
			up := peer != nil && pp >= 0 && role != roleOff && peer.role(pp) == role && !l.Failed
			op.cabled = l != nil
			op.peerIsTiN = peer != nil && pp >= 0
			if !up {
				if op.up {
					d.flushDown(op)
				}
				op.up, op.peer, op.peerPort = false, nil, -1
				ip.upDev, ip.upPort = nil, -1
				continue
			}
			wirePS := int64(math.Round(l.DelayNS(port) * 1000))
			backPS := int64(math.Round(l.DelayNS(peer.ports[pp]) * 1000))
			fec := int64(0)
			if role == roleGlobal {
				fec = fecPS
			}
			op.delay = pcsPS + wirePS + fec
			op.global = role == roleGlobal
			op.ber = l.BER
			if op.global {
				op.serNum, op.serDen = 8*1e6*100, linkMbps*(100-fecOverhead)
			} else {
				op.serNum, op.serDen = 8*1e6, linkMbps
			}
			// Credits return on the reverse link as flow-control ordered
			// sets (§3.1): PCS, wire and FEC of the other direction.
			ip.upDev, ip.upPort, ip.upDelay = peer, pp, pcsPS+backPS+fec
			init := peer.creditsFor(pp)
			if !op.up || op.peer != peer || op.peerPort != pp || op.credInit != init {
				for v := range op.cred {
					op.cred[v] = init
					op.leaked[v] = 0
				}
				op.credInit = init
			}
			op.up, op.peer, op.peerPort = true, peer, pp
		}
	}
}

// addrConflicts marks the devices whose TIN_ADDR another device of the
// fabric shares. Boards with every port off (PORT_ROLE 0) take no part in
// the fabric and are not compared.
func (f *fabric) addrConflicts() {
	seen := map[Addr]*device{}
	for _, d := range f.devs {
		d.conflict = false
	}
	for _, d := range f.devs {
		if d.portRole == 0 {
			continue
		}
		if o, ok := seen[d.addr]; ok {
			o.conflict, d.conflict = true, true
		}
		seen[d.addr] = d
	}
}

// --- events --------------------------------------------------------------

type evKind uint8

const (
	evTick    evKind = iota // a switch's arbitration cycle
	evArrive                // a cell reaches an input FIFO
	evCredit                // credits reach an output (port 0-5) or an injection port (6-7)
	evDeliver               // a cell reaches an endpoint (port 4 or 5)
	evFunc                  // endpoint or generator work
	evTimer                 // a timeout: soft, dropped once the run is complete
)

// event is one pending event packed in a word, since events are copied
// about a lot (a struct of small fields was copied piecewise, and read back
// whole before the pieces were stored). From bit 0: arg (32 bits), the
// device (16 bits: its index in fabric.byID), the kind (4), the port (4),
// the VC (8). arg is, by kind: evArrive and evDeliver, the cell
// (fabric.cells); evCredit, the bytes; evFunc and evTimer, the function
// (fabric.fns).
type event uint64

func mkEvent(kind evKind, dev, port, vc int, arg int32) event {
	return event(uint32(arg)) | event(uint16(dev))<<32 | event(kind)<<48 | event(port&0xF)<<52 | event(uint8(vc))<<56
}

func (e event) arg() int32   { return int32(uint32(e)) }
func (e event) dev() int     { return int(uint16(e >> 32)) }
func (e event) kind() evKind { return evKind(e >> 48 & 0xF) }
func (e event) port() int    { return int(e >> 52 & 0xF) }
func (e event) vc() int      { return int(uint8(e >> 56)) }

// tickEvent is device d's arbitration cycle.
func tickEvent(d *device) event { return mkEvent(evTick, d.id, 0, 0, 0) }

// cellEvent is an evArrive or evDeliver of cell c at device d's port p.
func cellEvent(kind evKind, d *device, p int, c *cell) event {
	return mkEvent(kind, d.id, p, 0, c.id)
}

// creditEvent returns n bytes of VC vc's credit to device d's output p (or
// injection port p-nPorts).
func creditEvent(d *device, p, vc, n int) event {
	return mkEvent(evCredit, d.id, p, vc, int32(n))
}

// fnEvent is an evFunc or evTimer calling fn.
func (f *fabric) fnEvent(kind evKind, fn func()) event {
	var i int32
	if n := len(f.fnFree); n > 0 {
		i = f.fnFree[n-1]
		f.fnFree = f.fnFree[:n-1]
		f.fns[i] = fn
	} else {
		i = int32(len(f.fns))
		f.fns = append(f.fns, fn)
	}
	return mkEvent(kind, 0, 0, 0, i)
}

// takeFn returns the function of an evFunc or evTimer event and frees its
// index.
func (f *fabric) takeFn(e event) func() {
	i := e.arg()
	fn := f.fns[i]
	f.fns[i] = nil
	f.fnFree = append(f.fnFree, i)
	return fn
}

// discard drops an event that will not run: its cell goes back to the
// pool, its function is let go.
func (f *fabric) discard(e event) {
	switch e.kind() {
	case evArrive, evDeliver:
		f.freeCell(f.cells[e.arg()])
	case evFunc, evTimer:
		f.takeFn(e)
	}
}

func (f *fabric) push(t int64, e event) {
	if e.kind() != evTimer {
		f.hard++
	}
	f.q.push(t, e)
}

func (f *fabric) pop() (int64, event) {
	t, e := f.q.Pop()
	if e.kind() != evTimer {
		f.hard--
	}
	return t, e
}

// at schedules endpoint work at time t.
func (f *fabric) at(t int64, fn func()) { f.push(t, f.fnEvent(evFunc, fn)) }

// timer schedules a timeout at t: it fires only while the run is open.
func (f *fabric) timer(t int64, fn func()) { f.push(t, f.fnEvent(evTimer, fn)) }

func (f *fabric) dispatch(t int64, e event) {
	switch e.kind() {
	case evTick:
		d := f.byID[e.dev()]
		if t != d.tickAt {
			return // superseded by an earlier wake-up
		}
		d.tickAt = math.MaxInt64
		d.tick(t)
	case evArrive:
		f.byID[e.dev()].arrive(e.port(), f.cells[e.arg()], t)
	case evCredit:
		f.byID[e.dev()].credit(e.port(), e.vc(), int(e.arg()))
	case evDeliver:
		f.byID[e.dev()].deliver(e.port(), f.cells[e.arg()], t)
	case evFunc, evTimer:
		f.takeFn(e)()
	}
}

// --- cells ---------------------------------------------------------------

func (f *fabric) newCell() *cell {
	if n := len(f.free); n > 0 {
		c := f.free[n-1]
		f.free = f.free[:n-1]
		return c
	}
	c := &cell{id: int32(len(f.cells))}
	f.cells = append(f.cells, c)
	return c
}

func (f *fabric) freeCell(c *cell) {
	*c = cell{id: c.id}
	f.free = append(f.free, c)
}

// --- runs ----------------------------------------------------------------

// TG_STATUS bits.
const (
	tgDone        = 1 << 0
	tgLimit       = 1 << 1
	tgStalled     = 1 << 2
	tgConfigError = 1 << 3
	tgIdle        = 1 << 4
)

// progress notes a completion (stall detection).
func (f *fabric) progress() { f.lastProgress = f.now }

// opStart and opDone count the operations of a run: packets, messages,
// reads, streams.
func (f *fabric) opStart() { f.open++ }
func (f *fabric) opDone() {
	f.open--
	f.progress()
}

// abort ends the current run: queued and in-flight cells are dropped, their
// credits restored (a link flush), generators stop. Leaked credits stay
// leaked.
func (f *fabric) abort(why string) {
	if f.q.Len() == 0 && !f.loaded {
		return
	}
	if f.loaded {
		f.rack.Log().Info("tin fabric run abandoned", "why", why)
	}
	for f.q.Len() > 0 {
		_, e := f.pop()
		f.discard(e)
	}
	f.q.rewind(f.now)
	f.hard = 0
	for _, d := range f.devs {
		d.flush()
	}
	f.loaded = false
	f.open = 0
}

// start loads every device's enabled generators (TG_CTRL.START) and runs.
func (f *fabric) start(from *device) {
	f.abort("TG_CTRL.START")
	f.wire()
	for _, d := range f.devs {
		for _, o := range d.out[:nExt] {
			if o.downAt <= f.now {
				// A link that failed in the last run retrains: full
				// credits (tin-link-down takes it down again if armed).
				o.downAt = math.MaxInt64
				for v := range o.cred {
					o.cred[v], o.leaked[v] = o.credInit, 0
				}
			}
		}
	}
	f.addrConflicts()
	f.status = 0
	for _, d := range f.devs {
		if d.conflict || !d.addrInRange() {
			f.status = tgConfigError
			return
		}
	}
	for _, d := range f.devs {
		// A new run starts from empty endpoints (the previous one ended:
		// nothing of it is in flight).
		d.ip.flush()
		d.rm.flush()
	}
	f.runStart, f.everStarted = f.now, true
	f.lastProgress = f.now
	f.events = 0
	f.loaded = true
	any := false
	for _, d := range f.devs {
		d.armFaults(f.now)
		if d.startGenerators(f.now) {
			any = true
		}
	}
	if !any {
		f.loaded = false
		f.status = tgIdle | tgDone
		return
	}
	f.run(from)
}

// resume carries on with the loaded run (TG_CTRL.CONTINUE).
func (f *fabric) resume(from *device) {
	if !f.loaded {
		f.status |= tgIdle
		return
	}
	f.run(from)
}

// done reports whether the loaded run is complete.
func (f *fabric) done() bool {
	if f.open > 0 || f.hard > 0 {
		return false
	}
	for _, d := range f.devs {
		if !d.gensDone() {
			return false
		}
	}
	return true
}

// run processes events until the run is complete (DONE), nothing can move
// or nothing completed for STALL_US while operations are open (STALLED), or
// this write's budget of emulated time or events is spent (LIMIT).
func (f *fabric) run(from *device) {
	t0 := f.now
	tEnd := int64(math.MaxInt64)
	if from.tgLimitUS > 0 {
		tEnd = f.now + int64(from.tgLimitUS)*1_000_000
	}
	budget := uint64(from.tgBudgetK) * 1000
	if budget == 0 {
		budget = math.MaxUint64
	}
	stall := int64(from.stallUS) * 1_000_000
	var n uint64
	f.status = 0
	for {
		if f.done() {
			f.finish()
			f.status = tgDone
			break
		}
		if f.hard == 0 && f.q.Len() == 0 {
			f.status = tgStalled
			f.rack.Log().Info("tin fabric stalled: nothing can move", "open", f.open)
			break
		}
		if stall > 0 && f.now-f.lastProgress > stall {
			f.status = tgStalled
			f.rack.Log().Info("tin fabric stalled: no completion", "open", f.open, "idle_us", (f.now-f.lastProgress)/1_000_000)
			break
		}
		if n >= budget {
			f.status = tgLimit
			break
		}
		if tEnd != math.MaxInt64 { // (else no event can be past it)
			if next, _ := f.q.Next(); next > tEnd {
				f.now = tEnd
				f.status = tgLimit
				break
			}
		}
		t, e := f.pop()
		if t > f.now {
			f.now = t
		}
		f.dispatch(t, e)
		n++
	}
	f.events += n
	f.lastRunPS = f.now - t0
}

// finish closes a complete run: the remaining events are timers of
// operations that completed.
func (f *fabric) finish() {
	for f.q.Len() > 0 {
		_, e := f.pop()
		f.discard(e)
	}
	f.q.rewind(f.now)
	f.hard = 0
	f.loaded = false
}
