// Package regmap gives symbolic access to a board's registers through the
// register map of the design loaded on it (a bitstreams.Manifest): "ID",
// "LINK_STATUS[1]", "COORD.X", "LINK_CTRL[0].LOOPBACK". It refuses what the
// map says must not happen before anything reaches the bus: accesses outside
// the design's windows, writes to read-only registers and windows, reads of
// write-only registers, values wider than their register or field,
// unaligned addresses. Dump reads every register that can be read without
// disturbing the hardware, so that health checks and bring-up dumps never
// pop a FIFO or clear a counter.
package regmap

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/drivers"
)

// Regs is a register bus seen through a design's register map.
type Regs struct {
	bus   drivers.RegisterBus
	m     *bitstreams.Manifest
	board string

	byName map[string]*bitstreams.Register
	names  []string        // register names, sorted, for suggestions
	byAddr map[uint64]elem // every register (array element) by address
	// resolved caches successful lookups by the name as given: tests and
	// traffic loops use the same few names over and over.
	resolved sync.Map // string -> Loc
}

type elem struct {
	reg   *bitstreams.Register
	index int // -1 for a scalar register
}

// Loc is a resolved symbolic name.
type Loc struct {
	Name  string // canonical form: NAME, NAME[i], NAME.FIELD, NAME[i].FIELD
	Reg   *bitstreams.Register
	Index int // array element, -1 for a scalar register
	Addr  uint64
	Field *bitstreams.Field // nil for a whole register
	// Lo and Hi are the field's bits, or 0 and width-1 for a whole register.
	Lo, Hi uint
}

// Mask is the bits Loc covers inside its register.
func (l Loc) Mask() uint32 { return uint32((uint64(1)<<(l.Hi-l.Lo+1) - 1) << l.Lo) }

// New returns the registers of the design m on bus. board names the board
// in errors. The map is checked as names are used; Check reports every
// problem at once. m must not change afterwards: resolved names are cached.
func New(bus drivers.RegisterBus, m *bitstreams.Manifest, board string) *Regs {
	r := &Regs{bus: bus, m: m, board: board, byName: map[string]*bitstreams.Register{}, byAddr: map[uint64]elem{}}
	for i := range m.Registers {
		reg := &m.Registers[i]
		if _, dup := r.byName[reg.Name]; dup {
			continue // Check reports it; the first declaration wins
		}
		r.byName[reg.Name] = reg
		r.names = append(r.names, reg.Name)
		if reg.Count > 1 {
			for k := 0; k < reg.Count && reg.Stride > 0; k++ {
				a := reg.Offset + uint64(k)*reg.Stride
				if _, taken := r.byAddr[a]; !taken {
					r.byAddr[a] = elem{reg, k}
				}
			}
		} else if _, taken := r.byAddr[reg.Offset]; !taken {
			r.byAddr[reg.Offset] = elem{reg, -1}
		}
	}
	sort.Strings(r.names)
	return r
}

// Manifest returns the map the registers are read through.
func (r *Regs) Manifest() *bitstreams.Manifest { return r.m }

// where names a register's declaration for error messages.
func (r *Regs) where(reg *bitstreams.Register) string {
	src := r.m.Source
	if src == "" {
		src = "design " + r.m.Name
	}
	if reg != nil && reg.Line > 0 {
		return fmt.Sprintf("%s:%d", src, reg.Line)
	}
	return src
}

func (r *Regs) setup(op, hint string, err error) error { return drivers.Setup(r.board, op, hint, err) }

// Lookup resolves a symbolic name against the map.
func (r *Regs) Lookup(name string) (Loc, error) {
	if l, ok := r.resolved.Load(name); ok {
		return l.(Loc), nil
	}
	loc, err := r.lookup(name)
	if err == nil {
		r.resolved.Store(name, loc)
	}
	return loc, err
}

