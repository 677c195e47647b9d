// Package uartbridge is the host side of the UART debug bridge: 32-bit
// register access to a board's programmable logic over a serial line, with
// sequence numbers, CRC, deadlines and bounded retries. The wire format is
// docs/uart-bridge.md (version 1); this package also holds the frame codec
// (both directions), so a device, an emulator or a test can build a peer.
package uartbridge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tarm/serial"

	"github.com/labrunner/labrunner/drivers"
)

// Defaults (docs/uart-bridge.md, "Line settings" and "Sequence numbers,
// retries and stale responses").
const (
	DefaultBaud = 921600
	// DefaultMaxAttempts bounds the attempts of a request that end without
	// a valid answer (1 + 7 retries): a line that loses one answer in ten
	// then fails a request once in 10^8.
	DefaultMaxAttempts = 8
	// DefaultMaxResends bounds, per request, the re-requests made at once
	// because an answer headed as ours arrived damaged. Each costs one
	// more exchange of line time, not a deadline.
	DefaultMaxResends = 32
	// DefaultBaseTimeout is added to a request's line time to give its
	// per-attempt deadline before the bridge has timed any answer, and the
	// longest it ever waits for one.
	DefaultBaseTimeout = 200 * time.Millisecond
	// DefaultMinTimeout is the shortest turnaround (beyond line time) the
	// adaptive per-attempt deadline allows. A USB-UART's latency timer
	// (1 to 16 ms) shows in the measured turnaround itself; the floor only
	// keeps a loaded host's scheduling stalls from making every answer
	// late. A retry that was not needed costs a duplicate answer, which
	// is discarded (and counted as Late).
	DefaultMinTimeout = 5 * time.Millisecond
	// garbledQuiet is the quiet spell after an answer's worth of bytes
	// that made no frame, before the request is sent again.
	garbledQuiet = 500 * time.Microsecond
	// damageTarget is the share of damaged answers read bursts are sized
	// for on a line that damages them: at 0.4, a noisy line's bursts are
	// cut to the size that moves the most words per exchange while the
	// resend budget (32) is never run out (0.4^33 ~ 1e-13 per request).
	damageTarget = 0.4
	// DefaultBusyPause is the pause before re-sending a request the device
	// answered BUSY.
	DefaultBusyPause = 100 * time.Millisecond
	// DefaultWindow is the window asked for at the start of a session
	// (docs/uart-bridge.md, "Window"): at 921600 baud a one-word READ's
	// answer takes 141 µs on the line, so 16 in flight cover a USB-UART's
	// round trip of about 1.3 ms with its latency timer at 1 ms.
	DefaultWindow = 16
	// maxWindow is the largest window the protocol allows: the SEQs in
	// flight must never wrap onto one another.
	maxWindow = 128

	// portReadTimeout bounds each read of a tarm/serial port, so that Close
	// never waits on a blocked read (docs/architecture.md, known behaviour of
	// tarm/serial). Deadlines are kept above it, not by it.
	portReadTimeout = 100 * time.Millisecond
	bitsPerByte     = 10 // start + 8 data + stop
	rxQueue         = 64 // chunks buffered between the reader and a request
)

// Options configure a Bridge. The zero value gives the protocol's defaults.
type Options struct {
	// Board names the board in errors and log lines.
	Board string
	// Timeout is the longest per-attempt deadline: the first requests'
	// (before any answer was timed), the last attempt's, and the ceiling
	// of the adaptive one. Zero: DefaultBaseTimeout plus the request's and
	// response's line time at Baud plus the transmit pacing.
	Timeout time.Duration
	// MinTimeout is the floor of the adaptive per-attempt deadline (added
	// to the line time): once answers have been timed, an attempt waits
	// the smoothed turnaround plus four times its deviation, at least
	// this, at most Timeout, doubling with each timeout of a request.
	// Zero: DefaultMinTimeout. At or above Timeout: every attempt waits
	// Timeout.
	MinTimeout time.Duration
	// MaxAttempts bounds the attempts that end without a valid answer
	// (timeouts, BUSY). Zero: DefaultMaxAttempts.
	MaxAttempts int
	// MaxResends bounds the immediate re-requests after damaged answers.
	// Zero: DefaultMaxResends.
	MaxResends int
	// Pacing is a pause after each transmitted byte, for USB-UARTs that
	// lose bytes at speed. Keep it well under the device's 100 ms
	// inter-byte timeout. Zero: no pacing.
	Pacing time.Duration
	// BusyPause is the pause before retrying after BUSY. Zero: DefaultBusyPause.
	BusyPause time.Duration
	// Window is the number of requests to have outstanding at once when
	// the device offers a window (docs/uart-bridge.md, "Window"). Zero:
	// DefaultWindow; 1: one at a time, whatever the device offers.
	Window int
	// Baud is the line rate, used for the default timeout. Open sets it
	// from its argument; with New, zero means DefaultBaud.
	Baud int
	// Logger receives a line per retry. Nil: slog.Default().
	Logger *slog.Logger
}

