package uartbridge

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/labrunner/labrunner/drivers"
	"github.com/labrunner/labrunner/internal/syncbuf"
)

// windowedBridge is newSyncedBridge on a peer that offers a window of up to
// maxWindow requests.
func windowedBridge(t *testing.T, maxWindow int, opts Options) (*Bridge, *peer) {
	t.Helper()
	if opts.Timeout == 0 {
		opts.Timeout = calm
	}
	master, path := openPTY(t)
	p := newPeer(master)
	p.with(func(p *peer) { p.maxWindow = maxWindow })
	if opts.Board == "" {
		opts.Board = testBoard
	}
	if opts.MinTimeout == 0 {
		opts.MinTimeout = calm
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(&syncbuf.Buffer{}, nil))
	}
	b, err := Open(path, DefaultBaud, opts)
	if err != nil {
		p.close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		b.Close()
		p.close()
	})
	syncBridge(t, b)
	return b, p
}

// pops is a batch of n single reads of the peer's FIFO window's first
// address: n pops, in order.
func pops(n int) ([]drivers.Access, []uint32) {
	out := make([]uint32, n)
	acc := make([]drivers.Access, n)
	for i := range acc {
		acc[i] = drivers.Access{Addr: peerFIFO, Words: out[i : i+1]}
	}
	return acc, out
}

func fill(p *peer, n int) []uint32 {
	w := make([]uint32, n)
	for i := range w {
		w[i] = 0xF1F0_0000 + uint32(i)
	}
	p.with(func(p *peer) { p.fifo = append([]uint32(nil), w...) })
	return w
}

