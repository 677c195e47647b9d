package exanet

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/labrunner/labrunner/drivers"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/labrunner/labrunner/drivers/regmap"
	gx "github.com/labrunner/labrunner/golden/exanet"
	"github.com/labrunner/labrunner/results"
	"github.com/labrunner/labrunner/selftest"
	tx "github.com/labrunner/labrunner/traffic/exanet"
)

// clockMHz is the design's nominal core clock: counters are converted with
// it, as a person at the bench would (the board's real oscillator error
// shows up in the figures, as it does on hardware).
func clockMHz(env *selftest.Env) float64 {
	if env.Design != nil && env.Design.ClockMHz > 0 {
		return env.Design.ClockMHz
	}
	return 156.25
}

func durationTimes(d time.Duration, n int) time.Duration { return d * time.Duration(n) }

// runLinks checks every cabled link of the plan: up, and idle with its whole
// credit (a receiver that does not return credit shows here after traffic).
func runLinks(ctx context.Context, env *selftest.Env) error {
	t, err := topoOf(env)
	if err != nil {
		return err
	}
	for _, name := range t.names {
		b := env.Board(name)
		for i, port := range linkPorts {
			peer := t.peer[name][i]
			if peer == "" {
				continue
			}
			p := results.Params{"port": port, "peer": peer}
			rctx, cancel := regDeadline(env, ctx, 8)
			st, err := tx.ReadLink(rctx, b.Regs, i)
			cancel()
			if err != nil {
				env.Error("links.up", name, p, err)
				continue
			}
			up := 0.0
			if st.Up {
				up = 1
			}
			env.Check("links.up", results.Measurement{Board: name, Params: p, Metric: "exanet.link.up", Value: up},
				st.Up, "link up", "ExaNet §3.4 (Aurora 64B/66B channel up)",
				fmt.Sprintf("%s:%s to %s is down: check the cable, the SFP+ modules and that %s is programmed", name, port, peer, peer))
			credit := declaredCredit(env)
			env.Check("links.credits", results.Measurement{Board: name, Params: p, Metric: "exanet.link.credits",
				Value: float64(st.Credits), Unit: "words"},
				st.Credits == credit, fmt.Sprintf("%d words (the receiver's whole FIFO, as the manifest declares it)", credit),
				"ExaNet §3.4 (credits restored when the link is idle)",
				fmt.Sprintf("%s:%s idle with %d of %d credits: the receiver has not returned credit (credit leak?)", name, port, st.Credits, credit))
			if c, ok := t.cableAt(name, i); ok {
				if why := endState(end{name, i}, st, credit); why != "" {
					badOf(env).mark(c, why)
				}
			}
		}
	}
	return nil
}

