package exanet

import (
	"errors"
	"fmt"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/boards/emu"
)

// The register file follows the design's manifest
// (bitstreams/catalogue/exanet.yaml): every register the manifest declares
// is decoded at its offset (arrays at their stride), with the access the
// manifest gives it — a write to a read-only register fails, a write-only
// register reads 0, rc registers clear when read, pop registers pop a FIFO
// — and the reset value it gives. The behaviour behind each name is here.

type regID int

const (
	rID regID = iota
	rVERSION
	rSCRATCH
	rCAPS
	rCLOCK_KHZ
	rCYCLE_LO
	rCYCLE_HI
	rCOORD
	rLATTICE
	rDOR_ORDER
	rPORT_ENABLE
	rARB_MODE
	rARB_PRIO
	rLINK_DIR
	rROUTER_STATUS
	rROUTE_ERRORS
	rLINK_STATUS
	rLINK_CTRL
	rCREDIT_THRESHOLD
	rCREDITS
	rCREDIT_MAX
	rLINK_TX_PACKETS
	rLINK_RX_PACKETS
	rLINK_TX_WORDS
	rLINK_RX_WORDS
	rLINK_CRC_ERRORS
	rLINK_ECC_CORRECTED
	rLINK_ECC_UNCORRECTABLE
	rLINK_STALL_CYCLES
	rTG_CTRL
	rTG_SRC_PORTS
	rTG_DEST
	rTG_PAYLOAD
	rTG_COUNT
	rTG_TYPE
	rTG_STATUS
	rTG_SENT
	rTG_LAST_TAG
	rCONS_CTRL
	rCONS_PACKETS
	rCONS_BYTES
	rCONS_CRC_ERRORS
	rCONS_HDR_ERRORS
	rCONS_MISDELIVERED
	rCONS_SRC_PACKETS
	rPC_CYCLES_LO
	rPC_CYCLES_HI
	rPC_BYTES
	rPC_PACKETS
	rPP_CTRL
	rPP_DEST
	rPP_PAYLOAD
	rPP_ITER
	rPP_STATUS
	rPP_RTT_MIN
	rPP_RTT_MAX
	rPP_RTT_SUM_LO
	rPP_RTT_SUM_HI
	rPP_DONE_ITERS
	rPP_SAMPLES
	rPP_SAMPLE_COUNT
	rPP_RESPONDER
	rTRACE_CTRL
	rTRACE_COUNT
	rTRACE_DATA
	rPORT_TX_HDR
	rPORT_TX_STATUS
	rPORT_RX_STATUS
	rPORT_RX_HDR
	rPORT_TX_DATA
	rPORT_RX_DATA
)

