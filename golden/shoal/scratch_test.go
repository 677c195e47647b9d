package shoal

import (
	"fmt"
	"testing"
)

func TestScratch(t *testing.T) {
	for _, k := range []ScheduleKind{Cyclic, PropagationAware} {
		c := Prototype()
		c.Schedule = k
		r, err := Incast(c, 7, 7, 0, SimOptions{})
		fmt.Println(k, r, err, c.EpochNS(), c.PropNS, c.DelaySlots())
		for _, sc := range []int{12, 24, 48, 96, 192, 384, 768, 1536} {
			c.SlotNS = float64(sc) * CycleNS
			p, err := Permutation(c, 8, 1, 50, 400)
			lp, _ := MaxFeedbackLoop(c, mustSched(c))
			fmt.Println(sc, p, err, lp)
		}
	}
}
func mustSched(c Config) *Schedule { s, _ := NewSchedule(c.Nodes, c.Channels, c.Schedule); return s }
