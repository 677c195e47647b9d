package rtl

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestSynthesisFigures: the resource and timing figures in
// docs/uart-bridge.md are those yosys gives for the sources as they are
// (scripts/rtl-synth.sh --check synthesizes, or finds its cached result,
// and compares).
func TestSynthesisFigures(t *testing.T) {
	if err := RequireTools(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	root := filepath.Join(Dir(), "..")
	cmd := exec.CommandContext(ctx, filepath.Join(root, "scripts", "rtl-synth.sh"), "--check")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("scripts/rtl-synth.sh --check: %v\n%s", err, out)
	}
}
