package shoal

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/boards/emu"
)

// device is the shoal design on one board: its registers, its NICs or its
// switch, and its place in the shared fabric. Every field is guarded by the
// fabric's lock.
type device struct {
	f     *fabric
	b     *emu.Board
	name  string
	ports [nicsPerBoard]*emu.Port

	scratch    [2]uint32
	role       uint32
	slotCycles uint32
	guard      uint32
	epoch      uint32
	nodes      uint32
	syncSlot   uint32
	syncMaster uint32
	berInject  uint32
	tgLimit    uint32
	cycleHi    uint32 // latched by CYCLE_LO
	slotHi     uint32 // latched by SLOT_LO

	// rawOffsetPS is the board clock's offset from rack time at power-on
	// (Board.OffsetNS plus the skew of the moment its counter started);
	// the time sync measures and removes it.
	rawOffsetPS float64

	nics [nicsPerBoard]*nicDev
	sw   swDev

	hops    [nicsPerBoard]hop
	ber     [nicsPerBoard]berStream
	rng     *rand.Rand // garbling of misaligned cells
	syncRng *rand.Rand // timestamping jitter of the time sync

	faults deviceFaults
	subtle subtleFaults
}

// nicDev is one NIC's registers and the state that outlives a run.
type nicDev struct {
	dev       *device
	port      int
	ctrl      uint32
	nodeID    uint32
	queueCap  uint32
	ccCtrl    uint32
	flowCount uint32
	sched     [maxSlots]uint32
	flows     [flowTableSize][4]uint32

	ctr                       [nCounters]uint32
	maxQ, maxR                [maxNodes]uint16
	maxQAny, maxQTotal, maxRA uint16
	records                   [][recWords]uint32
	recPos                    int // words of records[0] already popped
	recOverflow               uint32

	synced      bool
	syncOffset  int32   // ps, as measured and removed
	syncResid   int32   // ps, as the verification round measured
	residualPS  float64 // the true offset from rack time after the sync
	failedPeers uint64

	st *nicState // the running NIC, nil before the bootstrap
}

func (n *nicDev) enabled() bool { return n.ctrl&1 != 0 }

// swDev is the switch's registers and counters.
type swDev struct {
	ctrl       uint32
	sched      [maxSlots]uint32
	trace      [maxSlots]uint32
	traceValid bool
	traceEpoch uint32
	misaligned uint32
	deadEnds   uint32
	cellsIn    [swPorts]uint32
	cellsOut   [swPorts]uint32
	slotsBase  uint32 // SW_SLOTS before the current run

	// Set at the bootstrap.
	running bool
	// anchor[p] is the rack time the bootstrap signal reached input p, ps.
	// Each output's multiplexer has its own control register (§4.1), so a
	// port's configuration changes on the grid of the cells it carries:
	// in a leaf, cells going up and cells coming down arrive at different
	// phases.
	anchor   [swPorts]int64
	slotCyc  int64
	epochLen int64
	reconfAt int64 // cycle of the slot the reconfiguration starts at
}

func (s *swDev) enabled() bool { return s.ctrl&1 != 0 }

// firstAnchor is when the bootstrap signal first reached the switch.
func (s *swDev) firstAnchor() int64 {
	a := int64(math.MaxInt64)
	for _, x := range s.anchor {
		a = min(a, x)
	}
	return a
}

func newDesign(b *emu.Board, m *bitstreams.Manifest) (emu.Design, error) {
	if n := len(b.Ports()); n < nicsPerBoard {
		return nil, fmt.Errorf("board %s: the shoal design needs %d SFP+ cages, a %s has %d", b.Name(), nicsPerBoard, b.Kind().Name, n)
	}
	d := &device{b: b, name: b.Name()}
	for i := range d.ports {
		d.ports[i] = b.Ports()[i]
	}
	d.resetRegs()
	skew := b.Rand("shoal/clock")
	// Each board's counter starts when its configuration completes: up to
	// tens of microseconds apart across a rack.
	d.rawOffsetPS = b.OffsetNS()*1000 + (skew.Float64()*2-1)*20e6
	d.rng = b.Rand("shoal/garble")
	d.syncRng = b.Rand("shoal/sync")
	for i := range d.ber {
		d.ber[i].rng = b.Rand(fmt.Sprintf("shoal/ber/%d", i))
	}
	if err := d.subtle.parse(b); err != nil {
		return nil, err
	}
	if err := d.faults.parse(b); err != nil {
		return nil, err
	}
	d.f = fabricFor(b)
	d.f.register(d)
	return d, nil
}

