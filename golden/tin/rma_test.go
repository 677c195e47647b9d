package tin

import (
	"math"
	"strings"
	"testing"
)

// labRead is a read of the rma_isolation test on the lab's 2x4 Clique:
// 4 KB, the TiN build's declared 128 B completions with a 4 B tag, byte
// granularity, its 800 + 200 ns of PCIe, the lab's 5 and 50 ns cables.
func labRead(t *testing.T, mode Mode) ReadConfig {
	t.Helper()
	c, err := NewClique(2, 4, 1)
	if err != nil {
		t.Fatal(err)
	}
	tm := PaperTiming()
	tm.LocalPropNs, tm.GlobalPropNs = 5, 50
	return ReadConfig{Clique: c, Timing: tm, Mode: mode, Bytes: 4096, Completion: 128, RespTag: 4, Align: 1,
		MemNs: 800, CplNs: 200, QPS: PaperReadQPS, Reads: 20, Seed: 1}
}

// A read alone whose cells all take one path (a hashed minimal mode)
// takes the closed form ReadLatency gives, to the picosecond, without a
// switch clock: inside a pod, one local link each way, so the Req's 48 B
// (20 + 45 + 15.36 ns), 800 ns, the Resp stream (20 + 45 + 32 x 140 B at
// 25 Gb/s = 1433.6 ns) and 200 ns: 2578.96 ns.
func TestReadLatencyClosedForm(t *testing.T) {
	cfg := labRead(t, MinimalDeterministic)
	res, err := PairReads(cfg)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := respCellsOf(4096, 128, 4, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp) != 32 || resp[0] != 140 || resp[31] != 140 {
		t.Fatalf("Resp cells %v, want 32 of 140 B", resp)
	}
	one := Path{Hops: []Hop{{Kind: Local}}}
	want := cfg.Timing.ReadLatency(one, one, resp, 800, 200)
	if math.Abs(want-2578.96) > 1e-6 {
		t.Fatalf("closed form %g ns, want 2578.96", want)
	}
	n := cfg.Clique.Pods * cfg.Clique.TiNs
	checked := 0
	for i := 0; i < n; i++ {
		for j, k := 0, 0; j < n; j++ {
			if j == i {
				continue
			}
			got := res.Samples[i*(n-1)+k]
			k++
			if i/cfg.Clique.TiNs != j/cfg.Clique.TiNs {
				continue // between pods the hash picks one of four routes
			}
			checked++
			if math.Abs(got-want) > 0.001 {
				t.Errorf("read %d <- %d alone: %.3f ns, closed form %.3f", i, j, got, want)
			}
		}
	}
	if checked != 24 {
		t.Fatalf("%d intra-pod pairs checked, want 24", checked)
	}
	if res.NonMinimal != 0 || res.Overlapped != 0 {
		t.Errorf("minimal deterministic reads alone left the minimal route (%.2f) or met another (%d)", res.NonMinimal, res.Overlapped)
	}
}

