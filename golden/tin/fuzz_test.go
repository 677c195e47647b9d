package tin

import (
	"strings"
	"testing"
)

// FuzzParseAddr: an accepted address is in range and renders back to
// itself; ParseNode likewise.
func FuzzParseAddr(f *testing.F) {
	for _, s := range []string{"p0t1e2", "p0t1", " P47T11E17 ", "p64t0", "p0t16", "p01t1", "p0t1e", "e1", "p0t1e2x", "p9999999999t0", "p+1t0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := ParseAddr(s)
		if err != nil {
			if !strings.Contains(err.Error(), "GNet address") {
				t.Fatalf("error %q does not say what failed", err)
			}
		} else {
			if a.Pod < 0 || a.Pod >= MaxPods || a.TiN < 0 || a.TiN >= MaxTiNs || a.EP < 0 || a.EP >= MaxEndpoints {
				t.Fatalf("ParseAddr(%q) = %+v, out of range", s, a)
			}
			if back, err := ParseAddr(a.String()); err != nil || back != a {
				t.Fatalf("ParseAddr(%q) = %v; %q parses to %v, %v", s, a, a.String(), back, err)
			}
		}
		if n, err := ParseNode(s); err == nil {
			if back, err := ParseNode(n.String()); err != nil || back != n {
				t.Fatalf("ParseNode(%q) = %v does not round-trip", s, n)
			}
		}
	})
}

// FuzzParsePath: an accepted path renders to a text that parses back to it,
// and its hop kinds follow the pods.
func FuzzParsePath(f *testing.F) {
	for _, s := range []string{"p0t1", "p0t1->p0t0[vc0]->p1t0[vc0]->p1t2[vc1]", "p0t1->p1t1[VC31]", "p0t1->p0t1[vc0]", "p0t1->p0t2[vc32]",
		"p0t1->", "->p0t1[vc0]", "p0t1->p0t2[vc0", "p0t1->p0t2vc0]", "p0t1->p0t2[x0]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePath(s)
		if err != nil {
			return
		}
		back, err := ParsePath(p.String())
		if err != nil || !back.Equal(p) {
			t.Fatalf("ParsePath(%q) = %s; reparsed %v, %v", s, p, back, err)
		}
		prev := p.From
		for _, h := range p.Hops {
			if (h.Kind == Global) != (h.To.Pod != prev.Pod) || h.VC < 0 || h.VC >= VCs || h.To == prev {
				t.Fatalf("ParsePath(%q): bad hop %+v after %s", s, h, prev)
			}
			prev = h.To
		}
	})
}

// FuzzParseWiring: accepted wiring has no link inside a pod or twice, and
// building a Clique from it never panics.
func FuzzParseWiring(f *testing.F) {
	for _, s := range []string{"p0t0-p1t0,p0t1-p1t1", "p0t0-p1t0", "p0t0-p0t1", "p0t0-p1t0,p1t0-p0t0", "", ",", "p0t0--p1t0", "p0t0-p1t0-p2t0"} {
		f.Add(s, 2, 2)
	}
	f.Fuzz(func(t *testing.T, s string, pods, tins int) {
		ls, err := ParseWiring(s)
		if err != nil {
			return
		}
		seen := map[GlobalLink]bool{}
		for _, l := range ls {
			if seen[l] || lessNode(l.B, l.A) || l.A == l.B {
				t.Fatalf("ParseWiring(%q) = %v", s, ls)
			}
			seen[l] = true
		}
		c, err := NewCliqueWired(pods, tins, ls)
		if err == nil && c.Pods > 1 {
			for a := 0; a < c.Pods; a++ {
				for b := 0; b < c.Pods; b++ {
					if a != b && len(c.Between(a, b)) == 0 {
						t.Fatalf("accepted a Clique whose pods %d and %d are not linked", a, b)
					}
				}
			}
		}
	})
}

// FuzzCells: any length and granularity either fails or yields legal cells
// that carry the packet with the fewest cells.
func FuzzCells(f *testing.F) {
	for _, c := range [][2]int{{1, 8}, {152, 8}, {153, 1}, {1500, 16}, {65535, 8}, {0, 8}, {100, 3}, {-5, 8}} {
		f.Add(c[0], c[1])
	}
	f.Fuzz(func(t *testing.T, l, align int) {
		if _, err := CellsAlign(l, align); err != nil {
			return
		}
		checkCells(t, l, align)
	})
}

// FuzzParsePlan: Predict's parameter parser never panics on the topology
// and addressing parameters, and what it accepts routes without error.
func FuzzParsePlan(f *testing.F) {
	f.Add("2x4", "1", "", "p0t1e0", "p1t2e0", "fully-adaptive", "0")
	f.Add("3x2", "1", "p0t0-p1t1,p0t1-p2t0,p1t0-p2t1", "p0t0e1", "p2t0e2", "deterministic", "9")
	f.Add("1x1", "0", "", "", "", "", "0")
	f.Add("64x16", "8", "", "p0t0e0", "p63t15e63", "minimal-adaptive", "3")
	f.Fuzz(func(t *testing.T, clique, globals, wiring, src, dst, modes, class string) {
		set := map[string]string{"clique": clique, "globals": globals, "modes": modes, "class": class,
			"loads": "", "packets": "64", "reads": ""}
		if wiring != "" {
			set["wiring"] = wiring
		}
		if src != "" || dst != "" {
			set["src"], set["dst"] = src, dst
		} else if strings.Count(clique, "x") == 1 && len(clique) > 4 {
			return // every pair of a large Clique: slow, and covered by tests
		}
		pl, err := ParsePlan(set)
		if err != nil {
			return
		}
		for _, pr := range pl.Pairs {
			for _, m := range pl.Modes {
				if _, err := pl.Clique.Routes(pr[0], pr[1], m, pl.Class); err != nil {
					t.Fatalf("accepted plan fails to route %v: %v", pr, err)
				}
			}
		}
	})
}

