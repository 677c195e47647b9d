package campaign

import (
	"context"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/boards/emu"
	"github.com/labrunner/labrunner/labconfig"
	"github.com/labrunner/labrunner/labrun"
	"github.com/labrunner/labrunner/results"
	"github.com/labrunner/labrunner/selftest"
	"github.com/labrunner/labrunner/selftest/bringup"
)

// Target modes.
const (
	TargetsAll      = "all"      // every target a fault can name
	TargetsRotation = "rotation" // one per fault and plan group, by night
)

// Options configure a campaign.
type Options struct {
	Lab       *labconfig.Lab
	Catalogue *bitstreams.Catalogue
	// Plans restricts the campaign to these plans (all when empty).
	Plans []string
	// Faults restricts it to faults whose name matches one of these
	// patterns (path.Match: "uart-*"); all when empty.
	Faults []string
	// Targets is TargetsAll or TargetsRotation; Night picks the rotation's
	// targets.
	Targets string
	Night   int
	// Registry is the faults to enumerate (emu.Faults() when nil).
	Registry []emu.FaultInfo
	// Root is where the baseline's run directory is created; the rounds'
	// go under it, in campaign/.
	Root     string
	Seed     int64
	Log      *slog.Logger
	Mgmt     func(ctx context.Context, env *selftest.Env) error
	Parallel int
	// Progress, if set, is told when a round starts.
	Progress func(round, rounds int, faults []string)
}

// Job is one fault on one target, within one board group.
type Job struct {
	Fault  string // as --fault takes it
	Info   emu.FaultInfo
	Target string
	Benign bool
	Plans  []string
	group  int
}

// group is a set of plans sharing boards: what runs in parallel with the
// other groups, so one fault per group can run in the same round.
type group struct {
	plans  []*labconfig.Plan
	boards []string
	design map[string]string           // board -> the design its plans load
	params map[string]labconfig.Params // board -> its parameters in its plan (the plan's, then the board's)
	direct map[string]bool             // board -> reached directly, not in band (bringup.Direct)
}

// Jobs enumerates the faults of the registry on the targets each can name
// in each board group of the selected plans, per group (TargetsAll), or one
// target per fault and group (TargetsRotation).
func Jobs(opts Options) ([][]Job, error) {
	plans, err := selectPlans(opts.Lab, opts.Plans)
	if err != nil {
		return nil, err
	}
	reg := opts.Registry
	if reg == nil {
		reg = emu.Faults()
	}
	var want []emu.FaultInfo
	for _, f := range reg {
		if matches(f.Name, opts.Faults) {
			want = append(want, f)
		}
	}
	if len(opts.Faults) > 0 && len(want) == 0 {
		return nil, fmt.Errorf("no fault of the registry matches %s (see labrunner faults)", strings.Join(opts.Faults, ", "))
	}
	mode := opts.Targets
	if mode == "" {
		mode = TargetsRotation
	}
	if mode != TargetsAll && mode != TargetsRotation {
		return nil, fmt.Errorf("targets %q: use %s or %s", mode, TargetsAll, TargetsRotation)
	}
	var out [][]Job
	cat := opts.Catalogue
	if cat == nil {
		cat = bitstreams.Default()
	}
	for gi, ps := range labrun.GroupPlans(plans) {
		g := newGroup(ps)
		if g.direct, err = bringup.Direct(opts.Lab, cat, g.boards); err != nil {
			return nil, err
		}
		var jobs []Job
		for _, f := range want {
			targets := g.targets(opts.Lab, f)
			if len(targets) == 0 {
				continue
			}
			variants := []string{""}
			variants = append(variants, f.Severe...)
			for _, v := range variants {
				ts := targets
				if mode == TargetsRotation {
					h := fnv.New32a()
					h.Write([]byte(f.Name + "," + v))
					ts = []string{targets[(uint32(opts.Night)+h.Sum32())%uint32(len(targets))]}
				}
				for _, t := range ts {
					spec := f.Name
					if t != "" {
						spec += "@" + t
					}
					if v != "" {
						spec += "," + v
					}
					jobs = append(jobs, Job{Fault: spec, Info: f, Target: t, Benign: f.Benign && v == "", Plans: g.planNames(), group: gi})
				}
			}
		}
		out = append(out, jobs)
	}
	return out, nil
}

