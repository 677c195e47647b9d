package exanet

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/boards/emu"
	"github.com/labrunner/labrunner/labconfig"
)

// packet is one ExaNet packet on its way through the fabric. It is shared
// by every hop it spans (virtual cut-through: its header can be two hops
// ahead of its footer); words move in order, so what a hop changes (the VC,
// a bit flipped on the wire) is only seen downstream.
type packet struct {
	h       header
	len0    uint32 // LENGTH at injection: the CRC covers that many bytes
	n32     int    // 32-bit payload words carried (framing, not the header field)
	nw      int    // 128-bit payload words
	payload []uint32
	crc     uint32 // the footer's CRC32 as carried
	corrupt bool   // a bit error hit the payload or footer: CRC must be checked for real
	loop    bool   // received through a near-end loopback: eject locally
	bad     bool   // cut short by a channel loss: its CRC cannot match
}

// wordRef is one 128-bit word of a packet in a FIFO: k = 0 header,
// 1..nw payload, nw+1 footer. t is the first cycle the next stage may take
// it.
type wordRef struct {
	p *packet
	k int
	t int64
}

func (w wordRef) isPayload() bool { return w.k > 0 && w.k <= w.p.nw }

// node is the exanet design on one board: the APErouter, two APElink TCLs,
// the intra-tile ports and the self-test IPs (§3.3, §3.4, §4).
type node struct {
	f     *fabric
	b     *emu.Board
	name  string
	m     *bitstreams.Manifest
	regs  map[uint32]slot
	reset map[regID][]uint32

	// Clock: cycle c of this board starts at t0 + c*period (fs).
	phase  int64
	period float64
	t0     int64
	cycle  int64 // the cycle being (or last) stepped
	next   int64 // the next cycle to step, or never
	nextT  int64 // its start time
	timer  int64 // earliest timer registered during the current step
	closed bool

	// Router configuration (§3.3).
	coord, lattice uint32
	dorOrder       uint32
	portEnable     uint32
	arbFixed       bool
	arbPrio        uint32
	linkDir        uint32
	configured     bool
	routeErrors    uint32
	scratch        [2]uint32
	cycleHi        uint32

	in    [nPorts]inPort
	out   [nPorts]outPort
	tx    [nIntra]txPort
	rx    [nIntra]rxPort
	links [nLinks]*link

	cons consumer
	tg   trafficGen
	arm  pingPong
	tr   tracer

	// Faults aimed at this board.
	misroute bool  // dor-misroute
	starve   int   // arbiter-starve: the input never granted while others request; -1 none
	arbExtra int64 // exa-arb-slow: extra grant cycles
}

// Name implements emu.Design.
func (n *node) Name() string { return "exanet" }

// newDesign is the emulator's Factory for the exanet bitstream. It is also
// the package's test hook: tests attach the design to a board by calling it
// directly, without the catalogue and the emulated programmer (one test,
// TestProgrammedThroughEmulator, takes the programmer's path).
func newDesign(b *emu.Board, m *bitstreams.Manifest) (emu.Design, error) {
	if err := checkParams(m); err != nil {
		return nil, fmt.Errorf("board %s: exanet %s (%s): %w", b.Name(), m.Version, m.Source, err)
	}
	n := &node{b: b, name: b.Name(), m: m, starve: -1}
	var err error
	if n.regs, n.reset, err = decodeMap(m); err != nil {
		return nil, fmt.Errorf("board %s: exanet %s (%s): %w", b.Name(), m.Version, m.Source, err)
	}
	ppm := b.ClockPPM()
	n.period = periodFS / (1 + ppm*1e-6)
	// The oscillator's phase at power-on follows the board's clock offset.
	off := math.Mod(b.OffsetNS()*1e6, n.period)
	if off < 0 {
		off += n.period
	}
	n.phase = int64(off)
	for i := range n.out {
		n.out[i].owner = -1
		n.out[i].rr = nPorts - 1
	}
	for i := 0; i < nLinks; i++ {
		if n.links[i], err = newLink(n, i); err != nil {
			return nil, fmt.Errorf("board %s: exanet: %w", b.Name(), err)
		}
	}
	if n.b.HasFault("dor-misroute") {
		n.misroute = true
	}
	for _, flt := range n.b.FaultsNamed("arbiter-starve") {
		if n.starve, err = paramInt(flt, "port", 1); err != nil {
			return nil, fmt.Errorf("board %s: exanet: %w", b.Name(), err)
		}
		if n.starve < 0 || n.starve >= nPorts {
			return nil, fmt.Errorf("%s: fault arbiter-starve on %s: port %d is not an input port (0-2 intra-tile, 3-4 links)", flt.Pos, b.Name(), n.starve)
		}
	}
	if err := n.parseSubtleNode(); err != nil {
		return nil, fmt.Errorf("board %s: exanet: %w", b.Name(), err)
	}
	n.arm.rng = b.Rand("exanet/arm")
	n.applyResets()
	n.f = fabricFor(b)
	n.f.mu.Lock()
	n.f.register(n)
	n.f.mu.Unlock()
	return n, nil
}

// checkParams refuses a manifest whose build parameters are not the
// hardware this emulator models.
func checkParams(m *bitstreams.Manifest) error {
	want := map[string]int{
		"intra_ports": nIntra, "link_ports": nLinks, "vcs": nVCs,
		"datapath_bits": datapathBits, "max_payload": maxPayload, "link_gbps": 10,
	}
	for k, v := range want {
		s, ok := m.Params[k]
		if !ok {
			continue
		}
		got, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || got != v {
			return fmt.Errorf("parameter %s = %q, but the emulated ExaNet IP has %d (rebuild the manifest or extend boards/emu/exanet)", k, s, v)
		}
	}
	return nil
}

