package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/labrunner/labrunner/internal/syncbuf"
	"github.com/labrunner/labrunner/labconfig"
	"github.com/labrunner/labrunner/results"
)

// BenchmarkNightlyLineRate runs the default nightly (`labrunner nightly`:
// the embedded emulated rack, every plan) in process, twice over: as the
// default lab has it, the bridges' pseudo-terminals unshaped, and with every
// UART bridge held to 921600 baud plus 1 ms a request, as a rack of
// USB-UARTs with their latency timers at 1 ms would be (docs/uart-bridge.md,
// "Line-rate emulation"). Besides the wall time (ns/op) it reports, per
// nightly, the bridge requests, the round trips the runner waited for (a
// batch through a bridge's window is one), the bytes they moved both ways
// (the runner's harness.bridge.* counters) and the verdicts that did not
// pass; -v logs them per plan, with each plan's longest steps.
//
//	go test ./cmd/labrunner -run '^$' -bench NightlyLineRate -benchtime 1x -v
func BenchmarkNightlyLineRate(b *testing.B) {
	for _, c := range []struct{ name, line string }{
		{"unshaped", ""},
		{"921600baud+1ms", "line_rate: true, request_latency: 1ms"},
	} {
		b.Run(c.name, func(b *testing.B) {
			lab := shapedDefaultLab(b, c.line)
			var tot nightlyLoad
			for range b.N {
				out := b.TempDir()
				code, summary := quietly("labrunner", "--log-level", "error", "nightly", "--locks", b.TempDir(), "--lab", lab, "--out", out)
				dirs, err := os.ReadDir(out)
				if err != nil || len(dirs) != 1 {
					b.Fatalf("exit %d, run directories %v (%v)", code, dirs, err)
				}
				dir := filepath.Join(out, dirs[0].Name())
				l := loadOf(b, dir)
				tot.add(l)
				b.Logf("exit %d; %s", code, summary)
				for _, p := range l.planNames() {
					pl := l.plans[p]
					b.Logf("  %-12s %7.0f requests (%6.0f round trips) %9.0f bytes, done after %6.1f s; longest steps: %s", p, pl.requests, pl.roundTrips, pl.bytes,
						pl.done.Seconds(), strings.Join(pl.longest, ", "))
				}
				for _, v := range l.notPassed {
					b.Logf("  not passed: %s", v)
				}
			}
			n := float64(b.N)
			b.ReportMetric(tot.all.requests/n, "requests/op")
			b.ReportMetric(tot.all.bytes/n, "bridge-bytes/op")
			b.ReportMetric(tot.all.roundTrips/n, "round-trips/op")
			b.ReportMetric(float64(len(tot.notPassed))/n, "not-passed/op")
		})
	}
}

// shapedDefaultLab writes the default lab with line added to every emulated
// UART bridge entry, and returns its path.
func shapedDefaultLab(b *testing.B, line string) string {
	b.Helper()
	src := string(labconfig.DefaultSource())
	if line != "" {
		const entry = "uart_bridge: {port: emu, baud: 921600}"
		n := strings.Count(src, entry)
		if n == 0 {
			b.Fatalf("the default lab has no %q entry to shape", entry)
		}
		src = strings.ReplaceAll(src, entry, "uart_bridge: {port: emu, baud: 921600, "+line+"}")
		if strings.Count(src, "uart_bridge:") != n {
			b.Fatalf("the default lab has %d bridges, %d of them in the form %q", strings.Count(src, "uart_bridge:"), n, entry)
		}
	}
	path := filepath.Join(b.TempDir(), "lab.yaml")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		b.Fatal(err)
	}
	return path
}

// quietly runs the CLI with its output kept aside, and returns its exit code
// and the nightly's summary lines (test cases, board groups).
func quietly(args ...string) (int, string) {
	var out syncbuf.Buffer
	code := run(args, &out, &out)
	var keep []string
	for _, l := range strings.Split(out.String(), "\n") {
		if strings.Contains(l, " test cases: ") || strings.Contains(l, "board groups") {
			keep = append(keep, strings.TrimSpace(l))
		}
	}
	return code, strings.Join(keep, "; ")
}

// nightlyLoad is what a nightly asked of the bridges, from its run
// directory's harness.bridge.* measurements.
type nightlyLoad struct {
	all       bridgeLoad
	plans     map[string]bridgeLoad
	notPassed []string
}

type bridgeLoad struct {
	requests, bytes float64
	roundTrips      float64       // requests - pipelined + batches
	done            time.Duration // from the run's start to the plan's last step
	longest         []string      // its longest steps, with their durations
}

func loadOf(b *testing.B, dir string) nightlyLoad {
	b.Helper()
	ms, err := results.ReadMeasurements(dir)
	if err != nil {
		b.Fatal(err)
	}
	l := nightlyLoad{plans: map[string]bridgeLoad{}}
	for _, m := range ms {
		p := l.plans[m.Plan]
		switch m.Metric {
		case "harness.bridge.requests":
			p.requests += m.Value
		case "harness.bridge.tx_bytes", "harness.bridge.rx_bytes":
			p.bytes += m.Value
		case "harness.bridge.pipelined":
			p.roundTrips -= m.Value
		case "harness.bridge.batches":
			p.roundTrips += m.Value
		default:
			continue
		}
		l.plans[m.Plan] = p
	}
	for name, p := range l.plans {
		p.roundTrips += p.requests
		l.plans[name] = p
		l.all.requests += p.requests
		l.all.bytes += p.bytes
		l.all.roundTrips += p.roundTrips
	}
	// Where each plan's time went, from progress.jsonl: a step's duration
	// is the time since the plan's step before it (the run's start for the
	// first).
	run, err := results.ReadRun(dir)
	if err != nil {
		b.Fatal(err)
	}
	prog, err := results.ReadProgress(dir)
	if err != nil {
		b.Fatal(err)
	}
	type step struct {
		name string
		d    time.Duration
	}
	last, steps := map[string]time.Time{}, map[string][]step{}
	for _, pr := range prog {
		plan, _, _ := strings.Cut(pr.Step, "#")
		from, ok := last[plan]
		if !ok {
			from = run.Start
		}
		steps[plan] = append(steps[plan], step{pr.Step, pr.Time.Sub(from)})
		last[plan] = pr.Time
	}
	for plan, ss := range steps {
		p := l.plans[plan]
		p.done = last[plan].Sub(run.Start)
		sort.Slice(ss, func(i, j int) bool { return ss[i].d > ss[j].d })
		for _, s := range ss[:min(4, len(ss))] {
			p.longest = append(p.longest, fmt.Sprintf("%s %.1fs", s.name, s.d.Seconds()))
		}
		l.plans[plan] = p
	}
	for _, v := range verdicts(b, dir) {
		if v.Status != results.Pass && v.Status != results.Skip {
			l.notPassed = append(l.notPassed, fmt.Sprintf("%s %s %s", v.Status, v.Board, v.Name()))
		}
	}
	sort.Strings(l.notPassed)
	return l
}

func (l *nightlyLoad) add(o nightlyLoad) {
	l.all.requests += o.all.requests
	l.all.bytes += o.all.bytes
	l.all.roundTrips += o.all.roundTrips
	l.notPassed = append(l.notPassed, o.notPassed...)
}

func (l nightlyLoad) planNames() []string {
	var ps []string
	for p := range l.plans {
		ps = append(ps, p)
	}
	sort.Strings(ps)
	return ps
}
