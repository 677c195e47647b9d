package tin

import (
	"fmt"
	"strconv"

	"github.com/labrunner/labrunner/golden/figure"
)

// SweepConfig is a load sweep of synthetic traffic on a preset network.
type SweepConfig struct {
	Preset    Preset
	Alg       Algorithm
	Pattern   Pattern
	Packet    int       // bytes (flits); 0: the preset's
	Loads     []float64 // offered, fractions of the injection rate
	WarmupNs  float64   // 0: BookSim's anchor (3 x 2000 cycles)
	MeasureNs float64   // 0: likewise
	Seed      uint64
	// Progress, if set, is called before each load's run.
	Progress func(load float64)
}

// BookSim's anchor runs: 3 warm-up and 3 measurement periods of 2000
// cycles.
const (
	AnchorWarmupNs  = 6000
	AnchorMeasureNs = 6000
)

// LoadSweep runs a preset at each load and returns the latency and
// accepted-rate curves against offered load, BookSim's way.
func LoadSweep(sc SweepConfig) (figure.Figure, []SynthResult, error) {
	if len(sc.Loads) == 0 {
		return figure.Figure{}, nil, fmt.Errorf("tin: a load sweep without loads")
	}
	pk := sc.Packet
	if pk == 0 {
		pk = sc.Preset.Packet
	}
	w, m := sc.WarmupNs, sc.MeasureNs
	if w == 0 && m == 0 {
		w, m = AnchorWarmupNs, AnchorMeasureNs
	}
	fig := figure.Figure{ID: fmt.Sprintf("%s-%s-%s", sc.Preset.Name, sc.Alg, sc.Pattern),
		Title:  fmt.Sprintf("%s, %s routing, %s traffic, %d-byte packets", sc.Preset.Name, sc.Alg, sc.Pattern, pk),
		Source: sc.Preset.Source, XLabel: "offered load (fraction of the injection rate)", YLabel: "average packet latency (ns)"}
	lat := figure.Series{Name: "average packet latency (ns)"}
	acc := figure.Series{Name: "accepted (fraction of the injection rate)"}
	var out []SynthResult
	for i, load := range sc.Loads {
		if sc.Progress != nil {
			sc.Progress(load)
		}
		f := sc.Preset.Fabric
		f.Seed = sc.Seed + uint64(i)
		r, err := RunSynthetic(SynthConfig{Fabric: f, Alg: sc.Alg, Pattern: sc.Pattern, Rate: load, PacketBytes: pk,
			WarmupNs: w, MeasureNs: m, Seed: sc.Seed + uint64(i)})
		if err != nil {
			return fig, nil, err
		}
		out = append(out, r)
		rate := f.Inject.BytesPerNs
		lat.X, lat.Y = append(lat.X, load), append(lat.Y, r.LatencyNs)
		acc.X, acc.Y = append(acc.X, load), append(acc.Y, r.Accepted/rate)
		note := ""
		if r.Saturated {
			note = ", saturated: the latency grows with the run"
		}
		fig.Notes = append(fig.Notes, fmt.Sprintf("load %s: latency %.1f ns, accepted %.4f, %.2f routers per packet, %.1f%% non-minimal, %d packets%s",
			strconv.FormatFloat(load, 'g', -1, 64), r.LatencyNs, r.Accepted/rate, r.Hops, 100*r.NonMinimal, r.Packets, note))
		if !r.Saturated {
			fig.Checks = append(fig.Checks, figure.NewCheck(fmt.Sprintf("accepted at offered load %g", load), "accepted = offered below saturation",
				r.Accepted/rate, (1-SaturationShortfall)*load, load*(1+SaturationShortfall), "of injection rate",
				fmt.Sprintf("±%g%%: the Bernoulli sources' spread over the window and the packets in flight at its ends", 100*SaturationShortfall)))
		}
	}
	fig.Series = []figure.Series{lat, acc}
	return fig, out, nil
}

// RTTSweep runs the IP simulation (RTS/CTS solicitation, §3.3) over a
// Clique at each load and returns its RTT curves (§5.1's Fig. 7 metric on
// the given Clique).
func RTTSweep(cfg SimConfig, loads []float64, progress func(load float64)) (figure.Figure, []SimResult, error) {
	fig := figure.Figure{ID: fmt.Sprintf("aquila-rtt-%s", cfg.Clique.Param()),
		Title:  fmt.Sprintf("IP fabric RTT vs load, %s Clique, %d-byte requests, %s", cfg.Clique.Param(), cfg.Bytes, cfg.Mode),
		Source: "Aquila §3.3, §5.1 (reference simulation)", XLabel: "offered load (fraction of 100 Gb/s per TiN)", YLabel: "RTT (ns)"}
	mean := figure.Series{Name: "RTT mean"}
	p99 := figure.Series{Name: "RTT p99"}
	var out []SimResult
	for _, load := range loads {
		if progress != nil {
			progress(load)
		}
		c := cfg
		c.Load = load
		r, err := Simulate(c)
		if err != nil {
			return fig, nil, err
		}
		out = append(out, r)
		if r.Saturated {
			fig.Notes = append(fig.Notes, fmt.Sprintf("load %g: no steady state (the backlog grew by %.1f%% of the last requests): the Clique does not carry it, or the run is too short", load, 100*r.Growth))
			continue
		}
		mean.X, mean.Y = append(mean.X, load), append(mean.Y, r.RTT.Mean)
		p99.X, p99.Y = append(p99.X, load), append(p99.Y, r.RTT.P99)
		fig.Notes = append(fig.Notes, fmt.Sprintf("load %g: RTT mean %.0f ns, p99 %.0f ns, %.1f%% of data cells non-minimal", load, r.RTT.Mean, r.RTT.P99, 100*r.NonMinimal))
		if cfg.Clique.Pods == FullPods && cfg.Clique.TiNs == FullTiNsPerPod {
			// §5.1, Fig. 7, on the full Clique: "the fabric latency remains
			// under 40 µs, even when the network is close to the per
			// machine NIC line rate ... and it is sub-20 µs at 70% load".
			bound, paper := 40000.0, "under 40 µs up to line rate"
			if load <= 0.7 {
				bound, paper = 20000, "sub-20 µs at 70% load (and below)"
			}
			fig.Checks = append(fig.Checks, figure.NewCheck(fmt.Sprintf("RTT p99 at load %g", load), paper, r.RTT.P99, 0, bound, "ns",
				"the paper's bound, one-sided: its testbed adds hosts' congestion control and 500 real NICs, which only lengthen the RTT"))
		}
	}
	fig.Series = []figure.Series{mean, p99}
	return fig, out, nil
}