// runBandwidth measures the self-test bandwidth (§4.3): the Traffic
// Generator injects, the Consumer flushes, the Performance Counter counts
// the cycles from the first to the last payload word consumed.
func runBandwidth(ctx context.Context, env *selftest.Env) error {
	t, err := topoOf(env)
	if err != nil {
		return err
	}
	p, err := selftest.ParamsOf[bandwidthParams](env)
	if err != nil {
		return err
	}
	path, payloads, packets := p.Path, p.Payloads, p.Packets
	type run struct {
		src, dst string
		port     string // link cage for the link path
		srcMask  uint32
	}
	var runs []run
	switch path {
	case gx.PathRouter, gx.PathRouter2x:
		mask := uint32(0b001)
		if path == gx.PathRouter2x {
			mask = 0b011 // two intra-tile ports send to the same target port (§4.3)
		}
		for _, n := range t.names {
			runs = append(runs, run{src: n, dst: n, srcMask: mask})
		}
	case gx.PathLink:
		for _, n := range t.names {
			for i, port := range linkPorts {
				if peer := t.peer[n][i]; peer != "" {
					runs = append(runs, run{src: n, dst: peer, port: port, srcMask: 0b001})
				}
			}
		}
	default:
		return fmt.Errorf("%s: bandwidth path %q: use router, router2x or link", env.Test.Pos, path)
	}
	if err := survey(ctx, env, t); err != nil {
		return err
	}
	bad := badOf(env)
	for _, pl := range payloads {
		exp, err := gx.Bandwidth(path, pl)
		if err != nil {
			return err
		}
		for _, r := range runs {
			p := results.Params{"path": path, "payload": fmt.Sprint(pl)}
			if r.port != "" {
				p["link"] = r.src + ":" + r.port
			}
			src, dst := env.Board(r.src), env.Board(r.dst)
			var cs []cable
			if r.port != "" {
				if c, ok := t.cableAt(r.src, indexOf(linkPorts, r.port)); ok {
					cs = []cable{c}
				}
			}
			if why := bad.crossing(cs); why != "" {
				notRun(env, "bandwidth", r.src, p, why)
				if len(cs) > 0 {
					notRun(env, "bandwidth.credits", r.src, p, why)
				}
				continue
			}
			perf, st, err := generate(ctx, env, src, dst, tx.Generate{
				SrcPorts: r.srcMask, Dest: t.coord[r.dst], DestPort: 2, Payload: pl, Count: packets,
			}, t, r.src, r.port)
			if err != nil {
				env.Error("bandwidth", r.src, p, err)
				if len(cs) > 0 {
					env.Error("bandwidth.credits", r.src, p, fmt.Errorf("not judged: the transfer could not be run: %w", err))
				}
				continue
			}
			senders := 1
			if r.srcMask == 0b011 {
				senders = 2
			}
			want := uint32(packets * senders)
			gbps := selftest.Gbps(float64(perf.Bytes), perf.Cycles, clockMHz(env))
			m := results.Measurement{Board: r.src, Params: p, Metric: "exanet.bandwidth", Value: gbps, Unit: "Gb/s"}
			if st != "" || perf.Packets != want || perf.CRCErrors > 0 || perf.Misdelivered > 0 {
				msg := fmt.Sprintf("%d of %d packets consumed at %s", perf.Packets, want, r.dst)
				if perf.CRCErrors > 0 || perf.Misdelivered > 0 {
					msg += fmt.Sprintf(", %d with CRC errors, %d misdelivered", perf.CRCErrors, perf.Misdelivered)
				}
				if st != "" {
					msg += ": " + st
				}
				m.Text = msg
				env.Check("bandwidth", m, false, exp.Describe(), exp.Source, msg)
				if len(cs) > 0 {
					creditsRestored(ctx, env, src, r.src, r.port, p)
					afterFailure(ctx, env, t, cs, fmt.Sprintf("a %d x %d B transfer over it failed: %s", packets, pl, msg))
				}
				continue
			}
			env.Record("bandwidth", m, exp)
			if len(cs) > 0 {
				if !creditsRestored(ctx, env, src, r.src, r.port, p) {
					bad.mark(cs[0], fmt.Sprintf("credits not restored after a %d x %d B transfer (credit leak)", packets, pl))
				}
			}
		}
	}
	return nil
}

// creditsRestored checks that a link whose traffic has drained holds its
// whole credit again (§3.4: credit comes back as the receiver frees space):
// a receiver that loses credits shows it here long before it stalls. The
// whole credit is the receiver FIFO the manifest declares, not the board's
// own CREDIT_MAX. It reports whether the credit came back.
func creditsRestored(ctx context.Context, env *selftest.Env, b *selftest.Board, name, port string, p results.Params) bool {
	rctx, cancel := regDeadline(env, ctx, 8)
	ls, err := tx.ReadLink(rctx, b.Regs, indexOf(linkPorts, port))
	cancel()
	if err != nil {
		env.Error("bandwidth.credits", name, p, err)
		return false
	}
	credit := declaredCredit(env)
	m := results.Measurement{Board: name, Params: p, Metric: "exanet.link.credits_after", Value: float64(ls.Credits), Unit: "words"}
	v := env.Check("bandwidth.credits", m, ls.Credits == credit,
		fmt.Sprintf("%d words (all credit back once the link drained)", credit), "ExaNet §3.4 (credit-based flow control)",
		fmt.Sprintf("link %s:%s holds %d of %d credits after its traffic drained: %d credits were never returned by the receiver (credit leak)",
			name, port, ls.Credits, credit, int(credit)-int(ls.Credits)))
	return v.Status == results.Pass
}