func (r *Regs) lookup(name string) (Loc, error) {
	op := "resolve " + name
	p, err := parseRef(name)
	if err != nil {
		return Loc{}, r.setup(op, "", err)
	}
	reg := r.byName[p.reg]
	if reg == nil {
		hint := didYouMean(p.reg, r.names)
		if hint == "" {
			hint = "list the map with `labrunner regs` or read " + r.where(nil)
		}
		return Loc{}, r.setup(op, hint, fmt.Errorf("design %s %s has no register %s", r.m.Name, r.m.Version, p.reg))
	}
	loc := Loc{Reg: reg, Index: -1, Addr: reg.Offset, Name: reg.Name}
	switch {
	case reg.Count > 1:
		if p.index < 0 {
			return Loc{}, r.setup(op, fmt.Sprintf("name one element, %s[0] .. %s[%d]", reg.Name, reg.Name, reg.Count-1),
				fmt.Errorf("%s is an array of %d registers", reg.Name, reg.Count))
		}
		if p.index >= reg.Count {
			return Loc{}, r.setup(op, fmt.Sprintf("valid elements are %s[0] .. %s[%d]", reg.Name, reg.Name, reg.Count-1),
				fmt.Errorf("index %d is beyond %s, an array of %d (%s)", p.index, reg.Name, reg.Count, r.where(reg)))
		}
		if reg.Stride == 0 || reg.Stride%4 != 0 {
			return Loc{}, r.setup(op, "fix the register map", fmt.Errorf("%s: array %s has stride 0x%x, not a positive multiple of 4", r.where(reg), reg.Name, reg.Stride))
		}
		loc.Index = p.index
		loc.Addr = reg.Offset + uint64(p.index)*reg.Stride
		loc.Name = fmt.Sprintf("%s[%d]", reg.Name, p.index)
	case p.index > 0:
		return Loc{}, r.setup(op, "drop the index", fmt.Errorf("%s is a single register, not an array", reg.Name))
	}
	loc.Lo, loc.Hi = 0, uint(regWidth(reg)-1)
	if p.field == "" {
		return loc, nil
	}
	var names []string
	for i := range reg.Fields {
		f := &reg.Fields[i]
		names = append(names, f.Name)
		if f.Name != p.field {
			continue
		}
		lo, hi, err := fieldBits(reg, f)
		if err != nil {
			return Loc{}, r.setup(op, "fix the register map", fmt.Errorf("%s: %w", r.where(reg), err))
		}
		loc.Field, loc.Lo, loc.Hi = f, lo, hi
		loc.Name += "." + f.Name
		return loc, nil
	}
	if len(names) == 0 {
		return Loc{}, r.setup(op, "read or write the whole register", fmt.Errorf("%s has no fields", reg.Name))
	}
	hint := didYouMean(p.field, names)
	if hint == "" {
		hint = "its fields are " + strings.Join(names, ", ")
	}
	return Loc{}, r.setup(op, hint, fmt.Errorf("%s has no field %s", reg.Name, p.field))
}

// window returns the window holding the word at addr, or nil.
func (r *Regs) window(addr uint64) *bitstreams.Window {
	for i := range r.m.Windows {
		if w := &r.m.Windows[i]; inWindow(w, addr) {
			return w
		}
	}
	return nil
}

// inWindow reports whether all four bytes of the word at addr are in w.
func inWindow(w *bitstreams.Window, addr uint64) bool {
	return addr >= w.Base && addr-w.Base < w.Size && w.Size-(addr-w.Base) >= 4
}

// checkRange refuses an access of words words at addr unless it is aligned
// and every word lies in a window that allows it, and no register it touches
// forbids it (a read of a write-only register, a write to a read-only one).
// An empty burst is checked as if it were one word.
func (r *Regs) checkRange(op string, addr uint64, words int, write bool) error {
	if err := drivers.CheckAligned(addr); err != nil {
		return r.setup(op, "registers are 32-bit words at multiples of 4", err)
	}
	n := max(words, 1)
	if uint64(n-1) > (math.MaxUint64-addr)/4 {
		return r.setup(op, "", fmt.Errorf("%d words at 0x%x run past the end of the address space", words, addr))
	}
	var w *bitstreams.Window
	for k := 0; k < n; k++ {
		a := addr + uint64(k)*4
		if w == nil || !inWindow(w, a) {
			if w = r.window(a); w == nil {
				return r.setup(op, "the design's windows are "+r.windowList(), fmt.Errorf("address 0x%x is outside every window of design %s", a, r.m.Name))
			}
			if write && !w.Access.Writable() {
				return r.setup(op, "the window is "+string(w.Access), fmt.Errorf("window %s [0x%x, 0x%x) does not take writes", w.Name, w.Base, w.Base+w.Size))
			}
			if !write && !w.Access.Readable() {
				return r.setup(op, "the window is "+string(w.Access), fmt.Errorf("window %s [0x%x, 0x%x) is write-only", w.Name, w.Base, w.Base+w.Size))
			}
		}
		if e, ok := r.byAddr[a]; ok {
			if err := r.checkElem(op, e, write); err != nil {
				return err
			}
		}
	}
	return nil
}

