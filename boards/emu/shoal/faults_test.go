package shoal

import (
	"fmt"
	"strings"
	"testing"

	"github.com/labrunner/labrunner/boards/emu"
	"github.com/labrunner/labrunner/labconfig"
)

func TestFaultsRegistered(t *testing.T) {
	want := map[string]string{FaultWrongSlot: "board", FaultIgnoreRateLimit: "board", FaultClockDrift: "board",
		FaultNodeDown: "board", FaultLinkDown: "link", FaultSlotLong: "board", FaultGuardShort: "board",
		FaultFeedbackLate: "board", FaultReadyLeak: "board", FaultCellDrop: "link"}
	for _, f := range emu.Faults() {
		scope, ok := want[f.Name]
		if !ok {
			continue
		}
		if f.Scope != scope || f.Design != DesignName || !strings.Contains(f.Doc, "Symptom") {
			t.Errorf("fault %s: scope %q design %q doc %q", f.Name, f.Scope, f.Design, f.Doc)
		}
		delete(want, f.Name)
	}
	for n := range want {
		t.Errorf("fault %s is not registered", n)
	}
}

// wrong-slot: the faulty switch's multiplexers hold the configuration of
// the next slot; its trace shows it, and the NICs see cells from peers the
// schedule does not connect.
func TestFaultWrongSlot(t *testing.T) {
	tr := newTestRack(t, rackOpts{faults: []labconfig.Fault{{Name: FaultWrongSlot, Board: "shoal-sw2"}}})
	tr.configure(setup{})
	tr.Write("shoal-nic0", "RUN_SLOTS", 300)
	words := switchWords(t, cyclic(nodes8))
	for _, b := range swBoards {
		differ := 0
		for s, w := range words[b] {
			got := tr.ReadAddr(b, swTraceBase+uint64(4*s))
			if got != w {
				differ++
			}
			if b == "shoal-sw2" && got != words[b][(s+1)%len(words[b])] {
				t.Errorf("shoal-sw2 slot %d: trace %#04x, want slot %d's %#04x", s, got, (s+1)%7, words[b][(s+1)%7])
			}
		}
		if b == "shoal-sw2" && differ == 0 || b != "shoal-sw2" && differ != 0 {
			t.Errorf("%s: %d trace slots differ from the schedule", b, differ)
		}
	}
	if tr.sumNodes("RX_MISROUTED_CELLS") == 0 || tr.sumNodes("FAILED_SLOTS") == 0 {
		t.Errorf("wrong-slot: %d misrouted cells, %d failed slots; want both > 0",
			tr.sumNodes("RX_MISROUTED_CELLS"), tr.sumNodes("FAILED_SLOTS"))
	}
}

// ignore-rate-limit: the faulty NICs release a cell of every flow every
// epoch; the queues leave the bound of Eq. 5 that the queue-bound test
// checks.
func TestFaultIgnoreRateLimit(t *testing.T) {
	tr := newTestRack(t, rackOpts{faults: []labconfig.Fault{{Name: FaultIgnoreRateLimit, Board: "shoal-nic0",
		Params: labconfig.Params{"nic": {Values: []string{"sfp1"}}}}}})
	tr.configure(setup{})
	flows := randomFlows(3, 240, 400, 60000)
	tr.loadFlows(flows)
	tr.clear()
	tr.runTraffic(0)
	sources := make([]map[int]bool, nodes8)
	for _, f := range flows {
		if sources[f.dst] == nil {
			sources[f.dst] = map[int]bool{}
		}
		sources[f.dst][f.src] = true
	}
	over := map[int]int{}
	for n := 0; n < nodes8; n++ {
		b, p := nodeBoard(n)
		for k := 0; k < nodes8; k++ {
			if q := int(tr.Read(b, fmt.Sprintf("MAX_QUEUE[%d]", p*maxNodes+k))); q > 1+len(sources[k]) {
				over[n]++
			}
		}
	}
	if over[1] == 0 {
		t.Errorf("the NIC ignoring feedback kept its queues within Eq. 5")
	}
	for n, c := range over {
		if n != 1 {
			t.Logf("node %d: %d queues over the bound (fed by node 1)", n, c)
		}
	}
	t.Logf("node 1 MAX_QUEUE_ANY %d", tr.nodeReg(1, "MAX_QUEUE_ANY"))
}

// clock-drift: within the guard band nothing happens; once the drift
// passes half a cycle (3.2 ns: 32 us at 100 ppm) the board's cells reach
// the switches misaligned and arrive corrupted, and slots fail.
func TestFaultClockDrift(t *testing.T) {
	tr := newTestRack(t, rackOpts{faults: []labconfig.Fault{{Name: FaultClockDrift, Board: "shoal-nic1",
		Params: labconfig.Params{"ppm": {Values: []string{"100"}}}}}})
	tr.configure(setup{})
	tr.Write("shoal-nic0", "RUN_SLOTS", 300) // 23 us: 2.3 ns of drift
	if c, f := tr.sumNodes("RX_CORRUPT_CELLS"), tr.sumNodes("FAILED_SLOTS"); c != 0 || f != 0 {
		t.Fatalf("within the guard band: %d corrupted cells, %d failed slots", c, f)
	}
	tr.Write("shoal-nic0", "RUN_SLOTS", 1000)
	if m := tr.Read("shoal-sw2", "SW_MISALIGNED") + tr.Read("shoal-sw3", "SW_MISALIGNED"); m == 0 {
		t.Errorf("no misaligned cells at the drifting board's leaves")
	}
	for n := 0; n < 4; n++ {
		if c, f := tr.nodeReg(n, "RX_CORRUPT_CELLS"), tr.nodeReg(n, "FAILED_SLOTS"); c == 0 || f == 0 {
			t.Errorf("node %d: %d corrupted cells, %d failed slots from the drifting nodes", n, c, f)
		}
	}
	// The time-sync registers do not give it away.
	if st := tr.Read("shoal-nic1", "SYNC_STATUS"); st != syncDone|syncLocked {
		t.Errorf("SYNC_STATUS = %#x", st)
	}
}

func TestFaultParameterErrors(t *testing.T) {
	lab := &labconfig.Lab{Name: "bad", Seed: 1,
		Boards: []labconfig.Board{{Name: "x", Kind: "de5net", Emulated: &labconfig.Emulated{}}},
		Faults: []labconfig.Fault{{Name: FaultClockDrift, Board: "x", Params: labconfig.Params{"ppm": {Values: []string{"fast"}}}}}}
	r, err := emu.Start(lab, emu.Options{NoPTY: true})
	if err != nil {
		// emu.CheckFault refused it before anything started.
		if !strings.Contains(err.Error(), "ppm") || !strings.Contains(err.Error(), FaultClockDrift) {
			t.Errorf("ppm=fast: start err = %v, want one naming the fault and the parameter", err)
		}
		return
	}
	defer r.Close()
	b, _ := r.Board("x")
	img, err := r.Catalogue().Image(DesignName, b.Kind().Part)
	if err != nil {
		t.Fatal(err)
	}
	err = b.Programmer().Program(t.Context(), img)
	if err == nil || !strings.Contains(err.Error(), "ppm") || !strings.Contains(err.Error(), FaultClockDrift) {
		t.Errorf("programming with ppm=fast: err = %v, want one naming the fault and the parameter", err)
	}
}
