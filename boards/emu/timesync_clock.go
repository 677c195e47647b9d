package emu

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// TimeSync (Aquila, NSDI 2022, Appendix B): every board keeps the current
// time by counting cycles of its core clock, which runs off by its
// oscillator's error (Board.ClockPPM) from its power-on offset
// (Board.OffsetNS). The software builds a time-distribution tree: the
// primary sends TimeSync ordered sets on its configured ports every interval
// (B.2: "typically, about 100us"); a client receives on one configured
// port only, adds the configured channel delay and its fixed on-chip delay,
// checks the message's status bits and its distance from the current time
// against a threshold, loads the time when the message is valid, and sends
// an update downstream at once. An ordered set waits up to 128 ns for a gap
// between cells and the wait is counted into the time it carries (B.2). The
// channel delay is measured per port in a latency-measurement mode where the
// neighbours reflect special ordered sets (B.2). Enough invalid messages
// make the client signal a failure; the protocol leaves the reaction to
// software (B.2): re-rooting is the runner's (docs/mgmt.md, "TimeSync").

const (
	// tsClockKHz: the TimeSync counter's clock. B.2 gives the accuracy of
	// the transmitted time as +/- 2.5 ns, one cycle of a 400 MHz clock.
	tsClockKHz = 400_000
	tsCycleNS  = 2.5
	// tsMaxWaitCycles: an ordered set waits at most 128 ns for a gap
	// between cells (B.2): 0..51 cycles of 2.5 ns.
	tsMaxWaitCycles = 51
	// tsTxPipeCycles, tsRxPipeCycles: flight across the chip from the
	// clock to the wire and from the wire to the clock. The sender counts
	// its side into the time; the receiver adds its own (B.2: "it adjusts
	// for any on-chip delays").
	tsTxPipeCycles = 8
	tsRxPipeCycles = 6
	// Defaults after power-on.
	tsDefaultIntervalNS = 100_000 // B.2
	tsDefaultThreshold  = 100     // ns; "a configurable threshold" (B.2)
	tsDefaultFailLimit  = 4
	// Latency measurement: probes per measurement, the reflecting port's
	// fixed turnaround (subtracted by the hardware), and how long a port
	// waits for an echo before it reports an error.
	latSamples          = 16
	latTurnaroundCycles = 10
	latTimeoutPS        = 10 * psPerUS
	tsTimeUnitsPerNS    = 8 // the ordered set carries time in 1/8 ns
	tsTimeBits          = 48
	tsRoleOff           = 0
	tsRolePrimary       = 1
	tsRoleClient        = 2
	tsStatusPrimary     = 0x80 // status bits carried by the ordered set
	tsStatusLocked      = 0x40
	tsStatusDepthMask   = 0x0F
)

// tsState is one board's TimeSync block.
type tsState struct {
	// The counter: local(t) = base + cycles since tb, in ns.
	base float64
	tb   int64
	rate float64 // 1 + ppm*1e-6

	role        uint32
	rxPort      int
	txPorts     uint32
	intervalNS  uint32
	compPS      uint32
	thresholdNS uint32
	failLimit   uint32

	locked, failed                                         bool
	depth                                                  uint8
	lastCorrPS                                             float64
	maxCorrPS                                              float64
	rxValid, rxInvalid, missed, txCount, failures, rxOther uint32
	invalidRun                                             uint32
	waitMaxPS                                              int64

	txGen, wdGen uint64
	deadAt       int64 // tsync-dead: the transmitter stops at this time; -1 never
	rng          *rand.Rand
	cyclesHi     uint32 // latched by CYCLES_LO
	timeHi       uint32 // latched by TS_TIME_LO
}

// latState is one port's latency measurement.
type latState struct {
	busy, done, fail bool
	delayPS, rttPS   uint32
	gen              uint64
}

func (mb *mgmtBoard) tsInit() {
	mb.ts = tsState{deadAt: -1, rng: mb.b.Rand("timesync"), rate: 1 + mb.b.ClockPPM()*1e-6}
}

