package exanet

import (
	"testing"
	"time"
)

// BenchmarkLinkTest2000 measures the emulator's speed on the link bandwidth
// test of §4.3: 2000 packets of 512 B from (0,0) to (1,0) of the 2x2 mesh,
// simulated to quiescence inside the TG_CTRL.START write. It reports
// emulated fabric cycles (of the receiving board) and packets per second of
// wall time.
func BenchmarkLinkTest2000(b *testing.B) {
	rk := mesh2x2(b, 1, nil, nil)
	var cycles, packets int64
	var wall time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		rk.w("b10", "CONS_CTRL", 3)
		c0 := rk.nodes["b10"].now()
		b.StartTimer()
		t0 := time.Now()
		st := rk.tg("b00", 1, coordWord(1, 0, 0), 0, 512, 2000, false)
		wall += time.Since(t0)
		b.StopTimer()
		if st != 1 {
			b.Fatalf("TG_STATUS = %#x", st)
		}
		cycles += rk.nodes["b10"].now() - c0
		packets += int64(rk.r("b10", "CONS_PACKETS"))
		b.StartTimer()
	}
	b.ReportMetric(float64(cycles)/wall.Seconds(), "cycles/s")
	b.ReportMetric(float64(packets)/wall.Seconds(), "packets/s")
}
