package tin

import (
	"reflect"
	"strings"
	"testing"
)

func value(ws Writes, name string) (uint32, bool) {
	for _, w := range ws {
		if w.Name == name {
			return w.Value, true
		}
	}
	return 0, false
}

func TestUniformRandomIsSeeded(t *testing.T) {
	tp := docTopology(t)
	u := UniformRandom{Load: 0.2, Bytes: 1500, Count: 100, Reply: true, ReplyBytes: 64, Flows: 4, Port: 1, Sources: 3, Fanout: 2, Seed: 9}
	a, err := u.Writes(tp, 100000)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := u.Writes(tp, 100000)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("the same seed gave different writes")
	}
	if len(a) != 3 {
		t.Fatalf("%d sources, want 3", len(a))
	}
	u.Seed = 10
	c, _ := u.Writes(tp, 100000)
	if reflect.DeepEqual(a, c) {
		t.Error("seeds 9 and 10 chose the same sources and destinations")
	}
	for src, ws := range a {
		rate, _ := value(ws, "IPG_RATE_MBPS")
		ctrl, _ := value(ws, "IPG_CTRL")
		lo, _ := value(ws, "IPG_DST_MASK_LO")
		if rate != 20000 || ctrl != 3 {
			t.Errorf("%s: rate %d ctrl %d, want 20000 Mb/s (0.2 x 100 Gb/s) and ENABLE|REPLY", src, rate, ctrl)
		}
		if n := popcount(lo); n != 2 || lo&(1<<uint(tp.Node[src].Index())) != 0 {
			t.Errorf("%s: destination mask 0x%x, want 2 destinations, not itself", src, lo)
		}
		if ws[len(ws)-1].Name != "IPG_CTRL" {
			t.Errorf("%s: the generator is enabled before its settings are written", src)
		}
	}
	all, _ := UniformRandom{Load: 0.1, Bytes: 64, Count: 1}.Writes(tp, 100000)
	for src, ws := range all {
		if lo, _ := value(ws, "IPG_DST_MASK_LO"); lo != 0x0F0F&^(1<<uint(tp.Node[src].Index())) {
			t.Errorf("%s: mask 0x%x, want every other TiN", src, lo)
		}
	}
	for _, bad := range []UniformRandom{{Load: 0, Bytes: 1, Count: 1}, {Load: 1.5, Bytes: 1, Count: 1}, {Load: 0.1, Bytes: 0, Count: 1},
		{Load: 0.1, Bytes: 20000, Count: 1}, {Load: 0.1, Bytes: 64, Count: 1, Port: 4}} {
		if _, err := bad.Writes(tp, 100000); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

func popcount(v uint32) int {
	n := 0
	for ; v != 0; v &= v - 1 {
		n++
	}
	return n
}

func TestPermutationAndIncast(t *testing.T) {
	tp := docTopology(t)
	p, err := Permutation(tp, 3)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for s, d := range p {
		if s == d || seen[d] {
			t.Errorf("permutation %v: %s -> %s", p, s, d)
		}
		seen[d] = true
	}
	q, _ := Permutation(tp, 3)
	if !reflect.DeepEqual(p, q) {
		t.Error("permutation not fixed by its seed")
	}
	v, s, err := Incast(tp, "", 5, 4)
	if err != nil || len(s) != 5 || tp.Node[v] == (Node{}) && v != "tin-p0b0" {
		t.Fatalf("incast %s %v %v", v, s, err)
	}
	for _, x := range s {
		if x == v {
			t.Errorf("victim %s among its senders", v)
		}
	}
	if _, all, _ := Incast(tp, "tin-p1b1", 0, 1); len(all) != 7 {
		t.Errorf("senders 0 gave %d, want all 7 others", len(all))
	}
	if _, _, err := Incast(tp, "nope", 1, 1); err == nil {
		t.Error("an unknown victim accepted")
	}
	if _, _, err := Incast(tp, "tin-p0b0", 8, 1); err == nil {
		t.Error("8 senders besides the victim accepted")
	}
}

func TestStreamsAndBursts(t *testing.T) {
	tp := docTopology(t)
	s := Streams{Target: "tin-p1b3", Sources: []string{"tin-p0b0", "tin-p0b1", "tin-p1b0"}, PerSource: 2, Lengths: []int{10, 20, 40},
		Bytes: 64, Concurrent: 2, Sync: true, EOD: true, Seed: 5}
	ws, lens, err := s.Writes(tp)
	if err != nil {
		t.Fatal(err)
	}
	for _, src := range s.Sources {
		l, _ := value(ws[src], "OG_LEN")
		dst, _ := value(ws[src], "OG_DST")
		ctrl, _ := value(ws[src], "OG_CTRL")
		if int(l) != lens[src] || dst != 0x0460 || ctrl != 1|2|4 {
			t.Errorf("%s: length %d (%d), target 0x%x, ctrl %d", src, l, lens[src], dst, ctrl)
		}
	}
	for _, bad := range []Streams{{Target: "x"}, {Target: "tin-p1b3", Sources: []string{"tin-p1b3"}, PerSource: 1, Lengths: []int{4}, Bytes: 8, Concurrent: 1},
		{Target: "tin-p1b3", Sources: []string{"tin-p0b0"}, PerSource: 1, Lengths: []int{1}, Bytes: 8, Concurrent: 1, Sync: true},
		{Target: "tin-p1b3", Sources: []string{"tin-p0b0"}, PerSource: 1, Lengths: []int{4}, Bytes: 137, Concurrent: 1}} {
		if _, _, err := bad.Writes(tp); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
	b := Bursts{Pairs: map[string]string{"tin-p0b0": "tin-p1b2"}, MsgBytes: 65536, RateMbps: 600, Count: 3, MTU: 4096, Port: 1}
	bw, err := b.Writes(tp)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := value(bw["tin-p0b0"], "BG_DST"); d != 0x0441 {
		t.Errorf("BG_DST 0x%x, want p1t2 port 1, 0x0441", d)
	}
	b.Pairs["tin-p0b1"] = "tin-p0b1"
	if _, err := b.Writes(tp); err == nil || !strings.Contains(err.Error(), "another board") {
		t.Errorf("a burst to itself accepted: %v", err)
	}
}
