package emu

import (
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/labrunner/labrunner/internal/eventq"
)

// The management block: what every emulated board with cabled ports has,
// whatever design its programmable logic runs — the embedded processor's
// firmware (Aquila §3.5, §4.3, §4.4), the MOS channel and its PMOS packet
// layer, the DHCP-like address exchange, the firmware-forwarded management
// network, and the TimeSync hardware (Appendix B). The runner reaches it
// through a fixed window at MgmtBase, decoded by the board before the
// design; the map is bitstreams/catalogue/mgmt.yaml, the programming model
// docs/mgmt.md, the wire format docs/pmos.md.
//
// Time. The block runs in emulated time, one clock for the whole rack
// (mgmtFabric.now, picoseconds since the rack started), which advances only
// when the runner touches a management register: every access to the window
// costs mgmtAccessPS, and DELAY_US waits as long as it is told. Between two
// accesses nothing happens, so a run is the same for the same sequence of
// accesses whatever the wall clock does: deterministic per seed. Accesses to
// the design's registers do not move this clock (each design keeps its own
// time model).
//
// Locking. One mutex (mgmtFabric.mu) guards every board's management state.
// The order is mgmtFabric.mu, then a Board.mu (the firmware executes remote
// register accesses on its own design): management accesses therefore never
// hold Board.mu (read32/write32 decode the window before taking it), and a
// design must not call into this file from its Read32/Write32.

// MgmtBase is the first address of the management window: every address
// from here to 0xFFFF_FFFF belongs to the board's management block, never to
// the design (a design's manifest must keep its windows below it).
const MgmtBase uint32 = 0xF000_0000

const (
	// mgmtAccessPS: emulated time one 32-bit access to the window costs —
	// about what a word takes on the 921600-baud UART bridge (4 bytes x 10
	// bits = 43 us), rounded up. Charged whichever bus the access comes by.
	mgmtAccessPS = 50_000_000
	// maxDelayUS: the longest single DELAY_US wait.
	maxDelayUS = 1_000_000

	psPerNS = 1000
	psPerUS = 1_000_000
	psPerMS = 1_000_000_000
)

// mgmtFabric is the rack's management plane and its clock.
type mgmtFabric struct {
	mu     sync.Mutex
	rack   *Rack
	now    int64                // ps since the rack started
	q      eventq.Queue[func()] // by time, then scheduling order: a run is the same every time
	boards []*mgmtBoard
}

// at schedules fn at time t (never before now).
func (f *mgmtFabric) at(t int64, fn func()) {
	if t < f.now {
		t = f.now
	}
	f.q.Push(t, fn)
}

// advance runs every event up to time to and leaves the clock there.
func (f *mgmtFabric) advance(to int64) {
	for {
		if t, ok := f.q.Next(); !ok || t > to {
			break
		}
		t, fn := f.q.Pop()
		f.now = max(f.now, t)
		fn()
	}
	if to > f.now {
		f.now = to
	}
}

// startMgmt builds the management plane of a rack whose boards and cables
// exist and whose faults are injected; Start calls it before powering the
// boards on.
func (r *Rack) startMgmt() error {
	f := &mgmtFabric{rack: r}
	for _, n := range r.order {
		b := r.boards[n]
		mb, err := newMgmtBoard(f, b)
		if err != nil {
			return err
		}
		b.mg = mb
		f.boards = append(f.boards, mb)
	}
	for _, mb := range f.boards {
		for _, p := range mb.ports {
			if peer := p.p.Peer(); peer != nil && peer.Board.mg != nil {
				p.peer = peer.Board.mg.ports[portIndex(peer)]
			}
		}
	}
	if err := applyLinkFaults(r); err != nil {
		return err
	}
	for _, mb := range f.boards {
		if err := mb.applyFaults(); err != nil {
			return err
		}
		// The console commands come with the cables: a board with none has
		// nothing to manage over MOS (its window still answers).
		for _, p := range mb.ports {
			if p.cabled() {
				mb.b.registerMgmtConsole()
				break
			}
		}
	}
	r.mg = f
	return nil
}

func portIndex(p *Port) int {
	for i, q := range p.Board.ports {
		if q == p {
			return i
		}
	}
	return -1
}

// mgmtAccess executes one access to the management window: the clock moves
// on by the access's cost, then the access takes effect.
func (b *Board) mgmtAccess(write bool, addr, v uint32) (uint32, error) {
	mb := b.mg
	if mb == nil {
		return 0, fmt.Errorf("%w (board %s has no management block)", ErrBusError, b.cfg.Name)
	}
	f := mb.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if !mb.powered {
		return 0, ErrBusy
	}
	f.advance(f.now + mgmtAccessPS)
	if addr%4 != 0 {
		return 0, fmt.Errorf("address 0x%x is not 4-byte aligned", addr)
	}
	off := addr - MgmtBase
	if write {
		return 0, mb.regWrite(off, v)
	}
	return mb.regRead(off)
}

func (b *Board) mgmtRead32(addr uint32) (uint32, error) { return b.mgmtAccess(false, addr, 0) }

func (b *Board) mgmtWrite32(addr, v uint32) error {
	_, err := b.mgmtAccess(true, addr, v)
	return err
}

// mgmtPower follows the board's power switch (setPower calls it after
// releasing Board.mu).
func (b *Board) mgmtPower(on bool) {
	mb := b.mg
	if mb == nil {
		return
	}
	mb.f.mu.Lock()
	defer mb.f.mu.Unlock()
	if on {
		mb.powerOn()
	} else {
		mb.powerOff()
	}
}

// mgmtReboot restarts the management firmware without touching the
// hardware's state (non-stop forwarding, §4.3): the console's `reboot`.
func (b *Board) mgmtReboot() {
	mb := b.mg
	if mb == nil {
		return
	}
	mb.f.mu.Lock()
	defer mb.f.mu.Unlock()
	mb.nsfReboot("console reboot", false)
}

// fwConsoleState says what the console shows of the firmware: a boot that
// never finishes, or a firmware that crashed. Read without the fabric lock.
func (b *Board) fwConsoleState() (stuck, crashed bool) {
	if b.mg == nil {
		return false, false
	}
	return b.mg.stuckBoot.Load(), b.mg.crashed.Load()
}

// MgmtTime is the rack's emulated management time: how long the management
// plane has run. For tests and in-process tools; a runner measures time with
// the boards' CYCLES counters, as on hardware.
func (r *Rack) MgmtTime() time.Duration {
	if r.mg == nil {
		return 0
	}
	r.mg.mu.Lock()
	defer r.mg.mu.Unlock()
	return time.Duration(r.mg.now / psPerNS)
}

// psOfNS converts nanoseconds to picoseconds, rounding.
func psOfNS(ns float64) int64 { return int64(math.Round(ns * psPerNS)) }
