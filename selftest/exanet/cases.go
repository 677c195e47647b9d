package exanet

import (
	"fmt"

	gx "github.com/labrunner/labrunner/golden/exanet"
	"github.com/labrunner/labrunner/labconfig"
	"github.com/labrunner/labrunner/results"
	"github.com/labrunner/labrunner/selftest"
	tx "github.com/labrunner/labrunner/traffic/exanet"
)

// The cases each test records, from the plan and the lab alone
// (selftest.Test.Cases): the mesh the plan describes, every board of it,
// whichever boards a run finds healthy. A case a run cannot measure (its
// board, or a board on its path, left the plan) is reported under the same
// name by the runner.

// planTopo is the mesh the plan describes: its lattice, its boards'
// coordinates and the lab's cables between them. It touches no board; the
// setup's topology is this one without the boards that left the plan.
func planTopo(lab *labconfig.Lab, plan *labconfig.Plan) (*topo, error) {
	d, err := selftest.DecodePlan(plan)
	if err != nil {
		return nil, err
	}
	t := newTopo(d.Plan.(planParams))
	for _, pb := range plan.Boards {
		t.place(pb.Board, d.Boards[pb.Board].(boardParams))
	}
	for _, n := range t.names {
		var peers [2]string
		for i, port := range linkPorts {
			if p := peerOf(lab, n, port); p != "" {
				if _, in := t.coord[p]; in {
					peers[i] = p
				}
			}
		}
		t.peer[n] = peers
	}
	return t, nil
}

func planTopoOf(cp selftest.CasePlan) (*topo, error) { return planTopo(cp.Lab, cp.Plan) }

// pathBoards are the boards a DOR path from src to dst crosses (both
// ends included), in the plan's mesh.
func (t *topo) pathBoards(src, dst string) []string {
	lat := gx.Coord{X: t.lattice[0], Y: t.lattice[1], Z: t.lattice[2]}
	p, err := gx.DORPath(t.gcoord(src), t.gcoord(dst), lat, t.order)
	if err != nil {
		return []string{src, dst}
	}
	var out []string
	for _, n := range p.Nodes() {
		if b, ok := t.byCoord[tx.Coord{n.X, n.Y, n.Z}]; ok {
			out = append(out, b)
		}
	}
	return out
}

// latencyPeer is the board a ping-pong from src at h hops goes to: the
// first board of the plan, in plan order, that far from src in the mesh
// (the lattice decides, never which boards are healthy), or "".
func (t *topo) latencyPeer(src string, h int) string {
	for _, cand := range t.names {
		if manhattan(t.coord[src], t.coord[cand]) == h {
			return cand
		}
	}
	return ""
}

// linkCases are one case per cabled link end of every board: name[port,
// peer] (links, link_errors).
func linkCases(name string) func(selftest.CasePlan) ([]selftest.Case, error) {
	return func(cp selftest.CasePlan) ([]selftest.Case, error) {
		t, err := planTopoOf(cp)
		if err != nil {
			return nil, err
		}
		var out []selftest.Case
		for _, n := range t.names {
			for i, port := range linkPorts {
				if peer := t.peer[n][i]; peer != "" {
					out = append(out, selftest.Case{Board: n, Name: name, Params: results.Params{"port": port, "peer": peer}, Needs: []string{peer}})
				}
			}
		}
		return out, nil
	}
}

func linksCases(cp selftest.CasePlan) ([]selftest.Case, error) {
	up, err := linkCases("links.up")(cp)
	if err != nil {
		return nil, err
	}
	credits, err := linkCases("links.credits")(cp)
	return append(up, credits...), err
}

