package emu

import (
	"io"
	"testing"
	"time"
)

// BenchmarkBridgeReadRoundTrip: READ requests through the bridge's
// pseudo-terminal, one outstanding at a time, with a minimal host loop
// (tarm/serial, as the runner opens it). The pty carries bytes at memory
// speed: a real 921600-baud line needs about 271 µs of line time per READ
// (docs/uart-bridge.md, "Sizes on the wire").
func BenchmarkBridgeReadRoundTrip(b *testing.B) {
	bd := testBoard(b, rackOpts{})
	p := openSerial(b, bd.bridgePath, 921600)
	defer p.Close()
	var frames [256][]byte
	for i := range frames {
		frames[i] = reqFrame(byte(i), 0x01, tdScratch, 1)
	}
	buf := make([]byte, 64)
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		seq := byte(i)
		if _, err := p.Write(frames[seq]); err != nil {
			b.Fatal(err)
		}
		got := 0
		for waited := 0; got < 13; {
			n, err := p.Read(buf[got:])
			if err != nil && err != io.EOF {
				b.Fatal(err)
			}
			if n == 0 {
				// tarm/serial's 100 ms read timeout passed; a loaded
				// machine may stall that long, a lost answer would not
				// come in 2 s.
				if waited++; waited == 20 {
					b.Fatalf("round trip %d: no answer in 2 s", i)
				}
			}
			got += n
		}
		if buf[2] != seq || buf[4] != 0 {
			b.Fatalf("round trip %d: answer % X", i, buf[:got])
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "roundtrips/s")
}

// BenchmarkBridgeFraming: parsing requests and encoding answers in memory,
// 64-word write bursts and single reads alternating.
func BenchmarkBridgeFraming(b *testing.B) {
	w := make([]uint32, 64)
	stream := append(reqFrame(1, 0x04, 0, 64, w...), reqFrame(2, 0x01, 0, 1)...)
	var p reqParser
	var r request
	out := make([]byte, 0, 512)
	b.SetBytes(int64(len(stream)))
	for i := 0; i < b.N; i++ {
		p.push(stream)
		for p.next(&r) {
			out = appendResponse(out[:0], r.Seq, r.Cmd, statusOK, w[:1])
		}
	}
}
