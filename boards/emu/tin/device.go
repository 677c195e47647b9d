package tin

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/boards/emu"
)

// device is the tin design on one board: one TiN chip. Every field is
// guarded by the fabric's lock.
type device struct {
	f     *fabric
	id    int // index in the fabric's byID (events name devices by it)
	b     *emu.Board
	name  string
	ports [nExt]*emu.Port

	// Registers.
	scratch   [2]uint32
	tinAddr   uint32 // TIN_ADDR as written
	addr      Addr   // the chip address: TIN_ADDR with the endpoint bits clear
	portRole  uint32
	hopLimit  uint32
	routeMode uint32
	arWeight  uint32
	arBias    uint32
	vcFifo    uint32 // effective (at least one 160 B cell)
	vcFifoReg uint32 // as written
	outqCap   uint32
	outqReg   uint32
	qosStrict uint32
	qosWeight [nTC]uint32
	cosTC     uint32
	rmaTC     uint32
	stallUS   uint32
	tgLimitUS uint32
	tgBudgetK uint32
	timeHi    uint32
	conflict  bool

	// rt[input port][destination][entry]: bit 7 valid, bits 2:0 output
	// port; entries 0-7 minimal, 8-31 non-minimal (§3.2, §4.2).
	rt   [nPorts][nDst][nRoute]uint8
	cand [nPorts][nDst]rtCands // rt's rows as the router uses them

	// The switch.
	in   [nPorts]*inPort
	out  [nPorts]*outPort
	inj  [2]*outPort          // the IP and RMA endpoints' injection into ports 4, 5
	outs [nPorts + 2]*outPort // out, then inj: what a cycle serves
	// The ports holding cells: bit p of inNE for in[p] (in[p].ne != 0),
	// bit i of outNE for outs[i]. A cycle visits only those.
	inNE, outNE uint32
	tickAt      int64
	phase       int64 // this board's cycle edges are at phase + k*cyclePS
	arRng       *rand.Rand
	berRng      *rand.Rand
	sampleBuf   [3]int

	swCells, swBytes, swNoRoute, swHopExpired, swVCOverflow uint32
	arMinimal, arNonMinimal, arDeterministic                uint32
	swEjected, swInjected                                   uint32

	ip  *ipEP
	rm  *rmaEP
	gen generators

	trace recFIFO
	dlog  recFIFO
	orec  recFIFO
	iplog recFIFO
	lat   [latClasses]latFIFO

	traceCtrl, traceEvery uint32

	faults deviceFaults
	subtle subtleFaults
}

func newDesign(b *emu.Board, m *bitstreams.Manifest) (emu.Design, error) {
	if n := len(b.Ports()); n < nExt {
		return nil, fmt.Errorf("board %s: the tin design needs %d SFP+ cages (a zcu102 has sfp0..sfp3), a %s has %d", b.Name(), nExt, b.Kind().Name, n)
	}
	d := &device{b: b, name: b.Name(), tickAt: math.MaxInt64}
	for i := range d.ports {
		d.ports[i] = b.Ports()[i]
	}
	for p := range d.in {
		d.in[p] = &inPort{upPort: -1, leakVC: -1, bit: 1 << p}
		o := &outPort{idx: p, peerPort: -1, downAt: math.MaxInt64, kind: kindLink, bit: 1 << p}
		if p >= nExt {
			o.kind = kindEject
			o.serNum, o.serDen = 8*1e6, injectMbps
		}
		d.out[p] = o
	}
	for e := range d.inj {
		d.inj[e] = &outPort{idx: e, kind: kindInject, serNum: 8 * 1e6, serDen: injectMbps, downAt: math.MaxInt64, bit: 1 << (nPorts + e)}
	}
	copy(d.outs[:], d.out[:])
	copy(d.outs[nPorts:], d.inj[:])
	d.trace = newRecFIFO(traceWords, traceDepth)
	d.dlog = newRecFIFO(dlogWords, logDepth)
	d.orec = newRecFIFO(orecWords, logDepth)
	d.iplog = newRecFIFO(iplogWords, logDepth)
	for i := range d.lat {
		d.lat[i] = newLatFIFO(latDepth)
	}
	d.arRng = b.Rand("tin/adaptive")
	d.berRng = b.Rand("tin/ber")
	d.phase = int64(b.Rand("tin/phase").IntN(cyclePS))
	d.ip = newIPEP(d)
	d.rm = newRMAEP(d)
	d.gen.init(d)
	d.resetRegs()
	if err := d.subtle.parse(d); err != nil {
		return nil, err
	}
	if err := d.faults.parse(d); err != nil {
		return nil, err
	}
	d.f = fabricFor(b)
	d.ip.f, d.rm.f = d.f, d.f
	d.f.register(d)
	b.HandleConsole("tin", d.console)
	return d, nil
}

