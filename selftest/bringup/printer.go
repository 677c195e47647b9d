package bringup

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// printer writes the live progress a person follows: one line per event
// (a board's stage done, a wave reached, a retry, a re-rooted tree), each
// written whole under one lock, with the diagnosis of a failure indented
// under its line in the same write. Logs never come here: they go to the
// run directory (Options.Log).
type printer struct {
	mu    sync.Mutex
	w     io.Writer
	start time.Time
}

func newPrinter(w io.Writer) *printer { return &printer{w: w, start: time.Now()} }

// write puts lines out in one write, each prefixed with the elapsed time.
func (p *printer) write(lines ...string) {
	if p.w == nil || len(lines) == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var b strings.Builder
	stamp := fmt.Sprintf("%7.2fs  ", time.Since(p.start).Seconds())
	for _, l := range lines {
		// A line is one event: embedded newlines (a console tail, a
		// wrapped error) would break it.
		l = strings.ReplaceAll(strings.TrimRight(l, "\n"), "\n", " | ")
		b.WriteString(stamp)
		b.WriteString(l)
		b.WriteByte('\n')
	}
	io.WriteString(p.w, b.String())
}

func (p *printer) printf(format string, a ...any) { p.write(fmt.Sprintf(format, a...)) }

// line prints one event of a stage on a board (or a rack, or a cable).
func (p *printer) line(stage, who, status, text string) {
	p.write(fmt.Sprintf("%-9s  %-14s %-7s %s", stage, who, status, text))
}

func (p *printer) header(r *run) {
	if p.w == nil {
		return
	}
	var rk []string
	for _, rr := range r.racks {
		var dcn []string
		for _, b := range rr.DCN {
			dcn = append(dcn, b.Name)
		}
		rk = append(rk, fmt.Sprintf("%s (%d boards, %d cables, DCN: %s)", rr.Name, len(rr.Boards), len(rr.Cables), orNone(dcn)))
	}
	lines := []string{fmt.Sprintf("bring-up of lab %s: %d racks: %s", r.opts.Lab.Name, len(r.racks), strings.Join(rk, "; "))}
	for _, rr := range r.racks {
		if rr.Note != "" {
			lines = append(lines, fmt.Sprintf("  rack %s: %s", rr.Name, rr.Note))
		}
	}
	if len(r.opts.Boards) > 0 {
		lines = append(lines, fmt.Sprintf("boards brought up: %s; the other boards of their racks help only as far as needed (marked (help))", strings.Join(r.opts.Boards, ", ")))
	}
	if r.opts.From > 0 {
		lines = append(lines, fmt.Sprintf("from stage %s: earlier stages are not judged; what later ones need is re-established quietly (marked (pre))", r.opts.From))
	}
	p.write(lines...)
}

// stage prints a board's stage result, with the diagnosis of a failure.
// label replaces the status of a result that is not judged: "(pre)" before
// --from, "(help)" on a board that only helps a --board run.
func (p *printer) stage(res *StageResult, board, label string) {
	if p.w == nil {
		return
	}
	status := strings.ToUpper(string(res.Status))
	if res.Status == Passed {
		status = "ok"
	}
	if label != "" && res.Status != Failed {
		status = label
	}
	sum := res.Summary
	if sum == "" && res.Status == Failed {
		sum = firstLine(res.Seen)
	}
	lines := []string{fmt.Sprintf("%-9s  %-14s %-7s %s", res.Stage, board, status, sum)}
	if res.Status == Failed {
		if res.Expected != "" {
			lines = append(lines, "    expected: "+res.Expected)
		}
		if res.Seen != "" && res.Seen != sum {
			lines = append(lines, "    seen:     "+res.Seen)
		}
		if res.Check != "" {
			lines = append(lines, "    check:    "+res.Check)
		}
	}
	p.write(lines...)
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 160 {
		return s[:160] + "..."
	}
	return s
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