// Stats are a Bridge's counters since it was opened. Health checks and
// reports read them with Bridge.Stats.
type Stats struct {
	Requests uint64 // requests issued, each counted once however often it was sent
	Attempts uint64 // request frames transmitted
	Retries  uint64 // attempts after the first of a request
	// Resends counts the retries made at once for a damaged answer (a
	// subset of Retries).
	Resends   uint64
	Failures  uint64 // requests that ended in an error
	Timeouts  uint64 // attempts that saw no valid answer before their deadline
	CRCErrors uint64 // received frames that failed their CRC
	// BadHeaders counts sync pairs whose fixed part failed its check.
	BadHeaders uint64
	Stale      uint64 // valid responses discarded for a wrong SEQ or CMD
	// Late counts requests retried needlessly: a second copy of the answer
	// came, so the first was slow, not lost (a subset of the requests
	// behind Retries; their duplicates are among Stale).
	Late uint64
	Busy uint64 // BUSY answers
	// DroppedBytes counts received bytes discarded while resynchronising.
	DroppedBytes uint64
	TxBytes      uint64 // bytes transmitted
	RxBytes      uint64 // bytes received
	// SplitBursts counts read bursts sent in smaller pieces than the
	// device accepts because the line damaged answers (see ReadChunk).
	SplitBursts uint64
	// Turnaround is the smoothed time from a request to its answer beyond
	// line time, and Timeout the per-attempt deadline it gives a one-word
	// read now (0 before any answer was timed).
	Turnaround time.Duration
	Timeout    time.Duration
	// ReadChunk is the largest read burst sent in one request now.
	ReadChunk int
	// Window is the number of requests the device lets the host have
	// outstanding now (docs/uart-bridge.md, "Window"): 1 without one.
	Window int
	// Batches counts the runs of requests sent through the window, and
	// Pipelined the requests among Requests they held: the host waited
	// for Requests - Pipelined + Batches round trips, not Requests.
	Batches, Pipelined uint64
}

// DeviceInfo is the answer to INFO.
type DeviceInfo struct {
	Version  uint32 // protocol version, 1
	MaxCount uint32 // largest COUNT the device accepts
	DeviceID uint32 // fixed per board
	// Caps are the device's optional capabilities (INFO word 4; 0 from a
	// device that answers 4 words), and Window the window it opened: the
	// requests the host may have outstanding (1: none open).
	Caps   uint32
	Window int
}

// Bridge is the host side of one board's UART bridge. It implements
// drivers.RegisterBus. Methods are safe for concurrent use; requests are
// serialised (at most one outstanding, as the protocol requires).
type Bridge struct {
	rw         io.ReadWriteCloser
	board      string
	log        *slog.Logger
	baud       int
	pacing     time.Duration
	timeout    time.Duration // longest per-attempt timeout, or 0 for computed
	minTimeout time.Duration
	attempts   int
	resends    int
	busyPause  time.Duration
	wantWindow int

	sem       chan struct{} // holds a token while a request is outstanding
	closed    chan struct{}
	closeOnce sync.Once
	closeErr  error

	rx     chan []byte
	rxDone chan struct{} // closed when the reader stops on an error
	rxErr  error         // written before rxDone is closed
	tx     chan txReq

	// Owned by the holder of sem.
	dec    *ResponseDecoder
	seq    uint8
	synced bool
	window int        // requests that may be outstanding: 1 until a device opened more
	est    turnaround // answer times, for the adaptive deadline
	line   lineQuality
	// lineFree is when the device will have read, and answered, every
	// copy handed to the writer so far, at line rate: a retry's second
	// copy of a long request keeps the device's receiver busy ahead of the
	// next request, whose deadline must allow for it (else its answer
	// misses the deadline too, and one needless retry starts a chain).
	lineFree time.Time
	// retried is the SEQ and command of the last request answered after a
	// retry: a second copy of its answer shows that the first was late,
	// not lost (counted once in Late).
	retried    bool
	retriedSeq uint8
	retriedCmd Cmd

	maxCount atomic.Int32
	st       struct {
		requests, attempts, retries, resends, failures, timeouts, crc, badHeaders,
		stale, busy, dropped, tx, rx, split, late, batches, pipelined atomic.Uint64
		srtt, rto, chunk, window atomic.Int64
	}
}

type txReq struct {
	p    []byte
	done chan error // buffered: the writer never blocks on it
}

var _ drivers.RegisterBus = (*Bridge)(nil)

// Open opens the serial port at path (a USB-UART, or a pseudo-terminal of
// the emulated rack) at baud, 8N1, and returns a Bridge on it.
func Open(path string, baud int, opts Options) (*Bridge, error) {
	op := fmt.Sprintf("open bridge port %s at %d baud", path, baud)
	if baud <= 0 {
		return nil, drivers.Setup(opts.Board, op, "set bus.uart_bridge.baud in the lab file", errors.New("baud rate must be positive"))
	}
	p, err := serial.OpenPort(&serial.Config{
		Name: path, Baud: baud, ReadTimeout: portReadTimeout,
		Size: 8, Parity: serial.ParityNone, StopBits: serial.Stop1,
	})
	if err != nil {
		// tarm/serial reports a rate termios lacks with this exact text.
		if err.Error() == "Unrecognized baud rate" {
			return nil, drivers.Setup(opts.Board, op, "use a standard rate (e.g. 115200, 921600) in the lab file", err)
		}
		return nil, drivers.Infra(opts.Board, op, "check the lab file's bridge port and that the USB-UART is plugged in and not in use", err)
	}
	opts.Baud = baud
	return New(tarmPort{p}, opts), nil
}

// tarmPort turns tarm/serial's read timeout, (0, io.EOF), into (0, nil):
// on a serial line no data for a while is not the end of the stream.
type tarmPort struct{ *serial.Port }

func (p tarmPort) Read(b []byte) (int, error) {
	n, err := p.Port.Read(b)
	if n == 0 && err == io.EOF {
		return 0, nil
	}
	return n, err
}