var regNames = map[string]regID{
	"ID": rID, "VERSION": rVERSION, "SCRATCH0": rSCRATCH, "SCRATCH1": rSCRATCH, "CAPS": rCAPS,
	"CLOCK_KHZ": rCLOCK_KHZ, "CYCLE_LO": rCYCLE_LO, "CYCLE_HI": rCYCLE_HI,
	"COORD": rCOORD, "LATTICE": rLATTICE, "DOR_ORDER": rDOR_ORDER, "PORT_ENABLE": rPORT_ENABLE,
	"ARB_MODE": rARB_MODE, "ARB_PRIO": rARB_PRIO, "LINK_DIR": rLINK_DIR,
	"ROUTER_STATUS": rROUTER_STATUS, "ROUTE_ERRORS": rROUTE_ERRORS,
	"LINK_STATUS": rLINK_STATUS, "LINK_CTRL": rLINK_CTRL, "CREDIT_THRESHOLD": rCREDIT_THRESHOLD,
	"CREDITS": rCREDITS, "CREDIT_MAX": rCREDIT_MAX, "LINK_TX_PACKETS": rLINK_TX_PACKETS,
	"LINK_RX_PACKETS": rLINK_RX_PACKETS, "LINK_TX_WORDS": rLINK_TX_WORDS, "LINK_RX_WORDS": rLINK_RX_WORDS,
	"LINK_CRC_ERRORS": rLINK_CRC_ERRORS, "LINK_ECC_CORRECTED": rLINK_ECC_CORRECTED,
	"LINK_ECC_UNCORRECTABLE": rLINK_ECC_UNCORRECTABLE, "LINK_STALL_CYCLES": rLINK_STALL_CYCLES,
	"TG_CTRL": rTG_CTRL, "TG_SRC_PORTS": rTG_SRC_PORTS, "TG_DEST": rTG_DEST, "TG_PAYLOAD": rTG_PAYLOAD,
	"TG_COUNT": rTG_COUNT, "TG_TYPE": rTG_TYPE, "TG_STATUS": rTG_STATUS, "TG_SENT": rTG_SENT,
	"TG_LAST_TAG": rTG_LAST_TAG,
	"CONS_CTRL":   rCONS_CTRL, "CONS_PACKETS": rCONS_PACKETS, "CONS_BYTES": rCONS_BYTES,
	"CONS_CRC_ERRORS": rCONS_CRC_ERRORS, "CONS_HDR_ERRORS": rCONS_HDR_ERRORS,
	"CONS_MISDELIVERED": rCONS_MISDELIVERED, "CONS_SRC_PACKETS": rCONS_SRC_PACKETS,
	"PC_CYCLES_LO": rPC_CYCLES_LO, "PC_CYCLES_HI": rPC_CYCLES_HI, "PC_BYTES": rPC_BYTES,
	"PC_PACKETS": rPC_PACKETS,
	"PP_CTRL":    rPP_CTRL, "PP_DEST": rPP_DEST, "PP_PAYLOAD": rPP_PAYLOAD, "PP_ITER": rPP_ITER,
	"PP_STATUS": rPP_STATUS, "PP_RTT_MIN": rPP_RTT_MIN, "PP_RTT_MAX": rPP_RTT_MAX,
	"PP_RTT_SUM_LO": rPP_RTT_SUM_LO, "PP_RTT_SUM_HI": rPP_RTT_SUM_HI, "PP_DONE_ITERS": rPP_DONE_ITERS,
	"PP_SAMPLES": rPP_SAMPLES, "PP_SAMPLE_COUNT": rPP_SAMPLE_COUNT, "PP_RESPONDER": rPP_RESPONDER,
	"TRACE_CTRL": rTRACE_CTRL, "TRACE_COUNT": rTRACE_COUNT, "TRACE_DATA": rTRACE_DATA,
	"PORT_TX_HDR": rPORT_TX_HDR, "PORT_TX_STATUS": rPORT_TX_STATUS, "PORT_RX_STATUS": rPORT_RX_STATUS,
	"PORT_RX_HDR": rPORT_RX_HDR, "PORT_TX_DATA": rPORT_TX_DATA, "PORT_RX_DATA": rPORT_RX_DATA,
}

// spans of the registers that cover more than one word: the header
// registers take their four words at +0..+0xC, the payload FIFOs a
// 0x400-byte window (exanet.yaml docs).
var regSpan = map[regID]uint32{rPORT_TX_HDR: 16, rPORT_RX_HDR: 16, rPORT_TX_DATA: 0x400, rPORT_RX_DATA: 0x400}

// slot is one decoded word address.
type slot struct {
	id   regID
	reg  *bitstreams.Register
	idx  int // array element
	sub  int // word within a span
	mask uint32
}

func widthMask(w int) uint32 {
	if w <= 0 || w >= 32 {
		return ^uint32(0)
	}
	return 1<<w - 1
}

