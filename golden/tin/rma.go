package tin

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/labrunner/labrunner/results"
)

// The PCIe time of a 1RMA read the paper leaves outside the fabric (§3.4:
// "inside of 4us end-to-end. Aquila traversal accounts for a mere
// 2.5-3us; the remaining time is attributable to PCIe latency
// contributions"): at least 1 µs, which the paper does not split between
// the target's host read and the initiator's completion. The model's
// default puts all of it at the target (reading A29); a design declares
// its own split.
const (
	PaperReadMemNs = 1000
	PaperReadCplNs = 0
)

// PaperReadQPS is the rate of §5.1's CliqueMap lookups in Fig. 9: 10,000
// reads a second per client.
const PaperReadQPS = 10000

// ReadConfig describes one run of 1RMA reads over a Clique: every TiN
// issues Reads reads of Bytes to TiNs drawn uniformly from the others,
// with Poisson arrivals at QPS, from an idle fabric (§5.1, Fig. 9's
// high-priority reads alone).
type ReadConfig struct {
	Clique *Clique
	Timing Timing
	// Mode routes the Req and Resp cells: §3.4 has both "freely reordered
	// and routed adaptively" (fully adaptive).
	Mode Mode
	// Bytes is the read's size; Completion the PCIe completion each Resp
	// cell carries (§3.4); RespTag the bytes a Resp cell carries besides
	// its 8 B header and its completion (the paper gives no layout: 0; a
	// design declares its own).
	Bytes, Completion, RespTag int
	Align                      int // cell granularity (CellsAlign)
	// MemNs is the target's PCIe read: from the Req's arrival to its
	// completions being ready to go out as Resp cells. CplNs is the
	// initiator's: from the last Resp cell's arrival to the completion
	// issued (reading A29).
	MemNs, CplNs float64
	QPS          float64 // reads a second each TiN issues (Poisson)
	Reads        int     // reads each TiN issues
	// BufferBytes, NonMinWeight and NonMinBias are SimConfig's.
	BufferBytes              int
	NonMinWeight, NonMinBias float64
	Seed                     uint64
}

// ReadResult is what a run of reads measured.
type ReadResult struct {
	// Samples are the reads' execution latencies (§5.1: "from when the RMA
	// command is submitted to the hardware until the hardware issues the
	// completion for that command"), ns, in completion order.
	Samples []float64
	Stats   Stats
	// NonMinimal is the share of Req and Resp cells that left the minimal
	// route.
	NonMinimal float64
	// Overlapped counts reads issued while another read of the run was
	// still in flight: the reads not alone on the fabric.
	Overlapped int
}

// MaxReadsPerTiN bounds a read run.
const MaxReadsPerTiN = 100_000

func (cfg *ReadConfig) check() error {
	if err := checkFabricConfig(cfg.Clique, cfg.Timing, cfg.Mode, cfg.BufferBytes, cfg.NonMinWeight, cfg.NonMinBias, "reads on "); err != nil {
		return err
	}
	if _, err := respCellsOf(cfg.Bytes, cfg.Completion, cfg.RespTag, cfg.Align); err != nil {
		return err
	}
	for _, d := range []struct {
		name string
		v    float64
	}{{"target's PCIe read", cfg.MemNs}, {"initiator's completion", cfg.CplNs}} {
		if math.IsNaN(d.v) || d.v < 0 || d.v > 1e7 {
			return fmt.Errorf("tin: %s of %g ns: want 0..1e7", d.name, d.v)
		}
	}
	if math.IsNaN(cfg.QPS) || cfg.QPS <= 0 || cfg.QPS > 1e9 {
		return fmt.Errorf("tin: %g reads a second per TiN: want 0 < qps <= 1e9", cfg.QPS)
	}
	if cfg.Reads < 1 || cfg.Reads > MaxReadsPerTiN {
		return fmt.Errorf("tin: %d reads per TiN: want 1..%d", cfg.Reads, MaxReadsPerTiN)
	}
	return nil
}

// prepare checks cfg, gives the fabric its defaults and makes the state
// every read run starts from.
func (cfg *ReadConfig) prepare() (*readSim, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	fabricDefaults(&cfg.BufferBytes, &cfg.NonMinWeight, &cfg.NonMinBias)
	resp, _ := respCellsOf(cfg.Bytes, cfg.Completion, cfg.RespTag, cfg.Align) // checked
	n := cfg.Clique.Pods * cfg.Clique.TiNs
	return &readSim{cfg: *cfg, n: n, rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x726d61)), issued: make([]int, n),
		resp: resp, lambda: cfg.QPS / 1e9, alg: cfg.Mode.Algorithm()}, nil
}

