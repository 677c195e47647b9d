package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/labrunner/labrunner/bitstreams"
	gbringup "github.com/labrunner/labrunner/golden/bringup"
	"github.com/labrunner/labrunner/internal/syncbuf"
	"github.com/labrunner/labrunner/labrun"
	"github.com/labrunner/labrunner/results"
	"github.com/labrunner/labrunner/results/resultstest"
	"github.com/labrunner/labrunner/selftest/bringup"
)

// `labrunner bringup` end to end on the emulated rack: the embedded default
// lab passes whole, and on the small Clique of testdata/bringup-clique.yaml
// (two DCN boards, six in-band) each management-plane fault ends the way a
// person at the bench would expect, named in the report; --from, --board
// and --json work. The runs go one after the other: urfave/cli writes into
// the command's flag values, which are package variables shared by every
// app newApp builds.

const cliqueLab = "testdata/bringup-clique.yaml"

type bringupRun struct {
	code   int
	dir    string
	stdout string
	stderr string
	rep    bringup.Report // from --json
	wall   time.Duration
}

// runBringup runs `labrunner bringup ARGS` in process, with stdout and
// stderr captured, and returns its exit code and run directory; with
// --json among args, the report too.
func runBringupCLI(t *testing.T, args ...string) bringupRun {
	t.Helper()
	out := t.TempDir()
	var stdout, stderr syncbuf.Buffer
	t0 := time.Now()
	code := run(append([]string{"labrunner", "--log-level", "debug", "bringup", "--out", out}, args...), &stdout, &stderr)
	r := bringupRun{code: code, wall: time.Since(t0)}
	r.stdout, r.stderr = stdout.String(), stderr.String()
	entries, err := os.ReadDir(out)
	if err != nil || len(entries) != 1 {
		t.Fatalf("want one run directory under %s, got %v (%v); stderr:\n%s", out, entries, err, r.stderr)
	}
	r.dir = filepath.Join(out, entries[0].Name())
	for _, a := range args {
		if a == "--json" {
			if err := json.Unmarshal([]byte(r.stdout), &r.rep); err != nil {
				t.Fatalf("--json: stdout is not the report: %v\n%.600s\nstderr:\n%s", err, r.stdout, r.stderr)
			}
		}
	}
	return r
}

// explain logs what a person would read when an assertion fails.
func (r bringupRun) explain(t *testing.T) {
	t.Helper()
	t.Logf("exit %d after %s; stderr (live output with --json):\n%s", r.code, r.wall.Round(time.Millisecond), r.stderr)
	for _, v := range resultstest.NotPassed(verdicts(t, r.dir)) {
		t.Logf("%s %s %s: %s", v.Status, v.Board, v.Name(), v.Message)
	}
}

func (r bringupRun) board(t *testing.T, name string) bringup.BoardReport {
	t.Helper()
	for _, b := range r.rep.Boards {
		if b.Name == name {
			return b
		}
	}
	t.Fatalf("no board %s in the report", name)
	return bringup.BoardReport{}
}

func stageOf(b bringup.BoardReport, s bringup.Stage) *bringup.StageResult {
	for i := range b.Stages {
		if b.Stages[i].Stage == s {
			return &b.Stages[i]
		}
	}
	return nil
}

// onlyFailing checks that every verdict that did not pass is about one of
// the boards named (or about the rack as a whole when rack is true).
func (r bringupRun) onlyFailing(t *testing.T, boards ...string) []results.Verdict {
	t.Helper()
	ok := map[string]bool{}
	for _, b := range boards {
		ok[b] = true
	}
	bad := resultstest.NotPassed(verdicts(t, r.dir))
	for _, v := range bad {
		if v.Status == results.Skip && strings.Contains(v.Message, "is the TimeSync primary (reading M2)") {
			continue // the primary's client cases, skipped saying why
		}
		if !ok[v.Board] {
			t.Errorf("%s %s %s: %s (only %v should fail)", v.Status, v.Board, v.Name(), v.Message, boards)
		}
	}
	return bad
}

