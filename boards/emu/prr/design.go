package prr

import (
	"fmt"
	"math"
	"sync"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/boards/emu"
)

// egressDepth is the depth of each port's egress capture FIFO (debug
// drains): packets popped while it is full are counted in EGRESS_LOST.
const egressDepth = 1024

// Bits of CTRL, STATUS, TG_CTRL, TG_STATUS and the packed words.
const (
	ctrlRelease       = 1 << 0
	ctrlDrain         = 1 << 1
	ctrlClearQueues   = 1 << 2
	ctrlClearCounters = 1 << 3
	ctrlClearBatch    = 1 << 4

	statusDropped        = 1 << 1
	statusNonEmpty       = 1 << 2
	statusEgressOverflow = 1 << 3

	tgStart = 1 << 0
	tgClear = 1 << 1

	tgDone      = 1 << 0
	tgStranded  = 1 << 2
	tgBadConfig = 1 << 3

	batchValid = 1 << 31

	placePlaced  = 1 << 31
	placeDropped = 1 << 30

	qstatArb  = 1 << 31 // the group's output arbiter looks at this queue
	qstatNext = 1 << 30 // the group's offset counter points at this queue

	qreadValid = 1 << 0
	qreadRange = 1 << 1
)

// design is the switch with its debug peripheral on one board.
type design struct {
	mu     sync.Mutex
	board  string
	m      *bitstreams.Manifest
	cfg    Config
	words  int // 32-bit words per packet
	dec    *decoder
	c      *core
	closed bool

	scratch     uint32
	drainCycles uint32
	qreadSel    uint32
	hi          [numRegs]uint32 // upper halves latched by reading a LO register
	cycleHi     uint32

	// The batch registers (§5: "a batch of up to P packets is stored
	// serially into registers by the user's software").
	slotCtrl []uint32
	slotData [][]uint32
	// What the last release did, per batch slot.
	placement   []uint32
	lastIns     uint64
	lastEnq     uint64
	lastPlaced  uint32
	lastDropped uint32
	// Egress capture FIFOs of debug drains, per port.
	egress     [][]uint32
	egressLost uint32

	pktsIn, pktsEnq, pktsDropped, pktsOut uint32
	portOut, portDropped                  []uint32
	stickyDropped, stickyEgress           bool

	tgRunning bool
	tg        tgState
	subtle    subtleFaults
}

func newDesign(b *emu.Board, m *bitstreams.Manifest) (emu.Design, error) {
	fail := func(err error) (emu.Design, error) {
		return nil, fmt.Errorf("board %s: prr %s (%s): %w", b.Name(), m.Version, m.Source, err)
	}
	cfg, err := ConfigFromManifest(m)
	if err != nil {
		return fail(err)
	}
	d := &design{board: b.Name(), m: m, cfg: cfg, words: cfg.PacketBits / 32, c: newCore(cfg)}
	if d.dec, err = decodeMap(m, cfg); err != nil {
		return fail(err)
	}
	d.c.out = d
	for _, f := range b.FaultsNamed(FaultOffsetSkip) {
		port, err := paramInt(f, "port", defaultSkipPort)
		if err != nil {
			return fail(err)
		}
		val, err := paramInt(f, "value", defaultSkipValue)
		if err != nil {
			return fail(err)
		}
		if port < 0 || port >= cfg.Ports || val < 0 || val >= cfg.Ports {
			return fail(fmt.Errorf("%s: fault %s: port %d and value %d must be below P = %d", f.Pos, f.Name, port, val, cfg.Ports))
		}
		d.c.skipPort, d.c.skipValue = int32(port), int32(val)
	}
	if err := d.subtle.parse(b, cfg); err != nil {
		return fail(err)
	}
	d.subtle.apply(d.c, b.Rand("prr/silent-drop"))
	if b.HasFault(FaultSortUnstable) {
		d.c.unstable = true
	}
	for _, f := range b.FaultsNamed(FaultArbiterOutOfStep) {
		port, err := paramInt(f, "port", defaultOutOfStepPort)
		if err != nil {
			return fail(err)
		}
		step, err := paramInt(f, "step", defaultOutOfStepOffset)
		if err != nil {
			return fail(err)
		}
		if port < 0 || port >= cfg.Ports || step <= 0 || step >= cfg.Ports {
			return fail(fmt.Errorf("%s: fault %s: port %d must be below P = %d and step %d from 1 to P-1", f.Pos, f.Name, port, cfg.Ports, step))
		}
		d.c.arbPort, d.c.arbStep = int32(port), int32(step)
	}
	p := cfg.Ports
	d.slotCtrl = make([]uint32, p)
	d.slotData = make([][]uint32, p)
	for i := range d.slotData {
		d.slotData[i] = make([]uint32, d.words)
	}
	d.placement = make([]uint32, p)
	d.egress = make([][]uint32, p)
	d.portOut = make([]uint32, p)
	d.portDropped = make([]uint32, p)
	d.applyResets()
	return d, nil
}

