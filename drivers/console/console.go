// Package console is a board's text console: a UART (or an emulated
// board's pseudo-terminal) with a shell or boot loader on the other end. It
// sends lines, waits for regular expressions with deadlines, runs commands
// and keeps a timestamped transcript of both directions.
//
// A background goroutine reads the line continuously, so nothing the board
// prints is lost between Expects, and waits are done above it with the
// caller's context: tarm/serial only offers read timeouts in tenths of a
// second that end in (0, io.EOF) (docs/architecture.md, known behaviour), so the port is
// opened with a 100 ms timeout and the reader simply reads again.
package console

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tarm/serial"

	"github.com/labrunner/labrunner/drivers"
)

// Options tune a console. The zero value works: no transcript, no pacing,
// lines ended with "\n".
type Options struct {
	// Board names the board in errors and in nothing else.
	Board string
	// Transcript, when set, receives every byte received and every line
	// sent, each line prefixed with the time and a direction marker:
	// "12:00:01.123 < text" for what the board printed, "12:00:01.456 >
	// command" for what was sent. Writes to it are serialised.
	Transcript io.Writer
	// Pacing is a pause after each byte sent, for boards whose UART or
	// line discipline drops bytes typed at full speed.
	Pacing time.Duration
	// LineEnding is appended to every line sent; "\n" when empty. Some boot
	// loaders want "\r".
	LineEnding string
}

// Console is an open console. Its methods may be called from several
// goroutines, though interleaving Expects from two of them makes little sense.
type Console struct {
	rw    io.ReadWriteCloser
	opts  Options
	board string
	// eofIsTimeout: the underlying reader reports "nothing arrived within
	// the read timeout" as (0, io.EOF), as tarm/serial does.
	eofIsTimeout bool

	mu      sync.Mutex
	scr     screen
	last    []byte        // the last bytes received, for error messages
	notify  chan struct{} // closed and replaced when bytes arrive or reading stops
	readErr error         // why the reader stopped, when it did
	closed  bool

	trMu    sync.Mutex
	rxAtBOL bool // the transcript is at the start of a line of received text

	writes     chan writeReq
	done       chan struct{} // closed by Close
	readerDone chan struct{}
	closeOnce  sync.Once
	closeErr   error
}

var _ drivers.Console = (*Console)(nil)

// errHangup: the port reports end of file without waiting for its read
// timeout, which a tty does once the other end hung up.
var errHangup = errors.New("the line hung up (reads end at once instead of waiting)")

type writeReq struct {
	p   []byte
	res chan error
}

const (
	// readTimeout is tarm/serial's read timeout: the longest a Close waits
	// for a read in flight.
	readTimeout = 100 * time.Millisecond
	// keepLast is how many received bytes are kept for error messages.
	keepLast = 200
	// maxScreen bounds what is kept between matches: when nobody expects
	// anything for a long time, the oldest half is dropped.
	maxScreen = 1 << 20
	// bigScreen and scanGap bound the cost of waiting across a long boot
	// log: once more than bigScreen bytes are waiting, a failed search is
	// retried at most every scanGap instead of on every byte.
	bigScreen = 16 << 10
	scanGap   = 20 * time.Millisecond
	// closeWait bounds how long Close waits for the port to close and for
	// the reader to stop; a reader stuck in a driver is abandoned.
	closeWait = time.Second
)

// Open opens a serial port (a USB-UART, or an emulated board's pty) with
// tarm/serial at baud, 8N1.
func Open(path string, baud int, opts Options) (*Console, error) {
	p, err := serial.OpenPort(&serial.Config{Name: path, Baud: baud, ReadTimeout: readTimeout})
	if err != nil {
		op := "open console " + path
		switch {
		case errors.Is(err, os.ErrNotExist):
			return nil, drivers.Infra(opts.Board, op, "is the USB-UART plugged in and the board powered? Name the port by /dev/serial/by-id or by-path, not ttyUSBn", err)
		case errors.Is(err, os.ErrPermission):
			// The lab file is right; this host does not let the runner's
			// user in: infrastructure, like a device that is not there.
			return nil, drivers.Infra(opts.Board, op, "add the runner's user to the dialout group (usermod -aG dialout USER, then log in again) or give the USB-UART to its group with a udev rule", err)
		case strings.Contains(err.Error(), "baud"):
			return nil, drivers.Setup(opts.Board, op, "use a standard baud rate (115200, 921600 ...)", fmt.Errorf("baud rate %d: %w", baud, err))
		}
		return nil, drivers.Infra(opts.Board, op, "", err)
	}
	return newConsole(p, opts, true), nil
}

// New runs a console over any byte stream (a pty, a pipe, a socket). An
// io.EOF from rw ends the stream.
func New(rw io.ReadWriteCloser, opts Options) *Console {
	return newConsole(rw, opts, false)
}