// liveOutputIsClean: one event per line, no log lines among them.
func liveOutputIsClean(t *testing.T, live string) {
	t.Helper()
	event := regexp.MustCompile(`^ *\d+\.\d\ds  (\S+ +\S+ +\S+ |    (expected|seen|check): |bring-up of lab |  rack |from stage |boards brought up)`)
	n := 0
	for _, l := range strings.Split(live, "\n") {
		if l == "" || strings.HasPrefix(l, "run directory: ") {
			continue
		}
		if strings.Contains(l, "level=") || strings.Contains(l, "msg=") {
			t.Errorf("a log line in the live output: %q", l)
		}
		if event.MatchString(l) {
			n++
		} else if strings.HasPrefix(l, " ") && strings.Contains(l, "s  ") {
			t.Errorf("a broken event line: %q", l)
		}
	}
	if n < 10 {
		t.Errorf("only %d event lines in the live output:\n%s", n, live)
	}
}

// The embedded default lab passes whole: every board through every stage,
// each board's wave and proxy as the golden order has it, every offset
// within its golden bound, the live output one line per event and the
// logs in the run directory.
func TestBringupDefaultLabPasses(t *testing.T) {
	t.Parallel()
	r := runBringupCLI(t, "--all", "--json")
	if r.code != 0 {
		r.explain(t)
		t.Fatalf("exit %d, want 0", r.code)
	}
	liveOutputIsClean(t, r.stderr)
	if r.rep.Status != "passed" || r.rep.Checks == nil || r.rep.Checks.Fail+r.rep.Checks.Error != 0 || r.rep.Checks.Pass < 300 {
		t.Errorf("report status %q, checks %+v", r.rep.Status, r.rep.Checks)
	}
	lab, err := labrun.LoadLab("", bitstreams.Default())
	if err != nil {
		t.Fatal(err)
	}
	top, err := bringup.NewTopology(lab, bitstreams.Default())
	if err != nil {
		t.Fatal(err)
	}
	if len(r.rep.Boards) != len(lab.Boards) {
		t.Fatalf("%d boards in the report, the lab has %d", len(r.rep.Boards), len(lab.Boards))
	}
	for _, rk := range top.Racks {
		plan, err := gbringup.Bootstrap(rk.Golden(), gbringup.Faults{})
		if err != nil {
			t.Fatal(err)
		}
		for _, gb := range plan.Boards {
			b := r.board(t, gb.Board)
			proxy, _, _ := strings.Cut(b.Bootstrap.Proxy, ":")
			if b.Bootstrap.Status != "ok" || b.Bootstrap.Wave != gb.Wave {
				t.Errorf("%s: bootstrap %s wave %d, golden wave %d", b.Name, b.Bootstrap.Status, b.Bootstrap.Wave, gb.Wave)
			}
			if err := plan.CheckProxy(b.Name, b.Bootstrap.Wave, proxy); err != nil {
				t.Errorf("%s: %v", b.Name, err)
			}
			for _, s := range bringup.Stages() {
				if st := stageOf(b, s); st == nil || st.Status != bringup.Passed {
					t.Errorf("%s: stage %s %+v", b.Name, s, st)
				}
			}
		}
	}
	// Wave 0 only for the all-DCN racks, three waves in the TiN rack.
	if b := r.board(t, "exa-10"); b.Bootstrap.Wave != 0 || b.Bootstrap.Proxy != "" {
		t.Errorf("exa-10 is DCN: %+v", b.Bootstrap)
	}
	if b := r.board(t, "tin-p1b3"); b.Bootstrap.Wave != 2 {
		t.Errorf("tin-p1b3: %+v", b.Bootstrap)
	}
	// Every client's offset was scored against the golden bound; each
	// rack's primary keeps the case, skipped saying why.
	offsets, primaries := 0, 0
	for _, v := range verdicts(t, r.dir) {
		if v.Metric != "bringup.timesync.offset_ns" && !strings.HasPrefix(v.Name(), "bringup.timesync.offset_ns[") {
			continue
		}
		switch {
		case v.Status == results.Skip && strings.Contains(v.Message, "is the TimeSync primary"):
			primaries++
		case v.Status == results.Pass:
			offsets++
		default:
			t.Errorf("%s: %s %s", v.Board, v.Status, v.Message)
		}
	}
	if offsets != 17 || primaries != 4 { // 21 boards, 4 racks: 4 primaries, 17 clients
		t.Errorf("%d offsets scored and %d primaries' skipped, want 17 and 4", offsets, primaries)
	}
	log, err := os.ReadFile(filepath.Join(r.dir, results.LogFile))
	if err != nil || !bytes.Contains(log, []byte("msg=verdict")) || !bytes.Contains(log, []byte("component=emu")) {
		t.Errorf("the run directory's log has no verdicts or emulator lines (%v)", err)
	}
}

