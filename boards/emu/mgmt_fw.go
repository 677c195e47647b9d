package emu

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"sync/atomic"
)

// The management firmware of one board (Aquila §3.5, §4.3, §4.4): boot and
// non-stop-forwarding reboot, the DHCP-like discovery, relaying for a
// controller, remote register access, forwarding of management messages by
// routing table, and the mailbox through which the runner talks to it
// (docs/mgmt.md).

// Firmware states (FW_STATE.STATE).
const (
	fwOff       = 0
	fwBooting   = 1
	fwUp        = 2
	fwRebooting = 3
	fwHalted    = 4 // reported once the watchdog notices a crashed firmware
)

// Firmware timing in emulated time. The paper gives none of these (the
// ECP is a Cortex-M7 running FreeRTOS and lwIP, §4.3); they are chosen to be
// plausible for such a processor and are documented in docs/mgmt.md.
const (
	fwBootPS          = 2 * psPerMS // power-on to firmware up
	fwRebootPS        = 1 * psPerMS // an NSF reboot
	fwMsgPS           = 5 * psPerUS // handling one management message
	fwOpPS            = 1 * psPerUS // one register operation of a REG_REQ
	heartbeatPS       = 1 * psPerMS // FW_HEARTBEAT period
	watchdogPS        = 5 * psPerMS // a silent heartbeat for this long: FW_STATE reads HALTED
	fwQueueMax        = 16          // messages waiting for the firmware
	mboxRxMax         = 32          // messages the runner's mailbox holds
	nRoutes           = 64          // ROUTE entries
	maxPorts          = 8           // per-port register blocks
	regCacheSize      = 8           // REG_REQ answers remembered for retries
	defaultDiscoverUS = 1000        // DISCOVER_US after a boot
	routeLocal        = 0xF         // ROUTE.PORT: deliver to this board's mailbox
	mboxTxPortRoute   = 0xF         // MBOX_TX_CTRL.PORT: process the message as this board's firmware would

	// PROXY_CTRL
	proxyRelay    = 1 << 0 // relay DISCOVERs heard on the ports to the controller
	proxyDiscover = 1 << 1 // send DISCOVERs while MY_ADDR is 0
	proxyDefault  = proxyDiscover
)

// MBOX_TX_STATUS.RESULT codes.
const (
	txOK        = 0
	txBadLen    = 1
	txBadPort   = 2
	txPortDown  = 3
	txQueueFull = 4
)

type mboxMsg struct {
	port uint8 // arrival port, or routeLocal for messages the board made itself
	data []byte
}

type regCacheEntry struct {
	src, tag uint16
	crc      uint16
	resp     []byte
}

type mgmtBoard struct {
	f     *mgmtFabric
	b     *Board
	ports []*mgmtPort
	dna   uint32
	rng   *rand.Rand // firmware's own draws (discover jitter)

	// power and firmware
	powered   bool
	pwrOnAt   int64
	hwEpoch   uint64 // bumps at every power change: hardware events of an older epoch are void
	fw        int
	fwEpoch   uint64 // bumps at every firmware start or stop: firmware events of an older epoch are void
	fwUpAt    int64
	hbBase    uint32 // heartbeats before the current run
	crashAt   int64
	boots     uint32
	busyUntil int64 // the firmware handles one message at a time
	pending   int   // messages waiting for it
	stuckBoot atomic.Bool
	crashed   atomic.Bool

	// faults
	neverBoots  bool
	crashAfter  int // mgmt-proxy-dies: PMOS packets before the crash; 0 none
	pmosCount   int
	rebootAfter int // mgmt-nsf-reboot: REG_REQs; 0 none
	reqCount    int

	// hardware registers (kept across an NSF reboot)
	scratch  uint32
	addr     uint16
	routes   [nRoutes]uint32
	defRoute uint32
	// the firmware's view of the routing table, which is what reads return:
	// the hardware tables cannot be read back (docs/mgmt.md, "Non-stop
	// forwarding reboot")
	routeView [nRoutes]uint32
	defView   uint32

	// firmware settings (re-initialised at every boot)
	proxyCtrl  uint32
	discoverUS uint32
	discGen    uint64

	// mailbox
	txBuf       [63]uint32
	txLen       int // armed message length; 0 when not armed
	txPort      int
	txWritten   int // bytes written since arming
	txResult    uint32
	txCount     uint32
	txRejects   uint32
	rxQ         []mboxMsg
	rxDropped   uint32
	cache       []regCacheEntry
	rawRejected uint32

	// counters (docs/mgmt.md)
	cForwarded, cNoRoute, cTTL, cBad, cReqs, cAssignIgnored, cRelayed, cDiscovers uint32

	ts tsState
}

