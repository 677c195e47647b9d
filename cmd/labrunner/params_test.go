package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/labrunner/labrunner/labconfig"
)

// lineOf returns the 1-based line of the first occurrence of s in src.
func lineOf(t *testing.T, src, s string) int {
	t.Helper()
	i := strings.Index(src, s)
	if i < 0 {
		t.Fatalf("%q not in the lab", s)
	}
	return strings.Count(src[:i], "\n") + 1
}

// A test parameter of the wrong type or outside its limits is a
// configuration error lab check lists with file:line, the key, the value
// and what it takes, like a mistyped name.
func TestLabCheckRefusesParameterValues(t *testing.T) {
	t.Parallel()
	src := string(labconfig.DefaultSource())
	for _, r := range [][2]string{
		{"params: {path: router, payloads: [32, 64, 128, 256, 512], packets: 2000}", "params: {path: routr, payloads: [32, 64, 128, 256, 512], packets: abc}"},
		{"params: {pairs: 16}", "params: {pairs: [16, 32]}"},
		{"params: {batches: 2000}", "params: {batches: -5}"},
		{"params: {cycles: 30000, traffic: [uniform, bursty, nonuniform]}\n", "params: {cycles: 30000, warmup: 30000, traffic: [uniform, bursty, nonuniform]}\n"},
		{`params: {link: "shoal-sw0:sfp2"}`, `params: {link: "shoal-sw0:sfp2", node: 3}`},
		{"params: {modes: [fully-adaptive, minimal-adaptive,", "params: {modes: [fully-adaptive, maximal-adaptive,"},
	} {
		if !strings.Contains(src, r[0]) {
			t.Fatalf("the default lab no longer has %q", r[0])
		}
		src = strings.Replace(src, r[0], r[1], 1)
	}
	lab := filepath.Join(t.TempDir(), "lab.yaml")
	if err := os.WriteFile(lab, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out := runCLI(t, "lab", "check", "--lab", lab)
	if code != 2 {
		t.Fatalf("exit %d, want 2:\n%s", code, out)
	}
	for _, want := range []string{
		fmt.Sprintf(`%s:%d: plans[0].tests[2].params.path: test bandwidth: "routr" is not one of router, router2x, link (did you mean router?) (write one text value, one of router, router2x, link)`, lab, lineOf(t, src, "path: routr")),
		fmt.Sprintf(`%s:%d: plans[0].tests[2].params.packets: test bandwidth: "abc" is not an integer (write an integer)`, lab, lineOf(t, src, "path: routr")),
		fmt.Sprintf(`%s:%d: plans[0].tests[6].params.pairs: test hop_latency: got a list [16, 32] where an integer, 1..256 goes`, lab, lineOf(t, src, "pairs: [16, 32]")),
		fmt.Sprintf(`%s:%d: plans[1].tests[1].params.batches: test placement: -5 is outside 1..1000000 (write an integer, 1..1000000)`, lab, lineOf(t, src, "batches: -5")),
		fmt.Sprintf(`%s:%d: plans[1].tests[3].params.warmup: test throughput: warmup 30000 leaves no line-rate window in a run of 30000 cycles (write a warmup of 1..29999, or more cycles)`, lab, lineOf(t, src, "warmup: 30000")),
		fmt.Sprintf(`%s:%d: plans[2].tests[`, lab, lineOf(t, src, "node: 3}")),
		`.params.link: test failure: give exactly one of link (a cable to fail) or node (a node to fail)`,
		fmt.Sprintf(`%s:%d: plans[3].tests[`, lab, lineOf(t, src, "maximal-adaptive")),
		`.params.modes: test routes: `,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("lab check does not say\n%s\n in:\n%s", want, out)
		}
	}
}

// The nightly decodes every test entry before it touches a board: a value
// of the wrong type stops it with exit 2 and no run directory.
func TestNightlyRefusesAWrongTypedTestParameter(t *testing.T) {
	t.Parallel()
	lab := twoGroupsLab(t, "iterations: 8", "iterations: eight")
	root := t.TempDir()
	code, out := runCLI(t, "nightly", "--lab", lab, "--out", root, "--locks", t.TempDir())
	if code != 2 || !strings.Contains(out, `params.iterations: test latency: "eight" is not an integer`) {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	if es, _ := os.ReadDir(root); len(es) != 0 {
		t.Errorf("the refused nightly made %v", es)
	}
}

// lab tests lists each test's parameters from its struct: name, type and
// limits, default, and what it sets.
func TestLabTestsListsParameters(t *testing.T) {
	t.Parallel()
	code, out := runCLI(t, "lab", "tests")
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	for _, want := range [][]string{
		{"exanet", "bandwidth", "self-test bandwidth"},
		{"path", "text (one of router, router2x, link)", "default router", "the path measured"},
		{"pairs", "integer (1..256)", "default 16"},
		{"batches", "integer (1..1000000)", "default 2000", "random batches"},
		{"loads", "list of numbers (at most 1, above 0)", "default 1"},
		{"senders", "integer", "default N-1 (7:1 on 8 nodes, §6.2)"},
		{"targets", "list of text values", "default all", "k boards a night"},
		{"seed", "integer", "default the plan's seed"},
	} {
		found := false
		for _, l := range strings.Split(out, "\n") {
			ok := true
			for _, w := range want {
				ok = ok && strings.Contains(l, w)
			}
			found = found || ok
		}
		if !found {
			t.Errorf("no line of lab tests holds %q:\n%s", want, out)
		}
	}
}
