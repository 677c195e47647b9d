// Package compare finds what changed between two runs: metrics that moved
// by more than their threshold, test cases that started failing, and test
// cases that were fixed. The nightly compares each plan with the previous
// run of the same plan in the same results root; `labrunner compare RUN_A
// RUN_B` compares any two runs.
package compare

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/labrunner/labrunner/results"
)

// DefaultThreshold is the relative change that counts as a move when the
// lab file's results.thresholds has neither the metric nor "*".
const DefaultThreshold = 0.05

// File is the comparison's file in a run directory (the report shows it).
const File = "compare.json"

// Thresholds maps a metric name, a glob over metric names ("exanet.*"), or
// "*" to the relative change that counts as a move.
type Thresholds map[string]float64

// For returns the threshold of a metric: its own entry, else the longest
// matching glob, else "*", else DefaultThreshold.
func (t Thresholds) For(metric string) float64 {
	if v, ok := t[metric]; ok {
		return v
	}
	best, bestLen := math.NaN(), -1
	for pat, v := range t {
		if pat == "*" || !strings.ContainsAny(pat, "*?[") {
			continue
		}
		if ok, _ := path.Match(pat, metric); ok && len(pat) > bestLen {
			best, bestLen = v, len(pat)
		}
	}
	if bestLen >= 0 {
		return best
	}
	if v, ok := t["*"]; ok {
		return v
	}
	return DefaultThreshold
}

// RunRef names one side of a comparison.
type RunRef struct {
	ID    string    `json:"id"`
	Path  string    `json:"path"`
	Start time.Time `json:"start"`
}

// Change is a metric that moved beyond its threshold.
type Change struct {
	Plan      string         `json:"plan,omitempty"`
	Test      string         `json:"test"`
	Board     string         `json:"board"`
	Metric    string         `json:"metric"`
	Params    results.Params `json:"params,omitempty"`
	Unit      string         `json:"unit,omitempty"`
	A         float64        `json:"a"`
	B         float64        `json:"b"`
	Rel       float64        `json:"rel"` // (B-A)/|A|; ±Inf when A is 0
	Threshold float64        `json:"threshold"`
	// Better is "worse" or "better" when the metric's direction is known
	// (bandwidth up is better, latency up is worse), else "".
	Better string `json:"better,omitempty"`
}

// changeJSON is Change on disk: JSON has no infinity, so a change from zero
// is written with rel null and from_zero true.
type changeJSON struct {
	Plan      string         `json:"plan,omitempty"`
	Test      string         `json:"test"`
	Board     string         `json:"board"`
	Metric    string         `json:"metric"`
	Params    results.Params `json:"params,omitempty"`
	Unit      string         `json:"unit,omitempty"`
	A         float64        `json:"a"`
	B         float64        `json:"b"`
	Rel       *float64       `json:"rel"`
	FromZero  bool           `json:"from_zero,omitempty"`
	Threshold float64        `json:"threshold"`
	Better    string         `json:"better,omitempty"`
}

