package emu

import (
	"fmt"
	"math"
)

// The management window's registers (offsets from MgmtBase). The map is
// bitstreams/catalogue/mgmt.yaml; mgmt_regs_test.go checks the two agree.
const (
	regMgmtID      = 0x000
	regMgmtVersion = 0x004
	regScratch     = 0x008
	regDNA         = 0x00C
	regNPorts      = 0x010
	regFwState     = 0x014
	regHeartbeat   = 0x018
	regFwCtrl      = 0x01C
	regCyclesLo    = 0x020
	regCyclesHi    = 0x024
	regClockKHz    = 0x028
	regDelayUS     = 0x02C
	regMOSPeriod   = 0x030
	regPhyLatency  = 0x034
	regPMOSParams  = 0x038
	regPMOSRTO     = 0x03C

	regMyAddr        = 0x080
	regProxyCtrl     = 0x084
	regDiscoverUS    = 0x088
	regMsgForwarded  = 0x090
	regMsgNoRoute    = 0x094
	regMsgTTL        = 0x098
	regMsgBad        = 0x09C
	regRegReqs       = 0x0A0
	regAssignIgnored = 0x0A4
	regRelayed       = 0x0A8
	regDiscoversSent = 0x0AC
	regRawRejected   = 0x0B0

	regRoute        = 0x100 // 64 entries
	regDefaultRoute = 0x200

	regMboxTxCtrl    = 0x400
	regMboxTxData    = 0x404 // 63 words
	regMboxRxStatus  = 0x500
	regMboxRxData    = 0x504 // 63 words
	regMboxRxPop     = 0x600
	regMboxTxStatus  = 0x604
	regMboxTxCount   = 0x608
	regMboxTxRejects = 0x60C
	regMboxRxDropped = 0x610

	regPortBase   = 0x800 // + port*0x40
	portStride    = 0x40
	regTSBase     = 0xC00
	regLatBase    = 0xC80 // + port*0x10
	latStride     = 0x10
	regMOSTxBase  = 0x1000 // + port*0x100: raw transmit FIFO window
	regMOSRxBase  = 0x1800 // + port*0x100: raw receive FIFO window
	rawWinStride  = 0x100
	mgmtDecodeEnd = 0x2000

	mgmtID      = 0x4D474D54 // "MGMT"
	mgmtVersion = 0x00010000

	routeValid = 1 << 31
	routeMask  = routeValid | 0xF<<16 | 0xFFFF
)

// Per-port block offsets.
const (
	pMode       = 0x00
	pStatus     = 0x04
	pMOSTx      = 0x08
	pMOSRx      = 0x0C
	pMOSRxErr   = 0x10
	pRawRxLevel = 0x14
	pRawDropped = 0x18
	pRawTxLevel = 0x1C
	pPMOSTx     = 0x20
	pPMOSRetx   = 0x24
	pPMOSRx     = 0x28
	pPMOSBad    = 0x2C
	pGiveups    = 0x30
	pResets     = 0x34
	pSession    = 0x38
	pReasmDrops = 0x3C
)

// TimeSync offsets (from regTSBase).
const (
	tsCtrl      = 0x00
	tsTxPorts   = 0x04
	tsInterval  = 0x08
	tsDelayComp = 0x0C
	tsThreshold = 0x10
	tsFailLimit = 0x14
	tsStatus    = 0x18
	tsLastCorr  = 0x1C
	tsMaxCorr   = 0x20
	tsRxValid   = 0x24
	tsRxInvalid = 0x28
	tsMissed    = 0x2C
	tsTxCount   = 0x30
	tsFailures  = 0x34
	tsRxOther   = 0x38
	tsClear     = 0x3C
	tsTimeLo    = 0x40
	tsTimeHi    = 0x44
	tsWaitMax   = 0x48
)

// errFirmwareDown: the register is served by the firmware, which is not
// running (booting, rebooting, crashed). The bridge answers BUSY.
func (mb *mgmtBoard) fwDown() error {
	if mb.fw == fwUp {
		return nil
	}
	return fmt.Errorf("%w: the management firmware is not running (FW_STATE %d)", ErrBusy, mb.fwStateReg())
}

