package docs

import (
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/labconfig"
	"github.com/labrunner/labrunner/results/bands"
)

// checkDefaultRun holds the run of a block marked `default-run` (the
// README's `labrunner nightly`: the embedded default lab, every plan) to
// what a reader of its report and a reviewer of its bands expect:
//
//   - the report draws, for each plan, every figure its design's report:
//     block describes (a described metric the tests do not record under that
//     name, a typo on either side, shows up as a figure with no readings);
//   - every band the run judged with is within ±10% of its reference or says
//     why it may be wider (Expectation.Wide), and `labrunner golden bands
//     --check` agrees.
//
// The README's nightly is the suite's one whole run of the default lab from
// the command line, so the checks read it rather than running another.
func checkDefaultRun(t *testing.T, bin, dir string) {
	t.Helper()
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
	lab, err := labconfig.Default(labconfig.Known{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range lab.Plans {
		m, err := bitstreams.Default().Design(p.Design)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range m.Report.Figures {
			found := false
			for title := range figures {
				found = found || title == f.Title || strings.HasPrefix(title, f.Title+" (")
			}
			if !found {
				t.Errorf("plan %s (%s): no figure %q in the report", p.Name, p.Design, f.Title)
			}
		}
	}

	bs, err := bands.FromRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	// The whole lab judges with about 380 bands, its smallest plan (PRR)
	// with 26.
	if len(bs) < 100 {
		t.Fatalf("%d bands in the default lab's run: expectations missing", len(bs))
	}
	off := bands.Offenders(bs)
	for _, b := range off {
		t.Errorf("band without a reason: %s", b.Describe())
	}
	want := 0
	if len(off) > 0 {
		want = 1
	}
	out, err := exec.Command(filepath.Join(bin, "labrunner"), "golden", "bands", "--offenders", "--check", "--run", dir).CombinedOutput()
	if code := exitCode(err); code != want {
		t.Errorf("golden bands --check: exit %d, want %d (%d offenders): %v\n%s", code, want, len(off), err, tail(string(out)))
	}
}
