package uartbridge

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/labrunner/labrunner/drivers"
)

// The window (docs/uart-bridge.md, "Window"): with a device that opened
// one, up to b.window requests are outstanding at once, so that their
// round trips overlap. The device runs them in SEQ order, each once, and
// answers them in order; this side re-sends what the line lost, in order.

var _ drivers.Batcher = (*Bridge)(nil)

// wreq is one request of a batch.
type wreq struct {
	acc  int // the access of the batch it belongs to
	op   string
	req  Request
	want int      // words an OK answer carries
	dst  []uint32 // where a read's words go

	frame    []byte
	lastTx   int64     // the number of its latest copy on the line (0: none yet)
	sentAt   time.Time // when the latest copy was handed to the writer
	answered bool
	resend   bool // to be sent (again) at the next chance
	err      error

	timeouts int // attempts that ended without an answer (timeouts, BUSY)
	resends  int // copies sent again at once (damaged or lost answers)
}

// txCopy is one copy of a request on the line, in the order sent.
type txCopy struct {
	i  int
	tx int64
}

// single sends one request and waits for its answer: a windowed request
// when a window is open, so that a device that was reset (its window
// closed) answers SEQUENCE instead of running it out of turn; the window is
// then opened again and the request sent anew. The caller holds the lock.
func (b *Bridge) single(ctx context.Context, op string, req Request, want int) ([]uint32, error) {
	if b.window > 1 {
		req.Cmd |= CmdWindowed
	}
	d, err := b.exchange(ctx, op, req, want)
	if errors.Is(err, ErrSequence) {
		if _, err := b.info(ctx, "info (the device's window closed, before "+op+")"); err != nil {
			return nil, err
		}
		req.Cmd = req.Cmd.Plain()
		if b.window > 1 {
			req.Cmd |= CmdWindowed
		}
		b.st.retries.Add(1)
		if d, err = b.exchange(ctx, op, req, want); errors.Is(err, ErrSequence) {
			b.st.failures.Add(1)
			err = drivers.Infra(b.board, op, hintFirmware,
				fmt.Errorf("%w: SEQUENCE right after INFO opened a window", ErrProtocol))
		}
	}
	b.afterFailure(err)
	return d, err
}

// afterFailure starts a new session before the next request when a window
// is open and err leaves it unknown whether the device ran the request:
// its next expected SEQ is then unknown too (docs/uart-bridge.md, "Window").
// An answer with a status (the request ran) keeps the session.
func (b *Bridge) afterFailure(err error) {
	if err == nil || b.window <= 1 {
		return
	}
	var se *StatusError
	if errors.As(err, &se) && se.Status != StatusBusy && se.Status != StatusSequence {
		return
	}
	b.synced = false
}

// Batch runs register accesses in order, up to the device's window at a
// time (one at a time on a device without a window). It returns the first
// failing access's error; accesses sent after it did run.
func (b *Bridge) Batch(ctx context.Context, acc []drivers.Access) error {
	op := fmt.Sprintf("batch of %d accesses", len(acc))
	for _, a := range acc {
		if len(a.Words) == 0 {
			continue
		}
		if err := b.checkRange(op, a.Addr, len(a.Words)); err != nil {
			return err
		}
	}
	unlock, err := b.lock(ctx, op)
	if err != nil {
		return err
	}
	defer unlock()
	if err := b.sync(ctx, op); err != nil {
		return &drivers.BatchError{Index: 0, Err: err}
	}
	var reqs []*wreq
	for i, a := range acc {
		n := len(reqs)
		switch {
		case len(a.Words) == 0:
		case len(a.Words) == 1 && a.Write:
			reqs = append(reqs, &wreq{op: fmt.Sprintf("write32 0x%08x", a.Addr),
				req: Request{Cmd: CmdWrite, Addr: uint32(a.Addr), Count: 1, Data: a.Words}})
		case len(a.Words) == 1:
			reqs = append(reqs, &wreq{op: fmt.Sprintf("read32 0x%08x", a.Addr),
				req: Request{Cmd: CmdRead, Addr: uint32(a.Addr), Count: 1}, want: 1, dst: a.Words})
		case a.Write:
			reqs = b.split(reqs, "write burst", CmdWriteBurst, a.Addr, a.Words)
		default:
			reqs = b.split(reqs, "read burst", CmdReadBurst, a.Addr, a.Words)
		}
		for _, r := range reqs[n:] {
			r.acc = i
		}
	}
	if at, err := b.run(ctx, reqs); err != nil {
		return &drivers.BatchError{Index: reqs[at].acc, Err: err}
	}
	return nil
}

