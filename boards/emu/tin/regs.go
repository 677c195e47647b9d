package tin

// Register addresses (bitstreams/catalogue/tin.yaml; regs_test.go checks
// that the two agree in both directions).
const (
	regID            = 0x000
	regVersion       = 0x004
	regScratch0      = 0x008
	regScratch1      = 0x00C
	regCaps          = 0x010
	regClockKHz      = 0x014
	regLinkMbps      = 0x018
	regInjectMbps    = 0x01C
	regFallthroughNS = 0x020
	regPCSNS         = 0x024
	regFECNS         = 0x028
	regFECOverhead   = 0x02C
	regCellFormat    = 0x030
	regCellPayload   = 0x034
	regTimeLo        = 0x038
	regTimeHi        = 0x03C
	regTinAddr       = 0x040
	regPortRole      = 0x044
	regHopLimit      = 0x048
	regRouteMode     = 0x04C
	regARWeight      = 0x050
	regARBias        = 0x054
	regVCFifo        = 0x058
	regOutqBytes     = 0x05C
	regQosStrict     = 0x060
	regCosTC         = 0x064
	regRmaTC         = 0x068
	regStallUS       = 0x06C
	regConfigStatus  = 0x070
	regQosWeight     = 0x080 // [nTC], stride 4
	regTGCtrl        = 0x0C0
	regTGStatus      = 0x0C4
	regTGLimitUS     = 0x0C8
	regTGBudgetK     = 0x0CC
	regTGRunNS       = 0x0D0
	regTGElapsedUS   = 0x0D4
	regCountersClear = 0x0D8
	regTGOpsOpen     = 0x0DC
	regTGKEvents     = 0x0E0

	swCountersBase = 0x100 // SW_CELLS .. SW_INJECTED, one word each

	portBase   = 0x200
	portStride = 0x40
	// Per-port registers, offsets in a port block.
	pStatus     = 0x00
	pPeer       = 0x04
	pTxCells    = 0x08
	pTxBytes    = 0x0C
	pRxCells    = 0x10
	pRxBytes    = 0x14
	pCRCErrors  = 0x18
	pPayErrors  = 0x1C
	pFECFixed   = 0x20
	pLinkDrops  = 0x24
	pOutqHWM    = 0x28
	pInqHWM     = 0x2C
	pCreditInit = 0x30
	portEnd     = portBase + nPorts*portStride

	regCredits = 0x400 // [nPorts*nVC], element port*32+vc
	creditsEnd = regCredits + 4*nPorts*nVC

	regIPCTSWindow    = 0x800
	regIPCTDThreshold = 0x804
	regIPECNThreshold = 0x808
	regIPIngressBytes = 0x80C
	regIPEgressBytes  = 0x810
	regIPReasmUS      = 0x814
	regIPPortMbps     = 0x818
	regIPFetchUS      = 0x81C
	ipCountersBase    = 0x840 // IP_PKTS_SENT .. IP_DATA_MISMATCH
	regIPRTSQDepth    = 0x900 // [ipPorts*nCoS]
	ipRTSQEnd         = regIPRTSQDepth + 4*ipPorts*nCoS

	regRMAWindow    = 0xA00
	regRMAMemNS     = 0xA04
	regRMACplNS     = 0xA08
	rmaCountersBase = 0xA40

	regOrdSrcConns    = 0xB00
	regOrdTgtConns    = 0xB04
	regOrdROBEntries  = 0xB08
	regOrdMaxOut      = 0xB0C
	regOrdReplay      = 0xB10
	regOrdTimeoutNS   = 0xB14
	regOrdLifetimeNS  = 0xB18
	regOrdMemNS       = 0xB1C
	regOrdBackoffNS   = 0xB20
	regOrdLossReqPPM  = 0xB24
	regOrdLossAckPPM  = 0xB28
	regOrdJitterNS    = 0xB2C
	regOrdDropEvery   = 0xB30
	ordCountersBase   = 0xB40
	regOrdROBOccupied = 0xBA0
	regOrdConnsOpen   = 0xBA4

	regIPGCtrl       = 0xC00
	regIPGRate       = 0xC04
	regIPGBytes      = 0xC08
	regIPGCount      = 0xC0C
	regIPGDstLo      = 0xC10
	regIPGDstHi      = 0xC14
	regIPGDstPort    = 0xC18
	regIPGCoS        = 0xC1C
	regIPGFlows      = 0xC20
	regIPGReplyBytes = 0xC24
	regIPGSent       = 0xC28
	regIPGCompleted  = 0xC2C
	regIPGDropped    = 0xC30

	regBGCtrl      = 0xC40
	regBGDst       = 0xC44
	regBGMsgBytes  = 0xC48
	regBGRate      = 0xC4C
	regBGCount     = 0xC50
	regBGMTU       = 0xC54
	regBGCoS       = 0xC58
	regBGSent      = 0xC5C
	regBGCompleted = 0xC60

	regRGCtrl      = 0xC80
	regRGQPS       = 0xC84
	regRGBytes     = 0xC88
	regRGCount     = 0xC8C
	regRGDstLo     = 0xC90
	regRGDstHi     = 0xC94
	regRGIssued    = 0xC98
	regRGCompleted = 0xC9C

	regOGCtrl      = 0xCC0
	regOGDst       = 0xCC4
	regOGStreams   = 0xCC8
	regOGLen       = 0xCCC
	regOGBytes     = 0xCD0
	regOGGapNS     = 0xCD4
	regOGStreamGap = 0xCD8
	regOGConc      = 0xCDC
	regOGStarted   = 0xCE0
	regOGCompleted = 0xCE4

	regTraceCtrl     = 0xD00
	regTraceEvery    = 0xD04
	regTraceCount    = 0xD08
	regTraceData     = 0xD0C
	regTraceOverflow = 0xD10
	regTraceTotal    = 0xD14

	regDLogCount    = 0xD40
	regDLogData     = 0xD44
	regDLogOverflow = 0xD48
	regORecCount    = 0xD50
	regORecData     = 0xD54
	regORecOverflow = 0xD58
	regIPLogCount   = 0xD60
	regIPLogData    = 0xD64
	regIPLogOverflw = 0xD68

	regLatCount    = 0xE00 // [latClasses]
	regLatData     = 0xE20
	regLatOverflow = 0xE40
	regLatMaxNS    = 0xE60
	regLatTotal    = 0xE80

	ctrlEnd = 0x1000

	// The logs window: the collector, the logs and the latency samples
	// again, one block each, every word of a block popping its FIFO, so
	// that a burst read pops many words (one word per request through
	// TRACE_DATA and the others costs a request each on a UART bridge).
	logsBase   = 0x20000
	logsBlock  = 0x400
	logsTrace  = 0 // block numbers
	logsDLog   = 1
	logsORec   = 2
	logsIPLog  = 3
	logsLat    = 4 // [latClasses]
	logsBlocks = logsLat + latClasses
	logsEnd    = logsBase + logsBlocks*logsBlock

	rtBase   = 0x10000 // routing tables
	rtWords  = nRoute / 4
	rtStride = rtWords * 4                   // bytes per (input port, destination)
	rtEnd    = rtBase + nPorts*nDst*rtStride // 0x13000

	designID          = 0x54494E31 // "TIN1"
	designVersionWord = 0x00010200 // 1.2.0: 1.1 (data cells without a tag, RPTR in the header, cut-through switching) with the logs window
	capsWord          = 3<<24 | 3<<20 | nTC<<16 | nVC<<8 | (nPorts-nExt)<<4 | nExt
	cellFormatWord    = RespTag<<24 | DataTag<<20 | HeaderSize<<16 | MaxCell<<8 | MinCell
	cellPayloadWord   = MaxPacketCells<<24 | MaxOReqData<<16 | RespData<<8 | DataPerCell
)

