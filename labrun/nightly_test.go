package labrun

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/labrunner/labrunner/boards/emu/designs" // the emulated designs the labs name
	"github.com/labrunner/labrunner/internal/syncbuf"
	"github.com/labrunner/labrunner/results"
	"github.com/labrunner/labrunner/results/influx"
	"github.com/labrunner/labrunner/results/report"
	"github.com/labrunner/labrunner/results/resultstest"
	_ "github.com/labrunner/labrunner/selftest/all" // the designs' tests
)

// The nightly's lifecycle on the emulated rack, without the CLI: options
// in, a run directory and an exit code out. testdata/two-groups.yaml is
// two independent two-board ExaNet racks (two board groups).

const twoGroups = "testdata/two-groups.yaml"

// options are a test's options: its own results root and lock directory,
// output captured.
func options(t *testing.T, plans ...string) (Options, *syncbuf.Buffer, *syncbuf.Buffer) {
	var stdout, stderr syncbuf.Buffer
	return Options{LabFile: twoGroups, Out: t.TempDir(), Locks: t.TempDir(), Plans: plans,
		Stdout: &stdout, Stderr: &stderr, Command: "labrun test", Version: "test"}, &stdout, &stderr
}

func runDirs(t *testing.T, root string) []string {
	t.Helper()
	es, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, filepath.Join(root, e.Name()))
	}
	return out
}

// cleanRun is one uninterrupted nightly of both racks, shared by the tests
// that compare with a clean run and those that read its directory.
var cleanRun struct {
	once   sync.Once
	res    *Result
	err    error
	stdout string
	stderr string
}

func clean(t *testing.T) (*Result, string, string) {
	t.Helper()
	cleanRun.once.Do(func() {
		// Not t's: the directory outlives the first test that asks.
		root, err := os.MkdirTemp("", "labrun-clean-")
		if err != nil {
			cleanRun.err = err
			return
		}
		var stdout, stderr syncbuf.Buffer
		locks, _ := os.MkdirTemp("", "labrun-clean-locks-")
		cleanRun.res, cleanRun.err = Nightly(context.Background(), Options{LabFile: twoGroups, Out: root, Locks: locks,
			Stdout: &stdout, Stderr: &stderr, Command: "labrun test", Version: "test"})
		cleanRun.stdout, cleanRun.stderr = stdout.String(), stderr.String()
	})
	if cleanRun.err != nil {
		t.Fatalf("the clean nightly: %v", cleanRun.err)
	}
	return cleanRun.res, cleanRun.stdout, cleanRun.stderr
}

func TestMain(m *testing.M) {
	code := m.Run()
	if cleanRun.res != nil {
		os.RemoveAll(filepath.Dir(cleanRun.res.Dir))
	}
	os.Exit(code)
}