// generate runs one Traffic Generator transfer from src to dst and reads
// dst's counters. A generator that stalls is diagnosed from the sending
// link's credit state.
func generate(ctx context.Context, env *selftest.Env, src, dst *selftest.Board, g tx.Generate, t *topo, srcName, port string) (tx.Perf, string, error) {
	rctx, cancel := regDeadline(env, ctx, 16)
	defer cancel()
	if err := tx.ClearConsumer(rctx, dst.Regs, true); err != nil {
		return tx.Perf{}, "", err
	}
	if err := tx.StartTG(rctx, src.Regs, g); err != nil {
		return tx.Perf{}, "", err
	}
	wctx, wcancel := context.WithTimeout(ctx, durationTimes(env.Deadlines.Register, 30))
	status, err := tx.WaitTG(wctx, src.Regs)
	wcancel()
	if err != nil {
		return tx.Perf{}, "", err
	}
	perf, err := tx.ReadPerf(rctx, dst.Regs)
	if err != nil {
		return perf, "", err
	}
	diag := ""
	if status&tx.TGStalled != 0 {
		diag = "the traffic generator stalled (no word moved for 65536 cycles)"
		if port != "" {
			i := indexOf(linkPorts, port)
			if ls, err := tx.ReadLink(rctx, src.Regs, i); err == nil {
				diag += fmt.Sprintf("; link %s:%s: credits %d of %d, threshold %d, stalled %d cycles",
					srcName, port, ls.Credits, ls.CreditMax, ls.Threshold, ls.StallCycles)
				if ls.CreditStall || ls.Credits <= ls.Threshold {
					diag += " — transmission suspended for want of credit: the receiver is not returning credits (credit leak)"
				}
				if !ls.Up {
					diag += " — the link is down"
				}
			}
		}
	}
	return perf, diag, nil
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

// runLatency measures the KARMA ping-pong (§4.2) from every board to a node
// at each hop distance.
func runLatency(ctx context.Context, env *selftest.Env) error {
	t, err := topoOf(env)
	if err != nil {
		return err
	}
	p, err := selftest.ParamsOf[latencyParams](env)
	if err != nil {
		return err
	}
	hops, payloads, iters := p.Hops, p.Payloads, p.Iterations
	// mean[src][payload][hops] keeps the round trips for the per-hop
	// difference, which §4.2 states directly (0.46 µs).
	type key struct {
		src     string
		payload int
	}
	mean := map[key]map[int]float64{}
	// why[key][hops] says why a round trip has no mean (the per-hop
	// difference built on it fails with that reason, never disappears).
	why := map[key]map[int]string{}
	// The peer at each distance is the plan's (the lattice decides, not
	// which boards are healthy): a case's name never changes with a fault.
	pt, err := planTopo(env.Lab, env.Plan)
	if err != nil {
		return err
	}
	if err := survey(ctx, env, t); err != nil {
		return err
	}
	bad := badOf(env)
	for _, h := range hops {
		for _, src := range t.names {
			dst := pt.latencyPeer(src, h)
			if dst == "" {
				continue // no node that far from src in this mesh
			}
			if _, ok := t.coord[dst]; !ok {
				continue // the peer left the plan: the runner reports the case (RegisterCases)
			}
			// Both ways must cross working boards only (or the runner
			// reports the case, naming the board that left the plan).
			lat := gx.Coord{X: t.lattice[0], Y: t.lattice[1], Z: t.lattice[2]}
			thereP, err1 := gx.DORPath(t.gcoord(src), t.gcoord(dst), lat, t.order)
			backP, err2 := gx.DORPath(t.gcoord(dst), t.gcoord(src), lat, t.order)
			if err1 != nil || err2 != nil || t.missing(thereP.Nodes()) != "" || t.missing(backP.Nodes()) != "" {
				continue
			}
			a, b := env.Board(src), env.Board(dst)
			there, err1 := t.pathCables(src, dst)
			back, err2 := t.pathCables(dst, src)
			if err1 != nil || err2 != nil {
				return fmt.Errorf("latency %s -> %s: %v %v", src, dst, err1, err2)
			}
			cs := append(there, back...)
			for _, pl := range payloads {
				p := results.Params{"hops": fmt.Sprint(h), "payload": fmt.Sprint(pl), "peer": dst}
				exp, err := gx.RTT(h, pl)
				if err != nil {
					return err
				}
				k := key{src, pl}
				if why[k] == nil {
					why[k] = map[int]string{}
				}
				if w := bad.crossing(cs); w != "" {
					notRun(env, "latency", src, p, w)
					why[k][h] = "the " + fmt.Sprint(h) + "-hop round trip was not run: its path crosses " + w
					continue
				}
				rctx, cancel := regDeadline(env, ctx, 16+iters)
				err = b.Regs.Write(rctx, "PP_RESPONDER", 1)
				var pp tx.PingPong
				if err == nil {
					pp, err = tx.RunPingPong(rctx, a.Regs, t.coord[dst], 0, pl, iters)
				}
				cancel()
				if err != nil {
					env.Error("latency", src, p, err)
					why[k][h] = fmt.Sprintf("the %d-hop round trip could not be measured: %v", h, err)
					continue
				}
				m := results.Measurement{Board: src, Params: p, Metric: "exanet.rtt", Unit: "us"}
				for _, s := range pp.Samples {
					m.Samples = append(m.Samples, selftest.Micros(float64(s), clockMHz(env)))
				}
				if pp.TimedOut || pp.Iterations != iters || pp.Iterations == 0 {
					m.Text = fmt.Sprintf("%d of %d round trips completed (timeout=%v): a reply was lost on the way %s -> %s", pp.Iterations, iters, pp.TimedOut, src, dst)
					env.Check("latency", m, false, exp.Describe(), exp.Source, m.Text)
					why[k][h] = fmt.Sprintf("the %d-hop round trip failed: %s", h, m.Text)
					afterFailure(ctx, env, t, cs, fmt.Sprintf("a ping-pong across it timed out (%s -> %s)", src, dst))
					continue
				}
				m.Value = selftest.Micros(float64(pp.Sum)/float64(pp.Iterations), clockMHz(env))
				env.Record("latency", m, exp)
				if mean[k] == nil {
					mean[k] = map[int]float64{}
				}
				mean[k][h] = m.Value
			}
		}
	}
	for _, src := range t.names {
		for _, pl := range payloads {
			byHops := mean[key{src, pl}]
			for _, h := range hops {
				if !slices.Contains(hops, h+1) {
					continue
				}
				p := results.Params{"payload": fmt.Sprint(pl), "hops": fmt.Sprintf("%d-%d", h+1, h)}
				lo, okLo := byHops[h]
				hi, okHi := byHops[h+1]
				w := why[key{src, pl}]
				if !okLo || !okHi {
					// A per-hop case the mesh has (both distances from this
					// source) but whose round trips failed: it fails too.
					if r := w[h] + w[h+1]; r != "" {
						env.Error("latency.per_hop", src, p, &drivers.Error{Class: drivers.ClassDesign, Board: src, Op: "not measured", Err: errors.New(strings.TrimSpace(w[h] + " " + w[h+1]))})
					}
					continue
				}
				exp, err := gx.RTTPerHop(pl)
				if err != nil {
					return err
				}
				env.Record("latency.per_hop", results.Measurement{Board: src, Params: p, Metric: "exanet.rtt.per_hop",
					Value: hi - lo, Unit: "us"}, exp)
			}
		}
	}
	return nil
}

func manhattan(a, b tx.Coord) int {
	d := 0
	for i := 0; i < 3; i++ {
		x := a[i] - b[i]
		if x < 0 {
			x = -x
		}
		d += x
	}
	return d
}

// runDORPath sends one traced packet between every ordered pair of nodes and
// stitches its path from the routers' trace FIFOs, following each entry's
// output link to the next board.
func runDORPath(ctx context.Context, env *selftest.Env) error {
	t, err := topoOf(env)
	if err != nil {
		return err
	}
	order := t.order
	lat := gx.Coord{X: t.lattice[0], Y: t.lattice[1], Z: t.lattice[2]}
	if err := survey(ctx, env, t); err != nil {
		return err
	}
	bad := badOf(env)
	for _, src := range t.names {
		for _, dst := range t.names {
			p := results.Params{"src": t.gcoord(src).Param(), "dst": t.gcoord(dst).Param()}
			golden, err := gx.DORPath(t.gcoord(src), t.gcoord(dst), lat, order)
			if err != nil {
				return err
			}
			if via := t.missing(golden.Nodes()); via != "" {
				env.Error("dor_path", src, p, drivers.Infra(src, "dor_path", "judged again once the board is back",
					fmt.Errorf("the path crosses %s, which is not in the plan's working boards", via)))
				continue
			}
			exp := results.Expectation{Metric: "exanet.dor_path", Params: p, Text: golden.Text(),
				Source: "ExaNet §3.3: DOR in order " + order + ", VC 1 for positive offsets, VC 0 otherwise",
				Budget: "exact: the path and VC of every hop, read from the routers' trace FIFOs"}
			cs, err := t.pathCables(src, dst)
			if err != nil {
				return err
			}
			if w := bad.crossing(cs); w != "" {
				notRun(env, "dor_path", src, p, w)
				continue
			}
			text, err := tracePath(ctx, env, t, src, dst)
			if err != nil {
				env.Error("dor_path", src, p, err)
				continue
			}
			v := env.Record("dor_path", results.Measurement{Board: src, Params: p, Metric: "exanet.dor_path", Text: text}, exp)
			if v.Status != results.Pass && strings.Contains(text, "lost") {
				afterFailure(ctx, env, t, cs, "a traced packet across it was lost ("+text+")")
			}
		}
	}
	return nil
}

func tracePath(ctx context.Context, env *selftest.Env, t *topo, src, dst string) (string, error) {
	rctx, cancel := regDeadline(env, ctx, 64)
	defer cancel()
	for _, n := range t.names {
		if err := env.Board(n).Regs.Write(rctx, "TRACE_CTRL", 0b11); err != nil { // clear and enable
			return "", err
		}
	}
	sb := env.Board(src)
	if err := tx.ClearConsumer(rctx, env.Board(dst).Regs, true); err != nil {
		return "", err
	}
	if err := tx.StartTG(rctx, sb.Regs, tx.Generate{SrcPorts: 1, Dest: t.coord[dst], DestPort: 0, Payload: 64, Count: 1, Trace: true}); err != nil {
		return "", err
	}
	if _, err := tx.WaitTG(rctx, sb.Regs); err != nil {
		return "", err
	}
	tag, err := sb.Regs.Read(rctx, "TG_LAST_TAG")
	if err != nil {
		return "", err
	}
	entries := map[string]tx.TraceEntry{}
	for _, n := range t.names {
		es, err := tx.ReadTrace(rctx, env.Board(n).Regs)
		if err != nil {
			return "", err
		}
		for _, e := range es {
			if e.Tag == tag {
				entries[n] = e
			}
		}
		if err := env.Board(n).Regs.Write(rctx, "TRACE_CTRL", 0); err != nil {
			return "", err
		}
	}
	// Follow the packet: from the source's router, out of a link port to
	// the board cabled there, until a router delivers it to an intra-tile
	// port.
	var b strings.Builder
	at := src
	for step := 0; ; step++ {
		e, ok := entries[at]
		if !ok {
			if step == 0 {
				return fmt.Sprintf("no trace entry for tag 0x%x at the source %s", tag, src), nil
			}
			fmt.Fprintf(&b, " (lost: no trace entry at %s)", at)
			return b.String(), nil
		}
		fmt.Fprintf(&b, "%s", e.Coord)
		if e.OutPort < 3 || step > 64 {
			return b.String(), nil
		}
		link := e.OutPort - 3
		next := ""
		if link >= 0 && link < 2 {
			next = t.peer[at][link]
		}
		if next == "" {
			fmt.Fprintf(&b, "-vc%d-> (out of port %d, no plan board cabled there)", e.VC, e.OutPort)
			return b.String(), nil
		}
		fmt.Fprintf(&b, "-vc%d->", e.VC)
		at = next
	}
}

// runPortLoopback writes a packet into intra-tile port 0 of each board,
// addressed to port 1 of each cabled neighbour, with the consumer off so the
// packet waits in the RX FIFOs, then reads it back word by word (§4).
func runPortLoopback(ctx context.Context, env *selftest.Env) error {
	t, err := topoOf(env)
	if err != nil {
		return err
	}
	p, err := selftest.ParamsOf[portLoopbackParams](env)
	if err != nil {
		return err
	}
	payloads := p.Payloads
	rng := rand.New(rand.NewPCG(uint64(env.Lab.Seed), 0x4b41524d41)) // "KARMA"
	if err := survey(ctx, env, t); err != nil {
		return err
	}
	bad := badOf(env)
	for _, src := range t.names {
		for i, port := range linkPorts {
			dst := t.peer[src][i]
			if dst == "" {
				continue
			}
			c, _ := t.cableAt(src, i)
			for _, pl := range payloads {
				p := results.Params{"payload": fmt.Sprint(pl), "link": src + ":" + port}
				// The payload and tag are drawn whether or not the case
				// runs, so that every case sends the same bytes every night.
				data := make([]byte, pl)
				for j := range data {
					data[j] = byte(rng.UintN(256))
				}
				tag := rng.Uint32()
				if w := bad.crossing([]cable{c}); w != "" {
					notRun(env, "port_loopback", src, p, w)
					continue
				}
				msg, err := loopOnce(ctx, env, env.Board(src), env.Board(dst), t.coord[src], t.coord[dst], data, tag)
				if err != nil {
					env.Error("port_loopback", src, p, err)
					afterFailure(ctx, env, t, []cable{c}, "a packet written into a port for it was not delivered: "+err.Error())
					continue
				}
				m := results.Measurement{Board: src, Params: p, Metric: "exanet.port_loopback", Value: float64(pl), Unit: "B"}
				if msg != "" {
					m.Text = msg
				}
				env.Check("port_loopback", m, msg == "", fmt.Sprintf("%d bytes delivered intact to %s port 1", pl, dst),
					"ExaNet §4 (KARMA intra-tile port access)", msg)
				if msg != "" {
					afterFailure(ctx, env, t, []cable{c}, "a packet across it arrived damaged or not at all: "+msg)
				}
			}
		}
	}
	return nil
}

func loopOnce(ctx context.Context, env *selftest.Env, a, b *selftest.Board, ca, cb tx.Coord, data []byte, tag uint32) (string, error) {
	rctx, cancel := regDeadline(env, ctx, 64+len(data)/2)
	defer cancel()
	if err := tx.ClearConsumer(rctx, b.Regs, false); err != nil {
		return "", err
	}
	defer tx.ClearConsumer(context.WithoutCancel(rctx), b.Regs, true)
	h := tx.Header{Dest: cb, DestPort: 1, Length: len(data), Tag: tag}
	if err := tx.SendPacket(rctx, a.Regs, 0, h, data); err != nil {
		return "", err
	}
	var got tx.Header
	var payload []byte
	var ok bool
	_, err := tx.Poll(rctx, b.Regs, "PORT_RX_STATUS[1]", func(v uint32) bool { return v>>16 > 0 })
	if err != nil {
		return "", err
	}
	if got, payload, ok, err = tx.ReceivePacket(rctx, b.Regs, 1); err != nil {
		return "", err
	}
	if !ok {
		return "no packet waiting at port 1", nil
	}
	var problems []string
	if got.Tag != tag {
		problems = append(problems, fmt.Sprintf("tag 0x%x, sent 0x%x", got.Tag, tag))
	}
	if got.Src != ca || got.SrcPort != 0 {
		problems = append(problems, fmt.Sprintf("source %s port %d, sent from %s port 0", got.Src, got.SrcPort, ca))
	}
	if got.Dest != cb || got.DestPort != 1 {
		problems = append(problems, fmt.Sprintf("destination %s port %d", got.Dest, got.DestPort))
	}
	if got.Length != len(data) {
		problems = append(problems, fmt.Sprintf("length %d, sent %d", got.Length, len(data)))
	}
	if got.CRCErr {
		problems = append(problems, "payload CRC error flagged")
	}
	if d := firstDiff(payload, data); d >= 0 {
		problems = append(problems, fmt.Sprintf("payload differs from byte %d", d))
	}
	return strings.Join(problems, "; "), nil
}

func firstDiff(a, b []byte) int {
	if len(a) != len(b) {
		n := min(len(a), len(b))
		for i := 0; i < n; i++ {
			if a[i] != b[i] {
				return i
			}
		}
		return n
	}
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}

var _ *regmap.Regs