func (d *device) resetRegs() {
	d.hopLimit = resetHopLimit
	d.routeMode = resetRouteMode
	d.arWeight, d.arBias = resetARWeight, resetARBias
	d.setVCFifo(resetVCFifo)
	d.setOutq(resetOutq)
	d.qosStrict = resetQosStrict
	for i := range d.qosWeight {
		d.qosWeight[i] = 1
	}
	d.cosTC, d.rmaTC = resetCosTC, resetRmaTC
	d.stallUS = resetStallUS
	d.tgLimitUS, d.tgBudgetK = resetTGLimitUS, resetTGBudgetK
	d.traceEvery = resetTraceEvery
	d.ip.reset()
	d.rm.reset()
	d.gen.reset()
}

func (d *device) setVCFifo(v uint32) {
	d.vcFifoReg = v
	d.vcFifo = max(v, MaxCell)
	for _, o := range d.inj {
		for vc := range o.cred {
			o.cred[vc] = int(d.vcFifo)
		}
		o.credInit = int(d.vcFifo)
	}
}

func (d *device) setOutq(v uint32) {
	d.outqReg = v
	d.outqCap = max(v, MaxCell)
}

func (d *device) Name() string { return DesignName }

func (d *device) Close() {
	d.b.HandleConsole("tin", nil)
	d.f.unregister(d)
}

// role is the configured role of GNet port p.
func (d *device) role(p int) int {
	r := int(d.portRole >> (2 * p) & 3)
	if r == 3 {
		return roleOff
	}
	return r
}

func (d *device) addrInRange() bool { return d.addr.Pod() < maxPods && d.addr.TiN() < maxTins }

// modeFor is the routing mode ROUTE_MODE gives a cell type.
func (d *device) modeFor(t int) int {
	f := rmData
	switch t {
	case TypeRTS:
		f = rmRTS
	case TypeCTS, TypeCTD:
		f = rmCTS
	case TypeReq:
		f = rmReq
	case TypeResp:
		f = rmResp
	case TypeOReq:
		f = rmOReq
	case TypeOCtl:
		f = rmOCtl
	}
	return int(d.routeMode >> (2 * f) & 3)
}

// vcOf is the first (level-0) VC of a traffic class.
func vcOf(tc int) int { return min(tc, nTC-1) * vcsTC }

// nowNS is the fabric time in ns as the TiN counters show it.
func (d *device) nowNS() uint64 { return uint64(d.f.now / 1000) }

func (d *device) Read32(addr uint32) (uint32, error) {
	f := d.f
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case addr < ctrlEnd:
		return d.readCtrl(addr)
	case addr >= rtBase && addr < rtEnd:
		o := (addr - rtBase) / 4
		per := uint32(nDst * rtWords)
		p, rest := o/per, o%per
		e := &d.rt[p][rest/rtWords]
		k := int(rest%rtWords) * 4
		return uint32(e[k]) | uint32(e[k+1])<<8 | uint32(e[k+2])<<16 | uint32(e[k+3])<<24, nil
	case addr >= logsBase && addr < logsEnd:
		return d.popLog(int(addr-logsBase) / logsBlock), nil
	}
	return 0, fmt.Errorf("%w (0x%x is outside the tin register map)", emu.ErrBusError, addr)
}

