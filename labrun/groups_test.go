package labrun

import (
	"testing"

	"github.com/labrunner/labrunner/labconfig"
)

func TestSelectPlansKeepsOnlyTheNamedOnes(t *testing.T) {
	lab := &labconfig.Lab{Plans: []labconfig.Plan{{Name: "a"}, {Name: "b"}, {Name: "c"}}}
	n := &Groups{Lab: lab, Plans: []string{"b"}}
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
	groups := GroupPlans(plans)
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