func newMgmtBoard(f *mgmtFabric, b *Board) (*mgmtBoard, error) {
	mb := &mgmtBoard{f: f, b: b, dna: b.deviceID, rng: b.Rand("mgmt/fw")}
	for i, p := range b.ports {
		mp := &mgmtPort{mb: mb, idx: i, p: p, cutAt: -1, rng: b.Rand("mos/" + p.Name)}
		mp.phase = mp.rng.Int64N(mosPeriodPS)
		mb.ports = append(mb.ports, mp)
	}
	mb.tsInit()
	return mb, nil
}

// powerOn: the hardware comes up in its reset state and the firmware boots.
func (mb *mgmtBoard) powerOn() {
	if mb.powered {
		return
	}
	f := mb.f
	mb.powered = true
	mb.pwrOnAt = f.now
	mb.hwEpoch++
	mb.hwReset()
	mb.tsPowerOn()
	mb.boots = 0
	mb.hbBase = 0
	mb.crashed.Store(false)
	mb.fw = fwBooting
	mb.fwEpoch++
	if mb.neverBoots {
		return
	}
	epoch := mb.fwEpoch
	f.at(f.now+fwBootPS, func() {
		if epoch == mb.fwEpoch {
			mb.fwStart()
		}
	})
}

func (mb *mgmtBoard) powerOff() {
	if !mb.powered {
		return
	}
	mb.powered = false
	mb.hwEpoch++
	mb.fwStop()
	mb.fw = fwOff
	mb.crashed.Store(false)
	mb.tsPowerOff()
}

// hwReset puts the management hardware in its power-on state.
func (mb *mgmtBoard) hwReset() {
	mb.scratch, mb.addr, mb.defRoute, mb.defView = 0, 0, 0, 0
	mb.routes, mb.routeView = [nRoutes]uint32{}, [nRoutes]uint32{}
	mb.txBuf = [63]uint32{}
	mb.txLen, mb.txWritten, mb.txResult, mb.txCount, mb.txRejects = 0, 0, 0, 0, 0
	mb.rxQ, mb.rxDropped, mb.rawRejected = nil, 0, 0
	mb.cForwarded, mb.cNoRoute, mb.cTTL, mb.cBad, mb.cReqs, mb.cAssignIgnored, mb.cRelayed, mb.cDiscovers = 0, 0, 0, 0, 0, 0, 0, 0
	mb.pmosCount, mb.reqCount = 0, 0
	for _, p := range mb.ports {
		p.hwReset()
	}
}

// fwStop ends the running firmware: whatever it held is lost.
func (mb *mgmtBoard) fwStop() {
	if mb.fw == fwUp {
		mb.hbBase = mb.heartbeat()
	}
	mb.fwEpoch++
	mb.pending = 0
	mb.busyUntil = mb.f.now
	mb.rxQ = nil
	mb.txLen, mb.txWritten = 0, 0
	mb.cache = nil
	for _, p := range mb.ports {
		p.pmosReset(true)
	}
}

// fwStart: the firmware finished booting. It re-applies its boot defaults
// to the settings it owns — and only to them: it never touches what carries
// traffic (addresses, routing tables, port modes, the TimeSync tree), §4.3.
func (mb *mgmtBoard) fwStart() {
	f := mb.f
	mb.fw = fwUp
	mb.fwUpAt = f.now
	mb.boots++
	mb.fwEpoch++
	mb.proxyCtrl = proxyDefault
	mb.discoverUS = defaultDiscoverUS
	mb.routeView, mb.defView = [nRoutes]uint32{}, 0
	mb.tsFirmwareDefaults()
	for _, p := range mb.ports {
		p.pmosReset(true)
	}
	mb.armDiscover(true)
}

