package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/labrunner/labrunner/internal/syncbuf"
	"github.com/labrunner/labrunner/results"
	"github.com/labrunner/labrunner/results/resultstest"
)

// Rack-scale behaviour on testdata/two-groups.yaml: two independent
// two-board racks (two board groups).

const twoGroups = "testdata/two-groups.yaml"

// twoGroupsLab writes a copy of the two-groups lab with the first old
// replaced by new (old empty: new appended) and returns its path. An old
// the file does not hold fails the test: the edit must take.
func twoGroupsLab(t *testing.T, old, new string) string {
	t.Helper()
	src, err := os.ReadFile(twoGroups)
	if err != nil {
		t.Fatal(err)
	}
	text := string(src) + new
	if old != "" {
		if !strings.Contains(string(src), old) {
			t.Fatalf("%s has no %q to replace", twoGroups, old)
		}
		text = strings.Replace(string(src), old, new, 1)
	}
	lab := filepath.Join(t.TempDir(), "lab.yaml")
	if err := os.WriteFile(lab, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return lab
}

// runCLI runs the CLI in process with a private lock directory and returns
// the exit code.
func rackCLI(t *testing.T, locks string, args ...string) int {
	t.Helper()
	return runCode(t, append([]string{"--log-level", "warn"}, append(args[:1:1], append([]string{"--locks", locks}, args[1:]...)...)...)...)
}

func theRunDir(t *testing.T, root string) string {
	t.Helper()
	es, err := os.ReadDir(root)
	if err != nil || len(es) != 1 {
		t.Fatalf("want one run directory in %s: %v %v", root, es, err)
	}
	return filepath.Join(root, es[0].Name())
}

// cleanTwoGroups is one uninterrupted nightly of testdata/two-groups.yaml,
// shared by the tests that compare a run with a clean one: they only read
// its run directory.
var cleanTwoGroups struct {
	once sync.Once
	root string
	code int
	out  string
	err  error
}

// cleanTwoGroupsRun runs that nightly once per test binary and returns its
// run directory.
func cleanTwoGroupsRun(t *testing.T) string {
	t.Helper()
	cleanTwoGroups.once.Do(func() {
		// Not a test's TempDir: the run outlives the first test that asks.
		if cleanTwoGroups.root, cleanTwoGroups.err = os.MkdirTemp("", "labrunner-two-groups-run-"); cleanTwoGroups.err != nil {
			return
		}
		var stdout, stderr syncbuf.Buffer
		cleanTwoGroups.code = run([]string{"labrunner", "--log-level", "warn", "nightly", "--locks", filepath.Join(cleanTwoGroups.root, "locks"),
			"--lab", twoGroups, "--out", filepath.Join(cleanTwoGroups.root, "runs")}, &stdout, &stderr)
		cleanTwoGroups.out = stdout.String() + stderr.String()
	})
	if cleanTwoGroups.err != nil {
		t.Fatal(cleanTwoGroups.err)
	}
	if cleanTwoGroups.code != 0 {
		t.Fatalf("clean run of %s: exit %d\n%s", twoGroups, cleanTwoGroups.code, tail(cleanTwoGroups.out, 40))
	}
	return theRunDir(t, filepath.Join(cleanTwoGroups.root, "runs"))
}

func TestTwoShardsMergeIntoTheFullRun(t *testing.T) {
	t.Parallel()
	locks := t.TempDir()
	s1, s2 := t.TempDir(), t.TempDir()
	full := cleanTwoGroupsRun(t)
	if code := rackCLI(t, locks, "nightly", "--lab", twoGroups, "--out", s1, "--shard", "1/2"); code != 0 {
		t.Fatalf("shard 1/2: exit %d", code)
	}
	if code := rackCLI(t, locks, "nightly", "--lab", twoGroups, "--out", s2, "--shard", "2/2"); code != 0 {
		t.Fatalf("shard 2/2: exit %d", code)
	}
	d1, d2 := theRunDir(t, s1), theRunDir(t, s2)
	v1, _ := results.ReadVerdictLog(d1)
	v2, _ := results.ReadVerdictLog(d2)
	if len(v1) == 0 || len(v2) == 0 {
		t.Fatalf("a shard ran nothing: %d and %d verdicts", len(v1), len(v2))
	}
	merged := filepath.Join(t.TempDir(), "merged")
	if code := runCode(t, "report", "--merge", merged, d1, d2); code != 0 {
		t.Fatalf("report --merge: exit %d", code)
	}
	mv, err := results.ReadVerdictLog(merged)
	if err != nil {
		t.Fatal(err)
	}
	fv, _ := results.ReadVerdictLog(full)
	got, want := resultstest.CaseSet(mv), resultstest.CaseSet(fv)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("merged shards differ from the full run:\nmerged %d cases, full %d", len(got), len(want))
	}
	if _, err := os.Stat(filepath.Join(merged, "report.html")); err != nil {
		t.Errorf("no merged report: %v", err)
	}
	// The same shard twice is refused.
	if code := runCode(t, "report", "--merge", filepath.Join(t.TempDir(), "m"), d1, d1); code != 2 {
		t.Errorf("merging a shard with itself: exit %d, want 2", code)
	}
}