func (mb *mgmtBoard) regRead(off uint32) (uint32, error) {
	switch {
	case off >= regRoute && off < regRoute+4*nRoutes:
		if err := mb.fwDown(); err != nil {
			return 0, err
		}
		return mb.routeView[(off-regRoute)/4], nil
	case off >= regMboxTxData && off < regMboxTxData+4*63:
		return mb.txBuf[(off-regMboxTxData)/4], nil
	case off >= regMboxRxData && off < regMboxRxData+4*63:
		i := int(off-regMboxRxData) / 4
		if len(mb.rxQ) == 0 {
			return 0, nil
		}
		return wordOf(mb.rxQ[0].data, i), nil
	case off >= regPortBase && off < regPortBase+maxPorts*portStride:
		return mb.portRead(int(off-regPortBase)/portStride, (off-regPortBase)%portStride)
	case off >= regLatBase && off < regLatBase+maxPorts*latStride:
		return mb.latRead(int(off-regLatBase)/latStride, (off-regLatBase)%latStride)
	case off >= regTSBase && off < regLatBase:
		return mb.tsRead(off - regTSBase)
	case off >= regMOSTxBase && off < regMOSRxBase:
		return 0, nil // the transmit FIFOs are write-only
	case off >= regMOSRxBase && off < mgmtDecodeEnd:
		if p := int(off-regMOSRxBase) / rawWinStride; p < len(mb.ports) {
			return mb.ports[p].rawRead(), nil
		}
		return 0, nil
	}
	switch off {
	case regMgmtID:
		return mgmtID, nil
	case regMgmtVersion:
		return mgmtVersion, nil
	case regScratch:
		return mb.scratch, nil
	case regDNA:
		return mb.dna, nil
	case regNPorts:
		return uint32(len(mb.ports)), nil
	case regFwState:
		return mb.fwStateReg() | mb.boots<<16, nil
	case regHeartbeat:
		return mb.heartbeat(), nil
	case regFwCtrl, regDelayUS, regMboxRxPop:
		return 0, nil // write-only
	case regCyclesLo:
		c := mb.cycles()
		mb.ts.cyclesHi = uint32(c >> 32)
		return uint32(c), nil
	case regCyclesHi:
		return mb.ts.cyclesHi, nil
	case regClockKHz:
		return tsClockKHz, nil
	case regMOSPeriod:
		return mosPeriodPS, nil
	case regPhyLatency:
		return phyPS, nil
	case regPMOSParams:
		return pmosWindow | pmosRetries<<8 | pmosMaxPayload<<16, nil
	case regPMOSRTO:
		return pmosRTOPS / psPerUS, nil
	case regMyAddr:
		return uint32(mb.addr), nil
	case regProxyCtrl:
		if err := mb.fwDown(); err != nil {
			return 0, err
		}
		return mb.proxyCtrl, nil
	case regDiscoverUS:
		if err := mb.fwDown(); err != nil {
			return 0, err
		}
		return mb.discoverUS, nil
	case regMsgForwarded:
		return mb.cForwarded, nil
	case regMsgNoRoute:
		return mb.cNoRoute, nil
	case regMsgTTL:
		return mb.cTTL, nil
	case regMsgBad:
		return mb.cBad, nil
	case regRegReqs:
		return mb.cReqs, nil
	case regAssignIgnored:
		return mb.cAssignIgnored, nil
	case regRelayed:
		return mb.cRelayed, nil
	case regDiscoversSent:
		return mb.cDiscovers, nil
	case regRawRejected:
		return mb.rawRejected, nil
	case regDefaultRoute:
		if err := mb.fwDown(); err != nil {
			return 0, err
		}
		return mb.defView, nil
	case regMboxTxCtrl:
		if mb.txLen == 0 {
			return 0, nil
		}
		return uint32(mb.txLen) | uint32(mb.txPort)<<16, nil
	case regMboxRxStatus:
		return mb.rxStatus(), nil
	case regMboxTxStatus:
		armed := uint32(0)
		if mb.txLen > 0 {
			armed = 1
		}
		return mb.txResult | armed<<4 | uint32(mb.txWritten)<<8, nil
	case regMboxTxCount:
		return mb.txCount, nil
	case regMboxTxRejects:
		return mb.txRejects, nil
	case regMboxRxDropped:
		return mb.rxDropped, nil
	}
	return 0, fmt.Errorf("%w: 0x%08x is not a register of the management block", ErrBusError, MgmtBase+off)
}

