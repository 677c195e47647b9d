package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/labrunner/labrunner/golden/figure"
	"github.com/labrunner/labrunner/internal/raceshare"
)

// golden simulate writes a JSON file and a plot per figure, and its exit
// code says whether every reproduced value is within its band.
func TestGoldenSimulate(t *testing.T) {
	t.Parallel()
	if raceshare.SecondPassOnly(t, "the presets' simulations are golden/tin's and golden/ordering's, whose tests run them under the detector") {
		return
	}
	out := t.TempDir()
	code := runCode(t, "golden", "simulate", "--out", out, "--scale", "0.1", "--loads", "0.05,0.2",
		"--warmup-ns", "500", "--measure-ns", "1000", "sc18-fig10", "sc18-sizing", "synthetic")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, id := range []string{"sc18-fig10", "sc18-sizing", "booksim-dragonfly-minimal-uniform"} {
		b, err := os.ReadFile(filepath.Join(out, id+".json"))
		if err != nil {
			t.Fatal(err)
		}
		var f figure.Figure
		if err := json.Unmarshal(b, &f); err != nil {
			t.Fatalf("%s.json: %v", id, err)
		}
		if f.ID != id || len(f.Series) == 0 || len(f.Checks) == 0 {
			t.Errorf("%s.json: id %q, %d series, %d checks", id, f.ID, len(f.Series), len(f.Checks))
		}
		svg, err := os.ReadFile(filepath.Join(out, id+".svg"))
		if err != nil || !strings.Contains(string(svg), "<svg") {
			t.Errorf("%s.svg: %v", id, err)
		}
	}
}

func TestGoldenSimulateUsage(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{},
		{"nosuch"},
		{"sc18-fig99"},
		{"--scale", "0", "sc18"},
		{"--loads", "1.5", "synthetic"},
		{"--preset", "nosuch", "synthetic"},
		{"--alg", "nosuch", "synthetic"},
		{"--pattern", "nosuch", "synthetic"},
		{"--clique", "48", "aquila-rtt"},
	} {
		a := append([]string{"golden", "simulate", "--out", t.TempDir()}, args...)
		if code := runCode(t, a...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}
