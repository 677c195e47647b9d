package influx

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/labrunner/labrunner/results"
)

// Measurement names of the points that are not a metric of their own. Every
// Measurement of a run becomes a point whose measurement name is its metric
// ("exanet.bandwidth"); docs/influxdb.md describes the whole schema.
const (
	// RunMeasurement: one point per run (summary counts, status).
	RunMeasurement = "labrunner_run"
	// TestMeasurement: one point per plan, test and board (verdict counts).
	TestMeasurement = "labrunner_test"
	// VerdictMeasurement: verdicts that have no measurement of their own
	// (a test that could not run, a skipped test).
	VerdictMeasurement = "labrunner_verdict"
)

// Tag keys. Parameters of a measurement (payload, hops, path ...) become
// tags of their own name, prefixed with "param_" where they would clash
// with one of these or start with '_' (InfluxDB 2.x reserves those).
const (
	TagLab       = "lab"
	TagRunID     = "run_id"
	TagPlan      = "plan"
	TagBoard     = "board"
	TagKind      = "board_kind"
	TagDesign    = "design"
	TagVersion   = "design_version"
	TagBitstream = "bitstream_sha256"
	TagTest      = "test"
	TagUnit      = "unit"
	TagMetric    = "metric"
	TagHost      = "host"
	TagShard     = "shard"
)

var reservedTags = map[string]bool{
	TagLab: true, TagRunID: true, TagPlan: true, TagBoard: true, TagKind: true, TagDesign: true,
	TagVersion: true, TagBitstream: true, TagTest: true, TagUnit: true, TagMetric: true, TagHost: true,
	TagShard: true, "time": true,
}

// ParamTag returns the tag key a measurement parameter is written under.
func ParamTag(param string) string {
	if reservedTags[param] || strings.HasPrefix(param, "_") || param == "" {
		return "param_" + param
	}
	return param
}

// RunData is what a run directory holds, as read from its files.
type RunData struct {
	Run          results.Run
	Measurements []results.Measurement
	Verdicts     []results.Verdict
}

// ReadRunData reads a run directory's run.json, measurements.jsonl and
// verdicts.jsonl.
func ReadRunData(dir string) (*RunData, error) {
	run, err := results.ReadRun(dir)
	if err != nil {
		return nil, err
	}
	// The two logs are decoded in parallel: JSON decoding is most of
	// the time an export spends before it can send.
	var vs []results.Verdict
	var verr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		vs, verr = results.ReadVerdictLog(dir)
	}()
	ms, err := results.ReadMeasurements(dir)
	<-done
	if err != nil {
		return nil, fmt.Errorf("reading measurements of run %s: %w", dir, err)
	}
	if verr != nil {
		return nil, fmt.Errorf("reading verdicts of run %s: %w", dir, verr)
	}
	return &RunData{Run: *run, Measurements: ms, Verdicts: vs}, nil
}

// Points builds every point of a run. The result depends only on the run
// directory's content: exporting the same run twice gives the same series
// and timestamps, so InfluxDB keeps one copy of each point however often it
// is sent. Points of one series that would share a timestamp (two readings
// taken in the same nanosecond) are moved apart by a nanosecond, in file
// order, so none overwrites another.
func Points(d *RunData) []Point {
	b := newBuilder(d)
	out := make([]Point, 0, len(d.Measurements)+len(d.Verdicts)/4+2)
	for i := range d.Measurements {
		out = append(out, b.measurement(&d.Measurements[i]))
	}
	return append(out, b.rest()...)
}

// builder makes a run's points one at a time, in the order Points returns
// them: a point per measurement (with the verdict scored from it), then the
// verdicts no measurement carried, a summary point per test, and one for
// the run. Export feeds it measurements as they are decoded, so that the
// first batch is on the wire before the last line is read. Timestamps are
// spread as points are made (spreadTimestamps), which gives the same result
// as spreading the whole list afterwards would.
type builder struct {
	d         *RunData // Run and Verdicts; Measurements may be empty (streamed)
	bits      map[string]results.BitstreamInfo
	verdictOf map[joinKey][]int
	used      []bool
	n         int // measurements seen
	spread    spreader
}

func newBuilder(d *RunData) *builder {
	b := &builder{d: d, bits: bitstreamIndex(d.Run), used: make([]bool, len(d.Verdicts)), spread: spreader{seen: map[seriesAt]struct{}{}}}
	// Pair each measurement with the verdict scored from it: Score copies
	// the measurement's time, plan, test, board, metric and params.
	b.verdictOf = make(map[joinKey][]int, len(d.Verdicts))
	for i, v := range d.Verdicts {
		if v.Metric == "" {
			continue
		}
		k := keyOf(v.Plan, v.Test, v.Board, v.Metric, v.Params, v.Time)
		b.verdictOf[k] = append(b.verdictOf[k], i)
	}
	return b
}