// New returns a Bridge over rw, which must deliver bytes unchanged both ways
// (a raw serial line). A read error, io.EOF included, ends reception: wrap
// sources whose EOF means "no data yet" as Open does. Close closes rw.
func New(rw io.ReadWriteCloser, opts Options) *Bridge {
	b := &Bridge{
		rw:         rw,
		board:      opts.Board,
		log:        opts.Logger,
		baud:       opts.Baud,
		pacing:     opts.Pacing,
		timeout:    opts.Timeout,
		minTimeout: opts.MinTimeout,
		attempts:   opts.MaxAttempts,
		resends:    opts.MaxResends,
		busyPause:  opts.BusyPause,
		wantWindow: opts.Window,
		window:     1,
		sem:        make(chan struct{}, 1),
		closed:     make(chan struct{}),
		rx:         make(chan []byte, rxQueue),
		rxDone:     make(chan struct{}),
		tx:         make(chan txReq),
		dec:        NewResponseDecoder(),
		// A random first SEQ makes a match with the last request of an
		// earlier session unlikely; the INFO that starts every session
		// (see sync) rules it out.
		seq: uint8(rand.Uint32()),
	}
	if b.log == nil {
		b.log = slog.Default()
	}
	if b.baud <= 0 {
		b.baud = DefaultBaud
	}
	if b.attempts <= 0 {
		b.attempts = DefaultMaxAttempts
	}
	if b.resends <= 0 {
		b.resends = DefaultMaxResends
	}
	if b.minTimeout <= 0 {
		b.minTimeout = DefaultMinTimeout
	}
	if b.busyPause <= 0 {
		b.busyPause = DefaultBusyPause
	}
	if b.wantWindow <= 0 {
		b.wantWindow = DefaultWindow
	}
	b.wantWindow = min(b.wantWindow, maxWindow)
	b.maxCount.Store(MaxCount)
	b.st.chunk.Store(MaxCount)
	go b.readLoop()
	go b.writeLoop()
	return b
}

// Close closes the port. Requests in progress fail with ErrClosed.
func (b *Bridge) Close() error {
	b.closeOnce.Do(func() {
		close(b.closed)
		if err := b.rw.Close(); err != nil {
			b.closeErr = drivers.Infra(b.board, "close bridge port", "", err)
		}
	})
	return b.closeErr
}

// Stats returns a snapshot of the counters.
func (b *Bridge) Stats() Stats {
	return Stats{
		Requests: b.st.requests.Load(), Attempts: b.st.attempts.Load(),
		Retries: b.st.retries.Load(), Failures: b.st.failures.Load(),
		Timeouts: b.st.timeouts.Load(), CRCErrors: b.st.crc.Load(),
		BadHeaders: b.st.badHeaders.Load(), Stale: b.st.stale.Load(),
		Busy: b.st.busy.Load(), DroppedBytes: b.st.dropped.Load(),
		TxBytes: b.st.tx.Load(), RxBytes: b.st.rx.Load(),
		Resends: b.st.resends.Load(), SplitBursts: b.st.split.Load(), Late: b.st.late.Load(),
		Turnaround: time.Duration(b.st.srtt.Load()), Timeout: time.Duration(b.st.rto.Load()),
		ReadChunk: int(b.st.chunk.Load()), Window: int(b.st.window.Load()),
		Batches: b.st.batches.Load(), Pipelined: b.st.pipelined.Load(),
	}
}

func (b *Bridge) readLoop() {
	buf := make([]byte, 4096)
	for {
		n, err := b.rw.Read(buf)
		if n > 0 {
			chunk := append([]byte(nil), buf[:n]...)
			select {
			case b.rx <- chunk:
			case <-b.closed:
				return
			}
		}
		if err != nil {
			b.rxErr = err
			close(b.rxDone)
			return
		}
	}
}

// writeLoop transmits frames in order. Writes run here, not in the caller,
// so a request can give up at its deadline even if the port blocks; a later
// frame queues behind an unfinished one instead of interleaving with it.
func (b *Bridge) writeLoop() {
	for {
		select {
		case r := <-b.tx:
			r.done <- b.transmit(r.p)
		case <-b.closed:
			return
		}
	}
}

func (b *Bridge) transmit(p []byte) error {
	if b.pacing <= 0 {
		// Counted before writing: the answer may be in before Write returns.
		b.st.tx.Add(uint64(len(p)))
		n, err := b.rw.Write(p)
		if n < len(p) {
			b.st.tx.Add(-uint64(len(p) - n)) // adding the two's complement subtracts
		}
		return err
	}
	t := time.NewTimer(0)
	defer t.Stop()
	<-t.C
	for i := range p {
		b.st.tx.Add(1)
		n, err := b.rw.Write(p[i : i+1])
		if n < 1 {
			b.st.tx.Add(^uint64(0)) // -1
		}
		if err != nil {
			return err
		}
		t.Reset(b.pacing)
		select {
		case <-t.C:
		case <-b.closed:
			return ErrClosed
		}
	}
	return nil
}

// attemptTimeout is the longest per-attempt deadline for a request of
// reqLen bytes expecting respLen bytes back.
func (b *Bridge) attemptTimeout(reqLen, respLen int) time.Duration {
	if b.timeout > 0 {
		return b.timeout
	}
	return DefaultBaseTimeout + b.lineTime(reqLen, respLen)
}

// lineTime is how long a request and its answer take on the line, transmit
// pacing included.
func (b *Bridge) lineTime(reqLen, respLen int) time.Duration {
	line := time.Duration(reqLen+respLen) * bitsPerByte * time.Second / time.Duration(b.baud)
	return line + time.Duration(reqLen)*b.pacing
}

