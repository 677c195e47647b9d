package selftest

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/labrunner/labrunner/drivers"
	"github.com/labrunner/labrunner/labconfig"
)

// DesignParams declares what a design's plans take from the lab file
// besides their tests' parameters: the plan's own params: and each plan
// board's params:. Each is a parameter struct holding the defaults (tags:
// labconfig.ParamFields; a board's place in a mesh is required:"true"),
// registered with the design's setup; an empty struct says the design
// takes none. `lab check` and the nightly decode every plan and every board
// of it before touching a board (DecodePlan), so a mistyped key, a value of
// the wrong type or a missing coordinate is a configuration error with
// file:line, never a setting silently ignored or a design failure on the
// rack. The setup reads the decoded values with PlanParamsOf and
// BoardParamsOf.
type DesignParams struct {
	// Plan is the struct of the plan's params:.
	Plan any
	// Board is the struct of each plan board's params:.
	Board any
}

// BoardsChecker is a plan parameter struct with limits that tie it to its
// boards' parameters (a coordinate inside the plan's lattice, no two boards
// at one place): DecodePlan calls CheckBoards once the plan's and every
// board's parameters decoded, with the boards in plan order. It returns
// nil, a *BoardParamError, a *labconfig.ParamError (a key of the plan's
// own), or several of them joined (errors.Join).
type BoardsChecker interface {
	CheckBoards(boards []BoardParams) error
}

// BoardParams is one plan board's decoded parameters, for CheckBoards.
type BoardParams struct {
	Name   string
	Params any
}

// BoardParamError is a problem CheckBoards found at one board's parameter:
// what is wrong and the fix, reported at that key's line (the board's
// entry when it does not set the key). With no Board it is about the plan's
// boards as a whole, reported at the plan.
type BoardParamError struct {
	Board, Key, Msg, Fix string
}

func (e *BoardParamError) Error() string { return "board " + e.Board + ": " + e.Key + ": " + e.Msg }

// CablesChecker is a plan parameter struct of a design that builds its
// fabric from the lab's cables between the plan's boards (a mesh, a
// Clique, a rack): CheckPlanOnLab calls CheckCables once the plan decoded,
// so that a lab whose cables cannot make the fabric is refused before a
// board is programmed, as the setup would refuse it after. It returns nil,
// a *BoardParamError (of no board: about the plan's boards as a whole), or
// a *labconfig.Error at the cable's line.
type CablesChecker interface {
	CheckCables(c Cabling) error
}

// Cabling is what CheckCables is given.
type Cabling struct {
	Lab *labconfig.Lab
	// Manifest is the design's manifest parameters (nics_per_board, ...).
	Manifest map[string]string
	// Boards are the plan's boards, decoded, in plan order.
	Boards []BoardParams
}

// InPlan says whether a board is one of the plan's.
func (c Cabling) InPlan(board string) bool {
	for _, b := range c.Boards {
		if b.Name == board {
			return true
		}
	}
	return false
}

// CheckPlanOnLab decodes the plan (DecodePlan) and, when it decodes and
// its design builds a fabric from cables (CablesChecker), checks the lab's
// cables between its boards: what lab check and the nightly's check run
// for each plan before any board is touched. manifest is the design's
// manifest parameters.
func CheckPlanOnLab(lab *labconfig.Lab, pl *labconfig.Plan, manifest map[string]string) error {
	d, err := DecodePlan(pl)
	if err != nil {
		return err
	}
	c, ok := d.Plan.(CablesChecker)
	if !ok {
		return nil
	}
	cab := Cabling{Lab: lab, Manifest: manifest}
	for _, pb := range pl.Boards {
		cab.Boards = append(cab.Boards, BoardParams{Name: pb.Board, Params: d.Boards[pb.Board]})
	}
	if err := c.CheckCables(cab); err != nil {
		return &labconfig.Errors{List: boardsErrors(pl, fmt.Sprintf("plan %s (design %s)", pl.Name, pl.Design), err)}
	}
	return nil
}

