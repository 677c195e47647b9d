package pmos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/drivers"
)

// Client is the runner's management controller (address 0xFFFE): it sends
// management messages through the mailboxes of the DCN boards it reaches
// directly and matches what comes back by TAG (pmos.md §5.1). One poller per
// mailbox drains it; answers land in whichever mailbox their route leads to,
// so waiters are shared across mailboxes. RELAYs of DISCOVERs are handed to
// Relays().
//
// Time. A request waits for its answer with a deadline in management time
// (mgmt.md §2: the emulator's clock moves only with accesses; on hardware it
// is real time), read from the CYCLES counter of the board whose mailbox
// sent it: wall time says nothing about how far the management plane got.
// A request counts as unanswered only once that deadline has passed and the
// mailbox was found empty: an answer already queued behind other messages
// is on its way. Between empty polls the poller pauses in wall time; its
// polls let management time pass.
type Client struct {
	cfg ClientConfig
	log *slog.Logger

	mu      sync.Mutex
	boxes   map[string]*box
	order   []*box
	waiters map[uint16]*waiter
	nextTag uint16
	listen  bool
	filter  func(proxy uint16, port uint8) bool
	relays  chan Relayed
	onMsg   func(via string, m Msg)
	stats   ClientStats
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

// ClientConfig sets a Client's figures; zero fields take the defaults.
type ClientConfig struct {
	// TimeoutNS is how long a request waits for its answer, in management
	// time from the end of its mailbox burst, before it is sent again
	// (mgmt.md §7: "give up after 20 ms", the default). The mailbox must
	// also have been found empty: answers queued behind relays are not
	// given up on.
	TimeoutNS int64
	// InFlight bounds the requests waiting on one mailbox at once: each
	// mailbox burst costs the DCN board's bus milliseconds, and answers
	// must not wait behind a queue of bursts.
	InFlight int
	// Retries is how many times a request is sent again, with the same
	// bytes and tag (the firmware answers a repeat from memory).
	Retries int
	// IdlePause is the wall time between two empty polls of a mailbox
	// (default 100 µs). Management time passes with the polls themselves
	// (50 µs an access); mgmt.md §7 suggests DELAY_US between polls, which
	// on the emulated rack moves the whole rack's clock for every board
	// and outruns the runner.
	IdlePause time.Duration
	// MinWait is the wall time a request waits at least before it counts
	// as unanswered, whatever the management clock says (default 2 ms):
	// the poller must have had a chance to look at the mailbox.
	MinWait time.Duration
	Log     *slog.Logger
	// OnRetry, if set, is told each time a request goes unanswered and is
	// sent again: the target may have rebooted (mgmt.md §8: "after any
	// unanswered request ... reconcile").
	OnRetry func(p Path, t MsgType, tag uint16)
}

func (c ClientConfig) withDefaults() ClientConfig {
	if c.TimeoutNS <= 0 {
		c.TimeoutNS = 20_000_000
	}
	if c.InFlight <= 0 {
		c.InFlight = 4
	}
	if c.Retries < 0 {
		c.Retries = 0
	} else if c.Retries == 0 {
		// A 240-byte message crosses a cable that loses 5% of its MOS
		// words (the emulator's mos-lossy default) only about once in
		// eight tries, and PMOS gives up on one in six such messages
		// (pmos.md §3.2): six attempts make a lost request rare.
		c.Retries = 5
	}
	if c.IdlePause <= 0 {
		c.IdlePause = 100 * time.Microsecond
	}
	if c.MinWait <= 0 {
		c.MinWait = 2 * time.Millisecond
	}
	if c.Log == nil {
		c.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return c
}

// ClientStats count what the client saw.
type ClientStats struct {
	Sent, Retries, Answers, Timeouts, Errors int
	Relays, RelaysSkipped                    int
	Unmatched                                int // answers nobody waited for (late, duplicate)
	PollErrors                               int
}

// Relayed is a DISCOVER relayed by a proxy (pmos.md §5.3).
type Relayed struct {
	Via       string // the DCN board whose mailbox it landed in
	Proxy     uint16 // the relaying board's address (the RELAY's SRC)
	ProxyPort uint8  // the proxy's port the DISCOVER arrived on
	Discover  Discover
	AtNS      int64 // management time at Via when it was read
}

type box struct {
	mb      *Mailbox
	cycles  uint64     // address of CYCLES_LO
	khz     uint64     // CLOCK_KHZ
	clk     sync.Mutex // one clock read at a time: the extension needs them in order
	last    uint32
	ext     uint64 // extended cycle count
	started bool
	nowNS   int64
	waiting int
	busy    bool   // the last poll found a message
	dropped uint64 // address of MBOX_RX_DROPPED
	drops   uint32 // its last reading
	// dropsSeen: drops holds a reading (the first one only sets it).
	dropsSeen bool
	clockAt   time.Time // when the clock was last read (wall time)
	wake      chan struct{}
	delay     uint64 // address of DELAY_US
	slots     chan struct{}
}

type waiter struct {
	tag      uint16
	box      *box
	want     MsgType
	deadline int64     // management time
	sent     time.Time // wall time of the send
	ch       chan result
}

// clockEvery is how often (wall time) a poller reads its board's clock for
// the deadlines.
const clockEvery = 500 * time.Microsecond

type result struct {
	msg     Msg
	via     string
	timeout bool
	err     error
}

// NewClient returns a client with no mailbox yet.
func NewClient(cfg ClientConfig) *Client {
	cfg = cfg.withDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	return &Client{cfg: cfg, log: cfg.Log, boxes: map[string]*box{}, waiters: map[uint16]*waiter{}, nextTag: 0x1000,
		relays: make(chan Relayed, 256), ctx: ctx, cancel: cancel}
}

// AddMailbox starts polling a DCN board's mailbox. It reads the board's
// CLOCK_KHZ once, for the management clock.
func (c *Client) AddMailbox(ctx context.Context, bus drivers.RegisterBus, mgmt *bitstreams.Manifest, board string) (*Mailbox, error) {
	mb, err := NewMailbox(bus, mgmt, board)
	if err != nil {
		return nil, err
	}
	b := &box{mb: mb, wake: make(chan struct{}, 1), slots: make(chan struct{}, c.cfg.InFlight)}
	for _, r := range []struct {
		name string
		dst  *uint64
	}{{"CYCLES_LO", &b.cycles}, {"DELAY_US", &b.delay}, {"MBOX_RX_DROPPED", &b.dropped}} {
		loc, err := mb.regs.Lookup(r.name)
		if err != nil {
			return nil, err
		}
		*r.dst = loc.Addr
	}
	khz, err := mb.regs.Read(ctx, "CLOCK_KHZ")
	if err != nil {
		return nil, fmt.Errorf("%s: read CLOCK_KHZ for the management clock: %w", board, err)
	}
	if khz == 0 {
		return nil, drivers.Infra(board, "read CLOCK_KHZ", "the management block reads 0 for its clock: is the window decoded?", errors.New("CLOCK_KHZ is 0"))
	}
	b.khz = uint64(khz)
	if _, err := c.readClock(ctx, b); err != nil {
		return nil, err
	}
	c.mu.Lock()
	if _, dup := c.boxes[board]; dup {
		c.mu.Unlock()
		return nil, fmt.Errorf("mailbox of %s added twice", board)
	}
	c.boxes[board] = b
	c.order = append(c.order, b)
	c.mu.Unlock()
	c.wg.Add(1)
	go c.poll(b)
	return mb, nil
}

// Mailbox returns a DCN board's mailbox.
func (c *Client) Mailbox(board string) (*Mailbox, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.boxes[board]
	if !ok {
		return nil, false
	}
	return b.mb, true
}

// Close stops the pollers; waiting requests fail.
func (c *Client) Close() {
	c.cancel()
	c.mu.Lock()
	for _, b := range c.order {
		select {
		case b.wake <- struct{}{}:
		default:
		}
	}
	c.mu.Unlock()
	c.wg.Wait()
}

// Listen turns the delivery of relays on or off. While on, the pollers drain
// their mailboxes even when no request waits.
func (c *Client) Listen(on bool) {
	c.mu.Lock()
	c.listen = on
	c.mu.Unlock()
	c.wakeAll()
}

// SetRelayFilter sets which relays are worth reading whole: filter gets the
// relaying proxy's address and the port the DISCOVER arrived on, from the
// first three words of a RELAY (RelayHead), and says whether the runner
// still needs it. A DISCOVER repeats every millisecond on every cable
// (pmos.md §5.2): a relay for a board already handled costs a short read.
func (c *Client) SetRelayFilter(f func(proxy uint16, port uint8) bool) {
	c.mu.Lock()
	c.filter = f
	c.mu.Unlock()
}

// OnMessage sets a function told of every message nobody waits for (ERRORs
// about abandoned requests, late answers).
func (c *Client) OnMessage(f func(via string, m Msg)) {
	c.mu.Lock()
	c.onMsg = f
	c.mu.Unlock()
}

// Relays delivers the relayed DISCOVERs (while listening).
func (c *Client) Relays() <-chan Relayed { return c.relays }

// Stats returns the counters.
func (c *Client) Stats() ClientStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats
}

// NowNS is the latest management time read at a DCN board (ns since its
// power-on), the latest of all mailboxes when board is "".
func (c *Client) NowNS(board string) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if board != "" {
		if b, ok := c.boxes[board]; ok {
			return b.nowNS
		}
		return 0
	}
	var t int64
	for _, b := range c.order {
		t = max(t, b.nowNS)
	}
	return t
}

