package shoal_test

import (
	"fmt"
	"strings"
	"testing"

	ts "github.com/labrunner/labrunner/traffic/shoal"
)

func docFabric(t *testing.T) *ts.Fabric {
	t.Helper()
	f, err := ts.NewFabric(nicBoards, 4, swBoards, 4, docCables())
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestFabricOfTheDocumentedCabling(t *testing.T) {
	f := docFabric(t)
	if f.N() != 8 || strings.Join(f.Leaves, ",") != "shoal-sw0,shoal-sw1,shoal-sw2,shoal-sw3" || strings.Join(f.Spines, ",") != "shoal-sw4,shoal-sw5" {
		t.Fatalf("nodes %d, leaves %v, spines %v", f.N(), f.Leaves, f.Spines)
	}
	for i, c := range f.Nodes {
		if want := (ts.Cage{Board: nicBoards[i/4], Index: i % 4}); c != want {
			t.Errorf("node %d is %s, want %s", i, c, want)
		}
	}
	if got := f.SwitchName("shoal-sw5"); got != "spine1" {
		t.Errorf("shoal-sw5 is %q", got)
	}
	// §6.2: four 10 ns cables on every node-to-node path.
	if w := f.PathWireNS(); w != 40 {
		t.Errorf("path wire %g ns, want 40", w)
	}
}

// docs/shoal.md tabulates every switch's word for every slot of the cyclic
// schedule on the documented cabling: the runner's decomposition must write
// exactly those.
func TestSwitchWordsMatchTheDocumentedTable(t *testing.T) {
	table := [][6]uint32{
		{0x89BA, 0x89BA, 0x89BA, 0x89BA, 0xBA98, 0x8BA9},
		{0x98BA, 0x98BA, 0x98BA, 0x98BA, 0x8BA9, 0x8BA9},
		{0x89BA, 0x89BA, 0x89BA, 0x89BA, 0x8BA9, 0x98BA},
		{0x98BA, 0x98BA, 0x98BA, 0x98BA, 0x98BA, 0x98BA},
		{0x89BA, 0x89BA, 0x89BA, 0x89BA, 0x98BA, 0xA98B},
		{0x98BA, 0x98BA, 0x98BA, 0x98BA, 0xA98B, 0xA98B},
		{0x89BA, 0x89BA, 0x89BA, 0x89BA, 0xA98B, 0xBA98},
	}
	f := docFabric(t)
	s, _ := ts.Cyclic(8)
	words, err := f.SwitchWords(s)
	if err != nil {
		t.Fatal(err)
	}
	for slot, row := range table {
		for k, b := range swBoards {
			if words[b][slot] != row[k] {
				t.Errorf("slot %d %s: 0x%04X, docs/shoal.md says 0x%04X", slot, b, words[b][slot], row[k])
			}
		}
	}
}

// A rack cabled differently (leaf 1's up-links crossed, the two NICs of
// leaf 2 swapped on their cages, spine 1's leaf cages rotated) has the same
// logical fabric: the words change, the circuits they make do not.
func TestFabricTranslatesAnyCabling(t *testing.T) {
	f := docFabric(t)
	g, err := ts.NewFabric(nicBoards, 4, swBoards, 4, crossedCables())
	if err != nil {
		t.Fatal(err)
	}
	s, _ := ts.Cyclic(8)
	wf, err := f.SwitchWords(s)
	if err != nil {
		t.Fatal(err)
	}
	wg, err := g.SwitchWords(s)
	if err != nil {
		t.Fatal(err)
	}
	differ := 0
	for slot := 0; slot < s.Epoch(); slot++ {
		var cf, cg [][]int
		for _, b := range g.Switches() {
			lf, err := f.Logical(b, wf[b][slot])
			if err != nil {
				t.Fatal(err)
			}
			lg, err := g.Logical(b, wg[b][slot])
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(lf) != fmt.Sprint(lg) {
				t.Errorf("slot %d %s: logical %v on the documented cabling, %v on the crossed one", slot, b, lf, lg)
			}
			if wf[b][slot] != wg[b][slot] {
				differ++
			}
			cf, cg = append(cf, lf), append(cg, lg)
		}
		dst, problem := g.Compose(cg)
		if problem != "" || ts.MappingText(dst) != s.Mapping(slot) {
			t.Errorf("slot %d: composed %s (%s), schedule %s", slot, ts.MappingText(dst), problem, s.Mapping(slot))
		}
		_ = cf
	}
	if differ == 0 {
		t.Error("the crossed cabling gave the same register words: the translation was not exercised")
	}
}

// crossedCables is the documented rack with leaf 1's up-links crossed
// (sfp2 to spine shoal-sw5, sfp3 to shoal-sw4), nodes 4 and 5 swapped on
// leaf 2's cages, and spine shoal-sw5's cages rotated by one.
func crossedCables() []ts.Cable {
	var c []ts.Cable
	for n := 0; n < 8; n++ {
		leafCage := n % 2
		if n/2 == 2 {
			leafCage = 1 - leafCage
		}
		c = append(c, ts.Cable{A: ts.Cage{Board: nicBoards[n/4], Index: n % 4}, B: ts.Cage{Board: fmt.Sprintf("shoal-sw%d", n/2), Index: leafCage}, LatencyNS: 10})
	}
	for l := 0; l < 4; l++ {
		up0, up1 := 2, 3
		if l == 1 {
			up0, up1 = 3, 2
		}
		c = append(c, ts.Cable{A: ts.Cage{Board: fmt.Sprintf("shoal-sw%d", l), Index: up0}, B: ts.Cage{Board: "shoal-sw4", Index: l}, LatencyNS: 10})
		c = append(c, ts.Cable{A: ts.Cage{Board: fmt.Sprintf("shoal-sw%d", l), Index: up1}, B: ts.Cage{Board: "shoal-sw5", Index: (l + 1) % 4}, LatencyNS: 10})
	}
	return c
}

func TestFabricRefusesCablingItCannotNumber(t *testing.T) {
	base := docCables()
	cases := []struct {
		name   string
		mutate func([]ts.Cable) []ts.Cable
		want   string
	}{
		{"nodes of a leaf out of order", func(c []ts.Cable) []ts.Cable {
			// node 1 and node 2 swap leaves
			c[1].B, c[2].B = c[2].B, c[1].B
			return c
		}, "must share a leaf"},
		{"a leaf without its second spine", func(c []ts.Cable) []ts.Cable { return append(c[:9], c[10:]...) }, "spines"},
		{"two NICs cabled together", func(c []ts.Cable) []ts.Cable {
			return append(append(c[:6:6], c[8:]...), ts.Cable{A: ts.Cage{Board: "shoal-nic1", Index: 3}, B: ts.Cage{Board: "shoal-nic1", Index: 2}})
		}, "two NICs"},
		{"a cage with two cables", func(c []ts.Cable) []ts.Cable {
			return append(c, ts.Cable{A: ts.Cage{Board: "shoal-sw4", Index: 0}, B: ts.Cage{Board: "shoal-sw5", Index: 0}})
		}, "two cables"},
		{"a cage the board does not have", func(c []ts.Cable) []ts.Cable {
			c[0].A.Index = 7
			return c
		}, "no such cage"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cables := c.mutate(append([]ts.Cable(nil), base...))
			_, err := ts.NewFabric(nicBoards, 4, swBoards, 4, cables)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one saying %q", err, c.want)
			}
		})
	}
}