func (d *device) resetRegs() {
	d.role = roleNone
	d.slotCycles = resetSlotCycles
	d.guard = resetGuardCycles
	d.epoch = resetEpochSlots
	d.nodes = resetNodes
	d.tgLimit = resetTGLimit
	for i := range d.nics {
		d.nics[i] = &nicDev{dev: d, port: i, queueCap: resetQueueCap, ccCtrl: resetCCCtrl}
	}
}

func (d *device) Name() string { return DesignName }

func (d *device) Close() {
	d.f.unregister(d)
}

// cellBytes is the cell size the slot parameters give (§6.1: usable slot
// cycles x 8 B at 10 Gb/s).
func (d *device) cellBytes() int {
	c := (int(d.slotCycles) - int(d.guard) - macOverheadCycles) * bytesPerCycle
	return max(c, 0)
}

// localOffset is the board clock's offset from rack time at time t: the
// first NIC's residual once synchronised (the NICs of a board share one
// counter), else the power-on offset; drift from the clock-drift fault.
func (d *device) clockError(t int64) float64 {
	e := d.rawOffsetPS
	if d.role == roleNIC && d.nics[0].synced {
		e = d.nics[0].residualPS
	}
	return e + d.faults.drift(d.f, t)
}

func (d *device) Read32(addr uint32) (uint32, error) {
	f := d.f
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case addr < 0x1000:
		return d.readCtrl(addr)
	case addr < 0x5000:
		return d.readNIC(d.nics[(addr-nicBase)/nicStride], (addr-nicBase)%nicStride)
	case addr >= queuesMaxQueue && addr < queuesEnd:
		i := (addr - queuesMaxQueue) % 0x400 / 4
		n, k := d.nics[i/maxNodes], i%maxNodes
		switch (addr - queuesMaxQueue) / 0x400 {
		case 0:
			return uint32(n.maxQ[k]), nil
		case 1:
			if n.st != nil && int(k) < n.st.N {
				return uint32(n.st.q[k].n), nil
			}
			return 0, nil
		default:
			return uint32(n.maxR[k]), nil
		}
	case addr >= nicSchedBase && addr < nicSchedBase+nicsPerBoard*nicSchedStride:
		o := addr - nicSchedBase
		return d.nics[o/nicSchedStride].sched[o%nicSchedStride/4], nil
	case addr >= regSwCtrl && addr < regSwCtrl+0x100:
		return d.readSwitch(addr)
	case addr >= swSchedBase && addr < swSchedBase+4*maxSlots:
		return d.sw.sched[(addr-swSchedBase)/4], nil
	case addr >= swTraceBase && addr < swTraceBase+4*maxSlots:
		return d.sw.trace[(addr-swTraceBase)/4], nil
	case addr >= flowsBase && addr < flowsBase+nicsPerBoard*flowsStride:
		o := addr - flowsBase
		return d.nics[o/flowsStride].flows[o%flowsStride/16][o%16/4], nil
	}
	return 0, fmt.Errorf("%w (0x%x is outside the shoal register map)", emu.ErrBusError, addr)
}

func (d *device) Write32(addr, v uint32) error {
	f := d.f
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case addr < 0x1000:
		return d.writeCtrl(addr, v)
	case addr < 0x5000:
		return d.writeNIC(d.nics[(addr-nicBase)/nicStride], (addr-nicBase)%nicStride, v)
	case addr >= queuesMaxQueue && addr < queuesEnd:
		return fmt.Errorf("%w (0x%x: the queue statistics are read-only; COUNTERS_CLEAR resets them)", emu.ErrReadOnly, addr)
	case addr >= nicSchedBase && addr < nicSchedBase+nicsPerBoard*nicSchedStride:
		o := addr - nicSchedBase
		d.nics[o/nicSchedStride].sched[o%nicSchedStride/4] = v
		return nil
	case addr >= regSwCtrl && addr < regSwCtrl+0x100:
		return d.writeSwitch(addr, v)
	case addr >= swSchedBase && addr < swSchedBase+4*maxSlots:
		d.sw.sched[(addr-swSchedBase)/4] = v & 0xFFFF
		return nil
	case addr >= swTraceBase && addr < swTraceBase+4*maxSlots:
		return fmt.Errorf("%w (0x%x is in the switch trace window)", emu.ErrReadOnly, addr)
	case addr >= flowsBase && addr < flowsBase+nicsPerBoard*flowsStride:
		o := addr - flowsBase
		d.nics[o/flowsStride].flows[o%flowsStride/16][o%16/4] = v
		return nil
	}
	return fmt.Errorf("%w (0x%x is outside the shoal register map)", emu.ErrBusError, addr)
}