// fabric is the fabric a read run's cells cross, with endpoints per TiN.
func (cfg *ReadConfig) fabric(endpoints int) FabricConfig {
	fc := AquilaFabric(cfg.Clique, cfg.Timing, cfg.BufferBytes, cfg.NonMinWeight, cfg.NonMinBias, endpoints, cfg.Timing.InjectGbps, cfg.Seed^0x5851f42d4c957f2d)
	fc.HashSeed = mix(cfg.Seed ^ 0x2545f4914f6cdd1d)
	return fc
}

// respCellsOf sizes the Resp cells of a read: RespCells with tag bytes
// more in each cell.
func respCellsOf(bytes, completion, tag, align int) ([]int, error) {
	if tag < 0 || completion+tag > MaxPayload {
		return nil, fmt.Errorf("tin: Resp cells of %d-byte completions and %d-byte tags: want a tag of 0 or more and at most %d bytes after the header", completion, tag, MaxPayload)
	}
	cells, err := RespCells(bytes, completion, 1)
	if err != nil {
		return nil, err
	}
	if err := checkAlign(align); err != nil {
		return nil, err
	}
	for i := range cells {
		cells[i] = cellSize(cells[i]-HeaderBytes+tag, align)
	}
	return cells, nil
}

type read struct {
	src, dst int32
	issued   float64
}

// kinds of fabric packets of the read protocol, in Packet.Tag's low bit
const (
	rdReq  = 0
	rdResp = 1
)

// timer tags, in the low two bits
const (
	rtGen  = 0 // a TiN issues its next read
	rtMem  = 1 // a target's completions are ready
	rtDone = 2 // an initiator issues a read's completion
	rtPair = 3 // PairReads issues the read of a pair
)

type readSim struct {
	cfg      ReadConfig
	pairs    [][2]int32 // with PairReads: the reads to issue, one at a time
	f        *Fabric
	n        int
	rng      *rand.Rand
	reads    []read
	issued   []int
	resp     []int
	lambda   float64 // reads per ns per TiN
	inFlight int
	overlap  int
	samples  []float64
	alg      Algorithm
	// Beside bulk IP (SimulateReadsBeside): the endpoints and timers of
	// the reads among the IP traffic's, and the class of their cells.
	ep     epMap
	class  uint8
	stopAt int // stop the fabric when this many reads are done (0: never)
}

func (s *readSim) at(t Time, tag int64) { s.f.At(t, tag<<s.ep.shift|s.ep.mark) }

// SimulateReads runs 1RMA reads over the TiN fabric the reference
// simulation models (AquilaFabric: §3.1's switches, §3.2's routes and
// adaptive weighing, readings A20-A28).
//
// A read (§3.4) is one 48-byte Req cell from the initiator's endpoint to
// the target's, routed by cfg.Mode; the target reads host memory for
// cfg.MemNs (PCIe, outside the fabric), then sends one Resp cell per
// PCIe completion, all at once behind whatever its endpoint already
// queued, at the endpoint port's rate (§5.1: 100 Gb/s; PCIe's 128 Gb/s
// per host, §3.6, does not limit it), each routed by cfg.Mode; the
// initiator lands them in any order and issues the completion cfg.CplNs
// after the last has arrived whole (reading A29). The Req and Resp cells
// travel in the data class: the run has no other traffic, so their class
// only names their VCs. A read is timed from its issue to its
// completion: §5.1's execution latency.
func SimulateReads(cfg ReadConfig) (ReadResult, error) {
	s, err := cfg.prepare()
	if err != nil {
		return ReadResult{}, err
	}
	if s.f, err = NewFabric(cfg.fabric(1), s); err != nil {
		return ReadResult{}, err
	}
	s.begin()
	s.f.Run()
	return s.result(s.n * cfg.Reads)
}

// begin sets every TiN's first read.
func (s *readSim) begin() {
	for i := 0; i < s.n; i++ {
		s.at(toTime(s.rng.ExpFloat64()/s.lambda), int64(i)<<2|rtGen)
	}
}

