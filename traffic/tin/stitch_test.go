package tin

import (
	"strings"
	"testing"
)

// hop is one switch's record of a synthetic cell.
type hop struct {
	board       string
	in, out, vc int // vc: the VC the cell arrived on
	outVC       int
	t           uint32
}

// records builds the collector records of a cell crossing hops, injected
// at the first.
func records(t testing.TB, tp *Topology, typ CellType, src, dst Addr, p0 uint64, length int, hops []hop) []TraceRecord {
	t.Helper()
	var out []TraceRecord
	for i, h := range hops {
		hd := Header{Dst: dst, Src: src, Len: length, Type: typ, VC: h.vc, Hop: 8 - i, Trace: true}
		r, err := DecodeTrace(traceWords(hd, p0, tp.Node[h.board].Addr(), h.in, h.out, h.outVC, RouteMinimal, h.t, h.t+16, uint32(i), i == 0))
		if err != nil {
			t.Fatal(err)
		}
		r.Board = h.board
		out = append(out, r)
	}
	return out
}

// p0t0 -> (sfp3, global) p1t0 -> (sfp1, local) p1t2, ejected to the IP port.
var interPod = []hop{
	{board: "tin-p0b0", in: PortIP, out: 3, vc: 9, outVC: 9, t: 100},
	{board: "tin-p1b0", in: 3, out: 1, vc: 9, outVC: 10, t: 250},
	{board: "tin-p1b2", in: 1, out: PortIP, vc: 10, outVC: 10, t: 320},
}

func TestStitchFollowsTheCabling(t *testing.T) {
	tp := docTopology(t)
	src, dst := Node{0, 0}.Addr().WithEP(1), Node{1, 2}.Addr().WithEP(1)
	recs := records(t, tp, CellData, src, dst, 1<<44, 160, interPod)
	// The collectors are read board by board: shuffle the order.
	recs[0], recs[2] = recs[2], recs[0]
	paths := Stitch(tp, recs)
	if len(paths) != 1 {
		t.Fatalf("%d paths, want 1", len(paths))
	}
	p := paths[0]
	if !p.Complete || len(p.Problems) > 0 {
		t.Fatalf("path incomplete: %v", p.Problems)
	}
	if p.Text() != "p0t0->p1t0[vc9]->p1t2[vc10]" || p.Hops() != 2 || p.Class() != 3 {
		t.Errorf("path %s (%d hops, class %d)", p.Text(), p.Hops(), p.Class())
	}
	if p.LatencyNS() != 336-100 {
		t.Errorf("latency %g, want last grant minus first arrival, 236", p.LatencyNS())
	}
}

func TestStitchReportsBrokenPaths(t *testing.T) {
	tp := docTopology(t)
	src, dst := Node{0, 0}.Addr(), Node{1, 2}.Addr()
	for _, c := range []struct {
		name string
		mod  func([]hop) []hop
		want string
	}{
		{"VC changed on the wire", func(h []hop) []hop { h[1].vc = 11; return h }, "received it on VC 11"},
		{"record missing", func(h []hop) []hop { return []hop{h[0], h[2]} }, "no record at tin-p1b0"},
		{"wrong cage", func(h []hop) []hop { h[1].in = 2; return h }, "no record at tin-p1b0 (cage sfp3"},
		{"ejected elsewhere", func(h []hop) []hop { return h[:2:2] }, "no record at tin-p1b2"},
	} {
		hops := append([]hop(nil), interPod...)
		recs := records(t, tp, CellRTS, src, dst, 0, 16, c.mod(hops))
		paths := Stitch(tp, recs)
		var all []string
		complete := false
		for _, p := range paths {
			all = append(all, p.Problems...)
			complete = complete || p.Complete
		}
		if complete || !strings.Contains(strings.Join(all, "; "), c.want) {
			t.Errorf("%s: complete %v, problems %v, want one naming %q", c.name, complete, all, c.want)
		}
	}
	// A record with a corrupted CRC.
	recs := records(t, tp, CellRTS, src, dst, 0, 16, interPod)
	recs[1].Header.CRC ^= 1
	p := Stitch(tp, recs)[0]
	if p.Complete || !strings.Contains(strings.Join(p.Problems, ";"), "CRC") {
		t.Errorf("bad CRC not reported: %v", p.Problems)
	}
}

func TestPacketsGatherRTSCTSAndData(t *testing.T) {
	tp := docTopology(t)
	src, dst := Node{0, 0}.Addr().WithEP(1), Node{1, 2}.Addr().WithEP(1)
	back := []hop{
		{board: "tin-p1b2", in: PortIP, out: 1, vc: 3, outVC: 3, t: 400},
		{board: "tin-p1b0", in: 1, out: 3, vc: 3, outVC: 3, t: 450},
		{board: "tin-p0b0", in: 3, out: PortIP, vc: 3, outVC: 3, t: 560},
	}
	shift := func(hs []hop, dt uint32) []hop {
		out := append([]hop(nil), hs...)
		for i := range out {
			out[i].t += dt
		}
		return out
	}
	const ingress, egress, flow, length = 17, 42, 3, 300
	rtsP0 := uint64(length)<<50 | uint64(ingress)<<35 | uint64(flow)<<15
	ctsP0 := uint64(ingress)<<52 | uint64(egress)<<40
	var recs []TraceRecord
	recs = append(recs, records(t, tp, CellRTS, src, dst, rtsP0, 16, interPod)...)
	recs = append(recs, records(t, tp, CellCTS, dst, src, ctsP0, 16, back)...)
	for i := 1; i >= 0; i-- { // cells in reverse order in the collectors
		// A data cell's header carries its RPTR where SRC would be; its
		// first payload word is packet bytes.
		rptr := Addr(egress<<5 | i)
		recs = append(recs, records(t, tp, CellData, rptr, dst, uint64(flow)<<48|uint64(i*152)<<32, 160, shift(interPod, 600+uint32(20*i)))...)
	}
	pk := Packets(Stitch(tp, recs))
	if len(pk) != 1 {
		t.Fatalf("%d packets, want 1", len(pk))
	}
	p := pk[0]
	if p.IngressSlot != ingress || p.EgressSlot != egress || p.Flow != flow || p.Length != length || p.CTS == nil || len(p.Data) != 2 {
		t.Fatalf("packet %+v", p)
	}
	if DecodeDataPtr(p.Data[0].ID.Ptr).Index != 0 || DecodeDataPtr(p.Data[1].ID.Ptr).Index != 1 {
		t.Errorf("data cells out of index order")
	}
	for _, d := range p.Data {
		if d.ID.Src.Node() != src.Node() || !d.Complete {
			t.Errorf("data cell path %+v: source %s, want the injecting TiN %s", d.ID, d.ID.Src, src.Node())
		}
	}
	if p.CTS.Text() != "p1t2->p1t0[vc3]->p0t0[vc3]" {
		t.Errorf("CTS path %s", p.CTS.Text())
	}
}