func (c *Client) wakeAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, b := range c.order {
		select {
		case b.wake <- struct{}{}:
		default:
		}
	}
}

// readClock reads a board's CYCLES_LO and extends it to 64 bits.
func (c *Client) readClock(ctx context.Context, b *box) (int64, error) {
	b.clk.Lock()
	defer b.clk.Unlock()
	v, err := b.mb.bus.Read32(ctx, b.cycles)
	if err != nil {
		return 0, fmt.Errorf("%s: read CYCLES_LO: %w", b.mb.Board, err)
	}
	return c.extendClock(b, v), nil
}

// extendClock extends a reading v of CYCLES_LO to 64 bits and returns the
// time it gives; the caller holds b.clk, from the read on.
func (c *Client) extendClock(b *box, v uint32) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !b.started {
		b.ext, b.started = uint64(v), true
	} else {
		b.ext += uint64(v - b.last)
	}
	b.last = v
	b.nowNS = int64(b.ext * 1_000_000 / b.khz)
	return b.nowNS
}

// poll drains one mailbox while anyone needs it.
func (c *Client) poll(b *box) {
	defer c.wg.Done()
	ctx := c.ctx
	fails := 0
	for ctx.Err() == nil {
		c.mu.Lock()
		active := c.listen || b.waiting > 0
		filter := c.filter
		c.mu.Unlock()
		if !active {
			select {
			case <-b.wake:
			case <-ctx.Done():
			}
			continue
		}
		actx, cancel := context.WithTimeout(ctx, 10*time.Second)
		keep := func(head []byte) bool {
			proxy, port, ok := RelayHead(head)
			if filter == nil || !ok {
				return true
			}
			return filter(proxy, port)
		}
		// The clock is read before the poll: an answer due by then is in
		// the mailbox when the poll looks, so a poll that finds it empty
		// proves every request whose deadline had passed at that reading
		// unanswered. (Read after the poll, the clock could have been moved
		// on by another board's accesses past an answer that arrived since.)
		// The clock and the drop counter go in one batch with the poll's
		// read of MBOX_RX_STATUS, in that order (ReceiveOptions.Before):
		// on a UART bridge with a window one round trip, not three.
		var clockNS int64 = -1
		dropped := false
		var clk, drops []uint32
		// While relays pile up past half the queue, they are shed after
		// one word: the answers queued behind them must not find it full.
		opts := ReceiveOptions{Prefix: RelayHeadLen, Keep: keep, ShedAbove: 16, Shed: []MsgType{MsgRelay}}
		if time.Since(b.clockAt) >= clockEvery {
			b.clk.Lock()
			clk = make([]uint32, 1)
			opts.Before = append(opts.Before, drivers.Access{Addr: b.cycles, Words: clk})
			c.mu.Lock()
			waiting := b.waiting > 0
			c.mu.Unlock()
			if waiting {
				drops = make([]uint32, 1)
				opts.Before = append(opts.Before, drivers.Access{Addr: b.dropped, Words: drops})
			}
		}
		r, ok, err := b.mb.Receive(actx, opts)
		if clk != nil {
			if err == nil {
				clockNS = c.extendClock(b, clk[0])
				b.clockAt = time.Now()
				if drops != nil {
					dropped = b.dropsSeen && drops[0] != b.drops
					b.drops, b.dropsSeen = drops[0], true
				}
			}
			b.clk.Unlock()
		}
		c.mu.Lock()
		b.busy = ok
		othersBusy := false
		for _, x := range c.order {
			othersBusy = othersBusy || (x != b && x.busy)
		}
		c.mu.Unlock()
		if err == nil && clockNS >= 0 {
			c.expire(b, clockNS, !ok, dropped)
		}
		if err == nil && !ok {
			// Nothing queued. Every access moves the management clock by
			// its cost (mgmt.md §2), on the emulated rack the clock of the
			// whole rack: an idle poller that polled flat out (or let time
			// pass with DELAY_US) would race the clock ahead of the runner's
			// other goroutines, and starve a mailbox that is draining.
			// Pause in wall time instead; the polls themselves let
			// management time pass.
			cancel()
			pause := c.cfg.IdlePause
			if othersBusy {
				pause *= 2
			}
			select {
			case <-ctx.Done():
			case <-time.After(pause):
			}
			continue
		}
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			fails++
			c.mu.Lock()
			c.stats.PollErrors++
			c.mu.Unlock()
			c.log.Warn("mailbox poll failed", "board", b.mb.Board, "err", err)
			// A board that stopped answering fails the requests waiting on
			// it at once rather than at their deadlines.
			c.failBox(b, fmt.Errorf("polling the mailbox of %s: %w", b.mb.Board, err))
			select {
			case <-ctx.Done():
			case <-time.After(time.Duration(min(fails, 10)) * 10 * time.Millisecond):
			}
			continue
		}
		fails = 0
		if ok {
			c.dispatch(b, r)
		}
	}
	c.failBox(b, fmt.Errorf("the management client of %s was closed", b.mb.Board))
}