// cliqueFault runs the Clique with faults, with --json.
func cliqueFault(t *testing.T, faults ...string) bringupRun {
	t.Helper()
	args := []string{"--all", "--json", "--lab", cliqueLab}
	for _, f := range faults {
		args = append(args, "--fault", f)
	}
	return runBringupCLI(t, args...)
}

// A lossy MOS channel is repaired by PMOS: everything passes, and the
// report names the cable with its retransmissions.
func TestBringupLossyMOSIsRetransmitted(t *testing.T) {
	t.Parallel()
	r := cliqueFault(t, "mos-lossy@tin-p0b0:sfp3")
	if r.code != 0 {
		r.explain(t)
		t.Fatalf("exit %d, want 0", r.code)
	}
	var note *bringup.CableNote
	for _, rk := range r.rep.Racks {
		for i := range rk.Lossy {
			if rk.Lossy[i].Cable == "tin-p0b0:sfp3=tin-p1b0:sfp3" {
				note = &rk.Lossy[i]
			}
		}
	}
	if note == nil || note.Retx == 0 || !strings.Contains(note.Note, "PMOS recovered") {
		t.Fatalf("the lossy cable is not named with its retransmissions: %+v", r.rep.Racks[0].Lossy)
	}
	if !strings.Contains(r.stderr, "tin-p0b0:sfp3=tin-p1b0:sfp3 WARN    lossy MOS channel") {
		t.Errorf("the live output does not name the cable:\n%s", r.stderr)
	}
	if b := r.board(t, "tin-p1b0"); b.Bootstrap.Wave != 1 || b.Bootstrap.Proxy != "tin-p0b0:sfp3" {
		t.Errorf("tin-p1b0: %+v", b.Bootstrap)
	}
}

// A proxy that dies mid-bootstrap is reported dead; every board it served
// is reached through another neighbour and passes.
func TestBringupDeadProxyIsReplaced(t *testing.T) {
	t.Parallel()
	// tin-p0b0 (DCN) crashes after 60 PMOS frames: its DISCOVERs before it
	// got its address, then proxying wave 1.
	r := cliqueFault(t, "mgmt-proxy-dies@tin-p0b0,after=60")
	if r.code != labrun.ExitInfra {
		r.explain(t)
		t.Fatalf("exit %d, want %d (a board's firmware died)", r.code, labrun.ExitInfra)
	}
	dead := r.board(t, "tin-p0b0")
	if dead.Bootstrap.Status != "died" || !strings.Contains(dead.Bootstrap.Why, "FW_HEARTBEAT frozen") {
		r.explain(t)
		t.Fatalf("tin-p0b0: %+v", dead.Bootstrap)
	}
	for _, b := range r.rep.Boards {
		if b.Name == "tin-p0b0" {
			continue
		}
		if b.Bootstrap.Status != "ok" || strings.HasPrefix(b.Bootstrap.Proxy, "tin-p0b0:") || b.Bootstrap.Root == "tin-p0b0" {
			t.Errorf("%s still depends on the dead tin-p0b0: %+v", b.Name, b.Bootstrap)
		}
	}
	// tin-p1b0's only wave-1 proxy was tin-p0b0: a wave later, as the
	// golden plan has it once tin-p0b0 is gone.
	if b := r.board(t, "tin-p1b0"); b.Bootstrap.Wave != 2 {
		t.Errorf("tin-p1b0: %+v", b.Bootstrap)
	}
	r.onlyFailing(t, "tin-p0b0")
}