func (r *Regs) checkElem(op string, e elem, write bool) error {
	name := e.reg.Name
	if e.index >= 0 {
		name = fmt.Sprintf("%s[%d]", name, e.index)
	}
	return r.checkAccess(op, name, e.reg, write)
}

// checkAccess applies a register's access to a read or a write of it.
func (r *Regs) checkAccess(op, name string, reg *bitstreams.Register, write bool) error {
	switch {
	case write && !reg.Access.Writable():
		return r.setup(op, "see "+r.where(reg), fmt.Errorf("%s is read-only (%s)", name, accessOrUnset(reg.Access)))
	case !write && !reg.Access.Readable():
		return r.setup(op, "a write-only register reads back garbage; keep the value written instead ("+r.where(reg)+")",
			fmt.Errorf("%s is write-only (%s)", name, reg.Access))
	}
	return nil
}

func accessOrUnset(a bitstreams.Access) string {
	if a == "" {
		return "no access given"
	}
	return string(a)
}

func (r *Regs) windowList() string {
	var ws []string
	for _, w := range r.m.Windows {
		ws = append(ws, fmt.Sprintf("%s [0x%x, 0x%x) %s", w.Name, w.Base, w.Base+w.Size, w.Access))
	}
	if len(ws) == 0 {
		return "none: the manifest declares no window"
	}
	return strings.Join(ws, ", ")
}

// Read reads a register, or a field of it (the field's value, shifted down).
// Registers whose read has a side effect (rc, pop) are read when named: the
// caller asked for it. Write-only registers are refused.
func (r *Regs) Read(ctx context.Context, name string) (uint32, error) {
	loc, err := r.Lookup(name)
	if err != nil {
		return 0, err
	}
	return r.readLoc(ctx, loc)
}

func (r *Regs) readLoc(ctx context.Context, loc Loc) (uint32, error) {
	op := "read " + loc.Name
	if err := r.checkAccess(op, registerName(loc), loc.Reg, false); err != nil {
		return 0, err
	}
	if err := r.checkRange(op, loc.Addr, 1, false); err != nil {
		return 0, err
	}
	v, err := r.bus.Read32(ctx, loc.Addr)
	if err != nil {
		return 0, fmt.Errorf("%s at 0x%x: %w", op, loc.Addr, err)
	}
	return (v & loc.Mask()) >> loc.Lo, nil
}

// Write writes a whole register, or a field (as WriteField does).
func (r *Regs) Write(ctx context.Context, name string, v uint32) error {
	loc, err := r.Lookup(name)
	if err != nil {
		return err
	}
	if loc.Field != nil {
		return r.writeField(ctx, loc, v)
	}
	op := fmt.Sprintf("write %s = 0x%x", loc.Name, v)
	if err := r.checkAccess(op, loc.Name, loc.Reg, true); err != nil {
		return err
	}
	if w := regWidth(loc.Reg); w < 32 && v>>uint(w) != 0 {
		return r.setup(op, "see "+r.where(loc.Reg), fmt.Errorf("0x%x does not fit %s, %d bits wide", v, loc.Name, w))
	}
	return r.write(ctx, op, loc.Addr, v)
}

func (r *Regs) write(ctx context.Context, op string, addr uint64, v uint32) error {
	if err := r.checkRange(op, addr, 1, true); err != nil {
		return err
	}
	if err := r.bus.Write32(ctx, addr, v); err != nil {
		return fmt.Errorf("%s at 0x%x: %w", op, addr, err)
	}
	return nil
}