func TestHeldBoardsAreSkippedAndReported(t *testing.T) {
	t.Parallel()
	locks := t.TempDir()
	// The lab file must name a lock directory for emulated boards to be
	// leased: write a copy that does.
	lab := twoGroupsLab(t, "results:\n", "locks: {dir: "+locks+", lease: 30s}\nresults:\n")
	if code := rackCLI(t, locks, "reserve", "--lab", lab, "--note", "bring-up by hand", "a1"); code != 0 {
		t.Fatalf("reserve: exit %d", code)
	}
	out := t.TempDir()
	code := rackCLI(t, locks, "nightly", "--lab", lab, "--out", out)
	vs, _ := results.ReadVerdictLog(theRunDir(t, out))
	skipped, ranB := 0, 0
	for _, v := range vs {
		if v.Plan == "mesh-a" {
			if v.Status != results.Skip || !strings.Contains(v.Message, "held by") || !strings.Contains(v.Message, "bring-up by hand") {
				t.Errorf("mesh-a verdict %s %s: %s", v.Status, v.Name(), v.Message)
			}
			skipped++
		} else if v.Status == results.Pass {
			ranB++
		}
	}
	if skipped == 0 || ranB == 0 || code != 0 {
		t.Fatalf("exit %d, %d skipped in mesh-a, %d passed in mesh-b", code, skipped, ranB)
	}
	// Only the owner releases; then the board runs again.
	if code := rackCLI(t, locks, "release", "--lab", lab, "a1"); code != 0 {
		t.Fatalf("release: exit %d", code)
	}
	out2 := t.TempDir()
	if code := rackCLI(t, locks, "nightly", "--lab", lab, "--out", out2); code != 0 {
		t.Fatalf("after release: exit %d", code)
	}
	// The board's state now shows the design programmed and its health.
	if code := rackCLI(t, locks, "boards", "--lab", lab); code != 0 {
		t.Fatalf("boards: exit %d", code)
	}
}

