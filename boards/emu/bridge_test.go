package emu

import (
	"context"
	"testing"
	"time"
)

func TestBridgeCommands(t *testing.T) {
	b := testBoard(t, rackOpts{})
	h := openHost(t, b)

	type tc struct {
		name   string
		cmd    byte
		addr   uint32
		count  uint16
		data   []uint32
		status byte
		words  []uint32
	}
	burst := make([]uint32, 64)
	for i := range burst {
		burst[i] = 0xB0000000 + uint32(i)
	}
	cases := []tc{
		// Words 4 and 5: the window capability, and no window open.
		{"info", 0x00, 0, 0, nil, 0, []uint32{0x4252424C, 1, 256, b.DeviceID(), 1, 1}},
		{"info ignores addr", 0x00, 0x1235, 0, nil, 0, []uint32{0x4252424C, 1, 256, b.DeviceID(), 1, 1}},
		{"read id", 0x01, tdID, 1, nil, 0, []uint32{tdIDValue}},
		{"write scratch", 0x02, tdScratch + 8, 1, []uint32{0xCAFEF00D}, 0, nil},
		{"read scratch", 0x01, tdScratch + 8, 1, nil, 0, []uint32{0xCAFEF00D}},
		{"write burst", 0x04, tdScratch, 64, burst, 0, nil},
		{"read burst", 0x03, tdScratch, 64, nil, 0, burst},
		{"bus error", 0x01, 0x8000, 1, nil, 0x01, nil},
		{"align", 0x01, tdScratch + 2, 1, nil, 0x02, nil},
		{"align write", 0x02, 1, 1, []uint32{5}, 0x02, nil},
		{"read count 2", 0x01, tdID, 2, nil, 0x03, nil},
		{"write count 0", 0x02, tdScratch, 0, nil, 0x03, nil},
		{"burst count 0", 0x03, tdScratch, 0, nil, 0x03, nil},
		{"burst count 257", 0x03, tdScratch, 257, nil, 0x03, nil},
		{"bad cmd", 0x09, 0, 0, nil, 0x04, nil},
		{"bad cmd with count", 0x7F, 0, 3, nil, 0x04, nil},
		{"read only", 0x02, tdRO, 1, []uint32{1}, 0x06, nil},
		{"refused by the design", 0x02, tdFull, 1, []uint32{1}, 0x07, nil},
		{"burst off the end of the space", 0x03, 0xFFFFFFF8, 4, nil, 0x01, nil},
	}
	for _, c := range cases {
		r, err := h.do(c.cmd, c.addr, c.count, c.data...)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if r.Cmd != c.cmd|0x80 || r.Status != c.status {
			t.Errorf("%s: cmd 0x%x status %d, want 0x%x %d", c.name, r.Cmd, r.Status, c.cmd|0x80, c.status)
			continue
		}
		if len(r.Words) != len(c.words) {
			t.Errorf("%s: %d words, want %d", c.name, len(r.Words), len(c.words))
			continue
		}
		for i := range c.words {
			if r.Words[i] != c.words[i] {
				t.Errorf("%s: word %d = 0x%x, want 0x%x", c.name, i, r.Words[i], c.words[i])
			}
		}
	}
	if h.stale != 0 || h.crcErrs != 0 || h.timeouts != 0 {
		t.Fatalf("clean line, yet stale %d crc %d timeouts %d", h.stale, h.crcErrs, h.timeouts)
	}
}

func TestBridgeBurstStopsAtFirstFailure(t *testing.T) {
	b := testBoard(t, rackOpts{})
	h := openHost(t, b)
	// The last 2 scratch words, then 2 undecoded addresses.
	start := uint32(tdScratch + 4*(tdWords-2))
	r, err := h.do(0x04, start, 4, 1, 2, 3, 4)
	if err != nil || r.Status != 0x01 {
		t.Fatalf("write burst across the end: %+v %v", r, err)
	}
	inDesign(b, func(d *testDesign) {
		if d.scratch[tdWords-2] != 1 || d.scratch[tdWords-1] != 2 || d.writes != 2 {
			t.Fatalf("words before the failure: %v, writes %d", d.scratch[tdWords-2:], d.writes)
		}
	})
	// A READ_BURST over the FIFO then an undecoded word: the pop happens
	// (executed in address order), the answer has no data.
	r, err = h.do(0x03, tdFIFO, 3)
	if err != nil || r.Status != 0x01 || len(r.Words) != 0 {
		t.Fatalf("read burst across the end: %+v %v", r, err)
	}
	inDesign(b, func(d *testDesign) {
		if d.pops != 1 {
			t.Fatalf("pops %d, want 1", d.pops)
		}
	})
}

