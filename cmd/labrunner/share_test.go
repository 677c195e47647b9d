package main

import (
	"os"
	"strconv"
	"testing"
	"time"
)

// rotation is where today's share starts: $LABRUNNER_FAULT_ROTATION, or
// the day number, so that successive runs cover every case.
func rotation(t *testing.T) int {
	t.Helper()
	if s := os.Getenv("LABRUNNER_FAULT_ROTATION"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			t.Fatalf("LABRUNNER_FAULT_ROTATION=%q: want a number from 0", s)
		}
		return n
	}
	return int(time.Now().UTC().Unix() / 86400)
}

// raceShare is the cases of an end-to-end table (each a nightly on the
// emulated rack) that this run takes: every one, or under the race
// detector one, in rotation. make test runs this package twice, with the
// race detector (the code paths of today's case, for data races) and
// without it (every case): see the Makefile's unit target.
func raceShare[C any](t *testing.T, cases []C) []C {
	t.Helper()
	if !raceEnabled || len(cases) < 2 {
		return cases
	}
	rot := rotation(t)
	t.Logf("race detector on: case %d of %d only (rotation %d; LABRUNNER_FAULT_ROTATION=%d repeats it; make test runs every case without it)",
		rot%len(cases)+1, len(cases), rot, rot)
	return cases[rot%len(cases) : rot%len(cases)+1]
}
