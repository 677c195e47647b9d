package syncbuf

import (
	"strings"
	"sync"
	"testing"
)

// Writers on several goroutines and a reader at once: every write arrives
// whole (the race detector checks the locking).
func TestConcurrentWritesArriveWhole(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				b.Write([]byte("abcd\n"))
				_ = b.String()
			}
		}()
	}
	wg.Wait()
	s := b.String()
	if n := strings.Count(s, "abcd\n"); n != 800 || len(s) != 800*5 {
		t.Errorf("%d whole writes in %d bytes, want 800 in 4000", n, len(s))
	}
}
