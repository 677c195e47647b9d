package exanet

import (
	"fmt"
	"testing"

	"github.com/labrunner/labrunner/labconfig"
)

// refDirection is an independent reading of §3.3's DOR: take the
// dimensions in the configured order and move along the first one whose
// offset is not zero. It returns the dimension, the sign, or dim -1 when
// the packet is home.
func refDirection(cur, dest [3]int, order [3]int) (dim int, neg bool) {
	for _, d := range order {
		if dest[d] != cur[d] {
			return d, dest[d] < cur[d]
		}
	}
	return -1, false
}

var allOrders = [][3]int{{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}}

func orderWord(o [3]int) uint32 { return uint32(o[0]) | uint32(o[1])<<2 | uint32(o[2])<<4 }

// TestDORRouteFunction walks every pair of nodes of a 3x3x2 lattice in every
// dimension order. At each hop the router must pick exactly the direction
// DOR picks (whichever link port serves it) and the VC of §3.3 (1 when the
// offset in the routed dimension is positive); the walk must reach the
// destination in Manhattan-distance hops and deliver to DEST_PORT.
func TestDORRouteFunction(t *testing.T) {
	lattice := [3]int{3, 3, 2}
	lat := coordWord(3, 3, 2)
	hops := 0
	for _, ord := range allOrders {
		for s := 0; s < 18; s++ {
			for d := 0; d < 18; d++ {
				src := [3]int{s % 3, s / 3 % 3, s / 9}
				dst := [3]int{d % 3, d / 3 % 3, d / 9}
				dest := coordWord(dst[0], dst[1], dst[2]) | 2<<24
				cur := src
				dist := 0
				for i := 0; i < 3; i++ {
					dist += abs(dst[i] - src[i])
				}
				for step := 0; ; step++ {
					if step > dist {
						t.Fatalf("order %v %v->%v: no arrival after %d hops", ord, src, dst, step)
					}
					dim, neg := refDirection(cur, dst, ord)
					cfg := routeCfg{coord: coordWord(cur[0], cur[1], cur[2]), lattice: lat, order: orderWord(ord), portEnable: 0x307}
					if dim < 0 {
						out, vc, ok := route(cfg, dest)
						if !ok || out != 2 || vc != 0 || step != dist {
							t.Fatalf("order %v %v->%v at home after %d hops: route = %d, vc %d, ok %v", ord, src, dst, step, out, vc, ok)
						}
						break
					}
					want := dirCode(dim, neg)
					wrong := want%6 + 1 // another direction
					for _, ld := range [][2]uint32{{want, wrong}, {wrong, want}} {
						cfg.linkDir = ld[0] | ld[1]<<4
						out, vc, ok := route(cfg, dest)
						wantOut := 3
						if ld[1] == want {
							wantOut = 4
						}
						wantVC := uint32(1)
						if neg {
							wantVC = 0
						}
						if !ok || out != wantOut || vc != wantVC {
							t.Fatalf("order %v at %v for %v: route = port %d vc %d ok %v; DOR wants direction %d on port %d, vc %d",
								ord, cur, dst, out, vc, ok, want, wantOut, wantVC)
						}
					}
					// No link serving the DOR direction: a route error, never another dimension.
					cfg.linkDir = wrong | wrong<<4
					if _, _, ok := route(cfg, dest); ok {
						t.Fatalf("order %v at %v for %v: routed although no link serves direction %d", ord, cur, dst, want)
					}
					if neg {
						cur[dim]--
					} else {
						cur[dim]++
					}
					hops++
				}
			}
		}
	}
	if hops == 0 {
		t.Fatal("no hops walked")
	}
	// Destinations outside the lattice and disabled ports are route errors.
	cfg := routeCfg{coord: 0, lattice: lat, order: orderXYZ, linkDir: dXp | dYp<<4, portEnable: 0x307}
	for _, bad := range []uint32{coordWord(3, 0, 0), coordWord(0, 0, 2), coordWord(0, 0, 0) | 3<<24} {
		if _, _, ok := route(cfg, bad); ok {
			t.Errorf("route to 0x%x outside lattice %v succeeded", bad, lattice)
		}
	}
	cfg.portEnable = 0x303 // intra-tile port 2 disabled
	if _, _, ok := route(cfg, 2<<24); ok {
		t.Error("route to disabled intra-tile port 2 succeeded")
	}
	cfg.portEnable = 0x207 // link 0 disabled
	if _, _, ok := route(cfg, coordWord(1, 0, 0)); ok {
		t.Error("route over disabled link port 0 succeeded")
	}
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

type traceEntry struct {
	tag          uint32
	in, out, vc  int
	cycle, coord uint32
}

func (rk *rack) traces(board string) []traceEntry {
	n := rk.r(board, "TRACE_COUNT")
	var out []traceEntry
	for i := uint32(0); i < n; i++ {
		var w [4]uint32
		for j := range w {
			w[j] = rk.r(board, "TRACE_DATA")
		}
		out = append(out, traceEntry{tag: w[0], in: int(w[1] & 0xf), out: int(w[1] >> 4 & 0xf), vc: int(w[1] >> 8 & 1), cycle: w[2], coord: w[3]})
	}
	if c := rk.r(board, "TRACE_COUNT"); c != 0 {
		rk.T.Errorf("%s: TRACE_COUNT = %d after draining", board, c)
	}
	return out
}

type hop struct {
	board       string
	in, out, vc int
}

// checkPath runs one traced packet and checks every router's trace.
func (rk *rack) checkPath(t *testing.T, from string, dest uint32, destPort int, path []hop, boards []string) {
	t.Helper()
	for _, b := range boards {
		rk.w(b, "TRACE_CTRL", 3)
		rk.w(b, "CONS_CTRL", 3)
	}
	if st := rk.tg(from, 1, dest, destPort, 64, 1, true); st != 1 {
		t.Fatalf("TG_STATUS = %#x", st)
	}
	tag := rk.r(from, "TG_LAST_TAG")
	on := map[string]hop{}
	for _, h := range path {
		on[h.board] = h
	}
	var last *traceEntry
	for _, h := range path {
		tr := rk.traces(h.board)
		if len(tr) != 1 {
			t.Fatalf("%s: %d trace entries, want 1 (path %v)", h.board, len(tr), path)
		}
		e := tr[0]
		if e.tag != tag || e.in != h.in || e.out != h.out || e.vc != h.vc || e.coord != rk.r(h.board, "COORD") {
			t.Errorf("%s: trace %+v, want tag %#x in %d out %d vc %d coord %#x", h.board, e, tag, h.in, h.out, h.vc, rk.r(h.board, "COORD"))
		}
		if last != nil && e.cycle <= last.cycle {
			t.Errorf("%s routed the header at cycle %d, not after the previous hop (%d)", h.board, e.cycle, last.cycle)
		}
		last = &e
	}
	for _, b := range boards {
		if _, ok := on[b]; ok {
			continue
		}
		if tr := rk.traces(b); len(tr) != 0 {
			t.Errorf("%s is off the DOR path but traced %+v", b, tr)
		}
	}
	end := path[len(path)-1].board
	if got := rk.r(end, "CONS_PACKETS"); got != 1 {
		t.Errorf("%s consumed %d packets, want 1", end, got)
	}
	if mis := rk.r(end, "CONS_MISDELIVERED"); mis != 0 {
		t.Errorf("%s: CONS_MISDELIVERED = %d", end, mis)
	}
}

// TestDORTraces2x2 checks DOR paths and VC choice on the paper's 2x2 mesh
// (§3.1), in both dimension orders and both directions.
func TestDORTraces2x2(t *testing.T) {
	all := []string{"b00", "b10", "b01", "b11"}
	rk := mesh2x2(t, 1, nil, nil)
	// X first: (0,0) -> (1,0) -> (1,1), both offsets positive: upper VC.
	rk.checkPath(t, "b00", coordWord(1, 1, 0), 2, []hop{{"b00", 0, 3, 1}, {"b10", 3, 4, 1}, {"b11", 4, 2, 0}}, all)
	// Back: (1,1) -> (0,1) -> (0,0), negative offsets: lower VC.
	rk.checkPath(t, "b11", coordWord(0, 0, 0), 1, []hop{{"b11", 0, 3, 0}, {"b01", 3, 4, 0}, {"b00", 4, 1, 0}}, all)
	// Y first.
	for _, b := range all {
		rk.w(b, "DOR_ORDER", 0x21) // Y, X, Z
	}
	rk.checkPath(t, "b00", coordWord(1, 1, 0), 0, []hop{{"b00", 0, 4, 1}, {"b01", 4, 3, 1}, {"b11", 3, 0, 0}}, all)
	rk.checkPath(t, "b10", coordWord(0, 1, 0), 0, []hop{{"b10", 0, 4, 1}, {"b11", 4, 3, 0}, {"b01", 3, 0, 0}}, all)
}

// TestDORChain3x3x2 follows a packet across a 3x3x2 lattice. Each board has
// two links, so the lattice is cabled as the chain of the DOR path:
// (0,0,0) (1,0,0) (2,0,0) (2,1,0) (2,2,0) (2,2,1). With order XYZ the packet
// from the first to the last follows it; the reverse packet with order XYZ
// has no X- link at (2,2,1) and is a route error; with order ZYX it follows
// the chain back on the lower VC.
func TestDORChain3x3x2(t *testing.T) {
	coords := [][3]int{{0, 0, 0}, {1, 0, 0}, {2, 0, 0}, {2, 1, 0}, {2, 2, 0}, {2, 2, 1}}
	var names []string
	var links []testLink
	for i := range coords {
		names = append(names, fmt.Sprintf("n%d", i))
		if i > 0 {
			links = append(links, testLink{a: fmt.Sprintf("n%d:sfp1", i-1), b: fmt.Sprintf("n%d:sfp0", i)})
		}
	}
	rk := newRack(t, rackSpec{boards: names, links: links})
	dir := func(a, b [3]int) uint32 {
		for d := 0; d < 3; d++ {
			if a[d] != b[d] {
				return dirCode(d, b[d] < a[d])
			}
		}
		return 0
	}
	for i, c := range coords {
		var l0, l1 uint32
		if i > 0 {
			l0 = dir(c, coords[i-1])
		}
		if i+1 < len(coords) {
			l1 = dir(c, coords[i+1])
		}
		rk.configure(names[i], coordWord(c[0], c[1], c[2]), coordWord(3, 3, 2), orderXYZ, l0, l1)
		if rk.r(names[i], "ROUTER_STATUS")&1 == 0 {
			t.Errorf("%s: ROUTER_STATUS.CONFIGURED not set", names[i])
		}
	}
	var fwd, back []hop
	for i := range names {
		in, out := 3, 4
		if i == 0 {
			in = 0
		}
		if i == len(names)-1 {
			out = 1
		}
		vc := 1
		if out < 3 {
			vc = 0
		}
		fwd = append(fwd, hop{names[i], in, out, vc})
	}
	rk.checkPath(t, "n0", coordWord(2, 2, 1), 1, fwd, names)

	// Reverse with XYZ: (2,2,1) has no X- link.
	before := rk.r("n5", "ROUTE_ERRORS")
	rk.w("n0", "CONS_CTRL", 3)
	if st := rk.tg("n5", 1, coordWord(0, 0, 0), 0, 64, 1, false); st != 1 {
		t.Fatalf("TG_STATUS = %#x", st)
	}
	if got := rk.r("n5", "ROUTE_ERRORS"); got != before+1 {
		t.Errorf("n5: ROUTE_ERRORS = %d, want %d (DOR must not take another dimension first)", got, before+1)
	}
	if got := rk.r("n0", "CONS_PACKETS"); got != 0 {
		t.Errorf("n0 received %d packets that DOR cannot deliver", got)
	}

	for _, n := range names {
		rk.w(n, "DOR_ORDER", orderZYX)
	}
	for i := len(names) - 1; i >= 0; i-- {
		in, out := 4, 3
		if i == len(names)-1 {
			in = 0
		}
		if i == 0 {
			out = 2
		}
		back = append(back, hop{names[i], in, out, 0})
	}
	rk.checkPath(t, "n5", coordWord(0, 0, 0), 2, back, names)
}

// TestDORMisrouteFault: with dor-misroute the board's router takes the
// dimensions in the reverse order; the trace shows it.
func TestDORMisrouteFault(t *testing.T) {
	all := []string{"b00", "b10", "b01", "b11"}
	rk := mesh2x2(t, 1, []labconfig.Fault{{Name: "dor-misroute", Board: "b00"}}, nil)
	// DOR (X first) would go through b10; the faulty router goes Y first.
	rk.checkPath(t, "b00", coordWord(1, 1, 0), 2, []hop{{"b00", 0, 4, 1}, {"b01", 4, 3, 1}, {"b11", 3, 2, 0}}, all)
}
