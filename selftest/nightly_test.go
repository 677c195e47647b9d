package selftest

import (
	"context"
	"testing"

	"github.com/labrunner/labrunner/labconfig"
)

func TestSelectPlansKeepsOnlyTheNamedOnes(t *testing.T) {
	lab := &labconfig.Lab{Plans: []labconfig.Plan{{Name: "a"}, {Name: "b"}, {Name: "c"}}}
	n := &Nightly{Lab: lab, Plans: []string{"b"}}
	got, err := n.selectPlans()
	if err != nil || len(got) != 1 || got[0].Name != "b" {
		t.Fatalf("selectPlans(b) = %v, %v", got, err)
	}
	n.Plans = []string{"c", "zz"}
	if _, err := n.selectPlans(); err == nil {
		t.Fatal("an unknown plan name was accepted")
	}
}

func TestShardsCoverEveryGroupOnce(t *testing.T) {
	var plans []*labconfig.Plan
	for i, boards := range [][]string{{"a", "b"}, {"b"}, {"c"}, {"d", "e", "f"}, {"g"}, {"h", "i"}} {
		p := &labconfig.Plan{Name: string(rune('p' + i))}
		for _, b := range boards {
			p.Boards = append(p.Boards, labconfig.PlanBoard{Board: b})
		}
		plans = append(plans, p)
	}
	groups := groupPlans(plans)
	if len(groups) != 5 {
		t.Fatalf("%d groups, want 5 (plans sharing board b grouped)", len(groups))
	}
	for n := 1; n <= 6; n++ {
		seen := map[string]int{}
		for i := 1; i <= n; i++ {
			for _, g := range (Shard{i, n}).Select(groups) {
				for _, p := range g {
					seen[p.Name]++
				}
			}
		}
		if len(seen) != len(plans) {
			t.Errorf("%d shards cover %d of %d plans", n, len(seen), len(plans))
		}
		for p, c := range seen {
			if c != 1 {
				t.Errorf("%d shards: plan %s run %d times", n, p, c)
			}
		}
	}
	if _, err := ParseShard("3/2"); err == nil {
		t.Error("shard 3/2 accepted")
	}
}

// The progress bars' totals are the steps the runner reports: a design
// with a setup has one more (a TiN plan used to end at "step 17/16").
func TestStepsCountsTheSetup(t *testing.T) {
	plain := &labconfig.Plan{Design: "steps-test-plain", Tests: []labconfig.Test{{Name: "a"}, {Name: "b"}}}
	withSetup := &labconfig.Plan{Design: "steps-test-setup", Tests: plain.Tests}
	defer standInSetup(withSetup.Design, func(context.Context, *Env) error { return nil })()
	if got := Steps(plain, false); got != 5 {
		t.Errorf("plan without setup: %d steps, want health, bitstreams, program + 2 tests = 5", got)
	}
	if got := Steps(withSetup, false); got != 6 {
		t.Errorf("plan with setup: %d steps, want 6", got)
	}
	if got := Steps(withSetup, true); got != 7 {
		t.Errorf("plan with setup and the management check: %d steps, want 7", got)
	}
}