func (d *device) readCtrl(addr uint32) (uint32, error) {
	f := d.f
	switch addr {
	case regID:
		return designID, nil
	case regVersion:
		return designVersionWord, nil
	case regScratch0, regScratch1:
		return d.scratch[(addr-regScratch0)/4], nil
	case regCaps:
		return capsWord, nil
	case regClockKHz:
		return 156250, nil
	case regFlowTableSize:
		return flowTableSize, nil
	case regRecDepth:
		return recDepth, nil
	case regRole:
		return d.role, nil
	case regSlotCycles:
		return d.slotReads(), nil
	case regGuardCycles:
		return d.guardReads(), nil
	case regEpochSlots:
		return d.epoch, nil
	case regNodes:
		return d.nodes, nil
	case regSyncSlot:
		return d.syncSlot, nil
	case regSyncMaster:
		return d.syncMaster, nil
	case regBERInject:
		return d.berInject, nil
	case regTGLimit:
		return d.tgLimit, nil
	case regCellBytes:
		return uint32(d.cellBytes()), nil
	case regPayloadBytes:
		return uint32(max(d.cellBytes()-headerBytes, 0)), nil
	case regReconfCycles:
		return reconfCycles, nil
	case regSwLatency:
		return swLatencyCycles, nil
	case regNICTx:
		return nicTxCycles, nil
	case regNICRx:
		return nicRxCycles, nil
	case regCCPipe:
		return ccRxCycles<<8 | ccTxCycles, nil
	case regCycleLo:
		local := float64(f.now) + d.clockError(f.now)
		c := uint64(max(local, 0) / cyclePS)
		d.cycleHi = uint32(c >> 32)
		return uint32(c), nil
	case regCycleHi:
		return d.cycleHi, nil
	case regSlotLo:
		s := uint64(f.slotsSinceBoot())
		d.slotHi = uint32(s >> 32)
		return uint32(s), nil
	case regSlotHi:
		return d.slotHi, nil
	case regSyncCtrl, regBootCtrl, regRunSlots, regTGCtrl, regCountersClear:
		return 0, nil // write-only strobes read as 0
	case regSyncStatus:
		return f.syncStatus | syncLocked, nil
	case regSyncOWD:
		return uint32(f.owdPS), nil
	case regSyncMaxResid:
		return f.maxResidPS, nil
	case regBootStatus:
		s := f.bootStatus
		if f.run != nil {
			s |= bootRunning
		}
		return s, nil
	case regTGStatus:
		return f.tgStatus, nil
	case regTGRunSlots:
		return f.tgRunSlots, nil
	case regTGFlowsTotal:
		return f.flowsTotal, nil
	case regTGFlowsDone:
		return f.flowsDone, nil
	}
	return 0, fmt.Errorf("%w (0x%x is not a register of the shoal control block)", emu.ErrBusError, addr)
}

func (d *device) writeCtrl(addr, v uint32) error {
	f := d.f
	switch addr {
	case regScratch0, regScratch1:
		d.scratch[(addr-regScratch0)/4] = v
	case regRole:
		v &= 3
		if v != d.role {
			d.role = v
			f.topologyChanged(fmt.Sprintf("board %s changed role", d.name))
		}
	case regSlotCycles:
		d.slotCycles = v & 0xFFFF
	case regGuardCycles:
		d.guard = v & 0xFF
	case regEpochSlots:
		d.epoch = v & 0x1FF
	case regNodes:
		d.nodes = v & 0x7F
	case regSyncSlot:
		d.syncSlot = v & 0xFF
	case regSyncMaster:
		d.syncMaster = v & 0x3FF
	case regBERInject:
		d.berInject = v
		for i := range d.ber {
			d.ber[i].rate = -1 // redraw at the next cell
		}
	case regTGLimit:
		d.tgLimit = v
	case regSyncCtrl:
		if v&1 != 0 {
			f.sync(d)
		}
	case regBootCtrl:
		if v&2 != 0 {
			f.stop()
		}
		if v&1 != 0 {
			f.boot()
		}
	case regRunSlots:
		f.runSlots(int64(min(v, maxRunSlots)))
	case regTGCtrl:
		if v&3 != 0 {
			f.startTraffic(d, v&1 != 0)
		}
	case regCountersClear:
		if v&1 != 0 {
			d.clearCounters()
		}
	case regID, regVersion, regCaps, regClockKHz, regFlowTableSize, regRecDepth, regCellBytes, regPayloadBytes,
		regReconfCycles, regSwLatency, regNICTx, regNICRx, regCCPipe, regCycleLo, regCycleHi, regSlotLo, regSlotHi,
		regSyncStatus, regSyncOWD, regSyncMaxResid, regBootStatus, regTGStatus, regTGRunSlots, regTGFlowsTotal, regTGFlowsDone:
		return fmt.Errorf("%w (0x%x)", emu.ErrReadOnly, addr)
	default:
		return fmt.Errorf("%w (0x%x is not a register of the shoal control block)", emu.ErrBusError, addr)
	}
	return nil
}