func TestDecomposeAnySlotThatFits(t *testing.T) {
	f := docFabric(t)
	// Every partial permutation a slot can hold is decomposable (König):
	// try all derangement-like slots built from shifts and swaps, including
	// ones where the canonical spine choice collides.
	slots := [][]int{
		{1, 0, 3, 2, 5, 4, 7, 6}, // pairs within each leaf: canonical collides
		{2, 3, 0, 1, 6, 7, 4, 5},
		{-1, 0, -1, -1, -1, -1, -1, -1},
		{7, 6, 5, 4, 3, 2, 1, 0},
		{3, -1, 1, 5, -1, 0, -1, -1},
	}
	for _, tx := range slots {
		cfg, err := f.Decompose(tx)
		if err != nil {
			t.Fatalf("%v: %v", tx, err)
		}
		dst, problem := f.Compose(cfg)
		if problem != "" || fmt.Sprint(dst) != fmt.Sprint(tx) {
			t.Errorf("%v decomposed and composed back to %v (%s)", tx, dst, problem)
		}
		for k, b := range f.Switches() {
			w, err := f.Word(b, cfg[k])
			if err != nil {
				t.Fatal(err)
			}
			back, err := f.Logical(b, w)
			if err != nil || fmt.Sprint(back) != fmt.Sprint(cfg[k]) {
				t.Errorf("%s: %v encoded as 0x%04x decodes to %v (%v)", b, cfg[k], w, back, err)
			}
		}
	}
	if _, err := f.Decompose([]int{1, 1, -1, -1, -1, -1, -1, -1}); err == nil {
		t.Error("two nodes sending to node 1 decomposed")
	}
}

