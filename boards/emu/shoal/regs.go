package shoal

// Register addresses (bitstreams/catalogue/shoal.yaml; regs_test.go checks
// that the two agree in both directions).
const (
	regID             = 0x000
	regVersion        = 0x004
	regScratch0       = 0x008
	regScratch1       = 0x00C
	regCaps           = 0x010
	regClockKHz       = 0x014
	regFlowTableSize  = 0x018
	regRecDepth       = 0x01C
	regRole           = 0x020
	regSlotCycles     = 0x024
	regGuardCycles    = 0x028
	regEpochSlots     = 0x02C
	regNodes          = 0x030
	regSyncSlot       = 0x034
	regSyncMaster     = 0x038
	regBERInject      = 0x03C
	regTGLimit        = 0x040
	regCellBytes      = 0x044
	regPayloadBytes   = 0x048
	regReconfCycles   = 0x04C
	regSwLatency      = 0x050
	regNICTx          = 0x054
	regNICRx          = 0x058
	regCCPipe         = 0x05C
	regCycleLo        = 0x060
	regCycleHi        = 0x064
	regSlotLo         = 0x068
	regSlotHi         = 0x06C
	regSyncCtrl       = 0x080
	regSyncStatus     = 0x084
	regSyncOWD        = 0x088
	regSyncMaxResid   = 0x08C
	regBootCtrl       = 0x090
	regBootStatus     = 0x094
	regRunSlots       = 0x098
	regTGCtrl         = 0x09C
	regTGStatus       = 0x0A0
	regTGRunSlots     = 0x0A4
	regCountersClear  = 0x0A8
	regTGFlowsTotal   = 0x0AC
	regTGFlowsDone    = 0x0B0
	nicBase           = 0x1000
	nicStride         = 0x1000
	nicCtrl           = 0x000
	nicNodeID         = 0x004
	nicQueueCap       = 0x008
	nicCCCtrl         = 0x00C
	nicFlowCount      = 0x010
	nicStatus         = 0x014
	nicSyncOffset     = 0x018
	nicSyncResidual   = 0x01C
	nicFailedLo       = 0x020
	nicFailedHi       = 0x024
	nicRecCount       = 0x028
	nicRecData        = 0x02C
	nicRecOverflow    = 0x030
	nicMaxQueueAny    = 0x034
	nicMaxQueueTotal  = 0x038
	nicMaxReadyAny    = 0x03C
	nicCountersBase   = 0x040 // TX_CELLS .. RX_SLOTS, one word each
	queuesMaxQueue    = 0x6000
	queuesQueueLen    = 0x6400
	queuesMaxReady    = 0x6800
	queuesEnd         = 0x6C00
	nicSchedBase      = 0x8000
	nicSchedStride    = 0x400
	regSwCtrl         = 0x9000
	regSwStatus       = 0x9004
	regSwSlots        = 0x9008
	regSwMisaligned   = 0x900C
	regSwDeadEnds     = 0x9010
	regSwTraceEpoch   = 0x9014
	regSwCellsIn      = 0x9020
	regSwCellsOut     = 0x9030
	swSchedBase       = 0xA000
	swTraceBase       = 0xA400
	flowsBase         = 0x100000
	flowsStride       = 0x10000
	designID          = 0x53484F4C
	designVersionWord = 0x00010000
	capsWord          = 8<<16 | maxNodes<<8 | swPorts<<4 | nicsPerBoard
)

// NIC counters, in register order from nicCountersBase.
const (
	cTxCells = iota
	cTxLocal
	cTxFwd
	cTxEmpty
	cTxRetx
	cTxNotice
	cRxCells
	cRxDelivered
	cRxFwd
	cRxEmpty
	cRxCorrupt
	cRxDuplicate
	cRxMisrouted
	cFailedSlots
	cSkippedSlots
	cDrops
	cFailDiscards
	cFlowsStarted
	cFlowsCompleted
	cBadDescriptors
	cLCDSent
	cNoticesRx
	cFBSlotsSum
	cFBCount
	cTxSlots
	cRxSlots
	nCounters
)

// Bits of the status and control registers.
const (
	syncDone   = 1 << 0
	syncError  = 1 << 1
	syncLocked = 1 << 2

	bootRunning     = 1 << 0
	bootNotSynced   = 1 << 1
	bootConfigError = 1 << 2
	bootBadParams   = 1 << 3

	tgDone       = 1 << 0
	tgLimit      = 1 << 1
	tgStalled    = 1 << 2
	tgNotRunning = 1 << 3

	ccRateLimit = 1 << 0
	ccReady     = 1 << 1
	ccNewFlow   = 1 << 2

	// NIC schedule word: the peer this NIC sends to and the one it
	// receives from in the slot.
	schedTxMask  = 0x3FF
	schedTxValid = 1 << 15
	schedRxShift = 16
	schedRxValid = 1 << 31

	// Switch schedule word: nibble p for input port p.
	swConnected = 0x8
	swOutMask   = 0x3
)

// Reset values of the read-write registers.
const (
	resetSlotCycles  = 12 // §6.1
	resetGuardCycles = 1  // §6.1
	resetEpochSlots  = 7  // §3.2: N-1 for the prototype's N = 8
	resetNodes       = 8  // §6.1
	resetQueueCap    = 1024
	resetCCCtrl      = ccRateLimit | ccReady | ccNewFlow
	resetTGLimit     = 1 << 18
	maxRunSlots      = 1 << 24
)