func newConsole(rw io.ReadWriteCloser, opts Options, eofIsTimeout bool) *Console {
	if opts.LineEnding == "" {
		opts.LineEnding = "\n"
	}
	c := &Console{
		rw:           rw,
		eofIsTimeout: eofIsTimeout,
		opts:         opts,
		board:        opts.Board,
		notify:       make(chan struct{}),
		rxAtBOL:      true,
		writes:       make(chan writeReq),
		done:         make(chan struct{}),
		readerDone:   make(chan struct{}),
	}
	go c.reader()
	go c.writer()
	return c
}

func (c *Console) reader() {
	defer close(c.readerDone)
	buf := make([]byte, 4096)
	idle, fastEOF := 0, 0
	for {
		t0 := time.Now()
		n, err := c.rw.Read(buf)
		if n > 0 {
			idle, fastEOF = 0, 0
			c.received(buf[:n])
		}
		select {
		case <-c.done:
			return
		default:
		}
		if err != nil {
			if errors.Is(err, io.EOF) && c.eofIsTimeout && n == 0 {
				// tarm/serial's timeout ends in (0, io.EOF) after the
				// read timeout; a tty whose other end hung up returns
				// (0, io.EOF) at once, forever.
				if time.Since(t0) >= readTimeout/4 {
					fastEOF = 0
					continue
				}
				if fastEOF++; fastEOF < 3 {
					continue
				}
				err = errHangup
			} else if errors.Is(err, io.EOF) && c.eofIsTimeout {
				continue
			}
			c.mu.Lock()
			c.readErr = err
			c.wake()
			c.mu.Unlock()
			return
		}
		if n == 0 {
			// A reader that returns (0, nil) must not make this loop spin.
			idle++
			if idle > 3 {
				time.Sleep(10 * time.Millisecond)
			}
		}
	}
}

// received files a chunk into the screen and the transcript.
func (c *Console) received(p []byte) {
	c.transcribeRx(p)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.scr.feed(p)
	if c.scr.size() > maxScreen {
		c.scr.consume(c.scr.size() / 2)
	}
	c.last = append(c.last, p...)
	if len(c.last) > 2*keepLast {
		c.last = append(c.last[:0], c.last[len(c.last)-keepLast:]...)
	}
	c.wake()
}

// wake tells waiting Expects that something changed; c.mu is held.
func (c *Console) wake() {
	close(c.notify)
	c.notify = make(chan struct{})
}

func (c *Console) writer() {
	for {
		select {
		case <-c.done:
			return
		case w := <-c.writes:
			_, err := c.rw.Write(w.p)
			w.res <- err
		}
	}
}

// write hands p to the writer goroutine, so that a port that stops taking
// bytes (a full pty buffer, a stuck driver) costs the caller its deadline,
// not forever.
func (c *Console) write(ctx context.Context, op string, p []byte) error {
	res := make(chan error, 1)
	select {
	case c.writes <- writeReq{p: p, res: res}:
	case <-ctx.Done():
		return c.ctxError(op, "the port has not taken the bytes written before: check flow control and the cable", ctx.Err(), 0)
	case <-c.done:
		return c.closedError(op)
	}
	select {
	case err := <-res:
		if err != nil {
			return drivers.Infra(c.board, op, "check the cable and that the port still exists", fmt.Errorf("write: %w", err))
		}
		return nil
	case <-ctx.Done():
		return c.ctxError(op, "the port does not take bytes: check flow control and the cable", ctx.Err(), 0)
	case <-c.done:
		return c.closedError(op)
	}
}

// Send sends line followed by the line ending, pacing bytes if configured.
func (c *Console) Send(ctx context.Context, line string) error {
	op := fmt.Sprintf("send %q", line)
	if err := ctx.Err(); err != nil {
		return c.ctxError(op, "", err, 0)
	}
	c.transcribeTx(line)
	data := []byte(line + c.opts.LineEnding)
	if c.opts.Pacing <= 0 {
		return c.write(ctx, op, data)
	}
	t := time.NewTimer(0)
	defer t.Stop()
	<-t.C
	paced := func(sent int) string {
		return fmt.Sprintf("with pacing of %v per byte, %d of %d bytes were sent: give the step more time or pace less", c.opts.Pacing, sent, len(data))
	}
	for i := range data {
		if err := c.write(ctx, op, data[i:i+1]); err != nil {
			if ctx.Err() != nil {
				return c.ctxError(op, paced(i), ctx.Err(), 0)
			}
			return err
		}
		t.Reset(c.opts.Pacing)
		select {
		case <-t.C:
		case <-ctx.Done():
			return c.ctxError(op, paced(i+1), ctx.Err(), 0)
		case <-c.done:
			return c.closedError(op)
		}
	}
	return nil
}

