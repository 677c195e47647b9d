// Package docs holds the project's documentation and the tests that keep it
// true: the package graph in architecture.md is regenerated from `go list`.
package docs

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"testing"

	"github.com/labrunner/labrunner/bitstreams"
)

var update = flag.Bool("update", false, "rewrite the generated blocks of the documents instead of checking them")

const module = "github.com/labrunner/labrunner/"

// designSubtrees are folders whose sub-packages are one per design: the
// picture shows them as one node ("golden/<design>"), since every design's
// package has the same place in the graph. The designs are the catalogue's
// (a new design needs no change here); golden also has a package per
// protocol the designs share.
var designSubtrees = func() map[string]map[string]bool {
	designs := func(extra ...string) map[string]bool {
		out := map[string]bool{}
		for _, m := range bitstreams.Default().Designs() {
			if !m.Builtin {
				out[m.Name] = true
			}
		}
		for _, e := range extra {
			out[e] = true
		}
		return out
	}
	return map[string]map[string]bool{
		"boards/emu": designs(),
		"golden":     designs("ordering", "bringup"),
		"selftest":   designs(),
		"traffic":    designs(),
	}
}()

func node(pkg string) string {
	for root, designs := range designSubtrees {
		if rest, ok := strings.CutPrefix(pkg, root+"/"); ok && designs[rest] {
			return root + "/<design>"
		}
	}
	return pkg
}

// packageGraph returns the module's import graph (non-test imports), with
// per-design packages folded into one node each.
func packageGraph(t *testing.T) map[string]map[string]bool {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", "../...")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("go list: %v\n%s", err, errb.String())
	}
	g := map[string]map[string]bool{}
	dec := json.NewDecoder(&out)
	for dec.More() {
		var p struct {
			ImportPath string
			Imports    []string
			Name       string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		from, ok := strings.CutPrefix(p.ImportPath, module)
		if !ok || p.Name == "" || strings.HasPrefix(from, "docs") || strings.Contains(from, "internal/genbit") {
			continue
		}
		from = node(from)
		if g[from] == nil {
			g[from] = map[string]bool{}
		}
		for _, imp := range p.Imports {
			to, ok := strings.CutPrefix(imp, module)
			if !ok {
				continue
			}
			if to = node(to); to != from {
				g[from][to] = true
			}
		}
	}
	return g
}

func mermaid(g map[string]map[string]bool) string {
	id := func(s string) string {
		return strings.NewReplacer("/", "_", "<", "", ">", "").Replace(s)
	}
	var nodes []string
	for n := range g {
		nodes = append(nodes, n)
	}
	sort.Strings(nodes)
	var b strings.Builder
	b.WriteString("```mermaid\nflowchart TD\n")
	for _, n := range nodes {
		fmt.Fprintf(&b, "  %s[\"%s\"]\n", id(n), n)
	}
	for _, n := range nodes {
		var tos []string
		for to := range g[n] {
			tos = append(tos, to)
		}
		sort.Strings(tos)
		for _, to := range tos {
			fmt.Fprintf(&b, "  %s --> %s\n", id(n), id(to))
		}
	}
	b.WriteString("```\n")
	return b.String()
}

// replaceBlock puts body between the begin and end markers of name.
func replaceBlock(doc, name, body string) (string, error) {
	begin, end := "<!-- "+name+":begin -->\n", "<!-- "+name+":end -->"
	i := strings.Index(doc, begin)
	j := strings.Index(doc, end)
	if i < 0 || j < i {
		return "", fmt.Errorf("markers %q and %q not found in order", begin, end)
	}
	return doc[:i+len(begin)] + body + doc[j:], nil
}

func TestArchitectureGraph(t *testing.T) {
	g := packageGraph(t)
	if cycle := findCycle(g); cycle != nil {
		t.Errorf("the package graph has a cycle: %s", strings.Join(cycle, " -> "))
	}
	data, err := os.ReadFile("architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	want, err := replaceBlock(string(data), "package-graph", mermaid(g))
	if err != nil {
		t.Fatalf("architecture.md: %v", err)
	}
	if want == string(data) {
		return
	}
	if *update {
		if err := os.WriteFile("architecture.md", []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("architecture.md's package graph is out of date: run `go test ./docs -run ArchitectureGraph -update` and review the change")
}

func findCycle(g map[string]map[string]bool) []string {
	const (
		white = iota
		grey
		black
	)
	colour := map[string]int{}
	var stack []string
	var found []string
	var visit func(n string) bool
	visit = func(n string) bool {
		colour[n] = grey
		stack = append(stack, n)
		var tos []string
		for to := range g[n] {
			tos = append(tos, to)
		}
		sort.Strings(tos)
		for _, to := range tos {
			switch colour[to] {
			case grey:
				for i, s := range stack {
					if s == to {
						found = append(append([]string(nil), stack[i:]...), to)
					}
				}
				return true
			case white:
				if visit(to) {
					return true
				}
			}
		}
		stack = stack[:len(stack)-1]
		colour[n] = black
		return false
	}
	var nodes []string
	for n := range g {
		nodes = append(nodes, n)
	}
	sort.Strings(nodes)
	for _, n := range nodes {
		if colour[n] == white && visit(n) {
			return found
		}
	}
	return nil
}

func TestFindCycle(t *testing.T) {
	g := map[string]map[string]bool{"a": {"b": true}, "b": {"c": true}, "c": {"a": true}}
	if c := findCycle(g); len(c) != 4 {
		t.Errorf("cycle a->b->c->a not found: %v", c)
	}
	if c := findCycle(map[string]map[string]bool{"a": {"b": true}, "b": {}}); c != nil {
		t.Errorf("found a cycle in a chain: %v", c)
	}
}

// The root package drivers is the vocabulary (interfaces, Image, error
// classes) and imports nothing of the project; no driver reads the lab
// file (boards binds a lab entry to its driver).
func TestDriversImportNoProjectKnowledge(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "../drivers/...").Output()
	if err != nil {
		t.Fatal(err)
	}
	const mod = "github.com/labrunner/labrunner/"
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		for _, imp := range f[1:] {
			switch {
			case f[0] == mod+"drivers" && strings.HasPrefix(imp, mod):
				t.Errorf("drivers imports %s: the vocabulary package imports nothing of the project", imp)
			case strings.HasPrefix(imp, mod+"labconfig"):
				t.Errorf("%s imports %s: bind a driver to the lab file outside it (boards)", f[0], imp)
			}
		}
	}
}
