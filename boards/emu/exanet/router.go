package exanet

// The APErouter (§3.3): a fully connected switch between 3 intra-tile and 2
// inter-tile ports, with a Router (DOR), an Arbiter per output and a Switch
// Gate per port. Ports 0-2 are the intra-tile ports, 3-4 the links 0-1.

// Input port states. A packet goes idle -> fetch (the header FIFO's read
// latency) -> route (DOR) -> req (waits for the arbiter's grant) -> gate
// (the switch gate connects) -> xfer (one 128-bit word a cycle) -> release.
const (
	inIdle uint8 = iota
	inFetch
	inRoute
	inReq
	inGate
	inXfer
	inRelease
	inDrop // no route: the packet's words are discarded as they come
)

type inPort struct {
	st  uint8
	at  int64 // cycle the current stage ends
	p   *packet
	out int
	k   int // next word of p to move
}

type outPort struct {
	owner int   // input holding the output, -1 when free
	req   uint8 // inputs requesting this output
	rr    int   // round robin: the input granted last
}

// Link directions (LINK_DIR): 1 X+, 2 X-, 3 Y+, 4 Y-, 5 Z+, 6 Z-.
func dirCode(dim int, negative bool) uint32 {
	c := uint32(1 + 2*dim)
	if negative {
		c++
	}
	return c
}

func coordOf(w uint32, dim int) int { return int(w >> (8 * dim) & 0xff) }

// routeCfg is what the Router of §3.3 looks at.
type routeCfg struct {
	coord, lattice uint32
	order          uint32 // DOR_ORDER
	linkDir        uint32 // LINK_DIR
	portEnable     uint32 // PORT_ENABLE
	reverse        bool   // dor-misroute: dimensions evaluated in the wrong order
}

// dimOrder returns the dimensions in the order DOR_ORDER names them
// (FIRST[1:0], SECOND[3:2], THIRD[5:4]; 0 X, 1 Y, 2 Z). A code of 3 names
// no dimension.
func dimOrder(order uint32, reverse bool) [3]int {
	d := [3]int{int(order & 3), int(order >> 2 & 3), int(order >> 4 & 3)}
	if reverse {
		d[0], d[2] = d[2], d[0]
	}
	return d
}

// route is Dimension-Ordered Routing (§3.3): reduce the offset between the
// current and the destination coordinate to zero along one dimension before
// considering the next, in the configured order. The packet leaves on the
// upper virtual channel (1) when the offset in the dimension being routed is
// greater than zero, on the lower one (0) otherwise. It returns the output
// port (0-2 intra-tile, 3-4 links) and the VC, or ok=false when there is no
// route: a destination outside the lattice, no enabled link serving the
// direction, a disabled or invalid destination port, or an offset left in
// a dimension DOR_ORDER does not name.
func route(cfg routeCfg, dest uint32) (out int, vc uint32, ok bool) {
	for d := 0; d < 3; d++ {
		if coordOf(dest, d) >= coordOf(cfg.lattice, d) {
			return 0, 0, false
		}
	}
	for _, d := range dimOrder(cfg.order, cfg.reverse) {
		if d > 2 {
			continue
		}
		off := coordOf(dest, d) - coordOf(cfg.coord, d)
		if off == 0 {
			continue
		}
		dir := dirCode(d, off < 0)
		for l := 0; l < nLinks; l++ {
			if cfg.linkDir>>(4*l)&0xf == dir && cfg.portEnable>>(8+l)&1 != 0 {
				if off > 0 {
					vc = 1
				}
				return nIntra + l, vc, true
			}
		}
		return 0, 0, false
	}
	for d := 0; d < 3; d++ {
		if coordOf(dest, d) != coordOf(cfg.coord, d) {
			return 0, 0, false
		}
	}
	p := int(dest >> 24 & 3)
	if p >= nIntra || cfg.portEnable>>p&1 == 0 {
		return 0, 0, false
	}
	return p, 0, true
}

func (n *node) routeCfg() routeCfg {
	return routeCfg{coord: n.coord, lattice: n.lattice, order: n.dorOrder, linkDir: n.linkDir,
		portEnable: n.portEnable, reverse: n.misroute}
}

func (n *node) portEnabled(i int) bool {
	if i < nIntra {
		return n.portEnable>>i&1 != 0
	}
	return n.portEnable>>(8+i-nIntra)&1 != 0
}

func (n *node) routerStep(c int64) bool {
	prog := false
	for i := range n.in {
		if n.in[i].st != inIdle || n.headReady(i) {
			if n.inputStep(i, c) {
				prog = true
			}
		}
	}
	for o := range n.out {
		if n.out[o].req != 0 && n.out[o].owner < 0 {
			if n.arbitrate(o, c) {
				prog = true
			}
		}
	}
	return prog
}

