package bringup

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// printer writes the live progress: one line per board and stage as it
// finishes, the diagnosis of a failure indented under it, and rack-wide
// events (waves, the TimeSync tree) as they happen.
type printer struct {
	mu    sync.Mutex
	w     io.Writer
	start time.Time
}

func newPrinter(w io.Writer) *printer { return &printer{w: w, start: time.Now()} }

func (p *printer) printf(format string, a ...any) {
	if p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "%7.2fs  ", time.Since(p.start).Seconds())
	fmt.Fprintf(p.w, format, a...)
	if !strings.HasSuffix(format, "\n") {
		fmt.Fprintln(p.w)
	}
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
	p.printf("bring-up of lab %s: %d racks: %s", r.opts.Lab.Name, len(r.racks), strings.Join(rk, "; "))
	for _, rr := range r.racks {
		if rr.Note != "" {
			p.printf("  rack %s: %s", rr.Name, rr.Note)
		}
	}
	if r.opts.From > 0 {
		p.printf("from stage %s: earlier stages are not judged; what later ones need is re-established quietly", r.opts.From)
	}
}

func (p *printer) stage(res *StageResult, board string, quiet bool) {
	if p.w == nil {
		return
	}
	status := strings.ToUpper(string(res.Status))
	if res.Status == Passed {
		status = "ok"
	}
	if quiet && res.Status != Failed {
		status = "(pre)"
	}
	sum := res.Summary
	if sum == "" && res.Status == Failed {
		sum = firstLine(res.Seen)
	}
	p.printf("%-9s  %-14s %-7s %s", res.Stage, board, status, sum)
	if res.Status == Failed {
		if res.Expected != "" {
			p.printf("    expected: %s", res.Expected)
		}
		if res.Seen != "" {
			p.printf("    seen:     %s", res.Seen)
		}
		if res.Check != "" {
			p.printf("    check:    %s", res.Check)
		}
	}
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
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
