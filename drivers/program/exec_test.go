package program

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/labrunner/labrunner/drivers"
	"github.com/labrunner/labrunner/internal/syncbuf"
)

func TestRunSuccessWritesTranscript(t *testing.T) {
	dir := fakeTools(t)
	rec := filepath.Join(t.TempDir(), "argv")
	writeTool(t, dir, "tool", recordArgv(rec)+"echo to-stdout\necho to-stderr >&2\nexit 0\n")
	var log syncbuf.Buffer
	r := run{board: "b1", name: "tool", path: filepath.Join(dir, "tool"),
		args: []string{"-x", "a b", "it's"}, log: &log, op: "op"}
	if err := r.do(context.Background()); err != nil {
		t.Fatal(err)
	}
	equalArgv(t, readArgv(t, rec), []string{"-x", "a b", "it's"})
	wantContains(t, log.String(), "to-stdout\n", "to-stderr\n", `'a b' 'it'\''s'`, "# tool exited 0")
}

func TestRunFailureKeepsTailAndRecognises(t *testing.T) {
	dir := fakeTools(t)
	// 10 KiB of progress, then the tool's error in red, then exit 1.
	writeTool(t, dir, "tool", `i=0
while [ $i -lt 200 ]; do echo "progress line $i ....................................."; i=$((i+1)); done
printf '\033[31mError: the cable is gone\033[0m\n' >&2
echo "last words"
exit 3
`)
	rules := []rule{{phrases: []string{"cable is gone"}, class: drivers.ClassSetup, priority: 1,
		reason: "cable gone", hint: "plug it"}}
	var log syncbuf.Buffer
	err := run{board: "b1", name: "tool", path: filepath.Join(dir, "tool"), log: &log, rules: rules,
		op: "load x"}.do(context.Background())
	de := wantClass(t, err, drivers.ClassSetup)
	if de.Board != "b1" || de.Op != "load x" || de.Hint != "plug it" {
		t.Fatalf("error fields: %+v", de)
	}
	var te *ToolError
	if !errors.As(err, &te) {
		t.Fatalf("no *ToolError in %v", err)
	}
	if te.ExitCode != 3 || te.TimedOut || te.Reason != "cable gone" || te.Line != "Error: the cable is gone" {
		t.Fatalf("tool error: exit %d timedOut %v reason %q line %q", te.ExitCode, te.TimedOut, te.Reason, te.Line)
	}
	if len(te.Tail) > tailMax || len(te.Tail) < tailMax-200 {
		t.Fatalf("tail is %d bytes, want about %d", len(te.Tail), tailMax)
	}
	if !strings.HasSuffix(te.Tail, "Error: the cable is gone\nlast words\n") || strings.Contains(te.Tail, "\x1b") {
		t.Fatalf("tail does not end with the tool's last lines (escapes stripped): %q", te.Tail[len(te.Tail)-80:])
	}
	if strings.Contains(te.Tail, "progress line 0 ") {
		t.Fatal("tail holds the beginning of the output")
	}
	// The transcript has everything, raw.
	wantContains(t, log.String(), "progress line 0 ", "\x1b[31mError", "exited with status 3")
	wantContains(t, err.Error(), "exited with status 3", "cable gone", "--- last output of tool ---")
}

func TestRunUnrecognisedFailureIsInfra(t *testing.T) {
	dir := fakeTools(t)
	writeTool(t, dir, "tool", "echo something odd\nexit 1\n")
	err := run{board: "b", name: "tool", path: filepath.Join(dir, "tool"), op: "op", hint: "generic hint"}.do(context.Background())
	de := wantClass(t, err, drivers.ClassInfra)
	if de.Hint != "generic hint" {
		t.Fatalf("hint %q", de.Hint)
	}
	wantContains(t, err.Error(), "something odd")
}

// processGone reports whether pid has exited (a zombie counts as exited).
func processGone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// Field 3, after the parenthesised command name, is the state.
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] == 'Z' || s[i+2] == 'X'
	}
	return false
}