// FuzzParseAlgorithm: any text is an algorithm that prints back to itself
// or an error, never a panic.
func FuzzParseAlgorithm(f *testing.F) {
	for _, s := range []string{"minimal", "par", "ugal", "valiant", "fully-adaptive", "minimal-deterministic", "", "PAR", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := ParseAlgorithm(s)
		if err != nil {
			return
		}
		if b, err := ParseAlgorithm(a.String()); err != nil || b != a {
			t.Errorf("%q -> %s -> %v, %v", s, a, b, err)
		}
	})
}

// FuzzParsePattern: likewise for traffic patterns.
func FuzzParsePattern(f *testing.F) {
	for _, s := range []string{"uniform", "group-shift", " Uniform ", "", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePattern(s)
		if err != nil {
			return
		}
		if q, err := ParsePattern(p.String()); err != nil || q != p {
			t.Errorf("%q -> %s -> %v, %v", s, p, q, err)
		}
	})
}

// FuzzParseReadPlan: the parameters of the read latency never panic the
// parser, and a plan it accepts sizes every read's Resp cells and makes a
// read configuration the simulation takes.
func FuzzParseReadPlan(f *testing.F) {
	f.Add("4096", "128", "4", "20", "10000", "800", "200", "fully-adaptive", "0")
	f.Add("1", "1", "0", "0", "1", "0", "0", "minimal-deterministic", "2.5")
	f.Add("1048576", "152", "0", "100000", "1e9", "1e7", "1e7", "deterministic", "1e6")
	f.Add("64", "128", "30", "-1", "0", "NaN", "-1", "x", "Inf")
	f.Fuzz(func(t *testing.T, reads, completion, tag, count, qps, mem, cpl, mode, spread string) {
		pl, err := ParsePlan(map[string]string{"packets": "", "loads": "", "modes": "", "reads": reads, "completion": completion,
			"resp_tag": tag, "rma_count": count, "rma_qps": qps, "rma_mem_ns": mem, "rma_cpl_ns": cpl, "rma_mode": mode, "cable_spread_ns": spread})
		if err != nil {
			if !strings.HasPrefix(err.Error(), Name+": parameter") {
				t.Fatalf("error %q does not name the parameter", err)
			}
			return
		}
		for _, b := range pl.Reads {
			cfg := ReadConfig{Clique: pl.Clique, Timing: pl.Timing, Mode: pl.RMAMode, Bytes: b, Completion: pl.Completion, RespTag: pl.RespTag,
				Align: pl.Align, MemNs: pl.RMAMemNs, CplNs: pl.RMACplNs, QPS: pl.RMAQPS, Reads: max(pl.RMACount, 1)}
			if err := cfg.check(); err != nil {
				t.Fatalf("accepted plan makes a bad read configuration: %v", err)
			}
			for _, c := range mustResp(b, pl) {
				if c < MinCell || c > MaxCell {
					t.Fatalf("read of %d B: a Resp cell of %d B", b, c)
				}
			}
		}
	})
}

// FuzzParseBulkPlan: the parameters of the reads beside bulk IP never
// panic the parser, a refused one is named, and a plan it accepts makes
// a bulk the simulation takes on the plan's Clique.
func FuzzParseBulkPlan(f *testing.F) {
	f.Add("0.2", "4864", "1285", "8", "3", "20", "10000")
	f.Add("0", "1", "0", "1", "2", "0", "1")
	f.Add("1", "65535", "2500000", "255", "64", "100000", "1e9")
	f.Add("-0.1", "0", "-1", "0", "1", "x", "NaN")
	f.Fuzz(func(t *testing.T, load, bytes, packets, weight, runs, count, qps string) {
		pl, err := ParsePlan(map[string]string{"packets": "", "loads": "", "modes": "", "rma_bulk_load": load, "rma_bulk_bytes": bytes,
			"rma_bulk_packets": packets, "rma_hipri_weight": weight, "rma_bulk_runs": runs, "rma_count": count, "rma_qps": qps})
		if err != nil {
			if !strings.HasPrefix(err.Error(), Name+": parameter") {
				t.Fatalf("error %q does not name the parameter", err)
			}
			return
		}
		if pl.RMABulkLoad == 0 || pl.RMACount == 0 {
			return
		}
		b := BulkIP{Load: pl.RMABulkLoad, Bytes: pl.RMABulkBytes, Packets: bulkPackets(pl), HiPriWeight: pl.RMAHiPriWeight}
		n := pl.Clique.Pods * pl.Clique.TiNs
		if err := b.check(n); (err == nil) != (b.Packets >= 1 && b.Packets*n <= MaxSimPackets) {
			t.Fatalf("bulk of %d packets per TiN on %d TiNs: check says %v", b.Packets, n, err)
		}
	})
}