func (s *readSim) result(want int) (ReadResult, error) {
	st := s.f.Stats
	res := ReadResult{Samples: s.samples, Stats: summarize(s.samples), Overlapped: s.overlap}
	if st.DataCells > 0 {
		res.NonMinimal = float64(st.NonMinimal) / float64(st.DataCells)
	}
	if len(s.samples) != want {
		return res, fmt.Errorf("tin: %d of %d reads completed", len(s.samples), want)
	}
	return res, nil
}

// pairGapNs separates PairReads's reads: far longer than a read takes.
const pairGapNs = 100_000

// PairReads times one read alone on the idle fabric for every ordered pair
// of TiNs (cfg.QPS and cfg.Reads are not used): Samples[i·(n-1)+j] is
// TiN i reading from the j-th other TiN, n the Clique's TiNs. Reads follow
// one another far apart on one fabric, so that each meets its switches'
// clocks (reading A28) at another phase.
func PairReads(cfg ReadConfig) (ReadResult, error) {
	cfg.QPS, cfg.Reads = PaperReadQPS, 1
	s, err := cfg.prepare()
	if err != nil {
		return ReadResult{}, err
	}
	n := s.n
	if n > MaxPairNodes {
		return ReadResult{}, fmt.Errorf("tin: timing a read for every pair of %d TiNs: at most %d TiNs", n, MaxPairNodes)
	}
	s.lambda = 0 // reads at fixed times, not a Poisson stream
	for i := int32(0); i < int32(n); i++ {
		for j := int32(0); j < int32(n); j++ {
			if i != j {
				s.pairs = append(s.pairs, [2]int32{i, j})
			}
		}
	}
	if s.f, err = NewFabric(cfg.fabric(1), s); err != nil {
		return ReadResult{}, err
	}
	for k := range s.pairs {
		s.at(toTime(float64(k+1)*pairGapNs), int64(k)<<2|rtPair)
	}
	s.f.Run()
	return s.result(len(s.pairs))
}

func (s *readSim) nowNs() float64 { return float64(s.f.Now()) / float64(Ns) }

// Timer implements Host.
func (s *readSim) Timer(f *Fabric, tag int64) {
	id := int32(tag >> 2)
	switch tag & 3 {
	case rtGen:
		s.issue(id)
	case rtMem:
		r := &s.reads[id]
		s.send(r.dst, r.src, id, rdResp, s.resp)
	case rtDone:
		r := &s.reads[id]
		s.samples = append(s.samples, s.nowNs()-r.issued)
		s.inFlight--
		if len(s.samples) == s.stopAt {
			// Beside bulk IP: the reads are all done, what the bulk
			// still has to send changes none of them.
			s.f.Stop()
		}
	case rtPair:
		s.start(s.pairs[id][0], s.pairs[id][1])
	}
}

// Delivered implements Host.
func (s *readSim) Delivered(f *Fabric, p *Packet) {
	id := int32(p.Tag >> 1)
	if p.Tag&1 == rdReq {
		s.at(f.Now()+toTime(s.cfg.MemNs), int64(id)<<2|rtMem)
		return
	}
	s.at(f.Now()+toTime(s.cfg.CplNs), int64(id)<<2|rtDone)
}

func (s *readSim) issue(src int32) {
	if s.issued[src] >= s.cfg.Reads {
		return
	}
	s.issued[src]++
	dst := int32(s.rng.IntN(s.n - 1))
	if dst >= src {
		dst++
	}
	s.start(src, dst)
	if s.issued[src] < s.cfg.Reads {
		s.at(toTime(s.nowNs()+s.rng.ExpFloat64()/s.lambda), int64(src)<<2|rtGen)
	}
}

// start issues a read: its Req leaves the initiator's endpoint now.
func (s *readSim) start(src, dst int32) {
	s.reads = append(s.reads, read{src: src, dst: dst, issued: s.nowNs()})
	id := int32(len(s.reads) - 1)
	if s.inFlight > 0 {
		s.overlap++
	}
	s.inFlight++
	s.send(src, dst, id, rdReq, nil)
}

func (s *readSim) send(src, dst, id int32, kind int, cells []int) {
	bytes := int32(ReqCell)
	if cells != nil {
		bytes = int32(Sum(cells))
	}
	// The sizes and endpoints are checked: Send cannot fail.
	if err := s.f.Send(Packet{Src: s.ep.of(src), Dst: s.ep.of(dst), Bytes: bytes, Class: s.class, Alg: s.alg, Tag: int64(id)<<1 | int64(kind)}, cells); err != nil {
		panic(err)
	}
}

