package results

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Merge builds one run directory at into from the run directories of the
// shards of one nightly (each a host's share, --shard i/n): their verdicts,
// measurements and expectations side by side (one copy of each step when a
// shard was resumed), a run.json that covers them all, verdicts.json and
// junit.xml. Reports and exports then treat it as one run. into must not
// exist yet: merging never overwrites a run.
func Merge(into string, dirs []string) (*Run, error) {
	if len(dirs) == 0 {
		return nil, errors.New("merge: no run directories given")
	}
	if _, err := os.Stat(into); err == nil {
		return nil, fmt.Errorf("merge: %s exists already; give a new directory", into)
	}
	var runs []*Run
	var vs []Verdict
	var ms []Measurement
	var exps [][]byte
	planDir := map[string]string{}
	for _, d := range dirs {
		r, err := ReadRun(d)
		if err != nil {
			return nil, err
		}
		if len(runs) > 0 && r.Lab != runs[0].Lab {
			return nil, fmt.Errorf("merge: %s is a run of lab %q, %s of lab %q", d, r.Lab, dirs[0], runs[0].Lab)
		}
		runs = append(runs, r)
		v, err := ReadVerdictLog(d)
		if err != nil {
			return nil, err
		}
		// Shards cover disjoint board groups: a plan in two of them means
		// the same share ran twice (a --shard given twice).
		here := map[string]bool{}
		for _, x := range v {
			here[x.Plan] = true
		}
		for p := range here {
			if other, dup := planDir[p]; dup {
				return nil, fmt.Errorf("merge: plan %s has verdicts in both %s and %s: the shards overlap", p, other, d)
			}
			planDir[p] = d
		}
		vs = append(vs, v...)
		m, err := ReadMeasurements(d)
		if err != nil {
			return nil, err
		}
		ms = append(ms, m...)
		e, err := os.ReadFile(filepath.Join(d, ExpectationsFile))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		exps = append(exps, e)
	}
	merged := Run{
		ID: filepath.Base(into), Lab: runs[0].Lab, LabFile: runs[0].LabFile, Host: "merged", Seed: runs[0].Seed,
		Versions: runs[0].Versions, Start: runs[0].Start, Status: "merged",
	}
	plans := map[string]bool{}
	var shards []string
	var end time.Time
	for i, r := range runs {
		for _, p := range r.Plans {
			plans[p] = true
		}
		merged.Bitstreams = append(merged.Bitstreams, r.Bitstreams...)
		merged.Faults = append(merged.Faults, r.Faults...)
		if r.Start.Before(merged.Start) {
			merged.Start = r.Start
		}
		if r.End != nil && r.End.After(end) {
			end = *r.End
		}
		s := r.Shard
		if s == "" {
			s = "all"
		}
		shards = append(shards, fmt.Sprintf("%s (%s on %s)", s, filepath.Base(dirs[i]), r.Host))
		if r.ExitCode > merged.ExitCode {
			merged.ExitCode = r.ExitCode
		}
	}
	for p := range plans {
		merged.Plans = append(merged.Plans, p)
	}
	sort.Strings(merged.Plans)
	merged.Shard = strings.Join(shards, "; ")
	if !end.IsZero() {
		merged.End = &end
	}
	sum := Summarize(vs)
	merged.Summary = &sum

	if err := os.MkdirAll(into, 0o755); err != nil {
		return nil, err
	}
	writeLines := func(name string, each func(w *bufio.Writer) error) error {
		f, err := os.Create(filepath.Join(into, name))
		if err != nil {
			return err
		}
		w := bufio.NewWriter(f)
		if err := each(w); err != nil {
			f.Close()
			return err
		}
		if err := w.Flush(); err != nil {
			f.Close()
			return err
		}
		return errors.Join(f.Sync(), f.Close())
	}
	enc := func(w *bufio.Writer, v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		w.Write(b)
		return w.WriteByte('\n')
	}
	// The merged logs keep no step/attempt: each shard's view is already
	// one copy per step.
	if err := writeLines(VerdictsLogFile, func(w *bufio.Writer) error {
		for _, v := range vs {
			v.Step, v.Attempt = "", 0
			if err := enc(w, v); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return nil, err
	}
	if err := writeLines(MeasurementsFile, func(w *bufio.Writer) error {
		for _, m := range ms {
			m.Step, m.Attempt = "", 0
			if err := enc(w, m); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return nil, err
	}
	if err := writeLines(ExpectationsFile, func(w *bufio.Writer) error {
		for _, e := range exps {
			if len(e) > 0 && e[len(e)-1] != '\n' {
				e = append(e, '\n')
			}
			w.Write(e)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	b, err := json.MarshalIndent(struct {
		Summary  Summary   `json:"summary"`
		Verdicts []Verdict `json:"verdicts"`
	}{sum, SortVerdicts(vs)}, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := WriteFileAtomic(filepath.Join(into, VerdictsFile), append(b, '\n')); err != nil {
		return nil, err
	}
	junit, err := JUnit(merged, vs)
	if err != nil {
		return nil, err
	}
	if err := WriteFileAtomic(filepath.Join(into, JUnitFile), junit); err != nil {
		return nil, err
	}
	rb, err := json.MarshalIndent(merged, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := WriteFileAtomic(filepath.Join(into, RunFile), append(rb, '\n')); err != nil {
		return nil, err
	}
	return &merged, nil
}
