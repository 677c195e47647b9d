package main

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/labrunner/labrunner/internal/raceshare"
	"github.com/labrunner/labrunner/internal/syncbuf"
)

// runCaptured runs the CLI in process with its standard output and error
// captured in buffers of its own: no process-wide state is touched, so
// tests using it run in parallel.
func runCaptured(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut syncbuf.Buffer
	code = run(append([]string{"labrunner"}, args...), &out, &errOut)
	return code, out.String(), errOut.String()
}

// runCLI runs the CLI and returns its exit code and what it printed on
// stdout and stderr, stdout first.
func runCLI(t *testing.T, args ...string) (int, string) {
	t.Helper()
	code, stdout, stderr := runCaptured(t, args...)
	return code, stdout + stderr
}

// runCode runs the CLI and returns its exit code; what it printed goes to
// the test's log when the test fails.
func runCode(t *testing.T, args ...string) int {
	t.Helper()
	code, stdout, stderr := runCaptured(t, args...)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("labrunner %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, tail(stdout, 40), tail(stderr, 40))
		}
	})
	return code
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// defaultRun is one nightly of the embedded default lab (the whole
// emulated rack, every design), shared by the tests that read such a run:
// it is the suite's most expensive command.
var defaultRun struct {
	once sync.Once
	root string
	code int
	out  string
	err  error
}

// defaultPlans are the default lab's plans and their designs.
var defaultPlans = []struct{ plan, design string }{
	{"prr", "prr"}, {"shoal", "shoal"}, {"tin", "tin"}, {"exanet-mesh", "exanet"},
}

// raceNightlyPlan is the plan defaultNightly runs under the race detector:
// the default lab's cheapest (about 10 s of CPU under the detector, where
// PRR's takes 75 s and TiN's 50 s). What this package adds under the
// detector is the CLI's own concurrency (plans in parallel, progress,
// export, the report), the same for every plan; each plan's own paths run
// under the detector in this package's per-design plan tests
// (TestPRRPlanPassesOnTheEmulatedUltra96 and the others), and make test
// runs this package again without it on every plan (see internal/raceshare).
const raceNightlyPlan = "exanet-mesh"

// defaultNightlyPlan is the one plan defaultNightly runs under the race
// detector, else "" (every plan).
func defaultNightlyPlan(t *testing.T) string {
	t.Helper()
	if raceshare.Enabled {
		return raceNightlyPlan
	}
	return ""
}

// defaultNightly runs the default lab's nightly once per test binary and
// returns its exit code, run directory and output. Under the race detector
// it runs defaultNightlyPlan's plan alone.
func defaultNightly(t *testing.T) (code int, dir, out string) {
	t.Helper()
	plan := defaultNightlyPlan(t)
	defaultRun.once.Do(func() {
		// Not a test's TempDir: the run outlives the first test that asks.
		if defaultRun.root, defaultRun.err = os.MkdirTemp("", "labrunner-default-run-"); defaultRun.err != nil {
			return
		}
		var stdout, stderr syncbuf.Buffer
		args := []string{"labrunner", "--log-level", "error", "nightly", "--out", defaultRun.root,
			"--locks", filepath.Join(defaultRun.root, "locks")}
		if plan != "" {
			args = append(args, "--plan", plan)
		}
		defaultRun.code = run(args, &stdout, &stderr)
		defaultRun.out = stdout.String() + stderr.String()
	})
	if defaultRun.err != nil {
		t.Fatal(defaultRun.err)
	}
	es, err := filepath.Glob(filepath.Join(defaultRun.root, "*-emulated-rack"))
	if err != nil || len(es) != 1 {
		t.Fatalf("want one run directory of the default lab in %s: %v %v\n%s", defaultRun.root, es, err, tail(defaultRun.out, 40))
	}
	return defaultRun.code, es[0], defaultRun.out
}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, root := range []string{defaultRun.root, cleanTwoGroups.root} {
		if root != "" {
			os.RemoveAll(root)
		}
	}
	os.Exit(code)
}