// DecodedPlan is a plan's parameters decoded into its design's structs.
type DecodedPlan struct {
	Plan   any
	Boards map[string]any // by board name
}

// checkDesignParams panics (at registration) unless both are parameter
// structs.
func checkDesignParams(fn, where, design string, ps DesignParams) {
	for _, s := range []struct {
		what string
		v    any
	}{{"Plan", ps.Plan}, {"Board", ps.Board}} {
		if s.v == nil || reflect.TypeOf(s.v).Kind() != reflect.Struct {
			panic(fmt.Sprintf("selftest.%s at %s: design %s: DesignParams.%s is a struct value holding the defaults (an empty struct when the plan takes none), got %T",
				fn, where, design, s.what, s.v))
		}
		if _, err := labconfig.ParamFields(s.v); err != nil {
			panic(fmt.Sprintf("selftest.%s at %s: design %s: DesignParams.%s: %v", fn, where, design, s.what, err))
		}
	}
}

// ParamsOfDesign returns what a design registered for its plans' and
// boards' parameters; ok is false when it registered nothing (its plans
// and boards then take none).
func ParamsOfDesign(design string) (ps DesignParams, ok bool) {
	s, ok := setups.get(design)
	return s.params, ok
}

// decodeInto decodes ps into a copy of the struct v holds (nil: an empty
// struct, which refuses every key).
func decodeInto(v any, ps labconfig.Params) (any, error) {
	if v == nil {
		v = struct{}{}
	}
	p := reflect.New(reflect.TypeOf(v))
	p.Elem().Set(reflect.ValueOf(v))
	if err := ps.Decode(p.Interface()); err != nil {
		return nil, err
	}
	return p.Elem().Interface(), nil
}

// DecodePlan decodes a plan's params: and every board's params: into the
// structs its design registered (a design that registered none takes
// none), then checks what ties them together (BoardsChecker). Every
// problem is reported as *labconfig.Errors with file:line, the field
// relative to the plan ("params.dor_order", "boards[2].params.coord"),
// the plan or board it is about, and the fix.
func DecodePlan(pl *labconfig.Plan) (*DecodedPlan, error) {
	dp, _ := ParamsOfDesign(pl.Design)
	out := &DecodedPlan{Boards: map[string]any{}}
	var errs []labconfig.Error
	// add takes the errors of one decode, placing those of no line at
	// the entry (at) and naming the field from prefix.
	add := func(err error, prefix, who string, at labconfig.Pos) {
		var le *labconfig.Errors
		if !errors.As(err, &le) {
			errs = append(errs, labconfig.Error{Pos: at, Field: prefix, Msg: who + ": " + err.Error()})
			return
		}
		for _, e := range le.List {
			if e.Pos.Line == 0 {
				e.Pos = at
			}
			e.Field = prefix + "." + e.Field
			e.Msg = who + ": " + e.Msg
			errs = append(errs, e)
		}
	}
	planWho := fmt.Sprintf("plan %s (design %s)", pl.Name, pl.Design)
	p, err := decodeInto(dp.Plan, pl.Params)
	if err != nil {
		add(err, "params", planWho, pl.Pos)
	}
	out.Plan = p
	var boards []BoardParams
	for j, pb := range pl.Boards {
		at := pb.Pos
		if at.Line == 0 {
			at = pl.Pos
		}
		b, err := decodeInto(dp.Board, pb.Params)
		if err != nil {
			add(err, fmt.Sprintf("boards[%d].params", j), "board "+pb.Board, at)
			continue
		}
		out.Boards[pb.Board] = b
		boards = append(boards, BoardParams{Name: pb.Board, Params: b})
	}
	if c, ok := p.(BoardsChecker); ok && len(errs) == 0 {
		if err := c.CheckBoards(boards); err != nil {
			errs = append(errs, boardsErrors(pl, planWho, err)...)
		}
	}
	if len(errs) > 0 {
		return nil, &labconfig.Errors{List: errs}
	}
	return out, nil
}