// A board whose management firmware never boots is reported failed with
// the evidence; the rest pass.
func TestBringupNeverBootingBoardFailsAlone(t *testing.T) {
	t.Parallel()
	r := cliqueFault(t, "mgmt-never-boots@tin-p1b0")
	if r.code != labrun.ExitInfra {
		r.explain(t)
		t.Fatalf("exit %d, want %d", r.code, labrun.ExitInfra)
	}
	b := r.board(t, "tin-p1b0")
	if b.FirstFailure == nil || b.FirstFailure.Stage != bringup.StageBootstrap ||
		!strings.Contains(b.FirstFailure.Seen, "never answered") || !strings.Contains(b.FirstFailure.Seen, "its firmware does not acknowledge") {
		t.Fatalf("tin-p1b0: %+v", b.FirstFailure)
	}
	for _, s := range []bringup.Stage{bringup.StageIdentity, bringup.StageTimeSync, bringup.StageLoopback} {
		if st := stageOf(b, s); st == nil || st.Status != bringup.Blocked {
			t.Errorf("tin-p1b0 %s: %+v", s, st)
		}
	}
	r.onlyFailing(t, "tin-p1b0")
	// Its wave-2 neighbours came through other wave-1 boards.
	if b := r.board(t, "tin-p1b1"); b.Bootstrap.Status != "ok" || b.Bootstrap.Wave != 2 {
		t.Errorf("tin-p1b1: %+v", b.Bootstrap)
	}
}

// A clock far off its declared drift fails the time sync of its board,
// and the diagnosis names the board's oscillator.
func TestBringupSlowClockIsNamed(t *testing.T) {
	t.Parallel()
	r := cliqueFault(t, "slow-clock@tin-p1b3")
	if r.code != labrun.ExitFail {
		r.explain(t)
		t.Fatalf("exit %d, want %d", r.code, labrun.ExitFail)
	}
	b := r.board(t, "tin-p1b3")
	if b.FirstFailure == nil || b.FirstFailure.Stage != bringup.StageTimeSync || !strings.Contains(b.FirstFailure.Check, "the oscillator of tin-p1b3") {
		t.Fatalf("tin-p1b3: %+v", b.FirstFailure)
	}
	r.onlyFailing(t, "tin-p1b3")
}

// An asymmetric cable reads longer than the lab file says: the time sync
// of both its ends fails naming the cable.
func TestBringupAsymmetricLinkIsNamed(t *testing.T) {
	t.Parallel()
	r := cliqueFault(t, "link-asymmetric@tin-p0b3:sfp3")
	if r.code != labrun.ExitFail {
		r.explain(t)
		t.Fatalf("exit %d, want %d", r.code, labrun.ExitFail)
	}
	for _, name := range []string{"tin-p0b3", "tin-p1b3"} {
		b := r.board(t, name)
		if b.FirstFailure == nil || b.FirstFailure.Stage != bringup.StageTimeSync ||
			!strings.Contains(b.FirstFailure.Seen, "cable tin-p0b3:sfp3=tin-p1b3:sfp3 measures") {
			t.Errorf("%s: %+v", name, b.FirstFailure)
		}
	}
	bad := r.onlyFailing(t, "tin-p0b3", "tin-p1b3")
	found := false
	for _, v := range bad {
		found = found || v.Metric == "bringup.timesync.link_delay_ns"
	}
	if !found {
		t.Error("no failing link_delay_ns verdict")
	}
}

