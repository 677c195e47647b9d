package uartbridge

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labrunner/labrunner/drivers"
	"github.com/labrunner/labrunner/internal/syncbuf"
)

const (
	testBoard = "emu-zu-1"
	// calm is a per-attempt timeout no scheduling stall of a loaded test
	// machine reaches: tests that count retries use it so that only the
	// misbehaviour under test causes one.
	calm = 2 * time.Second
)

// eventually waits until cond holds: the peer may not yet have read the
// last bytes when the host has given up.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(2 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Errorf("still not true after 2 s: %s", what)
			return
		}
	}
}

func newBridge(t testing.TB, opts Options) (*Bridge, *peer, *syncbuf.Buffer) {
	t.Helper()
	master, path := openPTY(t)
	p := newPeer(master)
	if opts.Board == "" {
		opts.Board = testBoard
	}
	if opts.MinTimeout == 0 {
		// Tests count retries: only the misbehaviour under test may cause
		// one, so attempts wait their whole timeout unless a test asks for
		// the adaptive deadline.
		opts.MinTimeout = calm
	}
	lb := &syncbuf.Buffer{}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(lb, nil))
	}
	b, err := Open(path, DefaultBaud, opts)
	if err != nil {
		p.close()
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		p.close()
	})
	return b, p, lb
}

