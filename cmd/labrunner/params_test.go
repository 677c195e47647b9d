package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
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
	linesHold(t, out, [][]string{
		{"exanet", "bandwidth", "self-test bandwidth"},
		{"path", "text (one of router, router2x, link)", "default router", "the path measured"},
		{"pairs", "integer (1..256)", "default 16"},
		{"batches", "integer (1..1000000)", "default 2000", "random batches"},
		{"loads", "list of numbers (at most 1, above 0)", "default 1"},
		{"senders", "integer", "default N-1 (7:1 on 8 nodes, §6.2)"},
		{"targets", "list of text values", "default all", "k boards a night"},
		{"seed", "integer", "default the plan's seed"},
	})
}

// The mistakes in a plan's own params: and in its boards' params: that
// lab check used to pass (a typo silently ignored, a missing coordinate
// reported as 41 design failures, a Shoal slot refused only after the rack
// was programmed): lab check and the nightly refuse each with exit 2, the
// file:line, the key and the fix, and the nightly makes no run directory.
func TestLabCheckAndNightlyRefusePlanAndBoardParameters(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, old, new string
		// at is the text of the line the problem is reported at; want
		// what the message says there.
		at   string
		want []string
	}{
		{"exanet plan key", "      dor_order: XYZ\n", "      dor_ordr: XYZ\n", "dor_ordr: XYZ",
			[]string{`plans[0].params.dor_ordr: plan exanet-mesh (design exanet): unknown parameter "dor_ordr" (allowed: dor_order, lattice) (did you mean dor_order?)`}},
		{"exanet board key", "{board: exa-00, params: {coord: [0, 0, 0]}}", "{board: exa-00, params: {cord: [0, 0, 0]}}", "cord: [0, 0, 0]",
			[]string{`plans[0].boards[0].params.cord: board exa-00: unknown parameter "cord" (allowed: coord) (did you mean coord?)`}},
		{"shoal plan key", "params: {slot_cycles: 12, guard_cycles: 1, sync_master: 0}", "params: {slot_cycle: 12, guard_cycles: 1, sync_master: 0}", "slot_cycle: 12",
			[]string{`plans[2].params.slot_cycle: plan shoal (design shoal): unknown parameter "slot_cycle" (allowed: guard_cycles, slot_cycles, sync_master) (did you mean slot_cycles?)`}},
		{"prr plan key", "    design: prr\n", "    design: prr\n    params: {fifo_dept: 8}\n", "fifo_dept: 8",
			[]string{`plans[1].params.fifo_dept: plan prr (design prr): unknown parameter "fifo_dept" (this takes no parameters) (remove it)`}},
		{"exanet board coordinate missing", "{board: exa-11, params: {coord: [1, 1, 0]}}", "{board: exa-11}", "{board: exa-11}",
			[]string{`plans[0].boards[3].params.coord: board exa-11: missing parameter coord (the board's place in the mesh: [x, y, z], each below the plan's lattice) (write coord: [0, ...])`}},
		{"exanet board outside the lattice", "{board: exa-11, params: {coord: [1, 1, 0]}}", "{board: exa-11, params: {coord: [1, 2, 0]}}", "coord: [1, 2, 0]",
			[]string{`plans[0].boards[3].params.coord: board exa-11: coordinate (1,2,0) is outside the lattice [2 2 1]`}},
		{"shoal role", "{board: shoal-sw5, params: {role: switch}}", "{board: shoal-sw5, params: {role: swich}}", "role: swich",
			[]string{`plans[2].boards[7].params.role: board shoal-sw5: "swich" is not nic or switch (write role: nic or role: switch)`}},
		{"tin plan of one board", "      - {board: tin-p0b1, params: {pod: 0, tin: 1}}\n      - {board: tin-p0b2, params: {pod: 0, tin: 2}}\n      - {board: tin-p0b3, params: {pod: 0, tin: 3}}\n      - {board: tin-p1b0, params: {pod: 1, tin: 0}}\n      - {board: tin-p1b1, params: {pod: 1, tin: 1}}\n      - {board: tin-p1b2, params: {pod: 1, tin: 2}}\n      - {board: tin-p1b3, params: {pod: 1, tin: 3}}\n", "", "  - name: tin\n",
			[]string{`plans[3].boards: plan tin (design tin): a Clique needs at least two TiN boards, the plan has 1 (give the plan two or more cabled TiN boards; a single board is programmed and read with labrunner program and regs)`}},
		{"shoal plan without a switch", "      - {board: shoal-sw0, params: {role: switch}}\n      - {board: shoal-sw1, params: {role: switch}}\n      - {board: shoal-sw2, params: {role: switch}}\n      - {board: shoal-sw3, params: {role: switch}}\n      - {board: shoal-sw4, params: {role: switch}}\n      - {board: shoal-sw5, params: {role: switch}}\n", "", "  - name: shoal\n",
			[]string{`plans[2].boards: plan shoal (design shoal): a Shoal rack needs a board of NICs and a switch board at least, the plan has 2 nic and 0 switch`}},
		{"exanet cable between boards that are not neighbours", "{a: \"exa-00:sfp0\", b: \"exa-10:sfp0\", latency_ns: 5}\n  - {a: \"exa-01:sfp0\", b: \"exa-11:sfp0\"",
			"{a: \"exa-00:sfp0\", b: \"exa-11:sfp0\", latency_ns: 5}\n  - {a: \"exa-01:sfp0\", b: \"exa-10:sfp0\"", "{a: \"exa-00:sfp0\", b: \"exa-11:sfp0\"",
			[]string{`plans[0].boards: plan exanet-mesh (design exanet): cable exa-00:sfp0 - exa-11:sfp0: nodes (0,0,0) and (1,1,0) differ in more than one dimension: not neighbours in a mesh (cable boards one hop apart in the mesh, or fix their coord)`}},
		{"shoal leaf cabled to one spine", "  - {a: \"shoal-sw0:sfp2\", b: \"shoal-sw4:sfp0\", latency_ns: 10}    # leaf 0 - spine 0\n", "", "  - name: shoal\n",
			[]string{`plans[2].boards: plan shoal (design shoal): fabric: leaf shoal-sw0 reaches 1 spines, a two-stage fabric of 4-port switches needs 2 (§3.2) (cable the rack as docs/shoal.md prescribes)`}},
		{"tin place taken twice", "{board: tin-p1b3, params: {pod: 1, tin: 3}}", "{board: tin-p1b3, params: {pod: 1, tin: 2}}", "{board: tin-p1b3, params: {pod: 1, tin: 2}}",
			[]string{`.params.tin: board tin-p1b3: boards tin-p1b2 and tin-p1b3 are both TiN 2 of pod 1 (give each board its own pod and TiN)`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			src := string(labconfig.DefaultSource())
			if !strings.Contains(src, c.old) {
				t.Fatalf("the default lab no longer has %q", c.old)
			}
			src = strings.Replace(src, c.old, c.new, 1)
			lab := filepath.Join(t.TempDir(), "lab.yaml")
			if err := os.WriteFile(lab, []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			prefix := fmt.Sprintf("%s:%d: ", lab, lineOf(t, src, c.at))
			code, out := runCLI(t, "lab", "check", "--lab", lab)
			if code != 2 {
				t.Fatalf("lab check: exit %d, want 2:\n%s", code, out)
			}
			for _, w := range c.want {
				if !strings.Contains(out, prefix+w) && !(strings.HasPrefix(w, ".") && strings.Contains(out, w) && strings.Contains(out, prefix)) {
					t.Errorf("lab check does not say\n%s%s\nin:\n%s", prefix, w, out)
				}
			}
			root := t.TempDir()
			code, out = runCLI(t, "nightly", "--lab", lab, "--out", root, "--locks", t.TempDir())
			if code != 2 || !strings.Contains(out, c.want[0]) {
				t.Fatalf("nightly: exit %d, want 2 saying %q:\n%s", code, c.want[0], out)
			}
			if es, _ := os.ReadDir(root); len(es) != 0 {
				t.Errorf("the refused nightly made %v", es)
			}
		})
	}
}

