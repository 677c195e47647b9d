//go:build !race

package shoal

// raceEnabled: see race_on_test.go.
const raceEnabled = false
