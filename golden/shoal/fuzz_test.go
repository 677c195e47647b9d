package shoal

import (
	"slices"
	"strings"
	"testing"

	"github.com/labrunner/labrunner/golden/param"
)

func parseSet(s string) map[string]string {
	set := map[string]string{}
	for _, kv := range strings.Split(s, ";") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			set[k] = v
		}
	}
	return set
}

// FuzzParseConfig: any parameter set either fails with a message naming a
// parameter or the configuration, or yields a valid rack whose arithmetic
// holds together.
func FuzzParseConfig(f *testing.F) {
	for _, s := range []string{"config=prototype", "config=rack", "config=rack;nodes=1024", "config=prototype;slot_cycles=5",
		"config=prototype;guard_cycles=0", "config=rack;slot_ns=1e308", "config=rack;guard_ns=NaN", "nodes=3;radix=2",
		"config=prototype;channels=64;channel_gbps=0.001", "config=rack;schedule=propagation;nodes=7", "config=RACK;sync_ns=-0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseConfig(parseSet(s))
		if err != nil {
			if !strings.Contains(err.Error(), "parameter") && !strings.Contains(err.Error(), "configuration") {
				t.Fatalf("error %q names no parameter", err)
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("ParseConfig(%q) returned an invalid config: %v", s, err)
		}
		if c.CellBytes() <= HeaderBytes || c.EpochSlots() < 1 || c.DelaySlots() < 1 || c.UsableNS() <= 0 {
			t.Fatalf("ParseConfig(%q): cell %d, epoch %d, delay %d, usable %v", s, c.CellBytes(), c.EpochSlots(), c.DelaySlots(), c.UsableNS())
		}
		// Feedback is usable from the first slot boundary at or after
		// guard + propagation + pipelines (reading S2), and never sooner
		// than the next slot.
		if at, f := (c.GuardNS+c.PropNS+c.PipelineNS)/c.SlotNS, c.FeedbackSlots(); f < 1 || at > float64(f)+1e-6 || (f > 1 && at <= float64(f-1)-1e-6) {
			t.Fatalf("ParseConfig(%q): feedback after %d slots, usable after %v slots", s, f, at)
		}
		if c.Nodes > c.Radix*c.Radix/2 {
			t.Fatalf("ParseConfig(%q): %d nodes on %d-port switches", s, c.Nodes, c.Radix)
		}
	})
}

// FuzzPredictParams: Predict never panics on any parameter values; it
// either names the bad parameter or returns well-formed expectations. The
// simulations are switched off (they are tested elsewhere) and racks kept
// small so every input runs in milliseconds.
func FuzzPredictParams(f *testing.F) {
	for _, s := range []string{"", "config=rack;nodes=64", "fair_flows=1>0,2>0", "fair_flows=0>0", "failures=spine,leaf",
		"schedule=propagation;nodes=7", "load=0.5,0.5", "seed=-1", "list_schedule=on;nodes=12;radix=6", "channels=3;nodes=16"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		set := parseSet(s)
		for _, k := range []string{"nodes", "radix"} {
			if v, ok := set[k]; ok && len(strings.TrimSpace(v)) > 2 {
				return // large racks are slow to enumerate, not interesting
			}
		}
		set["senders"], set["perm_slot_cycles"], set["perm_pairs"], set["sim"] = "", "", "", ""
		es, err := Model{}.Predict(set)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "shoal") {
				t.Fatalf("error %q does not name the model", err)
			}
			return
		}
		seen := map[string]bool{}
		for _, e := range es {
			if seen[e.Key()] {
				t.Fatalf("duplicate key %s", e.Key())
			}
			seen[e.Key()] = true
			if e.Source == "" {
				t.Fatalf("%s has no source", e.Key())
			}
		}
	})
}

// FuzzParseMapping: an accepted mapping is a partial permutation that
// renders back to an equal mapping.
func FuzzParseMapping(f *testing.F) {
	for _, s := range []string{"0>1,1>2,2>0", "-", "", "0>1,0>2", " 3 > 0 ", "0>1,1>1", "9>0", "1>", ">1", "0>1,,"} {
		f.Add(s, 4)
	}
	f.Fuzz(func(t *testing.T, s string, n int) {
		if n < 0 || n > 64 {
			return
		}
		m, err := ParseMapping(s, n)
		if err != nil {
			return
		}
		used := make([]bool, n)
		for _, d := range m {
			if d < -1 || d >= n {
				t.Fatalf("ParseMapping(%q) = %v, out of range", s, m)
			}
			if d >= 0 {
				if used[d] {
					t.Fatalf("ParseMapping(%q) = %v drives %d twice", s, m, d)
				}
				used[d] = true
			}
		}
		back, err := ParseMapping(MappingText(m), n)
		if err != nil || !slices.Equal(back, m) {
			t.Fatalf("%q -> %v -> %q -> %v, %v", s, m, MappingText(m), back, err)
		}
		if _, err := FromSelect(SwitchSlot{Out: m}.Select()); err != nil {
			t.Fatalf("Select of %v: %v", m, err)
		}
	})
}