// split appends the requests of a burst: pieces of at most the device's
// largest COUNT, read bursts cut smaller on a line that damages answers
// (lineQuality.readChunk).
func (b *Bridge) split(reqs []*wreq, name string, cmd Cmd, addr uint64, w []uint32) []*wreq {
	op := fmt.Sprintf("%s 0x%08x, %d words", name, addr, len(w))
	chunk := int(b.maxCount.Load())
	if cmd == CmdReadBurst {
		if c := b.line.readChunk(chunk); c < chunk {
			chunk = c
			if len(w) > chunk {
				b.st.split.Add(1)
			}
		}
	}
	for i := 0; i < len(w); {
		n := min(chunk, len(w)-i)
		a := addr + 4*uint64(i)
		r := &wreq{op: op, req: Request{Cmd: cmd, Addr: uint32(a), Count: uint16(n)}}
		if n < len(w) {
			r.op = fmt.Sprintf("%s (words %d..%d at 0x%08x)", op, i, i+n-1, a)
		}
		if cmd == CmdWriteBurst {
			r.req.Data = w[i : i+n]
		} else {
			r.want, r.dst = n, w[i:i+n]
		}
		reqs = append(reqs, r)
		i += n
	}
	return reqs
}

// run sends reqs in order: through the window when one is open, else one
// at a time. The caller holds the lock and the session is synced. On an
// error it also returns the index of the request it is about.
func (b *Bridge) run(ctx context.Context, reqs []*wreq) (int, error) {
	for i, r := range reqs {
		if b.window > 1 && len(reqs)-i > 1 {
			at, err := b.pipeline(ctx, reqs[i:])
			return i + at, err
		}
		d, err := b.single(ctx, r.op, r.req, r.want)
		if err != nil {
			return i, err
		}
		copy(r.dst, d)
	}
	return 0, nil
}

// pipeline runs reqs with up to b.window of them outstanding
// (docs/uart-bridge.md, "Window", "The host's side). On an error it also
// returns the index of the request it is about.
func (b *Bridge) pipeline(ctx context.Context, reqs []*wreq) (int, error) {
	p := &pipe{b: b, ctx: ctx, reqs: reqs, firstErr: -1, at: -1, lastAnswer: time.Now()}
	for _, r := range reqs {
		r.req.Cmd = r.req.Cmd.Plain() | CmdWindowed
	}
	b.flushStale()
	b.st.batches.Add(1)
	err := p.loop()
	b.st.chunk.Store(int64(b.line.readChunk(int(b.maxCount.Load()))))
	if err == nil {
		return 0, nil
	}
	b.st.failures.Add(1)
	b.afterFailure(err)
	at := p.at
	if at < 0 {
		at = min(p.base, len(reqs)-1)
	}
	return at, err
}

// pipe is the state of one pipelined batch.
type pipe struct {
	b    *Bridge
	ctx  context.Context
	reqs []*wreq

	base, next int   // reqs[base] is the oldest unanswered; reqs[next] the first never sent
	tx         int64 // copies sent
	copies     []txCopy
	// doneTx is the newest copy of any request before base (all answered):
	// a copy sent after it reached the device after all of them.
	doneTx     int64
	busyUntil  time.Time
	lastAnswer time.Time
	stop       bool // a request failed: nothing new is sent
	firstErr   int  // index of the first request that failed with a status, or -1
	at         int  // the request an error is about, when not the oldest unanswered (-1)
	reopens    int
	writes     []chan error
}

