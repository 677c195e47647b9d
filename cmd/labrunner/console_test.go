package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The README's console example on the default lab: the emulated board is
// still booting when the command starts; --send waits for its prompt.
func TestReadmeConsoleExample(t *testing.T) {
	t.Parallel()
	for i := 0; i < 3; i++ {
		code, out := runCLI(t, "console", "--board", "exa-00", "--send", "id", "--expect", "dna=")
		if code != 0 || !strings.Contains(out, "dna=") {
			t.Fatalf("attempt %d: exit %d:\n%s", i+1, code, out)
		}
	}
	// Several lines: each waits for the prompt of the one before.
	code, out := runCLI(t, "console", "--board", "exa-00", "--send", "version", "--send", "id", "--expect", "dna=0x[0-9a-f]+")
	if code != 0 || !strings.Contains(out, "dna=0x") {
		t.Fatalf("two lines: exit %d:\n%s", code, out)
	}
}

// regs write on the default lab says that the board it wrote to is gone,
// and how to keep a rack up; with `sim serve --lab-out` the write stays.
func TestRegsWriteOnAThrowAwayRackAndOnAServedOne(t *testing.T) {
	t.Parallel()
	if os.Getenv("LABRUNNER_TEST_SERVE") != "" {
		os.Exit(run(strings.Split(os.Getenv("LABRUNNER_TEST_SERVE"), "\x1f"), os.Stdout, os.Stderr))
	}
	code, out := runCLI(t, "regs", "write", "--board", "exa-00", "SCRATCH0", "0x1234")
	if code != 0 || !strings.Contains(out, "lived only as long as this command") || !strings.Contains(out, "sim serve --lab-out") {
		t.Fatalf("regs write on the default lab: exit %d:\n%s", code, out)
	}

	served := filepath.Join(t.TempDir(), "served.yaml")
	cmd := exec.Command(os.Args[0], "-test.run=^TestRegsWriteOnAThrowAwayRackAndOnAServedOne$")
	cmd.Env = append(os.Environ(), "LABRUNNER_TEST_SERVE="+strings.Join([]string{"labrunner", "--log-level", "error", "sim", "serve", "--lab-out", served}, "\x1f"))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if b, err := os.ReadFile(served); err == nil && strings.Contains(string(b), "plans:") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("sim serve wrote no lab file")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if code, out := runCLI(t, "regs", "write", "--lab", served, "--board", "exa-00", "SCRATCH0", "0xbeef"); code != 0 || strings.Contains(out, "lived only") {
		t.Fatalf("regs write on the served rack: exit %d:\n%s", code, out)
	}
	code, out = runCLI(t, "regs", "read", "--lab", served, "--board", "exa-00", "SCRATCH0")
	if code != 0 || !strings.Contains(out, "0x0000beef") {
		t.Fatalf("regs read on the served rack: exit %d:\n%s", code, out)
	}
	if code, out := runCLI(t, "console", "--lab", served, "--board", "exa-10", "--send", "id", "--expect", "dna="); code != 0 {
		t.Fatalf("console on the served rack: exit %d:\n%s", code, out)
	}
}
