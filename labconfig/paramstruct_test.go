package labconfig_test

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/labrunner/labrunner/labconfig"
)

// sampleParams has a field of every kind a test's parameter struct may
// declare, with limits.
type sampleParams struct {
	Batches  int           `param:"batches" min:"1" max:"1000000" doc:"random batches"`
	Load     float64       `param:"load" above:"0" max:"1" doc:"offered load"`
	Path     string        `param:"path" oneof:"router,router2x,link" doc:"the path"`
	Payloads []int         `param:"payloads" min:"1" doc:"payload sizes"`
	Loads    []float64     `param:"loads" doc:"loads"`
	Modes    []string      `param:"modes" oneof:"ordered,sync" doc:"modes"`
	Verbose  bool          `param:"verbose" doc:"say more"`
	Wait     time.Duration `param:"wait" doc:"how long"`
	Seed     *int          `param:"seed" default:"the plan's seed" doc:"seed"`
	Victim   *string       `param:"victim" default:"none" doc:"one board"`
	embedded
	note string // unexported: not a parameter
}

type embedded struct {
	Targets []string `param:"targets" default:"all" doc:"boards"`
}

var sampleDefaults = sampleParams{Batches: 2000, Load: 0.5, Path: "router", Payloads: []int{32, 64}, Loads: []float64{1},
	Modes: []string{"ordered"}, Wait: time.Second}

// entry parses a plan whose one test entry has the given params lines (one
// key each, from line 15 of the file), and returns them as the loader
// does.
func entry(t testing.TB, lines ...string) labconfig.Params {
	t.Helper()
	src := head + "plans:\n  - name: p\n    design: exanet\n    boards: [{board: a}]\n    tests:\n      - test: bandwidth\n        params:\n"
	for _, l := range lines {
		src += "          " + l + "\n"
	}
	lab, err := labconfig.Parse("lab.yaml", []byte(src), known())
	if err != nil {
		t.Fatalf("%v\n%s", err, src)
	}
	return lab.Plans[0].Tests[0].Params
}

func decode(ps labconfig.Params) (sampleParams, error) {
	p := sampleDefaults
	err := ps.Decode(&p)
	return p, err
}

func TestDecodeParamsKeepsDefaultsAndReadsValues(t *testing.T) {
	p, err := decode(entry(t, "batches: 0x10", "load: 0.25", "path: link", "payloads: 512", "loads: [0.5, 1]",
		"modes: [sync, ordered]", "verbose: true", "wait: 500ms", "seed: -3", "victim: b1", "targets: [a, b]"))
	if err != nil {
		t.Fatal(err)
	}
	want := sampleParams{Batches: 16, Load: 0.25, Path: "link", Payloads: []int{512}, Loads: []float64{0.5, 1},
		Modes: []string{"sync", "ordered"}, Verbose: true, Wait: 500 * time.Millisecond, Seed: ptr(-3), Victim: ptr("b1"),
		embedded: embedded{Targets: []string{"a", "b"}}}
	if !reflect.DeepEqual(p, want) {
		t.Errorf("decoded\n%+v\nwant\n%+v", p, want)
	}
	p, err = decode(entry(t, "load: 1"))
	if err != nil {
		t.Fatal(err)
	}
	want = sampleDefaults
	want.Load = 1
	if !reflect.DeepEqual(p, want) {
		t.Errorf("an entry setting only load gave %+v", p)
	}
	// A decoded list is the struct's own: writing it leaves the defaults
	// (shared by every run of the test) alone.
	p, _ = decode(entry(t, "payloads: [7, 8]"))
	p.Payloads[0] = 99
	if sampleDefaults.Payloads[0] != 32 {
		t.Errorf("decoding wrote the defaults: %v", sampleDefaults.Payloads)
	}
}

func ptr[T any](v T) *T { return &v }

