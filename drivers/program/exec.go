package program

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/labrunner/labrunner/drivers"
)

// tailMax is how much of a tool's output an error quotes: enough for the
// tool's own error lines and a little of what led to them.
const tailMax = 4096

// maxLine bounds a line held for recognition; longer lines (progress bars
// without newlines) are recognised in pieces.
const maxLine = 4096

// waitDelay is how long Wait waits for the output pipes to close once the
// tool has exited or been killed: a daemon the tool started (jtagd,
// hw_server) may hold them open.
const waitDelay = 2 * time.Second

// tool is an external program and how to get it.
type tool struct {
	name    string // default name on PATH
	path    string // the lab file's tool:, may be empty
	install string // how to install it
}

// resolve finds the tool. A tool missing from PATH is an infrastructure
// error (the host lacks it); a tool: path that does not lead to a program is
// a setup error (the lab file is wrong).
func (t tool) resolve(board string) (string, error) {
	want := t.name
	if t.path != "" {
		want = t.path
	}
	p, err := exec.LookPath(want)
	if err == nil {
		return p, nil
	}
	if t.path != "" {
		return "", drivers.Setup(board, "find "+t.name,
			"fix tool: in the lab file's programmer entry, or remove it to use "+t.name+" from PATH",
			fmt.Errorf("tool %q from the lab file is not an executable program: %w", t.path, err))
	}
	return "", drivers.Infra(board, "find "+t.name,
		t.install+", or set tool: in the lab file's programmer entry to its full path",
		fmt.Errorf("%s is not installed or not on PATH: %w", t.name, err))
}

// rule recognises one failure a tool reports in its output: a line that
// contains one of the phrases (compared in lower case), or that matches re.
// re runs only on lines containing one of keys (lower case): Go's
// case-insensitive alternations cost microseconds per line, and tools print
// thousands of progress lines.
type rule struct {
	phrases  []string
	re       *regexp.Regexp
	keys     []string
	class    drivers.Class
	reason   string // what it means, e.g. "no JTAG cable found"
	hint     string // what to check
	priority int    // a higher priority wins over an earlier, lower match
}

// match is a recognised failure: the rule and the line that matched.
type match struct {
	rule *rule
	line string
}

// ansi matches terminal escape sequences (colour), which tools print even
// into pipes and which make neither good error text nor good patterns.
var ansi = regexp.MustCompile("\x1b\\[[0-9;?]*[ -/]*[@-~]")

// outputSink receives a tool's stdout and stderr. It copies everything to
// the transcript, keeps the last tailMax bytes for errors and recognises
// failure lines as they pass, without holding the whole output.
type outputSink struct {
	mu      sync.Mutex
	log     io.Writer
	logErr  error
	rules   []rule
	tail    []byte
	line    []byte
	best    *match
	written int64
}

func newOutputSink(log io.Writer, rules []rule) *outputSink {
	return &outputSink{log: log, rules: rules}
}

// Write never fails: a transcript that cannot be written is reported once
// and must not abort the programming.
func (s *outputSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.log != nil && s.logErr == nil {
		if _, err := s.log.Write(p); err != nil {
			s.logErr = err
			slog.Warn("programmer transcript write failed; output is still kept for errors", "err", err)
		}
	}
	s.written += int64(len(p))
	s.tail = append(s.tail, p...)
	if len(s.tail) > 2*tailMax {
		s.tail = append(s.tail[:0], s.tail[len(s.tail)-tailMax:]...)
	}
	for _, c := range p {
		if c == '\n' || c == '\r' {
			s.endLine()
			continue
		}
		s.line = append(s.line, c)
		if len(s.line) >= maxLine {
			s.endLine()
		}
	}
	return len(p), nil
}

// flush recognises the last line when the output did not end with one.
func (s *outputSink) flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.endLine()
}

func (s *outputSink) endLine() {
	if len(s.line) == 0 {
		return
	}
	raw := s.line
	s.line = s.line[:0]
	if bytes.IndexByte(raw, 0x1b) >= 0 {
		raw = ansi.ReplaceAll(raw, nil)
	}
	line := strings.TrimSpace(string(raw))
	if line == "" {
		return
	}
	lower := strings.ToLower(line)
	for i := range s.rules {
		r := &s.rules[i]
		if s.best != nil && r.priority <= s.best.rule.priority {
			continue
		}
		if r.matches(lower, line) {
			s.best = &match{rule: r, line: printable(line)}
		}
	}
}

func (r *rule) matches(lower, line string) bool {
	for _, p := range r.phrases {
		if strings.Contains(lower, p) {
			return true
		}
	}
	if r.re == nil {
		return false
	}
	for _, k := range r.keys {
		if strings.Contains(lower, k) {
			return r.re.MatchString(line)
		}
	}
	return false
}

// Tail returns the last tailMax bytes of output as printable text.
func (s *outputSink) Tail() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.tail
	if len(t) > tailMax {
		t = t[len(t)-tailMax:]
		// Do not start in the middle of a UTF-8 sequence.
		for len(t) > 0 && !utf8.RuneStart(t[0]) {
			t = t[1:]
		}
	}
	return printable(ansi.ReplaceAllString(string(t), ""))
}

// Match returns the recognised failure, if any.
func (s *outputSink) Match() *match {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.best
}

