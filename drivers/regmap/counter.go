package regmap

import (
	"errors"
	"fmt"

	"github.com/labrunner/labrunner/bitstreams"
)

// ErrSaturated is returned (wrapped) by Counter.Delta when a saturating
// counter is at its maximum: the true count is at least the delta given.
var ErrSaturated = errors.New("counter saturated")

// Delta returns how far a wrap-around counter of width bits (1..32; 32 when
// out of range) advanced from prev to cur, counting modulo 2^width: right
// as long as it wrapped at most once between the two readings.
func Delta(prev, cur uint32, width int) uint64 {
	return (uint64(cur) - uint64(prev)) & widthMask(width)
}

// Saturated reports whether v is the maximum of a width-bit counter, where
// a saturating counter sticks.
func Saturated(v uint32, width int) bool { return uint64(v) == widthMask(width) }

func widthMask(width int) uint64 {
	if width <= 0 || width > 32 {
		width = 32
	}
	return uint64(1)<<uint(width) - 1
}

// Counter is what a register map says about a counting register, so that
// two readings can be turned into a count (docs/architecture.md: counters describe
// themselves).
type Counter struct {
	Name string // the register (the low half of a 64-bit counter)
	bitstreams.Counter
	// Width in bits: the register's width, or 64 for a counter with a Hi
	// register (read it with Read64).
	Width int
}

// Counter returns the description of the counter register name (NAME or
// NAME[i]).
func (r *Regs) Counter(name string) (Counter, error) {
	loc, err := r.Lookup(name)
	if err != nil {
		return Counter{}, err
	}
	if loc.Field != nil || loc.Reg.Counter == nil {
		return Counter{}, r.setup("counter "+name, "only registers with a counter: entry in the map count",
			fmt.Errorf("%s is not a counter (%s)", loc.Name, r.where(loc.Reg)))
	}
	c := Counter{Name: loc.Name, Counter: *loc.Reg.Counter, Width: regWidth(loc.Reg)}
	if c.Hi != "" {
		c.Width = 64
	}
	return c, nil
}

// Max is the largest value the counter holds.
func (c Counter) Max() uint64 {
	if c.Width >= 64 {
		return ^uint64(0)
	}
	return widthMask(c.Width)
}

// Saturated reports whether v is stuck at the maximum of a saturating
// counter.
func (c Counter) Saturated(v uint64) bool { return c.Rollover == "saturate" && v == c.Max() }

// Delta turns two readings, prev then cur, into the count between them.
// A wrapping counter (or one whose rollover is not given) counts modulo
// 2^width. A saturating counter gives cur-prev; at its maximum the error
// wraps ErrSaturated and the delta is a lower bound, and a cur below prev
// means it was cleared in between, which is an error. A counter that holds
// the last value of something (accumulation "last") has no delta.
func (c Counter) Delta(prev, cur uint64) (uint64, error) {
	if c.Accumulation == "last" {
		return 0, fmt.Errorf("counter %s holds the last value, not a running total: use the reading itself", c.Name)
	}
	m := c.Max()
	if prev > m || cur > m {
		return 0, fmt.Errorf("counter %s: reading 0x%x or 0x%x exceeds its %d bits", c.Name, prev, cur, c.Width)
	}
	if c.Rollover != "saturate" {
		return (cur - prev) & m, nil
	}
	if cur < prev {
		return 0, fmt.Errorf("counter %s went back from %d to %d: it was cleared (read-to-clear or reset) between the readings", c.Name, prev, cur)
	}
	if cur == m {
		return cur - prev, fmt.Errorf("counter %s: %w at %d (%s): the count is at least %d", c.Name, ErrSaturated, cur, c.Unit, cur-prev)
	}
	return cur - prev, nil
}