// newSyncedBridge is newBridge with the session-start INFO done under the
// calm timeout, and opts' Timeout and MaxAttempts in force afterwards: with
// a short timeout a stall could duplicate the INFO, and its late copies
// would blur what the test counts.
func newSyncedBridge(t testing.TB, opts Options) (*Bridge, *peer, *syncbuf.Buffer) {
	t.Helper()
	timeout, attempts := opts.Timeout, opts.MaxAttempts
	opts.Timeout = calm
	b, p, lb := newBridge(t, opts)
	syncBridge(t, b)
	b.timeout = timeout
	if attempts > 0 {
		b.attempts = attempts
	}
	return b, p, lb
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// syncBridge makes the session-start INFO happen, so that tests can count
// the requests of the operation under test alone.
func syncBridge(t testing.TB, b *Bridge) {
	t.Helper()
	if _, err := b.Info(testCtx(t)); err != nil {
		t.Fatalf("Info: %v", err)
	}
}

func peerRequests(p *peer) (n int) {
	p.with(func(p *peer) { n = p.requests })
	return n
}

func TestReadWriteBurst(t *testing.T) {
	b, p, _ := newBridge(t, Options{Timeout: calm})
	ctx := testCtx(t)

	info, err := b.Info(ctx)
	if err != nil {
		t.Fatalf("Info: %v", err)
	}
	if info != (DeviceInfo{Version: 1, MaxCount: 256, DeviceID: peerDeviceID, Window: 1}) {
		t.Errorf("Info = %+v", info)
	}
	if err := b.Write32(ctx, 0x10, 0xCAFEF00D); err != nil {
		t.Fatalf("Write32: %v", err)
	}
	if v, err := b.Read32(ctx, 0x10); err != nil || v != 0xCAFEF00D {
		t.Fatalf("Read32 = 0x%x, %v; want 0xcafef00d", v, err)
	}
	if v, err := b.Read32(ctx, peerROAddr); err != nil || v != peerID {
		t.Fatalf("Read32(ID) = 0x%x, %v", v, err)
	}

	// 600 words: requests of 256, 256 and 88 words.
	src := make([]uint32, 600)
	for i := range src {
		src[i] = uint32(i)*0x01000193 + 7
	}
	p.with(func(p *peer) { p.counts = nil })
	if err := b.WriteBurst(ctx, 0x200, src); err != nil {
		t.Fatalf("WriteBurst: %v", err)
	}
	dst := make([]uint32, len(src))
	if err := b.ReadBurst(ctx, 0x200, dst); err != nil {
		t.Fatalf("ReadBurst: %v", err)
	}
	if !slices.Equal(src, dst) {
		t.Fatal("ReadBurst did not return what WriteBurst wrote")
	}
	p.with(func(p *peer) {
		if want := []uint16{256, 256, 88, 256, 256, 88}; !slices.Equal(p.counts, want) {
			t.Errorf("burst COUNTs on the wire %v, want %v", p.counts, want)
		}
		for a := uint32(0x200); a < 0x200+4*600; a += 4 {
			if p.ram[a] != src[(a-0x200)/4] {
				t.Fatalf("device RAM 0x%x = 0x%x, want 0x%x", a, p.ram[a], src[(a-0x200)/4])
			}
		}
	})

	// A burst into the FIFO window pushes, then pops, one word per address.
	if err := b.WriteBurst(ctx, peerFIFO, []uint32{1, 2, 3, 4, 5}); err != nil {
		t.Fatalf("WriteBurst(FIFO): %v", err)
	}
	pop := make([]uint32, 3)
	if err := b.ReadBurst(ctx, peerFIFO, pop); err != nil || !slices.Equal(pop, []uint32{1, 2, 3}) {
		t.Fatalf("ReadBurst(FIFO) = %v, %v; want [1 2 3]", pop, err)
	}
	if err := b.ReadBurst(ctx, 0x300, nil); err != nil {
		t.Fatalf("empty ReadBurst: %v", err)
	}

	st := b.Stats()
	// INFO, write, read, read ID, 3+3 burst chunks, 2 FIFO bursts.
	if st.Requests != 12 || st.Attempts != 12 || st.Retries != 0 || st.Failures != 0 {
		t.Errorf("Stats = %+v, want 12 requests, 12 attempts, no retry or failure", st)
	}
	var rx, tx int
	p.with(func(p *peer) { rx, tx = p.rxBytes, p.txBytes })
	if st.TxBytes != uint64(rx) || st.RxBytes != uint64(tx) {
		t.Errorf("host counted %d bytes out, %d in; peer %d in, %d out", st.TxBytes, st.RxBytes, rx, tx)
	}
}

func TestSessionStartsWithInfo(t *testing.T) {
	b, p, _ := newBridge(t, Options{Timeout: calm})
	// The device still remembers, from an earlier session, a FIFO pop with
	// exactly the SEQ (and so the CRC) this session's first read would get
	// without the INFO: without it, the device would replay the old answer.
	b.sem <- struct{}{}
	first := b.seq
	<-b.sem
	old := mustReq(t, Request{Seq: first, Cmd: CmdRead, Addr: peerFIFO, Count: 1})
	oldResp := mustResp(t, Response{Seq: first, Cmd: CmdRead, Data: []uint32{0xBAD}})
	p.with(func(p *peer) {
		p.mem = []peerMem{{seq: first, crc: CRC16(old[2 : len(old)-2]), resp: oldResp}}
		p.fifo = []uint32{0x600D}
	})
	v, err := b.Read32(testCtx(t), peerFIFO)
	if err != nil || v != 0x600D {
		t.Fatalf("first Read32 = 0x%x, %v; want 0x600d (not the earlier session's answer)", v, err)
	}
	p.with(func(p *peer) {
		if !slices.Equal(p.cmds, []Cmd{CmdInfo, CmdRead}) || p.replays != 0 || p.pops != 1 {
			t.Errorf("device saw %v, %d replays, %d pops; want [INFO READ], 0, 1", p.cmds, p.replays, p.pops)
		}
	})
	if _, err := b.Read32(testCtx(t), 0); err != nil {
		t.Fatal(err)
	}
	p.with(func(p *peer) {
		if len(p.cmds) != 3 {
			t.Errorf("INFO sent again: device saw %v", p.cmds)
		}
	})
}

func TestCorruptedResponseRetried(t *testing.T) {
	for _, c := range []struct {
		name string
		at   int
		crc  uint64 // frames that fail their CRC
	}{
		// A damaged frame headed with our SEQ and CMD is re-requested at
		// once.
		{"data byte", 8, 1},
		{"CRC byte", -1, 1},
		// A frame headed otherwise is no answer of ours, and a COUNT of
		// 0x41 claims 260 more bytes: either way an answer's worth of
		// bytes came and made no answer, and after a short quiet spell
		// the request goes again, without waiting for the deadline.
		{"SEQ byte", 2, 1},
		{"COUNT byte", 5, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, p, log := newSyncedBridge(t, Options{Timeout: calm})
			p.with(func(p *peer) { p.ram[0x40] = 0x11223344; p.corrupt = []int{c.at} })
			v, err := b.Read32(testCtx(t), 0x40)
			if err != nil || v != 0x11223344 {
				t.Fatalf("Read32 = 0x%x, %v", v, err)
			}
			st := b.Stats()
			if st.Failures != 0 || st.Retries != 1 || st.Resends != 1 || st.Timeouts != 0 || st.CRCErrors != c.crc {
				t.Errorf("Stats = %+v, want one resend at once, no timeout, %d CRC errors", st, c.crc)
			}
			p.with(func(p *peer) {
				// INFO and READ executed once each; READ's answer replayed.
				if p.executed != 2 || p.replays < 1 {
					t.Errorf("device executed %d, replayed %d; want 2, at least 1", p.executed, p.replays)
				}
			})
			if l := log.String(); !strings.Contains(l, "retrying") || !strings.Contains(l, testBoard) || !strings.Contains(l, "read32 0x00000040") {
				t.Errorf("no retry log line naming board and op:\n%s", l)
			}
		})
	}
}

