package prr

import (
	"fmt"
	"runtime"
	"sync"
)

// SimulateAll runs the configurations on up to workers goroutines (≤ 0:
// GOMAXPROCS) and returns their results in the same order. Every
// configuration is checked before any run starts, so a bad one costs
// nothing.
func SimulateAll(cfgs []SimConfig, workers int) ([]SimResult, error) {
	for k := range cfgs {
		c := cfgs[k]
		if err := c.normalize(); err != nil {
			return nil, fmt.Errorf("prr: simulation %d of %d (%s/%s): %w", k+1, len(cfgs), c.Alg, c.Traffic, err)
		}
	}
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, len(cfgs))
	out := make([]SimResult, len(cfgs))
	errs := make([]error, len(cfgs))
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range next {
				out[k], errs[k] = Simulate(cfgs[k])
			}
		}()
	}
	for k := range cfgs {
		next <- k
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}
