package compare

import (
	"bytes"
	"strings"
	"testing"

	"github.com/labrunner/labrunner/results"
)

// Link credits that fell 61% are a move for the worse although a credit
// count has no direction of its own: the credit check that passed now
// fails. A value that came closer to its golden value is better, one that
// went away from it worse; the summary counts every kind and says how
// many moves have no known direction.
func TestDirectionFromVerdictsAndGolden(t *testing.T) {
	ps := results.Params{"link": "exa-00:sfp0", "payload": "128"}
	gold := func(v results.Verdict, e float64) results.Verdict { v.ExpectedValue = &e; return v }
	a := &Run{Ref: RunRef{ID: "A"}, Run: results.Run{Plans: []string{"mesh"}}, Measurements: []results.Measurement{
		meas("mesh", "bandwidth.credits", "exa-00", "exanet.link.credits_after", "words", 1024, ps),
		meas("mesh", "fairness", "nic0", "shoal.fair_rate", "fraction", 0.12, nil),
		meas("mesh", "fairness", "nic1", "shoal.fair_rate", "fraction", 0.14, nil),
		meas("mesh", "queue", "nic0", "shoal.queue_bound", "flows", 2, nil),
	}, Verdicts: []results.Verdict{
		verdict("mesh", "bandwidth.credits", "exa-00", "exanet.link.credits_after", results.Pass, ps),
		gold(verdict("mesh", "fairness", "nic0", "shoal.fair_rate", results.Pass, nil), 0.143),
		gold(verdict("mesh", "fairness", "nic1", "shoal.fair_rate", results.Pass, nil), 0.143),
		verdict("mesh", "queue", "nic0", "shoal.queue_bound", results.Pass, nil),
	}}
	b := &Run{Ref: RunRef{ID: "B"}, Run: results.Run{Plans: []string{"mesh"}}, Measurements: []results.Measurement{
		meas("mesh", "bandwidth.credits", "exa-00", "exanet.link.credits_after", "words", 400, ps),
		meas("mesh", "fairness", "nic0", "shoal.fair_rate", "fraction", 0.14, nil), // closer to 0.143
		meas("mesh", "fairness", "nic1", "shoal.fair_rate", "fraction", 0.12, nil), // further from it
		meas("mesh", "queue", "nic0", "shoal.queue_bound", "flows", 3, nil),
	}, Verdicts: []results.Verdict{
		verdict("mesh", "bandwidth.credits", "exa-00", "exanet.link.credits_after", results.Fail, ps),
		gold(verdict("mesh", "fairness", "nic0", "shoal.fair_rate", results.Pass, nil), 0.143),
		gold(verdict("mesh", "fairness", "nic1", "shoal.fair_rate", results.Pass, nil), 0.143),
		verdict("mesh", "queue", "nic0", "shoal.queue_bound", results.Pass, nil),
	}}
	r := Compare(a, b, Options{})
	want := map[string]string{"exa-00": "worse", "nic0 shoal.fair_rate": "better", "nic1 shoal.fair_rate": "worse", "nic0 shoal.queue_bound": ""}
	for _, c := range r.Moved {
		key := c.Board + " " + c.Metric
		if c.Board == "exa-00" {
			key = "exa-00"
		}
		if got, ok := want[key]; !ok || got != c.Better {
			t.Errorf("%s moved %g -> %g: %q, want %q", key, c.A, c.B, c.Better, got)
		}
		delete(want, key)
	}
	if len(want) > 0 {
		t.Errorf("not reported as moved: %v", want)
	}
	if r.Worse() != 2 || r.Better() != 1 {
		t.Errorf("%d worse, %d better; want 2 and 1", r.Worse(), r.Better())
	}
	var buf bytes.Buffer
	r.WriteText(&buf, 0)
	if !strings.Contains(buf.String(), "(4: 2 worse, 1 better, 1 with no known direction)") {
		t.Errorf("summary:\n%s", buf.String())
	}
}

// Plans on one side only are named: the earlier run's plans this run did
// not run, and this run's plans the earlier one did not have (not given a
// baseline they never had).
func TestPlansOnOneSide(t *testing.T) {
	a := &Run{Ref: RunRef{ID: "A"}, Run: results.Run{Plans: []string{"mesh", "shoal"}}}
	b := &Run{Ref: RunRef{ID: "B"}, Run: results.Run{Plans: []string{"mesh", "tin"}}}
	r := Compare(a, b, Options{})
	if len(r.OnlyBefore) != 1 || r.OnlyBefore[0] != "shoal" || len(r.NoBaseline) != 1 || r.NoBaseline[0] != "tin" {
		t.Errorf("only before %v, no baseline %v; want shoal and tin", r.OnlyBefore, r.NoBaseline)
	}
	if _, ok := r.Baselines["tin"]; ok || r.Baselines["mesh"].ID != "A" {
		t.Errorf("baselines %v: want mesh only", r.Baselines)
	}
	var buf bytes.Buffer
	r.WriteText(&buf, 0)
	for _, want := range []string{"No earlier run to compare with for plans tin.", "Plans in the earlier run but not in this one (nothing to compare): shoal."} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, buf.String())
		}
	}
}
