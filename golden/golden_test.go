package golden

import (
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/labrunner/labrunner/results"
)

type fakeModel struct{ name string }

func (f fakeModel) Name() string { return f.name }
func (f fakeModel) Doc() string  { return "a model for the registry's tests" }
func (f fakeModel) Params() []Param {
	return []Param{{Name: "n", Default: "3", Doc: "count"}, {Name: "opt", Doc: "optional"}}
}
func (f fakeModel) Predict(set map[string]string) ([]results.Expectation, error) {
	s, err := Settings(f.name, f.Params(), set)
	if err != nil {
		return nil, err
	}
	n, err := strconv.Atoi(s["n"])
	if err != nil {
		return nil, err
	}
	return []results.Expectation{{Metric: "fake", Value: float64(n), Source: "test"}}, nil
}

func TestRegisterLookupNames(t *testing.T) {
	Register(fakeModel{"test.registry.b"})
	Register(fakeModel{"test.registry.a"})
	m, err := Lookup("test.registry.a")
	if err != nil {
		t.Fatalf("Lookup: %v", err)
	}
	if m.Name() != "test.registry.a" {
		t.Fatalf("Lookup returned %q", m.Name())
	}
	names := Names()
	if !slices.IsSorted(names) {
		t.Fatalf("Names not sorted: %v", names)
	}
	for _, want := range []string{"test.registry.a", "test.registry.b"} {
		if !slices.Contains(names, want) {
			t.Fatalf("Names %v lacks %q", names, want)
		}
	}
	_, err = Lookup("no-such-model")
	if err == nil {
		t.Fatal("Lookup of an unknown model succeeded")
	}
	if !strings.Contains(err.Error(), "no-such-model") || !strings.Contains(err.Error(), "test.registry.a") {
		t.Fatalf("error should name the model asked for and the known ones: %v", err)
	}
}

func TestRegisterPanics(t *testing.T) {
	Register(fakeModel{"test.registry.dup"})
	msg := func() (msg string) {
		defer func() { msg = fmt.Sprint(recover()) }()
		Register(fakeModel{"test.registry.dup"})
		return "no panic"
	}()
	if !strings.Contains(msg, "registered twice") || strings.Count(msg, "golden/golden_test.go:") != 2 {
		t.Errorf("duplicate: panic %q does not name both registrations", msg)
	}
	for name, m := range map[string]Model{
		"duplicate":   fakeModel{"test.registry.dup"},
		"nil":         nil,
		"empty name":  fakeModel{""},
		"padded name": fakeModel{" x"},
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatalf("Register(%s) did not panic", name)
				}
			}()
			Register(m)
		})
	}
}

func TestSettings(t *testing.T) {
	params := fakeModel{}.Params()
	got, err := Settings("fake", params, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got["n"] != "3" {
		t.Fatalf("default not applied: %v", got)
	}
	if _, ok := got["opt"]; ok {
		t.Fatalf("optional parameter without default appeared: %v", got)
	}
	got, err = Settings("fake", params, map[string]string{"n": "5", "opt": "x"})
	if err != nil {
		t.Fatal(err)
	}
	if got["n"] != "5" || got["opt"] != "x" {
		t.Fatalf("set values not applied: %v", got)
	}
	_, err = Settings("fake", params, map[string]string{"m": "1", "zz": "2"})
	if err == nil {
		t.Fatal("unknown keys accepted")
	}
	for _, want := range []string{`"m"`, `"zz"`, "allowed: n, opt", "fake"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

// TestNoEmulatorImports enforces docs/architecture.md: golden models are an independent
// reading of the papers and must not import the emulator (or anything else
// under boards/). It parses only the files of this tree.
func TestNoEmulatorImports(t *testing.T) {
	fset := token.NewFileSet()
	n := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		n++
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if p == "github.com/labrunner/labrunner/boards" || strings.HasPrefix(p, "github.com/labrunner/labrunner/boards/") {
				t.Errorf("%s imports %s: golden models must not import the emulator or boards (docs/architecture.md)", fset.Position(imp.Pos()), p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 3 {
		t.Fatalf("checked only %d files; the walk is not seeing the golden tree", n)
	}
}