func matches(name string, patterns []string) bool {
	if len(patterns) == 0 {
		return true
	}
	for _, p := range patterns {
		if ok, _ := path.Match(p, name); ok || p == name {
			return true
		}
	}
	return false
}

func selectPlans(lab *labconfig.Lab, names []string) ([]*labconfig.Plan, error) {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	var out []*labconfig.Plan
	found := map[string]bool{}
	for i := range lab.Plans {
		p := &lab.Plans[i]
		if len(want) == 0 || want[p.Name] {
			out = append(out, p)
			found[p.Name] = true
		}
	}
	var missing []string
	for n := range want {
		if !found[n] {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return nil, fmt.Errorf("no plan %s in lab %s", strings.Join(missing, ", "), lab.Name)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("lab %s has no plan", lab.Name)
	}
	return out, nil
}

func newGroup(ps []*labconfig.Plan) *group {
	g := &group{plans: ps, design: map[string]string{}, params: map[string]labconfig.Params{}}
	for _, p := range ps {
		for _, pb := range p.Boards {
			if _, ok := g.design[pb.Board]; !ok {
				g.design[pb.Board] = p.Design
				g.boards = append(g.boards, pb.Board)
				merged := labconfig.Params{}
				for k, v := range p.Params {
					merged[k] = v
				}
				for k, v := range pb.Params {
					merged[k] = v
				}
				g.params[pb.Board] = merged
			}
		}
	}
	return g
}

func (g *group) planNames() []string {
	var out []string
	for _, p := range g.plans {
		out = append(out, p.Name)
	}
	return out
}

// targets lists what fault f can be aimed at in the group: its boards (or
// their cabled ports, for a link fault) that run the fault's design and
// have what it needs; "" for a rack-wide fault.
func (g *group) targets(lab *labconfig.Lab, f emu.FaultInfo) []string {
	cabled := map[string][]string{} // board -> its ports cabled to a board of the group
	for _, l := range lab.Links {
		_, okA := g.design[l.A.Board]
		_, okB := g.design[l.B.Board]
		if okA && okB {
			cabled[l.A.Board] = append(cabled[l.A.Board], l.A.Port)
			cabled[l.B.Board] = append(cabled[l.B.Board], l.B.Port)
		}
	}
	fits := func(board string) bool {
		if f.Design != "" && g.design[board] != f.Design {
			return false
		}
		cfg, ok := lab.Board(board)
		if !ok || cfg.Emulated == nil {
			return false
		}
		for _, n := range f.Needs {
			switch n {
			case emu.NeedsUARTBridge:
				if cfg.Bus.UARTBridge == nil {
					return false
				}
			case emu.NeedsCable:
				if len(cabled[board]) == 0 {
					return false
				}
			case emu.NeedsInBand:
				if g.direct[board] {
					return false
				}
			default:
				kv, ok := strings.CutPrefix(n, "param:")
				k, want, _ := strings.Cut(kv, "=")
				if ok && strings.Join(g.params[board][k].Values, ",") != want {
					return false
				}
			}
		}
		return true
	}
	var out []string
	switch f.Scope {
	case "rack":
		for _, b := range g.boards {
			if fits(b) {
				return []string{""}
			}
		}
	case "link":
		for _, b := range g.boards {
			if !fits(b) {
				continue
			}
			ports := append([]string(nil), cabled[b]...)
			sort.Strings(ports)
			for _, p := range ports {
				out = append(out, b+":"+p)
			}
		}
	default:
		for _, b := range g.boards {
			if fits(b) {
				out = append(out, b)
			}
		}
	}
	return out
}

// Run runs the campaign: the selected plans once without a fault (the
// baseline, into a run directory under Root), then in rounds, each with one
// fault per board group (groups run in parallel), into run directories under
// the baseline's campaign/. It returns the campaign and the baseline's
// directory; the caller writes the campaign there (results.WriteCampaign).
func Run(ctx context.Context, opts Options) (*results.Campaign, string, error) {
	if opts.Log == nil {
		opts.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	jobs, err := Jobs(opts)
	if err != nil {
		return nil, "", err
	}
	plans, _ := selectPlans(opts.Lab, opts.Plans)
	var names []string
	for _, p := range plans {
		names = append(names, p.Name)
	}
	rounds := 0
	for _, js := range jobs {
		rounds = max(rounds, len(js))
	}
	start := time.Now()
	c := &results.Campaign{Lab: opts.Lab.Name, Plans: names, Start: start, Targets: opts.Targets, Night: opts.Night, Rounds: rounds}
	if c.Targets == "" {
		c.Targets = TargetsRotation
	}
	run := func(root string, faults []string) (*RunResult, error) {
		return RunPlans(ctx, RunOptions{Lab: opts.Lab, Catalogue: opts.Catalogue, Plans: names, Faults: faults, Seed: opts.Seed,
			Root: root, Log: opts.Log, Mgmt: opts.Mgmt, Parallel: opts.Parallel, Command: "labrunner faults campaign"})
	}
	if opts.Progress != nil {
		opts.Progress(0, rounds, nil)
	}
	base, err := run(opts.Root, nil)
	if err != nil {
		return nil, "", err
	}
	baseVerdicts := byPlan(base.Verdicts)
	red := map[string]bool{} // plan, board and test with a case that did not pass in the baseline
	for _, v := range base.Verdicts {
		if v.Status != results.Pass && v.Status != results.Skip {
			red[testKey(v)] = true
		}
	}
	baseRed := map[string]bool{}
	for _, p := range names {
		code, status := labrun.ExitCodeOf(baseVerdicts[p])
		baseRed[p] = code != labrun.ExitPass
		failing := 0
		for _, v := range baseVerdicts[p] {
			if v.Status != results.Pass {
				failing++
			}
		}
		c.Baseline = append(c.Baseline, results.CampaignPlan{Plan: p, ExitCode: code, Status: status, Failing: failing,
			WallSeconds: groupSeconds(base.Outcome, p), RunDir: base.Dir})
	}
	roundsRoot := filepath.Join(base.Dir, "campaign")
	for k := 0; k < rounds && ctx.Err() == nil; k++ {
		var faults []string
		var these []Job
		for _, js := range jobs {
			if k < len(js) {
				faults = append(faults, js[k].Fault)
				these = append(these, js[k])
			}
		}
		if opts.Progress != nil {
			opts.Progress(k+1, rounds, faults)
		}
		res, err := run(roundsRoot, faults)
		if err != nil {
			return nil, "", fmt.Errorf("round %d (%s): %w", k+1, strings.Join(faults, " "), err)
		}
		vs := byPlan(res.Verdicts)
		ms, err := results.ReadMeasurements(res.Dir)
		if err != nil {
			return nil, "", err
		}
		for _, j := range these {
			c.Entries = append(c.Entries, score(j, k+1, res, vs, ms, red, baseRed))
		}
	}
	c.WallSeconds = time.Since(start).Seconds()
	return c, base.Dir, ctx.Err()
}

func byPlan(vs []results.Verdict) map[string][]results.Verdict {
	out := map[string][]results.Verdict{}
	for _, v := range vs {
		out[v.Plan] = append(out[v.Plan], v)
	}
	return out
}

// testKey names a test on a board of a plan: a case's parameters may not
// be the same with a fault (a board taken out of the plan reports each test
// once, without them).
func testKey(v results.Verdict) string {
	return v.Plan + "\x00" + v.Board + "\x00" + v.Test
}

func groupSeconds(out labrun.Outcome, plan string) float64 {
	for _, g := range out.Groups {
		for _, p := range g.Plans {
			if p == plan {
				return g.Duration.Seconds()
			}
		}
	}
	return 0
}

// score judges one job from its round's verdicts of its plans.
//
// A fault is caught when its plans' run does not pass; where a plan did not
// pass without the fault either (the baseline), only a test that did not
// pass on a board where it passed in the baseline counts. CaughtBy lists
// those tests.
func score(j Job, round int, res *RunResult, vs map[string][]results.Verdict, ms []results.Measurement, red, baseRed map[string]bool) results.CampaignEntry {
	e := results.CampaignEntry{Fault: j.Fault, Name: j.Info.Name, Target: j.Target, Plans: j.Plans, Benign: j.Benign,
		RunDir: res.Dir, Round: round, WallSeconds: groupSeconds(res.Outcome, j.Plans[0])}
	var mine []results.Verdict
	for _, p := range j.Plans {
		mine = append(mine, vs[p]...)
	}
	e.ExitCode, e.Status = labrun.ExitCodeOf(mine)
	e.Class = classOf(e.ExitCode)
	by := map[string]bool{}
	for _, v := range mine {
		if v.Status != results.Pass && v.Status != results.Skip && !red[testKey(v)] {
			by[v.Test] = true
		}
	}
	for t := range by {
		e.CaughtBy = append(e.CaughtBy, t)
	}
	sort.Strings(e.CaughtBy)
	wasRed := false
	for _, p := range j.Plans {
		wasRed = wasRed || baseRed[p]
	}
	failed := e.ExitCode != labrun.ExitPass && (!wasRed || len(e.CaughtBy) > 0)
	switch {
	case j.Benign && failed:
		e.Outcome = results.FalseAlarm
	case j.Benign:
		e.Outcome = results.Absorbed
	case failed:
		e.Outcome = results.Caught
	default:
		e.Outcome = results.Escaped
	}
	board, _, _ := strings.Cut(j.Target, ":")
	sum := map[string]float64{}
	for _, m := range ms {
		if m.Board == board && strings.HasPrefix(m.Metric, selftest.HarnessTest+".") && inPlans(m.Plan, j.Plans) &&
			!strings.HasSuffix(m.Metric, ".requests") && !strings.HasSuffix(m.Metric, ".turnaround_ms") {
			sum[m.Metric] += m.Value
		}
	}
	for k, v := range sum {
		if v != 0 {
			e.Trace = append(e.Trace, fmt.Sprintf("%s=%g", strings.TrimPrefix(k, selftest.HarnessTest+"."), v))
		}
	}
	sort.Strings(e.Trace)
	return e
}

func inPlans(p string, plans []string) bool {
	for _, x := range plans {
		if x == p {
			return true
		}
	}
	return false
}

func classOf(code int) string {
	switch code {
	case labrun.ExitFail:
		return "design"
	case labrun.ExitConfig:
		return "setup"
	case labrun.ExitInfra:
		return "infrastructure"
	}
	return ""
}

// WriteTable prints a campaign as a table, then its tallies.
func WriteTable(w io.Writer, c *results.Campaign) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FAULT\tPLANS\tEXIT\tOUTCOME\tCLASS\tCAUGHT BY\tTRACE\tWALL")
	for _, e := range c.Entries {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%.1fs\n", e.Fault, strings.Join(e.Plans, ","), e.ExitCode, e.Outcome,
			dash(e.Class), dash(strings.Join(e.CaughtBy, ",")), dash(strings.Join(e.Trace, ",")), e.WallSeconds)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	n := c.Counts()
	fmt.Fprintf(w, "\n%d faults in %d rounds (targets: %s, night %d): %d caught, %d escaped, %d benign absorbed, %d benign false alarms; wall time %s\n",
		len(c.Entries), c.Rounds, c.Targets, c.Night, n[results.Caught], n[results.Escaped], n[results.Absorbed], n[results.FalseAlarm],
		(time.Duration(c.WallSeconds * float64(time.Second))).Round(time.Second))
	for _, b := range c.Baseline {
		if b.ExitCode != labrun.ExitPass {
			fmt.Fprintf(w, "baseline: plan %s %s without a fault (%d cases not passed): a fault there is caught only by cases that passed in the baseline\n", b.Plan, b.Status, b.Failing)
		}
	}
	return nil
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
