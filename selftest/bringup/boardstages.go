package bringup

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/drivers"
	"github.com/labrunner/labrunner/drivers/pmos"
	"github.com/labrunner/labrunner/drivers/regmap"
	"github.com/labrunner/labrunner/labconfig"
)

// Management block figures (mgmt.yaml).
const (
	fwBooting   = 1
	fwUp        = 2
	fwRebooting = 3
	fwHalted    = 4
)

func fwStateName(s uint32) string {
	switch s {
	case fwBooting:
		return "BOOTING"
	case fwUp:
		return "UP"
	case fwRebooting:
		return "REBOOTING"
	case fwHalted:
		return "HALTED"
	}
	return fmt.Sprintf("state %d", s)
}

// power switches the board on and, for a board the runner reaches
// directly, checks that its management block answers.
func (r *run) power(ctx context.Context, n *node, quiet bool) *StageResult {
	if n.open == nil {
		if err := r.openBoard(ctx, n); err != nil {
			return fail("the board's drivers open (lab file: console, bus, programmer, power)",
				"the USB-UART and bridge cables, the lab file's device paths", err)
		}
	}
	how := "no power switch in the lab file"
	if p := n.open.Power; p != nil && p.Name() != "none" {
		if err := p.Set(ctx, true); err != nil {
			return fail("the power switch turns the board on", "the relay or PDU and its wiring", err)
		}
		how = "switched on (" + p.Name() + ")"
	}
	if !n.DCN {
		return ok("%s; in-band board: it answers at the bootstrap", how)
	}
	mg, err := n.mg(r)
	if err != nil {
		return fail("the register bus answers", "", err)
	}
	// A board that does not answer fails at the register deadline, not at
	// the stage's.
	rctx, cancel := drivers.Deadline(ctx, 2*r.registerDeadline())
	defer cancel()
	vals, err := r.readMany(rctx, n, mg, "MGMT_ID", "FW_STATE")
	if err != nil {
		return fail("the register bus answers and the management block at 0xF0000000 reads its ID",
			"power, the bridge cable and baud rate; a board that answers BUSY everywhere is powered off", err)
	}
	if vals["MGMT_ID"] != r.mgmt.ID {
		return &StageResult{Status: Failed, Class: drivers.ClassDesign.String(),
			Expected: fmt.Sprintf("MGMT_ID 0x%08x (\"MGMT\")", r.mgmt.ID), Seen: fmt.Sprintf("0x%08x", vals["MGMT_ID"]),
			Check: "the bus reads garbage (baud rate, bridge firmware) or the board has no management block at 0xF0000000"}
	}
	st := vals["FW_STATE"]
	return ok("%s; bus answers, management firmware %s (boots %d)", how, fwStateName(st&0xF), st>>16)
}

// registerDeadline bounds one register access (the lab file's
// deadlines.register, bridge retries included).
func (r *run) registerDeadline() time.Duration {
	if d := r.opts.Lab.Deadlines.Register; d > 0 {
		return d
	}
	return labconfig.DefaultDeadlines.Register
}

// program loads the board's design, after checking the file against the
// board's part (a wrong file never reaches the board).
func (r *run) program(ctx context.Context, n *node, quiet bool) *StageResult {
	if n.Design == nil {
		return &StageResult{Status: Skipped, Summary: "no design: the board is in no plan of the lab"}
	}
	if n.open == nil || n.open.Programmer == nil {
		return &StageResult{Status: Skipped, Summary: "no programmer in the lab file: the design is expected to load from flash"}
	}
	if quiet && n.DCN {
		if dg, err := n.dg(); err == nil {
			if id, err := dg.Read(ctx, "ID"); err == nil && id == n.Design.ID {
				return ok("%s already loaded (ID 0x%08x)", n.Design.Name, id)
			}
		}
	}
	m := n.Design
	_, f, data, err := r.opts.Catalogue.FileFor(m.Name, n.Kind.Part)
	if err != nil {
		return fail(fmt.Sprintf("a %s bitstream for the board's part %s in the catalogue", m.Name, n.Kind.Part), "bitstreams/catalogue", drivers.Setup(n.Name, "find bitstream", "", err))
	}
	img, err := r.opts.Catalogue.Check(m, r.opts.Catalogue.FilePath(m, f), data, n.Kind.Part)
	if err != nil {
		return fail("a bitstream built for the board's part", "the catalogue's file for this part", drivers.Setup(n.Name, "check bitstream", "", err))
	}
	if err := n.open.Programmer.Program(ctx, img); err != nil {
		return fail(fmt.Sprintf("%s programs the board with %s", n.open.Programmer.Name(), m.Name),
			"the JTAG cable or fpga_manager, and the programmer's log", err)
	}
	sum := fmt.Sprintf("%s %s loaded (%s, sha256 %s)", m.Name, m.Version, n.open.Programmer.Name(), img.SHA256[:12])
	if n.DCN {
		dg, _ := n.dg()
		id, err := dg.Read(ctx, "ID")
		if err != nil {
			return fail("the design's ID register answers after programming", "whether programming finished (DONE pin)", err)
		}
		if id != m.ID {
			return &StageResult{Status: Failed, Class: drivers.ClassInfra.String(), Expected: fmt.Sprintf("ID 0x%08x after programming %s", m.ID, m.Name),
				Seen: fmt.Sprintf("ID 0x%08x", id), Check: "the programmed design is not running: programming failed silently, or another image loaded"}
		}
	} else {
		sum += "; its ID is read at the identity stage, in-band"
	}
	return ok("%s", sum)
}

