package emu

import (
	"testing"
	"time"

	"github.com/labrunner/labrunner/labconfig"
)

// The line's schedule, on a made-up clock: bytes take 10 bit times each way,
// the latency is paid once per round trip, and requests sent back to back
// share the wire rather than each paying the latency again.
func TestLineClocks(t *testing.T) {
	l := lineShapeOf(labconfig.Board{Bus: labconfig.Bus{UARTBridge: &labconfig.Serial{Port: "emu", Baud: 100000, LineRate: true, RequestLatency: time.Millisecond}}})
	bt := 100 * time.Microsecond // 10 bits at 100 kbaud
	if l.byteTime != bt || l.in != 500*time.Microsecond || l.out != 500*time.Microsecond || !l.paced() {
		t.Fatalf("shape %+v", l)
	}
	t0 := time.Unix(1000, 0)
	rx := rxClock{line: l}
	// A 12-byte request written at t0 starts on the wire 0.5 ms later.
	if got, want := rx.heard(12, t0), t0.Add(500*time.Microsecond+12*bt); !got.Equal(want) {
		t.Fatalf("first request complete at %v, want %v", got.Sub(t0), want.Sub(t0))
	}
	// A second one written 10 µs later waits for the wire, not for another
	// latency: a window of requests overlaps its latencies.
	if got, want := rx.heard(16, t0.Add(10*time.Microsecond)), t0.Add(500*time.Microsecond+28*bt); !got.Equal(want) {
		t.Fatalf("pipelined request complete at %v, want %v", got.Sub(t0), want.Sub(t0))
	}
	// Where each request ends: the parser asks by stream offset.
	for _, c := range []struct {
		end  int64
		want time.Duration
	}{{12, 500*time.Microsecond + 12*bt}, {13, 500*time.Microsecond + 13*bt}, {28, 500*time.Microsecond + 28*bt}} {
		if got := rx.arrival(c.end); !got.Equal(t0.Add(c.want)) {
			t.Errorf("first %d bytes in at %v, want %v", c.end, got.Sub(t0), c.want)
		}
	}
	// After a quiet spell the latency is paid again.
	if got, want := rx.heard(12, t0.Add(time.Second)), t0.Add(time.Second+500*time.Microsecond+12*bt); !got.Equal(want) {
		t.Fatalf("request after a pause complete at %v, want %v", got.Sub(t0), want.Sub(t0))
	}
	if got, want := rx.arrival(40), t0.Add(time.Second+500*time.Microsecond+12*bt); !got.Equal(want) {
		t.Fatalf("arrival after a pause %v, want %v", got.Sub(t0), want.Sub(t0))
	}

	tx := txClock{line: l}
	// Answers queue on the wire, and each reaches the host 0.5 ms after its
	// last byte.
	if got, want := tx.send(13, t0), t0.Add(13*bt+500*time.Microsecond); !got.Equal(want) {
		t.Fatalf("first answer readable at %v, want %v", got.Sub(t0), want.Sub(t0))
	}
	if got, want := tx.send(9, t0.Add(bt)), t0.Add(22*bt+500*time.Microsecond); !got.Equal(want) {
		t.Fatalf("second answer readable at %v, want %v", got.Sub(t0), want.Sub(t0))
	}

	// Not asked for: no shaping (the default lab's bridges).
	for _, s := range []*labconfig.Serial{nil, {Port: "emu", Baud: 921600}} {
		if l := lineShapeOf(labconfig.Board{Bus: labconfig.Bus{UARTBridge: s}}); l.paced() {
			t.Errorf("bridge %+v is paced: %+v", s, l)
		}
	}
	// Latency alone, at memory speed otherwise.
	if l := lineShapeOf(labconfig.Board{Bus: labconfig.Bus{UARTBridge: &labconfig.Serial{Port: "emu", Baud: 921600, RequestLatency: time.Millisecond}}}); !l.paced() || l.byteTime != 0 {
		t.Errorf("latency only: %+v", l)
	}
}

// A paced bridge is never faster than its line: each exchange takes at
// least the request's and the answer's bytes at the baud plus the request
// latency. (Only lower bounds: a loaded machine makes it slower, never
// faster.) The values read are those of the unpaced bridge.
func TestPacedBridgeTakesLineTime(t *testing.T) {
	const baud = 115200
	lat := 3 * time.Millisecond
	b := testBoard(t, rackOpts{bridge: &labconfig.Serial{Port: "emu", Baud: baud, LineRate: true, RequestLatency: lat}})
	h := openHost(t, b)
	bt := 10 * time.Second / baud
	const reads = 10
	start := time.Now()
	for i := range reads {
		t0 := time.Now()
		if v := h.read(tdID); v != tdIDValue {
			t.Fatalf("read %d: 0x%x", i, v)
		}
		if d, min := time.Since(t0), lat+25*bt; d < min {
			t.Fatalf("read %d took %v, less than its line time and latency %v", i, d, min)
		}
	}
	if d, min := time.Since(start), reads*(lat+25*bt); d < min {
		t.Fatalf("%d reads took %v, less than %v", reads, d, min)
	}

	// A 64-word burst each way: its 268-byte request, then its 265-byte
	// answer, are on the wire byte by byte.
	words := make([]uint32, 64)
	for i := range words {
		words[i] = uint32(i) * 7
	}
	t0 := time.Now()
	r, err := h.do(0x04, tdScratch, 64, words...)
	if err != nil || r.Status != 0 {
		t.Fatalf("write burst: %+v %v", r, err)
	}
	if d, min := time.Since(t0), lat+(268+9)*bt; d < min {
		t.Fatalf("a 64-word write burst took %v, less than %v", d, min)
	}
	t0 = time.Now()
	r, err = h.do(0x03, tdScratch, 64)
	if err != nil || r.Status != 0 || len(r.Words) != 64 || r.Words[63] != 63*7 {
		t.Fatalf("read burst: %+v %v", r, err)
	}
	if d, min := time.Since(t0), lat+(12+265)*bt; d < min {
		t.Fatalf("a 64-word read burst took %v, less than %v", d, min)
	}

	// Requests written back to back are answered in order, and the last
	// answer cannot come before every byte of every request and answer
	// has crossed the wire.
	var batch []byte
	for i := range 8 {
		batch = append(batch, reqFrame(byte(100+i), 0x01, tdID, 1)...)
	}
	t0 = time.Now()
	h.send(batch)
	for i := range 8 {
		r, err := h.readFrame(time.Now().Add(2 * time.Second))
		if err != nil || r.Seq != byte(100+i) || r.Words[0] != tdIDValue {
			t.Fatalf("pipelined answer %d: %+v %v", i, r, err)
		}
	}
	if d, min := time.Since(t0), lat+12*bt+8*13*bt; d < min {
		t.Fatalf("8 pipelined reads answered in %v, less than %v", d, min)
	}
}
