package emu

import (
	"errors"
	"math/rand/v2"
	"os"
	"sync"
	"time"
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

	// The last request executed (SEQ, CRC and the board generation it ran
	// in) and the response it got, replayed when the host retries it; and
	// the response before that, which uart-stale sends as an old answer.
	have    bool
	lastSeq uint8
	lastCRC uint16
	lastGen int
	last    []byte
	older   []byte

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

// handle answers one request with a good CRC.
func (d *bridgeDev) handle(r *request) {
	gen, powered := d.b.generationPowered()
	if !powered {
		return
	}
	if d.have && d.lastGen == gen && d.lastSeq == r.Seq && d.lastCRC == r.CRC {
		// A retry: the host lost our answer. Send it again; executing
		// again would pop a FIFO or clear a counter twice.
		d.send(d.last, d.older)
		return
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
		d.send(d.busy, d.last)
		return
	}
	// Rotate: the remembered response becomes the older one, and the new
	// one is encoded into the storage of the one before.
	resp := appendResponse(d.older[:0], r.Seq, r.Cmd, status, words)
	d.older, d.last = d.last, resp
	d.have, d.lastSeq, d.lastCRC, d.lastGen = true, r.Seq, r.CRC, gen
	d.send(d.last, d.older)
}

// execute runs a request on the board's bus and returns its status and,
// for reads, the words read.
func (d *bridgeDev) execute(r *request) (uint8, []uint32) {
	switch r.Cmd {
	case cmdInfo:
		// ADDR and COUNT are ignored by INFO.
		return statusOK, append(d.words[:0], infoMagic, infoVersion, maxBurst, d.b.DeviceID())
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
		if r.Cmd == cmdWrite || r.Cmd == cmdWriteBurst {
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

// sleepUntil waits until t; false when quit closed first.
func sleepUntil(t time.Time, quit <-chan struct{}) bool {
	d := time.Until(t)
	if d <= 0 {
		select {
		case <-quit:
			return false
		default:
			return true
		}
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-quit:
		return false
	}
}