// boardStage returns the identity, scratch or links check of a board.
func (r *run) boardStage(s Stage) func(context.Context, *node, bool) *StageResult {
	return func(ctx context.Context, n *node, quiet bool) *StageResult {
		if !n.reachable() {
			return &StageResult{Status: Blocked, Summary: "not reached by the bootstrap: its registers are out of reach"}
		}
		switch s {
		case StageIdentity:
			return r.identity(ctx, n)
		case StageScratch:
			return r.scratch(ctx, n)
		}
		return r.links(ctx, n)
	}
}

func (r *run) identity(ctx context.Context, n *node) *StageResult {
	mg, err := n.mg(r)
	if err != nil {
		return fail("the board is reachable", "", err)
	}
	vals, err := r.readMany(ctx, n, mg, "MGMT_ID", "MGMT_VERSION", "DNA", "NPORTS")
	if err != nil {
		return fail("the management block's ID registers answer", "the path to the board (its bus, or its proxy)", err)
	}
	var bad []string
	if vals["MGMT_ID"] != r.mgmt.ID {
		bad = append(bad, fmt.Sprintf("MGMT_ID 0x%08x (want 0x%08x)", vals["MGMT_ID"], r.mgmt.ID))
	}
	if vals["MGMT_VERSION"]>>16&0xFF != r.mgmt.VersionWord>>16&0xFF {
		bad = append(bad, fmt.Sprintf("MGMT_VERSION 0x%08x (major %d wanted, docs/mgmt.md)", vals["MGMT_VERSION"], r.mgmt.VersionWord>>16&0xFF))
	}
	if int(vals["NPORTS"]) != len(n.Kind.Ports) {
		bad = append(bad, fmt.Sprintf("NPORTS %d (a %s has %d cages)", vals["NPORTS"], n.Kind.Name, len(n.Kind.Ports)))
	}
	if vals["DNA"] == 0 {
		bad = append(bad, "DNA 0 (no device identifier: the DHCP-like exchange cannot name the board)")
	}
	sum := fmt.Sprintf("MGMT_ID ok, DNA 0x%08x, %d ports", vals["DNA"], vals["NPORTS"])
	if n.Design != nil {
		dg, _ := n.dg()
		dv, err := r.readMany(ctx, n, dg, "ID", "VERSION")
		if err != nil {
			return fail(fmt.Sprintf("the %s design's ID registers answer", n.Design.Name), "whether the design is programmed", err)
		}
		if dv["ID"] != n.Design.ID {
			bad = append(bad, fmt.Sprintf("ID 0x%08x (%s %s says 0x%08x)", dv["ID"], n.Design.Name, n.Design.Version, n.Design.ID))
		}
		if dv["VERSION"] != n.Design.VersionWord {
			bad = append(bad, fmt.Sprintf("VERSION 0x%08x (%s %s says 0x%08x)", dv["VERSION"], n.Design.Name, n.Design.Version, n.Design.VersionWord))
		}
		sum = fmt.Sprintf("%s ID 0x%08x VERSION 0x%08x; ", n.Design.Name, dv["ID"], dv["VERSION"]) + sum
	}
	if len(bad) > 0 {
		return &StageResult{Status: Failed, Class: drivers.ClassDesign.String(), Expected: "the identity the manifests give",
			Seen: strings.Join(bad, "; "), Check: "the loaded bitstream (wrong design or version) and the bus's data lines"}
	}
	return ok("%s", sum)
}