func (c *Client) dispatch(b *box, r Received) {
	if r.Truncated {
		c.mu.Lock()
		c.stats.RelaysSkipped++
		c.mu.Unlock()
		return
	}
	m, err := ParseMsg(r.Bytes)
	if err != nil {
		c.log.Warn("mailbox: unreadable message", "board", b.mb.Board, "port", r.Port, "err", err)
		return
	}
	if m.Type == MsgRelay {
		rel, d, err := ParseRelay(m)
		if err != nil {
			c.log.Warn("mailbox: unreadable RELAY", "board", b.mb.Board, "err", err)
			return
		}
		c.mu.Lock()
		c.stats.Relays++
		listen := c.listen
		now := b.nowNS
		c.mu.Unlock()
		if listen {
			select {
			case c.relays <- Relayed{Via: b.mb.Board, Proxy: m.Src, ProxyPort: rel.Port, Discover: d, AtNS: now}:
			default:
				c.log.Debug("relay dropped: nobody reads relays fast enough", "board", b.mb.Board)
			}
		}
		return
	}
	c.mu.Lock()
	w, ok := c.waiters[m.Tag]
	match := ok && (m.Type == w.want || m.Type == MsgError)
	if match {
		delete(c.waiters, m.Tag)
		w.box.waiting--
		if m.Type == MsgError {
			c.stats.Errors++
		} else {
			c.stats.Answers++
		}
	} else {
		c.stats.Unmatched++
	}
	onMsg := c.onMsg
	c.mu.Unlock()
	if match {
		w.ch <- result{msg: m, via: b.mb.Board}
		return
	}
	if onMsg != nil {
		onMsg(b.mb.Board, m)
	}
	c.log.Debug("mailbox: message nobody waits for", "board", b.mb.Board, "type", m.Type, "tag", m.Tag, "src", m.Src)
}