// A firmware reboot without traffic loss is reconciled: the differences
// found are listed, fixed, and the run passes.
func TestBringupNSFRebootIsReconciled(t *testing.T) {
	t.Parallel()
	r := cliqueFault(t, "mgmt-nsf-reboot@tin-p1b1")
	if r.code != 0 {
		r.explain(t)
		t.Fatalf("exit %d, want 0", r.code)
	}
	b := r.board(t, "tin-p1b1")
	var fixed []string
	for _, rc := range b.Reconciled {
		if !strings.Contains(rc.Reason, "firmware rebooted") {
			continue
		}
		for _, d := range rc.Diffs {
			if !d.Fixed {
				t.Errorf("%s not fixed", d.Register)
			}
			fixed = append(fixed, d.Register)
		}
	}
	if !strings.Contains(strings.Join(fixed, ","), "DEFAULT_ROUTE") {
		t.Fatalf("reconciliations of tin-p1b1: %+v", b.Reconciled)
	}
	if !strings.Contains(r.stderr, "reconcile  tin-p1b1") {
		t.Errorf("the live output does not show the reconciliation:\n%s", r.stderr)
	}
}

// When the DCN boards fail an earlier stage, the in-band boards are
// reported at once, naming the boards they depend on: no deadline waited.
func TestBringupUnreachableBoardsReportedAtOnce(t *testing.T) {
	t.Parallel()
	r := runBringupCLI(t, "--all", "--json", "--lab", cliqueLab, "--deadline", "bootstrap=60s",
		"--fault", "board-silent@tin-p0b0", "--fault", "board-silent@tin-p0b2")
	if r.code != labrun.ExitInfra {
		r.explain(t)
		t.Fatalf("exit %d, want %d", r.code, labrun.ExitInfra)
	}
	for _, b := range r.rep.Boards {
		st := stageOf(b, bringup.StageBootstrap)
		if b.DCN {
			if st == nil || st.Status != bringup.Blocked {
				t.Errorf("%s bootstrap: %+v", b.Name, st)
			}
			continue
		}
		if b.Bootstrap.Status != "unreachable" || !strings.Contains(b.Bootstrap.Why, "tin-p0b0 (failed") || !strings.Contains(b.Bootstrap.Why, "tin-p0b2 (failed") {
			t.Errorf("%s: %+v", b.Name, b.Bootstrap)
		}
		if st == nil || st.Duration > 10*time.Second {
			t.Errorf("%s: bootstrap stage took %v: the outcome was known at once", b.Name, st)
		}
	}
}

// --from resumes at a stage: the earlier ones are not judged, what the
// later ones need is re-established quietly.
func TestBringupFromResumes(t *testing.T) {
	t.Parallel()
	r := runBringupCLI(t, "--all", "--json", "--lab", cliqueLab, "--from", "timesync")
	if r.code != 0 {
		r.explain(t)
		t.Fatalf("exit %d, want 0", r.code)
	}
	for _, v := range verdicts(t, r.dir) {
		for _, s := range []string{"power", "program", "identity", "scratch", "links", "bootstrap"} {
			if v.Test == "bringup."+s {
				t.Errorf("a verdict for a stage before --from: %s %s", v.Board, v.Name())
			}
		}
	}
	for _, b := range r.rep.Boards {
		if st := stageOf(b, bringup.StageBootstrap); st == nil || st.Status != bringup.Skipped || b.Bootstrap.Status != "ok" {
			t.Errorf("%s: bootstrap %+v / %+v", b.Name, st, b.Bootstrap)
		}
		if st := stageOf(b, bringup.StageTimeSync); st == nil || st.Status != bringup.Passed {
			t.Errorf("%s: timesync %+v", b.Name, st)
		}
	}
	if !strings.Contains(r.stderr, "from stage timesync") {
		t.Errorf("the live output does not say where it resumed")
	}
}