// Switch counters, in register order from swCountersBase.
const (
	cSwCells = iota
	cSwBytes
	cSwNoRoute
	cSwHopExpired
	cSwVCOverflow
	cARMinimal
	cARNonMinimal
	cARDeterministic
	cSwEjected
	cSwInjected
	nSwCounters
)

// IP counters, in register order from ipCountersBase.
const (
	cIPPktsSent = iota
	cIPRTSSent
	cIPCTSReceived
	cIPCTDReceived
	cIPDataSent
	cIPRTSReceived
	cIPCTSSent
	cIPCTDSent
	cIPDataReceived
	cIPPktsDelivered
	cIPBytesDelivered
	cIPECNMarked
	cIPOOOPkts
	cIPReasmTimeouts
	cIPHostBlocked
	cIPIngressHWM
	cIPEgressHWM
	cIPRTSQHWM
	cIPOutstandingHWM
	cIPFetchTimeouts
	cIPTooLong
	cIPDataNoContext
	cIPDataMismatch
	nIPCounters
)

// RMA counters, from rmaCountersBase.
const (
	cRMAIssued = iota
	cRMADone
	cRMAServed
	cRMARespSent
	cRMARespReceived
	cRMABlocked
	nRMACounters
)

// Ordering-engine counters, from ordCountersBase.
const (
	cOrdReqsSent = iota
	cOrdSlowSent
	cOrdRetx
	cOrdTimeouts
	cOrdNacksReceived
	cOrdFallbacks
	cOrdNoCID
	cOrdStreamsDone
	cOrdExecuted
	cOrdDupSuppressed
	cOrdDupExecuted
	cOrdNackNoConn
	cOrdNackROBFull
	cOrdNackReplayFull
	cOrdROBInserts
	cOrdROBHWM
	cOrdConnHWM
	cOrdDroppedReq
	cOrdDroppedAck
	cOrdAgedDrops
	cOrdReplayMiss
	cOrdFins
	nOrdCounters
)

