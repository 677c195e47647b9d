package selftest

import (
	"fmt"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
)

// registry is a table of things design packages register from their init
// functions (tests, setups, health checks), by name. A name registered twice
// is a programming error that would silently make one of the two
// unreachable (the later replacing the earlier, in whatever order the
// linker ran the inits): add panics naming both registrations, so the
// mistake stops every program at start-up instead of hiding.
type registry[T any] struct {
	// what names the table in messages ("selftest.Register: test").
	what string
	mu   sync.Mutex
	m    map[string]T
	at   map[string]string // file:line of each registration
}

func newRegistry[T any](what string) *registry[T] {
	return &registry[T]{what: what, m: map[string]T{}, at: map[string]string{}}
}

// add registers v under name; where is the registering call's file:line.
func (r *registry[T]) add(name string, v T, where string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if old, dup := r.at[name]; dup {
		panic(fmt.Sprintf("%s %s registered twice: at %s and at %s; remove one of the two registrations (names must be unique)",
			r.what, name, old, where))
	}
	r.m[name] = v
	r.at[name] = where
}

func (r *registry[T]) get(name string) (T, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v, ok := r.m[name]
	return v, ok
}

// names returns the registered names, sorted.
func (r *registry[T]) names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.m))
	for n := range r.m {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// replace sets name to v whatever was there and returns a function that
// puts the previous state back: for tests that stand in a design's setup
// for one run, never for programs.
func (r *registry[T]) replace(name string, v T) (restore func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	old, had := r.m[name]
	oldAt := r.at[name]
	r.m[name], r.at[name] = v, "a test's replacement"
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if had {
			r.m[name], r.at[name] = old, oldAt
		} else {
			delete(r.m, name)
			delete(r.at, name)
		}
	}
}

// moduleDir is the repository's root as this binary was built from it:
// registration places are printed relative to it.
var moduleDir = func() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return ""
	}
	return filepath.Dir(filepath.Dir(file)) + "/"
}()

// caller returns the file:line of the call skip frames above its own
// caller (skip 1: whoever called the function that calls caller).
func caller(skip int) string {
	_, file, line, ok := runtime.Caller(skip + 1)
	if !ok {
		return "an unknown place"
	}
	return fmt.Sprintf("%s:%d", strings.TrimPrefix(file, moduleDir), line)
}
