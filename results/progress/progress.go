// Package progress shows how a long run advances. On a terminal it draws
// one bar per board (the steps of the board's plan: check bitstreams,
// program, setup, each test) with the board's verdict counts, redrawn in
// place, and log lines print above the bars; under CI (CI=true) or when
// the output is not a terminal it prints one plain line per step.
//
// The bars use github.com/vbauerster/mpb/v8: it draws several bars at once
// (one per board, updated from concurrent plans), and its Progress is an
// io.Writer that prints above the bars, so slog output and the bars do not
// garble each other. Single-bar libraries (schollz/progressbar) do neither.
package progress

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
	"golang.org/x/term"
)

// Plan is what the bars need to know of a plan.
type Plan struct {
	Name   string
	Boards []string
	// Steps is the number of steps the plan reports: 3 (check
	// bitstreams, program, setup) plus one per test.
	Steps int
}

// Counts are one board's verdicts so far.
type Counts struct {
	Verdicts int
	NotPass  int // failed or errored
}

// CountsFunc returns the verdict counts per board; it is polled a few
// times a second.
type CountsFunc func() map[string]Counts

// Reporter receives the steps of a run. Step matches the hook of
// labrun.Groups.Progress.
type Reporter interface {
	Step(plan, step string)
	// Finish says a plan is over: its bars complete at once, not when the
	// whole run ends.
	Finish(plan string)
	// Writer is where log lines go while the reporter is open.
	Writer() io.Writer
	// Close completes the display; call it before printing the summary.
	Close()
}

// Fancy reports whether out gets bars: a terminal, and not under CI.
func Fancy(out *os.File) bool {
	if v := strings.ToLower(os.Getenv("CI")); v == "true" || v == "1" {
		return false
	}
	return term.IsTerminal(int(out.Fd()))
}

// New returns bars on a terminal and plain lines otherwise (see Fancy):
// any out that is not an *os.File (a test's buffer) gets plain lines.
func New(out io.Writer, plans []Plan, counts CountsFunc) Reporter {
	if f, ok := out.(*os.File); ok && Fancy(f) {
		return NewBars(out, plans, counts)
	}
	return NewPlain(out, plans, counts)
}

type tracker struct {
	mu     sync.Mutex
	plans  map[string]Plan
	done   map[string]int    // steps started per plan
	step   map[string]string // current step per plan
	counts CountsFunc
	cache  map[string]Counts
	cached time.Time
}

func newTracker(plans []Plan, counts CountsFunc) *tracker {
	t := &tracker{plans: map[string]Plan{}, done: map[string]int{}, step: map[string]string{}, counts: counts}
	for _, p := range plans {
		t.plans[p.Name] = p
	}
	return t
}

// advance records a step and returns the plan and the step's number.
func (t *tracker) advance(plan, step string) (Plan, int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.done[plan]++
	t.step[plan] = step
	p, ok := t.plans[plan]
	if !ok {
		p = Plan{Name: plan}
	}
	return p, t.done[plan]
}

// board returns a board's counts, polling the source at most every 300 ms
// (it copies the run's verdicts).
func (t *tracker) board(name string) Counts {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.counts == nil {
		return Counts{}
	}
	if t.cache == nil || time.Since(t.cached) > 300*time.Millisecond {
		t.cache = t.counts()
		t.cached = time.Now()
	}
	return t.cache[name]
}

func (t *tracker) current(plan string) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.step[plan]
}

// Plain prints one line per step.
type Plain struct {
	out io.Writer
	t   *tracker
	mu  sync.Mutex
}

// NewPlain returns a reporter that prints plain lines to out.
func NewPlain(out io.Writer, plans []Plan, counts CountsFunc) *Plain {
	return &Plain{out: out, t: newTracker(plans, counts)}
}

// Step prints "HH:MM:SS plan [boards] step N/M: name (v verdicts, f not passed)".
func (p *Plain) Step(plan, step string) {
	pl, n := p.t.advance(plan, step)
	var v, bad int
	for _, b := range pl.Boards {
		c := p.t.board(b)
		v += c.Verdicts
		bad += c.NotPass
	}
	total := "?"
	if pl.Steps > 0 {
		total = fmt.Sprint(pl.Steps)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.out, "%s %s [%s] step %d/%s: %s (%d verdicts so far, %d not passed)\n",
		time.Now().Format("15:04:05"), plan, strings.Join(pl.Boards, " "), n, total, step, v, bad)
}