// MarshalJSON writes a change from zero (Rel ±Inf) as rel null.
func (c Change) MarshalJSON() ([]byte, error) {
	j := changeJSON{Plan: c.Plan, Test: c.Test, Board: c.Board, Metric: c.Metric, Params: c.Params, Unit: c.Unit,
		A: c.A, B: c.B, Threshold: c.Threshold, Better: c.Better}
	if math.IsInf(c.Rel, 0) || math.IsNaN(c.Rel) {
		j.FromZero = true
	} else {
		r := c.Rel
		j.Rel = &r
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads what MarshalJSON wrote.
func (c *Change) UnmarshalJSON(b []byte) error {
	var j changeJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*c = Change{Plan: j.Plan, Test: j.Test, Board: j.Board, Metric: j.Metric, Params: j.Params, Unit: j.Unit,
		A: j.A, B: j.B, Threshold: j.Threshold, Better: j.Better}
	switch {
	case j.Rel != nil:
		c.Rel = *j.Rel
	case j.FromZero:
		c.Rel = math.Copysign(math.Inf(1), j.B)
	}
	return nil
}

// VerdictChange is a test case whose status changed.
type VerdictChange struct {
	Plan     string         `json:"plan,omitempty"`
	Test     string         `json:"test"`
	Board    string         `json:"board"`
	Metric   string         `json:"metric,omitempty"`
	Params   results.Params `json:"params,omitempty"`
	Was      results.Status `json:"was,omitempty"` // "" when the case did not exist in A
	Now      results.Status `json:"now"`
	Message  string         `json:"message,omitempty"`
	Source   string         `json:"source,omitempty"`
	Measured string         `json:"measured,omitempty"`
	Expected string         `json:"expected,omitempty"`
}

// Name renders the test case like a verdict's name.
func (v VerdictChange) Name() string {
	return results.Verdict{Test: v.Test, Params: v.Params}.Name()
}

// Result is one comparison (or several merged: one per plan).
type Result struct {
	// Baselines: the earlier run each plan was compared with.
	Baselines map[string]RunRef `json:"baselines"`
	B         RunRef            `json:"run"`
	Moved     []Change          `json:"moved"`
	NewFails  []VerdictChange   `json:"new_failures"`
	Fixed     []VerdictChange   `json:"fixed"`
	// StillFailing counts cases failing in both runs; Compared counts the
	// metrics found in both.
	StillFailing int `json:"still_failing"`
	Compared     int `json:"compared"`
	// Plans without an earlier run to compare with.
	NoBaseline []string `json:"no_baseline,omitempty"`
	// OnlyBefore lists the plans of the earlier run that this run did not
	// run (when two runs are compared as a whole).
	OnlyBefore []string `json:"only_before,omitempty"`
}

// Empty reports whether nothing moved, broke or was fixed.
func (r *Result) Empty() bool {
	return len(r.Moved) == 0 && len(r.NewFails) == 0 && len(r.Fixed) == 0
}

// Worse counts the moves in the wrong direction.
func (r *Result) Worse() int { return r.count("worse") }

// Better counts the moves in the right direction.
func (r *Result) Better() int { return r.count("better") }

func (r *Result) count(dir string) int {
	n := 0
	for _, c := range r.Moved {
		if c.Better == dir {
			n++
		}
	}
	return n
}

// Directions says how the moves split: "5 worse, 2 better, 13 with no
// known direction".
func (r *Result) Directions() string {
	w, b := r.Worse(), r.Better()
	s := fmt.Sprintf("%d worse, %d better", w, b)
	if n := len(r.Moved) - w - b; n > 0 {
		s += fmt.Sprintf(", %d with no known direction", n)
	}
	return s
}

// Run is one side's data.
type Run struct {
	Ref          RunRef
	Run          results.Run
	Measurements []results.Measurement
	Verdicts     []results.Verdict
}

// Load reads a run directory.
func Load(dir string) (*Run, error) {
	r, err := results.ReadRun(dir)
	if err != nil {
		return nil, err
	}
	ms, err := results.ReadMeasurements(dir)
	if err != nil {
		return nil, err
	}
	vs, err := results.ReadVerdictLog(dir)
	if err != nil {
		return nil, err
	}
	return &Run{Ref: RunRef{ID: r.ID, Path: dir, Start: r.Start}, Run: *r, Measurements: ms, Verdicts: vs}, nil
}

// Options restrict and tune a comparison.
type Options struct {
	Thresholds Thresholds
	// Plans restricts the comparison to these plans (all when empty).
	Plans []string
}

type caseKey struct{ plan, test, board, metric, params string }

func (k caseKey) less(o caseKey) bool {
	if k.plan != o.plan {
		return k.plan < o.plan
	}
	if k.test != o.test {
		return k.test < o.test
	}
	if k.board != o.board {
		return k.board < o.board
	}
	if k.metric != o.metric {
		return k.metric < o.metric
	}
	return k.params < o.params
}

// Compare compares run b with the earlier run a.
func Compare(a, b *Run, opts Options) *Result {
	want := map[string]bool{}
	for _, p := range opts.Plans {
		want[p] = true
	}
	inPlan := func(p string) bool { return len(want) == 0 || want[p] }
	res := &Result{Baselines: map[string]RunRef{}, B: b.Ref}
	plans := opts.Plans
	if len(plans) == 0 {
		plans = b.Run.Plans
		// Plans the earlier run had and this one has not: said, not
		// silently dropped.
		for _, p := range a.Run.Plans {
			if !contains(b.Run.Plans, p) {
				res.OnlyBefore = append(res.OnlyBefore, p)
			}
		}
	}
	for _, p := range plans {
		if contains(a.Run.Plans, p) {
			res.Baselines[p] = a.Ref
		} else {
			res.NoBaseline = append(res.NoBaseline, p)
		}
	}
	sort.Strings(res.OnlyBefore)
	sort.Strings(res.NoBaseline)

	statusOf := func(vs []results.Verdict) map[caseKey]results.Verdict {
		out := map[caseKey]results.Verdict{}
		for _, v := range vs {
			if !inPlan(v.Plan) {
				continue
			}
			k := caseKey{v.Plan, v.Test, v.Board, v.Metric, v.Params.String()}
			if old, ok := out[k]; !ok || rank(v.Status) < rank(old.Status) {
				out[k] = v
			}
		}
		return out
	}
	sa, sb := statusOf(a.Verdicts), statusOf(b.Verdicts)

	type agg struct {
		sum    float64
		n      int
		m      results.Measurement
		params results.Params
	}
	mean := func(ms []results.Measurement) map[caseKey]*agg {
		out := map[caseKey]*agg{}
		for _, m := range ms {
			if !inPlan(m.Plan) || m.Text != "" || math.IsNaN(m.Value) || math.IsInf(m.Value, 0) {
				continue
			}
			// The harness's own timings (how long programming took) say
			// nothing about the design and vary with the host's load.
			if strings.HasPrefix(m.Metric, "harness.") {
				continue
			}
			k := caseKey{m.Plan, m.Test, m.Board, m.Metric, m.Params.String()}
			g := out[k]
			if g == nil {
				g = &agg{m: m}
				out[k] = g
			}
			g.sum += m.Value
			g.n++
		}
		return out
	}
	ma, mb := mean(a.Measurements), mean(b.Measurements)
	for k, gb := range mb {
		ga, ok := ma[k]
		if !ok {
			continue
		}
		res.Compared++
		va, vb := ga.sum/float64(ga.n), gb.sum/float64(gb.n)
		th := opts.Thresholds.For(k.metric)
		rel := relChange(va, vb)
		if math.Abs(rel) <= th || rel == 0 {
			continue
		}
		res.Moved = append(res.Moved, Change{
			Plan: k.plan, Test: k.test, Board: k.board, Metric: k.metric, Params: gb.m.Params, Unit: gb.m.Unit,
			A: va, B: vb, Rel: rel, Threshold: th, Better: direction(k.metric, gb.m.Unit, va, vb, sa[k], sb[k]),
		})
	}
	sort.Slice(res.Moved, func(i, j int) bool {
		x, y := res.Moved[i], res.Moved[j]
		if (x.Better == "worse") != (y.Better == "worse") {
			return x.Better == "worse"
		}
		if math.Abs(x.Rel) != math.Abs(y.Rel) {
			return math.Abs(x.Rel) > math.Abs(y.Rel)
		}
		return caseKey{x.Plan, x.Test, x.Board, x.Metric, x.Params.String()}.less(caseKey{y.Plan, y.Test, y.Board, y.Metric, y.Params.String()})
	})

	for k, vb := range sb {
		va, had := sa[k]
		badB := vb.Status == results.Fail || vb.Status == results.Error
		badA := had && (va.Status == results.Fail || va.Status == results.Error)
		vc := VerdictChange{Plan: k.plan, Test: k.test, Board: k.board, Metric: k.metric, Params: vb.Params,
			Now: vb.Status, Message: vb.Message, Source: vb.Source, Expected: vb.Expected, Measured: measured(vb)}
		if had {
			vc.Was = va.Status
		}
		switch {
		case badB && badA:
			res.StillFailing++
		case badB:
			res.NewFails = append(res.NewFails, vc)
		case badA && vb.Status == results.Pass:
			vc.Message = va.Message
			res.Fixed = append(res.Fixed, vc)
		}
	}
	byKey := func(vs []VerdictChange) {
		sort.Slice(vs, func(i, j int) bool {
			x, y := vs[i], vs[j]
			return caseKey{x.Plan, x.Test, x.Board, x.Metric, x.Params.String()}.less(caseKey{y.Plan, y.Test, y.Board, y.Metric, y.Params.String()})
		})
	}
	byKey(res.NewFails)
	byKey(res.Fixed)
	return res
}

func measured(v results.Verdict) string {
	switch {
	case v.MeasuredText != "":
		return v.MeasuredText
	case v.Measured != nil:
		return strings.TrimSpace(fmt.Sprintf("%.6g %s", *v.Measured, v.Unit))
	}
	return ""
}

func rank(s results.Status) int {
	switch s {
	case results.Fail:
		return 0
	case results.Error:
		return 1
	case results.Pass:
		return 2
	}
	return 3
}

func relChange(a, b float64) float64 {
	if a == b {
		return 0
	}
	if a == 0 {
		return math.Copysign(math.Inf(1), b)
	}
	return (b - a) / math.Abs(a)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// direction says whether a move from a to b is for the better or the
// worse. The verdicts say it first: a case that started failing got worse
// and one that was fixed got better, whatever its unit (link credits that
// fell by 61% are worse because the credit check now fails). Then the
// golden value both runs were scored against: closer is better. Then the
// unit (better). "" when none of them tells.
func direction(metric, unit string, a, b float64, va, vb results.Verdict) string {
	good := func(v results.Verdict) bool { return v.Status == results.Pass }
	bad := func(v results.Verdict) bool { return v.Status == results.Fail || v.Status == results.Error }
	switch {
	case good(va) && bad(vb):
		return "worse"
	case bad(va) && good(vb):
		return "better"
	}
	if vb.ExpectedValue != nil {
		e := *vb.ExpectedValue
		switch da, db := math.Abs(a-e), math.Abs(b-e); {
		case db > da:
			return "worse"
		case db < da:
			return "better"
		}
	}
	return better(metric, unit, relChange(a, b))
}

// better says whether a change of sign rel is an improvement, from the
// metric's unit: throughput up is better, time up is worse.
func better(metric, unit string, rel float64) string {
	dir := 0
	u := strings.ToLower(unit)
	switch {
	case strings.HasSuffix(u, "/s") || u == "pps" || u == "mpps" || u == "%eff":
		dir = 1
	case u == "s" || u == "ms" || u == "us" || u == "µs" || u == "ns" || u == "ps" || u == "cycles":
		dir = -1
	}
	m := strings.ToLower(metric)
	switch {
	case strings.Contains(m, "drop") || strings.Contains(m, "error") || strings.Contains(m, "loss"):
		dir = -1
	}
	switch {
	case dir == 0:
		return ""
	case (rel > 0) == (dir > 0):
		return "better"
	}
	return "worse"
}

// Merge adds another plan's comparison into r.
func (r *Result) Merge(o *Result) {
	for p, ref := range o.Baselines {
		r.Baselines[p] = ref
	}
	r.Moved = append(r.Moved, o.Moved...)
	r.NewFails = append(r.NewFails, o.NewFails...)
	r.Fixed = append(r.Fixed, o.Fixed...)
	r.StillFailing += o.StillFailing
	r.Compared += o.Compared
	r.NoBaseline = append(r.NoBaseline, o.NoBaseline...)
	r.OnlyBefore = append(r.OnlyBefore, o.OnlyBefore...)
}

// Previous finds, for each plan of the run in dir, the latest earlier run
// of the same lab under root that ran that plan and finished. Plans with no
// such run are left out.
func Previous(root, dir string) (map[string]string, error) {
	cur, err := results.ReadRun(dir)
	if err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("listing results root %s: %w", root, err)
	}
	self, _ := filepath.Abs(dir)
	best := map[string]*results.Run{}
	bestDir := map[string]string{}
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		p := filepath.Join(root, e.Name())
		if abs, _ := filepath.Abs(p); abs == self {
			continue
		}
		r, err := results.ReadRun(p)
		if err != nil || r.Lab != cur.Lab || r.Status == "running" || !r.Start.Before(cur.Start) {
			continue
		}
		if r.Shard != cur.Shard {
			continue
		}
		for _, plan := range r.Plans {
			if b := best[plan]; b == nil || r.Start.After(b.Start) {
				best[plan] = r
				bestDir[plan] = p
			}
		}
	}
	out := map[string]string{}
	for _, plan := range cur.Plans {
		if d, ok := bestDir[plan]; ok {
			out[plan] = d
		}
	}
	return out, nil
}

// WithPrevious compares the run in dir with the previous run of each of
// its plans under root. Plans without a previous run are listed in
// NoBaseline.
func WithPrevious(root, dir string, th Thresholds) (*Result, error) {
	b, err := Load(dir)
	if err != nil {
		return nil, err
	}
	prev, err := Previous(root, dir)
	if err != nil {
		return nil, err
	}
	byDir := map[string][]string{}
	res := &Result{Baselines: map[string]RunRef{}, B: b.Ref}
	for _, plan := range b.Run.Plans {
		if d, ok := prev[plan]; ok {
			byDir[d] = append(byDir[d], plan)
		} else {
			res.NoBaseline = append(res.NoBaseline, plan)
		}
	}
	dirs := make([]string, 0, len(byDir))
	for d := range byDir {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	for _, d := range dirs {
		a, err := Load(d)
		if err != nil {
			return nil, fmt.Errorf("reading the previous run %s: %w", d, err)
		}
		res.Merge(Compare(a, b, Options{Thresholds: th, Plans: byDir[d]}))
	}
	return res, nil
}

// Save writes the comparison into a run directory (compare.json).
func Save(dir string, r *Result) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return results.WriteFileAtomic(filepath.Join(dir, File), append(b, '\n'))
}

// Read reads a run directory's compare.json; (nil, nil) when there is none.
func Read(dir string) (*Result, error) {
	b, err := os.ReadFile(filepath.Join(dir, File))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var r Result
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, File), err)
	}
	return &r, nil
}