func (d *device) Write32(addr, v uint32) error {
	f := d.f
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case addr < ctrlEnd:
		return d.writeCtrl(addr, v)
	case addr >= rtBase && addr < rtEnd:
		o := (addr - rtBase) / 4
		per := uint32(nDst * rtWords)
		p, rest := o/per, o%per
		e := &d.rt[p][rest/rtWords]
		k := int(rest%rtWords) * 4
		for j := 0; j < 4; j++ {
			e[k+j] = uint8(v >> (8 * j))
		}
		d.cand[p][rest/rtWords].valid = false
		return nil
	case addr >= logsBase && addr < logsEnd:
		return errRO(addr)
	}
	return fmt.Errorf("%w (0x%x is outside the tin register map)", emu.ErrBusError, addr)
}

// popLog pops the next word of the FIFO behind block b of the logs window.
func (d *device) popLog(b int) uint32 {
	switch b {
	case logsTrace:
		return d.trace.pop()
	case logsDLog:
		return d.dlog.pop()
	case logsORec:
		return d.orec.pop()
	case logsIPLog:
		return d.iplog.pop()
	}
	return d.lat[b-logsLat].pop()
}

func errRO(addr uint32) error { return fmt.Errorf("%w (0x%x)", emu.ErrReadOnly, addr) }

func errNoReg(addr uint32) error {
	return fmt.Errorf("%w (0x%x is not a register of the tin design)", emu.ErrBusError, addr)
}