// applyResets puts the design in its state after configuration: every rw
// register at its manifest reset value, the switch empty, counters,
// results and the cycle counter at 0.
func (d *design) applyResets() {
	for id, vals := range d.dec.reset {
		for idx, v := range vals {
			d.setConfig(id, idx, v)
		}
	}
	d.c.reset()
	d.c.cycle = 0
	d.clearDebug()
	d.clearCounters()
	d.tg.clearResults()
	d.hi = [numRegs]uint32{}
	d.cycleHi, d.lastIns, d.lastEnq = 0, 0, 0
}

// setConfig stores an rw register (no side effects).
func (d *design) setConfig(id regID, idx int, v uint32) {
	switch id {
	case rSCRATCH:
		d.scratch = v
	case rDRAIN_CYCLES:
		d.drainCycles = v
	case rQREAD_SEL:
		d.qreadSel = v
	case rBATCH_CTRL:
		if idx < d.cfg.Ports {
			d.slotCtrl[idx] = v
		}
	case rTG_MODEL:
		d.tg.model = v
	case rTG_LOAD:
		d.tg.load = v
	case rTG_BURST:
		d.tg.burst = v
	case rTG_NONUNIF_P:
		d.tg.nonunif = v
	case rTG_SEED:
		d.tg.seed = v
	case rTG_CYCLES:
		d.tg.cycles = v
	case rTG_WARMUP:
		d.tg.warmup = v
	case rTG_DRAIN_MAX:
		d.tg.drainMax = v
	}
}

// clearDebug empties the egress FIFOs and forgets the last release.
func (d *design) clearDebug() {
	for i := range d.egress {
		d.egress[i] = d.egress[i][:0]
	}
	clear(d.placement)
	d.lastPlaced, d.lastDropped = 0, 0
}

func (d *design) clearCounters() {
	d.pktsIn, d.pktsEnq, d.pktsDropped, d.pktsOut, d.egressLost = 0, 0, 0, 0, 0
	clear(d.portOut)
	clear(d.portDropped)
	d.stickyDropped, d.stickyEgress = false, false
}

// Name implements emu.Design.
func (d *design) Name() string { return DesignName }

// Close implements emu.Design.
func (d *design) Close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed = true
}

// Read32 implements emu.Design.
func (d *design) Read32(addr uint32) (uint32, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return 0, fmt.Errorf("prr on %s: %w (the design was unloaded)", d.board, emu.ErrBusError)
	}
	s, ok := d.dec.find(addr)
	if !ok {
		return 0, fmt.Errorf("prr on %s: read 0x%05x: %w (no register there in prr %s)", d.board, addr, emu.ErrBusError, d.m.Version)
	}
	if !s.reg.Access.Readable() {
		return 0, nil
	}
	return d.read(s, (addr-s.base)/4) & s.mask, nil
}

// Write32 implements emu.Design.
func (d *design) Write32(addr uint32, v uint32) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return fmt.Errorf("prr on %s: %w (the design was unloaded)", d.board, emu.ErrBusError)
	}
	s, ok := d.dec.find(addr)
	if !ok {
		return fmt.Errorf("prr on %s: write 0x%05x: %w (no register there in prr %s)", d.board, addr, emu.ErrBusError, d.m.Version)
	}
	if !s.reg.Access.Writable() {
		return fmt.Errorf("prr on %s: write %s: %w", d.board, s.label(), emu.ErrReadOnly)
	}
	d.write(s, (addr-s.base)/4, v&s.mask)
	return nil
}

// lo returns the low half of a 64-bit value and latches the high half for
// the register hiID.
func (d *design) lo(v uint64, hiID regID) uint32 {
	d.hi[hiID] = uint32(v >> 32)
	return uint32(v)
}