func TestLostResponseReplayedNotReexecuted(t *testing.T) {
	b, p, _ := newSyncedBridge(t, Options{Timeout: 100 * time.Millisecond})
	p.with(func(p *peer) { p.fifo = []uint32{101, 102, 103}; p.drop = 1 })
	ctx := testCtx(t)
	v, err := b.Read32(ctx, peerFIFO)
	if err != nil || v != 101 {
		t.Fatalf("Read32(FIFO) = %d, %v; want 101", v, err)
	}
	p.with(func(p *peer) {
		if p.pops != 1 || p.replays < 1 {
			t.Errorf("FIFO popped %d times, %d replays; want 1 pop, at least 1 replay", p.pops, p.replays)
		}
	})
	if v, err := b.Read32(ctx, peerFIFO); err != nil || v != 102 {
		t.Fatalf("next Read32(FIFO) = %d, %v; want 102", v, err)
	}
	if st := b.Stats(); st.Timeouts < 1 || st.Retries < 1 || st.Failures != 0 {
		t.Errorf("Stats = %+v, want a timeout and a retry", st)
	}

	// The same for a write: lost answer, the retry must not push twice.
	p.with(func(p *peer) { p.fifo = nil; p.drop = 1 })
	if err := b.Write32(ctx, peerFIFO, 7); err != nil {
		t.Fatal(err)
	}
	p.with(func(p *peer) {
		if !slices.Equal(p.fifo, []uint32{7}) {
			t.Errorf("FIFO after a retried push = %v, want [7]", p.fifo)
		}
	})
}

func TestStaleResponsesDiscarded(t *testing.T) {
	b, p, _ := newBridge(t, Options{Timeout: calm})
	syncBridge(t, b)
	p.with(func(p *peer) { p.ram[0x8] = 0x5150; p.stale = 1 })
	v, err := b.Read32(testCtx(t), 0x8)
	if err != nil || v != 0x5150 {
		t.Fatalf("Read32 = 0x%x, %v; want 0x5150, not a stale answer", v, err)
	}
	if st := b.Stats(); st.Stale != 2 || st.Retries != 0 {
		t.Errorf("Stats = %+v, want 2 stale, 0 retries", st)
	}
}

func TestGarbageBeforeFrame(t *testing.T) {
	b, p, _ := newBridge(t, Options{Timeout: calm})
	syncBridge(t, b)
	garbage := []byte{0x00, 0xFF, 0x13, 0x5A, 0x5A, 0xA5, 0x07, 0x01, 0x00, 0x01, 0x00, 0x99, 0xA5, 0x5A, 0x5A}
	p.with(func(p *peer) { p.ram[0xC] = 77; p.garbage = [][]byte{garbage} })
	v, err := b.Read32(testCtx(t), 0xC)
	if err != nil || v != 77 {
		t.Fatalf("Read32 = %d, %v", v, err)
	}
	st := b.Stats()
	if st.Retries != 0 || st.BadHeaders != 1 || st.DroppedBytes != uint64(len(garbage)) {
		t.Errorf("Stats = %+v, want no retry, 1 bad header, %d dropped bytes", st, len(garbage))
	}
}

// noDeadline is a context without a deadline: the bridge's own attempts
// bound the request (the last one waits for the caller's deadline, when
// there is one).
func noDeadline(t testing.TB) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return ctx
}

func TestSilentPeerGivesUp(t *testing.T) {
	b, p, _ := newSyncedBridge(t, Options{Timeout: 40 * time.Millisecond, MaxAttempts: 3})
	p.with(func(p *peer) { p.silent = true })
	before := peerRequests(p)
	_, err := b.Read32(noDeadline(t), 0x10)
	if err == nil {
		t.Fatal("Read32 from a silent device succeeded")
	}
	if !errors.Is(err, drivers.ErrTimeout) || drivers.ClassOf(err) != drivers.ClassInfra {
		t.Errorf("error %v: want a timeout classed infrastructure (got class %v)", err, drivers.ClassOf(err))
	}
	for _, s := range []string{testBoard, "read32 0x00000010", "3 attempts", "no answer", "check the bridge cable and baud rate"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not mention %q", err, s)
		}
	}
	eventually(t, "device received 3 copies", func() bool { return peerRequests(p)-before == 3 })
	if st := b.Stats(); st.Timeouts != 3 || st.Retries != 2 || st.Failures != 1 {
		t.Errorf("Stats = %+v", st)
	}
}