func (d *device) readNIC(n *nicDev, o uint32) (uint32, error) {
	switch {
	case o == nicCtrl:
		return n.ctrl, nil
	case o == nicNodeID:
		return n.nodeID, nil
	case o == nicQueueCap:
		return n.queueCap, nil
	case o == nicCCCtrl:
		return n.ccCtrl, nil
	case o == nicFlowCount:
		return n.flowCount, nil
	case o == nicStatus:
		var s uint32
		if n.synced {
			s |= 1
		}
		if n.st != nil {
			s |= 2
		}
		if n.failedPeers != 0 {
			s |= 4
		}
		return s, nil
	case o == nicSyncOffset:
		return uint32(n.syncOffset), nil
	case o == nicSyncResidual:
		return uint32(n.syncResid), nil
	case o == nicFailedLo:
		return uint32(n.failedPeers), nil
	case o == nicFailedHi:
		return uint32(n.failedPeers >> 32), nil
	case o == nicRecCount:
		return uint32(len(n.records)), nil
	case o == nicRecData:
		return n.popRecordWord(), nil
	case o == nicRecOverflow:
		return n.recOverflow, nil
	case o == nicMaxQueueAny:
		return uint32(n.maxQAny), nil
	case o == nicMaxQueueTotal:
		return uint32(n.maxQTotal), nil
	case o == nicMaxReadyAny:
		return uint32(n.maxRA), nil
	case o >= nicCountersBase && o < nicCountersBase+4*nCounters:
		return n.ctr[(o-nicCountersBase)/4], nil
	}
	return 0, fmt.Errorf("%w (0x%x is not a register of NIC %d's block)", emu.ErrBusError, nicBase+uint32(n.port)*nicStride+o, n.port)
}

func (d *device) writeNIC(n *nicDev, o, v uint32) error {
	switch {
	case o == nicCtrl:
		n.ctrl = v & 1
	case o == nicNodeID:
		n.nodeID = v & maxNodeID
	case o == nicQueueCap:
		n.queueCap = v & 0xFFFF
	case o == nicCCCtrl:
		n.ccCtrl = v & 7
	case o == nicFlowCount:
		n.flowCount = min(v&0x1FFF, flowTableSize)
	case o == nicStatus, o == nicSyncOffset, o == nicSyncResidual, o == nicFailedLo, o == nicFailedHi,
		o == nicRecCount, o == nicRecData, o == nicRecOverflow, o == nicMaxQueueAny, o == nicMaxQueueTotal,
		o == nicMaxReadyAny, o >= nicCountersBase && o < nicCountersBase+4*nCounters:
		return fmt.Errorf("%w (0x%x in NIC %d's block)", emu.ErrReadOnly, nicBase+uint32(n.port)*nicStride+o, n.port)
	default:
		return fmt.Errorf("%w (0x%x is not a register of NIC %d's block)", emu.ErrBusError, nicBase+uint32(n.port)*nicStride+o, n.port)
	}
	return nil
}

