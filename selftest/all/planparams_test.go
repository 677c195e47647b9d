package all_test

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/labrunner/labrunner/labconfig"
	"github.com/labrunner/labrunner/selftest"
)

// designsWithTests are the designs whose tests are registered.
func designsWithTests() []string {
	seen := map[string]bool{}
	var out []string
	for _, tc := range selftest.Tests() {
		if tc.Design != "" && !seen[tc.Design] {
			seen[tc.Design] = true
			out = append(out, tc.Design)
		}
	}
	return out
}

// Every design declares what its plans and their boards take, each key
// with what it sets and a default (or required), and the default lab's
// plans decode.
func TestEveryDesignDeclaresPlanAndBoardParameters(t *testing.T) {
	ds := designsWithTests()
	if len(ds) < 4 {
		t.Fatalf("only the designs %v have tests", ds)
	}
	for _, d := range ds {
		dp, ok := selftest.ParamsOfDesign(d)
		if !ok {
			t.Errorf("design %s registered no setup and no parameters", d)
			continue
		}
		for _, v := range []any{dp.Plan, dp.Board} {
			fs, err := labconfig.ParamFields(v)
			if err != nil {
				t.Errorf("design %s: %v", d, err)
			}
			for _, f := range fs {
				if f.Doc == "" || f.Default == "" {
					t.Errorf("design %s: parameter %s has no doc or default: %+v", d, f.Name, f)
				}
			}
		}
	}
	lab, err := labconfig.Default(labconfig.Known{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range lab.Plans {
		if _, err := selftest.DecodePlan(&lab.Plans[i]); err != nil {
			t.Errorf("the default lab's plan %s: %v", lab.Plans[i].Name, err)
		}
	}
}

// fuzzLab is a lab of three boards with one plan of design, its params:
// and its boards' params: set to the given flow mappings (line 7, 9, 10
// and 11).
func fuzzLab(design, plan string, boards [3]string) string {
	src := "lab: f\nboards:\n  - {name: a, kind: tebf0808}\n  - {name: b, kind: tebf0808}\n  - {name: c, kind: tebf0808}\nplans:\n" +
		"  - {name: p, design: " + design + ", params: " + plan + ", tests: [{test: registers}],\n     boards: [\n"
	for i, b := range boards {
		src += "       {board: " + string(rune('a'+i)) + ", params: " + b + "},\n"
	}
	return src + "  ]}\n"
}

// field reads a decoded struct's field by name.
func field(v any, name string) reflect.Value { return reflect.ValueOf(v).FieldByName(name) }

// FuzzDecodePlan feeds arbitrary plan and board params: to every design's
// decode: whatever the loader accepts is either refused with file:line and
// the field, or decodes into values within what the setup counts on (three
// coordinates inside the lattice, distinct; a role; a place in the Clique
// the routing tables reach, distinct); it never panics.
func FuzzDecodePlan(f *testing.F) {
	for _, s := range [][4]string{
		{"{lattice: [2, 2, 1], dor_order: XYZ}", "{coord: [0, 0, 0]}", "{coord: [1, 0, 0]}", "{coord: [0, 1, 0]}"},
		{"{lattice: [2, 1], dor_order: XZY}", "{coord: [0, 0]}", "{coord: [1, 0, 0]}", "{cord: [0, 1, 0]}"},
		{"{dor_order: xyy}", "{coord: [3, 0, 0]}", "{coord: [0, 0, 0]}", "{coord: [0, 0, 0]}"},
		{"{slot_cycles: 12, guard_cycles: 1, sync_master: 0}", "{role: nic}", "{role: SWITCH}", "{role: swich}"},
		{"{slot_cycle: 0}", "{}", "{role: [nic]}", "{role: 3}"},
		{"{align: 8, seed: 0x10}", "{pod: 0, tin: 0}", "{pod: 0, tin: 1}", "{pod: 1, tin: 0}"},
		{"{align: 3}", "{pod: 0, tin: 0}", "{pod: 0, tin: 0}", "{pod: 8, tin: -1}"},
		{"{fifo_dept: 8}", "{}", "{}", "{x: 1}"},
	} {
		f.Add(s[0], s[1], s[2], s[3])
	}
	ds := designsWithTests()
	f.Fuzz(func(t *testing.T, plan, b0, b1, b2 string) {
		if strings.ContainsAny(plan+b0+b1+b2, "\n\r") {
			return // one line each: the flow mappings of the plan and its boards
		}
		for _, d := range ds {
			lab, err := labconfig.Parse("lab.yaml", []byte(fuzzLab(d, plan, [3]string{b0, b1, b2})), labconfig.Known{})
			if err != nil || len(lab.Plans) != 1 || len(lab.Plans[0].Boards) != 3 {
				return
			}
			pl := &lab.Plans[0]
			dec, err := selftest.DecodePlan(pl)
			if err != nil {
				var errs *labconfig.Errors
				if !errors.As(err, &errs) || len(errs.List) == 0 {
					t.Fatalf("design %s: error %T %v is not a non-empty *labconfig.Errors", d, err, err)
				}
				for _, e := range errs.List {
					if e.Pos.File != "lab.yaml" || e.Pos.Line < 1 || e.Msg == "" ||
						!(strings.HasPrefix(e.Field, "params") || strings.HasPrefix(e.Field, "boards")) {
						t.Fatalf("design %s: problem without position, field or message: %+v", d, e)
					}
				}
				continue
			}
			checkDecoded(t, d, pl, dec)
		}
	})
}

// checkDecoded checks what each design's setup counts on.
func checkDecoded(t *testing.T, d string, pl *labconfig.Plan, dec *selftest.DecodedPlan) {
	t.Helper()
	places := map[string]string{}
	place := func(board, at string) {
		if other, dup := places[at]; dup {
			t.Fatalf("design %s: boards %s and %s both at %s", d, other, board, at)
		}
		places[at] = board
	}
	for _, pb := range pl.Boards {
		b, ok := dec.Boards[pb.Board]
		if !ok {
			t.Fatalf("design %s: board %s not decoded", d, pb.Board)
		}
		switch d {
		case "exanet":
			lat, c := field(dec.Plan, "Lattice"), field(b, "Coord")
			if lat.Len() != 3 || c.Len() != 3 {
				t.Fatalf("exanet: lattice %v, coord %v", lat, c)
			}
			for i := 0; i < 3; i++ {
				if c.Index(i).Int() < 0 || c.Index(i).Int() >= lat.Index(i).Int() {
					t.Fatalf("exanet: coord %v outside lattice %v", c, lat)
				}
			}
			place(pb.Board, fmt.Sprint(c.Interface()))
		case "shoal":
			if r := strings.ToLower(field(b, "Role").String()); r != "nic" && r != "switch" {
				t.Fatalf("shoal: role %q", r)
			}
		case "tin":
			pod, tin := field(b, "Pod").Int(), field(b, "TiN").Int()
			if pod < 0 || pod > 7 || tin < 0 || tin > 7 {
				t.Fatalf("tin: pod %d tin %d", pod, tin)
			}
			place(pb.Board, fmt.Sprint(pod, tin))
			if a := field(dec.Plan, "Align").Int(); a < 1 || 16%a != 0 {
				t.Fatalf("tin: align %d", a)
			}
		case "prr":
			if len(pl.Params) > 0 || len(pb.Params) > 0 {
				t.Fatalf("prr took params %v, %v", pl.Params, pb.Params)
			}
		}
	}
}
