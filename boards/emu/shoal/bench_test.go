package shoal

import (
	"testing"
)

// BenchmarkSlots measures emulated slots per second of the 8-board rack of
// §6.1 (8 NICs, 6 switches) carrying a full permutation of long flows: every
// NIC sends a cell every slot.
func BenchmarkSlots(b *testing.B) {
	tr := newTestRack(b, rackOpts{})
	tr.configure(setup{})
	perm := []int{3, 5, 0, 7, 6, 2, 1, 4}
	var flows []flow
	for i, d := range perm {
		flows = append(flows, flow{src: i, dst: d, bytes: 1 << 31, tag: uint32(i)})
	}
	tr.loadFlows(flows)
	const chunk = 10000
	b.ResetTimer()
	slots := 0
	for slots < b.N {
		n := min(chunk, b.N-slots)
		tr.runTraffic(uint32(n))
		slots += n
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "slots/s")
}
