package tin

import (
	"sort"
	"testing"
)

func TestExploreCurve(t *testing.T) {
	for _, load := range []uint32{5, 10, 20, 30, 40, 50} {
		tr := newTestRack(t, rackOpts{})
		tr.ur(load*1000, 4096, 300, ipgReply)
		st := tr.run()
		var all []uint32
		for _, n := range tr.names {
			all = append(all, tr.samples(n, latIP)...)
		}
		sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
		t.Logf("load %d%%: status %#x n=%d p50 %d p99 %d ctd %d nonmin %d kev %d", load, st, len(all), all[len(all)/2], all[len(all)*99/100], tr.sum("IP_CTD_SENT"), tr.sum("AR_NONMINIMAL"), tr.rd(tr.names[0], "TG_KEVENTS"))
	}
}
