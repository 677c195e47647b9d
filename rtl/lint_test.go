package rtl

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestLint: every module lints clean under verilator --lint-only -Wall, as
// Verilog-2005 and as SystemVerilog, with the default parameters and with
// those the co-simulation and a small build use, and yosys reads and
// elaborates it.
func TestLint(t *testing.T) {
	if err := RequireTools(); err != nil {
		t.Fatal(err)
	}
	srcs, err := Sources()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for _, c := range []struct {
		top    string
		params []string
	}{
		{"lbrb_bridge", nil},
		{"lbrb_bridge", []string{"-GCLK_HZ=921600", "-GBAUD=115200", "-GMAX_COUNT=16", "-GBUS_TIMEOUT_CYCLES=0"}},
		{"lbrb_example_top", nil},
		{"lbrb_example_top", []string{fmt.Sprintf("-GCLK_HZ=%d", Config{Baud: 921600}.ClkHz()), "-GBAUD=921600"}},
	} {
		// As Verilog-2005, and as Verilator reads .v files by default
		// (SystemVerilog, whose keywords a Verilog-2005 name may clash with).
		for _, lang := range [][]string{{"--default-language", "1364-2005"}, nil} {
			name := c.top + " " + strings.Join(append(c.params, lang...), " ")
			args := append(append([]string{"--lint-only", "-Wall", "--top-module", c.top}, lang...), c.params...)
			cmd := exec.CommandContext(ctx, "verilator", append(args, srcs...)...)
			if out, err := cmd.CombinedOutput(); err != nil || len(out) > 0 {
				t.Errorf("verilator --lint-only -Wall %s: %v\n%s", name, err, out)
			}
		}
	}
	for _, top := range []string{"lbrb_bridge", "lbrb_example_top"} {
		script := fmt.Sprintf("read_verilog -defer %s; hierarchy -check -top %s; proc; check -assert", strings.Join(srcs, " "), top)
		cmd := exec.CommandContext(ctx, "yosys", "-q", "-p", script)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("yosys on %s: %v\n%s", top, err, out)
		}
	}
}

// TestToolsTarget: the make target that installs the tools is quick and
// quiet when they are there (make test runs it every time).
func TestToolsTarget(t *testing.T) {
	if err := RequireTools(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "make", "-s", "rtl-tools")
	cmd.Dir = filepath.Join(Dir(), "..")
	if out, err := cmd.CombinedOutput(); err != nil || len(out) > 0 {
		t.Fatalf("make -s rtl-tools with the tools installed: %v\n%s", err, out)
	}
}

// TestToolsMissing: without the tools, every RTL test fails saying which
// tool is missing and the make target that installs it.
func TestToolsMissing(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	err := RequireTools()
	if err == nil || !strings.Contains(err.Error(), "verilator and yosys and g++ and make not installed") || !strings.Contains(err.Error(), ToolsTarget) {
		t.Fatalf("RequireTools with an empty PATH: %v", err)
	}
	if _, err := Build(context.Background(), Config{Baud: 115200}); err == nil || !strings.Contains(err.Error(), ToolsTarget) {
		t.Fatalf("Build with an empty PATH: %v", err)
	}
}

// TestOtherBuilds: a new build removes its own name's builds of other
// sources, never those of a name it is the beginning of.
func TestOtherBuilds(t *testing.T) {
	cache := t.TempDir()
	for _, d := range []string{"sim-921600-aaaaaaaaaaaaaaaa", "sim-921600-bbbbbbbbbbbbbbbb",
		"sim-921600-max16-aaaaaaaaaaaaaaaa", "sim-9216000-aaaaaaaaaaaaaaaa", "line-aaaaaaaaaaaaaaaa"} {
		if err := os.Mkdir(filepath.Join(cache, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	got := otherBuilds(cache, "sim-921600", "bbbbbbbbbbbbbbbb")
	if want := []string{filepath.Join(cache, "sim-921600-aaaaaaaaaaaaaaaa")}; !slices.Equal(got, want) {
		t.Fatalf("otherBuilds(sim-921600) = %v, want %v", got, want)
	}
}
