//go:build !race

package raceshare

// Enabled says the binary runs under the race detector.
const Enabled = false
