package workload

import (
	"errors"
	"math"
	"slices"
	"testing"
)

func draw(t *testing.T, s Spec) []Arrival {
	t.Helper()
	var out []Arrival
	if err := s.Draw(func(k int, a Arrival) error {
		if k != len(out) {
			t.Fatalf("flow %d handed out as %d", len(out), k)
		}
		out = append(out, a)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// §7.3: Poisson arrivals of the rate the load formula gives, Pareto sizes
// of mean 100 KB, distinct ends, seeded.
func TestUniformDrawFollowsSection73(t *testing.T) {
	s := New(Uniform, 16, 50000, 0.5, 50, 1)
	fs := draw(t, s)
	if len(fs) != s.Flows {
		t.Fatalf("%d flows, want %d", len(fs), s.Flows)
	}
	last := 0.0
	for _, f := range fs {
		if f.Src == f.Dst || f.Src < 0 || f.Src >= 16 || f.Dst < 0 || f.Dst >= 16 || f.Bytes < 1 || f.StartNS < last {
			t.Fatalf("bad flow %+v after a start at %g", f, last)
		}
		last = f.StartNS
	}
	if gap, want := last/float64(len(fs)), s.MeanInterarrivalNS(); math.Abs(gap-want)/want > 0.03 {
		t.Errorf("mean gap %.1f ns, want τ = %.1f", gap, want)
	}
	// The Pareto(1.05) mean converges slowly: the median is the check.
	sizes := make([]float64, len(fs))
	for i, f := range fs {
		sizes[i] = float64(f.Bytes)
	}
	slices.Sort(sizes)
	xm := MeanBytes * (ParetoShape - 1) / ParetoShape
	if med, want := sizes[len(sizes)/2], xm*math.Pow(2, 1/ParetoShape); math.Abs(med-want)/want > 0.05 {
		t.Errorf("median size %.0f B, want %.0f (Pareto %.2f, mean %d)", med, want, ParetoShape, MeanBytes)
	}
	if again := draw(t, s); !slices.Equal(fs, again) {
		t.Error("the same seed drew other flows")
	}
	s.Seed = 2
	if other := draw(t, s); slices.Equal(fs, other) {
		t.Error("another seed drew the same flows")
	}
	s.Seed, s.Stream = 1, 7
	if other := draw(t, s); slices.Equal(fs, other) {
		t.Error("another stream drew the same flows")
	}
}

// §7.4: 84% of the flows have both ends among a third of the nodes, the
// nodes Hot names.
func TestSkewedDrawConcentratesOnHot(t *testing.T) {
	s := New(Skewed, 12, 20000, 0.5, 50, 3)
	hot := s.Hot()
	if len(hot) != 4 || !slices.IsSorted(hot) {
		t.Fatalf("hot nodes %v, want 4 sorted", hot)
	}
	in := 0
	for _, f := range draw(t, s) {
		if slices.Contains(hot, f.Src) && slices.Contains(hot, f.Dst) {
			in++
		}
	}
	// 84% drawn among the hot nodes, plus the uniform flows that land there
	// by chance (4·3 of 12·11 pairs).
	want := HotShare + (1-HotShare)*12.0/132
	if got := float64(in) / 20000; math.Abs(got-want) > 0.01 {
		t.Errorf("%.3f of the flows among the hot nodes, want %.3f", got, want)
	}
	if New(Uniform, 12, 10, 0.5, 50, 3).Hot() != nil {
		t.Error("a uniform workload has hot nodes")
	}
}

func TestExcludeMaxBytesAndError(t *testing.T) {
	s := New(Uniform, 8, 5000, 0.5, 50, 4)
	s.Exclude, s.MaxBytes = []int{2, 5}, 30000
	fs := draw(t, s)
	for _, f := range fs {
		if f.Src == 2 || f.Dst == 2 || f.Src == 5 || f.Dst == 5 || f.Bytes > 30000 {
			t.Fatalf("flow %+v: excluded node or over MaxBytes", f)
		}
	}
	boom := errors.New("boom")
	n := 0
	if err := s.Draw(func(k int, a Arrival) error {
		n++
		if k == 9 {
			return boom
		}
		return nil
	}); !errors.Is(err, boom) || n != 10 {
		t.Errorf("an error of the callback after 10 flows: %d drawn, err %v", n, err)
	}
}

func TestCheckRefuses(t *testing.T) {
	for name, bad := range map[string]func(*Spec){
		"nodes":    func(s *Spec) { s.Nodes = 1 },
		"flows":    func(s *Spec) { s.Flows = -1 },
		"load":     func(s *Spec) { s.Load = 0 },
		"rate":     func(s *Spec) { s.LoadGbps = math.Inf(1) },
		"shape":    func(s *Spec) { s.Shape = 1 },
		"mean":     func(s *Spec) { s.Mean = 0 },
		"max":      func(s *Spec) { s.MaxBytes = -1 },
		"kind":     func(s *Spec) { s.Kind = 5 },
		"skew":     func(s *Spec) { s.Kind, s.HotShare = Skewed, 2 },
		"exclude":  func(s *Spec) { s.Exclude = []int{8} },
		"all dead": func(s *Spec) { s.Exclude = []int{0, 1, 2, 3, 4, 5, 6} },
	} {
		s := New(Uniform, 8, 10, 0.5, 50, 1)
		bad(&s)
		if s.Check() == nil {
			t.Errorf("%s: accepted %+v", name, s)
		}
		if s.Draw(func(int, Arrival) error { return nil }) == nil {
			t.Errorf("%s: drew %+v", name, s)
		}
	}
}

func TestParseKind(t *testing.T) {
	for in, want := range map[string]Kind{"uniform": Uniform, " Skewed": Skewed, "disaggregated": Skewed} {
		if k, err := ParseKind(in); err != nil || k != want {
			t.Errorf("%q: %v %v, want %v", in, k, err, want)
		}
	}
	if _, err := ParseKind("zipf"); err == nil {
		t.Error("zipf accepted")
	}
	if Skewed.String() != "skewed" || Uniform.String() != "uniform" {
		t.Error("String is not the parameter spelling")
	}
}
