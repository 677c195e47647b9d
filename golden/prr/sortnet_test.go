package prr

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// recursiveBatcher is Batcher's odd-even merge sort as the recursive
// definition states it (sort both halves, then merge odd and even
// subsequences), an independent construction to check NewSortNet against.
func recursiveBatcher(p int) []Comparator {
	var out []Comparator
	var merge func(lo, n, r int)
	merge = func(lo, n, r int) {
		m := r * 2
		if m < n {
			merge(lo, n, m)
			merge(lo+r, n, m)
			for i := lo + r; i+r < lo+n; i += m {
				out = append(out, Comparator{i, i + r})
			}
			return
		}
		out = append(out, Comparator{lo, lo + r})
	}
	var sortRange func(lo, n int)
	sortRange = func(lo, n int) {
		if n > 1 {
			m := n / 2
			sortRange(lo, m)
			sortRange(lo+m, m)
			merge(lo, n, 1)
		}
	}
	sortRange(0, p)
	return out
}

// asap places each comparator of a sequence in the earliest stage its wires
// allow: two sequences are the same network exactly when these agree.
func asap(p int, seq []Comparator) [][]Comparator {
	ready := make([]int, p)
	var stages [][]Comparator
	for _, c := range seq {
		s := max(ready[c.Lo], ready[c.Hi])
		for len(stages) <= s {
			stages = append(stages, nil)
		}
		stages[s] = append(stages[s], c)
		ready[c.Lo], ready[c.Hi] = s+1, s+1
	}
	for _, st := range stages {
		slices.SortFunc(st, func(a, b Comparator) int { return a.Lo - b.Lo })
	}
	return stages
}

func TestSortNetShape(t *testing.T) {
	for n := 1; n <= 8; n++ {
		p := 1 << n
		net, err := NewSortNet(p)
		if err != nil {
			t.Fatal(err)
		}
		// §3.2a: log2P(log2P+1)/2 parallel steps.
		if got, want := net.Depth(), n*(n+1)/2; got != want {
			t.Errorf("P=%d: %d stages, want %d", p, got, want)
		}
		// Knuth 5.3.4: Batcher's merge sort uses (n²−n+4)·2^(n−2) − 1 comparators.
		if got, want := net.Size(), (n*n-n+4)*(1<<n)/4-1; got != want {
			t.Errorf("P=%d: %d comparators, want %d", p, got, want)
		}
		for s, st := range net.Stages {
			used := map[int]bool{}
			for _, c := range st {
				if c.Lo >= c.Hi || c.Hi >= p || used[c.Lo] || used[c.Hi] {
					t.Fatalf("P=%d stage %d: bad or overlapping comparator %v", p, s, c)
				}
				used[c.Lo], used[c.Hi] = true, true
			}
		}
		var flat []Comparator
		for _, st := range net.Stages {
			flat = append(flat, st...)
		}
		a, b := asap(p, flat), asap(p, recursiveBatcher(p))
		if len(a) != len(b) {
			t.Fatalf("P=%d: iterative network has depth %d, recursive %d", p, len(a), len(b))
		}
		for s := range a {
			if !slices.Equal(a[s], b[s]) {
				t.Fatalf("P=%d stage %d: iterative %v, recursive %v", p, s, a[s], b[s])
			}
		}
	}
}

func TestSortNetRejects(t *testing.T) {
	for _, p := range []int{0, 1, 3, 12, 512, -4} {
		if _, err := NewSortNet(p); err == nil {
			t.Errorf("NewSortNet(%d) accepted", p)
		}
	}
}

// TestSortNetSorts: exhaustively over 0-1 inputs up to P=16 (the 0-1
// principle makes that a proof for those sizes) and on random keys above.
func TestSortNetSorts(t *testing.T) {
	for _, p := range []int{2, 4, 8, 16} {
		net, _ := NewSortNet(p)
		lanes := make([]lane, p)
		for v := range 1 << p {
			for i := range p {
				lanes[i] = lane{key: uint16(v >> i & 1), input: int16(i)}
			}
			net.sort(lanes)
			if !slices.IsSortedFunc(lanes, func(a, b lane) int { return int(a.key) - int(b.key) }) {
				t.Fatalf("P=%d: input %b not sorted", p, v)
			}
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for _, p := range []int{32, 64, 128, 256} {
		net, _ := NewSortNet(p)
		lanes := make([]lane, p)
		for range 200 {
			seen := make([]int, 1024)
			for i := range p {
				lanes[i] = lane{key: uint16(r.IntN(1024)), input: int16(i)}
				seen[lanes[i].key]++
			}
			net.sort(lanes)
			for i := range p {
				if i > 0 && lanes[i-1].key > lanes[i].key {
					t.Fatalf("P=%d: not sorted at %d", p, i)
				}
				seen[lanes[i].key]--
			}
			for k, c := range seen {
				if c != 0 {
					t.Fatalf("P=%d: key %d count off by %d: not a permutation", p, k, c)
				}
			}
		}
	}
}

// TestSortNetEqualKeysKeepInputOrder pins the tie rule: packets with equal
// keys leave in input order (P=4: keys 5,5,5,4 leave as G,D,E,F).
func TestSortNetEqualKeysKeepInputOrder(t *testing.T) {
	net, _ := NewSortNet(4)
	lanes := []lane{{5, 0}, {5, 1}, {5, 2}, {4, 3}}
	net.sort(lanes)
	var got []int16
	for _, l := range lanes {
		got = append(got, l.input)
	}
	if want := []int16{3, 0, 1, 2}; !slices.Equal(got, want) {
		t.Fatalf("P=4 keys 5,5,5,4: inputs leave as %v, want %v", got, want)
	}
}