// §3.4's Req and Resp "routed adaptively": a read's Resp cells arrive at
// 100 Gb/s in front of a 25 Gb/s link and spill onto detours (reading
// A40), so a read alone is faster than on one path, by more than a
// quarter of its Resp stream inside a pod. With a switch clock (reading
// A28) a read takes no less than without.
func TestReadsAdaptiveBeatOnePath(t *testing.T) {
	median := func(cfg ReadConfig) (float64, ReadResult) {
		res, err := PairReads(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return summarize(res.Samples).P50, res
	}
	hashed, _ := median(labRead(t, MinimalDeterministic))
	adaptive, res := median(labRead(t, FullyAdaptive))
	if res.NonMinimal < 0.05 {
		t.Errorf("%.1f%% of the cells of reads alone left the minimal route: no spill", 100*res.NonMinimal)
	}
	if adaptive > hashed-0.25*1433.6 {
		t.Errorf("median read alone: %.0f ns adaptive, %.0f ns on one path", adaptive, hashed)
	}
	clocked := labRead(t, FullyAdaptive)
	clocked.Timing.SwitchClockNs = 4
	if c, _ := median(clocked); c < adaptive {
		t.Errorf("a 4 ns switch clock made the median read faster: %.0f ns against %.0f", c, adaptive)
	}
}

// Fig. 9's high-priority 1RMA baseline is "less than 5 µs median and tail
// latency": golden's model with the paper's figures alone (25G links, 20
// and 40 ns per hop, 30 ns of FEC, 64 B completions, §3.4's 1 µs of PCIe)
// keeps both statistics' whole bands below it, on the lab's Clique and
// on a Clique of 4 pods of 4 TiNs, and a read alone on the idle fabric is
// at least its PCIe time and its Resp cells' serialization at the
// endpoint port.
func TestPaperReadUnder5us(t *testing.T) {
	for _, shape := range []string{"2x4", "4x4"} {
		es := predict(t, map[string]string{"packets": "", "loads": "", "modes": "", "clique": shape, "globals": "2", "replicas": "4", "rma_count": "10"})
		for _, st := range []string{"p50", "p99"} {
			e, ok := byKey(es)["tin.rma.latency_alone{bytes=4096,stat="+st+"}"]
			if !ok {
				t.Fatalf("%s: no read latency at the %s", shape, st)
			}
			lo, hi := e.Bounds()
			floor := PaperReadMemNs + float64(64*72)/PaperTiming().InjectBytesPerNs()
			if hi >= 5000 || lo <= floor || e.Value < lo || e.Value > hi {
				t.Errorf("%s, %s: %s, want a band above %.0f ns and below Fig. 9's 5 µs", shape, st, e.Describe(), floor)
			}
			if e.Budget == "" || e.NeedsReason() && e.Wide == "" {
				t.Errorf("%s, %s: budget %q, wide %q", shape, st, e.Budget, e.Wide)
			}
		}
	}
}

// The bands of the lab's reads: the median's within ±10% of golden's
// value, the tail's reaching further down by the pairs' spread, and both
// widened by the lab's cable spread.
func TestPredictReadBands(t *testing.T) {
	lab := map[string]string{"packets": "", "loads": "", "modes": "", "local_prop_ns": "5", "global_prop_ns": "50", "switch_clock_mhz": "250",
		"completion": "128", "resp_tag": "4", "align": "1", "rma_mem_ns": "800", "rma_cpl_ns": "200", "replicas": "8"}
	es := byKey(predict(t, lab))
	p50, p99 := es["tin.rma.latency_alone{bytes=4096,stat=p50}"], es["tin.rma.latency_alone{bytes=4096,stat=p99}"]
	if b, a, _ := p50.RelativeBand(); b > 0.1 || a > 0.1 || p50.Wide != "" {
		t.Errorf("median band -%.1f%%/+%.1f%% (%s), wide %q", 100*b, 100*a, p50.Describe(), p50.Wide)
	}
	if p99.Value <= p50.Value || !strings.Contains(p99.Budget, "90th percentile of the 56 pairs") {
		t.Errorf("tail %s over median %s; budget %q", p99.Describe(), p50.Describe(), p99.Budget)
	}
	if lo, _ := p99.Bounds(); lo > p99.Value-(p99.Value-mustLo(p50))/4 {
		t.Errorf("tail band %s does not reach below its value by the pairs' spread", p99.Describe())
	}
	if !strings.Contains(p50.Note, "32 Resp cells of 140 B") || !strings.Contains(p50.Budget, "8 switches") {
		t.Errorf("median note %q, budget %q", p50.Note, p50.Budget)
	}
	lab["cable_spread_ns"] = "10"
	wide := byKey(predict(t, lab))["tin.rma.latency_alone{bytes=4096,stat=p50}"]
	l0, h0 := p50.Bounds()
	l1, h1 := wide.Bounds()
	if math.Abs((h1-l1)-(h0-l0)-2*60) > 1e-6 {
		t.Errorf("10 ns of cable spread over 6 links widened the median band from %.1f to %.1f ns, want +120", h0-l0, h1-l1)
	}
	// No reads, no read simulation.
	lab["rma_count"] = "0"
	if _, ok := byKey(predict(t, lab))["tin.rma.latency_alone{bytes=4096,stat=p50}"]; ok {
		t.Error("rma_count 0 still predicts a read latency")
	}
}

func mustLo(e interface{ Bounds() (float64, float64) }) float64 {
	lo, _ := e.Bounds()
	return lo
}

func TestReadConfigErrors(t *testing.T) {
	for name, f := range map[string]func(*ReadConfig){
		"no Clique":         func(c *ReadConfig) { c.Clique = nil },
		"tag too long":      func(c *ReadConfig) { c.RespTag = 30 },
		"negative tag":      func(c *ReadConfig) { c.RespTag = -1 },
		"no reads":          func(c *ReadConfig) { c.Reads = 0 },
		"no rate":           func(c *ReadConfig) { c.QPS = 0 },
		"NaN PCIe":          func(c *ReadConfig) { c.MemNs = math.NaN() },
		"negative complete": func(c *ReadConfig) { c.CplNs = -1 },
		"read too long":     func(c *ReadConfig) { c.Bytes = 1<<20 + 1 },
		"bad mode":          func(c *ReadConfig) { c.Mode = 9 },
		"small buffer":      func(c *ReadConfig) { c.BufferBytes = 100 },
	} {
		cfg := labRead(t, FullyAdaptive)
		f(&cfg)
		if _, err := SimulateReads(cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
