package exanet

import (
	"fmt"
	"strings"

	"github.com/labrunner/labrunner/golden"
	"github.com/labrunner/labrunner/golden/param"
	"github.com/labrunner/labrunner/results"
)

// Name is the model's name in the registry.
const Name = "exanet"

// MaxPairNodes bounds the lattice for which Predict lists the paths of all
// ordered pairs (64 nodes: 4096 paths); a larger lattice needs src and dst.
const MaxPairNodes = 64

func init() { golden.Register(Model{}) }

// Model is the ExaNet golden model as a golden.Model.
type Model struct{}

// Name implements golden.Model.
func (Model) Name() string { return Name }

// Doc implements golden.Model.
func (Model) Doc() string {
	return "ExaNet (ParCo 2017): DOR paths with virtual channels (§3.3), APErouter and APElink " +
		"payload bandwidth versus payload against the raw 20/10 Gb/s peak (§4.3, Fig. 9/10), KARMA " +
		"ping-pong round-trip band and per-hop round-trip difference (§4.2, Fig. 7/8; §4.4). Metrics: " +
		"exanet.dor_path{src,dst}, exanet.bandwidth{path,payload}, exanet.bandwidth.peak{path,payload}, " +
		"exanet.rtt{hops,payload}, exanet.rtt.per_hop{payload}, exanet.hop_rtt{cable_ns,asymmetry_ns} (one hop's " +
		"round trip, router to router, from the routers' trace stamps)."
}

// Params implements golden.Model.
func (Model) Params() []golden.Param {
	return []golden.Param{
		{Name: "lattice", Default: "2,2,1", Doc: "mesh size nx,ny,nz (the 2x2 testbed of §3.1)"},
		{Name: "order", Default: "XYZ", Doc: "DOR dimension order, a permutation of XYZ (§3.3 priority registers)"},
		{Name: "src", Doc: "source x,y,z of one DOR path (with dst); default: all ordered pairs of the lattice"},
		{Name: "dst", Doc: "destination x,y,z of one DOR path (with src)"},
		{Name: "path", Default: strings.Join(Paths(), ","), Doc: "bandwidth data paths: router, router2x, link (empty: none)"},
		{Name: "payloads", Default: "32,64,128,256,512", Doc: "payload sizes in bytes, 1..512, for bandwidth, round trip and per-hop difference (empty: none)"},
		{Name: "hops", Default: "1,2", Doc: "hop counts for the round trip, 1..lattice diameter (empty: none); two consecutive counts add the per-hop difference"},
		{Name: "cable_ns", Default: "5", Doc: "one-way delay of a cable in ns (the lab file's latency_ns), for one hop's traced round trip (with hops)"},
		{Name: "asymmetry_ns", Default: "0", Doc: "what the cable adds in one direction only, in ns (the lab file's asymmetry_ns)"},
	}
}