func TestSilentPeerDefaults(t *testing.T) {
	// Default: 8 attempts, the adaptive deadline doubling from at least
	// 50 ms to 200 ms + line time, the last one the whole 200 ms + line.
	b, p, _ := newSyncedBridge(t, Options{MinTimeout: -1})
	b.minTimeout = DefaultMinTimeout
	p.with(func(p *peer) { p.silent = true })
	before := peerRequests(p)
	err := b.Write32(noDeadline(t), 0x10, 1)
	if !errors.Is(err, drivers.ErrTimeout) || !strings.Contains(err.Error(), "8 attempts") {
		t.Fatalf("Write32 from a silent device: %v", err)
	}
	eventually(t, "device received 8 copies", func() bool { return peerRequests(p)-before == 8 })
}

func TestAttemptWait(t *testing.T) {
	b := &Bridge{baud: DefaultBaud, attempts: 4, minTimeout: 20 * time.Millisecond}
	full, line := 2*time.Second, time.Millisecond
	if got := b.attemptWait(full, line, 0); got != full {
		t.Errorf("before any answer was timed: %v, want the full %v", got, full)
	}
	for range 20 {
		b.est.sample(2 * time.Millisecond)
	}
	// 2 ms turnaround, no deviation: the 20 ms floor, plus line time.
	if got, want := b.attemptWait(full, line, 0), 21*time.Millisecond; got < want || got > want+time.Millisecond {
		t.Errorf("first attempt: %v, want about %v", got, want)
	}
	if got, want := b.attemptWait(full, line, 2), 4*b.attemptWait(full, line, 0); got != want {
		t.Errorf("after two timeouts: %v, want %v (doubling)", got, want)
	}
	if got := b.attemptWait(full, line, 3); got != full {
		t.Errorf("last attempt: %v, want the full %v", got, full)
	}
	// A slow answer widens the deadline at once.
	b.est.sample(400 * time.Millisecond)
	if got := b.attemptWait(full, line, 0); got < 300*time.Millisecond {
		t.Errorf("after a 400 ms answer: %v, want at least 300 ms", got)
	}
	// A floor at or above the full timeout turns adaptation off.
	b.minTimeout = full
	if got := b.attemptWait(full, line, 0); got != full {
		t.Errorf("fixed deadline: %v, want %v", got, full)
	}
}

func TestLostAnswerCostsTheAdaptiveDeadline(t *testing.T) {
	// Full timeout 3 s; the caller allows 1.5 s. With a fixed deadline a
	// lost answer would run the caller out of time; timed answers bring
	// the attempt's deadline down to tens of milliseconds.
	b, p, _ := newSyncedBridge(t, Options{Timeout: 3 * time.Second})
	b.minTimeout = 30 * time.Millisecond
	ctx := testCtx(t)
	for i := range 20 {
		if _, err := b.Read32(ctx, uint32ToAddr(i)); err != nil {
			t.Fatal(err)
		}
	}
	if st := b.Stats(); st.Timeout <= 0 || st.Timeout >= time.Second {
		t.Fatalf("after 20 answers: Stats = %+v, want an adaptive deadline under a second", st)
	}
	p.with(func(p *peer) { p.ram[0x20] = 42; p.drop = 2 })
	cctx, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
	defer cancel()
	v, err := b.Read32(cctx, 0x20)
	if err != nil || v != 42 {
		t.Fatalf("Read32 with two answers lost = %d, %v", v, err)
	}
	// Two timeouts are the lost answers. On a loaded machine an answer may
	// also come in after its attempt's deadline: that timeout is a needless
	// retry, counted in Late once the answer's second copy arrives (taken in
	// by the next request), so timeouts less late answers is what was lost.
	eventually(t, "two timeouts besides late answers", func() bool {
		b.Read32(ctx, 0)
		st := b.Stats()
		return st.Timeouts-st.Late == 2
	})
	if st := b.Stats(); st.Retries != st.Timeouts || st.Failures != 0 {
		t.Errorf("Stats = %+v, want a retry per timeout and no failure", st)
	}
}

func uint32ToAddr(i int) uint64 { return uint64(4 * i) }

func TestLastAttemptWaitsForTheCaller(t *testing.T) {
	// Two attempts of 100 ms each; the device takes 600 ms over the
	// request. The last attempt waits for the caller's 3 s, not 100 ms,
	// and the write executes once.
	b, p, _ := newSyncedBridge(t, Options{Timeout: 100 * time.Millisecond, MaxAttempts: 2})
	p.with(func(p *peer) { p.slow = 600 * time.Millisecond })
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := b.Write32(ctx, peerFIFO, 9); err != nil {
		t.Fatalf("Write32 to a device slow to execute: %v", err)
	}
	p.with(func(p *peer) {
		if !slices.Equal(p.fifo, []uint32{9}) {
			t.Errorf("FIFO = %v, want [9]: executed once", p.fifo)
		}
	})
	// The duplicate answer to the retry comes in later: the first was
	// late, not lost.
	if _, err := b.Read32(ctx, 0); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a late answer counted", func() bool {
		b.Read32(ctx, 0)
		return b.Stats().Late == 1
	})
}

