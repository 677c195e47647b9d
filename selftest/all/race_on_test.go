//go:build race

package all_test

// raceEnabled: the race detector slows the in-process emulator and the
// golden simulations five to twenty times, so the end-to-end tests of this
// package take one plan of the default lab a run, in rotation (racePlan);
// make test runs them again without it, on every plan and fault.
const raceEnabled = true