// attemptWait is the deadline of an attempt after `timeouts` attempts of
// the same request timed out: the adaptive one (the smoothed turnaround
// plus four deviations, at least minTimeout, plus line time), doubled per
// timeout, never above full; the last attempt allowed waits full (see
// exchange: or the caller's whole deadline), so that a request the device
// is slow to execute is still answered.
func (b *Bridge) attemptWait(full, line time.Duration, timeouts int) time.Duration {
	if !b.est.have || b.minTimeout >= full || timeouts >= b.attempts-1 {
		return full
	}
	w := max(b.est.rto(), b.minTimeout) + line
	for i := 0; i < timeouts && w < full; i++ {
		w *= 2
	}
	return min(w, full)
}

// turnaround is the smoothed answer time beyond line time and its mean
// deviation, estimated as TCP's retransmission timer is (RFC 6298, α = 1/8,
// β = 1/4) from requests answered at their first attempt only: the answer
// to a retried request may be the first copy's or the retry's (Karn).
type turnaround struct {
	have         bool
	srtt, rttvar time.Duration
}

func (t *turnaround) sample(r time.Duration) {
	r = max(r, 0)
	if !t.have {
		t.have, t.srtt, t.rttvar = true, r, r/2
		return
	}
	d := t.srtt - r
	if d < 0 {
		d = -d
	}
	t.rttvar += (d - t.rttvar) / 4
	t.srtt += (r - t.srtt) / 8
}

func (t *turnaround) rto() time.Duration { return t.srtt + 4*t.rttvar }

// lineQuality estimates how often the line damages an answer per byte
// received: damaged frames over bytes of frames, both decaying by 1/64 per
// frame, so that a line that heals is trusted again after a few hundred
// answers.
type lineQuality struct {
	damaged, bytes float64
}

func (q *lineQuality) frame(n int, damaged bool) {
	const keep = 1 - 1.0/64
	q.damaged *= keep
	q.bytes = q.bytes*keep + float64(n)
	if damaged {
		q.damaged++
	}
}

// readChunk is the largest read burst worth sending in one request on this
// line: one whose answer is damaged at most about damageTarget of the time
// (an answer of L bytes arrives whole with probability (1-p)^L ~ e^(-pL)).
// A burst split by the host is as safe as the device's own (a FIFO window
// pops one entry per word either way) and each piece is retried whole.
func (q *lineQuality) readChunk(limit int) int {
	if q.damaged < 1 || q.bytes <= 0 {
		return limit
	}
	perByte := q.damaged / q.bytes
	n := int((-math.Log(1-damageTarget)/perByte - float64(ResponseLen(0))) / 4)
	return min(max(n, 1), limit)
}

// lock takes the bridge for one operation, honouring ctx.
func (b *Bridge) lock(ctx context.Context, op string) (func(), error) {
	if err := ctx.Err(); err != nil {
		return nil, b.ctxError(op, 0, nil, err)
	}
	select {
	case b.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, b.ctxError(op, 0, nil, ctx.Err())
	case <-b.closed:
		return nil, b.closedError(op)
	}
	select {
	case <-b.closed:
		<-b.sem
		return nil, b.closedError(op)
	default:
	}
	return func() { <-b.sem }, nil
}

func (b *Bridge) closedError(op string) error {
	return drivers.Infra(b.board, op, "", ErrClosed)
}

func (b *Bridge) ctxError(op string, attempts int, last, err error) error {
	hint := hintLine
	if errors.Is(err, context.Canceled) {
		hint = ""
	}
	if attempts == 0 {
		return drivers.Infra(b.board, op, hint, fmt.Errorf("not attempted: %w", err))
	}
	if last == nil {
		return drivers.Infra(b.board, op, hint, fmt.Errorf("gave up during attempt %d: %w", attempts, err))
	}
	return drivers.Infra(b.board, op, hint, fmt.Errorf("gave up during attempt %d: %w (last problem: %v)", attempts, err, last))
}

// Info sends INFO and checks the answer (magic, protocol version).
func (b *Bridge) Info(ctx context.Context) (DeviceInfo, error) {
	unlock, err := b.lock(ctx, "info")
	if err != nil {
		return DeviceInfo{}, err
	}
	defer unlock()
	return b.info(ctx, "info")
}

func (b *Bridge) info(ctx context.Context, op string) (DeviceInfo, error) {
	// COUNT asks for a window; a device without one ignores it, and any
	// INFO closes (or reopens) the window a device had open.
	req := Request{Cmd: CmdInfo}
	if b.wantWindow > 1 {
		req.Count = uint16(b.wantWindow)
	}
	b.window = 1
	d, err := b.exchange(ctx, op, req, 4)
	if err != nil {
		return DeviceInfo{}, err
	}
	if d[0] != InfoMagic {
		return DeviceInfo{}, drivers.Infra(b.board, op, "is this port the board's bridge UART, not its console?",
			fmt.Errorf("%w: INFO magic 0x%08x, want 0x%08x (\"LBRB\")", ErrProtocol, d[0], InfoMagic))
	}
	info := DeviceInfo{Version: d[1], MaxCount: d[2], DeviceID: d[3], Window: 1}
	if len(d) >= 6 {
		info.Caps = d[4]
		if info.Caps&CapWindow != 0 && d[5] >= 1 {
			info.Window = int(min(d[5], uint32(maxWindow)))
		}
	}
	if info.Version != ProtocolVersion {
		return info, drivers.Infra(b.board, op, "bridge firmware and labrunner must agree on the protocol version",
			fmt.Errorf("%w: device speaks protocol version %d, labrunner speaks %d", ErrProtocol, info.Version, ProtocolVersion))
	}
	if info.MaxCount == 0 {
		return info, drivers.Infra(b.board, op, hintFirmware, fmt.Errorf("%w: device accepts COUNT up to 0", ErrProtocol))
	}
	if info.Window > b.wantWindow && b.wantWindow > 1 {
		// A device must not open more than was asked for.
		return info, drivers.Infra(b.board, op, hintFirmware,
			fmt.Errorf("%w: INFO opened a window of %d requests, %d were asked for", ErrProtocol, info.Window, b.wantWindow))
	}
	if b.wantWindow > 1 {
		b.window = info.Window
	}
	b.st.window.Store(int64(b.window))
	b.maxCount.Store(int32(min(info.MaxCount, MaxCount)))
	b.synced = true
	return info, nil
}

