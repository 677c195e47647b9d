package emu

import (
	"time"

	"github.com/labrunner/labrunner/labconfig"
)

// Line-rate emulation of the UART bridge (docs/uart-bridge.md, "Line-rate
// emulation"). A pseudo-terminal moves bytes as fast as the host writes
// them; a USB-UART at 921600 baud takes 10.85 µs a byte on the wire and
// adds its own latency to every round trip (USB scheduling, the chip's
// latency timer). With line_rate (and request_latency) in the lab file the
// emulated bridge holds every byte it hears until the line would have
// delivered it, and every byte it sends until the line and the USB-UART
// would have: a nightly on the emulated rack then takes the time it would
// take on a rack of USB-UARTs.

// lineShape is an emulated bridge line's timing.
type lineShape struct {
	byteTime time.Duration // one byte on the wire: 10 bit times (start, 8 data, stop); 0 when not paced
	// in and out are the request latency's halves: the USB-UART's delay
	// before a byte the host wrote starts on the wire, and after a byte
	// the device sent finished on it, before the host can read it.
	in, out time.Duration
}

// lineShapeOf reads a board's bridge line timing from its lab entry.
func lineShapeOf(cfg labconfig.Board) lineShape {
	s := cfg.Bus.UARTBridge
	if s == nil {
		return lineShape{}
	}
	var l lineShape
	if s.LineRate && s.Baud > 0 {
		l.byteTime = 10 * time.Second / time.Duration(s.Baud)
	}
	l.in = s.RequestLatency / 2
	l.out = s.RequestLatency - l.in
	return l
}

// paced reports whether the line is shaped at all: an unshaped line is
// served as the pseudo-terminal delivers it, with no timers in the way.
func (l lineShape) paced() bool { return l.byteTime > 0 || l.in > 0 || l.out > 0 }

// rxClock schedules the bytes the host sent onto the emulated line: a
// chunk read from the pseudo-terminal at t starts on the wire at t plus the
// inbound latency, or when the wire is free of the bytes before it, and
// each of its bytes is complete one byte time after the one before. It
// keeps the schedule of the bytes the request parser may still need, by
// their offset in the stream since the port was opened.
type rxClock struct {
	line  lineShape
	free  time.Time // when the last byte scheduled is complete
	total int64     // bytes scheduled
	segs  []rxSeg
}

// rxSeg is one chunk's schedule: its byte at stream offset off+i is
// complete at start + (i+1) byte times.
type rxSeg struct {
	off   int64
	n     int64
	start time.Time
}

// heard schedules n bytes read from the pseudo-terminal at t and returns
// when the last of them is complete.
func (c *rxClock) heard(n int, t time.Time) time.Time {
	start := t.Add(c.line.in)
	if start.Before(c.free) {
		start = c.free
	}
	c.segs = append(c.segs, rxSeg{off: c.total, n: int64(n), start: start})
	c.total += int64(n)
	c.free = start.Add(time.Duration(n) * c.line.byteTime)
	return c.free
}

// arrival returns when the first end bytes of the stream are all on the
// device's side of the line (end >= 1), and forgets the schedule of the
// chunks before the one holding byte end-1: the parser consumes the stream
// in order.
func (c *rxClock) arrival(end int64) time.Time {
	for len(c.segs) > 1 && c.segs[0].off+c.segs[0].n < end {
		c.segs = c.segs[1:]
	}
	if len(c.segs) == 0 {
		return c.free
	}
	s := c.segs[0]
	i := min(max(end-s.off, 1), s.n)
	return s.start.Add(time.Duration(i) * c.line.byteTime)
}

// reset forgets the schedule (the board lost power: what it heard is gone).
// The wire's own timing is kept: bytes still on it take their time.
func (c *rxClock) reset() {
	c.segs = c.segs[:0]
}

// txClock schedules the device's answers: an answer of n bytes handed over
// at t starts on the wire then or when the bytes before it are out, and
// reaches the host the outbound latency after its last byte.
type txClock struct {
	line lineShape
	free time.Time
}

// send returns when the host can read an answer of n bytes handed over at t.
func (c *txClock) send(n int, t time.Time) time.Time {
	start := t
	if start.Before(c.free) {
		start = c.free
	}
	c.free = start.Add(time.Duration(n) * c.line.byteTime)
	return c.free.Add(c.line.out)
}
