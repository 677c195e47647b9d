package shoal_test

import (
	"fmt"
	"strings"
	"testing"

	ts "github.com/labrunner/labrunner/traffic/shoal"
)

// FuzzDecodeRecord: any six words either decode to a record that is
// internally consistent or are refused; nothing panics.
func FuzzDecodeRecord(f *testing.F) {
	f.Add(uint32(9), uint32(3|5<<16), uint32(392), uint32(100), uint32(6200), uint32(120))
	f.Add(uint32(0), uint32(0), uint32(0), uint32(0), uint32(0), uint32(0))
	f.Add(^uint32(0), ^uint32(0), ^uint32(0), ^uint32(0), ^uint32(0), ^uint32(0))
	f.Fuzz(func(t *testing.T, a, b, c, d, e, g uint32) {
		r, err := ts.DecodeRecord([]uint32{a, b, c, d, e, g})
		if err != nil {
			return
		}
		if r.Tag == 0 || r.Src > 1023 || r.Dst > 1023 || r.FCTNS() < 0 {
			t.Fatalf("accepted %+v", r)
		}
		if r.Tag != a || r.Bytes != c || uint32(r.Src)|uint32(r.Dst)<<16 != b {
			t.Fatalf("%v decoded to %+v", []uint32{a, b, c, d, e, g}, r)
		}
	})
}

// FuzzDecodeNICWord: decoding and re-encoding through a schedule gives the
// word back for every word a schedule can produce.
func FuzzDecodeNICWord(f *testing.F) {
	f.Add(uint32(0))
	f.Add(uint32(0x80078001))
	f.Add(^uint32(0))
	f.Fuzz(func(t *testing.T, w uint32) {
		e := ts.DecodeNICWord(w)
		if e.Tx < -1 || e.Tx > 1023 || e.Rx < -1 || e.Rx > 1023 {
			t.Fatalf("0x%08x decoded to %+v", w, e)
		}
		if e.Tx < 0 || e.Rx < 0 || e.Tx == e.Rx {
			return
		}
		// A 3-slot-free schedule of enough nodes where node n sends to Tx
		// and hears Rx in slot 0.
		n := max(e.Tx, e.Rx) + 2
		row := make([]int, n)
		for i := range row {
			row[i] = -1
		}
		node := n - 1
		row[node], row[e.Rx] = e.Tx, node
		s := ts.Schedule{Nodes: n, Tx: [][]int{row}}
		if got := ts.DecodeNICWord(s.NICWord(0, node)); got != e {
			t.Fatalf("0x%08x: %+v re-encodes to %+v", w, e, got)
		}
	})
}

// FuzzSwitchWord: any 16-bit word read from a switch either decodes into a
// configuration of the fabric's logical ports, which encodes back to the
// same connected nibbles, or is refused; nothing panics.
func FuzzSwitchWord(f *testing.F) {
	fab, err := ts.NewFabric(nicBoards, 4, swBoards, 4, crossedCables())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(uint32(0x89BA), 0)
	f.Add(uint32(0xBA98), 4)
	f.Add(uint32(0xFFFF), 5)
	f.Add(^uint32(0), 2)
	f.Fuzz(func(t *testing.T, w uint32, k int) {
		sw := fab.Switches()
		b := sw[(k%len(sw)+len(sw))%len(sw)]
		out, err := fab.Logical(b, w)
		if err != nil {
			return
		}
		back, err := fab.Word(b, out)
		if err != nil {
			t.Fatalf("%s 0x%x decoded to %v, which does not encode: %v", b, w, out, err)
		}
		var connected uint32
		for c := 0; c < 4; c++ {
			if nib := w >> (4 * c) & 0xF; nib&0x8 != 0 {
				connected |= (nib & 0xB) << (4 * c)
			}
		}
		if back != connected {
			t.Fatalf("%s 0x%x -> %v -> 0x%x, want 0x%x", b, w&0xFFFF, out, back, connected)
		}
	})
}

// FuzzParsePairs: whatever parses is a set of distinct pairs of distinct
// nodes of the rack, and prints back to a string that parses the same.
func FuzzParsePairs(f *testing.F) {
	f.Add("1>0,2>0,3>0,4>5")
	f.Add(" 7>6 ,")
	f.Add("1>0,1>0")
	f.Add("-1>3")
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ts.ParsePairs(s, 8)
		if err != nil {
			return
		}
		seen := map[[2]int]bool{}
		var parts []string
		for _, x := range p {
			if x[0] == x[1] || x[0] < 0 || x[0] >= 8 || x[1] < 0 || x[1] >= 8 || seen[x] {
				t.Fatalf("%q parsed to %v", s, p)
			}
			seen[x] = true
			parts = append(parts, fmt.Sprintf("%d>%d", x[0], x[1]))
		}
		q, err := ts.ParsePairs(strings.Join(parts, ","), 8)
		if err != nil || fmt.Sprint(q) != fmt.Sprint(p) {
			t.Fatalf("%q: %v does not print back (%v, %v)", s, p, q, err)
		}
	})
}

// FuzzParseCage: a parsed cage prints back as its canonical port name.
func FuzzParseCage(f *testing.F) {
	for _, s := range []string{"sfp0", "SFP3", "sfp", "sfp-1", "sfp99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ts.ParseCage(s)
		if err != nil {
			return
		}
		if n < 0 || !strings.EqualFold(strings.TrimSpace(s), fmt.Sprintf("sfp%d", n)) {
			t.Fatalf("%q parsed to cage %d", s, n)
		}
	})
}
