package tin

import (
	"testing"
)

// BenchmarkCells measures emulated cells per second of the 8-board Clique
// (2 pods x 4) carrying uniform-random 4 KB IP traffic with replies at 40%
// of the injection rate: the figure is cell hops across switch crossbars
// (SW_CELLS summed over the boards) per second of wall time.
func BenchmarkCells(b *testing.B) {
	tr := newTestRack(b, rackOpts{})
	tr.ur(40000, 4096, 400, ipgReply)
	b.ResetTimer()
	var cells uint64
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		tr.clear()
		b.StartTimer()
		if st := tr.run(); st&tgDone == 0 {
			b.Fatalf("TG_STATUS %#x", st)
		}
		b.StopTimer()
		cells += tr.Sum("SW_CELLS")
		b.StartTimer()
	}
	b.ReportMetric(float64(cells)/b.Elapsed().Seconds(), "cells/s")
	b.ReportMetric(float64(tr.Read(tr.Names[0], "TG_KEVENTS"))*1000*float64(b.N)/b.Elapsed().Seconds(), "events/s")
}