func bandwidthCases(cp selftest.CasePlan) ([]selftest.Case, error) {
	t, err := planTopoOf(cp)
	if err != nil {
		return nil, err
	}
	p := cp.Params.(bandwidthParams)
	var out []selftest.Case
	for _, pl := range p.Payloads {
		for _, n := range t.names {
			ps := results.Params{"path": p.Path, "payload": fmt.Sprint(pl)}
			if p.Path != gx.PathLink {
				out = append(out, selftest.Case{Board: n, Name: "bandwidth", Params: ps})
				continue
			}
			for i, port := range linkPorts {
				peer := t.peer[n][i]
				if peer == "" {
					continue
				}
				lp := ps.Clone()
				lp["link"] = n + ":" + port
				out = append(out, selftest.Case{Board: n, Name: "bandwidth", Params: lp, Needs: []string{peer}},
					selftest.Case{Board: n, Name: "bandwidth.credits", Params: lp, Needs: []string{peer}})
			}
		}
	}
	return out, nil
}

func latencyCases(cp selftest.CasePlan) ([]selftest.Case, error) {
	t, err := planTopoOf(cp)
	if err != nil {
		return nil, err
	}
	p := cp.Params.(latencyParams)
	var out []selftest.Case
	for _, src := range t.names {
		needs := map[int][]string{}
		for _, h := range p.Hops {
			dst := t.latencyPeer(src, h)
			if dst == "" {
				continue
			}
			needs[h] = append(t.pathBoards(src, dst), t.pathBoards(dst, src)...)
			for _, pl := range p.Payloads {
				out = append(out, selftest.Case{Board: src, Name: "latency", Needs: needs[h],
					Params: results.Params{"hops": fmt.Sprint(h), "payload": fmt.Sprint(pl), "peer": dst}})
			}
		}
		for _, pl := range p.Payloads {
			for _, h := range p.Hops {
				lo, okLo := needs[h]
				hi, okHi := needs[h+1]
				if !okLo || !okHi {
					continue
				}
				out = append(out, selftest.Case{Board: src, Name: "latency.per_hop", Needs: append(append([]string{}, lo...), hi...),
					Params: results.Params{"payload": fmt.Sprint(pl), "hops": fmt.Sprintf("%d-%d", h+1, h)}})
			}
		}
	}
	return out, nil
}

func hopLatencyCases(cp selftest.CasePlan) ([]selftest.Case, error) {
	t, err := planTopoOf(cp)
	if err != nil {
		return nil, err
	}
	var out []selftest.Case
	for _, c := range t.cables() {
		out = append(out, selftest.Case{Board: c.a.board, Name: "hop_latency", Params: results.Params{"cable": c.String()}, Needs: []string{c.b.board}})
	}
	return out, nil
}

func dorPathCases(cp selftest.CasePlan) ([]selftest.Case, error) {
	t, err := planTopoOf(cp)
	if err != nil {
		return nil, err
	}
	var out []selftest.Case
	for _, src := range t.names {
		for _, dst := range t.names {
			out = append(out, selftest.Case{Board: src, Name: "dor_path", Needs: t.pathBoards(src, dst),
				Params: results.Params{"src": t.gcoord(src).Param(), "dst": t.gcoord(dst).Param()}})
		}
	}
	return out, nil
}

func portLoopbackCases(cp selftest.CasePlan) ([]selftest.Case, error) {
	t, err := planTopoOf(cp)
	if err != nil {
		return nil, err
	}
	p := cp.Params.(portLoopbackParams)
	var out []selftest.Case
	for _, src := range t.names {
		for i, port := range linkPorts {
			dst := t.peer[src][i]
			if dst == "" {
				continue
			}
			for _, pl := range p.Payloads {
				out = append(out, selftest.Case{Board: src, Name: "port_loopback", Needs: []string{dst},
					Params: results.Params{"payload": fmt.Sprint(pl), "link": src + ":" + port}})
			}
		}
	}
	return out, nil
}

func init() {
	selftest.RegisterCases(design, "links", linksCases)
	selftest.RegisterCases(design, "bandwidth", bandwidthCases)
	selftest.RegisterCases(design, "latency", latencyCases)
	selftest.RegisterCases(design, "hop_latency", hopLatencyCases)
	selftest.RegisterCases(design, "dor_path", dorPathCases)
	selftest.RegisterCases(design, "link_errors", linkCases("link_errors"))
	selftest.RegisterCases(design, "port_loopback", portLoopbackCases)
}