func (d *device) readCtrl(addr uint32) (uint32, error) {
	f := d.f
	switch {
	case addr >= regQosWeight && addr < regQosWeight+4*nTC:
		return d.qosWeight[(addr-regQosWeight)/4], nil
	case addr >= swCountersBase && addr < swCountersBase+4*nSwCounters:
		return d.swCounter(int(addr-swCountersBase) / 4), nil
	case addr >= portBase && addr < portEnd:
		return d.readPort(int(addr-portBase)/portStride, (addr-portBase)%portStride)
	case addr >= regCredits && addr < creditsEnd:
		i := int(addr-regCredits) / 4
		p, v := i/nVC, i%nVC
		o := d.out[min(p, nExt-1)]
		if p >= nExt {
			o = d.inj[p-nExt]
		} else if !o.isUp(f.now) {
			return 0, nil
		}
		return uint32(max(o.cred[v], 0)), nil
	case addr >= ipCountersBase && addr < ipCountersBase+4*nIPCounters:
		return d.ip.ctr[(addr-ipCountersBase)/4], nil
	case addr >= regIPRTSQDepth && addr < ipRTSQEnd:
		i := (addr - regIPRTSQDepth) / 4
		return uint32(d.ip.rtsQ[i/nCoS][i%nCoS].n), nil
	case addr >= rmaCountersBase && addr < rmaCountersBase+4*nRMACounters:
		return d.rm.ctr[(addr-rmaCountersBase)/4], nil
	case addr >= ordCountersBase && addr < ordCountersBase+4*nOrdCounters:
		return d.rm.ord.ctr[(addr-ordCountersBase)/4], nil
	case addr >= regLatCount && addr < regLatCount+4*latClasses:
		return d.lat[(addr-regLatCount)/4].count(), nil
	case addr >= regLatData && addr < regLatData+4*latClasses:
		return d.lat[(addr-regLatData)/4].pop(), nil
	case addr >= regLatOverflow && addr < regLatOverflow+4*latClasses:
		return d.lat[(addr-regLatOverflow)/4].overflow, nil
	case addr >= regLatMaxNS && addr < regLatMaxNS+4*latClasses:
		return d.lat[(addr-regLatMaxNS)/4].maxNS, nil
	case addr >= regLatTotal && addr < regLatTotal+4*latClasses:
		return d.lat[(addr-regLatTotal)/4].total, nil
	}
	if v, ok := d.gen.read(addr); ok {
		return v, nil
	}
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
		return 1e9 / cyclePS, nil
	case regLinkMbps:
		return linkMbps, nil
	case regInjectMbps:
		return injectMbps, nil
	case regFallthroughNS:
		return d.fallThroughReads(), nil
	case regPCSNS:
		return pcsPS / 1000, nil
	case regFECNS:
		return fecPS / 1000, nil
	case regFECOverhead:
		return fecOverhead, nil
	case regCellFormat:
		return cellFormatWord, nil
	case regCellPayload:
		return cellPayloadWord, nil
	case regTimeLo:
		t := d.nowNS()
		d.timeHi = uint32(t >> 32)
		return uint32(t), nil
	case regTimeHi:
		return d.timeHi, nil
	case regTinAddr:
		return d.tinAddr, nil
	case regPortRole:
		return d.portRole, nil
	case regHopLimit:
		return d.hopLimit, nil
	case regRouteMode:
		return d.routeMode, nil
	case regARWeight:
		return d.arWeight, nil
	case regARBias:
		return d.arBias, nil
	case regVCFifo:
		return d.vcFifoReg, nil
	case regOutqBytes:
		return d.outqReg, nil
	case regQosStrict:
		return d.qosStrict, nil
	case regCosTC:
		return d.cosTC, nil
	case regRmaTC:
		return d.rmaTC, nil
	case regStallUS:
		return d.stallUS, nil
	case regConfigStatus:
		return d.configStatus(), nil
	case regTGCtrl, regCountersClear:
		return 0, nil
	case regTGStatus:
		return f.status, nil
	case regTGLimitUS:
		return d.tgLimitUS, nil
	case regTGBudgetK:
		return d.tgBudgetK, nil
	case regTGRunNS:
		return uint32(min(f.lastRunPS/1000, math.MaxUint32)), nil
	case regTGElapsedUS:
		if !f.everStarted {
			return 0, nil
		}
		return uint32(min((f.now-f.runStart)/1_000_000, math.MaxUint32)), nil
	case regTGOpsOpen:
		return uint32(max(f.open, 0)), nil
	case regTGKEvents:
		return uint32(min(f.events/1000, math.MaxUint32)), nil
	case regIPCTSWindow:
		return d.ip.ctsWindow, nil
	case regIPCTDThreshold:
		return d.ip.ctdThresh, nil
	case regIPECNThreshold:
		return d.ip.ecnThresh, nil
	case regIPIngressBytes:
		return d.ip.ingCap, nil
	case regIPEgressBytes:
		return d.ip.egCap, nil
	case regIPReasmUS:
		return d.ip.reasmUS, nil
	case regIPPortMbps:
		return d.ip.portMbps, nil
	case regIPFetchUS:
		return d.ip.fetchUS, nil
	case regRMAWindow:
		return d.rm.window, nil
	case regRMAMemNS:
		return d.rm.memNS, nil
	case regRMACplNS:
		return d.rm.cplNS, nil
	case regOrdROBOccupied:
		return uint32(d.rm.ord.robUsed), nil
	case regOrdConnsOpen:
		return uint32(d.rm.ord.connsOpen), nil
	case regTraceCtrl:
		return d.traceCtrl, nil
	case regTraceEvery:
		return d.traceEvery, nil
	case regTraceCount:
		return d.trace.count(), nil
	case regTraceData:
		return d.trace.pop(), nil
	case regTraceOverflow:
		return d.trace.overflow, nil
	case regTraceTotal:
		return d.trace.total, nil
	case regDLogCount:
		return d.dlog.count(), nil
	case regDLogData:
		return d.dlog.pop(), nil
	case regDLogOverflow:
		return d.dlog.overflow, nil
	case regORecCount:
		return d.orec.count(), nil
	case regORecData:
		return d.orec.pop(), nil
	case regORecOverflow:
		return d.orec.overflow, nil
	case regIPLogCount:
		return d.iplog.count(), nil
	case regIPLogData:
		return d.iplog.pop(), nil
	case regIPLogOverflw:
		return d.iplog.overflow, nil
	}
	if v, ok := d.rm.ord.readCfg(addr); ok {
		return v, nil
	}
	return 0, errNoReg(addr)
}

