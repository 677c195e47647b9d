package uartbridge

import (
	"context"
	"testing"
)

// wireBytes reports the bytes both ways per operation, as measured.
func wireBytes(b *testing.B, br *Bridge, before Stats) {
	st := br.Stats()
	b.ReportMetric(float64(st.TxBytes-before.TxBytes+st.RxBytes-before.RxBytes)/float64(b.N), "wire-B/op")
	if st.Retries != before.Retries {
		b.Logf("%d retries during the benchmark", st.Retries-before.Retries)
	}
}

// BenchmarkRead32 is one READ round trip through tarm/serial, a
// pseudo-terminal and the test peer.
func BenchmarkRead32(b *testing.B) {
	br, _, _ := newBridge(b, Options{Timeout: calm})
	ctx := context.Background()
	syncBridge(b, br)
	before := br.Stats()
	for b.Loop() {
		if _, err := br.Read32(ctx, 0x40); err != nil {
			b.Fatal(err)
		}
	}
	wireBytes(b, br, before)
}

// BenchmarkReadBurst64 is one 64-word READ_BURST round trip.
func BenchmarkReadBurst64(b *testing.B) {
	br, _, _ := newBridge(b, Options{Timeout: calm})
	ctx := context.Background()
	syncBridge(b, br)
	dst := make([]uint32, 64)
	before := br.Stats()
	b.SetBytes(4 * 64)
	for b.Loop() {
		if err := br.ReadBurst(ctx, 0x100, dst); err != nil {
			b.Fatal(err)
		}
	}
	wireBytes(b, br, before)
}

func burst64() []uint32 {
	w := make([]uint32, 64)
	for i := range w {
		w[i] = uint32(i) * 0x9E3779B9
	}
	return w
}

func BenchmarkEncodeResponse64(b *testing.B) {
	r := Response{Seq: 1, Cmd: CmdReadBurst, Data: burst64()}
	buf := make([]byte, 0, ResponseLen(64))
	b.SetBytes(int64(ResponseLen(64)))
	for b.Loop() {
		var err error
		if buf, err = AppendResponse(buf[:0], r); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeRequest64(b *testing.B) {
	r := Request{Seq: 1, Cmd: CmdWriteBurst, Count: 64, Data: burst64()}
	buf := make([]byte, 0, RequestLen(CmdWriteBurst, 64))
	b.SetBytes(int64(RequestLen(CmdWriteBurst, 64)))
	for b.Loop() {
		var err error
		if buf, err = AppendRequest(buf[:0], r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeResponse64 feeds a 64-word answer to the streaming decoder
// in the chunk sizes a serial read typically returns.
func BenchmarkDecodeResponse64(b *testing.B) {
	frame := mustResp(b, Response{Seq: 1, Cmd: CmdReadBurst, Data: burst64()})
	d := NewResponseDecoder()
	b.SetBytes(int64(len(frame)))
	for b.Loop() {
		for i := 0; i < len(frame); i += 32 {
			d.Write(frame[i:min(i+32, len(frame))])
		}
		if r, err := d.Next(); err != nil || len(r.Data) != 64 {
			b.Fatal(r, err)
		}
	}
}

func BenchmarkDecodeRequest64(b *testing.B) {
	frame := mustReq(b, Request{Seq: 1, Cmd: CmdWriteBurst, Count: 64, Data: burst64()})
	d := NewRequestDecoder()
	b.SetBytes(int64(len(frame)))
	for b.Loop() {
		d.Write(frame)
		if r, _, err := d.Next(); err != nil || len(r.Data) != 64 {
			b.Fatal(r, err)
		}
	}
}