func TestBridgeReplaysInsteadOfReexecuting(t *testing.T) {
	b := testBoard(t, rackOpts{})
	h := openHost(t, b)
	f := reqFrame(9, 0x01, tdFIFO, 1)
	var first resp
	for i := 0; i < 3; i++ {
		r, err := h.doFrame(f, 1)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = r
		} else if r.Words[0] != first.Words[0] {
			t.Fatalf("retry %d read 0x%x, the first answer was 0x%x: the pop was executed again", i, r.Words[0], first.Words[0])
		}
	}
	// Same SEQ, other bytes (another CRC): a new request, executed.
	r, err := h.doFrame(reqFrame(9, 0x01, tdID, 1), 1)
	if err != nil || r.Words[0] != tdIDValue {
		t.Fatalf("same SEQ, other request: %+v %v", r, err)
	}
	r, err = h.doFrame(reqFrame(10, 0x01, tdFIFO, 1), 1)
	if err != nil || r.Words[0] != first.Words[0]+1 {
		t.Fatalf("next SEQ: %+v %v (first 0x%x)", r, err, first.Words[0])
	}
	// A write retried after its effect: executed once.
	w := reqFrame(11, 0x02, tdScratch, 1, 77)
	for i := 0; i < 3; i++ {
		if _, err := h.doFrame(w, 1); err != nil {
			t.Fatal(err)
		}
	}
	inDesign(b, func(d *testDesign) {
		if d.pops != 2 || d.writes != 1 {
			t.Fatalf("pops %d writes %d, want 2 and 1", d.pops, d.writes)
		}
	})
	// A different SEQ with a request equal in all else is executed.
	if r, err := h.doFrame(reqFrame(12, 0x01, tdFIFO, 1), 1); err != nil || r.Words[0] != first.Words[0]+2 {
		t.Fatalf("SEQ 12: %+v %v", r, err)
	}
}

func TestBridgeBusyIsNotRemembered(t *testing.T) {
	b := testBoard(t, rackOpts{})
	inDesign(b, func(d *testDesign) { d.busyLeft = 2 })
	h := openHost(t, b)
	f := reqFrame(1, 0x01, tdBusy, 1)
	for i, want := range []byte{0x05, 0x05, 0x00} {
		r, err := h.doFrame(f, 1)
		if err != nil || r.Status != want {
			t.Fatalf("try %d: %+v %v, want status %d", i, r, err, want)
		}
		if want == 0 && r.Words[0] != 0x600D {
			t.Fatalf("value 0x%x", r.Words[0])
		}
	}
}

