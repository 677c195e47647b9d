package tin

import (
	"math"
	"slices"
	"testing"
)

// Hand-worked cellification: 152 data bytes per full 160-byte cell, the last
// cell holding the rest, at least 16 bytes, rounded up to 8 bytes.
func TestCellsHandWorked(t *testing.T) {
	full := func(n int, last ...int) []int {
		out := make([]int, n)
		for i := range out {
			out[i] = MaxCell
		}
		return append(out, last...)
	}
	for _, c := range []struct {
		len, align int
		want       []int
	}{
		{1, 8, []int{16}},         // 8 + 1 = 9, below the 16-byte minimum
		{8, 8, []int{16}},         // 8 + 8 = 16 exactly
		{9, 8, []int{24}},         // 17 rounded up to 24
		{9, 1, []int{17}},         // byte granularity
		{64, 8, []int{72}},        // a 64-byte packet in one cell
		{152, 8, []int{160}},      // one full cell
		{153, 8, full(1, 16)},     // one data byte spills into a minimum cell
		{304, 8, full(2)},         // two full cells
		{1500, 8, full(9, 144)},   // 1500 - 9·152 = 132 → 140 → 144
		{1500, 1, full(9, 140)},   //
		{1500, 16, full(9, 144)},  // 140 → 144
		{4096, 8, full(26, 152)},  // 4096 - 26·152 = 144 → 152
		{9000, 8, full(59, 40)},   // 9000 - 59·152 = 32 → 40
		{65535, 8, full(431, 32)}, // 65535 - 431·152 = 23 → 31 → 32
	} {
		got, err := CellsAlign(c.len, c.align)
		if err != nil {
			t.Fatalf("CellsAlign(%d, %d): %v", c.len, c.align, err)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("CellsAlign(%d, %d) = %v, want %v", c.len, c.align, got, c.want)
		}
	}
	if got := Cells(1500); !slices.Equal(got, full(9, 144)) {
		t.Errorf("Cells(1500) = %v", got)
	}
	for _, bad := range []int{0, -1, MaxPacket + 1} {
		if Cells(bad) != nil {
			t.Errorf("Cells(%d) = %v, want nil", bad, Cells(bad))
		}
	}
	for _, a := range []int{0, 3, 5, 32, -8} {
		if _, err := CellsAlign(100, a); err == nil {
			t.Errorf("CellsAlign(100, %d) accepted a granularity that does not divide 16 and 160", a)
		}
	}
}

// Every packet length: the fewest cells that carry it, each a legal GNet cell.
func TestCellsInvariants(t *testing.T) {
	for _, align := range []int{1, 2, 4, 8, 16} {
		for l := 1; l <= 2000; l++ {
			checkCells(t, l, align)
		}
	}
}

func checkCells(t *testing.T, l, align int) {
	t.Helper()
	c, err := CellsAlign(l, align)
	if err != nil {
		t.Fatalf("CellsAlign(%d, %d): %v", l, align, err)
	}
	if want := (l + MaxPayload - 1) / MaxPayload; len(c) != want {
		t.Fatalf("CellsAlign(%d, %d): %d cells, want %d", l, align, len(c), want)
	}
	carried := 0
	for i, s := range c {
		if s < MinCell || s > MaxCell || s%align != 0 {
			t.Fatalf("CellsAlign(%d, %d): cell %d of %d bytes is not a legal cell", l, align, i, s)
		}
		if i < len(c)-1 && s != MaxCell {
			t.Fatalf("CellsAlign(%d, %d): cell %d is %d bytes, only the last may be short", l, align, i, s)
		}
		carried += s - HeaderBytes
	}
	last := c[len(c)-1] - HeaderBytes
	if carried < l || last-(l-(len(c)-1)*MaxPayload) >= max(align, MinCell-HeaderBytes) {
		t.Fatalf("CellsAlign(%d, %d) = %v: carries %d, last cell padded too much", l, align, c, carried)
	}
}

// The figures the paper states.
func TestCellFiguresOfThePaper(t *testing.T) {
	if HeaderOverhead() != 0.05 { // §6: "approximately 5%"
		t.Errorf("header overhead %g, want 0.05", HeaderOverhead())
	}
	if IncastReduction(1024) != 64 { // §3.3: "a factor of 64"
		t.Errorf("RTS incast reduction for 1 KB = %g, want 64", IncastReduction(1024))
	}
	if ReqCell != 3*ControlCell { // §3.4: "3x larger than CTS at 48B"
		t.Errorf("Req %d B is not 3x the %d B CTS", ReqCell, ControlCell)
	}
	if ser := PaperTiming().Serialization(MaxCell, Local); math.Abs(ser-51.2) > 1e-9 { // §3.1: "~50ns"
		t.Errorf("160 B at 25 Gb/s takes %g ns, want 51.2", ser)
	}
	eff, err := IPEfficiency(1500, 8)
	if err != nil || math.Abs(eff-1500.0/(1584+32)) > 1e-12 {
		t.Errorf("IPEfficiency(1500) = %g, %v", eff, err)
	}
}

func TestRespCells(t *testing.T) {
	c, err := RespCells(4096, 64, 8)
	if err != nil || len(c) != 64 || Sum(c) != 64*72 {
		t.Fatalf("RespCells(4096, 64) = %v, %v: want 64 cells of 72 B", c, err)
	}
	c, err = RespCells(100, 64, 8)
	if err != nil || !slices.Equal(c, []int{72, 48}) { // 8 + 36 = 44 → 48
		t.Fatalf("RespCells(100, 64) = %v, %v", c, err)
	}
	c, err = RespCells(4096, 128, 8)
	if err != nil || len(c) != 32 || c[0] != 136 {
		t.Fatalf("RespCells(4096, 128) = %v, %v", c, err)
	}
	for _, bad := range [][3]int{{0, 64, 8}, {4096, 0, 8}, {4096, 153, 8}, {4096, 64, 3}} {
		if _, err := RespCells(bad[0], bad[1], bad[2]); err == nil {
			t.Errorf("RespCells(%v) accepted bad input", bad)
		}
	}
}