func (b *builder) base(p *Point, plan, board, design, test string) {
	run := &b.d.Run
	p.SetTag(TagLab, run.Lab)
	p.SetTag(TagRunID, run.ID)
	p.SetTag(TagPlan, plan)
	p.SetTag(TagBoard, board)
	p.SetTag(TagTest, test)
	bi, ok := b.bits[plan+"\x00"+board]
	if !ok {
		bi = b.bits["\x00"+board]
	}
	if design == "" {
		design = bi.Design
	}
	p.SetTag(TagDesign, design)
	p.SetTag(TagKind, bi.Kind)
	if bi.Design == design {
		p.SetTag(TagVersion, bi.Version)
		p.SetTag(TagBitstream, bi.SHA256)
	}
}

func params(p *Point, ps results.Params) {
	for k, v := range ps {
		p.SetTag(ParamTag(k), v)
	}
}

func (b *builder) when(t time.Time) time.Time {
	if t.IsZero() {
		return b.d.Run.Start
	}
	return t
}

// measurement makes the point of one measurement.
func (b *builder) measurement(m *results.Measurement) Point {
	b.n++
	p := Point{Measurement: m.Metric, Time: b.when(m.Time), Tags: make([]Tag, 0, 12+len(m.Params)), Fields: make([]Field, 0, 16)}
	if p.Measurement == "" {
		p.Measurement = "unnamed"
	}
	b.base(&p, m.Plan, m.Board, m.Design, m.Test)
	p.SetTag(TagUnit, m.Unit)
	params(&p, m.Params)
	if !p.AddFloat("value", m.Value) {
		p.AddString("value_invalid", strconv.FormatFloat(m.Value, 'g', -1, 64))
	}
	if m.Text != "" {
		p.AddString("text", m.Text)
	}
	addSamples(&p, m.Samples)
	k := keyOf(m.Plan, m.Test, m.Board, m.Metric, m.Params, m.Time)
	if q := b.verdictOf[k]; len(q) > 0 {
		b.verdictOf[k] = q[1:]
		b.used[q[0]] = true
		addVerdict(&p, b.d.Verdicts[q[0]])
	}
	b.spread.spread(&p)
	return p
}

// rest makes the points after the measurements': verdicts no measurement
// carried, a summary per test, one for the run.
func (b *builder) rest() []Point {
	var out []Point
	for i, v := range b.d.Verdicts {
		if b.used[i] {
			continue
		}
		p := Point{Measurement: VerdictMeasurement, Time: b.when(v.Time)}
		b.base(&p, v.Plan, v.Board, v.Design, v.Test)
		p.SetTag(TagMetric, v.Metric)
		p.SetTag(TagUnit, v.Unit)
		params(&p, v.Params)
		addVerdict(&p, v)
		if v.Measured != nil {
			p.AddFloat("value", *v.Measured)
		}
		if v.Message != "" {
			p.AddString("message", v.Message)
		}
		out = append(out, p)
	}
	out = append(out, testPoints(b.d, b.base)...)
	out = append(out, runPoint(b.d, b.n))
	for i := range out {
		b.spread.spread(&out[i])
	}
	return out
}

func addVerdict(p *Point, v results.Verdict) {
	p.AddString("verdict", string(v.Status))
	if v.Class != "" {
		p.AddString("class", v.Class)
	}
	if v.ExpectedValue != nil {
		p.AddFloat("expected", *v.ExpectedValue)
	}
	if v.Tolerance != nil {
		p.AddFloat("tolerance", *v.Tolerance)
	}
	if v.Expected != "" {
		p.AddString("expected_text", v.Expected)
	}
	if v.Source != "" {
		p.AddString("source", v.Source)
	}
}

// addSamples summarises a distribution: the raw samples stay in the run
// directory (a point per sample would multiply the series' points for no
// dashboard that needs them).
func addSamples(p *Point, xs []float64) {
	var s []float64
	for _, x := range xs {
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			s = append(s, x)
		}
	}
	if len(s) == 0 {
		return
	}
	sort.Float64s(s)
	sum := 0.0
	for _, x := range s {
		sum += x
	}
	p.AddInt("samples_n", int64(len(s)))
	p.AddFloat("samples_min", s[0])
	p.AddFloat("samples_mean", sum/float64(len(s)))
	p.AddFloat("samples_p50", Quantile(s, 0.50))
	p.AddFloat("samples_p90", Quantile(s, 0.90))
	p.AddFloat("samples_p99", Quantile(s, 0.99))
	p.AddFloat("samples_max", s[len(s)-1])
}

// Quantile returns the q-quantile of sorted samples, interpolating linearly
// between the two nearest ranks.
func Quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	pos := q * float64(len(sorted)-1)
	lo := int(math.Floor(pos))
	hi := int(math.Ceil(pos))
	if lo == hi {
		return sorted[lo]
	}
	f := pos - float64(lo)
	return sorted[lo]*(1-f) + sorted[hi]*f
}

