package bridgetest

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/drivers"
	"github.com/labrunner/labrunner/drivers/regmap"
	"github.com/labrunner/labrunner/drivers/uartbridge"
)

// Design is the catalogue design every target carries: its register map
// gives the suite its addresses.
const Design = "bridge-example"

// PartialTimeout is the device's partial-frame timeout
// (docs/uart-bridge.md, "Resynchronisation").
const PartialTimeout = 100 * time.Millisecond

// Status codes (docs/uart-bridge.md, "Status codes").
const (
	stOK       = uint8(uartbridge.StatusOK)
	stBusError = uint8(uartbridge.StatusBusError)
	stAlign    = uint8(uartbridge.StatusAlign)
	stBadCount = uint8(uartbridge.StatusBadCount)
	stBadCmd   = uint8(uartbridge.StatusBadCmd)
	stBusy     = uint8(uartbridge.StatusBusy)
	stReadOnly = uint8(uartbridge.StatusReadOnly)
	stRefused  = uint8(uartbridge.StatusRefused)
	stSequence = uint8(uartbridge.StatusSequence)
)

// Target is one device implementation under test: its bridge UART's port
// and what INFO must say.
type Target struct {
	Name     string // in test names and errors
	Port     string // serial port path (a pseudo-terminal)
	Baud     int
	DeviceID uint32
	// Clock reads the device's own time, which its timeouts count: a
	// simulation's can run apart from the wall clock (it falls behind, and
	// makes up lag). Nil: the wall clock.
	Clock func() (time.Duration, error)
}

