package raceshare

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// A test may take a share of its cases under the race detector only if make
// test runs it again without the detector, every case: its name must match
// the Makefile's FULL_TESTS and its package be in FULL_PKGS (docs/ci.md,
// "The test suite"). Every test function of the repository that calls this
// package directly is checked.
func TestEverySharedTestRunsWholeWithoutTheDetector(t *testing.T) {
	root := filepath.Join("..", "..")
	mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	tests := regexp.MustCompile(`(?m)^FULL_TESTS\s*:=\s*'(.*)'\s*$`).FindSubmatch(mk)
	pkgs := regexp.MustCompile(`(?m)^FULL_PKGS\s*:=\s*(.*)$`).FindSubmatch(mk)
	if tests == nil || pkgs == nil {
		t.Fatal("the Makefile has no FULL_TESTS := '...' or FULL_PKGS := ... line")
	}
	run, err := regexp.Compile(strings.ReplaceAll(string(tests[1]), "$$", "$"))
	if err != nil {
		t.Fatalf("FULL_TESTS: %v", err)
	}
	full := strings.Fields(string(pkgs[1]))
	fset := token.NewFileSet()
	found := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == ".cache" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") || filepath.Dir(path) == "." {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		if !slices.ContainsFunc(f.Imports, func(s *ast.ImportSpec) bool { return strings.HasSuffix(s.Path.Value, `/internal/raceshare"`) }) {
			return nil
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		pkg := "./" + filepath.ToSlash(rel)
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !strings.HasPrefix(fn.Name.Name, "Test") || fn.Body == nil || !callsRaceshare(fn.Body) {
				continue
			}
			found++
			if !run.MatchString(fn.Name.Name) {
				t.Errorf("%s: %s takes a share under the race detector but FULL_TESTS does not name it", fset.Position(fn.Pos()), fn.Name.Name)
			}
			if !slices.Contains(full, pkg) {
				t.Errorf("%s: %s takes a share under the race detector but FULL_PKGS does not list %s", fset.Position(fn.Pos()), fn.Name.Name, pkg)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found == 0 {
		t.Error("no test of the repository calls raceshare: the walk looked in the wrong place")
	}
}

// callsRaceshare reports whether body refers to the raceshare package.
func callsRaceshare(body *ast.BlockStmt) bool {
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == "raceshare" {
				found = true
			}
		}
		return !found
	})
	return found
}