func TestRunTimeoutKillsProcessGroup(t *testing.T) {
	dir := fakeTools(t)
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	// The tool starts a helper in the background and hangs: both must die.
	writeTool(t, dir, "tool", "sleep 30 &\necho $! > '"+pidFile+".tmp'\nmv '"+pidFile+".tmp' '"+pidFile+"'\necho started\nsleep 30\n")
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := run{board: "b", name: "tool", path: filepath.Join(dir, "tool"), op: "op"}.do(ctx)
	if elapsed := time.Since(start); elapsed > 10*time.Second {
		t.Fatalf("run took %s: the tool was not killed at the deadline", elapsed)
	}
	wantClass(t, err, drivers.ClassInfra)
	if !errors.Is(err, drivers.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a timeout must wrap drivers.ErrTimeout and context.DeadlineExceeded: %v", err)
	}
	var te *ToolError
	if !errors.As(err, &te) || !te.TimedOut || te.ExitCode != -1 {
		t.Fatalf("tool error %+v", te)
	}
	wantContains(t, err.Error(), "was killed", "started")
	b, rerr := os.ReadFile(pidFile)
	if rerr != nil {
		t.Fatalf("the fake tool did not start its helper: %v", rerr)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	deadline := time.Now().Add(5 * time.Second)
	for !processGone(pid) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("the tool's helper process %d survived the timeout: the process group was not killed", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestResolveMissingTool(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := tool{name: "openFPGALoader", install: "install openFPGALoader (apt install openfpgaloader)"}.resolve("zu1")
	de := wantClass(t, err, drivers.ClassInfra)
	wantContains(t, err.Error(), "zu1", "openFPGALoader is not installed or not on PATH")
	wantContains(t, de.Hint, "apt install openfpgaloader", "tool:")

	_, err = tool{name: "xsdb", path: "/nonexistent/xsdb"}.resolve("zu1")
	de = wantClass(t, err, drivers.ClassSetup)
	wantContains(t, err.Error(), "/nonexistent/xsdb")
	wantContains(t, de.Hint, "tool:")
}

func TestOutputSinkLongLinesAndCR(t *testing.T) {
	rules := []rule{
		{re: regexp.MustCompile(`^low`), keys: []string{"low"}, priority: 1, reason: "low"},
		{phrases: []string{"high"}, priority: 2, reason: "high"},
	}
	s := newOutputSink(nil, rules)
	// Progress bars separate with \r; a later higher-priority line wins
	// over an earlier lower one, and not the other way round.
	fmt.Fprint(s, "50%\r100%\rlow one\r\nhigh two\nlow three\n")
	s.flush()
	if m := s.Match(); m == nil || m.rule.reason != "high" || m.line != "high two" {
		t.Fatalf("match %+v", m)
	}
	long := strings.Repeat("x", 3*maxLine)
	s = newOutputSink(nil, rules)
	fmt.Fprint(s, long+"\nlow end")
	s.flush()
	if m := s.Match(); m == nil || m.line != "low end" {
		t.Fatalf("unterminated last line not recognised: %+v", m)
	}
}

// FuzzOutputSink: however the output is cut into writes, the tail is the
// last tailMax bytes (as printable text) and the recognised failure is the
// same.
func FuzzOutputSink(f *testing.F) {
	f.Add([]byte("unable to open ftdi device: -3 (device not found)\nJTAG init failed with: \n"), uint8(3))
	f.Add([]byte("\x1b[31mError: no device found\x1b[0m\r\nUnknown device with IDCODE: 0x12345678"), uint8(7))
	f.Add(bytes.Repeat([]byte("progress 42%\r"), 700), uint8(200))
	f.Add([]byte("Error (209015): Can't configure device. Expected JTAG ID code 0x029070DD for device 1, but found JTAG ID code 0x02B050DD."), uint8(1))
	rules := append(append(append([]rule{}, openFPGALoaderRules...), quartusRules...), xsdbRules...)
	f.Fuzz(func(t *testing.T, out []byte, step uint8) {
		whole := newOutputSink(nil, rules)
		whole.Write(out)
		whole.flush()
		var log bytes.Buffer
		cut := newOutputSink(&log, rules)
		n := int(step) + 1
		for i := 0; i < len(out); i += n {
			cut.Write(out[i:min(i+n, len(out))])
		}
		cut.flush()
		if !bytes.Equal(log.Bytes(), out) {
			t.Fatal("the transcript is not the output")
		}
		if whole.Tail() != cut.Tail() {
			t.Fatalf("tail depends on how the output was written")
		}
		last := out[max(0, len(out)-tailMax):]
		want := printable(ansi.ReplaceAllString(strings.ToValidUTF8(string(last), "\uFFFD"), ""))
		if got := cut.Tail(); len(got) > 4*tailMax || !strings.HasSuffix(want, got[min(len(got), 4):]) {
			t.Fatalf("tail %q is not the end of the output %q", got, want)
		}
		mw, mc := whole.Match(), cut.Match()
		if (mw == nil) != (mc == nil) || mw != nil && (mw.rule != mc.rule || mw.line != mc.line) {
			t.Fatalf("recognised failure depends on how the output was written: %+v vs %+v", mw, mc)
		}
	})
}

// BenchmarkOutputSink measures how fast a tool's output is absorbed
// (transcript copy, tail, recognition): vendor tools print megabytes of
// progress.
func BenchmarkOutputSink(b *testing.B) {
	chunk := bytes.Repeat([]byte("Load SRAM: [=====================>        ] 71.42%\r"), 80)
	chunk = append(chunk, "info: programming device 1\n"...)
	rules := append(append([]rule{}, openFPGALoaderRules...), quartusRules...)
	b.SetBytes(int64(len(chunk)))
	s := newOutputSink(&bytes.Buffer{}, rules)
	for b.Loop() {
		s.log.(*bytes.Buffer).Reset()
		s.Write(chunk)
	}
}