func TestWithoutCableCutsBothDirectionsOnly(t *testing.T) {
	f := docFabric(t)
	s, _ := ts.Cyclic(8)
	words, _ := f.SwitchWords(s)
	cut, err := f.WithoutCable(words, ts.Cage{Board: "shoal-sw0", Index: 2}, ts.Cage{Board: "shoal-sw4", Index: 0})
	if err != nil {
		t.Fatal(err)
	}
	for slot := 0; slot < s.Epoch(); slot++ {
		var cfg [][]int
		for _, b := range f.Switches() {
			l, err := f.Logical(b, cut[b][slot])
			if err != nil {
				t.Fatal(err)
			}
			cfg = append(cfg, l)
			if b != "shoal-sw0" && b != "shoal-sw4" && cut[b][slot] != words[b][slot] {
				t.Errorf("slot %d: %s changed", slot, b)
			}
		}
		// Leaf 0 port 2 (to spine 0) and spine 0 port 0 (to leaf 0) carry
		// nothing either way.
		for in, out := range cfg[0] {
			if in == 2 && out >= 0 || out == 2 {
				t.Errorf("slot %d: leaf0 still switches %d>%d", slot, in, out)
			}
		}
		for in, out := range cfg[4] {
			if in == 0 && out >= 0 || out == 0 {
				t.Errorf("slot %d: spine0 still switches %d>%d", slot, in, out)
			}
		}
		dst, _ := f.Compose(cfg)
		// Node 0 always goes up to spine 0: its cell goes nowhere.
		if dst[0] != -1 {
			t.Errorf("slot %d: node 0 still reaches %d", slot, dst[0])
		}
	}
	if _, err := f.WithoutCable(words, ts.Cage{Board: "shoal-nic0", Index: 0}, ts.Cage{Board: "shoal-nic1", Index: 0}); err == nil {
		t.Error("a cable between two NICs was accepted")
	}
}

func TestCyclicScheduleAndNICWords(t *testing.T) {
	s, err := ts.Cyclic(8)
	if err != nil || s.Epoch() != 7 {
		t.Fatalf("cyclic(8): %d slots (%v), want 7 (§3.2: N-1)", s.Epoch(), err)
	}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	if got := s.Mapping(0); got != "0>1,1>2,2>3,3>4,4>5,5>6,6>7,7>0" {
		t.Errorf("slot 0: %s", got)
	}
	seen := map[[2]int]int{}
	for t0 := 0; t0 < s.Epoch(); t0++ {
		for i := 0; i < 8; i++ {
			e := ts.DecodeNICWord(s.NICWord(t0, i))
			if e.Tx != (i+t0+1)%8 || e.Rx != (i-t0-1+8)%8 {
				t.Errorf("slot %d node %d: %+v", t0, i, e)
			}
			seen[[2]int{i, e.Tx}]++
		}
	}
	if len(seen) != 56 {
		t.Errorf("%d pairs connected in an epoch, want all 56 once", len(seen))
	}
	if e := ts.DecodeNICWord(0); e.Tx != -1 || e.Rx != -1 {
		t.Errorf("an empty word decodes to %+v", e)
	}
	bad := ts.Schedule{Nodes: 3, Tx: [][]int{{1, 0, 1}}}
	if bad.Validate() == nil {
		t.Error("a slot with two senders to node 1 validated")
	}
}

func TestParseCage(t *testing.T) {
	for in, want := range map[string]int{"sfp0": 0, "SFP3": 3, " sfp12 ": 12} {
		if got, err := ts.ParseCage(in); err != nil || got != want {
			t.Errorf("%q: %d (%v)", in, got, err)
		}
	}
	for _, in := range []string{"", "sfp", "sfp-1", "qsfp0", "sfp01", "sfp1x"} {
		if _, err := ts.ParseCage(in); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
}