// ReadLatency is the closed form of one read alone on an idle fabric
// whose Req takes path req and whose Resp cells all take path resp, one
// behind the other (a hashed mode): the Req cell's latency (CellLatency),
// the target's memNs, the Resp cells' stream, cplNs. The stream is
// CellLatency of its bytes as one: the switches cut through (reading A3),
// so its head pays the fall-through and every hop's head latency once,
// and the cells follow each other at the rate of the path's slowest link,
// whose serialization of all their bytes the last one's tail trails the
// head by. Without a switch clock (reading A28) the simulation of such a
// read gives it to the picosecond; adaptive routing spreads the Resp
// cells over more than one path and beats it.
func (t Timing) ReadLatency(req, resp Path, respCells []int, memNs, cplNs float64) float64 {
	return t.CellLatency(req, ReqCell) + memNs + t.CellLatency(resp, Sum(respCells)) + cplNs
}

// readExpectations simulates the read latency alone for every read size
// and turns it into bands (reading A29).
func readExpectations(pl *Plan) ([]results.Expectation, error) {
	if pl.RMACount == 0 || len(pl.Reads) == 0 {
		return nil, nil
	}
	var out []results.Expectation
	for _, b := range pl.Reads {
		base := ReadConfig{Clique: pl.Clique, Timing: pl.Timing, Mode: pl.RMAMode, Bytes: b, Completion: pl.Completion, RespTag: pl.RespTag,
			Align: pl.Align, MemNs: pl.RMAMemNs, CplNs: pl.RMACplNs, QPS: pl.RMAQPS, Reads: pl.RMACount,
			BufferBytes: pl.BufferBytes, NonMinWeight: pl.NonMinWeight, NonMinBias: pl.NonMinBias, Seed: pl.Seed}
		runs := make([][]float64, pl.Replicas)
		errs := make([]error, len(runs))
		parallel(len(runs), func(r int) {
			cfg := base
			cfg.Seed = pl.Seed + uint64(r)*0x632be59bd9b4e019
			res, err := SimulateReads(cfg)
			runs[r], errs[r] = res.Samples, err
		})
		for _, err := range errs {
			if err != nil {
				return nil, fmt.Errorf("%s: 1RMA reads of %d bytes: %w", Name, b, err)
			}
		}
		// The slowest pairs set a run's tail; which pairs they are
		// depends on the detours the lab's tables give them.
		var pairs []float64
		if pl.Clique.Pods*pl.Clique.TiNs <= MaxPairNodes {
			res, err := PairReads(base)
			if err != nil {
				return nil, fmt.Errorf("%s: 1RMA reads of %d bytes: %w", Name, b, err)
			}
			pairs = res.Samples
		}
		alone := map[string]float64{}
		for _, stat := range []string{"p50", "p99"} {
			e := readBand(stat, b, runs, pairs, pl)
			alone[stat] = e.Value
			out = append(out, e)
		}
		be, err := bulkExpectations(pl, base, alone, pairs)
		if err != nil {
			return nil, err
		}
		out = append(out, be...)
	}
	return out, nil
}

// readPath is the part of a read band's half-width that golden's runs do
// not give, from the longest minimal read: one link each way inside a pod,
// local, global, local between pods; a switch more than links each way.
type readPath struct{ crossings, switches, cable, clock, ppm float64 }

func readPathOf(pl *Plan, m float64) readPath {
	p := readPath{crossings: 2}
	if pl.Clique.Pods > 1 {
		p.crossings = 6
	}
	p.switches = p.crossings + 2
	p.cable = p.crossings * pl.CableSpreadNs
	p.clock = p.switches * pl.Timing.SwitchClockNs
	p.ppm = clockPPM * m
	return p
}

func (p readPath) sum() float64 { return timestampQuantumNs + p.ppm + p.cable + p.clock }

func (p readPath) budget(pl *Plan) string {
	return fmt.Sprintf("timestamp quantum %g ns, clock %g ppm (%.1f ns), cables %g ns from their kind's mean over %g links (%.0f ns), a cycle of the declared %g ns switch clock at each of %g switches for the clocked details golden does not model (%.0f ns, reading A28)",
		timestampQuantumNs, clockPPM*1e6, p.ppm, pl.CableSpreadNs, p.crossings, p.cable, pl.Timing.SwitchClockNs, p.switches, p.clock)
}