func (p *pipe) loop() error {
	b := p.b
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		for p.base < p.next && p.reqs[p.base].answered {
			p.doneTx = max(p.doneTx, p.reqs[p.base].lastTx)
			p.base++
		}
		if p.base == len(p.reqs) || (p.stop && p.base == p.next) {
			if p.firstErr >= 0 {
				p.at = p.firstErr
				return p.reqs[p.firstErr].err
			}
			return nil
		}
		if err := p.ctx.Err(); err != nil {
			return b.ctxError(p.reqs[p.base].op, p.reqs[p.base].timeouts+1, nil, err)
		}
		if err := p.send(); err != nil {
			return err
		}
		if err := p.pollWrites(); err != nil {
			return err
		}
		wake, timeout := p.wake()
		timer.Reset(time.Until(wake))
		var wrote chan error
		if len(p.writes) > 0 {
			wrote = p.writes[0]
		}
		select {
		case c := <-b.rx:
			b.st.rx.Add(uint64(len(c)))
			b.dec.Write(c)
			b.drainRx()
		case err := <-wrote:
			p.writes = p.writes[1:]
			if err := b.writeError(p.reqs[p.base].op, err); err != nil {
				return err
			}
		case <-timer.C:
			b.drainRx()
			if timeout {
				if err := p.decode(); err != nil {
					return err
				}
				if !p.reqs[p.base].answered && !p.reqs[p.base].resend {
					for b.dec.Expire() {
					}
					if err := p.decode(); err != nil {
						return err
					}
					if err := p.timedOut(); err != nil {
						return err
					}
				}
				continue
			}
		case <-p.ctx.Done():
			return b.ctxError(p.reqs[p.base].op, p.reqs[p.base].timeouts+1, nil, p.ctx.Err())
		case <-b.rxDone:
			return drivers.Infra(b.board, p.reqs[p.base].op, hintLine, fmt.Errorf("read from the bridge port: %w", b.rxErr))
		case <-b.closed:
			return b.closedError(p.reqs[p.base].op)
		}
		if err := p.decode(); err != nil {
			return err
		}
	}
}

// send hands the writer, in one write, the requests to send again (in
// order) and then new ones while the window has room.
func (p *pipe) send() error {
	b := p.b
	if time.Now().Before(p.busyUntil) {
		return nil
	}
	var out []byte
	now := time.Now()
	add := func(i int) {
		r := p.reqs[i]
		p.tx++
		if r.lastTx > 0 {
			b.st.retries.Add(1)
		}
		r.lastTx, r.sentAt, r.resend = p.tx, now, false
		p.copies = append(p.copies, txCopy{i: i, tx: p.tx})
		out = append(out, r.frame...)
		b.st.attempts.Add(1)
	}
	for i := p.base; i < p.next; i++ {
		if r := p.reqs[i]; r.resend && !r.answered {
			add(i)
		}
	}
	for !p.stop && p.next < len(p.reqs) && p.next-p.base < b.window {
		r := p.reqs[p.next]
		r.req.Seq = b.seq
		b.seq++
		f, err := AppendRequest(nil, r.req)
		if err != nil {
			return drivers.Setup(b.board, r.op, "", err)
		}
		r.frame = f
		b.st.requests.Add(1)
		b.st.pipelined.Add(1)
		add(p.next)
		p.next++
	}
	if len(out) == 0 {
		return nil
	}
	done := make(chan error, 1)
	t := time.NewTimer(b.attemptTimeout(len(out), 0))
	defer t.Stop()
	select {
	case b.tx <- txReq{p: out, done: done}:
		p.writes = append(p.writes, done)
		return nil
	case <-t.C:
		return drivers.Infra(b.board, p.reqs[p.base].op, hintLine, fmt.Errorf("%w: the port did not take %d bytes of requests", drivers.ErrTimeout, len(out)))
	case <-p.ctx.Done():
		return b.ctxError(p.reqs[p.base].op, 1, nil, p.ctx.Err())
	case <-b.closed:
		return b.closedError(p.reqs[p.base].op)
	}
}

// pollWrites collects finished writes without waiting.
func (p *pipe) pollWrites() error {
	for len(p.writes) > 0 {
		select {
		case err := <-p.writes[0]:
			p.writes = p.writes[1:]
			if err := p.b.writeError(p.reqs[p.base].op, err); err != nil {
				return err
			}
		default:
			return nil
		}
	}
	return nil
}

