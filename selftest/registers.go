package selftest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/drivers"
	"github.com/labrunner/labrunner/results"
)

// ResetSnapshot is where the runner keeps, per board, the values the
// design's writable registers had right after programming (before setup
// changed them), for the reset-value check.
var ResetSnapshot = State[map[string]map[string]uint32]{Key: "reset-snapshot"}

// scratchPatterns exercise every data line both ways: all zeros and ones,
// alternating bits in both phases, and a walking one.
func scratchPatterns() []uint32 {
	p := []uint32{0x00000000, 0xFFFFFFFF, 0xA5A5A5A5, 0x5A5A5A5A, 0x12345678}
	for i := 0; i < 32; i++ {
		p = append(p, 1<<i)
	}
	return p
}

func widthMask(w int) uint32 {
	if w <= 0 || w >= 32 {
		return 0xFFFFFFFF
	}
	return 1<<w - 1
}

// snapshotResets reads every plain read-write register of each board (no
// read side effects, not an array of FIFO windows) right after programming.
func snapshotResets(ctx context.Context, env *Env) {
	snap := map[string]map[string]uint32{}
	for _, b := range env.Boards {
		var names []string
		for _, r := range env.Design.Registers {
			if r.Access == bitstreams.RW {
				names = append(names, registerNames(r)...)
			}
		}
		snap[b.Name] = readEach(ctx, env, b, names)
	}
	ResetSnapshot.Set(env, snap)
}

// readEach reads every register named, in order, in batches (one round
// trip on a UART bridge with a window), and returns the values of those
// that could be read: a register whose read fails is left out and the
// reads go on after it, as one read at a time would.
func readEach(ctx context.Context, env *Env, b *Board, names []string) map[string]uint32 {
	vals := map[string]uint32{}
	for len(names) > 0 {
		got := make([]uint32, len(names))
		bt := b.Regs.Batch()
		for i, n := range names {
			bt.Read(n, &got[i])
		}
		if bt.Len() != len(names) {
			// A name the map refuses: read one at a time, skipping it.
			v, err := readOne(ctx, env, b, names[0])
			if err == nil {
				vals[names[0]] = v
			}
			names = names[1:]
			continue
		}
		rctx, cancel := drivers.Deadline(ctx, env.Deadlines.Register*time.Duration(len(names)))
		err := bt.Run(rctx)
		cancel()
		done := len(names)
		var be *drivers.BatchError
		if err != nil {
			done = 0
			if errors.As(err, &be) {
				done = be.Index
			}
		}
		for i := range done {
			vals[names[i]] = got[i]
		}
		if err == nil {
			break
		}
		names = names[min(done+1, len(names)):] // the failing one is left out
	}
	return vals
}

func readOne(ctx context.Context, env *Env, b *Board, name string) (uint32, error) {
	rctx, cancel := env.RegisterDeadline(ctx)
	defer cancel()
	return b.Regs.Read(rctx, name)
}

func registerNames(r bitstreams.Register) []string {
	if r.Count <= 1 {
		return []string{r.Name}
	}
	out := make([]string, r.Count)
	for i := range out {
		out[i] = fmt.Sprintf("%s[%d]", r.Name, i)
	}
	return out
}

func init() {
	Register(Test{
		Name: "registers",
		Doc: "register sanity on every board of the plan: the ID and VERSION registers read the values the " +
			"design's manifest gives, scratch registers hold every test pattern, read-write registers held " +
			"their reset values right after programming, and every configuration value the manifest declares " +
			"(config:) reads back as declared (registers.config)",
		Run: runRegisters,
	})
	RegisterCases("", "registers", registerCases)
}

