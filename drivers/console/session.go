package console

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/labrunner/labrunner/drivers"
)

// shell is a console's prompt-aware side (Console has it).
type shell interface {
	WaitPrompt(ctx context.Context, prompt string, retry time.Duration) (string, error)
	Command(ctx context.Context, cmd, prompt string) (string, error)
}

// SendLines types each line at a board's shell: first it waits for a
// prompt (a board just powered, or an emulated one just started, is still
// booting and would lose what is typed), then sends each line, waiting for
// the prompt after each but the last and printing what each answered on
// out; after the last, expect (if given) is awaited and what arrived up to
// it printed. Each wait has the timeout. A console without a shell side
// gets the lines sent without waiting for prompts.
func SendLines(ctx context.Context, con drivers.Console, prompt string, lines []string, expect string, timeout time.Duration, out io.Writer) error {
	if sh, ok := con.(shell); ok && len(lines) > 0 {
		if err := shellLines(ctx, sh, prompt, lines[:len(lines)-1], timeout, out); err != nil {
			return err
		}
		lines = lines[len(lines)-1:]
	}
	for _, l := range lines {
		sctx, cancel := drivers.Deadline(ctx, timeout)
		err := con.Send(sctx, l)
		cancel()
		if err != nil {
			return err
		}
	}
	if expect == "" {
		return nil
	}
	ectx, cancel := drivers.Deadline(ctx, timeout)
	defer cancel()
	got, err := con.Expect(ectx, expect)
	fmt.Fprint(out, got)
	if err != nil {
		return err
	}
	if !strings.HasSuffix(got, "\n") {
		fmt.Fprintln(out)
	}
	return nil
}

// shellLines waits for the prompt, then runs each line as a command
// (waiting for the prompt after it), printing its answer.
func shellLines(ctx context.Context, sh shell, prompt string, lines []string, timeout time.Duration, out io.Writer) error {
	wctx, cancel := drivers.Deadline(ctx, timeout)
	_, err := sh.WaitPrompt(wctx, prompt, 0)
	cancel()
	if err != nil {
		return err
	}
	for _, l := range lines {
		cctx, cancel := drivers.Deadline(ctx, timeout)
		got, err := sh.Command(cctx, l, prompt)
		cancel()
		if got != "" {
			fmt.Fprintln(out, got)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// Interact connects a person to a console: lines read from in are sent,
// what the console prints goes to out, until in ends or ctx is done (which
// is not an error).
func Interact(ctx context.Context, con drivers.Console, in io.Reader, out io.Writer) error {
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(in)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-ctx.Done():
				return
			}
		}
		close(lines)
	}()
	for {
		rctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		got, err := con.Expect(rctx, `(?s).+`)
		cancel()
		fmt.Fprint(out, got)
		if err != nil && ctx.Err() != nil {
			return nil
		}
		if err != nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, drivers.ErrTimeout) {
			return err
		}
		select {
		case l, ok := <-lines:
			if !ok {
				return nil
			}
			sctx, cancel := drivers.Deadline(ctx, 5*time.Second)
			err := con.Send(sctx, l)
			cancel()
			if err != nil {
				return err
			}
		default:
		}
	}
}
