package shoal

import (
	"math"
	"testing"

	"github.com/labrunner/labrunner/internal/raceshare"
)

// Table 1 on the prototype's fabric (8 nodes, 4-port switches), counted by
// hand: a failed node costs every other node 1 of its 7 slots; leaf 0 costs
// the others their 2 slots to nodes 0 and 1; spine 0 carries every circuit
// from an even node, so a pair fails when either end is even: 44 of the 56
// slots; the link leaf0-spine0 carries node 0's circuits up and the even
// nodes' circuits down to nodes 0 and 1: 10 pairs, 20 of 56 slots.
func TestFailedSlotsPrototype(t *testing.T) {
	topo := Topology{Nodes: 8, Radix: 4}
	s, _ := NewSchedule(8, 1, Cyclic)
	for _, tc := range []struct {
		f    Failure
		want float64
	}{
		{Failure{Kind: FailNode, Index: 3}, 1.0 / 7},
		{Failure{Kind: FailNodeLink, Index: 0}, 1.0 / 7},
		{Failure{Kind: FailLeaf, Index: 0}, 2.0 / 7},
		{Failure{Kind: FailSpine, Index: 0}, 44.0 / 56},
		{Failure{Kind: FailLeafSpineLink, Index: 0, Spine: 0}, 20.0 / 56},
		// Spine-to-leaf only: the circuits from the even nodes down into
		// nodes 0 and 1 (2, 4, 6 to 0; 0, 2, 4, 6 to 1): 7 pairs, 14 of 56
		// slots, Table 1's 2/N exactly.
		{Failure{Kind: FailLeafSpineDown, Index: 0, Spine: 0}, 14.0 / 56},
	} {
		got, err := FailedSlotFraction(topo, s, tc.f)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%v: %v, want %v", tc.f, got, tc.want)
		}
	}
}

// Table 1's approximations at rack scale (N = 512, k = 32; N = 1152,
// k = 48): node ≈ 1/N, leaf ≈ 1/√(2N), spine ≈ 2√2/√N within a few per cent,
// and the spine→leaf direction of a leaf-spine link ≈ 2/N within 5%. The
// link cut both ways costs ≈ 4/N, twice Table 1's 2/N (reading S41).
//
// Under the race detector one fabric, in rotation by day
// (internal/raceshare); make test runs both without it.
func TestFailedSlotsTableOne(t *testing.T) {
	for _, fab := range raceshare.Cases(t, []struct{ n, k int }{{512, 32}, {1152, 48}}) {
		topo := Topology{Nodes: fab.n, Radix: fab.k}
		s, _ := NewSchedule(fab.n, 1, Cyclic)
		for _, tc := range []struct {
			f     Failure
			ratio float64 // exact / Table 1
			tol   float64
		}{
			{Failure{Kind: FailNode, Index: 5}, 1, 0.01},
			{Failure{Kind: FailLeaf, Index: 2}, 1, 0.01},
			{Failure{Kind: FailSpine, Index: 1}, 1, 0.05},
			{Failure{Kind: FailLeafSpineLink, Index: 3, Spine: 2}, 2, 0.1},
			// One direction is Table 1's figure itself (reading S41).
			{Failure{Kind: FailLeafSpineDown, Index: 3, Spine: 2}, 1, 0.05},
		} {
			got, err := FailedSlotFraction(topo, s, tc.f)
			if err != nil {
				t.Fatal(err)
			}
			r := got / TableOneApprox(tc.f.Kind, fab.n)
			if math.Abs(r-tc.ratio) > tc.tol*tc.ratio {
				t.Errorf("N=%d %v: %.5f is %.3f x Table 1's %.5f, want %.1f x", fab.n, tc.f.Kind, got, r, TableOneApprox(tc.f.Kind, fab.n), tc.ratio)
			}
		}
	}
}

// Failure detection is symmetric (§3.5): every failed pair fails both ways.
func TestFailedPairsSymmetric(t *testing.T) {
	topo := Topology{Nodes: 32, Radix: 8}
	for _, kind := range []ScheduleKind{Cyclic, PropagationAware} {
		s, _ := NewSchedule(32, 2, kind)
		for _, f := range []Failure{{Kind: FailNode, Index: 7}, {Kind: FailLeaf, Index: 1, Channel: 1}, {Kind: FailSpine, Index: 2}, {Kind: FailLeafSpineLink, Index: 3, Spine: 1, Channel: 1}} {
			fp, err := FailedPairs(topo, s, f)
			if err != nil {
				t.Fatal(err)
			}
			any := false
			for i := 0; i < 32; i++ {
				for j := 0; j < 32; j++ {
					if fp[i*32+j] != fp[j*32+i] {
						t.Fatalf("%v %v: %d→%d failed %v, %d→%d %v", kind, f, i, j, fp[i*32+j], j, i, fp[j*32+i])
					}
					any = any || fp[i*32+j]
				}
			}
			if !any {
				t.Errorf("%v %v: no pair failed", kind, f)
			}
		}
	}
}

func TestFailureErrors(t *testing.T) {
	topo := Topology{Nodes: 8, Radix: 4}
	s, _ := NewSchedule(8, 1, Cyclic)
	for _, f := range []Failure{{Kind: FailNode, Index: 8}, {Kind: FailLeaf, Index: 4}, {Kind: FailSpine, Index: 2},
		{Kind: FailLeafSpineLink, Index: 0, Spine: 2}, {Kind: FailureKind(9)}, {Kind: FailSpine, Channel: 1}} {
		if _, err := FailedPairs(topo, s, f); err == nil {
			t.Errorf("%+v accepted", f)
		}
	}
	for _, k := range FailureKinds() {
		back, err := ParseFailureKind(k.String())
		if err != nil || back != k {
			t.Errorf("%v -> %v, %v", k, back, err)
		}
	}
	if _, err := ParseFailureKind("switch"); err == nil {
		t.Error("switch accepted")
	}
}
