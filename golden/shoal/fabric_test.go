package shoal

import (
	"slices"
	"strings"
	"testing"
)

// The per-switch schedules compose, leaf → spine → leaf, back into the fabric
// schedule, slot by slot, with no port driven twice: for the prototype's six
// switches and for larger and partly filled fabrics, both schedules, several
// channels (§3.2: "we decompose the schedule of the overall fabric into the
// schedule for each constituent circuit switch").
func TestDecompositionComposesToSchedule(t *testing.T) {
	type tc struct{ n, k, ch int }
	cases := []tc{{8, 4, 1}, {8, 4, 2}, {7, 4, 1}, {5, 4, 1}, {32, 8, 1}, {30, 8, 3}, {18, 6, 1}, {64, 12, 4}, {128, 16, 4}}
	for _, kind := range []ScheduleKind{Cyclic, PropagationAware} {
		for _, c := range cases {
			s, err := NewSchedule(c.n, c.ch, kind)
			if err != nil {
				t.Fatal(err)
			}
			topo := Topology{Nodes: c.n, Radix: c.k}
			all, err := topo.SwitchSchedule(s)
			if err != nil {
				t.Fatalf("%v %+v: %v", kind, c, err)
			}
			for slot := range all {
				for ch, cfg := range all[slot] {
					if len(cfg) != topo.Switches() {
						t.Fatalf("%d configurations, want %d", len(cfg), topo.Switches())
					}
					if err := topo.CheckSlot(s, slot, ch, cfg); err != nil {
						t.Fatalf("%v %+v: %v", kind, c, err)
					}
				}
			}
		}
	}
}

// Under the cyclic schedule of a full fabric the spine of a circuit is the
// sender's port on its leaf, every slot (the documented canonical choice).
func TestCanonicalSpine(t *testing.T) {
	for _, c := range []struct{ n, k int }{{8, 4}, {32, 8}, {128, 16}} {
		s, _ := NewSchedule(c.n, 1, Cyclic)
		topo := Topology{Nodes: c.n, Radix: c.k}
		for slot := 0; slot < s.EpochSlots(); slot++ {
			cfg, err := topo.Decompose(s, slot, 0)
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < c.n; i++ {
				l, p := topo.NodePort(i)
				if got := cfg[l].Out[p]; got != topo.Down()+p {
					t.Fatalf("n=%d slot %d: node %d goes up port %d, want %d", c.n, slot, i, got, topo.Down()+p)
				}
			}
		}
	}
}

