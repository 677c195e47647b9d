package exanet

import (
	"fmt"
	"reflect"
	"sync"
	"testing"
)

// scenario runs traffic, a ping-pong and traces on a 2x2 mesh with drifting
// oscillators and a noisy cable, and returns every counter it can read.
func scenario(t *testing.T, seed int64) []string {
	ppm := map[string]float64{"b00": 35, "b10": -20, "b01": 0, "b11": 80}
	rk := mesh2x2BER(t, seed, nil, ppm, 1e-5)
	for _, b := range []string{"b00", "b10", "b01", "b11"} {
		rk.w(b, "TRACE_CTRL", 1)
	}
	rk.w("b11", "PP_RESPONDER", 1)
	rk.tg("b00", 3, coordWord(1, 1, 0), 2, 300, 300, true)
	rk.tg("b11", 1, coordWord(0, 0, 0), 1, 512, 200, false)
	rk.pingPong("b00", coordWord(1, 1, 0), 0, 32, 20)
	var out []string
	for _, b := range []string{"b00", "b10", "b01", "b11"} {
		for _, reg := range []string{"CYCLE_LO", "ROUTE_ERRORS", "TG_SENT", "TG_STATUS", "CONS_PACKETS", "CONS_BYTES",
			"CONS_CRC_ERRORS", "CONS_HDR_ERRORS", "CONS_MISDELIVERED", "PC_CYCLES_LO", "PC_BYTES", "PC_PACKETS",
			"PP_RTT_MIN", "PP_RTT_MAX", "PP_RTT_SUM_LO", "PP_DONE_ITERS", "TRACE_COUNT"} {
			out = append(out, fmt.Sprintf("%s %s %d", b, reg, rk.r(b, reg)))
		}
		for l := 0; l < 2; l++ {
			for _, reg := range []string{"LINK_STATUS", "CREDITS", "LINK_TX_PACKETS", "LINK_RX_PACKETS", "LINK_TX_WORDS",
				"LINK_RX_WORDS", "LINK_CRC_ERRORS", "LINK_ECC_CORRECTED", "LINK_ECC_UNCORRECTABLE", "LINK_STALL_CYCLES"} {
				name := fmt.Sprintf("%s[%d]", reg, l)
				out = append(out, fmt.Sprintf("%s %s %d", b, name, rk.r(b, name)))
			}
		}
		for _, e := range rk.traces(b) {
			out = append(out, fmt.Sprintf("%s trace %+v", b, e))
		}
	}
	for rk.r("b00", "PP_SAMPLE_COUNT") > 0 {
		out = append(out, fmt.Sprintf("sample %d", rk.r("b00", "PP_SAMPLES")))
	}
	return out
}

// TestDeterminism: the same seed gives the same counters, to the cycle.
func TestDeterminism(t *testing.T) {
	a, b := scenario(t, 42), scenario(t, 42)
	if !reflect.DeepEqual(a, b) {
		for i := range a {
			if i < len(b) && a[i] != b[i] {
				t.Errorf("first difference: %q vs %q", a[i], b[i])
				break
			}
		}
		t.Fatal("two runs with seed 42 differ")
	}
	// The seed matters: bit errors land elsewhere.
	if c := scenario(t, 43); reflect.DeepEqual(a, c) {
		t.Error("seeds 42 and 43 gave identical runs: the BER stream ignores the seed")
	}
}

// TestConcurrentAccess drives the boards of one fabric from several
// goroutines, as the runner does (run with -race).
func TestConcurrentAccess(t *testing.T) {
	rk := mesh2x2(t, 1, nil, nil)
	rk.w("b11", "PP_RESPONDER", 1)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for _, b := range []string{"b00", "b10", "b01", "b11"} {
		wg.Add(1)
		go func(b string) {
			defer wg.Done()
			n := rk.nodes[b]
			for i := 0; i < 50; i++ {
				if _, err := n.Read32(regAddr(t, "CYCLE_LO")); err != nil {
					errs <- err
					return
				}
				if _, err := n.Read32(regAddr(t, "LINK_STATUS[0]")); err != nil {
					errs <- err
					return
				}
			}
			if b == "b00" {
				if err := n.Write32(regAddr(t, "TG_CTRL"), 1); err != nil {
					errs <- err
				}
			}
		}(b)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