// scratchPatterns exercise every data line both ways: all zeros and ones,
// alternating bits in both phases, and a walking one.
func scratchPatterns() []uint32 {
	p := []uint32{0x00000000, 0xFFFFFFFF, 0xA5A5A5A5, 0x5A5A5A5A, 0x12345678}
	for i := 0; i < 32; i++ {
		p = append(p, 1<<i)
	}
	return p
}

func (r *run) scratch(ctx context.Context, n *node) *StageResult {
	type target struct {
		regs *regmap.Regs
		reg  bitstreams.Register
	}
	var targets []target
	mg, err := n.mg(r)
	if err != nil {
		return fail("the board is reachable", "", err)
	}
	if reg, _, err := r.mgmt.Lookup("SCRATCH"); err == nil {
		targets = append(targets, target{mg, reg})
	}
	if n.Design != nil {
		dg, _ := n.dg()
		for _, reg := range n.Design.Registers {
			if reg.Access == bitstreams.RW && strings.HasPrefix(reg.Name, "SCRATCH") && reg.Count <= 1 {
				targets = append(targets, target{dg, reg})
			}
		}
	}
	var names []string
	for _, t := range targets {
		mask := uint32(0xFFFFFFFF)
		if t.reg.Width > 0 && t.reg.Width < 32 {
			mask = 1<<t.reg.Width - 1
		}
		var ops []pmos.RegOp
		for _, p := range scratchPatterns() {
			ops = append(ops, pmos.RegOp{Op: pmos.OpWrite, Addr: uint32(t.reg.Offset), Value: p & mask}, pmos.RegOp{Op: pmos.OpRead, Addr: uint32(t.reg.Offset)})
		}
		ops = append(ops, pmos.RegOp{Op: pmos.OpWrite, Addr: uint32(t.reg.Offset), Value: t.reg.Reset & mask})
		res, err := r.ops(ctx, n, ops)
		if err != nil {
			return fail(t.reg.Name+" takes writes and reads back", "the path to the board", err)
		}
		for i := 0; i+1 < len(ops); i += 2 {
			if ops[i+1].Op != pmos.OpRead {
				continue
			}
			if got := res[i+1] & mask; got != ops[i].Value {
				return &StageResult{Status: Failed, Class: drivers.ClassDesign.String(),
					Expected: fmt.Sprintf("%s reads back what was written", t.reg.Name),
					Seen:     fmt.Sprintf("wrote 0x%08x, read 0x%08x (bits 0x%08x differ)", ops[i].Value, got, got^ops[i].Value),
					Check:    "a stuck or shorted data line, or a bus that corrupts words"}
			}
		}
		names = append(names, t.reg.Name)
	}
	return ok("%d patterns read back on %s", len(scratchPatterns()), strings.Join(names, ", "))
}

func (r *run) links(ctx context.Context, n *node) *StageResult {
	mg, err := n.mg(r)
	if err != nil {
		return fail("the board is reachable", "", err)
	}
	var regs []string
	for _, e := range n.Ports {
		regs = append(regs, fmt.Sprintf("PORT_STATUS[%d]", e.Index))
	}
	if len(regs) == 0 {
		return ok("no cages on a %s: nothing to cable", n.Kind.Name)
	}
	vals, err := r.readMany(ctx, n, mg, regs...)
	if err != nil {
		return fail("PORT_STATUS of every port answers", "the path to the board", err)
	}
	var bad, up []string
	var checks []string
	for _, e := range n.Ports {
		st := vals[fmt.Sprintf("PORT_STATUS[%d]", e.Index)]
		cabled, channel := st&1 != 0, st&2 != 0
		peer := e.Peer()
		switch {
		case peer == nil && cabled:
			n.note("%s reports a cable that the lab file does not list: add it under links: (or unplug it)", e)
		case peer == nil:
		case !cabled:
			bad = append(bad, fmt.Sprintf("%s: no cable (the lab file cables it to %s)", e.Name, peer))
			checks = append(checks, fmt.Sprintf("the cable or module in %s", e))
		case !channel:
			bad = append(bad, fmt.Sprintf("%s: cabled but no ordered sets from %s (CHANNEL_UP 0)", e.Name, peer))
			checks = append(checks, fmt.Sprintf("that %s is powered and the cable %s - %s is not damaged", peer.Board.Name, e, peer))
		default:
			up = append(up, fmt.Sprintf("%s->%s", e.Name, peer))
		}
	}
	if len(bad) > 0 {
		return &StageResult{Status: Failed, Class: drivers.ClassInfra.String(), Expected: "every cable of the lab file carries ordered sets",
			Seen: strings.Join(bad, "; "), Check: strings.Join(checks, "; ")}
	}
	if len(up) == 0 {
		return ok("no cable in the lab file")
	}
	return ok("%d cables up: %s", len(up), strings.Join(up, ", "))
}

