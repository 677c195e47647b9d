package shoal_test

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"

	ts "github.com/labrunner/labrunner/traffic/shoal"
)

func TestDerangementHasNoFixedPointAndIsSeeded(t *testing.T) {
	for seed := uint64(0); seed < 200; seed++ {
		p, err := ts.Derangement(8, seed)
		if err != nil {
			t.Fatal(err)
		}
		seen := make([]bool, 8)
		for i, d := range p {
			if d == i || seen[d] {
				t.Fatalf("seed %d: %v is not a derangement", seed, p)
			}
			seen[d] = true
		}
		q, _ := ts.Derangement(8, seed)
		if fmt.Sprint(p) != fmt.Sprint(q) {
			t.Fatalf("seed %d gave %v then %v", seed, p, q)
		}
	}
	a, _ := ts.Derangement(8, 1)
	b, _ := ts.Derangement(8, 2)
	if fmt.Sprint(a) == fmt.Sprint(b) {
		t.Error("seeds 1 and 2 give the same permutation")
	}
	if _, err := ts.Derangement(1, 0); err == nil {
		t.Error("a derangement of one node")
	}
}

func TestIncastAndPairs(t *testing.T) {
	s, err := ts.IncastSenders(8, 5, 7)
	if err != nil || fmt.Sprint(s) != "[6 7 0 1 2 3 4]" {
		t.Fatalf("senders %v (%v)", s, err)
	}
	fs, err := ts.Incast(8, 5, s, 392)
	if err != nil || len(fs) != 7 {
		t.Fatal(err)
	}
	for i, f := range fs {
		if f.Dst != 5 || f.StartNS != 0 || f.Tag != uint32(i+1) || f.Cells(56) != 7 {
			t.Errorf("flow %+v", f)
		}
	}
	if _, err := ts.IncastSenders(8, 0, 8); err == nil {
		t.Error("8 senders in an 8-node rack")
	}
	if _, err := ts.Incast(8, 0, []int{1, 1}, 10); err == nil {
		t.Error("a sender listed twice")
	}
	p, err := ts.ParsePairs(" 1>0, 2>0,4>5 ", 8)
	if err != nil || fmt.Sprint(p) != "[[1 0] [2 0] [4 5]]" {
		t.Fatalf("%v (%v)", p, err)
	}
	for _, bad := range []string{"", "1>1", "1>8", "1-0", "1>0,1>0", "a>b", "1>0>2"} {
		if _, err := ts.ParsePairs(bad, 8); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// §7.3: Poisson arrivals at the rate the load gives, Pareto(1.05) sizes of
// mean 100 KB (heavy-tailed: the sample mean of a few thousand draws is far
// from settled, so the median is checked, xm·2^(1/α)), uniform pairs.
func TestUniformWorkloadFollowsSection73(t *testing.T) {
	w := ts.NewWorkload(ts.Uniform, 8, 20000, 0.5, 5, 42)
	fs, err := ts.Generate(w)
	if err != nil {
		t.Fatal(err)
	}
	// τ = F·8/(R·N·L) = 100000·8/(5·8·0.5) = 40 µs.
	if tau := w.MeanInterarrivalNS(); math.Abs(tau-40000) > 1e-6 {
		t.Errorf("τ = %g ns, want 40000", tau)
	}
	span := float64(fs[len(fs)-1].StartNS)
	if got := span / float64(len(fs)); math.Abs(got-40000)/40000 > 0.03 {
		t.Errorf("mean inter-arrival %.0f ns, want 40000 ±3%%", got)
	}
	sizes := make([]float64, len(fs))
	pairs := map[[2]int]int{}
	for i, f := range fs {
		if f.Src == f.Dst || f.Tag != uint32(i+1) || (i > 0 && f.StartNS < fs[i-1].StartNS) {
			t.Fatalf("flow %d: %+v", i, f)
		}
		sizes[i] = float64(f.Bytes)
		pairs[[2]int{f.Src, f.Dst}]++
	}
	sort.Float64s(sizes)
	xm := 100000 * 0.05 / 1.05
	if med, want := sizes[len(sizes)/2], xm*math.Pow(2, 1/1.05); math.Abs(med-want)/want > 0.05 {
		t.Errorf("median size %.0f B, want %.0f (Pareto 1.05, mean 100 KB)", med, want)
	}
	if sizes[0] < math.Floor(xm) {
		t.Errorf("smallest flow %.0f B below the Pareto scale %.0f", sizes[0], xm)
	}
	if len(pairs) != 56 {
		t.Errorf("%d of 56 pairs drawn", len(pairs))
	}
	for p, n := range pairs {
		if exp := 20000.0 / 56; math.Abs(float64(n)-exp) > 5*math.Sqrt(exp) {
			t.Errorf("pair %v drawn %d times, want about %.0f", p, n, exp)
		}
	}
	again, _ := ts.Generate(w)
	if fmt.Sprint(again[:50]) != fmt.Sprint(fs[:50]) {
		t.Error("the same seed drew different flows")
	}
}

// §7.4: more than 84% of the flows among a third of the nodes.
func TestSkewedWorkloadConcentratesOnAThird(t *testing.T) {
	w := ts.NewWorkload(ts.Skewed, 9, 10000, 0.5, 5, 7)
	fs, err := ts.Generate(w)
	if err != nil {
		t.Fatal(err)
	}
	hot := w.Hot()
	if len(hot) != 3 {
		t.Fatalf("hot nodes %v, want a third of 9", hot)
	}
	in := map[int]bool{}
	for _, h := range hot {
		in[h] = true
	}
	inside := 0
	for _, f := range fs {
		if in[f.Src] && in[f.Dst] {
			inside++
		}
	}
	// 84% drawn among the hot nodes, plus the uniform rest that lands there
	// by chance (16% x 6/72).
	want := 0.84 + 0.16*6/72
	if got := float64(inside) / float64(len(fs)); math.Abs(got-want) > 0.02 {
		t.Errorf("%.3f of the flows among the hot third, want %.3f", got, want)
	}
}

func TestWorkloadLimitsAndExclusions(t *testing.T) {
	w := ts.NewWorkload(ts.Uniform, 8, 2000, 0.5, 5, 3)
	w.MaxBytes = 50000
	w.Exclude = []int{2, 5}
	fs, err := ts.Generate(w)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fs {
		if f.Bytes > 50000 || f.Src == 2 || f.Dst == 2 || f.Src == 5 || f.Dst == 5 {
			t.Fatalf("flow %+v", f)
		}
	}
	for _, bad := range []func(*ts.Workload){
		func(w *ts.Workload) { w.Load = 0 },
		func(w *ts.Workload) { w.Shape = 1 },
		func(w *ts.Workload) { w.Exclude = []int{0, 1, 2, 3, 4, 5, 6} },
		func(w *ts.Workload) { w.Exclude = []int{9} },
		func(w *ts.Workload) { w.MaxBytes = -1 },
		func(w *ts.Workload) { w.Flows = 0 },
	} {
		x := ts.NewWorkload(ts.Uniform, 8, 10, 0.5, 5, 1)
		bad(&x)
		if _, err := ts.Generate(x); err == nil {
			t.Errorf("workload %+v generated", x)
		}
	}
	// 300,000 flows at 40 µs apart would start past the descriptor's
	// 32-bit ns start time.
	long := ts.NewWorkload(ts.Uniform, 8, 300000, 0.5, 5, 1)
	if _, err := ts.Generate(long); err == nil || !strings.Contains(err.Error(), "32-bit") {
		t.Errorf("start times past 2^32 ns: %v", err)
	}
}

func TestRecordDecoding(t *testing.T) {
	r, err := ts.DecodeRecord([]uint32{9, 3 | 5<<16, 392, 100, 6200, 120})
	if err != nil || r.Tag != 9 || r.Src != 3 || r.Dst != 5 || r.Bytes != 392 || r.FCTNS() != 6100 || r.FirstTxNS != 120 {
		t.Fatalf("%+v (%v)", r, err)
	}
	for _, bad := range [][]uint32{
		{1, 2, 3, 4, 5},                // short
		{0, 1, 1, 0, 1, 1},             // tag 0: an empty FIFO
		{1, 1 | 2000<<16, 1, 0, 1, 0},  // destination beyond 10 bits
		{1, 1 | 2<<16, 1, 500, 400, 0}, // ends before it starts
	} {
		if _, err := ts.DecodeRecord(bad); err == nil {
			t.Errorf("%v decoded", bad)
		}
	}
}