func TestBridgeResynchronises(t *testing.T) {
	b := testBoard(t, rackOpts{})
	h := openHost(t, b)

	// Noise without sync bytes, a response-shaped header, a request with a
	// bad CRC, then a good request in the same write: answered at once.
	bad := reqFrame(20, 0x01, tdID, 1)
	bad[len(bad)-1] ^= 0x40
	noise := append([]byte{0x00, 0xFF, 0x5A, 0xA5, 0x13, 0xA5}, []byte{0xA5, 0x5A, 1, 0x81, 0, 0, 0, 0, 1, 0, 0, 0}...)
	noise = append(noise, bad...)
	h.seq = 21
	good := reqFrame(21, 0x01, tdID, 1)
	start := time.Now()
	h.send(append(noise, good...))
	r, err := h.readFrame(time.Now().Add(2 * time.Second))
	if err != nil || r.Seq != 21 || r.Words[0] != tdIDValue {
		t.Fatalf("after garbage: %+v %v", r, err)
	}
	if d := time.Since(start); d > 90*time.Millisecond {
		t.Logf("answer took %v (expected without waiting for the partial-frame timeout)", d)
	}

	// A header claiming a 256-word WRITE_BURST swallows the request after
	// it; 100 ms of silence drop it and the request inside is found.
	fake := []byte{0xA5, 0x5A, 0x30, 0x04, 0, 0, 0, 0, 0x00, 0x01}
	good = reqFrame(22, 0x01, tdScratch, 1)
	start = time.Now()
	h.send(append(fake, good...))
	r, err = h.readFrame(time.Now().Add(2 * time.Second))
	if err != nil || r.Seq != 22 {
		t.Fatalf("inside a fake frame: %+v %v", r, err)
	}
	if d := time.Since(start); d < partialTimeout {
		t.Fatalf("answered after %v, before the partial-frame timeout: the fake header was not honoured", d)
	}

	// Half a frame, silence, then a full one: the half is dropped.
	half := reqFrame(23, 0x01, tdID, 1)[:7]
	h.send(half)
	time.Sleep(150 * time.Millisecond)
	h.send(reqFrame(24, 0x01, tdID, 1))
	r, err = h.readFrame(time.Now().Add(2 * time.Second))
	if err != nil || r.Seq != 24 {
		t.Fatalf("after a half frame: %+v %v", r, err)
	}
	// A request split over several writes with short gaps is one request.
	f := reqFrame(25, 0x01, tdID, 1)
	for _, part := range [][]byte{f[:1], f[1:5], f[5:11], f[11:]} {
		h.send(part)
		time.Sleep(5 * time.Millisecond) // well inside the 100 ms partial-frame timeout
	}
	r, err = h.readFrame(time.Now().Add(2 * time.Second))
	if err != nil || r.Seq != 25 {
		t.Fatalf("split request: %+v %v", r, err)
	}
}

