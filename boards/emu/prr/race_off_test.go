//go:build !race

package prr

// raceEnabled: see race_on_test.go.
const raceEnabled = false