// sync starts a session with INFO before the first other request. The
// device replays its remembered answer to a request with the SEQ and CRC of
// the last one it executed, possibly from an earlier session; INFO has no
// side effect, so a replayed INFO is harmless, and once it is the device's
// last request no request of this session can be mistaken for a retry.
func (b *Bridge) sync(ctx context.Context, op string) error {
	if b.synced {
		return nil
	}
	_, err := b.info(ctx, "info (session start, before "+op+")")
	return err
}

// checkRange refuses unaligned addresses and ranges beyond 32 bits.
func (b *Bridge) checkRange(op string, addr uint64, words int) error {
	if err := drivers.CheckAligned(addr); err != nil {
		return drivers.Setup(b.board, op, "register addresses are multiples of 4", err)
	}
	if end := addr + 4*uint64(words); end > 1<<32 || end < addr {
		return drivers.Setup(b.board, op, "the UART bridge reaches a 32-bit address space; check the register map",
			fmt.Errorf("%d words at 0x%x reach beyond 0xffffffff", words, addr))
	}
	return nil
}

// Read32 reads one register.
func (b *Bridge) Read32(ctx context.Context, addr uint64) (uint32, error) {
	op := fmt.Sprintf("read32 0x%08x", addr)
	if err := b.checkRange(op, addr, 1); err != nil {
		return 0, err
	}
	unlock, err := b.lock(ctx, op)
	if err != nil {
		return 0, err
	}
	defer unlock()
	if err := b.sync(ctx, op); err != nil {
		return 0, err
	}
	d, err := b.single(ctx, op, Request{Cmd: CmdRead, Addr: uint32(addr), Count: 1}, 1)
	if err != nil {
		return 0, err
	}
	return d[0], nil
}

// Write32 writes one register.
func (b *Bridge) Write32(ctx context.Context, addr uint64, v uint32) error {
	op := fmt.Sprintf("write32 0x%08x", addr)
	if err := b.checkRange(op, addr, 1); err != nil {
		return err
	}
	unlock, err := b.lock(ctx, op)
	if err != nil {
		return err
	}
	defer unlock()
	if err := b.sync(ctx, op); err != nil {
		return err
	}
	_, err = b.single(ctx, op, Request{Cmd: CmdWrite, Addr: uint32(addr), Count: 1, Data: []uint32{v}}, 0)
	return err
}

// ReadBurst reads len(dst) consecutive words from addr, in requests of at
// most 256 words (or the device's INFO limit, if lower).
func (b *Bridge) ReadBurst(ctx context.Context, addr uint64, dst []uint32) error {
	return b.burst(ctx, "read burst", CmdReadBurst, addr, dst)
}

// WriteBurst writes src to consecutive words from addr, split like ReadBurst.
func (b *Bridge) WriteBurst(ctx context.Context, addr uint64, src []uint32) error {
	return b.burst(ctx, "write burst", CmdWriteBurst, addr, src)
}

func (b *Bridge) burst(ctx context.Context, name string, cmd Cmd, addr uint64, w []uint32) error {
	op := fmt.Sprintf("%s 0x%08x, %d words", name, addr, len(w))
	if len(w) == 0 {
		return nil
	}
	if err := b.checkRange(op, addr, len(w)); err != nil {
		return err
	}
	unlock, err := b.lock(ctx, op)
	if err != nil {
		return err
	}
	defer unlock()
	if err := b.sync(ctx, op); err != nil {
		return err
	}
	if b.window > 1 && len(w) > int(b.maxCount.Load()) {
		// Several requests: through the window.
		_, err := b.run(ctx, b.split(nil, name, cmd, addr, w))
		return err
	}
	for i := 0; i < len(w); {
		chunk := int(b.maxCount.Load())
		if cmd == CmdReadBurst {
			if c := b.line.readChunk(chunk); c < chunk {
				chunk = c
				if i == 0 && len(w) > chunk {
					b.st.split.Add(1)
				}
			}
		}
		n := min(chunk, len(w)-i)
		a := addr + 4*uint64(i)
		cop := op
		if n < len(w) {
			cop = fmt.Sprintf("%s (words %d..%d at 0x%08x)", op, i, i+n-1, a)
		}
		req := Request{Cmd: cmd, Addr: uint32(a), Count: uint16(n)}
		want := n
		if cmd == CmdWriteBurst {
			req.Data = w[i : i+n]
			want = 0
		}
		d, err := b.single(ctx, cop, req, want)
		if err != nil {
			return err
		}
		copy(w[i:i+n], d) // reads only: d is empty for writes
		i += n
	}
	return nil
}

// retryable marks an attempt's failure that another attempt may cure;
// resend marks a damaged answer to our request, re-requested at once.
type retryable struct {
	error
	resend bool
}