// nsfReboot restarts the firmware while the hardware keeps forwarding
// (§4.3 "Non-Stop Forwarding").
// The console plays its boot log again unless the reboot came from it.
func (mb *mgmtBoard) nsfReboot(why string, showOnConsole bool) {
	if mb.fw != fwUp {
		return
	}
	mb.f.rack.log.Info("management firmware reboot (non-stop forwarding)", "board", mb.b.cfg.Name, "why", why)
	if showOnConsole {
		mb.b.consoleRebooted()
	}
	mb.fwStop()
	mb.fw = fwRebooting
	epoch := mb.fwEpoch
	mb.f.at(mb.f.now+fwRebootPS, func() {
		if epoch == mb.fwEpoch {
			mb.fwStart()
		}
	})
}

// crash: the firmware dies (mgmt-proxy-dies). Only a power cycle brings it
// back.
func (mb *mgmtBoard) crash() {
	if mb.fw != fwUp {
		return
	}
	mb.f.rack.log.Info("management firmware crashed (fault mgmt-proxy-dies)", "board", mb.b.cfg.Name, "pmos_packets", mb.pmosCount)
	mb.fwStop()
	mb.fw = fwHalted
	mb.crashAt = mb.f.now
	mb.crashed.Store(true)
}

// heartbeat is FW_HEARTBEAT: one count per heartbeatPS while the firmware
// runs, frozen otherwise.
func (mb *mgmtBoard) heartbeat() uint32 {
	if mb.fw != fwUp {
		return mb.hbBase
	}
	return mb.hbBase + uint32((mb.f.now-mb.fwUpAt)/heartbeatPS)
}

// fwStateReg is what FW_STATE.STATE reads: the hardware's view. A crashed
// firmware still looks up until the watchdog sees its heartbeat stop.
func (mb *mgmtBoard) fwStateReg() uint32 {
	if mb.fw == fwHalted && mb.f.now-mb.crashAt < watchdogPS {
		return fwUp
	}
	return uint32(mb.fw)
}

// countPMOS counts PMOS data frames the firmware sent or received anew, for
// mgmt-proxy-dies.
func (mb *mgmtBoard) countPMOS() {
	if mb.crashAfter <= 0 || mb.fw != fwUp {
		return
	}
	mb.pmosCount++
	if mb.pmosCount == mb.crashAfter {
		epoch := mb.fwEpoch
		mb.f.at(mb.f.now, func() {
			if epoch == mb.fwEpoch {
				mb.crash()
			}
		})
	}
}

// ---- discovery -------------------------------------------------------------

func (mb *mgmtBoard) armDiscover(first bool) {
	mb.discGen++
	if mb.fw != fwUp || mb.addr != 0 || mb.proxyCtrl&proxyDiscover == 0 {
		return
	}
	period := int64(max(mb.discoverUS, 10)) * psPerUS
	d := period
	if first {
		// spread the boards' first DISCOVERs over one period
		d = mb.rng.Int64N(period) + 1
	}
	gen, epoch := mb.discGen, mb.fwEpoch
	mb.f.at(mb.f.now+d, func() {
		if gen != mb.discGen || epoch != mb.fwEpoch {
			return
		}
		mb.sendDiscovers()
		mb.armDiscover(false)
	})
}

// sendDiscovers puts a DISCOVER on every cabled port the firmware runs,
// unless one is still waiting there.
func (mb *mgmtBoard) sendDiscovers() {
	for _, p := range mb.ports {
		if !p.cabled() || p.mode != modeFirmware || p.pmosBacklog() > 0 {
			continue
		}
		m := appendHeader(make([]byte, 0, 64), msgHeader{Type: msgDiscover, TTL: 1, Dst: addrLinkLocal, Src: addrNone, Tag: uint16(mb.boots)})
		m = appendDiscover(m, discoverBody{DNA: mb.dna, Port: uint8(p.idx), NPorts: uint8(len(mb.ports)), Boots: uint16(mb.boots), Name: mb.b.cfg.Name})
		if p.pmosSend(m) == nil {
			mb.cDiscovers++
		}
	}
}

// ---- the firmware's input ------------------------------------------------

// fwAccept says whether the firmware can take one more message.
func (mb *mgmtBoard) fwAccept() bool { return mb.fw == fwUp && mb.pending < fwQueueMax }