// expire tells the waiters of b whose deadline had passed at management
// time at, when the caller then found the mailbox empty (no answer due by
// then waits in it), and, when dropped says the mailbox dropped messages
// while full (MBOX_RX_DROPPED rose, mgmt.md §4), every waiter sent before:
// its answer may have been one of them.
func (c *Client) expire(b *box, at int64, empty, dropped bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for tag, w := range c.waiters {
		if w.box != b || time.Since(w.sent) < c.cfg.MinWait {
			continue
		}
		if at >= w.deadline && empty || dropped && !w.sent.IsZero() {
			delete(c.waiters, tag)
			b.waiting--
			c.stats.Timeouts++
			w.ch <- result{timeout: true}
		}
	}
}

func (c *Client) failBox(b *box, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for tag, w := range c.waiters {
		if w.box == b {
			delete(c.waiters, tag)
			b.waiting--
			w.ch <- result{err: err}
		}
	}
}

// PathKind says how a request reaches its target.
type PathKind uint8

const (
	// PathSelf: the DCN board's own firmware, through its mailbox (PORT 15,
	// DST 0xFFFF).
	PathSelf PathKind = iota
	// PathPort: link-local out of a port of the DCN board (the board at
	// the other end of that cable).
	PathPort
	// PathProxy: link-local out of a port of a proxy board reached over
	// the network, in a SEND (pmos.md §5.6).
	PathProxy
	// PathRouted: to a board's address over the management network.
	PathRouted
)

