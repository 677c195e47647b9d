package tin

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/labrunner/labrunner/internal/raceshare"
)

// Weighted round robin between the high-priority class and the data class
// (reading A30): 48 full cells of each wait for TiN 0's one link to TiN 1,
// from the TiN's two endpoints. With a weight of 3 the link sends three
// high-priority cells for each data cell while both wait: when the last
// high-priority cell arrives, 16 data cells (one in four of those sent)
// have. The link then carries the rest of the data cells.
func TestHiPriWeightedRoundRobin(t *testing.T) {
	c := mustClique(t, 1, 2, 0)
	tm := PaperTiming()
	fc := AquilaFabric(c, tm, DefaultBufferBytes, AquilaNonMinWeight, AquilaNonMinBias, 2, tm.InjectGbps, 1)
	fc.HiPriWeight = 3
	d := deliveries{}
	f, err := NewFabric(fc, d)
	if err != nil {
		t.Fatal(err)
	}
	const cells = 48
	for i := range cells {
		if err := f.Send(Packet{Src: 0, Dst: 2, Bytes: MaxCell, Alg: AlgMinimal, Tag: int64(i)}, nil); err != nil {
			t.Fatal(err)
		}
		if err := f.Send(Packet{Src: 1, Dst: 3, Bytes: MaxCell, Class: ClassHiPri, Alg: AlgMinimal, Tag: int64(1000 + i)}, nil); err != nil {
			t.Fatal(err)
		}
	}
	f.Run()
	if len(d) != 2*cells {
		t.Fatalf("%d of %d cells delivered", len(d), 2*cells)
	}
	lastHi := d[1000+cells-1]
	lo := 0
	for i := range cells {
		if d[int64(i)] < lastHi {
			lo++
		}
	}
	if lo < cells/3-1 || lo > cells/3+1 {
		t.Errorf("%d data cells arrived before the last of %d high-priority ones, want %d±1 (3:1)", lo, cells, cells/3)
	}
	// Without a weight the fabric has no high-priority class.
	f, err = NewFabric(AquilaFabric(c, tm, DefaultBufferBytes, AquilaNonMinWeight, AquilaNonMinBias, 2, tm.InjectGbps, 1), d)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Send(Packet{Src: 1, Dst: 3, Bytes: MaxCell, Class: ClassHiPri, Alg: AlgMinimal}, nil); err == nil {
		t.Error("a fabric without HiPriWeight took a high-priority cell")
	}
	fc.HiPriWeight = MaxHiPriWeight + 1
	if _, err := NewFabric(fc, d); err == nil {
		t.Errorf("weight %d accepted", fc.HiPriWeight)
	}
}

// labBulk is the rma_isolation test's bulk IP beside labRead's reads,
// sized for reads reads per TiN: 4864 B packets at 0.2 of the injection
// rate, enough for the reads' expected span and a quarter.
func labBulk(reads, weight int) BulkIP {
	return BulkIP{Load: 0.2, Bytes: 4864, Packets: int(math.Ceil(1.25 * float64(reads) / PaperReadQPS * 0.2 * 100e9 / 8 / 4864)),
		Mode: FullyAdaptive, CTSWindow: 16, HiPriWeight: weight}
}

