package emu

import (
	"errors"
	"math/rand/v2"
	"os"
	"strings"
	"time"
)

// Kernel noise (docs/architecture.md: consoles interleave kernel output with prompts).
// Where it lands is drawn from the board's "console/lines" stream once per
// output line and per prompt, so that for a seed and a sequence of commands
// the same lines are broken at the same places, whatever the timing; idle
// messages come at moments drawn from "console/idle". Every message is a
// complete kernel line, "[%5d.%06d] text\r\n", which may start in the
// middle of a line of output or of the prompt (the kernel writes to the
// console whatever the shell was printing); removing each such message
// restores the text exactly.
const (
	noiseMidLine   = 0.06 // a message inside an output line
	noiseAfterLine = 0.04 // a message after an output line
	noiseInPrompt  = 0.02 // a message inside the prompt
	noiseAfterPmt  = 0.02 // a message right after the prompt
	noiseIdleMean  = 6 * time.Second
)

type shellState int

const (
	shellOff shellState = iota
	shellBooting
	shellUp
)

// shell is the firmware's console: the boot log, then a shell with its
// line editor, commands and kernel noise. One goroutine (run) owns it; the
// reader goroutine feeds it input.
type shell struct {
	b      *Board
	pt     *ptyEnd
	in     chan []byte
	bootCh chan struct{} // a boot to start (power-on, reboot); buffered
	quit   chan struct{}
	silent bool

	lines *rand.Rand // where noise lands in output
	idle  *rand.Rand // when idle noise comes
	msgs  *rand.Rand // which message

	state    shellState
	log      []logLine
	stuck    bool // the boot never reaches the shell (mgmt-never-boots)
	step     int
	bootAt   time.Time // when the current boot started
	ed       lineEditor
	nextIdle time.Time
	out      []byte
}

func newShell(b *Board, pt *ptyEnd) *shell {
	return &shell{
		b:      b,
		pt:     pt,
		in:     make(chan []byte, 16),
		bootCh: make(chan struct{}, 1),
		quit:   make(chan struct{}),
		silent: b.HasFault("board-silent"),
		lines:  b.Rand("console/lines"),
		idle:   b.Rand("console/idle"),
		msgs:   b.Rand("console/msgs"),
	}
}

// requestBoot asks for the boot log to be (re)started; it never blocks.
func (s *shell) requestBoot() {
	select {
	case s.bootCh <- struct{}{}:
	default:
	}
}

// reader moves input from the pty to the shell until the pty is shut down.
func (s *shell) reader() {
	buf := make([]byte, 1024)
	for {
		n, err := s.pt.read(buf, time.Time{})
		if n > 0 {
			select {
			case s.in <- append([]byte(nil), buf[:n]...):
			case <-s.quit:
				return
			}
		}
		switch {
		case err == nil:
		case errors.Is(err, os.ErrClosed):
			return
		default:
			time.Sleep(20 * time.Millisecond) // EIO: pause, never spin
		}
	}
}

// run serves the console until quit is closed.
func (s *shell) run() {
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		select {
		case <-s.quit:
			return
		case <-s.bootCh:
			s.startBoot(time.Now())
		case p := <-s.in:
			s.input(p)
		case <-t.C:
		}
		s.tick(time.Now())
		t.Reset(s.nextWake(time.Now()))
	}
}

// alive checks the power: a board switched off prints nothing and forgets
// what was being typed; the next power-on requests a boot.
func (s *shell) alive() bool {
	if s.silent || !s.b.Powered() {
		s.state = shellOff
		s.ed.reset()
		return false
	}
	if _, crashed := s.b.fwConsoleState(); crashed {
		// The firmware died (mgmt-proxy-dies): its last words, then nothing.
		if s.state != shellOff {
			s.flush(append(s.out[:0], s.b.panicLog()...))
		}
		s.state = shellOff
		s.ed.reset()
		return false
	}
	return s.state != shellOff
}

func (s *shell) startBoot(now time.Time) {
	if s.silent || !s.b.Powered() {
		s.state = shellOff
		return
	}
	s.log, s.stuck = s.b.consoleBootLog()
	s.state, s.step, s.bootAt = shellBooting, 0, now
	s.ed.reset()
}