// ReadField reads field of register name ("LINK_STATUS[1]", "UP").
func (r *Regs) ReadField(ctx context.Context, name, field string) (uint32, error) {
	loc, err := r.fieldLoc(name, field)
	if err != nil {
		return 0, err
	}
	return r.readLoc(ctx, loc)
}

// WriteField sets field of register name to v. A read-write register is
// read, modified and written back; in a w1c register only the field's bits
// are written (writing 0 to the others leaves them alone). Read-only
// registers are refused, and so are write-only ones: their other fields
// cannot be read back, so build the whole value with Compose and Write it.
func (r *Regs) WriteField(ctx context.Context, name, field string, v uint32) error {
	loc, err := r.fieldLoc(name, field)
	if err != nil {
		return err
	}
	return r.writeField(ctx, loc, v)
}

func (r *Regs) fieldLoc(name, field string) (Loc, error) {
	if strings.Contains(name, ".") {
		return Loc{}, r.setup("resolve "+name, "give the register and the field separately", fmt.Errorf("%q already names a field", name))
	}
	return r.Lookup(name + "." + field)
}

func (r *Regs) writeField(ctx context.Context, loc Loc, v uint32) error {
	op := fmt.Sprintf("write %s = 0x%x", loc.Name, v)
	width := loc.Hi - loc.Lo + 1
	if width < 32 && v>>width != 0 {
		return r.setup(op, "see "+r.where(loc.Reg), fmt.Errorf("0x%x does not fit %s, %d bits wide", v, loc.Name, width))
	}
	reg := loc.Reg
	switch reg.Access {
	case bitstreams.RW:
		if err := r.checkRange(op, loc.Addr, 1, false); err != nil {
			return err
		}
		old, err := r.bus.Read32(ctx, loc.Addr)
		if err != nil {
			return fmt.Errorf("%s: read-modify-write: read 0x%x: %w", op, loc.Addr, err)
		}
		return r.write(ctx, op, loc.Addr, old&^loc.Mask()|v<<loc.Lo)
	case bitstreams.W1C:
		return r.write(ctx, op, loc.Addr, v<<loc.Lo)
	case bitstreams.WO:
		return r.setup(op, fmt.Sprintf("build the whole value with Compose(%q, fields) and Write it", registerName(loc)),
			fmt.Errorf("%s is write-only: a read-modify-write of one field is impossible", registerName(loc)))
	}
	return r.setup(op, "see "+r.where(reg), fmt.Errorf("%s is read-only (%s)", registerName(loc), accessOrUnset(reg.Access)))
}

// registerName is loc's name without its field.
func registerName(loc Loc) string {
	if i := strings.IndexByte(loc.Name, '.'); i >= 0 {
		return loc.Name[:i]
	}
	return loc.Name
}

// Compose builds a whole-register value from field values; fields not
// named are 0. It is how a write-only command register is written by field
// names: r.Write(ctx, "TG_CTRL", must(r.Compose("TG_CTRL", map[string]uint32{"START": 1}))).
func (r *Regs) Compose(name string, fields map[string]uint32) (uint32, error) {
	if strings.Contains(name, ".") {
		return 0, r.setup("compose "+name, "name the register only", fmt.Errorf("%q names a field", name))
	}
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var v uint32
	for _, k := range keys {
		loc, err := r.Lookup(name + "." + k)
		if err != nil {
			return 0, err
		}
		fv := fields[k]
		if width := loc.Hi - loc.Lo + 1; width < 32 && fv>>width != 0 {
			return 0, r.setup("compose "+name, "see "+r.where(loc.Reg), fmt.Errorf("0x%x does not fit %s, %d bits wide", fv, loc.Name, width))
		}
		v |= fv << loc.Lo
	}
	return v, nil
}

