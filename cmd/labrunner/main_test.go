package main

import (
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/labrunner/labrunner/internal/raceshare"
	"github.com/labrunner/labrunner/results"
	"github.com/labrunner/labrunner/results/resultstest"
)

// These tests run the CLI in process, end to end, on the emulated rack:
// testdata/mini.yaml is the default lab's rack with a shorter plan.

func nightly(t *testing.T, args ...string) (code int, dir string) {
	t.Helper()
	out := t.TempDir()
	code = runCode(t, append([]string{"--log-level", "warn", "nightly", "--locks", t.TempDir(), "--lab", "testdata/mini.yaml", "--out", out}, args...)...)
	entries, err := os.ReadDir(out)
	if err != nil || len(entries) != 1 {
		t.Fatalf("want one run directory under %s, got %v (%v)", out, entries, err)
	}
	return code, filepath.Join(out, entries[0].Name())
}

func verdicts(t testing.TB, dir string) []results.Verdict {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, results.VerdictsFile))
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Verdicts []results.Verdict `json:"verdicts"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v.Verdicts
}

func TestNightlyPassesOnTheEmulatedRack(t *testing.T) {
	t.Parallel()
	code, dir := nightly(t)
	vs := verdicts(t, dir)
	if code != 0 {
		for _, v := range resultstest.NotPassed(vs) {
			t.Logf("%s %s %s: %s", v.Status, v.Board, v.Name(), v.Message)
		}
		t.Fatalf("exit %d, want 0", code)
	}
	run, err := results.ReadRun(dir)
	if err != nil || run.Status != "passed" || run.End == nil || len(run.Bitstreams) != 4 {
		t.Fatalf("run.json: %+v (%v)", run, err)
	}
	for _, b := range run.Bitstreams {
		if len(b.SHA256) != 64 || b.Design != "exanet" {
			t.Errorf("bitstream record %+v", b)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, results.JUnitFile))
	if err != nil {
		t.Fatal(err)
	}
	var j struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Errors   int `xml:"errors,attr"`
	}
	if err := xml.Unmarshal(b, &j); err != nil {
		t.Fatal(err)
	}
	if j.Tests < 10 || j.Failures != 0 || j.Errors != 0 {
		t.Errorf("junit.xml: %+v", j)
	}
	ms, err := results.ReadMeasurements(dir)
	if err != nil || len(ms) < 10 {
		t.Errorf("measurements: %d (%v)", len(ms), err)
	}
	for _, name := range []string{"exa-00", "exa-10", "exa-01", "exa-11"} {
		tr, err := os.ReadFile(filepath.Join(dir, results.ConsolesDir, name+".log"))
		if err != nil {
			t.Errorf("console transcript of %s: %v", name, err)
		} else if len(tr) == 0 {
			t.Errorf("console transcript of %s is empty", name)
		}
	}
}

// Each injected fault must turn the nightly red, and the failing test cases
// must name the symptom a person at the bench would look for.
func TestNightlyCatchesInjectedFaults(t *testing.T) {
	t.Parallel()
	cases := []struct {
		fault    string
		code     int
		test     string // a test that must not pass
		symptoms []string
	}{
		{"credit-leak@exa-10:sfp0", 1, "bandwidth.credits", []string{"credit", "exa-10:sfp0"}},
		{"dor-misroute@exa-00", 1, "dor_path", []string{"vc"}},
		{"uart-corrupt@exa-00,rate=0.3", 3, "", []string{"corrupted bytes on the line", "exa-00"}},
	}
	for _, c := range raceshare.Cases(t, cases) {
		t.Run(c.fault, func(t *testing.T) {
			code, dir := nightly(t, "--fault", c.fault)
			if code != c.code {
				t.Errorf("exit %d, want %d", code, c.code)
			}
			bad := resultstest.NotPassed(verdicts(t, dir))
			if len(bad) == 0 {
				t.Fatal("no test case failed")
			}
			var msgs []string
			found := c.test == ""
			for _, v := range bad {
				msgs = append(msgs, v.Name()+": "+v.Message)
				if v.Test == c.test {
					found = true
				}
			}
			all := strings.Join(msgs, "\n")
			if !found {
				t.Errorf("test %s did not fail; failures:\n%s", c.test, all)
			}
			for _, s := range c.symptoms {
				if !strings.Contains(all, s) {
					t.Errorf("no failure names %q:\n%s", s, all)
				}
			}
		})
	}
}

func TestNightlyWithASilentBoardExitsThreeInTime(t *testing.T) {
	t.Parallel()
	start := time.Now()
	code, dir := nightly(t, "--fault", "board-silent@exa-11")
	if code != 3 {
		t.Errorf("exit %d, want 3 (infrastructure)", code)
	}
	// mini.yaml's program deadline is 5 s: the run must end on its own
	// deadlines, not hang.
	if d := time.Since(start); d > 90*time.Second {
		t.Errorf("the nightly took %s with a silent board", d)
	}
	found := false
	for _, v := range resultstest.NotPassed(verdicts(t, dir)) {
		if v.Board == "exa-11" && v.Class == "infrastructure" {
			found = true
		}
		// The unhealthy board leaves the plan; the rest of the rack is
		// judged and passes: nothing is a design failure.
		if v.Status == results.Fail {
			t.Errorf("design failure with exa-11 silent: %s %s: %s", v.Board, v.Name(), v.Message)
		}
	}
	if !found {
		t.Error("no infrastructure error names exa-11")
	}
}

func TestBadLabFileExitsTwoWithFileAndLine(t *testing.T) {
	t.Parallel()
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("lab: x\nboards:\n  - name: a\n    kind: tebf0808\n    bsu: {}\n"), 0o644)
	code := runCode(t, "nightly", "--locks", t.TempDir(), "--lab", bad, "--out", t.TempDir())
	if code != 2 {
		t.Errorf("exit %d, want 2", code)
	}
}

func TestFlagsAfterArgumentsAreAccepted(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := runCaptured(t, "golden", "predict", "exanet", "--set", "payloads=64,512", "--json")
	if code != 0 {
		t.Fatalf("exit %d, want 0 for flags after the arguments: %s", code, stderr)
	}
	if !strings.Contains(stdout, `"payload": "512"`) {
		t.Errorf("--set after the model was not applied: %.300s", stdout)
	}
}

func TestGoldenPredictAndBitstreamsInspect(t *testing.T) {
	t.Parallel()
	if code := runCode(t, "golden", "predict", "--set", "payloads=512", "--json", "exanet"); code != 0 {
		t.Errorf("golden predict exit %d", code)
	}
	if code := runCode(t, "golden", "predict", "--set", "nosuch=1", "exanet"); code != 2 {
		t.Errorf("golden predict with an unknown parameter: exit %d, want 2", code)
	}
	// The TE0808 (tebf0808) carries the ZU9EG in its ffvc900 package.
	zu9 := "../../bitstreams/files/exanet_xczu9eg-ffvc900-1-e.bit"
	if code := runCode(t, "bitstreams", "inspect", "--kind", "tebf0808", zu9); code != 0 {
		t.Errorf("bitstreams inspect %s: exit %d", zu9, code)
	}
	if code := runCode(t, "bitstreams", "inspect", "--kind", "ultra96", zu9); code != 2 {
		t.Errorf("inspecting a ZU9EG file against an Ultra96: exit %d, want 2", code)
	}
}

// The embedded default lab must load with the real registries (every kind,
// design, test and fault it names exists), and every plan in it must name
// tests its design has.
func TestEmbeddedDefaultLabIsValid(t *testing.T) {
	t.Parallel()
	if code := runCode(t, "lab", "check"); code != 0 {
		t.Fatalf("lab check of the embedded default lab: exit %d", code)
	}
}

// An unknown plan name is a usage error before anything runs: no run
// directory is created (a typo used to give an empty "setup-error" run).
func TestUnknownPlanExitsTwoAndCreatesNoRun(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	for _, args := range [][]string{
		{"nightly", "--lab", "testdata/mini.yaml", "--out", out, "--plan", "no-such-plan"},
		{"selftest", "--lab", "testdata/mini.yaml", "--out", out, "no-such-plan"},
	} {
		if code := runCode(t, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
	if entries, _ := os.ReadDir(out); len(entries) != 0 {
		t.Errorf("a run directory was created for an unknown plan: %v", entries)
	}
}

// selftest is the nightly's machinery for one plan: it has no --held flag
// and must not trip over it (it refused every run with `--held ""`).
func TestSelftestRunsAPlan(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	if code := runCode(t, "--log-level", "error", "selftest", "--lab", "testdata/mini.yaml", "--out", out, "exanet-mesh"); code != 0 {
		t.Fatalf("selftest exanet-mesh: exit %d", code)
	}
}