// decodeMap builds the address decoder and the reset values from the
// manifest. A register the emulator has no behaviour for is an error: the
// emulated hardware must implement the whole map.
func decodeMap(m *bitstreams.Manifest) (map[uint32]slot, map[regID][]uint32, error) {
	regs := map[uint32]slot{}
	reset := map[regID][]uint32{}
	for i := range m.Registers {
		r := &m.Registers[i]
		id, ok := regNames[r.Name]
		if !ok {
			return nil, nil, fmt.Errorf("register %s (line %d) has no emulated behaviour: extend boards/emu/exanet or remove it from the manifest", r.Name, r.Line)
		}
		count := r.Count
		if count < 1 {
			count = 1
		}
		stride := r.Stride
		if count > 1 && stride == 0 {
			return nil, nil, fmt.Errorf("register %s (line %d): count %d without a stride", r.Name, r.Line, count)
		}
		span := regSpan[id]
		if span == 0 {
			span = 4
		}
		for e := 0; e < count; e++ {
			idx := e
			if r.Name == "SCRATCH1" {
				idx = 1
			}
			base := r.Offset + uint64(e)*stride
			if base%4 != 0 || base+uint64(span) > 1<<32 {
				return nil, nil, fmt.Errorf("register %s (line %d): offset 0x%x is not a word address", r.Name, r.Line, base)
			}
			for s := uint32(0); s < span; s += 4 {
				a := uint32(base) + s
				if old, dup := regs[a]; dup {
					return nil, nil, fmt.Errorf("register %s (line %d) overlaps %s at 0x%x", r.Name, r.Line, old.reg.Name, a)
				}
				regs[a] = slot{id: id, reg: r, idx: idx, sub: int(s / 4), mask: widthMask(r.Width)}
			}
			if r.Access == bitstreams.RW || r.Access == bitstreams.W1C {
				rs := reset[id]
				for len(rs) <= idx {
					rs = append(rs, 0)
				}
				rs[idx] = r.Reset & widthMask(r.Width)
				reset[id] = rs
			}
		}
	}
	return regs, reset, nil
}

// applyResets puts the configuration registers at their manifest reset
// values and clears the rest of the design.
func (n *node) applyResets() {
	n.cons.enable = true
	for _, l := range n.links {
		l.enable, l.threshold = true, 8
	}
	n.portEnable, n.lattice, n.dorOrder, n.arbPrio = 0x307, 0x010101, 0x24, 0x43210
	n.tg.payload, n.tg.count, n.tg.srcPorts = maxPayload, 1, 1
	n.arm.payload, n.arm.iters = 16, 1
	for id, vals := range n.reset {
		for idx, v := range vals {
			n.setConfig(id, idx, v)
		}
	}
	n.configured = false
}

// setConfig stores a configuration register's value (no side effects).
func (n *node) setConfig(id regID, idx int, v uint32) {
	switch id {
	case rSCRATCH:
		n.scratch[idx&1] = v
	case rCOORD:
		n.coord = v & 0xffffff
	case rLATTICE:
		n.lattice = v & 0xffffff
	case rDOR_ORDER:
		n.dorOrder = v & 0x3f
	case rPORT_ENABLE:
		n.portEnable = v & 0x307
	case rARB_MODE:
		n.arbFixed = v&1 != 0
	case rARB_PRIO:
		n.arbPrio = v & 0xfffff
	case rLINK_DIR:
		n.linkDir = v & 0xff
	case rLINK_CTRL:
		if idx < nLinks {
			n.links[idx].enable, n.links[idx].loopback = v&1 != 0, v&2 != 0
		}
	case rCREDIT_THRESHOLD:
		if idx < nLinks {
			n.links[idx].threshold = int(v & 0xffff)
		}
	case rTG_SRC_PORTS:
		n.tg.srcPorts = v & 7
	case rTG_DEST:
		n.tg.dest = v & addrMask
	case rTG_PAYLOAD:
		n.tg.payload = v & 0x3ff
	case rTG_COUNT:
		n.tg.count = v
	case rTG_TYPE:
		n.tg.typ = v & 0xf
	case rCONS_CTRL:
		n.cons.enable = v&1 != 0
	case rPP_DEST:
		n.arm.dest = v & addrMask
	case rPP_PAYLOAD:
		n.arm.payload = v & 0x3ff
	case rPP_ITER:
		n.arm.iters = v & 0xffff
	case rPP_RESPONDER:
		n.arm.responder = v&1 != 0
	case rTRACE_CTRL:
		n.tr.enable = v&1 != 0
	}
}

