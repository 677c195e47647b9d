package shoal

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	gs "github.com/labrunner/labrunner/golden/shoal"
	"github.com/labrunner/labrunner/results"
	"github.com/labrunner/labrunner/selftest"
	ts "github.com/labrunner/labrunner/traffic/shoal"
)

// runSchedule checks the schedule the fabric applies against golden/shoal,
// slot by slot over one epoch:
//
//   - each switch's trace (sw_trace: what its multiplexers held in each slot
//     of the last complete epoch) against its schedule memory (sw_sched):
//     a switch applying the wrong slot shows here, named;
//   - each switch's configuration against golden's Decompose of the cyclic
//     schedule, register by register (golden pins the spine of a circuit to
//     the sender's leaf port, as the runner's decomposition does);
//   - the configurations of all switches composed, per slot, through
//     golden's CheckSlot: which node each node's cell reaches;
//   - each NIC's schedule memory against golden's schedule (Dst, Src).
//
// The register words address cages; golden numbers switch ports logically
// (leaf l: ports 0..k/2-1 face nodes l·k/2.., port k/2+s faces spine s;
// spine s: port l faces leaf l). The fabric the runner derived from the lab's
// cables translates one into the other (traffic/shoal.Fabric.Logical): on a
// rack cabled as docs/shoal.md prescribes the two coincide, and a rack
// cabled otherwise is translated rather than misjudged.
func runSchedule(ctx context.Context, env *selftest.Env) error {
	k, err := rackOf(env)
	if err != nil {
		return err
	}
	par, err := selftest.ParamsOf[scheduleParams](env) // epochs ≥ 2: the trace holds the last complete epoch
	if err != nil {
		return err
	}
	epochs := par.Epochs
	r, f := k.r, k.fab
	E := k.base.Schedule.Epoch()
	if err := r.Restart(ctx); err != nil {
		return err
	}
	if err := r.RunSlots(ctx, int64(epochs*E)); err != nil {
		return err
	}
	c, err := k.golden(k.base.SlotCycles)
	if err != nil {
		return err
	}
	gsched, err := gs.NewSchedule(c.Nodes, 1, gs.Cyclic)
	if err != nil {
		return err
	}
	topo := gs.Topology{Nodes: c.Nodes, Radix: c.Radix}
	if topo.Leaves() != len(f.Leaves) || topo.Spines() != len(f.Spines) {
		return fmt.Errorf("golden/shoal's fabric of %d nodes has %d leaves and %d spines, the lab's %d and %d",
			c.Nodes, topo.Leaves(), topo.Spines(), len(f.Leaves), len(f.Spines))
	}
	if gsched.EpochSlots() != E {
		return fmt.Errorf("golden/shoal's cyclic epoch is %d slots, the runner's %d", gsched.EpochSlots(), E)
	}
	// Every board's cell registers against golden's cell at the plan's
	// slot (reading S60: the runner sizes flows with golden's figures,
	// this is where the board's own are judged).
	for _, b := range append(append([]string{}, r.NICBoards...), r.SwitchBoards...) {
		for _, reg := range []struct {
			name string
			want int
		}{{"CELL_BYTES", c.CellBytes()}, {"PAYLOAD_BYTES", c.PayloadBytes()}} {
			p := results.Params{"reg": reg.name, "slot_cycles": strconv.Itoa(k.base.SlotCycles)}
			v, err := r.ReadReg(ctx, b, reg.name)
			if err != nil {
				env.Error("schedule.cell", b, p, err)
				continue
			}
			m := meas(b, p, "shoal.cell_bytes", float64(v), "")
			m.Unit = "bytes"
			env.Check("schedule.cell", m, int(v) == reg.want, fmt.Sprintf("%d bytes", reg.want),
				"Shoal §6.1: a 12-cycle slot less a 1-cycle guard band and the MAC's 3 cycles carries 64-byte cells; §3.5: an 8-byte cell header (golden/shoal CellBytes, PayloadBytes)",
				fmt.Sprintf("%s reads %s = %d at a %d-cycle slot with a %d-cycle guard band, golden/shoal gives %d: the cells the board cuts are not the ones the flows and the golden model are sized for",
					b, reg.name, v, k.base.SlotCycles, k.base.GuardCycles, reg.want))
		}
	}
	switches := f.Switches() // leaves, then spines: golden's SwitchIDs order
	// cfg[t][w]: the logical configuration switch w held in slot t.
	cfg := make([][]gs.SwitchSlot, E)
	for t := range cfg {
		cfg[t] = make([]gs.SwitchSlot, len(switches))
	}
	usable := true
	for w, b := range switches {
		name := f.SwitchName(b)
		p := results.Params{"switch": name}
		st, err := r.ReadSwitch(ctx, b)
		if err != nil {
			env.Error("schedule.switch_status", b, p, err)
			usable = false
			continue
		}
		ok := st.Status&ts.SwRunning != 0 && st.Status&ts.SwConflict == 0 && st.Status&ts.SwTraceValid != 0
		var why []string
		if st.Status&ts.SwRunning == 0 {
			why = append(why, "not running: the bootstrap signal never reached it")
		}
		if st.Status&ts.SwConflict != 0 {
			why = append(why, "CONFLICT: a schedule word connects two inputs to one output")
		}
		if st.Status&ts.SwTraceValid == 0 {
			why = append(why, "no complete epoch traced")
		}
		env.Check("schedule.switch_status", meas(b, p, "shoal.switch.status", float64(st.Status), ""), ok,
			"RUNNING, no CONFLICT, TRACE_VALID", "Shoal §3.4: the switches step through their schedule after the bootstrap signal",
			fmt.Sprintf("%s (%s): SW_STATUS 0x%x: %s", b, name, st.Status, strings.Join(why, "; ")))
		sched, err := r.SwitchSchedule(ctx, b, "sw_sched", E)
		if err != nil {
			env.Error("schedule.trace", b, p, err)
			usable = false
			continue
		}
		trace, err := r.SwitchSchedule(ctx, b, "sw_trace", E)
		if err != nil {
			env.Error("schedule.trace", b, p, err)
			usable = false
			continue
		}
		// The trace against the schedule memory.
		var bad []string
		for t := 0; t < E; t++ {
			if trace[t] == sched[t] {
				continue
			}
			got, _ := f.Logical(b, trace[t])
			want, _ := f.Logical(b, sched[t])
			d := fmt.Sprintf("slot %d held %s, its schedule memory says %s", t, ts.MappingText(got), ts.MappingText(want))
			for u := 0; u < E; u++ {
				if u != t && sched[u] == trace[t] {
					d += fmt.Sprintf(" (slot %d's configuration, %+d)", u, (u-t+E)%E)
					break
				}
			}
			bad = append(bad, d)
		}
		m := meas(b, p, "shoal.switch.trace_mismatches", float64(len(bad)), strings.Join(bad, "; "))
		env.Check("schedule.trace", m, len(bad) == 0, fmt.Sprintf("the multiplexers hold the schedule memory's configuration in all %d slots", E),
			"Shoal §3.4, §4.1: each switch applies its schedule's configuration in every slot after the bootstrap",
			fmt.Sprintf("%s (%s), traced epoch %d: the switch applies the wrong slot's configuration: %s", b, name, st.TraceEpoch, strings.Join(bad, "; ")))
		// The trace against golden's decomposition, register by register.
		var gotText, wantText, diff []string
		for t := 0; t < E; t++ {
			out, err := f.Logical(b, trace[t])
			if err != nil {
				diff = append(diff, fmt.Sprintf("slot %d: %v", t, err))
				out = make([]int, f.Radix)
				for i := range out {
					out[i] = -1
				}
			}
			cfg[t][w] = gs.SwitchSlot{Out: out}
			dec, err := topo.Decompose(gsched, t, 0)
			if err != nil {
				return fmt.Errorf("golden/shoal Decompose slot %d: %w", t, err)
			}
			g, wnt := gs.MappingText(out), dec[w].Text()
			gotText, wantText = append(gotText, g), append(wantText, wnt)
			if g != wnt {
				diff = append(diff, fmt.Sprintf("slot %d: %s, golden %s", t, g, wnt))
			}
		}
		m = meas(b, results.Params{"switch": name}, "shoal.switch_config", float64(len(diff)), strings.Join(gotText, " | "))
		env.Check("schedule.switch", m, len(diff) == 0, strings.Join(wantText, " | "),
			"Shoal §3.2, Fig. 4: per-switch schedule decomposed from the fabric schedule (golden/shoal Decompose)",
			fmt.Sprintf("%s (%s) held configurations golden/shoal does not decompose the schedule into: %s", b, name, strings.Join(diff, "; ")))
	}
	if !usable {
		for t := 0; t < E; t++ {
			env.Skip("schedule.fabric", r.Master, results.Params{"slot": strconv.Itoa(t)},
				"not judged: a switch's configuration could not be read (schedule.switch_status, schedule.trace)")
		}
	} else {
		for t := 0; t < E; t++ {
			err := topo.CheckSlot(gsched, t, 0, cfg[t])
			p := results.Params{"slot": strconv.Itoa(t)}
			text := ""
			if dst, cerr := topo.Compose(cfg[t]); cerr == nil {
				text = gs.MappingText(dst)
			}
			msg := ""
			if err != nil {
				msg = fmt.Sprintf("the switches' circuits in slot %d do not carry the schedule: %v", t, err)
			}
			env.Check("schedule.fabric", meas(r.Master, p, "shoal.schedule", float64(t), text), err == nil,
				gs.MappingText(gsched.Pairs(t, 0)), "Shoal §3.2, Fig. 3: static schedule, each pair once per epoch (golden/shoal CheckSlot)", msg)
		}
	}
	// Every NIC's schedule memory against golden's schedule.
	for node := 0; node < f.N(); node++ {
		cg := f.Nodes[node]
		p := results.Params{"node": strconv.Itoa(node)}
		ent, err := r.NICSchedule(ctx, node, E)
		if err != nil {
			env.Error("schedule.nic", cg.Board, p, err)
			continue
		}
		var bad []string
		for t, e := range ent {
			wantTx, wantRx := gsched.Dst(t, 0, node), gsched.Src(t, 0, node)
			if e.Tx != wantTx || e.Rx != wantRx {
				bad = append(bad, fmt.Sprintf("slot %d: sends to %d and hears %d, golden %d and %d", t, e.Tx, e.Rx, wantTx, wantRx))
			}
		}
		env.Check("schedule.nic", meas(cg.Board, p, "shoal.nic_schedule_mismatches", float64(len(bad)), strings.Join(bad, "; ")),
			len(bad) == 0, "TX_PEER and RX_PEER of golden/shoal's schedule in every slot", "Shoal §3.2, Fig. 3",
			fmt.Sprintf("node %d (%s): %s", node, cg, strings.Join(bad, "; ")))
	}
	return nil
}