// A nightly on the emulated rack passes and leaves a complete run
// directory; its summary goes to Stdout, its progress to Stderr.
func TestNightlyWritesARunDirectory(t *testing.T) {
	t.Parallel()
	res, stdout, stderr := clean(t)
	if res.ExitCode != ExitPass || res.Status != "passed" {
		vs, _ := results.ReadVerdictLog(res.Dir)
		for _, v := range vs {
			if v.Status != results.Pass {
				t.Logf("%s %s %s: %s", v.Status, v.Board, v.Name(), v.Message)
			}
		}
		t.Fatalf("exit %d (%s), want 0 (passed)", res.ExitCode, res.Status)
	}
	run, err := results.ReadRun(res.Dir)
	if err != nil || run.Status != "passed" || run.End == nil || run.ExitCode != 0 || len(run.Bitstreams) != 4 || run.Versions["labrunner"] != "test" {
		t.Fatalf("run.json: %+v (%v)", run, err)
	}
	for _, f := range []string{results.VerdictsFile, results.JUnitFile, report.File, influx.PointsFile, results.LogFile, "compare.json"} {
		if fi, err := os.Stat(filepath.Join(res.Dir, f)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	if len(res.Outcome.Groups) != 2 || len(res.Outcome.Plans) != 2 {
		t.Errorf("outcome: %d groups, %d plans; want 2 and 2", len(res.Outcome.Groups), len(res.Outcome.Plans))
	}
	if !strings.Contains(stdout, "run directory: "+res.Dir+" (passed)") || !strings.Contains(stdout, "2 board groups in parallel") {
		t.Errorf("summary on stdout:\n%s", stdout)
	}
	if !strings.Contains(stderr, "run directory: "+res.Dir) || !strings.Contains(stderr, "mesh-a") {
		t.Errorf("progress on stderr:\n%s", stderr)
	}
}

// What lab check refuses, the nightly refuses before it touches a board or
// makes a run directory: a configuration error (ExitConfig).
func TestNightlyRefusesBadOptionsBeforeAnything(t *testing.T) {
	t.Parallel()
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("lab: x\nboards:\n  - name: a\n    kind: tebf0808\n    bsu: {}\n"), 0o644)
	for name, edit := range map[string]func(*Options){
		"unknown plan":   func(o *Options) { o.Plans = []string{"mesh-c"} },
		"bad shard":      func(o *Options) { o.Shard = "3/2" },
		"bad held":       func(o *Options) { o.Held = "maybe" },
		"unknown fault":  func(o *Options) { o.Faults = []string{"no-such-fault@a0"} },
		"bad lab file":   func(o *Options) { o.LabFile = bad },
		"missing resume": func(o *Options) { o.Resume = filepath.Join(t.TempDir(), "nothing") },
		"influx half":    func(o *Options) { o.Influx.Org = "lab" },
	} {
		t.Run(name, func(t *testing.T) {
			o, _, _ := options(t)
			edit(&o)
			res, err := Nightly(context.Background(), o)
			var e *Error
			if !errors.As(err, &e) || e.Code != ExitConfig {
				t.Fatalf("result %+v, error %v; want an *Error with exit %d", res, err, ExitConfig)
			}
			if dirs := runDirs(t, o.Out); len(dirs) != 0 {
				t.Errorf("run directories made: %v", dirs)
			}
		})
	}
}

// A nightly interrupted (its context cancelled, as SIGINT does) ends
// "interrupted", an infrastructure error, with its directory finished;
// resumed, it runs the rest and ends as a clean run ends: every test case
// once, no measurement twice.
func TestNightlyInterruptedAndResumed(t *testing.T) {
	t.Parallel()
	o, _, _ := options(t)
	o.Parallel = 1
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		// Interrupt once some verdicts are on disk, before the end.
		for ctx.Err() == nil {
			if dirs := runDirs(t, o.Out); len(dirs) == 1 && countVerdicts(dirs[0]) >= 12 {
				cancel()
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	res, err := Nightly(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "interrupted" || res.ExitCode != ExitInfra {
		t.Fatalf("interrupted run: exit %d (%s), want %d (interrupted)", res.ExitCode, res.Status, ExitInfra)
	}
	if r, _ := results.ReadRun(res.Dir); r == nil || r.Status != "interrupted" || r.End == nil {
		t.Fatalf("the interrupted run's run.json: %+v", r)
	}
	var stdout syncbuf.Buffer
	res2, err := Nightly(context.Background(), Options{Resume: res.Dir, Locks: o.Locks, Stdout: &stdout, Version: "test"})
	if err != nil || res2.ExitCode != ExitPass || res2.Dir != res.Dir {
		t.Fatalf("resume: %+v, %v\n%s", res2, err, stdout.String())
	}
	vs, _ := results.ReadVerdictLog(res.Dir)
	cleanRes, _, _ := clean(t)
	cv, _ := results.ReadVerdictLog(cleanRes.Dir)
	if got, want := resultstest.CaseSet(vs), resultstest.CaseSet(cv); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("resumed run has %d cases, a clean run %d", len(got), len(want))
	}
	ms, _ := results.ReadMeasurements(res.Dir)
	seen := map[string]bool{}
	for _, m := range ms {
		k := m.Step + " " + m.Board + " " + m.Key()
		if seen[k] {
			t.Errorf("measurement %s twice", k)
		}
		seen[k] = true
	}
	if r, _ := results.ReadRun(res.Dir); r.Resumes != 1 || r.Status != "passed" {
		t.Errorf("run.json after resume: resumes %d, status %s", r.Resumes, r.Status)
	}
}

func countVerdicts(dir string) int {
	b, err := os.ReadFile(filepath.Join(dir, results.VerdictsLogFile))
	if err != nil {
		return 0
	}
	return bytes.Count(b, []byte("\n"))
}

// panicOnce panics at its first write, then takes what is written.
type panicOnce struct {
	syncbuf.Buffer
	once sync.Once
}

func (p *panicOnce) Write(b []byte) (int, error) {
	p.once.Do(func() { panic("a broken terminal") })
	return p.Buffer.Write(b)
}

// A panic in the run's own goroutine once its directory exists (here the
// terminal's writer, at the run's first line) ends the run as an
// infrastructure error with its directory finished, never left "running",
// and the stack in labrunner.log.
func TestNightlyPanicFinishesTheRunDirectory(t *testing.T) {
	t.Parallel()
	o, _, _ := options(t, "mesh-a")
	o.Stderr = &panicOnce{}
	res, err := Nightly(context.Background(), o)
	var e *Error
	if !errors.As(err, &e) || e.Code != ExitInfra || !strings.Contains(err.Error(), "a broken terminal") {
		t.Fatalf("result %+v, error %v; want an *Error with exit %d naming the panic", res, err, ExitInfra)
	}
	dirs := runDirs(t, o.Out)
	if len(dirs) != 1 {
		t.Fatalf("run directories: %v", dirs)
	}
	if r, _ := results.ReadRun(dirs[0]); r == nil || r.Status != "infrastructure-error" || r.ExitCode != ExitInfra || r.End == nil {
		t.Errorf("run.json after the panic: %+v", r)
	}
	if b, _ := os.ReadFile(filepath.Join(dirs[0], results.LogFile)); !bytes.Contains(b, []byte("a broken terminal")) || !bytes.Contains(b, []byte("goroutine")) {
		t.Errorf("labrunner.log has no stack of the panic:\n%s", b)
	}
}

// Two shards cover the rack once between them: each runs its own board
// group and records its share in run.json.
func TestShardsSplitTheBoardGroups(t *testing.T) {
	t.Parallel()
	var plans []string
	for _, sh := range []string{"1/2", "2/2"} {
		o, _, _ := options(t)
		o.Shard = sh
		res, err := Nightly(context.Background(), o)
		if err != nil || res.ExitCode != ExitPass {
			t.Fatalf("shard %s: %+v, %v", sh, res, err)
		}
		if r, _ := results.ReadRun(res.Dir); r.Shard != sh {
			t.Errorf("shard %s: run.json says %q", sh, r.Shard)
		}
		for _, p := range res.Outcome.Plans {
			plans = append(plans, p.Plan)
		}
	}
	sort.Strings(plans)
	if strings.Join(plans, " ") != "mesh-a mesh-b" {
		t.Errorf("the shards ran %v, want each plan once", plans)
	}
}