func (n *node) inputStep(i int, c int64) bool {
	in := &n.in[i]
	switch in.st {
	case inIdle:
		if !n.portEnabled(i) {
			return false
		}
		in.st, in.at = inFetch, c+fetchCycles
		n.wake(in.at)
		return true
	case inFetch:
		if c < in.at {
			n.wake(in.at)
			return false
		}
		in.p, in.k = n.fetch(i), 0
		in.st, in.at = inRoute, c+routeCycles
		n.wake(in.at)
		return true
	case inRoute:
		if c < in.at {
			n.wake(in.at)
			return false
		}
		var out int
		var vc uint32
		var ok bool
		if in.p.loop && i >= nIntra {
			// A near-end loopback stands in for the far node: eject here.
			out = int(in.p.h.dest >> 24 & 3)
			ok = out < nIntra && n.portEnabled(out)
		} else {
			out, vc, ok = route(n.routeCfg(), in.p.h.dest)
		}
		if !ok {
			n.routeErrors++
			in.st = inDrop
			return true
		}
		in.p.h.vc = vc
		in.out = out
		n.tr.record(n, in.p, i, out, vc, c)
		in.st = inReq
		n.out[out].req |= 1 << i
		return true
	case inReq:
		return false
	case inGate:
		if c < in.at {
			n.wake(in.at)
			return false
		}
		in.st = inXfer
		fallthrough
	case inXfer:
		if !n.wordReady(i, in.p, in.k) {
			return false // a link input waits for the word to arrive
		}
		w := n.popWord(i, in.p, in.k)
		n.pushOut(in.out, w, c)
		in.k++
		if in.k == in.p.nw+2 {
			in.st, in.at = inRelease, c+releaseCycles
			n.wake(in.at)
		}
		return true
	case inRelease:
		if c < in.at {
			n.wake(in.at)
			return false
		}
		n.out[in.out].owner = -1
		in.st, in.p = inIdle, nil
		return true
	case inDrop:
		moved := false
		for in.k < in.p.nw+2 && n.wordReady(i, in.p, in.k) {
			n.popWord(i, in.p, in.k)
			in.k++
			moved = true
		}
		if in.k == in.p.nw+2 {
			in.st, in.p = inIdle, nil
			return true
		}
		return moved
	}
	return false
}

// arbitrate grants a free output to one of the inputs requesting it whose
// packet fits in the output's downstream buffer (virtual cut-through, §3.3:
// forward "as soon as the algorithm has picked a direction and the buffer
// used to store the packet has enough space"). Round robin or fixed
// priority (ARB_MODE, ARB_PRIO), as §3.3 says.
func (n *node) arbitrate(o int, c int64) bool {
	out := &n.out[o]
	pick := -1
	if n.arbFixed {
		var listed uint8
		for s := 0; s < nPorts && pick < 0; s++ {
			i := int(n.arbPrio >> (4 * s) & 0xf)
			if i >= nPorts || listed&(1<<i) != 0 {
				continue
			}
			listed |= 1 << i
			if out.req&(1<<i) != 0 && n.fits(o, n.in[i].p) {
				pick = i
			}
		}
		for i := 0; i < nPorts && pick < 0; i++ {
			if listed&(1<<i) == 0 && out.req&(1<<i) != 0 && n.fits(o, n.in[i].p) {
				pick = i
			}
		}
	} else {
		for s := 1; s <= nPorts; s++ {
			i := (out.rr + s) % nPorts
			if out.req&(1<<i) == 0 || !n.fits(o, n.in[i].p) {
				continue
			}
			if i == n.starve && n.othersActive(i) {
				continue // arbiter-starve: never granted while another input requests
			}
			pick = i
			break
		}
	}
	if pick < 0 {
		return false
	}
	out.owner, out.rr = pick, pick
	out.req &^= 1 << pick
	in := &n.in[pick]
	n.reserve(o, in.p)
	in.st, in.at = inGate, c+arbCycles+gateCycles+n.arbExtra
	n.wake(in.at)
	return true
}

// othersActive reports whether an input other than i holds a packet: the
// faulty arbiter of the arbiter-starve fault sees an input's request from
// the moment its header reaches the FIFO head, so the starved input waits
// as long as any other input has traffic.
func (n *node) othersActive(i int) bool {
	for j := range n.in {
		if j != i && (n.in[j].st != inIdle || (n.portEnabled(j) && n.headReady(j))) {
			return true
		}
	}
	return false
}

// headReady reports whether input i has a packet to start on.
func (n *node) headReady(i int) bool {
	if i < nIntra {
		return n.tx[i].ready()
	}
	l := n.links[i-nIntra]
	return l.rxq.len() > 0
}

// fetch takes the packet at the head of input i.
func (n *node) fetch(i int) *packet {
	if i < nIntra {
		return n.tx[i].packetAtHead(n.coord | uint32(i)<<24)
	}
	return n.links[i-nIntra].rxq.peek().p
}

func (n *node) wordReady(i int, p *packet, k int) bool {
	if i < nIntra {
		return true // a packet leaves an intra-tile port only when it is whole
	}
	l := n.links[i-nIntra]
	return l.rxq.len() > 0 && l.rxq.peek().p == p
}

func (n *node) popWord(i int, p *packet, k int) wordRef {
	if i < nIntra {
		n.tx[i].popWord(p, k)
		return wordRef{p: p, k: k}
	}
	return n.links[i-nIntra].popRx()
}

func (n *node) fits(o int, p *packet) bool {
	if o < nIntra {
		return n.rx[o].fits(p)
	}
	return n.links[o-nIntra].txFits(p)
}

func (n *node) reserve(o int, p *packet) {
	if o < nIntra {
		n.rx[o].reserve(p)
		return
	}
	n.links[o-nIntra].txReserve(p)
}

func (n *node) pushOut(o int, w wordRef, c int64) {
	if o < nIntra {
		n.rx[o].push(w, c)
		return
	}
	n.links[o-nIntra].txPush(w, c)
}

// tracer is the router's trace FIFO: one 4-word entry per traced packet it
// routes (tag; IN_PORT[3:0] OUT_PORT[7:4] VC[8]; the cycle it routed the
// header, low 32 bits; its COORD).
type tracer struct {
	enable bool
	words  ring[uint32]
}

func (t *tracer) record(n *node, p *packet, in, out int, vc uint32, c int64) {
	if !t.enable || !p.h.trace || t.words.len() >= 4*traceEntries {
		return
	}
	t.words.push(p.h.tag)
	t.words.push(uint32(in&0xf) | uint32(out&0xf)<<4 | (vc&1)<<8)
	t.words.push(uint32(c))
	t.words.push(n.coord)
}
