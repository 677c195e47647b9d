package prr

import (
	"slices"
	"strings"
	"testing"

	"github.com/labrunner/labrunner/boards/emu"
	"github.com/labrunner/labrunner/labconfig"
)

// TestFaultsRegistered checks the faults are declared for this design with
// a symptom to look for.
func TestFaultsRegistered(t *testing.T) {
	want := map[string]bool{FaultOffsetSkip: true, FaultSortUnstable: true, FaultArbiterOutOfStep: true,
		FaultExtraStage: true, FaultFIFOShort: true, FaultSilentDrop: true, FaultArbiterBubble: true}
	for _, f := range emu.Faults() {
		if f.Design != DesignName {
			continue
		}
		if !want[f.Name] {
			t.Errorf("unexpected prr fault %s", f.Name)
		}
		delete(want, f.Name)
		if f.Scope != "board" || !strings.Contains(f.Doc, "Symptom") {
			t.Errorf("fault %s: scope %q, doc %q", f.Name, f.Scope, f.Doc)
		}
	}
	for n := range want {
		t.Errorf("fault %s is not registered", n)
	}
}

// TestFaultOffsetSkip: the offset counter of port 0 never holds 1, so the
// second one-packet batch for port 0 lands in queue 2, and random batches
// disagree with the placement rule.
func TestFaultOffsetSkip(t *testing.T) {
	g := newRig(t, rigOpts{faults: []labconfig.Fault{fault(FaultOffsetSkip)}})
	g.insert([]pkt{{3, 0, 1}})
	g.insert([]pkt{{5, 0, 2}})
	if pl := g.placements()[5]; pl.group != 0 || pl.queue != 2 {
		t.Errorf("second packet for port 0 placed %+v, want queue 2 (the counter skipped 1)", pl)
	}
	if n, _ := g.queues(); n[1] != 0 || n[0] != 1 || n[2] != 1 {
		t.Errorf("group 0 fill levels %v, want queue 1 empty", n[:4])
	}
	if _, err := compareBatches(t, g, 500, 11); err == nil {
		t.Error("500 random batches with offset-skip agree with the reference")
	}
	// Another port and value through the fault's parameters.
	g = newRig(t, rigOpts{faults: []labconfig.Fault{fault(FaultOffsetSkip, "port", "7", "value", "3")}})
	g.insert([]pkt{{0, 7, 1}, {1, 7, 2}, {2, 7, 3}})
	if off := g.r("OFFSET[7]"); off != 4 {
		t.Errorf("OFFSET[7] after 3 packets = %d, want 4 (3 skipped)", off)
	}
}

// TestFaultSortUnstable: packets with equal destinations leave the sorting
// network out of input order, so a batch of P packets for one port lands
// permuted over the group's queues.
func TestFaultSortUnstable(t *testing.T) {
	g := newRig(t, rigOpts{faults: []labconfig.Fault{fault(FaultSortUnstable)}})
	var b []pkt
	for s := 0; s < g.cfg.Ports; s++ {
		b = append(b, pkt{slot: s, dest: 5, tag: uint32(s + 1)})
	}
	g.insert(b)
	moved := 0
	for s, pl := range g.placements() {
		if pl.group != 5 || pl.dropped {
			t.Fatalf("slot %d placed %+v: the fault must only permute", s, pl)
		}
		if pl.queue != s {
			moved++
		}
	}
	if moved == 0 {
		t.Error("P packets for one port kept input order under sort-unstable")
	}
	if g.r("OFFSET[5]") != 0 || g.r("LAST_PLACED") != uint32(g.cfg.Ports) {
		t.Errorf("counts and offsets must stay right: OFFSET[5]=%d LAST_PLACED=%d", g.r("OFFSET[5]"), g.r("LAST_PLACED"))
	}
	if _, err := compareBatches(t, g, 200, 12); err == nil || !strings.Contains(err.Error(), "placed") {
		t.Errorf("random batches with sort-unstable: %v, want a placement mismatch", err)
	}
}