// Finish prints the plan's verdict counts.
func (p *Plain) Finish(plan string) {
	p.t.mu.Lock()
	pl, ok := p.t.plans[plan]
	p.t.mu.Unlock()
	if !ok {
		return
	}
	var v, bad int
	for _, b := range pl.Boards {
		c := p.t.board(b)
		v += c.Verdicts
		bad += c.NotPass
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.out, "%s %s [%s] done: %d verdicts, %d not passed\n",
		time.Now().Format("15:04:05"), plan, strings.Join(pl.Boards, " "), v, bad)
}

// Writer returns the output itself.
func (p *Plain) Writer() io.Writer { return p.out }

// Close does nothing: plain lines need no closing.
func (p *Plain) Close() {}

// Bars draws one bar per board of each plan.
type Bars struct {
	p    *mpb.Progress
	out  io.Writer
	t    *tracker
	mu   sync.Mutex
	bars map[string][]*mpb.Bar // plan -> its boards' bars
	size map[string]int64      // plan -> steps (the bars' total)
	once sync.Once
}

// NewBars returns a reporter drawing bars on out (a terminal).
func NewBars(out io.Writer, plans []Plan, counts CountsFunc) *Bars {
	b := &Bars{
		p:    mpb.New(mpb.WithOutput(out), mpb.WithWidth(20), mpb.WithRefreshRate(150*time.Millisecond), mpb.WithAutoRefresh()),
		out:  out,
		t:    newTracker(plans, counts),
		bars: map[string][]*mpb.Bar{},
		size: map[string]int64{},
	}
	for _, pl := range plans {
		steps := int64(pl.Steps)
		if steps <= 0 {
			steps = 1
		}
		b.size[pl.Name] = steps
		for _, board := range pl.Boards {
			plan, board := pl.Name, board
			bar := b.p.AddBar(steps,
				mpb.PrependDecorators(
					decor.Name(board, decor.WC{C: decor.DindentRight | decor.DextraSpace}),
					decor.Name(plan, decor.WC{C: decor.DindentRight | decor.DextraSpace}),
					decor.CountersNoUnit("%d/%d", decor.WCSyncWidth),
				),
				mpb.AppendDecorators(decor.Any(func(decor.Statistics) string {
					c := b.t.board(board)
					s := fmt.Sprintf(" %s · %d verdicts", b.t.current(plan), c.Verdicts)
					if c.NotPass > 0 {
						s += fmt.Sprintf(", %d bad", c.NotPass)
					}
					return s
				})),
			)
			b.bars[plan] = append(b.bars[plan], bar)
		}
	}
	return b
}

// Step moves the plan's bars: the steps before this one are done.
func (b *Bars) Step(plan, step string) {
	_, n := b.t.advance(plan, step)
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, bar := range b.bars[plan] {
		// A bar completes (and stops redrawing) when it reaches its
		// total: the last step only completes at Close.
		bar.SetCurrent(min(int64(n-1), b.size[plan]-1))
	}
}

// Finish completes the plan's bars.
func (b *Bars) Finish(plan string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, bar := range b.bars[plan] {
		bar.SetCurrent(b.size[plan])
	}
}

// Writer prints above the bars (and to the output itself once closed).
func (b *Bars) Writer() io.Writer { return writerFunc(b.write) }

func (b *Bars) write(p []byte) (int, error) {
	n, err := b.p.Write(p)
	if errors.Is(err, mpb.ErrDone) {
		return b.out.Write(p)
	}
	return n, err
}

// Close completes every bar and stops drawing.
func (b *Bars) Close() {
	b.once.Do(func() {
		b.mu.Lock()
		for plan, bars := range b.bars {
			for _, bar := range bars {
				bar.SetCurrent(b.size[plan])
			}
		}
		b.mu.Unlock()
		b.p.Wait()
	})
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
