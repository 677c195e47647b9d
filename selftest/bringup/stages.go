package bringup

import (
	"fmt"
	"strings"
	"time"

	"github.com/labrunner/labrunner/labconfig"
)

// Stage is one step of a board's bring-up, in the order a person at the
// bench takes them.
type Stage int

const (
	StagePower Stage = iota
	StageProgram
	StageIdentity
	StageScratch
	StageLinks
	StageBootstrap
	StageTimeSync
	StageLoopback
	numStages
)

var stageNames = [...]string{"power", "program", "identity", "scratch", "links", "bootstrap", "timesync", "loopback"}

var stageDocs = [...]string{
	"switch the board on; its register bus and management block answer",
	"check the design's bitstream against the board's part and load it",
	"ID registers: the design's ID and VERSION, the management block's MGMT_ID, DNA and port count",
	"scratch registers hold every test pattern (data lines, bus integrity)",
	"every cable of the lab file carries ordered sets (PORT_STATUS: CABLED, CHANNEL_UP)",
	"addresses and routes in waves from the DCN boards over MOS/PMOS (Aquila §4.4)",
	"TimeSync tree from the primary, per-link delay calibration, offsets within the golden bound (Aquila App. B)",
	"management traffic over every cable and back, bit for bit (ECHO over PMOS)",
}

func (s Stage) String() string {
	if s < 0 || s >= numStages {
		return fmt.Sprintf("stage%d", int(s))
	}
	return stageNames[s]
}

// Doc says what the stage checks.
func (s Stage) Doc() string {
	if s < 0 || s >= numStages {
		return ""
	}
	return stageDocs[s]
}

// Stages lists every stage in order.
func Stages() []Stage {
	out := make([]Stage, numStages)
	for i := range out {
		out[i] = Stage(i)
	}
	return out
}

// ParseStage reads a stage name.
func ParseStage(s string) (Stage, error) {
	for i, n := range stageNames {
		if strings.EqualFold(strings.TrimSpace(s), n) {
			return Stage(i), nil
		}
	}
	return 0, fmt.Errorf("no stage %q (stages: %s)", s, strings.Join(stageNames[:], ", "))
}

// MarshalText renders the stage's name (JSON).
func (s Stage) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads a stage's name (a JSON report read back).
func (s *Stage) UnmarshalText(b []byte) error {
	v, err := ParseStage(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// Deadlines bound each stage in wall time: the whole stage, every board
// included. Management time inside a stage is bounded separately (mgmt.md
// §7: 20 ms per request, 50 ms for a firmware to boot).
type Deadlines [numStages]time.Duration

// DefaultDeadlines derives the stage deadlines from the lab file's.
func DefaultDeadlines(d labconfig.Deadlines) Deadlines {
	def := labconfig.DefaultDeadlines
	pick := func(v, fallback time.Duration) time.Duration {
		if v > 0 {
			return v
		}
		return fallback
	}
	test := pick(d.Test, def.Test)
	return Deadlines{
		StagePower:     pick(d.Power, def.Power) + pick(d.Console, def.Console),
		StageProgram:   pick(d.Program, def.Program),
		StageIdentity:  test / 2,
		StageScratch:   test,
		StageLinks:     test / 2,
		StageBootstrap: test,
		StageTimeSync:  test,
		StageLoopback:  test,
	}
}

// Set reads "stage=duration" and sets that stage's deadline.
func (d *Deadlines) Set(s string) error {
	name, dur, ok := strings.Cut(s, "=")
	if !ok {
		return fmt.Errorf("deadline %q: write STAGE=DURATION, e.g. bootstrap=3m", s)
	}
	st, err := ParseStage(name)
	if err != nil {
		return fmt.Errorf("deadline %q: %w", s, err)
	}
	v, err := time.ParseDuration(strings.TrimSpace(dur))
	if err != nil || v <= 0 {
		return fmt.Errorf("deadline %q: %q is not a positive duration (e.g. 90s)", s, dur)
	}
	d[st] = v
	return nil
}

// Status of a stage on a board.
type Status string

const (
	Passed  Status = "ok"
	Failed  Status = "failed"
	Blocked Status = "blocked" // an earlier stage failed: not run
	Skipped Status = "skipped" // before --from, or nothing to do (no design, no cable)
)

// StageResult is what one stage found on one board.
type StageResult struct {
	Stage  Stage  `json:"stage"`
	Status Status `json:"status"`
	// Summary is one line for the live output and the table.
	Summary string `json:"summary,omitempty"`
	// Diagnosis of a failure: what was expected, what was seen, what to
	// check on the bench.
	Expected string        `json:"expected,omitempty"`
	Seen     string        `json:"seen,omitempty"`
	Check    string        `json:"check,omitempty"`
	Class    string        `json:"class,omitempty"` // infrastructure, design, setup
	Duration time.Duration `json:"duration_ns"`
}

// Diagnosis renders a failure for a person.
func (r *StageResult) Diagnosis() string {
	var parts []string
	if r.Expected != "" {
		parts = append(parts, "expected "+r.Expected)
	}
	if r.Seen != "" {
		parts = append(parts, "seen "+r.Seen)
	}
	if r.Check != "" {
		parts = append(parts, "check "+r.Check)
	}
	return strings.Join(parts, "; ")
}
