package docs

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/labrunner/labrunner/results"
)

// checkCampaignRun holds the campaign of a block marked `campaign-run`
// (verdicts.md's `faults campaign --faults credit-leak --faults uart-drop`
// on the small lab) to what the page promises of it: the design fault
// caught by its test with the design class and exit 1, the benign line fault
// absorbed with its bridge trace, that fault's severe setting caught as
// infrastructure, and the table, campaign.json and the report's section.
//
// The page's command is the suite's one campaign with a benign fault, run as
// the binary a user runs; cmd/labrunner's in-process campaign test (under the
// race detector) keeps to the design fault.
func checkCampaignRun(t *testing.T, dir string) {
	t.Helper()
	camp, err := results.ReadCampaign(dir)
	if err != nil || camp == nil {
		t.Fatalf("campaign.json in %s: %v", dir, err)
	}
	if len(camp.Entries) != 3 || camp.Rounds != 3 || camp.Targets != "rotation" || len(camp.Baseline) != 1 || camp.Baseline[0].ExitCode != 0 {
		t.Fatalf("campaign: %+v", camp)
	}
	byName := map[string]results.CampaignEntry{}
	for _, e := range camp.Entries {
		key := e.Name
		if strings.Contains(e.Fault, "rate=") {
			key += ",severe"
		}
		byName[key] = e
		if e.WallSeconds <= 0 || e.RunDir == "" || e.Target == "" {
			t.Errorf("entry %+v lacks wall time, run directory or target", e)
		}
	}
	// Every target credit-leak's rotation names (a port of one of the
	// four ExaNet boards) is caught by the credit check.
	if e := byName["credit-leak"]; e.Outcome != results.Caught || e.Class != "design" || e.ExitCode != 1 || !slices.Contains(e.CaughtBy, "bandwidth.credits") {
		t.Errorf("credit-leak: %+v", e)
	}
	if e := byName["uart-drop"]; e.Outcome != results.Absorbed || !e.Benign || !slices.ContainsFunc(e.Trace, func(s string) bool { return strings.HasPrefix(s, "timeouts=") }) {
		t.Errorf("uart-drop: %+v", e)
	}
	if e := byName["uart-drop,severe"]; e.Outcome != results.Caught || e.Class != "infrastructure" || e.Benign {
		t.Errorf("uart-drop,rate=1: %+v", e)
	}
	txt, err := os.ReadFile(filepath.Join(dir, "campaign.txt"))
	if err != nil || !strings.Contains(string(txt), "2 caught, 0 escaped, 1 benign absorbed") {
		t.Errorf("campaign.txt: %s (%v)", txt, err)
	}
	html, _ := os.ReadFile(filepath.Join(dir, "report.html"))
	if !strings.Contains(string(html), `id="campaign"`) || !strings.Contains(string(html), byName["credit-leak"].Fault) {
		t.Error("report.html has no campaign section naming the faults")
	}
}
