package memo

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
)

// Each key is computed once, however many ask at once; its error is
// remembered with it, and other keys are computed on their own.
func TestComputedOncePerKey(t *testing.T) {
	var c Map[string, int]
	var calls atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if v, err := c.Get("a", func() (int, error) { calls.Add(1); return 7, nil }); v != 7 || err != nil {
				t.Errorf("Get(a) = %d, %v", v, err)
			}
		}()
	}
	wg.Wait()
	if n := calls.Load(); n != 1 {
		t.Errorf("computed %d times, want once", n)
	}
	bad := errors.New("no")
	for range 2 {
		if _, err := c.Get("b", func() (int, error) { calls.Add(1); return 0, bad }); !errors.Is(err, bad) {
			t.Errorf("Get(b) error %v, want %v", err, bad)
		}
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("%d computations for two keys, want 2", n)
	}
}