// tsPowerOn: the counter starts at the board's power-on offset; the block
// is in its reset state.
func (mb *mgmtBoard) tsPowerOn() {
	ts := &mb.ts
	dead, rng, rate := ts.deadAt, ts.rng, ts.rate
	*ts = tsState{deadAt: dead, rng: rng, rate: rate, base: mb.b.OffsetNS(), tb: mb.f.now,
		intervalNS: tsDefaultIntervalNS, thresholdNS: tsDefaultThreshold, failLimit: tsDefaultFailLimit}
}

func (mb *mgmtBoard) tsPowerOff() {
	mb.ts.txGen++
	mb.ts.wdGen++
	mb.ts.role = tsRoleOff
}

// tsFirmwareDefaults: the firmware writes its boot defaults into the
// settings it owns (docs/mgmt.md, "Non-stop forwarding reboot").
func (mb *mgmtBoard) tsFirmwareDefaults() {
	mb.ts.thresholdNS = tsDefaultThreshold
	mb.ts.failLimit = tsDefaultFailLimit
}

// localNS is the continuous value of the board's time at true time t (ps).
func (mb *mgmtBoard) localNS(t int64) float64 {
	return mb.ts.base + float64(t-mb.ts.tb)/psPerNS*mb.ts.rate
}

// counterNS is what the counter holds at t: whole cycles since it was
// last loaded.
func (mb *mgmtBoard) counterNS(t int64) float64 {
	el := float64(t-mb.ts.tb) / psPerNS * mb.ts.rate
	return mb.ts.base + math.Floor(el/tsCycleNS)*tsCycleNS
}

// cycles counts the core clock since power-on, never stepped.
func (mb *mgmtBoard) cycles() uint64 {
	el := float64(mb.f.now-mb.pwrOnAt) / psPerNS * mb.ts.rate
	return uint64(el / tsCycleNS)
}

// localToTruePS converts a duration of local time to true picoseconds.
func (mb *mgmtBoard) localToTruePS(ns float64) int64 { return psOfNS(ns / mb.ts.rate) }

// ---- sending ---------------------------------------------------------------

// tsArmInterval (re)starts the interval timer: the next send is one
// interval of local time from now.
func (mb *mgmtBoard) tsArmInterval() {
	ts := &mb.ts
	ts.txGen++
	if ts.role == tsRoleOff || ts.txPorts == 0 {
		return
	}
	gen, epoch := ts.txGen, mb.hwEpoch
	mb.f.at(mb.f.now+mb.localToTruePS(float64(ts.intervalNS)), func() {
		if gen != mb.ts.txGen || epoch != mb.hwEpoch {
			return
		}
		mb.tsSend()
	})
}

// tsSend puts a TimeSync ordered set on every configured port and restarts
// the interval.
func (mb *mgmtBoard) tsSend() {
	ts := &mb.ts
	defer mb.tsArmInterval()
	if ts.deadAt >= 0 && mb.f.now >= ts.deadAt {
		// tsync-dead: the transmitter is dead, the logic above it is not:
		// TS_TX_COUNT keeps counting the attempts (the fault's
		// documentation), while nothing reaches the wire.
		for i, p := range mb.ports {
			if ts.txPorts&(1<<uint(i)) != 0 && p.peer != nil {
				ts.txCount++
			}
		}
		return
	}
	status := uint8(0)
	switch {
	case ts.role == tsRolePrimary:
		status = tsStatusPrimary | tsStatusLocked
	case ts.locked:
		status = tsStatusLocked | min(ts.depth, tsStatusDepthMask)
	default:
		status = min(ts.depth, tsStatusDepthMask)
	}
	now := mb.f.now
	c0 := mb.counterNS(now)
	for i, p := range mb.ports {
		if ts.txPorts&(1<<uint(i)) == 0 || p.peer == nil {
			continue
		}
		// Wait for a gap between cells, counting every cycle of the wait
		// and of the flight to the wire into the time sent.
		w := ts.rng.IntN(tsMaxWaitCycles + 1)
		cyc := float64(w+tsTxPipeCycles) * tsCycleNS
		carried := c0 + cyc
		waitPS := mb.localToTruePS(float64(w) * tsCycleNS)
		ts.waitMaxPS = max(ts.waitMaxPS, waitPS)
		word := encodeTS(status, carried)
		ts.txCount++
		peer := p.peer
		pp := p
		mb.f.at(now+mb.localToTruePS(cyc), func() {
			pp.wire(word, false, func(x uint64) {
				// the receiver's on-chip delay to its clock
				pm := peer.mb
				pm.f.at(pm.f.now+pm.localToTruePS(tsRxPipeCycles*tsCycleNS), func() { pm.tsReceive(peer, x) })
			})
		})
	}
}