// Read64 reads a 64-bit counter whose low register is loName and whose
// Counter.Hi names the high one: low first, which latches the high half in
// the hardware, then high. For an array element, the high register's
// element of the same index is read.
func (r *Regs) Read64(ctx context.Context, loName string) (uint64, error) {
	lo, err := r.Lookup(loName)
	if err != nil {
		return 0, err
	}
	op := "read64 " + lo.Name
	if lo.Field != nil || lo.Reg.Counter == nil || lo.Reg.Counter.Hi == "" {
		return 0, r.setup(op, "read it with Read; 64-bit counters declare counter.hi on their low register",
			fmt.Errorf("%s is not the low half of a 64-bit counter (%s)", lo.Name, r.where(lo.Reg)))
	}
	hiName := lo.Reg.Counter.Hi
	if hr := r.byName[hiName]; hr != nil && hr.Count > 1 && lo.Index >= 0 {
		hiName = fmt.Sprintf("%s[%d]", hiName, lo.Index)
	}
	hi, err := r.Lookup(hiName)
	if err != nil {
		return 0, fmt.Errorf("%s: counter.hi of %s (%s): %w", op, lo.Reg.Name, r.where(lo.Reg), err)
	}
	l, err := r.readLoc(ctx, lo)
	if err != nil {
		return 0, err
	}
	h, err := r.readLoc(ctx, hi)
	if err != nil {
		return 0, err
	}
	return uint64(h)<<32 | uint64(l), nil
}

// ReadAddr reads the word at a raw address, refused unless the address is
// aligned, inside a readable window and not a write-only register.
func (r *Regs) ReadAddr(ctx context.Context, addr uint64) (uint32, error) {
	op := fmt.Sprintf("read 0x%x", addr)
	if err := r.checkRange(op, addr, 1, false); err != nil {
		return 0, err
	}
	v, err := r.bus.Read32(ctx, addr)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", op, err)
	}
	return v, nil
}

// WriteAddr writes the word at a raw address, refused unless the address
// is aligned, inside a writable window and not a read-only register.
func (r *Regs) WriteAddr(ctx context.Context, addr uint64, v uint32) error {
	return r.write(ctx, fmt.Sprintf("write 0x%x = 0x%x", addr, v), addr, v)
}

// ReadBurst reads consecutive words from addr, with the checks of ReadAddr
// on every word. Reading a FIFO window pops it, which the caller asked for.
func (r *Regs) ReadBurst(ctx context.Context, addr uint64, dst []uint32) error {
	op := fmt.Sprintf("read burst of %d words at 0x%x", len(dst), addr)
	if err := r.checkRange(op, addr, len(dst), false); err != nil {
		return err
	}
	if err := r.bus.ReadBurst(ctx, addr, dst); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return nil
}

// WriteBurst writes consecutive words from addr, with the checks of
// WriteAddr on every word.
func (r *Regs) WriteBurst(ctx context.Context, addr uint64, src []uint32) error {
	op := fmt.Sprintf("write burst of %d words at 0x%x", len(src), addr)
	if err := r.checkRange(op, addr, len(src), true); err != nil {
		return err
	}
	if err := r.bus.WriteBurst(ctx, addr, src); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return nil
}

// Value is one register in a dump.
type Value struct {
	Name   string // NAME or NAME[i]
	Addr   uint64
	Access bitstreams.Access
	Value  uint32
	Fields []FieldValue
	// Skipped says why the register was not read (Value is then 0): a read
	// side effect, write-only, outside every readable window.
	Skipped string
}

// FieldValue is a field's value in a dump.
type FieldValue struct {
	Name  string
	Bits  string // "hi:lo" or "n"
	Value uint32
}