func (mb *mgmtBoard) regWrite(off, v uint32) error {
	switch {
	case off >= regRoute && off < regRoute+4*nRoutes:
		if err := mb.fwDown(); err != nil {
			return err
		}
		i := (off - regRoute) / 4
		mb.routes[i], mb.routeView[i] = v&routeMask, v&routeMask
		return nil
	case off >= regMboxTxData && off < regMboxTxData+4*63:
		return mb.mboxTxData(int(off-regMboxTxData)/4, v)
	case off >= regMboxRxData && off < regMboxRxData+4*63:
		return ErrReadOnly
	case off >= regPortBase && off < regPortBase+maxPorts*portStride:
		return mb.portWrite(int(off-regPortBase)/portStride, (off-regPortBase)%portStride, v)
	case off >= regLatBase && off < regLatBase+maxPorts*latStride:
		return mb.latWrite(int(off-regLatBase)/latStride, (off-regLatBase)%latStride, v)
	case off >= regTSBase && off < regLatBase:
		return mb.tsWrite(off-regTSBase, v)
	case off >= regMOSTxBase && off < regMOSRxBase:
		if p := int(off-regMOSTxBase) / rawWinStride; p < len(mb.ports) {
			mb.ports[p].rawWrite(v)
		}
		return nil
	case off >= regMOSRxBase && off < mgmtDecodeEnd:
		return ErrReadOnly
	}
	switch off {
	case regScratch:
		mb.scratch = v
		return nil
	case regFwCtrl:
		if err := mb.fwDown(); err != nil {
			return err
		}
		if v&1 != 0 {
			mb.nsfReboot("FW_CTRL.REBOOT", true)
		}
		return nil
	case regDelayUS:
		mb.f.advance(mb.f.now + int64(min(v, maxDelayUS))*psPerUS)
		return nil
	case regMyAddr:
		a := uint16(v)
		if a >= addrController {
			return fmt.Errorf("%w: MY_ADDR 0x%04x is reserved (0xFFFE controller, 0xFFFF link-local)", ErrBusError, a)
		}
		mb.addr = a
		mb.armDiscover(false)
		return nil
	case regProxyCtrl:
		if err := mb.fwDown(); err != nil {
			return err
		}
		mb.proxyCtrl = v & (proxyRelay | proxyDiscover)
		mb.armDiscover(false)
		return nil
	case regDiscoverUS:
		if err := mb.fwDown(); err != nil {
			return err
		}
		mb.discoverUS = min(max(v, 10), 10_000_000)
		mb.armDiscover(false)
		return nil
	case regDefaultRoute:
		if err := mb.fwDown(); err != nil {
			return err
		}
		mb.defRoute, mb.defView = v&(routeValid|0xF<<16), v&(routeValid|0xF<<16)
		return nil
	case regMboxTxCtrl:
		return mb.mboxArm(v)
	case regMboxRxPop:
		if v&1 != 0 && len(mb.rxQ) > 0 {
			mb.rxQ[0].data = nil
			mb.rxQ = mb.rxQ[1:]
		}
		return nil
	case regMgmtID, regMgmtVersion, regDNA, regNPorts, regFwState, regHeartbeat, regCyclesLo, regCyclesHi,
		regClockKHz, regMOSPeriod, regPhyLatency, regPMOSParams, regPMOSRTO, regMsgForwarded, regMsgNoRoute,
		regMsgTTL, regMsgBad, regRegReqs, regAssignIgnored, regRelayed, regDiscoversSent, regRawRejected,
		regMboxRxStatus, regMboxTxStatus, regMboxTxCount, regMboxTxRejects, regMboxRxDropped:
		return ErrReadOnly
	}
	return fmt.Errorf("%w: 0x%08x is not a register of the management block", ErrBusError, MgmtBase+off)
}

// wordOf packs bytes 4i..4i+3 of p big-endian (byte 4i in bits 31:24).
func wordOf(p []byte, i int) uint32 {
	var w uint32
	for k := range 4 {
		w <<= 8
		if j := 4*i + k; j < len(p) {
			w |= uint32(p[j])
		}
	}
	return w
}

func (mb *mgmtBoard) rxStatus() uint32 {
	if len(mb.rxQ) == 0 {
		return 0
	}
	h := mb.rxQ[0]
	return uint32(min(len(mb.rxQ), 255)) | uint32(len(h.data))<<8 | uint32(h.port)<<16
}

