package tin_test

import (
	"sort"
	"testing"

	tt "labrunner/traffic/tin"
)

func TestExplore(t *testing.T) {
	g := newRig(t)
	g.rack.WriteAll(g.ctx, "TRACE_CTRL", tt.TraceIP)
	g.load(tt.UniformRandom{Load: 0.01, Bytes: 1500, Count: 1, Reply: true, ReplyBytes: 64, Port: 1, Log: true, Sources: 1, Fanout: 1, Seed: 3}.Writes(g.topo, 100000))
	g.run()
	recs, _ := g.rack.AllTraces(g.ctx)
	paths := tt.Stitch(g.topo, recs)
	sort.Slice(paths, func(i, j int) bool { return paths[i].Records[0].ArriveNS < paths[j].Records[0].ArriveNS })
	for _, p := range paths {
		f, l := p.Records[0], p.Records[len(p.Records)-1]
		t.Logf("%-4s len=%3d %-40s in %6d out %6d  %v", p.ID.Type, f.Header.Len, p.Text(), f.ArriveNS, l.GrantNS, p.Problems)
	}
	for _, b := range g.topo.Boards {
		d, _ := g.rack.Deliveries(g.ctx, b)
		for _, x := range d {
			t.Logf("%s delivery %+v", b, x)
		}
		s, _ := g.rack.Samples(g.ctx, b, tt.LatIP)
		if len(s) > 0 {
			t.Logf("%s RTT samples %v", b, s)
		}
	}
}