func TestDamagedAnswersHaveTheirOwnBudget(t *testing.T) {
	// Two attempts may time out, but the line damages six answers in a row:
	// each is re-requested at once, and the read succeeds.
	b, p, _ := newSyncedBridge(t, Options{Timeout: calm, MaxAttempts: 2})
	p.with(func(p *peer) { p.ram[0x40] = 0x0BADF00D; p.corrupt = []int{8, 8, 8, 8, 8, 8} })
	v, err := b.Read32(testCtx(t), 0x40)
	if err != nil || v != 0x0BADF00D {
		t.Fatalf("Read32 = 0x%x, %v", v, err)
	}
	if st := b.Stats(); st.Resends != 6 || st.Retries != 6 || st.Timeouts != 0 || st.CRCErrors != 6 {
		t.Errorf("Stats = %+v, want 6 resends, no timeout", st)
	}
	// The resend budget is bounded too.
	b.resends = 3
	p.with(func(p *peer) { p.corrupt = []int{8, 8, 8, 8, 8, 8} })
	_, err = b.Read32(testCtx(t), 0x40)
	if !errors.Is(err, ErrCRCMismatch) || drivers.ClassOf(err) != drivers.ClassInfra || !strings.Contains(err.Error(), "4 damaged answers") {
		t.Errorf("Read32 past the resend budget: %v (class %v)", err, drivers.ClassOf(err))
	}
}

func TestNoisyLineSplitsReadBursts(t *testing.T) {
	b, p, _ := newSyncedBridge(t, Options{Timeout: calm})
	ctx := testCtx(t)
	want := make([]uint32, 64)
	for i := range want {
		want[i] = 0xC0DE0000 + uint32(i)
		p.with(func(p *peer) { p.ram[uint32(4*i)] = want[i] })
	}
	// A clean line: one request.
	got := make([]uint32, 64)
	if err := b.ReadBurst(ctx, 0, got); err != nil || !slices.Equal(got, want) {
		t.Fatalf("ReadBurst on a clean line: %v", err)
	}
	if st := b.Stats(); st.SplitBursts != 0 || st.ReadChunk != MaxCount {
		t.Fatalf("clean line: Stats = %+v, want no split", st)
	}
	// One answer in three damaged: answers of 13 bytes, about 2.6% of
	// bytes hit, as far as the host can tell.
	for i := range 30 {
		if i%3 == 0 {
			p.with(func(p *peer) { p.corrupt = []int{8} })
		}
		if _, err := b.Read32(ctx, uint32ToAddr(i%64)); err != nil {
			t.Fatal(err)
		}
	}
	before := peerRequests(p)
	clear(got)
	if err := b.ReadBurst(ctx, 0, got); err != nil || !slices.Equal(got, want) {
		t.Fatalf("ReadBurst on a noisy line: %v (%x)", err, got)
	}
	st := b.Stats()
	if st.SplitBursts != 1 || st.ReadChunk >= 64 {
		t.Errorf("noisy line: Stats = %+v, want the burst split", st)
	}
	// At one damaged answer in three, pieces of about 2 words (an answer
	// of 17 bytes); as clean pieces come back the estimate recovers.
	if n := peerRequests(p) - before; n < 4 {
		t.Errorf("the 64-word burst took %d requests, want it split in pieces", n)
	}
}

func TestCallerDeadlineBoundsRetries(t *testing.T) {
	// 4 attempts of 5 s: only the caller's deadline can end this early.
	b, p, _ := newBridge(t, Options{Timeout: 5 * time.Second})
	syncBridge(t, b)
	p.with(func(p *peer) { p.silent = true })
	const budget = 150 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	start := time.Now()
	_, err := b.Read32(ctx, 0x10)
	took := time.Since(start)
	if !errors.Is(err, context.DeadlineExceeded) || drivers.ClassOf(err) != drivers.ClassInfra {
		t.Fatalf("Read32 past the caller's deadline: %v (class %v)", err, drivers.ClassOf(err))
	}
	// Correctness, not speed: the call must end at the caller's deadline,
	// not after its own 4 x 5 s.
	if took > budget+2*time.Second {
		t.Errorf("Read32 returned %v after a %v deadline", took, budget)
	}
	// No attempt once the caller's context is done.
	before := peerRequests(p)
	if _, err := b.Read32(ctx, 0x10); !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "not attempted") {
		t.Errorf("Read32 with an expired context: %v", err)
	}
	time.Sleep(20 * time.Millisecond)
	if n := peerRequests(p) - before; n != 0 {
		t.Errorf("device received %d requests after the deadline", n)
	}
}

