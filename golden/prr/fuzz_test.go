package prr

import (
	"math"
	"slices"
	"strings"
	"testing"
)

// byteSource reads fuzz bytes as small numbers; past the end it yields 0.
type byteSource struct {
	b []byte
	i int
}

func (s *byteSource) next() int {
	if s.i >= len(s.b) {
		return 0
	}
	s.i++
	return int(s.b[s.i-1])
}

// FuzzInsert feeds random batches to random switch states and checks the
// invariants of the arbiter (FPGA'20 §3.1-§3.2, §4.4): no queue above its
// depth; every valid packet placed or dropped exactly once, invalid ones
// never; each port's packets go to consecutive queues from its offset,
// dropped exactly where the queue was full; offsets advance by the popcount;
// queues only grow at their tail; and, on a fresh switch, every port
// delivers its packets in the order they were written, batch after batch.
func FuzzInsert(f *testing.F) {
	f.Add([]byte{1, 0, 3, 1, 2})
	f.Add([]byte{2, 1, 255, 7, 9, 1, 0, 200, 13, 77, 5})
	f.Add([]byte{4, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 33, 33, 33, 33, 33, 33})
	f.Add([]byte{3, 4, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})
	f.Fuzz(func(t *testing.T, data []byte) {
		src := &byteSource{b: data}
		p := 2 << (src.next() % 5) // 2..32
		depth := src.next() % 5    // 0: unbounded
		s, err := NewSwitch(p, depth)
		if err != nil {
			t.Fatal(err)
		}
		st := s.State()
		for d := range p {
			st.Offsets[d] = src.next() % p
			st.Arbiters[d] = src.next() % p
		}
		limit := depth
		if limit == 0 {
			limit = 3
		}
		for g := range p {
			for q := range p {
				for k := range src.next() % (limit + 1) {
					st.Queues[g][q] = append(st.Queues[g][q], Entry{Input: -1, Data: uint64(1000 + k)})
				}
			}
		}
		if err := s.SetState(st); err != nil {
			t.Fatal(err)
		}
		batch := make([]Packet, src.next()%(p+1))
		for i := range batch {
			v := src.next()
			batch[i] = Packet{Valid: v&1 == 1, Dest: (v >> 1) % p, Data: uint64(i)}
		}
		before := s.State()
		placed, drops := s.Insert(batch)
		after := s.State()

		seen := make([]int, len(batch))
		for _, pl := range placed {
			seen[pl.Input]++
			if pl.Dest != batch[pl.Input].Dest || pl.Data != batch[pl.Input].Data {
				t.Fatalf("placement %+v does not match its packet %+v", pl, batch[pl.Input])
			}
		}
		for _, in := range drops {
			seen[in]++
		}
		count := make([]int, p)
		for i, pk := range batch {
			want := 0
			if pk.Valid {
				want = 1
				count[pk.Dest]++
			}
			if seen[i] != want {
				t.Fatalf("input %d (%+v) placed or dropped %d times", i, pk, seen[i])
			}
		}
		for d := range p {
			if after.Offsets[d] != (before.Offsets[d]+count[d])%p {
				t.Fatalf("port %d: offset %d → %d after %d packets", d, before.Offsets[d], after.Offsets[d], count[d])
			}
			if after.Arbiters[d] != before.Arbiters[d] {
				t.Fatalf("port %d: Insert moved the output arbiter", d)
			}
			// Walk the port's k = 0..count-1 slots: queue offset+k takes
			// the next placement unless it is full, then a drop is due.
			var mine []Placement
			for _, pl := range placed {
				if pl.Dest == d {
					mine = append(mine, pl)
				}
			}
			fill := make([]int, p)
			for q := range p {
				fill[q] = len(before.Queues[d][q])
			}
			dropped, next := 0, 0
			for k := range count[d] {
				q := (before.Offsets[d] + k) % p
				if depth > 0 && fill[q] >= depth {
					dropped++
					continue
				}
				if next >= len(mine) || mine[next].Queue != q {
					t.Fatalf("port %d slot %d: expected a write to queue %d, got placements %v", d, k, q, mine)
				}
				fill[q]++
				next++
			}
			if next != len(mine) {
				t.Fatalf("port %d: %d placements beyond its slots", d, len(mine)-next)
			}
			var myDrops int
			for _, in := range drops {
				if batch[in].Dest == d {
					myDrops++
				}
			}
			if myDrops != dropped {
				t.Fatalf("port %d: %d drops, the full queues call for %d", d, myDrops, dropped)
			}
			for q := range p {
				a, b := after.Queues[d][q], before.Queues[d][q]
				if depth > 0 && len(a) > depth {
					t.Fatalf("queue %d/%d holds %d > depth %d", d, q, len(a), depth)
				}
				if !slices.Equal(a[:len(b)], b) {
					t.Fatalf("queue %d/%d: old contents changed", d, q)
				}
			}
		}

		// The sorter sorts (0-1 principle aside, on these very keys).
		lanes := make([]lane, p)
		for i := range p {
			if i < len(batch) && batch[i].Valid {
				lanes[i].key = uint16(p | batch[i].Dest)
			} else if i < len(batch) {
				lanes[i].key = uint16(batch[i].Dest)
			}
			lanes[i].input = int16(i)
		}
		s.net.sort(lanes)
		for i := 1; i < p; i++ {
			if lanes[i-1].key > lanes[i].key {
				t.Fatalf("sorter left keys %d > %d at lanes %d, %d", lanes[i-1].key, lanes[i].key, i-1, i)
			}
		}

		// Order within a destination, over two batches on a fresh switch.
		fresh, _ := NewSwitch(p, 0)
		second := slices.Clone(batch)
		for i := range second {
			second[i].Data += 1 << 32
		}
		pa, _ := fresh.Insert(batch)
		pb, _ := fresh.Insert(second)
		wantOrder := make([][]uint64, p)
		for _, pl := range append(pa, pb...) {
			wantOrder[pl.Dest] = append(wantOrder[pl.Dest], pl.Data)
		}
		got := make([][]uint64, p)
		for range len(pa) + len(pb) + 1 {
			for _, dp := range fresh.Dequeue() {
				got[dp.Output] = append(got[dp.Output], dp.Data)
			}
		}
		for d := range p {
			if !slices.Equal(got[d], wantOrder[d]) {
				t.Fatalf("port %d delivered %v, written %v", d, got[d], wantOrder[d])
			}
		}
	})
}