// Every refusal names the file:line and the key; a value the key does not
// take is named too, with what the key takes.
func TestDecodeParamsRefusals(t *testing.T) {
	cases := []struct {
		line string
		want []string // in the message; the file:line and the key always
	}{
		{"batchs: 20", []string{`unknown parameter "batchs" (allowed: batches, load,`, "(did you mean batches?)"}},
		{"zzzzzz: 1", []string{`unknown parameter "zzzzzz"`, "(remove it)"}},
		{"batches: abc", []string{`"abc" is not an integer`, "(write an integer, 1..1000000)"}},
		{"batches: 2.5", []string{`"2.5" is not an integer`}},
		{"batches: -4", []string{"-4 is outside 1..1000000", "write an integer, 1..1000000"}},
		{"batches: 1000001", []string{"1000001 is outside 1..1000000"}},
		{"batches: [1, 2]", []string{"got a list [1, 2] where an integer, 1..1000000 goes"}},
		{"batches: [5]", []string{"got a list [5] where an integer"}},
		{"load: 0", []string{"0 is outside at most 1, above 0"}},
		{"load: 1.5", []string{"1.5 is outside"}},
		{"load: lots", []string{`"lots" is not a finite number`, "write a number, at most 1, above 0"}},
		{"load: .nan", []string{`".nan" is not a finite number`}},
		{"path: routr", []string{`"routr" is not one of router, router2x, link (did you mean router?)`, "write one text value, one of router, router2x, link"}},
		{"path: [router, link]", []string{"got a list [router, link] where one text value"}},
		{"payloads: [64, 0]", []string{"element 2 of [64, 0]: 0 is outside at least 1", "write one or more integers, each at least 1"}},
		{"payloads: [64, x]", []string{`element 2 of [64, x]: "x" is not an integer`}},
		{"payloads: []", []string{"got an empty list", "write one or more integers"}},
		{"loads: [a]", []string{`"a" is not a finite number`, "one or more numbers"}},
		{"modes: [ordered, synk]", []string{`element 2 of [ordered, synk]: "synk" is not one of ordered, sync (did you mean sync?)`}},
		{"verbose: yes", []string{`"yes" is not true or false`, "write true or false"}},
		{"wait: 5", []string{`duration "5" has no unit`, "write a duration with a unit"}},
		{"wait: soon", []string{`"soon" is not a duration`}},
		{"seed: x", []string{`"x" is not an integer`}},
		{"victim: [a, b]", []string{"got a list [a, b] where one text value goes"}},
	}
	for _, c := range cases {
		t.Run(c.line, func(t *testing.T) {
			key := strings.SplitN(c.line, ":", 2)[0]
			before := sampleDefaults
			p, err := decode(entry(t, "targets: all", c.line))
			var errs *labconfig.Errors
			if !errors.As(err, &errs) || len(errs.List) != 1 {
				t.Fatalf("want one *labconfig.Errors, got %T %v (decoded %+v)", err, err, p)
			}
			msg := err.Error()
			prefix := "lab.yaml:16: " + key + ": "
			if !strings.HasPrefix(msg, prefix) {
				t.Errorf("%q does not start with %q", msg, prefix)
			}
			value := strings.TrimSpace(strings.SplitN(c.line, ":", 2)[1])
			if !strings.Contains(c.want[0], "unknown parameter") && !strings.Contains(msg, strings.Trim(value, "[]")) {
				t.Errorf("%q does not name the value %s", msg, value)
			}
			for _, w := range c.want {
				if !strings.Contains(msg, w) {
					t.Errorf("%q does not say %q", msg, w)
				}
			}
			if !reflect.DeepEqual(before, sampleDefaults) {
				t.Errorf("a refused entry changed the defaults")
			}
		})
	}
}

func TestDecodeParamsReportsEveryProblemInLineOrder(t *testing.T) {
	_, err := decode(entry(t, "wait: 3", "batches: 0", "pth: link", "load: 0.5"))
	var errs *labconfig.Errors
	if !errors.As(err, &errs) || len(errs.List) != 3 {
		t.Fatalf("want three problems, got %v", err)
	}
	for i, want := range []string{"lab.yaml:15: wait:", "lab.yaml:16: batches:", "lab.yaml:17: pth: unknown parameter"} {
		if got := errs.List[i].Error(); !strings.HasPrefix(got, want) {
			t.Errorf("problem %d: %q, want it to start %q", i, got, want)
		}
	}
}

// runParams ties two fields together.
type runParams struct {
	Cycles int `param:"cycles" min:"1" doc:"run length"`
	Warmup int `param:"warmup" min:"1" doc:"cycles before the window"`
}

func (p runParams) CheckParams() error {
	if p.Warmup >= p.Cycles {
		return &labconfig.ParamError{Key: "warmup", Msg: fmt.Sprintf("warmup %d leaves no window in %d cycles", p.Warmup, p.Cycles), Fix: "write less"}
	}
	return nil
}

func TestDecodeParamsChecksWhatTiesFieldsTogether(t *testing.T) {
	for _, c := range []struct {
		lines []string
		want  string // "" when it decodes
	}{
		{[]string{"cycles: 100", "warmup: 10"}, ""},
		{[]string{"cycles: 100", "warmup: 100"}, "lab.yaml:16: warmup: warmup 100 leaves no window in 100 cycles (write less)"},
		// The key is not set: the problem is placed at the entry's first line.
		{[]string{"cycles: 5"}, "lab.yaml:15: warmup: warmup 64 leaves no window in 5 cycles (write less)"},
		// A field's own problem first: the struct is not checked half decoded.
		{[]string{"cycles: 0", "warmup: 100"}, "lab.yaml:15: cycles: 0 is outside at least 1 (write an integer, at least 1)"},
	} {
		p := runParams{Cycles: 1000, Warmup: 64}
		err := entry(t, c.lines...).Decode(&p)
		if c.want == "" {
			if err != nil {
				t.Errorf("%v: %v", c.lines, err)
			}
			continue
		}
		if err == nil || err.Error() != c.want {
			t.Errorf("%v: got %v, want %q", c.lines, err, c.want)
		}
	}
	// An entry without params that the check refuses has no line of its
	// own: the caller places it at the test entry.
	p := runParams{Cycles: 10, Warmup: 64}
	var errs *labconfig.Errors
	if err := (labconfig.Params{}).Decode(&p); !errors.As(err, &errs) || errs.List[0].Pos.Line != 0 || errs.List[0].Field != "warmup" {
		t.Errorf("defaults that fail the check: %v", err)
	}
}

