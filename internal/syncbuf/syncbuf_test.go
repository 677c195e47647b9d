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
	from8(func() {
		b.Write([]byte("abcd\n"))
		_ = b.String()
	})
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
	from8(func() { w.Write([]byte("line\n")) })
	if n := strings.Count(plain.String(), "line\n"); n != 800 || plain.Len() != 800*5 {
		t.Errorf("%d whole lines in %d bytes, want 800 in 4000", n, plain.Len())
	}
}

// from8 calls f 100 times on each of 8 goroutines at once and returns when
// all are done.
func from8(f func()) {
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				f()
			}
		})
	}
	wg.Wait()
}
