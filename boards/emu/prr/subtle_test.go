package prr

import (
	"testing"

	"github.com/labrunner/labrunner/internal/raceshare"
	"github.com/labrunner/labrunner/labconfig"
)

// healthyAndFaulty runs f on a healthy switch and on one with the fault.
func healthyAndFaulty(t *testing.T, flt labconfig.Fault, f func(g *rig) uint64) (healthy, faulty uint64) {
	t.Helper()
	return f(newRig(t, rigOpts{})), f(newRig(t, rigOpts{faults: []labconfig.Fault{flt}}))
}

// prr-extra-stage: the pipeline latency is Table 1's plus the extra
// registers, as LAST_ENQ - LAST_INS and the port-to-port minimum show;
// STAGE_S still reads the build's S.
func TestFaultExtraStage(t *testing.T) {
	pipe := func(g *rig) uint64 {
		g.insert([]pkt{{0, 3, 1}, {1, 3, 2}})
		return uint64(g.r("LAST_ENQ_CYCLE") - g.r("LAST_INS_CYCLE"))
	}
	h, f := healthyAndFaulty(t, fault(FaultExtraStage), pipe)
	if h != 7 || f != 8 {
		t.Errorf("pipeline latency: healthy %d (Table 1: 7 for P=16, S=2), faulty %d, want 8", h, f)
	}
	p2p := func(g *rig) uint64 {
		g.w("TG_LOAD", 0x400)
		g.w("TG_CYCLES", 20000)
		g.w("TG_CTRL", tgStart)
		return uint64(g.r("TG_LAT_MIN"))
	}
	if h, f := healthyAndFaulty(t, fault(FaultExtraStage, "cycles", "2"), p2p); h != 8 || f != 10 {
		t.Errorf("least port-to-port latency: healthy %d, faulty (cycles=2) %d, want 8 and 10", h, f)
	}
	g := newRig(t, rigOpts{faults: []labconfig.Fault{fault(FaultExtraStage)}})
	if s := g.r("STAGE_S"); s != 2 {
		t.Errorf("STAGE_S reads %d under the fault, want the build's 2", s)
	}
}

// prr-fifo-short: a queue takes 31 packets instead of 32. Declared: the
// register reads 32 and the 32nd packet for a queue is dropped; actual:
// the register reads 31.
func TestFaultFIFOShort(t *testing.T) {
	fill := func(g *rig) uint64 {
		// 32 batches of 16 packets for port 5: every queue of group 5
		// receives one packet per batch, 32 in all, its declared depth.
		for i := 0; i < 32; i++ {
			b := []pkt{{0, 5, uint32(100 + i)}}
			for s := 1; s < 16; s++ {
				b = append(b, pkt{s, 5, uint32(1000*i + s)})
			}
			g.insert(b)
		}
		return uint64(g.r("PORT_DROPPED[5]"))
	}
	h, f := healthyAndFaulty(t, fault(FaultFIFOShort), fill)
	if h != 0 || f != 16 {
		t.Errorf("32 full batches for port 5: healthy drops %d, faulty %d, want 0 and 16 (the last batch finds every queue of the group full at 31)", h, f)
	}
	g := newRig(t, rigOpts{faults: []labconfig.Fault{fault(FaultFIFOShort)}})
	if d := g.r("FIFO_DEPTH"); d != 32 {
		t.Errorf("report=declared: FIFO_DEPTH reads %d, want the declared 32", d)
	}
	g = newRig(t, rigOpts{faults: []labconfig.Fault{fault(FaultFIFOShort, "report", "actual", "entries", "2")}})
	if d := g.r("FIFO_DEPTH"); d != 30 {
		t.Errorf("report=actual, entries=2: FIFO_DEPTH reads %d, want 30", d)
	}
}

// prr-silent-drop: packets are not conserved at a light load where nothing
// is dropped, and the arbiter of a group that lost a write falls out of
// step.
//
// Under the race detector the runs are the first fifth (40000 cycles, about
// 32 packets lost; internal/raceshare); make test runs them whole without it.
func TestFaultSilentDrop(t *testing.T) {
	cycles := raceshare.Prefix(t, 200000, 5)
	run := func(g *rig) uint64 {
		g.w("TG_LOAD", 0x8000)
		g.w("TG_CYCLES", uint32(cycles))
		g.w("TG_CTRL", tgStart)
		off, del, drop, str := g.r64("TG_OFFERED"), g.r64("TG_DELIVERED"), g.r64("TG_DROPPED"), uint64(g.r("TG_STRANDED"))
		if drop != 0 {
			t.Errorf("load 0.5 dropped %d packets", drop)
		}
		if g.r("TG_ORDER_ERRORS") == 0 && off != del {
			t.Errorf("packets lost (offered %d, delivered %d) without order errors", off, del)
		}
		return off - del - drop - str
	}
	h, f := healthyAndFaulty(t, fault(FaultSilentDrop, "rate", "1e-4"), run)
	if h != 0 || f == 0 {
		t.Errorf("unaccounted packets after %d cycles at load 0.5: healthy %d, faulty %d, want 0 and some (about 160 in 200000 cycles at 1e-4)", cycles, h, f)
	}
}

// prr-arbiter-bubble: a permutation at input rate 1 no longer keeps line
// rate: each port loses one cycle in every+1.
func TestFaultArbiterBubble(t *testing.T) {
	// A tenth of the length under the race detector: still about 100
	// bubbles a port.
	cycles := uint32(raceshare.Prefix(t, 65000, 10))
	perm := func(g *rig) uint64 {
		g.w("TG_MODEL", ModelNonuniform)
		g.w("TG_NONUNIF_P", 0x10000) // every input to its own port
		g.w("TG_CYCLES", cycles)
		g.w("TG_CTRL", tgStart)
		return g.r64("TG_WINDOW_OUT")
	}
	h, f := healthyAndFaulty(t, fault(FaultArbiterBubble), perm)
	want := uint64(16 * (cycles - 8)) // line rate after the 8-cycle pipeline
	if h != want {
		t.Errorf("healthy permutation: %d packets out in the window, want line rate %d", h, want)
	}
	if lost := float64(h-f) / float64(h); lost < 0.013 || lost > 0.017 {
		t.Errorf("bubble every 64: %d packets out instead of %d, %.2f%% lost, want about 1/65 = 1.54%%", f, h, 100*lost)
	}
}