// Path is how a request reaches its target from the runner.
type Path struct {
	Kind PathKind
	Via  string // the DCN board whose mailbox sends it
	Port uint8  // PathPort: the DCN board's port; PathProxy: the proxy's
	// Proxy is the proxy's address (PathProxy).
	Proxy uint16
	// Addr is the target's address (PathRouted).
	Addr uint16
}

func (p Path) String() string {
	switch p.Kind {
	case PathSelf:
		return p.Via + " (its own firmware)"
	case PathPort:
		return fmt.Sprintf("%s port %d, link-local", p.Via, p.Port)
	case PathProxy:
		return fmt.Sprintf("%s, proxy 0x%04x port %d, link-local", p.Via, p.Proxy, p.Port)
	case PathRouted:
		return fmt.Sprintf("%s, routed to 0x%04x", p.Via, p.Addr)
	}
	return "unknown path"
}

// NoAnswerError: a request got no answer after all its attempts.
type NoAnswerError struct {
	Type     MsgType
	Path     Path
	Tag      uint16
	Attempts int
	WaitedNS int64
}

func (e *NoAnswerError) Error() string {
	return fmt.Sprintf("%s (tag 0x%04x) via %s: no answer after %d attempts (%.1f ms of management time each)",
		e.Type, e.Tag, e.Path, e.Attempts, float64(e.WaitedNS)/1e6)
}

// ReplyError: the network answered a request with an ERROR.
type ReplyError struct {
	ErrorBody
	Path Path
	Via  string // the mailbox the ERROR came to
}

func (e *ReplyError) Error() string {
	return e.ErrorBody.Error() + " (request via " + e.Path.String() + ")"
}

// ErrClosed: the client was closed.
var ErrClosed = errors.New("management client closed")

func (c *Client) tag() uint16 {
	for {
		c.nextTag++
		if c.nextTag < 0x1000 {
			c.nextTag = 0x1000 // below: tags the firmware makes (DISCOVER's BOOTS)
		}
		if _, busy := c.waiters[c.nextTag]; !busy {
			return c.nextTag
		}
	}
}

// Request sends a message of type t with body to the target of path and
// waits for its answer (want), retrying with the same bytes and tag after
// silence, PORT_DOWN or QUEUE_FULL (cfg.Retries times). An ERROR that ends
// it is a *ReplyError; silence a *NoAnswerError.
func (c *Client) Request(ctx context.Context, path Path, t MsgType, body []byte, want MsgType) (Msg, error) {
	return c.request(ctx, path, t, body, want, c.cfg.Retries)
}