// wake is when to look again: the end of a BUSY pause when something waits
// to be sent, or the oldest unanswered request's deadline (timeout true).
func (p *pipe) wake() (time.Time, bool) {
	b := p.b
	base := p.reqs[p.base]
	pending := false
	for i := p.base; i < p.next; i++ {
		if p.reqs[i].resend && !p.reqs[i].answered {
			pending = true
			break
		}
	}
	if base.resend || base.lastTx == 0 {
		// Not in flight: it waits for the end of a BUSY pause.
		return p.busyUntil, false
	}
	// The answer to the oldest request comes after what is in flight
	// before it: the line time of everything outstanding bounds it.
	var reqBytes, respBytes int
	for i := p.base; i < p.next; i++ {
		reqBytes += len(p.reqs[i].frame)
		respBytes += ResponseLen(p.reqs[i].want)
	}
	line := b.lineTime(reqBytes, respBytes)
	full := b.timeout
	if full <= 0 {
		full = DefaultBaseTimeout + line
	}
	wait := b.attemptWait(full, line, base.timeouts)
	if base.timeouts >= b.attempts-1 {
		if dl, ok := p.ctx.Deadline(); ok {
			wait = max(wait, time.Until(dl))
		}
	}
	from := base.sentAt
	if p.lastAnswer.After(from) {
		from = p.lastAnswer
	}
	at := from.Add(wait)
	if pending && p.busyUntil.After(time.Now()) && p.busyUntil.Before(at) {
		return p.busyUntil, false
	}
	return at, true
}

// timedOut: no answer for the oldest request in time. Everything
// unanswered is sent again, in order; the oldest spent an attempt.
func (p *pipe) timedOut() error {
	b := p.b
	r := p.reqs[p.base]
	r.timeouts++
	b.st.timeouts.Add(1)
	if r.timeouts >= b.attempts {
		return drivers.Infra(b.board, r.op, hintLine,
			fmt.Errorf("no valid answer after %d attempts (%d requests in flight); last problem: %w: nothing came back for SEQ 0x%02x",
				r.timeouts, p.next-p.base, drivers.ErrTimeout, r.req.Seq))
	}
	b.log.Info("uart bridge: retrying", "board", b.board, "op", r.op, "timeouts", r.timeouts,
		"max_attempts", b.attempts, "seq", r.req.Seq, "in_flight", p.next-p.base, "problem", "timeout")
	p.resendFrom(p.base)
	return nil
}

// resendFrom marks every unanswered request from i on to be sent again.
func (p *pipe) resendFrom(i int) {
	for ; i < p.next; i++ {
		if !p.reqs[i].answered {
			p.reqs[i].resend = true
		}
	}
}

// find returns the outstanding request with this SEQ and command, or -1.
func (p *pipe) find(seq uint8, cmd Cmd) int {
	for i := p.base; i < p.next; i++ {
		if r := p.reqs[i]; r.req.Seq == seq && r.req.Cmd == cmd {
			return i
		}
	}
	return -1
}

// decode takes in every frame buffered.
func (p *pipe) decode() error {
	b := p.b
	for {
		resp, err := b.dec.Next()
		b.noteFrame(resp, err)
		if errors.Is(err, ErrNeedMore) {
			b.st.dropped.Store(uint64(b.dec.Dropped()))
			return nil
		}
		var fe *FrameError
		if errors.As(err, &fe) {
			if errors.Is(fe, ErrBadHeader) {
				b.st.badHeaders.Add(1)
				continue
			}
			b.st.crc.Add(1)
			// A damaged answer headed as one of ours: ask for it again now.
			if i := p.find(fe.Seq, Cmd(fe.Cmd&^respBit)); i >= 0 && fe.Cmd&respBit != 0 && !p.reqs[i].answered {
				if err := p.again(i, fmt.Errorf("%w in the answer (%s): corrupted bytes on the line", ErrCRCMismatch, fe)); err != nil {
					return err
				}
			}
			continue
		}
		if err := p.answer(resp); err != nil {
			return err
		}
	}
}

// again marks request i to be sent again at once, within its budget.
func (p *pipe) again(i int, why error) error {
	b := p.b
	r := p.reqs[i]
	if r.resend {
		return nil
	}
	r.resends++
	b.st.resends.Add(1)
	if r.resends > b.resends {
		p.at = i
		return drivers.Infra(b.board, r.op, hintLine,
			fmt.Errorf("%d answers damaged or lost in a row; last problem: %w", r.resends, why))
	}
	r.resend = true
	return nil
}