// fwInput queues a message for the firmware; port is where it came from,
// -1 for the runner's mailbox.
func (mb *mgmtBoard) fwInput(port int, msg []byte) {
	f := mb.f
	m := append([]byte(nil), msg...)
	mb.pending++
	t := max(f.now, mb.busyUntil) + fwMsgPS
	mb.busyUntil = t
	epoch := mb.fwEpoch
	f.at(t, func() {
		if epoch != mb.fwEpoch {
			return // the firmware restarted: the message was lost with it
		}
		mb.pending--
		mb.handle(port, m)
	})
}

// handle is the firmware's message loop body.
func (mb *mgmtBoard) handle(arr int, m []byte) {
	if arr >= 0 && mb.ports[arr].mode == modePacket {
		mb.toMailbox(arr, m)
		return
	}
	h, err := decodeHeader(m)
	if err != nil {
		mb.cBad++
		return
	}
	local := h.Dst == addrLinkLocal || (mb.addr != addrNone && h.Dst == mb.addr)
	if !local {
		mb.forward(arr, h, m)
		return
	}
	body := m[msgHeaderLen:]
	switch h.Type {
	case msgDiscover:
		mb.onDiscover(arr, h, m)
	case msgAssign:
		mb.onAssign(arr, h, body)
	case msgSend:
		mb.onSend(arr, h, body)
	case msgRegReq:
		mb.onRegReq(arr, h, body)
	case msgEchoReq:
		r := appendHeader(make([]byte, 0, len(m)), msgHeader{Type: msgEchoReply, TTL: defaultTTL, Dst: h.Src, Src: mb.addr, Tag: h.Tag})
		mb.reply(arr, h, append(r, body...))
	default:
		mb.toMailbox(arr, m)
	}
}

// forward passes on a message for another address.
func (mb *mgmtBoard) forward(arr int, h msgHeader, m []byte) {
	if arr >= 0 {
		if h.TTL <= 1 {
			mb.cTTL++
			mb.sendError(arr, errTTL, h)
			return
		}
		m[1]--
		mb.cForwarded++
	}
	mb.route(arr, h, m)
}

// lookup finds the port for a destination: the first valid ROUTE entry
// for it, else DEFAULT_ROUTE.
func (mb *mgmtBoard) lookup(dst uint16) (int, bool) {
	for _, e := range mb.routes {
		if e&routeValid != 0 && uint16(e) == dst {
			return int(e>>16) & 0xF, true
		}
	}
	if mb.defRoute&routeValid != 0 {
		return int(mb.defRoute>>16) & 0xF, true
	}
	return 0, false
}

// route sends m on by the routing table (LOCAL: the mailbox). Failures are
// reported to the source with an ERROR.
func (mb *mgmtBoard) route(arr int, h msgHeader, m []byte) {
	port, ok := mb.lookup(h.Dst)
	if !ok {
		mb.cNoRoute++
		mb.sendError(arr, errNoRoute, h)
		return
	}
	if port == routeLocal {
		mb.toMailbox(arr, m)
		return
	}
	mb.sendOn(arr, port, h, m)
}

// sendOn hands m to a port's PMOS sender.
func (mb *mgmtBoard) sendOn(arr, port int, h msgHeader, m []byte) {
	if port >= len(mb.ports) || !mb.ports[port].cabled() || mb.ports[port].mode == modeRaw {
		mb.sendError(arr, errPortDown, h)
		return
	}
	if err := mb.ports[port].pmosSend(m); err != nil {
		code := uint8(errMalformed)
		if errors.Is(err, errPMOSQueueFull) {
			code = errQueueFull
		}
		mb.sendError(arr, code, h)
	}
}

// reply sends the answer to a request h that arrived on port arr: out the
// same port for a link-local request (the asker may have no route yet),
// else by the routing table.
func (mb *mgmtBoard) reply(arr int, h msgHeader, r []byte) {
	if h.Dst == addrLinkLocal {
		if arr < 0 {
			mb.toMailbox(arr, r)
			return
		}
		rh, _ := decodeHeader(r)
		mb.sendOn(-1, arr, rh, r)
		return
	}
	rh, _ := decodeHeader(r)
	mb.route(-1, rh, r)
}

