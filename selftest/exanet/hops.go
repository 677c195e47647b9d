package exanet

import (
	"context"
	"fmt"

	gx "github.com/labrunner/labrunner/golden/exanet"
	"github.com/labrunner/labrunner/results"
	"github.com/labrunner/labrunner/selftest"
	tx "github.com/labrunner/labrunner/traffic/exanet"
)

// hopTagBase marks the hop test's packets ("HO"); the low bits number the
// pair and its direction.
const hopTagBase = 0x484f0000

// hopPayload is the hop test's packet: one 128-bit payload word, the
// smallest packet (its header alone is timed, §3.3 virtual cut-through).
const hopPayload = 16

// runHopLatency times every cable of the mesh, both ways, from the routers'
// trace stamps (reading E41): a traced packet from one end to the other and
// one back, each stamped by the router it leaves and the router it reaches.
// The router-to-router times of the two ways, added, are the hop's share of
// a round trip (§4.2's 0.46 µs) across that cable alone, and they cancel
// the two counters' offset. Unlike the ping-pong's means this figure holds
// no ARM and no polling, so its band can be tight: a cable a few cycles
// slower than its peers fails here, where the round trip's band and the
// mean per-hop difference (which crosses every cable of the 2x2 mesh at
// once) hide it.
func runHopLatency(ctx context.Context, env *selftest.Env) error {
	t, err := topoOf(env)
	if err != nil {
		return err
	}
	p, err := selftest.ParamsOf[hopLatencyParams](env) // pairs 1..256: each router's trace FIFO holds 1024 entries
	if err != nil {
		return err
	}
	pairs := p.Pairs
	if err := survey(ctx, env, t); err != nil {
		return err
	}
	bad := badOf(env)
	for _, c := range t.cables() {
		p := results.Params{"cable": c.String()}
		if w := bad.crossing([]cable{c}); w != "" {
			notRun(env, "hop_latency", c.a.board, p, w)
			continue
		}
		// The lab file's asymmetry_ns adds to one direction only: the sum
		// of both ways holds it once, whichever end is A.
		l := t.labCable(env, c)
		exp, err := gx.HopRTT(l.LatencyNS, l.AsymmetryNS)
		if err != nil {
			return fmt.Errorf("%s: cable %s: %w (fix latency_ns and asymmetry_ns there)", l.Pos, c, err)
		}
		if l.Unstated {
			exp.Note += "; the lab file states no latency_ns for this cable: the paper's 1 m is assumed"
		}
		samples, msg, err := timeHop(ctx, env, t, c, pairs)
		if err != nil {
			env.Error("hop_latency", c.a.board, p, err)
			continue
		}
		m := results.Measurement{Board: c.a.board, Params: p, Metric: "exanet.hop_rtt", Unit: "us", Samples: samples}
		if msg != "" {
			m.Text = msg
			env.Check("hop_latency", m, false, exp.Describe(), exp.Source, msg)
			afterFailure(ctx, env, t, []cable{c}, "a traced packet across it was lost ("+msg+")")
			continue
		}
		sum := 0.0
		for _, s := range samples {
			sum += s
		}
		m.Value = sum / float64(len(samples))
		env.Record("hop_latency", m, exp)
	}
	return nil
}

// labCable returns the lab file's entry of a cable (its delay, both ways).
// A cable without latency_ns (no cable has none) is taken as the paper's
// 1 m, and says so.
func (t *topo) labCable(env *selftest.Env, c cable) labCableDelay {
	for _, l := range env.Lab.Links {
		ab := l.A.Board == c.a.board && l.A.Port == linkPorts[c.a.link] && l.B.Board == c.b.board && l.B.Port == linkPorts[c.b.link]
		ba := l.A.Board == c.b.board && l.A.Port == linkPorts[c.b.link] && l.B.Board == c.a.board && l.B.Port == linkPorts[c.a.link]
		if ab || ba {
			d := labCableDelay{LatencyNS: l.LatencyNS, AsymmetryNS: l.AsymmetryNS, Pos: l.Pos.String()}
			if d.LatencyNS <= 0 {
				d.LatencyNS, d.Unstated = gx.RefCableNS, true
			}
			return d
		}
	}
	return labCableDelay{LatencyNS: gx.RefCableNS, Pos: "the lab file", Unstated: true}
}

