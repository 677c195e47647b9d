package all_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/boards/emu"
	_ "github.com/labrunner/labrunner/boards/emu/designs" // the emulated designs (test only)
	"github.com/labrunner/labrunner/drivers"
	"github.com/labrunner/labrunner/internal/raceshare"
	"github.com/labrunner/labrunner/labconfig"
	"github.com/labrunner/labrunner/labrun"
	"github.com/labrunner/labrunner/results"
	_ "github.com/labrunner/labrunner/selftest/all"
	"github.com/labrunner/labrunner/selftest/bringup"
)

// No golden input is read from a board under test (readings A60, E62, P60,
// S60): the default lab's plans run twice on the emulated rack, once clean
// and once with every configuration register the manifests declare
// answering a wrong value on every board (a bus between the runner and the
// board flips the lowest bit of each declared field on every read; the
// design behind it is unchanged). The expectations recorded must be the
// same, line for line, and every registers.config verdict of the
// corrupted run must fail while the clean run's pass.
//
// Under the race detector the test has no share: the corrupted run of
// racePlan's plan took 10 s of CPU there, in a race pass that is CPU-bound,
// and make test runs the test whole without the detector (FULL_TESTS, every
// plan). Its code paths still run under the detector each day: the plan's
// clean run (TestDefaultPlansCatchEveryDesignFault's) reads the same
// registers through the same code, and failed verdicts are judged and
// recorded in the fault runs.
func TestGoldenInputsNeverComeFromTheBoard(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the default lab's plans twice")
	}
	if raceshare.SecondPassOnly(t, "TestDefaultPlansCatchEveryDesignFault's runs read the same registers and judge failed verdicts under the detector") {
		return
	}
	t.Parallel()
	cat := bitstreams.Default()
	// The corrupted run goes side by side with the clean one (shared with
	// TestDefaultPlansCatchEveryDesignFault): neither waits for the other.
	var (
		wg     sync.WaitGroup
		bad    string
		badErr error
	)
	badRoot := t.TempDir()
	wg.Add(1)
	go func() {
		defer wg.Done()
		bad, _, badErr = runLabIn(badRoot, cat, labRun{corrupt: true})
	}()
	defer wg.Wait() // a failed clean run ends the test: not before this one
	clean := cleanDefaultLab(t, cat)
	wg.Wait()
	if badErr != nil {
		t.Fatal(badErr)
	}

	ce, be := expectations(t, clean), expectations(t, bad)
	if len(ce) == 0 {
		t.Fatal("the clean run recorded no expectation")
	}
	if !slices.Equal(ce, be) {
		onlyClean, onlyBad := diff(ce, be), diff(be, ce)
		for i, l := range onlyClean {
			if i < 5 {
				t.Errorf("only in the clean run: %s", l)
			}
		}
		for i, l := range onlyBad {
			if i < 5 {
				t.Errorf("only with the configuration registers corrupted: %s", l)
			}
		}
		t.Fatalf("%d expectations differ (%d clean, %d corrupted): a golden input came from a board's register", len(onlyClean)+len(onlyBad), len(ce), len(be))
	}

	checkBudgets(t, clean)

	cv, bv := configVerdicts(t, clean), configVerdicts(t, bad)
	if len(cv) == 0 || len(cv) != len(bv) {
		t.Fatalf("%d registers.config verdicts clean, %d corrupted", len(cv), len(bv))
	}
	designs := map[string]bool{}
	for k, v := range cv {
		if v.Status != results.Pass {
			t.Errorf("clean run: %s on %s: %s %s", k, v.Board, v.Status, v.Message)
		}
		if w := bv[k]; w.Status != results.Fail || w.Class != "design" {
			t.Errorf("corrupted run: %s on %s: %s (%s), want a design failure", k, w.Board, w.Status, w.Class)
		}
		designs[v.Design] = true
	}
	for _, d := range []string{"exanet", "prr", "shoal", "tin"} {
		if !designs[d] {
			t.Errorf("no registers.config verdict for design %s", d)
		}
	}
}

// selftestBands are, by plan, the metrics whose expectations the plan
// tests build themselves (from golden simulations, the paper's bounds, or
// what the runner asked for); golden models' own expectations get their
// budgets from golden/.
var selftestBands = map[string][]string{
	"exanet-mesh": {"exanet.dor_path"},
	"prr":         {"prr.latency.avg", "prr.latency.max", "prr.sim_throughput", "prr.drop_rate"},
	"shoal": {"shoal.incast.fct_us", "shoal.incast.max_queue", "shoal.max_queue", "shoal.permutation.throughput", "shoal.failed_slots.fraction",
		"shoal.corruption.corrupt_cells"},
	"tin": {"ordering.fallbacks", "tin.ip.rtsq_hwm"},
}

