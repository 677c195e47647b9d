package emu

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/boards"
	"github.com/labrunner/labrunner/drivers"
	"github.com/labrunner/labrunner/labconfig"
)

// Board is one emulated board.
type Board struct {
	rack  *Rack
	cfg   labconfig.Board
	kind  boards.Kind
	ports []*Port

	// mu serialises everything that touches the board's state: bus
	// accesses (from the bridge and in process), programming, power.
	mu       sync.Mutex
	design   Design
	manifest *bitstreams.Manifest
	powered  bool
	booted   time.Time // wall time the firmware finished booting
	// generation counts power cycles and reprogrammings, so that a
	// console or bridge session can tell its board was reset.
	generation int

	deviceID uint32

	consolePath string
	bridgePath  string
	srv         *server     // pseudo-terminal service (serve.go)
	cmds        consoleCmds // console commands added by designs (console.go)
	mg          *mgmtBoard  // the management block (mgmt*.go), from MgmtBase up
}

func newBoard(r *Rack, cfg *labconfig.Board, kind boards.Kind) *Board {
	h := fnv.New32a()
	h.Write([]byte(cfg.Name))
	b := &Board{rack: r, cfg: *cfg, kind: kind, deviceID: h.Sum32()}
	for _, p := range kind.Ports {
		b.ports = append(b.ports, &Port{Board: b, Name: p})
	}
	return b
}

// Name is the board's name in the lab file.
func (b *Board) Name() string { return b.cfg.Name }

// Kind is the board's kind.
func (b *Board) Kind() boards.Kind { return b.kind }

// Config is the board's lab-file entry.
func (b *Board) Config() labconfig.Board { return b.cfg }

// Rack is the rack the board belongs to.
func (b *Board) Rack() *Rack { return b.rack }

// DeviceID is the 32-bit identifier the bridge's INFO command reports.
func (b *Board) DeviceID() uint32 { return b.deviceID }

// Ports lists the board's cages.
func (b *Board) Ports() []*Port { return b.ports }

// Component names the cable-connected set of boards b belongs to by its
// first board in lab order: the boards a design's shared fabric spans
// (Rack.Shared keys it by this name).
func (b *Board) Component() string {
	order := map[string]int{}
	for i, x := range b.Rack().Boards() {
		order[x.Name()] = i
	}
	seen := map[string]bool{b.Name(): true}
	queue := []*Board{b}
	first := b.Name()
	for len(queue) > 0 {
		x := queue[0]
		queue = queue[1:]
		if order[x.Name()] < order[first] {
			first = x.Name()
		}
		for _, p := range x.Ports() {
			if q := p.Peer(); q != nil && !seen[q.Board.Name()] {
				seen[q.Board.Name()] = true
				queue = append(queue, q.Board)
			}
		}
	}
	return first
}

// Port returns the cage of that name, or nil.
func (b *Board) Port(name string) *Port {
	for _, p := range b.ports {
		if p.Name == name {
			return p
		}
	}
	return nil
}

// ClockPPM is the error of the board's oscillator, in parts per million,
// including a slow-clock fault.
func (b *Board) ClockPPM() float64 {
	ppm := 0.0
	if b.cfg.Emulated != nil {
		ppm = b.cfg.Emulated.ClockPPM
	}
	for _, f := range b.FaultsNamed("slow-clock") {
		ppm += paramFloat(f.Params, "ppm", -500)
	}
	return ppm
}

// OffsetNS is the board clock's offset at power-on.
func (b *Board) OffsetNS() float64 {
	if b.cfg.Emulated != nil {
		return b.cfg.Emulated.OffsetNS
	}
	return 0
}

// Rand returns a deterministic random stream for this board and purpose.
func (b *Board) Rand(purpose string) *rand.Rand {
	return randFor(b.rack.seed, b.cfg.Name+"/"+purpose)
}

// FaultsNamed returns the injected faults of that name aimed at this board
// (directly, or at one of its ports).
func (b *Board) FaultsNamed(name string) []labconfig.Fault {
	var out []labconfig.Fault
	for _, f := range b.rack.faults {
		if f.Name == name && f.Board == b.cfg.Name {
			out = append(out, f)
		}
	}
	return out
}

// HasFault reports whether a fault of that name is aimed at this board.
func (b *Board) HasFault(name string) bool { return len(b.FaultsNamed(name)) > 0 }

// Manifest is the manifest of the loaded design, or nil.
func (b *Board) Manifest() *bitstreams.Manifest {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.manifest
}