// labCableDelay is a cable's delay as the lab file states it.
type labCableDelay struct {
	LatencyNS, AsymmetryNS float64
	Pos                    string
	Unstated               bool // no latency_ns: the paper's cable is assumed
}

// timeHop sends pairs traced packets each way across cable c, one way then
// at once the other (a few register accesses apart, so that the boards'
// oscillators drift by far less than a cycle between the two), and returns
// each pair's two router-to-router times added, in µs. A packet whose two
// stamps are not both found is reported in msg.
func timeHop(ctx context.Context, env *selftest.Env, t *topo, c cable, pairs int) (samples []float64, msg string, err error) {
	a, b := env.Board(c.a.board), env.Board(c.b.board)
	rctx, cancel := regDeadline(env, ctx, 16+pairs*24)
	defer cancel()
	for _, x := range []*selftest.Board{a, b} {
		// The consumer drains the packets; the stamps are the routers'.
		if err := tx.ClearConsumer(rctx, x.Regs, true); err != nil {
			return nil, "", err
		}
		if err := x.Regs.Write(rctx, "TRACE_CTRL", 0b11); err != nil { // clear and enable
			return nil, "", err
		}
	}
	payload := make([]byte, hopPayload)
	send := func(from *selftest.Board, to string, tag uint32) error {
		h := tx.Header{Dest: t.coord[to], DestPort: 2, Length: hopPayload, Trace: true, Tag: tag}
		return tx.SendPacket(rctx, from.Regs, 1, h, payload)
	}
	for k := 0; k < pairs; k++ {
		if err := send(a, c.b.board, hopTagBase|uint32(k)<<1); err != nil {
			return nil, "", err
		}
		if err := send(b, c.a.board, hopTagBase|uint32(k)<<1|1); err != nil {
			return nil, "", err
		}
	}
	stamps := map[string]map[uint32]uint32{}
	for _, name := range []string{c.a.board, c.b.board} {
		x := env.Board(name)
		es, err := tx.ReadTrace(rctx, x.Regs)
		if err != nil {
			return nil, "", err
		}
		if err := x.Regs.Write(rctx, "TRACE_CTRL", 0); err != nil {
			return nil, "", err
		}
		stamps[name] = map[uint32]uint32{}
		for _, e := range es {
			if e.Tag&^0xffff == hopTagBase {
				stamps[name][e.Tag] = e.Cycle
			}
		}
	}
	mhz := clockMHz(env)
	for k := 0; k < pairs; k++ {
		there, back := hopTagBase|uint32(k)<<1, hopTagBase|uint32(k)<<1|1
		aOut, ok1 := stamps[c.a.board][there]
		bIn, ok2 := stamps[c.b.board][there]
		bOut, ok3 := stamps[c.b.board][back]
		aIn, ok4 := stamps[c.a.board][back]
		if !ok1 || !ok2 || !ok3 || !ok4 {
			return samples, fmt.Sprintf("pair %d of %d: a traced packet has no stamp (%s out %v, %s in %v; %s out %v, %s in %v): lost on the cable",
				k+1, pairs, c.a.board, ok1, c.b.board, ok2, c.b.board, ok3, c.a.board, ok4), nil
		}
		samples = append(samples, selftest.Micros(float64(hopCycles(aOut, bIn, bOut, aIn)), mhz))
	}
	return samples, "", nil
}

// hopCycles adds the two ways of one pair: the packet there leaves A's
// router at aOut (A's counter) and reaches B's at bIn (B's counter), the
// one back leaves B's at bOut and reaches A's at aIn. Each way alone holds
// the two counters' offset, with opposite signs: the sum does not. The
// stamps are the counters' low 32 bits, so each way is taken modulo 2^32.
func hopCycles(aOut, bIn, bOut, aIn uint32) int64 {
	return int64(int32(bIn-aOut)) + int64(int32(aIn-bOut))
}