// The prototype's six switches in slot 0, as the package doc states them.
func TestPrototypeSlot0Registers(t *testing.T) {
	s, _ := NewSchedule(8, 1, Cyclic)
	topo := Topology{Nodes: 8, Radix: 4}
	cfg, err := topo.Decompose(s, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for w, id := range topo.SwitchIDs(0) {
		got = append(got, id.String()+"="+cfg[w].Text())
	}
	want := []string{
		"leaf0=0>2,1>3,2>1,3>0", "leaf1=0>2,1>3,2>1,3>0", "leaf2=0>2,1>3,2>1,3>0", "leaf3=0>2,1>3,2>1,3>0",
		"spine0=0>0,1>1,2>2,3>3", "spine1=0>1,1>2,2>3,3>0",
	}
	if !slices.Equal(got, want) {
		t.Errorf("slot 0:\n got %v\nwant %v", got, want)
	}
	if topo.Leaves() != 4 || topo.Spines() != 2 {
		t.Errorf("prototype fabric %d leaves, %d spines; Fig. 8 has 4 and 2", topo.Leaves(), topo.Spines())
	}
}

// A switch that applies another slot's configuration fails the check, naming
// a node: the fault "a switch that applies the wrong slot" must be caught
// whatever slot it applies instead.
func TestCheckSlotCatchesWrongSlot(t *testing.T) {
	for _, kind := range []ScheduleKind{Cyclic, PropagationAware} {
		s, _ := NewSchedule(8, 1, kind)
		topo := Topology{Nodes: 8, Radix: 4}
		E := s.EpochSlots()
		for slot := 0; slot < E; slot++ {
			for w := 0; w < topo.Switches(); w++ {
				for other := 0; other < E; other++ {
					good, _ := topo.Decompose(s, slot, 0)
					wrong, _ := topo.Decompose(s, other, 0)
					differs := false
					for in, out := range good[w].Out {
						differs = differs || (out >= 0 && wrong[w].Out[in] != out)
					}
					if !differs {
						// The other slot's configuration carries every
						// circuit of this one (it only adds circuits on idle
						// inputs, possible in the split columns of Appendix
						// A): no cell goes astray.
						continue
					}
					good[w] = wrong[w]
					err := topo.CheckSlot(s, slot, 0, good)
					if err == nil {
						t.Fatalf("%v: switch %s applying slot %d in slot %d passed", kind, topo.SwitchIDs(0)[w], other, slot)
					}
					if !strings.Contains(err.Error(), "node") {
						t.Fatalf("error %q names no node", err)
					}
				}
			}
		}
	}
}

func TestComposeRejectsBadConfigurations(t *testing.T) {
	topo := Topology{Nodes: 8, Radix: 4}
	s, _ := NewSchedule(8, 1, Cyclic)
	base := func() []SwitchSlot { c, _ := topo.Decompose(s, 2, 0); return c }
	for name, tc := range map[string]struct {
		mod  func([]SwitchSlot)
		want string
	}{
		"contention":      {func(c []SwitchSlot) { c[0].Out[0], c[0].Out[1] = 2, 2 }, "contention"},
		"leaf turnaround": {func(c []SwitchSlot) { c[0].Out[2], c[0].Out[3], c[0].Out[0] = -1, -1, 1 }, "crosses a spine"},
		"dangling spine":  {func(c []SwitchSlot) { c[4].Out[0] = -1 }, "goes nowhere"},
		"port range":      {func(c []SwitchSlot) { c[1].Out[0] = 9 }, "past its"},
		"swapped down":    {func(c []SwitchSlot) { c[1].Out[2], c[1].Out[3] = c[1].Out[3], c[1].Out[2] }, ""},
		"back up":         {func(c []SwitchSlot) { c[1].Out[1], c[1].Out[2] = -1, 3 }, "back up"},
		"wrong count":     {nil, "configurations"},
	} {
		c := base()
		if tc.mod == nil {
			c = c[:5]
		} else {
			tc.mod(c)
		}
		_, err := topo.Compose(c)
		if tc.want == "" {
			// Swapped down ports still compose; CheckSlot must catch the
			// misrouting.
			if err == nil {
				err = topo.CheckSlot(s, 2, 0, c)
			}
			if err == nil {
				t.Errorf("%s: not caught", name)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Compose = %v, want an error mentioning %q", name, err, tc.want)
		}
	}
}

func TestSelectRoundTrip(t *testing.T) {
	topo := Topology{Nodes: 8, Radix: 4}
	s, _ := NewSchedule(8, 1, PropagationAware)
	for slot := 0; slot < s.EpochSlots(); slot++ {
		cfg, _ := topo.Decompose(s, slot, 0)
		for _, c := range cfg {
			back, err := FromSelect(c.Select())
			if err != nil || !slices.Equal(back.Out, c.Out) {
				t.Fatalf("%v -> %v -> %v, %v", c.Out, c.Select(), back.Out, err)
			}
		}
	}
	if _, err := FromSelect([]int{1, 1, -1, -1}); err == nil {
		t.Error("an input feeding two outputs accepted")
	}
	if _, err := FromSelect([]int{7, -1, -1, -1}); err == nil {
		t.Error("an input past the ports accepted")
	}
}

func TestSwitchIDs(t *testing.T) {
	for _, s := range []string{"leaf0", "spine1", "ch3.leaf12", "ch1.spine0"} {
		id, err := ParseSwitchID(s)
		if err != nil || id.String() != s {
			t.Errorf("%q -> %v, %v", s, id, err)
		}
	}
	for _, s := range []string{"", "leaf", "leaf-1", "ch.leaf0", "core0", "leaf01", "ch0x.leaf1"} {
		if _, err := ParseSwitchID(s); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
	if err := (Topology{Nodes: 9, Radix: 4}).Validate(); err == nil {
		t.Error("9 nodes on 4-port switches accepted")
	}
}
