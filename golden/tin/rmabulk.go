package tin

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strconv"
	"sync"

	"github.com/labrunner/labrunner/results"
)

// BulkIP is the bulk IP traffic of Aquila §5.1's Fig. 9 beside which 1RMA
// reads run: §5.1's "UR traffic pattern" (every TiN sends packets of Bytes
// to TiNs drawn uniformly from the others, Poisson arrivals at Load of its
// injection rate) through §3.3's RTS/CTS solicitation, as Simulate models
// it, Packets from each TiN, from an idle fabric.
type BulkIP struct {
	Load    float64 // offered by each TiN, a fraction of its injection rate, (0, 1]
	Bytes   int     // IP packet size
	Packets int     // packets each TiN sends, then stops
	// Mode routes the bulk's data cells (RTS and CTS are hashed minimal,
	// reading A6); CTSWindow and EgressBytes are SimConfig's.
	Mode                   Mode
	CTSWindow, EgressBytes int
	// HiPriWeight: the reads are high priority, on VCs of their own
	// (ClassHiPri), each link sending up to HiPriWeight of their cells
	// for each one of the bulk's (§5.1's "8:1"). 0: the reads are low
	// priority, in the bulk's class and on its VCs (Fig. 9's yellow and
	// green bars). Reading A30.
	HiPriWeight int
}

// Bulk endpoints: each TiN has an IP endpoint and a 1RMA endpoint (§3.1:
// "18 ports are intra-chip, for cells transmitted and received by the
// various traffic endpoints (e.g., IP and 1RMA)"), each at the injection
// rate: TiN t's IP endpoint is 2t, its 1RMA endpoint 2t+1.
const (
	bulkEndpoints = 2
	ipEndpoint    = 0
	rmaEndpoint   = 1
)

func (b *BulkIP) check(n int) error {
	if math.IsNaN(b.Load) || b.Load <= 0 || b.Load > 1 {
		return fmt.Errorf("tin: bulk load %g: want 0 < load <= 1 of the injection rate", b.Load)
	}
	if b.Bytes < 1 || b.Bytes > MaxPacket {
		return fmt.Errorf("tin: bulk packets of %d bytes: want 1..%d", b.Bytes, MaxPacket)
	}
	if b.Packets < 1 || n*b.Packets > MaxSimPackets {
		return fmt.Errorf("tin: %d bulk packets per TiN: want 1..%d", b.Packets, MaxSimPackets/n)
	}
	if b.HiPriWeight < 0 || b.HiPriWeight > MaxHiPriWeight {
		return fmt.Errorf("tin: high-priority weight %d: want 0 (low priority) or 1..%d cells per turn", b.HiPriWeight, MaxHiPriWeight)
	}
	return nil
}

// BesideResult is what a run of reads beside bulk IP measured.
type BesideResult struct {
	ReadResult
	// BulkDelivered counts the bulk packets delivered by the time the
	// last read completed, when the run stops.
	BulkDelivered int
	// SimNs is when the last read completed.
	SimNs float64
}

// besideHost shares one Fabric between bulk IP and reads: packets from an
// even endpoint are the IP traffic's, from an odd one the reads'; timer
// tags carry the owner in their low bit.
type besideHost struct {
	ip *sim
	rd *readSim
}

func (h *besideHost) Delivered(f *Fabric, p *Packet) {
	if p.Src%bulkEndpoints == ipEndpoint {
		h.ip.Delivered(f, p)
		return
	}
	h.rd.Delivered(f, p)
}

func (h *besideHost) Timer(f *Fabric, tag int64) {
	if tag&1 == ipEndpoint {
		h.ip.Timer(f, tag>>1)
		return
	}
	h.rd.Timer(f, tag>>1)
}

