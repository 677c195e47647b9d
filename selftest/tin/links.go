package tin

import (
	"context"
	"fmt"
	"strings"

	"github.com/labrunner/labrunner/results"
	"github.com/labrunner/labrunner/selftest"
	tt "github.com/labrunner/labrunner/traffic/tin"
)

// runLinks checks every board's configuration state and every cabled cage:
// trained, with the role its cable gives it, the peer's address learnt at
// training, the peer's FIFO as credit, and every credit home at rest.
func runLinks(ctx context.Context, env *selftest.Env) error {
	c, err := cliqueOf(env)
	if err != nil {
		return err
	}
	for _, b := range c.topo.Boards {
		cs, err := c.r.Read(ctx, b, "CONFIG_STATUS")
		if err != nil {
			env.Error("links.config", b, nil, err)
			continue
		}
		var bad []string
		for _, f := range []struct {
			bit  uint32
			what string
		}{{tt.ConfigAddrConflict, "ADDR_CONFLICT: another TiN has this address"}, {tt.ConfigAddrRange, "ADDR_RANGE: the address is beyond the routing tables"},
			{tt.ConfigRoleMismatch, "ROLE_MISMATCH: a cabled peer has another role on that cable"}} {
			if cs&f.bit != 0 {
				bad = append(bad, f.what)
			}
		}
		env.Check("links.config", results.Measurement{Board: b, Metric: "tin.config_status", Value: float64(cs), Text: fmt.Sprintf("0x%x", cs)},
			cs == 0, "CONFIG_STATUS 0", "docs/tin.md (addresses and port roles)",
			fmt.Sprintf("%s at %s: %s", b, c.topo.Node[b], strings.Join(bad, "; ")))
		for k, p := range c.topo.Ports[b] {
			if p.Peer == "" {
				continue
			}
			cage := tt.Cage{Board: b, Index: k}
			par := results.Params{"port": fmt.Sprintf("sfp%d", k), "peer": p.Peer, "role": p.Role.String()}
			ps, err := c.r.Port(ctx, b, k)
			if err != nil {
				env.Error("links.up", b, par, err)
				continue
			}
			up := 0.0
			if ps.Up {
				up = 1
			}
			env.Check("links.up", results.Measurement{Board: b, Params: par, Metric: "tin.link.up", Value: up}, ps.Up,
				"PORT_STATUS.UP", "Aquila §3.1 (GNet link trained)",
				fmt.Sprintf("%s to %s:sfp%d is down (CABLED %v, PEER_TIN %v): check the cable, the SFP+ modules and that %s runs the tin design with role %s",
					cage, p.Peer, p.PeerCage, ps.Cabled, ps.PeerTiN, p.Peer, p.Role))
			if !ps.Up {
				notJudged(env, b, par, "the link is down (links.up)", "links.role", "links.peer", "links.credit_init", "links.credits")
				continue
			}
			wantFEC := p.Role == tt.RoleGlobal
			env.Check("links.role", results.Measurement{Board: b, Params: par, Metric: "tin.link.role", Value: float64(ps.Role), Text: ps.Role.String()},
				ps.Role == p.Role && ps.FEC == wantFEC, fmt.Sprintf("%s, FEC %v", p.Role, wantFEC), "Aquila §3.2 (local links without FEC, global links with FEC)",
				fmt.Sprintf("%s reads role %s with FEC %v; its cable to %s makes it %s (FEC %v)", cage, ps.Role, ps.FEC, p.Peer, p.Role, wantFEC))
			want := c.topo.Node[p.Peer].Addr()
			env.Check("links.peer", results.Measurement{Board: b, Params: par, Metric: "tin.link.peer", Value: float64(ps.Peer), Text: ps.Peer.String()},
				ps.Peer == want, want.String(), "docs/tin.md (PORT_PEER learnt at training)",
				fmt.Sprintf("%s reads peer %s, but the lab cables it to %s (%s): the cable is not where the lab file says", cage, ps.Peer, p.Peer, want))
			// The peer's FIFO as the manifest declares it (reading A60),
			// not as the peer's VC_FIFO_BYTES reads.
			fifo := max(uint32(c.decl["vc_fifo_bytes"]), 160)
			env.Check("links.credit_init", results.Measurement{Board: b, Params: par, Metric: "tin.link.credit_init", Value: float64(ps.CreditInit), Unit: "bytes"},
				ps.CreditInit == fifo, fmt.Sprintf("%d bytes (the declared VC_FIFO_BYTES of the peer)", fifo), "Aquila §3.1 (credit-protected per-VC FIFOs)",
				fmt.Sprintf("%s got %d credit bytes per VC at training, %s's FIFO is declared %d", cage, ps.CreditInit, p.Peer, fifo))
			creditsAtRest(env, "links.credits", b, par, cage, tt.Cage{Board: p.Peer, Index: p.PeerCage}, ps, fifo)
		}
	}
	return nil
}

