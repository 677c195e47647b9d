package compare

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/labrunner/labrunner/results"
)

func meas(plan, test, board, metric, unit string, v float64, ps results.Params) results.Measurement {
	return results.Measurement{Plan: plan, Test: test, Board: board, Metric: metric, Unit: unit, Value: v, Params: ps}
}

func verdict(plan, test, board, metric string, s results.Status, ps results.Params) results.Verdict {
	return results.Verdict{Plan: plan, Test: test, Board: board, Metric: metric, Status: s, Params: ps}
}

func TestThresholdLookup(t *testing.T) {
	th := Thresholds{"exanet.rtt": 0.2, "exanet.*": 0.1, "exanet.link.*": 0.3, "*": 0.02}
	for metric, want := range map[string]float64{
		"exanet.rtt": 0.2, "exanet.bandwidth": 0.1, "exanet.link.credits": 0.3, "shoal.latency": 0.02,
	} {
		if got := th.For(metric); got != want {
			t.Errorf("threshold of %s = %g, want %g", metric, got, want)
		}
	}
	if got := Thresholds(nil).For("x"); got != DefaultThreshold {
		t.Errorf("no thresholds: %g, want the default %g", got, DefaultThreshold)
	}
}

func TestCompareFindsMovesNewFailuresAndFixes(t *testing.T) {
	p64 := results.Params{"payload": "64"}
	a := &Run{Ref: RunRef{ID: "A"}, Run: results.Run{Plans: []string{"mesh"}}, Measurements: []results.Measurement{
		meas("mesh", "bandwidth", "b0", "exanet.bandwidth", "Gb/s", 5.0, p64),
		meas("mesh", "bandwidth", "b1", "exanet.bandwidth", "Gb/s", 5.0, p64),
		meas("mesh", "latency", "b0", "exanet.rtt", "us", 1.0, p64),
		meas("mesh", "latency", "b0", "exanet.rtt", "us", 1.2, p64), // repeats are averaged: 1.1
		meas("mesh", "latency", "b1", "exanet.rtt", "us", 1.0, p64),
		meas("other", "latency", "b9", "exanet.rtt", "us", 1.0, p64),
	}, Verdicts: []results.Verdict{
		verdict("mesh", "bandwidth", "b0", "exanet.bandwidth", results.Pass, p64),
		verdict("mesh", "bandwidth", "b1", "exanet.bandwidth", results.Fail, p64),
		verdict("mesh", "latency", "b0", "exanet.rtt", results.Fail, p64),
		verdict("mesh", "links", "b0", "exanet.link.up", results.Pass, nil),
	}}
	b := &Run{Ref: RunRef{ID: "B"}, Run: results.Run{Plans: []string{"mesh"}}, Measurements: []results.Measurement{
		meas("mesh", "bandwidth", "b0", "exanet.bandwidth", "Gb/s", 4.0, p64), // -20 %: worse
		meas("mesh", "bandwidth", "b1", "exanet.bandwidth", "Gb/s", 5.1, p64), // +2 %: below threshold
		meas("mesh", "latency", "b0", "exanet.rtt", "us", 0.88, p64),          // -20 % vs 1.1: better
		meas("mesh", "latency", "b1", "exanet.rtt", "us", 1.3, p64),           // +30 % but rtt threshold 0.5
		meas("other", "latency", "b9", "exanet.rtt", "us", 9.0, p64),          // plan not compared
	}, Verdicts: []results.Verdict{
		verdict("mesh", "bandwidth", "b0", "exanet.bandwidth", results.Fail, p64),
		verdict("mesh", "bandwidth", "b1", "exanet.bandwidth", results.Pass, p64),
		verdict("mesh", "latency", "b0", "exanet.rtt", results.Fail, p64),
		verdict("mesh", "links", "b0", "exanet.link.up", results.Pass, nil),
		verdict("mesh", "dor_path", "b0", "exanet.dor_path", results.Error, nil),
	}}
	r := Compare(a, b, Options{Thresholds: Thresholds{"*": 0.1, "exanet.rtt": 0.5}, Plans: []string{"mesh"}})
	if len(r.Moved) != 1 || r.Moved[0].Board != "b0" || r.Moved[0].Metric != "exanet.bandwidth" || r.Moved[0].Better != "worse" || math.Abs(r.Moved[0].Rel+0.2) > 1e-9 {
		t.Fatalf("moved %+v, want the b0 bandwidth drop of 20%% only", r.Moved)
	}
	r2 := Compare(a, b, Options{Thresholds: Thresholds{"*": 0.1}, Plans: []string{"mesh"}})
	var rtt *Change
	for i := range r2.Moved {
		if r2.Moved[i].Metric == "exanet.rtt" && r2.Moved[i].Board == "b0" {
			rtt = &r2.Moved[i]
		}
	}
	if rtt == nil || rtt.Better != "better" || math.Abs(rtt.A-1.1) > 1e-9 {
		t.Errorf("rtt change %+v: want 1.1 -> 0.88 us, better", rtt)
	}
	if len(r2.Moved) != 3 || r2.Moved[0].Better != "worse" {
		t.Errorf("moves %+v: want 3, worse ones first", r2.Moved)
	}
	if len(r.NewFails) != 2 || r.NewFails[0].Test != "bandwidth" || r.NewFails[0].Was != results.Pass || r.NewFails[1].Test != "dor_path" || r.NewFails[1].Was != "" {
		t.Errorf("new failures %+v: want bandwidth on b0 (was pass) and dor_path (new)", r.NewFails)
	}
	if len(r.Fixed) != 1 || r.Fixed[0].Board != "b1" {
		t.Errorf("fixed %+v: want bandwidth on b1", r.Fixed)
	}
	if r.StillFailing != 1 {
		t.Errorf("still failing %d, want 1 (latency on b0)", r.StillFailing)
	}
	var buf bytes.Buffer
	r.WriteText(&buf, 0)
	for _, want := range []string{"Compared with A", "-20.0%", "worse", "New failures (2)", "pass -> fail", "Fixed (1)"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("text summary lacks %q:\n%s", want, buf.String())
		}
	}
}

