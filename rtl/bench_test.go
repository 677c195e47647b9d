package rtl

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/labrunner/labrunner/drivers/uartbridge"
)

// BenchmarkCosim measures labrunner's driver against the co-simulated RTL:
// operations a second, against the line-rate limit (baud/10 bytes a second
// over the request's and the answer's bytes, docs/uart-bridge.md "Sizes on
// the wire"), both per wall-clock second and per simulated second (what
// the RTL does on a real line, whatever the simulator's speed), and the
// simulator's speed in cycles per CPU second. The driver runs as labrunner
// runs it (adaptive per-attempt deadline), and with a fixed deadline (every
// attempt waits the full 200 ms plus line time), which shows what the RTL
// and the line do when no attempt is retried needlessly.
//
//	go test ./rtl -run '^$' -bench Cosim -benchtime 3s
func BenchmarkCosim(b *testing.B) {
	for _, fixed := range []bool{false, true} {
		deadline := "adaptive"
		if fixed {
			deadline = "fixed"
		}
		b.Run(deadline, func(b *testing.B) { benchCosim(b, fixed) })
	}
}

func benchCosim(b *testing.B, fixed bool) {
	for _, baud := range Bauds {
		for _, op := range []struct {
			name  string
			words int
			write bool
		}{{"read", 1, false}, {"write", 1, true}, {"read-burst-64", 64, false}, {"write-burst-64", 64, true}, {"read-burst-256", 256, false}} {
			b.Run(fmt.Sprintf("%d/%s", baud, op.name), func(b *testing.B) {
				s := startSim(b, baud)
				opts := uartbridge.Options{Board: "rtl-sim", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
				if fixed {
					opts.MinTimeout = time.Hour // at or above Timeout: every attempt waits Timeout
				}
				br, err := uartbridge.Open(s.Port, s.Baud, opts)
				if err != nil {
					b.Fatal(err)
				}
				defer br.Close()
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
				defer cancel()
				if _, err := br.Info(ctx); err != nil {
					b.Fatal(err)
				}
				const scratch, buffer = 0x008, 0x800
				words := make([]uint32, op.words)
				do := func() error {
					switch {
					case op.words == 1 && op.write:
						return br.Write32(ctx, scratch, 0x5A5A)
					case op.words == 1:
						_, err := br.Read32(ctx, scratch)
						return err
					case op.write:
						return br.WriteBurst(ctx, buffer, words)
					}
					return br.ReadBurst(ctx, buffer, words)
				}
				st0, err := s.Stats()
				if err != nil {
					b.Fatal(err)
				}
				t0 := time.Now()
				n := 0
				for b.Loop() {
					if err := do(); err != nil {
						b.Fatal(err)
					}
					n++
				}
				wall := time.Since(t0)
				st1, err := s.Stats()
				if err != nil {
					b.Fatal(err)
				}
				cmd := uartbridge.CmdRead
				switch {
				case op.words == 1 && op.write:
					cmd = uartbridge.CmdWrite
				case op.write:
					cmd = uartbridge.CmdWriteBurst
				case op.words > 1:
					cmd = uartbridge.CmdReadBurst
				}
				resp := 0
				if !op.write {
					resp = op.words
				}
				frame := uartbridge.RequestLen(cmd, op.words) + uartbridge.ResponseLen(resp)
				limit := float64(baud) / 10 / float64(frame)
				sim := st1.Sim - st0.Sim
				b.ReportMetric(float64(n)/wall.Seconds(), "ops/s")
				b.ReportMetric(float64(n)/sim.Seconds(), "ops/sim-s")
				b.ReportMetric(limit, "line-limit-ops/s")
				b.ReportMetric(float64(frame), "bytes/op")
				b.ReportMetric(sim.Seconds()/wall.Seconds(), "sim-s/wall-s")
				b.ReportMetric(float64(st1.Cycles-st0.Cycles)/(st1.CPU-st0.CPU).Seconds()/1e6, "Mcycles/cpu-s")
				b.ReportMetric(float64(br.Stats().Retries)/float64(n), "retries/op")
			})
		}
	}
}
