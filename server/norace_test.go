//go:build !race

package server_test

// raceEnabled: the tests are built with the race detector.
const raceEnabled = false