// lab tests lists what each design's plans and their boards take, as it
// lists the tests' parameters.
func TestLabTestsListsPlanAndBoardParameters(t *testing.T) {
	t.Parallel()
	code, out := runCLI(t, "lab", "tests")
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	linesHold(t, out, [][]string{
		{"exanet", "(plan)", "the plan's own params:"},
		{"lattice", "list of integers (at least 1)", "default 2,2,1", "the mesh's size"},
		{"dor_order", "text", "default XYZ", "permutation of XYZ"},
		{"exanet", "(board)", "each board's params:"},
		{"coord", "list of integers (at least 0)", "required", "the board's place in the mesh"},
		{"shoal", "(plan)"},
		{"slot_cycles", "integer (at least 1)", "default 12"},
		{"role", "text", "required", "nic"},
		{"tin", "(board)"},
		{"pod", "integer (0..7)", "required"},
		{"seed", "integer", "default the lab's seed"},
		{"prr", "(plan)", "none (lab check and the nightly refuse any key)"},
		{"prr", "(board)", "none (lab check and the nightly refuse any key)"},
	})
}

// linesHold wants, for each group of words, a line of lab tests' output that
// holds every word of it.
func linesHold(t *testing.T, out string, wants [][]string) {
	t.Helper()
	lines := strings.Split(out, "\n")
	for _, want := range wants {
		if !slices.ContainsFunc(lines, func(l string) bool {
			return !slices.ContainsFunc(want, func(w string) bool { return !strings.Contains(l, w) })
		}) {
			t.Errorf("no line of lab tests holds %q:\n%s", want, out)
		}
	}
}