func (d *device) readSwitch(addr uint32) (uint32, error) {
	s := &d.sw
	switch {
	case addr == regSwCtrl:
		return s.ctrl, nil
	case addr == regSwStatus:
		var v uint32
		if s.running {
			v |= 1
		}
		if s.conflictAny() {
			v |= 2
		}
		if s.traceValid {
			v |= 4
		}
		return v, nil
	case addr == regSwSlots:
		return d.switchSlots(), nil
	case addr == regSwMisaligned:
		return s.misaligned, nil
	case addr == regSwDeadEnds:
		return s.deadEnds, nil
	case addr == regSwTraceEpoch:
		return s.traceEpoch, nil
	case addr >= regSwCellsIn && addr < regSwCellsIn+4*swPorts:
		return s.cellsIn[(addr-regSwCellsIn)/4], nil
	case addr >= regSwCellsOut && addr < regSwCellsOut+4*swPorts:
		return s.cellsOut[(addr-regSwCellsOut)/4], nil
	}
	return 0, fmt.Errorf("%w (0x%x is not a register of the switch block)", emu.ErrBusError, addr)
}

func (d *device) writeSwitch(addr, v uint32) error {
	switch {
	case addr == regSwCtrl:
		d.sw.ctrl = v & 1
		return nil
	case addr == regSwStatus, addr == regSwSlots, addr == regSwMisaligned, addr == regSwDeadEnds, addr == regSwTraceEpoch,
		addr >= regSwCellsIn && addr < regSwCellsIn+4*swPorts, addr >= regSwCellsOut && addr < regSwCellsOut+4*swPorts:
		return fmt.Errorf("%w (0x%x in the switch block)", emu.ErrReadOnly, addr)
	}
	return fmt.Errorf("%w (0x%x is not a register of the switch block)", emu.ErrBusError, addr)
}

// conflictAny reports whether some slot of the epoch connects two inputs to
// one output.
func (s *swDev) conflictAny() bool {
	n := s.epochLen
	if n == 0 {
		return false
	}
	for i := int64(0); i < n; i++ {
		if conflicting(s.sched[i]) {
			return true
		}
	}
	return false
}

// conflicting reports whether a switch schedule word sends two inputs to
// the same output.
func conflicting(w uint32) bool {
	var used uint8
	for p := 0; p < swPorts; p++ {
		nib := w >> (4 * p) & 0xF
		if nib&swConnected == 0 {
			continue
		}
		bit := uint8(1) << (nib & swOutMask)
		if used&bit != 0 {
			return true
		}
		used |= bit
	}
	return false
}

// switchSlots is SW_SLOTS: the slots the switch applied since the
// bootstrap, up to the fabric's present time.
func (d *device) switchSlots() uint32 {
	s := &d.sw
	a := s.firstAnchor()
	if !s.running || d.f.now < a {
		return s.slotsBase
	}
	local := float64(d.f.now-a) + d.faults.drift(d.f, d.f.now) - d.faults.drift(d.f, a)
	return uint32(int64(local) / (s.slotCyc * cyclePS))
}

func (d *device) clearCounters() {
	for _, n := range d.nics {
		n.ctr = [nCounters]uint32{}
		n.maxQ, n.maxR = [maxNodes]uint16{}, [maxNodes]uint16{}
		n.maxQAny, n.maxQTotal, n.maxRA = 0, 0, 0
		n.records, n.recPos, n.recOverflow = nil, 0, 0
		if st := n.st; st != nil {
			// The maxima restart from the present occupancy.
			for k := 0; k < st.N; k++ {
				n.maxQ[k] = uint16(min(st.q[k].n, 0xFFFF))
				n.maxR[k] = uint16(min(st.ready[k].n, 0xFFFF))
				n.maxQAny = max(n.maxQAny, n.maxQ[k])
				n.maxRA = max(n.maxRA, n.maxR[k])
			}
			n.maxQTotal = uint16(min(st.qTotal, 0xFFFF))
		}
	}
	s := &d.sw
	s.misaligned, s.deadEnds = 0, 0
	s.cellsIn, s.cellsOut = [swPorts]uint32{}, [swPorts]uint32{}
}

// popRecordWord pops the next word of the completion-record FIFO.
func (n *nicDev) popRecordWord() uint32 {
	if len(n.records) == 0 {
		return 0
	}
	w := n.records[0][n.recPos]
	n.recPos++
	if n.recPos == recWords {
		n.records[0] = [recWords]uint32{}
		n.records = n.records[1:]
		n.recPos = 0
	}
	return w
}

func (n *nicDev) pushRecord(r [recWords]uint32) {
	if len(n.records) >= recDepth {
		n.recOverflow = satAdd(n.recOverflow)
		return
	}
	n.records = append(n.records, r)
}

func satAdd(v uint32) uint32 {
	if v == ^uint32(0) {
		return v
	}
	return v + 1
}