// sendError reports a failure about message h to its source, unless h is
// itself an ERROR or has no source to report to.
func (mb *mgmtBoard) sendError(arr int, code uint8, h msgHeader) {
	if h.Type == msgError || h.Src == addrNone {
		return
	}
	e := appendHeader(make([]byte, 0, 20), msgHeader{Type: msgError, TTL: defaultTTL, Dst: h.Src, Src: mb.addr, Tag: h.Tag})
	e = appendErrorBody(e, code, h, mb.addr)
	eh, _ := decodeHeader(e)
	if h.Src == mb.addr {
		// This board is the source (the runner sent it from here, or the
		// firmware answered): the report goes to the mailbox.
		mb.toMailbox(-1, e)
		return
	}
	if h.Dst == addrLinkLocal && arr >= 0 {
		mb.sendOn(-1, arr, eh, e)
		return
	}
	mb.route(-1, eh, e)
}

// pmosLost: a port gave up on messages. Those that came from elsewhere
// are reported to their sources.
func (mb *mgmtBoard) pmosLost(p *mgmtPort, lost [][]byte) {
	if p.mode != modeFirmware {
		return
	}
	for _, m := range lost {
		h, err := decodeHeader(m)
		if err != nil {
			continue
		}
		hh := h
		epoch := mb.fwEpoch
		mb.f.at(mb.f.now, func() {
			if epoch == mb.fwEpoch {
				mb.sendError(-1, errPortDown, hh)
			}
		})
	}
}

func (mb *mgmtBoard) toMailbox(arr int, m []byte) {
	if len(mb.rxQ) >= mboxRxMax {
		mb.rxDropped++
		return
	}
	port := uint8(routeLocal)
	if arr >= 0 {
		port = uint8(arr)
	}
	mb.rxQ = append(mb.rxQ, mboxMsg{port: port, data: append([]byte(nil), m...)})
}

// ---- requests served by the firmware ------------------------------------

func (mb *mgmtBoard) onDiscover(arr int, h msgHeader, m []byte) {
	if arr < 0 || mb.proxyCtrl&proxyRelay == 0 {
		return // not a proxy: DISCOVERs are heard and dropped
	}
	if _, err := decodeDiscover(m[msgHeaderLen:]); err != nil {
		mb.cBad++
		return
	}
	r := appendHeader(make([]byte, 0, msgHeaderLen+2+len(m)), msgHeader{Type: msgRelay, TTL: defaultTTL, Dst: addrController, Src: mb.addr, Tag: h.Tag})
	r = append(r, uint8(arr), 0)
	r = append(r, m...)
	mb.cRelayed++
	rh, _ := decodeHeader(r)
	mb.route(-1, rh, r)
}

func (mb *mgmtBoard) onAssign(arr int, h msgHeader, body []byte) {
	if len(body) != 6 {
		mb.cBad++
		mb.sendError(arr, errMalformed, h)
		return
	}
	dna, a := binary.BigEndian.Uint32(body), binary.BigEndian.Uint16(body[4:])
	if dna != mb.dna {
		mb.cAssignIgnored++
		return
	}
	if a == addrNone || a >= addrController {
		mb.sendError(arr, errMalformed, h)
		return
	}
	mb.addr = a
	mb.armDiscover(false) // stops: the board has an address
	r := appendHeader(make([]byte, 0, 16), msgHeader{Type: msgAssigned, TTL: defaultTTL, Dst: h.Src, Src: a, Tag: h.Tag})
	r = binary.BigEndian.AppendUint32(r, mb.dna)
	r = binary.BigEndian.AppendUint16(r, a)
	port := uint8(0xFF)
	if arr >= 0 {
		port = uint8(arr)
	}
	mb.reply(arr, h, append(r, port))
}

func (mb *mgmtBoard) onSend(arr int, h msgHeader, body []byte) {
	if len(body) < 3 {
		mb.cBad++
		mb.sendError(arr, errMalformed, h)
		return
	}
	port, inner := int(body[0]), body[2:]
	if port >= len(mb.ports) || !mb.ports[port].cabled() || mb.ports[port].mode == modeRaw {
		mb.sendError(arr, errPortDown, h)
		return
	}
	if err := mb.ports[port].pmosSend(inner); err != nil {
		code := uint8(errMalformed)
		if errors.Is(err, errPMOSQueueFull) {
			code = errQueueFull
		}
		mb.sendError(arr, code, h)
	}
}

