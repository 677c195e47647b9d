//go:build !race

package all_test

// raceEnabled: see race_on_test.go.
const raceEnabled = false