// SimulateReadsBeside runs SimulateReads's reads (cfg) beside bulk IP on
// the same fabric, both starting from idle as the rma_isolation test
// starts its generators together: the reads issue from each TiN's 1RMA
// endpoint, the bulk from its IP endpoint (§3.1), so they meet on the
// fabric's links and switches, not at the endpoints. High-priority reads
// (bulk.HiPriWeight > 0) travel on VCs of their own, weighed against the
// bulk's on every link; low-priority ones in the bulk's VCs, queued with
// its cells in the same FIFOs (§5.1, Fig. 9; §3.4: "Because IP traffic is
// cellified, 1RMA responses do not queue behind bulk transfers"; reading
// A30). RTS and CTS keep their strict priority over both (§6). The run
// ends when the last read completes; the samples are the reads' execution
// latencies.
func SimulateReadsBeside(cfg ReadConfig, bulk BulkIP) (BesideResult, error) {
	rd, err := cfg.prepare()
	if err != nil {
		return BesideResult{}, err
	}
	c := cfg.Clique
	n := rd.n
	if err := bulk.check(n); err != nil {
		return BesideResult{}, err
	}
	ip, err := newSim(SimConfig{Clique: c, Timing: cfg.Timing, Mode: bulk.Mode, Load: bulk.Load, Bytes: bulk.Bytes, Packets: n * bulk.Packets,
		Shares: true, CTSWindow: bulk.CTSWindow, EgressBytes: bulk.EgressBytes, BufferBytes: cfg.BufferBytes,
		NonMinWeight: cfg.NonMinWeight, NonMinBias: cfg.NonMinBias, Align: cfg.Align, Seed: cfg.Seed ^ 0x62756c6b})
	if err != nil {
		return BesideResult{}, err
	}
	ip.shared = true
	ip.ep = epMap{stride: bulkEndpoints, off: ipEndpoint, shift: 1, mark: ipEndpoint}
	rd.class, rd.stopAt = classData, n*cfg.Reads
	rd.ep = epMap{stride: bulkEndpoints, off: rmaEndpoint, shift: 1, mark: rmaEndpoint}
	if bulk.HiPriWeight > 0 {
		rd.class = ClassHiPri
	}
	fc := cfg.fabric(bulkEndpoints)
	fc.HiPriWeight = bulk.HiPriWeight
	f, err := NewFabric(fc, &besideHost{ip: ip, rd: rd})
	if err != nil {
		return BesideResult{}, err
	}
	ip.f, rd.f = f, f
	ip.start()
	rd.begin()
	f.Run()
	res, err := rd.result(n * cfg.Reads)
	return BesideResult{ReadResult: res, BulkDelivered: ip.delivered, SimNs: rd.nowNs()}, err
}

// bulkPackets is the bulk each TiN sends beside the reads: the plan's, or
// as the rma_isolation test sizes it, enough to cover the reads' expected
// span (rma_count / rma_qps) at the bulk's load, plus a quarter; 0 for
// more than a simulation takes.
func bulkPackets(pl *Plan) int {
	if pl.RMABulkPackets > 0 {
		return pl.RMABulkPackets
	}
	span := float64(pl.RMACount) / pl.RMAQPS
	k := math.Ceil(1.25 * span * pl.RMABulkLoad * pl.Timing.InjectGbps * 1e9 / 8 / float64(pl.RMABulkBytes))
	if k > MaxSimPackets {
		return 0
	}
	return max(1, int(k))
}

// bulkExpectations simulates the reads of base beside the plan's bulk IP,
// high priority and low, pl.RMABulkRuns runs each, and turns their
// statistics into bands (reading A30). alone holds the golden p50 and p99
// of the same reads alone, for the notes; pairs the latencies of every
// pair alone (PairReads), for the tail's band.
func bulkExpectations(pl *Plan, base ReadConfig, alone map[string]float64, pairs []float64) ([]results.Expectation, error) {
	if pl.RMABulkLoad == 0 {
		return nil, nil
	}
	n := pl.Clique.Pods * pl.Clique.TiNs
	bulk := BulkIP{Load: pl.RMABulkLoad, Bytes: pl.RMABulkBytes, Packets: bulkPackets(pl), Mode: pl.SimMode, CTSWindow: pl.CTSWindow, EgressBytes: pl.EgressBytes}
	if bulk.Packets == 0 {
		return nil, fmt.Errorf("%s: parameters rma_count, rma_qps and rma_bulk_load: bulk covering %d reads at %g QPS is more than a simulation takes (%d packets in all); give rma_bulk_packets", Name, pl.RMACount, pl.RMAQPS, MaxSimPackets)
	}
	if err := bulk.check(n); err != nil {
		return nil, fmt.Errorf("%s: bulk IP beside 1RMA reads: %w", Name, err)
	}
	prios := []struct {
		name   string
		weight int
	}{{"hi", pl.RMAHiPriWeight}, {"lo", 0}}
	runs := make([][]float64, len(prios)*pl.RMABulkRuns)
	errs := make([]error, len(runs))
	parallel(len(runs), func(k int) {
		cfg := base
		cfg.Seed = pl.Seed + uint64(k%pl.RMABulkRuns+1)*0x9e3779b97f4a7c15
		b := bulk
		b.HiPriWeight = prios[k/pl.RMABulkRuns].weight
		res, err := SimulateReadsBeside(cfg, b)
		runs[k], errs[k] = res.Samples, err
	})
	var out []results.Expectation
	for i, prio := range prios {
		for _, err := range errs[i*pl.RMABulkRuns : (i+1)*pl.RMABulkRuns] {
			if err != nil {
				return nil, fmt.Errorf("%s: 1RMA reads of %d bytes beside bulk IP, %s priority: %w", Name, base.Bytes, prio.name, err)
			}
		}
		b := bulk
		b.HiPriWeight = prio.weight
		for _, stat := range []string{"p50", "p99"} {
			out = append(out, bulkBand(prio.name, stat, base.Bytes, runs[i*pl.RMABulkRuns:(i+1)*pl.RMABulkRuns], alone[stat], pairs, b, pl))
		}
	}
	return out, nil
}