// printable keeps text readable in a terminal, a JSON file or JUnit XML:
// carriage returns become newlines, other control bytes and invalid UTF-8
// become U+FFFD.
func printable(s string) string {
	var b strings.Builder
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		switch {
		case r == '\r':
			b.WriteByte('\n')
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			b.WriteRune('\uFFFD')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// ToolError is what a failed tool run leaves: which tool, how it ended, the
// failure recognised in its output and the end of that output.
type ToolError struct {
	Tool     string   // the tool's name, e.g. "openFPGALoader"
	Args     []string // its arguments (without the program)
	ExitCode int      // -1 when it was killed or never ran to an exit
	TimedOut bool     // killed at the deadline
	Elapsed  time.Duration
	Reason   string // the failure recognised in its output ("" if none)
	Line     string // the output line that said so
	Tail     string // the last ~4 KiB of its output
	cause    error  // the deadline or cancellation, for errors.Is
}

func (e *ToolError) Error() string {
	var b strings.Builder
	switch {
	case e.TimedOut:
		fmt.Fprintf(&b, "%s did not finish in %s and was killed", e.Tool, e.Elapsed.Round(time.Millisecond))
	case e.ExitCode >= 0:
		fmt.Fprintf(&b, "%s exited with status %d", e.Tool, e.ExitCode)
	default:
		fmt.Fprintf(&b, "%s failed", e.Tool)
	}
	if e.Reason != "" {
		fmt.Fprintf(&b, ": %s (it said %q)", e.Reason, e.Line)
	}
	if e.cause != nil && !e.TimedOut {
		fmt.Fprintf(&b, ": %v", e.cause)
	}
	if e.Tail != "" {
		fmt.Fprintf(&b, "\n--- last output of %s ---\n%s", e.Tool, strings.TrimRight(e.Tail, "\n"))
	} else {
		fmt.Fprintf(&b, " (no output)")
	}
	return b.String()
}

// Unwrap exposes the deadline (drivers.ErrTimeout and
// context.DeadlineExceeded) or the cancellation that ended the run.
func (e *ToolError) Unwrap() []error {
	if e.cause == nil {
		return nil
	}
	if e.TimedOut {
		return []error{drivers.ErrTimeout, e.cause}
	}
	return []error{e.cause}
}

// run is one run of a tool.
type run struct {
	board string
	name  string // display name, e.g. "openFPGALoader"
	path  string // resolved program
	args  []string
	log   io.Writer
	rules []rule
	op    string // for errors, e.g. "program with foo.bit"
	hint  string // for failures nothing in the output explains
}

// do runs the tool to completion or to the context's deadline and returns
// nil or a classified error (*drivers.Error around a *ToolError).
func (r run) do(ctx context.Context) error {
	sink := newOutputSink(r.log, r.rules)
	cmd := exec.CommandContext(ctx, r.path, r.args...)
	cmd.Stdout = sink
	cmd.Stderr = sink
	cmd.WaitDelay = waitDelay
	ownProcessGroup(cmd)

	logf(r.log, "$ %s", displayArgv(append([]string{r.path}, r.args...)))
	start := time.Now()
	err := cmd.Run()
	sink.flush()
	elapsed := time.Since(start)

	if err != nil && errors.Is(err, exec.ErrWaitDelay) && cmd.ProcessState != nil && cmd.ProcessState.Success() {
		// The tool succeeded; a daemon it started kept our pipes open.
		logf(r.log, "# %s exited 0 after %s (a process it started kept its output open)", r.name, elapsed.Round(time.Millisecond))
		return nil
	}
	if err == nil {
		logf(r.log, "# %s exited 0 after %s", r.name, elapsed.Round(time.Millisecond))
		return nil
	}

	te := &ToolError{Tool: r.name, Args: append([]string(nil), r.args...), ExitCode: -1,
		Elapsed: elapsed, Tail: sink.Tail()}
	if m := sink.Match(); m != nil {
		te.Reason, te.Line = m.rule.reason, m.line
	}
	var exitErr *exec.ExitError
	switch {
	case ctx.Err() != nil:
		te.cause = ctx.Err()
		te.TimedOut = errors.Is(ctx.Err(), context.DeadlineExceeded)
	case errors.As(err, &exitErr):
		te.ExitCode = exitErr.ExitCode()
	default:
		// It never ran (permission, exec format, ...).
		te.cause = err
		logf(r.log, "# %s could not be started: %v", r.name, err)
		return drivers.Infra(r.board, r.op, "check that "+r.path+" is an executable program for this machine", te)
	}
	if te.TimedOut {
		logf(r.log, "# %s killed at the deadline after %s", r.name, elapsed.Round(time.Millisecond))
		hint := "the tool hung or the deadline is too short: check the cable and the board's power, or raise deadlines.program in the lab file"
		if te.Reason != "" {
			hint = te.Reason + ": " + sink.Match().rule.hint
		}
		return drivers.Infra(r.board, r.op, hint, te)
	}
	if te.cause != nil {
		logf(r.log, "# %s stopped: %v", r.name, te.cause)
		return drivers.Infra(r.board, r.op, "the run was cancelled", te)
	}
	logf(r.log, "# %s exited with status %d after %s", r.name, te.ExitCode, elapsed.Round(time.Millisecond))
	if m := sink.Match(); m != nil {
		return &drivers.Error{Class: m.rule.class, Board: r.board, Op: r.op, Hint: m.rule.hint, Err: te}
	}
	return drivers.Infra(r.board, r.op, r.hint, te)
}

// displayArgv renders an argument vector for the transcript so that a
// person can paste it into a shell; the tool itself never sees a shell.
func displayArgv(argv []string) string {
	parts := make([]string, len(argv))
	for i, a := range argv {
		if a != "" && strings.IndexFunc(a, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=@,+%", r))
		}) < 0 {
			parts[i] = a
			continue
		}
		parts[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(parts, " ")
}
