package main

import (
	"os"
	"strings"
	"testing"

	"github.com/labrunner/labrunner/internal/syncbuf"
)

// runCaptured runs the CLI in process with its standard output and error
// captured in buffers of its own: no process-wide state is touched, so
// tests using it run in parallel.
func runCaptured(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut syncbuf.Buffer
	code = run(append([]string{"labrunner"}, args...), &out, &errOut)
	return code, out.String(), errOut.String()
}

// runCLI runs the CLI and returns its exit code and what it printed on
// stdout and stderr, stdout first.
func runCLI(t *testing.T, args ...string) (int, string) {
	t.Helper()
	code, stdout, stderr := runCaptured(t, args...)
	return code, stdout + stderr
}

// runCode runs the CLI and returns its exit code; what it printed goes to
// the test's log when the test fails.
func runCode(t *testing.T, args ...string) int {
	t.Helper()
	code, stdout, stderr := runCaptured(t, args...)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("labrunner %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, tail(stdout, 40), tail(stderr, 40))
		}
	})
	return code
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func TestMain(m *testing.M) {
	code := m.Run()
	if cleanTwoGroups.root != "" {
		os.RemoveAll(cleanTwoGroups.root)
	}
	os.Exit(code)
}
