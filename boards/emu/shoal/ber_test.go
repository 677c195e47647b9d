package shoal

import (
	"math"
	"testing"
)

// App. D: at a set bit-error rate, corrupted cells are counted, discarded
// and retransmitted on last-cell-dropped; the duplicates the conservative
// retransmission makes are dropped by sequence number; every flow still
// completes with exactly its cells, and no node is inferred failed.
func TestCellCorruptionRecovered(t *testing.T) {
	for _, c := range []struct {
		name      string
		linkBER   float64
		injectE12 uint32
	}{
		{"BER_INJECT 1e-5 on every board", 0, 10_000_000},
		{"cables at 5e-6", 5e-6, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr := newTestRack(t, rackOpts{ber: c.linkBER})
			tr.configure(setup{})
			for _, b := range tr.Rack.Boards() {
				tr.Write(b.Name(), "BER_INJECT", c.injectE12)
			}
			flows := randomFlows(11, 160, 500, 40000)
			tr.loadFlows(flows)
			tr.clear()
			if st := tr.runTraffic(0); st != tgDone {
				t.Fatalf("TG_STATUS = %#x, want DONE (%d of %d flows)", st, tr.Read("shoal-nic0", "TG_FLOWS_DONE"), len(flows))
			}
			payload := tr.Read("shoal-nic0", "PAYLOAD_BYTES")
			cellsTo := make([]uint64, nodes8)
			for _, f := range flows {
				cellsTo[f.dst] += uint64((f.bytes + payload - 1) / payload)
			}
			for n := 0; n < nodes8; n++ {
				if got := uint64(tr.nodeReg(n, "RX_DELIVERED_CELLS")); got != cellsTo[n] {
					t.Errorf("node %d: %d useful cells, want %d", n, got, cellsTo[n])
				}
			}
			if recs := tr.allRecords(); len(recs) != len(flows) {
				t.Errorf("%d records for %d flows", len(recs), len(flows))
			}
			corrupt, intact := tr.sumNodes("RX_CORRUPT_CELLS"), tr.sumNodes("RX_CELLS")
			// Four cables (or four receivers) of 512-bit cells at the rate.
			rate := c.linkBER + float64(c.injectE12)*1e-12
			want := 1 - math.Exp(-4*512*rate)
			got := float64(corrupt) / float64(corrupt+intact)
			t.Logf("corrupted %d of %d cells (%.4f, expected %.4f); %d retransmissions, %d duplicates dropped",
				corrupt, corrupt+intact, got, want, tr.sumNodes("TX_RETX_CELLS"), tr.sumNodes("RX_DUPLICATE_CELLS"))
			if got < want*0.7 || got > want*1.3 {
				t.Errorf("corrupted fraction %.4f, want about %.4f", got, want)
			}
			if tr.sumNodes("TX_RETX_CELLS") == 0 || tr.sumNodes("LCD_SENT") == 0 {
				t.Errorf("no retransmission on last-cell-dropped")
			}
			// A receive slot is judged closeLag slots after it (the cell's
			// one-way delay and pipelines, about 22 slots of 12 cycles), and
			// the run stops when the last flow completes: the corrupted
			// cells of those last slots (8 receivers) are counted but their
			// slots not yet judged. Every judged corruption fails its slot,
			// and nothing else does.
			tail := float64(nodes8*23) * got
			if f := tr.sumNodes("FAILED_SLOTS"); f > corrupt || float64(corrupt-f) > 3*tail+2 {
				t.Errorf("%d failed slots for %d corrupted cells (up to %.0f in the unjudged last slots): a corrupted cell fails its slot and nothing else should", f, corrupt, 3*tail+2)
			}
			for n, p := range failedPeers(tr) {
				if p != 0 {
					t.Errorf("node %d inferred %08b failed: corruption is not a failure (App. D)", n, p)
				}
			}
		})
	}
}
