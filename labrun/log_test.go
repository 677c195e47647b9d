package labrun

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// By default the terminal gets warnings only and the run's log file gets
// everything, including what was logged before the file existed; an
// explicit --log-level is what the terminal shows.
func TestRunLoggerSplitsTerminalAndFile(t *testing.T) {
	t.Parallel()
	var term, file bytes.Buffer
	log, lw := newRunLogger(slog.LevelInfo, false, &term)
	log.Info("before the run directory", "board", "a")
	log.With("component", "emu").Warn("a warning")
	if err := lw.Attach(&file); err != nil {
		t.Fatal(err)
	}
	log.Info("after", "board", "b")
	lw.Detach()
	log.Info("after detach")
	if strings.Contains(term.String(), "before the run directory") || !strings.Contains(term.String(), `warning: a warning (component emu)`) {
		t.Errorf("terminal got:\n%s", term.String())
	}
	want := []string{`msg="before the run directory" board=a`, `msg="a warning" component=emu`, `msg=after board=b`}
	got := file.String()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("log file lacks %q:\n%s", w, got)
		}
	}
	if strings.Contains(got, "after detach") || strings.Index(got, "before the run") > strings.Index(got, "msg=after") {
		t.Errorf("log file order or detach wrong:\n%s", got)
	}

	term.Reset()
	log, _ = newRunLogger(slog.LevelDebug, true, &term)
	log.Debug("shown")
	if !strings.Contains(term.String(), "debug: shown") {
		t.Errorf("--log-level debug: terminal got %q", term.String())
	}
}
