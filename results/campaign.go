package results

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// CampaignFile is the fault campaign's result in the run directory of its
// baseline (labrunner faults campaign).
const CampaignFile = "campaign.json"

// Outcomes of a campaign entry.
const (
	Caught     = "caught"      // a fault that is not benign failed the run
	Escaped    = "escaped"     // a fault that is not benign, and every verdict passed
	Absorbed   = "absorbed"    // a benign fault, and the run passed
	FalseAlarm = "false-alarm" // a benign fault failed the run
)

// Campaign is a fault campaign: the plans run once without a fault (the
// baseline) and once per fault and target.
type Campaign struct {
	Lab   string    `json:"lab"`
	Plans []string  `json:"plans"`
	Start time.Time `json:"start"`
	// WallSeconds is the whole campaign's wall time.
	WallSeconds float64 `json:"wall_seconds"`
	// Targets: "all" (every target each fault can name) or "rotation"
	// (one target per fault and plan, chosen by Night: over as many
	// nights as a fault has targets, every target is covered).
	Targets string `json:"targets"`
	Night   int    `json:"night"`
	// Rounds: faults of different board groups run together, one per
	// group and round.
	Rounds   int             `json:"rounds"`
	Baseline []CampaignPlan  `json:"baseline"`
	Entries  []CampaignEntry `json:"entries"`
}

// CampaignPlan is a plan's baseline run.
type CampaignPlan struct {
	Plan        string  `json:"plan"`
	ExitCode    int     `json:"exit_code"`
	Status      string  `json:"status"`
	Failing     int     `json:"failing"` // test cases that did not pass without a fault
	WallSeconds float64 `json:"wall_seconds"`
	RunDir      string  `json:"run_dir"`
}

// CampaignEntry is one fault on one target.
type CampaignEntry struct {
	Fault  string   `json:"fault"`  // as --fault takes it: NAME@TARGET[,k=v]
	Name   string   `json:"name"`   // the fault's name
	Target string   `json:"target"` // BOARD or BOARD:PORT
	Plans  []string `json:"plans"`
	Benign bool     `json:"benign"`
	// ExitCode and Status of the fault's plans (their verdicts alone).
	ExitCode int    `json:"exit_code"`
	Status   string `json:"status"`
	// Outcome: caught, escaped, absorbed, false-alarm.
	Outcome string `json:"outcome"`
	// Class of the failure that decided the exit code (design, setup,
	// infrastructure), empty when every verdict passed.
	Class string `json:"class,omitempty"`
	// CaughtBy lists the tests with a case that passed in the baseline and
	// did not pass with the fault.
	CaughtBy []string `json:"caught_by,omitempty"`
	// Trace lists the harness counters of the target board that moved
	// ("harness.bridge.retries=12"): what a benign fault left behind.
	Trace       []string `json:"trace,omitempty"`
	WallSeconds float64  `json:"wall_seconds"`
	RunDir      string   `json:"run_dir"`
	Round       int      `json:"round"`
}

// Counts tallies the entries by outcome.
func (c *Campaign) Counts() map[string]int {
	out := map[string]int{}
	for _, e := range c.Entries {
		out[e.Outcome]++
	}
	return out
}

// WriteCampaign writes c into dir's CampaignFile.
func WriteCampaign(dir string, c *Campaign) error {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	return WriteFileAtomic(filepath.Join(dir, CampaignFile), append(b, '\n'))
}

// ReadCampaign reads dir's CampaignFile; nil, nil when there is none.
func ReadCampaign(dir string) (*Campaign, error) {
	b, err := os.ReadFile(filepath.Join(dir, CampaignFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var c Campaign
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, CampaignFile), err)
	}
	return &c, nil
}