// parallel calls f(0) .. f(n-1), as many at once as there are processors:
// golden runs are independent simulations, each writing its own result.
func parallel(n int, f func(int)) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for k := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			f(k)
		}()
	}
	wg.Wait()
}

// bootstrapDraws is how many resamples bulkBand's bootstrap draws.
const bootstrapDraws = 400

// bulkBand is the band of one statistic of a measurement of reads beside
// bulk IP (reading A30): the statistic's mean over golden runs made as
// the measurement is, ± three standard deviations of it (times
// √(1+1/R) for the golden mean's own error). With a few runs the
// deviation between them is itself uncertain; it is taken no smaller
// than the bootstrap's, the statistic's deviation over samples of the
// measurement's size drawn from every run's reads pooled. The design's
// timestamp quantum and clock, the lab's cables and the switch clock's
// cycles add to it as in the band of the reads alone (readBand), and the
// 99th percentile reaches further down by the pairs' detours as it does.
func bulkBand(prio, stat string, bytes int, runs [][]float64, alone float64, pairs []float64, bulk BulkIP, pl *Plan) results.Expectation {
	q := map[string]float64{"p50": 0.5, "p99": 0.99}[stat]
	var vals, pool []float64
	for _, v := range runs {
		vals = append(vals, percentileOf(v, q))
		pool = append(pool, v...)
	}
	m, sd := meanSD(vals)
	rng := rand.New(rand.NewPCG(pl.Seed, 0x626f6f74))
	per := len(runs[0])
	boot := make([]float64, bootstrapDraws)
	draw := make([]float64, per)
	for i := range boot {
		for j := range draw {
			draw[j] = pool[rng.IntN(len(pool))]
		}
		boot[i] = percentileOf(draw, q)
	}
	_, bsd := meanSD(boot)
	spread := 3 * max(sd, bsd) * math.Sqrt(1+1/float64(len(runs)))
	path := readPathOf(pl, m)
	half := spread + path.sum()
	lo, hi := m-half, m+half
	what := map[string]string{"hi": fmt.Sprintf("high priority, on VCs of their own weighted %d:1 against the bulk's", bulk.HiPriWeight), "lo": "low priority, on the bulk's VCs"}[prio]
	budget := fmt.Sprintf("±%.0f ns: 3 sd of the %s over %d golden runs of %d reads per TiN at %g QPS beside bulk IP (%.0f ns between runs, %.0f ns by bootstrap from their %d reads pooled; the larger, times √(1+1/%d): %.0f ns), %s",
		half, stat, len(runs), pl.RMACount, pl.RMAQPS, sd, bsd, len(pool), len(runs), spread, path.budget(pl))
	var tables float64
	if stat == "p99" {
		if t, _, ok := pairsTail(pairs); ok {
			tables = t
			lo -= tables
			budget += fmt.Sprintf("; below, %.0f ns more: the slowest pair alone against the 90th percentile of the pairs alone, the tail other tables' detours may give (reading A29)", tables)
		}
	}
	claim := map[string]string{"hi": "high-priority 1RMA on its own VCs is nearly unaffected by bulk IP", "lo": "low-priority 1RMA sharing the bulk's VCs is slower"}[prio]
	e := results.Expectation{Metric: "tin.rma.latency_bulk", Params: results.Params{"bytes": strconv.Itoa(bytes), "priority": prio, "stat": stat}, Value: m, Unit: "ns",
		Min: results.Float(lo), Max: results.Float(hi), Source: "Aquila §3.1-§3.4, §5.1 Fig. 9 (" + claim + "; reference simulation of the reads beside bulk IP)",
		Note: fmt.Sprintf("execution latency of %d-byte reads, %s, beside bulk IP of %d-byte packets at %g of the injection rate (%d per TiN) over the %s Clique; %.2fx golden's %s of the same reads alone (%.0f ns); the mean of %d runs",
			bytes, what, bulk.Bytes, bulk.Load, bulk.Packets, pl.Clique.Param(), m/alone, stat, alone, len(runs)),
		Budget: budget}
	if e.NeedsReason() {
		e.Wide = readsWide(stat, " beside bulk", pl.RMACount, spread, m, tables)
	}
	return e
}