func TestBridgePowerCycle(t *testing.T) {
	b := testBoard(t, rackOpts{})
	h := openHost(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := b.Power().Set(ctx, false); err != nil {
		t.Fatal(err)
	}
	h.wait = 200 * time.Millisecond
	if _, err := h.doFrame(reqFrame(1, 0x00, 0, 0), 2); err == nil {
		t.Fatal("a board switched off answered")
	}
	h.wait = 0
	// Bytes sent while off are lost: half a frame then power-on must not
	// swallow the next request.
	h.send(reqFrame(2, 0x00, 0, 0)[:6])
	time.Sleep(20 * time.Millisecond)
	if err := b.Power().Set(ctx, true); err != nil {
		t.Fatal(err)
	}
	r, err := h.doFrame(reqFrame(1, 0x00, 0, 0), 1)
	if err != nil || r.Status != 0 || r.Words[3] != b.DeviceID() {
		t.Fatalf("INFO after power-on: %+v %v", r, err)
	}
	// The design went with the power.
	r, err = h.doFrame(reqFrame(3, 0x01, tdID, 1), 1)
	if err != nil || r.Status != 0x01 {
		t.Fatalf("READ without a design: %+v %v", r, err)
	}
}

func TestBridgeForgetsAcrossReprogramming(t *testing.T) {
	b := testBoard(t, rackOpts{})
	h := openHost(t, b)
	f := reqFrame(5, 0x01, tdFIFO, 1)
	r1, err := h.doFrame(f, 1)
	if err != nil {
		t.Fatal(err)
	}
	b.setDesignForTest(t, testDesignName) // a new instance: the FIFO restarts at 1000
	r2, err := h.doFrame(f, 1)
	if err != nil {
		t.Fatal(err)
	}
	if r1.Words[0] != 1000 || r2.Words[0] != 1000 {
		t.Fatalf("reads %d %d, want 1000 from each instance", r1.Words[0], r2.Words[0])
	}
	inDesign(b, func(d *testDesign) {
		if d.pops != 1 {
			t.Fatalf("new instance popped %d times (the old answer was replayed?)", d.pops)
		}
	})
}

// The window (docs/uart-bridge.md, "Window"): INFO's COUNT opens it;
// windowed requests run in SEQ order, each once; one out of turn, or with no
// window open, is answered SEQUENCE and not run; retries of the last W are
// replayed.
func TestBridgeWindow(t *testing.T) {
	b := testBoard(t, rackOpts{})
	h := openHost(t, b)
	pops := func() (n int) {
		inDesign(b, func(d *testDesign) { n = d.pops })
		return n
	}
	const wread, wwrite, wreadB, wwriteB = 0x41, 0x42, 0x43, 0x44

	// No window yet: a windowed request is not run.
	if r, err := h.doFrame(reqFrame(1, wread, tdFIFO, 1), 1); err != nil || r.Status != 0x08 || r.Cmd != 0xC1 {
		t.Fatalf("windowed READ before any INFO: %+v %v, want SEQUENCE", r, err)
	}
	for _, c := range []struct {
		count uint16
		want  uint32
	}{{0, 1}, {1, 1}, {8, 8}, {1000, 32}, {8, 8}} {
		r, err := h.doFrame(reqFrame(9, 0x00, 0, c.count), 1)
		if err != nil || len(r.Words) != 6 || r.Words[4] != 1 || r.Words[5] != c.want {
			t.Fatalf("INFO COUNT %d: %+v %v, want window %d", c.count, r, err, c.want)
		}
	}
	if pops() != 0 {
		t.Fatal("a request out of turn was run")
	}

	// SEQ 10..17 in one write: run in order, answered in order.
	var batch []byte
	for i := range 8 {
		batch = append(batch, reqFrame(byte(10+i), wread, tdFIFO, 1)...)
	}
	h.send(batch)
	for i := range 8 {
		r, err := h.readFrame(time.Now().Add(2 * time.Second))
		if err != nil || r.Seq != byte(10+i) || r.Cmd != 0xC1 || r.Status != 0 || r.Words[0] != uint32(1000+i) {
			t.Fatalf("answer %d: %+v %v, want pop %d", i, r, err, 1000+i)
		}
	}
	// SEQ 19 before 18: not its turn, not run; 18 then 19 run.
	if r, err := h.doFrame(reqFrame(19, wread, tdFIFO, 1), 1); err != nil || r.Status != 0x08 {
		t.Fatalf("SEQ 19 before 18: %+v %v, want SEQUENCE", r, err)
	}
	for seq, want := range map[byte]uint32{18: 1008} {
		if r, err := h.doFrame(reqFrame(seq, wread, tdFIFO, 1), 1); err != nil || r.Status != 0 || r.Words[0] != want {
			t.Fatalf("SEQ %d: %+v %v, want %d", seq, r, err, want)
		}
	}
	if r, err := h.doFrame(reqFrame(19, wread, tdFIFO, 1), 1); err != nil || r.Status != 0 || r.Words[0] != 1009 {
		t.Fatalf("SEQ 19 in turn: %+v %v", r, err)
	}
	// The last 8 run (12..19) are replayed, not run again; 11 is forgotten,
	// and out of turn.
	for _, seq := range []byte{12, 15, 19} {
		if r, err := h.doFrame(reqFrame(seq, wread, tdFIFO, 1), 1); err != nil || r.Status != 0 || r.Words[0] != uint32(1000+int(seq)-10) {
			t.Fatalf("retry of SEQ %d: %+v %v", seq, r, err)
		}
	}
	if r, err := h.doFrame(reqFrame(11, wread, tdFIFO, 1), 1); err != nil || r.Status != 0x08 {
		t.Fatalf("retry of SEQ 11, beyond the window: %+v %v, want SEQUENCE", r, err)
	}
	if n := pops(); n != 10 {
		t.Fatalf("%d pops, want 10", n)
	}
	// INFO is run every time, never replayed: the same INFO frame again
	// forgets what was remembered (an earlier session's requests must not
	// be there for a new session's to match).
	if r, err := h.doFrame(reqFrame(9, 0x00, 0, 8), 1); err != nil || r.Words[5] != 8 {
		t.Fatalf("INFO again: %+v %v", r, err)
	}
	if r, err := h.doFrame(reqFrame(19, wread, tdFIFO, 1), 1); err != nil || r.Status != 0x08 {
		t.Fatalf("SEQ 19 after INFO ran again: %+v %v, want SEQUENCE (forgotten, and out of turn)", r, err)
	}
	if r, err := h.doFrame(reqFrame(10, wread, tdFIFO, 1), 1); err != nil || r.Status != 0 || r.Words[0] != 1010 {
		t.Fatalf("SEQ 10 after INFO ran again: %+v %v, want a new pop (1010)", r, err)
	}
	for seq := byte(11); seq < 20; seq++ {
		if r, err := h.doFrame(reqFrame(seq, wread, tdID, 1), 1); err != nil || r.Status != 0 {
			t.Fatalf("SEQ %d: %+v %v", seq, r, err)
		}
	}

	// Windowed bursts carry and return their words; an error status is an
	// answer (the request ran) and moves the turn on.
	words := []uint32{7, 8, 9}
	if r, err := h.doFrame(reqFrame(20, wwriteB, tdScratch, 3, words...), 1); err != nil || r.Status != 0 || r.Cmd != 0xC4 {
		t.Fatalf("windowed WRITE_BURST: %+v %v", r, err)
	}
	if r, err := h.doFrame(reqFrame(21, wreadB, tdScratch, 3), 1); err != nil || r.Status != 0 || len(r.Words) != 3 || r.Words[2] != 9 {
		t.Fatalf("windowed READ_BURST: %+v %v", r, err)
	}
	if r, err := h.doFrame(reqFrame(22, wwrite, tdRO, 1, 1), 1); err != nil || r.Status != 0x06 {
		t.Fatalf("windowed WRITE to a read-only register: %+v %v", r, err)
	}
	// BUSY: not run, the turn stays; the next SEQ waits for it.
	inDesign(b, func(d *testDesign) { d.busyLeft = 1 })
	if r, err := h.doFrame(reqFrame(23, wread, tdBusy, 1), 1); err != nil || r.Status != 0x05 {
		t.Fatalf("busy: %+v %v", r, err)
	}
	if r, err := h.doFrame(reqFrame(24, wread, tdID, 1), 1); err != nil || r.Status != 0x08 {
		t.Fatalf("after BUSY, the next SEQ: %+v %v, want SEQUENCE", r, err)
	}
	if r, err := h.doFrame(reqFrame(23, wread, tdBusy, 1), 1); err != nil || r.Status != 0 || r.Words[0] != 0x600D {
		t.Fatalf("busy, retried: %+v %v", r, err)
	}
	// A plain request runs as in version 1, window or not, and takes the turn.
	if r, err := h.doFrame(reqFrame(40, 0x01, tdID, 1), 1); err != nil || r.Status != 0 || r.Cmd != 0x81 {
		t.Fatalf("plain READ in a window: %+v %v", r, err)
	}
	if r, err := h.doFrame(reqFrame(41, wread, tdID, 1), 1); err != nil || r.Status != 0 {
		t.Fatalf("windowed READ after a plain one: %+v %v", r, err)
	}

	// A reprogrammed board closes the window.
	b.setDesignForTest(t, testDesignName)
	if r, err := h.doFrame(reqFrame(42, wread, tdID, 1), 1); err != nil || r.Status != 0x08 {
		t.Fatalf("after reprogramming: %+v %v, want SEQUENCE", r, err)
	}
	// INFO closing the window.
	if r, err := h.doFrame(reqFrame(50, 0x00, 0, 4), 1); err != nil || r.Words[5] != 4 {
		t.Fatalf("INFO: %+v %v", r, err)
	}
	if r, err := h.doFrame(reqFrame(51, 0x00, 0, 0), 1); err != nil || r.Words[5] != 1 {
		t.Fatalf("INFO COUNT 0: %+v %v", r, err)
	}
	if r, err := h.doFrame(reqFrame(52, wread, tdID, 1), 1); err != nil || r.Status != 0x08 {
		t.Fatalf("after the window closed: %+v %v, want SEQUENCE", r, err)
	}
	if h.stale != 0 || h.crcErrs != 0 || h.timeouts != 0 {
		t.Fatalf("clean line, yet stale %d crc %d timeouts %d", h.stale, h.crcErrs, h.timeouts)
	}
}