func TestDecodeParamsWithoutParameters(t *testing.T) {
	var none struct{}
	err := entry(t, "batches: 3").Decode(&none)
	if err == nil || !strings.Contains(err.Error(), `unknown parameter "batches" (this takes no parameters)`) {
		t.Errorf("a struct without fields took a parameter: %v", err)
	}
	if err := (labconfig.Params{}).Decode(&none); err != nil {
		t.Error(err)
	}
}

// placeParams has a required parameter, as a board's place in a mesh.
type placeParams struct {
	Coord []int  `param:"coord" required:"true" min:"0" doc:"the board's place"`
	Role  string `param:"role" doc:"what it does"`
}

// A required parameter the entry leaves out is refused at the entry's
// first line (no line for an empty entry: the caller places it), and not
// again when a mistyped key is taken for it.
func TestDecodeParamsRequired(t *testing.T) {
	var p placeParams
	err := entry(t, "role: nic").Decode(&p)
	var errs *labconfig.Errors
	if !errors.As(err, &errs) || len(errs.List) != 1 {
		t.Fatalf("role without coord: %v", err)
	}
	if e := errs.List[0]; e.Pos.Line != 15 || e.Field != "coord" || e.Msg != "missing parameter coord (the board's place)" || e.Fix != "write coord: [0, ...]" {
		t.Errorf("missing coord: %+v", e)
	}
	err = (labconfig.Params{}).Decode(&p)
	if !errors.As(err, &errs) || len(errs.List) != 1 || errs.List[0].Pos.Line != 0 || errs.List[0].Field != "coord" {
		t.Errorf("an empty entry: %v", err)
	}
	err = entry(t, "cord: [1, 0, 0]").Decode(&p)
	if !errors.As(err, &errs) || len(errs.List) != 1 || !strings.Contains(err.Error(), "did you mean coord?") {
		t.Errorf("a mistyped coord: %v", err)
	}
	p = placeParams{}
	if err := entry(t, "coord: [1, 0, 0]").Decode(&p); err != nil || !slices.Equal(p.Coord, []int{1, 0, 0}) {
		t.Errorf("coord given: %v, %+v", err, p)
	}
	fs, err := labconfig.ParamFields(placeParams{})
	if err != nil || !fs[0].Required || fs[0].Default != "required" || fs[1].Required {
		t.Errorf("fields: %+v, %v", fs, err)
	}
}

