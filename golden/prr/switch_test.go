package prr

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func mustSwitch(t testing.TB, p, depth int) *Switch {
	t.Helper()
	s, err := NewSwitch(p, depth)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func pk(dest int, data uint64) Packet { return Packet{Valid: true, Dest: dest, Data: data} }

// TestInsertHandWorked follows two batches through a 4-port switch by hand
// (FPGA'20 §3.2): network stages {(0,1),(2,3)}, {(0,2),(1,3)}, {(1,2)}; keys
// {valid,dest} = 4+dest for valid packets, dest for invalid ones.
func TestInsertHandWorked(t *testing.T) {
	s := mustSwitch(t, 4, 0)
	// Batch 1: A→1, invalid, B→1, C→0. Keys 5,0,5,4 sort to I,C,A,B.
	// Popcounts: null 1, port0 1, port1 2; prefix: start0=1, start1=2.
	// Port 0: rotate by 0−1 ≡ 3: C (sorted 1) to lane 0.
	// Port 1: rotate by 0−2 ≡ 2: A (sorted 2) to lane 0, B to lane 1.
	pl, drops := s.Insert([]Packet{pk(1, 'A'), {}, pk(1, 'B'), pk(0, 'C')})
	want := []Placement{{3, 0, 0, 'C'}, {0, 1, 0, 'A'}, {2, 1, 1, 'B'}}
	if !slices.Equal(pl, want) || len(drops) != 0 {
		t.Fatalf("batch 1: placements %v drops %v, want %v and none", pl, drops, want)
	}
	if st := s.State(); !slices.Equal(st.Offsets, []int{1, 2, 0, 0}) {
		t.Fatalf("batch 1: offsets %v, want [1 2 0 0]", st.Offsets)
	}
	// Batch 2: D→1, E→1, F→1, G→0. Keys 5,5,5,4 sort to G,D,E,F (equal
	// keys keep input order). start0=0, start1=1.
	// Port 0: rotate by 1−0: G to lane 1. Port 1: rotate by 2−1 = 1: D to
	// lane 2, E to lane 3, F to lane 0.
	pl, _ = s.Insert([]Packet{pk(1, 'D'), pk(1, 'E'), pk(1, 'F'), pk(0, 'G')})
	want = []Placement{{3, 0, 1, 'G'}, {0, 1, 2, 'D'}, {1, 1, 3, 'E'}, {2, 1, 0, 'F'}}
	if !slices.Equal(pl, want) {
		t.Fatalf("batch 2: placements %v, want %v", pl, want)
	}
	if st := s.State(); !slices.Equal(st.Offsets, []int{2, 1, 0, 0}) {
		t.Fatalf("batch 2: offsets %v, want [2 1 0 0] (port 1: 2+3 mod 4)", st.Offsets)
	}
	// §4.4: port 1's arbiter reads queues 0,1,2,3,0: A B D E F.
	var got []byte
	for range 6 {
		for _, d := range s.Dequeue() {
			if d.Output == 1 {
				got = append(got, byte(d.Data))
			}
		}
	}
	if string(got) != "ABDEF" {
		t.Fatalf("port 1 delivered %q, want ABDEF", got)
	}
}

func TestInsertDropsKeepOffsetsMoving(t *testing.T) {
	s := mustSwitch(t, 4, 1)
	s.Insert([]Packet{pk(2, 1), pk(2, 2), pk(2, 3), pk(2, 4)}) // fills group 2
	pl, drops := s.Insert([]Packet{pk(2, 5), {}, pk(3, 6), pk(2, 7)})
	if len(drops) != 2 || len(pl) != 1 || pl[0].Dest != 3 {
		t.Fatalf("full group 2: placements %v drops %v, want only the port-3 packet placed", pl, drops)
	}
	st := s.State()
	if st.Offsets[2] != 2 {
		t.Fatalf("offset of port 2 is %d, want 2: the counter advances by the popcount even for dropped packets (§3.2b)", st.Offsets[2])
	}
	for q := range 4 {
		if s.QueueLen(2, q) != 1 {
			t.Fatalf("queue %d of group 2 holds %d, want 1 (depth 1)", q, s.QueueLen(2, q))
		}
	}
}

// TestArbiterWaitsOnEmptyQueue: after a drop the arbiter may wait on an
// empty queue while others of the group hold packets (§4.4's "out of
// synchronisation").
func TestArbiterWaitsOnEmptyQueue(t *testing.T) {
	s := mustSwitch(t, 2, 1)
	s.Insert([]Packet{pk(0, 1)})                         // q0
	s.Insert([]Packet{pk(0, 2)})                         // q1
	s.Insert([]Packet{pk(0, 3)})                         // q0 full: dropped, offset → 1
	if d := s.Dequeue(); len(d) != 1 || d[0].Data != 1 { // reads q0
		t.Fatalf("first read %v, want packet 1", d)
	}
	if d := s.Dequeue(); len(d) != 1 || d[0].Data != 2 { // reads q1
		t.Fatalf("second read %v, want packet 2", d)
	}
	s.Insert([]Packet{pk(0, 4)}) // offset 1: q1
	if d := s.Dequeue(); len(d) != 0 {
		t.Fatalf("arbiter at empty q0 read %v; it must wait there (§4.4)", d)
	}
	if s.QueueLen(0, 1) != 1 {
		t.Fatalf("packet 4 should wait in q1")
	}
}

// TestInvalidDestIrrelevant: the dest bits of invalid packets are in the
// sort key (§3.2a), but they never move a valid packet: a CAS between a valid
// and an invalid packet goes the same way whatever the invalid one's dest, so
// by induction over the stages the lanes holding valid packets, and their
// order, do not depend on them. A replay need not reproduce those bits.
func TestInvalidDestIrrelevant(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, p := range []int{4, 8, 16, 32} {
		for range 1500 {
			b := make([]Packet, p)
			for i := range b {
				b[i] = Packet{Valid: r.IntN(2) == 0, Dest: r.IntN(p), Data: uint64(i)}
			}
			alt := slices.Clone(b)
			for i := range alt {
				if !alt[i].Valid {
					alt[i].Dest = r.IntN(p)
				}
			}
			s1, s2 := mustSwitch(t, p, 0), mustSwitch(t, p, 0)
			p1, _ := s1.Insert(b)
			p2, _ := s2.Insert(alt)
			if !slices.Equal(p1, p2) {
				t.Fatalf("P=%d: changing invalid packets' dest moved valid ones:\n%v\n%v", p, p1, p2)
			}
		}
	}
}

func TestBalancedFill(t *testing.T) {
	// Whatever the batches, the queues of a group differ by at most one
	// packet when nothing is dropped or read (§3: "filled at the same rate").
	r := rand.New(rand.NewPCG(5, 6))
	s := mustSwitch(t, 16, 0)
	for range 500 {
		b := make([]Packet, 16)
		for i := range b {
			b[i] = Packet{Valid: r.IntN(3) > 0, Dest: r.IntN(4)} // 4 busy ports
		}
		s.Insert(b)
	}
	for g := range 16 {
		lo, hi := 1<<30, 0
		for q := range 16 {
			lo, hi = min(lo, s.QueueLen(g, q)), max(hi, s.QueueLen(g, q))
		}
		if hi-lo > 1 {
			t.Fatalf("group %d: queue fills range %d..%d", g, lo, hi)
		}
	}
}

func TestCheckBatchAndState(t *testing.T) {
	s := mustSwitch(t, 4, 2)
	for _, b := range [][]Packet{make([]Packet, 5), {pk(4, 0)}, {{Dest: -1}}} {
		if err := s.CheckBatch(b); err == nil {
			t.Errorf("CheckBatch(%v) accepted", b)
		}
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("Insert of a 5-packet batch on 4 ports did not panic")
			}
		}()
		s.Insert(make([]Packet, 5))
	}()
	st := s.State()
	st.Offsets[1] = 4
	if err := s.SetState(st); err == nil || !strings.Contains(err.Error(), "port 1") {
		t.Errorf("SetState with offset 4 on 4 ports: %v", err)
	}
	st = s.State()
	st.Queues[2][3] = make([]Entry, 3)
	if err := s.SetState(st); err == nil || !strings.Contains(err.Error(), "depth 2") {
		t.Errorf("SetState with an overfull queue: %v", err)
	}
	st = s.State()
	st.Offsets[0], st.Arbiters[0] = 3, 3
	st.Queues[0][3] = []Entry{{Input: 1, Data: 9}}
	if err := s.SetState(st); err != nil {
		t.Fatal(err)
	}
	if d := s.Dequeue(); len(d) != 1 || d[0].Data != 9 || d[0].Queue != 3 {
		t.Fatalf("after SetState: %v", d)
	}
	if _, err := NewSwitch(6, 1); err == nil {
		t.Error("NewSwitch(6) accepted")
	}
	if _, err := NewSwitch(4, -1); err == nil {
		t.Error("NewSwitch depth -1 accepted")
	}
}