// Reset values of the read-write registers.
const (
	resetHopLimit  = 8 // the longest fault-free route has 5 hops (§3.2: l g l g l)
	resetRouteMode = modeDeterministic << (2 * rmRTS)
	resetARWeight  = 2
	resetARBias    = 160
	// resetVCFifo (reading A4, Aquila §3.1): eight 160 B cells per VC,
	// sized to cover the credit round trip of a global link, so that one
	// VC can keep a link busy:
	// head out PCS 20 + wire + FEC 30, tail 54.5 ns later, read out 20 ns
	// after, credit back PCS + wire + FEC: about 274 ns on the lab's 10 m
	// (50 ns) global cables, 5 cells at 23.5 Gb/s; 1280 B covers cables up
	// to about 130 ns (26 m). Four cells (1.0.0's reset) held a global link
	// to 80% of its rate per VC (docs/tin.md, "The switch").
	resetVCFifo     = 1280
	resetOutq       = 320 // shallow: two 160 B cells per VC (§1, §3.1)
	resetQosStrict  = 0x3 // TC0 (RTS) and TC1 (CTS/CTD) first: §6 "get high priority"
	resetCosTC      = 0x22223333
	resetRmaTC      = 0x432
	resetStallUS    = 1000
	resetTGLimitUS  = 0 // no limit of emulated time
	resetTGBudgetK  = 1000
	resetCTSWindow  = 16
	resetCTDThresh  = 64
	resetECNThresh  = 16
	resetIngress    = 1 << 20
	resetEgress     = 1 << 16
	resetReasmUS    = 200
	resetFetchUS    = 500
	resetPortMbps   = 100000
	resetRMAWindow  = 64
	resetRMAMemNS   = 800
	resetRMACplNS   = 200
	resetSrcConns   = 16
	resetTgtConns   = 16
	resetROB        = 50 // §IV-D: a skew of 50 packets
	resetMaxOut     = 25 // §IV-D, Fig. 12(c): half the reorder buffer
	resetReplay     = 256
	resetTimeoutNS  = 25000
	resetLifetimeNS = 10000
	resetOrdMemNS   = 100
	resetBackoffNS  = 1000
	resetIPGBytes   = 1500
	resetIPGPort    = 1
	resetIPGFlows   = 1
	resetIPGReply   = 64
	resetBGMsg      = 65536
	resetBGRate     = 600 // §5.1: 0.6 Gbps point to point
	resetBGMTU      = 4096
	resetRGBytes    = 4096 // §5.1: 4 KB values
	resetRGQPS      = 10000
	resetOGStreams  = 1
	resetOGLen      = 10
	resetOGBytes    = 64
	resetOGConc     = 1
	resetTraceEvery = 1
)

// Routing modes (ROUTE_MODE fields), §3.2's four principal modes.
const (
	modeAdaptive         = 0
	modeMinAdaptive      = 1
	modeDeterministic    = 2
	modeMinDeterministic = 3
)

// ROUTE_MODE field index per cell type.
const (
	rmRTS  = 0
	rmCTS  = 1 // CTS and CTD
	rmData = 2
	rmReq  = 3
	rmResp = 4
	rmOReq = 5
	rmOCtl = 6
)

// Routing-table entry bits.
const (
	rtValid    = 0x80
	rtPortMask = 0x07
)

// Bits of control and status registers.
const (
	tgStart    = 1 << 0
	tgContinue = 1 << 1
	tgAbort    = 1 << 2

	cfgAddrConflict = 1 << 0
	cfgAddrRange    = 1 << 1
	cfgRoleMismatch = 1 << 2

	psUp        = 1 << 0
	psRoleShift = 1
	psFEC       = 1 << 3
	psCabled    = 1 << 4
	psPeerTiN   = 1 << 5

	ipgEnable = 1 << 0
	ipgReply  = 1 << 1
	ipgLog    = 1 << 2
	bgEnable  = 1 << 0
	bgLog     = 1 << 1
	rgEnable  = 1 << 0
	rgHiPri   = 1 << 1
	ogEnable  = 1 << 0
	ogSync    = 1 << 1
	ogEOD     = 1 << 2
	ogSlow    = 1 << 3

	trIP    = 1 << 0
	trBurst = 1 << 1
	trRMA   = 1 << 2
	trOrd   = 1 << 3
)

// Words per record of the pop FIFOs.
const (
	traceWords = 8
	dlogWords  = 5
	orecWords  = 6
	iplogWords = 5
)
