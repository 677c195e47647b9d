package shoal

import (
	"fmt"
	"sort"
	"testing"
	"time"
)

func TestScratch3(t *testing.T) {
	for _, cfg := range []Config{Prototype(), Rack()} {
		for _, load := range []float64{0.3, 0.5, 0.7} {
			for _, kind := range []WorkloadKind{Uniform} {
				w := NewWorkload(kind, cfg.Nodes, 20000, load, 1)
				w.LoadGbps = cfg.ChannelGbps * float64(cfg.Channels) / 2
				fl, err := w.Generate(cfg.PayloadBytes())
				if err != nil {
					t.Fatal(err)
				}
				t0 := time.Now()
				r, err := Simulate(cfg, fl, SimOptions{})
				if err != nil {
					t.Fatal(err)
				}
				var short []float64
				done := 0
				for k, f := range r.Flows {
					if f.Done {
						done++
					}
					if fl[k].Bytes <= ShortFlowBytes && f.Done {
						short = append(short, f.FCTNS(fl[k])/1000)
					}
				}
				sort.Float64s(short)
				p := func(q float64) float64 { return short[int(q*float64(len(short)-1))] }
				fmt.Printf("%s load %.1f: %v slots=%d done=%d/%d maxQ=%d nodeQ=%d viol=%d p50=%.2f p99=%.2f p999=%.2f us\n", cfg.Name, load, time.Since(t0), r.Slots, done, len(fl), r.MaxQueue, r.MaxNodeQueue, r.BoundViolations, p(0.5), p(0.99), p(0.999))
			}
		}
	}
}
