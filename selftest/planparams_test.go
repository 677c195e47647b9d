package selftest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/boards"
	"github.com/labrunner/labrunner/labconfig"
)

// noParams declares that a test design's plans and boards take nothing.
var noParams = DesignParams{Plan: struct{}{}, Board: struct{}{}}

// meshPlan and meshBoard are a design's plan and board parameters, as
// ExaNet's: a lattice, a required place inside it.
type meshPlan struct {
	Lattice []int  `param:"lattice" min:"1" doc:"mesh size"`
	Order   string `param:"order" oneof:"XYZ,ZYX" doc:"dimension order"`
}

func (p meshPlan) CheckBoards(bs []BoardParams) error {
	var errs []error
	at := map[int]string{}
	for _, b := range bs {
		x := b.Params.(meshBoard).X
		if x >= p.Lattice[0] {
			errs = append(errs, &BoardParamError{Board: b.Name, Key: "x", Msg: fmt.Sprintf("%d is outside the lattice", x), Fix: "move it"})
		}
		if o, dup := at[x]; dup {
			errs = append(errs, &BoardParamError{Board: b.Name, Key: "x", Msg: "at the place of " + o, Fix: "give it its own"})
		}
		at[x] = b.Name
	}
	return errors.Join(errs...)
}

type meshBoard struct {
	X int `param:"x" required:"true" min:"0" doc:"place"`
}

const meshDesign = "planparams-test-mesh"

func init() {
	RegisterNoSetup(meshDesign, "a test design", DesignParams{Plan: meshPlan{Lattice: []int{2}, Order: "XYZ"}, Board: meshBoard{}})
}

// plan parses a lab whose one plan, of design, has the given plan params
// and boards (flow mappings, one a line from line 9).
func plan(t *testing.T, design, params string, boards ...string) *labconfig.Plan {
	t.Helper()
	src := "lab: t\nboards:\n  - {name: a, kind: tebf0808, programmer: {type: emulated}, bus: {emulated: {}}, emulated: {}}\n" +
		"  - {name: b, kind: tebf0808, programmer: {type: emulated}, bus: {emulated: {}}, emulated: {}}\n" +
		"plans:\n  - name: p\n    design: " + design + "\n    params: " + params + "\n    boards:\n"
	for _, b := range boards {
		src += "      - " + b + "\n"
	}
	src += "    tests: [{test: registers}]\n"
	lab, err := labconfig.Parse("lab.yaml", []byte(src), labconfig.Known{})
	if err != nil {
		t.Fatalf("%v\n%s", err, src)
	}
	return &lab.Plans[0]
}

func TestDecodePlanReadsPlanAndBoards(t *testing.T) {
	pl := plan(t, meshDesign, "{order: ZYX}", "{board: a, params: {x: 1}}", "{board: b, params: {x: 0}}")
	d, err := DecodePlan(pl)
	if err != nil {
		t.Fatal(err)
	}
	if p := d.Plan.(meshPlan); p.Order != "ZYX" || len(p.Lattice) != 1 || p.Lattice[0] != 2 {
		t.Errorf("plan params %+v", p)
	}
	if d.Boards["a"].(meshBoard).X != 1 || d.Boards["b"].(meshBoard).X != 0 {
		t.Errorf("board params %+v", d.Boards)
	}
	env := &Env{Plan: pl}
	p, err := PlanParamsOf[meshPlan](env)
	if err != nil || p.Order != "ZYX" {
		t.Errorf("PlanParamsOf: %+v, %v", p, err)
	}
	b, err := BoardParamsOf[meshBoard](env, &Board{Board: &boards.Board{Name: "a"}})
	if err != nil || b.X != 1 {
		t.Errorf("BoardParamsOf: %+v, %v", b, err)
	}
	if _, err := PlanParamsOf[meshBoard](env); err == nil || !strings.Contains(err.Error(), "declares selftest.meshPlan") {
		t.Errorf("reading the plan's params as another type: %v", err)
	}
}