// boardsErrors places the problems CheckBoards or CheckCables found.
func boardsErrors(pl *labconfig.Plan, planWho string, err error) []labconfig.Error {
	var list []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		list = j.Unwrap()
	} else {
		list = []error{err}
	}
	var out []labconfig.Error
	for _, err := range list {
		var be *BoardParamError
		var pe *labconfig.ParamError
		var le *labconfig.Error
		switch {
		case errors.As(err, &le):
			// A problem at a line of its own (a cable, CheckCables).
			e := *le
			if e.Field == "" {
				e.Field = "boards"
			}
			e.Msg = planWho + ": " + e.Msg
			out = append(out, e)
		case errors.As(err, &be):
			// A BoardParamError of no board is about the plan's boards as a
			// whole (too few, a role missing): reported at the plan.
			e := labconfig.Error{Pos: pl.Pos, Field: "boards", Msg: planWho + ": " + be.Msg, Fix: be.Fix}
			if be.Board != "" {
				e.Msg = "board " + be.Board + ": " + be.Msg
			}
			for j, pb := range pl.Boards {
				if pb.Board != be.Board {
					continue
				}
				e.Field = fmt.Sprintf("boards[%d].params.%s", j, be.Key)
				if pb.Pos.Line > 0 {
					e.Pos = pb.Pos
				}
				if v, ok := pb.Params[be.Key]; ok {
					e.Pos = v.Pos
				}
				break
			}
			out = append(out, e)
		case errors.As(err, &pe):
			e := labconfig.Error{Pos: pl.Pos, Field: "params." + pe.Key, Msg: planWho + ": " + pe.Msg, Fix: pe.Fix}
			if v, ok := pl.Params[pe.Key]; ok {
				e.Pos = v.Pos
			}
			out = append(out, e)
		default:
			out = append(out, labconfig.Error{Pos: pl.Pos, Field: "params", Msg: planWho + ": " + err.Error()})
		}
	}
	return out
}

// PlanParamsOf returns the running plan's own parameters, decoded into
// its design's plan parameter struct P (the runner decodes them before any
// board is touched). An Env the runner did not prepare (a unit test's)
// decodes env.Plan.
func PlanParamsOf[P any](env *Env) (P, error) {
	var zero P
	if env.plan == nil {
		d, err := DecodePlan(env.Plan)
		if err != nil {
			return zero, planParamsError(env.Plan, err)
		}
		env.plan = d
	}
	p, ok := env.plan.Plan.(P)
	if !ok {
		return zero, fmt.Errorf("plan %s: the setup reads its parameters as %v but design %s declares %T", env.Plan.Name, reflect.TypeFor[P](), env.Plan.Design, env.plan.Plan)
	}
	return p, nil
}

// BoardParamsOf returns a plan board's parameters, decoded into its
// design's board parameter struct B.
func BoardParamsOf[B any](env *Env, b *Board) (B, error) {
	var zero B
	if env.plan == nil {
		d, err := DecodePlan(env.Plan)
		if err != nil {
			return zero, planParamsError(env.Plan, err)
		}
		env.plan = d
	}
	v, ok := env.plan.Boards[b.Name]
	if !ok {
		return zero, fmt.Errorf("plan %s has no board %s", env.Plan.Name, b.Name)
	}
	p, ok := v.(B)
	if !ok {
		return zero, fmt.Errorf("plan %s: the setup reads board parameters as %v but design %s declares %T", env.Plan.Name, reflect.TypeFor[B](), env.Plan.Design, v)
	}
	return p, nil
}

// planParamsError marks a plan whose parameters do not decode as a setup
// error at the plan.
func planParamsError(pl *labconfig.Plan, err error) error {
	return drivers.Setup("", pl.Pos.String(), "fix the plan's params: or its boards' params:", fmt.Errorf("plan %s: %w", pl.Name, err))
}
