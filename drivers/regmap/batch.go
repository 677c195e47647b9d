package regmap

import (
	"context"
	"errors"
	"fmt"

	"github.com/labrunner/labrunner/drivers"
)

// Batch collects register accesses and runs them in order in one go
// (drivers.RunBatch): on a UART bridge with a window their round trips
// overlap (docs/uart-bridge.md, "Window"), elsewhere they run one after the
// other as the single calls would. Each access is checked as Read, Write,
// ReadAddr, WriteAddr, ReadBurst and WriteBurst check theirs, and a failure
// is reported as that call would report it. A batch is not a transaction:
// accesses after a failing one may have run.
type Batch struct {
	r    *Regs
	acc  []drivers.Access
	ops  []batchOp
	err  error // the first access refused before anything ran
	done bool
}

// batchOp is how an access is named in an error, and where a named
// register's value goes once read.
type batchOp struct {
	op   string
	loc  *Loc // a named register read: its value is masked and shifted into dst
	dst  *uint32
	then func() // after dst is set (Read64 puts its halves together)
}

// Batch starts an empty batch on r's bus.
func (r *Regs) Batch() *Batch { return &Batch{r: r} }

// Len is the number of accesses collected.
func (b *Batch) Len() int { return len(b.acc) }

func (b *Batch) add(a drivers.Access, o batchOp, err error) *Batch {
	if err != nil {
		if b.err == nil {
			b.err = err
		}
		return b
	}
	b.acc = append(b.acc, a)
	b.ops = append(b.ops, o)
	return b
}

// Read reads register (or field) name into *dst when the batch runs.
func (b *Batch) Read(name string, dst *uint32) *Batch {
	loc, err := b.r.Lookup(name)
	if err != nil {
		return b.add(drivers.Access{}, batchOp{}, err)
	}
	op := "read " + loc.Name
	if err := b.r.checkAccess(op, registerName(loc), loc.Reg, false); err != nil {
		return b.add(drivers.Access{}, batchOp{}, err)
	}
	if err := b.r.checkRange(op, loc.Addr, 1, false); err != nil {
		return b.add(drivers.Access{}, batchOp{}, err)
	}
	return b.add(drivers.Access{Addr: loc.Addr, Words: make([]uint32, 1)}, batchOp{op: fmt.Sprintf("%s at 0x%x", op, loc.Addr), loc: &loc, dst: dst}, nil)
}

// Read64 reads a 64-bit counter into *dst when the batch runs: its low
// register, then its high one, as Regs.Read64 does.
func (b *Batch) Read64(loName string, dst *uint64) *Batch {
	lo, err := b.r.Lookup(loName)
	if err != nil {
		return b.add(drivers.Access{}, batchOp{}, err)
	}
	op := "read64 " + lo.Name
	if lo.Field != nil || lo.Reg.Counter == nil || lo.Reg.Counter.Hi == "" {
		return b.add(drivers.Access{}, batchOp{}, b.r.setup(op, "read it with Read; 64-bit counters declare counter.hi on their low register",
			fmt.Errorf("%s is not the low half of a 64-bit counter (%s)", lo.Name, b.r.where(lo.Reg))))
	}
	hiName := lo.Reg.Counter.Hi
	if hr := b.r.byName[hiName]; hr != nil && hr.Count > 1 && lo.Index >= 0 {
		hiName = fmt.Sprintf("%s[%d]", hiName, lo.Index)
	}
	if _, err := b.r.Lookup(hiName); err != nil {
		return b.add(drivers.Access{}, batchOp{}, fmt.Errorf("%s: counter.hi of %s (%s): %w", op, lo.Reg.Name, b.r.where(lo.Reg), err))
	}
	n := len(b.ops)
	b.Read(lo.Name, new(uint32)).Read(hiName, new(uint32))
	if b.err == nil {
		l, h := b.ops[n].dst, b.ops[n+1].dst
		b.ops[n+1].then = func() { *dst = uint64(*h)<<32 | uint64(*l) }
	}
	return b
}

