package rtl

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/boards"
	"github.com/labrunner/labrunner/drivers/regmap"
	"github.com/labrunner/labrunner/labconfig"
	"github.com/labrunner/labrunner/results"
	"github.com/labrunner/labrunner/selftest"
)

// memRecorder keeps a test's records in memory.
type memRecorder struct {
	mu       sync.Mutex
	verdicts []results.Verdict
}

func (m *memRecorder) AddMeasurement(results.Measurement) error                 { return nil }
func (m *memRecorder) AddExpectation(string, string, results.Expectation) error { return nil }
func (m *memRecorder) MarkDone(string, string) error                            { return nil }
func (m *memRecorder) Done(string) bool                                         { return false }
func (m *memRecorder) AddVerdict(v results.Verdict) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.verdicts = append(m.verdicts, v)
	return nil
}

// known is what the labrunner command checks a lab file against.
func known(cat *bitstreams.Catalogue) labconfig.Known {
	names := cat.Names()
	return labconfig.Known{Kinds: boards.KindNames(), Designs: names, Tests: selftest.TestNames(names), Ports: boards.PortsByKind()}
}

// registersOn runs the register-level self-test (selftest/registers.go) on
// the co-simulated board through the lab file cosim writes: the board is
// opened as any board of a lab file, by its kind and its bridge port. prep
// runs on the design right after configuration, before the reset values
// are taken (as the plan runner takes them right after programming).
func registersOn(t *testing.T, baud int, prep func(ctx context.Context, r *regmap.Regs)) []results.Verdict {
	t.Helper()
	s := startSim(t, baud)
	cat := bitstreams.Default()
	path := t.TempDir() + "/cosim.yaml"
	if err := writeFile(path, LabFile(s.Port, baud)); err != nil {
		t.Fatal(err)
	}
	lab, err := labconfig.Load(path, known(cat))
	if err != nil {
		t.Fatal(err)
	}
	// The plan the register test runs in: the design on the co-simulated
	// board (a lab file cannot hold it, as a plan programs its boards).
	plan := &labconfig.Plan{Name: "bridge-example", Design: "bridge-example",
		Boards: []labconfig.PlanBoard{{Board: lab.Boards[0].Name}}}
	m, err := cat.Design(plan.Design)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	b, err := boards.Open(ctx, lab.Boards[0], boards.Options{RegisterTimeout: lab.Deadlines.Register})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	regs := regmap.New(b.Bus, m, b.Name)
	if prep != nil {
		prep(ctx, regs)
	}

	rec := &memRecorder{}
	env := selftest.NewEnv(lab, plan, rec, slog.New(slog.NewTextHandler(io.Discard, nil)))
	env.Design = m
	env.Boards = []*selftest.Board{{Board: b, Regs: regs}}
	// The values of the read-write registers right after configuration, as
	// the plan runner keeps them after programming.
	snap := map[string]uint32{}
	for _, r := range m.Registers {
		if r.Access == bitstreams.RW {
			v, err := regs.Read(ctx, r.Name)
			if err != nil {
				t.Fatal(err)
			}
			snap[r.Name] = v
		}
	}
	selftest.ResetSnapshot.Set(env, map[string]map[string]uint32{b.Name: snap})
	test, ok := selftest.Lookup(m.Name, "registers")
	if !ok {
		t.Fatal("no registers test")
	}
	if err := test.Run(ctx, env); err != nil {
		t.Fatal(err)
	}
	return rec.verdicts
}

// TestRegistersSelftest: the register-level self-test passes on the RTL at
// both rates, and fails, naming the register, when a read-write register
// is not at its reset value after configuration.
func TestRegistersSelftest(t *testing.T) {
	for _, baud := range Bauds {
		t.Run(fmt.Sprint(baud), func(t *testing.T) {
			vs := registersOn(t, baud, nil)
			want := map[string]int{"registers.identity": 2, "registers.scratch": 1, "registers.reset": 1}
			got := map[string]int{}
			for _, v := range vs {
				got[v.Test]++
				if v.Status != results.Pass {
					t.Errorf("%s on %s: %s: %s", v.Test, v.Board, v.Status, v.Message)
				}
			}
			for k, n := range want {
				if got[k] != n {
					t.Errorf("%d %s verdicts, want %d (all: %v)", got[k], k, n, got)
				}
			}
		})
	}
	t.Run("catches-a-register-off-its-reset-value", func(t *testing.T) {
		vs := registersOn(t, Bauds[len(Bauds)-1], func(ctx context.Context, r *regmap.Regs) {
			if err := r.Write(ctx, "TG_GAP", 7); err != nil {
				t.Fatal(err)
			}
		})
		for _, v := range vs {
			if v.Test == "registers.reset" {
				if v.Status == results.Pass || !strings.Contains(v.Message, "TG_GAP=0x7") {
					t.Fatalf("registers.reset with TG_GAP at 7: %s %q", v.Status, v.Message)
				}
				return
			}
		}
		t.Fatal("no registers.reset verdict")
	})
}

func writeFile(path, s string) error { return os.WriteFile(path, []byte(s), 0o644) }