func TestContextCancel(t *testing.T) {
	b, p, _ := newBridge(t, Options{Timeout: 5 * time.Second})
	syncBridge(t, b)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var rx0 int
	p.with(func(p *peer) { rx0 = p.rxBytes })
	if err := b.Write32(ctx, 0, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("Write32 with a cancelled context: %v", err)
	}
	time.Sleep(20 * time.Millisecond)
	p.with(func(p *peer) {
		if p.rxBytes != rx0 || p.ram[0] != 0 {
			t.Errorf("a cancelled Write32 reached the device (%d bytes)", p.rxBytes-rx0)
		}
	})

	// Cancelled while waiting for an answer.
	p.with(func(p *peer) { p.silent = true })
	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(30*time.Millisecond, cancel)
	_, err := b.Read32(ctx, 0)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "attempt 1") {
		t.Fatalf("Read32 cancelled while waiting: %v", err)
	}
	// The bridge is still usable.
	p.with(func(p *peer) { p.silent = false })
	if _, err := b.Read32(testCtx(t), 0); err != nil {
		t.Fatalf("Read32 after a cancelled one: %v", err)
	}
}

func TestStatusErrorsNotRetried(t *testing.T) {
	b, p, _ := newBridge(t, Options{Timeout: calm})
	syncBridge(t, b)
	ctx := testCtx(t)
	cases := []struct {
		name  string
		do    func() error
		want  error
		class drivers.Class
	}{
		{"read undecoded", func() error { _, err := b.Read32(ctx, 0x9000); return err }, ErrBusError, drivers.ClassSetup},
		{"write read-only", func() error { return b.Write32(ctx, peerROAddr, 1) }, ErrReadOnly, drivers.ClassSetup},
		{"burst into undecoded", func() error { return b.WriteBurst(ctx, peerFIFOEnd-8, []uint32{1, 2, 3, 4}) }, ErrBusError, drivers.ClassSetup},
		{"push into a full FIFO", func() error { return b.Write32(ctx, peerFullAddr, 1) }, ErrRefused, drivers.ClassDesign},
	}
	for _, c := range cases {
		before := peerRequests(p)
		err := c.do()
		if !errors.Is(err, c.want) || drivers.ClassOf(err) != c.class {
			t.Errorf("%s: %v (class %v), want %v (class %v)", c.name, err, drivers.ClassOf(err), c.want, c.class)
		}
		if err != nil && !strings.Contains(err.Error(), testBoard) {
			t.Errorf("%s: error %q does not name the board", c.name, err)
		}
		if n := peerRequests(p) - before; n != 1 {
			t.Errorf("%s: sent %d times, want once (no retry)", c.name, n)
		}
	}
	// The burst stopped at the failing word, after two pushes.
	p.with(func(p *peer) {
		if !slices.Equal(p.fifo, []uint32{1, 2}) {
			t.Errorf("FIFO after the failed burst = %v, want [1 2]", p.fifo)
		}
	})
}

func TestBusyRetriedAfterPause(t *testing.T) {
	b, p, _ := newBridge(t, Options{Timeout: calm, BusyPause: 5 * time.Millisecond, MaxAttempts: 3})
	syncBridge(t, b)
	ctx := testCtx(t)
	p.with(func(p *peer) { p.busy = 2 })
	if err := b.Write32(ctx, peerFIFO, 9); err != nil {
		t.Fatalf("Write32 after BUSY: %v", err)
	}
	p.with(func(p *peer) {
		if !slices.Equal(p.fifo, []uint32{9}) {
			t.Errorf("FIFO = %v, want one push", p.fifo)
		}
	})
	if st := b.Stats(); st.Busy != 2 || st.Retries != 2 {
		t.Errorf("Stats = %+v, want 2 BUSY, 2 retries", st)
	}

	p.with(func(p *peer) { p.busy = 10 })
	err := b.Write32(ctx, 0, 1)
	if !errors.Is(err, ErrBusy) || drivers.ClassOf(err) != drivers.ClassInfra || !strings.Contains(err.Error(), "3 attempts") {
		t.Fatalf("Write32 to a device that stays busy: %v (class %v)", err, drivers.ClassOf(err))
	}
}