// --board brings one in-band board up; its rack is bootstrapped only as far
// as needed, and only that board is judged.
func TestBringupOneBoard(t *testing.T) {
	t.Parallel()
	r := runBringupCLI(t, "--board", "tin-p1b1", "--json", "--lab", cliqueLab)
	if r.code != 0 {
		r.explain(t)
		t.Fatalf("exit %d, want 0", r.code)
	}
	b := r.board(t, "tin-p1b1")
	for _, s := range bringup.Stages() {
		if st := stageOf(b, s); st == nil || st.Status != bringup.Passed {
			t.Errorf("tin-p1b1 %s: %+v", s, st)
		}
	}
	if b.Bootstrap.Wave != 2 || !b.Judged {
		t.Errorf("tin-p1b1: %+v", b.Bootstrap)
	}
	for _, name := range []string{"tin-p0b3", "tin-p1b3"} {
		if o := r.board(t, name); o.Bootstrap.Status != "" || o.Judged {
			t.Errorf("%s is not on a shortest path to tin-p1b1, yet %+v", name, o.Bootstrap)
		}
	}
	for _, v := range verdicts(t, r.dir) {
		if v.Board != "tin-p1b1" {
			t.Errorf("a verdict about another board: %s %s", v.Board, v.Name())
		}
	}
	if len(r.rep.Only) != 1 || r.rep.Only[0] != "tin-p1b1" {
		t.Errorf("report: only %v", r.rep.Only)
	}
}

// --json prints the report, and only the report, on stdout.
func TestBringupJSONShape(t *testing.T) {
	t.Parallel()
	r := runBringupCLI(t, "--all", "--json", "--lab", cliqueLab)
	if r.code != 0 {
		r.explain(t)
		t.Fatalf("exit %d", r.code)
	}
	var raw map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &raw); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"lab", "from", "start", "end", "run_dir", "status", "exit_code", "checks", "racks", "boards"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("no %q in the JSON report", k)
		}
	}
	if r.rep.Lab != "bringup-clique" || r.rep.RunDir != r.dir || len(r.rep.Boards) != 8 || len(r.rep.Racks) != 1 {
		t.Errorf("report: lab %q dir %q, %d boards, %d racks", r.rep.Lab, r.rep.RunDir, len(r.rep.Boards), len(r.rep.Racks))
	}
	rk := r.rep.Racks[0]
	if len(rk.Waves) != 3 || len(rk.Golden) != 3 || rk.TimeSync == nil || rk.TimeSync.Primary != "tin-p0b0" || len(rk.TimeSync.Links) != 16 {
		t.Errorf("rack: %+v", rk)
	}
	for _, b := range r.rep.Boards {
		if len(b.Stages) != len(bringup.Stages()) || b.Bootstrap.Status != "ok" || b.TimeSync == nil || b.Address == "" {
			t.Errorf("%s: %+v", b.Name, b)
		}
		if !b.DCN && (b.Bootstrap.Proxy == "" || b.Bootstrap.TimeMS <= 0) {
			t.Errorf("%s: in-band without proxy or time: %+v", b.Name, b.Bootstrap)
		}
	}
	if strings.Contains(r.stdout, "bootstrap  ") {
		t.Error("live output on stdout with --json")
	}
	// Without --json the text report ends the output.
	t2 := runBringupCLI(t, "--board", "tin-p0b0", "--lab", cliqueLab)
	if t2.code != 0 || !strings.Contains(t2.stdout, "checks: ") || !strings.Contains(t2.stdout, "BOARD ") {
		t.Errorf("text output (exit %d):\n%s", t2.code, t2.stdout)
	}
}

// Each stage has its own deadline: a bootstrap cut short reports the boards
// it did not reach, and the run goes on with the later stages at once.
func TestBringupStageDeadline(t *testing.T) {
	t.Parallel()
	r := runBringupCLI(t, "--all", "--json", "--lab", cliqueLab, "--deadline", "bootstrap=1ms")
	if r.code != labrun.ExitInfra {
		r.explain(t)
		t.Fatalf("exit %d, want %d", r.code, labrun.ExitInfra)
	}
	for _, b := range r.rep.Boards {
		if b.DCN {
			continue
		}
		if b.Bootstrap.Status == "ok" || !strings.Contains(b.Bootstrap.Why, "deadline") {
			t.Errorf("%s: %+v", b.Name, b.Bootstrap)
		}
		if st := stageOf(b, bringup.StageTimeSync); st == nil || st.Status != bringup.Blocked {
			t.Errorf("%s timesync after a failed bootstrap: %+v", b.Name, st)
		}
	}
	if r.wall > 30*time.Second {
		t.Errorf("the run took %v: a stage waited past its deadline", r.wall)
	}
}
