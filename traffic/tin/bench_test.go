package tin

import "testing"

// BenchmarkStitch stitches the records of 1000 three-hop cells (the size of
// a busy collector read), reported as records per second.
func BenchmarkStitch(b *testing.B) {
	tp := docTopology(b)
	src, dst := Node{0, 0}.Addr(), Node{1, 2}.Addr()
	var recs []TraceRecord
	for i := 0; i < 1000; i++ {
		recs = append(recs, records(b, tp, CellData, src, dst, uint64(i)<<45, 160, interPod)...)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if n := len(Stitch(tp, recs)); n != 1000 {
			b.Fatalf("%d paths", n)
		}
	}
	b.ReportMetric(float64(len(recs)*b.N)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkTableImage computes one board's whole routing-table image (3072
// words) by the recipe.
func BenchmarkTableImage(b *testing.B) {
	tp := docTopology(b)
	for i := 0; i < b.N; i++ {
		if len(tp.TableImage("tin-p0b0")) != SwitchPorts*Destinations*tableWords {
			b.Fatal("image size")
		}
	}
}
