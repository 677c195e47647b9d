//go:build race

package prr

// raceEnabled: the race detector slows the emulated switch about twenty
// times. TestWorstCaseLatencyReproducesSection51 then runs a few of its
// seeds (the same code paths, for data races) and leaves the comparison
// with §5.1, which needs all 60, to make test's run of this package without
// it (see the Makefile's unit target).
const raceEnabled = true
