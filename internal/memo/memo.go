// Package memo remembers the results of pure computations by key for the
// life of a process: the golden models' predictions, whose inputs come from
// the catalogue, the lab and the plan (never from a board), so that every
// run of a plan in one process (a fault campaign, a test binary that runs
// the plan once per fault) computes each once.
package memo

import "sync"

// Map computes the value of each key once. Its zero value is ready to use;
// it must not be copied after first use.
type Map[K comparable, V any] struct {
	mu sync.Mutex
	m  map[K]*entry[V]
}

type entry[V any] struct {
	once sync.Once
	v    V
	err  error
}

// Get returns the value of k, computed by f on the first request (and
// remembered with its error). Requests for other keys do not wait for it;
// requests for k do.
func (c *Map[K, V]) Get(k K, f func() (V, error)) (V, error) {
	c.mu.Lock()
	if c.m == nil {
		c.m = map[K]*entry[V]{}
	}
	e := c.m[k]
	if e == nil {
		e = &entry[V]{}
		c.m[k] = e
	}
	c.mu.Unlock()
	e.once.Do(func() { e.v, e.err = f() })
	return e.v, e.err
}
