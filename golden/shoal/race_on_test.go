//go:build race

package shoal

// raceEnabled: the race detector slows the simulator about ten times, so
// TestSimulationDigests checks one of its pinned cases a run, in rotation
// by day; make test runs it again without the detector, every case (see
// the Makefile's unit target).
const raceEnabled = true