func (c *Client) request(ctx context.Context, path Path, t MsgType, body []byte, want MsgType, retries int) (Msg, error) {
	c.mu.Lock()
	b, ok := c.boxes[path.Via]
	if !ok {
		c.mu.Unlock()
		return Msg{}, drivers.Setup(path.Via, "management request", "only DCN boards have a mailbox the runner reaches", fmt.Errorf("no mailbox for %s", path.Via))
	}
	tag := c.tag()
	c.mu.Unlock()
	dst := AddrLinkLocal
	if path.Kind == PathRouted {
		dst = path.Addr
	}
	msg, err := Msg{Type: t, TTL: DefaultTTL, Dst: dst, Src: AddrController, Tag: tag, Body: body}.Marshal()
	if err != nil {
		return Msg{}, err
	}
	port := uint8(PortRoute)
	switch path.Kind {
	case PathPort:
		port = path.Port
	case PathProxy:
		sb, err := SendBody(path.Port, msg)
		if err != nil {
			return Msg{}, err
		}
		if msg, err = (Msg{Type: MsgSend, TTL: DefaultTTL, Dst: path.Proxy, Src: AddrController, Tag: tag, Body: sb}).Marshal(); err != nil {
			return Msg{}, err
		}
	}
	// The poller of an idle mailbox has not read its clock for a while:
	// a deadline from a stale time would expire at once.
	if _, err := c.readClock(ctx, b); err != nil {
		return Msg{}, err
	}
	select {
	case b.slots <- struct{}{}:
	case <-ctx.Done():
		return Msg{}, fmt.Errorf("%s via %s: waiting for the mailbox: %w", t, path, ctx.Err())
	}
	defer func() { <-b.slots }()
	attempts := 0
	for {
		attempts++
		w := &waiter{tag: tag, box: b, want: want, ch: make(chan result, 1), deadline: 1<<63 - 1}
		c.mu.Lock()
		c.waiters[tag] = w
		b.waiting++
		c.stats.Sent++
		if attempts > 1 {
			c.stats.Retries++
		}
		c.mu.Unlock()
		select {
		case b.wake <- struct{}{}:
		default:
		}
		// The deadline counts from the end of the burst: the clock is read
		// right behind it, in one batch with it.
		clk := make([]uint32, 1)
		b.clk.Lock()
		sent, err := b.mb.SendThen(ctx, port, msg, []drivers.Access{{Addr: b.cycles, Words: clk}})
		if !sent {
			b.clk.Unlock()
			c.drop(w)
			return Msg{}, err
		}
		c.mu.Lock()
		w.deadline, w.sent = b.nowNS+c.cfg.TimeoutNS, time.Now()
		c.mu.Unlock()
		if err == nil {
			c.extendClock(b, clk[0])
			c.mu.Lock()
			w.deadline = b.nowNS + c.cfg.TimeoutNS
			c.mu.Unlock()
		}
		b.clk.Unlock()
		var r result
		select {
		case r = <-w.ch:
		case <-ctx.Done():
			c.drop(w)
			return Msg{}, fmt.Errorf("%s via %s: %w", t, path, ctx.Err())
		case <-c.ctx.Done():
			c.drop(w)
			return Msg{}, ErrClosed
		}
		switch {
		case r.err != nil:
			return Msg{}, r.err
		case r.timeout:
			if attempts > retries {
				return Msg{}, &NoAnswerError{Type: t, Path: path, Tag: tag, Attempts: attempts, WaitedNS: c.cfg.TimeoutNS}
			}
			c.log.Debug("management request unanswered, sending it again", "type", t, "path", path.String(), "tag", tag, "attempt", attempts+1)
			if c.cfg.OnRetry != nil {
				c.cfg.OnRetry(path, t, tag)
			}
			continue
		case r.msg.Type == MsgError:
			eb, err := ParseError(r.msg)
			if err != nil {
				return Msg{}, err
			}
			re := &ReplyError{ErrorBody: eb, Path: path, Via: r.via}
			// PORT_DOWN (PMOS gave up on a cable: a lossy one gives up
			// now and then, pmos.md §3.2) and QUEUE_FULL are worth another
			// attempt with the same bytes; a dead neighbour answers the
			// same again, a few milliseconds later each time.
			if (eb.Code == ErrCodePortDown || eb.Code == ErrCodeQueueFull) && attempts <= retries {
				c.log.Debug("management request refused on the way, sending it again", "type", t, "path", path.String(), "tag", tag, "error", eb.Error(), "attempt", attempts+1)
				continue
			}
			return Msg{}, re
		}
		return r.msg, nil
	}
}