// encodeTS builds the ordered set: type, status, and the time in 1/8 ns,
// modulo 2^48.
func encodeTS(status uint8, ns float64) uint64 {
	u := uint64(int64(math.Round(ns*tsTimeUnitsPerNS))) & (1<<tsTimeBits - 1)
	return uint64(osTS)<<56 | uint64(status)<<48 | u
}

// decodeTS returns the status and the time nearest ref (ns) that matches
// the 48 bits carried.
func decodeTS(x uint64, ref float64) (uint8, float64) {
	status := uint8(x >> 48)
	u := int64(x & (1<<tsTimeBits - 1))
	r := int64(math.Round(ref * tsTimeUnitsPerNS))
	const m = int64(1) << tsTimeBits
	d := (u - r) % m
	if d < 0 {
		d += m
	}
	if d >= m/2 {
		d -= m
	}
	return status, float64(r+d) / tsTimeUnitsPerNS
}

// ---- receiving -------------------------------------------------------------

// tsReceive handles a TimeSync ordered set that reached the clock.
func (mb *mgmtBoard) tsReceive(p *mgmtPort, x uint64) {
	ts := &mb.ts
	if !mb.powered || byte(x>>56) != osTS || ts.role != tsRoleClient {
		return
	}
	if p.idx != ts.rxPort {
		ts.rxOther++
		return
	}
	now := mb.f.now
	cur := mb.counterNS(now)
	status, carried := decodeTS(x, cur)
	incoming := carried + float64(ts.compPS)/psPerNS + tsRxPipeCycles*tsCycleNS
	corr := incoming - cur
	valid := status&(tsStatusPrimary|tsStatusLocked) != 0
	if valid && ts.locked && math.Abs(corr) > float64(ts.thresholdNS) {
		valid = false
	}
	mb.tsArmWatchdog()
	if !valid {
		ts.rxInvalid++
		mb.tsInvalid()
		return
	}
	ts.rxValid++
	ts.invalidRun = 0
	if ts.locked {
		ts.maxCorrPS = max(ts.maxCorrPS, math.Abs(corr)*psPerNS)
	}
	ts.lastCorrPS = corr * psPerNS
	ts.base, ts.tb = incoming, now
	ts.locked = true
	ts.depth = status&tsStatusDepthMask + 1
	if status&tsStatusPrimary != 0 {
		ts.depth = 1
	}
	// A client passes the update downstream at once (B.2).
	if ts.txPorts != 0 {
		mb.tsSend()
	}
}

// tsInvalid counts one invalid (or missing) message toward a failure.
func (mb *mgmtBoard) tsInvalid() {
	ts := &mb.ts
	ts.invalidRun++
	if ts.invalidRun >= max(ts.failLimit, 1) {
		if !ts.failed {
			ts.failures++
		}
		ts.failed = true
		ts.locked = false
		ts.invalidRun = 0
	}
}

// tsArmWatchdog: a client that hears nothing for two intervals counts a
// missing message, and one more every interval after that. A dead primary
// sends nothing at all, so without this it would never be noticed (B.2
// counts invalid messages; counting missing ones is this emulator's
// reading of "signals that a failure is detected").
func (mb *mgmtBoard) tsArmWatchdog() {
	ts := &mb.ts
	ts.wdGen++
	if ts.role != tsRoleClient {
		return
	}
	mb.tsWatchdogAt(2)
}

func (mb *mgmtBoard) tsWatchdogAt(intervals int) {
	ts := &mb.ts
	gen, epoch := ts.wdGen, mb.hwEpoch
	mb.f.at(mb.f.now+mb.localToTruePS(float64(intervals)*float64(ts.intervalNS)), func() {
		if gen != mb.ts.wdGen || epoch != mb.hwEpoch || mb.ts.role != tsRoleClient {
			return
		}
		mb.ts.missed++
		mb.tsInvalid()
		mb.tsWatchdogAt(1)
	})
}