// checkBudgets: every expectation the plan tests build says what its
// width is made of (Budget), and one wider than ±10%, one-sided, or
// reaching 0 says why (Wide). Each metric of selftestBands, of every plan,
// must appear.
func checkBudgets(t *testing.T, dir string) {
	t.Helper()
	var bands []string
	for _, ms := range selftestBands {
		bands = append(bands, ms...)
	}
	f, err := os.Open(filepath.Join(dir, results.ExpectationsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var e results.Expectation
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(bands, e.Metric) {
			continue
		}
		seen[e.Metric] = true
		if e.Budget == "" {
			t.Errorf("%s: no budget (what the band's width is made of)", e.Key())
		}
		if e.NeedsReason() && e.Wide == "" {
			below, above, _ := e.RelativeBand()
			t.Errorf("%s: band -%.0f%% +%.0f%% (%s) without a reason", e.Key(), 100*below, 100*above, e.Describe())
		}
	}
	for _, m := range bands {
		if !seen[m] {
			t.Errorf("no expectation of %s in the default lab's run", m)
		}
	}
}

// cleanRun is the default lab's clean run, made once for the tests that
// read one.
var cleanRun struct {
	once  sync.Once
	root  string
	dir   string
	out   labrun.Outcome
	names []string // its cases (caseNames), read once for every test that compares with them
	err   error
}

// cleanDefaultLab runs the default lab's nightly without a fault once per
// test binary and returns its run directory; it fails the test unless the
// run passed. Under the race detector the nightly runs racePlan's plan
// alone.
func cleanDefaultLab(t *testing.T, cat *bitstreams.Catalogue) string {
	t.Helper()
	dir, err := cleanDefault(onlyPlan(t), cat)
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// cleanDefault is cleanDefaultLab for a caller that reports the error
// itself (a cleanup): the run of plans, made once per test binary.
func cleanDefault(plans []string, cat *bitstreams.Catalogue) (string, error) {
	cleanRun.once.Do(func() {
		// Not a test's TempDir: the run outlives the first test that asks.
		if cleanRun.root, cleanRun.err = os.MkdirTemp("", "labrunner-clean-default-"); cleanRun.err != nil {
			return
		}
		if cleanRun.dir, cleanRun.out, cleanRun.err = runLabIn(cleanRun.root, cat, labRun{plans: plans}); cleanRun.err == nil {
			cleanRun.names, cleanRun.err = caseNamesIn(cleanRun.dir)
		}
	})
	if cleanRun.err != nil {
		return "", cleanRun.err
	}
	if cleanRun.out.ExitCode != 0 {
		return "", fmt.Errorf("clean run: exit %d (%s)", cleanRun.out.ExitCode, cleanRun.out.Status)
	}
	return cleanRun.dir, nil
}

func TestMain(m *testing.M) {
	code := m.Run()
	if cleanRun.root != "" {
		os.RemoveAll(cleanRun.root)
	}
	os.Exit(code)
}

// labRun says how to run the default lab in process.
type labRun struct {
	plans   []string            // only these plans (all when empty)
	tests   map[string][]string // plan -> only these tests, in the plan's order (all when absent)
	faults  []string            // emulator faults, as --fault takes them
	corrupt bool
	mgmt    bool // run each plan's management check, as the nightly does
}

type labResult struct {
	dir string
	out labrun.Outcome
}

// runLab runs the default lab's nightly in process. Every emulated board's
// bus is the emulator's own (no UART bridge, for speed).
func runLab(t *testing.T, cat *bitstreams.Catalogue, o labRun) labResult {
	t.Helper()
	dir, out, err := runLabIn(t.TempDir(), cat, o)
	if err != nil {
		t.Fatal(err)
	}
	return labResult{dir: dir, out: out}
}

// runLabIn is runLab's run, its directory made under root.
func runLabIn(root string, cat *bitstreams.Catalogue, o labRun) (string, labrun.Outcome, error) {
	lab, err := labconfig.Default(labconfig.Known{})
	if err != nil {
		return "", labrun.Outcome{}, err
	}
	design := map[string]*bitstreams.Manifest{}
	for i, p := range lab.Plans {
		m, err := cat.Design(p.Design)
		if err != nil {
			return "", labrun.Outcome{}, err
		}
		for _, pb := range p.Boards {
			design[pb.Board] = m
		}
		if only, ok := o.tests[p.Name]; ok {
			var keep []labconfig.Test
			for _, pt := range p.Tests {
				if slices.Contains(only, pt.Name) {
					keep = append(keep, pt)
				}
			}
			lab.Plans[i].Tests = keep
		}
	}
	for i := range lab.Boards {
		if lab.Boards[i].Emulated != nil {
			lab.Boards[i].Bus = labconfig.Bus{Emulated: &struct{}{}}
		}
	}
	var faults []labconfig.Fault
	for _, f := range o.faults {
		lf, err := labconfig.ParseFault(f)
		if err != nil {
			return "", labrun.Outcome{}, err
		}
		faults = append(faults, lf)
	}
	rack, err := emu.Start(lab, emu.Options{Catalogue: cat, Faults: faults, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		return "", labrun.Outcome{}, err
	}
	defer rack.Close()
	dir, err := results.Create(root, results.Run{Lab: lab.Name, Seed: lab.Seed, Start: time.Now(), Faults: o.faults})
	if err != nil {
		return "", labrun.Outcome{}, err
	}
	n := labrun.Groups{Lab: lab, Catalogue: cat, Emulator: rack, Dir: dir, Log: slog.New(slog.DiscardHandler), Plans: o.plans}
	if o.corrupt {
		n.Emulator = corrupting{Rack: rack, design: design}
	}
	if o.mgmt {
		n.Mgmt = bringup.NightlyCheck(cat)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	out := n.Run(ctx)
	dir.Close()
	return dir.Path, out, nil
}

// corrupting serves the emulated rack with a bus that lies about the
// declared configuration registers.
type corrupting struct {
	*emu.Rack
	design map[string]*bitstreams.Manifest
}

func (c corrupting) Bus(board string) (drivers.RegisterBus, error) {
	b, err := c.Rack.Bus(board)
	if err != nil || c.design[board] == nil {
		return b, err
	}
	return newLyingBus(b, c.design[board])
}

// lyingBus flips the lowest bit of every declared configuration field on
// every read; writes pass.
type lyingBus struct {
	drivers.RegisterBus
	flip map[uint64]uint32 // word address -> bits to flip
}

func newLyingBus(b drivers.RegisterBus, m *bitstreams.Manifest) (*lyingBus, error) {
	l := &lyingBus{RegisterBus: b, flip: map[uint64]uint32{}}
	for _, c := range m.Config {
		if c.Register == "" {
			continue
		}
		names, field, err := m.ConfigRegisters(c.Register)
		if err != nil {
			return nil, err
		}
		for _, n := range names {
			r, addr, err := m.Lookup(n)
			if err != nil {
				return nil, err
			}
			bit := uint32(1)
			for _, f := range r.Fields {
				if f.Name == field {
					lo, _, err := bitstreams.ParseBits(f.Bits)
					if err != nil {
						return nil, err
					}
					bit = 1 << lo
				}
			}
			l.flip[addr] |= bit
		}
	}
	return l, nil
}

func (l *lyingBus) Read32(ctx context.Context, addr uint64) (uint32, error) {
	v, err := l.RegisterBus.Read32(ctx, addr)
	return v ^ l.flip[addr], err
}

func (l *lyingBus) ReadBurst(ctx context.Context, addr uint64, dst []uint32) error {
	err := l.RegisterBus.ReadBurst(ctx, addr, dst)
	for i := range dst {
		dst[i] ^= l.flip[addr+4*uint64(i)]
	}
	return err
}

// expectations returns the run's expectations.jsonl lines, sorted (plans
// run in parallel, so lines interleave differently from run to run).
func expectations(t *testing.T, dir string) []string {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, results.ExpectationsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			out = append(out, l)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

func diff(a, b []string) []string {
	var out []string
	for _, x := range a {
		if _, found := slices.BinarySearch(b, x); !found {
			out = append(out, x)
		}
	}
	return out
}

// configVerdicts indexes a run's registers.config verdicts by board and
// case name.
func configVerdicts(t *testing.T, dir string) map[string]results.Verdict {
	t.Helper()
	vs, err := results.ReadVerdictLog(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]results.Verdict{}
	for _, v := range vs {
		if v.Test == "registers.config" {
			out[v.Board+" "+v.Name()] = v
		}
	}
	return out
}
