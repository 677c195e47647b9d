package console

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/labrunner/labrunner/drivers"
	"github.com/labrunner/labrunner/internal/syncbuf"
)

const prompt = "root@emu:~# "

// Kernel messages the peer injects, as a real console shows them.
const (
	kmsg1 = "[   12.345678] usb 1-1: new high-speed USB device number 2 using xhci-hcd\r\n"
	kmsg2 = "[   13.000001] random: crng init done\r\n"
)

// peer plays a board's shell on the master side of a pty: it echoes every
// line it receives, answers a few commands, prints a prompt, and sprinkles
// kernel messages into the middle of lines and prompts.
type peer struct {
	t      testing.TB
	master *os.File
	mu     sync.Mutex
	got    []string // lines received, without their ending
	wg     sync.WaitGroup
}

func startPeer(t testing.TB) (*peer, string) {
	t.Helper()
	master, tty, err := pty.Open()
	if err != nil {
		t.Fatalf("open pty: %v", err)
	}
	name := tty.Name()
	p := &peer{t: t, master: master}
	// Keep the slave open until the end so that the master never sees a
	// hang-up between the console's open and close.
	t.Cleanup(func() {
		master.Close()
		tty.Close()
		p.wg.Wait()
	})
	p.wg.Add(1)
	go p.run()
	return p, name
}

func (p *peer) send(s string) { p.master.Write([]byte(s)) }

func (p *peer) lines() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.got...)
}

func (p *peer) run() {
	defer p.wg.Done()
	r := bufio.NewReader(p.master)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		line = strings.TrimRight(line, "\r\n")
		p.mu.Lock()
		p.got = append(p.got, line)
		p.mu.Unlock()
		// Echo as a tty in canonical mode would, with bash's bracketed
		// paste toggles around the command.
		p.send(line + "\r\n\x1b[?2004l\r")
		switch line {
		case "ls":
			p.send("a.txt\r\nb.txt\r\n\x1b[?2004h" + prompt)
		case "noisy":
			p.send("line one\r\nli" + kmsg1 + "ne two\r\n")
			p.send("roo" + kmsg2 + "t@emu:~# ")
		case "dmesg-only":
			p.send(kmsg1 + prompt)
		case "slow":
			time.Sleep(50 * time.Millisecond)
			p.send("slow ")
			time.Sleep(50 * time.Millisecond)
			p.send("answer\r\n" + prompt)
		case "hangup":
			p.master.Close()
			return
		case "silent":
		default:
			p.send(prompt)
		}
	}
}

func testCtx(t *testing.T, d time.Duration) context.Context {
	c, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return c
}

