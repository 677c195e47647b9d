package emu

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/boards"
	"github.com/labrunner/labrunner/drivers"
	"github.com/labrunner/labrunner/labconfig"
)

var (
	registryMu sync.Mutex
	designs    = map[string]Factory{}
	faults     = map[string]FaultInfo{}
)

// designOrigin is where each design was registered (file:line of the
// RegisterDesign call), so that a name registered twice names both places.
var designOrigin = map[string]string{}

// RegisterDesign makes a design available to emulated boards. Design
// packages call it from init. A name registered twice is a programming
// error that would make one factory unreachable (which one would depend on
// the order the inits ran): RegisterDesign panics naming both
// registrations, and on an empty name or a nil factory.
func RegisterDesign(name string, f Factory) {
	where := "unknown place"
	if _, file, line, ok := runtime.Caller(1); ok {
		where = fmt.Sprintf("%s:%d", trimModulePath(file), line)
	}
	if name == "" || f == nil {
		panic(fmt.Sprintf("emu.RegisterDesign at %s: want a design name and a factory (got %q, nil factory %v)", where, name, f == nil))
	}
	registryMu.Lock()
	defer registryMu.Unlock()
	if old, dup := designOrigin[name]; dup {
		panic(fmt.Sprintf("emu.RegisterDesign: design %q registered twice: at %s and at %s; remove one of the two registrations (design names must be unique)",
			name, old, where))
	}
	designs[name] = f
	designOrigin[name] = where
}

