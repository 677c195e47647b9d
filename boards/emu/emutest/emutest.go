// Package emutest is the emulated rack as a test rig: a rack described in
// Go (boards, cables, faults, seed), started in process without
// pseudo-terminals, every board programmed with the catalogue's bitstream
// of one design through its emulated programmer, and registers read and
// written by name, the test failed at the first access that does not
// succeed. The emulator's design packages test themselves with it, and the
// drivers that run against the emulated rack (traffic/, drivers/pmos) build
// their racks with it, so that one rig, not one per design, knows how to
// bring a rack up.
//
// Only tests import it. It holds no reading of a paper: what a design's
// tests configure (coordinates, schedules, routing tables) stays in their
// own helpers.
package emutest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/boards/emu"
	"github.com/labrunner/labrunner/drivers"
	"github.com/labrunner/labrunner/drivers/regmap"
	"github.com/labrunner/labrunner/labconfig"
)

// Board is one emulated board of a rack.
type Board struct {
	Name string
	// Kind is a board kind of package boards (zcu102, de5net, ultra96,
	// tebf0808): its part and its ports.
	Kind string
	// PPM is the board oscillator's error in parts per million, OffsetNS
	// its clock's offset at power-on, BootMS how long its firmware boots
	// (the lab file's emulated: block).
	PPM, OffsetNS float64
	BootMS        int
	// DCN marks a board the runner reaches directly (the lab file's dcn:).
	DCN bool
}

// Cable joins two ports, each "board:port".
type Cable struct {
	A, B                   string
	LatencyNS, AsymmetryNS float64
	BER                    float64 // bit error rate, both ways
}

// Rack describes a test rack.
type Rack struct {
	// Name is the lab's name ("emutest" when empty); Seed its seed (1 when
	// 0): the emulator is deterministic for it.
	Name   string
	Seed   int64
	Boards []Board
	Cables []Cable
	Faults []labconfig.Fault
	// Design is programmed into every board, in the lab's order, with the
	// catalogue's bitstream for the board's part; empty leaves the boards
	// unprogrammed (and Rig.M nil).
	Design string
	// Unprogrammed leaves the boards unprogrammed even with a Design (whose
	// manifest the rig still gives): for white-box tests that attach the
	// design themselves.
	Unprogrammed bool
	// Catalogue finds the design (bitstreams.Default() when nil).
	Catalogue *bitstreams.Catalogue
	// Timeout bounds Rig.Ctx, the context of every access the rig makes
	// (5 minutes when 0): a test that runs millions of cycles inside its
	// register writes needs its time under the race detector on a loaded
	// machine.
	Timeout time.Duration
	// PTY serves every board's console and bridge on pseudo-terminals, as
	// a lab run does; without it the boards have their in-process bus only.
	PTY bool
}

// Lab returns the lab file the rack stands for: boards emulated, reached
// and programmed through the emulator, cables and faults as described.
func (s Rack) Lab() *labconfig.Lab {
	lab := &labconfig.Lab{Name: s.Name, Seed: s.Seed, Faults: s.Faults}
	if lab.Name == "" {
		lab.Name = "emutest"
	}
	if lab.Seed == 0 {
		lab.Seed = 1
	}
	for _, b := range s.Boards {
		lab.Boards = append(lab.Boards, labconfig.Board{Name: b.Name, Kind: b.Kind, DCN: b.DCN,
			Bus: labconfig.Bus{Emulated: &struct{}{}}, Programmer: labconfig.Programmer{Type: "emulated"},
			Emulated: &labconfig.Emulated{ClockPPM: b.PPM, OffsetNS: b.OffsetNS, BootMS: b.BootMS}})
	}
	for _, c := range s.Cables {
		lab.Links = append(lab.Links, labconfig.Link{A: Endpoint(c.A), B: Endpoint(c.B),
			LatencyNS: c.LatencyNS, AsymmetryNS: c.AsymmetryNS, BER: c.BER})
	}
	return lab
}

// Rig is a started rack.
type Rig struct {
	T    testing.TB
	Rack *emu.Rack
	// Ctx bounds every access; it ends with the test.
	Ctx context.Context
	// M is the design's manifest (nil without a design).
	M *bitstreams.Manifest
	// Names are the boards in the lab's order.
	Names []string
	cat   *bitstreams.Catalogue
	buses map[string]drivers.RegisterBus
}