// creditsAtRest records the credit check of one cage of an idle fabric:
// every VC holds the credits of the peer's declared FIFO (want), not of
// what the cage's own CREDIT_INIT says it was given.
func creditsAtRest(env *selftest.Env, name, board string, par results.Params, cage, peer tt.Cage, ps tt.PortState, want uint32) {
	short := ps.ShortOf(want)
	missing := 0
	for _, v := range ps.Credits {
		if v < want {
			missing += int(want - v)
		}
	}
	m := results.Measurement{Board: board, Params: par, Metric: "tin.link.credits_missing", Value: float64(missing), Unit: "bytes"}
	if len(short) > 0 {
		m.Text = strings.Join(short, " ")
	}
	env.Check(name, m, len(short) == 0, fmt.Sprintf("CREDITS = %d bytes (the peer's declared FIFO) on all 32 VCs", want),
		"Aquila §3.1 (reliable credit mechanism: credits come home when the FIFOs drain)",
		fmt.Sprintf("%s does not hold the peer's FIFO in credits at rest on %s: %d credit bytes were never returned by the receiver behind the cable, %s (credit leak)",
			cage, strings.Join(short, ", "), missing, peer))
}

// runCredits runs uniform-random traffic across every link and, once the
// fabric is at rest, checks that every credit came home (§3.1).
func runCredits(ctx context.Context, env *selftest.Env) error {
	c, err := cliqueOf(env)
	if err != nil {
		return err
	}
	prm, err := selftest.ParamsOf[creditsParams](env)
	if err != nil {
		return err
	}
	load, bytes, count := prm.Load, prm.Bytes, prm.Count
	seed, err := c.seedOf(env)
	if err != nil {
		return err
	}
	if err := c.fresh(ctx); err != nil {
		return err
	}
	ws, err := tt.UniformRandom{Load: load, Bytes: bytes, Count: count, Reply: true, ReplyBytes: 64, Port: tt.EPNIC, Flows: 4, Seed: seed}.
		Writes(c.topo, c.timing.InjectMbps)
	if err != nil {
		return err
	}
	if err := c.r.Load(ctx, ws); err != nil {
		return err
	}
	rr, err := c.run(ctx)
	if err != nil {
		return err
	}
	p := results.Params{"load": fmt.Sprint(load), "bytes": fmt.Sprint(bytes)}
	runStatus(env, "credits", rr, p, "uniform-random traffic for the credit check")
	if rr.OpsOpen > 0 {
		// An unfinished run leaves cells in flight: abandon it so that
		// credits are judged at rest.
		if err := c.r.Abort(ctx); err != nil {
			return err
		}
	}
	cells, err := c.r.Sum(ctx, "SW_CELLS")
	if err != nil {
		return err
	}
	env.Check("credits.traffic", results.Measurement{Params: p, Metric: "tin.sw_cells", Value: float64(cells), Unit: "cells"}, cells > 0,
		"cells crossed the switches", "test setup", "no cell crossed any switch: the traffic never ran, so the credit check would prove nothing")
	for _, b := range c.topo.Boards {
		for k, pt := range c.topo.Ports[b] {
			if pt.Peer == "" {
				continue
			}
			cage := tt.Cage{Board: b, Index: k}
			par := results.Params{"port": fmt.Sprintf("sfp%d", k), "peer": pt.Peer}
			ps, err := c.r.Port(ctx, b, k)
			if err != nil {
				env.Error("credits", b, par, err)
				continue
			}
			if !ps.Up {
				env.Check("credits", results.Measurement{Board: b, Params: par, Metric: "tin.link.up", Value: 0}, false, "link up",
					"Aquila §3.1", fmt.Sprintf("%s is down after the traffic: its credits cannot be judged", cage))
				continue
			}
			creditsAtRest(env, "credits", b, par, cage, tt.Cage{Board: pt.Peer, Index: pt.PeerCage}, ps, max(uint32(c.decl["vc_fifo_bytes"]), 160))
		}
	}
	return nil
}