// FuzzParsePlan: Predict's parameter parser never panics, every error names
// the model, and every accepted plan is within the documented limits.
func FuzzParsePlan(f *testing.F) {
	f.Add("16", "1", "all", "all", "1", "5e4", "1", "4", "32", "0.5")
	f.Add("128", "4", "prr,fifo", "uniform", "0.25", "100", "", "2", "1", "0")
	f.Add("3", "x", "pim,,rrm", "zipf", "NaN", "1e99", "0,-1", "1", "-1", "2")
	f.Add("256", "64", "", "", "1e-300", "+Inf", "1048576", "64", "1e6", "1")
	f.Fuzz(func(t *testing.T, p, s, algs, traffic, load, cycles, depths, replicas, burst, hot string) {
		pl, err := ParsePlan(map[string]string{
			"p": p, "s": s, "algs": algs, "traffic": traffic, "load": load, "cycles": cycles,
			"depths": depths, "replicas": replicas, "burst_len": burst, "nonuniform_p": hot,
		})
		if err != nil {
			if !strings.HasPrefix(err.Error(), Name+": ") {
				t.Fatalf("error does not name the model: %v", err)
			}
			return
		}
		if checkPorts(pl.P) != nil || pl.S < 1 || pl.S > MaxS {
			t.Fatalf("accepted p=%d s=%d", pl.P, pl.S)
		}
		if !(pl.Load > 0 && pl.Load <= 1) || pl.Cycles < 1 || pl.Cycles > MaxCycles {
			t.Fatalf("accepted load %v cycles %d", pl.Load, pl.Cycles)
		}
		if pl.Replicas < 2 || pl.Replicas > MaxReplicas || !(pl.BurstLen >= 1) || math.IsInf(pl.BurstLen, 0) || !(pl.HotProb > 0 && pl.HotProb <= 1) {
			t.Fatalf("accepted replicas %d burst %v hot %v", pl.Replicas, pl.BurstLen, pl.HotProb)
		}
		if !slices.IsSorted(pl.Depths) || len(slices.Compact(slices.Clone(pl.Depths))) != len(pl.Depths) {
			t.Fatalf("depths %v not sorted and unique", pl.Depths)
		}
		for _, d := range pl.Depths {
			if d < 1 || d > MaxDepth {
				t.Fatalf("accepted depth %d", d)
			}
		}
		for i, a := range pl.Algs {
			k, _, err := kindOf(a)
			if err != nil || (i > 0 && slices.Index(Algs, pl.Algs[i-1]) >= slices.Index(Algs, a)) {
				t.Fatalf("algs %v", pl.Algs)
			}
			if k >= kPIM && pl.P > MaxVOQPorts && len(pl.Traffics) > 0 {
				t.Fatalf("accepted %s at %d ports", a, pl.P)
			}
		}
		for _, tr := range pl.Traffics {
			if !slices.Contains(Traffics, tr) {
				t.Fatalf("traffic %v", pl.Traffics)
			}
		}
		// Every accepted configuration is one Simulate accepts.
		for _, a := range pl.Algs {
			for _, tr := range pl.Traffics {
				c := SimConfig{P: pl.P, Alg: a, Traffic: tr, Load: pl.Load, Cycles: pl.Cycles, BurstLen: pl.BurstLen, HotProb: pl.HotProb}
				if err := c.normalize(); err != nil {
					t.Fatalf("plan accepted but simulation refuses: %v", err)
				}
			}
		}
	})
}