// readMany reads registers by name through regs (the management block's or
// the design's map of the board): one REG_REQ of up to 25 reads for an
// in-band board, single reads on a direct bus. Fields are shifted down.
func (r *run) readMany(ctx context.Context, n *node, regs *regmap.Regs, names ...string) (map[string]uint32, error) {
	locs := make([]regmap.Loc, len(names))
	ops := make([]pmos.RegOp, len(names))
	for i, name := range names {
		loc, err := regs.Lookup(name)
		if err != nil {
			return nil, err
		}
		if loc.Reg.Access == bitstreams.WO {
			return nil, drivers.Setup(n.Name, "read "+name, "", errors.New("write-only register"))
		}
		locs[i] = loc
		ops[i] = pmos.RegOp{Op: pmos.OpRead, Addr: uint32(loc.Addr)}
	}
	vals, err := r.ops(ctx, n, ops)
	if err != nil {
		return nil, err
	}
	out := make(map[string]uint32, len(names))
	for i, name := range names {
		out[name] = (vals[i] & locs[i].Mask()) >> locs[i].Lo
	}
	return out, nil
}

// ops executes register operations on a board in order: batched into
// REG_REQs of 25 for an in-band board, one access each on a direct bus.
// It returns the value of every operation (0 for writes).
func (r *run) ops(ctx context.Context, n *node, ops []pmos.RegOp) ([]uint32, error) {
	out := make([]uint32, len(ops))
	b := n.bus()
	if b == nil {
		return nil, fmt.Errorf("%s is not reachable", n.Name)
	}
	if rb, ok := b.(*pmos.RemoteBus); ok {
		for i := 0; i < len(ops); i += pmos.MaxRegOps {
			chunk := ops[i:min(len(ops), i+pmos.MaxRegOps)]
			res, err := rb.Do(ctx, chunk)
			if err != nil {
				return nil, err
			}
			for k, v := range res {
				out[i+k] = v.Value
			}
		}
		return out, nil
	}
	for i, op := range ops {
		var err error
		if op.Op == pmos.OpWrite {
			err = b.Write32(ctx, uint64(op.Addr), op.Value)
		} else {
			out[i], err = b.Read32(ctx, uint64(op.Addr))
		}
		if err != nil {
			return nil, fmt.Errorf("%s 0x%08x: %w", map[bool]string{true: "write", false: "read"}[op.Op == pmos.OpWrite], op.Addr, err)
		}
	}
	return out, nil
}

// writes builds write operations by symbolic name (§4.3: the controller
// programs registers by the names of the register description).
func writes(regs *regmap.Regs, kv ...any) ([]pmos.RegOp, error) {
	var ops []pmos.RegOp
	for i := 0; i+1 < len(kv); i += 2 {
		name := kv[i].(string)
		v := toU32(kv[i+1])
		loc, err := regs.Lookup(name)
		if err != nil {
			return nil, err
		}
		if loc.Field != nil {
			return nil, fmt.Errorf("write %s: write whole registers in a batch", name)
		}
		switch loc.Reg.Access {
		case bitstreams.RW, bitstreams.WO, bitstreams.W1C:
		default:
			return nil, fmt.Errorf("write %s: the register is %s", name, loc.Reg.Access)
		}
		ops = append(ops, pmos.RegOp{Op: pmos.OpWrite, Addr: uint32(loc.Addr), Value: v})
	}
	return ops, nil
}

func toU32(v any) uint32 {
	switch x := v.(type) {
	case uint32:
		return x
	case int:
		return uint32(x)
	case uint16:
		return uint32(x)
	case uint8:
		return uint32(x)
	case int64:
		return uint32(x)
	}
	panic(fmt.Sprintf("toU32(%T)", v))
}

// consoleTail returns the last lines a board's console printed, for a
// diagnosis ("" when it has none or printed nothing).
func consoleTail(ctx context.Context, n *node) string {
	if n.open == nil || n.open.Console == nil {
		return ""
	}
	cctx, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
	defer cancel()
	_ = n.open.Console.Send(cctx, "")
	select { // what the board prints in answer to the newline
	case <-time.After(300 * time.Millisecond):
	case <-cctx.Done():
	}
	// Everything buffered since the console was opened (the boot log).
	out, _ := n.open.Console.Expect(cctx, `(?s)\S.*`)
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) > 3 {
		lines = lines[len(lines)-3:]
	}
	return strings.Join(lines, " | ")
}