func (c *Client) drop(w *waiter) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.waiters[w.tag] == w {
		delete(c.waiters, w.tag)
		w.box.waiting--
	}
}

// Registers executes register operations on the target of path (one
// REG_REQ of up to 25 operations) and returns the results.
func (c *Client) Registers(ctx context.Context, path Path, ops []RegOp) ([]RegResult, error) {
	body, err := RegReqBody(ops)
	if err != nil {
		return nil, err
	}
	m, err := c.Request(ctx, path, MsgRegReq, body, MsgRegResp)
	if err != nil {
		return nil, err
	}
	rs, err := ParseRegResp(m)
	if err != nil {
		return nil, err
	}
	if len(rs) != len(ops) {
		return nil, fmt.Errorf("REG_RESP via %s: %d results for %d operations", path, len(rs), len(ops))
	}
	return rs, nil
}

// Assign sends ASSIGN(dna, addr) link-local along path (PathPort or
// PathProxy) and returns the ASSIGNED.
func (c *Client) Assign(ctx context.Context, path Path, dna uint32, addr uint16) (Assigned, error) {
	m, err := c.Request(ctx, path, MsgAssign, Assign{DNA: dna, Addr: addr}.Body(), MsgAssigned)
	if err != nil {
		return Assigned{}, err
	}
	a, err := ParseAssigned(m)
	if err != nil {
		return Assigned{}, err
	}
	if a.DNA != dna || a.Addr != addr {
		return a, fmt.Errorf("ASSIGNED via %s names DNA 0x%08x address 0x%04x, the ASSIGN gave 0x%08x and 0x%04x", path, a.DNA, a.Addr, dna, addr)
	}
	return a, nil
}

// Echo sends an ECHO_REQ with body along path and returns the reply's body.
func (c *Client) Echo(ctx context.Context, path Path, body []byte) ([]byte, error) {
	if len(body) > MaxEcho {
		return nil, fmt.Errorf("an echo carries at most %d bytes, %d given", MaxEcho, len(body))
	}
	m, err := c.Request(ctx, path, MsgEchoReq, body, MsgEchoReply)
	if err != nil {
		return nil, err
	}
	return m.Body, nil
}

// Ping asks the target of path for a short echo, sent at most twice: a
// liveness check that gives up sooner than a request (a proxy suspected
// dead is checked before its targets are taken over by other neighbours).
func (c *Client) Ping(ctx context.Context, path Path) error {
	body := []byte("ping")
	m, err := c.request(ctx, path, MsgEchoReq, body, MsgEchoReply, min(c.cfg.Retries, 1))
	if err != nil {
		return err
	}
	if string(m.Body) != string(body) {
		return fmt.Errorf("ECHO_REPLY via %s carries % x, the request % x", path, m.Body, body)
	}
	return nil
}

// Wait lets us microseconds of management time pass at a DCN board (DELAY_US), for
// hardware that must settle (a TimeSync tree, a firmware reboot).
func (c *Client) Wait(ctx context.Context, board string, us uint32) error {
	c.mu.Lock()
	b, ok := c.boxes[board]
	c.mu.Unlock()
	if !ok {
		return fmt.Errorf("no mailbox for %s", board)
	}
	for us > 0 {
		d := min(us, 1_000_000)
		if err := b.mb.bus.Write32(ctx, b.delay, d); err != nil {
			return fmt.Errorf("%s: write DELAY_US: %w", board, err)
		}
		us -= d
	}
	_, err := c.readClock(ctx, b)
	return err
}