// A nightly killed with SIGKILL in the middle and resumed ends with every
// test case exactly once, as a clean run has them, and no measurement twice.
func TestNightlyKilledAndResumed(t *testing.T) {
	t.Parallel()
	if os.Getenv("LABRUNNER_TEST_MAIN") != "" {
		os.Exit(run(strings.Split(os.Getenv("LABRUNNER_TEST_MAIN"), "\x1f"), os.Stdout, os.Stderr))
	}
	locks, out := t.TempDir(), t.TempDir()
	args := []string{"labrunner", "--log-level", "warn", "nightly", "--locks", locks, "--lab", twoGroups, "--out", out, "--parallel", "1"}
	cmd := exec.Command(os.Args[0], "-test.run=^TestNightlyKilledAndResumed$")
	cmd.Env = append(os.Environ(), "LABRUNNER_TEST_MAIN="+strings.Join(args, "\x1f"))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Kill it once some verdicts are on disk, but before the end.
	deadline := time.Now().Add(60 * time.Second)
	var dir string
	for time.Now().Before(deadline) {
		if es, _ := os.ReadDir(out); len(es) == 1 {
			dir = filepath.Join(out, es[0].Name())
			if n := countLines(filepath.Join(dir, results.VerdictsLogFile)); n >= 12 {
				break
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if dir == "" {
		t.Fatal("the nightly never created its run directory")
	}
	before := countLines(filepath.Join(dir, results.VerdictsLogFile))
	if r, _ := results.ReadRun(dir); r == nil || r.Status != "running" {
		t.Fatalf("the killed run's run.json: %+v", r)
	}
	if code := rackCLI(t, locks, "nightly", "--resume", dir); code != 0 {
		vs, _ := results.ReadVerdictLog(dir)
		for _, v := range vs {
			if v.Status != results.Pass {
				t.Logf("%s %s %s: %s", v.Status, v.Board, v.Name(), v.Message)
			}
		}
		t.Fatalf("resume: exit %d", code)
	}
	// Its duration is the two sessions' work: the killed one up to its
	// last write, and the resume.
	if r, err := results.ReadRun(dir); err != nil || len(r.Sessions) != 2 || r.Sessions[0].End == nil || r.Sessions[1].End == nil || r.Resumes != 1 {
		t.Errorf("the resumed run's sessions: %+v (%v), want the killed one ended at its last write and the resume's", r, err)
	} else if w, _ := r.Worked(); w > r.End.Sub(r.Start) || w <= 0 {
		t.Errorf("worked %v of a run from %v to %v", w, r.Start, r.End)
	}
	vs, err := results.ReadVerdictLog(dir)
	if err != nil {
		t.Fatal(err)
	}
	cv, _ := results.ReadVerdictLog(cleanTwoGroupsRun(t))
	got, want := resultstest.CaseSet(vs), resultstest.CaseSet(cv)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("resumed run has %d cases, a clean run %d (killed after %d verdict lines)", len(got), len(want), before)
	}
	ms, _ := results.ReadMeasurements(dir)
	seen := map[string]bool{}
	for _, m := range ms {
		k := m.Step + " " + m.Board + " " + m.Key()
		if seen[k] {
			t.Errorf("measurement %s twice", k)
		}
		seen[k] = true
	}
	if r, _ := results.ReadRun(dir); r.Resumes != 1 || r.Status != "passed" {
		t.Errorf("run.json after resume: resumes %d, status %s", r.Resumes, r.Status)
	}
}

func countLines(path string) int {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		n++
	}
	return n
}

// Two resumes of one run directory cannot both write it: while one holds
// the directory (here the test, as a resume would), another is refused
// before it starts anything. A last line torn by a power loss is cut off
// (a copy kept) before the resume appends, and the run's files stay
// readable.
func TestResumeIsExclusiveAndRepairsATornLine(t *testing.T) {
	t.Parallel()
	locks, out := t.TempDir(), t.TempDir()
	if code := rackCLI(t, locks, "nightly", "--lab", twoGroups, "--out", out, "--plan", "mesh-a"); code != 0 {
		t.Fatalf("nightly: exit %d", code)
	}
	dir := theRunDir(t, out)
	for _, f := range []string{results.MeasurementsFile, results.VerdictsLogFile, results.ProgressFile} {
		fh, err := os.OpenFile(filepath.Join(dir, f), os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		fh.WriteString(`{"time":"2026-11-26T02:00:00Z","plan":"mesh-a","test":"band`)
		fh.Close()
	}
	other, err := results.Open(dir) // the first resume, still writing
	if err != nil {
		t.Fatal(err)
	}
	code, text := runCLI(t, "nightly", "--locks", locks, "--resume", dir)
	if code != 2 || !strings.Contains(text, "being written by pid") {
		t.Fatalf("a second resume while the first writes: exit %d:\n%s", code, text)
	}
	other.Close()
	if code := rackCLI(t, locks, "nightly", "--resume", dir); code != 0 {
		t.Fatalf("resume: exit %d", code)
	}
	if _, err := results.ReadMeasurements(dir); err != nil {
		t.Errorf("measurements after the repair: %v", err)
	}
	if _, err := results.ReadVerdictLog(dir); err != nil {
		t.Errorf("verdicts after the repair: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, results.MeasurementsFile+".torn")); err != nil {
		t.Errorf("no copy of the torn file: %v", err)
	}
	if r, _ := results.ReadRun(dir); r == nil || r.Status != "passed" {
		t.Errorf("run.json after the resume: %+v", r)
	}
}

// A reservation the lab's nightly cannot honour is refused when it is made
// (exit 2) and leaves nothing in the lock directory.
func TestReserveRefusesWhatTheNightlyWouldNotHonour(t *testing.T) {
	t.Parallel()
	locks := filepath.Join(t.TempDir(), "locks")
	for _, args := range [][]string{
		{"reserve", "--lab", twoGroups, "nosuch"},
		{"reserve", "--lab", twoGroups, "a0", "nosuch"}, // all or nothing
		{"reserve", "--lab", twoGroups, "a0"},           // emulated, and the lab names no lock directory
	} {
		code, text := runCLI(t, append(args[:1:1], append([]string{"--locks", locks}, args[1:]...)...)...)
		if code != 2 || !strings.Contains(text, "nothing reserved") {
			t.Errorf("%v: exit %d:\n%s", args, code, text)
		}
		if es, _ := os.ReadDir(locks); len(es) != 0 {
			t.Errorf("%v left %v in the lock directory", args, es)
		}
	}
}