// DesignName is the name of the loaded design, or "".
func (b *Board) DesignName() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.design == nil {
		return ""
	}
	return b.design.Name()
}

// LoadedDesign returns the loaded design, or nil. Multi-board designs use it
// to find their instances on neighbouring boards; they must not call its
// Read32/Write32 (that bypasses the board's lock).
func (b *Board) LoadedDesign() Design {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.design
}

// Powered reports whether the board is on.
func (b *Board) Powered() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.powered
}

// read32 and write32 are the board's bus: the management window (mgmt.go)
// is decoded first, without the board's lock; everything else is the
// design's.
func (b *Board) read32(addr uint32) (uint32, error) {
	if addr >= MgmtBase {
		return b.mgmtRead32(addr)
	}
	return b.designRead32(addr)
}

func (b *Board) write32(addr, v uint32) error {
	if addr >= MgmtBase {
		return b.mgmtWrite32(addr, v)
	}
	return b.designWrite32(addr, v)
}

func (b *Board) designRead32(addr uint32) (uint32, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.powered {
		return 0, ErrBusy
	}
	if addr%4 != 0 {
		return 0, fmt.Errorf("address 0x%x is not 4-byte aligned", addr)
	}
	if b.design == nil {
		return 0, fmt.Errorf("%w (no design is loaded)", ErrBusError)
	}
	return b.design.Read32(addr)
}

func (b *Board) designWrite32(addr, v uint32) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.powered {
		return ErrBusy
	}
	if addr%4 != 0 {
		return fmt.Errorf("address 0x%x is not 4-byte aligned", addr)
	}
	if b.design == nil {
		return fmt.Errorf("%w (no design is loaded)", ErrBusError)
	}
	return b.design.Write32(addr, v)
}

// program loads a checked image: the emulated FPGA refuses a file whose part
// is not the board's or whose bytes are not those the catalogue lists (its
// configuration CRC would fail), and keeps the previous design then.
func (b *Board) program(img drivers.Image) error {
	m, err := b.rack.cat.Design(img.Design)
	if err != nil {
		return drivers.Setup(b.cfg.Name, "program", "", err)
	}
	info, err := bitstreams.Parse(img.Path, img.Data)
	if err != nil {
		return drivers.Setup(b.cfg.Name, "program", "the FPGA rejected the configuration data", err)
	}
	if info.Part != "" && !bitstreams.SamePart(info.Part, b.kind.Part) {
		return drivers.Setup(b.cfg.Name, "program", "", fmt.Errorf("configuration failed: the bitstream is for %s, the device is %s (IDCODE mismatch)", info.Part, b.kind.Part))
	}
	known := false
	for _, f := range m.Files {
		if f.SHA256 == info.SHA256 {
			known = true
		}
	}
	if !known {
		return drivers.Setup(b.cfg.Name, "program", "rebuild or re-copy the file", fmt.Errorf("configuration failed: CRC error (the file is not one the catalogue lists for %s)", m.Name))
	}
	registryMu.Lock()
	f, ok := designs[m.Name]
	registryMu.Unlock()
	if !ok {
		return drivers.Setup(b.cfg.Name, "program", "", fmt.Errorf("design %s is not emulated (emulated designs: %v)", m.Name, DesignNames()))
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.powered {
		return drivers.Infra(b.cfg.Name, "program", "switch the board on", fmt.Errorf("board is powered off"))
	}
	if b.design != nil {
		b.design.Close()
		b.design, b.manifest = nil, nil
	}
	d, err := f(b, m)
	if err != nil {
		return drivers.Setup(b.cfg.Name, "program", "", err)
	}
	b.design, b.manifest = d, m
	b.generation++
	b.rack.log.Info("programmed", "board", b.cfg.Name, "design", m.Name, "version", m.Version)
	return nil
}

func (b *Board) setPower(on bool) {
	b.mu.Lock()
	if b.powered == on {
		b.mu.Unlock()
		return
	}
	b.powered = on
	b.generation++
	if !on && b.design != nil {
		b.design.Close()
		b.design, b.manifest = nil, nil
	}
	if on {
		b.booted = time.Now()
	}
	b.mu.Unlock()
	b.mgmtPower(on)
	if on && b.srv != nil {
		b.srv.boot()
	}
}

func (b *Board) powerOn() { b.setPower(true) }

func (b *Board) close() {
	b.setPower(false)
	if b.srv != nil {
		b.srv.close()
	}
}

// Bus returns the board's in-process register bus.
func (b *Board) Bus() drivers.RegisterBus { return &bus{b: b} }

// Programmer returns the board's emulated programmer.
func (b *Board) Programmer() drivers.Programmer { return &programmer{b: b} }

// Power returns the board's emulated power switch.
func (b *Board) Power() drivers.Power { return &power{b: b} }

type bus struct{ b *Board }

func (x *bus) check(ctx context.Context, addr uint64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if x.b.HasFault("board-silent") {
		// A board that stopped answering: the caller's deadline decides.
		<-ctx.Done()
		return drivers.Infra(x.b.cfg.Name, fmt.Sprintf("access 0x%x", addr), "the board does not answer: check power and cables", ctx.Err())
	}
	if addr > 0xffffffff {
		return drivers.Setup(x.b.cfg.Name, fmt.Sprintf("access 0x%x", addr), "", fmt.Errorf("address 0x%x beyond the 32-bit design space", addr))
	}
	if err := drivers.CheckAligned(addr); err != nil {
		return drivers.Setup(x.b.cfg.Name, fmt.Sprintf("access 0x%x", addr), "register addresses are multiples of 4", err)
	}
	return nil
}

func (x *bus) Read32(ctx context.Context, addr uint64) (uint32, error) {
	if err := x.check(ctx, addr); err != nil {
		return 0, err
	}
	v, err := x.b.read32(uint32(addr))
	return v, x.classify(fmt.Sprintf("read32 0x%08x", addr), err)
}

func (x *bus) Write32(ctx context.Context, addr uint64, v uint32) error {
	if err := x.check(ctx, addr); err != nil {
		return err
	}
	return x.classify(fmt.Sprintf("write32 0x%08x", addr), x.b.write32(uint32(addr), v))
}

// classify gives a design's error the class the UART bridge gives the
// status it maps to (busStatus), so that a fault is judged the same on
// either bus: an undecoded or read-only address is setup, a busy board
// infrastructure, anything else the design refusing the access.
func (x *bus) classify(op string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrBusy):
		return drivers.Infra(x.b.cfg.Name, op, "the board is being programmed or is off", err)
	case errors.Is(err, ErrBusError):
		return drivers.Setup(x.b.cfg.Name, op, "is the design programmed, and is the address in its register map?", err)
	case errors.Is(err, ErrReadOnly):
		return drivers.Setup(x.b.cfg.Name, op, "the register is read-only in the loaded design", err)
	}
	return drivers.Design(x.b.cfg.Name, op, "", err)
}