func openConsole(t *testing.T, opts Options) (*Console, *peer) {
	t.Helper()
	p, name := startPeer(t)
	c, err := Open(name, 115200, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, p
}

func TestCommandStripsEchoPromptAndNoise(t *testing.T) {
	c, p := openConsole(t, Options{Board: "emu-0"})
	// A prompt left over from before must not end the command at once.
	stale := prompt + "old output\r\n" + prompt
	p.send(stale)
	for deadline := time.Now().Add(5 * time.Second); c.mark() < len(stale)-strings.Count(stale, "\r"); {
		if time.Now().After(deadline) {
			t.Fatal("stale output never arrived")
		}
		time.Sleep(time.Millisecond)
	}
	out, err := c.Command(testCtx(t, 5*time.Second), "ls", regexp.QuoteMeta(prompt))
	if err != nil {
		t.Fatal(err)
	}
	if out != "a.txt\nb.txt" {
		t.Errorf("ls output = %q, want %q", out, "a.txt\nb.txt")
	}
	// Kernel messages in the middle of an output line and of the prompt.
	out, err = c.Command(testCtx(t, 5*time.Second), "noisy", regexp.QuoteMeta(prompt))
	if err != nil {
		t.Fatal(err)
	}
	if out != "line one\nline two" {
		t.Errorf("noisy output = %q, want %q", out, "line one\nline two")
	}
	out, err = c.Command(testCtx(t, 5*time.Second), "slow", `(?m)^root@emu:~# $`)
	if err != nil {
		t.Fatal(err)
	}
	if out != "slow answer" {
		t.Errorf("slow output = %q", out)
	}
	if got := p.lines(); len(got) != 3 || got[0] != "ls" || got[2] != "slow" {
		t.Errorf("peer received %q", got)
	}
}

func TestExpectSeesKernelMessagesToo(t *testing.T) {
	c, _ := openConsole(t, Options{})
	if err := c.Send(testCtx(t, 5*time.Second), "dmesg-only"); err != nil {
		t.Fatal(err)
	}
	// A pattern that looks for a kernel message matches the raw view.
	text, err := c.Expect(testCtx(t, 5*time.Second), `\[\s*\d+\.\d+\] usb 1-1: (.*) using`)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(text, "dmesg-only\n") || strings.Contains(text, "\r") {
		t.Errorf("Expect returned %q: want the echo first and no \\r", text)
	}
	// The prompt is still there for the next Expect: a match consumes only
	// up to its end.
	if _, err := c.Expect(testCtx(t, 5*time.Second), regexp.QuoteMeta(prompt)); err != nil {
		t.Fatal(err)
	}
	// ... and only once.
	_, err = c.Expect(testCtx(t, 300*time.Millisecond), regexp.QuoteMeta(prompt))
	if !errors.Is(err, drivers.ErrTimeout) {
		t.Errorf("second Expect of a consumed prompt: %v", err)
	}
}

func TestExpectTimeout(t *testing.T) {
	c, p := openConsole(t, Options{Board: "zcu-7"})
	p.send("U-Boot 2023.01\r\n\x1b[31mred\x1b[0m \x07bell\r\nHit any key to stop autoboot: ")
	ctx := testCtx(t, 300*time.Millisecond)
	start := time.Now()
	_, err := c.Expect(ctx, `login: `)
	if err == nil {
		t.Fatal("Expect of text never sent succeeded")
	}
	if time.Since(start) > 3*time.Second {
		t.Errorf("Expect took %v with a 300ms deadline", time.Since(start))
	}
	msg := err.Error()
	for _, want := range []string{"zcu-7", "expect /login: /", "timed out", `autoboot: "`, `\x1b[31mred`, `\abell`, "check the cable"} {
		if !strings.Contains(msg, want) {
			t.Errorf("timeout error %q lacks %q", msg, want)
		}
	}
	// Terminal- and XML-safe: no raw control bytes.
	for _, r := range msg {
		if r < 0x20 || r == 0x7f {
			t.Errorf("timeout error contains control character %q", r)
		}
	}
	if drivers.ClassOf(err) != drivers.ClassInfra || !errors.Is(err, drivers.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("class %v, ErrTimeout %v", drivers.ClassOf(err), errors.Is(err, drivers.ErrTimeout))
	}
	// The tail is bounded.
	p.send(strings.Repeat("x", 5000))
	_, err = c.Expect(testCtx(t, 300*time.Millisecond), `login: `)
	if err == nil || len(err.Error()) > 600 {
		t.Errorf("timeout error is %d bytes: %v", len(err.Error()), err)
	}
	if _, err := c.Expect(testCtx(t, time.Second), `(`); drivers.ClassOf(err) != drivers.ClassSetup {
		t.Errorf("bad pattern: %v (class %v)", err, drivers.ClassOf(err))
	}
}

func TestTranscript(t *testing.T) {
	var tr syncbuf.Buffer
	c, p := openConsole(t, Options{Transcript: &tr})
	p.send("boot mes")
	// Wait until the partial line has been read, so that the sent line
	// has to break it.
	if _, err := c.Expect(testCtx(t, 5*time.Second), "mes"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Command(testCtx(t, 5*time.Second), "ls", regexp.QuoteMeta(prompt)); err != nil {
		t.Fatal(err)
	}
	got := tr.String()
	ts := `\d\d:\d\d:\d\d\.\d\d\d`
	want := regexp.MustCompile(`^` + ts + ` < boot mes\n` +
		ts + ` > ls\n` +
		ts + ` < ls\r\n` +
		ts + ` < \x1b\[\?2004l\ra\.txt\r\n` +
		ts + ` < b\.txt\r\n` +
		ts + ` < \x1b\[\?2004h` + regexp.QuoteMeta(prompt) + `$`)
	if !want.MatchString(got) {
		t.Errorf("transcript:\n%s\ndoes not match %s", got, want)
	}
}

func TestLineEndingAndPacing(t *testing.T) {
	p, name := startPeer(t)
	c, err := Open(name, 921600, Options{LineEnding: "\r\n", Pacing: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Send(testCtx(t, 5*time.Second), "hello"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Expect(testCtx(t, 5*time.Second), regexp.QuoteMeta(prompt)); err != nil {
		t.Fatal(err)
	}
	if got := p.lines(); len(got) != 1 || got[0] != "hello" {
		t.Errorf("peer received %q", got)
	}
	// Pacing longer than the deadline: Send gives up at the deadline.
	slow := New(nopRW{}, Options{Pacing: 50 * time.Millisecond})
	defer slow.Close()
	err = slow.Send(testCtx(t, 120*time.Millisecond), strings.Repeat("z", 100))
	if !errors.Is(err, drivers.ErrTimeout) || !strings.Contains(err.Error(), "bytes were sent") {
		t.Errorf("paced send past its deadline: %v", err)
	}
}

func TestHangup(t *testing.T) {
	c, _ := openConsole(t, Options{Board: "b"})
	if err := c.Send(testCtx(t, 5*time.Second), "hangup"); err != nil {
		t.Fatal(err)
	}
	_, err := c.Expect(testCtx(t, 5*time.Second), "never")
	if err == nil || errors.Is(err, drivers.ErrTimeout) || !strings.Contains(err.Error(), "stopped reading") {
		t.Errorf("Expect after the peer hung up: %v", err)
	}
	if drivers.ClassOf(err) != drivers.ClassInfra {
		t.Errorf("class %v", drivers.ClassOf(err))
	}
}

func TestCloseDuringExpect(t *testing.T) {
	c, _ := openConsole(t, Options{})
	errc := make(chan error, 1)
	go func() {
		_, err := c.Expect(testCtx(t, time.Minute), "never")
		errc <- err
	}()
	time.Sleep(50 * time.Millisecond)
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	select {
	case err := <-errc:
		if err == nil || !strings.Contains(err.Error(), "closed") {
			t.Errorf("pending Expect after Close: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("pending Expect did not return after Close")
	}
	if err := c.Send(testCtx(t, time.Second), "x"); err == nil {
		t.Error("Send after Close succeeded")
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// stuckRW never returns from Read or Close: Close must give up on it.
type stuckRW struct{ block chan struct{} }

func (s stuckRW) Read([]byte) (int, error)    { <-s.block; return 0, io.EOF }
func (s stuckRW) Write(p []byte) (int, error) { <-s.block; return len(p), nil }
func (s stuckRW) Close() error                { <-s.block; return nil }

func TestCloseNeverHangs(t *testing.T) {
	s := stuckRW{block: make(chan struct{})}
	defer close(s.block)
	c := New(s, Options{Board: "b"})
	// A write the port never takes fails at the deadline.
	if err := c.Send(testCtx(t, 100*time.Millisecond), "x"); !errors.Is(err, drivers.ErrTimeout) {
		t.Errorf("Send to a stuck port: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Close() }()
	select {
	case err := <-done:
		if !errors.Is(err, drivers.ErrTimeout) {
			t.Errorf("Close of a stuck port: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close hung on a stuck port")
	}
}

// nopRW takes every write and never has anything to read until closed.
type nopRW struct{}

func (nopRW) Read([]byte) (int, error)    { time.Sleep(10 * time.Millisecond); return 0, nil }
func (nopRW) Write(p []byte) (int, error) { return len(p), nil }
func (nopRW) Close() error                { return nil }

func TestNewOverPipeEOF(t *testing.T) {
	r, w := io.Pipe()
	c := New(struct {
		io.Reader
		io.Writer
		io.Closer
	}{r, io.Discard, r}, Options{})
	defer c.Close()
	w.Write([]byte("U-Boot> "))
	if _, err := c.Expect(testCtx(t, 5*time.Second), `U-Boot> $`); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if _, err := c.Expect(testCtx(t, 5*time.Second), "x"); err == nil || !errors.Is(err, io.EOF) {
		t.Errorf("Expect after EOF: %v", err)
	}
}

func TestOpenErrors(t *testing.T) {
	_, err := Open("/dev/does-not-exist-ttyUSB9", 115200, Options{Board: "b"})
	if err == nil || drivers.ClassOf(err) != drivers.ClassInfra || !strings.Contains(err.Error(), "by-id") {
		t.Errorf("missing port: %v", err)
	}
	_, name := startPeer(t)
	_, err = Open(name, 12345, Options{Board: "b"})
	if err == nil || drivers.ClassOf(err) != drivers.ClassSetup {
		t.Errorf("bad baud: %v", err)
	}
}

func TestStripEcho(t *testing.T) {
	cases := []struct{ out, cmd, want string }{
		{"ls\na\nb\n", "ls", "a\nb\n"},
		{"old output\n# ls\na\n", "ls", "a\n"},
		{"a\nb\n", "ls", "a\nb\n"}, // no echo
		{"cat x\n", "cat x", ""},
		{"\nfoo\n", "", "foo\n"},
	}
	for _, c := range cases {
		if got := stripEcho(c.out, c.cmd); got != c.want {
			t.Errorf("stripEcho(%q, %q) = %q, want %q", c.out, c.cmd, got, c.want)
		}
	}
}

func BenchmarkCommandRoundTrip(b *testing.B) {
	// One command and its prompt over a real pty with the echoing peer:
	// the console's share of a shell round trip.
	p, name := startPeer(b)
	c, err := Open(name, 115200, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	_ = p
	ctx := context.Background()
	pr := regexp.QuoteMeta(prompt)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		out, err := c.Command(ctx, "ls", pr)
		if err != nil || out != "a.txt\nb.txt" {
			b.Fatalf("%q %v", out, err)
		}
	}
}

// bootingShell is a board that boots for a while (printing its boot log and
// losing what is typed), then runs a shell that answers Enter with a prompt.
type bootingShell struct {
	r    *io.PipeReader // what the console sends
	w    *io.PipeWriter // what the console receives
	boot time.Duration
	mu   sync.Mutex
	lost int // lines typed during the boot
}

func (b *bootingShell) run(silent bool) {
	up := time.Now().Add(b.boot)
	b.w.Write([]byte("U-Boot 2023.01\r\nStarting kernel ...\r\n"))
	sc := bufio.NewScanner(b.r)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for sc.Scan() {
			if time.Now().Before(up) || silent {
				b.mu.Lock()
				b.lost++
				b.mu.Unlock()
				continue
			}
			b.w.Write([]byte(sc.Text() + "\r\n" + prompt))
		}
	}()
	<-done
}

func TestWaitPromptWaitsForTheBoot(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	sh := &bootingShell{r: inR, w: outW, boot: 400 * time.Millisecond}
	go sh.run(false)
	c := New(struct {
		io.Reader
		io.Writer
		io.Closer
	}{outR, inW, multiCloser{inW, outR, inR, outW}}, Options{Board: "b1"})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.WaitPrompt(ctx, `[#$>] ?$`, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	sh.mu.Lock()
	lost := sh.lost
	sh.mu.Unlock()
	if lost == 0 {
		t.Errorf("no Enter was lost: the test did not exercise a boot")
	}
	out, err := c.Command(ctx, "id", `[#$>] ?$`)
	if err != nil || strings.TrimSpace(out) != "" {
		t.Errorf("command after the prompt: %q %v", out, err)
	}
}

func TestWaitPromptGivesUpAtTheDeadline(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	sh := &bootingShell{r: inR, w: outW}
	go sh.run(true) // never gives a prompt
	c := New(struct {
		io.Reader
		io.Writer
		io.Closer
	}{outR, inW, multiCloser{inW, outR, inR, outW}}, Options{Board: "b2"})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	_, err := c.WaitPrompt(ctx, `[#$>] ?$`, 100*time.Millisecond)
	if drivers.ClassOf(err) != drivers.ClassInfra || !errors.Is(err, drivers.ErrTimeout) || !strings.Contains(err.Error(), "Starting kernel") {
		t.Errorf("no prompt: %v", err)
	}
	// A pattern that does not compile is the caller's mistake, at once.
	if _, err := c.WaitPrompt(context.Background(), `[`, 0); drivers.ClassOf(err) != drivers.ClassSetup {
		t.Errorf("bad pattern: %v", err)
	}
}

type multiCloser []io.Closer

func (m multiCloser) Close() error {
	for _, c := range m {
		c.Close()
	}
	return nil
}
