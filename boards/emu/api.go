// Package emu is the emulated rack: it stands in for the hardware wherever
// no board is attached. Each emulated board serves its text console and its
// UART debug bridge on pseudo-terminals (the runner opens them with
// tarm/serial exactly as a USB-UART), exposes its register bus in process,
// and is programmed with the catalogue's bitstream files, which bring a
// design's register map to life. Designs live in sub-packages
// (boards/emu/exanet, ...) and register themselves with RegisterDesign;
// boards/emu/designs imports them all.
//
// The emulator models hardware: clocks with drift, FIFOs, pipelines, credits,
// links with latency, bit errors and failures. Figures come out of its
// counters. It is deterministic for a given seed.
//
// The emulator never imports golden/ (and golden/ never imports it): they
// are two independent readings of the papers. A test enforces it.
package emu

import (
	"errors"
	"math/rand/v2"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/labconfig"
)

// Errors a Design returns from Read32/Write32. The UART bridge maps them to
// its status codes (docs/uart-bridge.md); any other error is the design's
// register refusing the access (a push into a full FIFO), which the bridge
// answers REFUSED and the emulated bus reports as a design failure.
var (
	// ErrBusError: the address is not decoded by the design, or no design is loaded.
	ErrBusError = errors.New("bus error: address not decoded")
	// ErrReadOnly: a write to a read-only register.
	ErrReadOnly = errors.New("register is read-only")
	// ErrBusy: the board cannot execute now (being programmed, booting).
	ErrBusy = errors.New("device busy")
)

// Design is the logic a bitstream brings to life on one emulated board.
// Read32 and Write32 take byte offsets in the design's address space; the
// board serialises calls (one at a time per board). A design spanning several
// boards (a mesh, a rack) shares state between its per-board instances
// through Rack.Shared and must do its own locking there; it must never call
// another board's Bus (that would take the other board's lock).
type Design interface {
	Name() string
	Read32(addr uint32) (uint32, error)
	Write32(addr uint32, v uint32) error
	// Close is called when the board is reprogrammed, powered off or the
	// rack is closed.
	Close()
}

// Factory instantiates a design on a board. The manifest is the design's
// catalogue entry (register map, parameters).
type Factory func(b *Board, m *bitstreams.Manifest) (Design, error)

// FaultInfo describes a fault that can be injected by name.
type FaultInfo struct {
	Name string
	// Scope: "board" (needs a board), "link" (needs board:port), or "rack".
	Scope string
	// Design the fault belongs to; "" for faults of the board itself
	// (UART, clock, power).
	Design string
	// Doc says what the fault does and which symptom the harness should see.
	Doc string
	// Params lists the parameters it takes, with their defaults. A default
	// that is a number makes CheckFault refuse a value that is not one.
	Params map[string]string
	// Check, when set, validates the values of the parameters given (ranges,
	// enumerations) without a rack; CheckFault runs it after the names and
	// the numbers. RegisterFault runs it on the defaults.
	Check func(labconfig.Params) error `json:"-"`
	// Benign: with its default parameters the fault is one the design or
	// the protocols absorb (a noisy line, a lossy management cable): a run
	// must pass, and the fault show in its counters. Severe lists the
	// parameter settings ("rate=0.6") at which the same fault must fail
	// the run instead.
	Benign bool
	Severe []string
	// Needs says what a board must have for the fault to act on it:
	// NeedsUARTBridge (its bus is the UART bridge), NeedsCable (a cabled
	// port: the fault acts through management traffic or TimeSync clients),
	// NeedsInBand (the runner reaches the board only through the management
	// plane, not dcn: the fault acts on remote register requests, which a
	// board on the DCN never receives), or "param:KEY=VALUE", a plan
	// parameter of the board ("param:role=nic": the fault acts on a Shoal NIC
	// board, not a switch).
	Needs []string
}

// What a fault's target must have (FaultInfo.Needs).
const (
	NeedsUARTBridge = "uart_bridge"
	NeedsCable      = "cable"
	NeedsInBand     = "in_band"
)

// Port is one network cage of a board, possibly cabled to another.
type Port struct {
	Board *Board
	Name  string
	Link  *Link // nil when no cable is plugged
}

// Peer returns the port at the other end of the cable, or nil.
func (p *Port) Peer() *Port {
	if p.Link == nil {
		return nil
	}
	if p.Link.A == p {
		return p.Link.B
	}
	return p.Link.A
}

// Link is an emulated cable. Delays are one-way, in nanoseconds; the B->A
// direction adds AsymmetryNS. BER is the bit error rate on the wire.
type Link struct {
	A, B        *Port
	LatencyNS   float64
	AsymmetryNS float64
	BER         float64
	// Failed is set by a link fault: nothing crosses it.
	Failed bool
}

// DelayNS returns the one-way delay from port from to the other end.
func (l *Link) DelayNS(from *Port) float64 {
	if from == l.B {
		return l.LatencyNS + l.AsymmetryNS
	}
	return l.LatencyNS
}

// randFor derives a deterministic stream for a named purpose from the rack
// seed, so that adding a consumer of randomness in one place does not shift
// the numbers drawn everywhere else.
func randFor(seed int64, name string) *rand.Rand {
	var h uint64 = 1469598103934665603
	for i := 0; i < len(name); i++ {
		h ^= uint64(name[i])
		h *= 1099511628211
	}
	return rand.New(rand.NewPCG(uint64(seed), h))
}
