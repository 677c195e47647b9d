package prr

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSortNetworkDepth checks the network's length against §3.2a:
// log2(P)(log2(P)+1)/2 parallel steps, and that no lane is used twice in a
// step (each step is one row of CAS units).
func TestSortNetworkDepth(t *testing.T) {
	for lg := 1; lg <= 8; lg++ {
		n := 1 << lg
		layers := oddEvenMergeLayers(n)
		if want := lg * (lg + 1) / 2; len(layers) != want {
			t.Errorf("P=%d: %d layers, §3.2a gives %d", n, len(layers), want)
		}
		for li, layer := range layers {
			used := map[uint16]bool{}
			for _, u := range layer {
				if u.a >= u.b || int(u.b) >= n {
					t.Fatalf("P=%d layer %d: bad unit %v", n, li, u)
				}
				if used[u.a] || used[u.b] {
					t.Fatalf("P=%d layer %d: lane used twice", n, li)
				}
				used[u.a], used[u.b] = true, true
			}
		}
	}
}

// TestSortNetworkSorts checks the network sorts: by the 0-1 principle,
// exhaustively for P <= 16, and on random keys for larger P.
func TestSortNetworkSorts(t *testing.T) {
	c := &core{}
	for lg := 1; lg <= 4; lg++ {
		n := 1 << lg
		layers := oddEvenMergeLayers(n)
		lanes := make([]uint32, n)
		for m := 0; m < 1<<n; m++ {
			for i := range lanes {
				lanes[i] = uint32(m >> i & 1)
			}
			for _, l := range layers {
				c.sortLayer(lanes, l)
			}
			if !slices.IsSorted(lanes) {
				t.Fatalf("P=%d: 0-1 input %0*b not sorted: %v", n, n, m, lanes)
			}
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for lg := 5; lg <= 8; lg++ {
		n := 1 << lg
		layers := oddEvenMergeLayers(n)
		for trial := 0; trial < 200; trial++ {
			lanes := make([]uint32, n)
			for i := range lanes {
				lanes[i] = r.Uint32() % 7
			}
			for _, l := range layers {
				c.sortLayer(lanes, l)
			}
			if !slices.IsSorted(lanes) {
				t.Fatalf("P=%d: random keys not sorted", n)
			}
		}
	}
}

// nullSink lets the core run without a design.
func coreFor(t *testing.T, cfg Config) *core {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	c := newCore(cfg)
	c.out = &design{cfg: cfg, c: c, placement: make([]uint32, cfg.Ports), egress: make([][]uint32, cfg.Ports),
		portOut: make([]uint32, cfg.Ports), portDropped: make([]uint32, cfg.Ports)}
	return c
}

// TestStagesOfOneBatch follows one batch of P=8 through the pipeline stage
// by stage and checks what each building block holds (§3.2): the sorted
// lanes (Null first, then by destination, equal destinations in input
// order), the popcounts, the prefix sum (out_k = start of port k's
// packets), the offsets, the rotations, and the final queues.
func TestStagesOfOneBatch(t *testing.T) {
	cfg := Config{Ports: 8, S: 1, FIFODepth: 4, PacketBits: 32, ClockMHz: 150}
	c := coreFor(t, cfg)
	// Offsets left by earlier traffic: port 1 at queue 6, port 5 at queue 3.
	c.offset[1], c.offset[5] = 6, 3
	b := c.getBatch()
	dests := map[int]int{0: 5, 2: 1, 3: 5, 4: 1, 6: 1, 7: 0}
	for slot, d := range dests {
		id, p := c.newPacket()
		p.src, p.dest, p.tag = uint16(slot), uint16(d), uint32(100+slot)
		b.put(slot, id)
	}
	b.ins = c.cycle
	c.load(b)
	for i := 0; i < cfg.stages(); i++ {
		c.stage(b, i)
	}
	// Sorted: Null slots 1, 5; then port 0: slot 7; port 1: slots 2, 4, 6; port 5: slots 0, 3.
	var srcs []int
	for _, k := range b.lanes {
		srcs = append(srcs, int(k&7))
	}
	if want := []int{1, 5, 7, 2, 4, 6, 0, 3}; !slices.Equal(srcs, want) {
		t.Errorf("sorted lanes by input: %v, want %v", srcs, want)
	}
	if got := []int32{b.tree[0], b.tree[1*8], b.tree[2*8], b.tree[6*8]}; !slices.Equal(got, []int32{2, 1, 3, 2}) {
		t.Errorf("popcounts Null, port0, port1, port5 = %v, want [2 1 3 2]", got)
	}
	// Prefix inputs: Null 2, port0 1, port1 3, port2..6 0 -> starts.
	if want := []int32{2, 3, 6, 6, 6, 6, 8, 8}; !slices.Equal(b.prefix, want) {
		t.Errorf("prefix sum = %v, want %v", b.prefix, want)
	}
	if b.off[1] != 6 || b.off[5] != 3 || b.off[0] != 0 {
		t.Errorf("offsets seen: %v", b.off)
	}
	if c.offset[0] != 1 || c.offset[1] != (6+3)%8 || c.offset[5] != 5 {
		t.Errorf("offset counters after the batch: %v", c.offset)
	}
	// Rotation = offset - start: port 0: 0-2 = 6; port 1: 6-3 = 3; port 5: 3-6 = 5.
	if b.sel[0] != 6 || b.sel[1] != 3 || b.sel[5] != 5 || !slices.Equal(b.acc, b.sel) {
		t.Errorf("rotations %v, applied %v", b.sel, b.acc)
	}
	c.write(b)
	want := map[[2]int]uint32{
		{0, 0}: 107,                           // port 0 from queue 0
		{1, 6}: 102, {1, 7}: 104, {1, 0}: 106, // port 1 from queue 6, wrapping
		{5, 3}: 100, {5, 4}: 103,
	}
	for g := 0; g < 8; g++ {
		for q := 0; q < 8; q++ {
			id, ok := c.entry(g, q, 0)
			w, exp := want[[2]int{g, q}]
			switch {
			case ok != exp:
				t.Errorf("queue (%d,%d): holds a packet = %v, want %v", g, q, ok, exp)
			case ok && c.pk[id].tag != w:
				t.Errorf("queue (%d,%d): tag %d, want %d", g, q, c.pk[id].tag, w)
			}
		}
	}
}

// TestPipelineGeometry checks the stage counts of §4.1 and the pipeline
// latencies after register removal against Table 1 (§4.2), for every P of
// the table and S = 1, 2, 4, as the core's segments realise them.
func TestPipelineGeometry(t *testing.T) {
	// Table 1 (§4.2): pipeline length and latency for S = 1, 2, 4.
	table1 := map[int][4]int{
		2: {4, 4, 2, 1}, 4: {7, 7, 4, 2}, 8: {10, 10, 5, 2}, 16: {14, 14, 7, 4},
		32: {20, 20, 10, 5}, 64: {27, 27, 14, 7}, 128: {35, 35, 17, 8}, 256: {44, 44, 22, 11},
	}
	for p, row := range table1 {
		for si, s := range []int{1, 2, 4} {
			cfg := Config{Ports: p, S: s, FIFODepth: 1, PacketBits: 32, ClockMHz: 150}
			if cfg.stages() != row[0] {
				t.Errorf("P=%d: %d stages, Table 1 gives %d", p, cfg.stages(), row[0])
			}
			c := newCore(cfg)
			if got := c.latency(); got != row[1+si] {
				t.Errorf("P=%d S=%d: %d registers, Table 1 gives latency %d", p, s, got, row[1+si])
			}
			if !cfg.hasRegister(cfg.compulsoryStage()) {
				t.Errorf("P=%d S=%d: the compulsory register (index %d) was removed", p, s, cfg.compulsoryStage())
			}
			covered := 0
			for _, sg := range c.segs {
				covered += sg[1] - sg[0]
			}
			if covered != cfg.stages() {
				t.Errorf("P=%d S=%d: segments cover %d of %d stages", p, s, covered, cfg.stages())
			}
		}
	}
}