// Start starts the rack and programs its boards; the rack is closed when
// the test ends. Any failure fails the test.
func Start(t testing.TB, s Rack) *Rig {
	t.Helper()
	cat := s.Catalogue
	if cat == nil {
		cat = bitstreams.Default()
	}
	r, err := emu.Start(s.Lab(), emu.Options{NoPTY: !s.PTY, Catalogue: cat})
	if err != nil {
		t.Fatalf("emu.Start: %v", err)
	}
	t.Cleanup(func() { r.Close() })
	timeout := s.Timeout
	if timeout == 0 {
		timeout = 5 * time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	g := &Rig{T: t, Rack: r, Ctx: ctx, cat: cat, buses: map[string]drivers.RegisterBus{}}
	for _, b := range r.Boards() {
		g.Names = append(g.Names, b.Name())
		g.buses[b.Name()] = b.Bus()
	}
	if s.Design == "" {
		return g
	}
	if g.M, err = cat.Design(s.Design); err != nil {
		t.Fatalf("catalogue: %v", err)
	}
	if !s.Unprogrammed {
		for _, n := range g.Names {
			g.Program(n, s.Design)
		}
	}
	return g
}

// Program programs one board with the catalogue's bitstream of design for
// its part, through its emulated programmer.
func (g *Rig) Program(board, design string) {
	g.T.Helper()
	b := g.board(board)
	img, err := g.cat.Image(design, b.Kind().Part)
	if err != nil {
		g.T.Fatalf("catalogue image for %s: %v", board, err)
	}
	if err := b.Programmer().Program(g.Ctx, img); err != nil {
		g.T.Fatalf("program %s: %v", board, err)
	}
}

func (g *Rig) board(name string) *emu.Board {
	g.T.Helper()
	b, ok := g.Rack.Board(name)
	if !ok {
		g.T.Fatalf("no board %s in the rack (boards: %s)", name, strings.Join(g.Names, ", "))
	}
	return b
}

// Bus is a board's in-process register bus.
func (g *Rig) Bus(board string) drivers.RegisterBus {
	if bus, ok := g.buses[board]; ok {
		return bus
	}
	g.T.Helper()
	return g.board(board).Bus()
}

// Regs is a board's registers by the design's names, as the runner sees
// them (drivers/regmap).
func (g *Rig) Regs(board string) *regmap.Regs {
	g.T.Helper()
	if g.M == nil {
		g.T.Fatal("Regs: the rack has no design")
	}
	return regmap.New(g.Bus(board), g.M, board)
}

// Addr is the address of a register of the design ("NAME" or "NAME[i]").
func (g *Rig) Addr(reg string) uint64 {
	g.T.Helper()
	if g.M == nil {
		g.T.Fatalf("register %s: the rack has no design", reg)
	}
	_, a, err := g.M.Lookup(reg)
	if err != nil {
		g.T.Fatal(err)
	}
	return a
}

// Read reads a register of a board by name.
func (g *Rig) Read(board, reg string) uint32 {
	g.T.Helper()
	return g.ReadAddr(board, g.Addr(reg))
}

// ReadAddr reads the word at an address of a board.
func (g *Rig) ReadAddr(board string, a uint64) uint32 {
	g.T.Helper()
	v, err := g.Bus(board).Read32(g.Ctx, a)
	if err != nil {
		g.T.Fatalf("%s: read 0x%x: %v", board, a, err)
	}
	return v
}

// Read64 reads a 64-bit counter: NAME_LO (which latches the high half),
// then NAME_HI; lo names the _LO register.
func (g *Rig) Read64(board, lo string) uint64 {
	g.T.Helper()
	name, ok := strings.CutSuffix(lo, "_LO")
	if !ok {
		g.T.Fatalf("Read64(%s): name the _LO half of the counter", lo)
	}
	l := g.Read(board, lo)
	h := g.Read(board, name+"_HI")
	return uint64(h)<<32 | uint64(l)
}

// Write writes a register of a board by name.
func (g *Rig) Write(board, reg string, v uint32) {
	g.T.Helper()
	g.WriteAddr(board, g.Addr(reg), v)
}

// WriteAddr writes the word at an address of a board.
func (g *Rig) WriteAddr(board string, a uint64, v uint32) {
	g.T.Helper()
	if err := g.Bus(board).Write32(g.Ctx, a, v); err != nil {
		g.T.Fatalf("%s: write 0x%x=0x%x: %v", board, a, v, err)
	}
}

// WriteAll writes a register of every board.
func (g *Rig) WriteAll(reg string, v uint32) {
	g.T.Helper()
	for _, n := range g.Names {
		g.Write(n, reg, v)
	}
}

// Sum adds a register up over every board.
func (g *Rig) Sum(reg string) uint64 {
	g.T.Helper()
	var s uint64
	for _, n := range g.Names {
		s += uint64(g.Read(n, reg))
	}
	return s
}

// maxBurst is the largest burst the UART bridge carries.
const maxBurst = 256

// Burst reads n consecutive words from address a of a board, in bursts.
func (g *Rig) Burst(board string, a uint64, n int) []uint32 {
	g.T.Helper()
	out := make([]uint32, n)
	for off := 0; off < n; off += maxBurst {
		k := min(maxBurst, n-off)
		if err := g.Bus(board).ReadBurst(g.Ctx, a+uint64(4*off), out[off:off+k]); err != nil {
			g.T.Fatalf("%s: burst read 0x%x: %v", board, a+uint64(4*off), err)
		}
	}
	return out
}

// Pop reads n words from a pop window at address a (every read of the
// window pops one, so each burst starts at a).
func (g *Rig) Pop(board string, a uint64, n int) []uint32 {
	g.T.Helper()
	out := make([]uint32, n)
	for off := 0; off < n; off += maxBurst {
		k := min(maxBurst, n-off)
		if err := g.Bus(board).ReadBurst(g.Ctx, a, out[off:off+k]); err != nil {
			g.T.Fatalf("%s: burst read of the pop window 0x%x: %v", board, a, err)
		}
	}
	return out
}

// Endpoint reads "board:port"; it panics on a string without a colon (a
// test's own constant).
func Endpoint(s string) labconfig.Endpoint {
	b, p, ok := strings.Cut(s, ":")
	if !ok {
		panic(fmt.Sprintf("emutest: endpoint %q is not board:port", s))
	}
	return labconfig.Endpoint{Board: b, Port: p}
}

// Fault is a fault to inject, with its parameters as key, value pairs.
func Fault(name string, kv ...string) labconfig.Fault {
	f := labconfig.Fault{Name: name, Params: labconfig.Params{}}
	for i := 0; i+1 < len(kv); i += 2 {
		f.Params[kv[i]] = labconfig.Param{Values: []string{kv[i+1]}}
	}
	return f
}