func (x *bus) ReadBurst(ctx context.Context, addr uint64, dst []uint32) error {
	for i := range dst {
		v, err := x.Read32(ctx, addr+uint64(4*i))
		if err != nil {
			return err
		}
		dst[i] = v
	}
	return nil
}

func (x *bus) WriteBurst(ctx context.Context, addr uint64, src []uint32) error {
	for i, v := range src {
		if err := x.Write32(ctx, addr+uint64(4*i), v); err != nil {
			return err
		}
	}
	return nil
}

func (x *bus) Close() error { return nil }

type programmer struct{ b *Board }

func (p *programmer) Name() string { return "emulated" }

func (p *programmer) Program(ctx context.Context, img drivers.Image) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if p.b.HasFault("board-silent") {
		<-ctx.Done()
		return drivers.Infra(p.b.cfg.Name, "program", "the board does not answer: check power and the JTAG cable", ctx.Err())
	}
	return p.b.program(img)
}

type power struct{ b *Board }

func (p *power) Name() string { return "emulated" }

func (p *power) Set(ctx context.Context, on bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p.b.setPower(on)
	return nil
}

func paramFloat(p labconfig.Params, key string, def float64) float64 {
	v, ok := p[key]
	if !ok || len(v.Values) == 0 {
		return def
	}
	var f float64
	if _, err := fmt.Sscan(v.Values[0], &f); err != nil {
		return def
	}
	return f
}

func init() {
	RegisterFault(FaultInfo{Name: "board-silent", Scope: "board",
		Doc: "the board stops answering on every channel (bridge, console, programmer); the runner must give up at its deadlines and report an infrastructure error"})
	RegisterFault(FaultInfo{Name: "slow-clock", Scope: "board", Params: map[string]string{"ppm": "-500"},
		Doc: "the board's oscillator runs off by ppm parts per million (default -500): timestamps and time sync drift. " +
			"It is seen through TimeSync against a cabled peer (the primary names its own clock, a client its offset); " +
			"a board with no cable has no reference clock to be compared with, so the fault needs a cabled board",
		Needs: []string{NeedsCable}})
}