// registerCases are runRegisters' cases: on every board of the plan, its
// identity and scratch registers, every declared configuration value and
// the reset check, all from the design's manifest.
func registerCases(cp CasePlan) ([]Case, error) {
	m := cp.Design
	var per []Case
	for _, reg := range []string{"ID", "VERSION"} {
		per = append(per, Case{Name: "registers.identity", Params: results.Params{"reg": reg}})
	}
	for _, r := range m.Registers {
		if r.Access == bitstreams.RW && strings.HasPrefix(r.Name, "SCRATCH") {
			per = append(per, Case{Name: "registers.scratch", Params: results.Params{"reg": r.Name}})
		}
	}
	for _, c := range m.Config {
		if c.Register == "" {
			continue
		}
		names, _, err := m.ConfigRegisters(c.Register)
		if err != nil {
			per = append(per, Case{Name: "registers.config", Params: results.Params{"value": c.Name}})
			continue
		}
		for _, name := range names {
			p := results.Params{"value": c.Name}
			if len(names) > 1 {
				p["reg"] = name
			}
			per = append(per, Case{Name: "registers.config", Params: p})
		}
	}
	per = append(per, Case{Name: "registers.reset"})
	var out []Case
	for _, pb := range cp.Plan.Boards {
		for _, c := range per {
			c.Board = pb.Board
			out = append(out, c)
		}
	}
	return out, nil
}

func runRegisters(ctx context.Context, env *Env) error {
	m := env.Design
	snap, _ := ResetSnapshot.Get(env)
	for _, b := range env.Boards {
		// Identity.
		for _, id := range []struct {
			reg  string
			want uint32
		}{{"ID", m.ID}, {"VERSION", m.VersionWord}} {
			rctx, cancel := env.RegisterDeadline(ctx)
			v, err := b.Regs.Read(rctx, id.reg)
			cancel()
			p := results.Params{"reg": id.reg}
			if err != nil {
				env.Error("registers.identity", b.Name, p, err)
				continue
			}
			meas := results.Measurement{Board: b.Name, Params: p, Metric: "registers.identity",
				Value: float64(v), Text: fmt.Sprintf("0x%08x", v)}
			env.Check("registers.identity", meas, v == id.want, fmt.Sprintf("0x%08x", id.want),
				"manifest "+m.Name+" "+m.Version,
				fmt.Sprintf("%s reads 0x%08x, the %s %s manifest says 0x%08x: wrong bitstream loaded, or the bus reads garbage", id.reg, v, m.Name, m.Version, id.want))
		}
		// Scratch registers.
		for _, r := range m.Registers {
			if r.Access != bitstreams.RW || !strings.HasPrefix(r.Name, "SCRATCH") {
				continue
			}
			p := results.Params{"reg": r.Name}
			mask := widthMask(r.Width)
			bad, tried := "", 0
			// Each pattern written and read back, all in one batch.
			pats := scratchPatterns()
			got := make([]uint32, len(pats))
			bt := b.Regs.Batch()
			for i := range pats {
				pats[i] &= mask
				bt.Write(r.Name, pats[i]).Read(r.Name, &got[i])
			}
			rctx, cancel := drivers.Deadline(ctx, env.Deadlines.Register*time.Duration(len(pats)))
			err := bt.Run(rctx)
			cancel()
			if err != nil {
				var be *drivers.BatchError
				if errors.As(err, &be) {
					err = be.Err
				}
				env.Error("registers.scratch", b.Name, p, err)
				continue
			}
			for i, pat := range pats {
				tried++
				if got[i] != pat && bad == "" {
					bad = fmt.Sprintf("wrote 0x%08x, read 0x%08x (bits 0x%08x differ)", pat, got[i], got[i]^pat)
				}
			}
			rctx, cancel = env.RegisterDeadline(ctx)
			_ = b.Regs.Write(rctx, r.Name, r.Reset)
			cancel()
			meas := results.Measurement{Board: b.Name, Params: p, Metric: "registers.scratch", Value: float64(tried)}
			if bad != "" {
				meas.Text = bad
			}
			env.Check("registers.scratch", meas, bad == "", fmt.Sprintf("%d patterns read back", tried),
				"register sanity", r.Name+": "+bad+": a stuck or shorted data line, or a bus that corrupts words")
		}
		configChecks(ctx, env, b, snap[b.Name])
		// Reset values, from the snapshot taken right after programming.
		vals, ok := snap[b.Name]
		if !ok {
			continue
		}
		var wrong []string
		checked := 0
		for _, r := range m.Registers {
			if r.Access != bitstreams.RW {
				continue
			}
			for _, name := range registerNames(r) {
				v, ok := vals[name]
				if !ok {
					continue
				}
				checked++
				if v&widthMask(r.Width) != r.Reset&widthMask(r.Width) {
					wrong = append(wrong, fmt.Sprintf("%s=0x%x (reset 0x%x)", name, v, r.Reset))
				}
			}
		}
		meas := results.Measurement{Board: b.Name, Metric: "registers.reset", Value: float64(checked)}
		if len(wrong) > 0 {
			meas.Text = strings.Join(wrong, ", ")
		}
		env.Check("registers.reset", meas, len(wrong) == 0, fmt.Sprintf("%d read-write registers at their reset values", checked),
			"manifest "+m.Name+" "+m.Version, "not at reset after programming: "+strings.Join(wrong, ", "))
	}
	return nil
}