// FuzzParseNames: flows, switch names and the kind and number lists either
// fail or round-trip.
func FuzzParseNames(f *testing.F) {
	for _, s := range []string{"1>0,2>0", "leaf0", "ch2.spine1", "node,spine", "1,2,3", "0.5,0.25", "uniform,skewed", "cyclic", "1>0,1>0", "ch99.leaf1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if fl, err := ParseFlows(s, 16); err == nil {
			var parts []string
			for _, x := range fl {
				if x.Src == x.Dst || x.Src < 0 || x.Dst >= 16 {
					t.Fatalf("ParseFlows(%q) = %v", s, fl)
				}
				parts = append(parts, x.String())
			}
			back, err := ParseFlows(strings.Join(parts, ","), 16)
			if err != nil || !slices.Equal(back, fl) {
				t.Fatalf("flows %q -> %v -> %v, %v", s, fl, back, err)
			}
		}
		if id, err := ParseSwitchID(s); err == nil {
			back, err := ParseSwitchID(id.String())
			if err != nil || back != id {
				t.Fatalf("switch %q -> %v -> %v, %v", s, id, back, err)
			}
		}
		if ks, err := param.List(s, ParseFailureKind); err == nil {
			for _, k := range ks {
				if k < FailNode || k > FailLeafSpineDown {
					t.Fatalf("failures %q -> %v", s, ks)
				}
			}
		}
		if k, err := ParseScheduleKind(s); err == nil {
			if back, err := ParseScheduleKind(k.String()); err != nil || back != k {
				t.Fatalf("schedule %q -> %v", s, k)
			}
		}
	})
}

// FuzzSimulatePairs: any handful of flows on the prototype — many of them
// of the same pair, overlapping in time — completes, keeps Eq. 5 with each
// pair counted once in the incast degree (reading S1), never counts a node's
// incast past the pairs that send to it, and every flow either starts its
// pair's Shoal flow or joins a live one.
func FuzzSimulatePairs(f *testing.F) {
	f.Add([]byte{0, 4, 60, 0, 0, 4, 1, 1, 1, 4, 1, 1})
	f.Add([]byte{1, 0, 7, 0, 2, 0, 7, 0, 3, 0, 7, 0, 1, 0, 7, 3})
	f.Add([]byte{5, 6, 200, 9, 5, 6, 3, 9, 5, 6, 3, 9, 6, 5, 3, 9})
	f.Fuzz(func(t *testing.T, b []byte) {
		c := Prototype()
		var flows []Flow
		senders := map[int]map[int]bool{}
		for k := 0; k+3 < len(b) && len(flows) < 24; k += 4 {
			src, dst := int(b[k]%8), int(b[k+1]%8)
			if src == dst {
				continue
			}
			// Up to 64 cells, starts within 64 slots (many overlaps).
			flows = append(flows, Flow{Src: src, Dst: dst, Cells: 1 + int64(b[k+2]%64), StartNS: float64(b[k+3]%64) * c.SlotNS * 0.5})
			if senders[dst] == nil {
				senders[dst] = map[int]bool{}
			}
			senders[dst][src] = true
		}
		// A pair is one Shoal flow: at 12-cycle slots its seven subflows
		// carry one cell per epoch between them however many connections
		// it has (7-epoch feedback loops), so allow every cell of the rack
		// 16 epochs (loop + Eq. 2's wait) one after another.
		var cells int64
		for _, f := range flows {
			cells += f.Cells
		}
		r, err := Simulate(c, flows, SimOptions{UntilNS: float64(cells+50) * 16 * c.EpochNS()})
		if err != nil {
			t.Fatal(err)
		}
		if r.BoundViolations != 0 {
			t.Fatalf("%v: %d enqueues past Eq. 5", flows, r.BoundViolations)
		}
		most := 0
		for _, s := range senders {
			most = max(most, len(s))
		}
		if r.MaxIncast > most {
			t.Fatalf("%v: incast degree %d, but at most %d pairs send to one node", flows, r.MaxIncast, most)
		}
		if r.Joined+r.ShoalFlows != len(flows) {
			t.Fatalf("%v: %d joined + %d Shoal flows started != %d flows", flows, r.Joined, r.ShoalFlows, len(flows))
		}
		for k, fr := range r.Flows {
			if !fr.Done || fr.Delivered != flows[k].Cells || fr.EndNS < flows[k].StartNS+c.PropNS {
				t.Fatalf("flow %d %+v: %+v", k, flows[k], fr)
			}
		}
	})
}