// now reads the target's clock.
func (s *suite) now(t *testing.T) time.Duration {
	t.Helper()
	if s.tgt.Clock == nil {
		return time.Since(s.start)
	}
	d, err := s.tgt.Clock()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// suite is one run of the tests on a target.
type suite struct {
	tgt   Target
	m     *bitstreams.Manifest
	seq   uint8 // next SEQ of hand-built frames
	start time.Time

	// Addresses from the map.
	id, version, scratch, cycleLo, ctrl, fifoLevel uint64
	buffer, push, pop                              uint64 // window bases
	bufferWords, pushWords, popWords               int
	undecoded                                      uint64
}

// Run runs every conformance test on tgt as subtests of t.
func Run(t *testing.T, tgt Target) {
	m, err := bitstreams.Default().Design(Design)
	if err != nil {
		t.Fatal(err)
	}
	s := &suite{tgt: tgt, m: m, seq: uint8(rand.Uint32()), start: time.Now()}
	regs := regmap.New(nil, m, tgt.Name)
	addr := func(name string) uint64 {
		loc, err := regs.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		return loc.Addr
	}
	win := func(name string) (uint64, int) {
		for _, w := range m.Windows {
			if w.Name == name {
				return w.Base, int(w.Size / 4)
			}
		}
		t.Fatalf("%s has no window %s", m.Name, name)
		return 0, 0
	}
	s.id, s.version, s.scratch = addr("ID"), addr("VERSION"), addr("SCRATCH")
	s.cycleLo, s.ctrl, s.fifoLevel = addr("CYCLE_LO"), addr("CTRL"), addr("FIFO_LEVEL")
	s.buffer, s.bufferWords = win("buffer")
	s.push, s.pushWords = win("fifo_push")
	s.pop, s.popWords = win("fifo_pop")
	s.undecoded = s.pop + 4*uint64(s.popWords) // past the last window

	for _, tc := range []struct {
		name string
		f    func(t *testing.T)
	}{
		{"info", s.testInfo},
		{"registers", s.testRegisters},
		{"bursts", s.testBursts},
		{"status-errors", s.testStatusErrors},
		{"status-precedence", s.testPrecedence},
		{"burst-stops-at-first-failure", s.testBurstStops},
		{"replay-executes-once", s.testReplay},
		{"busy-not-executed-not-remembered", s.testBusy},
		{"resynchronisation", s.testResync},
		{"oversized-count", s.testOversized},
		{"fault-corrupted-response", s.testCorruptResponse},
		{"fault-corrupted-request", s.testCorruptRequest},
		{"fault-lost-response", s.testLostResponse},
		{"fault-stale-response", s.testStale},
		{"fault-every-response-lost", s.testAllLost},
		{"window", s.testWindow},
		{"window-through-the-driver", s.testWindowDriver},
	} {
		t.Run(tc.name, tc.f)
	}
}

// testWriter sends the driver's log lines (its retries) to the test's log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// host opens the target through labrunner's driver, over a FaultLine.
func (s *suite) host(t *testing.T) (*uartbridge.Bridge, *FaultLine, *regmap.Regs) {
	t.Helper()
	p, err := OpenPort(s.tgt.Port, s.tgt.Baud)
	if err != nil {
		t.Fatal(err)
	}
	p.Flush(30 * time.Millisecond)
	line := NewFaultLine(p)
	log := slog.New(slog.NewTextHandler(testWriter{t}, nil))
	br := uartbridge.New(line, uartbridge.Options{Board: s.tgt.Name, Baud: s.tgt.Baud, Logger: log})
	t.Cleanup(func() { br.Close() })
	return br, line, regmap.New(br, s.m, s.tgt.Name)
}

// raw opens the target for hand-built frames.
func (s *suite) raw(t *testing.T) *Raw {
	t.Helper()
	p, err := OpenPort(s.tgt.Port, s.tgt.Baud)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	p.Flush(30 * time.Millisecond)
	return &Raw{P: p}
}

// frame builds a request with the next SEQ.
func (s *suite) frame(cmd uint8, addr uint64, count uint16, data ...uint32) []byte {
	s.seq++
	return Frame(s.seq, cmd, uint32(addr), count, data...)
}

// wait is how long a hand-built request may take to be answered: the line
// time of the longest frames, and room for a loaded machine.
func (s *suite) wait() time.Duration {
	return 2*time.Second + time.Duration(2100*10)*time.Second/time.Duration(s.tgt.Baud)
}

// do sends a hand-built request, after the bytes of prefix if any, and
// checks the answer's SEQ, command and status.
func (s *suite) do(t *testing.T, r *Raw, frame []byte, status uint8, prefix ...byte) Resp {
	t.Helper()
	resp, err := r.Do(prefix, frame, s.wait())
	if err != nil {
		t.Fatalf("request % x: %v", frame, err)
	}
	if resp.Cmd != frame[3]|0x80 || resp.Status != status {
		t.Fatalf("request CMD 0x%02x ADDR 0x%08x: answer CMD 0x%02x STATUS %d, want CMD 0x%02x STATUS %d",
			frame[3], frame[4:8], resp.Cmd, resp.Status, frame[3]|0x80, status)
	}
	if status != stOK && len(resp.Words) != 0 {
		t.Fatalf("an error answer (STATUS %d) carries %d words", status, len(resp.Words))
	}
	return resp
}

// read1 reads one word with a hand-built READ.
func (s *suite) read1(t *testing.T, r *Raw, addr uint64) uint32 {
	t.Helper()
	resp := s.do(t, r, s.frame(byte(uartbridge.CmdRead), addr, 1), stOK)
	if len(resp.Words) != 1 {
		t.Fatalf("READ 0x%x answered %d words", addr, len(resp.Words))
	}
	return resp.Words[0]
}

// drainFIFO pops the FIFO empty.
func (s *suite) drainFIFO(t *testing.T, r *Raw) {
	t.Helper()
	if n := s.read1(t, r, s.fifoLevel); n > 0 {
		s.do(t, r, s.frame(byte(uartbridge.CmdReadBurst), s.pop, uint16(n)), stOK)
	}
	if n := s.read1(t, r, s.fifoLevel); n != 0 {
		t.Fatalf("FIFO_LEVEL %d after popping it empty", n)
	}
}

func (s *suite) testInfo(t *testing.T) {
	br, _, _ := s.host(t)
	info, err := br.Info(ctxFor(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if info.Version != uartbridge.ProtocolVersion || info.MaxCount != uartbridge.MaxCount || info.DeviceID != s.tgt.DeviceID {
		t.Fatalf("INFO = %+v, want version %d, max count %d, device ID 0x%08x",
			info, uartbridge.ProtocolVersion, uartbridge.MaxCount, s.tgt.DeviceID)
	}
}

func (s *suite) testRegisters(t *testing.T) {
	_, _, regs := s.host(t)
	ctx := ctxFor(t, 20*time.Second)
	for _, c := range []struct {
		name string
		want uint32
	}{{"ID", s.m.ID}, {"VERSION", s.m.VersionWord}} {
		v, err := regs.Read(ctx, c.name)
		if err != nil || v != c.want {
			t.Fatalf("%s = 0x%08x, %v; the manifest says 0x%08x", c.name, v, err, c.want)
		}
	}
	for _, pat := range []uint32{0, 0xFFFFFFFF, 0xA5A5A5A5, 0x5A5A5A5A, 0x12345678, 1 << 31} {
		if err := regs.Write(ctx, "SCRATCH", pat); err != nil {
			t.Fatal(err)
		}
		if v, err := regs.Read(ctx, "SCRATCH"); err != nil || v != pat {
			t.Fatalf("SCRATCH wrote 0x%08x, read 0x%08x, %v", pat, v, err)
		}
	}
}

func (s *suite) testBursts(t *testing.T) {
	br, _, regs := s.host(t)
	ctx := ctxFor(t, 30*time.Second)
	n := uartbridge.MaxCount
	if s.bufferWords < n {
		t.Fatalf("buffer window of %d words, the suite needs %d", s.bufferWords, n)
	}
	// The largest burst each way, in one request each.
	words := make([]uint32, n)
	for i := range words {
		words[i] = rand.Uint32()
	}
	if _, err := br.Info(ctx); err != nil { // the session's INFO, out of the count
		t.Fatal(err)
	}
	r0 := br.Stats().Requests
	if err := br.WriteBurst(ctx, s.buffer, words); err != nil {
		t.Fatal(err)
	}
	got := make([]uint32, n)
	if err := br.ReadBurst(ctx, s.buffer, got); err != nil {
		t.Fatal(err)
	}
	for i := range words {
		if got[i] != words[i] {
			t.Fatalf("buffer word %d: wrote 0x%08x, read 0x%08x", i, words[i], got[i])
		}
	}
	if d := br.Stats().Requests - r0; d != 2 {
		t.Fatalf("two %d-word bursts took %d requests", n, d)
	}
	// A burst above the largest COUNT is split by the host; the buffer
	// shows its 256 words twice (address bits 9:2 pick the word).
	long := make([]uint32, n+44)
	r0 = br.Stats().Requests
	if err := br.ReadBurst(ctx, s.buffer, long); err != nil {
		t.Fatal(err)
	}
	for i := range long {
		if long[i] != words[i%n] {
			t.Fatalf("word %d of a %d-word read: 0x%08x, want 0x%08x", i, len(long), long[i], words[i%n])
		}
	}
	if d := br.Stats().Requests - r0; d != 2 {
		t.Fatalf("a %d-word read took %d requests, want 2 (256 + 44)", len(long), d)
	}
	// A burst into the FIFO windows moves one entry a word.
	if err := regs.Write(ctx, "CTRL", 1); err != nil { // soft reset: the FIFO empties
		t.Fatal(err)
	}
	fifo := []uint32{0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88}
	if err := br.WriteBurst(ctx, s.push, fifo); err != nil {
		t.Fatal(err)
	}
	if lvl, err := regs.Read(ctx, "FIFO_LEVEL"); err != nil || lvl != uint32(len(fifo)) {
		t.Fatalf("FIFO_LEVEL %d (%v) after a %d-word burst into fifo_push", lvl, err, len(fifo))
	}
	out := make([]uint32, len(fifo))
	if err := br.ReadBurst(ctx, s.pop, out); err != nil {
		t.Fatal(err)
	}
	for i := range fifo {
		if out[i] != fifo[i] {
			t.Fatalf("popped %x, pushed %x", out, fifo)
		}
	}
	if lvl, err := regs.Read(ctx, "FIFO_LEVEL"); err != nil || lvl != 0 {
		t.Fatalf("FIFO_LEVEL %d (%v) after popping everything", lvl, err)
	}
	// The host never builds a frame above 256 words.
	if _, err := uartbridge.AppendRequest(nil, uartbridge.Request{Cmd: uartbridge.CmdReadBurst, Count: uartbridge.MaxCount + 1}); err == nil {
		t.Fatal("the host codec built a READ_BURST of 257 words")
	}
}

func (s *suite) testStatusErrors(t *testing.T) {
	br, _, rm := s.host(t)
	regs := func(*uartbridge.Bridge) *regmap.Regs { return rm }
	ctx := ctxFor(t, 20*time.Second)
	_, err := br.Read32(ctx, s.undecoded)
	if !errors.Is(err, uartbridge.ErrBusError) || drivers.ClassOf(err) != drivers.ClassSetup {
		t.Fatalf("read of undecoded 0x%x: %v, want BUS_ERROR as a setup error", s.undecoded, err)
	}
	for _, a := range []uint64{s.id, s.pop} {
		err := br.Write32(ctx, a, 1)
		if !errors.Is(err, uartbridge.ErrReadOnly) || drivers.ClassOf(err) != drivers.ClassSetup {
			t.Fatalf("write to read-only 0x%x: %v, want READ_ONLY as a setup error", a, err)
		}
	}
	// A pop of the empty FIFO: the register refused, a design failure.
	if err := regs(br).Write(ctx, "CTRL", 1); err != nil { // soft reset: the FIFO empties
		t.Fatal(err)
	}
	_, err = br.Read32(ctx, s.pop)
	if !errors.Is(err, uartbridge.ErrRefused) || drivers.ClassOf(err) != drivers.ClassDesign {
		t.Fatalf("pop of the empty FIFO: %v, want REFUSED as a design failure", err)
	}
	// Each final status failed its request at once: the only retries are
	// the ones a timeout, a damaged answer or the soft reset's BUSY explain.
	if st := br.Stats(); st.Failures != 4 || st.Retries-st.Resends > st.Timeouts+st.Busy {
		t.Fatalf("final statuses were retried or miscounted: %+v", st)
	}
}

// testPrecedence checks every status the device answers by itself, and
// which one wins when several apply (docs/uart-bridge.md, "Status codes").
func (s *suite) testPrecedence(t *testing.T) {
	r := s.raw(t)
	s.drainFIFO(t, r)
	const (
		info, read, write, readB, writeB = 0x00, 0x01, 0x02, 0x03, 0x04
	)
	// INFO ignores ADDR; its COUNT only asks for a window (a device
	// without one answers 4 words). Either way it is OK.
	resp := s.do(t, r, s.frame(info, 0x1235, 7), stOK)
	if len(resp.Words) < 4 || resp.Words[0] != uartbridge.InfoMagic || resp.Words[3] != s.tgt.DeviceID {
		t.Fatalf("INFO with ADDR and COUNT set: %x", resp.Words)
	}
	s.do(t, r, s.frame(info, 0, 300), stOK)
	s.do(t, r, s.frame(info, 0, 0), stOK) // no window: the plain commands below as version 1 has them
	for _, c := range []struct {
		name   string
		frame  []byte
		status uint8
	}{
		{"READ COUNT 0", s.frame(read, s.scratch, 0), stBadCount},
		{"READ COUNT 2", s.frame(read, s.scratch, 2), stBadCount},
		{"WRITE COUNT 0", s.frame(write, s.scratch, 0), stBadCount},
		{"WRITE COUNT 2", s.frame(write, s.scratch, 2, 1, 2), stBadCount},
		{"READ_BURST COUNT 0", s.frame(readB, s.buffer, 0), stBadCount},
		{"WRITE_BURST COUNT 0", s.frame(writeB, s.buffer, 0), stBadCount},
		{"READ_BURST COUNT 257", s.frame(readB, s.buffer, 257), stBadCount},
		{"READ_BURST COUNT 65535", s.frame(readB, s.buffer, 65535), stBadCount},
		{"READ COUNT 300", s.frame(read, s.scratch, 300), stBadCount},
		{"unknown CMD 0x05", s.frame(0x05, 0, 0), stBadCmd},
		{"unknown CMD 0x7F", s.frame(0x7F, s.scratch, 3), stBadCmd},
		{"unknown CMD before COUNT and ADDR", s.frame(0x09, 0x13, 300), stBadCmd},
		{"READ unaligned", s.frame(read, s.scratch+2, 1), stAlign},
		{"WRITE unaligned", s.frame(write, 1, 1, 5), stAlign},
		{"READ_BURST unaligned", s.frame(readB, s.buffer+1, 4), stAlign},
		{"COUNT before ADDR", s.frame(read, s.scratch+2, 2), stBadCount},
		{"READ not decoded", s.frame(read, s.undecoded, 1), stBusError},
		{"READ_BURST off the 32-bit space", s.frame(readB, 0xFFFFFFF8, 4), stBusError},
		{"WRITE read-only", s.frame(write, s.id, 1, 1), stReadOnly},
		{"WRITE into fifo_pop", s.frame(write, s.pop, 1, 1), stReadOnly},
		{"READ of the empty FIFO", s.frame(read, s.pop, 1), stRefused},
		{"READ_BURST refused at its first word", s.frame(readB, s.pop, 3), stRefused},
	} {
		t.Run(c.name, func(t *testing.T) { s.do(t, r, c.frame, c.status) })
	}
	if v := s.read1(t, r, s.id); v != s.m.ID {
		t.Fatalf("ID reads 0x%08x after the error answers, want 0x%08x", v, s.m.ID)
	}
}

func (s *suite) testBurstStops(t *testing.T) {
	r := s.raw(t)
	s.drainFIFO(t, r)
	// Two pushes at the end of fifo_push, then fifo_pop, which refuses
	// writes: the burst stops there; the fourth word is not executed.
	start := s.push + 4*uint64(s.pushWords) - 8
	s.do(t, r, s.frame(0x04, start, 4, 1, 2, 3, 4), stReadOnly)
	if n := s.read1(t, r, s.fifoLevel); n != 2 {
		t.Fatalf("FIFO_LEVEL %d after a burst that failed at its third word, want 2", n)
	}
	// Two pops at the end of fifo_pop, then an undecoded address: the pops
	// happened, the answer carries no data.
	start = s.pop + 4*uint64(s.popWords) - 8
	s.do(t, r, s.frame(0x03, start, 4), stBusError)
	if n := s.read1(t, r, s.fifoLevel); n != 0 {
		t.Fatalf("FIFO_LEVEL %d after a read burst that popped twice before failing, want 0", n)
	}
}

func (s *suite) testReplay(t *testing.T) {
	r := s.raw(t)
	s.drainFIFO(t, r)
	s.do(t, r, s.frame(0x04, s.push, 3, 0xA1, 0xB2, 0xC3), stOK)

	// A retry (same bytes, same SEQ) of a pop is answered with the
	// remembered answer, not popped again.
	pop := s.frame(0x01, s.pop, 1)
	first := s.do(t, r, pop, stOK)
	for i := 0; i < 3; i++ {
		again := s.do(t, r, pop, stOK)
		if string(again.Raw) != string(first.Raw) {
			t.Fatalf("retry %d answered % x, the first answer was % x", i, again.Raw, first.Raw)
		}
	}
	if first.Words[0] != 0xA1 {
		t.Fatalf("popped 0x%x, want 0xA1", first.Words[0])
	}
	lvl := s.frame(0x01, s.fifoLevel, 1)
	if n := s.do(t, r, lvl, stOK).Words[0]; n != 2 {
		t.Fatalf("FIFO_LEVEL %d after one pop retried 3 times, want 2", n)
	}
	// The last request's SEQ with other bytes (another CRC): a new
	// request, executed, not answered from memory.
	if v := s.do(t, r, Frame(lvl[2], 0x01, uint32(s.pop), 1), stOK).Words[0]; v != 0xB2 {
		t.Fatalf("a pop with the last request's SEQ but another CRC read 0x%x, want 0xB2", v)
	}
	if n := s.read1(t, r, s.fifoLevel); n != 1 {
		t.Fatalf("FIFO_LEVEL %d, want 1", n)
	}
	// A write retried: pushed once.
	push := s.frame(0x02, s.push, 1, 0xD4)
	for i := 0; i < 3; i++ {
		s.do(t, r, push, stOK)
	}
	if n := s.read1(t, r, s.fifoLevel); n != 2 {
		t.Fatalf("FIFO_LEVEL %d after one push retried 3 times, want 2", n)
	}
	// A read of a free-running counter: the replay is the remembered
	// value, a new request reads a new one.
	cyc := s.frame(0x01, s.cycleLo, 1)
	a, b := s.do(t, r, cyc, stOK).Words[0], s.do(t, r, cyc, stOK).Words[0]
	c := s.read1(t, r, s.cycleLo)
	if a != b || c == a {
		t.Fatalf("CYCLE_LO %d, retried %d, new request %d: want the retry equal, the new one different", a, b, c)
	}
}

func (s *suite) testBusy(t *testing.T) {
	r := s.raw(t)
	// A soft reset makes the design busy for RESET_CYCLES (10 ms); a push
	// sent right behind it, in the same write, is answered BUSY and not
	// executed. A device that runs on the wall clock (the emulator) and is
	// stalled that long between the two frames by a loaded machine answers
	// the push OK, rightly: such an attempt is repeated, not judged (a
	// device that never answers BUSY fails every attempt).
	var reset, push []byte
	for attempt := 1; ; attempt++ {
		s.drainFIFO(t, r)
		reset = s.frame(0x02, s.ctrl, 1, 1)
		push = s.frame(0x02, s.push, 1, 0x5EED)
		if err := r.Send(append(append([]byte(nil), reset...), push...)); err != nil {
			t.Fatal(err)
		}
		var got [2]Resp
		for i, seq := range []uint8{reset[2], push[2]} {
			resp, err := r.Next(time.Now().Add(s.wait()))
			if err != nil {
				t.Fatal(err)
			}
			if resp.Seq != seq {
				t.Fatalf("answer SEQ 0x%02x, want 0x%02x", resp.Seq, seq)
			}
			got[i] = resp
		}
		if got[0].Status != stOK {
			t.Fatalf("soft reset answered STATUS %d", got[0].Status)
		}
		if got[1].Status == stBusy {
			break
		}
		if got[1].Status != stOK || attempt == 3 {
			t.Fatalf("a push right behind a soft reset answered STATUS %d (attempt %d), want BUSY", got[1].Status, attempt)
		}
		t.Logf("attempt %d not judged: the push right behind the soft reset was executed (the device was no longer busy)", attempt)
		time.Sleep(20 * time.Millisecond)
	}
	// BUSY was not remembered: the soft reset is still the last request,
	// so its retry is replayed.
	resp, err := r.Do(nil, reset, s.wait())
	if err != nil || resp.Status != stOK {
		t.Fatalf("retry of the soft reset after a BUSY answer: %+v %v", resp, err)
	}
	// The push retried until the design is ready: executed once.
	busy := 0
	for deadline := time.Now().Add(10 * time.Second); ; {
		resp, err := r.Do(nil, push, s.wait())
		if err != nil {
			t.Fatal(err)
		}
		if resp.Status == stOK {
			break
		}
		if resp.Status != stBusy || time.Now().After(deadline) {
			t.Fatalf("push answered STATUS %d (%d BUSY answers before)", resp.Status, busy)
		}
		busy++
		time.Sleep(2 * time.Millisecond)
	}
	if n := s.read1(t, r, s.fifoLevel); n != 1 {
		t.Fatalf("FIFO_LEVEL %d after a push answered BUSY and then OK, want 1", n)
	}
	if v := s.read1(t, r, s.pop); v != 0x5EED {
		t.Fatalf("popped 0x%x, want 0x5EED", v)
	}
	// Through the driver: it pauses and retries BUSY by itself.
	br, _, regs := s.host(t)
	ctx := ctxFor(t, 20*time.Second)
	if err := regs.Write(ctx, "CTRL", 1); err != nil {
		t.Fatal(err)
	}
	if err := regs.Write(ctx, "FIFO_PUSH", 0xFEED); err != nil {
		t.Fatal(err)
	}
	if n, err := regs.Read(ctx, "FIFO_LEVEL"); err != nil || n != 1 {
		t.Fatalf("FIFO_LEVEL %d (%v) after a push through the driver right after a soft reset, want 1", n, err)
	}
	t.Logf("driver: %d BUSY answers retried", br.Stats().Busy)
}

func (s *suite) testResync(t *testing.T) {
	r := s.raw(t)
	// Noise, a response-shaped header, a request echo (response bit set),
	// a request with a bad CRC, then a good request, in one write: the
	// good one is answered, nothing else.
	bad := s.frame(0x01, s.id, 1)
	bad[len(bad)-1] ^= 0x40
	echo := s.frame(0x81, s.id, 1)
	noise := append([]byte{0x00, 0xFF, 0x5A, 0xA5, 0x13, 0xA5}, echo...)
	noise = append(noise, bad...)
	good := s.frame(0x01, s.id, 1)
	if v := s.do(t, r, good, stOK, noise...).Words[0]; v != s.m.ID {
		t.Fatalf("after garbage: ID 0x%x", v)
	}
	if err := r.Quiet(50 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	// A header claiming a 256-word WRITE_BURST swallows the request after
	// it; the line goes quiet, the device drops the partial frame after
	// its timeout and finds the request inside.
	fake := []byte{0xA5, 0x5A, 0x30, 0x04, 0, 0, 0, 0, 0x00, 0x01}
	good = s.frame(0x01, s.id, 1)
	start := s.now(t)
	s.do(t, r, good, stOK, fake...)
	if d := s.now(t) - start; d < PartialTimeout {
		t.Fatalf("answered after %v of the device's time, before the partial-frame timeout: the fake header was not honoured", d)
	}
	// Half a frame, silence, then a whole one.
	s.seq++
	half := Frame(s.seq, 0x01, uint32(s.id), 1)[:7]
	if err := r.Send(half); err != nil {
		t.Fatal(err)
	}
	time.Sleep(PartialTimeout + 50*time.Millisecond)
	s.do(t, r, s.frame(0x01, s.id, 1), stOK)
	// A request split over several writes with short gaps is one request.
	// The gaps must stay well under the partial-frame timeout for the
	// attempt to say anything: on a loaded machine a 5 ms sleep can last
	// longer, and then the device is right to drop the partial frame, so
	// such an attempt is repeated, not judged.
	for attempt := 1; ; attempt++ {
		f := s.frame(0x01, s.id, 1)
		parts := [][]byte{f[:1], f[1:5], f[5:11], f[11:]}
		// The gap between two writes is at most the time from just before
		// the first to just after the second.
		longest := time.Duration(0)
		var before time.Time
		for i, part := range parts {
			if i > 0 {
				time.Sleep(5 * time.Millisecond)
			}
			b := time.Now()
			if err := r.Send(part); err != nil {
				t.Fatal(err)
			}
			if d := time.Since(before); i > 0 && d > longest {
				longest = d
			}
			before = b
		}
		resp, err := r.Next(time.Now().Add(s.wait()))
		if longest < PartialTimeout/2 {
			if err != nil || resp.Seq != f[2] || resp.Status != stOK {
				t.Fatalf("request split over four writes (longest gap %v): %+v, %v", longest, resp, err)
			}
			break
		}
		if attempt == 5 {
			t.Fatalf("the machine is too loaded: five attempts to send four writes 5 ms apart had a gap of %v or more", PartialTimeout/2)
		}
		t.Logf("attempt %d not judged: a gap of %v between the writes", attempt, longest)
		time.Sleep(PartialTimeout + 50*time.Millisecond)
		r.P.Flush(30 * time.Millisecond)
		r.buf = nil
	}
}

// testOversized: a data-carrying COUNT above 256 cannot start a frame. A
// complete, CRC-valid WRITE_BURST of 257 words is therefore not a request:
// the device drops its first sync byte and finds nothing in the rest
// (chosen without sync pairs), so the READ sent after it is the only
// request answered. A device that took it for a frame would answer it
// (BAD_COUNT) before the READ.
func (s *suite) testOversized(t *testing.T) {
	r := s.raw(t)
	data := make([]uint32, uartbridge.MaxCount+1)
	for i := range data {
		data[i] = 0x01010101 * uint32(i%7+1)
	}
	big := s.frame(0x04, s.buffer, uint16(len(data)), data...)
	read := s.frame(0x01, s.id, 1)
	if err := r.Send(append(big, read...)); err != nil {
		t.Fatal(err)
	}
	resp, err := r.Next(time.Now().Add(s.wait()))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Seq != read[2] || resp.Status != stOK || len(resp.Words) != 1 || resp.Words[0] != s.m.ID {
		t.Fatalf("first answer SEQ 0x%02x CMD 0x%02x STATUS %d: want the READ's (SEQ 0x%02x); the oversized WRITE_BURST (SEQ 0x%02x) must get none",
			resp.Seq, resp.Cmd, resp.Status, read[2], big[2])
	}
	if err := r.Quiet(50 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
}

// faultHost is host() with a FIFO holding words, ready for a fault test.
func (s *suite) faultHost(t *testing.T, words ...uint32) (*uartbridge.Bridge, *FaultLine, *regmap.Regs, context.Context) {
	br, line, regs := s.host(t)
	ctx := ctxFor(t, 30*time.Second)
	if err := regs.Write(ctx, "CTRL", 1); err != nil { // soft reset: FIFO empty
		t.Fatal(err)
	}
	for _, w := range words {
		if err := regs.Write(ctx, "FIFO_PUSH", w); err != nil {
			t.Fatal(err)
		}
	}
	return br, line, regs, ctx
}

func (s *suite) level(t *testing.T, ctx context.Context, regs *regmap.Regs, want uint32, why string) {
	t.Helper()
	if n, err := regs.Read(ctx, "FIFO_LEVEL"); err != nil || n != want {
		t.Fatalf("FIFO_LEVEL %d (%v) %s, want %d", n, err, why, want)
	}
}

func (s *suite) testCorruptResponse(t *testing.T) {
	br, line, regs, ctx := s.faultHost(t, 0xAB01, 0xAB02)
	st0 := br.Stats()
	line.Arm(CorruptResponse, 1)
	v, err := regs.Read(ctx, "FIFO_POP")
	if err != nil || v != 0xAB01 {
		t.Fatalf("pop with a corrupted answer: 0x%x, %v; want 0xAB01", v, err)
	}
	st := br.Stats()
	if st.CRCErrors-st0.CRCErrors < 1 || st.Retries-st0.Retries < 1 {
		t.Fatalf("a corrupted answer was not seen and re-requested: %+v (before: %+v)", st, st0)
	}
	s.level(t, ctx, regs, 1, "after one pop whose answer was corrupted")
}

func (s *suite) testCorruptRequest(t *testing.T) {
	br, line, regs, ctx := s.faultHost(t)
	st0 := br.Stats()
	line.Arm(CorruptRequest, 1)
	if err := regs.Write(ctx, "FIFO_PUSH", 0xCD01); err != nil {
		t.Fatal(err)
	}
	// The device dropped the damaged copy: the host had to send it again
	// (after a timeout, or at once if a late copy of an earlier answer came
	// meanwhile: how it noticed is the driver's business).
	if st := br.Stats(); st.Retries-st0.Retries < 1 {
		t.Fatalf("a request the device dropped was not sent again: %+v (before: %+v)", st, st0)
	}
	s.level(t, ctx, regs, 1, "after one push whose first copy was corrupted")
}

func (s *suite) testLostResponse(t *testing.T) {
	br, line, regs, ctx := s.faultHost(t, 0xEF01, 0xEF02)
	st0 := br.Stats()
	line.Arm(DropResponse, 1)
	v, err := regs.Read(ctx, "FIFO_POP")
	if err != nil || v != 0xEF01 {
		t.Fatalf("pop with a lost answer: 0x%x, %v; want 0xEF01", v, err)
	}
	if st := br.Stats(); st.Retries-st0.Retries < 1 {
		t.Fatalf("a lost answer was not re-requested: %+v (before: %+v)", st, st0)
	}
	s.level(t, ctx, regs, 1, "after one pop whose answer was lost")
}

func (s *suite) testStale(t *testing.T) {
	br, line, regs, ctx := s.faultHost(t, 0x57A1, 0x57A2)
	st0 := br.Stats()
	line.Arm(StaleResponse, 1)
	v, err := regs.Read(ctx, "FIFO_POP")
	if err != nil || v != 0x57A1 {
		t.Fatalf("pop after a stale answer: 0x%x, %v; want 0x57A1", v, err)
	}
	if st := br.Stats(); st.Stale-st0.Stale < 1 {
		t.Fatalf("the stale answer was not discarded as stale: %+v (before: %+v)", st, st0)
	}
	s.level(t, ctx, regs, 1, "after one pop preceded by a stale answer")
}

func (s *suite) testAllLost(t *testing.T) {
	br, line, regs, ctx := s.faultHost(t)
	// Every answer lost: the driver gives up, as an infrastructure error,
	// at the caller's deadline at the latest (its last attempt waits that
	// long for a device executing something slow).
	line.Arm(DropResponse, 1<<20)
	pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	err := regs.Write(pctx, "FIFO_PUSH", 0x1057)
	if err == nil || drivers.ClassOf(err) != drivers.ClassInfra {
		t.Fatalf("push with every answer lost: %v; want an infrastructure error", err)
	}
	if st := br.Stats(); st.Timeouts < 2 || st.Failures != 1 {
		t.Fatalf("every answer lost, yet %d timeouts and %d failures: %+v", st.Timeouts, st.Failures, st)
	}
	// The write took effect once, whatever was lost.
	line.Disarm()
	s.level(t, ctx, regs, 1, "after a push whose every answer was lost")
}

// testWindow: the window (docs/uart-bridge.md, "Capabilities", "Window"),
// on the wire. A device that offers one runs windowed requests in SEQ
// order, each once, answering SEQUENCE out of turn; a device without it
// answers INFO with 4 words and takes the windowed commands for unknown
// ones (BAD_CMD), as version 1 has it. Both are checked: which one a target
// is, its INFO says.
func (s *suite) testWindow(t *testing.T) {
	r := s.raw(t)
	s.drainFIFO(t, r)
	const wread, wwrite = 0x41, 0x42
	info := s.do(t, r, s.frame(0x00, 0, 8), stOK)
	if len(info.Words) < 6 || info.Words[4]&uartbridge.CapWindow == 0 {
		if len(info.Words) != 4 {
			t.Fatalf("INFO answered %d words without the window capability: %x", len(info.Words), info.Words)
		}
		// No window: the windowed commands are unknown, and not run.
		s.do(t, r, s.frame(wwrite, s.push, 1, 0xBAD), stBadCmd)
		s.do(t, r, s.frame(wread, s.pop, 1), stBadCmd)
		if n := s.read1(t, r, s.fifoLevel); n != 0 {
			t.Fatalf("FIFO_LEVEL %d after windowed commands a device without a window must not run", n)
		}
		return
	}
	if w := info.Words[5]; w < 2 || w > 8 {
		t.Fatalf("INFO asked for a window of 8, opened %d", w)
	}
	// Four pushes in one write: run in order, answered in order.
	var batch []byte
	var seqs []uint8
	for i := range 4 {
		f := s.frame(wwrite, s.push, 1, uint32(0xA0+i))
		batch = append(batch, f...)
		seqs = append(seqs, f[2])
	}
	if err := r.Send(batch); err != nil {
		t.Fatal(err)
	}
	for i, seq := range seqs {
		resp, err := r.Next(time.Now().Add(s.wait()))
		if err != nil || resp.Seq != seq || resp.Cmd != wwrite|0x80 || resp.Status != stOK {
			t.Fatalf("answer %d: %+v %v, want SEQ 0x%02x CMD 0xC2 OK", i, resp, err, seq)
		}
	}
	// Out of turn (a SEQ skipped): SEQUENCE, not run.
	s.seq++
	after := s.frame(wread, s.pop, 1)
	s.do(t, r, after, stSequence)
	// In turn: the skipped SEQ, then the one after it, sent again.
	skipped := Frame(s.seq-1, wread, uint32(s.pop), 1)
	if v := s.do(t, r, skipped, stOK).Words[0]; v != 0xA0 {
		t.Fatalf("popped 0x%x, want 0xA0", v)
	}
	if v := s.do(t, r, after, stOK).Words[0]; v != 0xA1 {
		t.Fatalf("popped 0x%x, want 0xA1", v)
	}
	// A retry of a request that is not the last is replayed, not run.
	if v := s.do(t, r, skipped, stOK).Words[0]; v != 0xA0 {
		t.Fatalf("the retried pop answered 0x%x, want the remembered 0xA0", v)
	}
	// Plain commands run as in version 1 inside the window, and take the turn.
	if n := s.read1(t, r, s.fifoLevel); n != 2 {
		t.Fatalf("FIFO_LEVEL %d, want 2: a retry popped again, or a request out of turn ran", n)
	}
	if v := s.do(t, r, s.frame(wread, s.pop, 1), stOK).Words[0]; v != 0xA2 {
		t.Fatalf("popped 0x%x, want 0xA2", v)
	}
	// INFO with COUNT 0 closes the window: windowed requests are out of turn.
	if resp := s.do(t, r, s.frame(0x00, 0, 0), stOK); len(resp.Words) < 6 || resp.Words[5] != 1 {
		t.Fatalf("INFO COUNT 0: %x, want window 1", resp.Words)
	}
	s.do(t, r, s.frame(wread, s.pop, 1), stSequence)
	if n := s.read1(t, r, s.fifoLevel); n != 1 {
		t.Fatalf("FIFO_LEVEL %d, want 1", n)
	}
}

// testWindowDriver: labrunner's driver with whatever the device offers. A
// batch of pushes and pops, a long burst, and the line losing an answer or
// a request in the middle of a batch: every access runs once, in order.
func (s *suite) testWindowDriver(t *testing.T) {
	for _, c := range []struct {
		name  string
		fault Fault
		n     int
	}{{"clean", 0, 0}, {"answer-lost", DropResponse, 1}, {"answer-damaged", CorruptResponse, 1}, {"request-damaged", CorruptRequest, 1}} {
		t.Run(c.name, func(t *testing.T) {
			br, line, regs, ctx := s.faultHost(t)
			info, err := br.Info(ctx)
			if err != nil {
				t.Fatal(err)
			}
			want := 1
			if info.Caps&uartbridge.CapWindow != 0 {
				want = uartbridge.DefaultWindow
			}
			if info.Window != want || br.Stats().Window != want {
				t.Fatalf("window %d (stats %d), want %d", info.Window, br.Stats().Window, want)
			}
			var acc []drivers.Access
			for i := range 12 {
				acc = append(acc, drivers.Access{Addr: s.push, Write: true, Words: []uint32{uint32(0xC0 + i)}})
			}
			got := make([]uint32, 12)
			for i := range got {
				acc = append(acc, drivers.Access{Addr: s.pop, Words: got[i : i+1]})
			}
			if c.n > 0 {
				line.Arm(c.fault, c.n)
			}
			if err := br.Batch(ctx, acc); err != nil {
				t.Fatal(err)
			}
			for i, v := range got {
				if v != uint32(0xC0+i) {
					t.Fatalf("popped %x: a push or pop ran twice, or out of order", got)
				}
			}
			s.level(t, ctx, regs, 0, "after 12 pushes and 12 pops")
			// Through the buffer window, which shows its 256 words twice:
			// a read of 500 words is two requests.
			words := make([]uint32, uartbridge.MaxCount)
			for i := range words {
				words[i] = rand.Uint32()
			}
			if err := br.WriteBurst(ctx, s.buffer, words); err != nil {
				t.Fatal(err)
			}
			back := make([]uint32, 500)
			if err := br.ReadBurst(ctx, s.buffer, back); err != nil {
				t.Fatal(err)
			}
			for i := range back {
				if back[i] != words[i%len(words)] {
					t.Fatalf("buffer word %d read 0x%08x, want 0x%08x", i, back[i], words[i%len(words)])
				}
			}
			if st := br.Stats(); st.Failures != 0 {
				t.Fatalf("failures: %+v", st)
			}
		})
	}
}
