package progress

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"testing/slogtest"
)

func TestTermHandlerLines(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(NewTermHandler(&buf, slog.LevelInfo)).With("plan", "exanet-mesh")
	log.Warn("board unhealthy: taken out of the plan", "board", "exa-00", "reason", "no answer, twice")
	log.Debug("hidden")
	log.WithGroup("influx").Error("export stopped", "err", errors.New("HTTP 404"), "waiting", 12)
	got := buf.String()
	for _, want := range []string{
		`warning: board unhealthy: taken out of the plan (plan exanet-mesh, board exa-00, reason "no answer, twice")`,
		`error: export stopped (plan exanet-mesh, influx.err HTTP 404, influx.waiting 12)`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("terminal lines lack %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "hidden") || strings.Contains(got, "level=") || strings.Contains(got, "msg=") {
		t.Errorf("terminal lines:\n%s", got)
	}
}

// The handler keeps slog's contract (attributes, groups, levels), checked
// by the standard library's own handler test, reading the lines back.
func TestTermHandlerContract(t *testing.T) {
	var buf bytes.Buffer
	h := NewTermHandler(&buf, slog.LevelInfo)
	err := slogtest.TestHandler(h, func() []map[string]any {
		var out []map[string]any
		for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
			out = append(out, parseTermLine(l))
		}
		return out
	})
	if err != nil {
		t.Error(err)
	}
}

// parseTermLine reads a line back into slogtest's shape: msg, level, time
// and the attributes, groups nested by their dotted keys.
func parseTermLine(l string) map[string]any {
	m := map[string]any{slog.LevelKey: "INFO"}
	if len(l) >= 9 && l[2] == ':' && l[5] == ':' && l[8] == ' ' {
		m[slog.TimeKey] = l[:8]
		l = l[9:]
	}
	for _, p := range []struct{ prefix, level string }{{"error: ", "ERROR"}, {"warning: ", "WARN"}, {"debug: ", "DEBUG"}} {
		if rest, ok := strings.CutPrefix(l, p.prefix); ok {
			m[slog.LevelKey], l = p.level, rest
		}
	}
	msg, attrs := l, ""
	if i := strings.LastIndex(l, " ("); i >= 0 && strings.HasSuffix(l, ")") {
		msg, attrs = l[:i], l[i+2:len(l)-1]
	}
	m[slog.MessageKey] = msg
	for _, kv := range strings.Split(attrs, ", ") {
		k, v, ok := strings.Cut(kv, " ")
		if !ok {
			continue
		}
		keys := strings.Split(k, ".")
		cur := m
		for _, g := range keys[:len(keys)-1] {
			next, ok := cur[g].(map[string]any)
			if !ok {
				next = map[string]any{}
				cur[g] = next
			}
			cur = next
		}
		cur[keys[len(keys)-1]] = v
	}
	return m
}
