package selftest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/labrunner/labrunner/drivers"
	"github.com/labrunner/labrunner/labconfig"
	"github.com/labrunner/labrunner/results"
)

// memRecorder keeps records in memory.
type memRecorder struct {
	mu   sync.Mutex
	ms   []results.Measurement
	vs   []results.Verdict
	done map[string]bool
}

func (r *memRecorder) AddMeasurement(m results.Measurement) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ms = append(r.ms, m)
	return nil
}
func (r *memRecorder) AddExpectation(string, string, results.Expectation) error { return nil }
func (r *memRecorder) AddVerdict(v results.Verdict) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.vs = append(r.vs, v)
	return nil
}
func (r *memRecorder) MarkDone(step, kind string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done == nil {
		r.done = map[string]bool{}
	}
	r.done[step] = true
	return nil
}
func (r *memRecorder) Done(step string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.done[step]
}

func testEnv() (*Env, *memRecorder) {
	rec := &memRecorder{}
	lab := &labconfig.Lab{Name: "t"}
	return NewEnv(lab, &labconfig.Plan{Name: "p"}, rec, slog.New(slog.NewTextHandler(io.Discard, nil))), rec
}

// Once a case of a test failed and its wait used up the test's deadline,
// the cases it crowded out are skipped with the reason, not reported as
// infrastructure errors; a deadline that passes before anything failed is
// still an infrastructure error (a board that stopped answering).
func TestCasesCrowdedOutByTheTestDeadlineAreSkipped(t *testing.T) {
	for _, failedFirst := range []bool{true, false} {
		env, rec := testEnv()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		env.startTest(ctx)
		if failedFirst {
			env.Check("latency", results.Measurement{Board: "b", Params: results.Params{"case": "1"}}, false, "done", "", "stalled")
		}
		<-ctx.Done()
		err := drivers.Infra("b", "write PP_RESPONDER", "", fmt.Errorf("not attempted: %w", ctx.Err()))
		v := env.Error("latency", "b", results.Params{"case": "2"}, err)
		env.endTest()
		cancel()
		want := results.Error
		if failedFirst {
			want = results.Skip
		}
		if v.Status != want {
			t.Errorf("failed first %v: status %s (%s), want %s", failedFirst, v.Status, v.Message, want)
		}
		if failedFirst {
			// The stalled case decides: the run fails as a design failure
			// (exit 1), no verdict is an error.
			failed := false
			for _, v := range rec.vs {
				failed = failed || v.Status == results.Fail
				if v.Status == results.Error {
					t.Errorf("an error verdict (%s) beside the stalled case: %s", v.Class, v.Message)
				}
			}
			if !failed {
				t.Error("no failed verdict: the stalled case must decide")
			}
		}
	}
	// After the test, the same error is what it says.
	env, _ := testEnv()
	if v := env.Error("x", "b", nil, context.DeadlineExceeded); v.Status != results.Error || v.Class != "infrastructure" {
		t.Errorf("outside a test: %+v", v)
	}
}