func (d *design) read(s *slot, word uint32) uint32 {
	p := d.cfg.Ports
	idx := s.idx
	inPort := idx < p
	switch s.id {
	case rID:
		return d.m.ID
	case rVERSION:
		return d.m.VersionWord
	case rSCRATCH:
		return d.scratch
	case rPORTS:
		return uint32(p)
	case rSTAGE_S:
		return uint32(d.cfg.S)
	case rFIFO_DEPTH:
		return uint32(d.subtle.depthReads(d.cfg))
	case rPKT_BITS:
		return uint32(d.cfg.PacketBits)
	case rCLOCK_KHZ:
		return uint32(math.Round(d.cfg.ClockMHz * 1000))
	case rCYCLE_LO:
		d.cycleHi = uint32(d.c.cycle >> 32)
		return uint32(d.c.cycle)
	case rCYCLE_HI:
		return d.cycleHi
	case rSTATUS:
		var v uint32
		if d.stickyDropped {
			v |= statusDropped
		}
		if d.c.queued > 0 {
			v |= statusNonEmpty
		}
		if d.stickyEgress {
			v |= statusEgressOverflow
		}
		return v
	case rDRAIN_CYCLES:
		return d.drainCycles
	case rBATCH_PENDING:
		n := uint32(0)
		for _, c := range d.slotCtrl {
			if c&batchValid != 0 {
				n++
			}
		}
		return n
	case rLAST_INS_CYCLE:
		return uint32(d.lastIns)
	case rLAST_ENQ_CYCLE:
		return uint32(d.lastEnq)
	case rLAST_PLACED:
		return d.lastPlaced
	case rLAST_DROPPED:
		return d.lastDropped
	case rPKTS_IN:
		return d.pktsIn
	case rPKTS_ENQ:
		return d.pktsEnq
	case rPKTS_DROPPED:
		return d.pktsDropped
	case rPKTS_OUT:
		return d.pktsOut
	case rEGRESS_LOST:
		return d.egressLost
	case rQREAD_SEL:
		return d.qreadSel
	case rQREAD_STATUS, rQREAD_HDR, rQREAD_TS_INS, rQREAD_TS_ENQ, rQREAD_DATA:
		return d.qread(s.id, idx)
	case rPLACEMENT:
		if inPort {
			return d.placement[idx]
		}
	case rOFFSET:
		if inPort {
			return uint32(d.c.offset[idx])
		}
	case rARB_INDEX:
		if inPort {
			return uint32(d.c.arb[idx])
		}
	case rEGRESS_COUNT:
		if inPort {
			return uint32(len(d.egress[idx]))
		}
	case rPORT_OUT:
		if inPort {
			return d.portOut[idx]
		}
	case rPORT_DROPPED:
		if inPort {
			return d.portDropped[idx]
		}
	case rBATCH_CTRL:
		if inPort {
			return d.slotCtrl[idx]
		}
	case rBATCH_DATA:
		if inPort && int(word) < d.words {
			return d.slotData[idx][word]
		}
	case rEGRESS_POP:
		if inPort && len(d.egress[idx]) > 0 {
			v := d.egress[idx][0]
			d.egress[idx] = d.egress[idx][1:]
			return v
		}
	case rQSTAT:
		if int(word) < p*p {
			g, q := int(word)/p, int(word)%p
			v := uint32(d.c.qcount[word])
			if d.c.arb[g] == int32(q) {
				v |= qstatArb
			}
			if d.c.offset[g] == int32(q) {
				v |= qstatNext
			}
			return v
		}
	case rQTAGS:
		depth := d.cfg.FIFODepth
		if int(word) < p*p*depth {
			k := int(word) / depth
			if id, ok := d.c.entry(k/p, k%p, int(word)%depth); ok {
				return d.c.pk[id].tag
			}
		}
	default:
		return d.tgRead(s.id, idx)
	}
	return 0
}

