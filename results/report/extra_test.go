package report

import (
	"strings"
	"testing"
	"time"

	"github.com/labrunner/labrunner/results"
)

// The bus counters and a fault campaign each get their section.
func TestHarnessAndCampaignSections(t *testing.T) {
	d, err := results.Create(t.TempDir(), results.Run{Lab: "t", Plans: []string{"p"}, Start: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for metric, v := range map[string]float64{"requests": 1200, "retries": 14, "crc_errors": 9, "turnaround_ms": 0.41} {
		d.AddMeasurement(results.Measurement{Plan: "p", Test: "harness.bridge", Board: "b0", Metric: "harness.bridge." + metric, Value: v})
	}
	d.AddMeasurement(results.Measurement{Plan: "p", Test: "harness.bridge", Board: "b1", Metric: "harness.bridge.requests", Value: 800})
	d.AddVerdict(results.Verdict{Plan: "p", Test: "x", Board: "b0", Status: results.Pass})
	d.Finish("passed", 0)
	camp := &results.Campaign{Lab: "t", Plans: []string{"p"}, Rounds: 1, Targets: "rotation", WallSeconds: 42,
		Entries: []results.CampaignEntry{
			{Fault: "credit-leak@b0:sfp0", Plans: []string{"p"}, ExitCode: 1, Outcome: results.Caught, Class: "design", CaughtBy: []string{"bandwidth"}, WallSeconds: 12},
			{Fault: "uart-drop@b0", Plans: []string{"p"}, Outcome: results.Absorbed, Benign: true, Trace: []string{"retries=14"}},
		}}
	if err := results.WriteCampaign(d.Path, camp); err != nil {
		t.Fatal(err)
	}
	data, err := Load(d.Path)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := Render(&b, data, Options{Sections: []SectionFunc{CampaignSection, HarnessSection}}); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	for _, want := range []string{`id="harness"`, "crc_errors", ">14<", `id="campaign"`, "credit-leak@b0:sfp0", "absorbed", "retries=14", `href="#campaign"`} {
		if !strings.Contains(html, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	// b1 moved nothing: only b0 is marked.
	if n := strings.Count(html, "●"); n != 1 {
		t.Errorf("%d boards marked as having moved counters, want 1", n)
	}
}