// exchange sends req (with the next SEQ) until a valid answer arrives or
// the attempts run out, and returns the answer's data. The caller holds
// the lock. want is the number of words an OK answer carries.
//
// Two budgets bound a request: attempts that end without a valid answer
// (a timeout, BUSY) and immediate resends after a damaged answer. Each
// attempt waits the adaptive deadline (attemptWait), the last one the full
// timeout; the caller's context bounds the whole.
func (b *Bridge) exchange(ctx context.Context, op string, req Request, want int) ([]uint32, error) {
	req.Seq = b.seq
	b.seq++
	frame, err := AppendRequest(nil, req)
	if err != nil {
		return nil, drivers.Setup(b.board, op, "", err)
	}
	b.st.requests.Add(1)
	b.flushStale()
	full := b.attemptTimeout(len(frame), ResponseLen(want))
	line := b.lineTime(len(frame), ResponseLen(want))
	var (
		last     error
		inflight chan error    // the transmission not yet completed, if any
		attempt  int           // transmissions
		timeouts int           // attempts that ended without a valid answer
		resends  int           // immediate re-requests after a damaged answer
		sent     time.Time     // when the first copy was handed to the writer
		ahead    time.Duration // the line time queued ahead of the first copy
	)
	for timeouts < b.attempts {
		if err := ctx.Err(); err != nil {
			b.st.failures.Add(1)
			return nil, b.ctxError(op, attempt, last, err)
		}
		attempt++
		if attempt > 1 {
			b.st.retries.Add(1)
			// Info, not Warn: a retry that succeeds is the protocol doing
			// its job (the run's measurements count them); a request that
			// fails is reported as an error.
			b.log.Info("uart bridge: retrying", "board", b.board, "op", op,
				"attempt", attempt, "timeouts", timeouts, "max_attempts", b.attempts, "seq", req.Seq, "problem", last.Error())
		}
		wait := b.attemptWait(full, line, timeouts)
		if timeouts == b.attempts-1 {
			// The last attempt: an answer that comes before the caller
			// gives up is still good (a device executing something slow).
			if dl, ok := ctx.Deadline(); ok {
				wait = max(wait, time.Until(dl))
			}
		}
		// A retry re-sends the identical bytes, same SEQ. If the previous
		// copy is still being written, it is the retry.
		if err := b.pollWrite(op, &inflight); err != nil {
			b.st.failures.Add(1)
			return nil, err
		}
		if inflight == nil {
			// The copies still ahead of this one on the line (a retry
			// of the previous request, its duplicate answer) delay its
			// answer by their line time: the attempt's deadline grows
			// by as much.
			now := time.Now()
			backlog := max(b.lineFree.Sub(now), 0)
			b.lineFree = now.Add(backlog + line)
			wait += backlog
			if err := b.queue(ctx, frame, wait, &inflight); err != nil {
				var r retryable
				if errors.As(err, &r) {
					last = r.error
					timeouts++
					continue
				}
				b.st.failures.Add(1)
				if errors.Is(err, ErrClosed) {
					return nil, b.closedError(op)
				}
				return nil, b.ctxError(op, attempt, last, err)
			}
			if attempt == 1 {
				sent, ahead = time.Now(), backlog
			}
		}
		b.st.rto.Store(int64(b.attemptWait(b.attemptTimeout(12, ResponseLen(1)), b.lineTime(12, ResponseLen(1)), 0)))
		resp, err := b.await(ctx, op, req, want, wait, &inflight)
		if err == nil {
			if attempt == 1 {
				b.est.sample(time.Since(sent) - line - ahead)
				b.st.srtt.Store(int64(b.est.srtt))
			}
			// What is left of this request on the line: the answers to
			// its other copies, which the device sends too.
			b.lineFree = time.Now().Add(time.Duration(attempt-1) * b.lineTime(0, ResponseLen(want)))
			b.retried, b.retriedSeq, b.retriedCmd = attempt > 1, req.Seq, req.Cmd
			b.st.chunk.Store(int64(b.line.readChunk(int(b.maxCount.Load()))))
			return resp.Data, nil
		}
		var r retryable
		switch {
		case errors.As(err, &r):
			last = r.error
		case ctx.Err() != nil && errors.Is(err, ctx.Err()):
			b.st.failures.Add(1)
			return nil, b.ctxError(op, attempt, last, err)
		case errors.Is(err, ErrSequence):
			// Not run: the caller (single) opens the window again.
			return nil, err
		default:
			b.st.failures.Add(1)
			return nil, err
		}
		if r.resend {
			resends++
			b.st.resends.Add(1)
			if resends > b.resends {
				b.st.failures.Add(1)
				return nil, drivers.Infra(b.board, op, hintLine,
					fmt.Errorf("%d damaged answers in a row (%d attempts in all); last problem: %w", resends, attempt, last))
			}
			continue
		}
		timeouts++
		if errors.Is(last, ErrBusy) && timeouts < b.attempts {
			if err := b.pause(ctx, b.busyPause); err != nil {
				b.st.failures.Add(1)
				if errors.Is(err, ErrClosed) {
					return nil, b.closedError(op)
				}
				return nil, b.ctxError(op, attempt, last, err)
			}
		}
	}
	b.st.failures.Add(1)
	if errors.Is(last, ErrBusy) {
		return nil, statusError(b.board, op+fmt.Sprintf(" (%d attempts)", attempt), StatusBusy)
	}
	return nil, drivers.Infra(b.board, op, hintLine,
		fmt.Errorf("no valid answer after %d attempts; last problem: %w", attempt, last))
}

// queue hands frame to the writer. The writer may still be busy with the
// frame of a request that gave up (a port that does not drain), so the
// wait is bounded like an attempt.
func (b *Bridge) queue(ctx context.Context, frame []byte, timeout time.Duration, inflight *chan error) error {
	done := make(chan error, 1)
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case b.tx <- txReq{p: frame, done: done}:
		b.st.attempts.Add(1)
		*inflight = done
		return nil
	case <-t.C:
		b.st.timeouts.Add(1)
		return retryable{error: fmt.Errorf("%w: the port did not take the request within %v", drivers.ErrTimeout, timeout)}
	case <-ctx.Done():
		return ctx.Err()
	case <-b.closed:
		return ErrClosed
	}
}