// ---- registers -------------------------------------------------------------

func (mb *mgmtBoard) tsRead(off uint32) (uint32, error) {
	ts := &mb.ts
	switch off {
	case tsCtrl:
		return ts.role | uint32(ts.rxPort)<<8, nil
	case tsTxPorts:
		return ts.txPorts, nil
	case tsInterval:
		return ts.intervalNS, nil
	case tsDelayComp:
		return ts.compPS, nil
	case tsThreshold:
		return ts.thresholdNS, nil
	case tsFailLimit:
		return ts.failLimit, nil
	case tsStatus:
		var s uint32
		if ts.locked || ts.role == tsRolePrimary {
			s |= 1
		}
		if ts.failed {
			s |= 2
		}
		if ts.role == tsRolePrimary {
			s |= 4
		}
		d := ts.depth
		if ts.role == tsRolePrimary {
			d = 0
		}
		return s | uint32(d)<<8, nil
	case tsLastCorr:
		return satPS(ts.lastCorrPS), nil
	case tsMaxCorr:
		return satPS(ts.maxCorrPS), nil
	case tsRxValid:
		return ts.rxValid, nil
	case tsRxInvalid:
		return ts.rxInvalid, nil
	case tsMissed:
		return ts.missed, nil
	case tsTxCount:
		return ts.txCount, nil
	case tsFailures:
		return ts.failures, nil
	case tsRxOther:
		return ts.rxOther, nil
	case tsClear:
		return 0, nil
	case tsTimeLo:
		v := uint64(int64(math.Floor(mb.counterNS(mb.f.now))))
		ts.timeHi = uint32(v >> 32)
		return uint32(v), nil
	case tsTimeHi:
		return ts.timeHi, nil
	case tsWaitMax:
		return uint32(min(ts.waitMaxPS, math.MaxUint32)), nil
	}
	return 0, fmt.Errorf("%w: 0x%08x is not a register of the management block", ErrBusError, MgmtBase+regTSBase+off)
}

func (mb *mgmtBoard) tsWrite(off, v uint32) error {
	ts := &mb.ts
	switch off {
	case tsCtrl:
		role, rx := v&3, int(v>>8)&0xF
		if role > tsRoleClient {
			role = tsRoleOff
		}
		if role != ts.role || rx != ts.rxPort {
			ts.role, ts.rxPort = role, rx
			ts.locked, ts.invalidRun, ts.depth = false, 0, 0
			mb.tsArmInterval()
			mb.tsArmWatchdog()
		}
		return nil
	case tsTxPorts:
		ts.txPorts = v & (1<<maxPorts - 1)
		mb.tsArmInterval()
		return nil
	case tsInterval:
		ts.intervalNS = min(max(v, 1000), 100_000_000)
		mb.tsArmInterval()
		mb.tsArmWatchdog()
		return nil
	case tsDelayComp:
		ts.compPS = v
		return nil
	case tsThreshold:
		ts.thresholdNS = v
		return nil
	case tsFailLimit:
		ts.failLimit = max(v, 1)
		return nil
	case tsStatus:
		if v&2 != 0 {
			ts.failed = false
		}
		return nil
	case tsClear:
		if v&1 != 0 {
			ts.maxCorrPS, ts.lastCorrPS = 0, 0
			ts.rxValid, ts.rxInvalid, ts.missed, ts.txCount, ts.failures, ts.rxOther = 0, 0, 0, 0, 0, 0
			ts.waitMaxPS = 0
		}
		return nil
	case tsLastCorr, tsMaxCorr, tsRxValid, tsRxInvalid, tsMissed, tsTxCount, tsFailures, tsRxOther, tsTimeLo, tsTimeHi, tsWaitMax:
		return ErrReadOnly
	}
	return fmt.Errorf("%w: 0x%08x is not a register of the management block", ErrBusError, MgmtBase+regTSBase+off)
}

// ---- latency measurement ---------------------------------------------------