// Read32 implements emu.Design.
func (n *node) Read32(addr uint32) (uint32, error) {
	f := n.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if n.closed {
		return 0, fmt.Errorf("exanet on %s: %w (the design was unloaded)", n.name, emu.ErrBusError)
	}
	s, ok := n.regs[addr]
	if !ok {
		return 0, fmt.Errorf("exanet on %s: read 0x%04x: %w (no register there in exanet %s)", n.name, addr, emu.ErrBusError, n.m.Version)
	}
	f.advance(accessNS * 1_000_000)
	if !s.reg.Access.Readable() {
		return 0, nil
	}
	v := n.read(s) & s.mask
	if s.reg.Access.ReadSideEffect() {
		f.wakeAll()
		f.settle(settleBudget, false)
	}
	return v, nil
}

// Write32 implements emu.Design.
func (n *node) Write32(addr uint32, v uint32) error {
	f := n.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if n.closed {
		return fmt.Errorf("exanet on %s: %w (the design was unloaded)", n.name, emu.ErrBusError)
	}
	s, ok := n.regs[addr]
	if !ok {
		return fmt.Errorf("exanet on %s: write 0x%04x: %w (no register there in exanet %s)", n.name, addr, emu.ErrBusError, n.m.Version)
	}
	if !s.reg.Access.Writable() {
		return fmt.Errorf("exanet on %s: write %s: %w", n.name, regLabel(s), emu.ErrReadOnly)
	}
	f.advance(accessNS * 1_000_000)
	start, err := n.write(s, v&s.mask)
	if err != nil {
		return err
	}
	f.wakeAll()
	if start {
		f.settle(startBudget, true)
	} else {
		f.settle(settleBudget, false)
	}
	return nil
}

func regLabel(s slot) string {
	if s.reg.Count > 1 {
		return fmt.Sprintf("%s[%d]", s.reg.Name, s.idx)
	}
	return s.reg.Name
}

// errFIFOFull is returned for a push into a full TX FIFO: the AXI adapter
// of the real port would hold the bus; the emulated one refuses the word
// and says so.
var errFIFOFull = errors.New("FIFO full")