// flushStale takes in what arrived since the last request ended. None of
// it can belong to the answer to a request not yet sent, so complete frames
// are stale and a partial frame is given up now: left there, it would
// swallow the coming answer until the deadline.
func (b *Bridge) flushStale() {
	b.drainRx()
	for {
		for {
			resp, err := b.dec.Next()
			if errors.Is(err, ErrNeedMore) {
				break
			}
			b.noteFrame(resp, err)
			switch {
			case err == nil:
				b.st.stale.Add(1)
				b.noteLate(resp)
			case errors.Is(err, ErrCRCMismatch):
				b.st.crc.Add(1)
			default:
				b.st.badHeaders.Add(1)
			}
		}
		if !b.dec.Expire() {
			break
		}
	}
	b.st.dropped.Store(uint64(b.dec.Dropped()))
}

func (b *Bridge) pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-b.closed:
		return ErrClosed
	}
}

// Phases of await.
const (
	waiting  = iota
	deadline // the timer fired; queued bytes were taken in
	expired  // and the partial frame, if any, was given up
)

// drainRx feeds the decoder whatever the reader has queued, without waiting.
func (b *Bridge) drainRx() {
	for {
		select {
		case p := <-b.rx:
			b.st.rx.Add(uint64(len(p)))
			b.dec.Write(p)
		default:
			return
		}
	}
}

// await waits for the answer to req for timeout. It returns the answer,
// a retryable failure, ctx's error, or a final error.
func (b *Bridge) await(ctx context.Context, op string, req Request, want int, timeout time.Duration, inflight *chan error) (Response, error) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	rx0 := b.st.rx.Load()
	respLen := ResponseLen(want)
	// garbled: once an answer's worth of bytes has come and made no frame,
	// a short quiet spell on the line means the answer came garbled (its
	// sync or header bytes hit): re-requested at once, like a frame that
	// fails its CRC, rather than at the deadline. A genuine answer still
	// on its way keeps bytes coming; a re-request that was not needed
	// costs a duplicate answer, which is discarded.
	quiet := garbledQuiet + b.lineTime(0, 20)
	garbled := time.NewTimer(time.Hour)
	garbled.Stop()
	defer garbled.Stop()
	var (
		crcSeen   int
		staleSeen int
		staleLast Response
		staleRx   uint64 // bytes of the stale frames seen
		phase     = waiting
		resend    error // a damaged answer to resend for, once the frame is out
	)
	for {
		// Frames already buffered first: a stale answer may sit there from
		// an earlier request that timed out.
		for {
			resp, err := b.dec.Next()
			b.noteFrame(resp, err)
			if err == nil {
				if resp.Seq != req.Seq || resp.Cmd != req.Cmd {
					b.st.stale.Add(1)
					b.noteLate(resp)
					staleRx += uint64(ResponseLen(len(resp.Data)))
					staleSeen++
					staleLast = resp
					continue
				}
				b.st.dropped.Store(uint64(b.dec.Dropped()))
				return b.judge(op, req, resp, want)
			}
			var fe *FrameError
			if !errors.As(err, &fe) {
				break // ErrNeedMore
			}
			if errors.Is(fe, ErrBadHeader) {
				b.st.badHeaders.Add(1)
				continue
			}
			b.st.crc.Add(1)
			crcSeen++
			// A damaged frame headed like our answer is almost surely our
			// answer: resend now rather than sit out the deadline. (If it was
			// not, the device replays and the duplicate is discarded later
			// as stale.)
			if fe.Seq == req.Seq && fe.Cmd == byte(req.Cmd)|respBit {
				resend = retryable{error: fmt.Errorf("%w in the answer (%s): corrupted bytes on the line", ErrCRCMismatch, fe), resend: true}
				if err := b.pollWrite(op, inflight); err != nil {
					return Response{}, err
				}
				// The resend must not be mistaken for a copy still being
				// written (see exchange): wait for the writer to report.
				if *inflight == nil {
					b.st.dropped.Store(uint64(b.dec.Dropped()))
					return Response{}, resend
				}
			}
		}
		b.st.dropped.Store(uint64(b.dec.Dropped()))
		switch phase {
		case deadline:
			// The host's partial-frame rule: at the deadline drop a partial
			// frame's first sync byte and rescan what is buffered once more.
			phase = expired
			if b.dec.Expire() {
				continue
			}
			fallthrough
		case expired:
			b.st.timeouts.Add(1)
			if got := b.st.rx.Load() - rx0; got > 0 && crcSeen == 0 && staleSeen == 0 {
				// Bytes came back and formed no frame: answers garbled
				// beyond recognition count as damaged ones.
				b.line.frame(int(min(got, uint64(ResponseLen(MaxCount)))), true)
			}
			return Response{}, retryable{error: b.timeoutProblem(req, timeout, crcSeen, staleSeen, staleLast, b.st.rx.Load()-rx0)}
		}
		select {
		case p := <-b.rx:
			b.st.rx.Add(uint64(len(p)))
			b.dec.Write(p)
			b.drainRx()
			if got := b.st.rx.Load() - rx0; got >= staleRx+uint64(respLen) && resend == nil {
				garbled.Reset(quiet)
			}
		case <-garbled.C:
			if b.st.rx.Load()-rx0 < staleRx+uint64(respLen) {
				// The bytes that armed the timer were a stale answer
				// (a retried request's duplicate), decoded since: not an
				// answer's worth of anything else. Keep waiting.
				continue
			}
			// Expire any partial frame (a corrupted COUNT claims bytes
			// that will never come) and look once more before giving up
			// on this copy of the answer.
			for b.dec.Expire() {
			}
			if resp, ok, err := b.scanFor(op, req, want); ok {
				return resp, err
			}
			if err := b.pollWrite(op, inflight); err != nil {
				return Response{}, err
			}
			b.line.frame(respLen, true)
			resend = retryable{error: fmt.Errorf("%w: %d bytes came back and formed no valid answer (corrupted bytes on the line)",
				ErrCRCMismatch, b.st.rx.Load()-rx0-staleRx), resend: true}
			if *inflight == nil {
				return Response{}, resend
			}
		case err := <-*inflight:
			*inflight = nil
			if err := b.writeError(op, err); err != nil {
				return Response{}, err
			}
			if resend != nil {
				return Response{}, resend
			}
		case <-timer.C:
			// Bytes that arrived together with the deadline (a host stalled
			// by load wakes up to both) still count: take what is queued.
			b.drainRx()
			phase = deadline
		case <-ctx.Done():
			return Response{}, ctx.Err()
		case <-b.rxDone:
			return Response{}, drivers.Infra(b.board, op, hintLine, fmt.Errorf("read from the bridge port: %w", b.rxErr))
		case <-b.closed:
			return Response{}, b.closedError(op)
		}
	}
}