// onRegReq executes a remote register request on this board: the
// management window by the firmware itself, anything else on the design.
// Execution stops at the first operation that fails. A request repeated
// with the same source, tag and body gets the remembered answer: executing
// it again could pop a FIFO twice.
func (mb *mgmtBoard) onRegReq(arr int, h msgHeader, body []byte) {
	mb.reqCount++
	if mb.rebootAfter > 0 && mb.reqCount == mb.rebootAfter {
		// mgmt-nsf-reboot: the firmware restarts on this request, which is
		// lost with everything else it held.
		mb.nsfReboot("fault mgmt-nsf-reboot", true)
		return
	}
	crc := crc16(body)
	for _, c := range mb.cache {
		if c.src == h.Src && c.tag == h.Tag && c.crc == crc {
			mb.reply(arr, h, c.resp)
			return
		}
	}
	ops, err := decodeRegReq(body, nil)
	if err != nil {
		mb.cBad++
		mb.sendError(arr, errMalformed, h)
		return
	}
	mb.cReqs++
	r := appendHeader(make([]byte, 0, msgHeaderLen+2+len(ops)*regResLen), msgHeader{Type: msgRegResp, TTL: defaultTTL, Dst: h.Src, Src: mb.addr, Tag: h.Tag})
	r = append(r, uint8(len(ops)), 0)
	failed, executed, reboot := false, 0, false
	var stall int64
	for _, op := range ops {
		st, v := uint8(regNotExecuted), uint32(0)
		if !failed {
			executed++
			switch op.Op {
			case regOpRead:
				v, st = mb.localAccess(false, op.Addr, 0)
			case regOpWrite:
				_, st = mb.localAccess(true, op.Addr, op.Value)
				reboot = reboot || (st == regOK && op.Addr == MgmtBase+regFwCtrl && op.Value&1 != 0)
				if st == regOK && op.Addr == MgmtBase+regDelayUS {
					// the firmware stalls; the rack's clock is not its to move
					stall += int64(min(op.Value, maxDelayUS)) * psPerUS
				}
			default:
				st = regBadOp
			}
			failed = st != regOK
		}
		r = append(r, st)
		r = binary.BigEndian.AppendUint32(r, v)
	}
	if len(mb.cache) >= regCacheSize {
		mb.cache = mb.cache[1:]
	}
	mb.cache = append(mb.cache, regCacheEntry{src: h.Src, tag: h.Tag, crc: crc, resp: r})
	// The operations take time: the answer leaves when they are done.
	cost := int64(executed)*fwOpPS + stall
	mb.busyUntil = max(mb.busyUntil, mb.f.now) + cost
	epoch := mb.fwEpoch
	mb.f.at(mb.f.now+cost, func() {
		if epoch != mb.fwEpoch {
			return
		}
		mb.reply(arr, h, r)
		if reboot {
			// FW_CTRL.REBOOT written remotely: reboot once the answer is out.
			mb.f.at(mb.f.now+10*psPerUS, func() {
				if epoch == mb.fwEpoch {
					mb.nsfReboot("FW_CTRL.REBOOT written over PMOS", true)
				}
			})
		}
	})
}

// localAccess is one register access by the firmware on its own board.
func (mb *mgmtBoard) localAccess(write bool, addr, v uint32) (uint32, uint8) {
	if addr%4 != 0 {
		return 0, regAlign
	}
	var err error
	switch {
	case addr >= MgmtBase && write:
		if off := addr - MgmtBase; off == regFwCtrl || off == regDelayUS {
			return 0, regOK // acted on by onRegReq: a reboot after the answer, a stall before it
		}
		err = mb.regWrite(addr-MgmtBase, v)
	case addr >= MgmtBase:
		v, err = mb.regRead(addr - MgmtBase)
	case write:
		err = mb.b.designWrite32(addr, v)
	default:
		v, err = mb.b.designRead32(addr)
	}
	if err != nil {
		return 0, busStatus(err)
	}
	return v, regOK
}