func (n *node) read(s slot) uint32 {
	now := n.now()
	switch s.id {
	case rID:
		return n.m.ID
	case rVERSION:
		return n.m.VersionWord
	case rSCRATCH:
		return n.scratch[s.idx&1]
	case rCAPS:
		return nIntra | nLinks<<4 | nVCs<<8 | datapathBits<<12
	case rCLOCK_KHZ:
		return clockKHz
	case rCYCLE_LO:
		n.cycleHi = uint32(uint64(now) >> 32)
		return uint32(now)
	case rCYCLE_HI:
		return n.cycleHi
	case rCOORD:
		return n.coord
	case rLATTICE:
		return n.lattice
	case rDOR_ORDER:
		return n.dorOrder
	case rPORT_ENABLE:
		return n.portEnable
	case rARB_MODE:
		return b2u(n.arbFixed)
	case rARB_PRIO:
		return n.arbPrio
	case rLINK_DIR:
		return n.linkDir
	case rROUTER_STATUS:
		return b2u(n.configured) | b2u(n.busy())<<1
	case rROUTE_ERRORS:
		return n.routeErrors
	case rTG_SRC_PORTS:
		return n.tg.srcPorts
	case rTG_DEST:
		return n.tg.dest
	case rTG_PAYLOAD:
		return n.tg.payload
	case rTG_COUNT:
		return n.tg.count
	case rTG_TYPE:
		return n.tg.typ
	case rTG_STATUS:
		return b2u(n.tg.done) | b2u(n.tg.busy)<<1 | b2u(n.tg.stalled)<<2
	case rTG_SENT:
		return n.tg.sent
	case rTG_LAST_TAG:
		return n.tg.lastTag
	case rCONS_CTRL:
		return b2u(n.cons.enable)
	case rCONS_PACKETS:
		return n.cons.packets
	case rCONS_BYTES:
		return n.cons.bytes
	case rCONS_CRC_ERRORS:
		return n.cons.crcErrors
	case rCONS_HDR_ERRORS:
		return n.cons.hdrErrors
	case rCONS_MISDELIVERED:
		return n.cons.mis
	case rCONS_SRC_PACKETS:
		return n.cons.srcPackets[s.idx%nIntra]
	case rPC_CYCLES_LO:
		var cy uint64
		if n.cons.pcValid {
			cy = uint64(n.cons.pcLast-n.cons.pcFirst) + 1
		}
		n.cons.pcHi = uint32(cy >> 32)
		return uint32(cy)
	case rPC_CYCLES_HI:
		return n.cons.pcHi
	case rPC_BYTES:
		return n.cons.pcBytes
	case rPC_PACKETS:
		return n.cons.pcPackets
	case rPP_DEST:
		return n.arm.dest
	case rPP_PAYLOAD:
		return n.arm.payload
	case rPP_ITER:
		return n.arm.iters
	case rPP_STATUS:
		return b2u(n.arm.done) | b2u(n.arm.busy)<<1 | b2u(n.arm.timeout)<<2
	case rPP_RTT_MIN:
		return n.arm.min
	case rPP_RTT_MAX:
		return n.arm.max
	case rPP_RTT_SUM_LO:
		n.arm.sumHi = uint32(n.arm.sum >> 32)
		return uint32(n.arm.sum)
	case rPP_RTT_SUM_HI:
		return n.arm.sumHi
	case rPP_DONE_ITERS:
		return n.arm.doneIters
	case rPP_SAMPLES:
		if n.arm.samples.len() == 0 {
			return 0
		}
		return n.arm.samples.pop()
	case rPP_SAMPLE_COUNT:
		return uint32(n.arm.samples.len())
	case rPP_RESPONDER:
		return b2u(n.arm.responder)
	case rTRACE_CTRL:
		return b2u(n.tr.enable)
	case rTRACE_COUNT:
		return uint32(n.tr.words.len() / 4)
	case rTRACE_DATA:
		if n.tr.words.len() == 0 {
			return 0
		}
		return n.tr.words.pop()
	case rPORT_TX_STATUS:
		t := &n.tx[s.idx%nIntra]
		return uint32(t.dataFree()) | uint32(t.hdrFree())<<16
	case rPORT_RX_STATUS:
		r := &n.rx[s.idx%nIntra]
		return uint32(r.data.len()) | uint32(r.waiting())<<16
	case rPORT_RX_HDR:
		r := &n.rx[s.idx%nIntra]
		e := r.head()
		if e == nil {
			return 0
		}
		v := e.h.swWords()[s.sub]
		if s.sub == 3 {
			r.hdr.pop() // the fourth word pops the header
		}
		return v
	case rPORT_RX_DATA:
		r := &n.rx[s.idx%nIntra]
		if r.data.len() == 0 {
			return 0
		}
		return r.data.pop()
	}
	if s.id >= rLINK_STATUS && s.id <= rLINK_STALL_CYCLES {
		return n.readLink(s, now)
	}
	return 0
}

func (n *node) readLink(s slot, now int64) uint32 {
	l := n.links[s.idx%nLinks]
	switch s.id {
	case rLINK_STATUS:
		return b2u(l.up) | b2u(l.up && l.stalled)<<1 | b2u(l.up && l.remoteFault)<<2
	case rLINK_CTRL:
		return b2u(l.enable) | b2u(l.loopback)<<1
	case rCREDIT_THRESHOLD:
		return uint32(l.threshold)
	case rCREDITS:
		return uint32(l.credits)
	case rCREDIT_MAX:
		return l.creditMaxReads()
	case rLINK_TX_PACKETS:
		return l.txPackets
	case rLINK_RX_PACKETS:
		return l.rxPackets
	case rLINK_TX_WORDS:
		return l.txWords
	case rLINK_RX_WORDS:
		return l.rxWords
	case rLINK_CRC_ERRORS:
		v := l.crcErrors
		l.crcErrors = 0
		return v
	case rLINK_ECC_CORRECTED:
		v := l.eccCorrected
		l.eccCorrected = 0
		return v
	case rLINK_ECC_UNCORRECTABLE:
		v := l.eccUncorrectable
		l.eccUncorrectable = 0
		return v
	case rLINK_STALL_CYCLES:
		return uint32(l.stallCycles(now))
	}
	return 0
}