// Predict implements golden.Model: the DOR paths, then bandwidth and peak
// for each path and payload, then the round trip for each hop count and
// payload, then, when hops lists two consecutive counts (the runner measures
// the difference only between those), the per-hop difference for each
// payload, then, when hops lists any, one hop's traced round trip across a
// cable of cable_ns (and asymmetry_ns).
func (m Model) Predict(set map[string]string) ([]results.Expectation, error) {
	s, err := golden.Settings(Name, m.Params(), set)
	if err != nil {
		return nil, err
	}
	lattice, err := ParseLattice(s["lattice"])
	if err != nil {
		return nil, fmt.Errorf("%s: parameter lattice: %w", Name, err)
	}
	order, err := ParseOrder(s["order"])
	if err != nil {
		return nil, fmt.Errorf("%s: parameter order: %w", Name, err)
	}
	payloads, err := param.Ints(s["payloads"], 1, MaxPayload)
	if err != nil {
		return nil, fmt.Errorf("%s: parameter payloads: %w (want byte counts 1..%d, e.g. 32,64,512)", Name, err, MaxPayload)
	}
	diam := Diameter(lattice)
	if diam == 0 && strings.TrimSpace(s["hops"]) != "" {
		return nil, fmt.Errorf("%s: parameter hops: lattice %s has a single node, no hop is possible (set hops= to skip the round trip)", Name, lattice.Param())
	}
	hops, err := param.Ints(s["hops"], 1, diam)
	if err != nil {
		return nil, fmt.Errorf("%s: parameter hops: %w (want hop counts 1..%d, the diameter of lattice %s)", Name, err, diam, lattice.Param())
	}
	paths, err := parsePaths(s["path"])
	if err != nil {
		return nil, fmt.Errorf("%s: parameter path: %w", Name, err)
	}
	pairs, err := pathPairs(s, lattice)
	if err != nil {
		return nil, err
	}

	var out []results.Expectation
	for _, pr := range pairs {
		p, err := route(pr[0], pr[1], lattice, order)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", Name, err)
		}
		out = append(out, results.Expectation{
			Metric: "exanet.dor_path",
			Params: results.Params{"src": pr[0].Param(), "dst": pr[1].Param()},
			Text:   p.Text(),
			Source: "ExaNet §3.3: dimension-ordered routing; upper VC (1) when destination−current > 0, lower VC (0) otherwise",
			Budget: "exact: the path and virtual channels DOR gives, compared hop by hop",
			Note:   fmt.Sprintf("order %s, %d-hop path in mesh %s (no wrap-around, §3.1)", order, len(p.Hops), lattice.Param()),
		})
	}
	for _, metric := range []func(string, int) (results.Expectation, error){Bandwidth, BandwidthPeak} {
		for _, path := range paths {
			for _, pl := range payloads {
				e, err := metric(path, pl)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", Name, err)
				}
				out = append(out, e)
			}
		}
	}
	for _, h := range hops {
		for _, pl := range payloads {
			e, err := RTT(h, pl)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", Name, err)
			}
			out = append(out, e)
		}
	}
	if consecutive(hops) {
		for _, pl := range payloads {
			e, err := RTTPerHop(pl)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", Name, err)
			}
			out = append(out, e)
		}
	}
	if len(hops) > 0 {
		cable, err := param.Float(s["cable_ns"], 0, 1e6)
		if err != nil {
			return nil, fmt.Errorf("%s: parameter cable_ns: %w (want the cable's one-way delay in ns, e.g. 5)", Name, err)
		}
		asym, err := param.Float(s["asymmetry_ns"], -1e6, 1e6)
		if err != nil {
			return nil, fmt.Errorf("%s: parameter asymmetry_ns: %w (want ns, e.g. 0)", Name, err)
		}
		e, err := HopRTT(cable, asym)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", Name, err)
		}
		out = append(out, e)
	}
	return out, nil
}

// consecutive reports whether hops holds some n and n+1.
func consecutive(hops []int) bool {
	set := make(map[int]bool, len(hops))
	for _, h := range hops {
		set[h] = true
	}
	for _, h := range hops {
		if set[h+1] {
			return true
		}
	}
	return false
}

// pathPairs returns the (src, dst) pairs to route: the one given, or every
// ordered pair of the lattice (a node to itself included).
func pathPairs(s map[string]string, lattice Coord) ([][2]Coord, error) {
	srcS, hasSrc := s["src"]
	dstS, hasDst := s["dst"]
	if hasSrc != hasDst {
		return nil, fmt.Errorf("%s: parameters src and dst go together (got only %s); omit both for all pairs of the lattice",
			Name, map[bool]string{true: "src", false: "dst"}[hasSrc])
	}
	if hasSrc {
		src, err := ParseCoord(srcS)
		if err != nil {
			return nil, fmt.Errorf("%s: parameter src: %w", Name, err)
		}
		dst, err := ParseCoord(dstS)
		if err != nil {
			return nil, fmt.Errorf("%s: parameter dst: %w", Name, err)
		}
		return [][2]Coord{{src, dst}}, nil
	}
	nodes := Nodes(lattice)
	if len(nodes) > MaxPairNodes {
		return nil, fmt.Errorf("%s: lattice %s has %d nodes, more than %d for listing all pairs; set src and dst",
			Name, lattice.Param(), len(nodes), MaxPairNodes)
	}
	pairs := make([][2]Coord, 0, len(nodes)*len(nodes))
	for _, a := range nodes {
		for _, b := range nodes {
			pairs = append(pairs, [2]Coord{a, b})
		}
	}
	return pairs, nil
}

func parsePaths(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	known := map[string]bool{}
	for _, p := range Paths() {
		known[p] = true
	}
	var out []string
	seen := map[string]bool{}
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if !known[f] {
			return nil, fmt.Errorf("unknown path %q (known: %s)", f, strings.Join(Paths(), ", "))
		}
		if seen[f] {
			return nil, fmt.Errorf("path %q is listed twice", f)
		}
		seen[f] = true
		out = append(out, f)
	}
	return out, nil
}