func TestDefaultTimeout(t *testing.T) {
	b := &Bridge{baud: DefaultBaud}
	// READ: 12 + 13 bytes of 10 bits at 921600 baud, the page's 271 µs.
	if got, want := b.attemptTimeout(12, 13), DefaultBaseTimeout+271267*time.Nanosecond; got != want {
		t.Errorf("READ timeout %v, want %v", got, want)
	}
	b.baud, b.pacing = 115200, time.Millisecond
	if got, want := b.attemptTimeout(268, 9), DefaultBaseTimeout+24045138*time.Nanosecond+268*time.Millisecond; got != want {
		t.Errorf("paced 64-word WRITE_BURST timeout at 115200 baud %v, want %v", got, want)
	}
	b.timeout = 30 * time.Millisecond
	if got := b.attemptTimeout(12, 13); got != b.timeout {
		t.Errorf("explicit timeout ignored: %v", got)
	}
}

func TestAddressChecks(t *testing.T) {
	b, p, _ := newBridge(t, Options{Timeout: calm})
	ctx := testCtx(t)
	for _, c := range []struct {
		name string
		err  error
	}{
		{"unaligned", func() error { _, err := b.Read32(ctx, 0x3); return err }()},
		{"beyond 32 bits", b.Write32(ctx, 1<<32, 0)},
		{"burst beyond 32 bits", b.ReadBurst(ctx, 0xFFFFFFF8, make([]uint32, 3))},
	} {
		if drivers.ClassOf(c.err) != drivers.ClassSetup {
			t.Errorf("%s: %v (class %v), want a setup error", c.name, c.err, drivers.ClassOf(c.err))
		}
	}
	if err := b.ReadBurst(ctx, 0xFFFFFFF8, make([]uint32, 2)); err != nil && !errors.Is(err, ErrBusError) {
		t.Errorf("burst ending at 0xffffffff: %v", err)
	}
	if peerRequests(p) != 2 {
		t.Errorf("device received %d requests, want INFO and the last burst", peerRequests(p))
	}
}

func TestInfoChecks(t *testing.T) {
	t.Run("magic", func(t *testing.T) {
		b, p, _ := newBridge(t, Options{})
		p.with(func(p *peer) { p.magic = 0x12345678 })
		_, err := b.Read32(testCtx(t), 0)
		if !errors.Is(err, ErrProtocol) || !strings.Contains(err.Error(), "magic") || drivers.ClassOf(err) != drivers.ClassInfra {
			t.Fatalf("Read32 behind a wrong INFO magic: %v", err)
		}
	})
	t.Run("version", func(t *testing.T) {
		b, p, _ := newBridge(t, Options{})
		p.with(func(p *peer) { p.version = 2 })
		if _, err := b.Info(testCtx(t)); !errors.Is(err, ErrProtocol) || !strings.Contains(err.Error(), "version 2") {
			t.Fatalf("Info from a version-2 device: %v", err)
		}
	})
	t.Run("smaller max count", func(t *testing.T) {
		b, p, _ := newBridge(t, Options{Timeout: calm})
		p.with(func(p *peer) { p.maxCount = 100 })
		if err := b.ReadBurst(testCtx(t), 0, make([]uint32, 250)); err != nil {
			t.Fatal(err)
		}
		p.with(func(p *peer) {
			// INFO's COUNT asks for a window, which this device ignores.
			if want := []uint16{DefaultWindow, 100, 100, 50}; !slices.Equal(p.counts, want) {
				t.Errorf("COUNTs %v, want %v", p.counts, want)
			}
		})
	})
}

func TestTransmitPacing(t *testing.T) {
	// Paced bytes reach the device one by one. On a loaded machine a pause
	// can outlast the device's 100 ms inter-byte timeout, which drops the
	// partial frame; the retry recovers, so only the outcome is checked.
	b, p, _ := newBridge(t, Options{Timeout: time.Second, Pacing: 100 * time.Microsecond})
	src := []uint32{1, 2, 3, 4, 5, 6, 7, 8}
	ctx := testCtx(t)
	if err := b.WriteBurst(ctx, 0x100, src); err != nil {
		t.Fatal(err)
	}
	dst := make([]uint32, len(src))
	if err := b.ReadBurst(ctx, 0x100, dst); err != nil || !slices.Equal(src, dst) {
		t.Fatalf("ReadBurst = %v, %v", dst, err)
	}
	if st := b.Stats(); st.Retries != 0 {
		t.Logf("%d retries (scheduling stalls longer than 100 ms between paced bytes)", st.Retries)
	}
	p.with(func(p *peer) {
		if p.ram[0x11c] != 8 {
			t.Errorf("device RAM 0x11c = %d, want 8", p.ram[0x11c])
		}
	})
}

func TestCloseDuringRequest(t *testing.T) {
	b, p, _ := newBridge(t, Options{Timeout: calm})
	syncBridge(t, b)
	p.with(func(p *peer) { p.silent = true })
	errc := make(chan error, 1)
	go func() { _, err := b.Read32(testCtx(t), 0); errc <- err }()
	time.Sleep(30 * time.Millisecond)
	if err := b.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := <-errc; !errors.Is(err, ErrClosed) {
		t.Fatalf("Read32 interrupted by Close: %v", err)
	}
	if _, err := b.Read32(testCtx(t), 0); !errors.Is(err, ErrClosed) {
		t.Fatalf("Read32 after Close: %v", err)
	}
}