// Write writes a whole register (fields are read-modify-write: use
// Regs.WriteField).
func (b *Batch) Write(name string, v uint32) *Batch {
	loc, err := b.r.Lookup(name)
	if err != nil {
		return b.add(drivers.Access{}, batchOp{}, err)
	}
	op := fmt.Sprintf("write %s = 0x%x", loc.Name, v)
	if loc.Field != nil {
		return b.add(drivers.Access{}, batchOp{}, b.r.setup(op, "a field write reads the register first: use WriteField", fmt.Errorf("%s is a field", name)))
	}
	if err := b.r.checkAccess(op, loc.Name, loc.Reg, true); err != nil {
		return b.add(drivers.Access{}, batchOp{}, err)
	}
	if w := regWidth(loc.Reg); w < 32 && v>>uint(w) != 0 {
		return b.add(drivers.Access{}, batchOp{}, b.r.setup(op, "see "+b.r.where(loc.Reg), fmt.Errorf("0x%x does not fit %s, %d bits wide", v, loc.Name, w)))
	}
	return b.writeAs(op, loc.Addr, v)
}

// writeAs writes the word at a raw address, named op in errors (as
// Regs.write names it).
func (b *Batch) writeAs(op string, addr uint64, v uint32) *Batch {
	if err := b.r.checkRange(op, addr, 1, true); err != nil {
		return b.add(drivers.Access{}, batchOp{}, err)
	}
	return b.add(drivers.Access{Addr: addr, Write: true, Words: []uint32{v}}, batchOp{op: fmt.Sprintf("%s at 0x%x", op, addr)}, nil)
}

// ReadAddr reads the word at a raw address into dst[0] (as Regs.ReadAddr).
func (b *Batch) ReadAddr(addr uint64, dst []uint32) *Batch {
	op := fmt.Sprintf("read 0x%x", addr)
	if err := b.r.checkRange(op, addr, 1, false); err != nil {
		return b.add(drivers.Access{}, batchOp{}, err)
	}
	return b.add(drivers.Access{Addr: addr, Words: dst[:1]}, batchOp{op: op}, nil)
}

// WriteAddr writes the word at a raw address (as Regs.WriteAddr).
func (b *Batch) WriteAddr(addr uint64, v uint32) *Batch {
	return b.writeAs(fmt.Sprintf("write 0x%x = 0x%x", addr, v), addr, v)
}

// ReadBurst reads len(dst) consecutive words from addr (as Regs.ReadBurst).
func (b *Batch) ReadBurst(addr uint64, dst []uint32) *Batch {
	op := fmt.Sprintf("read burst of %d words at 0x%x", len(dst), addr)
	if err := b.r.checkRange(op, addr, len(dst), false); err != nil {
		return b.add(drivers.Access{}, batchOp{}, err)
	}
	return b.add(drivers.Access{Addr: addr, Words: dst}, batchOp{op: op}, nil)
}

// WriteBurst writes src to consecutive words from addr (as Regs.WriteBurst).
func (b *Batch) WriteBurst(addr uint64, src []uint32) *Batch {
	op := fmt.Sprintf("write burst of %d words at 0x%x", len(src), addr)
	if err := b.r.checkRange(op, addr, len(src), true); err != nil {
		return b.add(drivers.Access{}, batchOp{}, err)
	}
	return b.add(drivers.Access{Addr: addr, Write: true, Words: append([]uint32(nil), src...)}, batchOp{op: op}, nil)
}

// Run runs the accesses collected, in order. Nothing runs when one of
// them was refused when it was added; a batch runs once. A failure of the
// bus is a *drivers.BatchError: the index of the access it is about (in
// the order added), and the error the single call would have given.
func (b *Batch) Run(ctx context.Context) error {
	if b.err != nil {
		return b.err
	}
	if b.done {
		return errors.New("regmap: a batch runs once")
	}
	b.done = true
	if len(b.acc) == 0 {
		return nil
	}
	if err := drivers.RunBatch(ctx, b.r.bus, b.acc); err != nil {
		var be *drivers.BatchError
		if errors.As(err, &be) && be.Index >= 0 && be.Index < len(b.ops) {
			return &drivers.BatchError{Index: be.Index, Err: fmt.Errorf("%s: %w", b.ops[be.Index].op, be.Err)}
		}
		return err
	}
	for i, o := range b.ops {
		if o.dst != nil {
			*o.dst = (b.acc[i].Words[0] & o.loc.Mask()) >> o.loc.Lo
		}
		if o.then != nil {
			o.then()
		}
	}
	return nil
}
