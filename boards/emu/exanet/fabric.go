package exanet

import (
	"math"
	"sort"
	"strings"
	"sync"

	"github.com/labrunner/labrunner/boards/emu"
)

// never is the "no event" time or cycle.
const never = math.MaxInt64

// fabric is the simulation of one set of cabled boards: every board running
// the exanet design in a connected component of the rack's cable graph. It
// lives in Rack.Shared("exanet/fabric/<first board>"), keeps its own lock
// and a common time base in femtoseconds; each board counts its own cycles
// on its own oscillator.
//
// Lock order: a board's lock (held by the emulator around Read32/Write32,
// Close and the factory) is taken before the fabric's lock; the fabric never
// calls back into a board, so there is no cycle.
type fabric struct {
	mu    sync.Mutex
	rack  *emu.Rack
	now   int64   // fs since the fabric was created
	nodes []*node // boards running exanet, in lab order
	order map[string]int
	// failed holds the cables a link-down fault cut.
	failed map[*emu.Link]bool
}

func fabricFor(b *emu.Board) *fabric {
	r := b.Rack()
	comp := b.Component()
	return r.Shared("exanet/fabric/"+comp, func() any { return newFabric(r) }).(*fabric)
}

func newFabric(r *emu.Rack) *fabric {
	f := &fabric{rack: r, order: map[string]int{}, failed: map[*emu.Link]bool{}}
	for i, b := range r.Boards() {
		f.order[b.Name()] = i
	}
	for _, flt := range r.FaultsNamed("link-down") {
		bn, pn, _ := strings.Cut(flt.Link, ":")
		if b, ok := r.Board(bn); ok {
			if p := b.Port(pn); p != nil && p.Link != nil {
				f.failed[p.Link] = true
			}
		}
	}
	return f
}

// register adds a freshly programmed board. Its cycle counter starts now.
func (f *fabric) register(n *node) {
	n.t0 = f.now + n.phase
	n.cycle = -1
	n.next, n.nextT = never, never
	f.nodes = append(f.nodes, n)
	sort.SliceStable(f.nodes, func(i, j int) bool { return f.order[f.nodes[i].name] < f.order[f.nodes[j].name] })
	f.relink()
	f.wakeAll()
}

// unregister removes a board that was powered off or reprogrammed.
func (f *fabric) unregister(n *node) {
	for i, x := range f.nodes {
		if x == n {
			f.nodes = append(f.nodes[:i], f.nodes[i+1:]...)
			break
		}
	}
	n.closed = true
	for _, l := range n.links {
		l.goDown()
	}
	f.relink()
	f.wakeAll()
}

func (f *fabric) node(board string) *node {
	for _, n := range f.nodes {
		if n.name == board {
			return n
		}
	}
	return nil
}

// relink recomputes which APElink channels are up (§3.4; the Aurora channel
// is up when both ends are powered, programmed with exanet, enabled, and
// the cable is sound) and brings channels up or down accordingly.
func (f *fabric) relink() {
	type want struct {
		l, peer *link
		lat     int64
	}
	var wants []want
	for _, n := range f.nodes {
		for _, l := range n.links {
			w := want{l: l}
			switch {
			case !l.enable:
			case l.loopback:
				// Near-end loopback: TX turns round inside the transceiver.
				w.peer, w.lat = l, xcvrCycles*periodFS
			case l.port == nil || l.port.Link == nil || l.port.Link.Failed || f.failed[l.port.Link]:
			default:
				pp := l.port.Peer()
				pn := f.node(pp.Board.Name())
				if pn == nil {
					break
				}
				pl := pn.linkOn(pp.Name)
				if pl == nil || !pl.enable || pl.loopback {
					break
				}
				w.peer = pl
				w.lat = (xcvrCycles+l.xcvrExtra)*periodFS + int64(math.Round(l.port.Link.DelayNS(l.port)*1e6))
			}
			wants = append(wants, w)
		}
	}
	for _, w := range wants {
		if w.l.up && w.l.peer != w.peer {
			w.l.goDown()
		}
	}
	for _, w := range wants {
		if w.peer != nil && !w.l.up {
			w.l.goUp(w.peer, w.lat)
		}
	}
}

func (f *fabric) wakeAll() {
	for _, n := range f.nodes {
		n.wakeCycle(n.cycleAt(f.now) + 1)
	}
}

// run steps the boards in time order until nothing is scheduled (it
// returns true: quiescent) or the next event lies beyond limit (false).
func (f *fabric) run(limit int64) bool {
	for {
		var best *node
		bt := int64(never)
		for _, n := range f.nodes {
			if n.nextT < bt {
				bt, best = n.nextT, n
			}
		}
		if best == nil {
			return true
		}
		if bt > limit {
			return false
		}
		if bt > f.now {
			f.now = bt
		}
		best.step()
	}
}

// advance lets dt femtoseconds of fabric time pass (a register access).
func (f *fabric) advance(dt int64) {
	target := f.now + dt
	f.run(target)
	f.now = target
}

// settle simulates until the fabric is quiescent or budget cycles have
// passed; it reports whether it went quiet. Once no generator is running
// (traffic generator, ping-pong initiator), what is left in the FIFOs drains
// within settleBudget cycles, so a fabric still busy after that is
// circulating packets for good (a routing loop, as real hardware would):
// settle stops there rather than burn the whole budget. With giveUp,
// generators still running when the budget runs out give up, as their
// status registers say (TG_STATUS.STALLED, PP_STATUS.TIMEOUT).
func (f *fabric) settle(budget int64, giveUp bool) bool {
	limit := f.now + budget*periodFS
	drainEnd := int64(never)
	for {
		stop := f.now + settleBudget/4*periodFS
		if stop > limit {
			stop = limit
		}
		if f.run(stop) {
			return true
		}
		f.now = stop
		if stop >= limit {
			break
		}
		if f.generatorsBusy() {
			drainEnd = never
		} else if drainEnd == never {
			drainEnd = f.now + settleBudget*periodFS
		} else if f.now >= drainEnd {
			return false
		}
	}
	if giveUp {
		for _, n := range f.nodes {
			n.giveUp()
		}
	}
	return false
}

func (f *fabric) generatorsBusy() bool {
	for _, n := range f.nodes {
		if n.tg.busy || n.arm.busy {
			return true
		}
	}
	return false
}
