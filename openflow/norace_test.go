//go:build !race

package openflow_test

// raceEnabled: the tests are built with the race detector.
const raceEnabled = false