// checkPops runs a batch of n pops and checks that each entry was popped
// once, in order, whatever the line did.
func checkPops(t *testing.T, b *Bridge, p *peer, n int) {
	t.Helper()
	want := fill(p, n)
	acc, got := pops(n)
	if err := b.Batch(testCtx(t), acc); err != nil {
		t.Fatalf("Batch: %v", err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("popped %x, want %x", got, want)
	}
	p.with(func(p *peer) {
		if p.pops != n || len(p.fifo) != 0 {
			t.Fatalf("%d pops, %d entries left; want %d pops", p.pops, len(p.fifo), n)
		}
	})
}

func TestWindowOpensAndOverlaps(t *testing.T) {
	b, p := windowedBridge(t, 8, Options{})
	if st := b.Stats(); st.Window != 8 {
		t.Fatalf("window %d after asking %d of a device offering 8", st.Window, DefaultWindow)
	}
	r0 := b.Stats()
	checkPops(t, b, p, 40)
	st := b.Stats()
	if d := st.Requests - r0.Requests; d != 40 || st.Retries != r0.Retries || st.Stale != r0.Stale {
		t.Fatalf("40 pops: %d requests, %d retries, %d stale; want 40, 0, 0", d, st.Retries-r0.Retries, st.Stale-r0.Stale)
	}
	if st.Pipelined-r0.Pipelined != 40 || st.Batches-r0.Batches != 1 {
		t.Fatalf("40 pops: %d pipelined in %d batches, want 40 in 1", st.Pipelined-r0.Pipelined, st.Batches-r0.Batches)
	}
	p.with(func(p *peer) {
		if p.maxBurst < 2 || p.sequence != 0 || p.replays != 0 {
			t.Fatalf("the device heard at most %d requests at once (%d out of turn, %d replays): the window was not used", p.maxBurst, p.sequence, p.replays)
		}
		for _, c := range p.cmds[1:] {
			if c != CmdWindowed|CmdRead {
				t.Fatalf("command %v inside the window, want windowed READs only", c)
			}
		}
	})
	// Mixed accesses, bursts longer than one request included.
	long := make([]uint32, 600)
	for i := range long {
		long[i] = uint32(i) * 3
	}
	back := make([]uint32, 600)
	var one uint32
	acc := []drivers.Access{
		{Addr: 0x0, Write: true, Words: long[:256]},
		{Addr: 0x400, Write: true, Words: long[256:512]},
		{Addr: 0x800, Write: true, Words: long[512:]},
		{Addr: 0x0, Words: back},
		{Addr: peerROAddr, Words: []uint32{0}},
		{Addr: 0x10, Write: true, Words: []uint32{77}},
		{Addr: 0x10, Words: []uint32{0}},
	}
	acc[4].Words = []uint32{0}
	if err := b.Batch(testCtx(t), acc); err != nil {
		t.Fatal(err)
	}
	one = acc[6].Words[0]
	if !slices.Equal(back[:0x10/4], long[:0x10/4]) || back[5] != long[5] || back[599] != long[599] || acc[4].Words[0] != peerID || one != 77 {
		t.Fatalf("read back %v..., ID 0x%x, 0x10 = %d", back[:8], acc[4].Words[0], one)
	}
	// A long burst alone goes through the window too.
	r := make([]uint32, 700)
	if err := b.ReadBurst(testCtx(t), 0, r); err != nil || r[100] != long[100] {
		t.Fatalf("ReadBurst of 700: %v (word 100 = %d)", err, r[100])
	}
}

// The line loses or damages answers, or a request: every pop still happens
// once, in order, and the counters say what the line cost.
func TestWindowRecovers(t *testing.T) {
	for _, c := range []struct {
		name  string
		harm  func(p *peer)
		check func(t *testing.T, d Stats, p *peer)
	}{
		{"first answer lost", func(p *peer) { p.drop = 1 }, func(t *testing.T, d Stats, p *peer) {
			// A later answer shows it lost: asked again at once, replayed.
			if d.Resends < 1 || p.replays < 1 {
				t.Errorf("resends %d, replays %d", d.Resends, p.replays)
			}
		}},
		{"answer damaged", func(p *peer) { p.corrupt = []int{8} }, func(t *testing.T, d Stats, p *peer) {
			if d.CRCErrors != 1 || d.Resends < 1 || p.replays < 1 {
				t.Errorf("crc errors %d, resends %d, replays %d", d.CRCErrors, d.Resends, p.replays)
			}
		}},
		{"first request not heard", func(p *peer) { p.deaf = 1 }, func(t *testing.T, d Stats, p *peer) {
			// The ones after it are out of turn; sent again from it.
			if p.sequence < 1 || d.Retries < 1 {
				t.Errorf("out of turn %d, retries %d", p.sequence, d.Retries)
			}
		}},
		{"a middle request not heard", func(p *peer) { p.deaf, p.spare = 1, 7 }, func(t *testing.T, d Stats, p *peer) {
			if p.sequence < 1 || d.Retries < 1 {
				t.Errorf("out of turn %d, retries %d", p.sequence, d.Retries)
			}
		}},
		{"a middle answer lost", func(p *peer) { p.drop, p.spare = 1, 9 }, func(t *testing.T, d Stats, p *peer) {
			if d.Resends < 1 || p.replays < 1 {
				t.Errorf("resends %d, replays %d", d.Resends, p.replays)
			}
		}},
		{"the last answer lost", func(p *peer) { p.drop, p.spare = 1, 19 }, func(t *testing.T, d Stats, p *peer) {
			// Nothing after it to show the loss: its deadline does.
			if d.Timeouts != 1 || p.replays != 1 {
				t.Errorf("timeouts %d, replays %d", d.Timeouts, p.replays)
			}
		}},
		{"many answers lost", func(p *peer) { p.drop, p.spare = 6, 3 }, nil},
		{"busy", func(p *peer) { p.busy = 2 }, func(t *testing.T, d Stats, p *peer) {
			if d.Busy < 2 {
				t.Errorf("busy %d", d.Busy)
			}
		}},
		{"stale answers", func(p *peer) { p.stale = 3 }, func(t *testing.T, d Stats, p *peer) {
			if d.Stale < 1 {
				t.Errorf("stale %d", d.Stale)
			}
		}},
		{"device reset", func(p *peer) { p.reset() }, func(t *testing.T, d Stats, p *peer) {
			// Out of turn with the window closed: opened again.
			if p.sequence < 1 || p.cmds[len(p.cmds)-1] != CmdWindowed|CmdRead {
				t.Errorf("out of turn %d", p.sequence)
			}
			if d.Requests < 21 {
				t.Errorf("%d requests: the window was not opened again (INFO)", d.Requests)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, p := windowedBridge(t, 16, Options{BusyPause: 5 * time.Millisecond, Timeout: 300 * time.Millisecond, MinTimeout: 50 * time.Millisecond})
			s0 := b.Stats()
			p.with(c.harm)
			checkPops(t, b, p, 20)
			st := b.Stats()
			d := Stats{Resends: st.Resends - s0.Resends, CRCErrors: st.CRCErrors - s0.CRCErrors, Retries: st.Retries - s0.Retries, Timeouts: st.Timeouts - s0.Timeouts,
				Busy: st.Busy - s0.Busy, Stale: st.Stale - s0.Stale, Requests: st.Requests - s0.Requests, Failures: st.Failures - s0.Failures}
			if d.Failures != 0 {
				t.Fatalf("%d failures", d.Failures)
			}
			if c.check != nil {
				p.with(func(p *peer) { c.check(t, d, p) })
			}
			// The session goes on in turn.
			checkPopsAgain(t, b, p, 5)
		})
	}
}

func checkPopsAgain(t *testing.T, b *Bridge, p *peer, n int) {
	t.Helper()
	p.with(func(p *peer) { p.pops = 0 })
	checkPops(t, b, p, n)
}

// A device without the capability (the RTL bridge): INFO asks, gets 4
// words, and everything goes one request at a time, plain.
func TestWindowOldDevice(t *testing.T) {
	b, p := windowedBridge(t, 0, Options{})
	info, err := b.Info(testCtx(t))
	if err != nil || info.Window != 1 || info.Caps != 0 {
		t.Fatalf("Info %+v %v", info, err)
	}
	checkPops(t, b, p, 20)
	if err := b.ReadBurst(testCtx(t), 0, make([]uint32, 600)); err != nil {
		t.Fatal(err)
	}
	p.with(func(p *peer) {
		if p.maxBurst != 1 {
			t.Errorf("an old device heard %d requests at once", p.maxBurst)
		}
		for _, c := range p.cmds {
			if c.Windowed() {
				t.Fatalf("an old device got %v", c)
			}
		}
	})
	if st := b.Stats(); st.Window != 1 || st.Pipelined != 0 || st.Batches != 0 {
		t.Fatalf("window %d, %d requests pipelined in %d batches", st.Window, st.Pipelined, st.Batches)
	}
}

// A request answered with an error status fails the batch with that
// error; the requests sent after it ran (a window is not a transaction),
// and the session goes on without a new INFO.
func TestWindowErrorStatus(t *testing.T) {
	b, p := windowedBridge(t, 16, Options{})
	acc := []drivers.Access{
		{Addr: peerFIFO, Write: true, Words: []uint32{1}},
		{Addr: peerROAddr, Write: true, Words: []uint32{2}},
		{Addr: peerFIFO, Write: true, Words: []uint32{3}},
	}
	err := b.Batch(testCtx(t), acc)
	if !errors.Is(err, ErrReadOnly) || drivers.ClassOf(err) != drivers.ClassSetup {
		t.Fatalf("Batch with a write to a read-only register: %v", err)
	}
	p.with(func(p *peer) {
		if !slices.Equal(p.fifo, []uint32{1, 3}) {
			t.Errorf("FIFO %v: want both pushes, in order", p.fifo)
		}
	})
	n0 := len(p.cmds)
	if v, err := b.Read32(testCtx(t), peerROAddr); err != nil || v != peerID {
		t.Fatalf("Read32 after: 0x%x %v", v, err)
	}
	p.with(func(p *peer) {
		if got := p.cmds[n0:]; !slices.Equal(got, []Cmd{CmdWindowed | CmdRead}) {
			t.Errorf("after a batch that failed with a status the device saw %v, want one windowed READ", got)
		}
	})
}

// A device that stops answering: the batch fails at its deadline as an
// infrastructure error, and the next access starts a new session.
func TestWindowSilentDevice(t *testing.T) {
	b, p := windowedBridge(t, 16, Options{Timeout: 100 * time.Millisecond, MinTimeout: 20 * time.Millisecond, MaxAttempts: 3})
	p.with(func(p *peer) { p.silent = true })
	acc, _ := pops(10)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	err := b.Batch(ctx, acc)
	if err == nil || drivers.ClassOf(err) != drivers.ClassInfra {
		t.Fatalf("Batch to a silent device: %v", err)
	}
	p.with(func(p *peer) { p.silent = false; p.cmds = nil })
	checkPopsAgain(t, b, p, 3)
	p.with(func(p *peer) {
		if len(p.cmds) == 0 || p.cmds[0] != CmdInfo {
			t.Errorf("after a failed batch the device saw %v first, want INFO", p.cmds)
		}
	})
}

// Single accesses in a window are windowed requests; a reset device (its
// window closed) answers SEQUENCE, and the window is opened again.
func TestWindowSingleAfterReset(t *testing.T) {
	b, p := windowedBridge(t, 16, Options{})
	if err := b.Write32(testCtx(t), 0x20, 5); err != nil {
		t.Fatal(err)
	}
	p.with(func(p *peer) { p.reset(); p.cmds = nil })
	if v, err := b.Read32(testCtx(t), 0x20); err != nil || v != 5 {
		t.Fatalf("Read32 after a reset: %d %v", v, err)
	}
	p.with(func(p *peer) {
		want := []Cmd{CmdWindowed | CmdRead, CmdInfo, CmdWindowed | CmdRead}
		if !slices.Equal(p.cmds, want) {
			t.Errorf("device saw %v, want %v", p.cmds, want)
		}
	})
	if st := b.Stats(); st.Failures != 0 {
		t.Fatalf("failures %d", st.Failures)
	}
}
