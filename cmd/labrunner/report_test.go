package main

import (
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/selftest/bringup"
)

// The report of a nightly draws, for each plan, every figure its design's
// report: block describes: a described metric the tests do not record
// under that name (a typo on either side) shows up here as a figure with
// no readings. The run is the default lab's nightly (defaultNightly): every
// design of the catalogue, its plans side by side.
func TestNightlyReportDrawsEveryDescribedFigure(t *testing.T) {
	t.Parallel()
	code, dir, out := defaultNightly(t)
	if code != 0 {
		t.Fatalf("nightly exit %d, want 0\n%s", code, tail(out, 40))
	}
	page, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	if m := regexp.MustCompile(`No readings in this run for: [^<]*`).Find(page); m != nil {
		t.Errorf("described figures without readings: %s", m)
	}
	if m := regexp.MustCompile(`No figures: [^<]*`).Find(page); m != nil {
		t.Errorf("a plan without figures: %s", m)
	}
	figures := map[string]bool{}
	for _, m := range regexp.MustCompile(`<h4>([^<]*)</h4>`).FindAllSubmatch(page, -1) {
		figures[html.UnescapeString(string(m[1]))] = true
	}
	plan := defaultNightlyPlan(t)
	if plan != "" {
		t.Logf("race detector on: the default lab's plan %s only (make test runs every plan without it)", plan)
	}
	for _, p := range defaultPlans {
		if plan != "" && p.plan != plan {
			continue
		}
		design := p.design
		m, err := bitstreams.Default().Design(design)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range m.Report.Figures {
			found := false
			for title := range figures {
				found = found || title == f.Title || strings.HasPrefix(title, f.Title+" (")
			}
			if !found {
				t.Errorf("%s: no figure %q in the report (figures: %v)", design, f.Title, figures)
			}
		}
	}
}

// `bringup` prints the path of its report and the report is there, with
// the clock offsets per board its description asks for.
func TestBringupWritesTheReportItPrints(t *testing.T) {
	t.Parallel()
	r := runBringupCLI(t, "--board", "tin-p1b3") // in-band, two hops from the primary: it has an offset
	if r.code != 0 {
		r.explain(t)
		t.Fatalf("exit %d, want 0", r.code)
	}
	m := regexp.MustCompile(`(?m)^report: (.+)$`).FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("no report path printed:\n%s", r.stdout)
	}
	if filepath.Dir(m[1]) != r.dir {
		t.Errorf("report %s is not in the run directory %s", m[1], r.dir)
	}
	page, err := os.ReadFile(m[1])
	if err != nil {
		t.Fatalf("the printed report does not exist: %v", err)
	}
	if want := "<h4>" + bringup.Figures().Figures[0].Title + "</h4>"; !strings.Contains(string(page), want) {
		t.Errorf("the bring-up report lacks %s", want)
	}
}