// Expect waits until pattern (a Go regular expression) matches what arrived
// since the last successful Expect, and returns that text up to and
// including the match, with '\r' removed. Kernel messages, terminal escape
// sequences and control characters that the board interleaves with its
// output do not prevent a match (see screen). It fails, as an infrastructure
// error wrapping drivers.ErrTimeout, at ctx's deadline.
func (c *Console) Expect(ctx context.Context, pattern string) (string, error) {
	m, err := c.expect(ctx, pattern)
	return m.raw, err
}

func (c *Console) expect(ctx context.Context, pattern string) (match, error) {
	return c.expectFrom(ctx, pattern, -1)
}

// mark returns the stream position of the next byte to arrive.
func (c *Console) mark() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.scr.off + len(c.scr.raw)
}

// expectFrom is expect for matches that start at stream position from or
// later (-1: anywhere since the last match); what came before is consumed
// with the match.
func (c *Console) expectFrom(ctx context.Context, pattern string, from int) (match, error) {
	op := fmt.Sprintf("expect /%s/", pattern)
	re, err := regexp.Compile(pattern)
	if err != nil {
		return match{}, drivers.Setup(c.board, op, "fix the pattern: it is a Go regular expression (regexp/syntax)", err)
	}
	start := time.Now()
	var gap *time.Timer
	defer func() {
		if gap != nil {
			gap.Stop()
		}
	}()
	for {
		c.mu.Lock()
		rel := 0
		if from >= 0 {
			rel = from - c.scr.off
		}
		m, end, ok := c.scr.find(re, rel)
		if ok {
			c.scr.consume(end)
			c.mu.Unlock()
			return m, nil
		}
		closed, readErr, ch, big := c.closed, c.readErr, c.notify, c.scr.size() > bigScreen
		c.mu.Unlock()
		switch {
		case closed:
			return match{}, c.closedError(op)
		case readErr != nil:
			return match{}, drivers.Infra(c.board, op, "the other end hung up or the adapter went away: check the cable and the board; the transcript has what it printed last",
				fmt.Errorf("console stopped reading (%w); last bytes seen: %s", readErr, c.lastSeen()))
		}
		if big {
			if gap == nil {
				gap = time.NewTimer(scanGap)
			} else {
				gap.Reset(scanGap)
			}
			select {
			case <-gap.C:
			case <-ctx.Done():
				return match{}, c.ctxError(op, expectHint, ctx.Err(), time.Since(start))
			}
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return match{}, c.ctxError(op, expectHint, ctx.Err(), time.Since(start))
		}
	}
}

const expectHint = "check the cable, the baud rate and that the board is powered and booted, and that the pattern fits what it prints; the transcript has every byte received"

// Command sends cmd, waits for prompt (a regular expression) to arrive
// after it, and returns what the command printed: the text between the echo
// of cmd and the prompt, without kernel messages, escape sequences and '\r',
// and without trailing newlines. Output still buffered from before the
// command is discarded.
func (c *Console) Command(ctx context.Context, cmd, prompt string) (string, error) {
	// Only what arrives after the command was sent counts: a prompt still
	// in the buffer from before must not end the command at once.
	from := c.mark()
	if err := c.Send(ctx, cmd); err != nil {
		return "", err
	}
	m, err := c.expectFrom(ctx, prompt, from)
	if err != nil {
		return "", err
	}
	out := stripEcho(m.clean[m.cleanFrom:m.cleanStart], cmd)
	// A prompt pattern that matches only its end ("[#$>] ?$") leaves the
	// start of the prompt's line ("root@board:~") behind: a shell prints
	// its prompt on a line of its own, so a last line without its newline
	// is the prompt's, not the command's.
	if i := strings.LastIndexByte(out, '\n'); i >= 0 {
		out = out[:i+1]
	} else {
		out = ""
	}
	return strings.TrimRight(out, "\n"), nil
}

// WaitPrompt waits until the board's shell gives a prompt (a regular
// expression) on a fresh line: a board that was just powered or reset
// prints its boot log first and ignores or loses what is typed meanwhile.
// It presses Enter and waits for a prompt after it, again every retry
// (default 1 s) until ctx ends; a prompt the boot log ends with counts too.
// What arrived up to the prompt is consumed and returned.
func (c *Console) WaitPrompt(ctx context.Context, prompt string, retry time.Duration) (string, error) {
	if retry <= 0 {
		retry = time.Second
	}
	var seen strings.Builder
	start := time.Now()
	for {
		from := c.mark()
		if err := c.Send(ctx, ""); err != nil {
			return seen.String(), err
		}
		tctx, cancel := context.WithTimeout(ctx, retry)
		m, err := c.expectFrom(tctx, prompt, from)
		cancel()
		if err == nil {
			seen.WriteString(m.raw)
			return seen.String(), nil
		}
		if ctx.Err() != nil {
			return seen.String(), c.ctxError(fmt.Sprintf("wait for the prompt /%s/", prompt),
				"the board gave no shell prompt: check that it is powered and has booted, the baud rate, and the lab file's console.prompt; the transcript has every byte received",
				ctx.Err(), time.Since(start))
		}
		if drivers.ClassOf(err) == drivers.ClassSetup || !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, drivers.ErrTimeout) {
			return seen.String(), err // a bad pattern, a closed or broken console
		}
	}
}