// Close implements emu.Design: the board was powered off or reprogrammed.
func (n *node) Close() {
	n.f.mu.Lock()
	defer n.f.mu.Unlock()
	if !n.closed {
		n.f.unregister(n)
	}
}

// linkOn returns the link on a board port ("sfp0" is link 0, "sfp1" link 1).
func (n *node) linkOn(port string) *link {
	for _, l := range n.links {
		if l.port != nil && l.port.Name == port {
			return l
		}
	}
	return nil
}

// --- clock ---------------------------------------------------------------

func (n *node) edge(c int64) int64 { return n.t0 + int64(float64(c)*n.period) }

// cycleAt is the last cycle that started at or before t.
func (n *node) cycleAt(t int64) int64 {
	if t < n.t0 {
		return 0
	}
	c := int64(float64(t-n.t0) / n.period)
	for n.edge(c+1) <= t {
		c++
	}
	for c > 0 && n.edge(c) > t {
		c--
	}
	return c
}

// cycleFrom is the first cycle that starts at or after t.
func (n *node) cycleFrom(t int64) int64 {
	c := n.cycleAt(t)
	if n.edge(c) < t {
		c++
	}
	return c
}

// now is this board's cycle counter.
func (n *node) now() int64 { return n.cycleAt(n.f.now) }

func (n *node) setNext(c int64) {
	n.next = c
	if c == never {
		n.nextT = never
	} else {
		n.nextT = n.edge(c)
	}
}

// wakeCycle schedules a step at cycle c (never in the past).
func (n *node) wakeCycle(c int64) {
	if c <= n.cycle {
		c = n.cycle + 1
	}
	if c < n.next {
		n.setNext(c)
	}
}

// wakeAt schedules a step at the first cycle starting at or after time t.
func (n *node) wakeAt(t int64) { n.wakeCycle(n.cycleFrom(t)) }

// wake registers a timer of the current step.
func (n *node) wake(c int64) {
	if c < n.timer {
		n.timer = c
	}
}

// step runs one cycle of the board's logic. A component that moved
// anything asks for the next cycle; otherwise the board sleeps until its
// earliest timer or until a word or credit arrives on a link.
func (n *node) step() {
	c := n.next
	n.cycle = c
	n.setNext(never) // a wake during the step (a looped-back word) lowers it
	n.timer = never
	prog := false
	for _, l := range n.links {
		if l.receive(c) {
			prog = true
		}
	}
	if n.routerStep(c) {
		prog = true
	}
	for _, l := range n.links {
		if l.transmit(c) {
			prog = true
		}
	}
	if n.consume(c) {
		prog = true
	}
	if n.arm.step(n, c) {
		prog = true
	}
	if n.tg.step(n, c) {
		prog = true
	}
	nxt := n.timer
	if prog || nxt <= c {
		nxt = c + 1
	}
	if nxt < n.next {
		n.setNext(nxt)
	}
}

// giveUp stops the generators when a simulation budget ran out.
func (n *node) giveUp() {
	if n.tg.busy {
		n.tg.busy, n.tg.stalled = false, true
	}
	if n.arm.busy {
		n.arm.busy, n.arm.timeout = false, true
		n.arm.waiting, n.arm.pending = false, false
	}
}

// busy reports whether anything is in flight in this router (ROUTER_STATUS.BUSY).
func (n *node) busy() bool {
	for i := range n.in {
		if n.in[i].st != inIdle {
			return true
		}
	}
	for i := range n.tx {
		if n.tx[i].hdr.len() > 0 || n.tx[i].data.len() > 0 {
			return true
		}
	}
	for _, l := range n.links {
		if l.txq.len() > 0 || l.rxq.len() > 0 || l.rxw.len() > 0 {
			return true
		}
	}
	return false
}

// --- fault parameters ----------------------------------------------------

func paramValue(f labconfig.Fault, key string) (string, bool) {
	v, ok := f.Params[key]
	if !ok || len(v.Values) == 0 {
		return "", false
	}
	return strings.TrimSpace(v.Values[0]), true
}

func paramFloat(f labconfig.Fault, key string, def float64) (float64, error) {
	s, ok := paramValue(f, key)
	if !ok {
		return def, nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: fault %s: %s = %q is not a number", f.Pos, f.Name, key, s)
	}
	return v, nil
}

func paramInt(f labconfig.Fault, key string, def int) (int, error) {
	s, ok := paramValue(f, key)
	if !ok {
		return def, nil
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("%s: fault %s: %s = %q is not an integer", f.Pos, f.Name, key, s)
	}
	return v, nil
}

// linkFaults returns the injected faults of that name on the cable at
// port p (named by either of its ends).
func linkFaults(b *emu.Board, p *emu.Port, name string) []labconfig.Fault {
	if p == nil || p.Link == nil {
		return nil
	}
	ends := []string{b.Name() + ":" + p.Name}
	if q := p.Peer(); q != nil {
		ends = append(ends, q.Board.Name()+":"+q.Name)
	}
	var out []labconfig.Fault
	for _, f := range b.Rack().FaultsNamed(name) {
		for _, e := range ends {
			if f.Link == e {
				out = append(out, f)
				break
			}
		}
	}
	return out
}