// scanFor decodes what is buffered looking for the answer to req (stale
// frames are counted and dropped, damaged ones counted): ok when it was
// found, with judge's verdict.
func (b *Bridge) scanFor(op string, req Request, want int) (Response, bool, error) {
	for {
		resp, err := b.dec.Next()
		b.noteFrame(resp, err)
		switch {
		case err == nil && (resp.Seq != req.Seq || resp.Cmd != req.Cmd):
			b.st.stale.Add(1)
			b.noteLate(resp)
		case err == nil:
			r, jerr := b.judge(op, req, resp, want)
			return r, true, jerr
		case errors.Is(err, ErrNeedMore):
			return Response{}, false, nil
		case errors.Is(err, ErrCRCMismatch):
			b.st.crc.Add(1)
		default:
			b.st.badHeaders.Add(1)
		}
	}
}

// noteLate counts a stale answer that is a second copy of the answer to
// the last request that was retried: its first copy was late, not lost.
func (b *Bridge) noteLate(resp Response) {
	if b.retried && resp.Seq == b.retriedSeq && resp.Cmd == b.retriedCmd {
		b.retried = false
		b.st.late.Add(1)
	}
}

// noteFrame feeds the line-quality estimate with what the decoder found.
func (b *Bridge) noteFrame(resp Response, err error) {
	var fe *FrameError
	switch {
	case err == nil:
		b.line.frame(ResponseLen(len(resp.Data)), false)
	case errors.As(err, &fe):
		n := 0
		if errors.Is(fe, ErrCRCMismatch) && fe.Len <= ResponseLen(MaxCount) {
			n = fe.Len
		}
		b.line.frame(n, true)
	}
}

// pollWrite collects a finished transmission without waiting for one.
func (b *Bridge) pollWrite(op string, inflight *chan error) error {
	if *inflight == nil {
		return nil
	}
	select {
	case err := <-*inflight:
		*inflight = nil
		return b.writeError(op, err)
	default:
		return nil
	}
}

func (b *Bridge) writeError(op string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrClosed):
		return b.closedError(op)
	}
	return drivers.Infra(b.board, op, hintLine, fmt.Errorf("write to the bridge port: %w", err))
}

func (b *Bridge) timeoutProblem(req Request, timeout time.Duration, crc, stale int, staleLast Response, rxBytes uint64) error {
	switch {
	case stale > 0:
		return fmt.Errorf("%w: no answer with SEQ 0x%02x within %v; %w: %d discarded (last SEQ 0x%02x, %v)",
			drivers.ErrTimeout, req.Seq, timeout, ErrStale, stale, staleLast.Seq, staleLast.Cmd)
	case crc > 0:
		return fmt.Errorf("%w: no answer with SEQ 0x%02x within %v; %w in %d received frame(s) (corrupted bytes on the line)",
			drivers.ErrTimeout, req.Seq, timeout, ErrCRCMismatch, crc)
	case rxBytes > 0:
		// Bytes came back but never a frame: the line garbles them (noise,
		// a corrupted byte stream, a wrong baud rate), which is not the same
		// trouble as a board that does not answer at all.
		return fmt.Errorf("%w: no answer with SEQ 0x%02x within %v; %d bytes arrived but formed no frame with a valid header and CRC (corrupted bytes on the line, or a wrong baud rate)",
			drivers.ErrTimeout, req.Seq, timeout, rxBytes)
	}
	return fmt.Errorf("%w: no answer with SEQ 0x%02x within %v (nothing came back)", drivers.ErrTimeout, req.Seq, timeout)
}

// judge turns the answer to our request into data or an error.
func (b *Bridge) judge(op string, req Request, resp Response, want int) (Response, error) {
	switch resp.Status {
	case StatusOK:
		n := len(resp.Data)
		// INFO may grow in a later version; its first 4 words are fixed.
		if n == want || (req.Cmd == CmdInfo && n > want) {
			return resp, nil
		}
		return Response{}, drivers.Infra(b.board, op, hintFirmware,
			fmt.Errorf("%w: %v answered with %d words, want %d", ErrProtocol, req.Cmd, n, want))
	case StatusBusy:
		b.st.busy.Add(1)
		return Response{}, retryable{error: &StatusError{Status: StatusBusy}}
	case StatusSequence:
		return Response{}, drivers.Infra(b.board, op, hintFirmware, &StatusError{Status: StatusSequence})
	}
	return Response{}, statusError(b.board, op, resp.Status)
}
