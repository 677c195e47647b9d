package labrun

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"sync"

	"github.com/labrunner/labrunner/results/progress"
)

// A nightly's log has two readers. The person at the terminal wants the
// progress lines and what went wrong, not a line per verdict; the run
// directory keeps everything (labrunner.log) as the evidence of the run.
// newRunLogger writes warnings and errors to the terminal (or every record
// at lvl when the user chose it: explicit) and every record at lvl to the
// run directory's log. Records from before the run directory exists
// (starting the rack, programming) are held and written there first.
func newRunLogger(lvl slog.Level, explicit bool, term io.Writer) (*slog.Logger, *lateWriter) {
	termLvl := max(lvl, slog.LevelWarn)
	if explicit {
		termLvl = lvl
	}
	file := &lateWriter{}
	h := teeHandler{
		progress.NewTermHandler(term, termLvl),
		slog.NewTextHandler(file, &slog.HandlerOptions{Level: lvl}),
	}
	return slog.New(h), file
}

// lateWriter buffers what is written until Attach gives it its file.
type lateWriter struct {
	mu  sync.Mutex
	buf bytes.Buffer
	w   io.Writer
}

func (l *lateWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.w == nil {
		return l.buf.Write(p)
	}
	return l.w.Write(p)
}

// Attach writes what was held to w and sends everything after to w.
func (l *lateWriter) Attach(w io.Writer) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.w = w
	_, err := l.buf.WriteTo(w)
	return err
}

// Detach stops writing to the file (it is about to be closed); later
// records are held again.
func (l *lateWriter) Detach() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.w = nil
}

// teeHandler hands each record to every handler that takes its level.
type teeHandler []slog.Handler

func (t teeHandler) Enabled(ctx context.Context, l slog.Level) bool {
	for _, h := range t {
		if h.Enabled(ctx, l) {
			return true
		}
	}
	return false
}

func (t teeHandler) Handle(ctx context.Context, r slog.Record) error {
	var first error
	for _, h := range t {
		if h.Enabled(ctx, r.Level) {
			if err := h.Handle(ctx, r.Clone()); err != nil && first == nil {
				first = err
			}
		}
	}
	return first
}

func (t teeHandler) WithAttrs(as []slog.Attr) slog.Handler {
	out := make(teeHandler, len(t))
	for i, h := range t {
		out[i] = h.WithAttrs(as)
	}
	return out
}

func (t teeHandler) WithGroup(name string) slog.Handler {
	out := make(teeHandler, len(t))
	for i, h := range t {
		out[i] = h.WithGroup(name)
	}
	return out
}
