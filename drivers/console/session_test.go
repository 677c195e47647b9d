package console

import (
	"context"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/labrunner/labrunner/internal/syncbuf"
)

// SendLines waits for a prompt (sending an empty line, as a person taps
// Enter), runs every line but the last as a command printing its answer
// (without the kernel's noise), sends the last and prints what arrived up
// to the expected pattern.
func TestSendLinesWaitsForThePromptFirst(t *testing.T) {
	t.Parallel()
	c, p := openConsole(t, Options{Board: "emu-0"})
	var out syncbuf.Buffer
	err := SendLines(testCtx(t, 10*time.Second), c, regexp.QuoteMeta(prompt), []string{"noisy", "ls"}, `b\.txt`, 5*time.Second, &out)
	if err != nil {
		t.Fatal(err)
	}
	got := out.String()
	if !strings.Contains(got, "line one\nline two\n") || !strings.Contains(got, "a.txt") || !strings.HasSuffix(got, "b.txt\n") {
		t.Errorf("printed %q", got)
	}
	if lines := p.lines(); len(lines) < 3 || lines[0] != "" || lines[len(lines)-2] != "noisy" || lines[len(lines)-1] != "ls" {
		t.Errorf("the board received %q, want the prompt's empty line(s), then noisy and ls", lines)
	}
}

// A pattern that never comes is the console's timeout, naming what was
// awaited.
func TestSendLinesExpectTimesOut(t *testing.T) {
	t.Parallel()
	c, _ := openConsole(t, Options{Board: "emu-0"})
	err := SendLines(testCtx(t, 10*time.Second), c, regexp.QuoteMeta(prompt), []string{"silent"}, "never", 300*time.Millisecond, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "never") {
		t.Fatalf("err %v, want a timeout naming /never/", err)
	}
}

// Interact sends what is typed and prints what the board says, until the
// input ends; a cancelled context ends it without an error.
func TestInteract(t *testing.T) {
	t.Parallel()
	c, p := openConsole(t, Options{Board: "emu-0"})
	var out syncbuf.Buffer
	in, typed := io.Pipe()
	done := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { done <- Interact(ctx, c, in, &out) }()
	typed.Write([]byte("ls\n"))
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(out.String(), "b.txt"); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no answer printed: %q", out.String())
		}
	}
	typed.Close()
	if err := <-done; err != nil {
		t.Fatalf("end of input: %v", err)
	}
	if got := p.lines(); len(got) != 1 || got[0] != "ls" {
		t.Errorf("the board received %q", got)
	}
	go func() { done <- Interact(ctx, c, strings.NewReader(""), io.Discard) }()
	cancel()
	if err := <-done; err != nil {
		t.Errorf("cancelled: %v", err)
	}
}