// stripEcho drops the terminal's echo of cmd and anything before it (a
// prompt, stale output of an earlier command): the first line that ends with
// the command as typed. Output from a board that does not echo is returned
// whole.
func stripEcho(out, cmd string) string {
	cmd = strings.TrimSpace(cmd)
	if cmd == "" {
		return strings.TrimPrefix(out, "\n")
	}
	rest := out
	for len(rest) > 0 {
		line, after, found := strings.Cut(rest, "\n")
		if strings.HasSuffix(strings.TrimRight(line, " \t"), cmd) {
			return after
		}
		if !found {
			break
		}
		rest = after
	}
	return out
}

// Close stops the console. It never hangs: a port that does not close, or a
// reader stuck in a driver, is abandoned after a bounded wait. Pending and
// later Expects and Sends fail.
func (c *Console) Close() error {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.closed = true
		c.wake()
		c.mu.Unlock()
		close(c.done)
		errc := make(chan error, 1)
		go func() { errc <- c.rw.Close() }()
		timer := time.NewTimer(closeWait)
		defer timer.Stop()
		select {
		case err := <-errc:
			if err != nil {
				c.closeErr = drivers.Infra(c.board, "close console", "", err)
			}
		case <-timer.C:
			c.closeErr = drivers.Infra(c.board, "close console", "the port driver is stuck; unplug and replug the adapter",
				fmt.Errorf("%w: close did not return within %v", drivers.ErrTimeout, closeWait))
			return
		}
		select {
		case <-c.readerDone:
		case <-timer.C:
		}
	})
	return c.closeErr
}

func (c *Console) closedError(op string) error {
	return drivers.Setup(c.board, op, "the console was closed", errors.New("console closed"))
}

// ctxError reports a deadline as a timeout (infrastructure: the board did
// not answer) and a cancellation as such, both with what was last seen.
func (c *Console) ctxError(op, hint string, cause error, waited time.Duration) error {
	var err error
	switch {
	case errors.Is(cause, context.DeadlineExceeded) && waited > 0:
		err = fmt.Errorf("%w after %v (%w); last bytes seen: %s", drivers.ErrTimeout, waited.Round(time.Millisecond), cause, c.lastSeen())
	case errors.Is(cause, context.DeadlineExceeded):
		err = fmt.Errorf("%w (%w)", drivers.ErrTimeout, cause)
	case waited > 0:
		err = fmt.Errorf("%w after %v; last bytes seen: %s", cause, waited.Round(time.Millisecond), c.lastSeen())
	default:
		err = cause
	}
	return drivers.Infra(c.board, op, hint, err)
}

// lastSeen renders the last bytes received so that they are safe in a
// terminal, a log line and an XML report: quoted, with control characters,
// escape sequences and invalid UTF-8 escaped.
func (c *Console) lastSeen() string {
	c.mu.Lock()
	last := c.last
	if len(last) > keepLast {
		last = last[len(last)-keepLast:]
	}
	s := string(last)
	c.mu.Unlock()
	if s == "" {
		return "nothing received"
	}
	return strconv.Quote(s)
}

// stamp is the transcript's time prefix.
func stamp() string { return time.Now().Format("15:04:05.000") }

func (c *Console) transcribeRx(p []byte) {
	w := c.opts.Transcript
	if w == nil {
		return
	}
	c.trMu.Lock()
	defer c.trMu.Unlock()
	var out []byte
	for len(p) > 0 {
		if c.rxAtBOL {
			out = append(out, stamp()+" < "...)
			c.rxAtBOL = false
		}
		i := 0
		for i < len(p) && p[i] != '\n' {
			i++
		}
		if i < len(p) {
			out = append(out, p[:i+1]...)
			p = p[i+1:]
			c.rxAtBOL = true
			continue
		}
		out = append(out, p...)
		p = nil
	}
	w.Write(out) // a transcript that fails to write must not stop the console
}

func (c *Console) transcribeTx(line string) {
	w := c.opts.Transcript
	if w == nil {
		return
	}
	c.trMu.Lock()
	defer c.trMu.Unlock()
	var out []byte
	if !c.rxAtBOL {
		// The board is in the middle of a line: end it so the marker starts one.
		out = append(out, '\n')
		c.rxAtBOL = true
	}
	out = append(out, stamp()+" > "+strings.TrimRight(line, "\r\n")+"\n"...)
	w.Write(out)
}
