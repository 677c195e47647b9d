package results

import (
	"fmt"
	"path/filepath"
	"time"
)

// ProgressFile records, as JSON lines, each plan step a run finished.
const ProgressFile = "progress.jsonl"

// Step kinds.
const (
	// KindTest: a test of a plan; once done it is never run again in the
	// same run directory.
	KindTest = "test"
	// KindSetup: programming and design setup; rerun on every resume (the
	// hardware's state after a crash is unknown), the latest attempt counts.
	KindSetup = "setup"
)

// Progress says that a step finished in an attempt.
type Progress struct {
	Time    time.Time `json:"time"`
	Step    string    `json:"step"`
	Kind    string    `json:"kind"`
	Attempt int       `json:"attempt"`
}

// ReadProgress reads progress.jsonl.
func ReadProgress(dir string) ([]Progress, error) {
	return decodeLines[Progress](filepath.Join(dir, ProgressFile))
}

// view decides which attempt's records of each step a run directory shows:
// for a test, the attempt that finished it (a test is never rerun once
// finished); for a setup step, the latest attempt that finished it; for a
// step finished by no attempt, the latest attempt that recorded anything for
// it (the partial evidence of a crashed run is kept, once).
type view struct {
	chosen map[string]int
}

func newView(progress []Progress) *view {
	v := &view{chosen: map[string]int{}}
	for _, p := range progress {
		cur, seen := v.chosen[p.Step]
		switch {
		case !seen:
			v.chosen[p.Step] = p.Attempt
		case p.Kind == KindSetup && p.Attempt > cur:
			v.chosen[p.Step] = p.Attempt
		case p.Kind == KindTest && p.Attempt < cur:
			v.chosen[p.Step] = p.Attempt
		}
	}
	return v
}

// latest fills in, for steps no attempt finished, the latest attempt that
// has records.
func (v *view) latest(step string, attempt int, unfinished map[string]int) {
	if _, done := v.chosen[step]; done {
		return
	}
	if a, ok := unfinished[step]; !ok || attempt > a {
		unfinished[step] = attempt
	}
}

func (v *view) keep(step string, attempt int, unfinished map[string]int) bool {
	if step == "" {
		return true
	}
	if a, ok := v.chosen[step]; ok {
		return a == attempt
	}
	return unfinished[step] == attempt
}

func filterVerdicts(vs []Verdict, progress []Progress) []Verdict {
	if !anyResumed(len(vs), func(i int) int { return vs[i].Attempt }) {
		return vs // a run never resumed has one attempt: nothing to filter
	}
	v := newView(progress)
	unfinished := map[string]int{}
	for _, x := range vs {
		v.latest(x.Step, x.Attempt, unfinished)
	}
	out := make([]Verdict, 0, len(vs))
	for _, x := range vs {
		if v.keep(x.Step, x.Attempt, unfinished) {
			out = append(out, x)
		}
	}
	return out
}

func filterMeasurements(ms []Measurement, progress []Progress) []Measurement {
	if !anyResumed(len(ms), func(i int) int { return ms[i].Attempt }) {
		return ms
	}
	v := newView(progress)
	unfinished := map[string]int{}
	for _, x := range ms {
		v.latest(x.Step, x.Attempt, unfinished)
	}
	out := make([]Measurement, 0, len(ms))
	for _, x := range ms {
		if v.keep(x.Step, x.Attempt, unfinished) {
			out = append(out, x)
		}
	}
	return out
}

// anyResumed reports whether any record comes from an attempt after the
// first: only then can a step have records from two attempts.
func anyResumed(n int, attempt func(int) int) bool {
	for i := 0; i < n; i++ {
		if attempt(i) > 0 {
			return true
		}
	}
	return false
}

// Attempt is the attempt this Dir writes: 0 for a new run, one more than
// the highest on disk for a resumed one.
func (d *Dir) Attempt() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.attempt
}

// MarkDone records that a step finished in this attempt.
func (d *Dir) MarkDone(step, kind string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	// The step's lines reach the disk before the line that says it is done.
	if err := d.syncData(); err != nil {
		return err
	}
	p := Progress{Time: time.Now(), Step: step, Kind: kind, Attempt: d.attempt}
	d.progress = append(d.progress, p)
	if err := appendLine(d.prog, p); err != nil {
		return err
	}
	return d.prog.Sync()
}

// Done reports whether a test step was finished by an earlier attempt (or
// this one): a resumed run skips it.
func (d *Dir) Done(step string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, p := range d.progress {
		if p.Step == step && p.Kind == KindTest {
			return true
		}
	}
	return false
}

// resumeState loads what Open needs to go on: the progress and the next
// attempt number.
func (d *Dir) resumeState() error {
	ps, err := ReadProgress(d.Path)
	if err != nil {
		return fmt.Errorf("resuming %s: %w", d.Path, err)
	}
	d.progress = ps
	max := -1
	for _, p := range ps {
		if p.Attempt > max {
			max = p.Attempt
		}
	}
	for _, v := range d.all {
		if v.Attempt > max {
			max = v.Attempt
		}
	}
	ms, err := readMeasurementsRaw(d.Path)
	if err != nil {
		return fmt.Errorf("resuming %s: %w", d.Path, err)
	}
	for _, m := range ms {
		if m.Attempt > max {
			max = m.Attempt
		}
	}
	d.attempt = max + 1
	return nil
}