func (mb *mgmtBoard) latRead(i int, off uint32) (uint32, error) {
	if i >= len(mb.ports) {
		return 0, nil
	}
	l := &mb.ports[i].lat
	switch off {
	case 0x0:
		return 0, nil // LAT_CTRL is write-only
	case 0x4:
		var s uint32
		if l.busy {
			s |= 1
		}
		if l.done {
			s |= 2
		}
		if l.fail {
			s |= 4
		}
		if l.done {
			s |= latSamples << 8
		}
		return s, nil
	case 0x8:
		return l.delayPS, nil
	case 0xC:
		return l.rttPS, nil
	}
	return 0, fmt.Errorf("%w: 0x%08x is not a register of the management block", ErrBusError, MgmtBase+regLatBase+uint32(i)*latStride+off)
}

func (mb *mgmtBoard) latWrite(i int, off, v uint32) error {
	if off != 0 {
		if off < latStride {
			return ErrReadOnly
		}
		return fmt.Errorf("%w: 0x%08x is not a register of the management block", ErrBusError, MgmtBase+regLatBase+uint32(i)*latStride+off)
	}
	if i >= len(mb.ports) || v&1 == 0 || mb.ports[i].lat.busy {
		return nil
	}
	mb.latStart(mb.ports[i])
	return nil
}

// latStart runs a latency measurement on port p: latSamples probes, each
// time-stamped by this board's counter when it leaves and when its
// reflection returns; the peer's port reflects it after a fixed turnaround
// that the hardware subtracts. The measured one-way delay is half the mean
// round trip, so an asymmetric cable shows up as half its asymmetry.
func (mb *mgmtBoard) latStart(p *mgmtPort) {
	l := &p.lat
	l.busy, l.done, l.fail = true, false, false
	l.gen++
	gen, epoch := l.gen, mb.hwEpoch
	f := mb.f
	finish := func(at int64, ok bool, delay, rtt float64) {
		f.at(at, func() {
			if gen != p.lat.gen || epoch != mb.hwEpoch {
				return
			}
			p.lat.busy = false
			p.lat.done, p.lat.fail = ok, !ok
			if ok {
				p.lat.delayPS = uint32(math.Round(delay * psPerNS))
				p.lat.rttPS = uint32(math.Round(rtt * psPerNS))
			}
		})
	}
	if p.peer == nil || !p.channelUp() || !p.peer.mb.powered || (p.peer.cutAt >= 0) && f.now >= p.peer.cutAt {
		finish(f.now+latTimeoutPS, false, 0, 0)
		return
	}
	q := p.peer
	out, back := p.delayPS(), q.delayPS()
	turn := q.mb.localToTruePS(latTurnaroundCycles * tsCycleNS)
	t := f.now
	var sum float64
	for range latSamples {
		t += mb.localToTruePS(float64(mb.ts.rng.IntN(tsMaxWaitCycles+1)) * tsCycleNS) // a gap between cells
		t1 := mb.counterNS(t)
		t4true := t + out + turn + back
		t4 := mb.counterNS(t4true)
		sum += t4 - t1 - latTurnaroundCycles*tsCycleNS
		t = t4true
	}
	rtt := sum / latSamples
	finish(t, true, rtt/2, rtt)
}

// ---- the truth, for tests ---------------------------------------------------

// TrueClockOffsetNS is the exact difference between two boards' TimeSync
// clocks at the current emulated instant (board minus ref), unquantised.
// It is a test oracle: real hardware has no such thing, so a runner must
// never use it; it reads TS_LAST_CORR_PS and TS_MAX_CORR_PS, the offsets the
// hardware measures (docs/mgmt.md, "TimeSync").
func (r *Rack) TrueClockOffsetNS(board, ref string) (float64, error) {
	if r.mg == nil {
		return 0, fmt.Errorf("the rack has no management plane")
	}
	a, okA := r.boards[board]
	b, okB := r.boards[ref]
	if !okA || !okB || a.mg == nil || b.mg == nil {
		return 0, fmt.Errorf("boards %s and %s: not both emulated in this rack", board, ref)
	}
	r.mg.mu.Lock()
	defer r.mg.mu.Unlock()
	now := r.mg.now
	return a.mg.localNS(now) - b.mg.localNS(now), nil
}
