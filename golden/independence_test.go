package golden_test

import (
	"go/build"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// The emulator (boards/emu) and the golden models (golden/) are two
// independent readings of the papers: if either imported the other, even
// indirectly or only from its tests, scoring would compare a model with
// itself. This test walks the module's import graph and fails on any path
// from one to the other.

// module is go.mod's module path: imports are matched against it.
const module = "github.com/labrunner/labrunner"

func moduleRoot(t *testing.T) string {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the test's directory")
		}
		dir = parent
	}
}

// packagesUnder lists the import paths of the module's packages below rel.
func packagesUnder(t *testing.T, root, rel string) []string {
	var out []string
	err := filepath.WalkDir(filepath.Join(root, rel), func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if n := d.Name(); n == "testdata" || strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_") {
			return filepath.SkipDir
		}
		matches, _ := filepath.Glob(filepath.Join(p, "*.go"))
		if len(matches) > 0 {
			r, _ := filepath.Rel(root, p)
			out = append(out, module+"/"+filepath.ToSlash(r))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// importsOf returns the module-internal imports of a package, test imports
// included for the starting packages.
func importsOf(t *testing.T, root, pkg string, withTests bool) []string {
	dir := filepath.Join(root, strings.TrimPrefix(pkg, module+"/"))
	ctx := build.Default
	ctx.BuildTags = append(ctx.BuildTags, "tools")
	bp, err := ctx.ImportDir(dir, 0)
	if err != nil {
		if _, ok := err.(*build.NoGoError); ok {
			return nil
		}
		t.Fatalf("%s: %v", pkg, err)
	}
	all := append([]string(nil), bp.Imports...)
	if withTests {
		all = append(all, bp.TestImports...)
		all = append(all, bp.XTestImports...)
	}
	var out []string
	for _, imp := range all {
		if imp == module || strings.HasPrefix(imp, module+"/") {
			out = append(out, imp)
		}
	}
	return out
}

// reach returns, for every package reachable from the starting ones, the
// chain of imports that reaches it.
func reach(t *testing.T, root string, start []string) map[string][]string {
	seen := map[string][]string{}
	type item struct {
		pkg   string
		chain []string
		top   bool
	}
	queue := []item{}
	for _, s := range start {
		queue = append(queue, item{s, []string{s}, true})
	}
	for len(queue) > 0 {
		it := queue[0]
		queue = queue[1:]
		if _, ok := seen[it.pkg]; ok {
			continue
		}
		seen[it.pkg] = it.chain
		for _, imp := range importsOf(t, root, it.pkg, it.top) {
			chain := append(append([]string(nil), it.chain...), imp)
			queue = append(queue, item{imp, chain, false})
		}
	}
	return seen
}

func checkNoPath(t *testing.T, from, to string) {
	root := moduleRoot(t)
	start := packagesUnder(t, root, from)
	if len(start) == 0 {
		t.Fatalf("no packages under %s: the layout changed, fix this test", from)
	}
	var bad []string
	for pkg, chain := range reach(t, root, start) {
		if pkg == module+"/"+to || strings.HasPrefix(pkg, module+"/"+to+"/") {
			bad = append(bad, strings.Join(chain, " -> "))
		}
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Errorf("%s must not import %s: %s", from, to, b)
	}
}

func TestEmulatorDoesNotImportGolden(t *testing.T) { checkNoPath(t, "boards/emu", "golden") }

func TestGoldenDoesNotImportEmulator(t *testing.T) { checkNoPath(t, "golden", "boards/emu") }

// TestCheckerCatchesAnImport makes sure the walk above can fail: a package
// of this module that is known to import another must be seen doing so.
func TestCheckerCatchesAnImport(t *testing.T) {
	root := moduleRoot(t)
	got := reach(t, root, []string{module + "/golden"})
	if _, ok := got[module+"/results"]; !ok {
		t.Fatalf("the import walk did not see golden -> results; it cannot be trusted to see golden -> boards/emu")
	}
}
