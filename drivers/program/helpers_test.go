package program

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/labrunner/labrunner/drivers"
)

// fakeTools makes a directory for fake tools and puts it first on PATH for
// the test. The fake tools are shell scripts: test fixtures standing in for
// vendor programs; the code under test never runs a shell.
func fakeTools(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "bin")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return dir
}

// writeTool writes an executable /bin/sh script. It is written to a
// temporary name and renamed, so that no descriptor open for writing can
// leak into a concurrently forked child (ETXTBSY).
func writeTool(t *testing.T, dir, name, body string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// recordArgv is the part of a fake tool that records its arguments,
// NUL-separated, into file.
func recordArgv(file string) string {
	return "for a in \"$@\"; do printf '%s\\0' \"$a\"; done > '" + file + "'\n"
}

func readArgv(t *testing.T, file string) []string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("the fake tool did not record its arguments: %v", err)
	}
	parts := strings.Split(string(b), "\x00")
	return parts[:len(parts)-1]
}

func equalArgv(t *testing.T, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("argv = %q, want %q", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("argv[%d] = %q, want %q (argv %q)", i, got[i], want[i], got)
		}
	}
}

// writeFile writes a fixture file, creating its directory.
func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// wantClass checks an error's class and returns its *drivers.Error.
func wantClass(t *testing.T, err error, class drivers.Class) *drivers.Error {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want a %s error", class)
	}
	if got := drivers.ClassOf(err); got != class {
		t.Fatalf("class %s, want %s; error: %v", got, class, err)
	}
	var de *drivers.Error
	if !errors.As(err, &de) {
		t.Fatalf("error is not a *drivers.Error: %v", err)
	}
	return de
}

func wantContains(t *testing.T, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			t.Errorf("%q\ndoes not contain %q", s, sub)
		}
	}
}

// bitFile writes a fake bitstream and returns its path.
func bitFile(t *testing.T, name string, content []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, content, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// isTimeout: a programming cut at its deadline is an infrastructure timeout
// and says so both ways.
func isTimeout(err error) bool {
	return errors.Is(err, drivers.ErrTimeout) && errors.Is(err, context.DeadlineExceeded)
}