// DesignNames lists the designs the emulator can run.
func DesignNames() []string {
	registryMu.Lock()
	defer registryMu.Unlock()
	out := make([]string, 0, len(designs))
	for n := range designs {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Options for Start.
type Options struct {
	// Seed overrides the lab's seed when non-zero.
	Seed int64
	// Faults are injected in addition to the lab file's.
	Faults []labconfig.Fault
	// Catalogue finds manifests for programmed designs (default: bitstreams.Default()).
	Catalogue *bitstreams.Catalogue
	// Log receives the emulator's own log lines (default: discarded).
	Log *slog.Logger
	// NoPTY skips the pseudo-terminals (in-process bus only), for tests and
	// benchmarks that do not need them.
	NoPTY bool
}

// Rack is the set of emulated boards of a lab and the cables between them.
type Rack struct {
	seed   int64
	log    *slog.Logger
	cat    *bitstreams.Catalogue
	boards map[string]*Board
	order  []string
	links  []*Link
	faults []labconfig.Fault

	sharedMu sync.Mutex
	shared   map[string]any

	mg *mgmtFabric // the management plane (mgmt.go)

	closeOnce sync.Once
}

// Start builds the emulated boards of lab (those with an `emulated:` block),
// cables them as its links say, injects the faults, and starts serving their
// consoles and bridges.
func Start(lab *labconfig.Lab, opts Options) (*Rack, error) {
	r := &Rack{
		seed:   lab.Seed,
		log:    opts.Log,
		cat:    opts.Catalogue,
		boards: map[string]*Board{},
		shared: map[string]any{},
	}
	if opts.Seed != 0 {
		r.seed = opts.Seed
	}
	if r.log == nil {
		r.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if r.cat == nil {
		r.cat = bitstreams.Default()
	}
	for i := range lab.Boards {
		lb := &lab.Boards[i]
		if lb.Emulated == nil {
			continue
		}
		kind, err := boards.Lookup(lb.Kind)
		if err != nil {
			return nil, fmt.Errorf("%s: board %s: %w", lb.Pos, lb.Name, err)
		}
		b := newBoard(r, lb, kind)
		r.boards[lb.Name] = b
		r.order = append(r.order, lb.Name)
	}
	for i := range lab.Links {
		ll := &lab.Links[i]
		a, okA := r.boards[ll.A.Board]
		bb, okB := r.boards[ll.B.Board]
		if !okA || !okB {
			continue // a cable to a real board: nothing to emulate
		}
		pa, pb := a.Port(ll.A.Port), bb.Port(ll.B.Port)
		if pa == nil || pb == nil {
			return nil, fmt.Errorf("%s: link %s - %s: no such port (a %s has %s)", ll.Pos, ll.A, ll.B, a.kind.Name, strings.Join(a.kind.Ports, ", "))
		}
		if pa.Link != nil || pb.Link != nil {
			return nil, fmt.Errorf("%s: link %s - %s: a port is cabled twice", ll.Pos, ll.A, ll.B)
		}
		l := &Link{A: pa, B: pb, LatencyNS: ll.LatencyNS, AsymmetryNS: ll.AsymmetryNS, BER: ll.BER}
		pa.Link, pb.Link = l, l
		r.links = append(r.links, l)
	}
	all := append(append([]labconfig.Fault(nil), lab.Faults...), opts.Faults...)
	for _, f := range all {
		if err := r.inject(f); err != nil {
			return nil, err
		}
	}
	if err := r.startMgmt(); err != nil {
		return nil, err
	}
	if !opts.NoPTY {
		for _, n := range r.order {
			if err := r.boards[n].serve(); err != nil {
				r.Close()
				return nil, err
			}
		}
	}
	for _, n := range r.order {
		r.boards[n].powerOn()
	}
	return r, nil
}

func (r *Rack) inject(f labconfig.Fault) error {
	if err := CheckFault(f); err != nil {
		return err
	}
	fi, _ := LookupFault(f.Name)
	switch fi.Scope {
	case "board":
		if _, ok := r.boards[f.Board]; !ok {
			return fmt.Errorf("%s: fault %s: board %q is not an emulated board of this lab", f.Pos, f.Name, f.Board)
		}
	case "link":
		ep := f.Link
		bn, pn, ok := strings.Cut(ep, ":")
		b := r.boards[bn]
		if !ok || b == nil || b.Port(pn) == nil || b.Port(pn).Link == nil {
			return fmt.Errorf("%s: fault %s: link %q is not a cabled port of an emulated board (write board:port)", f.Pos, f.Name, ep)
		}
		if f.Board == "" {
			f.Board = bn
		}
	}
	r.faults = append(r.faults, f)
	return nil
}

// Seed is the rack's seed.
func (r *Rack) Seed() int64 { return r.seed }

// Log is the emulator's logger.
func (r *Rack) Log() *slog.Logger { return r.log }

// Catalogue is the design catalogue the rack programs from.
func (r *Rack) Catalogue() *bitstreams.Catalogue { return r.cat }

// Board returns the emulated board of that name.
func (r *Rack) Board(name string) (*Board, bool) {
	b, ok := r.boards[name]
	return b, ok
}

// Boards returns the boards in lab-file order.
func (r *Rack) Boards() []*Board {
	out := make([]*Board, 0, len(r.order))
	for _, n := range r.order {
		out = append(out, r.boards[n])
	}
	return out
}

// Links returns the emulated cables.
func (r *Rack) Links() []*Link { return r.links }

// Faults returns the injected faults.
func (r *Rack) Faults() []labconfig.Fault { return r.faults }

// FaultsNamed returns the injected faults of that name.
func (r *Rack) FaultsNamed(name string) []labconfig.Fault {
	var out []labconfig.Fault
	for _, f := range r.faults {
		if f.Name == name {
			out = append(out, f)
		}
	}
	return out
}

// Rand returns a deterministic random stream for a named purpose.
func (r *Rack) Rand(purpose string) *rand.Rand { return randFor(r.seed, purpose) }

// Shared returns the rack-wide object stored under key, creating it with mk
// the first time. Multi-board designs keep their fabric here.
func (r *Rack) Shared(key string, mk func() any) any {
	r.sharedMu.Lock()
	defer r.sharedMu.Unlock()
	v, ok := r.shared[key]
	if !ok {
		v = mk()
		r.shared[key] = v
	}
	return v
}

// Close stops every board.
func (r *Rack) Close() error {
	r.closeOnce.Do(func() {
		for _, n := range r.order {
			r.boards[n].close()
		}
	})
	return nil
}

// The methods below let boards.Open reach emulated boards without importing
// this package (boards.Emulator).

// ConsolePath returns the pseudo-terminal of a board's console.
func (r *Rack) ConsolePath(board string) (string, error) {
	b, err := r.get(board)
	if err != nil {
		return "", err
	}
	if b.consolePath == "" {
		return "", fmt.Errorf("emulated board %s: console is not served (rack started without pseudo-terminals)", board)
	}
	return b.consolePath, nil
}

// BridgePath returns the pseudo-terminal of a board's UART bridge.
func (r *Rack) BridgePath(board string) (string, error) {
	b, err := r.get(board)
	if err != nil {
		return "", err
	}
	if b.bridgePath == "" {
		return "", fmt.Errorf("emulated board %s: bridge is not served (rack started without pseudo-terminals)", board)
	}
	return b.bridgePath, nil
}

// Bus returns a board's in-process register bus.
func (r *Rack) Bus(board string) (drivers.RegisterBus, error) {
	b, err := r.get(board)
	if err != nil {
		return nil, err
	}
	return b.Bus(), nil
}

// Programmer returns a board's emulated programmer.
func (r *Rack) Programmer(board string) (drivers.Programmer, error) {
	b, err := r.get(board)
	if err != nil {
		return nil, err
	}
	return b.Programmer(), nil
}

// Power returns a board's emulated power switch.
func (r *Rack) Power(board string) (drivers.Power, error) {
	b, err := r.get(board)
	if err != nil {
		return nil, err
	}
	return b.Power(), nil
}

func (r *Rack) get(board string) (*Board, error) {
	b, ok := r.boards[board]
	if !ok {
		return nil, fmt.Errorf("board %s is not emulated in this rack", board)
	}
	return b, nil
}

var _ = context.Background