// pairsTail is how far the slowest pair alone lies above the 90th
// percentile of all pairs alone, the tail other routing tables' detours
// may give a read's p99 (reading A29); ok false without pairs.
func pairsTail(pairs []float64) (tail, slowest float64, ok bool) {
	if len(pairs) == 0 {
		return 0, 0, false
	}
	slowest = summarize(pairs).Max
	return slowest - percentileOf(pairs, 0.9), slowest, true
}

// readBand is the band of one statistic of a measurement of the read
// latency alone (reading A29): the statistic's mean over golden runs made
// as the measurement is (every TiN its reads, Poisson, from an idle
// fabric, to destinations drawn at random), ± three standard deviations
// between them (times √(1+1/R)), the timestamp quantum and clock ppm,
// the lab's cable spread for every link the longest minimal read crosses
// and, for a design with a switch clock, a cycle at every switch it
// crosses (the clocked details reading A28 leaves out). The 99th percentile of a run is the latency of its slowest
// pairs of TiNs, which the intra-pod detours the tables offer each pair
// decide (reading A7: golden's turn rule is one deadlock-free choice
// among others), so its band reaches down further, to the 90th percentile
// of the pairs' latencies alone.
func readBand(stat string, bytes int, runs [][]float64, pairs []float64, pl *Plan) results.Expectation {
	var vals []float64
	for _, v := range runs {
		s := summarize(v)
		vals = append(vals, map[string]float64{"p50": s.P50, "p99": s.P99}[stat])
	}
	m, sd := meanSD(vals)
	spread := 3 * sd * math.Sqrt(1+1/float64(len(vals)))
	path := readPathOf(pl, m)
	half := spread + path.sum()
	lo, hi := m-half, m+half
	budget := fmt.Sprintf("±%.0f ns: 3 sd of the %s between %d golden runs of %d reads per TiN at %g QPS (%.0f ns with the golden mean's own error), %s",
		half, stat, len(runs), pl.RMACount, pl.RMAQPS, spread, path.budget(pl))
	var tables float64
	if stat == "p99" {
		if t, slowest, ok := pairsTail(pairs); ok {
			tables = t
			lo -= tables
			budget += fmt.Sprintf("; below, %.0f ns more: the slowest pair alone (%.0f ns) against the 90th percentile of the %d pairs alone, the tail other tables' detours may give (reading A29)", tables, slowest, len(pairs))
		}
	}
	e := results.Expectation{Metric: "tin.rma.latency_alone", Params: results.Params{"bytes": strconv.Itoa(bytes), "stat": stat}, Value: m, Unit: "ns",
		Min: results.Float(lo), Max: results.Float(hi), Source: "Aquila §3.1-§3.4, §5.1 Fig. 9 (reference simulation of 1RMA reads)",
		Note: fmt.Sprintf("execution latency of %d-byte reads alone over the %s Clique: a %d B Req, %g ns of PCIe at the target, %d Resp cells of %d B (%s Req and Resp), %g ns to the completion; the mean of %d runs of %d reads per TiN",
			bytes, pl.Clique.Param(), ReqCell, pl.RMAMemNs, len(mustResp(bytes, pl)), mustResp(bytes, pl)[0], pl.RMAMode, pl.RMACplNs, len(runs), pl.RMACount),
		Budget: budget}
	if e.NeedsReason() {
		e.Wide = readsWide(stat, "", pl.RMACount, spread, m, tables)
	}
	return e
}

// readsWide is why a band of reads' latency is wider than ±10%: the spread
// of the statistic between golden's runs (of count reads per TiN, with what
// beside them), and the detours the lab's tables give the slowest pairs
// when they lengthen them by tables ns.
func readsWide(stat, beside string, count int, spread, m, tables float64) string {
	w := fmt.Sprintf("the %s of %d reads per TiN%s spreads by ±%.0f%% between runs", stat, count, beside, 100*spread/m)
	if tables > 0 {
		w += fmt.Sprintf(", and the slowest pairs' latency depends on the detours the lab's tables give them (%.0f ns below)", tables)
	}
	return w
}

func mustResp(bytes int, pl *Plan) []int {
	c, _ := respCellsOf(bytes, pl.Completion, pl.RespTag, pl.Align) // checked by ParsePlan
	return c
}

// percentileOf is the q-quantile of v by nearest rank.
func percentileOf(v []float64, q float64) float64 {
	w := slices.Clone(v)
	slices.Sort(w)
	i := int(math.Ceil(q*float64(len(w)))) - 1
	return w[max(0, min(i, len(w)-1))]
}
