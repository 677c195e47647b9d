package labrun

import (
	"fmt"
	"sort"

	"github.com/labrunner/labrunner/labconfig"
)

// Shard is one lab host's share of a nightly: Index of Count, 1-based.
type Shard struct{ Index, Count int }

// ParseShard parses "i/n".
func ParseShard(s string) (Shard, error) {
	var sh Shard
	if _, err := fmt.Sscanf(s, "%d/%d", &sh.Index, &sh.Count); err != nil || sh.Count < 1 || sh.Index < 1 || sh.Index > sh.Count {
		return Shard{}, fmt.Errorf("--shard %q: write i/n with 1 <= i <= n (e.g. 2/3)", s)
	}
	return sh, nil
}

func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Count) }

// Select keeps this shard's board groups. Every host computes the same
// assignment from the lab alone: groups sorted by size (boards) and then by
// their first plan's name are dealt, largest first, to the shard with the
// fewest boards so far (lowest index on ties), so n hosts cover the rack
// exactly once with balanced work.
func (s Shard) Select(groups [][]*labconfig.Plan) [][]*labconfig.Plan {
	type gi struct {
		g    []*labconfig.Plan
		size int
		name string
	}
	var all []gi
	for _, g := range groups {
		all = append(all, gi{g, len(groupBoards(g)), g[0].Name})
	}
	sort.SliceStable(all, func(i, j int) bool {
		if all[i].size != all[j].size {
			return all[i].size > all[j].size
		}
		return all[i].name < all[j].name
	})
	load := make([]int, s.Count)
	var out [][]*labconfig.Plan
	for _, g := range all {
		best := 0
		for i := range load {
			if load[i] < load[best] {
				best = i
			}
		}
		load[best] += g.size
		if best == s.Index-1 {
			out = append(out, g.g)
		}
	}
	return out
}
