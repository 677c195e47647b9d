package progress

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/labrunner/labrunner/internal/syncbuf"
)

var plans = []Plan{{Name: "mesh", Boards: []string{"exa-00", "exa-10"}, Steps: 5}}

func counts() map[string]Counts {
	return map[string]Counts{"exa-00": {Verdicts: 7, NotPass: 2}, "exa-10": {Verdicts: 3}}
}

func TestPlainLines(t *testing.T) {
	var buf bytes.Buffer
	p := NewPlain(&buf, plans, counts)
	p.Step("mesh", "program")
	p.Step("mesh", "bandwidth")
	p.Close()
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines, want one per step:\n%s", len(lines), buf.String())
	}
	for _, want := range []string{"mesh [exa-00 exa-10] step 2/5: bandwidth", "10 verdicts so far, 2 not passed"} {
		if !strings.Contains(lines[1], want) {
			t.Errorf("line %q lacks %q", lines[1], want)
		}
	}
	if strings.Contains(buf.String(), "\x1b[") {
		t.Error("plain output holds terminal escapes")
	}
}

func TestCIGetsPlainLinesEvenOnATerminal(t *testing.T) {
	ptm, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ptm.Close()
	defer tty.Close()
	t.Setenv("CI", "")
	if !Fancy(tty) {
		t.Error("a terminal without CI should get bars")
	}
	t.Setenv("CI", "true")
	if Fancy(tty) {
		t.Error("CI=true should get plain lines")
	}
	f, _ := os.CreateTemp(t.TempDir(), "out")
	defer f.Close()
	t.Setenv("CI", "")
	if Fancy(f) {
		t.Error("a file should get plain lines")
	}
	if _, ok := New(f, plans, counts).(*Plain); !ok {
		t.Error("New on a file did not return plain lines")
	}
}

func TestBarsPerBoardAndLogsAbove(t *testing.T) {
	// A real terminal, 120 columns wide: the bars size themselves to it.
	ptm, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ptm.Close()
	if err := pty.Setsize(tty, &pty.Winsize{Cols: 120, Rows: 40}); err != nil {
		t.Fatal(err)
	}
	var out syncbuf.Buffer
	read := make(chan struct{})
	go func() { io.Copy(&out, ptm); close(read) }()
	b := NewBars(tty, plans, counts)
	b.Step("mesh", "check bitstreams")
	b.Step("mesh", "program")
	b.Step("mesh", "latency")
	fmt.Fprintln(b.Writer(), "level=INFO msg=hello")
	b.Close()
	fmt.Fprintln(b.Writer(), "after close") // goes straight to the output
	tty.Close()
	select {
	case <-read:
	case <-time.After(5 * time.Second):
	}
	s := out.String()
	for _, want := range []string{"exa-00", "exa-10", "mesh", "5/5", "latency · 7 verdicts, 2 bad", "latency · 3 verdicts", "hello", "after close"} {
		if !strings.Contains(s, want) {
			t.Errorf("bar output lacks %q:\n%s", want, s)
		}
	}
}

// A plan that finished shows complete at once, while other plans go on
// (its bars used to stay at n-1/n until the whole nightly ended).
func TestFinishedPlanCompletesItsBars(t *testing.T) {
	b := NewBars(io.Discard, plans, counts)
	defer b.Close()
	b.Step("mesh", "check bitstreams")
	b.Step("mesh", "program")
	for _, bar := range b.bars["mesh"] {
		if bar.Current() == b.size["mesh"] {
			t.Fatal("a bar is complete before its plan finished")
		}
	}
	b.Finish("mesh")
	for _, bar := range b.bars["mesh"] {
		if got := bar.Current(); got != b.size["mesh"] {
			t.Errorf("bar at %d/%d after its plan finished", got, b.size["mesh"])
		}
	}
	var out bytes.Buffer
	p := NewPlain(&out, plans, counts)
	p.Finish("mesh")
	if !strings.Contains(out.String(), "mesh [exa-00 exa-10] done: 10 verdicts, 2 not passed") {
		t.Errorf("plain finish line: %q", out.String())
	}
}