// Every problem of a plan and its boards is reported at once, each at its
// line with the field, who it is about and the fix.
func TestDecodePlanRefusals(t *testing.T) {
	for _, c := range []struct {
		name   string
		params string
		boards []string
		want   []string
	}{
		{"plan key mistyped", "{ordr: ZYX}", []string{"{board: a, params: {x: 0}}"},
			[]string{`lab.yaml:8: params.ordr: plan p (design planparams-test-mesh): unknown parameter "ordr" (allowed: lattice, order) (did you mean order?)`}},
		{"plan value", "{order: XZY, lattice: two}", []string{"{board: a, params: {x: 0}}"},
			[]string{`lab.yaml:8: params.lattice: plan p (design planparams-test-mesh): "two" is not an integer`,
				`lab.yaml:8: params.order: plan p (design planparams-test-mesh): "XZY" is not one of XYZ, ZYX`}},
		{"board key mistyped", "{}", []string{"{board: a, params: {y: 0}}"},
			[]string{`lab.yaml:10: boards[0].params.y: board a: unknown parameter "y" (allowed: x) (remove it)`,
				`lab.yaml:10: boards[0].params.x: board a: missing parameter x (place) (write x: 0)`}},
		{"board without params", "{}", []string{"{board: a, params: {x: 0}}", "{board: b}"},
			[]string{`lab.yaml:11: boards[1].params.x: board b: missing parameter x (place) (write x: 0)`}},
		{"board outside", "{}", []string{"{board: a, params: {x: 0}}", "{board: b, params: {x: 2}}"},
			[]string{`lab.yaml:11: boards[1].params.x: board b: 2 is outside the lattice (move it)`}},
		{"boards together", "{lattice: [1]}", []string{"{board: a, params: {x: 0}}", "{board: b, params: {x: 0}}"},
			[]string{`lab.yaml:11: boards[1].params.x: board b: at the place of a (give it its own)`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := DecodePlan(plan(t, meshDesign, c.params, c.boards...))
			var errs *labconfig.Errors
			if !errors.As(err, &errs) || len(errs.List) != len(c.want) {
				t.Fatalf("got %v, want %d problems", err, len(c.want))
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("does not say\n%s\nin\n%v", w, err)
				}
			}
		})
	}
}

// A design that registered no parameters, or said it takes none, refuses
// every key.
func TestDecodePlanOfADesignTakingNone(t *testing.T) {
	RegisterNoSetup("planparams-test-none", "a test design", noParams)
	for _, d := range []string{"planparams-test-none", "planparams-test-unregistered"} {
		_, err := DecodePlan(plan(t, d, "{fifo_dept: 8}", "{board: a, params: {role: nic}}"))
		if err == nil || !strings.Contains(err.Error(), `params.fifo_dept: plan p (design `+d+`): unknown parameter "fifo_dept" (this takes no parameters)`) ||
			!strings.Contains(err.Error(), `boards[0].params.role: board a: unknown parameter "role" (this takes no parameters)`) {
			t.Errorf("design %s: %v", d, err)
		}
		if _, err := DecodePlan(plan(t, d, "{}", "{board: a}")); err != nil {
			t.Errorf("design %s without params: %v", d, err)
		}
	}
}

// Parameters that are not structs are refused when the design registers.
func TestRegisterRefusesDesignParamsThatAreNotStructs(t *testing.T) {
	defer setups.forget("planparams-test-bad")
	msg := mustPanic(t, func() { RegisterSetup("planparams-test-bad", noop, DesignParams{Plan: struct{}{}}) })
	if !strings.Contains(msg, "DesignParams.Board is a struct value holding the defaults") {
		t.Error(msg)
	}
	msg = mustPanic(t, func() {
		RegisterNoSetup("planparams-test-bad", "why", DesignParams{Plan: struct {
			N int `param:"n" required:"yes"`
		}{}, Board: struct{}{}})
	})
	if !strings.Contains(msg, "RegisterNoSetup at") || !strings.Contains(msg, "DesignParams.Plan:") {
		t.Error(msg)
	}
}

// A plan run without lab check (a test's own runner) whose parameters do
// not decode stops before any board is touched: every test of every board
// is a setup error naming the key, and the design's setup never runs.
func TestRunPlanRefusesParametersBeforeTouchingABoard(t *testing.T) {
	pl := plan(t, "exanet", "{lattice: [2, 1, 1]}", "{board: a, params: {coord: [0, 0, 0]}}")
	rec := &memRecorder{}
	r := &Runner{Lab: &labconfig.Lab{Name: "t"}, Catalogue: bitstreams.Default(), Rec: rec,
		Log:      slog.New(slog.NewTextHandler(io.Discard, nil)),
		Progress: func(plan, step string) { t.Errorf("step %s of plan %s started", step, plan) }}
	res := r.RunPlan(context.Background(), pl)
	if res.Setup == nil || !strings.Contains(res.Setup.Error(), `params.lattice: plan p (design exanet): unknown parameter "lattice"`) {
		t.Fatalf("setup error %v", res.Setup)
	}
	if len(rec.vs) != 1 || rec.vs[0].Class != "setup" || rec.vs[0].Board != "a" || rec.vs[0].Test != "registers" ||
		!strings.Contains(rec.vs[0].Message, `boards[0].params.coord: board a: unknown parameter "coord"`) {
		t.Errorf("verdicts %+v", rec.vs)
	}
}
