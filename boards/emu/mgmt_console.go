package emu

import (
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Console commands of the management firmware, for a person at the bench
// (docs/mgmt.md, "Console"): mgmt, mos, pmos, tsync. They read the same
// state as the registers; `mgmt wait`, `pmos ping` and `tsync lat` let
// emulated time pass.

func (b *Board) registerMgmtConsole() {
	b.HandleConsole("mgmt", b.consoleMgmt)
	b.HandleConsole("mos", b.consoleMOS)
	b.HandleConsole("pmos", b.consolePMOS)
	b.HandleConsole("tsync", b.consoleTSync)
}

// withMgmt runs f under the fabric lock.
func (b *Board) withMgmt(f func(mb *mgmtBoard) string) string {
	mb := b.mg
	mb.f.mu.Lock()
	defer mb.f.mu.Unlock()
	if !mb.powered {
		return "mgmt: board is powered off\n"
	}
	return f(mb)
}

var fwStateNames = []string{"off", "booting", "up", "rebooting", "halted"}

var modeNames = []string{"firmware", "packet", "raw"}

func (mb *mgmtBoard) portArg(s string) (int, error) {
	for i, p := range mb.ports {
		if p.p.Name == s {
			return i, nil
		}
	}
	if i, err := strconv.Atoi(s); err == nil && i >= 0 && i < len(mb.ports) {
		return i, nil
	}
	var names []string
	for _, p := range mb.ports {
		names = append(names, p.p.Name)
	}
	return 0, fmt.Errorf("no port %q (ports: %s)", s, strings.Join(names, ", "))
}

func parseAddr(s string) (uint16, error) {
	if s == "controller" {
		return addrController, nil
	}
	v, err := strconv.ParseUint(s, 0, 16)
	if err != nil {
		return 0, fmt.Errorf("address %q is not a number from 0 to 0xFFFD (or \"controller\")", s)
	}
	return uint16(v), nil
}

func (mb *mgmtBoard) routePortName(e uint32) string {
	p := int(e>>16) & 0xF
	if p == routeLocal {
		return "local"
	}
	if p < len(mb.ports) {
		return mb.ports[p].p.Name
	}
	return fmt.Sprintf("port%d", p)
}

func (mb *mgmtBoard) routeTarget(s string) (uint32, error) {
	if s == "local" {
		return routeLocal << 16, nil
	}
	i, err := mb.portArg(s)
	return uint32(i) << 16, err
}

const mgmtUsage = "usage: mgmt [wait US | addr [ADDR] | relay on|off | route [add ADDR PORT|local | del ADDR | default PORT|local|none]]\n"

func (b *Board) consoleMgmt(args []string) string {
	return b.withMgmt(func(mb *mgmtBoard) string {
		if len(args) == 0 {
			return mb.summary()
		}
		switch args[0] {
		case "wait":
			us, err := strconv.ParseUint(strings.Join(args[1:], ""), 10, 32)
			if err != nil || us > maxDelayUS {
				return fmt.Sprintf("mgmt wait: give microseconds, at most %d\n", maxDelayUS)
			}
			mb.f.advance(mb.f.now + int64(us)*psPerUS)
			return fmt.Sprintf("time=%s\n", time.Duration(mb.f.now/psPerNS))
		case "addr":
			if len(args) == 1 {
				return fmt.Sprintf("addr=0x%04x\n", mb.addr)
			}
			a, err := parseAddr(args[1])
			if err != nil || a >= addrController {
				return "mgmt addr: give an address from 0 (none) to 0xFFFD\n"
			}
			mb.addr = a
			mb.armDiscover(false)
			return fmt.Sprintf("addr=0x%04x\n", a)
		case "relay":
			if err := mb.fwDown(); err != nil {
				return "mgmt relay: " + err.Error() + "\n"
			}
			if len(args) == 2 && args[1] == "on" {
				mb.proxyCtrl |= proxyRelay
			} else if len(args) == 2 && args[1] == "off" {
				mb.proxyCtrl &^= proxyRelay
			} else {
				return mgmtUsage
			}
			return fmt.Sprintf("proxy_ctrl=0x%x\n", mb.proxyCtrl)
		case "route":
			return mb.consoleRoute(args[1:])
		}
		return mgmtUsage
	})
}

func (mb *mgmtBoard) consoleRoute(args []string) string {
	if err := mb.fwDown(); err != nil {
		return "mgmt route: " + err.Error() + "\n"
	}
	if len(args) == 0 {
		var sb strings.Builder
		for i, e := range mb.routeView {
			if e&routeValid != 0 {
				fmt.Fprintf(&sb, "ROUTE[%d] 0x%04x -> %s\n", i, uint16(e), mb.routePortName(e))
			}
		}
		if mb.defView&routeValid != 0 {
			fmt.Fprintf(&sb, "default -> %s\n", mb.routePortName(mb.defView))
		}
		if sb.Len() == 0 {
			return "no routes\n"
		}
		return sb.String()
	}
	switch {
	case args[0] == "add" && len(args) == 3:
		a, err := parseAddr(args[1])
		if err != nil {
			return "mgmt route: " + err.Error() + "\n"
		}
		t, err := mb.routeTarget(args[2])
		if err != nil {
			return "mgmt route: " + err.Error() + "\n"
		}
		free := -1
		for i, e := range mb.routes {
			if e&routeValid != 0 && uint16(e) == a {
				free = i
				break
			}
			if e&routeValid == 0 && free < 0 {
				free = i
			}
		}
		if free < 0 {
			return "mgmt route: the table is full\n"
		}
		e := routeValid | t | uint32(a)
		mb.routes[free], mb.routeView[free] = e, e
		return fmt.Sprintf("ROUTE[%d] 0x%04x -> %s\n", free, a, mb.routePortName(e))
	case args[0] == "del" && len(args) == 2:
		a, err := parseAddr(args[1])
		if err != nil {
			return "mgmt route: " + err.Error() + "\n"
		}
		for i, e := range mb.routes {
			if e&routeValid != 0 && uint16(e) == a {
				mb.routes[i], mb.routeView[i] = 0, 0
				return fmt.Sprintf("ROUTE[%d] cleared\n", i)
			}
		}
		return fmt.Sprintf("mgmt route: no route for 0x%04x\n", a)
	case args[0] == "default" && len(args) == 2:
		if args[1] == "none" {
			mb.defRoute, mb.defView = 0, 0
			return "default route cleared\n"
		}
		t, err := mb.routeTarget(args[1])
		if err != nil {
			return "mgmt route: " + err.Error() + "\n"
		}
		mb.defRoute, mb.defView = routeValid|t, routeValid|t
		return fmt.Sprintf("default -> %s\n", mb.routePortName(mb.defRoute))
	}
	return mgmtUsage
}

func (mb *mgmtBoard) summary() string {
	var sb strings.Builder
	var flags []string
	if mb.fw == fwUp && mb.proxyCtrl&proxyRelay != 0 {
		flags = append(flags, "relay")
	}
	if mb.fw == fwUp && mb.proxyCtrl&proxyDiscover != 0 {
		flags = append(flags, "discover")
	}
	if len(flags) == 0 {
		flags = append(flags, "none")
	}
	fmt.Fprintf(&sb, "fw=%s boots=%d heartbeat=%d addr=0x%04x proxy=%s dna=0x%08x time=%s\n",
		fwStateNames[mb.fwStateReg()], mb.boots, mb.heartbeat(), mb.addr, strings.Join(flags, ","), mb.dna,
		time.Duration(mb.f.now/psPerNS))
	fmt.Fprintf(&sb, "messages: forwarded=%d no_route=%d ttl_expired=%d bad=%d reg_reqs=%d relayed=%d discovers=%d\n",
		mb.cForwarded, mb.cNoRoute, mb.cTTL, mb.cBad, mb.cReqs, mb.cRelayed, mb.cDiscovers)
	fmt.Fprintf(&sb, "mailbox: rx_queued=%d rx_dropped=%d tx_sent=%d tx_rejected=%d\n", len(mb.rxQ), mb.rxDropped, mb.txCount, mb.txRejects)
	for _, p := range mb.ports {
		fmt.Fprintf(&sb, "%s: mode=%s %s pmos tx=%d retx=%d rx=%d bad=%d giveups=%d backlog=%d\n", p.p.Name,
			modeNames[p.mode], p.linkWord(), p.pmosTxFrames, p.pmosRetx, p.pmosRxFrames, p.pmosRxBad, p.pmosGiveups, p.pmosBacklog())
	}
	return sb.String()
}

func (p *mgmtPort) linkWord() string {
	switch {
	case !p.cabled():
		return "uncabled"
	case p.channelUp() && p.peer.mb.powered:
		return "up"
	}
	return "down"
}

func (b *Board) consoleMOS(args []string) string {
	return b.withMgmt(func(mb *mgmtBoard) string {
		switch {
		case len(args) == 0:
			var sb strings.Builder
			fmt.Fprintf(&sb, "MOS: one word per %.3f us (%d blocks of %.2f ns), 6 data bytes a word\n",
				float64(mosPeriodPS)/psPerUS, mosEveryBlocks, float64(blockPS)/psPerNS)
			for _, p := range mb.ports {
				fmt.Fprintf(&sb, "%s: %s tx=%d rx=%d errors=%d raw_rx=%d raw_dropped=%d raw_tx=%d\n", p.p.Name, p.linkWord(),
					p.mosTx, p.mosRx, p.mosRxErr, len(p.rawRx), p.rawDropped, len(p.rawQ))
			}
			return sb.String()
		case args[0] == "send" && len(args) >= 3:
			i, err := mb.portArg(args[1])
			if err != nil {
				return "mos send: " + err.Error() + "\n"
			}
			data, err := hex.DecodeString(args[2])
			if err != nil || len(data) < 1 || len(data) > mosDataBytes {
				return "mos send: give 1 to 6 data bytes in hex, e.g. 48656c6c6f21\n"
			}
			f := mosFields{Ch: mosChRaw, N: len(data)}
			copy(f.Data[:], data)
			w := encodeMOS(f)
			p := mb.ports[i]
			before := len(p.rawQ)
			p.rawWrite(uint32(w >> 32))
			p.rawWrite(uint32(w))
			if len(p.rawQ) == before {
				return "mos send: the raw transmit FIFO is full\n"
			}
			return fmt.Sprintf("queued %016x on %s\n", uint64(w), p.p.Name)
		case args[0] == "recv" && len(args) == 2:
			i, err := mb.portArg(args[1])
			if err != nil {
				return "mos recv: " + err.Error() + "\n"
			}
			p := mb.ports[i]
			if len(p.rawRx) == 0 {
				return "no words\n"
			}
			var sb strings.Builder
			for _, w := range p.rawRx {
				f, err := decodeMOS(w)
				if err != nil {
					fmt.Fprintf(&sb, "%016x (%v)\n", uint64(w), err)
					continue
				}
				fmt.Fprintf(&sb, "%016x ch=%d data=%s\n", uint64(w), f.Ch, hex.EncodeToString(f.Data[:f.N]))
			}
			p.rawRx, p.rawRxLo = p.rawRx[:0], false
			return sb.String()
		}
		return "usage: mos [send PORT HEX | recv PORT]\n"
	})
}

func (b *Board) consolePMOS(args []string) string {
	return b.withMgmt(func(mb *mgmtBoard) string {
		switch {
		case len(args) == 0:
			var sb strings.Builder
			fmt.Fprintf(&sb, "PMOS: window %d, payload up to %d bytes, retransmit after %d us, give up after %d timeouts\n",
				pmosWindow, pmosMaxPayload, pmosRTOPS/psPerUS, pmosRetries)
			for _, p := range mb.ports {
				rx := "none"
				if p.rx.valid {
					rx = fmt.Sprintf("%d next=%d", p.rx.session, p.rx.expected)
				}
				fmt.Fprintf(&sb, "%s: tx_session=%d base=%d outstanding=%d queued=%d rx_session=%s frames tx=%d retx=%d rx=%d bad=%d resets=%d giveups=%d\n",
					p.p.Name, p.tx.session, p.tx.base, len(p.tx.out), len(p.tx.queue), rx, p.pmosTxFrames, p.pmosRetx,
					p.pmosRxFrames, p.pmosRxBad, p.pmosRsts, p.pmosGiveups)
			}
			return sb.String()
		case args[0] == "ping" && len(args) == 2:
			return mb.consolePing(args[1])
		}
		return "usage: pmos [ping ADDR]\n"
	})
}

// consolePing sends an ECHO_REQ from this board's firmware to an address
// over the management network and waits up to 20 ms of emulated time.
func (mb *mgmtBoard) consolePing(s string) string {
	if err := mb.fwDown(); err != nil {
		return "pmos ping: " + err.Error() + "\n"
	}
	dst, err := parseAddr(s)
	if err != nil {
		return "pmos ping: " + err.Error() + "\n"
	}
	if mb.addr == addrNone {
		return "pmos ping: this board has no address (MY_ADDR is 0)\n"
	}
	tag := uint16(mb.rng.Uint32())
	m := appendHeader(nil, msgHeader{Type: msgEchoReq, TTL: defaultTTL, Dst: dst, Src: mb.addr, Tag: tag})
	m = append(m, "console ping"...)
	start := mb.f.now
	mb.fwInput(-1, m)
	for deadline := start + 20*psPerMS; mb.f.now < deadline; {
		mb.f.advance(mb.f.now + 10*psPerUS)
		for i, r := range mb.rxQ {
			h, err := decodeHeader(r.data)
			if err != nil || h.Tag != tag || h.Dst != mb.addr {
				continue
			}
			mb.rxQ = append(mb.rxQ[:i], mb.rxQ[i+1:]...)
			if h.Type == msgError && len(r.data) >= msgHeaderLen+1 {
				return fmt.Sprintf("error from 0x%04x: code %d\n", h.Src, r.data[msgHeaderLen])
			}
			return fmt.Sprintf("reply from 0x%04x in %.1f us\n", h.Src, float64(mb.f.now-start)/psPerUS)
		}
	}
	return "no reply in 20 ms\n"
}

func (b *Board) consoleTSync(args []string) string {
	return b.withMgmt(func(mb *mgmtBoard) string {
		ts := &mb.ts
		switch {
		case len(args) == 0:
			roles := []string{"off", "primary", "client", "off"}
			var sb strings.Builder
			fmt.Fprintf(&sb, "role=%s rx_port=%d tx_ports=0x%x interval=%dns delay_comp=%dps threshold=%dns fail_limit=%d\n",
				roles[ts.role], ts.rxPort, ts.txPorts, ts.intervalNS, ts.compPS, ts.thresholdNS, ts.failLimit)
			fmt.Fprintf(&sb, "locked=%v failed=%v depth=%d last_corr=%.3fns max_corr=%.3fns valid=%d invalid=%d missed=%d sent=%d failures=%d\n",
				ts.locked || ts.role == tsRolePrimary, ts.failed, ts.depth, ts.lastCorrPS/psPerNS, ts.maxCorrPS/psPerNS,
				ts.rxValid, ts.rxInvalid, ts.missed, ts.txCount, ts.failures)
			fmt.Fprintf(&sb, "time=%.1fns clock_ppm=%g\n", mb.counterNS(mb.f.now), (ts.rate-1)*1e6)
			for _, p := range mb.ports {
				l := p.lat
				switch {
				case l.done:
					fmt.Fprintf(&sb, "%s: latency %.3f ns (round trip %.3f ns)\n", p.p.Name, float64(l.delayPS)/psPerNS, float64(l.rttPS)/psPerNS)
				case l.fail:
					fmt.Fprintf(&sb, "%s: latency measurement failed (no echo)\n", p.p.Name)
				}
			}
			return sb.String()
		case args[0] == "lat" && len(args) == 2:
			i, err := mb.portArg(args[1])
			if err != nil {
				return "tsync lat: " + err.Error() + "\n"
			}
			p := mb.ports[i]
			mb.latStart(p)
			for k := 0; p.lat.busy && k < 100; k++ {
				mb.f.advance(mb.f.now + 1*psPerUS)
			}
			if !p.lat.done {
				return fmt.Sprintf("%s: no echo (is the cable in and the neighbour on?)\n", p.p.Name)
			}
			return fmt.Sprintf("%s: latency %.3f ns (round trip %.3f ns, %d probes)\n", p.p.Name,
				float64(p.lat.delayPS)/psPerNS, float64(p.lat.rttPS)/psPerNS, latSamples)
		}
		return "usage: tsync [lat PORT]\n"
	})
}

// consoleBootLog is the boot log the console plays: the firmware's, cut
// short with a stall when the management firmware never boots.
func (b *Board) consoleBootLog() ([]logLine, bool) {
	log := b.bootLog()
	if stuck, _ := b.fwConsoleState(); !stuck {
		return log, false
	}
	cut, ts := len(log), 3.5
	for i, l := range log {
		if strings.HasPrefix(l.Text, "Run /") {
			cut, ts = i+1, l.TS
		}
	}
	log = append(log[:cut:cut],
		logLine{ts + 0.213, "lbfw-mgmtd: starting the management firmware (MOS/PMOS, TimeSync)"},
		logLine{ts + 21.004, "rcu: INFO: rcu_sched self-detected stall on CPU"},
		logLine{ts + 21.004, "rcu: \t0-....: (5250 ticks this GP) idle=8f4/1/0x4000000000000002 softirq=1502/1502 fqs=2518"},
		logLine{ts + 21.004, "task:lbfw-mgmtd     state:R  running task     stack:0     pid:212   ppid:1      flags:0x00000002"},
	)
	return log, true
}

// panicLog is what the console prints when the management firmware dies.
func (b *Board) panicLog() []byte {
	t := b.uptime(time.Now())
	var out []byte
	for _, l := range []string{
		"lbfw-mgmtd[212]: unhandled level 2 translation fault (11) at 0x00000008, esr 0x92000006",
		"Kernel panic - not syncing: Attempted to kill init! exitcode=0x0000000b",
		"---[ end Kernel panic - not syncing: Attempted to kill init! exitcode=0x0000000b ]---",
	} {
		out = append(out, kernelStamp(t)+l+"\r\n"...)
	}
	return out
}

// consoleRebooted shows a firmware reboot that did not come from the
// console (FW_CTRL, a fault) on the console: the boot log plays again.
func (b *Board) consoleRebooted() {
	b.mu.Lock()
	b.booted = time.Now()
	b.mu.Unlock()
	if b.srv != nil {
		b.srv.boot()
	}
}
