package emu

import (
	"errors"
	"math/rand/v2"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// partialTimeout: a device that has read part of a frame and then waits more
// than this for the next byte drops the partial frame (docs/uart-bridge.md,
// "Resynchronisation").
const partialTimeout = 100 * time.Millisecond

// bridgeDev is the device side of the UART debug bridge: it parses requests
// from the bridge pty, executes them on the board's bus and answers. One
// goroutine (run) owns it.
type bridgeDev struct {
	b      *Board
	pt     *ptyEnd
	parser reqParser
	faults uartFaults
	rng    *rand.Rand // b.Rand("uart"): the only draw of the UART faults
	silent bool       // board-silent

	// The last requests executed (SEQ, CRC) and the responses they got,
	// oldest first, replayed when the host retries one: the last one, or
	// the last `window` with a window open (docs/uart-bridge.md, "Window").
	// memGen is the board generation they ran in: a reset forgets them and
	// closes the window. older is the response before the newest, which
	// uart-stale sends as an old answer.
	mem    []remembered
	memGen int
	older  []byte
	window int   // requests the host may have outstanding: 1 when no window is open
	next   uint8 // the SEQ a windowed request must have to run (E)

	words []uint32 // read data scratch
	busy  []byte   // a BUSY answer, never remembered
	out   []byte   // wire scratch

	// Line-rate emulation (bridge_line.go): with a shaped line, bytes are
	// timed by rx and tx and answers leave through txq.
	line lineShape
	rx   rxClock
	tx   txClock
	txq  chan timedFrame
}

// timedFrame is an answer on its way to the host: written to the
// pseudo-terminal at at.
type timedFrame struct {
	p  []byte
	at time.Time
}

// remembered is an executed request and its answer.
type remembered struct {
	seq  uint8
	crc  uint16
	resp []byte
}

func newBridgeDev(b *Board, pt *ptyEnd) (*bridgeDev, error) {
	f, err := uartFaultsOf(b)
	if err != nil {
		return nil, err
	}
	line := lineShapeOf(b.cfg)
	return &bridgeDev{
		b:      b,
		pt:     pt,
		faults: f,
		rng:    b.Rand("uart"),
		silent: b.HasFault("board-silent"),
		words:  make([]uint32, 0, maxBurst),
		line:   line,
		rx:     rxClock{line: line},
		tx:     txClock{line: line},
		window: 1,
	}, nil
}

// run serves the bridge until the pty is shut down.
func (d *bridgeDev) run() {
	if d.line.paced() {
		d.runPaced()
		return
	}
	buf := make([]byte, 4096)
	var last time.Time // arrival of the last byte
	for {
		var deadline time.Time
		if d.parser.pending() {
			deadline = last.Add(partialTimeout)
		}
		n, err := d.pt.read(buf, deadline)
		if n > 0 {
			last = time.Now()
			d.received(buf[:n])
		}
		switch {
		case err == nil:
		case errors.Is(err, os.ErrDeadlineExceeded):
			if d.pt.buffered() > 0 {
				// Bytes came while this goroutine was not running (a
				// loaded machine): the line was not quiet.
				last = time.Now()
				continue
			}
			// The line went quiet in the middle of a frame: drop it and
			// look again from its second byte, maybe more than once
			// (every byte waiting has been waiting too long).
			for d.parser.pending() && time.Since(last) >= partialTimeout {
				d.parser.dropPartial()
				d.serveParsed()
			}
		case errors.Is(err, os.ErrClosed):
			return
		default:
			// EIO or an odd error from the master: pause rather than spin;
			// close() ends the loop with ErrClosed.
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// received takes bytes off the line. A board that is off or silent hears
// nothing; a board powered back on starts with an empty receiver.
func (d *bridgeDev) received(p []byte) {
	if d.silent || !d.b.Powered() {
		d.parser.reset()
		return
	}
	d.parser.push(p)
	d.serveParsed()
}

func (d *bridgeDev) serveParsed() {
	var r request
	for d.parser.next(&r) {
		d.handle(&r)
	}
}

// handle answers one request with a good CRC (docs/uart-bridge.md, "Which
// status wins" and "Window").
func (d *bridgeDev) handle(r *request) {
	gen, powered := d.b.generationPowered()
	if !powered {
		return
	}
	if d.memGen != gen {
		// Power cycled or the board was reprogrammed: what the bridge
		// remembered, and its window, went with the design.
		d.forget()
		d.window, d.memGen = 1, gen
	}
	for i := len(d.mem) - 1; i >= 0 && r.Cmd != cmdInfo; i-- {
		// INFO is run every time, never replayed: it only opens the window
		// and forgets, which a retry repeats harmlessly, while a replayed
		// INFO would leave an earlier session's requests remembered for
		// this session's to match.
		if m := d.mem[i]; m.seq == r.Seq && m.crc == r.CRC {
			// A retry: the host lost our answer. Send it again; executing
			// again would pop a FIFO or clear a counter twice.
			d.send(m.resp, d.older)
			return
		}
	}
	if windowed(r.Cmd) && (d.window < 2 || r.Seq != d.next) {
		// Out of turn (a request before it was lost or answered BUSY), or
		// no window open (never, or not since a reset): not executed.
		d.busy = appendResponse(d.busy[:0], r.Seq, r.Cmd, statusSequence, nil)
		d.send(d.busy, d.newest())
		return
	}
	if r.Cmd == cmdInfo {
		// INFO opens the window its COUNT asks for (or closes it) and
		// starts afresh: no request of the new session can be taken for a
		// retry of an older one.
		d.window = min(max(int(r.Count), 1), maxWindow)
		d.forget()
	}
	status, words := d.execute(r)
	if gen2, on := d.b.generationPowered(); !on || gen2 != gen {
		// Power went away (or the board was reset) while executing: the
		// answer dies with it.
		return
	}
	if status == statusBusy {
		// Nothing was executed: do not remember it, so that the host's
		// retry (same bytes, same SEQ) is tried again, not answered BUSY
		// forever.
		d.busy = appendResponse(d.busy[:0], r.Seq, r.Cmd, status, nil)
		d.send(d.busy, d.newest())
		return
	}
	// Remember it, forgetting the oldest beyond the window; the newest
	// answer so far becomes the older one. A forgotten answer's storage is
	// reused.
	if n := len(d.mem); n > 0 {
		d.older = append(d.older[:0], d.mem[n-1].resp...)
	}
	var buf []byte
	if len(d.mem) >= d.window {
		buf = d.mem[0].resp
		d.mem = append(d.mem[:0], d.mem[1:]...)
	}
	resp := appendResponse(buf[:0], r.Seq, r.Cmd, status, words)
	d.mem = append(d.mem, remembered{seq: r.Seq, crc: r.CRC, resp: resp})
	d.next = r.Seq + 1
	d.send(resp, d.older)
}

// newest is the last answer remembered (nil when none is).
func (d *bridgeDev) newest() []byte {
	if len(d.mem) == 0 {
		return nil
	}
	return d.mem[len(d.mem)-1].resp
}

// forget drops every remembered request.
func (d *bridgeDev) forget() {
	d.mem = d.mem[:0]
}

// execute runs a request on the board's bus and returns its status and,
// for reads, the words read.
func (d *bridgeDev) execute(r *request) (uint8, []uint32) {
	cmd := plainCmd(r.Cmd)
	switch cmd {
	case cmdInfo:
		// ADDR is ignored; COUNT opened the window (handle). Words 4 and
		// 5 say what the bridge can do and the window now open.
		return statusOK, append(d.words[:0], infoMagic, infoVersion, maxBurst, d.b.DeviceID(), capWindow, uint32(d.window))
	case cmdRead, cmdWrite:
		if r.Count != 1 {
			return statusBadCount, nil
		}
	case cmdReadBurst, cmdWriteBurst:
		if r.Count == 0 || r.Count > maxBurst {
			return statusBadCount, nil
		}
	default:
		return statusBadCmd, nil
	}
	if r.Addr%4 != 0 {
		return statusAlign, nil
	}
	words := d.words[:0]
	for i := range int(r.Count) {
		a := uint64(r.Addr) + 4*uint64(i)
		if a > 0xFFFFFFFF {
			return statusBusError, nil // a burst running off the 32-bit space
		}
		var err error
		if cmd == cmdWrite || cmd == cmdWriteBurst {
			err = d.b.write32(uint32(a), r.word(i))
		} else {
			var v uint32
			v, err = d.b.read32(uint32(a))
			words = append(words, v)
		}
		if err != nil {
			// A burst stops at the first failing word; a READ_BURST then
			// answers no data at all.
			return busStatus(err), nil
		}
	}
	d.words = words
	return statusOK, words
}

// busStatus maps a design's error to a bridge status (docs/uart-bridge.md,
// "Status codes"): BUS_ERROR only for an address nothing decodes (an AXI
// DECERR); any other error a design returns is its register refusing the
// access (an AXI SLVERR: a push into a full FIFO), REFUSED.
func busStatus(err error) uint8 {
	switch {
	case errors.Is(err, ErrBusy):
		return statusBusy
	case errors.Is(err, ErrReadOnly):
		return statusReadOnly
	case errors.Is(err, ErrBusError):
		return statusBusError
	default:
		return statusRefused
	}
}

// send puts a response on the line, through the UART faults. stale is the
// response before it, which uart-stale sends first.
func (d *bridgeDev) send(resp, stale []byte) {
	f := &d.faults
	if f.drop > 0 && d.rng.Float64() < f.drop {
		return
	}
	out := d.out[:0]
	if f.stale > 0 && len(stale) > 0 && d.rng.Float64() < f.stale {
		out = append(out, stale...)
	}
	out = append(out, resp...)
	if f.corrupt > 0 {
		for i := range out {
			if d.rng.Float64() < f.corrupt {
				out[i] ^= 1 << d.rng.IntN(8)
			}
		}
	}
	d.out = out
	if d.txq != nil {
		at := d.tx.send(len(out), time.Now())
		d.txq <- timedFrame{p: append([]byte(nil), out...), at: at}
		return
	}
	d.pt.write(out)
}

// heardChunk is bytes read from the pseudo-terminal and when.
type heardChunk struct {
	p  []byte
	at time.Time
}

// runPaced serves a shaped line (bridge_line.go). A reader stamps what the
// host writes as it comes, so that a request is timed from when the host
// sent it, not from when this goroutine got to it; each request is
// executed once its last byte would have arrived; answers wait in txq for
// the moment the host could read them. Requests the host pipelines overlap
// on the line as on a real one: the latency is paid once per round trip,
// not once per request in flight.
func (d *bridgeDev) runPaced() {
	chunks := make(chan heardChunk, 1024)
	quit := make(chan struct{})
	d.txq = make(chan timedFrame, 1024)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		defer close(quit)
		buf := make([]byte, 4096)
		for {
			n, err := d.pt.read(buf, time.Time{})
			if n > 0 {
				select {
				case chunks <- heardChunk{p: append([]byte(nil), buf[:n]...), at: time.Now()}:
				case <-quit:
				}
			}
			switch {
			case err == nil:
			case errors.Is(err, os.ErrClosed):
				return
			default:
				time.Sleep(20 * time.Millisecond) // EIO or an odd error: pause rather than spin
			}
		}
	}()
	go func() {
		defer wg.Done()
		for f := range d.txq {
			if !sleepUntil(f.at, quit) {
				continue // shut down: drain without writing
			}
			d.pt.write(f.p)
		}
	}()
	defer func() {
		close(d.txq)
		wg.Wait()
	}()

	partial := time.NewTimer(time.Hour)
	partial.Stop()
	defer partial.Stop()
	var last time.Time // when the last byte heard is complete
	for {
		if d.parser.pending() {
			partial.Reset(time.Until(last.Add(partialTimeout)))
		}
		select {
		case c := <-chunks:
			partial.Stop()
			last = d.rx.heard(len(c.p), c.at)
			if d.silent || !d.b.Powered() {
				d.parser.reset()
				d.rx.reset()
				continue
			}
			d.parser.push(c.p)
			if !d.servePaced(quit) {
				return
			}
		case <-partial.C:
			// The line went quiet in the middle of a frame, counted from
			// when its last byte arrived on the wire (see run).
			for d.parser.pending() && time.Since(last) >= partialTimeout {
				d.parser.dropPartial()
				if !d.servePaced(quit) {
					return
				}
			}
		case <-quit:
			return
		}
	}
}

// servePaced handles the requests parsed so far, each once its last byte
// is in. It reports false when the port was shut down meanwhile.
func (d *bridgeDev) servePaced(quit <-chan struct{}) bool {
	var r request
	for d.parser.next(&r) {
		end := d.rx.total - int64(len(d.parser.buf)-d.parser.start)
		if !sleepUntil(d.rx.arrival(end), quit) {
			return false
		}
		d.handle(&r)
	}
	return true
}

// sleepUntil waits until t; false when quit closed first. The line's
// times are tens of microseconds to a few milliseconds, finer than the Go
// runtime's timers when the process is idle (its poller waits whole
// milliseconds): the last stretch of a wait is a nanosleep of this
// goroutine's thread instead, which the kernel ends within tens of
// microseconds. An emulated line that ran late by a millisecond a byte
// string would make the rack slower than the USB-UARTs it stands for.
func sleepUntil(t time.Time, quit <-chan struct{}) bool {
	for {
		select {
		case <-quit:
			return false
		default:
		}
		d := time.Until(t)
		switch {
		case d <= 0:
			return true
		case d > preciseSleep:
			tm := time.NewTimer(d - preciseSleep)
			select {
			case <-tm.C:
			case <-quit:
				tm.Stop()
				return false
			}
		default:
			ts := unix.NsecToTimespec(int64(d))
			unix.Nanosleep(&ts, nil) // EINTR: the loop looks again
		}
	}
}

// preciseSleep is the stretch of a wait slept with nanosleep: the Go
// runtime's timers are late by up to a millisecond when nothing else wakes
// it, and 2 ms keeps a thread blocked at most that long after a shutdown.
const preciseSleep = 2 * time.Millisecond