func (d *device) writeCtrl(addr, v uint32) error {
	f := d.f
	switch {
	case addr >= regQosWeight && addr < regQosWeight+4*nTC:
		d.qosWeight[(addr-regQosWeight)/4] = v & 0xFF
		return nil
	case addr >= swCountersBase && addr < swCountersBase+4*nSwCounters,
		addr >= portBase && addr < portEnd && (addr-portBase)%portStride <= pCreditInit, addr >= regCredits && addr < creditsEnd,
		addr >= ipCountersBase && addr < ipCountersBase+4*nIPCounters,
		addr >= regIPRTSQDepth && addr < ipRTSQEnd,
		addr >= rmaCountersBase && addr < rmaCountersBase+4*nRMACounters,
		addr >= ordCountersBase && addr < ordCountersBase+4*nOrdCounters,
		addr >= regLatCount && addr < regLatTotal+4*latClasses && (addr-regLatCount)%0x20 < 4*latClasses:
		return errRO(addr)
	}
	if ok, err := d.gen.write(addr, v); ok {
		return err
	}
	if ok := d.rm.ord.writeCfg(addr, v); ok {
		return nil
	}
	switch addr {
	case regScratch0, regScratch1:
		d.scratch[(addr-regScratch0)/4] = v
	case regTinAddr:
		v &= 0xFFFF
		if v != d.tinAddr {
			d.tinAddr = v
			d.addr = Addr(v).Chip()
			f.abort("board " + d.name + " changed TIN_ADDR")
			f.addrConflicts()
		}
	case regPortRole:
		v &= 0xFF
		if v != d.portRole {
			d.portRole = v
			f.abort("board " + d.name + " changed PORT_ROLE")
			f.wire()
			f.addrConflicts()
		}
	case regHopLimit:
		d.hopLimit = v & 0x1F
	case regRouteMode:
		d.routeMode = v & 0x3FFF
	case regARWeight:
		d.arWeight = v & 0xF
	case regARBias:
		d.arBias = v & 0xFFFF
	case regVCFifo:
		v &= 0xFFFF
		if v != d.vcFifoReg {
			f.abort("board " + d.name + " changed VC_FIFO_BYTES")
			d.setVCFifo(v)
			f.wire()
		}
	case regOutqBytes:
		d.setOutq(v & 0xFFFF)
	case regQosStrict:
		d.qosStrict = v & 0x3FF
	case regCosTC:
		d.cosTC = v
	case regRmaTC:
		d.rmaTC = v & 0xFFF
	case regStallUS:
		d.stallUS = v
	case regTGCtrl:
		switch {
		case v&tgAbort != 0:
			f.abort("TG_CTRL.ABORT on " + d.name)
			f.status = 0
		case v&tgStart != 0:
			f.start(d)
		case v&tgContinue != 0:
			f.resume(d)
		}
	case regTGLimitUS:
		d.tgLimitUS = v
	case regTGBudgetK:
		d.tgBudgetK = v
	case regCountersClear:
		if v&1 != 0 {
			d.clearCounters()
		}
	case regIPCTSWindow:
		d.ip.ctsWindow = v & 0xFFFF
	case regIPCTDThreshold:
		d.ip.ctdThresh = v & 0xFFFF
	case regIPECNThreshold:
		d.ip.ecnThresh = v & 0xFFFF
	case regIPIngressBytes:
		d.ip.ingCap = v
	case regIPEgressBytes:
		d.ip.egCap = v
	case regIPReasmUS:
		d.ip.reasmUS = v & 0xFFFF
	case regIPPortMbps:
		d.ip.portMbps = v
	case regIPFetchUS:
		d.ip.fetchUS = v & 0xFFFF
	case regRMAWindow:
		d.rm.window = v & 0xFFFF
	case regRMAMemNS:
		d.rm.memNS = v & 0xFFFF
	case regRMACplNS:
		d.rm.cplNS = v & 0xFFFF
	case regTraceCtrl:
		d.traceCtrl = v & 0xF
	case regTraceEvery:
		d.traceEvery = v & 0xFFFF
	case regID, regVersion, regCaps, regClockKHz, regLinkMbps, regInjectMbps, regFallthroughNS, regPCSNS,
		regFECNS, regFECOverhead, regCellFormat, regCellPayload, regTimeLo, regTimeHi, regConfigStatus,
		regTGStatus, regTGRunNS, regTGElapsedUS, regTGOpsOpen, regTGKEvents, regOrdROBOccupied, regOrdConnsOpen,
		regTraceCount, regTraceData, regTraceOverflow, regTraceTotal, regDLogCount, regDLogData, regDLogOverflow,
		regORecCount, regORecData, regORecOverflow, regIPLogCount, regIPLogData, regIPLogOverflw:
		return errRO(addr)
	default:
		return errNoReg(addr)
	}
	return nil
}

