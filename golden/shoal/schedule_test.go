package shoal

import (
	"fmt"
	"slices"
	"testing"
)

// Every ordered pair is connected exactly once per epoch, each node sends at
// most once and receives at most once per slot and channel, for both
// schedules, odd and even racks, one to several channels (§3.2, §3.4).
func TestEveryPairOncePerEpoch(t *testing.T) {
	for _, kind := range []ScheduleKind{Cyclic, PropagationAware} {
		for _, n := range []int{2, 3, 4, 7, 8, 9, 16, 33, 64} {
			for _, ch := range []int{1, 2, 3, 4} {
				s, err := NewSchedule(n, ch, kind)
				if err != nil {
					t.Fatal(err)
				}
				seen := make([]int, n*n)
				for slot := 0; slot < s.EpochSlots(); slot++ {
					for c := 0; c < ch; c++ {
						recv := make([]bool, n)
						for i := 0; i < n; i++ {
							d := s.Dst(slot, c, i)
							if d < 0 {
								continue
							}
							if d == i {
								t.Fatalf("%v n=%d ch=%d slot %d: node %d sends to itself", kind, n, ch, slot, i)
							}
							if recv[d] {
								t.Fatalf("%v n=%d ch=%d slot %d: node %d receives twice", kind, n, ch, slot, d)
							}
							recv[d] = true
							seen[i*n+d]++
							if got := s.Src(slot, c, d); got != i {
								t.Fatalf("Src(%d,%d,%d) = %d, want %d", slot, c, d, got, i)
							}
							if ws, wc, ok := s.When(i, d); !ok || ws != slot || wc != c {
								t.Fatalf("When(%d,%d) = %d,%d,%v, want %d,%d", i, d, ws, wc, ok, slot, c)
							}
						}
					}
				}
				for i := 0; i < n; i++ {
					for j := 0; j < n; j++ {
						want := 1
						if i == j {
							want = 0
						}
						if seen[i*n+j] != want {
							t.Fatalf("%v n=%d ch=%d: pair %d→%d connected %d times per epoch", kind, n, ch, i, j, seen[i*n+j])
						}
					}
				}
				if want := ceilDiv(Columns(n, kind), ch); s.EpochSlots() != want {
					t.Errorf("%v n=%d ch=%d: epoch %d slots, want %d", kind, n, ch, s.EpochSlots(), want)
				}
			}
		}
	}
}

// Fig. 3: the 8-node cyclic schedule connects i to i+t in column t.
func TestCyclicFigure3(t *testing.T) {
	s, _ := NewSchedule(8, 1, Cyclic)
	if s.EpochSlots() != 7 {
		t.Fatalf("epoch %d", s.EpochSlots())
	}
	for slot := 0; slot < 7; slot++ {
		for i := 0; i < 8; i++ {
			if d := s.Dst(slot, 0, i); d != (i+slot+1)%8 {
				t.Errorf("slot %d: node %d sends to %d, want %d", slot, i, d, (i+slot+1)%8)
			}
		}
	}
	if got := MappingText(s.Pairs(0, 0)); got != "0>1,1>2,2>3,3>4,4>5,5>6,6>7,7>0" {
		t.Errorf("slot 0 = %s", got)
	}
	// The epoch repeats.
	if s.Dst(7, 0, 3) != s.Dst(0, 0, 3) || s.Dst(-1, 0, 3) != s.Dst(6, 0, 3) {
		t.Error("slots do not wrap around the epoch")
	}
}

