package progress

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
)

// TermHandler is a slog handler for the person at the terminal: one line
// per record, "15:04:05 warning: message (key value, key value)", the level
// named only when it is not info, values quoted only when they would be
// ambiguous. The run directory's log keeps slog's machine-readable text
// form; this is the terminal's.
type TermHandler struct {
	mu    *sync.Mutex
	out   io.Writer
	level slog.Leveler
	attrs []slog.Attr // from WithAttrs, qualified by their groups
	group string      // prefix of later attributes ("a.b.")
}

// NewTermHandler writes records at level and above to out.
func NewTermHandler(out io.Writer, level slog.Leveler) *TermHandler {
	return &TermHandler{mu: &sync.Mutex{}, out: out, level: level}
}

// Enabled reports whether the level is shown.
func (h *TermHandler) Enabled(_ context.Context, l slog.Level) bool {
	return l >= h.level.Level()
}

// Handle writes one line.
func (h *TermHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	if !r.Time.IsZero() {
		b.WriteString(r.Time.Format("15:04:05 "))
	}
	switch {
	case r.Level >= slog.LevelError:
		b.WriteString("error: ")
	case r.Level >= slog.LevelWarn:
		b.WriteString("warning: ")
	case r.Level < slog.LevelInfo:
		b.WriteString("debug: ")
	}
	b.WriteString(r.Message)
	var parts []string
	add := func(prefix string, a slog.Attr) {
		parts = appendAttr(parts, prefix, a)
	}
	for _, a := range h.attrs {
		add("", a)
	}
	r.Attrs(func(a slog.Attr) bool {
		add(h.group, a)
		return true
	})
	if len(parts) > 0 {
		b.WriteString(" (")
		b.WriteString(strings.Join(parts, ", "))
		b.WriteString(")")
	}
	b.WriteByte('\n')
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := io.WriteString(h.out, b.String())
	return err
}

func appendAttr(parts []string, prefix string, a slog.Attr) []string {
	a.Value = a.Value.Resolve()
	if a.Equal(slog.Attr{}) {
		return parts
	}
	if a.Value.Kind() == slog.KindGroup {
		p := prefix
		if a.Key != "" {
			p += a.Key + "."
		}
		for _, g := range a.Value.Group() {
			parts = appendAttr(parts, p, g)
		}
		return parts
	}
	v := a.Value.String()
	if v == "" {
		return parts
	}
	if strings.ContainsAny(v, ",()") || strings.TrimSpace(v) != v {
		v = fmt.Sprintf("%q", v)
	}
	return append(parts, prefix+a.Key+" "+v)
}

// WithAttrs returns a handler that adds attrs to every record.
func (h *TermHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append(append([]slog.Attr(nil), h.attrs...), qualify(h.group, attrs)...)
	return &c
}

// WithGroup returns a handler whose later attributes are in the group.
func (h *TermHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	c := *h
	c.group = h.group + name + "."
	return &c
}

func qualify(group string, attrs []slog.Attr) []slog.Attr {
	if group == "" {
		return attrs
	}
	out := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		out[i] = slog.Attr{Key: group + a.Key, Value: a.Value}
	}
	return out
}
