package main

import (
	"io"
	"strings"
	"testing"
)

func TestNormalizeArgs(t *testing.T) {
	t.Parallel()
	app := newApp(io.Discard, io.Discard)
	cases := []struct {
		in, want string
	}{
		// Flags after positional arguments, as git and kubectl users write them.
		{"regs read ID VERSION --board exa-00", "regs read --board exa-00 ID VERSION"},
		{"regs read ID --board=exa-00", "regs read --board=exa-00 ID"},
		// Global flags after the command.
		{"nightly --log-level debug --plan exanet", "--log-level debug nightly --plan exanet"},
		{"nightly --plan exanet --log-level=warn", "--log-level=warn nightly --plan exanet"},
		// Negative numbers stay positional and are protected by "--".
		{"regs write SCRATCH0 -1 --board exa-00", "regs write --board exa-00 -- SCRATCH0 -1"},
		// "--" ends flags: what follows is positional.
		{"regs read --board exa-00 -- --odd", "regs read --board exa-00 -- --odd"},
		// Bool flags take no value.
		{"golden predict exanet --json --set payloads=64", "golden predict --json --set payloads=64 exanet"},
		// Already in order: unchanged.
		{"--log-level warn nightly --lab x.yaml", "--log-level warn nightly --lab x.yaml"},
		{"help nightly", "help nightly"},
		{"--version", "--version"},
	}
	for _, c := range cases {
		got, err := normalizeArgs(app, append([]string{"labrunner"}, strings.Fields(c.in)...))
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		if g := strings.Join(got[1:], " "); g != c.want {
			t.Errorf("%q:\n got %q\nwant %q", c.in, g, c.want)
		}
	}
}

func TestUsageMistakes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"nighty"}, `unknown command "nighty": did you mean nightly?`},
		{[]string{"lab", "chek"}, `has no command "chek": did you mean check?`},
		{[]string{"nightly", "mylab.yaml"}, `a lab file goes with --lab (labrunner nightly --lab mylab.yaml)`},
		{[]string{"faults", "x"}, `labrunner faults takes no arguments`},
		{[]string{"boards", "mylab.yaml"}, `takes no arguments`},
		{[]string{"lab", "tests", "mylab.yaml"}, `takes no arguments`},
		{[]string{"nightly", "--log-level", "verbose"}, `--log-level "verbose": use debug, info, warn or error`},
		{[]string{"nightly", "--bogus"}, `unknown flag --bogus`},
		{[]string{"regs", "read", "ID", "--board"}, `--board needs a value`},
		{[]string{"lab", "check", "--lab", "a.yaml", "b.yaml"}, `two lab files`},
	}
	for _, c := range cases {
		code, _, stderr := runCaptured(t, c.args...)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2 (stderr %q)", c.args, code, stderr)
		}
		if !strings.Contains(stderr, c.want) {
			t.Errorf("%v: stderr %q does not say %q", c.args, stderr, c.want)
		}
		if n := strings.Count(stderr, "\n"); n > 2 {
			t.Errorf("%v: %d lines of output for a usage mistake, want one:\n%s", c.args, n, stderr)
		}
	}
}

func TestLabCheckTakesTheFileAsArgument(t *testing.T) {
	t.Parallel()
	code, _, stderr := runCaptured(t, "lab", "check", "testdata/does-not-exist.yaml")
	if code != 2 || !strings.Contains(stderr, "does-not-exist.yaml") {
		t.Fatalf("lab check of a missing file: exit %d, %q", code, stderr)
	}
	code, stdout, stderr := runCaptured(t, "lab", "check", "testdata/mini.yaml")
	if code != 0 || !strings.Contains(stdout, "testdata/mini.yaml") {
		t.Fatalf("lab check testdata/mini.yaml: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// TestAppsRunConcurrently guards the end-to-end tests' parallelism: the CLI
// keeps no state at package level (flags are made per app), so two apps in
// one process never share a flag. Under -race a shared flag shows up here.
func TestAppsRunConcurrently(t *testing.T) {
	t.Parallel()
	done := make(chan int, 4)
	for i := 0; i < 4; i++ {
		go func() {
			done <- runCode(t, "--log-level", "error", "lab", "check", "--lab", "testdata/mini.yaml")
		}()
	}
	for i := 0; i < 4; i++ {
		if code := <-done; code != 0 {
			t.Errorf("lab check exit %d", code)
		}
	}
}

// bitstreams list names files where a user can find them, not relative to
// the manifest ("../files/..." exists nowhere a user stands).
func TestBitstreamsListPaths(t *testing.T) {
	t.Parallel()
	code, out, stderr := runCaptured(t, "bitstreams", "list")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if strings.Contains(out, "../") || !strings.Contains(out, "embedded:bitstreams/files/") {
		t.Errorf("bitstreams list:\n%s", out)
	}
}

// run() holds parseMu until the command that runs has parsed its flags
// (urfave/cli writes package-level help flags while parsing): a parent
// command whose Before runs on the way to a subcommand (faults -> faults
// campaign) must not release it, or two runs in one process race.
func TestParseLockHeldUntilTheLeafParsed(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"faults", "campaign", "--lab", "does-not-exist.yaml"},
		{"lab", "check", "--lab", "does-not-exist.yaml"},
	} {
		app := newApp(io.Discard, io.Discard)
		calls := 0
		app.Metadata = map[string]any{parsedKey: func() { calls++ }}
		// The hook counts instead of unlocking: the test holds the lock
		// itself for the whole run, as run() holds it for the parse, so
		// that other tests' runs do not parse beside this one.
		parseMu.Lock()
		err := app.Run(append([]string{"labrunner"}, args...))
		parseMu.Unlock()
		if err == nil {
			t.Errorf("%v: no error for a missing lab file", args)
		}
		if calls != 1 {
			t.Errorf("%v: the parse lock was released %d times, want once (by the command that runs)", args, calls)
		}
	}
}