// qread is the indexed read of one queue entry selected by QREAD_SEL.
func (d *design) qread(id regID, idx int) uint32 {
	g, q, e := int(d.qreadSel>>24), int(d.qreadSel>>16&0xff), int(d.qreadSel&0xffff)
	if g >= d.cfg.Ports || q >= d.cfg.Ports || e >= d.cfg.FIFODepth {
		if id == rQREAD_STATUS {
			return qreadRange
		}
		return 0
	}
	pid, ok := d.c.entry(g, q, e)
	if !ok {
		return 0
	}
	p := &d.c.pk[pid]
	switch id {
	case rQREAD_STATUS:
		return qreadValid
	case rQREAD_HDR:
		return uint32(p.src) | uint32(p.dest)<<8
	case rQREAD_TS_INS:
		return uint32(p.ins)
	case rQREAD_TS_ENQ:
		return uint32(p.enq)
	case rQREAD_DATA:
		if w := d.c.words(pid); idx < len(w) {
			return w[idx]
		}
	}
	return 0
}

func (d *design) write(s *slot, word uint32, v uint32) {
	idx := s.idx
	inPort := idx < d.cfg.Ports
	switch s.id {
	case rCTRL:
		d.command(v)
	case rTG_CTRL:
		d.tgCommand(v)
	case rBATCH_DATA:
		if inPort && int(word) < d.words {
			d.slotData[idx][word] = v
		}
	default:
		d.setConfig(s.id, idx, v)
	}
}

// command executes a CTRL write: clears first, then the release, then the
// drain.
func (d *design) command(v uint32) {
	if v&ctrlClearCounters != 0 {
		d.clearCounters()
	}
	if v&ctrlClearQueues != 0 {
		d.c.reset()
		d.clearDebug()
	}
	if v&ctrlClearBatch != 0 {
		for i := range d.slotCtrl {
			d.slotCtrl[i] &^= batchValid
		}
	}
	if v&ctrlRelease != 0 {
		d.release()
	}
	if v&ctrlDrain != 0 {
		for n := uint32(0); n < d.drainCycles; n++ {
			d.c.clock(nil, true)
		}
	}
}

// release inserts every valid batch slot into the pipeline in one cycle
// (§5: "A 'release' command is sent to insert all packets in the pipeline,
// during the same FPGA cycle") and clocks the switch until the batch is in
// its queues. The output arbiters stay idle, so the queues keep what they
// hold for the read-back. The slots' VALID bits clear.
func (d *design) release() {
	clear(d.placement)
	d.lastPlaced, d.lastDropped = 0, 0
	b := d.c.getBatch()
	mask := uint32(d.cfg.Ports - 1)
	for i, ctrl := range d.slotCtrl {
		if ctrl&batchValid == 0 {
			continue
		}
		id, p := d.c.newPacket()
		p.src = uint16(i)
		// The switch decodes log2(P) bits of the destination field.
		p.dest = uint16(ctrl & 0xff & mask)
		d.c.setData(id, d.slotData[i])
		p.tag = d.slotData[i][0]
		b.put(i, id)
		d.slotCtrl[i] &^= batchValid
		d.pktsIn++
	}
	d.lastIns = d.c.cycle
	d.lastEnq = d.lastIns // stays so for an empty batch
	d.c.clock(b, false)
	for n := 0; n < d.c.latency(); n++ {
		d.c.clock(nil, false)
	}
}

// The sink: what the switch reports about packets.

func (d *design) enqueued(id int32, p *packet, g, q, pos int) {
	d.pktsEnq++
	if !d.tgRunning {
		d.lastEnq = p.enq
		d.placement[p.src] = placePlaced | uint32(pos)<<16 | uint32(q)<<8 | uint32(g)
		d.lastPlaced++
	}
}

func (d *design) dropped(id int32, p *packet, g, q int) {
	d.pktsDropped++
	d.portDropped[g]++
	d.stickyDropped = true
	if d.tgRunning {
		d.tg.dropped(p)
	} else {
		d.lastEnq = p.enq
		d.placement[p.src] = placeDropped | uint32(q)<<8 | uint32(g)
		d.lastDropped++
	}
	d.c.freePacket(id)
}

// lost forgets a packet the prr-silent-drop fault lost after counting its
// write.
func (d *design) lost(id int32) { d.c.freePacket(id) }

func (d *design) delivered(id int32, p *packet, port int, cycle uint64) {
	d.pktsOut++
	d.portOut[port]++
	if d.tgRunning {
		d.tg.delivered(p, cycle)
	} else if len(d.egress[port]) < egressDepth {
		d.egress[port] = append(d.egress[port], p.tag)
	} else {
		d.egressLost++
		d.stickyEgress = true
	}
	d.c.freePacket(id)
}