func testPoints(d *RunData, base func(*Point, string, string, string, string)) []Point {
	type agg struct {
		plan, test, board, design string
		first, last               time.Time
		s                         results.Summary
		seconds                   float64
	}
	idx := map[string]*agg{}
	var order []*agg
	for _, v := range d.Verdicts {
		k := v.Plan + "\x00" + v.Test + "\x00" + v.Board
		a, ok := idx[k]
		if !ok {
			a = &agg{plan: v.Plan, test: v.Test, board: v.Board, design: v.Design, first: v.Time, last: v.Time}
			idx[k] = a
			order = append(order, a)
		}
		if v.Time.Before(a.first) {
			a.first = v.Time
		}
		if v.Time.After(a.last) {
			a.last = v.Time
		}
		a.seconds += v.Seconds
		a.s.Total++
		switch v.Status {
		case results.Pass:
			a.s.Pass++
		case results.Fail:
			a.s.Fail++
		case results.Error:
			a.s.Error++
		case results.Skip:
			a.s.Skip++
		}
	}
	out := make([]Point, 0, len(order))
	for _, a := range order {
		// The earliest verdict's time: verdicts are only ever appended,
		// so the timestamp of this point does not move when a run that
		// was exported half-way is exported again.
		t := a.first
		if t.IsZero() {
			t = d.Run.Start
		}
		p := Point{Measurement: TestMeasurement, Time: t}
		base(&p, a.plan, a.board, a.design, a.test)
		p.AddString("status", worst(a.s))
		p.AddInt("total", int64(a.s.Total))
		p.AddInt("pass", int64(a.s.Pass))
		p.AddInt("fail", int64(a.s.Fail))
		p.AddInt("error", int64(a.s.Error))
		p.AddInt("skip", int64(a.s.Skip))
		secs := a.seconds
		if secs == 0 && !a.first.IsZero() {
			secs = a.last.Sub(a.first).Seconds()
		}
		p.AddFloat("seconds", secs)
		out = append(out, p)
	}
	return out
}

func worst(s results.Summary) string {
	switch {
	case s.Fail > 0:
		return string(results.Fail)
	case s.Error > 0:
		return string(results.Error)
	case s.Pass == 0 && s.Skip > 0:
		return string(results.Skip)
	}
	return string(results.Pass)
}

// runPoint is the run's summary point; n is the number of measurements.
func runPoint(d *RunData, n int) Point {
	run := d.Run
	p := Point{Measurement: RunMeasurement, Time: run.Start}
	p.SetTag(TagLab, run.Lab)
	p.SetTag(TagRunID, run.ID)
	p.SetTag(TagHost, run.Host)
	p.SetTag(TagShard, run.Shard)
	s := results.Summarize(d.Verdicts)
	p.AddString("status", run.Status)
	p.AddInt("exit_code", int64(run.ExitCode))
	p.AddString("plans", strings.Join(run.Plans, ","))
	p.AddInt("total", int64(s.Total))
	p.AddInt("pass", int64(s.Pass))
	p.AddInt("fail", int64(s.Fail))
	p.AddInt("error", int64(s.Error))
	p.AddInt("skip", int64(s.Skip))
	p.AddInt("measurements", int64(n))
	p.AddInt("seed", run.Seed)
	if len(run.Faults) > 0 {
		p.AddString("faults", strings.Join(run.Faults, " "))
	}
	if w, ok := run.Worked(); ok {
		p.AddFloat("duration_s", w.Seconds())
	}
	if v := run.Versions["labrunner"]; v != "" {
		p.AddString("labrunner_version", v)
	}
	return p
}

func bitstreamIndex(run results.Run) map[string]results.BitstreamInfo {
	m := map[string]results.BitstreamInfo{}
	for _, b := range run.Bitstreams {
		m[b.Plan+"\x00"+b.Board] = b
		if _, ok := m["\x00"+b.Board]; !ok {
			m["\x00"+b.Board] = b
		}
	}
	return m
}

type joinKey struct {
	plan, test, board, metric, params string
	t                                 int64
}

func keyOf(plan, test, board, metric string, ps results.Params, t time.Time) joinKey {
	return joinKey{plan, test, board, metric, ps.String(), t.UnixNano()}
}

// spreader moves a point one nanosecond later while an earlier point of
// the same series has its timestamp, points taken in order. Series are told
// apart by a 64-bit hash of the series key: a hash collision (about 1 in
// 10^19 per pair) would only move a point by a nanosecond more, the same way
// on every export.
type seriesAt struct {
	series uint64
	t      int64
}

type spreader struct{ seen map[seriesAt]struct{} }

func (s *spreader) spread(p *Point) {
	h := p.seriesHash()
	for {
		k := seriesAt{h, p.Time.UnixNano()}
		if _, dup := s.seen[k]; !dup {
			s.seen[k] = struct{}{}
			return
		}
		p.Time = p.Time.Add(time.Nanosecond)
	}
}