// configChecks records one verdict per configuration value the manifest
// declares (and per array element it covers): the board's register
// against the declared value. Golden models are fed the declared value
// (readings A60, E62, P60, S60), so a build whose register says otherwise fails here, on
// its own verdict, while the expectations stay those of the declared
// build. A read-write register is judged on its value right after
// programming (the snapshot), before setup or a test changed it.
func configChecks(ctx context.Context, env *Env, b *Board, snap map[string]uint32) {
	m := env.Design
	for _, c := range m.Config {
		if c.Register == "" {
			continue
		}
		names, field, err := m.ConfigRegisters(c.Register)
		if err != nil {
			env.Error("registers.config", b.Name, results.Params{"value": c.Name}, err)
			continue
		}
		for _, name := range names {
			p := results.Params{"value": c.Name}
			if len(names) > 1 {
				p["reg"] = name
			}
			got, err := configRead(ctx, env, b, name, field, snap)
			if err != nil {
				env.Error("registers.config", b.Name, p, err)
				continue
			}
			ref := name
			if field != "" {
				ref += "." + field
			}
			want := fmt.Sprintf("%g %s (declared by %s %s)", c.Value, c.Unit, m.Name, m.Version)
			if c.Paper != nil {
				want += fmt.Sprintf("; paper %g %s", *c.Paper, c.Unit)
			}
			msg := fmt.Sprintf("%s reads %d, the %s %s manifest declares %g %s (%s)", ref, got, m.Name, m.Version, c.Value, c.Unit, c.Source)
			if c.Paper != nil && float64(got) != *c.Paper {
				msg += fmt.Sprintf("; the paper's figure is %g", *c.Paper)
			}
			msg += ": the build is not the one the manifest describes, and the golden expectations (fed the declared value) do not apply to it"
			env.Check("registers.config", results.Measurement{Board: b.Name, Params: p, Metric: "registers.config." + c.Name, Value: float64(got), Unit: c.Unit},
				float64(got) == c.Value, want, c.Source, msg)
		}
	}
}

// configRead reads a configuration register (or one of its fields): a
// read-write one from the snapshot taken after programming when there is
// one, a read-only one live.
func configRead(ctx context.Context, env *Env, b *Board, name, field string, snap map[string]uint32) (uint32, error) {
	r, _, err := env.Design.Lookup(name)
	if err != nil {
		return 0, err
	}
	v, ok := snap[name]
	if r.Access != bitstreams.RW || !ok {
		rctx, cancel := env.RegisterDeadline(ctx)
		v, err = b.Regs.Read(rctx, name)
		cancel()
		if err != nil {
			return 0, err
		}
	}
	if field == "" {
		return v & widthMask(r.Width), nil
	}
	for _, f := range r.Fields {
		if f.Name == field {
			lo, hi, err := bitstreams.ParseBits(f.Bits)
			if err != nil {
				return 0, err
			}
			return v >> lo & widthMask(int(hi-lo)+1), nil
		}
	}
	return 0, fmt.Errorf("design %s: register %s has no field %s", env.Design.Name, name, field)
}