func (d *device) swCounter(i int) uint32 {
	return [nSwCounters]uint32{d.swCells, d.swBytes, d.swNoRoute, d.swHopExpired, d.swVCOverflow,
		d.arMinimal, d.arNonMinimal, d.arDeterministic, d.swEjected, d.swInjected}[i]
}

func (d *device) readPort(p int, o uint32) (uint32, error) {
	in, out := d.in[p], d.out[p]
	switch o {
	case pStatus:
		if p >= nExt {
			return psUp, nil
		}
		s := uint32(d.role(p)) << psRoleShift
		if out.isUp(d.f.now) {
			s |= psUp
		}
		if d.role(p) == roleGlobal {
			s |= psFEC
		}
		if out.cabled {
			s |= psCabled
		}
		if out.peerIsTiN {
			s |= psPeerTiN
		}
		return s, nil
	case pPeer:
		if p < nExt && out.up {
			return out.peer.tinAddr & 0xFFE0, nil
		}
		return 0, nil
	case pTxCells:
		return out.txCells, nil
	case pTxBytes:
		return out.txBytes, nil
	case pRxCells:
		return in.rxCells, nil
	case pRxBytes:
		return in.rxBytes, nil
	case pCRCErrors:
		return in.crcErrs, nil
	case pPayErrors:
		return in.payErrs, nil
	case pFECFixed:
		return in.fecFixed, nil
	case pLinkDrops:
		return in.linkDrp + out.drops, nil
	case pOutqHWM:
		return uint32(out.hwm), nil
	case pInqHWM:
		return uint32(in.hwm), nil
	case pCreditInit:
		if p >= nExt {
			return uint32(d.inj[p-nExt].credInit), nil
		}
		if !out.isUp(d.f.now) {
			return 0, nil
		}
		return uint32(creditInitReads(out.peer, out.peerPort, out.credInit)), nil
	}
	return 0, errNoReg(uint32(portBase + p*portStride + int(o)))
}

// configStatus reports what would keep a run from starting, or links from
// coming up.
func (d *device) configStatus() uint32 {
	var s uint32
	if d.conflict {
		s |= cfgAddrConflict
	}
	if !d.addrInRange() {
		s |= cfgAddrRange
	}
	for p := 0; p < nExt; p++ {
		o := d.out[p]
		if o.peerIsTiN && d.role(p) != roleOff && !o.up {
			s |= cfgRoleMismatch
		}
	}
	return s
}

