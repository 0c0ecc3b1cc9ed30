//go:build race

package server_test

// raceEnabled: the tests are built with the race detector, whose
// instrumentation slows them tenfold and allocates for itself.
const raceEnabled = true