func TestConcurrentCallers(t *testing.T) {
	b, _, _ := newBridge(t, Options{Timeout: calm})
	ctx := testCtx(t)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 25 {
				a := uint64(g*0x100 + i*4)
				if err := b.Write32(ctx, a, uint32(g<<16|i)); err != nil {
					t.Error(err)
					return
				}
				if v, err := b.Read32(ctx, a); err != nil || v != uint32(g<<16|i) {
					t.Errorf("Read32(0x%x) = 0x%x, %v", a, v, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if st := b.Stats(); st.Requests != 201 || st.Stale != 0 {
		t.Errorf("Stats = %+v, want 201 requests, none stale", st)
	}
}

func TestOpenErrors(t *testing.T) {
	_, err := Open("/dev/does-not-exist-uartbridge", DefaultBaud, Options{Board: testBoard})
	if err == nil || drivers.ClassOf(err) != drivers.ClassInfra || !strings.Contains(err.Error(), testBoard) {
		t.Errorf("Open of a missing port: %v", err)
	}
	_, path := openPTY(t)
	if _, err := Open(path, 12345, Options{Board: testBoard}); drivers.ClassOf(err) != drivers.ClassSetup {
		t.Errorf("Open at 12345 baud: %v (class %v), want a setup error", err, drivers.ClassOf(err))
	}
	if _, err := Open(path, 0, Options{}); drivers.ClassOf(err) != drivers.ClassSetup {
		t.Errorf("Open at 0 baud: %v", err)
	}
}

// TestNewOverPipe runs the bridge over an in-memory pipe (New), and checks
// that a closed far end fails requests at once instead of timing out.
func TestNewOverPipe(t *testing.T) {
	host, dev := net.Pipe()
	p := newPeer(dev)
	defer p.close()
	b := New(host, Options{Board: testBoard, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer b.Close()
	ctx := testCtx(t)
	if err := b.Write32(ctx, 0x20, 5); err != nil {
		t.Fatal(err)
	}
	if v, err := b.Read32(ctx, 0x20); err != nil || v != 5 {
		t.Fatalf("Read32 = %d, %v", v, err)
	}
	dev.Close()
	_, err := b.Read32(ctx, 0x20)
	if err == nil || drivers.ClassOf(err) != drivers.ClassInfra || errors.Is(err, drivers.ErrTimeout) || !strings.Contains(err.Error(), "bridge port") {
		t.Fatalf("Read32 after the far end closed: %v", err)
	}
}

// A request answered late is retried needlessly, and the device answers
// the retry's copy too: that duplicate can reach the host while the next
// request waits for its answer. It is a stale answer, not an answer's
// worth of garbled bytes, so the next request is not re-sent for it. Once,
// the duplicate armed the garbled-answer timer, and a request whose answer
// took longer than the timer's quiet spell was re-sent at once: a needless
// copy, whose own duplicate answer did the same to the request after it
// (WRITE_BURSTs of 64 words at 115200 baud fell to a fifth of the line
// rate, rtl's BenchmarkCosim).
func TestDuplicateAnswerBeforeTheAnswerIsNotGarbled(t *testing.T) {
	b, p, _ := newSyncedBridge(t, Options{Timeout: 3 * time.Second})
	b.minTimeout = 100 * time.Millisecond
	ctx := testCtx(t)
	for i := range 10 {
		if _, err := b.Read32(ctx, uint32ToAddr(i)); err != nil {
			t.Fatal(err)
		}
	}
	before := b.Stats()
	for i := range 5 {
		// The duplicate of the previous answer first, then this
		// request's answer 10 ms later: well within the adaptive
		// deadline, far beyond the garbled timer's quiet spell.
		p.with(func(p *peer) { p.lead, p.slow = true, 10*time.Millisecond })
		if _, err := b.Read32(ctx, uint32ToAddr(i)); err != nil {
			t.Fatal(err)
		}
	}
	st := b.Stats()
	if st.Stale-before.Stale < 5 {
		t.Fatalf("Stats = %+v: %d stale answers, want the 5 duplicates (the test shows nothing)", st, st.Stale-before.Stale)
	}
	if st.Resends != before.Resends || st.Retries != before.Retries {
		t.Errorf("%d re-sends and %d retries for 5 reads each preceded by a duplicate answer, want none (%+v)",
			st.Resends-before.Resends, st.Retries-before.Retries, st)
	}
}
