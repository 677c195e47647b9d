package selftest

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/labrunner/labrunner/labconfig"
)

// TargetsParam is the test parameter that says which boards a per-target
// test (ordering, fallback, a victim of incast ...) runs on: "all" (every
// board of the plan, the default), a number k (k boards a night, taken in
// turn so that every board is covered every ceil(n/k) nights), or a list
// of board names. A fault on one board must not escape because a test
// only ever targets the plan's last board.
const TargetsParam = "targets"

// Targets is the targets parameter (TargetsParam): a per-target test
// embeds it in its parameter struct, and Env.Targets reads it. Left unset
// it means every board.
type Targets struct {
	Targets []string `param:"targets" default:"all" doc:"all (every board), k (k boards a night in rotation: every board within ceil(n/k) nights), or board names"`
}

func (t Targets) targetList() []string { return t.Targets }

// targeted is a parameter struct that embeds Targets.
type targeted interface{ targetList() []string }

// Rotation is the set of boards a per-target test covers tonight.
type Rotation struct {
	Boards []string
	// Night and Nights: tonight is night Night of an Nights-night
	// rotation (0 of 1 when every board runs every night).
	Night, Nights int
}

// String describes the rotation for a measurement's text.
func (r Rotation) String() string {
	if r.Nights <= 1 {
		return "every board every night"
	}
	return fmt.Sprintf("night %d of a %d-night rotation over every board", r.Night+1, r.Nights)
}

// Targets resolves the targets parameter of the running test against the
// boards the test could target (in plan order): every one by default.
// now decides tonight's share of a rotation (days since the Unix epoch,
// UTC): a test passes the plan's start (Env.PlanStart), as its declared
// cases do (CasePlan.Start), so that both name the same boards.
func (e *Env) Targets(all []string, now time.Time) (Rotation, error) {
	tp, ok := e.params.(targeted)
	if !ok {
		return Rotation{}, fmt.Errorf("test %s: its parameters (%T) do not embed selftest.Targets", e.Test.Name, e.params)
	}
	rot, err := rotate(e.Test, tp.targetList(), all, now)
	if err == nil && rot.Nights > 1 {
		// The run's log says which share of the rotation ran.
		e.Log.Info("targets tonight", "test", e.Test.Name, "boards", strings.Join(rot.Boards, ","), "rotation", rot.String())
	}
	return rot, err
}

// TargetsOf resolves the targets parameter of a test's decoded parameters
// (a struct that embeds Targets) as Env.Targets does, for the test's
// declared cases (RegisterCases): all are the plan's boards the test could
// target, now the plan's start (CasePlan.Start).
func TargetsOf(cp CasePlan, all []string) (Rotation, error) {
	tp, ok := cp.Params.(targeted)
	if !ok {
		return Rotation{}, fmt.Errorf("test %s: its parameters (%T) do not embed selftest.Targets", cp.Test.Name, cp.Params)
	}
	return rotate(cp.Test, tp.targetList(), all, cp.Start)
}

// rotate is the rotation the targets parameter v gives over all.
func rotate(t labconfig.Test, v, all []string, now time.Time) (Rotation, error) {
	if len(v) == 0 {
		v = []string{"all"}
	}
	if len(all) == 0 {
		return Rotation{}, fmt.Errorf("%s: test %s: no board to target", t.Pos, t.Name)
	}
	if len(v) == 1 && v[0] == "all" {
		return Rotation{Boards: append([]string(nil), all...), Nights: 1}, nil
	}
	if len(v) == 1 {
		if k, err := strconv.Atoi(v[0]); err == nil {
			if k < 1 {
				return Rotation{}, fmt.Errorf("%s: test %s: %s %d: want at least one board a night", t.Pos, t.Name, TargetsParam, k)
			}
			if k >= len(all) {
				return Rotation{Boards: append([]string(nil), all...), Nights: 1}, nil
			}
			nights := (len(all) + k - 1) / k
			night := int(now.UTC().Unix()/86400) % nights
			var out []string
			for i := 0; i < k; i++ {
				out = append(out, all[(night*k+i)%len(all)])
			}
			return Rotation{Boards: out, Night: night, Nights: nights}, nil
		}
	}
	in := map[string]bool{}
	for _, b := range all {
		in[b] = true
	}
	for _, b := range v {
		if !in[b] {
			return Rotation{}, fmt.Errorf("%s: test %s: %s names %q, which is not a board of the plan (%s)", t.Pos, t.Name, TargetsParam, b, strings.Join(all, ", "))
		}
	}
	return Rotation{Boards: v, Nights: 1}, nil
}