// Dump reads every register that can be read without changing the
// hardware's state, in map order, array elements in index order. Registers
// whose read has a side effect (rc, pop) and write-only registers are
// listed as skipped, never read. A bus failure ends the dump: what was read
// until then is returned with the error.
func (r *Regs) Dump(ctx context.Context) ([]Value, error) {
	var out []Value
	seen := map[string]bool{}
	for i := range r.m.Registers {
		reg := &r.m.Registers[i]
		if seen[reg.Name] {
			continue
		}
		seen[reg.Name] = true
		n := 1
		if reg.Count > 1 {
			n = reg.Count
		}
		for k := 0; k < n; k++ {
			v := Value{Name: reg.Name, Addr: reg.Offset, Access: reg.Access}
			if reg.Count > 1 {
				v.Name = fmt.Sprintf("%s[%d]", reg.Name, k)
				v.Addr = reg.Offset + uint64(k)*reg.Stride
			}
			switch {
			case reg.Access.ReadSideEffect():
				v.Skipped = fmt.Sprintf("read side effect (%s): reading would change the hardware", reg.Access)
			case !reg.Access.Readable():
				v.Skipped = "write-only"
			case reg.Count > 1 && (reg.Stride == 0 || reg.Stride%4 != 0):
				v.Skipped = fmt.Sprintf("array stride 0x%x is not a positive multiple of 4 (%s)", reg.Stride, r.where(reg))
			}
			if v.Skipped == "" {
				if err := r.checkRange("dump "+v.Name, v.Addr, 1, false); err != nil {
					v.Skipped = "refused by the map: " + err.Error()
				}
			}
			if v.Skipped != "" {
				out = append(out, v)
				continue
			}
			x, err := r.bus.Read32(ctx, v.Addr)
			if err != nil {
				return out, fmt.Errorf("dump: read %s at 0x%x: %w", v.Name, v.Addr, err)
			}
			v.Value = x
			for fi := range reg.Fields {
				f := &reg.Fields[fi]
				lo, hi, err := fieldBits(reg, f)
				if err != nil {
					continue // Check reports it; the register's value is still right
				}
				loc := Loc{Lo: lo, Hi: hi}
				bits := fmt.Sprintf("%d:%d", hi, lo)
				if hi == lo {
					bits = fmt.Sprint(lo)
				}
				v.Fields = append(v.Fields, FieldValue{Name: f.Name, Bits: bits, Value: (x & loc.Mask()) >> lo})
			}
			out = append(out, v)
		}
	}
	return out, nil
}

// Check reports every problem of the map that would make a name fail or an
// access be refused at run time: duplicate names, unknown access modes,
// bad field bits, arrays without a stride, registers outside every window,
// counter.hi naming no register.
func (r *Regs) Check() error {
	var errs []error
	bad := func(reg *bitstreams.Register, format string, a ...any) {
		errs = append(errs, fmt.Errorf("%s: register %s: %s", r.where(reg), reg.Name, fmt.Sprintf(format, a...)))
	}
	seen := map[string]bool{}
	for i := range r.m.Registers {
		reg := &r.m.Registers[i]
		if seen[reg.Name] {
			bad(reg, "declared twice")
		}
		seen[reg.Name] = true
		if _, err := parseRef(reg.Name); err != nil || strings.ContainsAny(reg.Name, "[].") {
			bad(reg, "the name is not a plain identifier")
		}
		switch reg.Access {
		case bitstreams.RO, bitstreams.RW, bitstreams.WO, bitstreams.RC, bitstreams.Pop, bitstreams.W1C:
		default:
			bad(reg, "access %q is none of ro, rw, wo, rc, pop, w1c", reg.Access)
		}
		if reg.Offset%4 != 0 {
			bad(reg, "offset 0x%x is not 4-byte aligned", reg.Offset)
		}
		n := 1
		if reg.Count > 1 {
			n = reg.Count
			if reg.Stride == 0 || reg.Stride%4 != 0 {
				bad(reg, "array of %d with stride 0x%x: the stride must be a positive multiple of 4", reg.Count, reg.Stride)
				n = 1
			}
		}
		for k := 0; k < n; k++ {
			if a := reg.Offset + uint64(k)*reg.Stride; r.window(a) == nil {
				bad(reg, "address 0x%x is outside every window", a)
				break
			}
		}
		fields := map[string]bool{}
		var used uint32
		for fi := range reg.Fields {
			f := &reg.Fields[fi]
			if fields[f.Name] {
				bad(reg, "field %s declared twice", f.Name)
			}
			fields[f.Name] = true
			lo, hi, err := fieldBits(reg, f)
			if err != nil {
				bad(reg, "%v", err)
				continue
			}
			m := Loc{Lo: lo, Hi: hi}.Mask()
			if used&m != 0 {
				bad(reg, "field %s overlaps another field", f.Name)
			}
			used |= m
		}
		if c := reg.Counter; c != nil && c.Hi != "" {
			if hr := r.byName[c.Hi]; hr == nil {
				bad(reg, "counter.hi names %s, which is not a register", c.Hi)
			} else if max(hr.Count, 1) != max(reg.Count, 1) {
				bad(reg, "counter.hi %s has %d elements, the low register %d", c.Hi, max(hr.Count, 1), max(reg.Count, 1))
			}
		}
	}
	return errors.Join(errs...)
}