func TestParamFieldsDescribeTheStruct(t *testing.T) {
	fs, err := labconfig.ParamFields(sampleDefaults)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range fs {
		got = append(got, fmt.Sprintf("%s|%s|%s|%s|%s", f.Name, f.Type, f.Default, f.Limits, f.Doc))
	}
	want := []string{
		"batches|integer|2000|1..1000000|random batches",
		"load|number|0.5|at most 1, above 0|offered load",
		"path|text|router|one of router, router2x, link|the path",
		"payloads|list of integers|32,64|at least 1|payload sizes",
		"loads|list of numbers|1||loads",
		"modes|list of text values|ordered|one of ordered, sync|modes",
		"verbose|true/false|false||say more",
		"wait|duration|1s||how long",
		"seed|integer|the plan's seed||seed",
		"victim|text|none||one board",
		"targets|list of text values|all||boards",
	}
	if !slices.Equal(got, want) {
		t.Errorf("fields\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A declaration that breaks the rules is refused, naming the field.
func TestParamFieldsRefuseBadDeclarations(t *testing.T) {
	cases := []struct {
		v    any
		want string
	}{
		{struct{ N int }{}, `N: needs a param:"name" tag`},
		{struct {
			M map[string]int `param:"m"`
		}{}, "M: type map[string]int is not a parameter type"},
		{struct {
			U uint `param:"u"`
		}{}, "is not a parameter type"},
		{struct {
			B []bool `param:"b"`
		}{}, "is not a parameter type"},
		{struct {
			P *int `param:"p"`
		}{}, `P: a pointer field (set at run time when absent) needs a default:"..." tag`},
		{struct {
			S string `param:"s" min:"1"`
		}{}, "S: min: limits are for numbers"},
		{struct {
			N int `param:"n" max:"lots"`
		}{}, `N: max:"lots"`},
		{struct {
			N int `param:"n" oneof:"a,b"`
		}{}, "N: oneof is for text parameters"},
		{struct {
			S string `param:"s" oneof:" , "`
		}{}, "S: oneof lists no value"},
		{struct {
			D []time.Duration `param:"d"`
		}{}, "D: a duration parameter is a plain time.Duration"},
		{struct {
			A int `param:"n"`
			B int `param:"n"`
		}{}, `two fields take the parameter "n"`},
		{struct {
			C []int `param:"c" required:"yes"`
		}{}, `C: required is written required:"true"`},
		{struct {
			C []int `param:"c" required:"true" default:"origin"`
		}{}, `C: required is written required:"true", on a field without a default`},
		{42, "parameters are declared as a struct, got int"},
	}
	for _, c := range cases {
		_, err := labconfig.ParamFields(c.v)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%T: got %v, want %q", c.v, err, c.want)
		}
	}
	if err := (labconfig.Params{}).Decode(sampleDefaults); err == nil || !strings.Contains(err.Error(), "wants a pointer to a parameter struct") {
		t.Errorf("Decode into a struct value: %v", err)
	}
	bad := struct{ N int }{}
	if err := (labconfig.Params{}).Decode(&bad); err == nil {
		t.Error("Decode into a struct that breaks the rules succeeded")
	}
}

// FuzzDecodeParams feeds arbitrary text as a test entry's params: whatever
// the loader accepts, Decode either fills the struct within every limit or
// refuses with file:line, the key and a message; it never panics.
func FuzzDecodeParams(f *testing.F) {
	for _, s := range []string{"{batches: 10, load: 0.5}", "{batches: abc}", "{payloads: [1, 2, 3], modes: sync}",
		"{path: routr, batchs: 2}", "{load: 1e-300, wait: 2m, seed: 0x7f}", "{victim: [a, b], loads: []}",
		"{batches: 99999999999999999999}", "{verbose: TRUE, targets: 3}", "{load: -0, batches: +5}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if strings.ContainsAny(s, "\n\r") {
			return // one line: the params field of one entry
		}
		src := head + "plans:\n  - name: p\n    design: exanet\n    boards: [{board: a}]\n    tests:\n      - test: bandwidth\n        params: " + s + "\n"
		lab, err := labconfig.Parse("lab.yaml", []byte(src), known())
		if err != nil || len(lab.Plans) != 1 || len(lab.Plans[0].Tests) != 1 {
			return
		}
		ps := lab.Plans[0].Tests[0].Params
		rp := runParams{Cycles: 1000, Warmup: 64}
		if err := ps.Decode(&rp); err == nil && (rp.Warmup >= rp.Cycles || rp.Warmup < 1) {
			t.Fatalf("accepted %+v", rp)
		} else if err != nil {
			var errs *labconfig.Errors
			if !errors.As(err, &errs) || len(errs.List) == 0 || (len(ps) > 0 && errs.List[0].Pos.Line < 1) {
				t.Fatalf("check error without a line: %v", err)
			}
		}
		p, err := decode(ps)
		if err != nil {
			var errs *labconfig.Errors
			if !errors.As(err, &errs) || len(errs.List) == 0 {
				t.Fatalf("error %T %v is not a non-empty *labconfig.Errors", err, err)
			}
			for _, e := range errs.List {
				if e.Pos.File != "lab.yaml" || e.Pos.Line < 1 || e.Msg == "" || !ps.Has(e.Field) {
					t.Fatalf("problem without position, key or message: %+v", e)
				}
			}
			return
		}
		if p.Batches < 1 || p.Batches > 1000000 || !(p.Load > 0 && p.Load <= 1) || !slices.Contains([]string{"router", "router2x", "link"}, p.Path) {
			t.Fatalf("accepted a value outside its limits: %+v", p)
		}
		for _, v := range p.Payloads {
			if v < 1 {
				t.Fatalf("accepted payload %d", v)
			}
		}
		for _, m := range p.Modes {
			if m != "ordered" && m != "sync" {
				t.Fatalf("accepted mode %q", m)
			}
		}
		if len(p.Payloads) == 0 || len(p.Loads) == 0 || len(p.Modes) == 0 {
			t.Fatalf("accepted an empty list: %+v", p)
		}
		for _, k := range ps.Keys() {
			if !slices.Contains([]string{"batches", "load", "path", "payloads", "loads", "modes", "verbose", "wait", "seed", "victim", "targets"}, k) {
				t.Fatalf("accepted unknown key %q", k)
			}
		}
	})
}
