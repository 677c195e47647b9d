// Package raceshare decides which share of an expensive end-to-end test
// table a test binary runs. Under the race detector the in-process emulator
// and the golden simulations run five to twenty times slower, so a test
// that runs a nightly per case takes one case a run, in rotation by day;
// make test runs the same packages again without the race detector, every
// case (see docs/ci.md).
package raceshare

import (
	"os"
	"strconv"
	"sync"
	"testing"
	"time"
)

// EnvRotation names the variable that fixes the rotation, to repeat a
// run's share.
const EnvRotation = "LABRUNNER_FAULT_ROTATION"

var rotation struct {
	once sync.Once
	n    int
	err  string
}

// Rotation is where this run's share starts: $LABRUNNER_FAULT_ROTATION, or
// the day number when the test binary first asked. It is read once per
// process: a suite that runs across midnight must not take one day's share
// in one test and the next day's in the test that checks it.
func Rotation(tb testing.TB) int {
	tb.Helper()
	rotation.once.Do(func() {
		if s := os.Getenv(EnvRotation); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < 0 {
				rotation.err = EnvRotation + "=" + strconv.Quote(s) + ": want a number from 0"
				return
			}
			rotation.n = n
			return
		}
		rotation.n = int(time.Now().UTC().Unix() / 86400)
	})
	if rotation.err != "" {
		tb.Fatal(rotation.err)
	}
	return rotation.n
}

// Cases is the share of cases this run takes: every one, or under the race
// detector the one the rotation points at.
func Cases[C any](tb testing.TB, cases []C) []C {
	tb.Helper()
	if !Enabled || len(cases) < 2 {
		return cases
	}
	rot := Rotation(tb)
	i := rot % len(cases)
	tb.Logf("race detector on: case %d of %d only (rotation %d; %s=%d repeats it; make test runs every case without it)",
		i+1, len(cases), rot, EnvRotation, rot)
	return cases[i : i+1]
}

// One is, under the race detector, the one of items the rotation points at;
// without it, the zero value (meaning all of them).
func One[C any](tb testing.TB, items []C) C {
	tb.Helper()
	var zero C
	if !Enabled || len(items) == 0 {
		return zero
	}
	return items[Rotation(tb)%len(items)]
}

// Prefix is the length of a long sequential simulation this run takes: n,
// or under the race detector the first n/div of it (at least 1), for a test
// that is one run with no cases to rotate through (a run of n batches or
// cycles whose state carries from one to the next). Every check of the test
// still runs on the prefix; make test runs the whole length without the
// race detector.
func Prefix(tb testing.TB, n, div int) int {
	tb.Helper()
	if !Enabled || div <= 1 {
		return n
	}
	m := max(n/div, 1)
	tb.Logf("race detector on: the first %d of %d only (make test runs all of them without it)", m, n)
	return m
}

// SecondPassOnly reports whether the calling test is to return at once: it
// does under the race detector, for a test that make test's second pass runs
// whole (FULL_TESTS) and whose code paths other tests run under the detector
// (why names them, or says why the detector has nothing to find there: a
// command in a process of its own, a single-goroutine simulation). A long
// single-goroutine simulation gains nothing from the detector but its five-
// to forty-fold CPU.
func SecondPassOnly(tb testing.TB, why string) bool {
	tb.Helper()
	if !Enabled {
		return false
	}
	tb.Logf("race detector on: runs in make test's second pass only (%s)", why)
	return true
}