// TestFaultArbiterOutOfStep: the output arbiter of port 0 starts at queue 1,
// so a full batch for port 0 drains 2nd..Pth then 1st, a short one strands
// its first packet, and the traffic generator sees order errors and
// stranded packets without any drop.
func TestFaultArbiterOutOfStep(t *testing.T) {
	g := newRig(t, rigOpts{faults: []labconfig.Fault{fault(FaultArbiterOutOfStep)}})
	p := g.cfg.Ports
	if g.r("ARB_INDEX[0]") != 1 || g.r("ARB_INDEX[1]") != 0 {
		t.Errorf("ARB_INDEX[0..1] = %d %d, want 1 0", g.r("ARB_INDEX[0]"), g.r("ARB_INDEX[1]"))
	}
	var b []pkt
	var want []uint32
	for s := 0; s < p; s++ {
		b = append(b, pkt{slot: s, dest: 0, tag: uint32(s + 1)})
		if s > 0 {
			want = append(want, uint32(s+1))
		}
	}
	want = append(want, 1)
	g.insert(b)
	if pl := g.placements(); pl[0].queue != 0 || pl[p-1].queue != p-1 {
		t.Errorf("placement must be unaffected: %+v ... %+v", pl[0], pl[p-1])
	}
	g.w("DRAIN_CYCLES", uint32(2*p))
	g.w("CTRL", ctrlDrain)
	if got := g.egress(0); !slices.Equal(got, want) {
		t.Errorf("port 0 sent %v, want %v", got, want)
	}
	g.w("CTRL", ctrlClearQueues)
	g.insert([]pkt{{0, 0, 101}, {1, 0, 102}, {2, 0, 103}})
	g.w("CTRL", ctrlDrain)
	if got := g.egress(0); !slices.Equal(got, []uint32{102, 103}) {
		t.Errorf("short batch: port 0 sent %v, want [102 103] with 101 stranded", got)
	}
	if n, tags := g.queues(); n[0] != 1 || tags[0][0] != 101 {
		t.Errorf("queue (0,0) holds %v, want the stranded 101", tags[0])
	}
	if _, err := compareBatches(t, g, 200, 13); err == nil {
		t.Error("random batches and drains with arbiter-out-of-step agree with the reference")
	}
	g.w("TG_CYCLES", 20000)
	g.w("TG_LOAD", 0x8000)
	g.w("TG_CTRL", tgStart)
	if g.r64("TG_DROPPED") != 0 || g.r("TG_ORDER_ERRORS") == 0 || g.r("TG_STRANDED") == 0 || g.r("TG_STATUS")&tgStranded == 0 {
		t.Errorf("traffic at load 0.5: dropped %d, order errors %d, stranded %d, status %x; want no drop, order errors and stranded packets",
			g.r64("TG_DROPPED"), g.r("TG_ORDER_ERRORS"), g.r("TG_STRANDED"), g.r("TG_STATUS"))
	}
}

// TestFaultParams checks that bad fault parameters refuse to program,
// naming the fault.
func TestFaultParams(t *testing.T) {
	for _, f := range []labconfig.Fault{
		fault(FaultOffsetSkip, "port", "16"),
		fault(FaultOffsetSkip, "value", "x"),
		fault(FaultArbiterOutOfStep, "step", "0"),
	} {
		lab := &labconfig.Lab{Name: "t", Seed: 1, Faults: []labconfig.Fault{f}}
		lab.Faults[0].Board = "u96"
		lab.Boards = []labconfig.Board{{Name: "u96", Kind: "ultra96", Emulated: &labconfig.Emulated{}}}
		r, err := emu.Start(lab, emu.Options{NoPTY: true})
		if err != nil {
			// emu.CheckFault refused it before anything started.
			if !strings.Contains(err.Error(), f.Name) {
				t.Errorf("fault %s %v: start gave %v, want an error naming the fault", f.Name, f.Params, err)
			}
			continue
		}
		b, _ := r.Board("u96")
		img, err := r.Catalogue().Image(DesignName, b.Kind().Part)
		if err != nil {
			t.Fatal(err)
		}
		err = b.Programmer().Program(t.Context(), img)
		if err == nil || !strings.Contains(err.Error(), f.Name) {
			t.Errorf("fault %s %v: program gave %v, want an error naming the fault", f.Name, f.Params, err)
		}
		r.Close()
	}
}

// TestNoFaultNoSymptom runs the fault tests' checks on a healthy board: the
// traffic generator sees neither order errors nor stranded packets when
// nothing is dropped.
func TestNoFaultNoSymptom(t *testing.T) {
	g := newRig(t, rigOpts{})
	g.w("TG_CYCLES", 20000)
	g.w("TG_LOAD", 0x8000)
	g.w("TG_CTRL", tgStart)
	if g.r64("TG_DROPPED") != 0 || g.r("TG_ORDER_ERRORS") != 0 || g.r("TG_STRANDED") != 0 || g.r("TG_STATUS") != tgDone {
		t.Errorf("healthy switch at load 0.5: dropped %d, order errors %d, stranded %d, status %x",
			g.r64("TG_DROPPED"), g.r("TG_ORDER_ERRORS"), g.r("TG_STRANDED"), g.r("TG_STATUS"))
	}
}