// answer takes in one valid response.
func (p *pipe) answer(resp Response) error {
	b := p.b
	i := p.find(resp.Seq, resp.Cmd)
	if i < 0 || p.reqs[i].answered {
		b.st.stale.Add(1)
		return nil
	}
	r := p.reqs[i]
	// Answers come in the order the copies reached the device: copies sent
	// before this request's oldest one in flight got none (the answer or
	// the request was lost). Those that were their request's latest copy
	// are sent again.
	k := -1
	for j, c := range p.copies {
		if c.i == i {
			k = j
			break
		}
	}
	var this txCopy
	if k >= 0 {
		this = p.copies[k]
		for _, c := range p.copies[:k] {
			if q := p.reqs[c.i]; !q.answered && !q.resend && c.tx == q.lastTx {
				if err := p.again(c.i, fmt.Errorf("no answer to SEQ 0x%02x, while a later request's came", q.req.Seq)); err != nil {
					return err
				}
			}
		}
		p.copies = p.copies[k+1:]
	}
	latest := k < 0 || this.tx == r.lastTx
	switch resp.Status {
	case StatusBusy:
		b.st.busy.Add(1)
		if !latest {
			return nil // its newer copy is still on its way
		}
		r.timeouts++
		if r.timeouts >= b.attempts {
			p.at = i
			return statusError(b.board, r.op+fmt.Sprintf(" (%d attempts)", r.timeouts), StatusBusy)
		}
		// Not run, nor anything after it: pause, then send again from it.
		p.busyUntil = time.Now().Add(b.busyPause)
		p.resendFrom(i)
		return nil
	case StatusSequence:
		if !latest {
			return nil
		}
		if i == p.base && k >= 0 && this.tx > p.doneTx {
			// Sent after every request before it had run, yet out of
			// turn: the device's window closed (a reset).
			return p.reopen()
		}
		// One before it did not run: send again, in order, from there.
		p.resendFrom(p.base)
		return nil
	}
	r.answered = true
	p.lastAnswer = time.Now()
	if resp.Status != StatusOK {
		r.err = statusError(b.board, r.op, resp.Status)
		p.stop = true
		if p.firstErr < 0 || i < p.firstErr {
			p.firstErr = i
		}
		return nil
	}
	if len(resp.Data) != r.want {
		p.at = i
		return drivers.Infra(b.board, r.op, hintFirmware,
			fmt.Errorf("%w: %v answered with %d words, want %d", ErrProtocol, r.req.Cmd, len(resp.Data), r.want))
	}
	copy(r.dst, resp.Data)
	return nil
}

// reopen opens the device's window again with INFO (it closed: the device
// was reset) and sends the unanswered requests again under new SEQs.
func (p *pipe) reopen() error {
	b := p.b
	r := p.reqs[p.base]
	p.reopens++
	if p.reopens > 2 {
		return drivers.Infra(b.board, r.op, hintFirmware,
			fmt.Errorf("%w: SEQUENCE to the next request in turn, again after INFO opened a window", ErrProtocol))
	}
	b.log.Info("uart bridge: the device's window closed; opening it again", "board", b.board, "op", r.op)
	if _, err := b.info(p.ctx, "info (the device's window closed, before "+r.op+")"); err != nil {
		return err
	}
	if b.window <= 1 {
		// No window any more (another device on the port?): the rest one
		// at a time.
		for i := p.base; i < len(p.reqs); i++ {
			q := p.reqs[i]
			if q.answered {
				continue
			}
			q.req.Cmd = q.req.Cmd.Plain()
			d, err := b.single(p.ctx, q.op, q.req, q.want)
			if err != nil {
				p.at = i
				return err
			}
			copy(q.dst, d)
			q.answered = true
		}
		p.base, p.next = len(p.reqs), len(p.reqs)
		return nil
	}
	for i := p.base; i < p.next; i++ {
		q := p.reqs[i]
		if q.answered {
			continue
		}
		q.req.Seq = b.seq
		b.seq++
		f, err := AppendRequest(nil, q.req)
		if err != nil {
			return drivers.Setup(b.board, q.op, "", err)
		}
		q.frame, q.resend, q.lastTx = f, true, 0
		b.st.retries.Add(1) // send counts only copies after the first as retries, and lastTx is 0 again
	}
	p.copies, p.doneTx = nil, p.tx
	return nil
}
