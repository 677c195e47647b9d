package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// maxFuncLines is the longest a function of the CLI may be: the CLI maps
// flags to the options of the packages that do the work (labrun above
// all) and their errors to exit codes; logic longer than this belongs in
// those packages, where it is tested without the CLI.
const maxFuncLines = 40

// TestCLIIsWiringOnly holds every function of cmd/labrunner (and every
// function literal, an Action, on its own) to maxFuncLines, not counting
// flag declarations (a []cli.Flag or a *cli.XxxFlag literal) nor the
// function literals inside it, which are held to the limit themselves.
func TestCLIIsWiringOnly(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var long []string
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		long = append(long, longFuncs(fset, f)...)
	}
	sort.Strings(long)
	for _, l := range long {
		t.Errorf("%s: more than %d lines of logic in the CLI: move it to the package that does the work", l, maxFuncLines)
	}
}

// longFuncs lists the functions of f longer than maxFuncLines, each as
// "file:line name (N lines)".
func longFuncs(fset *token.FileSet, f *ast.File) []string {
	var out []string
	check := func(node ast.Node, name string, body *ast.BlockStmt) {
		if body == nil {
			return
		}
		if n := logicLines(fset, body); n > maxFuncLines {
			p := fset.Position(node.Pos())
			out = append(out, fmt.Sprintf("%s:%d %s (%d lines)", p.Filename, p.Line, name, n))
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch fn := n.(type) {
		case *ast.FuncDecl:
			check(fn, fn.Name.Name, fn.Body)
		case *ast.FuncLit:
			check(fn, "func literal", fn.Body)
		}
		return true
	})
	return out
}

// logicLines counts the lines of body that are neither flag declarations
// nor inside a nested function literal.
func logicLines(fset *token.FileSet, body *ast.BlockStmt) int {
	first, last := fset.Position(body.Lbrace).Line, fset.Position(body.Rbrace).Line
	excluded := map[int]bool{}
	exclude := func(n ast.Node) {
		for l := fset.Position(n.Pos()).Line; l <= fset.Position(n.End()).Line; l++ {
			excluded[l] = true
		}
	}
	ast.Inspect(body, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.FuncLit:
			exclude(x)
			return false
		case *ast.CompositeLit:
			if isFlagType(x.Type) {
				exclude(x)
				return false
			}
		}
		return true
	})
	n := 0
	for l := first + 1; l < last; l++ {
		if !excluded[l] {
			n++
		}
	}
	return n
}

// isFlagType reports whether a composite literal's type is cli.Flag (a
// []cli.Flag) or a cli.XxxFlag.
func isFlagType(e ast.Expr) bool {
	if a, ok := e.(*ast.ArrayType); ok {
		e = a.Elt
	}
	sel, ok := e.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	return ok && pkg.Name == "cli" && strings.HasSuffix(sel.Sel.Name, "Flag")
}

// The checker itself: a function with 41 lines of logic is caught, one
// whose length is flag declarations is not, and an Action's lines count
// for the Action alone.
func TestLongFuncsCountsLogicOnly(t *testing.T) {
	t.Parallel()
	logic := strings.Repeat("\tx++\n", maxFuncLines+1)
	flags := strings.Repeat("\t\t&cli.StringFlag{Name: \"a\"},\n", maxFuncLines+1)
	src := "package main\n" +
		"func long() {\n\tx := 0\n" + logic + "\t_ = x\n}\n" +
		"func declared() []cli.Flag {\n\treturn []cli.Flag{\n" + flags + "\t}\n}\n" +
		"func command() any {\n\treturn func() {\n\t\tx := 0\n" + logic + "\t\t_ = x\n\t}\n}\n"
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "x.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(longFuncs(fset, f), "\n")
	if !strings.Contains(got, " long (") || strings.Contains(got, "declared") || strings.Contains(got, " command (") || !strings.Contains(got, "func literal") {
		t.Errorf("long functions found:\n%s", got)
	}
}