// FormatRel renders a relative change: "+12.3%", "-inf%".
func FormatRel(rel float64) string {
	if math.IsInf(rel, 0) {
		if rel > 0 {
			return "+inf%"
		}
		return "-inf%"
	}
	return fmt.Sprintf("%+.1f%%", rel*100)
}

// WriteText prints the comparison for the nightly summary and `labrunner
// compare`: at most limit lines per section (0: no limit).
func (r *Result) WriteText(w io.Writer, limit int) {
	refs := map[string][]string{}
	for plan, ref := range r.Baselines {
		refs[ref.ID] = append(refs[ref.ID], plan)
	}
	ids := make([]string, 0, len(refs))
	for id := range refs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		sort.Strings(refs[id])
		fmt.Fprintf(w, "Compared with %s (plans %s): %d metrics in both runs.\n", id, strings.Join(refs[id], ", "), r.Compared)
	}
	if len(r.NoBaseline) > 0 {
		fmt.Fprintf(w, "No earlier run to compare with for plans %s.\n", strings.Join(r.NoBaseline, ", "))
	}
	if len(r.OnlyBefore) > 0 {
		fmt.Fprintf(w, "Plans in the earlier run but not in this one (nothing to compare): %s.\n", strings.Join(r.OnlyBefore, ", "))
	}
	if len(r.Baselines) == 0 {
		return
	}
	more := func(n int) bool { return limit > 0 && n >= limit }
	if len(r.Moved) > 0 {
		fmt.Fprintf(w, "Metrics that moved beyond their threshold (%d: %s):\n", len(r.Moved), r.Directions())
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for i, c := range r.Moved {
			if more(i) {
				fmt.Fprintf(tw, "  ... and %d more (see compare.json)\n", len(r.Moved)-i)
				break
			}
			name := results.Verdict{Test: c.Test, Params: c.Params}.Name()
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%.6g -> %.6g %s\t%s\t(threshold ±%g%%)\t%s\n", c.Plan, c.Board, name+" "+c.Metric, c.A, c.B, c.Unit, FormatRel(c.Rel), c.Threshold*100, c.Better)
		}
		tw.Flush()
	}
	list := func(title string, vs []VerdictChange) {
		if len(vs) == 0 {
			return
		}
		fmt.Fprintf(w, "%s (%d):\n", title, len(vs))
		for i, v := range vs {
			if more(i) {
				fmt.Fprintf(w, "  ... and %d more (see compare.json)\n", len(vs)-i)
				break
			}
			was := string(v.Was)
			if was == "" {
				was = "new"
			}
			fmt.Fprintf(w, "  %s %s %s: %s -> %s\n", v.Plan, v.Board, v.Name(), was, v.Now)
		}
	}
	list("New failures", r.NewFails)
	list("Fixed", r.Fixed)
	if r.Empty() {
		fmt.Fprintf(w, "Nothing moved beyond its threshold; no new failures, none fixed (%d still failing).\n", r.StillFailing)
	} else if r.StillFailing > 0 {
		fmt.Fprintf(w, "%d cases fail in both runs.\n", r.StillFailing)
	}
}