func b2u(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}

// write performs a register write; start reports a write that started
// activity — TG or PP START, a packet queued at an intra-tile port — after
// which the fabric is simulated to quiescence (within startBudget) before
// the write returns. Every other write settles within settleBudget, which
// covers what a configuration change can release (a consumer enabled, a
// port or link re-enabled).
func (n *node) write(s slot, v uint32) (start bool, err error) {
	c := n.now()
	switch s.id {
	case rCOORD, rLATTICE, rDOR_ORDER:
		n.setConfig(s.id, s.idx, v)
		n.configured = n.validConfig()
	case rLINK_CTRL:
		n.setConfig(s.id, s.idx, v)
		n.f.relink()
	case rCONS_CTRL:
		n.setConfig(s.id, s.idx, v)
		if v&2 != 0 {
			n.cons.clear() // CLEAR: consumer and performance counters
		}
	case rTG_CTRL:
		if v&4 != 0 {
			n.tg.clear()
		}
		if v&1 != 0 {
			n.tg.start(c, v&2 != 0)
			return true, nil
		}
	case rPP_CTRL:
		if v&2 != 0 {
			n.arm.clearStats()
		}
		if v&1 != 0 {
			n.arm.start()
			return true, nil
		}
	case rPP_RESPONDER:
		was := n.arm.responder
		n.setConfig(s.id, s.idx, v)
		if n.arm.responder && !was && n.arm.op == opNone && !n.arm.busy {
			n.arm.pollU = c * armUnitsPerCycle // the responder loop starts polling
		}
	case rPP_DEST:
		n.setConfig(s.id, s.idx, v)
		if n.arm.op == opNone && !n.arm.busy {
			n.arm.pollU = c * armUnitsPerCycle
		}
	case rTRACE_CTRL:
		n.setConfig(s.id, s.idx, v)
		if v&2 != 0 {
			n.tr.words.clear()
		}
	case rPORT_TX_HDR:
		t := &n.tx[s.idx%nIntra]
		t.stage[s.sub] = v
		if s.sub == 3 {
			// The fourth word queues the header.
			if t.hdrFree() == 0 {
				return false, fmt.Errorf("exanet on %s: %s: header %w (HDR_FREE is 0: wait for the router to take packets)", n.name, regLabel(s), errFIFOFull)
			}
			if !t.queue(t.stage) {
				n.routeErrors++ // a LENGTH outside 1..512 cannot be framed
			}
			return true, nil
		}
	case rPORT_TX_DATA:
		t := &n.tx[s.idx%nIntra]
		if t.dataFree() == 0 {
			return false, fmt.Errorf("exanet on %s: %s: payload %w (DATA_FREE is 0)", n.name, regLabel(s), errFIFOFull)
		}
		t.data.push(v)
		return t.ready(), nil
	default:
		n.setConfig(s.id, s.idx, v)
	}
	return false, nil
}

// validConfig: COORD lies inside LATTICE and DOR_ORDER names X, Y and Z
// once each (ROUTER_STATUS.CONFIGURED).
func (n *node) validConfig() bool {
	for d := 0; d < 3; d++ {
		if coordOf(n.lattice, d) == 0 || coordOf(n.coord, d) >= coordOf(n.lattice, d) {
			return false
		}
	}
	var seen uint8
	for _, d := range dimOrder(n.dorOrder, false) {
		if d > 2 {
			return false
		}
		seen |= 1 << d
	}
	return seen == 7
}
