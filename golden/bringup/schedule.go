package bringup

import (
	"fmt"
	"math"
)

// Timing is what the bootstrap time estimate needs beyond the plan.
type Timing struct {
	PMOS PMOS
	// ConfigBytes is what a target receives over PMOS from its proxy: the
	// DHCP-like exchange relayed for it and the configuration and routing
	// tables the controller programs (§4.4), framing of the runner's own
	// requests included.
	ConfigBytes int
	// OverheadMS is a fixed time per in-band board outside the PMOS
	// transfer (controller work, connection set-up); it adds to the
	// estimate and its upper bound, not to the lower bound.
	OverheadMS float64
	// DCNMS is the time a DCN-connected board takes; they are configured
	// directly, not over PMOS, "typically faster" (§4.4).
	DCNMS float64
	// ProxyFailMS is how long the runner takes to give up on a proxy that
	// died; negative means (Retries+1) retransmission timeouts.
	ProxyFailMS float64
}

// BoardTime is the golden timing of one bootstrapped board, in ms from the
// start of the bootstrap.
type BoardTime struct {
	Board    string
	Wave     int
	Duration Estimate // the board's own bootstrap
	// Start is when an acceptable proxy is ready; Finish when the board is
	// done and can proxy in turn. Each bound is taken on its own (the
	// proxy that finishes a board first need not be the first one ready),
	// so Finish is not always Start + Duration component by component.
	Start  Estimate
	Finish Estimate
	// Transfer is the PMOS cost over the link of the acceptable proxy the
	// estimate uses (zero for a DCN board).
	Transfer Transfer
}

// Schedule is the golden timing of a bootstrap.
type Schedule struct {
	Boards []BoardTime // bootstrapped boards (OK or Died), topology order
	// Waves holds, per wave, when its last board is done (ms from the
	// start): waves overlap, so this is not a sum of wave durations.
	Waves []Estimate
	Total Estimate
}

// Schedule estimates the bootstrap time of the plan. Waves run in parallel
// (§4.4: "Several of the waves of bootstrap occur simultaneously"): a
// target starts as soon as one of its acceptable proxies is done, and a
// proxy bootstraps all its targets at once, each over its own cable (a
// cable's MOS channel is point to point, §3.5) — the path from the
// controller to the proxy is assumed not to be the bottleneck.
//
// Per board, Min takes the best proxy and link and no loss; Value the
// proxy that finishes it first with the expected retransmissions; Max
// assumes the runner may pick any acceptable proxy (the latest ready, the
// worst cable), and when a neighbour of the previous wave dies as a proxy,
// that the runner tried it first and lost ProxyFailMS finding out.
func (p *Plan) Schedule(t Timing) (*Schedule, error) {
	g := p.g
	if t.ConfigBytes < 0 || t.ConfigBytes > MaxTransferBytes {
		return nil, fmt.Errorf("config_bytes %d: want 0..%d", t.ConfigBytes, MaxTransferBytes)
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"overhead_ms", t.OverheadMS}, {"dcn_ms", t.DCNMS}} {
		if !(f.v >= 0 && f.v <= 1e9) {
			return nil, fmt.Errorf("%s %v: want 0..1e9", f.name, f.v)
		}
	}
	if !(t.ProxyFailMS <= 1e9) || math.IsNaN(t.ProxyFailMS) {
		return nil, fmt.Errorf("proxy_fail_ms %v: want up to 1e9 (negative: automatic)", t.ProxyFailMS)
	}
	if err := t.PMOS.check(); err != nil {
		return nil, err
	}
	s := &Schedule{}
	times := make([]*BoardTime, len(g.Boards))
	type key struct{ link, loss float64 }
	cache := map[key]Transfer{}
	transfer := func(linkNS, loss float64) (Transfer, error) {
		k := key{linkNS, loss}
		if tr, ok := cache[k]; ok {
			return tr, nil
		}
		tr, err := t.PMOS.Transfer(t.ConfigBytes, linkNS, loss)
		if err != nil {
			return Transfer{}, err
		}
		cache[k] = tr
		return tr, nil
	}
	for w, members := range p.Waves {
		var waveEnd Estimate
		for _, name := range members {
			i := g.index[name]
			bp := p.Boards[i]
			bt := &BoardTime{Board: name, Wave: w}
			if w == 0 {
				bt.Duration = Estimate{Min: 0, Value: t.DCNMS, Max: t.DCNMS}
				bt.Finish = bt.Duration
			} else if err := p.timeTarget(bt, bp, t, times, transfer); err != nil {
				return nil, fmt.Errorf("board %s: %w", name, err)
			}
			times[i] = bt
			waveEnd = maxEst(waveEnd, bt.Finish)
		}
		s.Waves = append(s.Waves, waveEnd)
		s.Total = maxEst(s.Total, waveEnd)
	}
	for _, bt := range times {
		if bt != nil {
			s.Boards = append(s.Boards, *bt)
		}
	}
	return s, nil
}

func (p *Plan) timeTarget(bt *BoardTime, bp BoardPlan, t Timing, times []*BoardTime, transfer func(float64, float64) (Transfer, error)) error {
	g := p.g
	i := g.index[bp.Board]
	bestMin, bestValue := math.Inf(1), math.Inf(1)
	durMin, durMax := math.Inf(1), 0.0
	startMin, startMax := math.Inf(1), 0.0
	for _, name := range bp.Proxies {
		q := g.index[name]
		pt := times[q]
		for _, k := range g.between(q, i) {
			l := g.Links[k]
			tr, err := transfer(l.delay(name), l.MOSLoss)
			if err != nil {
				return fmt.Errorf("over the cable %s from proxy %s: %w", l.Name(), name, err)
			}
			dMin, dValue, dMax := tr.US.Min/1e3, tr.US.Value/1e3+t.OverheadMS, tr.US.Max/1e3+t.OverheadMS
			bestMin = math.Min(bestMin, pt.Finish.Min+dMin)
			if f := pt.Finish.Value + dValue; f < bestValue {
				bestValue = f
				bt.Start.Value, bt.Duration.Value = pt.Finish.Value, dValue
				bt.Transfer = tr
			}
			durMin = math.Min(durMin, dMin)
			durMax = math.Max(durMax, dMax)
		}
		startMin = math.Min(startMin, pt.Finish.Min)
		startMax = math.Max(startMax, pt.Finish.Max)
	}
	if math.IsInf(bestMin, 1) {
		return fmt.Errorf("no acceptable proxy with a cable (internal: wave %d)", bp.Wave)
	}
	// A neighbour of the previous wave that dies as a proxy: the runner may
	// have waited for it and tried it first.
	penalty := 0.0
	for _, j := range g.nbr[i] {
		if p.dying[j] && p.Boards[j].Wave == bp.Wave-1 {
			startMax = math.Max(startMax, times[j].Finish.Max)
			penalty = t.ProxyFailMS
			if penalty < 0 {
				penalty = float64(t.PMOS.Retries+1) * bt.Transfer.RTOUS / 1e3
				if bt.Transfer.RTOUS == 0 {
					penalty = float64(t.PMOS.Retries+1) * t.PMOS.rto(0) / 1e3
				}
			}
		}
	}
	bt.Start.Min, bt.Start.Max = startMin, startMax
	bt.Duration.Min, bt.Duration.Max = durMin, durMax+penalty
	bt.Finish = Estimate{Min: bestMin, Value: bestValue, Max: startMax + durMax + penalty}
	return nil
}
