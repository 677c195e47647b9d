package shoal

import (
	"math"
	"reflect"
	"sort"
	"testing"
)

// §7.3's workload: Poisson arrivals at the rate the load asks for, Pareto
// sizes with shape 1.05 (their median is x_m·2^(1/1.05) for the 100 KB
// mean), uniform pairs; the same seed draws the same flows.
func TestUniformWorkload(t *testing.T) {
	w := NewWorkload(Uniform, 64, 40000, 0.5, 42)
	flows, err := w.Generate(56)
	if err != nil {
		t.Fatal(err)
	}
	// τ = 100 KB·8 / (50 Gb/s · 64 · 0.5) = 500 ns.
	if tau := w.MeanInterarrivalNS(); math.Abs(tau-500) > 1e-9 {
		t.Fatalf("τ = %v ns, want 500", tau)
	}
	span := flows[len(flows)-1].StartNS
	if got := span / float64(len(flows)); math.Abs(got-500)/500 > 0.03 {
		t.Errorf("mean inter-arrival %.1f ns, want 500 ± 3%%", got)
	}
	sizes := make([]float64, len(flows))
	srcs := make([]int, 64)
	for k, f := range flows {
		if f.Src == f.Dst || f.Src < 0 || f.Dst >= 64 {
			t.Fatalf("flow %d: %d→%d", k, f.Src, f.Dst)
		}
		if k > 0 && f.StartNS < flows[k-1].StartNS {
			t.Fatalf("arrivals out of order at %d", k)
		}
		if f.Cells != (f.Bytes+55)/56 {
			t.Fatalf("flow %d: %d bytes in %d cells", k, f.Bytes, f.Cells)
		}
		sizes[k] = float64(f.Bytes)
		srcs[f.Src]++
	}
	sort.Float64s(sizes)
	xm := 100000 * 0.05 / 1.05
	if med, want := sizes[len(sizes)/2], xm*math.Pow(2, 1/1.05); math.Abs(med-want)/want > 0.03 {
		t.Errorf("median size %.0f B, want %.0f (Pareto 1.05, mean 100 KB)", med, want)
	}
	if sizes[0] < xm-1 {
		t.Errorf("smallest flow %.0f B below the Pareto scale %.0f", sizes[0], xm)
	}
	for i, n := range srcs {
		if math.Abs(float64(n)-625)/625 > 0.15 {
			t.Errorf("node %d sources %d flows, want about 625", i, n)
		}
	}
	again, _ := w.Generate(56)
	if !reflect.DeepEqual(flows, again) {
		t.Error("the same seed drew different flows")
	}
	w.Seed = 43
	other, _ := w.Generate(56)
	if reflect.DeepEqual(flows, other) {
		t.Error("another seed drew the same flows")
	}
}

// §7.4: "more than 84% of the flows being generated among a third of the
// nodes".
func TestSkewedWorkload(t *testing.T) {
	w := NewWorkload(Skewed, 90, 20000, 0.3, 7)
	flows, err := w.Generate(56)
	if err != nil {
		t.Fatal(err)
	}
	count := map[int]int{}
	for _, f := range flows {
		count[f.Src]++
		count[f.Dst]++
	}
	type kv struct{ node, n int }
	var all []kv
	for node, n := range count {
		all = append(all, kv{node, n})
	}
	sort.Slice(all, func(a, b int) bool { return all[a].n > all[b].n })
	hot := map[int]bool{}
	for _, e := range all[:30] {
		hot[e.node] = true
	}
	among := 0
	for _, f := range flows {
		if hot[f.Src] && hot[f.Dst] {
			among++
		}
	}
	if share := float64(among) / float64(len(flows)); share < 0.84 || share > 0.9 {
		t.Errorf("%.3f of flows among the busiest third, want a little over 0.84", share)
	}
}

func TestWorkloadFailedNodesAndErrors(t *testing.T) {
	w := NewWorkload(Uniform, 16, 2000, 0.5, 1)
	w.Failed = []int{3, 4, 5}
	flows, err := w.Generate(56)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range flows {
		if f.Src >= 3 && f.Src <= 5 || f.Dst >= 3 && f.Dst <= 5 {
			t.Fatalf("flow %d→%d touches a failed node", f.Src, f.Dst)
		}
	}
	for name, mod := range map[string]func(*Workload){
		"nodes":    func(w *Workload) { w.Nodes = 1 },
		"load":     func(w *Workload) { w.Load = 0 },
		"shape":    func(w *Workload) { w.Shape = 1 },
		"rate":     func(w *Workload) { w.LoadGbps = math.Inf(1) },
		"failed":   func(w *Workload) { w.Failed = []int{16} },
		"all dead": func(w *Workload) { w.Failed = []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14} },
		"skew":     func(w *Workload) { w.Kind, w.HotShare = Skewed, 2 },
		"kind":     func(w *Workload) { w.Kind = 5 },
	} {
		w := NewWorkload(Uniform, 16, 10, 0.5, 1)
		mod(&w)
		if _, err := w.Generate(56); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := NewWorkload(Uniform, 16, 10, 0.5, 1).Generate(0); err == nil {
		t.Error("a 0-byte payload accepted")
	}
	for _, s := range []string{"uniform", "skewed"} {
		k, err := ParseWorkloadKind(s)
		if err != nil || k.String() != s {
			t.Errorf("%s -> %v, %v", s, k, err)
		}
	}
	if _, err := ParseWorkloadKind("zipf"); err == nil {
		t.Error("zipf accepted")
	}
}
