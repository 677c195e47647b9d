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

// Writer serialises the writes of several goroutines into a writer that is
// not safe for them (a strings.Builder here: the race detector would see it).
func TestWriterSerialisesWrites(t *testing.T) {
	var plain strings.Builder
	w := &Writer{W: &plain}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				w.Write([]byte("line\n"))
			}
		}()
	}
	wg.Wait()
	if n := strings.Count(plain.String(), "line\n"); n != 800 || plain.Len() != 800*5 {
		t.Errorf("%d whole lines in %d bytes, want 800 in 4000", n, plain.Len())
	}
}