// tick prints what is due: boot log lines, then the prompt; idle noise.
func (s *shell) tick(now time.Time) {
	if !s.alive() {
		return
	}
	switch s.state {
	case shellBooting:
		out := s.out[:0]
		for s.step < len(s.log) && !now.Before(s.stepAt(s.step)) {
			out = append(out, s.log[s.step].render()...)
			s.step++
		}
		if s.step == len(s.log) && !s.stuck {
			s.state = shellUp
			out = s.appendPrompt(out)
			s.nextIdle = now.Add(s.idleGap())
		}
		s.flush(out)
	case shellUp:
		if !now.Before(s.nextIdle) {
			s.flush(append(s.out[:0], s.b.noiseLine(s.msgs, s.b.uptime(now))...))
			s.nextIdle = now.Add(s.idleGap())
		}
	}
}

// stepAt spreads the boot log over the boot time.
func (s *shell) stepAt(i int) time.Time {
	return s.bootAt.Add(s.b.bootDuration() * time.Duration(i) / time.Duration(len(s.log)))
}

func (s *shell) nextWake(now time.Time) time.Duration {
	var at time.Time
	switch s.state {
	case shellBooting:
		if s.step >= len(s.log) {
			return time.Hour // a stuck boot: nothing more comes
		}
		at = s.stepAt(s.step)
	case shellUp:
		at = s.nextIdle
	default:
		return time.Hour
	}
	return max(at.Sub(now), 0)
}

func (s *shell) idleGap() time.Duration {
	return time.Duration(s.idle.ExpFloat64() * float64(noiseIdleMean))
}

// input handles typed bytes: echo, and commands on each complete line.
// Bytes typed while the firmware boots are lost.
func (s *shell) input(p []byte) {
	if !s.alive() || s.state != shellUp {
		return
	}
	out := s.out[:0]
	for _, c := range p {
		var ev editEvent
		out, ev = s.ed.feed(c, out)
		switch ev {
		case editInterrupt:
			out = s.appendPrompt(out)
		case editLine:
			text, reboot := s.b.runCommand(s.ed.take(), time.Now())
			out = s.appendOutput(out, text)
			if reboot {
				// The rest of what was typed goes down with the shell.
				s.flush(out)
				s.startBoot(time.Now())
				return
			}
			out = s.appendPrompt(out)
		}
	}
	s.flush(out)
}

func (s *shell) flush(out []byte) {
	s.out = out
	if len(out) > 0 {
		s.pt.write(out)
	}
}

// appendOutput adds a command's output, "\r\n" line ends, and kernel noise
// at places drawn from the lines stream.
func (s *shell) appendOutput(out []byte, text string) []byte {
	if text == "" {
		return out
	}
	text = strings.ReplaceAll(text, "\r\n", "\n")
	text = strings.TrimSuffix(text, "\n")
	for _, line := range strings.Split(text, "\n") {
		if len(line) >= 2 && s.lines.Float64() < noiseMidLine {
			cut := 1 + s.lines.IntN(len(line)-1)
			out = append(out, line[:cut]...)
			out = append(out, s.b.noiseLine(s.msgs, s.b.uptime(time.Now()))...)
			out = append(out, line[cut:]...)
		} else {
			out = append(out, line...)
		}
		out = append(out, '\r', '\n')
		if s.lines.Float64() < noiseAfterLine {
			out = append(out, s.b.noiseLine(s.msgs, s.b.uptime(time.Now()))...)
		}
	}
	return out
}

// appendPrompt adds the prompt, now and then broken or followed by a
// kernel message.
func (s *shell) appendPrompt(out []byte) []byte {
	p := s.b.prompt()
	r := s.lines.Float64()
	switch {
	case r < noiseInPrompt:
		cut := 1 + s.lines.IntN(len(p)-1)
		out = append(out, p[:cut]...)
		out = append(out, s.b.noiseLine(s.msgs, s.b.uptime(time.Now()))...)
		return append(out, p[cut:]...)
	case r < noiseInPrompt+noiseAfterPmt:
		out = append(out, p...)
		return append(out, s.b.noiseLine(s.msgs, s.b.uptime(time.Now()))...)
	}
	return append(out, p...)
}
