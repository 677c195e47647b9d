package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/labrunner/labrunner/selftest/bringup"
)

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
