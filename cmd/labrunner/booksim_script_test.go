package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// stubBookSim writes a program that prints what BookSim2 prints at the end
// of a run (the lines scripts/booksim-compare.sh reads), with the given
// packet latency, and burns a little CPU so that GNU time sees some (about
// 0.1 s: its figures have two decimals).
func stubBookSim(t *testing.T, latency string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "booksim")
	script := `#!/usr/bin/env bash
rate=${2#injection_rate=}
i=0; while [ $i -lt 50000 ]; do i=$((i+1)); done
cat <<OUT
Time taken is 12353 cycles
====== Overall Traffic Statistics ======
====== Traffic class 0 ======
Packet latency average = ` + latency + ` (1 samples)
Accepted packet rate average = $rate (1 samples)
Accepted flit rate average = $rate (1 samples)
OUT
exit 255
`
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// The comparison script runs golden and BookSim side by side and prints
// the speed, memory, latency and accepted-rate ratios per load; it exits 1
// when golden's latency is off by more than 10%, 2 on bad usage. The script
// runs in processes of its own (a labrunner it builds, GNU time, the stub):
// the test runs beside the others.
func TestBookSimCompareScript(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/usr/bin/time"); err != nil {
		t.Fatalf("GNU time is needed as /usr/bin/time (apt-get install time): %v", err)
	}
	script, err := filepath.Abs("../../scripts/booksim-compare.sh")
	if err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, int) {
		cmd := exec.Command(script, args...)
		cmd.Env = append(os.Environ(), "BOOKSIM=")
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(out), code
	}
	// A stub whose latency is golden's (the preset reproduces BookSim's
	// unloaded 124.7 ns) and one 30% off.
	out, code := run("-r", "1", "-l", "0.05", stubBookSim(t, "124.7"))
	if !strings.Contains(out, "speed(min)") || !strings.Contains(out, "0.05\t") {
		t.Fatalf("no ratio table:\n%s", out)
	}
	if strings.Contains(out, "\t0.000000\t") {
		t.Errorf("a run with no CPU time: GNU time's figures misread:\n%s", out)
	}
	if !strings.Contains(out, "(+0.0%)") && !strings.Contains(out, "(-0.0%)") && !strings.Contains(out, "(+0.1%)") && !strings.Contains(out, "(-0.1%)") {
		t.Errorf("golden's latency against the stub's 124.7 ns:\n%s", out)
	}
	if _, code = run("-r", "1", "-l", "0.05", stubBookSim(t, "95")); code != 1 {
		t.Errorf("a latency 30%% off: exit %d, want 1", code)
	}
	for _, args := range [][]string{{}, {"-r", "x", "/bin/true"}, {"-a", "valiant", "/bin/true"}, {"-l", "2", "/bin/true"}, {"/nonexistent"}} {
		if _, code := run(args...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}