// clearCounters zeroes this board's counters, high-water marks, logs and
// samples (COUNTERS_CLEAR).
func (d *device) clearCounters() {
	d.swCells, d.swBytes, d.swNoRoute, d.swHopExpired, d.swVCOverflow = 0, 0, 0, 0, 0
	d.arMinimal, d.arNonMinimal, d.arDeterministic, d.swEjected, d.swInjected = 0, 0, 0, 0, 0
	for p := range d.in {
		in := d.in[p]
		in.hwm, in.rxCells, in.rxBytes, in.crcErrs, in.payErrs, in.fecFixed, in.linkDrp = 0, 0, 0, 0, 0, 0, 0
		o := d.out[p]
		o.txCells, o.txBytes, o.hwm, o.drops = 0, 0, 0, 0
	}
	for _, o := range d.inj {
		o.txCells, o.txBytes, o.hwm = 0, 0, 0
	}
	d.ip.ctr = [nIPCounters]uint32{}
	d.rm.ctr = [nRMACounters]uint32{}
	d.rm.ord.ctr = [nOrdCounters]uint32{}
	d.gen.clear()
	d.trace.clear()
	d.dlog.clear()
	d.orec.clear()
	d.iplog.clear()
	for i := range d.lat {
		d.lat[i].clear()
	}
}

// traceCell writes a collector record for a traced cell crossing this
// switch from input in to output out (§6: traced cells "are sampled by each
// TiN in the cell's path"). The record layout is in docs/tin.md.
func (d *device) traceCell(c *cell, in, out int, now int64) {
	w := c.h.Word()
	flags := uint32(c.rkind)
	if in >= nExt {
		flags |= 1 << 3 // injected here
	}
	d.trace.push([]uint32{
		uint32(w >> 32),
		uint32(w),
		uint32(c.p0 >> 32),
		uint32(c.p0),
		uint32(d.addr)<<16 | uint32(in)<<12 | uint32(out)<<8 | uint32(c.outVC)<<3 | flags&7,
		uint32(c.arr / 1000),
		uint32(now / 1000),
		d.trace.total<<8 | flags>>3&1,
	})
}

// latSample records a latency sample of class k, in ns.
func (d *device) latSample(k int, ps int64) {
	d.lat[k].push(uint32(min(max(ps, 0)/1000, math.MaxUint32)))
}

// newCell builds a cell this TiN's endpoints send: the hop count starts at
// HOP_LIMIT; traced cells carry the trace-enable bit (§6).
func (d *device) newCell(typ int, dst, src Addr, n, vc int, traced bool, now int64) *cell {
	c := d.f.newCell()
	c.h = Header{Dst: dst, Src: src, Len: n, Type: typ, VC: vc, Hop: int(d.hopLimit), Trace: traced}
	c.born = now
	c.out = -1
	return c
}

// inject queues a cell on endpoint e's injection port (0 IP, 1 RMA) at time
// t; it enters the switch as the port's QoS and credits allow.
func (d *device) inject(e int, c *cell, t int64) {
	o := d.inj[e]
	c.avail = t
	q := &o.q[c.h.VC]
	q.push(c)
	o.ne |= 1 << c.h.VC
	d.outNE |= o.bit
	o.hwm = max(o.hwm, q.bytes)
	d.wake(t)
}

// console is the board shell's `tin` command: the chip's address, its
// ports (role, link state, peer) and the fabric's run status, as the
// firmware would print them for bring-up.
func (d *device) console(args []string) string {
	f := d.f
	f.mu.Lock()
	defer f.mu.Unlock()
	var sb strings.Builder
	fmt.Fprintf(&sb, "tin %s addr=0x%04x pod=%d tin=%d config=0x%x\n", d.name, uint16(d.addr), d.addr.Pod(), d.addr.TiN(), d.configStatus())
	roles := []string{"off", "local", "global", "off"}
	for p := 0; p < nExt; p++ {
		o := d.out[p]
		state := "down"
		if o.isUp(f.now) {
			state = "up"
		}
		peer := "-"
		if o.up {
			peer = fmt.Sprintf("%s(0x%04x)", o.peer.name, uint16(o.peer.addr))
		}
		fmt.Fprintf(&sb, "  %s role=%s link=%s peer=%s tx=%d rx=%d\n", d.ports[p].Name, roles[d.portRole>>(2*p)&3], state, peer, o.txCells, d.in[p].rxCells)
	}
	fmt.Fprintf(&sb, "fabric time_ns=%d status=0x%x open=%d", f.now/1000, f.status, f.open)
	return sb.String()
}