// Appendix A: inverting the last (N-1)/2 columns puts exactly (N-1)/2 slots
// between i→j and j→i for an odd N; for an even N the extra column puts N/2
// between them and leaves each node one empty slot per epoch (a 1/N loss).
func TestPropagationAwareShift(t *testing.T) {
	for _, n := range []int{3, 5, 7, 9, 15, 31, 4, 6, 8, 10, 16, 32} {
		s, _ := NewSchedule(n, 1, PropagationAware)
		want := (n - 1) / 2
		if n%2 == 0 {
			want = n / 2
		}
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				if i == j {
					continue
				}
				g, back := s.Gap(i, j), s.Gap(j, i)
				if g != want || back != s.EpochSlots()-want {
					t.Fatalf("n=%d: %d→%d then %d→%d after %d slots (back %d), want %d", n, i, j, j, i, g, back, want)
				}
			}
		}
		idle := make([]int, n)
		for slot := 0; slot < s.EpochSlots(); slot++ {
			for i := 0; i < n; i++ {
				if s.Dst(slot, 0, i) < 0 {
					idle[i]++
				}
			}
		}
		wantIdle := 0
		if n%2 == 0 {
			wantIdle = 1
		}
		for i, k := range idle {
			if k != wantIdle {
				t.Errorf("n=%d: node %d idles %d slots per epoch, want %d", n, i, k, wantIdle)
			}
		}
	}
	// The odd layout in full for N = 7: columns 1, 2, 3, 6, 5, 4.
	var offs []int
	for _, c := range ScheduleColumns(7, PropagationAware) {
		offs = append(offs, c.Offset)
	}
	if !slices.Equal(offs, []int{1, 2, 3, 6, 5, 4}) {
		t.Errorf("N=7 columns %v", offs)
	}
	// The cyclic schedule has no such spacing: offset N/2 meets itself.
	s, _ := NewSchedule(8, 1, Cyclic)
	if g := s.Gap(0, 4); g != 0 {
		t.Errorf("cyclic 0→4 / 4→0 gap %d, want 0", g)
	}
}

func TestScheduleErrors(t *testing.T) {
	for _, c := range []struct{ n, ch int }{{1, 1}, {MaxNodes + 1, 1}, {8, 0}, {8, MaxChannels + 1}} {
		if _, err := NewSchedule(c.n, c.ch, Cyclic); err == nil {
			t.Errorf("NewSchedule(%d, %d) accepted", c.n, c.ch)
		}
	}
	if _, err := NewSchedule(8, 1, ScheduleKind(9)); err == nil {
		t.Error("unknown kind accepted")
	}
	s, _ := NewSchedule(8, 1, Cyclic)
	if _, _, ok := s.When(3, 3); ok {
		t.Error("When(3,3) ok")
	}
	if _, _, ok := s.When(-1, 3); ok {
		t.Error("When(-1,3) ok")
	}
	if k, err := ParseScheduleKind(" Appendix-A "); err != nil || k != PropagationAware {
		t.Errorf("ParseScheduleKind = %v, %v", k, err)
	}
	if _, err := ParseScheduleKind("random"); err == nil {
		t.Error("random accepted")
	}
}

func TestMappingRoundTrip(t *testing.T) {
	for _, m := range [][]int{{1, 2, 0}, {-1, -1}, {3, -1, 0, 1}} {
		txt := MappingText(m)
		back, err := ParseMapping(txt, len(m))
		if err != nil || !slices.Equal(back, m) {
			t.Errorf("%v -> %q -> %v, %v", m, txt, back, err)
		}
	}
	for _, bad := range []string{"0>1,0>2", "0>1,1>1", "0>4", "a>b", "0-1", "-1>0"} {
		if _, err := ParseMapping(bad, 4); err == nil {
			t.Errorf("ParseMapping(%q) accepted", bad)
		}
	}
}

func ExampleSchedule_Dst() {
	s, _ := NewSchedule(8, 1, Cyclic)
	for slot := 0; slot < 3; slot++ {
		fmt.Println(slot, MappingText(s.Pairs(slot, 0)))
	}
	// Output:
	// 0 0>1,1>2,2>3,3>4,4>5,5>6,6>7,7>0
	// 1 0>2,1>3,2>4,3>5,4>6,5>7,6>0,7>1
	// 2 0>3,1>4,2>5,3>6,4>7,5>0,6>1,7>2
}
