//go:build race

package main

// raceEnabled: the race detector slows the in-process emulator and the
// golden simulations five to twenty times, so the end-to-end tests that
// run a nightly per case take a share of their cases a run, in rotation
// (raceShare); make test runs this package again without it, every case.
const raceEnabled = true
