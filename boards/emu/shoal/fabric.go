package shoal

import (
	"math"
	"sort"
	"sync"

	"github.com/labrunner/labrunner/boards/emu"
)

// fabric is one cabled set of boards running the shoal design. It lives in
// Rack.Shared("shoal/fabric/<first board>"), keeps its own lock and the rack
// time in picoseconds (the sync master's clock once synchronised).
//
// Lock order: a board's lock (held by the emulator around Read32/Write32,
// Close and the factory) is taken before the fabric's lock; the fabric never
// calls back into a board's locked methods, so there is no cycle.
type fabric struct {
	mu    sync.Mutex
	rack  *emu.Rack
	devs  []*device // lab order
	order map[string]int
	now   int64 // rack time, ps

	syncStatus uint32
	owdPS      int64
	maxResidPS uint32

	bootStatus uint32
	run        *engine
	lastSlots  int64 // SLOT counter when the last run stopped

	tgStatus   uint32
	tgRunSlots uint32
	flowsTotal uint32
	flowsDone  uint32
}

func fabricFor(b *emu.Board) *fabric {
	r := b.Rack()
	return r.Shared("shoal/fabric/"+b.Component(), func() any {
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
	sort.SliceStable(f.devs, func(i, j int) bool { return f.order[f.devs[i].name] < f.order[f.devs[j].name] })
	f.topologyChanged("board " + d.name + " was programmed")
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
	f.topologyChanged("board " + d.name + " left the fabric (powered off or reprogrammed)")
}

// topologyChanged stops the fabric and forgets the time sync: a board that
// joins, leaves or changes role breaks the circuits the sync ran over.
func (f *fabric) topologyChanged(why string) {
	if f.run != nil {
		f.rack.Log().Info("shoal fabric stopped", "why", why)
		f.stop()
	}
	for _, d := range f.devs {
		for _, n := range d.nics {
			n.synced = false
		}
	}
	f.syncStatus = 0
}

func (f *fabric) device(b *emu.Board) *device {
	for _, d := range f.devs {
		if d.b == b {
			return d
		}
	}
	return nil
}

// hop is where a signal leaving a port goes: the device and port at the
// other end of the cable, the cable's delay that way, and when a
// shoal-link-down fault cuts it.
type hop struct {
	to      *device
	port    int
	delayPS int64
	ber     float64
	downAt  int64
}

// wire computes every device's hops from the cables, for a sync or a run.
func (f *fabric) wire() {
	for _, d := range f.devs {
		for p := range d.ports {
			d.hops[p] = hop{downAt: math.MaxInt64}
			port := d.ports[p]
			l := port.Link
			if l == nil {
				continue
			}
			peer := port.Peer()
			pd := f.device(peer.Board)
			if pd == nil {
				continue
			}
			pi := -1
			for i, x := range pd.ports {
				if x == peer {
					pi = i
				}
			}
			if pi < 0 {
				continue
			}
			d.hops[p] = hop{to: pd, port: pi, delayPS: int64(math.Round(l.DelayNS(port) * 1000)), ber: l.BER, downAt: math.MaxInt64}
			if l.Failed {
				d.hops[p].downAt = math.MinInt64
			}
		}
	}
}

// walkHeld follows a signal leaving NIC port p of d at rack time t through
// switches holding their pre-bootstrap configuration (the SYNC_SLOT slot of
// their schedule, §3.4). visit, when not nil, sees each switch input it
// reaches, with the input port. It returns the NIC reached and the time the signal leaves that
// NIC's MAC, or nil.
func (f *fabric) walkHeld(d *device, p int, t int64, visit func(sw *device, port int, t int64)) (*nicDev, int64) {
	t += nicTxCycles * cyclePS
	for range 8 {
		h := d.hops[p]
		if h.to == nil {
			return nil, 0
		}
		t += h.delayPS
		switch h.to.role {
		case roleNIC:
			n := h.to.nics[h.port]
			if !n.enabled() {
				return nil, 0
			}
			return n, t + nicRxCycles*cyclePS
		case roleSwitch:
			sw := h.to
			if !sw.sw.enabled() {
				return nil, 0
			}
			if visit != nil {
				visit(sw, h.port, t)
			}
			nib := sw.sw.sched[min(sw.syncSlot, maxSlots-1)] >> (4 * h.port) & 0xF
			if nib&swConnected == 0 {
				return nil, 0
			}
			d, p = sw, int(nib&swOutMask)
			t += swLatencyCycles * cyclePS
		default:
			return nil, 0
		}
	}
	return nil, 0
}

// sync runs the DTP-like offset exchange among the enabled NICs over the
// circuits the switches hold before the bootstrap (§3.4, §6.1). The clocks
// are frequency-locked (§6.1), so only offsets are exchanged. The master's
// timestamp goes round the cycle of circuits it sits on; the ring delay over
// the number of hops gives the one-way delay, equal for every pair because
// every path crosses both stages (§3.2). Each NIC the timestamp reaches sets
// its clock to the master's time plus its hop count times the one-way delay:
// what is left is the difference between its real path delays and that
// average (zero on equal cables) and the sub-cycle jitter of timestamping.
func (f *fabric) sync(from *device) {
	if f.run != nil {
		f.syncStatus = syncError
		return
	}
	f.syncStatus, f.owdPS, f.maxResidPS = 0, 0, 0
	f.wire()
	var nics []*nicDev
	for _, d := range f.devs {
		if d.role != roleNIC {
			continue
		}
		for _, n := range d.nics {
			n.synced, n.syncOffset, n.syncResid, n.residualPS = false, 0, 0, 0
			if n.enabled() {
				nics = append(nics, n)
			}
		}
	}
	type edge struct {
		to    *nicDev
		delay int64
	}
	next := map[*nicDev]edge{}
	var master *nicDev
	for _, n := range nics {
		to, t := f.walkHeld(n.dev, n.port, 0, nil)
		if to != nil {
			next[n] = edge{to, t}
		}
		if n.nodeID == from.syncMaster && master == nil {
			master = n
		}
	}
	if master == nil {
		f.syncStatus = syncError
		return
	}
	// The master's cycle.
	var ring []*nicDev
	var total int64
	onRing := map[*nicDev]bool{}
	for x := master; ; {
		e, ok := next[x]
		if !ok || onRing[x] {
			f.syncStatus = syncError
			return
		}
		onRing[x] = true
		ring = append(ring, x)
		total += e.delay
		x = e.to
		if x == master {
			break
		}
	}
	owd := int64(math.Round(float64(total) / float64(len(ring))))
	f.owdPS = owd
	var acc float64 // path error accumulated from the master
	for i, x := range ring {
		jit := x.dev.syncJitter()
		if i == 0 {
			jit = 0 // the reference
		} else {
			acc += float64(next[ring[i-1]].delay - owd)
		}
		x.synced = true
		x.residualPS = -acc + jit
		x.syncOffset = clampInt32(x.dev.rawOffsetPS - master.dev.rawOffsetPS - x.residualPS)
		// The verification round measures the offset again; it cannot see
		// the path error, only timestamping jitter.
		x.syncResid = clampInt32(jit + x.dev.syncJitter()/4)
		f.maxResidPS = max(f.maxResidPS, uint32(min(math.Abs(float64(x.syncResid)), math.MaxUint32)))
	}
	// Three trips round the ring: measure, distribute, verify.
	f.now += 3 * total
	f.syncStatus = syncDone
	for _, n := range nics {
		if !n.synced {
			f.syncStatus |= syncError
		}
	}
}

func clampInt32(v float64) int32 {
	return int32(max(min(math.Round(v), math.MaxInt32), math.MinInt32))
}

// syncJitter draws one timestamping error: the DTP-like exchange counts
// cycles of frequency-locked clocks, so what remains is the phase jitter of
// the PLLs, well under a cycle (§6.1: precision below one cycle).
func (d *device) syncJitter() float64 {
	return max(min(d.syncRng.NormFloat64()*80, 320), -320)
}

// params checks a board's slot parameters, as the hardware does at the
// bootstrap.
func (d *device) paramsOK() bool {
	switch {
	case d.guard < reconfCycles, d.slotCycles < d.guard+macOverheadCycles+2, d.slotCycles > 4096:
		return false
	case d.epoch < 1 || d.epoch > maxSlots, d.syncSlot >= d.epoch:
		return false
	case d.role == roleNIC && (d.nodes < 2 || d.nodes > maxNodes):
		return false
	}
	return true
}

// boot sends the bootstrap signal (§3.4): every synchronised NIC starts
// slot 0 at an agreed rack time; each switch starts its schedule when the
// signal first reaches it, travelling the circuits it holds.
func (f *fabric) boot() {
	if f.run != nil {
		f.stop()
	}
	f.bootStatus = 0
	var nics []*nicDev
	ids := map[uint32]bool{}
	for _, d := range f.devs {
		if d.role == roleNone {
			continue
		}
		if !d.paramsOK() {
			f.bootStatus |= bootBadParams
		}
		if d.role != roleNIC {
			continue
		}
		for _, n := range d.nics {
			if !n.enabled() {
				continue
			}
			if !n.synced {
				f.bootStatus |= bootNotSynced
			}
			if ids[n.nodeID] || n.nodeID >= d.nodes {
				f.bootStatus |= bootConfigError
			}
			ids[n.nodeID] = true
			nics = append(nics, n)
		}
	}
	if len(nics) == 0 {
		f.bootStatus |= bootNotSynced
	}
	if f.bootStatus != 0 {
		return
	}
	f.wire()
	e := newEngine(f, nics)
	f.run = e
	// shoal-link-down: the cable fails both ways, after_slots after the
	// bootstrap.
	for _, d := range f.devs {
		for p, after := range d.faults.linkDownAfter {
			if after < 0 {
				continue
			}
			t := e.tbAbs + after*e.nomSlotPS
			h := &d.hops[p]
			h.downAt = min(h.downAt, t)
			if h.to != nil {
				r := &h.to.hops[h.port]
				r.downAt = min(r.downAt, t)
			}
		}
	}
	for _, d := range f.devs {
		d.failedNICs()
		s := &d.sw
		s.running, s.slotsBase = false, 0
		for p := range s.anchor {
			s.anchor[p] = math.MaxInt64
		}
		s.traceValid = false
		if d.role == roleSwitch {
			s.slotCyc, s.epochLen = int64(d.slotCyclesReal()), int64(d.epoch)
			// shoal-guard-short: a switch reconfigures that much later.
			s.reconfAt = (int64(d.guard)-reconfCycles)/2 + d.subtle.guardShort
		}
	}
	// The bootstrap signal leaves each NIC at the start of its slot 0.
	for _, n := range e.nics {
		f.walkHeld(n.dev, n.nd.port, n.slotStartAbs(0), func(sw *device, p int, t int64) {
			sw.sw.anchor[p] = min(sw.sw.anchor[p], t)
		})
	}
	f.fillPhases(e)
	for _, d := range f.devs {
		if d.role == roleSwitch && d.sw.firstAnchor() != math.MaxInt64 {
			d.sw.running = true
		}
	}
	e.start()
}

// fillPhases gives the switch inputs the bootstrap signal did not reach
// (the SYNC_SLOT circuits leave them idle, as the App. A schedule for an even
// number of nodes does in every slot) the phase their cells will have: that
// of the NIC or of the switch inputs the schedule ever connects to the
// output at the cable's far end, plus the switch latency and the cable.
func (f *fabric) fillPhases(e *engine) {
	for changed := true; changed; {
		changed = false
		for _, d := range f.devs {
			if d.role != roleSwitch || !d.sw.enabled() {
				continue
			}
			for p := range d.sw.anchor {
				h := d.hops[p]
				if d.sw.anchor[p] != math.MaxInt64 || h.to == nil {
					continue
				}
				x, q := h.to, h.port
				delay := x.hops[q].delayPS
				a := int64(math.MaxInt64)
				switch x.role {
				case roleNIC:
					if n := x.nics[q].st; n != nil {
						a = n.slotStartAbs(0) + nicTxCycles*cyclePS + delay
					}
				case roleSwitch:
					for t := 0; t < int(x.epoch) && t < maxSlots; t++ {
						for r := 0; r < swPorts; r++ {
							nib := x.sw.sched[t] >> (4 * r) & 0xF
							if nib&swConnected != 0 && int(nib&swOutMask) == q && x.sw.anchor[r] != math.MaxInt64 {
								a = min(a, x.sw.anchor[r]+swLatencyCycles*cyclePS+delay)
							}
						}
					}
				}
				if a != math.MaxInt64 {
					d.sw.anchor[p] = a
					changed = true
				}
			}
		}
	}
}

// failedNICs forgets the failures a previous run inferred.
func (d *device) failedNICs() {
	for _, n := range d.nics {
		n.failedPeers = 0
	}
}

// stop ends the run: back to the pre-bootstrap state.
func (f *fabric) stop() {
	e := f.run
	if e == nil {
		return
	}
	e.endSegment()
	f.lastSlots = e.slotNow()
	for _, d := range f.devs {
		d.sw.slotsBase = d.switchSlots()
		d.sw.running = false
		for _, n := range d.nics {
			n.st = nil
		}
	}
	f.now = e.now
	f.run = nil
}

func (f *fabric) slotsSinceBoot() int64 {
	if f.run == nil {
		return f.lastSlots
	}
	return f.run.slotNow()
}

// runSlots advances the running fabric n slots.
func (f *fabric) runSlots(n int64) {
	e := f.run
	if e == nil {
		f.tgStatus = tgNotRunning
		return
	}
	start := e.slotNow()
	e.runUntil(e.slotTime(start+n), nil)
	e.endSegment()
	f.tgRunSlots = uint32(n)
	f.flowsDone = uint32(e.tgDone)
}

// startTraffic (reload: TG_CTRL.START) loads every enabled NIC's flow
// table, or (TG_CTRL.CONTINUE) carries on with the flows loaded last, and
// runs the fabric until every flow completed, the slot limit, or a stall.
func (f *fabric) startTraffic(from *device, reload bool) {
	e := f.run
	if e == nil {
		f.tgStatus = tgNotRunning
		return
	}
	f.tgStatus = 0
	if reload || !e.tg {
		e.startTraffic()
	}
	f.flowsTotal = uint32(e.tgFlows)
	start := e.slotNow()
	limit := int64(from.tgLimit)
	stallSlots := int64(stallEpochs) * e.maxEpoch
	status := uint32(0)
	e.runUntil(math.MaxInt64, func() bool {
		if e.tgDone >= e.tgFlows {
			status = tgDone
			return true
		}
		s := e.slotNow()
		if s-start >= limit {
			status = tgLimit
			return true
		}
		if e.pendingStarts == 0 && s-e.lastProgress > stallSlots {
			status = tgStalled
			return true
		}
		return false
	})
	e.endSegment()
	f.tgStatus = status
	f.flowsDone = uint32(e.tgDone)
	f.tgRunSlots = uint32(e.slotNow() - start)
}