func writeRunJSON(t *testing.T, dir string, r results.Run) {
	t.Helper()
	os.MkdirAll(dir, 0o755)
	b, _ := json.Marshal(r)
	if err := os.WriteFile(filepath.Join(dir, results.RunFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestPreviousPicksLatestEarlierRunPerPlan(t *testing.T) {
	root := t.TempDir()
	t0 := time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	writeRunJSON(t, filepath.Join(root, "r1"), results.Run{ID: "r1", Lab: "lab", Plans: []string{"p", "q"}, Start: t0, Status: "passed"})
	writeRunJSON(t, filepath.Join(root, "r2"), results.Run{ID: "r2", Lab: "lab", Plans: []string{"p"}, Start: t0.Add(day), Status: "failed"})
	writeRunJSON(t, filepath.Join(root, "r3"), results.Run{ID: "r3", Lab: "lab", Plans: []string{"p", "q"}, Start: t0.Add(2 * day), Status: "running"}) // crashed or still going
	writeRunJSON(t, filepath.Join(root, "r4"), results.Run{ID: "r4", Lab: "other", Plans: []string{"p", "q"}, Start: t0.Add(2 * day), Status: "passed"})
	writeRunJSON(t, filepath.Join(root, "now"), results.Run{ID: "now", Lab: "lab", Plans: []string{"p", "q", "new"}, Start: t0.Add(3 * day), Status: "failed"})
	writeRunJSON(t, filepath.Join(root, "later"), results.Run{ID: "later", Lab: "lab", Plans: []string{"p"}, Start: t0.Add(4 * day), Status: "passed"})
	prev, err := Previous(root, filepath.Join(root, "now"))
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(prev["p"]) != "r2" || filepath.Base(prev["q"]) != "r1" || prev["new"] != "" {
		t.Errorf("previous runs %v, want p:r2 q:r1 and none for new", prev)
	}
	r, err := WithPrevious(root, filepath.Join(root, "now"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Baselines["p"].ID != "r2" || r.Baselines["q"].ID != "r1" || len(r.NoBaseline) != 1 || r.NoBaseline[0] != "new" {
		t.Errorf("baselines %v, no baseline %v", r.Baselines, r.NoBaseline)
	}
	if err := Save(filepath.Join(root, "now"), r); err != nil {
		t.Fatal(err)
	}
	back, err := Read(filepath.Join(root, "now"))
	if err != nil || back.Baselines["p"].ID != "r2" {
		t.Errorf("compare.json read back: %+v, %v", back, err)
	}
	if none, err := Read(filepath.Join(root, "r1")); none != nil || err != nil {
		t.Errorf("Read without compare.json: %v, %v", none, err)
	}
}
