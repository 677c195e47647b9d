package rtl

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/labrunner/labrunner/drivers/uartbridge/bridgetest"
)

// Bauds are the line rates the co-simulation tests run at: the console's
// usual rate and the bridge's default.
var Bauds = []int{115200, 921600}

var builds sync.Map // Config -> *build

type build struct {
	once sync.Once
	bin  string
	err  error
}

// simBinary builds (once per test binary, and only when the cache has no
// build of these sources) the co-simulation for baud.
func simBinary(t testing.TB, baud int) string {
	return simBuild(t, Config{Baud: baud})
}

func simBuild(t testing.TB, cfg Config) string {
	t.Helper()
	if err := RequireTools(); err != nil {
		t.Fatal(err)
	}
	v, _ := builds.LoadOrStore(cfg, &build{})
	b := v.(*build)
	b.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		b.bin, b.err = Build(ctx, cfg)
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.bin
}

// startSim runs a fresh co-simulation at baud for one test: the design
// starts from its reset state, as after configuration.
func startSim(t testing.TB, baud int) *Sim {
	t.Helper()
	return startConfig(t, Config{Baud: baud})
}

func startConfig(t testing.TB, cfg Config) *Sim {
	t.Helper()
	baud := cfg.Baud
	bin := simBuild(t, cfg)
	s, err := Start(context.Background(), bin, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if st, err := s.Stats(); err == nil {
			t.Logf("co-simulation at %d baud: %d cycles, %.3f s simulated in %.3f s wall (%.3f s simulating, %.3f s CPU: %.1f M cycles per CPU second), %d bytes in, %d out",
				baud, st.Cycles, st.Sim.Seconds(), st.Wall.Seconds(), st.Busy.Seconds(), st.CPU.Seconds(),
				st.CyclesPerCPUSecond()/1e6, st.RxBytes, st.TxBytes)
		}
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

// TestConformance runs the bridge conformance suite (the one the emulator's
// bridge runs too, drivers/uartbridge/bridgetest) on the RTL.
func TestConformance(t *testing.T) {
	for _, baud := range Bauds {
		t.Run(fmt.Sprint(baud), func(t *testing.T) {
			s := startSim(t, baud)
			bridgetest.Run(t, bridgetest.Target{Name: "rtl", Port: s.Port, Baud: baud, DeviceID: DeviceID,
				Clock: func() (time.Duration, error) {
					st, err := s.Stats()
					return st.Sim, err
				}})
		})
	}
}