// §5.1, Fig. 9 in the reference simulation (reading A30): beside bulk IP
// at 0.2 of the injection rate, high-priority reads on their own VCs,
// weighted 8:1, are nearly unaffected (their median within 20% of the
// same reads alone: a cell of the bulk already on a link is not
// preempted), while low-priority reads, queued in the bulk's VCs, are
// slower than the high-priority ones by more than that. A run is the same
// for the same seed.
func TestReadsBesideBulk(t *testing.T) {
	if raceshare.SecondPassOnly(t, "the simulations beside bulk are single-goroutine; TestPredictReadBands runs the replicas in parallel under the detector") {
		return
	}
	cfg := labRead(t, FullyAdaptive)
	cfg.Reads = 6
	alone, err := SimulateReads(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hi, err := SimulateReadsBeside(cfg, labBulk(cfg.Reads, 8))
	if err != nil {
		t.Fatal(err)
	}
	lo, err := SimulateReadsBeside(cfg, labBulk(cfg.Reads, 0))
	if err != nil {
		t.Fatal(err)
	}
	n := cfg.Clique.Pods * cfg.Clique.TiNs
	if len(hi.Samples) != n*cfg.Reads || len(lo.Samples) != n*cfg.Reads || hi.BulkDelivered == 0 || lo.BulkDelivered == 0 {
		t.Fatalf("reads %d and %d of %d, bulk packets %d and %d delivered", len(hi.Samples), len(lo.Samples), n*cfg.Reads, hi.BulkDelivered, lo.BulkDelivered)
	}
	if r := hi.Stats.P50 / alone.Stats.P50; r < 1 || r > 1.2 {
		t.Errorf("high-priority median beside bulk %.0f ns, %.2fx the %.0f ns alone: want 1-1.2x", hi.Stats.P50, r, alone.Stats.P50)
	}
	if r := lo.Stats.P50 / hi.Stats.P50; r < 1.2 {
		t.Errorf("low-priority median beside bulk %.0f ns, %.2fx the high-priority %.0f ns: want more than 1.2x", lo.Stats.P50, r, hi.Stats.P50)
	}
	again, err := SimulateReadsBeside(cfg, labBulk(cfg.Reads, 8))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(again.Samples, hi.Samples) {
		t.Error("the same seed gave another run")
	}
}

func TestBulkIPErrors(t *testing.T) {
	for name, f := range map[string]func(*BulkIP){
		"no load":        func(b *BulkIP) { b.Load = 0 },
		"NaN load":       func(b *BulkIP) { b.Load = math.NaN() },
		"overload":       func(b *BulkIP) { b.Load = 1.5 },
		"empty packets":  func(b *BulkIP) { b.Bytes = 0 },
		"huge packets":   func(b *BulkIP) { b.Bytes = MaxPacket + 1 },
		"no packets":     func(b *BulkIP) { b.Packets = 0 },
		"too many":       func(b *BulkIP) { b.Packets = MaxSimPackets },
		"negative class": func(b *BulkIP) { b.HiPriWeight = -1 },
		"heavy class":    func(b *BulkIP) { b.HiPriWeight = MaxHiPriWeight + 1 },
	} {
		cfg := labRead(t, FullyAdaptive)
		b := labBulk(1, 8)
		f(&b)
		if _, err := SimulateReadsBeside(cfg, b); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	cfg := labRead(t, FullyAdaptive)
	cfg.Reads = 0
	if _, err := SimulateReadsBeside(cfg, labBulk(1, 8)); err == nil {
		t.Error("no reads: accepted")
	}
}

// Predict's bands of the reads beside bulk (reading A30): high and low
// priority at the median and the tail, each with its budget; high
// priority faster than low, its median within ±10%; none without bulk.
func TestPredictBulkBands(t *testing.T) {
	if raceshare.SecondPassOnly(t, "the simulations beside bulk are single-goroutine; TestPredictReadBands runs the replicas in parallel under the detector") {
		return
	}
	lab := map[string]string{"packets": "", "loads": "", "modes": "", "local_prop_ns": "5", "global_prop_ns": "50", "switch_clock_mhz": "250",
		"completion": "128", "resp_tag": "4", "align": "1", "rma_mem_ns": "800", "rma_cpl_ns": "200", "replicas": "4",
		"rma_count": "6", "rma_bulk_load": "0.2", "rma_bulk_runs": "2", "cts_window": "16"}
	es := byKey(predict(t, lab))
	key := func(prio, stat string) string {
		return "tin.rma.latency_bulk{bytes=4096,priority=" + prio + ",stat=" + stat + "}"
	}
	for _, prio := range []string{"hi", "lo"} {
		for _, stat := range []string{"p50", "p99"} {
			e, ok := es[key(prio, stat)]
			if !ok {
				t.Fatalf("no %s", key(prio, stat))
			}
			if lo, hi := e.Bounds(); lo >= e.Value || hi <= e.Value || !strings.Contains(e.Budget, "bootstrap") || !strings.Contains(e.Source, "§5.1 Fig. 9") {
				t.Errorf("%s: %s, budget %q, source %q", key(prio, stat), e.Describe(), e.Budget, e.Source)
			}
		}
	}
	hi, lo := es[key("hi", "p50")], es[key("lo", "p50")]
	if hi.Value >= lo.Value {
		t.Errorf("high priority %s, low %s: want high faster", hi.Describe(), lo.Describe())
	}
	if b, a, _ := hi.RelativeBand(); b > 0.1 || a > 0.1 || hi.Wide != "" {
		t.Errorf("high-priority median band -%.1f%%/+%.1f%% (%s), wide %q", 100*b, 100*a, hi.Describe(), hi.Wide)
	}
	if !strings.Contains(hi.Note, "weighted 8:1") || !strings.Contains(hi.Note, "(386 per TiN)") {
		t.Errorf("note %q: want the weight and the bulk sized as the test sizes it", hi.Note)
	}
	lab["rma_bulk_load"] = "0"
	if _, ok := byKey(predict(t, lab))[key("hi", "p50")]; ok {
		t.Error("no bulk load still predicts reads beside bulk")
	}
}