// mboxArm: MBOX_TX_CTRL announces a message of LEN bytes for PORT; it
// leaves when the data word holding its last byte is written.
func (mb *mgmtBoard) mboxArm(v uint32) error {
	if err := mb.fwDown(); err != nil {
		return err
	}
	n, port := int(v&0xFF), int(v>>16)&0xF
	reject := func(code uint32) error {
		mb.txResult = code
		mb.txRejects++
		mb.txLen = 0
		return nil
	}
	switch {
	case n == 0 && port == 0:
		mb.txLen, mb.txResult = 0, txOK // disarm
		return nil
	case n < 1 || n > pmosMaxPayload || (port == mboxTxPortRoute && n < msgHeaderLen):
		return reject(txBadLen)
	case port != mboxTxPortRoute && port >= len(mb.ports):
		return reject(txBadPort)
	case port != mboxTxPortRoute && (!mb.ports[port].cabled() || mb.ports[port].mode == modeRaw):
		return reject(txPortDown)
	}
	mb.txLen, mb.txPort, mb.txWritten, mb.txResult = n, port, 0, txOK
	return nil
}

// mboxTxData stores a data word and sends the armed message once its last
// byte is in.
func (mb *mgmtBoard) mboxTxData(i int, v uint32) error {
	mb.txBuf[i] = v
	if mb.txLen == 0 {
		return nil
	}
	mb.txWritten = max(mb.txWritten, min(4*(i+1), mb.txLen))
	if i != (mb.txLen-1)/4 {
		return nil
	}
	n, port := mb.txLen, mb.txPort
	mb.txLen = 0
	if mb.fw != fwUp {
		mb.txResult = txPortDown
		mb.txRejects++
		return nil
	}
	msg := make([]byte, n)
	for k := range msg {
		msg[k] = byte(mb.txBuf[k/4] >> (24 - 8*uint(k%4)))
	}
	if port == mboxTxPortRoute {
		if mb.pending >= fwQueueMax {
			mb.txResult = txQueueFull
			mb.txRejects++
			return nil
		}
		mb.fwInput(-1, msg)
	} else if err := mb.ports[port].pmosSend(msg); err != nil {
		mb.txResult = txQueueFull
		mb.txRejects++
		return nil
	}
	mb.txResult = txOK
	mb.txCount++
	return nil
}

func (mb *mgmtBoard) portRead(i int, off uint32) (uint32, error) {
	if i >= len(mb.ports) {
		return 0, nil
	}
	p := mb.ports[i]
	switch off {
	case pMode:
		return p.mode, nil
	case pStatus:
		var s uint32
		if p.cabled() {
			s |= 1
		}
		if p.channelUp() && p.peer.mb.powered {
			s |= 2
		}
		if p.tx.gaveUp {
			s |= 4
		}
		if p.rx.valid {
			s |= 8
		}
		return s | uint32(min(p.pmosBacklog(), 255))<<8, nil
	case pMOSTx:
		return p.mosTx, nil
	case pMOSRx:
		return p.mosRx, nil
	case pMOSRxErr:
		return p.mosRxErr, nil
	case pRawRxLevel:
		return uint32(len(p.rawRx)), nil
	case pRawDropped:
		return p.rawDropped, nil
	case pRawTxLevel:
		return uint32(len(p.rawQ)), nil
	case pPMOSTx:
		return p.pmosTxFrames, nil
	case pPMOSRetx:
		return p.pmosRetx, nil
	case pPMOSRx:
		return p.pmosRxFrames, nil
	case pPMOSBad:
		return p.pmosRxBad, nil
	case pGiveups:
		return p.pmosGiveups, nil
	case pResets:
		return p.pmosRsts, nil
	case pSession:
		s := uint32(p.tx.session) | uint32(p.rx.session)<<8
		if p.rx.valid {
			s |= 1 << 16
		}
		return s, nil
	case pReasmDrops:
		return p.reasm.dropped, nil
	}
	return 0, fmt.Errorf("%w: 0x%08x is not a register of the management block", ErrBusError, MgmtBase+regPortBase+uint32(i)*portStride+off)
}

func (mb *mgmtBoard) portWrite(i int, off, v uint32) error {
	if off == pMode {
		if i < len(mb.ports) {
			mb.ports[i].setMode(v & 3)
		}
		return nil
	}
	if off < portStride && off%4 == 0 {
		return ErrReadOnly
	}
	return fmt.Errorf("%w: 0x%08x is not a register of the management block", ErrBusError, MgmtBase+regPortBase+uint32(i)*portStride+off)
}

// satPS clamps a signed picosecond value into a 32-bit register.
func satPS(ps float64) uint32 {
	switch {
	case ps > math.MaxInt32:
		return math.MaxInt32
	case ps < math.MinInt32:
		return uint32(0x80000000)
	}
	return uint32(int32(math.Round(ps)))
}
